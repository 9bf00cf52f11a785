"""Security: -Y authentication, the bind warning, -F, -A, no UDP.

With -Y FILE (auth_file), the first command of a connection must be a
"set" whose data is "<user> <password>", as memcached 1.6 does it (its
doc/protocol.txt, "Authentication"). The sessions below run the same bytes
on anchorkv and on memcached 1.6, both started with -Y and the same file,
and their replies must be the same bytes (differential); the expected
replies written here were first recorded from memcached 1.6.18.

memcached answers one line per read event while a connection is not
authenticated, the authenticating set included (later pipelined lines wait
for more input), so these sessions send one request at a time until
authentication succeeds, and pipeline only after it. anchorkv answers every
line at once (test_pipelined_with_the_auth).

What is anchorkv's own (marked anchorkv_only): the start-up checks of the
file, more than 8 users (memcached ignores the 9th on), a last line without
its newline (memcached drops the password's last byte), the bind warning.
"""
import os
import shutil
import signal
import subprocess
import time

import pytest

import mc
from conftest import BIN, ROOT, Server, free_port, is_memcached
from test_classic_diff import MEMCACHED, Memcached

USERS = "alice:secret\nbob:pa:ss\ncarol:has space\ndave:x\ty\n"

UNAUTH = b"CLIENT_ERROR unauthenticated\r\n"
FAILURE = b"CLIENT_ERROR authentication failure\r\n"
BAD_FORMAT = b"CLIENT_ERROR bad authentication token format\r\n"
BAD_TERM = b"CLIENT_ERROR bad command line termination\r\n"
CLOSE = "close"


@pytest.fixture(scope="module")
def auth_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("auth") / "users"
    path.write_text(USERS)
    return str(path)


def start_pair(workdir, args):
    """(anchorkv, memcached) with the same extra flags; memcached may be
    None when it is not installed."""
    ours = Server(args, workdir).start()
    ref = None
    if os.path.exists(MEMCACHED) and shutil.which("memcached"):
        ref = Memcached(args, workdir).start()
    return ours, ref


@pytest.fixture(scope="module")
def pair(auth_file, tmp_path_factory):
    ours, ref = start_pair(str(tmp_path_factory.mktemp("pair")),
                           ["-Y", auth_file])
    yield ours, ref
    ours.stop()
    if ref:
        ref.stop(check=False)


def auth_data(user, password):
    data = user + b" " + password
    return b"set auth 0 0 %d\r\n%s\r\n" % (len(data), data)


def read_reply(c, want):
    """@want lines, or CLOSE: everything up to the close."""
    if want == CLOSE:
        try:
            return ("closed", c.assert_closed())
        except ConnectionError:
            return ("closed", b"")
    return b"".join(c.recv_until(b"\r\n") for _ in range(want))


def send(c, data):
    try:
        c.send(data)
    except (BrokenPipeError, ConnectionResetError):
        pass	# a server that closed early


def run_session(srv, steps, nconns=1):
    """Replies to @steps: (conn index, bytes, lines expected or CLOSE)."""
    conns = [srv.conn() for _ in range(nconns)]
    out = []
    try:
        for i, data, want in steps:
            send(conns[i], data)
            out.append(read_reply(conns[i], want))
        for i, c in enumerate(conns):
            if not any(s[0] == i and s[2] == CLOSE for s in steps):
                c.assert_quiet(0.1)
    finally:
        for c in conns:
            c.close()
    return out


def differential(pair, steps, nconns=1):
    """Runs @steps on both servers; returns anchorkv's replies."""
    ours, ref = pair
    got = run_session(ours, steps, nconns)
    if ref is not None:
        assert got == run_session(ref, steps, nconns)
    return got


def one(steps):
    """Steps on connection 0."""
    return [(0, data, want) for data, want in steps]


# --- before authentication ------------------------------------------------

BEFORE_AUTH = [
    b"get a", b"gets a b", b"gat 0 a", b"gats 0 a", b"bget a",
    b"delete a", b"delete a noreply", b"incr a 1", b"decr a 1 noreply",
    b"touch a 0", b"flush_all", b"flush_all noreply", b"stats",
    b"stats settings", b"version", b"verbosity 1", b"verbosity 1 noreply",
    b"quit", b"shutdown", b"mn", b"mg a v", b"md a", b"ma a", b"me a",
    b"lru_crawler metadump all", b"watch", b"range - +", b"keys - +",
    b"count - +", b"delete_range - +", b"", b"   ", b"SET a 0 0 12",
    b"set a 0 0", b"set a 0 0 -1", b"set a 0 0 x", b"set a 0 0 0x",
    b"cas a 0 0", b"add", b"get " + b"k " * 500,
    b"GET / HTTP/1.1", b"\x00\xff binary",
]


def test_every_command_before_auth(pair):
    steps = one([(line + b"\r\n", 1) for line in BEFORE_AUTH])
    got = differential(pair, steps)
    assert got == [UNAUTH] * len(BEFORE_AUTH)


def test_storage_commands_before_auth(pair):
    """Their data lines are command lines too: each one is refused."""
    steps = []
    for cmd in (b"add", b"replace", b"append", b"prepend"):
        steps += [(cmd + b" sk 0 0 5\r\n", 1), (b"hello\r\n", 1)]
    steps += [(b"cas sk 0 0 5 1\r\n", 1), (b"hello\r\n", 1)]
    got = differential(pair, one(steps))
    assert got == [UNAUTH] * len(steps)
    # nothing was stored: authenticate and look
    got = differential(pair, one([(auth_data(b"alice", b"secret"), 1),
                                  (b"get sk\r\n", 1)]))
    assert got == [b"STORED\r\n", b"END\r\n"]


def test_wrong_then_right_password(pair):
    steps = one([
        (auth_data(b"alice", b"wrong"), 1),
        (auth_data(b"alice", b"secre"), 1),
        (auth_data(b"alice", b"secrets"), 1),
        (auth_data(b"nobody", b"secret"), 1),
        (auth_data(b"bob", b"pa"), 1),
        (b"get a\r\n", 1),		# still not authenticated, still open
        (auth_data(b"alice", b"secret"), 1),
        (b"set wr:k 5 0 2\r\nhi\r\n", 1),
        (b"get wr:k\r\n", 3),
    ])
    got = differential(pair, steps)
    assert got == [FAILURE] * 4 + [FAILURE, UNAUTH, b"STORED\r\n",
                                   b"STORED\r\n",
                                   b"VALUE wr:k 5 2\r\nhi\r\nEND\r\n"]


@pytest.mark.parametrize("user,password", [
    (b"alice", b"secret"),
    (b"bob", b"pa:ss"),		# the password runs to the end of the line
    (b"dave", b"x\ty"),		# a tab is not a separator
])
def test_users_of_the_file(pair, user, password):
    got = differential(pair, one([(auth_data(user, password), 1)]))
    assert got == [b"STORED\r\n"]


def test_password_with_a_space_cannot_log_in(pair):
    # the file says "carol:has space"; the client's data is split on spaces
    got = differential(pair, one([(auth_data(b"carol", b"has space"), 1),
                                  (auth_data(b"carol", b"has"), 1)]))
    assert got == [FAILURE, FAILURE]


@pytest.mark.parametrize("request_bytes", [
    b"set a 0 0 14\r\n alice  secret\r\n",		# runs of spaces
    b"set a 0 0 18\r\nalice secret extra\r\n",	# the rest ignored
    b"set a 0 0 13\r\nalice secret \r\n",
    b"set  a  b  c  12  x y z\r\nalice secret\r\n",	# only <bytes> read
    b"set a 0 0 +12\r\nalice secret\r\n",
    b"set a 0 0 012\r\nalice secret\r\n",
])
def test_token_forms(pair, request_bytes):
    got = differential(pair, one([(request_bytes, 1)]))
    assert got == [b"STORED\r\n"]


def test_token_format_errors(pair):
    steps = one([
        (b"set a 0 0 5\r\nalice\r\n", 1),
        (b"set a 0 0 0\r\n\r\n", 1),
        (b"set a 0 0 3\r\n   \r\n", 1),
        (b"set a 0 0 12\r\nalice:secret\r\n", 1),
        (b"set a 0 0 3\r\nabcde", 1),	# no "\r\n" after 3 bytes
        (b"\r\n", 1),
        (b"set a 0 0 12\r\nalice secretXX", 1),
        (b"set a 0 0 12\r\nalice secret\r\n", 1),
    ])
    got = differential(pair, steps)
    assert got == [BAD_FORMAT, BAD_FORMAT, BAD_FORMAT, BAD_FORMAT,
                   BAD_TERM, UNAUTH, BAD_TERM, b"STORED\r\n"]


def test_split_reads(pair):
    steps = one([(b"se", 0), (b"t a 0 0 12\r", 0), (b"\nali", 0),
                 (b"ce secret\r", 0), (b"\n", 1)])
    assert differential(pair, steps) == [b"", b"", b"", b"", b"STORED\r\n"]


def test_noreply_does_not_silence_auth(pair):
    steps = one([
        (b"set a 0 0 11 noreply\r\nalice wrong\r\n", 1),
        (b"set a 0 0 12 noreply\r\nalice secret\r\n", 1),
        # authenticated: noreply is noreply again
        (b"set nr:k 0 0 1 noreply\r\n1\r\nget nr:k\r\n", 3),
    ])
    got = differential(pair, steps)
    assert got == [FAILURE, b"STORED\r\n", b"VALUE nr:k 0 1\r\n1\r\nEND\r\n"]


def test_pipelined_after_auth(pair):
    """Everything after the authenticating set in one write."""
    batch = (b"set pl:a 0 0 1\r\n1\r\n"
             b"add pl:a 0 0 1 noreply\r\n2\r\n"
             b"incr pl:a 41\r\n"
             b"append pl:a 0 0 1\r\n!\r\n"
             b"get pl:a pl:none\r\n"
             b"delete pl:a\r\n"
             b"delete pl:a\r\n"
             b"set auth 0 0 12\r\nalice secret\r\n"	# a plain set now
             b"get auth\r\n")
    got = differential(pair, one([(auth_data(b"alice", b"secret"), 1),
                                  (batch, 12)]))
    assert got == [b"STORED\r\n",
                   b"STORED\r\n42\r\nSTORED\r\n"
                   b"VALUE pl:a 0 3\r\n42!\r\nEND\r\n"
                   b"DELETED\r\nNOT_FOUND\r\nSTORED\r\n"
                   b"VALUE auth 0 12\r\nalice secret\r\nEND\r\n"]


@pytest.mark.anchorkv_only
def test_pipelined_with_the_auth(pair):
    """anchorkv answers what follows the authenticating set in the same
    write at once (memcached waits for more input before it does)."""
    ours, _ = pair
    with ours.conn() as c:
        c.send(b"get pa:x\r\n" + auth_data(b"alice", b"secret") +
               b"set pa:x 0 0 1\r\n1\r\nget pa:x\r\n")
        c.expect(UNAUTH + b"STORED\r\nSTORED\r\n"
                 b"VALUE pa:x 0 1\r\n1\r\nEND\r\n")
    with ours.conn() as c:
        c.send(b"version\r\nversion\r\nversion\r\n")
        c.expect(UNAUTH * 3)


def test_two_connections_two_states(pair):
    steps = [
        (0, auth_data(b"alice", b"secret"), 1),
        (0, b"set tc:k 0 0 2\r\nok\r\n", 1),
        (1, b"get tc:k\r\n", 1),
        (0, b"get tc:k\r\n", 3),
        (1, auth_data(b"alice", b"wrong"), 1),
        (0, b"delete tc:none\r\n", 1),
        (1, auth_data(b"bob", b"pa:ss"), 1),
        (1, b"get tc:k\r\n", 3),
    ]
    got = differential(pair, steps, nconns=2)
    assert got == [b"STORED\r\n", b"STORED\r\n", UNAUTH,
                   b"VALUE tc:k 0 2\r\nok\r\nEND\r\n", FAILURE,
                   b"NOT_FOUND\r\n", b"STORED\r\n",
                   b"VALUE tc:k 0 2\r\nok\r\nEND\r\n"]


def test_a_new_connection_starts_unauthenticated(pair):
    steps = [(0, auth_data(b"alice", b"secret"), 1), (1, b"get a\r\n", 1)]
    assert differential(pair, steps, nconns=2) == [b"STORED\r\n", UNAUTH]


@pytest.mark.anchorkv_only
def test_byte_by_byte(pair):
    """A whole session one byte per write: the same replies as in one."""
    ours, _ = pair
    session = (b"get bb:k\r\nset a 0 0 5\r\nalice\r\n" +
               auth_data(b"alice", b"wrong") +
               b"set a 0 0 3\r\nabcde" + auth_data(b"bob", b"pa:ss") +
               b"set bb:k 0 0 2 noreply\r\nok\r\nget bb:k\r\n")
    want = (UNAUTH + BAD_FORMAT + FAILURE + BAD_TERM + b"STORED\r\n" +
            b"VALUE bb:k 0 2\r\nok\r\nEND\r\n")
    with ours.conn() as c:
        for i in range(len(session)):
            c.send(session[i:i + 1])
        c.expect(want)
        c.assert_quiet(0.1)


@pytest.mark.anchorkv_only
def test_no_password_in_the_log(start_server, auth_file):
    srv = start_server(["-vv", "-Y", auth_file])
    with srv.conn() as c:
        c.send(auth_data(b"alice", b"wrong"))
        c.expect(FAILURE)
        c.send(auth_data(b"alice", b"secret"))
        c.expect(b"STORED\r\n")
        c.send(b"get after\r\n")
        c.expect(b"END\r\n")
    log = srv.stderr_text()
    assert "before authentication, not shown" in log
    assert "get after" in log		# logged once authenticated
    assert "secret" not in log and "wrong" not in log


def test_overlong_line_closes(pair):
    got = differential(pair, one([(b"x" * 3000, CLOSE)]))
    assert got == [("closed", b"")]


def test_oversized_auth_block_closes(pair):
    data = b"set a 0 0 20000\r\n" + b"x" * 20000 + b"\r\n"
    got = differential(pair, one([(data, CLOSE)]))
    assert got == [("closed", b"")]


def test_auth_stats_and_settings(auth_file, tmp_path):
    ours, ref = start_pair(str(tmp_path), ["-Y", auth_file])
    try:
        for srv in filter(None, (ours, ref)):
            for user, pw in ((b"alice", b"no"), (b"bob", b"pa:ss"),
                             (b"x", b"y"), (b"alice", b"secret")):
                with srv.conn() as c:
                    c.send(auth_data(user, pw))
                    c.recv_line()
            with srv.conn() as c:
                c.send(b"set a 0 0 5\r\nalice\r\n")	# format: not counted
                c.expect(BAD_FORMAT)
                c.send(auth_data(b"alice", b"secret"))
                c.expect(b"STORED\r\n")
                s = c.stats()
                assert (s["auth_cmds"], s["auth_errors"]) == ("5", "2")
                assert c.stats("settings")["auth_enabled_ascii"] == \
                    auth_file
                assert c.stats("settings")["auth_enabled_sasl"] == "no"
    finally:
        ours.stop()
        if ref:
            ref.stop(check=False)


def test_no_auth_by_default(conn, prefix):
    s = conn.stats("settings")
    assert s["auth_enabled_ascii"] == "no"
    conn.send(b"set %sa 0 0 12\r\nalice secret\r\n" % prefix.encode())
    conn.expect(b"STORED\r\n")


# --- SIGHUP reloads the file (as memcached) -------------------------------

def try_auth(srv, user, pw):
    with srv.conn() as c:
        c.send(auth_data(user, pw))
        return c.recv_line()


def wait_until(pred, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_sighup_reloads(tmp_path):
    users = tmp_path / "users"
    users.write_text("alice:secret\n")
    ours, ref = start_pair(str(tmp_path), ["-Y", str(users)])
    servers = [srv for srv in (ours, ref) if srv]
    kept = []
    try:
        for srv in servers:
            c = srv.conn()
            kept.append(c)
            c.send(auth_data(b"alice", b"secret"))
            c.expect(b"STORED\r\n")
        users.write_text("bob:new\n")
        for srv in servers:	# memcached reloads on its next clock tick
            os.kill(srv.pid, signal.SIGHUP)
            wait_until(lambda: try_auth(srv, b"bob", b"new") == b"STORED")
            assert try_auth(srv, b"alice", b"secret") == FAILURE[:-2]
        for c in kept:	# an authenticated connection stays so
            c.send(b"get hup:k\r\n")
            c.expect(b"END\r\n")
        # a file that fails to load leaves the users as they were
        users.write_text("bob\n")
        for srv in servers:
            os.kill(srv.pid, signal.SIGHUP)
        time.sleep(1.5)
        for srv in servers:
            assert srv.alive()
            assert try_auth(srv, b"bob", b"new") == b"STORED"
        log = ours.stderr_text()
        if not is_memcached():
            assert "SIGHUP: auth_file %s reloaded: 1 user:password " \
                "entries" % users in log
            assert "SIGHUP: auth_file %s: line 1 is not user:password; " \
                "the users stay as they were" % users in log
    finally:
        for c in kept:
            c.close()
        ours.stop()
        if ref:
            ref.stop(check=False)


def test_sighup_without_auth_file(start_server):
    srv = start_server([])
    os.kill(srv.pid, signal.SIGHUP)
    time.sleep(0.3)
    with srv.conn() as c:
        assert c.cmd(b"get hup:none") == b"END"
    assert srv.alive()


# --- the auth file at start (anchorkv's own checks) ----------------------

def start_fails(args):
    """Runs the daemon with @args; it must exit 1. Returns its stderr."""
    port = free_port()
    proc = subprocess.run([BIN, "-l", "127.0.0.1", "-p", str(port)] + args,
                          cwd=ROOT, stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=30)
    assert proc.returncode == 1, proc.stderr
    return proc.stderr.decode()


@pytest.mark.anchorkv_only
@pytest.mark.parametrize("content,message", [
    (None, "cannot open it: No such file or directory"),
    ("", "no usable user:password line"),
    ("alice:secret\n\nbob:x\n", "line 2 is not user:password"),
    ("# users\nalice:secret\n", "line 1 is not user:password"),
    (":pw\nbob:\n", "no usable user:password line (a user or password is "
     "empty or holds a space)"),
    ("alice:" + "x" * 1100 + "\n", "line 1 is longer than 1024 bytes"),
    ("a:b\n" * 17000, "larger than 65536 bytes"),
    ("a:b\x00c\n", "line 1 holds a NUL byte"),
])
def test_bad_file_refuses_to_start(tmp_path, content, message):
    path = tmp_path / "users"
    if content is not None:
        path.write_text(content)
    err = start_fails(["-Y", str(path)])
    assert "auth_file (-Y) %s: %s" % (path, message) in err


@pytest.mark.anchorkv_only
def test_bad_file_kinds(tmp_path):
    err = start_fails(["-Y", str(tmp_path)])
    assert "auth_file (-Y) %s: not a regular file" % tmp_path in err
    err = start_fails(["-Y", ""])
    assert 'invalid value for auth_file (-Y): ""' in err
    if os.geteuid() != 0:	# root reads anything
        path = tmp_path / "secret"
        path.write_text("alice:secret\n")
        path.chmod(0)
        err = start_fails(["-Y", str(path)])
        assert "cannot open it: Permission denied" in err


@pytest.mark.anchorkv_only
def test_skipped_lines_warn(start_server, tmp_path):
    path = tmp_path / "users"
    path.write_text(":pw\nalice:secret\nbob:\n")
    srv = start_server(["-Y", str(path)])
    with srv.conn() as c:
        c.send(auth_data(b"alice", b"secret"))
        c.expect(b"STORED\r\n")
    assert ("auth_file %s: 2 line(s) skipped, the first is line 1"
            % path) in srv.stderr_text()


@pytest.mark.anchorkv_only
def test_more_users_and_no_final_newline(start_server, tmp_path):
    """memcached reads 8 entries and drops the last byte of a password on
    a last line without newline; anchorkv takes the file as written."""
    path = tmp_path / "users"
    path.write_text("".join("u%d:p%d\n" % (i, i) for i in range(20)) +
                    "last:word")
    srv = start_server(["-Y", str(path)])
    for user, pw in ((b"u0", b"p0"), (b"u19", b"p19"), (b"last", b"word")):
        with srv.conn() as c:
            c.send(auth_data(user, pw))
            c.expect(b"STORED\r\n")
    with srv.conn() as c:
        c.send(auth_data(b"last", b"wor"))
        c.expect(FAILURE)


@pytest.mark.anchorkv_only
def test_auth_file_directive(start_server, tmp_path):
    users = tmp_path / "users"
    users.write_text("alice:secret\n")
    conf = tmp_path / "t.conf"
    conf.write_text("auth_file %s\n" % users)
    srv = start_server(["-f", str(conf)])
    with srv.conn() as c:
        c.send(b"get a\r\n")
        c.expect(UNAUTH)
        c.send(auth_data(b"alice", b"secret"))
        c.expect(b"STORED\r\n")
        assert c.stats("settings")["auth_enabled_ascii"] == str(users)


# --- the bind warning ---------------------------------------------------------

WARNING = "which is not a loopback address, without authentication (-Y)"


@pytest.mark.anchorkv_only
def test_bind_warning(start_server, auth_file):
    # the fixture's "-l 127.0.0.1" is replaced by the later "-l 0.0.0.0";
    # the test itself talks to 127.0.0.1 only
    open_srv = start_server(["-l", "0.0.0.0"])
    with open_srv.conn() as c:
        assert c.stats("settings")["inter"] == "0.0.0.0"
    lines = [l for l in open_srv.stderr_text().splitlines() if WARNING in l]
    assert len(lines) == 1, open_srv.stderr_text()
    assert "listening on tcp:0.0.0.0:%d" % open_srv.port in lines[0]

    closed = start_server(["-l", "0.0.0.0", "-Y", auth_file])
    with closed.conn() as c:
        c.send(auth_data(b"alice", b"secret"))
        c.expect(b"STORED\r\n")
    assert "not a loopback" not in closed.stderr_text()

    local = start_server([])
    with local.conn() as c:
        c.cmd("version")
    assert "not a loopback" not in local.stderr_text()


# --- -F, -A, UDP --------------------------------------------------------------

def test_flush_all_disabled_every_form(tmp_path):
    steps = one([(b"set fk 0 0 1\r\n1\r\n", 1), (b"flush_all\r\n", 1),
                 (b"flush_all 0\r\n", 1), (b"flush_all noreply\r\n", 0),
                 (b"flush_all 10 noreply\r\n", 0), (b"flush_all x\r\n", 1),
                 (b"flush_all 1 2 3\r\n", 1), (b"get fk\r\n", 3)])
    ours, ref = start_pair(str(tmp_path), ["-F"])
    try:
        got = differential((ours, ref), steps)
    finally:
        ours.stop()
        if ref:
            ref.stop(check=False)
    no = b"CLIENT_ERROR flush_all not allowed\r\n"
    assert got == [b"STORED\r\n", no, no, b"", b"", no, b"ERROR\r\n",
                   b"VALUE fk 0 1\r\n1\r\nEND\r\n"]


def test_shutdown_refused_without_A(conn, server):
    for line in (b"shutdown", b"shutdown graceful", b"shutdown now"):
        assert conn.cmd(line) == b"ERROR: shutdown not enabled"
    assert server.alive()


@pytest.mark.anchorkv_only
@pytest.mark.parametrize("value", ["1", "11211", "-1", "x"])
def test_udp_refused(value):
    err = start_fails(["-U", value])
    assert "UDP is not supported (-U %s); only -U 0 is accepted" % value \
        in err


@pytest.mark.anchorkv_only
def test_udp_zero_accepted_and_no_udp_socket(start_server):
    srv = start_server(["-U", "0"])
    with srv.conn() as c:
        assert c.stats("settings")["udpport"] == "0"
    # none of its sockets is a UDP one
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % srv.pid):
        try:
            link = os.readlink("/proc/%d/fd/%s" % (srv.pid, fd))
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    assert inodes, "no sockets seen"
    udp = set()
    for table in ("udp", "udp6"):
        with open("/proc/%d/net/%s" % (srv.pid, table)) as f:
            udp |= {l.split()[9] for l in f.readlines()[1:]}
    assert not inodes & udp
