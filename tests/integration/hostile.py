"""Helpers of test_hostile.py and test_limits.py: a server whose memory can
be measured, a memcached next to it, exchanges that end at a sentinel, and
the keys that must survive every attack.

Memory is the server's resident set from /proc/<pid>/status. Before an
attack the peak (VmHWM) is reset to the current size (clear_refs "5"), so
VmHWM after it is the highest the attack pushed the server. Under ASan, a
freed block waits in a quarantine (256 MB by default) before its memory is
reused, which would count memory the server gave back as growth: the
measured servers run with a 4 MB quarantine.
"""
import os
import re
import shutil
import socket
import threading
import time

import pytest

import conftest
from conftest import Server
from test_admin import wait_for
from test_classic_diff import MEMCACHED, Memcached

ASAN_QUARANTINE = "quarantine_size_mb=4"


class Measured(Server):
    """The server under test, with a small ASan quarantine and optionally
    its own descriptor limit (prlimit execs the daemon: same pid)."""

    def __init__(self, args=(), workdir=None, nofile=None):
        super().__init__(args, workdir)
        self.nofile = nofile

    def command(self, port):
        opts = os.environ.get("ASAN_OPTIONS", "")
        pre = ["env", "ASAN_OPTIONS=%s:%s" % (opts, ASAN_QUARANTINE)
               if opts else ASAN_QUARANTINE]
        if self.nofile:
            pre = ["prlimit", "--nofile=%d:%d" % (self.nofile, self.nofile),
                   "--"] + pre
        return pre + super().command(port)


def need_memcached():
    if not os.path.exists(MEMCACHED) and not shutil.which("memcached"):
        pytest.skip("memcached is not installed")


def start_memcached(workdir, args=()):
    """A memcached 1.6 started like the suite's reference (its background
    threads off, so that its replies are reproducible)."""
    need_memcached()
    return Memcached(["-o", "no_lru_crawler,no_lru_maintainer,"
                      "no_slab_reassign"] + list(args), workdir).start()


def status(pid, field):
    """A field of /proc/<pid>/status in KiB (VmRSS, VmHWM)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError("no %s for pid %d" % (field, pid))


def reset_peak(pid):
    """Make VmHWM the current resident size; return that size in KiB."""
    with open("/proc/%d/clear_refs" % pid, "w") as f:
        f.write("5")
    return status(pid, "VmRSS")


def stat(srv, name):
    with srv.conn() as c:
        return int(c.stats()[name])


VERSION_LINE = re.compile(rb"VERSION [^\r\n]*\r\n")
CAS_VALUE_LINE = re.compile(rb"^(VALUE [^ \r\n]+ [0-9]+ [0-9]+) [0-9]+\r$",
                            re.M)
SENTINEL = b"version\r\n"


def exchange(srv, data, pieces=None, timeout=15.0, sentinel=True, pause=0):
    """Send @data then "version" on a new connection; read the replies.

    @pieces: a list of byte strings sent one after the other instead.
    @sentinel: False when @data must close the connection: "version" is
    not sent (its newline would end an overlong line).
    @pause: seconds between pieces, so that the server reads them apart.
    Return: (the replies before the sentinel's, closed) where closed is
    True when the server closed the connection instead of answering the
    sentinel. VERSION lines are cut to "VERSION\\r\\n" and cas uniques
    dropped from VALUE lines (the two servers' differ).
    """
    c = srv.conn(timeout)

    def send_all():
        try:
            for i, p in enumerate(pieces if pieces is not None else [data]):
                if i and pause:
                    time.sleep(pause)
                c.sock.sendall(p)
            if sentinel:
                c.sock.sendall(SENTINEL)
        except OSError:
            pass	# it closed while we sent: read what came before

    # a thread sends while this one reads: a server that stops reading
    # while its replies wait must not deadlock the test
    sender = threading.Thread(target=send_all)
    sender.start()
    out, closed = b"", False
    try:
        while True:
            line = c.recv_line(timeout)
            if line.startswith(b"VERSION "):
                break
            out += line + b"\r\n"
    except ConnectionError:
        closed = True
        out += c.buf
    finally:
        try:
            c.sock.shutdown(socket.SHUT_RDWR)	# ends a blocked sender
        except OSError:
            pass
        sender.join()
        c.close()
    out = VERSION_LINE.sub(b"VERSION\r\n", out)
    return CAS_VALUE_LINE.sub(rb"\1\r", out), closed


# --- the keys every attack must leave alone ----------------------------------

SEEDS = [
    (b"0", 0, b"zero"),
    (b"7", 7, b"7"),
    (b"18446744073709551615", 1, b"max\r\nu64"),
    (b"hostile:crlf", 2, b"line\r\nEND\r\nVALUE x 0 1\r\n"),
    (b"hostile:nul", 4294967295, b"\x00a\x00\r\n\x00"),
    (b"hostile:empty", 3, b""),
    (b"hostile:bytes", 5, bytes(range(256)) * 4),
    (b"hostile:\xc3\xa9t\xc3\xa9\xff", 6, b"utf-8 and not"),
    (b"S" * 250, 8, b"longest key"),
    (b"hostile:big", 9, bytes((i * 131 + 17) & 0xff for i in range(200000))),
]


def store_seeds(srv):
    """Store SEEDS; return {key: cas}."""
    with srv.conn() as c:
        for key, flags, value in SEEDS:
            assert c.set(key, value, flags) == b"STORED", key
        got = c.gets(*[s[0] for s in SEEDS])
    return {k: v[2] for k, v in got.items()}


def check_seeds(srv, cas):
    """Every seed reads back byte-identical, with its cas unchanged."""
    with srv.conn() as c:
        got = c.gets(*[s[0] for s in SEEDS])
        for key, flags, value in SEEDS:
            assert key in got, "seed %r lost" % key[:40]
            assert got[key][:2] == (flags, value), "seed %r changed" % key
            assert got[key][2] == cas[key], "seed %r rewritten" % key[:40]
        # and one at a time, each in its own request
        for key, flags, value in SEEDS:
            c.send(b"get " + key + b"\r\n")
            c.expect(b"VALUE %s %d %d\r\n" % (key, flags, len(value))
                     + value + b"\r\nEND\r\n")


class Guard:
    """Around an attack: seeds stored before and intact after, the server
    alive and clean, the peak resident size bounded, every connection the
    attack opened gone, and no item left by it.

    @rss_bound_kib: how far the resident size may rise above where it was.
    @new_items: how many items the attack itself stores.
    """

    def __init__(self, srv, rss_bound_kib, new_items=0):
        self.srv = srv
        self.new_items = new_items
        self.bound = rss_bound_kib
        self.cas = None
        self.before = None

    def __enter__(self):
        self.cas = store_seeds(self.srv)
        with self.srv.conn() as c:
            st = c.stats()
        self.items = int(st["curr_items"])
        self.conns = int(st["curr_connections"])
        self.before = reset_peak(self.srv.pid)
        return self

    def __exit__(self, typ, exc, tb):
        if typ is not None:
            return False
        srv = self.srv
        assert srv.alive(), "server died: %s" % srv.stderr_text()[-3000:]
        report = srv.new_sanitizer_report()
        assert report is None, report
        peak = status(srv.pid, "VmHWM")
        self.growth = peak - self.before
        print("peak resident size +%d KiB" % self.growth)
        assert self.growth <= self.bound, \
            "resident size rose %d KiB (bound %d KiB)" % (self.growth,
                                                         self.bound)
        check_seeds(srv, self.cas)
        # the checking connection is the one left
        wait_for(lambda: stat(srv, "curr_connections") <= self.conns,
                 timeout=10, what="the attack's connections to close")
        assert stat(srv, "curr_items") == self.items + self.new_items
        return False


def skip_on_memcached_flavor():
    return pytest.mark.skipif(conftest.is_memcached(),
                              reason="compares against memcached itself")


def connect_raw(srv, timeout=10.0):
    s = socket.create_connection((srv.host, srv.port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s
