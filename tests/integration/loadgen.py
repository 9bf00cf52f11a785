"""A small pipelined load generator for anchorkv (and memcached) on loopback.

Used by test_memlimit.py (set-heavy load against -m 64) and by the soak test
(tests/soak/soak.sh: a mixed load with ranges and deletes, beside
memcaslap). Unlike memcaslap, it checks every reply and sends the range
commands.

Each connection is a thread that sends batches of requests in one write and
then reads and checks every reply of the batch. Every loop is bounded by a
deadline and a request count; nothing but the given host is ever contacted.

    python3 loadgen.py HOST PORT SECONDS MIX [CONNS] [SEED]
        MIX: "sets" or "mixed"; prints the counts as "name value" lines
"""
import random
import socket
import sys
import threading
import time

BATCH = 64
KEYS = 400000			# string keys "lg:<n>", and integer keys <n>


class Counts(dict):
    def add(self, name, n=1):
        self[name] = self.get(name, 0) + n


class Worker(threading.Thread):
    """One connection: batches of requests until the deadline."""

    def __init__(self, host, port, deadline, mix, seed, max_requests,
                 vmin, vmax):
        super().__init__(daemon=True)
        self.addr = (host, port)
        self.deadline = deadline
        self.mix = mix
        self.rng = random.Random(seed)
        self.max_requests = max_requests
        self.vmin, self.vmax = vmin, vmax
        self.counts = Counts()
        self.errors = []	# unexpected replies (at most a few kept)
        self.buf = b""
        self.sock = None
        self.values = bytes(self.rng.randrange(97, 123)
                            for _ in range(vmax + 64))

    # --- I/O -----------------------------------------------------------

    def fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("closed by the server")
        self.buf += chunk

    def line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                out, self.buf = self.buf[:i], self.buf[i + 2:]
                return out
            self.fill()

    def block(self, n):
        while len(self.buf) < n + 2:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n + 2:]
        return out

    def error(self, what):
        self.counts.add("errors")
        if len(self.errors) < 5:
            self.errors.append(what)

    # --- requests: each returns (bytes, reader) -------------------------

    def key(self):
        n = self.rng.randrange(KEYS)
        return b"%d" % n if self.rng.random() < 0.5 else b"lg:%d" % n

    def bound(self):
        k = self.key()
        return (b"[" if self.rng.random() < 0.5 else b"(") + k

    def req_set(self):
        n = self.rng.randrange(self.vmin, self.vmax + 1)
        off = self.rng.randrange(64)
        v = self.values[off:off + n]
        return (b"set %s 0 0 %d\r\n%s\r\n" % (self.key(), n, v),
                self.read_stored)

    def req_get(self):
        keys = b" ".join(self.key() for _ in range(self.rng.randrange(1, 8)))
        return b"get %s\r\n" % keys, self.read_values

    def req_delete(self):
        return b"delete %s\r\n" % self.key(), self.read_deleted

    def req_incr(self):
        return b"incr %s 1\r\n" % self.key(), self.read_incr

    def req_range(self):
        a, b = sorted([self.bound(), self.bound()], key=order_of_bound)
        kind = self.rng.choice([b"range", b"rrange", b"keys", b"count"])
        if kind == b"count":
            return b"count %s %s\r\n" % (a, b), self.read_count
        n = self.rng.choice([1, 10, 100, 200])
        reader = self.read_keys if kind == b"keys" else self.read_values
        return b"%s %s %s %d\r\n" % (kind, a, b, n), reader

    def req_delete_range(self):
        k = self.rng.randrange(KEYS)
        if self.rng.random() < 0.5:
            a, b = b"[%d" % k, b"(%d" % (k + self.rng.randrange(1, 50))
        else:
            a, b = b"[lg:%d" % k, b"(lg:%d~" % k	# k and its extensions
        return b"delete_range %s %s\r\n" % (a, b), self.read_deleted_n

    # --- replies ---------------------------------------------------------

    def read_stored(self):
        r = self.line()
        if r == b"STORED":
            self.counts.add("stored")
        else:
            self.error(b"set: " + r)

    def read_values(self):
        while True:
            r = self.line()
            if r == b"END":
                return
            p = r.split(b" ")
            if p[0] != b"VALUE" or len(p) != 4:
                self.error(b"values: " + r)
                raise ConnectionError("cannot resync after %r" % r)
            self.block(int(p[3]))
            self.counts.add("values")

    def read_keys(self):
        while True:
            r = self.line()
            if r == b"END":
                return
            if not r.startswith(b"KEY "):
                self.error(b"keys: " + r)
                raise ConnectionError("cannot resync after %r" % r)
            self.counts.add("keys")

    def read_deleted(self):
        r = self.line()
        if r not in (b"DELETED", b"NOT_FOUND"):
            self.error(b"delete: " + r)

    def read_incr(self):
        r = self.line()
        if not (r.isdigit() or r == b"NOT_FOUND" or r.startswith(
                b"CLIENT_ERROR cannot increment")):
            self.error(b"incr: " + r)

    def read_count(self):
        r = self.line()
        if not (r.startswith(b"COUNT ") and r[6:].isdigit()):
            self.error(b"count: " + r)

    def read_deleted_n(self):
        r = self.line()
        if not (r.startswith(b"DELETED ") and r[8:].isdigit()):
            self.error(b"delete_range: " + r)

    # --- the loop ----------------------------------------------------------

    def choose(self):
        if self.mix == "sets":
            return self.req_set() if self.rng.random() < 0.95 \
                else self.req_get()
        r = self.rng.random()
        if r < 0.45:
            return self.req_set()
        if r < 0.70:
            return self.req_get()
        if r < 0.80:
            return self.req_delete()
        if r < 0.85:
            return self.req_incr()
        if r < 0.97:
            return self.req_range()
        return self.req_delete_range()

    def run(self):
        try:
            self.sock = socket.create_connection(self.addr, timeout=30)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sent = 0
            while time.monotonic() < self.deadline and \
                    sent < self.max_requests:
                reqs = [self.choose() for _ in range(BATCH)]
                self.sock.sendall(b"".join(r[0] for r in reqs))
                for _, reader in reqs:
                    reader()
                sent += BATCH
                self.counts.add("requests", BATCH)
        except (OSError, ConnectionError) as e:
            self.error(("connection: %s" % e).encode())
        finally:
            if self.sock:
                self.sock.close()


def order_of_bound(b):
    k = b[1:]
    if k.isdigit() and (k == b"0" or k[:1] != b"0") and int(k) < 1 << 64:
        return (0, int(k), b"", b[:1] == b"(")
    return (1, 0, k, b[:1] == b"(")


def run(host, port, seconds, mix, conns=4, seed=1, max_requests=10 ** 9,
        vmin=100, vmax=4000):
    """Run the load; return (Counts summed over connections, errors)."""
    deadline = time.monotonic() + seconds
    ws = [Worker(host, port, deadline, mix, seed * 1000 + i, max_requests,
                 vmin, vmax) for i in range(conns)]
    for w in ws:
        w.start()
    for w in ws:
        w.join(seconds + 120)
    total, errors = Counts(), []
    for w in ws:
        for k, v in w.counts.items():
            total.add(k, v)
        errors += w.errors
        if w.is_alive():
            errors.append(b"worker still running after the deadline")
    return total, errors


def main(argv):
    host, port, seconds, mix = argv[1], int(argv[2]), float(argv[3]), argv[4]
    conns = int(argv[5]) if len(argv) > 5 else 4
    seed = int(argv[6]) if len(argv) > 6 else 1
    counts, errors = run(host, port, seconds, mix, conns, seed)
    for k in sorted(counts):
        print("%s %d" % (k, counts[k]))
    for e in errors:
        print("error %r" % e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
