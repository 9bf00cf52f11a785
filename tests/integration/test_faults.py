"""Allocation failures injected into the test daemon, checked against a model.

The sanitizer build (build/asan/anchorkv, compiled with -DAK_FAULT_INJECTION)
has the test-only commands "debug alloc_fail <one_in>|off" (PROTOCOL.md):
while armed, every allocation of core/alloc.h fails with probability
1/<one_in>; and "debug alloc_fail_after <n>", which fails one allocation,
for a sweep over every allocation point of a script. The release build
answers them ERROR.

What must hold while it is armed:
- a request whose item cannot be allocated is answered with memcached's error
  (SERVER_ERROR out of memory storing object for a storage command, and
  SERVER_ERROR out of memory for incr/decr and a range's scratch), on a
  connection that goes on working; a failed set leaves no old value, as in
  memcached; nothing else changes;
- any other answer is exactly the model's;
- a failure outside the store (a reply chunk, a connection's buffers, an
  event) may close that one connection, never more: the request it was
  running has then either happened whole or not at all, which is checked with
  the injection off before going on.
Then, with it off: every entry is the model's (those never written are
byte-for-byte what was first stored), the server works normally, and it
exits 0 on SIGTERM with nothing from ASan or LeakSanitizer on stderr
(checked by the start_server fixture).
"""
import random
import socket
import struct

import pytest

import binary
import keyspace
import mc
from release import start_release

pytestmark = pytest.mark.anchorkv_only

OOM_STORE = b"SERVER_ERROR out of memory storing object"
OOM = b"SERVER_ERROR out of memory"
ONE_IN = 4			# an allocation in four fails
REQUESTS = 4000
N_STABLE = 1500			# string and integer keys never written again
N_HOT = 300			# keys the mixed requests change
INT_STABLE = 1000000		# integer keys INT_STABLE + 3 * i
INT_HOT = 5000000		# integer keys INT_HOT + i


class Lost(Exception):
    """The server closed the connection before answering."""


def stable_keys():
    keys = [b"fs:%05d" % i for i in range(N_STABLE)]
    keys += [b"%d" % (INT_STABLE + 3 * i) for i in range(N_STABLE)]
    return keys


def hot_keys():
    keys = [b"fh:%04d" % i for i in range(N_HOT)]
    keys += [b"%d" % (INT_HOT + i) for i in range(N_HOT)]
    return keys


class Client:
    """One connection at a time, opened again when a fault closes it.

    A new connection is used only after a "version" round trip worked: its
    first reply chunk and segment ring are then allocated, so that a later
    close is the work of a later request.
    """

    def __init__(self, srv):
        self.srv = srv
        self.c = None
        self.reconnects = 0
        self.lost = 0

    def _open(self):
        for _ in range(2000):
            c = None
            try:
                c = self.srv.conn()
                if c.cmd("version").startswith(b"VERSION "):
                    return c
            except (ConnectionError, socket.timeout, OSError):
                pass
            if c:
                c.close()
            self.reconnects += 1
        raise AssertionError("no connection survived 2000 tries")

    def drop(self):
        if self.c:
            self.c.close()
        self.c = None

    def call(self, payload, read):
        """Send @payload, return read(conn); raise Lost on a close."""
        if self.c is None:
            self.c = self._open()
        try:
            self.c.send(payload)
            return read(self.c)
        except (ConnectionError, OSError) as e:
            if isinstance(e, socket.timeout):
                raise
            self.drop()
            self.lost += 1
            raise Lost() from e


def read_line(c):
    return c.recv_line()


def read_values(c):
    """VALUE lines up to END as [(key, flags, data)], or an error line."""
    out = []
    while True:
        line = c.recv_line()
        if line == b"END":
            return out
        if not line.startswith(b"VALUE "):
            assert not out, "error line %r after values" % line
            return line
        _, key, flags, n = line.split(b" ")
        data = c.recv_exactly(int(n) + 2)
        assert data[-2:] == b"\r\n"
        out.append((key, int(flags), data[:-2]))


def read_keys(c):
    out = []
    while True:
        line = c.recv_line()
        if line == b"END":
            return out
        if not line.startswith(b"KEY "):
            assert not out, "error line %r after keys" % line
            return line
        out.append(line[4:])


def read_stats(c):
    """The names of a stats reply."""
    names = set()
    while True:
        line = c.recv_line()
        if line == b"END":
            return names
        names.add(line.split(b" ")[1].decode())


class Model:
    """key -> (flags, value), and the ordered key list for ranges."""

    def __init__(self):
        self.d = {}

    def sorted_keys(self):
        return sorted(self.d, key=keyspace.order)

    def in_range(self, lo, hi):
        return [k for k in self.sorted_keys() if keyspace.in_range(k, lo, hi)]


def store_line(op, key, flags, value):
    return b"%s %s %d 0 %d\r\n%s\r\n" % (op, key, flags, len(value), value)


def apply_store(d, op, key, flags, value):
    """The model after a successful @op, or None when it is NOT_STORED."""
    old = d.get(key)
    if op == b"set":
        return (flags, value)
    if op == b"add":
        return None if old else (flags, value)
    if old is None:
        return None
    if op == b"replace":
        return (flags, value)
    if op == b"append":
        return (old[0], old[1] + value)
    return (old[0], value + old[1])		# prepend


def incr_result(old, incr, delta):
    """New value of an incr/decr of @old (digits), as memcached computes."""
    v = int(old)
    v = (v + delta) % (1 << 64) if incr else max(0, v - delta)
    return b"%d" % v


class Faults:
    """The mixed load, with a model and a control connection."""

    def __init__(self, srv, rng):
        self.srv = srv
        self.rng = rng
        self.m = Model()
        self.cl = Client(srv)
        self.hot = hot_keys()
        self.stable = stable_keys()
        self.answers = {}		# answer kind -> count
        with srv.conn() as c:		# the names of a whole stats reply
            self.stat_names = set(c.stats())

    def control(self, line):
        """A command with the injection off (it is turned off first)."""
        for _ in range(2000):
            try:
                with self.srv.conn() as c:
                    r = c.cmd(line)
                    if r:
                        return r
            except (ConnectionError, OSError):
                pass
        raise AssertionError("control connection failed 2000 times")

    def faults(self, on):
        r = self.control("debug alloc_fail %s" % (ONE_IN if on else "off"))
        assert r == b"OK", r

    def seen(self, kind):
        self.answers[kind] = self.answers.get(kind, 0) + 1

    def actual(self, keys):
        """Current values of @keys (injection off) as {key: (flags, data)}."""
        got = {}
        with self.srv.conn() as c:
            for i in range(0, len(keys), 100):
                c.send(b"get " + b" ".join(keys[i:i + 100]) + b"\r\n")
                for k, f, v in c.read_values():
                    got[k] = (f, v)
        return got

    def settle(self, key, outcomes):
        """A lost reply: the key must hold one of @outcomes (None: absent)."""
        self.faults(False)
        now = self.actual([key]).get(key)
        assert now in outcomes, ("after a lost reply %r holds %r, not one "
                                 "of %r" % (key, now, outcomes))
        if now is None:
            self.m.d.pop(key, None)
        else:
            self.m.d[key] = now
        self.faults(True)

    # --- the requests ---------------------------------------------------

    def value(self):
        if self.rng.random() < 0.3:
            return b"%d" % self.rng.randrange(0, 1 << 20)
        return bytes(self.rng.choice(b"abcdefghij")
                     for _ in range(self.rng.randrange(0, 200)))

    def op_store(self):
        d = self.m.d
        op = self.rng.choice([b"set", b"set", b"add", b"replace",
                              b"append", b"prepend"])
        key = self.rng.choice(self.hot)
        flags = self.rng.randrange(0, 1000)
        value = self.value()
        old = d.get(key)
        new = apply_store(d, op, key, flags, value)
        try:
            r = self.cl.call(store_line(op, key, flags, value), read_line)
        except Lost:
            self.settle(key, [old, new, None] if op == b"set" else [old, new])
            return
        if r == OOM_STORE:
            self.seen("oom_store")
            if op == b"set":	# memcached drops the old value
                d.pop(key, None)
            return
        if new is None:
            assert r == b"NOT_STORED", (op, key, r)
            return
        assert r == b"STORED", (op, key, old, r)
        self.seen("stored")
        d[key] = new

    def op_arith(self):
        d = self.m.d
        key = self.rng.choice(self.hot)
        incr = self.rng.random() < 0.6
        delta = self.rng.randrange(0, 1 << 16)
        old = d.get(key)
        line = b"%s %s %d\r\n" % (b"incr" if incr else b"decr", key, delta)
        new = None
        if old is not None and old[1].isdigit() and \
                int(old[1]) < 1 << 64:
            new = (old[0], incr_result(old[1], incr, delta))
        try:
            r = self.cl.call(line, read_line)
        except Lost:
            self.settle(key, [old, new] if new else [old])
            return
        if old is None:
            assert r == b"NOT_FOUND", (line, r)
        elif new is None:
            assert r == (b"CLIENT_ERROR cannot increment or decrement "
                         b"non-numeric value"), (line, old, r)
        elif r == OOM:
            self.seen("oom_arith")
        else:
            assert r == new[1], (line, old, r)
            d[key] = new

    def op_delete(self):
        key = self.rng.choice(self.hot)
        old = self.m.d.get(key)
        try:
            r = self.cl.call(b"delete %s\r\n" % key, read_line)
        except Lost:
            self.settle(key, [old, None])
            return
        assert r == (b"DELETED" if old else b"NOT_FOUND"), (key, r)
        self.m.d.pop(key, None)

    def op_get(self):
        keys = self.rng.sample(self.hot, 3) + \
            self.rng.sample(self.stable, 2)
        try:
            got = self.cl.call(b"get " + b" ".join(keys) + b"\r\n",
                               read_values)
        except Lost:
            return
        want = [(k,) + self.m.d[k] for k in keys if k in self.m.d]
        assert got == want, (keys, got, want)

    def bounds(self):
        """Random bounds over the integer or the string part."""
        if self.rng.random() < 0.5:
            base = self.rng.choice([INT_STABLE, INT_HOT])
            a = base + self.rng.randrange(0, 3 * N_HOT)
            b = a + self.rng.randrange(0, 400)
            lo, hi = b"%d" % a, b"%d" % b
        else:
            p = self.rng.choice([b"fs:", b"fh:"])
            a = self.rng.randrange(0, N_HOT)
            lo = p + b"%04d" % a
            hi = p + b"%04d" % (a + self.rng.randrange(0, 400))
        return (bytes([self.rng.choice(b"[(")]) + lo,
                bytes([self.rng.choice(b"[(")]) + hi)

    def op_range(self):
        lo, hi = self.bounds()
        kind = self.rng.choice([b"range", b"rrange", b"keys", b"count"])
        count = self.rng.choice([1, 10, 100, 300])
        keys = self.m.in_range(lo, hi)
        if kind == b"count":
            try:
                r = self.cl.call(b"count %s %s\r\n" % (lo, hi), read_line)
            except Lost:
                return
            assert r == b"COUNT %d" % len(keys), (lo, hi, r)
            return
        if kind == b"rrange":
            keys = keys[::-1]
        keys = keys[:count]
        line = b"%s %s %s %d\r\n" % (kind, lo, hi, count)
        try:
            got = self.cl.call(line, read_keys if kind == b"keys"
                               else read_values)
        except Lost:
            return
        if got == OOM:
            self.seen("oom_range")
            return
        if kind == b"keys":
            assert got == keys, (line, got, keys)
        else:
            assert got == [(k,) + self.m.d[k] for k in keys], (line, got)

    def op_delete_range(self):
        key = self.rng.choice(self.hot)
        if key.isdigit():
            lo, hi = key, b"%d" % (int(key) + self.rng.randrange(0, 4))
        else:
            lo, hi = key, key + b"5"
        lo, hi = b"[" + lo, b"(" + hi
        keys = self.m.in_range(lo, hi)
        try:
            r = self.cl.call(b"delete_range %s %s\r\n" % (lo, hi), read_line)
        except Lost:
            self.faults(False)
            with self.srv.conn() as c:
                n = int(c.cmd(b"count %s %s" % (lo, hi)).split()[1])
            assert n in (0, len(keys)), (lo, hi, n, keys)
            if n == 0:
                for k in keys:
                    del self.m.d[k]
            self.faults(True)
            return
        assert r == b"DELETED %d" % len(keys), (lo, hi, r, keys)
        for k in keys:
            del self.m.d[k]

    def op_stats(self):
        """A stats reply is whole (every name of a quiet one) or cut."""
        try:
            got = self.cl.call(b"stats\r\n", read_stats)
        except Lost:
            return
        assert got == self.stat_names, sorted(self.stat_names ^ got)

    def run(self, n):
        ops = [self.op_store] * 6 + [self.op_arith] * 2 + \
              [self.op_delete, self.op_get, self.op_get, self.op_range,
               self.op_range, self.op_delete_range, self.op_stats]
        for _ in range(n):
            self.rng.choice(ops)()


def load(srv, items):
    """Store @items {key: (flags, value)} without faults, pipelined."""
    with srv.conn(timeout=30) as c:
        buf = b"".join(store_line(b"set", k, f, v)
                       for k, (f, v) in items.items())
        c.send(buf)
        for _ in items:
            assert c.recv_line() == b"STORED"


def walk_keys(c):
    """Every key, by paging "keys" through the whole keyspace."""
    out, lo = [], b"-"
    while True:
        c.send(b"keys %s + 1000\r\n" % lo)
        page = read_keys(c)
        out += page
        if len(page) < 1000:
            return out
        lo = b"(" + page[-1]


def test_faults_mixed_load(start_server):
    srv = start_server([])
    rng = random.Random(20261203)
    f = Faults(srv, rng)
    first = {k: (rng.randrange(0, 1 << 16), b"stable-%s-" % k * 3)
             for k in f.stable}
    first.update({k: (0, b"%d" % rng.randrange(0, 1000)) for k in f.hot})
    load(srv, first)
    f.m.d = dict(first)

    f.faults(True)
    f.run(REQUESTS)
    f.faults(False)
    f.cl.drop()

    with srv.conn() as c:
        failures = int(c.cmd("debug alloc_failures").split()[1])
    print("alloc failures %d, answers %r, lost replies %d, reconnects %d"
          % (failures, f.answers, f.cl.lost, f.cl.reconnects))
    # the injection really bit, and each kind of answer was seen
    assert failures > REQUESTS // 10, failures
    assert f.answers.get("oom_store", 0) > 50, f.answers
    assert f.answers.get("stored", 0) > 50, f.answers
    assert f.answers.get("oom_arith", 0) > 0, f.answers
    assert f.cl.lost > 0 and f.cl.reconnects > 0	# and closed connections

    # every entry is the model's; those never written are as first stored
    got = f.actual(f.stable + f.hot)
    for k in f.stable:
        assert got.get(k) == first[k], (k, got.get(k))
    assert got == {k: v for k, v in f.m.d.items()}
    with srv.conn() as c:
        assert walk_keys(c) == f.m.sorted_keys()
        assert int(c.stats()["curr_items"]) == len(f.m.d)
        # and the server works normally
        assert c.set("fz:after", "fine") == b"STORED"
        assert c.get1("fz:after") == b"fine"
        assert c.cmd("incr %d 5" % INT_STABLE) == \
            b"CLIENT_ERROR cannot increment or decrement non-numeric value"
        assert c.cmd("delete_range [fh: (fh;") == \
            b"DELETED %d" % sum(1 for k in f.m.d if k.startswith(b"fh:"))
        assert c.cmd("debug alloc_failures") == b"ALLOC_FAILURES %d" % failures


def test_debug_command_syntax(start_server):
    srv = start_server([])
    with srv.conn() as c:
        assert c.cmd("debug alloc_fail") == \
            b"CLIENT_ERROR bad command line format"
        assert c.cmd("debug alloc_fail -1") == \
            b"CLIENT_ERROR bad command line format"
        assert c.cmd("debug nothing 2") == \
            b"CLIENT_ERROR bad command line format"
        assert c.cmd("debug alloc_fail 1") == b"OK"
        # every allocation fails now: the item of a set cannot be made
        assert c.set("fd:k", "v") == OOM_STORE
        assert c.cmd("debug alloc_fail off") == b"OK"
        assert c.set("fd:k", "v") == b"STORED"
        assert c.cmd("debug alloc_fail 0") == b"OK"


def test_debug_command_absent_from_release_build(tmp_path):
    srv = start_release([], str(tmp_path))
    try:
        with srv.conn() as c:
            assert c.cmd("debug alloc_fail 2") == b"ERROR"
            assert c.cmd("debug alloc_failures") == b"ERROR"
            assert c.set("k", "v") == b"STORED"
    finally:
        srv.stop()


def recv_reply(c):
    """A reply up to END, or an error line, or what came before EOF:
    (bytes, closed)."""
    got = b""
    try:
        got = c.recv_until(b"\r\n")
        if got.startswith((b"SERVER_ERROR", b"END\r\n")):
            return got, False
        return got + c.recv_until(b"END\r\n"), False
    except ConnectionError:
        out, c.buf = got + c.buf, b""
        return out, True


def stats_names(data):
    """The names of the STAT lines of @data, and whether END closed it."""
    names, ended = [], False
    for line in data.split(b"\r\n"):
        if line == b"END":
            ended = True
            break
        if line.startswith(b"STAT "):
            names.append(line.split(b" ")[1])
    return names, ended


def test_alloc_fail_after_sweep(start_server):
    """Fail the n-th allocation after a point, for every n up to past the
    last one a script of large replies makes: each reply is whole, or
    memcached's error, or cut and followed by EOF; never a hole."""
    srv = start_server([])
    with srv.conn() as c:
        for i in range(300):
            assert c.set(b"%d" % i, b"v%03d" % i * 25) == b"STORED"
    reads = [b"range - + 300", b"keys - + 300",
             b"get " + b" ".join(b"%d" % i for i in range(0, 300, 3)),
             b"rrange - + 200"]
    with srv.conn() as c:
        want = {}
        for r in reads:
            c.send(r + b"\r\n")
            want[r] = c.recv_until(b"END\r\n")
        c.send(b"stats\r\n")
        full_stats, _ = stats_names(c.recv_until(b"END\r\n"))
    seen = {"whole": 0, "error": 0, "cut": 0}
    n = 0
    while True:
        c = Client(srv)._open()
        assert c.cmd("debug alloc_fail_after %d" % n) == b"OK"
        closed, hit = False, False
        for r in reads + [b"stats"]:
            c.send(r + b"\r\n")
            if r == b"stats":
                data = b""
                try:
                    data = c.recv_until(b"END\r\n")
                except ConnectionError:
                    data, closed = c.buf, True
                names, ended = stats_names(data)
                assert names == full_stats[:len(names)], (n, names)
                assert ended == (names == full_stats) and ended != closed
                seen["cut" if closed else "whole"] += 1
                hit = hit or closed
                break
            data, closed = recv_reply(c)
            if data.startswith(OOM + b"\r\n"):
                seen["error"] += 1
                hit = True
                data = data[len(OOM) + 2:]
                assert not data and not closed, (n, r, data[:100])
                continue
            assert want[r].startswith(data), (n, r, data[:200])
            if closed:
                assert data != want[r], (n, r)
                seen["cut"] += 1
                hit = True
                break
            seen["whole"] += 1
        c.close()
        ctl = Client(srv)._open()	# may take the failure not yet used
        assert ctl.cmd("debug alloc_fail off") == b"OK"
        ctl.close()
        if not hit:
            break		# n went past the script's last allocation
        n += 1
        assert n < 500
    print("alloc_fail_after sweep: %d points, %r" % (n + 1, seen))
    assert seen["cut"] > 0 and seen["whole"] > 0
    with srv.conn() as c:
        c.send(reads[0] + b"\r\n")
        assert c.recv_until(b"END\r\n") == want[reads[0]]


def failures(c):
    line = c.cmd("debug alloc_failures")
    assert line.startswith(b"ALLOC_FAILURES ")
    return int(line.split()[1])


def test_touch_without_memory_for_the_expiry_answers_out_of_memory(
        start_server):
    """An item stored without an expiry takes one in a copy when touched
    (core/store.h). With no memory for that copy, touch answered TOUCHED,
    gat the value, and mg T a hit, and the item never expired; now each
    answers memcached's out of memory error, and the item is as it was."""
    srv = start_server([])
    oom_get = b"SERVER_ERROR out of memory writing get response"
    with srv.conn() as c:
        assert c.set("ft:k", "value") == b"STORED"
        assert c.set("4242", "value") == b"STORED"
        for key in ("ft:k", "4242"):
            for line, want in (("touch %s 100" % key, OOM),
                               ("gat 100 %s" % key, oom_get),
                               ("gats 100 ft:other %s" % key, oom_get),
                               ("mg %s T100 v t" % key, OOM)):
                before = failures(c)
                assert c.cmd("debug alloc_fail_after 0") == b"OK"
                assert c.cmd(line) == want, line
                assert failures(c) == before + 1, line
                assert c.cmd("mg %s v t" % key) == b"VA 5 t-1", line
                assert c.recv_line() == b"value"
        # binary touch and gat, quiet or not: Out of memory (0x82)
        b = socket.create_connection((srv.host, srv.port))
        b.sendall(binary.req("noop"))
        assert binary.parse(b.recv(100))[0][0]["status"] == 0
        for op in ("touch", "gat", "gatq", "gatk", "gatkq"):
            assert c.cmd("debug alloc_fail_after 0") == b"OK"
            b.sendall(binary.req(op, "ft:k", struct.pack(">I", 100)))
            got, rest = binary.parse(b.recv(1000))
            assert len(got) == 1 and not rest, op
            assert got[0]["status"] == 0x82, (op, got)
            assert got[0]["value"] == b"Out of memory", (op, got)
        b.close()
        assert c.cmd("debug alloc_fail off") == b"OK"
        # with memory, each touches
        assert c.cmd("touch ft:k 100") == b"TOUCHED"
        assert c.cmd("mg ft:k t") == b"HD t100"
