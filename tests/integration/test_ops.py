"""Operations: the logfile reopened on SIGHUP (log rotation), the shipped
logrotate file run against a live daemon.
"""
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

import conftest

pytestmark = pytest.mark.anchorkv_only

LOGROTATE = os.path.join(conftest.ROOT, "conf/anchorkv.logrotate")


def wait_for_text(path, text, timeout=10):
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(path) as f:
                if text in f.read():
                    return
        except FileNotFoundError:
            pass
        assert time.monotonic() < deadline, "no %r in %s" % (text, path)
        time.sleep(0.05)


def read(path):
    with open(path) as f:
        return f.read()


def test_sighup_reopens_the_logfile(start_server, tmp_path):
    log = tmp_path / "anchorkv.log"
    srv = start_server(["-v", "--logfile", str(log)])
    wait_for_text(log, "starting")
    with srv.conn() as c:
        c.cmd("version")
    wait_for_text(log, "new connection")
    os.rename(log, str(log) + ".1")
    os.kill(srv.pid, signal.SIGHUP)
    wait_for_text(log, "SIGHUP: logfile %s reopened" % log)
    # counted once the new file is open: a worker may still have been
    # logging the first connection (or the start-up probe's) to the old
    # file until then
    before = read(str(log) + ".1").count("new connection")
    assert before >= 1
    with srv.conn() as c:
        c.cmd("version")
    wait_for_text(log, "new connection")
    old = read(str(log) + ".1")
    assert "reopened" not in old
    # every line after the rename went to the new file
    assert old.count("new connection") == before


def test_sighup_keeps_the_log_when_reopen_fails(start_server, tmp_path):
    log = tmp_path / "anchorkv.log"
    srv = start_server(["--logfile", str(log)])
    wait_for_text(log, "starting")
    os.rename(log, str(log) + ".1")
    os.mkdir(log)		# the path is now a directory: open fails
    os.kill(srv.pid, signal.SIGHUP)
    wait_for_text(str(log) + ".1", "cannot reopen logfile %s" % log)
    with srv.conn() as c:
        assert c.cmd("version").startswith(b"VERSION ")


@pytest.mark.skipif(not shutil.which("logrotate"),
                    reason="logrotate is not installed")
def test_logrotate_file(start_server, tmp_path):
    """The shipped file, pointed at a test logfile and at this daemon's
    pid: after a forced rotation the daemon writes to a fresh file."""
    logdir = tmp_path / "log"
    logdir.mkdir()
    log = logdir / "anchorkv.log"
    srv = start_server(["-v", "--logfile", str(log)])
    wait_for_text(log, "starting")
    text = read(LOGROTATE)
    assert "/var/log/anchorkv/anchorkv.log {" in text
    text = text.replace("/var/log/anchorkv/anchorkv.log", str(log))
    text, n = re.subn(r"(?m)^(\s*)systemctl kill .*$",
                      r"\1kill -HUP %d" % srv.pid, text)
    assert n == 1
    conf = tmp_path / "logrotate.conf"
    conf.write_text(text)
    subprocess.run(["logrotate", "-f", "-s", str(tmp_path / "state"),
                    str(conf)], check=True, capture_output=True, timeout=60)
    wait_for_text(log, "reopened")
    with srv.conn() as c:
        c.cmd("version")
    wait_for_text(log, "new connection")
    assert os.path.exists(str(log) + ".1")	# delaycompress: not yet .gz
    assert "reopened" not in read(str(log) + ".1")


# --- make install, the unit, the man pages -----------------------------------

def make(*args):
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    # the flags make test builds with: nothing is rebuilt
    return subprocess.run(["make", "--no-print-directory", "-C",
                           conftest.ROOT, "WERROR=-Werror"] + list(args),
                          capture_output=True, timeout=600, env=env,
                          check=True).stdout.decode()


INSTALLED = [
    "usr/local/bin/anchorkv", "usr/local/bin/anchorkv-cli",
    "usr/local/etc/anchorkv/anchorkv.conf",
    "usr/local/share/man/man1/anchorkv.1",
    "usr/local/share/man/man1/anchorkv-cli.1",
    "usr/local/lib/systemd/system/anchorkv.service",
    "etc/logrotate.d/anchorkv",
]


def files_under(root):
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, fs in os.walk(root) for f in fs)


def run_installed(bindir, conf):
    """The installed daemon starts with the installed config (on a free
    port) and the installed cli talks to it. Return: the descriptors it
    wants, max_connections plus reserved_fds from its stats."""
    port = conftest.free_port()
    d = subprocess.Popen([str(bindir / "anchorkv"), "-f", str(conf),
                          "-p", str(port)], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            r = subprocess.run([str(bindir / "anchorkv-cli"), "-p",
                                str(port), "version"], capture_output=True)
            if r.returncode == 0:
                break
            assert d.poll() is None, "the installed daemon exited"
            assert time.monotonic() < deadline, r.stderr
            time.sleep(0.05)
        assert r.stdout.split() == [b"VERSION", b"1.6.18"], r.stdout
        r = subprocess.run([str(bindir / "anchorkv-cli"), "-p", str(port),
                            "stats"], capture_output=True, check=True)
        st = dict(l.split()[1:3] for l in r.stdout.decode().splitlines()
                  if l.startswith("STAT "))
        return int(st["max_connections"]) + int(st["reserved_fds"])
    finally:
        d.terminate()
        assert d.wait(10) == 0


def test_install_and_uninstall_honour_destdir(tmp_path):
    root = tmp_path / "root"
    make("install", "DESTDIR=%s" % root)
    assert files_under(root) == sorted(INSTALLED)
    nofile = run_installed(root / "usr/local/bin",
                           root / "usr/local/etc/anchorkv/anchorkv.conf")
    assert os.access(root / INSTALLED[0], os.X_OK)
    unit = read(root / "usr/local/lib/systemd/system/anchorkv.service")
    assert "ExecStart=/usr/local/bin/anchorkv -f " \
        "/usr/local/etc/anchorkv/anchorkv.conf\n" in unit
    assert "@" not in unit.split("[Unit]")[1]
    # the daemon's sum (1024 + 2 per thread (4) + 64), within the unit's
    # fixed room (the formula lives in the daemon alone)
    assert nofile == 1096
    assert "LimitNOFILE=1048576\n" in unit
    # an edited config survives a new install and the uninstall
    conf = root / "usr/local/etc/anchorkv/anchorkv.conf"
    with open(conf, "a") as f:
        f.write("threads 2\n")
    out = make("install", "DESTDIR=%s" % root)
    assert "keeping" in out and read(conf).endswith("threads 2\n")
    out = make("uninstall", "DESTDIR=%s" % root)
    assert "changed since installed" in out
    assert files_under(root) == ["usr/local/etc/anchorkv/anchorkv.conf"]
    os.remove(conf)
    make("install", "DESTDIR=%s" % root)
    make("uninstall", "DESTDIR=%s" % root)
    assert files_under(root) == []


def test_installed_daemon_unit_and_man_pages(tmp_path):
    """Installed under a PREFIX of its own: the daemon runs with the
    installed config, the cli talks to it, man finds both pages, and
    systemd-analyze verify passes on the unit."""
    prefix = tmp_path / "p"
    make("install", "PREFIX=%s" % prefix,
         "LOGROTATEDIR=%s" % (prefix / "logrotate.d"))
    run_installed(prefix / "bin", prefix / "etc/anchorkv/anchorkv.conf")
    env = dict(os.environ, MANPATH=str(prefix / "share/man"))
    for page in ("anchorkv", "anchorkv-cli"):
        r = subprocess.run(["man", "-w", page], env=env,
                           capture_output=True, check=True)
        assert r.stdout.decode().strip() == \
            str(prefix / ("share/man/man1/%s.1" % page))
        # rendered without a warning from groff
        r = subprocess.run(["man", "--warnings", "-l", r.stdout.strip()],
                           env=dict(env, MANWIDTH="80"),
                           capture_output=True, check=True)
        assert r.stderr == b"", r.stderr
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze is not installed")
    unit = prefix / "lib/systemd/system/anchorkv.service"
    r = subprocess.run(["systemd-analyze", "verify", str(unit)], env=env,
                       capture_output=True, timeout=60)
    assert r.returncode == 0 and r.stderr == b"", r.stderr


# --- stats as memcached's tools read them -------------------------------------

def memcstat_fields(port):
    r = subprocess.run(["memcstat", "--servers=127.0.0.1:%d" % port],
                       capture_output=True, timeout=30, check=True)
    fields = []
    for line in r.stdout.decode().splitlines():
        m = re.match(r"^\s+(\S+): ", line)
        if m:
            fields.append(m.group(1))
    return fields


@pytest.mark.skipif(not shutil.which("memcstat"),
                    reason="memcstat is not installed")
def test_memcstat_prints_every_memcached_field(start_server, tmp_path):
    """memcstat (libmemcached-tools) prints for anchorkv every field it
    prints for memcached 1.6.18, in the same order (anchorkv's own follow
    them)."""
    from test_classic_diff import Memcached, MEMCACHED
    if not os.path.exists(MEMCACHED) and not shutil.which("memcached"):
        pytest.skip("memcached is not installed")
    srv = start_server()
    ref = Memcached([], str(tmp_path)).start()
    try:
        want = memcstat_fields(ref.port)
        got = memcstat_fields(srv.port)
    finally:
        ref.stop(check=False)
    assert len(want) > 80
    assert [f for f in got if f in want] == want, \
        sorted(set(want) - set(got))


def man_text(page):
    """A man page's source with roff's escaped hyphens plain."""
    return read(os.path.join(conftest.ROOT, "docs/man", page)).replace(
        "\\-", "-")


def help_words(binary):
    out = subprocess.run([os.path.join(conftest.ROOT, binary), "--help"],
                         capture_output=True, timeout=10).stdout.decode()
    flags = set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", out))
    # a directive is named in brackets on an option's lines
    options = "\n".join(x for x in out.splitlines() if x.startswith("  "))
    directives = {d.split()[0] for d in
                  re.findall(r"\[([a-z_]+(?: \w+)?)\]", options)}
    return flags, directives


def test_man_pages_cover_every_flag_and_directive():
    flags, directives = help_words("build/anchorkv")
    text = man_text("anchorkv.1")
    assert len(flags) > 40 and len(directives) > 20
    missing = sorted(f for f in flags if f not in text)
    assert not missing, missing
    missing = sorted(d for d in directives if "[%s" % d not in text)
    assert not missing, missing
    for sig in ("SIGTERM", "SIGINT", "SIGHUP"):
        assert sig in text
    flags, _ = help_words("build/anchorkv-cli")
    text = man_text("anchorkv-cli.1")
    missing = sorted(f for f in flags if f not in text)
    assert not missing, missing


def test_an_idle_server_wakes_about_twice_a_second(start_server):
    """The main thread's clock ticks once a second; the drain tick, ten
    a second while slab pages are given back or emptied, stops when it
    finds nothing to do until the clock's next tick. An idle server woke
    eleven times a second before (the drain tick never stopped)."""
    srv = start_server(["-t", "2"])
    with srv.conn() as c:
        for i in range(200):
            assert c.set("idle:%d" % i, "x") == b"STORED"
        assert c.get1("idle:7") == b"x"
    status = "/proc/%d/task/%d/status" % (srv.pid, srv.pid)

    def wakeups():
        with open(status) as f:
            for line in f:
                if line.startswith("voluntary_ctxt_switches:"):
                    return int(line.split()[1])
        raise AssertionError("no voluntary_ctxt_switches in " + status)

    time.sleep(1.5)			# the drain tick finds nothing left
    before = wakeups()
    time.sleep(4)
    woke = wakeups() - before
    assert woke <= 4 * 5, "%d wakeups of the main thread in 4 s" % woke
