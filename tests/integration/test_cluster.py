"""Three anchorkv instances behind nutcracker (twemproxy), configured by the
shipped conf/nutcracker.yml with its addresses moved to free ports.

Keys set through the proxy spread over the three; every one reads back
through it; a killed instance is ejected and the proxy keeps serving from
the other two; restarted empty, it rejoins; a load generator through the
proxy sees no error. And what twemproxy does with a range command, which
README.md and PROTOCOL.md document: it closes the connection.
"""
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

import conftest
import mc

pytestmark = pytest.mark.anchorkv_only

YML = os.path.join(conftest.ROOT, "conf/nutcracker.yml")
NUTCRACKER = shutil.which("nutcracker") or "/usr/sbin/nutcracker"
SERVER_RE = re.compile(r"^(\s*-\s*)([0-9.]+):(\d+):(\d+)(.*)$")
RETRY_MS = 2000		# server_retry_timeout in the shipped file


class Instance(conftest.Server):
    """An anchorkv that can be restarted on the port it first had."""

    def restart(self):
        self.stopped = False
        port = self.port
        self.stderr_path = os.path.join(self.workdir,
                                        "stderr-%d-again.log" % port)
        err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            self.command(port), stdin=subprocess.DEVNULL, stdout=err,
            stderr=err, cwd=conftest.ROOT)
        err.close()
        self._scanned = 0
        assert self._wait_accepting(), self.stderr_text()
        return self


def pool_yml(src, listen_port, ports):
    """The shipped file with the proxy and the servers on @ports."""
    out, i = [], 0
    for line in src.splitlines():
        m = SERVER_RE.match(line)
        if m:
            line = "%s127.0.0.1:%d:%s%s" % (m.group(1), ports[i], m.group(4),
                                            m.group(5))
            i += 1
        elif line.strip().startswith("listen:"):
            line = re.sub(r"listen:.*", "listen: 127.0.0.1:%d" % listen_port,
                          line)
        out.append(line)
    assert i == len(ports), "the shipped pool has %d servers" % i
    return "\n".join(out) + "\n"


@pytest.fixture
def cluster(tmp_path):
    if not os.path.exists(NUTCRACKER):
        pytest.skip("nutcracker is not installed")
    insts = [Instance(["-m", "64"], str(tmp_path)).start() for _ in range(3)]
    proxy_port = conftest.free_port()
    yml = tmp_path / "nutcracker.yml"
    with open(YML) as f:
        yml.write_text(pool_yml(f.read(), proxy_port,
                                [s.port for s in insts]))
    subprocess.run([NUTCRACKER, "-t", "-c", str(yml)], check=True,
                   capture_output=True)
    log = open(tmp_path / "nutcracker.log", "wb")
    proxy = subprocess.Popen([NUTCRACKER, "-c", str(yml)], stdout=log,
                             stderr=log)
    log.close()
    deadline = time.monotonic() + 10
    while True:
        try:
            mc.Conn("127.0.0.1", proxy_port, 1).close()
            break
        except OSError:
            assert time.monotonic() < deadline, "nutcracker did not start"
            time.sleep(0.05)
    yield insts, proxy_port
    proxy.terminate()
    proxy.wait(10)
    for s in insts:
        s.stop()


def items(inst):
    with inst.conn() as c:
        return int(c.stats()["curr_items"])


def set_many(c, keys, value=b"v"):
    """Pipelined sets; the replies, in order."""
    c.send(b"".join(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(value), value)
                    for k in keys))
    return [c.recv_line() for _ in keys]


def get_many(c, keys):
    """Pipelined single-key gets: the value of each, or None."""
    c.send(b"".join(b"get %s\r\n" % k for k in keys))
    out = []
    for _ in keys:
        line = c.recv_line()
        if line.startswith(b"VALUE "):
            n = int(line.split()[3])
            out.append(c.recv_exactly(n + 2)[:-2])
            assert c.recv_line() == b"END"
        else:
            out.append(None if line == b"END" else line)
    return out


def test_keys_spread_and_read_back(cluster):
    insts, port = cluster
    keys = [b"user:%d" % i for i in range(10000)]
    with mc.Conn("127.0.0.1", port, 30) as c:
        for i in range(0, len(keys), 1000):
            assert set(set_many(c, keys[i:i + 1000])) == {b"STORED"}
        counts = [items(s) for s in insts]
        assert sum(counts) == len(keys)
        for n in counts:
            assert 0.20 * len(keys) <= n <= 0.47 * len(keys), counts
        for i in range(0, len(keys), 1000):
            assert get_many(c, keys[i:i + 1000]) == [b"v"] * 1000


def test_ejection_and_rejoin(cluster):
    insts, port = cluster
    keys = [b"k:%d" % i for i in range(3000)]
    with mc.Conn("127.0.0.1", port, 30) as c:
        assert set(set_many(c, keys)) == {b"STORED"}
    dead = insts[1]
    held = items(dead)
    assert held > 0
    dead.stop()
    # the first requests for the dead instance's keys fail and eject it;
    # then everything goes to the other two, until server_retry_timeout
    # lets the proxy try it again
    with mc.Conn("127.0.0.1", port, 30) as c:
        deadline = time.monotonic() + 5
        while b"STORED" != set_many(c, [b"probe"])[0] or \
                set(set_many(c, keys[:200])) != {b"STORED"}:
            assert time.monotonic() < deadline, "no ejection"
        start = time.monotonic()
        replies = set_many(c, keys) + get_many(c, keys)
        took = time.monotonic() - start
        assert took < RETRY_MS / 1000, "too slow to test within the window"
        assert set(replies) == {b"STORED", b"v"}
    # restarted empty on its port, it is tried again after the retry
    # timeout and takes back its share of the keys
    dead.restart()
    assert items(dead) == 0
    time.sleep(RETRY_MS / 1000 + 0.5)
    with mc.Conn("127.0.0.1", port, 30) as c:
        fresh = [b"new:%d" % i for i in range(3000)]
        deadline = time.monotonic() + 10
        while True:
            replies = set_many(c, fresh)
            if set(replies) == {b"STORED"} and items(dead) > 0:
                break
            assert time.monotonic() < deadline, "the instance did not rejoin"
            time.sleep(0.2)
        assert get_many(c, fresh) == [b"v"] * len(fresh)
        assert 0.20 * len(fresh) <= items(dead) <= 0.47 * len(fresh)


def test_load_through_the_proxy(cluster):
    insts, port = cluster
    memtier = shutil.which("memtier_benchmark")
    if memtier:
        r = subprocess.run(
            [memtier, "-s", "127.0.0.1", "-p", str(port),
             "--protocol=memcache_text", "-t", "1", "-c", "4",
             "--test-time=2", "--ratio=1:1", "--key-maximum=5000",
             "--hide-histogram"], capture_output=True, timeout=60)
        out = (r.stdout + r.stderr).decode("utf-8", "replace")
        assert r.returncode == 0, out[-2000:]
        assert "error" not in out.lower(), out[-2000:]
    else:
        memcaslap = shutil.which("memcaslap")
        if not memcaslap:
            pytest.skip("neither memtier_benchmark nor memcaslap")
        r = subprocess.run(
            [memcaslap, "-s", "127.0.0.1:%d" % port, "-t", "2s", "-c", "4",
             "-T", "1"], capture_output=True, timeout=60)
        out = (r.stdout + r.stderr).decode("utf-8", "replace")
        assert r.returncode == 0, out[-2000:]
        assert "error" not in out.lower() and "fail" not in out.lower(), \
            out[-2000:]
    assert sum(items(s) for s in insts) > 0


def test_a_range_command_closes_the_proxy_connection(cluster):
    """What the README warns of: twemproxy does not know `keys` and closes
    the connection; the replies to the requests before it in the same
    write are lost too. Sent to each instance, it works."""
    insts, port = cluster
    with mc.Conn("127.0.0.1", port, 10) as c:
        c.send(b"set a 0 0 1\r\nx\r\nget a\r\nkeys - +\r\n")
        assert c.assert_closed(5) == b""
    # whether the proxy forwarded that set before it gave up is its own
    # race: the key is set again on a connection of its own
    with mc.Conn("127.0.0.1", port, 10) as c:
        c.send(b"set a 0 0 1\r\nx\r\n")
        c.expect(b"STORED\r\n")
    listed = []
    for s in insts:
        with s.conn() as c:
            c.send(b"keys - +\r\n")
            listed += c.read_keys()
    assert listed == [b"a"]


def readme_snippet():
    """The Python block of docs/operations.md's "More than one server"."""
    with open(os.path.join(conftest.ROOT, "docs", "operations.md")) as f:
        text = f.read()
    section = text.split("## More than one server", 1)[1].split("\n## ")[0]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_readme_merge_snippet(cluster, tmp_path):
    """The pymemcache merge of docs/operations.md, run against the three
    instances, prints every key once, in keyspace order, with its value."""
    insts, port = cluster
    keys = [b"%d" % i for i in (0, 7, 64, 1000, 18446744073709551615)] + \
        [b"007", b"18446744073709551616", b"a", b"user:%05d" % 3] + \
        [b"k%05d" % i for i in range(2500)]
    with mc.Conn("127.0.0.1", port, 30) as c:
        for i in range(0, len(keys), 500):
            c.send(b"".join(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(k), k)
                            for k in keys[i:i + 500]))
            for _ in keys[i:i + 500]:
                assert c.recv_line() == b"STORED"
    assert all(items(s) > 0 for s in insts)
    code = readme_snippet()
    servers = "servers = [%s]" % ", ".join('("127.0.0.1", %d)' % s.port
                                           for s in insts)
    code, n = re.subn(r"^servers = \[.*\]$", servers, code, flags=re.M)
    assert n == 1
    # pages of 100, so that every server is asked for several
    assert "page=1000" in code
    code = code.replace("page=1000", "page=100")
    script = tmp_path / "merge.py"
    script.write_text(code)
    r = subprocess.run(["/usr/bin/python3", str(script)], capture_output=True,
                       timeout=120, check=True)
    lines = r.stdout.decode().splitlines()
    ints = sorted((k for k in keys if k.isdigit() and
                   (k == b"0" or not k.startswith(b"0")) and
                   int(k) < 2 ** 64), key=int)
    strs = sorted(k for k in keys if k not in ints)
    want = ["%s %s" % (k.decode(), k.decode()) for k in ints + strs]
    assert lines == want


def sigint_default():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_make_cluster_script(tmp_path):
    """tools/cluster.sh (make cluster): the instances and the proxy come
    up from the pool file, serve, and all stop on SIGTERM or Ctrl-C."""
    if not os.path.exists(NUTCRACKER):
        pytest.skip("nutcracker is not installed")
    ports = [conftest.free_port() for _ in range(3)]
    proxy_port = conftest.free_port()
    yml = tmp_path / "nutcracker.yml"
    with open(YML) as f:
        yml.write_text(pool_yml(f.read(), proxy_port, ports))
    for sig in (signal.SIGTERM, signal.SIGINT):
        log = open(tmp_path / "cluster.log", "wb")
        # SIGINT at its default, as a terminal gives it: a run of the
        # tests started as "cmd &" by a non-interactive shell inherits it
        # ignored, and a shell cannot trap a signal ignored on entry
        proc = subprocess.Popen(["sh", os.path.join(conftest.ROOT,
                                                    "tools/cluster.sh"),
                                 str(yml)], stdout=log, stderr=log,
                                cwd=conftest.ROOT,
                                preexec_fn=sigint_default)
        log.close()
        try:
            # the proxy may listen before the instances it forwards to
            # (it answers SERVER_ERROR Connection refused until they do)
            deadline = time.monotonic() + 10
            for port in ports + [proxy_port]:
                while True:
                    try:
                        c = mc.Conn("127.0.0.1", port, 5)
                        break
                    except OSError:
                        assert time.monotonic() < deadline, \
                            (tmp_path / "cluster.log").read_text()
                        time.sleep(0.05)
                if port != proxy_port:
                    c.close()
            with c:
                keys = [b"mc:%d" % i for i in range(300)]
                assert set(set_many(c, keys)) == {b"STORED"}
                assert get_many(c, keys) == [b"v"] * 300
        finally:
            proc.send_signal(sig)
            assert proc.wait(15) == 0
        # every instance and the proxy are gone: their ports are free
        for port in ports + [proxy_port]:
            deadline = time.monotonic() + 5
            while True:
                try:
                    mc.Conn("127.0.0.1", port, 1).close()
                except OSError:
                    break
                assert time.monotonic() < deadline, "port %d open" % port
                time.sleep(0.05)
        assert "stopped" in (tmp_path / "cluster.log").read_text()
