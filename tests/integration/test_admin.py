"""stats, flush_all, shutdown, and the command-line flags that change what
the protocol does (-c -I -m -M -C -F -A -t -R -v). Each test that needs
exact counters or a fresh store starts its own server.
Expectations checked against memcached 1.6.18.
"""
import os
import re
import signal
import time

import pytest

from conftest import is_memcached


def wait_for(pred, timeout=5.0, what="condition"):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.05)


def u(stats, name):
    """A stats field as an int; it must be a decimal."""
    v = stats[name]
    assert v.isdigit(), (name, v)
    return int(v)


# --- stats ------------------------------------------------------------------

GENERAL_FIELDS = (
    "pid uptime time version libevent pointer_size rusage_user "
    "rusage_system max_connections curr_connections total_connections "
    "rejected_connections connection_structures cmd_get cmd_set cmd_flush "
    "cmd_touch get_hits get_misses get_expired get_flushed delete_misses "
    "delete_hits incr_misses incr_hits decr_misses decr_hits cas_misses "
    "cas_hits cas_badval touch_hits touch_misses store_too_large "
    "store_no_memory auth_cmds auth_errors bytes_read bytes_written "
    "limit_maxbytes accepting_conns listen_disabled_num "
    "time_in_listen_disabled_us threads conn_yields hash_power_level "
    "hash_bytes hash_is_expanding bytes curr_items total_items "
    "expired_unfetched evicted_unfetched evictions reclaimed").split()


def test_stats_general_fields(start_server):
    srv = start_server()
    with srv.conn() as c:
        s = c.stats()
        for name in GENERAL_FIELDS:
            assert name in s, name
        for name in GENERAL_FIELDS:
            if name in ("version", "libevent", "rusage_user",
                        "rusage_system"):
                continue
            u(s, name)
        assert u(s, "pid") == srv.pid
        assert abs(u(s, "time") - time.time()) < 5
        assert 0 <= u(s, "uptime") < 60
        assert u(s, "pointer_size") == 64
        for name in ("rusage_user", "rusage_system"):
            float(s[name])
        assert u(s, "max_connections") == 1024
        assert u(s, "limit_maxbytes") == 64 * 1024 * 1024
        assert u(s, "threads") == 4
        assert u(s, "curr_connections") >= 1
        assert u(s, "total_connections") >= u(s, "curr_connections")
        assert u(s, "accepting_conns") == 1
        assert u(s, "curr_items") == 0
        assert u(s, "bytes") == 0


def test_stats_counters(start_server):
    srv = start_server()
    with srv.conn() as c:
        s0 = c.stats()
        for i in range(10):
            assert c.set("k%d" % i, b"v" * 100) == b"STORED"
        assert c.store("add", "k0", b"x") == b"NOT_STORED"
        s1 = c.stats()
        assert u(s1, "curr_items") == 10
        assert u(s1, "total_items") - u(s0, "total_items") == 10
        assert u(s1, "cmd_set") - u(s0, "cmd_set") == 11
        assert u(s1, "bytes") > 1000
        # bytes_read counts what we sent, at least
        assert u(s1, "bytes_read") - u(s0, "bytes_read") >= 10 * 100
        assert u(s1, "bytes_written") > u(s0, "bytes_written")

        # cmd_get counts keys, not commands
        c.send(b"get k0 k1 k2 nope1 nope2\r\n")
        assert len(c.read_values()) == 3
        c.send(b"gets k3 nope3\r\n")
        assert len(c.read_values(with_cas=True)) == 1
        s2 = c.stats()
        assert u(s2, "cmd_get") - u(s1, "cmd_get") == 7
        assert u(s2, "get_hits") - u(s1, "get_hits") == 4
        assert u(s2, "get_misses") - u(s1, "get_misses") == 3

        assert c.cmd("delete k0") == b"DELETED"
        assert c.cmd("delete k0") == b"NOT_FOUND"
        c.set("n", b"5")
        assert c.cmd("incr n 1") == b"6"
        assert c.cmd("incr nope 1") == b"NOT_FOUND"
        assert c.cmd("decr n 1") == b"5"
        assert c.cmd("decr nope 1") == b"NOT_FOUND"
        assert c.cmd("decr nope 1") == b"NOT_FOUND"
        cas = c.gets("k1")[b"k1"][2]
        assert c.store("cas", "k1", b"y", cas=cas) == b"STORED"
        assert c.store("cas", "k1", b"y", cas=cas) == b"EXISTS"
        assert c.store("cas", "nope", b"y", cas=cas) == b"NOT_FOUND"
        assert c.cmd("touch k2 100") == b"TOUCHED"
        assert c.cmd("touch nope 100") == b"NOT_FOUND"
        c.send(b"gat 100 k3 nope\r\n")
        assert len(c.read_values()) == 1
        s3 = c.stats()
        d = {n: u(s3, n) - u(s2, n) for n in GENERAL_FIELDS
             if s3[n].isdigit()}
        assert d["delete_hits"] == 1 and d["delete_misses"] == 1
        assert d["incr_hits"] == 1 and d["incr_misses"] == 1
        assert d["decr_hits"] == 1 and d["decr_misses"] == 2
        assert d["cas_hits"] == 1 and d["cas_badval"] == 1
        assert d["cas_misses"] == 1
        # gat is counted as a touch per key (cmd_touch, touch_hits,
        # touch_misses), not as a get: memcached 1.6 does so
        assert d["cmd_touch"] == 4
        assert d["touch_hits"] == 2 and d["touch_misses"] == 2
        assert d["cmd_get"] == 1	# gets k1
        assert d["get_hits"] == 1 and d["get_misses"] == 0
        assert u(s3, "curr_items") == 10	# k0 gone, n added


def test_total_items_counts_no_change_made_in_place(start_server):
    """total_items counts the items linked: memcached changes an item in
    place for a touch (anchorkv copies one stored without a TTL into a
    block with an expiry slot), an md I (marked stale) and an incr that
    does not lengthen the number, and counts none of them; an incr that
    lengthens the number stores a new item, and counts it (as md x does
    in memcached 1.6.45)."""
    srv = start_server()
    with srv.conn() as c:
        assert c.set("t", b"v") == b"STORED"
        assert c.set("n", b"5") == b"STORED"
        assert c.set("m", b"abc") == b"STORED"
        s0 = c.stats()
        assert c.cmd("touch t 100") == b"TOUCHED"
        c.send(b"gat 200 t\r\n")
        assert c.read_values() == [(b"t", 0, b"v")]
        assert c.cmd("mg t T300") == b"HD"
        assert c.cmd("incr n 1") == b"6"
        assert c.cmd("md m I") == b"HD"
        s1 = c.stats()
        assert u(s1, "total_items") == u(s0, "total_items")
        assert c.cmd("incr n 10") == b"16"
        s2 = c.stats()
        assert u(s2, "total_items") - u(s1, "total_items") == 1
        assert u(s2, "curr_items") == 3


def test_stats_expired_and_flushed_counters(start_server):
    srv = start_server()
    with srv.conn() as c:
        c.set("exp", b"x", exptime=-1)
        assert c.get1("exp") is None
        c.set("fl", b"x")
        assert c.cmd("flush_all") == b"OK"
        assert c.get1("fl") is None
        s = c.stats()
        assert u(s, "cmd_flush") == 1
        assert u(s, "get_misses") == 2
        assert u(s, "get_flushed") == 1
        # an already-expired set may be dropped at once (anchorkv) or
        # found expired on access (memcached)
        assert u(s, "get_expired") <= 1


def test_stats_settings(start_server):
    args = ["-c", "100", "-t", "2", "-m", "32", "-M", "-C", "-F", "-R", "5"]
    srv = start_server(args)
    with srv.conn() as c:
        s = c.stats("settings")
    assert u(s, "maxbytes") == 32 * 1024 * 1024
    assert u(s, "maxconns") == 100
    assert u(s, "tcpport") == srv.port
    assert s["inter"] == "127.0.0.1"
    assert u(s, "verbosity") == 0
    assert s["evictions"] == "off"
    assert s["shutdown_command"] == "no"
    assert u(s, "num_threads") == 2
    assert u(s, "reqs_per_event") == 5
    assert s["cas_enabled"] == "no"
    assert s["flush_enabled"] == "no"
    assert u(s, "item_size_max") == 1024 * 1024


def test_stats_settings_defaults(conn, server):
    s = conn.stats("settings")
    assert u(s, "tcpport") == server.port
    assert s["evictions"] == "on"
    assert s["cas_enabled"] == "yes"
    assert s["flush_enabled"] == "yes"
    assert u(s, "item_size_max") == 1024 * 1024
    assert u(s, "maxconns") == 1024


def test_stats_items_slabs_conns(conn, server, prefix):
    conn.set(prefix + "x", b"v")
    items = conn.stats("items")
    numbers = [n for n in items if n.startswith("items:")
               and n.endswith(":number")]
    assert numbers, items
    assert sum(u(items, n) for n in numbers) >= 1
    slabs = conn.stats("slabs")
    assert "active_slabs" in slabs and "total_malloced" in slabs
    u(slabs, "active_slabs")
    u(slabs, "total_malloced")
    conns = conn.stats("conns")
    myport = conn.sock.getsockname()[1]
    addrs = [v for n, v in conns.items() if n.endswith(":addr")]
    assert any(v.endswith(":%d" % myport) for v in addrs), addrs
    assert any(n.endswith(":state") for n in conns)


def test_version_is_a_plain_memcached_number(conn):
    """Cache::Memcached::Fast dies on a version that is not
    <major>.<minor>.<patch>, Dalli turns the meta protocol on above 1.6:
    "version" and stats' "version" are a memcached release number, the
    same in the memcached flavor; anchorkv's own is in stats
    anchorkv_version."""
    line = conn.cmd("version")
    assert re.fullmatch(rb"VERSION \d+\.\d+\.\d+", line), line
    number = line.split()[1].decode()
    assert tuple(int(x) for x in number.split(".")) >= (1, 6, 0)
    s = conn.stats()
    assert s["version"] == number
    if not is_memcached():
        assert s["version"] == "1.6.18"
        assert re.fullmatch(r"\d+\.\d+\.\d+", s["anchorkv_version"])
        assert conn.stats("anchorkv")["anchorkv_version"] == \
            s["anchorkv_version"]


def test_stats_unknown_subcommand(conn):
    conn.send(b"stats nosuchthing\r\n")
    conn.expect(b"ERROR\r\n")
    assert conn.cmd("version").startswith(b"VERSION ")


def test_stats_reset(start_server):
    srv = start_server()
    with srv.conn() as c:
        c.set("a", b"x")
        c.get("a", "b")
        c.send(b"stats reset\r\n")
        c.expect(b"RESET\r\n")
        s = c.stats()
        for name in ("cmd_get", "get_hits", "get_misses", "cmd_set",
                     "total_items", "total_connections"):
            assert u(s, name) == 0, name
        assert u(s, "curr_items") == 1	# state, not a counter
        assert u(s, "curr_connections") >= 1


# --- flush_all ----------------------------------------------------------------

def test_flush_all(start_server):
    srv = start_server()
    with srv.conn() as c:
        for i in range(20):
            c.set("k%d" % i, b"v")
        c.send(b"flush_all\r\n")
        c.expect(b"OK\r\n")
        c.send(b"get " + b" ".join(b"k%d" % i for i in range(20)) + b"\r\n")
        c.expect(b"END\r\n")
        assert c.store("add", "k1", b"new") == b"STORED"
        assert c.get1("k1") == b"new"	# items set after the flush stay
        c.send(b"flush_all 0\r\n")
        c.expect(b"OK\r\n")
        assert c.get1("k1") is None
        c.set("k2", b"v")
        c.send(b"flush_all noreply\r\nget k2\r\n")
        c.expect(b"END\r\n")
        c.send(b"flush_all abc\r\n")
        c.expect(b"CLIENT_ERROR invalid exptime argument\r\n")


def test_flush_all_delayed(start_server):
    srv = start_server()
    with srv.conn() as c:
        c.set("a", b"1")
        c.set("b", b"2")
        t0 = time.monotonic()
        c.send(b"flush_all 2\r\n")
        c.expect(b"OK\r\n")
        assert c.get("a", "b") == {b"a": b"1", b"b": b"2"}
        time.sleep(max(0, t0 + 0.5 - time.monotonic()))
        assert c.get("a", "b") == {b"a": b"1", b"b": b"2"}
        # gone by 2 s (give a one-second clock 1.5 s of slack)
        deadline = t0 + 3.5
        while c.get("a", "b"):
            assert time.monotonic() < deadline, "delayed flush never ran"
            time.sleep(0.1)
        assert time.monotonic() - t0 >= 0.9, "delayed flush ran at once"
        # memcached's one-second clock also flushes what is set in the
        # second the flush fires: wait past it
        time.sleep(1.1)
        c.set("c", b"3")
        assert c.get1("c") == b"3"


def test_flush_all_disabled(start_server):
    srv = start_server(["-F"])
    with srv.conn() as c:
        c.set("a", b"1")
        c.send(b"flush_all\r\n")
        c.expect(b"CLIENT_ERROR flush_all not allowed\r\n")
        assert c.get1("a") == b"1"


# --- shutdown -----------------------------------------------------------------

def test_shutdown_enabled(start_server):
    srv = start_server(["-A"])
    c = srv.conn()
    c.send(b"shutdown now\r\n")
    c.expect(b"CLIENT_ERROR invalid shutdown mode\r\n")
    c.set("a", b"1")
    c.send(b"shutdown\r\n")
    assert c.assert_closed() == b""
    c.close()
    rc = srv.wait_exit()
    srv.check_exit(rc)


def test_sigterm_with_busy_connections(start_server):
    srv = start_server()
    idle = srv.conn()
    half_line = srv.conn()
    half_value = srv.conn()
    reading = srv.conn()
    try:
        idle.cmd("version")
        half_line.send(b"set k 0 0 10")
        half_value.send(b"set big 0 0 100000\r\n" + b"x" * 50000)
        reading.set("v", b"y" * 200000)
        reading.send(b"get v\r\n" * 20)	# replies left unread
        time.sleep(0.2)
        srv.proc.send_signal(signal.SIGTERM)
        rc = srv.wait_exit()
        srv.check_exit(rc)
    finally:
        for c in (idle, half_line, half_value, reading):
            c.close()


# --- connection limit ---------------------------------------------------------

def test_too_many_connections(start_server):
    # memcached counts about 20 reserved descriptors against -c, so it
    # needs a larger -c to start; anchorkv takes -c literally.
    limit = 40 if is_memcached() else 5
    srv = start_server(["-c", str(limit)])
    conns = []
    try:
        first = srv.conn()
        conns.append(first)
        first.cmd("version")
        if not is_memcached():
            # wait until the start-up probe's connection is gone
            wait_for(lambda: u(first.stats(), "curr_connections") == 1,
                     what="curr_connections == 1")
        rejected = None
        for i in range(limit + 5):
            c = srv.conn()
            c.send(b"version\r\n")
            line = c.recv_line()
            if line == b"ERROR Too many open connections":
                rejected = c
                break
            assert line.startswith(b"VERSION "), line
            conns.append(c)
        assert rejected is not None, "no connection was refused"
        if not is_memcached():
            assert len(conns) == limit
        assert rejected.assert_closed() == b""
        rejected.close()
        # the accepted ones still work, and a slot freed is a slot reused
        assert conns[-1].cmd("version").startswith(b"VERSION ")
        conns.pop().close()
        deadline = time.monotonic() + 5
        while True:
            c = srv.conn()
            c.send(b"version\r\n")
            line = c.recv_line()
            if line.startswith(b"VERSION "):
                conns.append(c)
                break
            c.close()
            assert time.monotonic() < deadline, "freed slot never reused"
            time.sleep(0.1)
        assert u(conns[0].stats(), "rejected_connections") >= 1
    finally:
        for c in conns:
            c.close()


# --- -I item size ---------------------------------------------------------------

def test_item_size_limit_1k(start_server):
    args = ["-I", "1k"]
    if is_memcached():
        args += ["-o", "slab_chunk_max=1024"]
    srv = start_server(args)
    with srv.conn() as c:
        assert u(c.stats("settings"), "item_size_max") == 1024
        assert c.set("ok", b"v" * 512) == b"STORED"
        assert c.get1("ok") == b"v" * 512
        for n in (1024, 1025, 4000, 100000):
            c.send(b"set big 0 0 %d\r\n" % n + b"v" * n + b"\r\n")
            c.expect(b"SERVER_ERROR object too large for cache\r\n")
        assert c.get1("big") is None
        assert c.cmd("version").startswith(b"VERSION ")
        assert u(c.stats(), "store_too_large") == 4


# --- -m memory limit --------------------------------------------------------------

def test_memory_limit_no_evict(start_server):
    srv = start_server(["-m", "2", "-M"])
    value = b"v" * 10000
    with srv.conn() as c:
        failed_at = None
        for i in range(1000):
            r = c.set("k%d" % i, value)
            if r != b"STORED":
                assert r == b"SERVER_ERROR out of memory storing object", r
                failed_at = i
                break
        assert failed_at is not None, "20 MB stored under -m 2 -M"
        # 2 MiB holds between ~50 and ~210 values of 10 kB with overhead
        assert 50 <= failed_at <= 210, failed_at
        assert c.get1("k0") == value	# nothing was evicted
        s = c.stats()
        assert u(s, "evictions") == 0
        assert u(s, "store_no_memory") >= 1
        assert u(s, "curr_items") == failed_at
        # freeing room makes room
        for i in range(5):
            assert c.cmd("delete k%d" % i) == b"DELETED"
        assert c.set("again", value) == b"STORED"


def test_memory_limit_evicts(start_server):
    """Write-only, 10 MB of items into -m 2: the first ones go, the last
    one stays. Not every first one: a shard that takes memory from the
    others' share can hold more items than its small ring's first 64
    slots span before the ring grows, and the oldest then move to main as
    they are (small_window_moves), which a load that never reads leaves
    alone while small holds its share (docs/architecture.md, eviction).
    k0 outlived the rest in about 2 runs of 100 with a random hash seed,
    when this test asked for it alone."""
    srv = start_server(["-m", "2"])
    value = b"v" * 10000
    with srv.conn() as c:
        for i in range(1000):
            c.send(b"set k%d 0 0 %d noreply\r\n" % (i, len(value)) + value
                   + b"\r\n")
            if i % 100 == 99:
                assert c.cmd("version").startswith(b"VERSION ")
        s = c.stats()
        assert u(s, "evictions") > 0
        assert u(s, "bytes") <= u(s, "limit_maxbytes")
        assert u(s, "curr_items") < 1000
        assert c.get1("k999") == value
        first = sum(c.get1("k%d" % i) is not None for i in range(100))
        moved = u(c.stats("anchorkv"), "small_window_moves")
        assert first <= moved and first <= 10, (first, moved)


# --- -C (no CAS) ----------------------------------------------------------------

def test_cas_disabled(start_server):
    srv = start_server(["-C"])
    with srv.conn() as c:
        c.set("a", b"1")
        c.send(b"gets a\r\n")
        c.expect(b"VALUE a 0 1 0\r\n1\r\nEND\r\n")
        # with CAS off no cas command can succeed: memcached says EXISTS
        for unique in (0, 1):
            c.send(b"cas a 0 0 1 %d\r\n2\r\n" % unique)
            c.expect(b"EXISTS\r\n")
        assert c.get1("a") == b"1"
        assert c.stats("settings")["cas_enabled"] == "no"


# --- threads and fairness -----------------------------------------------------------

def test_one_thread_one_request_per_event(start_server):
    srv = start_server(["-t", "1", "-R", "1"])
    conns = [srv.conn() for _ in range(3)]
    try:
        for i, c in enumerate(conns):
            c.set("k%d" % i, b"%d" % i * 1000)
        for i, c in enumerate(conns):
            c.send(b"get k%d\r\n" % i * 200)
        for i, c in enumerate(conns):
            for _ in range(200):
                c.expect(b"VALUE k%d 0 %d\r\n" % (i, len(b"%d" % i * 1000))
                         + b"%d" % i * 1000 + b"\r\nEND\r\n")
        s = conns[0].stats()
        assert u(s, "threads") == 1
        assert u(s, "conn_yields") > 0
    finally:
        for c in conns:
            c.close()


@pytest.mark.parametrize("flag", ["-v", "-vv"])
def test_verbose_runs(start_server, flag):
    srv = start_server([flag])
    with srv.conn() as c:
        c.set("a", b"1")
        assert c.get1("a") == b"1"
        c.send(b"verbosity 0\r\n")
        c.expect(b"OK\r\n")
    assert os.path.exists(srv.stderr_path)


def test_vv_logs_each_command_line_not_its_data(start_server):
    """-vv logs "<fd line" for each command the engine ran: a set read by
    the fast path, a set split over two sends, a pipelined batch, a get
    and a line turned on by "verbosity 2"; never a data block."""
    srv = start_server(["-v"])
    with srv.conn() as c:
        c.send(b"set before 0 0 8\r\nVALUE001\r\n")
        c.expect(b"STORED\r\n")
        c.send(b"verbosity 2\r\n")
        c.expect(b"OK\r\n")
        c.send(b"set fast 0 0 8\r\nVALUE002\r\n")
        c.expect(b"STORED\r\n")
        c.send(b"append fast 0 0 8\r\nVAL")
        c.send(b"UE003\r\n")
        c.expect(b"STORED\r\n")
        c.send(b"set p1 0 0 8\r\nVALUE004\r\nget p1\r\ndelete p1\r\n")
        c.expect(b"STORED\r\nVALUE p1 0 8\r\nVALUE004\r\nEND\r\n"
                 b"DELETED\r\n")
        c.send(b"get \x01fast\r\n")
        c.expect(b"END\r\n")
        c.send(b"verbosity 0\r\n")
        c.expect(b"OK\r\n")
        c.send(b"get after\r\n")
        c.expect(b"END\r\n")
    log = srv.stderr_text()
    found = (re.search(r"\]: <\d+ (.*)$", ln) for ln in log.splitlines())
    lines = [m.group(1) for m in found
             if m and not re.fullmatch(r"read \d+ bytes|new connection .*|"
                                       r"connection closed .*", m.group(1))]
    # a verbosity line is judged by the level it leaves
    assert lines == ["verbosity 2", "set fast 0 0 8", "append fast 0 0 8",
                     "set p1 0 0 8", "get p1", "delete p1", "get .fast"], log
    assert "VALUE00" not in log
