"""How requests arrive on the wire: pipelined, split, byte by byte, huge.
Expectations checked against memcached 1.6.18.
"""
import random
import time

import pytest


def k(prefix, name):
    return (prefix + name).encode()


MIB = 1024 * 1024


def test_pipeline_500_in_one_write(conn, prefix):
    rng = random.Random(1)
    req = []
    want = []
    model = {}
    for i in range(500):
        key = k(prefix, "p%d" % rng.randrange(40))
        op = rng.randrange(5)
        if op == 0:
            v = b"%d" % rng.randrange(1000)
            req.append(b"set %s 0 0 %d\r\n%s\r\n" % (key, len(v), v))
            want.append(b"STORED\r\n")
            model[key] = v
        elif op == 1:
            req.append(b"get %s\r\n" % key)
            if key in model:
                want.append(b"VALUE %s 0 %d\r\n%s\r\nEND\r\n"
                            % (key, len(model[key]), model[key]))
            else:
                want.append(b"END\r\n")
        elif op == 2:
            req.append(b"delete %s\r\n" % key)
            want.append(b"DELETED\r\n" if model.pop(key, None) is not None
                        else b"NOT_FOUND\r\n")
        elif op == 3:
            req.append(b"incr %s 7\r\n" % key)
            if key in model:
                n = int(model[key]) + 7
                want.append(b"%d\r\n" % n)
                # memcached keeps the length when the number shrinks; it
                # can only grow here
                model[key] = b"%d" % n
            else:
                want.append(b"NOT_FOUND\r\n")
        else:
            req.append(b"version\r\n")
            want.append(None)
    conn.send(b"".join(req))
    for w in want:
        if w is None:
            assert conn.recv_line().startswith(b"VERSION ")
        else:
            conn.expect(w)
    conn.assert_quiet(0.1)


def test_pipeline_many_gets_large_replies(conn, prefix):
    key = k(prefix, "big")
    value = random.Random(2).randbytes(100000)
    conn.set(key, value)
    n = 60	# 6 MB of replies queued while we do not read
    conn.send(b"get " + key + b"\r\n" * 1 + (b"get " + key + b"\r\n") *
              (n - 1))
    time.sleep(0.3)
    for _ in range(n):
        conn.expect(b"VALUE %s 0 %d\r\n" % (key, len(value)) + value
                    + b"\r\nEND\r\n", timeout=10)


def test_one_mib_value(conn, prefix):
    # Default -I 1m. memcached counts its item header and key against the
    # limit, so a value of exactly 1 MiB is refused and 1 MiB - 100 bytes
    # fits; the suite expects the same.
    key = k(prefix, "m")
    value = random.Random(3).randbytes(MIB - 100)
    assert conn.set(key, value) == b"STORED"
    conn.send(b"get " + key + b"\r\n")
    conn.expect(b"VALUE %s 0 %d\r\n" % (key, len(value)) + value
                + b"\r\nEND\r\n", timeout=10)
    conn.send(b"set %s 0 0 %d\r\n" % (key, MIB) + b"x" * MIB + b"\r\n")
    conn.expect(b"SERVER_ERROR object too large for cache\r\n", timeout=10)


def test_too_large_value_connection_usable(conn, prefix):
    key = k(prefix, "tl")
    conn.set(key, b"old")
    n = 2 * MIB + 5
    conn.send(b"set %s 0 0 %d\r\n" % (key, n))
    # the refusal may come at once or after the data: send it all anyway,
    # in pieces
    chunk = b"y" * 65536
    sent = 0
    while sent < n:
        part = chunk[:min(len(chunk), n - sent)]
        conn.send(part)
        sent += len(part)
    conn.send(b"\r\nget " + key + b"\r\n")
    conn.expect(b"SERVER_ERROR object too large for cache\r\n", timeout=10)
    # a failed set removes the old value (memcached does: no stale data)
    conn.expect(b"END\r\n")
    assert conn.set(key, b"new") == b"STORED"
    assert conn.get1(key) == b"new"


def test_too_large_add_keeps_old_value(conn, prefix):
    key = k(prefix, "ta")
    conn.set(key, b"old")
    n = 2 * MIB
    conn.send(b"add %s 0 0 %d\r\n" % (key, n) + b"z" * n + b"\r\n")
    conn.expect(b"SERVER_ERROR object too large for cache\r\n", timeout=10)
    assert conn.get1(key) == b"old"


def test_huge_declared_length(server, prefix):
    # a length far beyond any buffer: refused at once, nothing allocated
    key = k(prefix, "h")
    with server.conn() as c:
        # memcached answers after swallowing the declared bytes, so the
        # reply is not awaited here
        c.send(b"set %s 0 0 2000000000\r\n" % key)
        c.send(b"x" * 100000)
        with server.conn() as other:
            assert other.get1(key) is None
            assert other.cmd("version").startswith(b"VERSION ")
    # the server is fine after that connection is gone
    with server.conn() as c:
        assert c.get1(key) is None
        assert c.cmd("version").startswith(b"VERSION ")


def test_oversized_line_closes(server):
    for cmd in (b"set ", b"bogus ", b"delete ", b"incr "):
        c = server.conn()
        c.send(cmd + b"a" * 3000)	# no newline
        assert c.assert_closed() == b""
        c.close()
    # the server is fine
    with server.conn() as c:
        assert c.cmd("version").startswith(b"VERSION ")


def test_line_of_2048_bytes_is_not_oversized(server):
    c = server.conn()
    c.send(b"bogus " + b"a" * 2042)	# 2048 bytes, no newline yet
    time.sleep(0.2)
    c.send(b"\r\n")
    c.expect(b"ERROR\r\n")
    c.close()


def test_long_get_line(conn, prefix):
    keys = [k(prefix, "long-get-key-%04d" % i) for i in range(800)]
    for i, key in enumerate(keys):
        if i % 2 == 0:
            conn.set(key, b"%d" % i, noreply=True)
    line = b"get " + b" ".join(keys) + b"\r\n"
    assert len(line) > 16384
    conn.send(line)
    got = conn.read_values()
    assert got == [(key, 0, b"%d" % i) for i, key in enumerate(keys)
                   if i % 2 == 0]
    # gets, and the line sent in small pieces with pauses
    line = b"gets " + b" ".join(keys[:300]) + b"\r\n"
    for off in range(0, len(line), 1000):
        conn.send(line[off:off + 1000])
        time.sleep(0.01)
    got = conn.read_values(with_cas=True)
    assert [g[0] for g in got] == keys[:300:2]


def test_half_command_then_rest(conn, prefix):
    key = k(prefix, "half")
    conn.send(b"set " + key + b" 0 0 5\r\nhel")
    conn.assert_quiet(0.3)
    conn.send(b"lo\r\n")
    conn.expect(b"STORED\r\n")
    conn.send(b"ge")
    conn.assert_quiet(0.3)
    conn.send(b"t " + key)
    conn.assert_quiet(0.2)
    conn.send(b"\r")
    conn.assert_quiet(0.2)
    conn.send(b"\n")
    conn.expect(b"VALUE " + key + b" 0 5\r\nhello\r\nEND\r\n")
    # split between the data and its \r\n
    conn.send(b"set " + key + b" 0 0 2\r\nab")
    conn.assert_quiet(0.2)
    conn.send(b"\r")
    conn.assert_quiet(0.2)
    conn.send(b"\n")
    conn.expect(b"STORED\r\n")


def test_one_byte_at_a_time(server, prefix):
    c = server.conn()
    key = k(prefix, "b")
    req = (b"set " + key + b" 3 0 4\r\nab\r\n\r\nget " + key + b"\r\n"
           b"incr nope 1\r\ndelete " + key + b"\r\n")
    for i in range(len(req)):
        c.send(req[i:i + 1])
    c.expect(b"STORED\r\nVALUE " + key + b" 3 4\r\nab\r\n\r\nEND\r\n"
             b"NOT_FOUND\r\nDELETED\r\n")
    c.close()


def test_client_closes_mid_value(server, prefix):
    # the server must free the half-read item (checked by LeakSanitizer at
    # exit) and go on serving others
    for n in (10, 100000, 900000):
        c = server.conn()
        c.send(b"set " + k(prefix, "x") + b" 0 0 %d\r\n" % n + b"a" * (n // 2))
        c.close()
    with server.conn() as c:
        assert c.get1(k(prefix, "x")) is None
        assert c.cmd("version").startswith(b"VERSION ")


def test_client_closes_with_unread_replies(server, prefix):
    key = k(prefix, "u")
    with server.conn() as c:
        c.set(key, b"q" * 500000)
    for _ in range(3):
        c = server.conn()
        c.send((b"get " + key + b"\r\n") * 50)
        c.close()
    with server.conn() as c:
        assert c.get1(key) == b"q" * 500000


@pytest.mark.parametrize("n", [0, 1, 2, 1000, 65536, 500000])
def test_value_sizes_round_trip(conn, prefix, n):
    key = k(prefix, "s")
    value = bytes((i * 7 + n) & 0xff for i in range(n))
    assert conn.set(key, value, flags=n) == b"STORED"
    conn.send(b"get " + key + b"\r\n")
    conn.expect(b"VALUE %s %d %d\r\n" % (key, n, n) + value + b"\r\nEND\r\n")


def test_nul_byte_ends_the_command_line(conn, prefix):
    """memcached's tokenizer reads C strings, so a command line ends at its
    first NUL and what follows it (a noreply too) is not read; pylibmc's
    doctests expect that. anchorkv answered CLIENT_ERROR bad command line
    format (nothing with noreply). Every reply here is memcached 1.6.18's
    (the memcached flavor of the suite runs this test too)."""
    key = k(prefix, "nul")
    other = k(prefix, "nul2")
    conn.send(b"set %s 0 0 1\r\nx\r\n" % key)
    conn.expect(b"STORED\r\n")
    cases = [
        (b"incr \x00 1\r\n", b"ERROR\r\n"),
        (b"incr \x00 1 noreply\r\n", b"ERROR\r\n"),
        (b"\x00get %s\r\n" % key, b"ERROR\r\n"),
        (b"get %s\x00b\r\n" % key,
         b"VALUE %s 0 1\r\nx\r\nEND\r\n" % key),
        (b"get \x00%s\r\n" % key, b"ERROR\r\n"),
        (b"get %s \x00%s\r\n" % (key, key),
         b"VALUE %s 0 1\r\nx\r\nEND\r\n" % key),
        (b"mg %s\x00 v\r\n" % key, b"HD\r\n"),
        (b"mg %s v\x00 k\r\n" % key, b"VA 1\r\nx\r\n"),
        (b"gat 10\x00 %s\r\n" % key, b"END\r\n"),
        (b"touch %s 0\x00 noreply\r\n" % key, b"TOUCHED\r\n"),
        # the key is cut at the NUL: "set <other>" is too short
        (b"set %s\x00 0 0 1\r\ny\r\n" % other, b"ERROR\r\nERROR\r\n"),
        # the noreply after the NUL is not read
        (b"set %s 0 0 1\x00 noreply\r\nz\r\n" % key, b"STORED\r\n"),
        (b"incr %s\x00 1\r\n" % key, b"ERROR\r\n"),
        (b"delete %s\x00 noreply\r\n" % other, b"NOT_FOUND\r\n"),
    ]
    for req, want in cases:
        conn.send(req)
        conn.expect(want)
    assert conn.get1(key) == b"z"
    assert conn.get1(other) is None


def test_nul_byte_ends_a_long_get_line(conn, prefix):
    """A get line longer than 2048 bytes is read in pieces: a NUL still
    ends it, the key before it is the last one answered and the rest of
    the line, up to its newline, is not read."""
    keys = [k(prefix, "nul-long-%04d" % i) for i in range(300)]
    for key in keys:
        conn.set(key, b"v", noreply=True)
    head = b"get " + b" ".join(keys[:200])
    assert len(head) > 2048
    conn.send(head + b"\x00" + b" ".join(keys[200:]))
    time.sleep(0.2)
    conn.send(b" more\r\n")
    assert [g[0] for g in conn.read_values()] == keys[:200]
    assert conn.cmd("version").startswith(b"VERSION ")
