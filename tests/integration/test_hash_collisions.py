"""Hash flooding: keys built to collide under an unkeyed hash stay spread.

The keys are "hc:" followed by 17 blocks, each "Aa" or "BB": under Java's
String.hashCode() (h = 31 * h + c, 32 bits, no key), "Aa" and "BB" hash
alike (65 * 31 + 97 == 66 * 31 + 66), so all 2^17 such keys of one length
share one hash, and a table indexed by it (any bucket mask) holds them in one
chain. The test computes that, then stores 100,000 of them and reads
hash_max_chain (a full scan of every bucket) from "stats anchorkv": under
anchorkv's SipHash with a per-process random key, the longest chain must
stay within what random keys give, a bound computed from the number of keys
and buckets (union bound, Poisson tail, 1e-6). No timing is measured.
"""
import itertools
import math

import pytest

pytestmark = pytest.mark.anchorkv_only

N_KEYS = 100000


def java_hash(data):
    h = 0
    for c in data:
        h = (31 * h + c) & 0xffffffff
    return h


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


def test_colliding_keys_collide_without_a_key():
    keys = colliding_keys(N_KEYS)
    assert len(set(keys)) == N_KEYS
    hashes = {java_hash(k) for k in keys}
    # one hash value: any table indexed by it has one chain of 100,000
    assert len(hashes) == 1
    mask = (1 << 17) - 1
    assert len({h & mask for h in hashes}) == 1


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
          "for random keys %d; unkeyed 31*h+c: %d" % (
              chain, buckets, N_KEYS, bound, N_KEYS))
    assert 1 <= chain <= bound, (chain, bound, buckets)
