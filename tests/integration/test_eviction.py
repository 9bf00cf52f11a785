"""S3-FIFO eviction seen from a client (docs/architecture.md, "Eviction").

Keys read once must not push out keys in use; a key evicted unread and
stored again goes to main through the ghost; the queue stats add up. The
policy's exact decisions are tested against a model in
tests/unit/test_evict.c; the memory bound in test_memlimit.py.
"""
import pytest

pytestmark = pytest.mark.anchorkv_only

VALUE = b"v" * 100


def set_many(c, keys):
    """Pipelined sets with noreply, then a round trip to know they ran."""
    c.send(b"".join(b"set %s 0 0 %d noreply\r\n%s\r\n" %
                    (k.encode(), len(VALUE), VALUE) for k in keys))
    assert c.cmd("version").startswith(b"VERSION ")


def held(c, keys):
    """The keys held, read with mg and no fetch mark (u): a peek."""
    c.send(b"".join(b"mg %s u\r\n" % k.encode() for k in keys) +
           b"mn\r\n")
    out = set()
    for k in keys:
        line = c.recv_line()
        if line == b"HD":
            out.add(k)
        else:
            assert line == b"EN", line
    assert c.recv_line() == b"MN"
    return out


def test_one_hit_keys_do_not_push_out_the_hot_set(start_server):
    srv = start_server(["-m", "2", "-t", "2"])
    hot = ["hot:%d" % i for i in range(300)]
    with srv.conn() as c:
        set_many(c, hot)
        for _ in range(3):
            assert len(c.get(*hot)) == len(hot)
        # 4 MB of keys never read, twice the memory, and no read of the
        # hot set meanwhile: they pass through small and leave it, main's
        # hand does not move (a CLOCK over everything lost the hot set)
        for start in range(0, 40000, 500):
            set_many(c, ["scan:%d" % i for i in range(start, start + 500)])
        st = c.stats()
        kept = held(c, hot)
    assert int(st["evictions"]) > 20000
    assert int(st["evicted_unfetched"]) > 20000
    assert len(kept) == len(hot), sorted(set(hot) - kept)[:10]


def test_queue_stats_add_up_and_the_ghost_is_used(start_server):
    srv = start_server(["-m", "2", "-t", "2"])
    keys = ["k:%d" % i for i in range(30000)]
    with srv.conn() as c:
        set_many(c, keys)
        st = c.stats()
        assert int(st["evictions"]) > 10000
        assert int(st["ghost_entries"]) > 0
        assert int(st["small_queue_items"]) + int(st["main_queue_items"]) \
            == int(st["curr_items"])
        assert int(st["small_queue_bytes"]) <= int(st["bytes"])
        recent = held(c, keys[-15000:])
        gone = [k for k in keys[-15000:] if k not in recent]
        assert gone
        set_many(c, gone)		# asked for again: the ghost knows
        after = c.stats()
        own = c.stats("anchorkv")
    assert int(after["ghost_hits"]) > int(st["ghost_hits"])
    for name in ("small_queue_items", "small_queue_bytes",
                 "main_queue_items", "ghost_entries", "ghost_hits",
                 "ghost_to_small", "moves_to_main", "small_window_moves",
                 "small_rescues"):
        assert own[name].isdigit(), name


def test_evicted_active_counts_values_evicted_for_their_size(start_server):
    """Cache-aside over keys read alike, a third of their values 3,000
    bytes and the rest 100: main's hand keeps a small value read once but
    wants two reads of a large one (docs/architecture.md, "Main weighs a
    read against the size"), so large values read since the hand passed
    are evicted, and counted in evicted_active, which stayed 0 before."""
    import random
    rnd = random.Random(29)
    srv = start_server(["-m", "2", "-t", "1"])
    keys = ["sz:%d" % i for i in range(6000)]

    def size(k):
        return 3000 if int(k[3:]) % 3 == 0 else 100

    with srv.conn() as c:
        for _ in range(300):
            batch = [rnd.choice(keys) for _ in range(100)]
            found = c.get(*batch)
            missed = sorted({k for k in batch if k.encode() not in found})
            c.send(b"".join(b"set %s 0 0 %d noreply\r\n%s\r\n" %
                            (k.encode(), size(k), b"w" * size(k))
                            for k in missed))
        st = c.stats()
        items = c.stats("items")
        kept = held(c, keys)
    large = sum(1 for k in kept if size(k) == 3000)
    assert int(st["evictions"]) > 1000
    assert int(st["evicted_active"]) > 0
    assert items["items:1:evicted_active"] == st["evicted_active"]
    # per byte read alike: the store holds the small values
    assert len(kept) - large > 4 * large, (len(kept), large)
