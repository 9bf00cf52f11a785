"""The admin commands of memcached's tools: lru_crawler metadump and mgdump,
stats cachedump, cache_memlimit (PROTOCOL.md, "Admin commands").

The reply lines are memcached 1.6.45's (metadump starts with "OK" and has
flags=); the error strings are compared with Debian's memcached 1.6.18
when it is installed. anchorkv has one slab class, 1, holding every item.
"""
import base64
import os
import re
import shutil
import socket
import subprocess
import time

import pytest

import conftest
from release import start_release, vm_rss_kib
from test_classic_diff import Memcached, MEMCACHED

MIB = 1024 * 1024
META_RE = re.compile(rb"^key=(\S+) exp=(-1|\d+) la=(\d+) cas=(\d+) "
                     rb"fetch=(yes|no) cls=(\d+) size=(\d+) flags=(\d+) $")
TOOL = "/usr/share/memcached/scripts/memcached-tool"


def uri_decode(b):
    return re.sub(rb"%([0-9A-F]{2})", lambda m: bytes([int(m.group(1), 16)]),
                  b)


def metadump(c, classes="all"):
    """The lines of a metadump, checked for its framing."""
    c.send(("lru_crawler metadump %s\r\n" % classes).encode())
    if not conftest.is_memcached():
        assert c.recv_line() == b"OK"
    body = c.recv_until(b"END\r\n", timeout=60)[:-5]
    lines = body.split(b"\n")
    assert lines[-1] == b""
    return lines[:-1]


def fill(c, keys, value=b"v", flags=0, exptime=0):
    """Sets every key, pipelined, and reads the replies."""
    batch = []
    for k in keys:
        batch.append(b"set %s %d %d %d noreply\r\n%s\r\n" %
                     (k, flags, exptime, len(value), value))
        if len(batch) == 1000:
            c.send(b"".join(batch))
            batch = []
    c.send(b"".join(batch) + b"mn\r\n")
    assert c.recv_line() == b"MN"


@pytest.mark.anchorkv_only
def test_metadump_lists_every_live_key(start_server):
    srv = start_server()
    ints = [b"%d" % i for i in range(0, 6000, 3)]
    strs = [b"user:%05d" % i for i in range(4000)]
    with srv.conn() as c:
        fill(c, ints)
        fill(c, strs, value=b"hello", flags=7, exptime=600)
        c.store("set", "gone", "x")
        assert c.cmd("delete gone") == b"DELETED"
        c.store("set", "dead", "x", exptime=-1)	# expired at once
        c.send(b"ms %s 2 b\r\nhi\r\n" % base64.b64encode(b"bin\x01key"))
        assert c.recv_line() == b"HD"
        assert c.get1("user:00007") == b"hello"
        now = time.time()
        lines = metadump(c)
        seen = {}
        for line in lines:
            m = META_RE.match(line)
            assert m, line
            key = uri_decode(m.group(1))
            assert key not in seen, key
            seen[key] = m
        assert set(seen) == set(ints) | set(strs) | {b"bin\x01key"}
        # keyspace order: integers by value, then strings bytewise
        order = [uri_decode(META_RE.match(x).group(1)) for x in lines]
        assert order == sorted(ints, key=int) + sorted(strs + [b"bin\x01key"])
        m = seen[b"user:00007"]
        assert abs(int(m.group(2)) - (now + 600)) <= 2
        assert abs(int(m.group(3)) - now) <= 2
        assert m.group(5) == b"yes" and m.group(8) == b"7"
        assert seen[b"user:00008"].group(5) == b"no"
        assert seen[b"3"].group(2) == b"-1"
        # cas, cls and size say what gets and me say
        c.send(b"gets user:00008\r\n")
        cas = c.recv_line().split()[4]
        assert seen[b"user:00008"].group(4) == cas
        c.recv_until(b"END\r\n")
        me = c.cmd("me user:00008").decode()
        assert "cls=%s size=%s" % (seen[b"user:00008"].group(6).decode(),
                                   seen[b"user:00008"].group(7).decode()) \
            in me


@pytest.mark.anchorkv_only
def test_metadump_of_classes(start_server):
    srv = start_server()
    with srv.conn() as c:
        fill(c, [b"a", b"b"])
        assert len(metadump(c, "1")) == 2
        assert len(metadump(c, "2,1,")) == 2
        assert len(metadump(c, "hash")) == 2
        assert metadump(c, "2,63") == []
        for bad in ("0", "64", "x", "1,x", "-1"):
            assert c.cmd("lru_crawler metadump " + bad) == \
                b"BADCLASS invalid class id"
        for bad in ("lru_crawler", "lru_crawler metadump",
                    "lru_crawler metadump all x", "lru_crawler crawl all",
                    "lru_crawler enable", "lru_crawler foo"):
            assert c.cmd(bad) == b"ERROR", bad


@pytest.mark.anchorkv_only
def test_mgdump_lines_run_as_mg(start_server):
    srv = start_server()
    keys = [b"k%d" % i for i in range(3000)] + [b"%d" % i for i in range(50)]
    with srv.conn() as c:
        fill(c, keys, value=b"val")
        c.send(b"ms %s 3 b\r\nbin\r\n" % base64.b64encode(b"b\x02n"))
        assert c.recv_line() == b"HD"
        c.send(b"lru_crawler mgdump all\r\n")
        assert c.recv_line() == b"OK"
        body = c.recv_until(b"EN\r\n", timeout=60)[:-4]
        lines = body.split(b"\r\n")[:-1]
        assert len(lines) == len(keys) + 1
        assert b"mg %s b" % base64.b64encode(b"b\x02n") in lines
        # each line is a request: add flags and send it back
        c.send(b"".join(x + b" v\r\n" for x in lines) + b"mn\r\n")
        for x in lines:
            assert c.recv_line().startswith(b"VA 3")
            assert c.recv_line() in (b"val", b"bin")
        assert c.recv_line() == b"MN"


@pytest.mark.anchorkv_only
def test_cachedump_limits(start_server):
    srv = start_server()
    with srv.conn() as c:
        fill(c, [b"c%d" % i for i in range(10)], value=b"12345")
        c.store("set", "t", "xy", exptime=1000)
        c.send(b"ms %s 1 b\r\nz\r\n" % base64.b64encode(b"\x01"))
        assert c.recv_line() == b"HD"
        c.send(b"stats cachedump 1 0\r\n")
        lines = c.recv_until(b"END\r\n").split(b"\r\n")[:-2]
        # binary keys are left out, as memcached leaves them out
        assert len(lines) == 11
        assert b"ITEM c3 [5 b; 0 s]" in lines
        t = [x for x in lines if x.startswith(b"ITEM t ")][0]
        exp = int(re.match(rb"ITEM t \[2 b; (\d+) s\]", t).group(1))
        assert abs(exp - (time.time() + 1000)) <= 2
        c.send(b"stats cachedump 1 3\r\n")
        assert len(c.recv_until(b"END\r\n").split(b"\r\n")) == 5
        assert c.cmd("stats cachedump 2 0") == b"END"
        assert c.cmd("stats cachedump 63 5") == b"END"
        assert c.cmd("stats cachedump 64 0") == \
            b"CLIENT_ERROR Illegal slab id"
        assert c.cmd("stats cachedump 1") == b"CLIENT_ERROR bad command line"
        assert c.cmd("stats cachedump 1 x") == \
            b"CLIENT_ERROR bad command line format"


@pytest.mark.anchorkv_only
def test_cachedump_stops_at_2_mb(start_server):
    srv = start_server()
    keys = [b"%s%05d" % (b"k" * 244, i) for i in range(10000)]
    with srv.conn() as c:
        fill(c, keys)
        c.send(b"stats cachedump 1 0\r\n")
        out = c.recv_until(b"END\r\n", timeout=30)
        n = out.count(b"\r\n") - 1
        assert len(out) + 1 <= 2 * MIB < len(out) + 1 + 270
        assert 7000 < n < 10000
        assert c.cmd("mn") == b"MN"


@pytest.mark.anchorkv_only
def test_dump_then_pipelined_commands(start_server):
    """Commands after a dump in the same write run after its last line."""
    srv = start_server()
    with srv.conn() as c:
        fill(c, [b"p%d" % i for i in range(2000)])
        c.send(b"lru_crawler mgdump all\r\nget p7\r\nstats cachedump 1 1\r\n"
               b"lru_crawler metadump 2\r\nmn\r\n")
        assert c.recv_line() == b"OK"
        assert c.recv_until(b"EN\r\n").count(b"\r\n") == 2001
        assert c.recv_line() == b"VALUE p7 0 1"
        assert c.recv_until(b"END\r\n") == b"v\r\nEND\r\n"
        assert c.recv_line() == b"ITEM p0 [1 b; 0 s]"
        assert c.recv_line() == b"END"
        assert c.recv_line() == b"OK"
        assert c.recv_line() == b"END"
        assert c.recv_line() == b"MN"


@pytest.mark.anchorkv_only
def test_dump_streams_to_a_slow_reader(tmp_path):
    """A dump far larger than the reply high water mark is not queued
    whole: with the client not reading, the server's memory grows by
    little more than a batch and the socket buffers; then every line
    arrives, and other clients are served meanwhile."""
    srv = start_release(["-m", "512"], str(tmp_path))
    try:
        keys = [b"stream:%07d:%s" % (i, b"x" * 60) for i in range(200000)]
        with srv.conn(timeout=60) as c:
            fill(c, keys)
        before = vm_rss_kib(srv.pid)
        s = socket.create_connection((srv.host, srv.port))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        s.sendall(b"lru_crawler metadump all\r\n")
        time.sleep(1.0)
        with srv.conn() as other:
            assert other.get1(keys[5]) == b"v"
        grown = vm_rss_kib(srv.pid) - before
        # the whole dump is about 22 MB
        assert grown < 8 * 1024, "RSS grew %d KiB" % grown
        got = bytearray()
        s.settimeout(60)
        while not got.endswith(b"END\r\n"):
            chunk = s.recv(1 << 20)
            assert chunk
            got += chunk
        s.close()
        assert got.startswith(b"OK\r\n")
        assert got.count(b"\n") == len(keys) + 2
    finally:
        srv.stop()


# --- cache_memlimit -----------------------------------------------------------

@pytest.mark.anchorkv_only
def test_cache_memlimit_lowers_and_evicts(start_server):
    srv = start_server(["-m", "64"])
    value = b"x" * 1000
    with srv.conn() as c:
        fill(c, [b"m%d" % i for i in range(40000)], value=value)
        st = c.stats()
        assert int(st["bytes"]) > 30 * MIB
        assert c.cmd("cache_memlimit 16") == b"OK"
        st = c.stats()
        assert int(st["limit_maxbytes"]) == 16 * MIB
        assert int(st["bytes"]) + int(st["index_bytes"]) <= 16 * MIB
        assert int(st["evictions"]) > 20000
        assert c.stats("settings")["maxbytes"] == str(16 * MIB)
        # new sets evict under the new limit, and are all stored
        fill(c, [b"n%d" % i for i in range(20000)], value=value)
        st = c.stats()
        assert int(st["bytes"]) + int(st["index_bytes"]) <= 16 * MIB
        assert st["store_no_memory"] == "0"
        assert c.get1("n19999") == value
        assert c.cmd("cache_memlimit 64") == b"OK"
        fill(c, [b"o%d" % i for i in range(40000)], value=value)
        assert int(c.stats()["bytes"]) > 30 * MIB
        c.send(b"cache_memlimit 32 noreply\r\nmn\r\n")
        assert c.recv_line() == b"MN"
        assert c.stats()["limit_maxbytes"] == str(32 * MIB)


@pytest.mark.anchorkv_only
def test_cache_memlimit_under_M_keeps_every_item(start_server):
    srv = start_server(["-m", "64", "-M"])
    with srv.conn() as c:
        fill(c, [b"m%d" % i for i in range(20000)], value=b"x" * 1000)
        assert c.cmd("cache_memlimit 8") == \
            b"MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust"
        assert c.stats()["curr_items"] == "20000"
        assert c.cmd("cache_memlimit 48") == b"OK"
        assert c.stats()["limit_maxbytes"] == str(48 * MIB)


ERROR_LINES = [
    "cache_memlimit 7", "cache_memlimit 0", "cache_memlimit -5",
    "cache_memlimit 64abc", "cache_memlimit 1000000001",
    "cache_memlimit", "cache_memlimit 64 a b", "cache_memlimit 8",
    "cache_memlimit 64", "cache_memlimit 64 x",
    "stats cachedump 64 0", "stats cachedump 1", "stats cachedump x 0",
    "stats cachedump 1 -1", "stats cachedump 2 0", "stats cachedump 1 0 0",
    "lru_crawler metadump 0", "lru_crawler metadump 64",
    "lru_crawler metadump x", "lru_crawler metadump",
    "lru_crawler metadump all x", "lru_crawler", "lru_crawler foo",
]


@pytest.mark.anchorkv_only
def test_admin_replies_match_memcached(start_server, tmp_path):
    """The same lines to memcached 1.6.18 (its crawler on) give the same
    replies, on an empty cache."""
    if not os.path.exists(MEMCACHED) and not shutil.which("memcached"):
        pytest.skip("memcached is not installed")
    server = start_server(["-m", "64"])
    ref = Memcached(["-m", "64"], str(tmp_path)).start()
    try:
        with server.conn() as a, ref.conn() as b:
            for line in ERROR_LINES:
                assert a.cmd(line) == b.cmd(line), line
    finally:
        ref.stop(check=False)


@pytest.mark.anchorkv_only
@pytest.mark.skipif(not os.path.exists(TOOL) or not shutil.which("perl"),
                    reason="memcached-tool is not installed")
def test_memcached_tool_dump_restores(start_server):
    """memcached-tool's keys and dump modes (they read metadump): the dump,
    replayed into an empty server, gives back every item."""
    src, dst = start_server(), start_server()
    items = {b"tool:%d" % i: (b"value %d" % i, i % 3) for i in range(500)}
    with src.conn() as c:
        for k, (v, f) in items.items():
            c.store("set", k, v, flags=f, exptime=3600 if f else 0)
    addr = "%s:%d" % (src.host, src.port)
    keys = subprocess.run(["perl", TOOL, addr, "keys"], capture_output=True,
                          timeout=60, check=True).stdout
    assert len([x for x in keys.splitlines() if x.startswith(b"key=")]) \
        == len(items)
    dump = subprocess.run(["perl", TOOL, addr, "dump"], capture_output=True,
                          timeout=60, check=True).stdout
    with dst.conn() as c:
        c.send(dump + b"mn\r\n")
        stored = c.recv_until(b"MN\r\n").count(b"STORED\r\n")
        assert stored == len(items)
        for k, (v, f) in items.items():
            c.send(b"mg %s v f t\r\n" % k)
            head = c.recv_line().split()
            assert head[:2] == [b"VA", b"%d" % len(v)]
            assert b"f%d" % f in head
            assert (b"t-1" in head) == (f == 0)
            assert c.recv_line() == v


# --- stats detail -------------------------------------------------------------

DETAIL_SESSION = [
    b"stats detail on",
    b"set a:1 0 0 1\r\nx", b"set nodelim 0 0 1\r\nx", b"add a:2 0 0 1\r\ny",
    b"add a:1 0 0 1\r\ny", b"replace b:1 0 0 1\r\nz", b"append a:1 0 0 1\r\nz",
    b"prepend c:9 0 0 1\r\nz", b"cas a:1 0 0 1 999\r\nq",
    b"get a:1 a:2 b:3 nodelim", b"gets a:1", b"gat 100 a:2 zz:1",
    b"delete a:1", b"delete q:1", b"incr a:2 1", b"touch a:2 10",
    b"mg a:2 v", b"ms m:1 1\r\nx", b"md a:2",
    b"set ::x 0 0 1\r\nx", b"get :y",
    b"stats detail off", b"get a:1 off:1", b"stats detail on",
    b"get on:1",
]


def detail_dump(c):
    c.send(b"stats detail dump\r\n")
    lines = c.recv_until(b"END\r\n").split(b"\r\n")[:-2]
    return sorted(lines)


def run_detail(c):
    for req in DETAIL_SESSION:
        c.send(req + b"\r\n")
        c.send(b"mn\r\n")
        c.recv_until(b"MN\r\n")
    return detail_dump(c)


@pytest.mark.anchorkv_only
def test_stats_detail_counts_as_memcached(start_server, tmp_path):
    """The same session to memcached 1.6.18 gives the same PREFIX lines
    (memcached lists them in hash order, anchorkv sorted)."""
    if not os.path.exists(MEMCACHED) and not shutil.which("memcached"):
        pytest.skip("memcached is not installed")
    srv = start_server()
    ref = Memcached([], str(tmp_path)).start()
    try:
        with srv.conn() as a, ref.conn() as b:
            got, want = run_detail(a), run_detail(b)
            assert got == want
            assert b"PREFIX a get 4 hit 4 set 5 del 1" in got
            for line in (b"stats detail", b"stats detail foo",
                         b"stats detail off x", b"stats detail on"):
                assert a.cmd(line) == b.cmd(line), line
            sa, sb = a.stats("settings"), b.stats("settings")
            for name in ("stat_key_prefix", "detail_enabled"):
                assert sa[name] == sb[name], name
            assert a.cmd("stats reset") == b"RESET"
            assert detail_dump(a) == []
    finally:
        ref.stop(check=False)


@pytest.mark.anchorkv_only
def test_stats_detail_delimiter_and_cap(start_server):
    srv = start_server(["-D", "/"])
    with srv.conn() as c:
        st = c.stats("settings")
        assert st["stat_key_prefix"] == "/"
        assert st["detail_enabled"] == "yes"
        c.send(b"".join(b"get p%d/x\r\n" % i for i in range(10050)))
        c.send(b"get a:b/c\r\nmn\r\n")
        c.recv_until(b"MN\r\n", timeout=30)
        lines = detail_dump(c)
        # the table stops at 10,000 prefixes (memcached's never stops)
        assert len(lines) == 10000
        assert b"PREFIX p7 get 1 hit 0 set 0 del 0" in lines
        assert b"PREFIX a:b get 1 hit 0 set 0 del 0" not in lines
        assert c.cmd("stats reset") == b"RESET"
        c.send(b"get a:b/c\r\nmn\r\n")
        c.recv_until(b"MN\r\n")
        assert detail_dump(c) == [b"PREFIX a:b get 1 hit 0 set 0 del 0"]
