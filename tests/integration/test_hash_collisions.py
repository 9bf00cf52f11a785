"""Hash flooding: the server's hash of string keys is keyed per process.

Two checks, neither of which times anything:

- test_same_keys_spread_differently_in_two_processes: two servers started
  alike are sent the same 512 keys, and "stats shards" shows how many landed
  in each of their 16 shards (the top bits of the key's hash pick the
  shard). An unkeyed hash, whatever its formula, places the keys the same
  way in both; with a random per-process key the two count vectors agree
  with a probability far below 1e-12. This fails for any unkeyed hash.
- test_siphash_keeps_chains_short: keys built to collide under one
  well-known unkeyed hash (Java's String.hashCode(): "Aa" and "BB" hash
  alike, so the 2^17 keys of 17 such blocks share one value) are stored,
  and "stats anchorkv"'s hash_max_chain (a full scan of every bucket) must
  stay within what random keys give (union bound, Poisson tail, 1e-6).
"""
import itertools
import math

import pytest

pytestmark = pytest.mark.anchorkv_only

N_KEYS = 100000


def colliding_keys(n):
    blocks = itertools.product((b"Aa", b"BB"), repeat=17)
    return [b"hc:" + b"".join(b) for b in itertools.islice(blocks, n)]


def max_chain_bound(n, m, p=1e-6):
    """Smallest k with m * P(Poisson(n / m) >= k) < p: for random keys the
    longest of m chains reaches k with probability below p."""
    lam = n / m
    k = 1
    while True:
        tail, term = 0.0, math.exp(-lam) * lam ** k / math.factorial(k)
        j = k
        while term > 1e-300 and j < k + 200:
            tail += term
            j += 1
            term *= lam / j
        if m * tail < p:
            return k
        k += 1


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


def test_siphash_keeps_chains_short(start_server):
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
    chain = int(st["hash_max_chain"])
    buckets = int(st["hash_buckets"])
    assert int(st["curr_str_items"]) == N_KEYS
    # while a shard grows its table, part of it is indexed by the old,
    # half-size array: count half the buckets then
    bound = max_chain_bound(N_KEYS, buckets // 2 if growing else buckets)
    print("hash_max_chain %d over %d buckets for %d colliding keys; bound "
          "for random keys %d; under 31*h+c they share one chain" % (
              chain, buckets, N_KEYS, bound))
    assert 1 <= chain <= bound, (chain, bound, buckets)
