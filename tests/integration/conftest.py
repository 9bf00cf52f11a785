"""Fixtures: start the daemon on a free 127.0.0.1 port, check it stops clean.

Environment:
  ANCHORKV_BIN     the binary (default build/asan/anchorkv)
  ANCHORKV_FLAVOR  "anchorkv" (default) or "memcached": with memcached, the
                   suite starts /usr/bin/memcached the same way and skips the
                   tests marked anchorkv_only. memcached 1.6 is the reference
                   for every classic-protocol expectation in this suite.

A stop is SIGTERM; the daemon must exit 0 within a few seconds, and its
stderr (kept in a file) must hold no sanitizer report. The shared server is
checked the same way after every test, so a crash or a report is pinned on
the test that caused it, and a dead shared server is restarted so that one
bug does not fail every later test.
"""
import os
import signal
import socket
import subprocess
import tempfile
import time

import pytest

import mc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BIN = os.environ.get("ANCHORKV_BIN", os.path.join(ROOT, "build/asan/anchorkv"))
if not os.path.isabs(BIN):
    BIN = os.path.join(ROOT, BIN)
FLAVOR = os.environ.get("ANCHORKV_FLAVOR") or (
    "memcached" if os.path.basename(BIN).startswith("memcached")
    else "anchorkv")
HOST = "127.0.0.1"
START_TIMEOUT = 60.0		# ASan start-up on a busy 2-core machine; the
				# port answers once a snapshot is loaded
STOP_TIMEOUT = 10.0		# exit, including LeakSanitizer's scan
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "runtime error:",
                   "LeakSanitizer", "ERROR: ThreadSanitizer",
                   "ERROR: UndefinedBehaviorSanitizer")

os.environ.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
os.environ.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")


def is_memcached():
    return FLAVOR == "memcached"


def free_port():
    s = socket.socket()
    s.bind((HOST, 0))
    port = s.getsockname()[1]
    s.close()
    return port


class ServerError(AssertionError):
    pass


class Server:
    """One daemon process listening on HOST:port."""

    def __init__(self, args=(), workdir=None):
        self.args = list(args)
        self.workdir = workdir or tempfile.mkdtemp(prefix="akv-it-")
        self.host = HOST
        self.port = None
        self.proc = None
        self.stderr_path = None
        self.stopped = False
        self._scanned = 0	# bytes of stderr already checked

    @property
    def pid(self):
        return self.proc.pid

    def command(self, port):
        cmd = [BIN]
        if is_memcached():
            cmd += ["-U", "0"]
            if os.geteuid() == 0:
                cmd += ["-u", "root"]
        cmd += ["-l", HOST, "-p", str(port)]
        return cmd + self.args

    def start(self):
        last = ""
        for attempt in range(6):
            port = free_port()
            self.stderr_path = os.path.join(
                self.workdir, "stderr-%d-%d.log" % (port, attempt))
            err = open(self.stderr_path, "wb")
            self.proc = subprocess.Popen(
                self.command(port), stdin=subprocess.DEVNULL,
                stdout=err, stderr=err, cwd=ROOT)
            err.close()
            self.port = port
            self._scanned = 0
            if self._wait_accepting():
                return self
            last = self.stderr_text()
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            if "in use" not in last:	# not a port race: give up
                break
        raise ServerError("server did not start: %s\n%s"
                          % (" ".join(self.command(self.port)), last))

    def _wait_accepting(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                s = socket.create_connection((HOST, self.port), timeout=1)
                s.close()
                return True
            except OSError:
                time.sleep(0.02)
        return False

    def conn(self, timeout=mc.DEFAULT_TIMEOUT):
        return mc.Conn(self.host, self.port, timeout)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stderr_text(self):
        try:
            with open(self.stderr_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def new_sanitizer_report(self):
        """Sanitizer output written since the last call, or None."""
        text = self.stderr_text()
        fresh = text[self._scanned:]
        self._scanned = len(text)
        if any(m in fresh for m in SANITIZER_MARKS):
            return fresh[-6000:]
        return None

    def wait_exit(self, timeout=STOP_TIMEOUT):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise ServerError("server did not exit within %.0f s" % timeout)

    def stop(self, check=True):
        """SIGTERM; check exit status 0 and a clean stderr."""
        if self.stopped:
            return
        self.stopped = True
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.wait_exit()
        if not check:
            return
        self.check_exit(rc)

    def check_exit(self, rc):
        self.stopped = True
        report = self.new_sanitizer_report()
        if report:
            raise ServerError("sanitizer report on stderr:\n" + report)
        if rc != 0:
            raise ServerError("server exited with status %d; stderr:\n%s"
                              % (rc, self.stderr_text()[-4000:]))


# --- markers ---------------------------------------------------------------

def pytest_configure(config):
    config.addinivalue_line(
        "markers", "anchorkv_only: anchorkv extension (skipped on memcached)")


def pytest_collection_modifyitems(config, items):
    if not is_memcached():
        return
    skip = pytest.mark.skip(reason="anchorkv extension, not in memcached")
    for item in items:
        if "anchorkv_only" in item.keywords:
            item.add_marker(skip)


def pytest_report_header(config):
    return "anchorkv integration: flavor=%s bin=%s" % (FLAVOR, BIN)


# --- fixtures --------------------------------------------------------------

class _Shared:
    server = None


@pytest.fixture(scope="session")
def _shared_workdir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("shared"))


@pytest.fixture(scope="session")
def _shared_session(_shared_workdir):
    yield _Shared
    if _Shared.server is not None and not _Shared.server.stopped:
        _Shared.server.stop()


@pytest.fixture
def server(_shared_session, _shared_workdir):
    """The shared default server (restarted if a previous test killed it).

    After the test: the server must still run and have written no sanitizer
    report. Tests on it use their own key prefixes.
    """
    srv = _Shared.server
    if srv is None or not srv.alive():
        srv = Server([], _shared_workdir).start()
        _Shared.server = srv
    yield srv
    if not srv.alive():
        rc = srv.proc.returncode
        _Shared.server = None
        srv.stopped = True
        raise ServerError("shared server died during the test (status %s); "
                          "stderr:\n%s" % (rc, srv.stderr_text()[-6000:]))
    report = srv.new_sanitizer_report()
    if report:
        raise ServerError("sanitizer report during the test:\n" + report)


@pytest.fixture
def conn(server):
    """A connection to the shared server."""
    c = server.conn()
    yield c
    c.close()


@pytest.fixture
def start_server(tmp_path):
    """start_server(args) -> a new Server with these extra flags.

    Each one is stopped at the end of the test with SIGTERM and must exit 0
    without a sanitizer report (unless the test stopped it itself).
    """
    started = []

    def start(args=()):
        srv = Server(args, str(tmp_path)).start()
        started.append(srv)
        return srv

    yield start
    errors = []
    for srv in started:
        try:
            srv.stop()
        except ServerError as e:
            errors.append(str(e))
    if errors:
        raise ServerError("\n".join(errors))


@pytest.fixture
def prefix(request):
    """A key prefix unique to the test."""
    name = request.node.name
    for ch in "[]-/ ":
        name = name.replace(ch, "_")
    return name[:60] + ":"
