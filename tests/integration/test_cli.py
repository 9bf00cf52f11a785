"""anchorkv-cli (tools/cli): one-shot, a pipe, the interactive prompt,
--stat, and --servers over the cluster of test_cluster.py: the same key
placement as nutcracker's pool, the range commands merged in keyspace
order, a down server named (or left out with --partial).
"""
import base64
import os
import pty
import select
import subprocess
import time

import pytest

import conftest
import mc
from test_cluster import cluster, items, pool_yml, YML  # noqa: F401

pytestmark = pytest.mark.anchorkv_only

CLI = os.path.join(conftest.ROOT, "build/anchorkv-cli")


def cli(*args, stdin=None, check=True):
    args = [a.decode() if isinstance(a, bytes) else str(a) for a in args]
    r = subprocess.run([CLI] + args, input=stdin,
                       capture_output=True, timeout=120)
    if check:
        assert r.returncode == 0, (r.returncode, r.stderr)
    return r


def test_one_shot(server):
    p = ["-p", server.port]
    key = "cli:one"
    assert cli(*p, "set", key, 5, 0, 5, "hello").stdout == b"STORED\r\n"
    assert cli(*p, "get", key).stdout == \
        b"VALUE cli:one 5 5\r\nhello\r\nEND\r\n"
    # a value with spaces and control bytes is one argument, sent as is
    v = "a b\tc\x01\\"
    assert cli(*p, "set", key, 0, 0, len(v), v).stdout == b"STORED\r\n"
    assert cli(*p, "--raw", "get", key).stdout == \
        b"VALUE cli:one 0 7\r\n" + v.encode() + b"\r\nEND\r\n"
    # readable: lines without \r, values escaped
    assert cli(*p, "--no-raw", "get", key).stdout == \
        b"VALUE cli:one 0 7\na b\\tc\\x01\\\\\nEND\n"
    assert cli(*p, "mg", key, "s", "v", "q").stdout == b"VA 7 s7\r\n" + \
        v.encode() + b"\r\n"
    # a quiet miss says nothing, and does not hang
    assert cli(*p, "mg", "cli:nothere", "v", "q").stdout == b""
    assert cli(*p, "delete", key).stdout == b"DELETED\r\n"
    r = cli(*p, "incr", key, "x", check=False)
    assert r.returncode == 1
    assert r.stdout == b"CLIENT_ERROR invalid numeric delta argument\r\n"
    r = cli("-p", conftest.free_port(), "get", "k", check=False)
    assert r.returncode == 1 and b"cannot connect" in r.stderr


def test_pipe_and_paged_range(server):
    keys = ["cli:p:%05d" % i for i in range(2500)]
    script = "".join("set %s 0 0 1\nv\n" % k for k in keys[:1000])
    script += "".join("set %s 0 0 1 v\n" % k for k in keys[1000:])
    script += "keys [cli:p: (cli:p;\ncount [cli:p: (cli:p;\n"
    script += "keys [cli:p: (cli:p; 3\nrrange [cli:p: (cli:p; 2\n"
    script += "ms cli:p:m 2 T0\nhi\nmg cli:p:m v\nquit\nget cli:p:00001\n"
    out = cli("-p", server.port, stdin=script.encode()).stdout
    lines = out.split(b"\r\n")
    assert lines[:2500] == [b"STORED"] * 2500
    listed = lines[2500:2500 + 2501]
    # without a count the cli pages (1000 at a time) through all of it
    assert listed == [b"KEY " + k.encode() for k in keys] + [b"END"]
    rest = lines[5001:]
    assert rest[0] == b"COUNT 2500"
    assert rest[1:5] == [b"KEY cli:p:00000", b"KEY cli:p:00001",
                         b"KEY cli:p:00002", b"END"]
    assert rest[5:10] == [b"VALUE cli:p:02499 0 1", b"v",
                          b"VALUE cli:p:02498 0 1", b"v", b"END"]
    assert rest[10:] == [b"HD", b"VA 2", b"hi", b""]	# nothing after quit
    r = cli("-p", server.port, "keys", "b", "a", check=False)
    assert r.returncode == 1 and r.stdout == b"CLIENT_ERROR bad range\r\n"


def test_interactive_prompt(server, tmp_path):
    """A prompt, a value typed on the line after its set, replies shown
    readably (a control byte escaped), the history kept."""
    cli("-p", server.port, "set", "cli:i", 0, 0, 4, "a\x01b\\")
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["HOME"] = str(tmp_path)
        os.execv(CLI, [CLI, "-p", str(server.port)])
    out = b""

    def read_until(marker, timeout=10):
        nonlocal out
        deadline = time.monotonic() + timeout
        while marker not in out:
            left = deadline - time.monotonic()
            assert left > 0, out
            r, _, _ = select.select([fd], [], [], left)
            if r:
                try:
                    out += os.read(fd, 4096)
                except OSError:
                    break
    prompt = b"127.0.0.1:%d> " % server.port
    read_until(prompt)
    os.write(fd, b"set cli:j 0 0 2\r")
    os.write(fd, b"hi\r")
    read_until(b"STORED")
    os.write(fd, b"get cli:i cli:j\r")
    read_until(b"END")
    assert b"VALUE cli:i 0 4\r\na\\x01b\\\\\r\nVALUE cli:j 0 2\r\nhi" in out
    os.write(fd, b"quit\r")
    os.waitpid(pid, 0)
    os.close(fd)
    with open(tmp_path / ".anchorkv_cli_history") as f:
        # libedit's format: a space is \040; the value line is not kept
        hist = f.read()
    assert "get\\040cli:i\\040cli:j" in hist and "hi" not in hist


def test_keys_listing_that_starts_with_a_one_byte_key(server):
    """A keys reply whose first line is "KEY 0" (a key of one byte) was
    taken for a one-line answer (it is not longer than 5 bytes): the cli
    printed that key and END, and dropped the rest, alone and when it
    merged servers' pages."""
    with server.conn() as c:
        for k in ("0", "7", "q", "qq"):
            c.set(k, "v")
    out = cli("-p", server.port, "keys", "[0", "[7").stdout
    assert out == b"KEY 0\r\nKEY 7\r\nEND\r\n"
    out = cli("-p", server.port, "keys", "[q", "[qq").stdout
    assert out == b"KEY q\r\nKEY qq\r\nEND\r\n"


def test_stat(server):
    with server.conn() as c:
        c.set("cli:stat", "x")
    out = cli("-p", server.port, "--stat", "-i", "0.2", "-r", "3").stdout
    lines = out.decode().splitlines()
    assert lines[0].split()[:4] == ["items", "mem", "clients", "gets/s"]
    assert len(lines) == 4
    assert all(int(x.split()[0]) >= 1 for x in lines[1:])


def test_servers_place_and_merge(cluster, tmp_path):
    insts, port = cluster
    yml = tmp_path / "nutcracker.yml"	# the pool the fixture started
    keys = [b"user:%05d" % i for i in range(30000)]
    with mc.Conn("127.0.0.1", port, 60) as c:
        for i in range(0, len(keys), 5000):
            c.send(b"".join(b"set %s 0 0 1\r\nv\r\n" % k
                            for k in keys[i:i + 5000]))
            for _ in range(5000):
                assert c.recv_line() == b"STORED"
    assert sum(items(s) for s in insts) == len(keys)
    # the cli asks only the server its ring chooses: every key is found
    # there, so its ring is nutcracker's
    script = b"".join(b"get %s\n" % k for k in keys[::7])
    out = cli("--servers", yml, stdin=script).stdout
    assert out.count(b"VALUE ") == len(keys[::7])
    got = cli("--servers", yml, "get", keys[3], keys[10000],
              keys[29999], "user:none").stdout
    assert got == b"".join(b"VALUE %s 0 1\r\nv\r\n" % k for k in
                           (keys[3], keys[10000], keys[29999])) + b"END\r\n"
    # keys - + over the three: exactly the 30,000, once each, in order
    out = cli("--servers", yml, "keys", "-", "+").stdout
    assert out == b"".join(b"KEY %s\r\n" % k for k in keys) + b"END\r\n"
    assert cli("--servers", yml, "count", "-", "+").stdout == \
        b"COUNT 30000\r\n"
    out = cli("--servers", yml, "rrange", "-", "+", 2500).stdout
    assert out.count(b"VALUE ") == 2500
    assert out.startswith(b"VALUE user:29999 0 1\r\nv\r\nVALUE user:29998")
    # with a server down: a clear failure naming it, or --partial
    alive = items(insts[0]) + items(insts[1])
    insts[2].stop()
    r = cli("--servers", yml, "keys", "-", "+", check=False)
    assert r.returncode == 1 and r.stdout == b""
    assert b"127.0.0.1:%d" % insts[2].port in r.stderr
    assert b"cannot connect" in r.stderr
    r = cli("--servers", yml, "--partial", "keys", "-", "+")
    assert b"left out" in r.stderr
    lines = r.stdout.split(b"\r\n")
    assert lines[-2:] == [b"END", b""]
    listed = [x[4:] for x in lines[:-2]]
    assert len(listed) == alive
    assert listed == sorted(listed)
    r = cli("--servers", yml, "count", "-", "+", check=False)
    assert r.returncode == 1 and b"%d" % insts[2].port in r.stderr


def test_servers_delete_range_and_stats(cluster, tmp_path):
    insts, port = cluster
    yml = tmp_path / "nutcracker.yml"
    keys = [b"dr:%04d" % i for i in range(3000)]
    script = b"".join(b"set %s 0 0 1 v\n" % k for k in keys)
    assert cli("--servers", yml, stdin=script).stdout == \
        b"STORED\r\n" * len(keys)
    assert all(items(s) > 0 for s in insts)
    assert cli("--servers", yml, "delete_range", "[dr:1000",
               "(dr:2000").stdout == b"DELETED 1000\r\n"
    assert cli("--servers", yml, "count", "-", "+").stdout == \
        b"COUNT 2000\r\n"
    out = cli("--servers", yml, "keys", "[dr:0998", "+", 4).stdout
    assert out == b"KEY dr:0998\r\nKEY dr:0999\r\nKEY dr:2000\r\n" \
        b"KEY dr:2001\r\nEND\r\n"
    # a command without a key: each server's reply under its address
    out = cli("--servers", yml, "--no-raw", "version").stdout.decode()
    for s in insts:
        assert "# 127.0.0.1:%d\nVERSION " % s.port in out
    out = cli("--servers", yml, "--stat", "-i", "0.2", "-r", "1").stdout
    assert out.decode().splitlines()[1].split()[0] == "2000"


def test_servers_merge_keys_listed_in_base64(cluster, tmp_path):
    """Keys stored as base64 (ms ... b, any bytes) come listed as
    "KEY <base64> b": the cli merges them by the decoded key and pages on
    from one with a b( bound, so the listing is the keyspace order of the
    keys themselves."""
    insts, _ = cluster
    yml = tmp_path / "nutcracker.yml"
    keys = [(b"k%05d " % i if i % 2 == 0 else b"k%05d" % i)
            for i in range(2500)]
    conns = [s.conn() for s in insts]
    try:
        for i, k in enumerate(keys):
            c = conns[i % 3]
            if k.endswith(b" "):
                c.send(b"ms %s 1 b q\r\nv\r\n" % base64.b64encode(k))
            else:
                c.send(b"set %s 0 0 1 noreply\r\nv\r\n" % k)
        for c in conns:
            assert c.cmd("version").startswith(b"VERSION ")
    finally:
        for c in conns:
            c.close()

    def listed(k):
        if k.endswith(b" "):
            return b"KEY %s b\r\n" % base64.b64encode(k)
        return b"KEY %s\r\n" % k

    for args in ((), ("-p", insts[0].port)):
        srv = args or ("--servers", yml)
        out = cli(*srv, "keys", "-", "+").stdout
        mine = keys if not args else keys[::3]
        assert out == b"".join(listed(k) for k in mine) + b"END\r\n"
    out = cli("--servers", yml, "rrange", "b(%s" %
              base64.b64encode(keys[10]).decode(), "+").stdout
    assert out.count(b"VALUE ") == 2500 - 11
    assert out.startswith(b"VALUE k02499 0 1\r\nv\r\nVALUE %s 0 1 b\r\n"
                          % base64.b64encode(keys[2498]))


def test_long_base64_token_in_a_reply(tmp_path):
    """A reply line ending in " b" with a token longer than any key's
    base64 (from a server that is not anchorkv), merged over two servers:
    the cli decoded it into a 256-byte buffer and wrote past it; now it
    lists it as it is."""
    import socket
    import threading
    token = b"QUFB" * 5000
    socks = []

    def serve(lsock, reply):
        c, _ = lsock.accept()
        with c:
            buf = b""
            while b"\n" not in buf:
                buf += c.recv(4096)
            c.sendall(reply)
            c.recv(4096)

    # (not last in its page: the next page would start from it)
    for reply in (b"KEY %s b\r\nKEY zzz\r\nEND\r\n" % token,
                  b"KEY zz\r\nEND\r\n"):
        lsock = socket.socket()
        lsock.bind(("127.0.0.1", 0))
        lsock.listen(1)
        socks.append(lsock)
        threading.Thread(target=serve, args=(lsock, reply),
                         daemon=True).start()
    try:
        r = cli("--servers", ",".join("127.0.0.1:%d" % s.getsockname()[1]
                                      for s in socks),
                "--raw", "keys", "-", "+", check=False)
    finally:
        for s in socks:
            s.close()
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.split(b"\r\n")) == sorted(
        [b"KEY %s b" % token, b"KEY zz", b"KEY zzz", b"END", b""])


def test_servers_merge_integer_keys_by_value(cluster, tmp_path):
    """Integer keys come first, by value ("9" before "10"), then every
    other key bytewise, "007" and a 20-digit key past 2^64 - 1 among
    them: the cli merges in the store's keyspace order (core/keyorder.h,
    which both use)."""
    insts, _ = cluster
    yml = tmp_path / "nutcracker.yml"
    ints = [b"%d" % i for i in range(0, 1200, 7)] + \
        [b"18446744073709551615"]
    strs = [b"007", b"10x", b"18446744073709551616", b"a", b"b:1"]
    conns = [s.conn() for s in insts]
    try:
        for i, k in enumerate(ints + strs):
            conns[i % 3].send(b"set %s 0 0 1 noreply\r\nv\r\n" % k)
        for c in conns:
            assert c.cmd("version").startswith(b"VERSION ")
    finally:
        for c in conns:
            c.close()
    out = cli("--servers", yml, "keys", "-", "+").stdout
    assert out == b"".join(b"KEY %s\r\n" % k for k in ints + strs) + \
        b"END\r\n"
    out = cli("--servers", yml, "rrange", "-", "+", 3).stdout
    assert out == b"VALUE b:1 0 1\r\nv\r\nVALUE a 0 1\r\nv\r\n" \
        b"VALUE 18446744073709551616 0 1\r\nv\r\nEND\r\n"
