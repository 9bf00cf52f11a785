"""Real clients against the server: libmemcached's memccapable, memccp and
memccat, pymemcache, and an nc session. Checked against memcached 1.6.18.
"""
import os
import re
import shutil
import subprocess

import pytest

TOOL_TIMEOUT = 60


def need(tool):
    if shutil.which(tool) is None:
        pytest.skip("%s is not installed" % tool)


def servers(srv):
    return "--servers=%s:%d" % (srv.host, srv.port)


def test_memccapable_ascii(start_server):
    # memccapable flushes the server: give it its own
    need("memccapable")
    srv = start_server()
    p = subprocess.run(["memccapable", "-h", srv.host, "-p", str(srv.port),
                        "-a", "-t", "10"], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=TOOL_TIMEOUT)
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    # each test prints its name, then "[pass]" on the same line or
    # "[FAIL]" (on stderr with the failed assertion)
    names = re.findall(r"(ascii [a-z]+(?: noreply)?)  ", out)
    passed = re.findall(r"(ascii [a-z]+(?: noreply)?)\s+\[pass\]", out)
    # memccapable 1.1.4 runs 27 ascii tests
    assert len(names) >= 27, out
    failed = [n for n in names if n not in passed]
    assert not failed, "failed: %s\n%s\n%s" % (failed, out, err)
    assert "All tests passed" in out, out
    assert p.returncode == 0


def test_memccp_memccat_round_trip(server, tmp_path):
    need("memccp")
    need("memccat")
    data = os.urandom(300000) + b"\r\nEND\r\n\x00"
    path = tmp_path / "akv-roundtrip.bin"
    path.write_bytes(data)
    p = subprocess.run(["memccp", servers(server), str(path)],
                       capture_output=True, timeout=TOOL_TIMEOUT)
    assert p.returncode == 0, p.stderr
    p = subprocess.run(["memccat", servers(server), "akv-roundtrip.bin"],
                       capture_output=True, timeout=TOOL_TIMEOUT)
    assert p.returncode == 0, p.stderr
    # memccat ends each value with a newline
    assert p.stdout == data + b"\n"
    # with flags
    p = subprocess.run(["memccp", servers(server), "--flags=7",
                        "--expire=100", str(path)],
                       capture_output=True, timeout=TOOL_TIMEOUT)
    assert p.returncode == 0, p.stderr
    p = subprocess.run(["memccat", servers(server), "-F",
                        "akv-roundtrip.bin"],
                       capture_output=True, timeout=TOOL_TIMEOUT)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(b"7\n" + data[:100])
    # a missing key is an error
    p = subprocess.run(["memccat", servers(server), "akv-no-such-key"],
                       capture_output=True, timeout=TOOL_TIMEOUT)
    assert p.returncode != 0
    assert p.stdout == b""


def test_pymemcache(server, prefix):
    from pymemcache.client.base import Client
    c = Client((server.host, server.port), connect_timeout=5, timeout=5)
    try:
        p = prefix
        assert c.set(p + "a", b"1") is True
        assert c.get(p + "a") == b"1"
        assert c.get(p + "missing") is None
        vals = {p + "m%d" % i: b"v%d" % i for i in range(50)}
        assert c.set_many(vals) == []
        got = c.get_many(list(vals) + [p + "none"])
        assert got == vals
        assert c.delete_many([p + "m0", p + "m1"]) is True
        assert c.get_many([p + "m0", p + "m2"]) == {p + "m2": b"v2"}

        assert c.add(p + "a", b"2", noreply=False) is False
        assert c.add(p + "b", b"2", noreply=False) is True
        assert c.replace(p + "none", b"x", noreply=False) is False
        assert c.replace(p + "b", b"3", noreply=False) is True
        assert c.append(p + "b", b"4", noreply=False) is True
        assert c.prepend(p + "b", b"2", noreply=False) is True
        assert c.get(p + "b") == b"234"

        value, cas = c.gets(p + "b")
        cas = int(cas)
        assert value == b"234"
        assert c.cas(p + "b", b"new", cas + 12345, noreply=False) is False
        assert c.cas(p + "b", b"new", cas, noreply=False) is True
        assert c.cas(p + "none", b"x", cas, noreply=False) is None
        assert c.get(p + "b") == b"new"
        got = c.gets_many([p + "a", p + "b"])
        assert got[p + "a"][0] == b"1" and got[p + "b"][0] == b"new"

        c.set(p + "n", b"10")
        assert c.incr(p + "n", 5) == 15
        assert c.decr(p + "n", 20) == 0
        assert c.incr(p + "none", 1) is None
        assert c.touch(p + "n", 100, noreply=False) is True
        assert c.touch(p + "none", 100, noreply=False) is False

        assert c.delete(p + "a", noreply=False) is True
        assert c.delete(p + "a", noreply=False) is False
        assert c.version()
        st = c.stats()
        assert int(st[b"pid"]) == server.pid
        # a value near the limit and binary data
        big = os.urandom(500000)
        assert c.set(p + "big", big) is True
        assert c.get(p + "big") == big
    finally:
        c.close()


NC_SESSION = b"set k 0 0 5\r\nhello\r\nget k\r\nquit\r\n"
NC_TRANSCRIPT = b"STORED\r\nVALUE k 0 5\r\nhello\r\nEND\r\n"


def test_nc_session(start_server):
    # the transcript the README shows; a fresh server so that "k" is ours
    need("nc")
    srv = start_server()
    p = subprocess.run(["nc", "-q", "2", srv.host, str(srv.port)],
                       input=NC_SESSION, capture_output=True, timeout=20)
    assert p.stdout == NC_TRANSCRIPT
    p = subprocess.run(["nc", "-N", srv.host, str(srv.port)],
                       input=b"incr n 1\r\nset n 0 0 1\r\n9\r\nincr n 1\r\n"
                             b"gets n\r\nquit\r\n",
                       capture_output=True, timeout=20)
    assert re.fullmatch(rb"NOT_FOUND\r\nSTORED\r\n10\r\n"
                        rb"VALUE n 0 2 \d+\r\n10\r\nEND\r\n", p.stdout), \
        p.stdout
