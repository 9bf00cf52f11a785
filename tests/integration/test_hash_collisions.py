"""Hash flooding: the server's hash of string keys is keyed per process.

Two checks, neither of which times anything:

- test_same_keys_spread_differently_in_two_processes: two servers started
  alike are sent the same 512 keys, and "stats shards" shows how many landed
  in each of their 16 shards (the top bits of the key's hash pick the
  shard). An unkeyed hash, whatever its formula, places the keys the same
  way in both; with a random per-process key the two count vectors agree
  with a probability far below 1e-12. This fails for any unkeyed hash.
- test_siphash_keeps_probes_short: keys built to collide under one
  well-known unkeyed hash (Java's String.hashCode(): "Aa" and "BB" hash
  alike, so the 2^17 keys of 17 such blocks share one value) are stored,
  and "stats anchorkv"'s hash_max_probe (the longest lookup of a stored
  key, a full scan of the tables) must stay within what random keys give.
  The table probes linearly, so a lookup reads at most the run of used
  slots it lies in; a run of k slots that starts after an empty one holds
  only keys whose home is in it, so some k keys hashed into k slots:
  union bound over every slot, Poisson tail at the table's greatest load
  (3/4), 1e-6. Colliding keys under an unkeyed hash would share one run
  of 100,000.
"""
import itertools
import math

import pytest

pytestmark = pytest.mark.anchorkv_only

N_KEYS = 100000


def colliding_keys(n):
    blocks = itertools.product((b"Aa", b"BB"), repeat=17)
    return [b"hc:" + b"".join(b) for b in itertools.islice(blocks, n)]


def poisson_tail(lam, k):
    """P(Poisson(lam) >= k)."""
    tail = 0.0
    term = math.exp(-lam + k * math.log(lam) - math.lgamma(k + 1))
    j = k
    while term > 1e-300 and j < k + 5000:
        tail += term
        j += 1
        term *= lam / j
    return tail


def max_probe_bound(m, load=0.75, p=1e-6):
    """Smallest k with m * P(Poisson(k * load) >= k) < p: for random keys
    no run of used slots in m slots at that load reaches k, but with
    probability below p."""
    k = 1
    while m * poisson_tail(k * load, k) >= p:
        k += 1
    return k


def shard_counts(srv, keys):
    with srv.conn(timeout=30) as c:
        c.send(b"".join(b"set %s 0 0 1 noreply\r\nv\r\n" % k for k in keys))
        assert c.cmd("count - +") == b"COUNT %d" % len(keys)
        st = c.stats("shards")
    counts = [int(st["shard:%d:str_items" % i]) for i in range(16)]
    assert "shard:16:str_items" not in st
    assert sum(counts) == len(keys)
    return counts


def test_same_keys_spread_differently_in_two_processes(start_server):
    keys = [b"spread:%d" % i for i in range(512)]
    args = ["-t", "1", "--shards", "16"]
    first = shard_counts(start_server(args), keys)
    second = shard_counts(start_server(args), keys)
    print("keys per shard: %s and %s" % (first, second))
    # both spread the keys (no shard holds most of them) ...
    assert max(first) < 128 and max(second) < 128, (first, second)
    # ... but not the same way: the hash is keyed per process
    assert first != second, first


def test_siphash_keeps_probes_short(start_server):
    srv = start_server(["-m", "256"])
    keys = colliding_keys(N_KEYS)
    with srv.conn(timeout=60) as c:
        for i in range(0, N_KEYS, 5000):
            part = keys[i:i + 5000]
            c.send(b"".join(b"set %s 0 0 1 noreply\r\nv\r\n" % k
                            for k in part))
        assert c.cmd("count [hc: (hc;") == b"COUNT %d" % N_KEYS
        st = c.stats("anchorkv")
        growing = c.stats()["hash_is_expanding"] != "0"
    probe = int(st["hash_max_probe"])
    slots = int(st["hash_buckets"])
    assert int(st["curr_str_items"]) == N_KEYS
    # while a shard grows its table, its old, half-size array counts too
    bound = max_probe_bound(slots + slots // 2 if growing else slots)
    print("hash_max_probe %d over %d slots for %d colliding keys; bound "
          "for random keys %d; under 31*h+c they share one run" % (
              probe, slots, N_KEYS, bound))
    assert 1 <= probe <= bound, (probe, bound, slots)
