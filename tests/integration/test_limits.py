"""Slow and many clients: half requests, clients that never read, idle
connections, 5000 connections at once, the -c limit and running out of
descriptors.

Memory bounds are on the server's peak resident size (hostile.Guard, which
also checks that keys stored before read back byte-identical). No
assertion here is on speed: timeouts are generous and only bound how long
a broken server can hang the suite.
"""
import os
import resource
import selectors
import time

import pytest

import mc
from hostile import (Guard, Measured, connect_raw, skip_on_memcached_flavor,
                     start_memcached, stat, wait_for)

pytestmark = skip_on_memcached_flavor()

KIB = 1024


@pytest.fixture
def measured(tmp_path):
    """measured(args, nofile=None) -> a started hostile.Measured server,
    stopped at the end of the test (exit 0, no sanitizer report)."""
    started = []

    def start(args=(), nofile=None):
        srv = Measured(args, str(tmp_path), nofile).start()
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()


@pytest.fixture
def nofile():
    """Raise this process's descriptor limit to what the test asks."""
    saved = resource.getrlimit(resource.RLIMIT_NOFILE)

    def want(n):
        soft, hard = saved
        if hard != resource.RLIM_INFINITY and hard < n:
            pytest.skip("descriptor limit %d is below %d" % (hard, n))
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(n, soft), hard))

    yield want
    resource.setrlimit(resource.RLIMIT_NOFILE, saved)


def busy_client(srv, prefix, n=300):
    """Another client's @n requests, each answered right."""
    with srv.conn(timeout=30) as c:
        for i in range(n):
            key = b"%s%d" % (prefix, i % 20)
            value = b"v%d" % i
            assert c.set(key, value) == b"STORED"
            assert c.get1(key) == value
        for i in range(20):
            c.send(b"delete %s%d\r\n" % (prefix, i))
            c.expect(b"DELETED\r\n")


# --- slow clients --------------------------------------------------------------

HALF = 50	# connections of each kind


def test_half_requests_cost_bounded_memory(measured):
    # Each kind waits in the middle of a request. A waiting line costs its
    # input buffer (16 KiB), a waiting value its item; bound: 64 KiB per
    # line and 256 KiB per 100 kB value, plus 8 MiB of slack.
    srv = measured()
    value = bytes(range(256)) * 400	# 102400 bytes
    kinds = {
        "line": (b"set hl:a%d 0 0 5", b"\r\nhello\r\n", b"STORED\r\n"),
        "value": (b"set hl:b%d 0 0 102400\r\n" + value[:51200],
                  value[51200:] + b"\r\n", b"STORED\r\n"),
        "get": (b"get" + b" hl:none-%d" * 100, b"\r\n", b"END\r\n"),
        "cr": (b"get hl:none%d\r", b"\n", b"END\r\n"),
    }
    bound = HALF * (3 * 64 + 256) + 8 * KIB
    waiting = []
    with Guard(srv, bound, new_items=2 * HALF):
        for i in range(HALF):
            for name, (first, rest, want) in kinds.items():
                c = srv.conn(timeout=30)
                c.send(first.replace(b"%d", b"%d" % i))
                waiting.append((c, rest, want))
        busy_client(srv, b"hl:busy")
        assert stat(srv, "curr_connections") >= 4 * HALF
        # nothing was dropped: each completes and gets its answer
        for c, rest, want in waiting:
            c.send(rest)
        for c, rest, want in waiting:
            c.expect(want)
            c.close()
        with srv.conn() as c:
            assert c.get1(b"hl:b7") == value
            assert c.get1(b"hl:a7") == b"hello"


def send_until_stalled(sock, req, stall=0.5, most=256 << 20):
    """Send @req over and over on a non-blocking socket until the peer
    takes nothing for @stall seconds. Return the bytes sent."""
    sock.setblocking(False)
    block = req * max(1, 65536 // len(req))
    sent = 0
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_WRITE)
    try:
        while sent < most:
            if not sel.select(stall):
                break
            try:
                sent += sock.send(block)
            except BlockingIOError:
                pass
    finally:
        sel.close()
        sock.setblocking(True)
    return sent


def test_clients_that_never_read(measured):
    # Clients send gets of a 500 kB value (and of a missing key) without
    # reading: the server stops reading them once 256 KiB of replies wait,
    # so they can push only what the sockets buffer; it keeps serving
    # others. Replies refer to the item, so the memory bound is small:
    # 16 MiB for 9 such clients (measured: about 4.5 MiB).
    srv = measured()
    big = os.urandom(500000)
    with srv.conn() as c:
        assert c.set(b"hl:big", big) == b"STORED"
    stuck = []
    with Guard(srv, 16 * KIB):
        for i in range(9):
            s = connect_raw(srv)
            req = b"get hl:big\r\n" if i else b"get hl:none\r\n"
            sent = send_until_stalled(s, req)
            # an unbounded server would have read all 256 MB
            assert sent < 64 << 20, sent
            stuck.append((s, req, sent))
        busy_client(srv, b"hl:busy")
        with srv.conn(timeout=30) as c:
            assert c.get1(b"hl:big") == big
        # the replies held back all come once read (those of a client of
        # the missing key: the big ones would be gigabytes)
        s, req, sent = stuck[0]
        tail = len(req) - sent % len(req)
        if tail != len(req):
            s.sendall(req[-tail:])	# complete the last request
        s.sendall(b"version\r\n")
        n = (sent + len(req) - 1) // len(req)
        c = mc.Conn.__new__(mc.Conn)
        c.sock, c.buf, c.timeout = s, b"", 60
        c.expect(b"END\r\n" * n)
        assert c.recv_line().startswith(b"VERSION ")
        for s, _, _ in stuck:
            s.close()


# --- idle_timeout ----------------------------------------------------------------

def closed_yet(c):
    """Read what is there without waiting; True once the server closed."""
    c.sock.setblocking(False)
    try:
        chunk = c.sock.recv(4096)
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True
    finally:
        c.sock.setblocking(True)
    c.buf += chunk
    return not chunk


def idle_timeout_run(srv, secs):
    """Five connections, every 0.2 s:
      idle     sends nothing
      half     sent half a line, then nothing
      trickle  sends one more byte of a never-ending get line
      busy     sends a request and reads its reply
      slow     sends one more byte of a 400-byte value
    The first three make no request for @secs seconds and must be closed
    (without a reply); busy and slow must not be.
    Return: {name: what it received before the close}."""
    names = ("idle", "half", "trickle")
    conns = {n: srv.conn(timeout=30) for n in names + ("busy", "slow")}
    conns["half"].send(b"get hl:i")
    conns["trickle"].send(b"get")
    conns["slow"].send(b"set hl:slow 0 0 400\r\n")
    deadline = time.monotonic() + secs + 20
    got = {}
    sent = 0
    while len(got) < len(names):
        assert time.monotonic() < deadline, \
            "not closed: %s" % [n for n in names if n not in got]
        assert conns["busy"].cmd("version").startswith(b"VERSION ")
        if "trickle" not in got:
            try:
                conns["trickle"].send(b" k" if sent % 2 else b"e")
            except OSError:
                pass	# closed: seen below
        conns["slow"].send(b"v")
        sent += 1
        for n in names:
            if n not in got and closed_yet(conns[n]):
                got[n] = conns[n].buf
        time.sleep(0.2)
    # busy and slow stayed
    assert conns["busy"].cmd("version").startswith(b"VERSION ")
    conns["slow"].send(b"v" * (400 - sent) + b"\r\n")
    conns["slow"].expect(b"STORED\r\n")
    for c in conns.values():
        c.close()
    return got


def stalled_connections_close(srv, secs):
    # anchorkv also closes a connection stalled halfway through a value or
    # whose client stopped reading its replies, once nothing moved for
    # idle_timeout; memcached leaves those open (it times out only
    # connections waiting for a command)
    with srv.conn() as c:
        assert c.set(b"hl:deaf", b"d" * 300000) == b"STORED"
    before = stat(srv, "curr_connections")
    stalled = srv.conn(timeout=secs + 20)
    stalled.send(b"set hl:stalled 0 0 100\r\nabc")
    deaf = srv.conn(timeout=secs + 20)
    send_until_stalled(deaf.sock, b"get hl:deaf\r\n", stall=0.2)
    # (reading the deaf one's replies would be progress: wait first)
    wait_for(lambda: stat(srv, "curr_connections") <= before,
             timeout=secs + 20, what="stalled connections to close")
    assert stalled.assert_closed() == b""
    deaf.assert_closed()	# some of its replies, then EOF
    stalled.close()
    deaf.close()


def test_idle_timeout(measured, server, tmp_path):
    # -o idle_timeout=N closes connections that made no request for N
    # seconds, as memcached does, and only those; off by default (the
    # shared server's connection opened first is still served at the end)
    default_conn = server.conn()
    assert default_conn.cmd("version").startswith(b"VERSION ")
    srv = measured(["-o", "idle_timeout=3"])
    ref = start_memcached(str(tmp_path), ["-o", "idle_timeout=3"])
    try:
        with srv.conn() as c:
            assert c.stats("settings")["idle_timeout"] == "3"
        got = idle_timeout_run(srv, 3)
        want = idle_timeout_run(ref, 3)
        assert got == want == {"idle": b"", "half": b"", "trickle": b""}
        stalled_connections_close(srv, 3)
    finally:
        ref.stop(check=False)
    assert default_conn.cmd("version").startswith(b"VERSION ")
    with server.conn() as c:
        assert c.stats("settings")["idle_timeout"] == "0"
    default_conn.close()


# --- many connections --------------------------------------------------------------

MANY = 5000


def test_5000_connections(measured, nofile):
    # each of 5000 connections gets its request served; memory per
    # connection measured (about 23 KiB with ASan), bound 64 KiB
    nofile(MANY + 200)
    srv = measured(["-c", str(MANY + 100)])
    with srv.conn() as c:
        assert c.set(b"hl:many", b"m" * 100) == b"STORED"
    with Guard(srv, MANY * 64):
        socks = []
        try:
            for _ in range(MANY):
                socks.append(connect_raw(srv, timeout=30))
            for s in socks:
                s.sendall(b"get hl:many\r\n")
            want = b"VALUE hl:many 0 100\r\n" + b"m" * 100 + b"\r\nEND\r\n"
            left = {s: b"" for s in socks}
            sel = selectors.DefaultSelector()
            for s in socks:
                s.setblocking(False)
                sel.register(s, selectors.EVENT_READ)
            deadline = time.monotonic() + 120
            while left:
                assert time.monotonic() < deadline, "%d unserved" % len(left)
                for key, _ in sel.select(5):
                    s = key.fileobj
                    try:
                        left[s] += s.recv(4096)
                    except BlockingIOError:
                        continue
                    if len(left[s]) >= len(want):
                        assert left[s] == want
                        sel.unregister(s)
                        del left[s]
            sel.close()
            assert stat(srv, "curr_connections") >= MANY + 1
            # "stats conns" lists every one of them
            with srv.conn(timeout=60) as c:
                st = c.stats("conns")
            addrs = [k for k in st if k.endswith(":addr")]
            assert len(addrs) >= MANY + 1
            states = [st[k] for k in st if k.endswith(":state")]
            assert states.count("conn_waiting") >= MANY
        finally:
            for s in socks:
                s.close()


def fill_until_refused(srv, most):
    """Open connections until one is refused; return (open ones, what the
    refused one received before the server closed it)."""
    conns = []
    for _ in range(most):
        c = srv.conn(timeout=10)
        c.send(b"version\r\n")
        line = c.recv_line()
        if not line.startswith(b"VERSION "):
            return conns, line + b"\r\n" + c.assert_closed()
        conns.append(c)
    raise AssertionError("no connection refused after %d" % most)


def test_max_connections_like_memcached(measured, tmp_path):
    # past -c, memcached answers a new connection "ERROR Too many open
    # connections" and closes it; anchorkv the same bytes. (memcached
    # counts some of its own descriptors against -c, so the numbers of
    # connections accepted differ: see test_admin.py.)
    srv = measured(["-c", "8"])
    ref = start_memcached(str(tmp_path), ["-c", "40"])
    try:
        # the start-up probe's connection gone: this one is the only one
        watch = srv.conn()
        wait_for(lambda: int(watch.stats()["curr_connections"]) == 1,
                 timeout=10, what="curr_connections == 1")
        results = []
        for s in (srv, ref):
            conns, refused = fill_until_refused(s, 60)
            results.append(len(conns))
            # a burst of 30 more: every one refused, the open ones served
            burst = [s.conn(timeout=10) for _ in range(30)]
            for c in burst:
                assert c.assert_closed() == refused
                c.close()
            for c in conns:
                assert c.cmd("version").startswith(b"VERSION ")
            # a slot freed is a slot for the next one
            conns.pop().close()
            wait_for(lambda: refused_or_served(s), timeout=10,
                     what="a freed slot to be reused")
            results.append((refused, conns[0].stats()))
            for c in conns:
                c.close()
        watch.close()
        accepted, (got, st), _, (want, _) = results
        assert got == want == b"ERROR Too many open connections\r\n"
        assert accepted + 1 == 8	# and watch
        assert int(st["rejected_connections"]) >= 31
    finally:
        ref.stop(check=False)


def refused_or_served(srv):
    with srv.conn(timeout=10) as c:
        c.send(b"version\r\n")
        return c.recv_line().startswith(b"VERSION ")


def test_out_of_descriptors(measured):
    # A descriptor limit of 64 and -c 1000: accept() fails with EMFILE
    # long before -c. The server must not exit: it pauses accepting
    # (listen_disabled_num), serves the connections it has, and accepts
    # the waiting ones as soon as descriptors are free.
    srv = measured(["-c", "1000"], nofile=64)
    first = srv.conn(timeout=30)
    conns = []
    try:
        assert first.cmd("version").startswith(b"VERSION ")
        # (the start-up probe's connection gone: only this one counted)
        wait_for(lambda: int(first.stats()["curr_connections"]) == 1,
                 timeout=30, what="curr_connections == 1")
        # 60 more connections, each with a request: more than 64
        # descriptors allow, with the daemon's own
        for _ in range(60):
            c = srv.conn(timeout=30)
            c.send(b"version\r\n")
            conns.append(c)
        wait_for(lambda: int(first.stats()["listen_disabled_num"]) > 0,
                 timeout=30, what="accept() to fail")
        assert srv.alive()
        assert "Too many open files" in srv.stderr_text()
        # the connections accepted (the first ones: the backlog is a
        # queue) are served; the others wait
        accepted = int(first.stats()["curr_connections"]) - 1
        waiting = len(conns) - accepted
        assert accepted > 10 and waiting > 0, (accepted, waiting)
        for c in conns[:accepted]:
            assert c.recv_line().startswith(b"VERSION ")
        # free enough of them: every waiting connection is then accepted
        # and answered
        free = min(accepted, waiting + 5)
        for c in conns[:free]:
            c.close()
        for c in conns[free:]:
            if c in conns[:accepted]:
                assert c.cmd("version").startswith(b"VERSION ")
            else:
                assert c.recv_line().startswith(b"VERSION ")
        assert first.cmd("version").startswith(b"VERSION ")
    finally:
        first.close()
        for c in conns:
            c.close()
    wait_for(lambda: refused_or_served(srv), timeout=20,
             what="accepting again")
