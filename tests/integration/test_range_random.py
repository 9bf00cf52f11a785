"""Randomized differential test of the range commands (anchorkv only).

Random sets, deletes, delete_ranges and range commands of every kind go to
the daemon pipelined in batches; every answer is compared with
keyspace.Model. The seed is fixed (AKV_RANDOM_SEED to change it) and the
number of operations is AKV_RANDOM_OPS (default 40000). On a mismatch the
whole request history is written to a file whose path the failure names,
so that it can be replayed with nc.
"""
import os
import random

import pytest

from keyspace import Model, U64_MAX, inverted, order

pytestmark = pytest.mark.anchorkv_only

SEED = int(os.environ.get("AKV_RANDOM_SEED", "20240601"))
OPS = int(os.environ.get("AKV_RANDOM_OPS", "40000"))
BATCH = 200


def key_pool(rng):
    pool = set()
    pool.update(b"%d" % i for i in range(200))		# dense integers
    pool.update(b"%d" % rng.randrange(1 << 64) for _ in range(40))
    pool.update(b"%d" % (U64_MAX - i) for i in range(3))
    pool.update(b"%d" % ((1 << 32) + i) for i in range(3))
    # strings that look like integers but are not
    pool.update([b"007", b"00", b"-1", b"+5", b"18446744073709551616",
                 b"1e3", b"0x10", b"99999999999999999999"])
    # short strings over a tiny alphabet: many prefix relations
    for n in range(1, 4):
        for _ in range(40):
            pool.add(bytes(rng.choice(b"abc") for _ in range(n)))
    pool.update(b"key:%d" % i for i in range(100))
    pool.update([b"A", b"Z", b"~", b"\x80", b"\xff", b"\xff\xff",
                 b"z" * 250])
    return sorted(pool, key=order)


def rand_bound(rng, pool):
    r = rng.random()
    if r < 0.08:
        return b"-"
    if r < 0.16:
        return b"+"
    if r < 0.9:
        key = rng.choice(pool)
    else:	# a bound key that is never stored
        key = rng.choice([b"5a", b"aa0", b"b~", b"key:", b"1" * 21,
                          b"%d" % rng.randrange(1 << 64)])
    return (b"[" if rng.random() < 0.5 else b"(") + key


def rand_value(rng):
    n = rng.choice((0, 1, 3, 10, 40))
    v = bytes(rng.randrange(256) for _ in range(n))
    if rng.random() < 0.1:
        v += b"\r\nEND\r\n"
    return v


class Mismatch(AssertionError):
    pass


def test_random_differential(server, tmp_path):
    rng = random.Random(SEED)
    pool = key_pool(rng)
    model = Model()
    known_cas = {}		# key -> cas seen since its last store
    prev_cas = {}		# key -> its cas before its last store
    history = []
    c = server.conn(timeout=30)

    def fail(msg):
        path = tmp_path / "range-random-history.txt"
        path.write_bytes(b"".join(history))
        raise Mismatch("%s\n(seed %d; requests so far in %s)"
                       % (msg, SEED, path))

    c.send(b"flush_all\r\n")
    c.expect(b"OK\r\n")
    history.append(b"flush_all\r\n")
    done = 0
    kinds = {}
    while done < OPS:
        reqs = []
        checks = []	# (kind, request, expected)
        # cas bookkeeping, applied when the reply is read: index in checks
        # -> keys stored (their cas must change) or removed
        stored = {}
        dropped = {}
        for _ in range(min(BATCH, OPS - done)):
            r = rng.random()
            if r < 0.38:
                key = rng.choice(pool)
                v = rand_value(rng)
                flags = rng.choice((0, 1, rng.randrange(1 << 32)))
                if rng.random() < 0.5:
                    req = b"set %s %d 0 %d noreply\r\n%s\r\n" % (
                        key, flags, len(v), v)
                    checks.append(("none", req, None))
                else:
                    req = b"set %s %d 0 %d\r\n%s\r\n" % (key, flags, len(v),
                                                          v)
                    checks.append(("line", req, b"STORED"))
                model.set(key, flags, v)
                stored[len(checks) - 1] = [key]
            elif r < 0.48:
                key = rng.choice(pool)
                req = b"delete %s\r\n" % key
                hit = model.delete(key)
                dropped[len(checks)] = [key]
                checks.append(("line", req,
                               b"DELETED" if hit else b"NOT_FOUND"))
            elif r < 0.485:
                if rng.random() < 0.8:	# a narrow range
                    i = rng.randrange(len(pool) - 10)
                    lo = rng.choice(b"[(").to_bytes(1, "big") + pool[i]
                    hi = (rng.choice(b"[(").to_bytes(1, "big")
                          + pool[i + rng.randrange(1, 10)])
                else:
                    lo, hi = rand_bound(rng, pool), rand_bound(rng, pool)
                req = b"delete_range %s %s\r\n" % (lo, hi)
                if inverted(lo, hi):
                    checks.append(("line", req, b"CLIENT_ERROR bad range"))
                else:
                    dropped[len(checks)] = model.keys_in(lo, hi)
                    n = model.delete_range(lo, hi)
                    checks.append(("line", req, b"DELETED %d" % n))
            elif r < 0.55:
                lo, hi = rand_bound(rng, pool), rand_bound(rng, pool)
                req = b"count %s %s\r\n" % (lo, hi)
                if inverted(lo, hi):
                    checks.append(("line", req, b"CLIENT_ERROR bad range"))
                else:
                    checks.append(("line", req, b"COUNT %d"
                                   % len(model.keys_in(lo, hi))))
            else:
                cmd = rng.choice((b"range", b"ranges", b"rrange",
                                  b"rranges", b"keys"))
                lo, hi = rand_bound(rng, pool), rand_bound(rng, pool)
                # mostly from <= to
                if inverted(lo, hi) and rng.random() < 0.8:
                    lo, hi = hi, lo
                count = rng.choice((None, 1, 2, 5, 17, 50, 300))
                req = b"%s %s %s" % (cmd, lo, hi)
                if count is not None:
                    req += b" %d" % count
                req += b"\r\n"
                if inverted(lo, hi):
                    checks.append(("line", req, b"CLIENT_ERROR bad range"))
                else:
                    n = 100 if count is None else count
                    keys = model.range(lo, hi, n,
                                       reverse=cmd.startswith(b"rr"))
                    want = [(k,) + model.items[k] for k in keys]
                    checks.append((cmd.decode(), req, want))
            kinds[checks[-1][0]] = kinds.get(checks[-1][0], 0) + 1
            reqs.append(checks[-1][1])
            done += 1
        batch = b"".join(reqs)
        history.append(batch)
        c.send(batch)
        for i, (kind, req, want) in enumerate(checks):
            for key in stored.get(i, ()):
                if key in known_cas:
                    prev_cas[key] = known_cas.pop(key)
            for key in dropped.get(i, ()):
                known_cas.pop(key, None)
                prev_cas.pop(key, None)
            try:
                if kind == "none":
                    continue
                if kind == "line":
                    got = c.recv_line()
                    if got != want:
                        fail("%r: expected %r, got %r" % (req, want, got))
                elif kind == "keys":
                    got = c.read_keys()
                    if got != [w[0] for w in want]:
                        fail("%r: expected keys %r, got %r"
                             % (req, [w[0] for w in want], got))
                else:
                    with_cas = kind.endswith("s")
                    got = c.read_values(with_cas=with_cas)
                    if [g[:3] for g in got] != want:
                        fail("%r: expected %r, got %r" % (req, want, got))
                    if with_cas:
                        for g in got:
                            old = known_cas.get(g[0])
                            if old is not None and old != g[3]:
                                fail("%r: cas of %r changed from %d to %d "
                                     "without a store" % (req, g[0], old,
                                                         g[3]))
                            if old is None and prev_cas.get(g[0]) == g[3]:
                                fail("%r: cas of %r unchanged by a store"
                                     % (req, g[0]))
                            known_cas[g[0]] = g[3]
            except (OSError, AssertionError) as e:
                if isinstance(e, Mismatch):
                    raise
                fail("%r: %s" % (req, e))
    # the final keyspace, read in full
    c.send(b"count - +\r\n")
    assert c.recv_line() == b"COUNT %d" % len(model.items)
    c.send(b"keys - + 10000\r\n")
    assert c.read_keys() == model.keys_in(b"-", b"+")
    c.close()
    print("ops by kind:", kinds, "final keys:", len(model.items))
    assert kinds.get("keys", 0) > OPS // 20, kinds
