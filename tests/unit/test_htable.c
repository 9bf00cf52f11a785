// SPDX-License-Identifier: MIT
/*
 * test_htable.c - the keyed hash (core/hash.c) and the incrementally growing
 * hash table (core/htable.c).
 *
 * The contract checked here:
 *   - hash_key() is SipHash-1-3: under the all-zero key it gives the
 *     outputs of the SipHash reference implementation for messages
 *     00 01 02 .. of length 0..37 (as published with OCaml's test suite);
 *     the same code with 2-4 rounds (hash_sip()) gives the published
 *     SipHash-2-4 vectors for key 00..0f and lengths 0..63, and agrees with
 *     libsodium's crypto_shorthash() on random keys and messages; it is a
 *     function of (seed, bytes) only; another seed gives other hashes;
 *     1,000,000 keys spread evenly over 2^16 buckets (chi-square, max chain);
 *   - htable: every entry is found through htable_bucket() in every state,
 *     before, during and after a rehash; count is exact; a rehash moves only
 *     the buckets the caller asks for, one at a time; the old array comes
 *     back exactly once, when the last old bucket has moved; htable_memory()
 *     and htable_max_chain() agree with what the test computes itself;
 *   - a randomized run of 1,000,000 set/replace/delete/lookup operations
 *     against a reference model (an array indexed by key number), growing
 *     the table from 2 buckets many times, with a few buckets moved per
 *     write as the store does.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "alloc.h"
#include "check.h"
#include "hash.h"
#include "htable.h"

/* ---- a tiny deterministic generator (xorshift64*) ---- */

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static uint32_t rng_below(uint32_t n)
{
	return (uint32_t)((rng_next() >> 32) % n);
}

static const uint8_t test_seed[HASH_SEED_BYTES] = {
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
	0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
};

/* ---- hash ---- */

/*
 * SipHash-2-4 reference outputs (Aumasson and Bernstein, the paper's
 * appendix and the reference implementation's vectors_sip64), key 00..0f,
 * message i bytes 00 01 .. i-1, each output read as a little-endian word.
 */
static const uint64_t siphash24_vectors[64] = {
	0x726fdb47dd0e0e31ULL, 0x74f839c593dc67fdULL, 0x0d6c8009d9a94f5aULL,
	0x85676696d7fb7e2dULL, 0xcf2794e0277187b7ULL, 0x18765564cd99a68dULL,
	0xcbc9466e58fee3ceULL, 0xab0200f58b01d137ULL, 0x93f5f5799a932462ULL,
	0x9e0082df0ba9e4b0ULL, 0x7a5dbbc594ddb9f3ULL, 0xf4b32f46226bada7ULL,
	0x751e8fbc860ee5fbULL, 0x14ea5627c0843d90ULL, 0xf723ca908e7af2eeULL,
	0xa129ca6149be45e5ULL, 0x3f2acc7f57c29bdbULL, 0x699ae9f52cbe4794ULL,
	0x4bc1b3f0968dd39cULL, 0xbb6dc91da77961bdULL, 0xbed65cf21aa2ee98ULL,
	0xd0f2cbb02e3b67c7ULL, 0x93536795e3a33e88ULL, 0xa80c038ccd5ccec8ULL,
	0xb8ad50c6f649af94ULL, 0xbce192de8a85b8eaULL, 0x17d835b85bbb15f3ULL,
	0x2f2e6163076bcfadULL, 0xde4daaaca71dc9a5ULL, 0xa6a2506687956571ULL,
	0xad87a3535c49ef28ULL, 0x32d892fad841c342ULL, 0x7127512f72f27cceULL,
	0xa7f32346f95978e3ULL, 0x12e0b01abb051238ULL, 0x15e034d40fa197aeULL,
	0x314dffbe0815a3b4ULL, 0x027990f029623981ULL, 0xcadcd4e59ef40c4dULL,
	0x9abfd8766a33735cULL, 0x0e3ea96b5304a7d0ULL, 0xad0c42d6fc585992ULL,
	0x187306c89bc215a9ULL, 0xd4a60abcf3792b95ULL, 0xf935451de4f21df2ULL,
	0xa9538f0419755787ULL, 0xdb9acddff56ca510ULL, 0xd06c98cd5c0975ebULL,
	0xe612a3cb9ecba951ULL, 0xc766e62cfcadaf96ULL, 0xee64435a9752fe72ULL,
	0xa192d576b245165aULL, 0x0a8787bf8ecb74b2ULL, 0x81b3e73d20b49b6fULL,
	0x7fa8220ba3b2eceaULL, 0x245731c13ca42499ULL, 0xb78dbfaf3a8d83bdULL,
	0xea1ad565322a1a0bULL, 0x60e61c23a3795013ULL, 0x6606d7e446282b93ULL,
	0x6ca4ecb15c5f91e1ULL, 0x9f626da15c9625f3ULL, 0xe51b38608ef25f57ULL,
	0x958a324ceb064572ULL,
};

/*
 * SipHash-1-3 outputs of the reference implementation, key all zero,
 * message i bytes 00 01 .. i-1 (the table OCaml's runtime tests its string
 * hash against, testsuite/tests/hash/sip13.ml).
 */
static const uint64_t siphash13_vectors[38] = {
	0xd1fba762150c532cULL, 0x68a914128e01e473ULL, 0x010bac45c41e3669ULL,
	0x4d4c9a4a8ef6e0adULL, 0x7cc43f98813e4dbdULL, 0x5abe2169dff36275ULL,
	0xe3c25f87624f1cdbULL, 0x2f098ab0c751325aULL, 0xead411e67ebe2eeaULL,
	0x75927f9d95124362ULL, 0xaf9f77a65ab51a1dULL, 0xfe64ce8b6617fcffULL,
	0xa6baf4fb0f9fe1c2ULL, 0xa0cf3211850f8e0dULL, 0x7f86049379fbfe67ULL,
	0xf30eb725bb91c9eaULL, 0x8972188433a5c5b7ULL, 0x4883c49a2c009c1dULL,
	0xadc2c0b63044067dULL, 0x091f4a3329f87d19ULL, 0x639e355ae68c0100ULL,
	0xb17bef2cb5213239ULL, 0xf8aeb1066236ccfeULL, 0x37332b1389daa4ffULL,
	0x31185a47af932f3aULL, 0xebf352e82ae23e2fULL, 0xed36ff242fe478b2ULL,
	0x2454d97d299299dfULL, 0x8cd57fe8130d0ac7ULL, 0xbe98eb2faf0a0e85ULL,
	0xd427c34ee09470c6ULL, 0x169739443111d49bULL, 0x31ef8061c910629bULL,
	0x7fb71d24dfa4c9f6ULL, 0x92771f49e836d389ULL, 0x3c393cf6f0853bc3ULL,
	0xac77921fcc642bd3ULL, 0x422a9751192ff266ULL,
};

static void test_hash_reference_vectors(void)
{
	static const uint8_t zero_seed[HASH_SEED_BYTES];
	uint8_t msg[64];
	unsigned int i;

	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)i;
	hash_set_seed(zero_seed);
	for (i = 0; i < sizeof(siphash13_vectors) / sizeof(siphash13_vectors[0]); i++) {
		uint64_t h = hash_key(msg, i);

		CHECK_MSG(h == siphash13_vectors[i],
			  "1-3 len %u: got %016" PRIx64 ", want %016" PRIx64,
			  i, h, siphash13_vectors[i]);
		CHECK(hash_sip(zero_seed, msg, i, 1, 3) == h);
	}
	for (i = 0; i < 64; i++) {
		uint64_t h = hash_sip(test_seed, msg, i, 2, 4);

		CHECK_MSG(h == siphash24_vectors[i],
			  "2-4 len %u: got %016" PRIx64 ", want %016" PRIx64,
			  i, h, siphash24_vectors[i]);
	}
}

/*
 * Random seeds and messages (every length up to past the key limit):
 * hash_sip() with 2-4 rounds is libsodium's SipHash-2-4, and hash_key()
 * under the same seed is hash_sip() with 1-3 rounds.
 */
static void test_hash_against_libsodium(void)
{
	unsigned long bad24 = 0, bad13 = 0;
	uint8_t seed[HASH_SEED_BYTES];
	unsigned char msg[300], out[crypto_shorthash_BYTES];
	unsigned int round, i;

	for (round = 0; round < 20000; round++) {
		size_t len = round % sizeof(msg);
		uint64_t want = 0;

		for (i = 0; i < HASH_SEED_BYTES; i++)
			seed[i] = (uint8_t)rng_next();
		for (i = 0; i < len; i++)
			msg[i] = (unsigned char)rng_next();
		crypto_shorthash(out, msg, len, seed);
		for (i = 0; i < sizeof(out); i++)	/* little-endian */
			want |= (uint64_t)out[i] << (8 * i);
		bad24 += hash_sip(seed, msg, len, 2, 4) != want;
		hash_set_seed(seed);
		bad13 += hash_key(msg, len) != hash_sip(seed, msg, len, 1, 3);
	}
	CHECK_MSG(!bad24, "%lu of 20000 differ from crypto_shorthash", bad24);
	CHECK_MSG(!bad13, "%lu of 20000: hash_key is not hash_sip 1-3", bad13);
}

static void test_hash_is_a_function_of_seed_and_bytes(void)
{
	static const uint8_t other_seed[HASH_SEED_BYTES] = {
		0xff, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
		0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	};
	uint64_t first[251], again[251], other[251];
	char a[250], b[250];
	unsigned int i, j, distinct = 1, differ = 0;

	for (i = 0; i < sizeof(a); i++)
		a[i] = (char)('!' + i % 90);
	memcpy(b, a, sizeof(a));	/* same bytes at another address */

	/* every length 0..250 (the key limit), twice, then under another seed */
	hash_set_seed(test_seed);
	for (i = 0; i <= 250; i++) {
		first[i] = hash_key(a, i);
		again[i] = hash_key(b, i);
	}
	hash_set_seed(other_seed);
	for (i = 0; i <= 250; i++)
		other[i] = hash_key(a, i);

	for (i = 0; i <= 250; i++) {
		CHECK_MSG(first[i] == again[i], "length %u not repeatable", i);
		if (first[i] != other[i])
			differ++;
	}
	/* a one-bit change of the seed changes every one of them */
	CHECK_MSG(differ == 251, "seed change left %u of 251 unchanged",
		  251 - differ);

	/* the 251 prefixes hash to 251 different values */
	for (i = 1; i <= 250; i++) {
		for (j = 0; j < i && first[j] != first[i]; j++)
			;
		distinct += j == i;
	}
	CHECK_MSG(distinct == 251, "only %u distinct hashes of 251 prefixes",
		  distinct);

	/* a one-bit change of the message changes the hash */
	hash_set_seed(test_seed);
	b[100] ^= 0x10;
	CHECK(hash_key(b, 250) != first[250]);
	CHECK(hash_key(b, 100) == first[100]);	/* bytes past len unread */
}

static void test_hash_init_draws_a_random_seed(void)
{
	static const char key[] = "anchorkv";
	uint64_t h1, h2;

	CHECK(hash_init() == 0);
	h1 = hash_key(key, sizeof(key) - 1);
	CHECK(hash_init() == 0);
	h2 = hash_key(key, sizeof(key) - 1);
	/* two draws of 128 random bits agree on this key with p = 2^-64 */
	CHECK(h1 != h2);
	hash_set_seed(test_seed);
	CHECK(hash_key(key, sizeof(key) - 1) != h2);
}

/*
 * 1,000,000 keys "key:<n>" (as memtier-like clients name them) into 2^16
 * buckets, by the low and by the high 16 bits. Uniform hashing makes the
 * bucket sizes Poisson(15.26): the chi-square statistic is then about
 * 65535 +- 362, and the expected number of buckets holding more than 45
 * keys is 3.5e-5.
 */
static void test_hash_distribution(void)
{
	enum { NBITS = 16, NKEYS = 1000000 };
	uint32_t *lo = ak_calloc(1u << NBITS, sizeof(*lo));
	uint32_t *hi = ak_calloc(1u << NBITS, sizeof(*hi));
	double expect = (double)NKEYS / (1u << NBITS), chi_lo = 0, chi_hi = 0;
	double df = (1u << NBITS) - 1, sd = 362.0;
	uint32_t max_lo = 0, max_hi = 0;
	char key[32];
	unsigned int i;

	CHECK(lo && hi);
	if (!lo || !hi)
		goto out;
	hash_set_seed(test_seed);
	for (i = 0; i < NKEYS; i++) {
		int n = snprintf(key, sizeof(key), "key:%u", i);
		uint64_t h = hash_key(key, (size_t)n);

		lo[h & ((1u << NBITS) - 1)]++;
		hi[h >> (64 - NBITS)]++;
	}
	for (i = 0; i < 1u << NBITS; i++) {
		chi_lo += (lo[i] - expect) * (lo[i] - expect) / expect;
		chi_hi += (hi[i] - expect) * (hi[i] - expect) / expect;
		if (lo[i] > max_lo)
			max_lo = lo[i];
		if (hi[i] > max_hi)
			max_hi = hi[i];
	}
	CHECK_MSG(chi_lo > df - 6 * sd && chi_lo < df + 6 * sd,
		  "low bits chi-square %.0f, df %.0f", chi_lo, df);
	CHECK_MSG(chi_hi > df - 6 * sd && chi_hi < df + 6 * sd,
		  "high bits chi-square %.0f, df %.0f", chi_hi, df);
	CHECK_MSG(max_lo <= 45, "low bits: a bucket of %u keys", max_lo);
	CHECK_MSG(max_hi <= 45, "high bits: a bucket of %u keys", max_hi);
	printf("hash: 1e6 keys in 2^16 buckets: chi-square %.0f/%.0f (df %.0f), "
	       "max chain %u/%u\n", chi_lo, chi_hi, df, max_lo, max_hi);
out:
	ak_free(lo);
	ak_free(hi);
}
/* ---- htable: the user's objects and loops ---- */

struct elem {
	uint64_t hv;		/* as the table was told it */
	uint32_t id;		/* the model's index */
	uint32_t version;	/* bumped by each replace */
	uint8_t nkey;
	char key[40];
};

/*
 * How the elements' hashes are made: the key's hash itself, or with the
 * home bits squeezed onto a few values (@crowd > 0: the high half keeps
 * only multiples of 2^crowd), so that runs of used slots grow long and
 * wrap around the end of the array.
 */
static unsigned int crowd;

static uint64_t hv_of(const char *key, size_t n)
{
	uint64_t h = hash_key(key, n);

	if (crowd)
		h &= ~((((uint64_t)1 << crowd) - 1) << 32);
	return h;
}

static size_t key_of(uint32_t id, char *buf)
{
	/* lengths 2..27, so that lengths and contents both vary */
	return (size_t)sprintf(buf, "%u:%.*s", id, (int)(id % 17),
			       "abcdefghijklmnopq");
}

static struct elem *elem_new(uint32_t id, uint32_t version)
{
	struct elem *e = ak_malloc(sizeof(*e));

	if (!e)
		return NULL;
	e->id = id;
	e->version = version;
	e->nkey = (uint8_t)key_of(id, e->key);
	e->hv = hv_of(e->key, e->nkey);
	return e;
}

/* The user's lookup loop: the table names the candidates. */
static struct elem *elem_lookup(const struct htable *ht, const char *key,
				size_t nkey, uint64_t hv)
{
	struct htable_probe p;
	struct elem *e;

	for (e = htable_first(ht, hv, &p); e; e = htable_next(ht, &p))
		if (e->nkey == nkey && !memcmp(e->key, key, nkey))
			return e;
	return NULL;
}

static struct elem *lookup_id(const struct htable *ht, uint32_t id)
{
	char key[40];
	size_t n = key_of(id, key);

	return elem_lookup(ht, key, n, hv_of(key, n));
}

/*
 * Which array holds @e: 0 the (new) array, 1 the old one, -1 neither; a
 * plain scan of the run from its home in each, not the table's probe.
 */
static int array_of(const struct htable *ht, const struct elem *e)
{
	uint64_t mask = htable_size(ht->bits) - 1;
	uint64_t i = htable_home(e->hv, ht->bits), n;

	for (n = 0; n <= mask && ht->slots[i]; n++, i = (i + 1) & mask)
		if (htable_ptr(ht->slots[i]) == e)
			return 0;
	if (!ht->old)
		return -1;
	mask >>= 1;
	for (i = 0; i <= mask; i++)
		if (htable_used(ht->old[i]) && htable_ptr(ht->old[i]) == e)
			return 1;
	return -1;
}

/*
 * The user's move loop, as the store writes it: at most @budget old slots.
 * Each moved entry is recorded in @moved (if not NULL, room for
 * @nmoved_max); *@nmoved counts them all. Returns the old array if the
 * growth finished.
 */
static uint64_t *rehash_some(struct htable *ht, unsigned int budget,
			     struct elem **moved, size_t nmoved_max,
			     size_t *nmoved)
{
	uint64_t *done = NULL;
	struct elem *e;

	*nmoved = 0;
	while (budget-- && htable_rehashing(ht)) {
		e = htable_rehash_entry(ht);
		if (e) {
			if (moved && *nmoved < nmoved_max)
				moved[*nmoved] = e;
			(*nmoved)++;
		}
		done = htable_rehash_advance(ht, e ? e->hv : 0);
	}
	return done;
}

static void free_all(struct htable *ht)
{
	uint64_t i;

	for (i = 0; i < htable_size(ht->bits); i++)
		if (htable_used(ht->slots[i]))
			ak_free(htable_ptr(ht->slots[i]));
	for (i = 0; ht->old && i < htable_size(ht->bits - 1); i++)
		if (htable_used(ht->old[i]))
			ak_free(htable_ptr(ht->old[i]));
}

/*
 * Check one array the way the test reads linear probing: every used word
 * carries its element's home slot in its tag, every slot from the home up
 * to the word is taken (in the old array: used, a mark, or one that has
 * moved), and the array keeps an empty slot. Adds each element's probe
 * length (slots from its home, its own included) to *@max and counts them.
 */
static unsigned int check_array(const uint64_t *arr, unsigned int bits,
				uint64_t moved, bool old, unsigned int *max,
				uint64_t *n)
{
	uint64_t size = htable_size(bits), mask = size - 1, i, j, home, w;
	unsigned int bad = 0, empty = 0;
	struct elem *e;

	for (i = 0; i < size; i++) {
		w = arr[i];
		if (i < moved) {
			bad += w != 0;
			continue;
		}
		if (!w) {
			empty++;
			continue;
		}
		if (w == HTABLE_GONE) {
			bad += !old;
			continue;
		}
		e = htable_ptr(w);
		home = htable_home(e->hv, bits);
		bad += htable_word_home(w, i, bits) != home;
		bad += (w & ~HTABLE_PTR_MASK) != htable_tag(e->hv);
		for (j = home; j != i; j = (j + 1) & mask)
			bad += !(arr[j] || (old && j < moved));
		if (((i - home) & mask) + 1 > *max)
			*max = (unsigned int)(((i - home) & mask) + 1);
		(*n)++;
	}
	bad += !old && !empty;
	return bad;
}

/* ---- htable: directed tests ---- */

static void test_htable_slots_alloc(void)
{
	uint64_t *a;
	unsigned int i;

	CHECK(htable_slots_alloc(HTABLE_MIN_BITS - 1) == NULL);
	CHECK(htable_slots_alloc(HTABLE_MAX_BITS + 1) == NULL);

	a = htable_slots_alloc(10);
	CHECK(a != NULL);
	if (a) {
		for (i = 0; i < 1024; i++)
			CHECK(a[i] == 0);
		CHECK(ak_usable_size(a) >= 1024 * sizeof(*a));
		ak_free(a);
	}

	ak_alloc_fail_after(0);
	CHECK(htable_slots_alloc(4) == NULL);
	ak_alloc_fail_after(-1);
}

/* An element whose home slot is @home, whatever its key. */
static struct elem *elem_at(uint32_t id, uint64_t home)
{
	struct elem *e = elem_new(id, 0);

	if (e)
		e->hv = home << 32 | (e->hv & 0xffffffffu);
	return e;
}

/*
 * A run of used slots that wraps: homes 6, 6, 7, 7, 0 in 8 slots lie in
 * slots 6, 7, 0, 1, 2. Deleting the first moves each later one back as
 * far as its home lets it (algorithm R), with no mark left behind.
 */
static void test_htable_delete_moves_entries_back(void)
{
	static const uint64_t homes[5] = { 6, 6, 7, 7, 0 };
	static const uint64_t slots[5] = { 6, 7, 0, 1, 2 };
	struct elem *e[5];
	struct htable ht;
	uint64_t *a = htable_slots_alloc(3);
	unsigned int i, max = 0;
	uint64_t n = 0;

	CHECK(a != NULL);
	if (!a)
		return;
	htable_init(&ht, a, 3);
	hash_set_seed(test_seed);
	for (i = 0; i < 5; i++) {
		e[i] = elem_at(i, homes[i]);
		CHECK(e[i] && htable_add(&ht, e[i], e[i]->hv) == 0);
		if (!e[i])
			return;
	}
	for (i = 0; i < 5; i++)
		CHECK_MSG(htable_slot_entry(&ht, slots[i]) == e[i],
			  "entry %u not in slot %" PRIu64, i, slots[i]);
	CHECK(htable_max_probe(&ht) == 3);	/* e[3]: 7, 0, 1 */
	CHECK(!htable_wants_grow(&ht));		/* 5 of 8 */

	/* e[0] leaves slot 6: e[1] (home 6) moves into it, then e[2]
	 * (home 7) into 7, e[3] (home 7) into 0; e[4] (home 0) into 1 */
	CHECK(htable_del(&ht, e[0], e[0]->hv) == 6);
	CHECK(htable_slot_entry(&ht, 6) == e[1]);
	CHECK(htable_slot_entry(&ht, 7) == e[2]);
	CHECK(htable_slot_entry(&ht, 0) == e[3]);
	CHECK(htable_slot_entry(&ht, 1) == e[4]);
	CHECK(ht.slots[2] == 0 && ht.count == 4);
	CHECK(lookup_id(&ht, 0) == NULL);
	for (i = 1; i < 5; i++)
		CHECK(elem_lookup(&ht, e[i]->key, e[i]->nkey, e[i]->hv) == e[i]);
	CHECK(check_array(ht.slots, 3, 0, false, &max, &n) == 0 && n == 4);
	ak_free(e[0]);

	/* e[3] (home 7, in 0) leaves: e[4] (home 0, in 1) moves to 0 */
	CHECK(htable_del(&ht, e[3], e[3]->hv) == 0);
	CHECK(htable_slot_entry(&ht, 0) == e[4] && ht.slots[1] == 0);
	ak_free(e[3]);
	/* e[2] (home 7, in 7) leaves: e[4] (home 0) stays in 0 */
	CHECK(htable_del(&ht, e[2], e[2]->hv) == 7);
	CHECK(htable_slot_entry(&ht, 0) == e[4] && ht.slots[7] == 0);
	ak_free(e[2]);
	CHECK(htable_max_probe(&ht) == 1);

	/* replace keeps the slot and the tag */
	{
		struct elem *r = elem_new(1, 1);
		uint64_t w = ht.slots[6];

		r->hv = e[1]->hv;
		htable_replace(&ht, e[1], r, e[1]->hv);
		CHECK(htable_slot_entry(&ht, 6) == r && ht.count == 2);
		CHECK((ht.slots[6] & ~HTABLE_PTR_MASK) == (w & ~HTABLE_PTR_MASK));
		ak_free(e[1]);
		e[1] = r;
	}
	free_all(&ht);
	htable_destroy(&ht);
}

/* A full array and a run of 2^16 take no more entries; nothing changes. */
static void test_htable_add_refuses_when_full(void)
{
	enum { N = 1 << 16 };
	struct elem **e = ak_calloc(N + 1, sizeof(*e));
	uint64_t *a = htable_slots_alloc(3), *big = htable_slots_alloc(17);
	struct htable ht;
	unsigned int i, ok = 0;

	CHECK(e && a && big);
	if (!e || !a || !big)
		goto out;
	htable_init(&ht, a, 3);
	for (i = 0; i < 8; i++) {
		e[i] = elem_at(i, i % 8);
		ok += htable_add(&ht, e[i], e[i]->hv) == 0;
	}
	/* 7 taken of 8: one slot stays empty */
	CHECK_MSG(ok == 7 && ht.count == 7, "%u added, count %" PRIu64, ok,
		  ht.count);
	CHECK(elem_lookup(&ht, e[6]->key, e[6]->nkey, e[6]->hv) == e[6] &&
	      elem_lookup(&ht, e[7]->key, e[7]->nkey, e[7]->hv) == NULL);
	for (i = 0; i < 8; i++)
		ak_free(e[i]);
	htable_destroy(&ht);

	/* 2^17 slots, every entry's home 5: the 2^16th lies 2^16 - 1 slots
	 * after it, the next would lie 2^16 after and is refused */
	htable_init(&ht, big, 17);
	ok = 0;
	for (i = 0; i <= N; i++) {
		e[i] = elem_at(i, 5);
		if (!e[i])
			break;
		ok += htable_add(&ht, e[i], e[i]->hv) == 0;
	}
	CHECK_MSG(ok == N && ht.count == N, "%u added", ok);
	CHECK(htable_max_probe(&ht) == N);
	CHECK(elem_lookup(&ht, e[N - 1]->key, e[N - 1]->nkey, e[N - 1]->hv) ==
	      e[N - 1]);
	CHECK(elem_lookup(&ht, e[N]->key, e[N]->nkey, e[N]->hv) == NULL);
	/* deleting the first moves the whole run back by one */
	CHECK(htable_del(&ht, e[0], e[0]->hv) == 5);
	CHECK(htable_slot_entry(&ht, 5) == e[1] &&
	      htable_slot_entry(&ht, 5 + N - 2) == e[N - 1] &&
	      ht.slots[5 + N - 1] == 0);
	for (i = 0; i <= N; i++)
		ak_free(e[i]);
	htable_destroy(&ht);
	a = big = NULL;
out:
	ak_free(a);
	ak_free(big);
	ak_free(e);
}

/* A walk of every slot number sees each of @e once and nothing else. */
static bool slot_walk_sees_each_once(const struct htable *ht,
				     struct elem **e, unsigned int n)
{
	unsigned int seen[64] = { 0 }, i, total = 0;
	struct elem *x;
	uint64_t j;

	for (j = 0; j < htable_slots_n(ht); j++) {
		x = htable_slot_entry(ht, j);
		if (!x)
			continue;
		for (i = 0; i < n; i++)
			if (e[i] == x)
				seen[i]++;
		total++;
	}
	for (i = 0; i < n; i++)
		if (e[i] && seen[i] != 1)
			return false;
	return total <= n;
}

/*
 * 32 slots, 24 entries (the growth point: 3/4); grow by hand into 64 and stop
 * halfway: old slots 0-15 have moved, 16-31 have not. Every entry is
 * found, deletes in the old array leave marks that lookups pass, the old
 * array comes back exactly once.
 */
static void test_htable_halfway_rehash(void)
{
	enum { N = 24 };
	struct elem *e[N];
	struct htable ht;
	uint64_t *a32, *a64, *extra, *done;
	unsigned int i, in_old = 0, in_new = 0, returned = 0, max = 0;
	size_t nmoved;
	uint64_t n;

	hash_set_seed(test_seed);
	crowd = 0;
	a32 = htable_slots_alloc(5);
	a64 = htable_slots_alloc(6);
	extra = htable_slots_alloc(6);
	CHECK(a32 && a64 && extra);
	if (!a32 || !a64 || !extra) {
		ak_free(a32);
		ak_free(a64);
		ak_free(extra);
		return;
	}
	htable_init(&ht, a32, 5);
	CHECK(!htable_rehashing(&ht));
	CHECK(htable_max_probe(&ht) == 0);

	for (i = 0; i < N; i++) {
		e[i] = elem_new(i, 0);
		CHECK(htable_add(&ht, e[i], e[i]->hv) == 0);
		CHECK(htable_wants_grow(&ht) == (i + 1 == N));
	}
	CHECK(ht.count == N);
	CHECK(htable_slots_n(&ht) == 32);
	CHECK(slot_walk_sees_each_once(&ht, e, N));

	CHECK(htable_grow_start(&ht, a64) == 0);
	CHECK(htable_rehashing(&ht) && ht.bits == 6 && ht.old == a32);
	CHECK(!htable_wants_grow(&ht));
	CHECK(htable_grow_start(&ht, extra) == -EBUSY);
	ak_free(extra);		/* not taken: ours to free */
	CHECK(htable_memory(&ht) >= (32 + 64) * sizeof(uint64_t));
	/* the old array first in the slot numbers, as it was */
	CHECK(htable_slots_n(&ht) == 32 + 64);
	CHECK(slot_walk_sees_each_once(&ht, e, N));

	for (i = 0; i < N; i++)
		CHECK(lookup_id(&ht, i) == e[i]);

	done = rehash_some(&ht, 16, NULL, 0, &nmoved);
	CHECK(done == NULL && ht.rehash_pos == 16);
	for (i = 0; i < 16; i++)
		CHECK(a32[i] == 0);
	for (i = 0; i < N; i++) {
		int w = array_of(&ht, e[i]);

		CHECK(lookup_id(&ht, i) == e[i]);
		CHECK(w == 0 || w == 1);
		in_new += w == 0;
		in_old += w == 1;
	}
	CHECK(in_old > 0 && in_new > 0 && in_new == nmoved);
	CHECK(slot_walk_sees_each_once(&ht, e, N));
	n = 0;
	CHECK(check_array(ht.slots, 6, 0, false, &max, &n) == 0);
	CHECK(check_array(ht.old, 5, 16, true, &max, &n) == 0 && n == N);
	CHECK(htable_max_probe(&ht) == max);

	/* a delete in the old array leaves a mark that lookups pass over;
	 * an add goes to the new array */
	for (i = 0; i < N; i++) {
		if (array_of(&ht, e[i]) != 1)
			continue;
		htable_del(&ht, e[i], e[i]->hv);
		CHECK(lookup_id(&ht, i) == NULL);
		CHECK(htable_add(&ht, e[i], e[i]->hv) == 0);
		CHECK(array_of(&ht, e[i]) == 0 && lookup_id(&ht, i) == e[i]);
		break;
	}
	CHECK(i < N);
	for (i = 0, n = 0; i < 32; i++)
		n += a32[i] == HTABLE_GONE;
	CHECK(n == 1 && ht.count == N);
	for (i = 0; i < N; i++)
		CHECK(lookup_id(&ht, i) == e[i]);

	/* the remaining 16, one at a time: the array comes back once */
	for (i = 0; i < 16; i++) {
		done = rehash_some(&ht, 1, NULL, 0, &nmoved);
		if (done) {
			returned++;
			CHECK(done == a32);
			ak_free(done);
		}
		CHECK(htable_rehashing(&ht) == (i < 15));
	}
	CHECK(returned == 1);
	CHECK(ht.slots == a64 && ht.old == NULL && ht.bits == 6);
	CHECK(htable_slots_n(&ht) == 64);
	CHECK(slot_walk_sees_each_once(&ht, e, N));
	CHECK(htable_memory(&ht) == ak_usable_size(a64));
	for (i = 0; i < N; i++)
		CHECK(lookup_id(&ht, i) == e[i] && array_of(&ht, e[i]) == 0);
	max = 0;
	n = 0;
	CHECK(check_array(ht.slots, 6, 0, false, &max, &n) == 0 && n == N);
	CHECK(htable_max_probe(&ht) == max);
	for (i = 0; i < N; i++)
		htable_del(&ht, e[i], e[i]->hv);
	CHECK(ht.count == 0 && htable_max_probe(&ht) == 0);
	for (i = 0; i < N; i++)
		ak_free(e[i]);
	htable_destroy(&ht);
}

/* An empty table grows too, and a move of empty slots is cheap. */
static void test_htable_grow_empty(void)
{
	uint64_t *a = htable_slots_alloc(2);
	uint64_t *na = htable_slots_alloc(3), *done;
	struct htable ht;
	size_t nmoved;

	CHECK(a && na);
	if (!a || !na) {
		ak_free(a);
		ak_free(na);
		return;
	}
	htable_init(&ht, a, 2);
	CHECK(!htable_wants_grow(&ht));
	CHECK(htable_grow_start(&ht, na) == 0);
	done = rehash_some(&ht, 8, NULL, 0, &nmoved);
	CHECK(done == a && nmoved == 0);
	ak_free(done);
	CHECK(ht.bits == 3 && !htable_rehashing(&ht));
	htable_destroy(&ht);
	CHECK(ht.slots == NULL && htable_memory(&ht) == 0);
	htable_destroy(&ht);	/* twice is harmless */
}

/* ---- htable: randomized run against a model ---- */

struct run {
	struct htable ht;
	struct elem **model;	/* [id]: the live entry, or NULL */
	uint32_t nids;
	uint64_t live;
	unsigned int budget;	/* old slots moved per write */

	/* the growth under way */
	uint64_t *grow_old, *grow_new;
	unsigned int grow_bits;
	unsigned long grow_writes;	/* writes since it started */
	unsigned int grow_returns;

	/* totals */
	unsigned long grows, finishes, hits_old, hits_new, sweeps, gone;
	unsigned long moved_entries, max_moved_per_write;
	uint32_t *seen;		/* scratch: sweep epoch per id */
	uint32_t epoch;
};

/*
 * Everything at once: every model entry found and no other; every word of
 * the arrays a live model entry, met exactly once, in a slot linear
 * probing allows; moved old slots empty; count exact; the longest probe
 * and the memory as the test computes them.
 */
static void run_sweep(struct run *r)
{
	struct htable *ht = &r->ht;
	uint64_t size = htable_size(ht->bits), i, w, nodes = 0;
	unsigned int max = 0, bad = 0, layout;
	size_t lower, mem;
	struct elem *e;
	uint32_t id;

	r->sweeps++;
	r->epoch++;
	CHECK(ht->count == r->live);

	for (id = 0; id < r->nids; id++) {
		if (r->model[id] && lookup_id(ht, id) != r->model[id])
			bad++;
		if (!r->model[id] && lookup_id(ht, id))
			bad++;
	}
	CHECK_MSG(bad == 0, "%u ids disagree with the model", bad);

	for (i = 0; i < size + (ht->old ? size / 2 : 0); i++) {
		w = i < size ? ht->slots[i] : ht->old[i - size];
		if (!htable_used(w))
			continue;
		e = htable_ptr(w);
		bad += e->id >= r->nids || r->model[e->id] != e ||
		       r->seen[e->id] == r->epoch;
		r->seen[e->id] = r->epoch;
		nodes++;
	}
	CHECK_MSG(bad == 0, "%u stray or doubled entries", bad);
	CHECK_MSG(nodes == r->live, "%" PRIu64 " entries, %" PRIu64 " live",
		  nodes, r->live);

	nodes = 0;
	layout = check_array(ht->slots, ht->bits, 0, false, &max, &nodes);
	if (ht->old)
		layout += check_array(ht->old, ht->bits - 1, ht->rehash_pos,
				      true, &max, &nodes);
	CHECK_MSG(layout == 0, "%u words out of place", layout);
	CHECK_MSG(htable_max_probe(ht) == max, "max probe %u, counted %u",
		  htable_max_probe(ht), max);

	lower = (size_t)(size * sizeof(uint64_t));
	if (ht->old)
		lower += lower / 2;
	mem = htable_memory(ht);
	CHECK_MSG(mem >= lower && mem <= lower + 2 * 4096,
		  "memory %zu for %zu bytes of slots", mem, lower);
}

/* After a write: move up to budget slots, then start a growth if due. */
static void run_after_write(struct run *r)
{
	struct htable *ht = &r->ht;
	struct elem *moved[512];
	uint64_t *done;
	uint64_t pos0 = ht->rehash_pos, half0 = htable_size(ht->bits - 1);
	bool was = htable_rehashing(ht);
	size_t nmoved, i;
	unsigned int bad = 0;
	uint64_t step;

	done = rehash_some(ht, r->budget, moved, 512, &nmoved);
	if (was) {
		r->grow_writes++;
		/* slots moved by this write, from the table's own fields */
		step = done ? half0 - pos0 : ht->rehash_pos - pos0;

		CHECK_MSG(step >= 1 && step <= r->budget,
			  "one write moved %" PRIu64 " slots (budget %u)",
			  step, r->budget);
		r->moved_entries += nmoved;
		if (nmoved > r->max_moved_per_write)
			r->max_moved_per_write = nmoved;
		/* what just moved is found, in the new array */
		for (i = 0; i < nmoved && i < 512; i++)
			bad += lookup_id(ht, moved[i]->id) != moved[i] ||
			       array_of(ht, moved[i]) != 0;
		CHECK_MSG(bad == 0, "%u moved entries lost", bad);
	} else {
		CHECK(done == NULL && nmoved == 0);
	}
	if (done) {
		r->grow_returns++;
		CHECK(r->grow_returns == 1);
		CHECK(done == r->grow_old);
		CHECK(ht->slots == r->grow_new && ht->bits == r->grow_bits + 1);
		CHECK(!htable_rehashing(ht));
		/* incremental: it took at least size / budget writes */
		CHECK_MSG(r->grow_writes * r->budget >=
			  htable_size(r->grow_bits),
			  "2^%u slots moved in %lu writes", r->grow_bits,
			  r->grow_writes);
		r->finishes++;
		ak_free(done);	/* in the store: after unlocking */
		if (r->finishes % 4 == 0)
			run_sweep(r);
	}

	if (htable_wants_grow(ht)) {
		/* in the store: allocated outside the lock, then installed */
		uint64_t *na = htable_slots_alloc(ht->bits + 1);

		CHECK(na != NULL);
		if (!na)
			return;
		CHECK(ht->count * 4 >= htable_size(ht->bits) * 3);
		r->grow_old = ht->slots;
		r->grow_new = na;
		r->grow_bits = ht->bits;
		r->grow_writes = 0;
		r->grow_returns = 0;
		CHECK(htable_grow_start(ht, na) == 0);
		r->grows++;
		if (r->grows % 4 == 1)
			run_sweep(r);
	} else if (!htable_rehashing(ht)) {
		/* not growing: the load is below the growth point */
		CHECK(ht->count * 4 < htable_size(ht->bits) * 3);
	}
}

static void run_probe(struct run *r, uint32_t id)
{
	struct elem *e = lookup_id(&r->ht, id);

	CHECK_MSG(e == r->model[id], "id %u: found %p, model %p", id,
		  (void *)e, (void *)r->model[id]);
}

/*
 * One round: a table that starts at 4 slots, @nops operations on ids
 * below @nids: 50% set (insert or replace), 20% delete, 30% lookup.
 */
static void run_round(unsigned int round, uint32_t nids, unsigned long nops,
		      unsigned int budget, unsigned int crowd_bits)
{
	struct run r = { .nids = nids, .budget = budget };
	unsigned long op, failed0 = check_failed;
	uint64_t *a = htable_slots_alloc(2), i;
	char key[40];

	crowd = crowd_bits;
	rng_state = 0x5eed0000ULL + round;
	r.model = ak_calloc(nids, sizeof(*r.model));
	r.seen = ak_calloc(nids, sizeof(*r.seen));
	CHECK(a && r.model && r.seen);
	if (!a || !r.model || !r.seen) {
		ak_free(a);
		goto out;
	}
	htable_init(&r.ht, a, 2);

	for (op = 0; op < nops; op++) {
		uint32_t id = rng_below(nids), kind = rng_below(100);
		struct elem *e, *ne;
		size_t n;

		if (kind < 50) {			/* set */
			ne = elem_new(id, (uint32_t)op);
			CHECK(ne != NULL);
			if (!ne)
				break;
			n = key_of(id, key);
			e = elem_lookup(&r.ht, key, n, ne->hv);
			CHECK(e == r.model[id]);
			if (e) {
				htable_replace(&r.ht, e, ne, e->hv);
				ak_free(e);
			} else {
				CHECK(htable_add(&r.ht, ne, ne->hv) == 0);
				r.live++;
			}
			r.model[id] = ne;
			run_after_write(&r);
		} else if (kind < 70) {			/* delete */
			n = key_of(id, key);
			e = elem_lookup(&r.ht, key, n, hv_of(key, n));
			CHECK(e == r.model[id]);
			if (e) {
				i = htable_slots_n(&r.ht);
				if (array_of(&r.ht, e) == 1)
					r.gone++;
				htable_del(&r.ht, e, e->hv);
				CHECK(htable_slots_n(&r.ht) == i);
				CHECK(lookup_id(&r.ht, id) == NULL);
				ak_free(e);
				r.model[id] = NULL;
				r.live--;
				run_after_write(&r);
			}
		} else {				/* lookup */
			e = lookup_id(&r.ht, id);
			CHECK(e == r.model[id]);
			if (e && htable_rehashing(&r.ht)) {
				int w = array_of(&r.ht, e);

				r.hits_new += w == 0;
				r.hits_old += w == 1;
			}
		}
		CHECK(r.ht.count == r.live);
		/* and two other ids, present or not */
		run_probe(&r, rng_below(nids));
		run_probe(&r, rng_below(nids));

		if (op % 50000 == 49999)
			run_sweep(&r);
		if (check_failed - failed0 > 20) {
			fprintf(stderr, "round %u: stopping at op %lu\n",
				round, op);
			break;
		}
	}

	/* finish a growth under way: the old array still comes back once */
	while (htable_rehashing(&r.ht))
		run_after_write(&r);
	run_sweep(&r);
	CHECK(r.grows == r.finishes);
	CHECK(r.grows >= 8);
	CHECK(r.hits_old > 0 && r.hits_new > 0 && r.gone > 0);
	printf("htable round %u: %lu ops, %" PRIu64 " live, 2^%u slots, "
	       "%lu grows, budget %u, crowd %u, max %lu entries moved by one "
	       "write, lookups mid-growth %lu old / %lu new, %lu old deletes, "
	       "max probe %u, %zu bytes\n",
	       round, nops, r.live, r.ht.bits, r.grows, budget, crowd_bits,
	       r.max_moved_per_write, r.hits_old, r.hits_new, r.gone,
	       htable_max_probe(&r.ht), htable_memory(&r.ht));

	free_all(&r.ht);
	htable_destroy(&r.ht);
out:
	ak_free(r.model);
	ak_free(r.seen);
	crowd = 0;
}

static void test_htable_random(void)
{
	hash_set_seed(test_seed);
	run_round(0, 120000, 250000, 1, 0);
	run_round(1, 120000, 250000, 2, 0);
	run_round(2, 120000, 250000, 4, 0);
	run_round(3, 120000, 250000, 8, 0);
	/* homes on every 8th slot, then every 64th: long runs that wrap */
	run_round(4, 20000, 200000, 4, 3);
	run_round(5, 5000, 100000, 2, 6);
}

int main(void)
{
	test_hash_reference_vectors();
	rng_state = 0x51b0a5eedULL;
	test_hash_against_libsodium();
	test_hash_is_a_function_of_seed_and_bytes();
	test_hash_init_draws_a_random_seed();
	test_hash_distribution();
	test_htable_slots_alloc();
	test_htable_delete_moves_entries_back();
	test_htable_add_refuses_when_full();
	test_htable_halfway_rehash();
	test_htable_grow_empty();
	test_htable_random();
	return check_report();
}
