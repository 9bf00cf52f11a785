"""The config file (-f) and anchorkv's own settings (anchorkv only).
Directives: conf/anchorkv.conf.
"""
import os
import subprocess

import pytest

from conftest import BIN, ROOT, SANITIZER_MARKS

pytestmark = pytest.mark.anchorkv_only


def settings(srv):
    with srv.conn() as c:
        return c.stats("settings")


def test_shipped_conf_file(start_server):
    # the file says port 11211; the command line (-p from the fixture) wins
    srv = start_server(["-f", "conf/anchorkv.conf"])
    s = settings(srv)
    assert int(s["tcpport"]) == srv.port
    assert s["config_file"] == "conf/anchorkv.conf"
    assert int(s["range_max"]) == 10000
    assert int(s["item_size_max"]) == 1024 * 1024
    assert int(s["maxbytes"]) == 64 * 1024 * 1024
    assert int(s["maxconns"]) == 1024
    assert s["evictions"] == "on"
    assert s["cas_enabled"] == "yes"
    assert s["flush_enabled"] == "yes"
    assert s["shutdown_command"] == "no"


def test_conf_directives_apply(start_server, tmp_path):
    conf = tmp_path / "t.conf"
    conf.write_text("# a test file\n"
                    "range_max 7\n"
                    "max_item_size 2k\n"
                    "memory_limit 8m\n"
                    "flush_enabled no\n"
                    "cas off\n"
                    "threads 2\n"
                    "max_connections \"50\"\n"
                    "evict no\n"
                    "reqs_per_event 3\n"
                    "shutdown_enabled yes\n"
                    "threads 3\n")		# the last one wins
    srv = start_server(["-f", str(conf), "-t", "2"])	# the flag wins
    s = settings(srv)
    assert int(s["range_max"]) == 7
    assert int(s["item_size_max"]) == 2048
    assert int(s["maxbytes"]) == 8 * 1024 * 1024
    assert s["flush_enabled"] == "no"
    assert s["cas_enabled"] == "no"
    assert int(s["num_threads"]) == 2
    assert int(s["maxconns"]) == 50
    assert s["evictions"] == "off"
    assert int(s["reqs_per_event"]) == 3
    assert s["shutdown_command"] == "yes"
    with srv.conn() as c:
        for i in range(10):
            c.set(b"%d" % i, b"x")
        c.send(b"keys - +\r\n")
        assert c.read_keys() == [b"%d" % i for i in range(7)]
        c.send(b"set big 0 0 3000\r\n" + b"x" * 3000 + b"\r\n")
        c.expect(b"SERVER_ERROR object too large for cache\r\n")
        c.send(b"flush_all\r\n")
        c.expect(b"CLIENT_ERROR flush_all not allowed\r\n")


def run_bad(args, timeout=20):
    p = subprocess.run([BIN] + args, cwd=ROOT, stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=timeout)
    err = p.stderr.decode("utf-8", "replace")
    assert not any(m in err for m in SANITIZER_MARKS), err
    return p.returncode, err


@pytest.mark.parametrize("text,line", [
    ("port 0\nno_such_directive 1\n", 2),
    ("range_max abc\n", 1),
    ("range_max 0\n", 1),
    ("# comment\n\nmax_item_size 5g\n", 3),
    ("cas maybe\n", 1),
    ("threads\n", 1),
])
def test_bad_conf_file(tmp_path, text, line):
    conf = tmp_path / "bad.conf"
    conf.write_text(text)
    rc, err = run_bad(["-f", str(conf), "-l", "127.0.0.1", "-p", "0"])
    assert rc == 1, err
    assert "%s:%d:" % (conf, line) in err, err


def test_missing_conf_file(tmp_path):
    rc, err = run_bad(["-f", str(tmp_path / "nope.conf"), "-p", "0"])
    assert rc == 1
    assert "nope.conf" in err


@pytest.mark.parametrize("args", [
    ["--range-max=abc"], ["-t", "0"], ["-c", "x"], ["--no-such-flag"],
    ["-I", "1"],
])
def test_bad_flags(args):
    rc, err = run_bad(args + ["-l", "127.0.0.1", "-p", "0"])
    assert rc == 1, err
    assert err.strip(), "no message"


def test_help_and_version():
    p = subprocess.run([BIN, "-h"], capture_output=True, timeout=20)
    assert p.returncode == 0
    assert b"range-max" in p.stdout
    p = subprocess.run([BIN, "-V"], capture_output=True, timeout=20)
    assert p.returncode == 0
    assert p.stdout.startswith(b"anchorkv ")
    assert os.path.isfile(os.path.join(ROOT, "conf/anchorkv.conf"))
