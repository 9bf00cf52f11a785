"""Warm restart (-e FILE): the snapshot written at a graceful stop and
loaded at the next start; refused when damaged (a clean start, the reason
logged, the file kept as FILE.bad); a kill -9 during a save leaving the
previous snapshot as it was.
"""
import base64
import os
import re
import signal
import subprocess
import time

import pytest

import conftest
from release import start_release

pytestmark = pytest.mark.anchorkv_only

MIB = 1024 * 1024


def stop_with(srv, sig):
    """Stops @srv with @sig; return its exit status and its log."""
    srv.proc.send_signal(sig)
    rc = srv.wait_exit()
    srv.stopped = True
    report = srv.new_sanitizer_report()
    assert not report, report
    return rc, srv.stderr_text()


def wait_log(srv, pattern, timeout=120):
    """The server's log once @pattern (a regex) is in it."""
    deadline = time.monotonic() + timeout
    while True:
        log = srv.stderr_text()
        if re.search(pattern, log):
            return log
        assert time.monotonic() < deadline, log[-2000:]
        time.sleep(0.05)


def akbench_load(srv, n):
    """Store key:0 .. key:<n - 1> with 32-byte values into @srv."""
    r = subprocess.run([os.path.join(conftest.ROOT, "build/akbench"), "load",
                        "-P", "mc", "-p", str(srv.port), "-n", str(n),
                        "-x", "key:", "-d", "32", "-c", "4", "-D", "64"],
                       capture_output=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def values(c, keys):
    return {k: c.gets(k).get(k.encode() if isinstance(k, str) else k)
            for k in keys}


def fill(c):
    """Every kind of item; return what gets says of each."""
    keys = []
    for i in range(0, 3000, 7):			# integer keys
        c.store("set", str(i), b"i%d" % i, flags=i)
        keys.append(str(i))
    for i in range(500):				# string keys
        c.store("set", "user:%04d" % i, b"x" * (i % 40), flags=7)
        keys.append("user:%04d" % i)
    c.store("set", "crlf", b"a\r\nb\x00c\r\n", flags=1)
    c.store("set", "big", b"B" * MIB)
    c.store("set", "big2", bytes(range(256)) * 4096)
    keys += ["crlf", "big", "big2"]
    c.send(b"ms meta 5 F9 T0\r\nhello\r\n")		# written by ms
    assert c.recv_line() == b"HD"
    keys.append("meta")
    return keys


def test_round_trip_by_sigusr1(start_server, tmp_path):
    snap = tmp_path / "snap"
    srv = start_server(["-e", str(snap), "-I", "2m"])
    with srv.conn() as c:
        keys = fill(c)
        c.send(b"ms %s 2 b\r\nhi\r\n" % base64.b64encode(b"bin\x01k"))
        assert c.recv_line() == b"HD"
        before = values(c, keys)
        cas_a = before["user:0001"][2]
    rc, log = stop_with(srv, signal.SIGUSR1)
    assert rc == 0
    assert "snapshot %s written: %d items" % (snap, len(keys) + 1) in log
    assert not os.path.exists(str(snap) + ".tmp")

    srv = start_server(["-e", str(snap), "-I", "2m"])
    wait_log(srv, re.escape("snapshot %s loaded: %d items" %
                            (snap, len(keys) + 1)))
    with srv.conn() as c:
        assert values(c, keys) == before
        # a cas from before the restart still works, and is spent
        assert c.store("cas", "user:0001", b"new", cas=cas_a) == b"STORED"
        assert c.store("cas", "user:0001", b"again", cas=cas_a) == \
            b"EXISTS"
        # new cas values are above every loaded one
        c.store("set", "fresh", b"1")
        assert c.gets("fresh")[b"fresh"][2] > max(v[2] for v in
                                                  before.values())
        c.send(b"mg %s b v k\r\n" % base64.b64encode(b"bin\x01k"))
        assert c.recv_line() == b"VA 2 k%s b" % \
            base64.b64encode(b"bin\x01k")
        assert c.recv_line() == b"hi"
        assert c.cmd("keys - + 3") == b"KEY 0"


def test_ttl_counts_down_across_the_downtime(start_server, tmp_path):
    """TTLs count down across 2 s of downtime. The clock counts whole
    seconds (as memcached's), so an item set with 3 s may have 1 s left
    or, at the edge of its last second, be gone: "short" shows the case
    of the issue, "mid" (4 s) is checked against the time that really
    went by since the set."""
    snap = tmp_path / "snap"
    srv = start_server(["-e", str(snap)])
    with srv.conn() as c:
        c.store("set", "short", b"s", exptime=3)
        c.store("set", "mid", b"m", exptime=4)
        set_at = time.monotonic()
        c.store("set", "long", b"l", exptime=100)
        c.store("set", "gone", b"g", exptime=1)
    rc, _ = stop_with(srv, signal.SIGUSR1)
    assert rc == 0
    time.sleep(2)			# the downtime
    srv = start_server(["-e", str(snap)])
    with srv.conn() as c:
        c.send(b"mg short t v\r\nmg mid t\r\nmg long t\r\n"
               b"mg gone t\r\n")
        head = c.recv_line().split()
        elapsed = time.monotonic() - set_at
        assert head == [b"EN"] or (head[0] == b"VA" and
                                   int(head[2][1:]) <= 1)
        if head[0] == b"VA":
            assert c.recv_line() == b"s"
        mid = c.recv_line().split()
        if mid == [b"EN"]:		# only on a machine slow enough
            assert elapsed > 2.5
        else:
            assert mid[0] == b"HD"
            assert 4 - elapsed - 1.5 <= int(mid[1][1:]) <= \
                4 - elapsed + 1.5
        long_left = int(c.recv_line().split()[1][1:])
        assert 100 - elapsed - 1.5 <= long_left <= 100 - elapsed + 1.5
        assert c.recv_line() == b"EN"
    # "gone" was expired when the file was loaded; "short" and "mid"
    # may be
    assert re.search("[123] expired left out", srv.stderr_text())


def test_which_stops_write_it(start_server, tmp_path):
    snap = tmp_path / "snap"
    # SIGTERM writes nothing
    srv = start_server(["-e", str(snap)])
    with srv.conn() as c:
        c.store("set", "k", b"1")
    rc, log = stop_with(srv, signal.SIGTERM)
    assert rc == 0 and not os.path.exists(snap) and "written" not in log
    # unless snapshot_on_exit
    srv = start_server(["-e", str(snap), "--snapshot-on-exit", "yes"])
    with srv.conn() as c:
        c.store("set", "k", b"2")
    rc, log = stop_with(srv, signal.SIGTERM)
    assert rc == 0 and "written: 1 items" in log
    # shutdown graceful (with -A) writes it, plain shutdown does not
    srv = start_server(["-e", str(snap), "-A"])
    with srv.conn() as c:
        c.store("set", "k", b"3")
        c.send(b"shutdown graceful\r\n")
        c.assert_closed()
    assert srv.wait_exit() == 0
    srv.check_exit(0)
    assert "shutdown graceful: stopping" in srv.stderr_text()
    srv = start_server(["-e", str(snap), "-A"])
    with srv.conn() as c:
        assert c.get1("k") == b"3"
        c.store("set", "k", b"4")
        c.send(b"shutdown\r\n")
        c.assert_closed()
    assert srv.wait_exit() == 0
    srv.check_exit(0)
    srv = start_server(["-e", str(snap)])
    with srv.conn() as c:
        assert c.get1("k") == b"3"


def damaged(data):
    """Ways to damage a snapshot: (name, bytes)."""
    out = []
    for off in (10, 40, 70, 100, len(data) // 2, len(data) - 30):
        b = bytearray(data)
        b[off] ^= 0x10
        out.append(("byte %d flipped" % off, bytes(b)))
    for cut in (0, 30, 64, 100, len(data) // 3, len(data) - 1):
        out.append(("cut at %d" % cut, data[:cut]))
    return out


def test_damaged_file_gives_a_clean_start(start_server, tmp_path):
    snap = tmp_path / "snap"
    srv = start_server(["-e", str(snap)])
    with srv.conn() as c:
        for i in range(2000):
            c.store("set", "d%d" % i, b"v" * 20)
    assert stop_with(srv, signal.SIGUSR1)[0] == 0
    good = snap.read_bytes()
    for name, data in damaged(good):
        snap.write_bytes(data)
        srv = start_server(["-e", str(snap)])
        with srv.conn() as c:
            assert c.stats()["curr_items"] == "0", name
        srv.stop()
        log = srv.stderr_text()		# all of it: the daemon has exited
        assert "snapshot %s refused: " % snap in log, (name, log)
        assert "the file is kept as %s.bad" % snap in log
        assert not os.path.exists(snap)
        bad = tmp_path / "snap.bad"
        assert bad.read_bytes() == data, name
        os.remove(bad)
    # a newer format: refused, saying so
    data = bytearray(good)
    data[8] = 9
    snap.write_bytes(bytes(data))
    srv = start_server(["-e", str(snap)])
    srv.stop()
    assert "refused" in srv.stderr_text()
    # the good file loads
    snap.write_bytes(good)
    srv = start_server(["-e", str(snap)])
    with srv.conn() as c:
        assert c.stats()["curr_items"] == "2000"


def test_kill_9_during_a_save_keeps_the_previous(tmp_path):
    """The release daemon with 400 MB to write: killed while FILE.tmp
    grows, FILE is still the previous snapshot, and it loads."""
    snap = tmp_path / "snap"
    srv = start_release(["-e", str(snap), "-m", "1024"], str(tmp_path))
    with srv.conn() as c:
        c.store("set", "first", b"1")
    srv.proc.send_signal(signal.SIGUSR1)
    assert srv.wait_exit() == 0
    first = snap.read_bytes()
    srv = start_release(["-e", str(snap), "-m", "1024"], str(tmp_path))
    value = b"v" * 4000
    with srv.conn(timeout=120) as c:
        for b in range(0, 100000, 5000):
            c.send(b"".join(b"set k%06d 0 0 %d noreply\r\n%s\r\n" %
                            (i, len(value), value)
                            for i in range(b, b + 5000)))
        assert c.cmd("mn") == b"MN"
    tmp = str(snap) + ".tmp"
    srv.proc.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 30
    while not os.path.exists(tmp) or os.path.getsize(tmp) < 4 * MIB:
        assert time.monotonic() < deadline, "no save under way"
        time.sleep(0.001)
    srv.proc.kill()
    srv.proc.wait()
    srv.stopped = True
    assert os.path.exists(tmp)		# killed in the middle of it
    assert snap.read_bytes() == first
    srv = start_release(["-e", str(snap)], str(tmp_path))
    with srv.conn() as c:
        assert c.get1("first") == b"1"
        assert c.stats()["curr_items"] == "1"
    srv.stop()


# --- while serving: the snapshot command, SIGUSR2, stats ---------------------

def parse_snapshot(data):
    """The items of a snapshot file, read with the format of
    server/snapshot.h: {key: (flags, value, expiry, cas)}."""
    import struct
    assert data[:8] == b"AKVSNAP\0"
    pos, items = 64, {}
    while True:
        typ, length, count, _ = struct.unpack_from("<IIII", data, pos)
        pos += 24
        payload = data[pos:pos + length]
        pos += length
        if typ == 2:
            assert pos == len(data)
            assert struct.unpack_from("<Q", payload)[0] == len(items)
            return items
        p = 0
        for _ in range(count):
            nkey, _, _, flags, nbytes, expiry, cas = \
                struct.unpack_from("<BBHIIQQ", payload, p)
            p += 28
            key = payload[p:p + nkey]
            value = payload[p + nkey:p + nkey + nbytes]
            p += nkey + nbytes
            items[key] = (flags, value, expiry, cas)


def wait_saved(c, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        st = c.stats()
        if st["snapshot_in_progress"] == "0" and \
                st["last_snapshot_status"] != "none":
            return st
        assert time.monotonic() < deadline, "the snapshot did not end"
        time.sleep(0.02)


def test_snapshot_command_and_sigusr2(start_server, tmp_path):
    snap = tmp_path / "snap"
    srv = start_server(["-e", str(snap)])
    with srv.conn() as c:
        st = c.stats()
        assert st["last_snapshot_status"] == "none"
        assert st["snapshot_in_progress"] == "0"
        for i in range(3000):
            c.store("set", "s%d" % i, b"v%d" % i, flags=i)
        assert c.cmd("snapshot") == b"OK"
        st = wait_saved(c)
        assert st["last_snapshot_status"] == "ok"
        assert st["last_snapshot_items"] == "3000"
        assert int(st["last_snapshot_bytes"]) == os.path.getsize(snap)
        assert abs(int(st["last_snapshot_time"]) - time.time()) < 10
        items = parse_snapshot(snap.read_bytes())
        assert items[b"s7"][:2] == (7, b"v7")
        # SIGUSR2 writes it again, with what changed since
        c.store("set", "later", b"x")
        first = int(st["last_snapshot_time"])
        os.kill(srv.pid, signal.SIGUSR2)
        deadline = time.monotonic() + 30
        while int(c.stats()["last_snapshot_items"]) != 3001:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert int(c.stats()["last_snapshot_time"]) >= first
        assert b"later" in parse_snapshot(snap.read_bytes())
        # two at once: the second is told one is under way, or starts
        # after the first ended
        c.send(b"snapshot\r\nsnapshot\r\n")
        assert c.recv_line() == b"OK"
        assert c.recv_line() in (
            b"OK", b"SERVER_ERROR a snapshot is already being written")
        wait_saved(c)
    srv = start_server()
    with srv.conn() as c:
        assert c.cmd("snapshot") == \
            b"SERVER_ERROR no snapshot file (-e, snapshot_file)"


def test_a_full_disk_keeps_the_previous_snapshot(start_server, tmp_path,
                                                 monkeypatch):
    """The test build's failure injection: every write fails once 20,000
    bytes went out, as on a full disk."""
    snap = tmp_path / "snap"
    srv = start_server(["-e", str(snap)])
    with srv.conn() as c:
        c.store("set", "old", b"1")
    assert stop_with(srv, signal.SIGUSR1)[0] == 0
    before = snap.read_bytes()
    monkeypatch.setenv("AKV_SNAPSHOT_FAIL_AFTER", "20000")
    srv = start_server(["-e", str(snap)])
    with srv.conn() as c:
        for i in range(2000):
            c.store("set", "n%d" % i, b"v" * 30)
        assert c.cmd("snapshot") == b"OK"
        st = wait_saved(c)
        assert st["last_snapshot_status"].startswith("failed: cannot write")
        assert "No space left on device" in st["last_snapshot_status"]
        assert snap.read_bytes() == before
        assert not os.path.exists(str(snap) + ".tmp")
        assert c.get1("n5") == b"v" * 30	# it serves on
    rc, log = stop_with(srv, signal.SIGUSR1)
    assert rc == 1			# the stop's save failed too
    assert "not written" in log and "No space left on device" in log
    assert snap.read_bytes() == before


def test_snapshot_under_load(start_server, tmp_path):
    """Writers and deleters run while the snapshot is written: every item
    in the file is a value its key held at some moment, and every item
    left alone during the snapshot is in it, unchanged."""
    import threading
    snap = tmp_path / "snap"
    srv = start_server(["-e", str(snap)])
    stable = {b"stable:%05d" % i: b"s%d" % i for i in range(20000)}
    churn = [b"churn:%05d" % i for i in range(2000)]
    with srv.conn(timeout=60) as c:
        c.send(b"".join(b"set %s 0 0 %d noreply\r\n%s\r\n" %
                        (k, len(v), v) for k, v in stable.items()))
        c.send(b"".join(b"set %s 0 0 2 noreply\r\ng0\r\n" % k
                        for k in churn))
        assert c.cmd("mn") == b"MN"
    stop = threading.Event()
    written = {k: {b"g0"} for k in churn}
    lock = threading.Lock()

    def writer(seed):
        gen = 0
        with srv.conn(timeout=60) as w:
            while not stop.is_set():
                gen += 1
                batch = []
                for j, k in enumerate(churn):
                    if (j + seed) % 3 == 0:
                        batch.append(b"delete %s noreply\r\n" % k)
                    else:
                        v = b"g%d.%d" % (seed, gen)
                        with lock:
                            written[k].add(v)
                        batch.append(b"set %s 0 0 %d noreply\r\n%s\r\n" %
                                     (k, len(v), v))
                w.send(b"".join(batch))
                assert w.cmd("mn") == b"MN"

    threads = [threading.Thread(target=writer, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    try:
        with srv.conn() as c:
            time.sleep(0.2)
            assert c.cmd("snapshot") == b"OK"
            st = wait_saved(c)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert st["last_snapshot_status"] == "ok"
    items = parse_snapshot(snap.read_bytes())
    for k, v in stable.items():
        assert items[k][1] == v
    seen = 0
    for k in churn:
        if k in items:
            seen += 1
            assert items[k][1] in written[k]
    assert len(items) == len(stable) + seen



def test_large_load_progress_and_memory_limit(start_server, tmp_path):
    """A load of a million items logs its progress every second; into a
    smaller memory limit it stops at the limit and says so."""
    snap = tmp_path / "snap"
    srv = start_server(["-e", str(snap), "-m", "1024"])
    akbench_load(srv, 1000000)
    assert stop_with(srv, signal.SIGUSR1)[0] == 0
    srv = start_server(["-e", str(snap), "-m", "1024"])
    log = wait_log(srv, "loaded: ")
    m = re.search(r"snapshot \S+ loaded: 1000000 items .* in ([0-9.]+) s",
                  log)
    assert m, log
    progress = re.findall(r"loading snapshot \S+: (\d+) items, \d+ MB/s",
                          log)
    # one line per full second of loading
    assert len(progress) >= int(float(m.group(1))) - 1
    assert [int(x) for x in progress] == sorted(int(x) for x in progress)
    with srv.conn() as c:
        assert c.stats()["curr_items"] == "1000000"
    assert stop_with(srv, signal.SIGUSR1)[0] == 0
    srv = start_server(["-e", str(snap), "-m", "32"])
    log = wait_log(srv, "loaded: ")
    assert "stopped at memory_limit: the rest is left out" in log
    with srv.conn() as c:
        st = c.stats()
        assert 0 < int(st["curr_items"]) < 1000000
        assert int(st["bytes"]) + int(st["index_bytes"]) <= 32 * MIB
        assert st["evictions"] == "0"


class FirstConnect(conftest.Server):
    """A server that keeps its log as it was at the first connection the
    port took."""

    def _wait_accepting(self):
        ok = super()._wait_accepting()
        self.log_at_first_connect = self.stderr_text()
        return ok


def test_port_answers_only_once_the_load_has_ended(start_server, tmp_path):
    """The port used to listen before the snapshot was loaded and before
    the workers existed: a client was taken into the backlog and waited
    for the whole load, and a test that counted the daemon's descriptors
    at its first connection counted them before the workers had made
    theirs. The port now listens once the server serves."""
    snap = tmp_path / "snap"
    srv = start_server(["-e", str(snap)])
    akbench_load(srv, 200000)
    assert stop_with(srv, signal.SIGUSR1)[0] == 0
    srv = FirstConnect(["-e", str(snap)], str(tmp_path)).start()
    try:
        assert re.search(r"snapshot \S+ loaded: 200000 items",
                         srv.log_at_first_connect), srv.log_at_first_connect
        assert "starting: pid" in srv.log_at_first_connect
        with srv.conn() as c:
            assert c.stats()["curr_items"] == "200000"
    finally:
        assert stop_with(srv, signal.SIGTERM)[0] == 0


def test_relative_snapshot_path_survives_daemonize(tmp_path):
    """-d changes to /: a relative -e path is resolved at start, so the
    file lands beside where the daemon was started, not in /."""
    port = conftest.free_port()
    pidfile = tmp_path / "pid"
    subprocess.run([conftest.BIN, "-d", "-l", "127.0.0.1", "-p", str(port),
                    "-e", "rel.snap", "-P", str(pidfile), "--logfile",
                    "rel.log"], cwd=str(tmp_path), check=True, timeout=30)
    deadline = time.monotonic() + 10
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline, "no pidfile"
        time.sleep(0.05)
    pid = int(pidfile.read_text())
    import mc
    deadline = time.monotonic() + 10
    while True:
        try:
            with mc.Conn("127.0.0.1", port, 5) as c:
                assert c.store("set", "k", b"v") == b"STORED"
            break
        except OSError:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + 20
    while os.path.exists("/proc/%d" % pid):
        assert time.monotonic() < deadline, "the daemon did not stop"
        time.sleep(0.05)
    assert (tmp_path / "rel.snap").exists()
    assert "snapshot %s written: 1 items" % (tmp_path / "rel.snap") in \
        (tmp_path / "rel.log").read_text()
    assert not os.path.exists("/rel.snap")
