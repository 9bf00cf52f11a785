"""memcached's binary protocol: the exchanges recorded from memcached 1.6.18
(binary.py, binary_cases.json) played byte for byte, memccapable's binary
tests, pylibmc and PHP's memcached extension in binary mode against
anchorkv and memcached (the same outcomes), one store and one set of
counters with the text protocol, -B, and hostile binary clients.
"""
import base64
import os
import shutil
import signal
import socket
import struct
import subprocess
import time

import pytest

import conftest
import mc
from binary import CASES, no_cas, parse, play, read_recorded, req, store, \
    arith
from hostile import Guard, Measured, start_memcached, stat

HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1024 * 1024


def exchange(srv, data, n_responses, timeout=10):
    """Sends @data on a new connection; reads @n_responses responses."""
    s = socket.create_connection((srv.host, srv.port), timeout=timeout)
    try:
        s.sendall(data)
        buf, out = b"", []
        while len(out) < n_responses:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
            got, buf = parse(buf)
            out += got
        return out
    finally:
        s.close()


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    srv = start_memcached(str(tmp_path_factory.mktemp("ref")))
    yield srv
    srv.stop(check=False)


@pytest.mark.anchorkv_only
def test_recorded_answers_are_memcacheds(ref):
    """binary_cases.json is what memcached answers (cas numbers aside), so
    that a case edited by hand or a reference that changed shows up."""
    rows = read_recorded()
    assert set(rows) == set(CASES)
    wrong = []
    for name, (resp, closed) in rows.items():
        got, got_closed = play(ref.host, ref.port, CASES[name], len(resp))
        if (no_cas(got), got_closed) != (no_cas(resp), closed):
            wrong.append(name)
    assert not wrong


def test_binary_exchanges_as_memcached(start_server):
    """Every recorded case, byte for byte (each server's cas numbers
    aside: where memcached sent one, a cas is sent, and 0 where it sent
    0)."""
    srv = start_server()
    wrong = []
    for name, (resp, closed) in read_recorded().items():
        got, got_closed = play(srv.host, srv.port, CASES[name], len(resp))
        if (no_cas(got), got_closed) != (no_cas(resp), closed):
            wrong.append((name, got[:200].hex(), got_closed))
    assert not wrong


@pytest.mark.skipif(not shutil.which("memccapable"),
                    reason="memccapable (libmemcached-tools) is missing")
def test_memccapable_binary_and_ascii(start_server):
    srv = start_server()
    for args in (["-b"], ["-a"]):
        r = subprocess.run(["memccapable", "-h", srv.host, "-p",
                            str(srv.port)] + args, capture_output=True,
                           timeout=120)
        out = r.stdout.decode(errors="replace")
        assert r.returncode == 0 and "All tests passed" in out, out
        assert "[FAIL]" not in out, out


PYLIBMC = """
import sys, pylibmc
c = pylibmc.Client(["127.0.0.1:%s" % sys.argv[1]], binary=True,
                   behaviors={"cas": True})
def t(f):
    try:
        return f()
    except Exception as e:
        return type(e).__name__
c.flush_all()
print(t(lambda: c.set("a", "hello")), t(lambda: c.get("a")))
c.set("n", 5)
print(t(lambda: c.incr("n", 3)), t(lambda: c.decr("n", 10)))
print(sorted(t(lambda: c.get_multi(["a", "n", "missing"])).items()))
print(t(lambda: c.add("a", "x")), t(lambda: c.replace("zz", "x")))
c.set_multi({"k%d" % i: i for i in range(300)})
print(len(c.get_multi(["k%d" % i for i in range(300)] + ["nokey"])))
print(t(lambda: c.delete("a")), t(lambda: c.get("a")), t(lambda: c.delete("a")))
r = c.gets("n")
print(t(lambda: c.cas("n", 100, r[1])), t(lambda: c.cas("n", 101, r[1])),
      c.get("n"))
print(t(lambda: c.touch("n", 100)), t(lambda: c.touch("nn", 100)))
st = c.get_stats()[0][1]
print(st["version"], st["curr_items"], "cmd_get" in st)
print(t(lambda: c.set("big", "x" * 2000000)), t(lambda: c.get("n")))
print(t(lambda: c.append("n", "0")), t(lambda: c.prepend("n", "1")),
      c.get("n"))
print(t(lambda: c.incr("nokey", 1)))
print(t(lambda: c.set("sp ace", "v")), t(lambda: c.get("sp ace")))
print(t(lambda: c.set("u", "\\u00e9t\\u00e9")), t(lambda: c.get("u")))
print(t(lambda: c.delete_multi(["k1", "k2", "nokey"])))
c.flush_all()
print(c.get("n"))
"""


def client_outputs(argv, script, text, srv, ref):
    """What a client program prints run against anchorkv, then against
    memcached (its last argument: the port)."""
    script.write_text(text)
    out = []
    for port in (srv.port, ref.port):
        r = subprocess.run(argv + [str(script), str(port)],
                           capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr.decode(errors="replace")
        out.append(r.stdout)
    return out


def have_pylibmc():
    return subprocess.run(["/usr/bin/python3", "-c", "import pylibmc"],
                          capture_output=True).returncode == 0


@pytest.mark.anchorkv_only
@pytest.mark.skipif(not have_pylibmc(), reason="python3-pylibmc is missing")
def test_pylibmc_binary_as_memcached(start_server, ref, tmp_path):
    got, want = client_outputs(["/usr/bin/python3"],
                               tmp_path / "pylibmc_binary.py", PYLIBMC,
                               start_server(), ref)
    assert got == want
    assert b"TooBig" in got and b"1.6.18" in got


PHP = r"""<?php
$m = new Memcached();
$m->setOption(Memcached::OPT_BINARY_PROTOCOL, true);
$m->setOption(Memcached::OPT_COMPRESSION, false);
$m->addServer('127.0.0.1', (int)$argv[1]);
function r($m, $v) { return var_export($v, true) . ' ' . $m->getResultCode(); }
$m->flush();
echo r($m, $m->set('a', 'hello')), ' ', r($m, $m->get('a')), "\n";
echo r($m, $m->add('a', 'x')), ' ', r($m, $m->replace('zz', 'x')), "\n";
echo r($m, $m->set('n', 5)), ' ', r($m, $m->increment('n', 3)), ' ',
     r($m, $m->decrement('n', 100)), "\n";
echo r($m, $m->increment('nokey', 1)), "\n";
echo r($m, $m->increment('init', 1, 40, 0)), "\n";
$items = array();
for ($i = 0; $i < 200; $i++) $items["k$i"] = "v$i";
echo r($m, $m->setMulti($items)), "\n";
$got = $m->getMulti(array_merge(array_keys($items), array('nokey')));
echo count($got), "\n";
$v = $m->get('a', null, Memcached::GET_EXTENDED);
echo r($m, $m->cas($v['cas'], 'a', 'new')), ' ',
     r($m, $m->cas($v['cas'], 'a', 'newer')), ' ', r($m, $m->get('a')), "\n";
echo r($m, $m->append('a', '>')), ' ', r($m, $m->prepend('a', '<')), ' ',
     r($m, $m->get('a')), "\n";
echo r($m, $m->touch('a', 100)), ' ', r($m, $m->touch('nokey', 100)), "\n";
echo r($m, $m->delete('a')), ' ', r($m, $m->delete('a')), "\n";
echo r($m, $m->set('big', str_repeat('x', 2000000))), "\n";
$v = $m->getVersion();
echo array_values($v)[0], "\n";
echo r($m, $m->flush()), ' ', r($m, $m->get('n')), "\n";
"""


def have_php_memcached():
    if not shutil.which("php"):
        return False
    return subprocess.run(["php", "-r", "exit(class_exists('Memcached') ? "
                           "0 : 1);"], capture_output=True).returncode == 0


@pytest.mark.anchorkv_only
@pytest.mark.skipif(not have_php_memcached(),
                    reason="php-cli and php-memcached are missing")
def test_php_memcached_binary_as_memcached(start_server, ref, tmp_path):
    got, want = client_outputs(["php"], tmp_path / "binary.php", PHP,
                               start_server(), ref)
    assert got == want
    assert b"1.6.18" in got


def test_binary_and_text_share_store_cas_and_counters(start_server):
    srv = start_server()
    with srv.conn() as c:
        c.set("shared", b"from text", flags=9)
        before = c.stats()
    out = exchange(srv, req("getk", b"shared") + req("get", b"nothere") +
                   store("set", b"frombin", b"xyz", flags=4) +
                   arith("incr", b"ctr", 1, initial=41) +
                   req("noop"), 5)
    assert [o["status"] for o in out] == [0, 1, 0, 0, 0]
    assert out[0]["value"] == b"from text"
    assert struct.unpack(">I", out[0]["extras"]) == (9,)
    with srv.conn() as c:
        got = c.gets("shared", "frombin", "ctr")
        assert got[b"shared"][2] == out[0]["cas"]
        assert got[b"frombin"][:2] == (4, b"xyz")
        assert got[b"frombin"][2] == out[2]["cas"]
        assert got[b"ctr"][1] == b"41"
        after = c.stats()
    # a binary get counts as memcached counts it (and so do the gets above)
    assert int(after["cmd_get"]) - int(before["cmd_get"]) == 2 + 3
    assert int(after["get_hits"]) - int(before["get_hits"]) == 1 + 3
    assert int(after["get_misses"]) - int(before["get_misses"]) == 1
    assert int(after["cmd_set"]) - int(before["cmd_set"]) == 1


@pytest.mark.anchorkv_only
def test_binary_key_listed_in_base64_by_range_replies(start_server):
    """A binary-protocol key may hold any byte; the range replies list
    one that holds a space, NUL, CR or LF in base64, as an ms ... b key."""
    srv = start_server()
    key = b"a b\r\n\0z"
    exchange(srv, store("set", key, b"v") + req("noop"), 2)
    with srv.conn() as c:
        c.send(b"keys - +\r\n")
        assert c.recv_until(b"END\r\n") == \
            b"KEY %s b\r\nEND\r\n" % base64.b64encode(key)


def test_protocol_option_B(start_server):
    ver = req("version")
    srv = start_server(["-B", "binary"])
    assert exchange(srv, ver, 1)[0]["value"] == b"1.6.18"
    with socket.create_connection((srv.host, srv.port), timeout=10) as s:
        s.sendall(b"version\r\n" + b" " * 20)	# a header's worth of text
        assert s.recv(100) == b""		# closed, as memcached does
    srv.stop()
    srv = start_server(["-B", "ascii"])
    with srv.conn() as c:
        assert c.cmd("version") == b"VERSION 1.6.18"
        assert c.stats("settings")["binding_protocol"] == "ascii"
    with socket.create_connection((srv.host, srv.port), timeout=10) as s:
        s.sendall(ver + b"\r\n")		# a line of bytes: ERROR
        assert s.recv(100).endswith(b"ERROR\r\n")
    srv.stop()
    srv = start_server([])
    with srv.conn() as c:
        assert c.stats("settings")["binding_protocol"] == "auto-negotiate"


@pytest.mark.anchorkv_only
def test_binary_refused_with_ascii_authentication(tmp_path):
    auth = tmp_path / "auth"
    auth.write_text("u:p\n")
    r = subprocess.run([conftest.BIN, "-p", "0", "-s", str(tmp_path / "s"),
                        "-Y", str(auth), "-B", "binary"],
                       capture_output=True, timeout=30)
    assert r.returncode == 1
    assert b"-Y" in r.stderr and b"binary" in r.stderr


@pytest.mark.anchorkv_only
def test_binary_over_a_unix_socket(tmp_path):
    path = str(tmp_path / "ak.sock")
    proc = subprocess.Popen([conftest.BIN, "-p", "0", "-s", path],
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        while not os.path.exists(path):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(10)
        while True:
            try:
                s.connect(path)
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        s.sendall(store("set", b"u", b"unix") + req("get", b"u"))
        buf = b""
        while len(parse(buf)[0]) < 2:
            buf += s.recv(4096)
        got = parse(buf)[0]
        assert got[1]["value"] == b"unix"
        s.close()
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


@pytest.mark.anchorkv_only
def test_unknown_opcode_body_dropped_exactly(start_server):
    """An unknown opcode (Verbosity included) is answered Unknown command
    at once and the rest of its body dropped, so the next request is read;
    memcached drops as many bytes again as the body after the extras and
    key, and answers only when they came (PROTOCOL.md)."""
    srv = start_server()
    out = exchange(srv, req("verbosity", extras=struct.pack(">I", 1)) +
                   req(0x50, b"key", b"ext", b"value") +
                   req("noop", opaque=77), 3)
    assert [(o["op"], o["status"]) for o in out] == [
        (0x1b, 0x81), (0x50, 0x81), (0x0a, 0)]
    assert out[0]["value"] == b"Unknown command" and out[2]["opaque"] == 77


# --- hostile binary clients -------------------------------------------------

SCRIPT = (store("set", b"hb:a", b"value", flags=1) + req("getk", b"hb:a") +
          req("getq", b"hb:none") + arith("incr", b"hb:n", 1, initial=5) +
          req("append", b"hb:a", value=b"!") + req("get", b"hb:a") +
          req("delete", b"hb:a") + req("delete", b"hb:n") +
          req("noop", opaque=42))


def responses(srv, pieces, pause=0.0):
    s = socket.create_connection((srv.host, srv.port), timeout=10)
    try:
        for p in pieces:
            s.sendall(p)
            if pause:
                time.sleep(pause)
        buf = b""
        while True:
            got, _ = parse(buf)
            if got and got[-1]["op"] == 0x0a:
                return no_cas(buf)
            chunk = s.recv(65536)
            assert chunk, "closed after %r" % buf[:100]
            buf += chunk
    finally:
        s.close()


@pytest.fixture(scope="module")
def victim(tmp_path_factory):
    srv = Measured([], str(tmp_path_factory.mktemp("victim"))).start()
    yield srv
    srv.stop()


def test_requests_cut_at_every_byte(victim):
    want = responses(victim, [SCRIPT])
    assert len(parse(want)[0]) == 8
    with Guard(victim, 8 * 1024):
        for i in range(1, len(SCRIPT)):
            assert responses(victim, [SCRIPT[:i], SCRIPT[i:]],
                             pause=0.001) == want, i


@pytest.mark.anchorkv_only
def test_huge_and_lying_lengths_cost_nothing(victim):
    """A 2 GB body is answered Too large. and the connection closed
    without reading it; lengths that contradict each other close it."""
    big = req("set", b"hb:big", struct.pack(">II", 0, 0), bodylen=2 ** 31)
    lying = [req("get", b"hb:k", bodylen=1), req("get", b"k" * 251),
             req("set", b"hb:k", b"\0" * 255, bodylen=2 ** 32 - 1),
             req("noop", b"", b"\0" * 4),
             req("get", b"hb:k", keylen=0xffff, bodylen=0xffff)]
    with Guard(victim, 8 * 1024):
        for extra in (b"", b"x" * 65536, b"x" * MIB):
            s = socket.create_connection((victim.host, victim.port),
                                         timeout=10)
            try:
                s.sendall(big + extra)
            except (BrokenPipeError, ConnectionResetError):
                assert extra	# closed before all of it went
            buf = b""
            while True:
                try:
                    chunk = s.recv(65536)
                except ConnectionResetError:
                    # closed with bytes unread: the kernel resets, and
                    # may drop the answer on its way
                    assert extra
                    break
                if not chunk:
                    break
                buf += chunk
            got, rest = parse(buf)
            assert [(o["status"], o["value"]) for o in got] in (
                [(3, b"Too large.")], [] if extra else None)
            assert rest == b""
            s.close()
        for data in lying:
            s = socket.create_connection((victim.host, victim.port),
                                         timeout=10)
            s.sendall(data)
            buf = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
            got, _ = parse(buf)
            assert len(got) <= 1 and all(o["status"] in (0x04, 0x81)
                                         for o in got), data[:30]
            s.close()


def test_flood_of_quiet_commands(victim):
    """200,000 quiet sets then a NoOp: nothing but the NoOp comes back,
    every key is stored, memory stays bounded by the store."""
    n = 200000
    with Guard(victim, 64 * 1024, new_items=0):
        s = socket.create_connection((victim.host, victim.port), timeout=30)
        batch = b"".join(store("setq", b"hq:%d" % i, b"v") for i in range(n))
        s.sendall(batch + req("noop", opaque=5))
        buf = b""
        while len(buf) < 24:
            chunk = s.recv(65536)
            assert chunk
            buf += chunk
        got, rest = parse(buf)
        assert [(o["op"], o["opaque"]) for o in got] == [(0x0a, 5)]
        assert rest == b""
        assert stat(victim, "curr_items") >= n
        s.sendall(b"".join(req("deleteq", b"hq:%d" % i) for i in range(n)) +
                  req("noop"))
        buf = b""
        while len(buf) < 24:
            buf += s.recv(65536)
        assert [o["op"] for o in parse(buf)[0]] == [0x0a]
        s.close()


def test_client_that_never_reads(victim):
    """Thousands of gets of a 100 KB value, never read: the server stops
    reading once its queue is full, and its memory stays bounded."""
    with Guard(victim, 32 * 1024):
        exchange(victim, store("set", b"hb:big", b"x" * 100000) +
                 req("noop"), 2)
        s = socket.create_connection((victim.host, victim.port), timeout=10)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.setblocking(False)
        data = req("get", b"hb:big") * 400000
        sent, deadline = 0, time.monotonic() + 5
        while sent < len(data) and time.monotonic() < deadline:
            try:
                sent += s.send(data[sent:sent + 65536])
            except BlockingIOError:
                time.sleep(0.05)
        assert sent < len(data)		# the server stopped reading
        s.close()
        exchange(victim, req("delete", b"hb:big") + req("noop"), 2)


# --- SASL (-S) ----------------------------------------------------------------

SASL_USERS = {"alice": "s3cret", "bob": "pa:ss"}


def sasl_auth(user, password, mech=b"PLAIN", authzid=b"", op="sasl_auth"):
    return req(op, mech, value=authzid + b"\0" + user.encode() + b"\0" +
               password.encode())


@pytest.fixture
def sasl_server(start_server, tmp_path):
    users = tmp_path / "users"
    users.write_text("".join("%s:%s\n" % kv for kv in SASL_USERS.items()))
    return start_server(["-S", "-Y", str(users)])


@pytest.fixture(scope="module")
def sasl_ref(tmp_path_factory):
    """memcached -S with a sasldb of SASL_USERS (sasl2-bin)."""
    if not shutil.which("saslpasswd2"):
        pytest.skip("saslpasswd2 (sasl2-bin) is missing")
    d = tmp_path_factory.mktemp("sasl")
    db = d / "sasldb2"
    for user, password in SASL_USERS.items():
        subprocess.run(["saslpasswd2", "-a", "memcached", "-f", str(db),
                        "-p", "-c", user], input=password.encode(),
                       check=True, capture_output=True)
    (d / "memcached.conf").write_text("mech_list: plain\nsasldb_path: %s\n"
                                      % db)
    os.environ["SASL_CONF_PATH"] = str(d)	# memcached.conf is looked for there
    try:
        srv = start_memcached(str(d), ["-S"])
    finally:
        del os.environ["SASL_CONF_PATH"]
    yield srv
    srv.stop(check=False)


SASL_SESSION = [
    # before a login: Version and List Mechs answer, the rest is refused
    ("version", req("version")),
    ("mechs", req("sasl_list")),
    ("wrong password", sasl_auth("alice", "wrong")),
    ("unknown user", sasl_auth("carol", "s3cret")),
    ("unknown mechanism", sasl_auth("alice", "s3cret", mech=b"CRAM-MD5")),
    ("step first", sasl_auth("alice", "s3cret", op="sasl_step")),
    ("right", sasl_auth("alice", "s3cret")),
    ("then served", store("set", b"sasl:k", b"v") + req("get", b"sasl:k")),
    ("served", req("delete", b"sasl:k")),
    # as memcached: a second login fails, and logs the connection out
    ("again, as bob", sasl_auth("bob", "pa:ss")),
    ("refused now", req("get", b"sasl:k")),
]
SASL_LOGOUT = [
    ("right", sasl_auth("bob", "pa:ss")),
    ("served", req("get", b"sasl:none")),
    ("mechs log out", req("sasl_list")),
    ("refused", req("get", b"sasl:none")),
]


def sasl_exchange(srv, data):
    """@data on a new connection: the responses, and whether it closed."""
    s = socket.create_connection((srv.host, srv.port), timeout=10)
    try:
        s.sendall(data)
        buf, closed = b"", False
        s.settimeout(0.5)
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                closed = True
                break
            buf += chunk
        return [(o["op"], o["status"], o["value"]) for o in parse(buf)[0]], \
            closed
    finally:
        s.close()


@pytest.mark.anchorkv_only
def test_sasl_logins_as_memcached(sasl_server, sasl_ref):
    """Each step of a session, and a request before any login, against
    anchorkv -S -Y and memcached -S with a sasldb of the same users: the
    same responses, the same closes."""
    for session in (SASL_SESSION, SASL_LOGOUT):
        for i in range(len(session)):
            data = b"".join(d for _, d in session[:i + 1])
            got = sasl_exchange(sasl_server, data)
            want = sasl_exchange(sasl_ref, data)
            assert got == want, session[i][0]
    for data in (req("get", b"x"), req("noop"), req("quit"),
                 b"get x\r\n" + b" " * 20):
        assert sasl_exchange(sasl_server, data) == \
            sasl_exchange(sasl_ref, data)
    got = sasl_exchange(sasl_server, req("sasl_list"))[0]
    assert got == [(0x20, 0, b"PLAIN")]
    got = sasl_exchange(sasl_server, req("get", b"x"))
    assert got == ([(0x00, 0x20, b"Auth failure.")], True)


@pytest.mark.anchorkv_only
def test_sasl_counts_and_settings(sasl_server):
    with socket.create_connection((sasl_server.host, sasl_server.port),
                                  timeout=10) as s:
        s.sendall(sasl_auth("alice", "no") + sasl_auth("alice", "s3cret") +
                  req("stat", b"settings") + req("stat"))
        buf = b""
        while sum(1 for o in parse(buf)[0]
                  if o["op"] == 0x10 and not o["key"]) < 2:
            buf += s.recv(65536)
        stats = {o["key"]: o["value"] for o in parse(buf)[0] if o["key"]}
    assert stats[b"auth_enabled_sasl"] == b"yes"
    assert stats[b"binding_protocol"] == b"binary"
    assert stats[b"auth_cmds"] == b"2" and stats[b"auth_errors"] == b"1"


@pytest.mark.anchorkv_only
@pytest.mark.parametrize("args, words", [
    (["-S"], b"-Y FILE"),
    (["-S", "-B", "auto", "-Y", "/dev/null"], b"-B binary"),
    (["-S", "-B", "ascii", "-Y", "/dev/null"], b"-B binary"),
])
def test_sasl_start_refused(args, words):
    r = subprocess.run([conftest.BIN, "-p", "0", "-s", "/tmp/akv-none.sock"]
                       + args, capture_output=True, timeout=30,
                       env={k: v for k, v in os.environ.items()
                            if k != "MEMCACHED_SASL_PWDB"})
    assert r.returncode == 1 and words in r.stderr, r.stderr


PYLIBMC_SASL = """
import sys, pylibmc
def t(f):
    try:
        return f()
    except Exception as e:
        return type(e).__name__
for user, password in (("alice", "s3cret"), ("alice", "wrong"), (None, None)):
    kw = dict(username=user, password=password) if user else {}
    c = pylibmc.Client(["127.0.0.1:%s" % sys.argv[1]], binary=True, **kw)
    print(t(lambda: c.set("k", "v")), t(lambda: c.get("k")),
          t(lambda: c.delete("k")))
"""

PHP_SASL = r"""<?php
foreach (array(array('alice', 's3cret'), array('alice', 'wrong'),
               null) as $cred) {
    $m = new Memcached();
    $m->setOption(Memcached::OPT_BINARY_PROTOCOL, true);
    $m->addServer('127.0.0.1', (int)$argv[1]);
    if ($cred) $m->setSaslAuthData($cred[0], $cred[1]);
    echo var_export($m->set('k', 'v'), true), ' ', $m->getResultCode(), ' ',
         var_export($m->get('k'), true), ' ',
         var_export($m->delete('k'), true), "\n";
}
"""


@pytest.mark.anchorkv_only
@pytest.mark.skipif(not have_pylibmc(), reason="python3-pylibmc is missing")
def test_pylibmc_sasl_as_memcached(sasl_server, sasl_ref, tmp_path):
    got, want = client_outputs(["/usr/bin/python3"], tmp_path / "sasl.py",
                               PYLIBMC_SASL, sasl_server, sasl_ref)
    assert got == want
    assert got.splitlines()[0] == b"True v True"


@pytest.mark.anchorkv_only
@pytest.mark.skipif(not have_php_memcached(),
                    reason="php-cli and php-memcached are missing")
def test_php_memcached_sasl_as_memcached(sasl_server, sasl_ref, tmp_path):
    got, want = client_outputs(["php"], tmp_path / "sasl.php", PHP_SASL,
                               sasl_server, sasl_ref)
    assert got == want
    assert got.splitlines()[0].startswith(b"true 0 'v' true")


# --- Cache::Memcached::Fast (Perl, text) and Dalli (Ruby, binary) -------------

CMF = r"""
use strict; use warnings;
use Cache::Memcached::Fast;
my $m = Cache::Memcached::Fast->new({ servers => ["127.0.0.1:$ARGV[0]"] });
# its test helper dies on a version that is not <major>.<minor>.<patch>
my ($v) = values %{ $m->server_versions };
die "Invalid version format ($v)\n" unless $v =~ /^(\d+)\.(\d+)\.(\d+)$/;
print "version ok\n";
$m->flush_all;
print $m->set("a", "hello") ? 1 : 0, " ", $m->get("a"), "\n";
print $m->add("a", "x") ? 1 : 0, " ", $m->replace("zz", "x") ? 1 : 0, "\n";
$m->set("n", 5); print $m->incr("n", 3), " ", $m->decr("n", 10), "\n";
my $g = $m->gets("a");
print $m->cas("a", @$g[0], "new") ? 1 : 0, $m->cas("a", @$g[0], "x") ? 1 : 0,
      " ", $m->get("a"), "\n";
$m->set_multi(map { ["k$_", "v$_"] } 1..100);
print scalar(keys %{ $m->get_multi(map { "k$_" } 1..100, "nokey") }), "\n";
print $m->append("a", ">") ? 1 : 0, $m->prepend("a", "<") ? 1 : 0, " ",
      $m->get("a"), "\n";
print $m->delete("a") ? 1 : 0, $m->delete("a") ? 1 : 0, "\n";
"""

DALLI = r"""
require 'dalli'
require 'logger'
Dalli.logger = Logger.new(IO::NULL)
opts = ARGV[1] ? { username: ARGV[1], password: ARGV[2] } : {}
c = Dalli::Client.new("127.0.0.1:#{ARGV[0]}", opts.merge(socket_timeout: 2,
                      socket_max_failures: 0))
def t
  yield.inspect.gsub(/\d{6,}/, "CAS")
rescue => e
  e.class.name
end
puts t { c.version.values.first }
puts [t { c.flush }, t { c.set("a", "hello", 0, raw: true) },
      t { c.get("a") }].join(" ")
puts [t { c.add("a", "x", 0, raw: true) },
      t { c.replace("zz", "x", 0, raw: true) }].join(" ")
puts [t { c.set("n", "5", 0, raw: true) }, t { c.incr("n", 3) },
      t { c.decr("n", 10) }, t { c.incr("nokey", 1, 0, 7) }].join(" ")
puts t { c.get_multi("a", "n", "nokey").to_a.sort }
puts [t { c.cas("n") { |v| (v.to_i + 1).to_s } }, t { c.get("n") }].join(" ")
puts [t { c.append("a", ">") }, t { c.prepend("a", "<") }].join(" ")
puts [t { c.touch("a", 100) }, t { c.touch("nokey", 100) }].join(" ")
puts [t { c.delete("a") }, t { c.delete("a") }].join(" ")
puts [t { c.set("k\u00e9 y", "v") }, t { c.get("k\u00e9 y") }].join(" ")
"""


@pytest.mark.anchorkv_only
@pytest.mark.skipif(subprocess.run(["perl", "-MCache::Memcached::Fast", "-e",
                                    "1"], capture_output=True).returncode,
                    reason="libcache-memcached-fast-perl is missing")
def test_cache_memcached_fast_reads_the_version(start_server, ref, tmp_path):
    """Cache::Memcached::Fast's test helper died on anchorkv's
    "1.6.18-anchorkv-0.1.0" (Invalid version format): the same script
    now runs as against memcached."""
    got, want = client_outputs(["perl"], tmp_path / "cmf.pl", CMF,
                               start_server(), ref)
    assert got == want
    assert got.startswith(b"version ok\n1 hello\n")


def have_dalli():
    return shutil.which("ruby") and subprocess.run(
        ["ruby", "-e", "require 'dalli'"], capture_output=True).returncode == 0


@pytest.mark.anchorkv_only
@pytest.mark.skipif(not have_dalli(), reason="ruby-dalli is missing")
def test_dalli_binary_as_memcached(start_server, ref, tmp_path):
    """Dalli 3 (Debian's) speaks the binary protocol."""
    got, want = client_outputs(["ruby"], tmp_path / "dalli.rb", DALLI,
                               start_server(), ref)
    assert got == want
    assert got.startswith(b'"1.6.18"\n[true] CAS "hello"\n')


@pytest.mark.anchorkv_only
@pytest.mark.skipif(not have_dalli(), reason="ruby-dalli is missing")
def test_dalli_sasl_as_memcached(sasl_server, sasl_ref, tmp_path):
    script = tmp_path / "dalli.rb"
    script.write_text(DALLI)
    out = {}
    for name, srv in (("ours", sasl_server), ("ref", sasl_ref)):
        for cred in (("alice", "s3cret"), ("alice", "wrong")):
            r = subprocess.run(["ruby", str(script), str(srv.port)] +
                               list(cred), capture_output=True, timeout=120)
            assert r.returncode == 0, r.stderr
            out[(name, cred)] = r.stdout
    for cred in (("alice", "s3cret"), ("alice", "wrong")):
        assert out[("ours", cred)] == out[("ref", cred)], cred
    assert b'[true] CAS "hello"' in out[("ours", ("alice", "s3cret"))]
    assert b"hello" not in out[("ours", ("alice", "wrong"))]


# --- memjs (Node, binary only) ------------------------------------------------

MEMJS = r"""
const memjs = require(process.env.MEMJS_DIR + '/node_modules/memjs');
const opts = process.argv[3] ?
    { username: process.argv[3], password: process.argv[4] } : {};
const c = memjs.Client.create('127.0.0.1:' + process.argv[2],
    Object.assign({ retries: 0, timeout: 2, failover: false,
                    logger: { log() {} } }, opts));
async function t(f) {
  try {
    return JSON.stringify(await f());
  } catch (e) {
    return 'error: ' + String((e && e.message) || e).replace(/\d{4,}/g, 'N');
  }
}
const str = async (p) => { const r = await p; return r.value && r.value.toString(); };
(async () => {
  const out = [];
  await t(() => c.flush());	// the reference server is shared
  out.push(await t(() => c.set('a', 'hello', {})));
  out.push(await t(() => str(c.get('a'))));
  out.push(await t(() => c.add('a', 'x', {})));
  out.push(await t(() => c.replace('zz', 'x', {})));
  out.push(await t(() => c.set('n', '5', {})));
  out.push(await t(() => c.increment('n', 3, {})));
  out.push(await t(() => c.decrement('n', 10, {})));
  out.push(await t(() => c.increment('nokey', 1, { initial: 7 })));
  out.push(await t(() => c.append('a', '>')));
  out.push(await t(() => str(c.get('a'))));
  out.push(await t(() => c.touch('a', 100)));
  out.push(await t(() => c.delete('a')));
  out.push(await t(() => c.delete('a')));
  out.push(await t(() => str(c.get('a'))));
  out.push(await t(() => c.delete('n')));
  out.push(await t(() => c.delete('nokey')));
  console.log(out.join('\n'));
  c.close();
  process.exit(0);	// a failed login leaves a reconnect pending
})();
"""

MEMJS_DIR = os.path.join(conftest.ROOT, "build", "npm")


def have_memjs():
    """memjs from the npm registry, installed once under build/npm."""
    if os.path.isdir(os.path.join(MEMJS_DIR, "node_modules", "memjs")):
        return True
    if not shutil.which("npm") or not shutil.which("node"):
        return False
    r = subprocess.run(["npm", "install", "--prefix", MEMJS_DIR,
                        "--no-audit", "--no-fund", "--loglevel=error",
                        "memjs@1"], capture_output=True, timeout=180)
    return r.returncode == 0


def memjs_outputs(script, srv, ref, *cred):
    out = []
    for port in (srv.port, ref.port):
        r = subprocess.run(["node", str(script), str(port)] + list(cred),
                           capture_output=True, timeout=120,
                           env=dict(os.environ, MEMJS_DIR=MEMJS_DIR))
        assert r.returncode == 0, r.stderr
        out.append(r.stdout)
    return out


@pytest.mark.anchorkv_only
def test_memjs_as_memcached(start_server, ref, sasl_server, sasl_ref,
                            tmp_path):
    """memjs (Node) speaks only the binary protocol: the same script,
    and with -S the same logins right and wrong, against
    anchorkv and memcached. Skipped where neither node and npm nor the
    registry are at hand."""
    if not have_memjs():
        pytest.skip("memjs cannot be installed (node, npm or the registry)")
    script = tmp_path / "memjs.js"
    script.write_text(MEMJS)
    got, want = memjs_outputs(script, start_server(), ref)
    assert got == want
    assert got.startswith(b'true\n"hello"\nfalse\n')
    # (without a login memjs waits forever for the answers of a
    # connection the server closed, memcached's as anchorkv's)
    for cred in (("alice", "s3cret"), ("alice", "wrong")):
        got, want = memjs_outputs(script, sasl_server, sasl_ref, *cred)
        assert got == want, cred
        assert (b'"hello"' in got) == (cred == ("alice", "s3cret"))


@pytest.mark.anchorkv_only
def test_sasl_users_reread_on_sighup(start_server, tmp_path):
    """-S reads -Y's file again on SIGHUP, as -Y does: a new user logs
    in, a removed one does not, a logged-in connection stays so."""
    users = tmp_path / "users"
    users.write_text("alice:s3cret\n")
    srv = start_server(["-S", "-Y", str(users)])
    kept = socket.create_connection((srv.host, srv.port), timeout=10)
    try:
        kept.sendall(sasl_auth("alice", "s3cret"))
        assert parse(kept.recv(4096))[0][0]["status"] == 0
        users.write_text("bob:new\n")
        os.kill(srv.pid, signal.SIGHUP)
        deadline = time.monotonic() + 10
        while sasl_exchange(srv, sasl_auth("bob", "new"))[0][0][1] != 0:
            assert time.monotonic() < deadline, "bob never logged in"
            time.sleep(0.05)
        assert sasl_exchange(srv, sasl_auth("alice", "s3cret"))[0] == [
            (0x21, 0x20, b"Auth failure.")]
        kept.sendall(req("noop"))
        assert parse(kept.recv(4096))[0][0]["status"] == 0
    finally:
        kept.close()


@pytest.mark.anchorkv_only
def test_binary_stat_detail(start_server):
    """Stat "detail on", then "detail dump": one statistic named
    "detailed" holding the text dump's lines, then the empty end."""
    srv = start_server(["-D", ":"])
    out = exchange(srv, req("stat", b"detail on") +
                   store("set", b"pfx:a", b"1") + req("get", b"pfx:a") +
                   req("stat", b"detail dump") + req("stat", b"detail x"),
                   6)
    assert [(o["op"], o["status"], o["key"]) for o in out] == [
        (0x10, 0, b""), (0x01, 0, b""), (0x00, 0, b""),
        (0x10, 0, b"detailed"), (0x10, 0, b""), (0x10, 1, b"")]
    dump = [o for o in out if o["key"] == b"detailed"][0]["value"]
    assert dump.startswith(b"PREFIX pfx get 1 hit 1 set 1 del 0\r\n")
    assert out[-1]["status"] == 1 and out[-1]["value"] == b"Not found"
