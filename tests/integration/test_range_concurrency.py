"""Ranges under concurrent writes (anchorkv only).

A writer and a deleter (their own connections, their own threads) churn
"churn" keys that sit between "stable" keys while another connection pages
through the whole keyspace. Every stable key (present before the scan and
untouched during it) must be returned exactly once per pass, no key twice,
in keyspace order.
"""
import threading
import time

import pytest

import mc
from keyspace import order

pytestmark = pytest.mark.anchorkv_only

N = 8000		# keys per class; even ones are stable, odd ones churn


def stable_keys():
    return ([b"%d" % (100000 + i) for i in range(0, N, 2)]
            + [b"c:%05d" % i for i in range(0, N, 2)])


def churn_keys():
    return ([b"%d" % (100000 + i) for i in range(1, N, 2)]
            + [b"c:%05d" % i for i in range(1, N, 2)])


def churner(host, port, stop, errors, keys, op, counter):
    try:
        c = mc.Conn(host, port, timeout=30)
        i = 0
        while not stop.is_set() and i < 10 ** 7:
            batch = []
            for _ in range(50):
                key = keys[(i * 7919) % len(keys)]
                i += 1
                if op == "set":
                    batch.append(b"set %s 0 0 2 noreply\r\nch\r\n" % key)
                else:
                    batch.append(b"delete %s noreply\r\n" % key)
            c.send(b"".join(batch) + b"version\r\n")
            line = c.recv_line()
            if not line.startswith(b"VERSION "):
                errors.append("%s: %r" % (op, line))
                return
            counter[op] = counter.get(op, 0) + 50
        c.close()
    except Exception as e:	# reported by the main thread
        errors.append("%s: %r" % (op, e))


def scan(c, cmd, count):
    """Page through - + ; return the keys in the order returned."""
    reverse = cmd.startswith(b"rr")
    lo, hi = b"-", b"+"
    seen = []
    for _ in range(10000):
        c.send(b"%s %s %s %d\r\n" % (cmd, lo, hi, count))
        if cmd == b"keys":
            keys = c.read_keys()
        else:
            keys = [v[0] for v in c.read_values(with_cas=cmd.endswith(b"s"))]
        seen += keys
        if len(keys) < count:
            return seen
        if reverse:
            hi = b"(" + keys[-1]
        else:
            lo = b"(" + keys[-1]
    raise AssertionError("scan did not end")


def test_paging_during_writes(server):
    paging_during_writes(server)


def test_paging_during_writes_64_shards(start_server):
    """The same over 64 shards (the default is one per thread): every
    page is then a merge of many shards' walks."""
    paging_during_writes(start_server(["--shards", "64"]))


def paging_during_writes(server):
    c = server.conn(timeout=30)
    c.send(b"flush_all\r\n")
    c.expect(b"OK\r\n")
    stable = stable_keys()
    churn = churn_keys()
    batch = [b"set %s 0 0 2 noreply\r\nst\r\n" % k for k in stable]
    batch += [b"set %s 0 0 2 noreply\r\nch\r\n" % k for k in churn[::3]]
    c.send(b"".join(batch))
    assert c.cmd("version").startswith(b"VERSION ")

    stop = threading.Event()
    errors = []
    counter = {}
    threads = [
        threading.Thread(target=churner, args=(server.host, server.port,
                                               stop, errors, churn, op,
                                               counter))
        for op in ("set", "delete", "set", "delete")]
    for t in threads:
        t.start()
    try:
        passes = [(b"keys", 41), (b"range", 100), (b"rrange", 37),
                  (b"ranges", 250), (b"rranges", 64), (b"keys", 1000)]
        stable_set = set(stable)
        for cmd, count in passes:
            seen = scan(c, cmd, count)
            assert len(seen) == len(set(seen)), (cmd, "a key twice")
            want = sorted(seen, key=order)
            if cmd.startswith(b"rr"):
                want.reverse()
            assert seen == want, (cmd, "out of order")
            got_stable = [k for k in seen if k in stable_set]
            assert len(got_stable) == len(stable_set), (
                cmd, "stable keys missing",
                sorted(stable_set - set(got_stable), key=order)[:10])
            assert all(k in stable_set or k in churn for k in seen)
            # count agrees on the stable part at least
            c.send(b"count - +\r\n")
            line = c.recv_line()
            assert line.startswith(b"COUNT ")
            assert int(line[6:]) >= len(stable_set)
            assert not errors, errors
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    # the churn did run during the scans
    print("churn ops during the scans:", counter)
    assert counter.get("set", 0) > 0 and counter.get("delete", 0) > 0
    # and afterwards: every stable key, their values intact
    c.send(b"range [c:00000 [c:99999 10000\r\n")
    vals = c.read_values()
    assert [v[0] for v in vals if v[2] == b"st"] == stable[N // 2:]
    c.close()


def test_delete_range_during_scan(server):
    """delete_range of the churn-free upper half while a scan pages the
    lower half: the lower half is returned whole."""
    c = server.conn(timeout=30)
    c.send(b"flush_all\r\n")
    c.expect(b"OK\r\n")
    low = [b"%d" % i for i in range(4000)]
    high = [b"z%05d" % i for i in range(4000)]
    c.send(b"".join(b"set %s 0 0 1 noreply\r\nx\r\n" % k
                    for k in low + high))
    assert c.cmd("version").startswith(b"VERSION ")
    errors = []

    def killer():
        try:
            d = mc.Conn(server.host, server.port, timeout=30)
            for i in range(0, 4000, 100):
                d.send(b"delete_range [z%05d (z%05d\r\n" % (i, i + 100))
                line = d.recv_line()
                if line != b"DELETED 100":
                    errors.append(line)
                time.sleep(0.001)
            d.close()
        except Exception as e:
            errors.append(repr(e))

    t = threading.Thread(target=killer)
    t.start()
    try:
        lo = b"-"
        seen = []
        for _ in range(1000):
            c.send(b"keys %s [3999 50\r\n" % lo)
            keys = c.read_keys()
            seen += keys
            if len(keys) < 50:
                break
            lo = b"(" + keys[-1]
    finally:
        t.join(30)
    assert not errors, errors
    assert seen == low
    c.send(b"count - +\r\n")
    c.expect(b"COUNT 4000\r\n")
    c.close()
