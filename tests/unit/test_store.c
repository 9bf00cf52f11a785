// SPDX-License-Identifier: MIT
/*
 * test_store.c - the item store against its contract.
 *
 * Examples for every operation and result code; key classes and keyspace
 * order; expiry and flush_all on an injected clock; ranges; a randomized
 * run of mixed operations checked against a naive model (an array over a
 * fixed pool of keys, with its own key order); the memory limit with and
 * without eviction; allocation failure injection; several threads at once.
 * store_check_invariants() runs after each part. SEED=<n> in the
 * environment changes the random seed.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "check.h"
#include "hash.h"
#include "item.h"
#include "lookup_get.h"
#include "radix_tree.h"
#include "shard.h"
#include "store.h"

#define T0		1700000000LL	/* the test's first unix time */
#define MONTH		(60 * 60 * 24 * 30)

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static unsigned int rnd_below(unsigned int n)
{
	return (unsigned int)(rnd() % n);
}

/* part_max of the stores new_store() makes (0: the default) */
static uint64_t new_part_max;

static struct store *new_store(unsigned int nshards, size_t limit,
			       bool no_evict, unsigned int hash_bits)
{
	struct store_config cfg = {
		.mem_limit = limit,
		.item_size_max = 1024 * 1024,
		.nshards = nshards,
		.hash_bits = hash_bits,
		.no_evict = no_evict,
		.part_max = new_part_max,
	};
	struct store *s;

	/* the least table a store takes: 1 bit was refused once it became
	 * 2, and every test here returned early on the NULL, passing */
	if (cfg.hash_bits && cfg.hash_bits < HTABLE_MIN_BITS)
		cfg.hash_bits = HTABLE_MIN_BITS;
	s = store_create(&cfg);
	CHECK_MSG(s, "store_create(%u shards, limit %zu, %u hash bits)",
		  nshards, limit, cfg.hash_bits);
	if (s)
		store_set_time(s, T0);
	return s;
}

/* store_incr_decr() in one call: @value and @cas (may be NULL) on success */
static int arith(struct store *s, const char *key, size_t nkey, bool incr,
		 uint64_t delta, uint64_t *value, uint64_t *cas)
{
	struct store_arith a = { .key = key, .nkey = nkey, .incr = incr,
				 .delta = delta };
	int ret = store_incr_decr(s, &a);

	if (!ret) {
		*value = a.value;
		if (cas)
			*cas = a.cas;
	}
	return ret;
}

static void check_store(struct store *s, const char *when)
{
	char why[256] = "";
	int err = store_check_invariants(s, why, sizeof(why));

	CHECK_MSG(err == 0, "%s: %s", when, why);
}

/* Store @val under @key (nkey bytes) with @op. */
static int put_n(struct store *s, const char *key, size_t nkey,
		 const void *val, size_t n, uint32_t flags, rel_time_t exp,
		 enum store_op op, uint64_t cas, uint64_t *cas_out)
{
	struct item *it;
	int err = store_item_alloc(s, key, nkey, flags, exp, (uint32_t)n, &it);

	if (err == -E2BIG)
		return STORE_TOO_LARGE;
	if (err)
		return STORE_NO_MEMORY;
	memcpy(item_value(it), val, n);
	return store_item_store(s, it, op, cas, cas_out);
}

static int put(struct store *s, const char *key, const char *val,
	       uint32_t flags, rel_time_t exp, enum store_op op, uint64_t cas,
	       uint64_t *cas_out)
{
	return put_n(s, key, strlen(key), val, strlen(val), flags, exp, op,
		     cas, cas_out);
}

static int set(struct store *s, const char *key, const char *val)
{
	return put(s, key, val, 0, 0, STORE_OP_SET, 0, NULL);
}

/* Whether @key holds exactly @val (NULL: absent). */
static bool holds(struct store *s, const char *key, const char *val)
{
	struct item *it = lookup_get(s, key, strlen(key), NULL);
	bool ok;

	if (!it)
		return val == NULL;
	ok = val && it->nbytes == strlen(val) &&
	     !memcmp(item_value(it), val, it->nbytes) &&
	     it->nkey == strlen(key) && !memcmp(item_key(it), key, it->nkey);
	item_put(it);
	return ok;
}

/* gat: the item with a reference, or NULL; *@why as store_lookup's. */
static struct item *get_touch(struct store *s, const char *key, size_t nkey,
			      rel_time_t exptime, enum store_miss *why)
{
	struct store_req req = { .key = key, .nkey = nkey,
				 .flags = STORE_REQ_TOUCH, .exptime = exptime };
	struct store_res res;
	struct item *it = store_lookup(s, &req, &res);

	*why = res.why;
	return it;
}

/* touch: 0, or -ENOENT on a miss; -EINVAL if the peek returned an item.
 * Called from threads too: no CHECK() here (its counts are not atomic). */
static int touch_key(struct store *s, const char *key, size_t nkey,
		     rel_time_t exptime)
{
	struct store_req req = { .key = key, .nkey = nkey,
				 .flags = STORE_REQ_TOUCH | STORE_REQ_PEEK,
				 .exptime = exptime };
	struct store_res res;

	if (store_lookup(s, &req, &res))
		return -EINVAL;
	if (res.why == STORE_TOUCH_NO_MEMORY)
		return -ENOMEM;
	return res.why == STORE_HIT ? 0 : -ENOENT;
}

/* Whether @key's expiry is now what a touch to @pexp sets. */
static bool touch_took(struct store *s, const char *key, size_t nkey,
		       int64_t pexp)
{
	struct store_req req = { .key = key, .nkey = nkey,
				 .flags = STORE_REQ_NO_BUMP | STORE_REQ_PEEK };
	struct store_res res;

	CHECK(!store_lookup(s, &req, &res));
	return res.why == STORE_HIT ? res.exptime == store_exptime(s, pexp) :
	       store_exptime(s, pexp) <= store_now(s);
}

static struct store_bound bnd(enum bound_kind kind, const char *key)
{
	struct store_bound b = { kind, key, key ? strlen(key) : 0 };

	return b;
}

/* ---- key classes and order ---- */

static void test_keys(void)
{
	static const struct {
		const char *key;
		bool is_int;
		uint64_t v;
	} cases[] = {
		{ "0", true, 0 },
		{ "7", true, 7 },
		{ "00", false, 0 },
		{ "01", false, 0 },
		{ "-1", false, 0 },
		{ "+1", false, 0 },
		{ " 1", false, 0 },
		{ "1 ", false, 0 },
		{ "12a", false, 0 },
		{ "", false, 0 },
		{ "18446744073709551615", true, UINT64_MAX },
		{ "18446744073709551614", true, UINT64_MAX - 1 },
		{ "18446744073709551616", false, 0 },
		{ "99999999999999999999", false, 0 },	/* 20 digits, too big */
		{ "10000000000000000000", true, 10000000000000000000ULL },
		{ "100000000000000000000", false, 0 },	/* 21 digits */
		{ "9223372036854775808", true, 9223372036854775808ULL },
		/* the 19 digits that always fit, and a 20th that is no digit */
		{ "9999999999999999999", true, 9999999999999999999ULL },
		{ "1844674407370955161a", false, 0 },
		{ "1844674407370955161", true, 1844674407370955161ULL },
	};
	/* keyspace order, strictly increasing */
	static const char *const order[] = {
		"0", "1", "2", "9", "10", "63", "64", "100", "4294967296",
		"18446744073709551614", "18446744073709551615",
		"", "+1", "-1", "00", "01", "012", "1 ", "100000000000000000000",
		"12a", "18446744073709551616", "99999999999999999999", "a",
		"ab", "abc", "b",
	};
	unsigned int i, j;
	uint64_t v;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		bool r;

		v = 12345;
		r = key_is_integer(cases[i].key, strlen(cases[i].key), &v);
		CHECK_MSG(r == cases[i].is_int, "key_is_integer(\"%s\")",
			  cases[i].key);
		if (r && cases[i].is_int)
			CHECK_MSG(v == cases[i].v, "value of \"%s\"",
				  cases[i].key);
	}
	CHECK(key_is_integer("12", 1, NULL));	/* only "1" */
	for (i = 0; i < ARRAY_SIZE(order); i++) {
		for (j = 0; j < ARRAY_SIZE(order); j++) {
			int c = key_compare(order[i], strlen(order[i]),
					    order[j], strlen(order[j]));
			int want = i < j ? -1 : i > j;

			CHECK_MSG((c > 0) - (c < 0) == want,
				  "key_compare(\"%s\", \"%s\") = %d",
				  order[i], order[j], c);
		}
	}
	{
		struct store_bound a = bnd(BOUND_MIN, NULL);
		struct store_bound b = bnd(BOUND_INCL, "5");
		struct store_bound c = bnd(BOUND_EXCL, "a");
		struct store_bound d = bnd(BOUND_MAX, NULL);
		struct store_bound e = bnd(BOUND_INCL, "a");

		CHECK(store_bound_cmp(&a, &b) < 0);
		CHECK(store_bound_cmp(&b, &c) < 0);
		CHECK(store_bound_cmp(&c, &d) < 0);
		CHECK(store_bound_cmp(&d, &a) > 0);
		CHECK(store_bound_cmp(&c, &b) > 0);
		CHECK(store_bound_cmp(&a, &a) == 0);
		CHECK(store_bound_cmp(&d, &d) == 0);
		CHECK(store_bound_cmp(&c, &e) == 0);
	}
}

/* ---- examples of each operation ---- */

/*
 * The item's shape: the expiry and the client flags take 4 bytes each only
 * when they are not 0, the expiry before the key and the flags after the
 * value, and nothing overwrites the time, the key or the value, for both
 * key classes; item_copy() gives an item without an expiry slot one.
 */
static void check_item_shape(const char *key, uint32_t flags,
			     rel_time_t exp)
{
	size_t nkey = strlen(key);
	struct item *it = item_alloc(key, nkey, flags, exp, 3), *copy;
	bool intkey = key_is_integer(key, nkey, NULL);
	size_t head = (intkey ? ITEM_INT_DATA : ITEM_STR_DATA) +
		      (exp ? 4 : 0);

	CHECK(it);
	if (!it)
		return;
	memcpy(item_value(it), "abc", 3);
	item_set_time(it, 0x3eedbeefu);		/* 30 bits of time */
	item_set_marks(it, ITEM_MARK_PROBED);	/* and the marks above */
	it->iflags |= ITEM_FETCHED | ITEM_KEY_BINARY;
	CHECK(!!(it->iflags & ITEM_INTKEY) == intkey);
	CHECK(item_flags(it) == flags);
	CHECK(item_time(it) == 0x3eedbeefu);
	CHECK(item_marks(it) == ITEM_MARK_PROBED);
	item_set_time(it, 0x3eedbeefu);
	CHECK(item_marks(it) == ITEM_MARK_PROBED);
	CHECK(item_key(it) == (const char *)it + head);
	CHECK(!memcmp(item_key(it), key, nkey));
	CHECK(!memcmp(item_value(it), "abc", 3));
	CHECK(item_block_size_of(it) == head + nkey + 3 + (flags ? 4 : 0));
	CHECK(item_block_size_of(it) ==
	      item_block_size(intkey, exp, flags, nkey, 3));
	CHECK(item_exptime(it) == exp && it->nbytes == 3);
	CHECK(!!it->has_exptime == !!exp);
	/* without a slot only 0 is taken */
	CHECK(item_set_exptime(it, 0) && item_exptime(it) == 0);
	CHECK(item_set_exptime(it, 9) == !!exp);
	CHECK(item_exptime(it) == (exp ? 9 : 0));
	CHECK(item_time(it) == 0x3eedbeefu && !memcmp(item_key(it), key, nkey));

	copy = item_copy(it, 11);
	CHECK(copy);
	if (copy) {
		CHECK(copy->has_exptime && item_exptime(copy) == 11);
		CHECK(copy->iflags == it->iflags);
		CHECK(copy->nkey == nkey && !memcmp(item_key(copy), key, nkey));
		CHECK(copy->nbytes == 3 && !memcmp(item_value(copy), "abc", 3));
		CHECK(item_flags(copy) == flags);
		CHECK(!intkey || copy->ikey == it->ikey);
		CHECK(item_block_size_of(copy) ==
		      item_block_size(intkey, 1, flags, nkey, 3));
		item_put(copy);
	}
	item_put(it);
}

static void test_item_shape(void)
{
	static const uint32_t flags[] = { 0, 1, 0x80000000u, UINT32_MAX };
	static const rel_time_t exps[] = { 0, 7, UINT32_MAX };
	static const char *const keys[] = { "12345", "k12345" };
	unsigned int i, j, e;

	for (i = 0; i < ARRAY_SIZE(keys); i++) {
		for (j = 0; j < ARRAY_SIZE(flags); j++) {
			for (e = 0; e < ARRAY_SIZE(exps); e++)
				check_item_shape(keys[i], flags[j], exps[e]);
		}
	}
	/* the header of the usual item: 48 bytes; an expiry and flags take
	 * 4 more each; the value's "\r\n" is not kept */
	CHECK(item_block_size(false, 0, 0, 15, 32) == 48 + 15 + 32);
	CHECK(item_block_size(false, 0, 2, 15, 32) == 52 + 15 + 32);
	CHECK(item_block_size(false, 5, 2, 15, 32) == 56 + 15 + 32);
	CHECK(item_block_size(true, 0, 0, 6, 32) == 32 + 6 + 32);
}

/*
 * key_prefix() (shard.h), which finds a key's partition: two keys whose
 * prefixes differ are in bytewise order by them, and equal prefixes mean
 * equal first bytes, for keys of any length and any bytes (the loads of
 * a short key and the byte order of a 64-bit read).
 */
static void test_key_prefix_orders_as_bytes(void)
{
	static const char bytes[] = { 0x00, 0x01, 'a', 'b', 0x7f, (char)0x80,
				      (char)0xfe, (char)0xff };
	unsigned int n, bad = 0;

	for (n = 0; n < 200000; n++) {
		char a[12], b[12];
		size_t na = 1 + rnd() % sizeof(a), nb = 1 + rnd() % sizeof(b);
		size_t i, same;
		uint64_t pa, pb;
		int cmp;

		for (i = 0; i < na; i++)
			a[i] = bytes[rnd() % sizeof(bytes)];
		for (i = 0; i < nb; i++)
			b[i] = i < na && rnd() % 2 ? a[i] :
			       bytes[rnd() % sizeof(bytes)];
		pa = key_prefix(a, na);
		pb = key_prefix(b, nb);
		cmp = key_bytes_cmp(a, na, b, nb);
		if (pa != pb) {
			bad += (pa < pb) != (cmp < 0);
			continue;
		}
		/* equal prefixes: the first min(8, length) bytes agree */
		same = na < nb ? na : nb;
		same = same < 8 ? same : 8;
		bad += memcmp(a, b, same) != 0;
	}
	CHECK_MSG(!bad, "%u key pairs whose prefixes disagree with their "
		  "bytes", bad);
	CHECK(key_prefix("abcdefghij", 10) == 0x6162636465666768ull);
	CHECK(key_prefix("ab", 2) == 0x6162000000000000ull);
}

static void test_examples(unsigned int nshards)
{
	struct store *s = new_store(nshards, 0, false, 2);
	uint64_t cas1, cas2, cas3, v;
	enum store_miss why;
	struct item *it;

	CHECK(s != NULL);
	if (!s)
		return;
	CHECK(store_now(s) == 2);
	CHECK(store_unix_time(s) == T0);

	/* set, get, overwrite; string and integer keys */
	CHECK(put(s, "a", "one", 5, 0, STORE_OP_SET, 0, &cas1) == STORE_STORED);
	CHECK(put(s, "42", "int", 6, 0, STORE_OP_SET, 0, &cas2) == STORE_STORED);
	CHECK(cas1 != cas2 && cas1 && cas2);
	it = lookup_get(s, "a", 1, &why);
	CHECK(it && why == STORE_HIT && item_flags(it) == 5 && it->cas == cas1);
	CHECK(it && !(it->iflags & ITEM_INTKEY));
	if (it)
		item_put(it);
	it = lookup_get(s, "42", 2, NULL);
	CHECK(it && item_flags(it) == 6 && (it->iflags & ITEM_INTKEY) &&
	      it->ikey == 42);
	if (it)
		item_put(it);
	CHECK(!lookup_get(s, "b", 1, &why) && why == STORE_MISS_ABSENT);
	CHECK(!lookup_get(s, "x", 0, &why) && why == STORE_MISS_ABSENT);
	{
		char longkey[KEY_MAX_LENGTH + 1];

		memset(longkey, 'k', sizeof(longkey));
		CHECK(!lookup_get(s, longkey, sizeof(longkey), &why) &&
		      why == STORE_MISS_ABSENT);
		CHECK(store_delete(s, longkey, sizeof(longkey)) == -ENOENT);
		CHECK(touch_key(s, longkey, sizeof(longkey), 0) == -ENOENT);
		CHECK(arith(s, longkey, 0, true, 1, &v, NULL) ==
		      -ENOENT);
		CHECK(put_n(s, longkey, KEY_MAX_LENGTH, "v", 1, 0, 0,
			    STORE_OP_SET, 0, NULL) == STORE_STORED);
		it = lookup_get(s, longkey, KEY_MAX_LENGTH, NULL);
		CHECK(it && it->nkey == KEY_MAX_LENGTH);
		if (it)
			item_put(it);
	}
	/* a bogus op stores nothing */
	CHECK(put(s, "bogus", "v", 0, 0, (enum store_op)99, 0, NULL) ==
	      STORE_NOT_STORED);
	CHECK(holds(s, "bogus", NULL));
	CHECK(set(s, "a", "two") == STORE_STORED);
	CHECK(holds(s, "a", "two"));

	/* a reference outlives an overwrite and a delete */
	it = lookup_get(s, "a", 1, NULL);
	CHECK(set(s, "a", "three") == STORE_STORED);
	CHECK(store_delete(s, "a", 1) == 0);
	CHECK(it && it->nbytes == 3 && !memcmp(item_value(it), "two", 3));
	CHECK(it && !(it->iflags & ITEM_LINKED));
	if (it)
		item_put(it);
	CHECK(store_delete(s, "a", 1) == -ENOENT);
	CHECK(holds(s, "a", NULL));

	/* add */
	CHECK(put(s, "a", "x", 0, 0, STORE_OP_ADD, 0, NULL) == STORE_STORED);
	CHECK(put(s, "a", "y", 0, 0, STORE_OP_ADD, 0, NULL) ==
	      STORE_NOT_STORED);
	CHECK(holds(s, "a", "x"));
	CHECK(put(s, "42", "y", 0, 0, STORE_OP_ADD, 0, NULL) ==
	      STORE_NOT_STORED);

	/* replace */
	CHECK(put(s, "nope", "y", 0, 0, STORE_OP_REPLACE, 0, NULL) ==
	      STORE_NOT_STORED);
	CHECK(holds(s, "nope", NULL));
	CHECK(put(s, "a", "r", 0, 0, STORE_OP_REPLACE, 0, NULL) ==
	      STORE_STORED);
	CHECK(holds(s, "a", "r"));

	/* append / prepend keep flags and exptime of the old item */
	CHECK(put(s, "ap", "mid", 77, store_exptime(s, 100), STORE_OP_SET, 0,
		  &cas1) == STORE_STORED);
	CHECK(put(s, "ap", "_end", 1, 0, STORE_OP_APPEND, 0, &cas2) ==
	      STORE_STORED);
	CHECK(put(s, "ap", "start_", 2, 0, STORE_OP_PREPEND, 0, &cas3) ==
	      STORE_STORED);
	CHECK(cas1 != cas2 && cas2 != cas3 && cas1 != cas3);
	CHECK(holds(s, "ap", "start_mid_end"));
	it = lookup_get(s, "ap", 2, NULL);
	CHECK(it && item_flags(it) == 77 &&
	      item_exptime(it) == store_now(s) + 100 &&
	      it->cas == cas3);
	if (it)
		item_put(it);
	CHECK(put(s, "none", "x", 0, 0, STORE_OP_APPEND, 0, NULL) ==
	      STORE_NOT_STORED);
	CHECK(put(s, "none", "x", 0, 0, STORE_OP_PREPEND, 0, NULL) ==
	      STORE_NOT_STORED);
	CHECK(put(s, "7", "x", 0, 0, STORE_OP_APPEND, 0, NULL) ==
	      STORE_NOT_STORED);
	CHECK(set(s, "7", "12") == STORE_STORED);
	CHECK(put(s, "7", "3", 0, 0, STORE_OP_APPEND, 0, NULL) ==
	      STORE_STORED);
	CHECK(holds(s, "7", "123"));
	CHECK(put(s, "7", "", 0, 0, STORE_OP_PREPEND, 0, NULL) ==
	      STORE_STORED);
	CHECK(holds(s, "7", "123"));

	/* cas */
	CHECK(put(s, "c", "v", 0, 0, STORE_OP_CAS, 1, NULL) ==
	      STORE_NOT_FOUND);
	CHECK(put(s, "c", "v1", 0, 0, STORE_OP_SET, 0, &cas1) ==
	      STORE_STORED);
	CHECK(put(s, "c", "v2", 0, 0, STORE_OP_CAS, cas1 + 1, NULL) ==
	      STORE_EXISTS);
	CHECK(holds(s, "c", "v1"));
	CHECK(put(s, "c", "v3", 0, 0, STORE_OP_CAS, cas1, &cas2) ==
	      STORE_STORED);
	CHECK(cas2 != cas1 && holds(s, "c", "v3"));
	CHECK(put(s, "c", "v4", 0, 0, STORE_OP_CAS, cas1, NULL) ==
	      STORE_EXISTS);
	CHECK(put(s, "99", "v", 0, 0, STORE_OP_CAS, 5, NULL) ==
	      STORE_NOT_FOUND);

	/* incr / decr */
	CHECK(arith(s, "n", 1, true, 1, &v, NULL) == -ENOENT);
	CHECK(put(s, "n", "00012", 9, 0, STORE_OP_SET, 0, &cas1) ==
	      STORE_STORED);
	CHECK(arith(s, "n", 1, true, 1, &v, &cas2) == 0 && v == 13);
	CHECK(cas2 != cas1 && holds(s, "n", "13"));
	it = lookup_get(s, "n", 1, NULL);
	CHECK(it && item_flags(it) == 9 && it->cas == cas2);
	if (it)
		item_put(it);
	CHECK(arith(s, "n", 1, false, 100, &v, NULL) == 0 && v == 0);
	CHECK(holds(s, "n", "0"));
	CHECK(set(s, "n", "18446744073709551615") == STORE_STORED);
	CHECK(arith(s, "n", 1, true, 2, &v, NULL) == 0 && v == 1);
	CHECK(holds(s, "n", "1"));
	CHECK(arith(s, "n", 1, false, 1, &v, NULL) == 0 && v == 0);
	CHECK(set(s, "n", "18446744073709551616") == STORE_STORED);
	CHECK(arith(s, "n", 1, true, 1, &v, NULL) == -EINVAL);
	/* the value is read as memcached's safe_strtoull() reads it */
	CHECK(set(s, "n", "000000000000000000001") == STORE_STORED); /* 21 */
	CHECK(arith(s, "n", 1, true, 1, &v, NULL) == 0 && v == 2);
	CHECK(set(s, "n", "12a") == STORE_STORED);
	CHECK(arith(s, "n", 1, true, 1, &v, NULL) == -EINVAL);
	CHECK(holds(s, "n", "12a"));
	CHECK(set(s, "n", "12 a") == STORE_STORED);
	CHECK(arith(s, "n", 1, true, 1, &v, NULL) == 0 && v == 13);
	CHECK(set(s, "n", "-1") == STORE_STORED);
	CHECK(arith(s, "n", 1, false, 1, &v, NULL) == -EINVAL);
	CHECK(set(s, "n", "-18446744073709551615") == STORE_STORED);
	CHECK(arith(s, "n", 1, true, 1, &v, NULL) == 0 && v == 2);
	CHECK(set(s, "n", "+7") == STORE_STORED);
	CHECK(arith(s, "n", 1, true, 1, &v, NULL) == 0 && v == 8);
	CHECK(set(s, "n", "") == STORE_STORED);
	CHECK(arith(s, "n", 1, true, 1, &v, NULL) == -EINVAL);
	CHECK(set(s, "n", " \t ") == STORE_STORED);
	CHECK(arith(s, "n", 1, true, 1, &v, NULL) == -EINVAL);
	CHECK(set(s, "n", "-") == STORE_STORED);
	CHECK(arith(s, "n", 1, true, 1, &v, NULL) == -EINVAL);
	CHECK(set(s, "n", " 1") == STORE_STORED);
	CHECK(arith(s, "n", 1, true, 1, &v, NULL) == 0 && v == 2);
	CHECK(holds(s, "n", "2"));
	CHECK(set(s, "100", "99") == STORE_STORED);
	CHECK(arith(s, "100", 3, true, 1, &v, NULL) == 0 &&
	      v == 100);
	CHECK(holds(s, "100", "100"));

	/* touch and gat */
	CHECK(touch_key(s, "zz", 2, 10) == -ENOENT);
	CHECK(touch_key(s, "a", 1, store_exptime(s, 5)) == 0);
	it = get_touch(s, "100", 3, store_exptime(s, 7), &why);
	CHECK(it && why == STORE_HIT && item_exptime(it) == store_now(s) + 7);
	if (it)
		item_put(it);
	CHECK(!get_touch(s, "101", 3, 0, &why) &&
	      why == STORE_MISS_ABSENT);
	store_set_time(s, T0 + 5);
	CHECK(holds(s, "100", "100"));
	CHECK(!lookup_get(s, "a", 1, &why) && why == STORE_MISS_EXPIRED);
	CHECK(!lookup_get(s, "a", 1, &why) && why == STORE_MISS_ABSENT);
	store_set_time(s, T0 + 7);
	CHECK(!lookup_get(s, "100", 3, &why) && why == STORE_MISS_EXPIRED);
	CHECK(touch_key(s, "100", 3, 0) == -ENOENT);

	check_store(s, "examples");
	store_destroy(s);
}

/* ---- time, expiry, flush_all ---- */

static void test_time(void)
{
	struct store *s = new_store(4, 0, false, 1);
	struct store_stats st;
	enum store_miss why;
	rel_time_t now;
	uint64_t cas;

	if (!s)
		return;
	now = store_now(s);
	CHECK(now == 2);
	CHECK(store_exptime(s, 0) == 0);
	CHECK(store_exptime(s, 1) == now + 1);
	CHECK(store_exptime(s, MONTH) == now + MONTH);
	CHECK(store_exptime(s, MONTH + 1) == 1);	/* absolute, long past */
	CHECK(store_exptime(s, T0 + 100) == 102);	/* absolute */
	CHECK(store_exptime(s, T0 - 100) == 1);
	CHECK(store_exptime(s, -1) == 1);
	CHECK(store_exptime(s, INT64_MIN) == 1);
	CHECK(store_exptime(s, INT64_MAX) == UINT32_MAX);
	store_set_time(s, T0 + 10);
	CHECK(store_now(s) == 12 && store_unix_time(s) == T0 + 10);
	store_set_time(s, T0 + 5);	/* a step back is ignored */
	CHECK(store_now(s) == 12 && store_unix_time(s) == T0 + 10);
	CHECK(store_exptime(s, 3) == 15);
	CHECK(store_exptime(s, T0 + 11) == 13);

	/* relative, absolute, negative */
	CHECK(put(s, "r", "v", 0, store_exptime(s, 2), STORE_OP_SET, 0,
		  NULL) == STORE_STORED);
	CHECK(put(s, "1", "v", 0, store_exptime(s, T0 + 12), STORE_OP_SET, 0,
		  NULL) == STORE_STORED);
	CHECK(put(s, "neg", "v", 0, store_exptime(s, -1), STORE_OP_SET, 0,
		  NULL) == STORE_STORED);
	CHECK(put(s, "past", "v", 0, store_exptime(s, T0), STORE_OP_SET, 0,
		  NULL) == STORE_STORED);
	CHECK(holds(s, "r", "v") && holds(s, "1", "v"));
	CHECK(!lookup_get(s, "neg", 3, &why) && why == STORE_MISS_EXPIRED);
	CHECK(!lookup_get(s, "past", 4, &why) && why == STORE_MISS_EXPIRED);
	/* an expired item is absent for add/replace/cas/append/incr */
	CHECK(put(s, "e", "5", 0, store_exptime(s, -1), STORE_OP_SET, 0, &cas)
	      == STORE_STORED);
	CHECK(put(s, "e", "x", 0, 0, STORE_OP_CAS, cas, NULL) ==
	      STORE_NOT_FOUND);
	CHECK(put(s, "e", "x", 0, 0, STORE_OP_REPLACE, 0, NULL) ==
	      STORE_NOT_STORED);
	CHECK(put(s, "e", "x", 0, 0, STORE_OP_APPEND, 0, NULL) ==
	      STORE_NOT_STORED);
	CHECK(put(s, "e", "5", 0, store_exptime(s, -1), STORE_OP_SET, 0, NULL)
	      == STORE_STORED);
	CHECK(arith(s, "e", 1, true, 1, &cas, NULL) == -ENOENT);
	CHECK(put(s, "e", "5", 0, store_exptime(s, -1), STORE_OP_SET, 0, NULL)
	      == STORE_STORED);
	CHECK(put(s, "e", "x", 0, 0, STORE_OP_ADD, 0, NULL) == STORE_STORED);
	store_set_time(s, T0 + 11);	/* now 13 */
	CHECK(holds(s, "r", "v") && holds(s, "1", "v"));
	store_set_time(s, T0 + 12);	/* now 14 */
	CHECK(!lookup_get(s, "r", 1, &why) && why == STORE_MISS_EXPIRED);
	CHECK(!lookup_get(s, "1", 1, &why) && why == STORE_MISS_EXPIRED);

	/* store_expire_step reclaims without access */
	CHECK(put(s, "x1", "v", 0, store_exptime(s, 1), STORE_OP_SET, 0,
		  NULL) == STORE_STORED);
	CHECK(put(s, "2", "v", 0, store_exptime(s, 1), STORE_OP_SET, 0,
		  NULL) == STORE_STORED);
	CHECK(set(s, "keep", "v") == STORE_STORED);
	store_set_time(s, T0 + 13);
	store_stats_reset(s);
	CHECK(store_expire_step(s, 1000) == 2);
	store_stats(s, &st);
	CHECK(st.curr_items == 2 && st.reclaimed == 2 &&
	      st.expired_unfetched == 2);
	CHECK(store_expire_step(s, 1000) == 0);

	/* flush_all now: what was stored before, even this second, goes */
	CHECK(set(s, "f1", "v") == STORE_STORED);
	CHECK(set(s, "3", "v") == STORE_STORED);
	store_flush_all(s, 0);
	CHECK(set(s, "f2", "v") == STORE_STORED);	/* same second */
	CHECK(!lookup_get(s, "f1", 2, &why) && why == STORE_MISS_FLUSHED);
	CHECK(!lookup_get(s, "3", 1, &why) && why == STORE_MISS_FLUSHED);
	CHECK(holds(s, "f2", "v") && holds(s, "keep", NULL));
	store_set_time(s, T0 + 14);
	CHECK(holds(s, "f2", "v"));
	CHECK(set(s, "f3", "v") == STORE_STORED);

	/* flush_all with a delay: nothing changes until then */
	now = store_now(s);
	store_flush_all(s, now + 2);
	CHECK(set(s, "f4", "v") == STORE_STORED);
	store_set_time(s, T0 + 15);
	CHECK(holds(s, "f2", "v") && holds(s, "f3", "v") && holds(s, "f4", "v"));
	CHECK(set(s, "f5", "v") == STORE_STORED);
	store_set_time(s, T0 + 16);	/* now == the flush moment */
	CHECK(set(s, "f6", "v") == STORE_STORED);
	CHECK(!lookup_get(s, "f3", 2, &why) && why == STORE_MISS_FLUSHED);
	CHECK(holds(s, "f5", NULL) && holds(s, "f4", NULL));
	CHECK(holds(s, "f6", "v"));
	store_set_time(s, T0 + 20);
	CHECK(holds(s, "f6", "v"));

	/* a later delayed flush keeps what an earlier one invalidated */
	CHECK(set(s, "g1", "v") == STORE_STORED);
	now = store_now(s);
	store_flush_all(s, now + 1);
	store_set_time(s, T0 + 21);	/* g1 flushed, not yet reclaimed */
	CHECK(set(s, "g2", "v") == STORE_STORED);
	store_flush_all(s, store_now(s) + 5);
	CHECK(holds(s, "g1", NULL) && holds(s, "g2", "v"));
	store_set_time(s, T0 + 26);
	CHECK(holds(s, "g2", NULL));
	/* an immediate flush cancels a pending one */
	CHECK(set(s, "h1", "v") == STORE_STORED);
	store_flush_all(s, store_now(s) + 3);
	store_flush_all(s, 0);
	CHECK(set(s, "h2", "v") == STORE_STORED);
	store_set_time(s, T0 + 40);
	CHECK(holds(s, "h1", NULL) && holds(s, "h2", "v"));

	check_store(s, "time");
	store_destroy(s);
}

/* ---- count without a walk ---- */

/* store_count() over [from, to] (NULL: open) against @want. */
static bool counts(struct store *s, const char *from, const char *to,
		   uint64_t want)
{
	struct store_bound f = from ? bnd(BOUND_INCL, from) : bnd(BOUND_MIN, NULL);
	struct store_bound t = to ? bnd(BOUND_INCL, to) : bnd(BOUND_MAX, NULL);
	uint64_t got = store_count(s, &f, &t);

	if (got != want)
		fprintf(stderr, "count [%s, %s]: %" PRIu64 ", want %" PRIu64
			"\n", from ? from : "-", to ? to : "+", got, want);
	return got == want;
}

/*
 * While no item of a shard can die untouched, count reads the indexes'
 * own counts (radix counts, the string total) instead of walking; an
 * expiry or a flush, done or pending, must make it walk again, and a
 * touch that gives an item an expiry or takes it away must be counted.
 * Each step checks the counts and the doubtful invariant (check_store).
 */
static void test_count_doubtful(unsigned int nshards)
{
	struct store *s = new_store(nshards, 0, false, 1);
	char key[32];
	unsigned int i;

	if (!s)
		return;
	for (i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "%u", i);
		CHECK(set(s, key, "v") == STORE_STORED);
		snprintf(key, sizeof(key), "k%03u", i);
		CHECK(set(s, key, "v") == STORE_STORED);
	}
	CHECK(counts(s, NULL, NULL, 2000));
	CHECK(counts(s, "100", "899", 800));
	CHECK(counts(s, "k100", "k899", 800));
	CHECK(counts(s, "990", "k009", 20));
	check_store(s, "count: all immortal");

	/* an item that expires: counted until it does, then not */
	CHECK(put(s, "500", "v", 0, store_exptime(s, 5), STORE_OP_SET, 0,
		  NULL) == STORE_STORED);
	CHECK(put(s, "k500", "v", 0, store_exptime(s, 5), STORE_OP_SET, 0,
		  NULL) == STORE_STORED);
	CHECK(counts(s, NULL, NULL, 2000));
	store_set_time(s, T0 + 10);
	CHECK(counts(s, NULL, NULL, 1998));
	CHECK(counts(s, "400", "599", 199));
	check_store(s, "count: two expired");

	/* a touch gives an expiry, another takes it away */
	CHECK(touch_key(s, "600", 3, store_exptime(s, 5)) == 0);
	CHECK(touch_key(s, "601", 3, store_exptime(s, 5)) == 0);
	CHECK(touch_key(s, "601", 3, 0) == 0);
	check_store(s, "count: touched");
	store_set_time(s, T0 + 20);
	CHECK(counts(s, NULL, NULL, 1997));
	CHECK(counts(s, "600", "601", 1));
	check_store(s, "count: touched, expired");

	/* a pending flush: everything counts until its moment, nothing after;
	 * what is stored after it counts again */
	store_flush_all(s, store_now(s) + 5);
	check_store(s, "count: flush pending");
	CHECK(counts(s, NULL, NULL, 1997));
	store_set_time(s, T0 + 30);
	CHECK(counts(s, NULL, NULL, 0));
	CHECK(set(s, "7", "v") == STORE_STORED);
	CHECK(set(s, "k7", "v") == STORE_STORED);
	CHECK(counts(s, NULL, NULL, 2));
	CHECK(counts(s, "0", "10", 1));
	check_store(s, "count: after the flush");

	/* an immediate flush, then new items in the same second */
	store_flush_all(s, 0);
	CHECK(counts(s, NULL, NULL, 0));
	CHECK(set(s, "8", "v") == STORE_STORED);
	CHECK(counts(s, NULL, NULL, 1));
	check_store(s, "count: flushed now");
	store_destroy(s);
}

/* ---- ranges over integer blocks ---- */

/*
 * range_int_blocks() walks integer keys 64 at a time in the shard owning
 * each block; after RANGE_BLOCK_MISSES (4) empty blocks in a row it
 * leaves the rest to the merge over every shard. Keys 0..999 less 128..255
 * (2 empty blocks: the block walk goes on) and 384..767 (6: it falls
 * back), sparse keys above, then strings: every range from 40 starts,
 * both ways, with limits across block edges, is the expected slice of
 * that keyspace order.
 */
static void test_range_int_blocks(unsigned int nshards)
{
	enum { DENSE = 1000, SPARSE = 40, STRS = 5, MAXK = DENSE + SPARSE + STRS };
	static const unsigned int limits[] = { 1, 10, 63, 64, 65, 100, 300,
					       1100 };
	static char names[MAXK][24];
	static struct item *out[1100];
	struct store *s = new_store(nshards, 0, false, 1);
	unsigned int nkeys = 0, i, l, bad = 0, ranges = 0;

	if (!s)
		return;
	for (i = 0; i < DENSE; i++)
		if (i < 128 || (i >= 256 && i < 384) || i >= 768)
			snprintf(names[nkeys++], sizeof(names[0]), "%u", i);
	for (i = 0; i < SPARSE; i++)	/* about 2^40 apart: sparse */
		snprintf(names[nkeys++], sizeof(names[0]), "%" PRIu64,
			 ((uint64_t)(i + 1) << 40) + i);
	for (i = 0; i < STRS; i++)
		snprintf(names[nkeys++], sizeof(names[0]), "s%u", i);
	for (i = 0; i < nkeys; i++)
		CHECK(put(s, names[i], "v", 0, 0, STORE_OP_SET, 0, NULL) ==
		      STORE_STORED);
	for (i = 0; i < nkeys; i += 1 + nkeys / 40) {
		for (l = 0; l < ARRAY_SIZE(limits); l++) {
			int rev;

			for (rev = 0; rev < 2; rev++) {
				struct store_bound f = bnd(BOUND_INCL, names[i]);
				struct store_bound t = bnd(BOUND_MAX, NULL);
				unsigned int want, j;
				int got;

				if (rev) {
					f = bnd(BOUND_MIN, NULL);
					t = bnd(BOUND_INCL, names[i]);
				}
				want = rev ? i + 1 : nkeys - i;
				if (want > limits[l])
					want = limits[l];
				got = store_range(s, &f, &t, rev, limits[l],
						  out);
				ranges++;
				if (got != (int)want)
					bad++;
				for (j = 0; got > 0 && j < (unsigned int)got;
				     j++) {
					const char *k = names[rev ? i - j :
							      i + j];

					if (j < want &&
					    (out[j]->nkey != strlen(k) ||
					     memcmp(item_key(out[j]), k,
						    out[j]->nkey)))
						bad++;
					item_put(out[j]);
				}
			}
		}
	}
	CHECK_MSG(bad == 0, "%u of %u ranges over %u shards wrong", bad,
		  ranges, nshards);
	check_store(s, "int blocks");
	store_destroy(s);
}

/* ---- ranges by example ---- */

static void test_range_examples(unsigned int nshards)
{
	static const char *const keys[] = {	/* keyspace order */
		"0", "1", "5", "63", "64", "65", "1000", "18446744073709551615",
		"-5", "00", "a", "aa", "ab", "b", "ba", "zz",
	};
	const unsigned int n = ARRAY_SIZE(keys);
	struct store *s = new_store(nshards, 0, false, 1);
	struct item *out[32];
	unsigned int i;
	int got;

	if (!s)
		return;
	for (i = 0; i < n; i++) {
		CHECK(put(s, keys[i], keys[i], i, 0, STORE_OP_SET, 0, NULL) ==
		      STORE_STORED);
	}
#define RANGE(fk, fkey, tk, tkey, rev, max, first, count) do {		\
	struct store_bound f_ = bnd(fk, fkey), t_ = bnd(tk, tkey);	\
	int j_;								\
	got = store_range(s, &f_, &t_, rev, max, out);			\
	CHECK_MSG(got == (count), "range %s..%s%s got %d", #fkey, #tkey, \
		  rev ? " rev" : "", got);				\
	for (j_ = 0; j_ < got; j_++) {					\
		int want_ = rev ? (first) - j_ : (first) + j_;		\
		CHECK_MSG(want_ >= 0 && want_ < (int)n &&		\
			  out[j_]->nkey == strlen(keys[want_]) &&	\
			  !memcmp(item_key(out[j_]), keys[want_],	\
				  out[j_]->nkey),			\
			  "range %s..%s item %d", #fkey, #tkey, j_);	\
		item_put(out[j_]);					\
	}								\
} while (0)
	RANGE(BOUND_MIN, NULL, BOUND_MAX, NULL, false, 32, 0, 16);
	RANGE(BOUND_MIN, NULL, BOUND_MAX, NULL, true, 32, 15, 16);
	RANGE(BOUND_MIN, NULL, BOUND_MAX, NULL, false, 3, 0, 3);
	RANGE(BOUND_MIN, NULL, BOUND_MAX, NULL, true, 3, 15, 3);
	RANGE(BOUND_MIN, NULL, BOUND_MAX, NULL, false, 0, 0, 0);
	RANGE(BOUND_INCL, "5", BOUND_INCL, "65", false, 32, 2, 4);
	RANGE(BOUND_EXCL, "5", BOUND_EXCL, "65", false, 32, 3, 2);
	RANGE(BOUND_EXCL, "5", BOUND_EXCL, "65", true, 32, 4, 2);
	RANGE(BOUND_INCL, "6", BOUND_INCL, "64", false, 32, 3, 2);
	RANGE(BOUND_INCL, "1000", BOUND_INCL, "a", false, 32, 6, 5);
	RANGE(BOUND_INCL, "1000", BOUND_INCL, "a", true, 32, 10, 5);
	RANGE(BOUND_EXCL, "18446744073709551615", BOUND_MAX, NULL, false, 32,
	      8, 8);
	RANGE(BOUND_INCL, "", BOUND_EXCL, "aa", false, 32, 8, 3);
	RANGE(BOUND_INCL, "", BOUND_EXCL, "aa", true, 32, 10, 3);
	RANGE(BOUND_INCL, "a", BOUND_INCL, "b", false, 32, 10, 4);
	RANGE(BOUND_EXCL, "a", BOUND_EXCL, "b", false, 32, 11, 2);
	RANGE(BOUND_INCL, "a", BOUND_INCL, "a", false, 32, 10, 1);
	RANGE(BOUND_INCL, "a", BOUND_EXCL, "a", false, 32, 0, 0);
	RANGE(BOUND_INCL, "b", BOUND_INCL, "a", false, 32, 0, 0);
	RANGE(BOUND_INCL, "64", BOUND_INCL, "5", false, 32, 0, 0);
	RANGE(BOUND_INCL, "a", BOUND_INCL, "5", false, 32, 0, 0);
	RANGE(BOUND_MAX, NULL, BOUND_MAX, NULL, false, 32, 0, 0);
	RANGE(BOUND_MIN, NULL, BOUND_MIN, NULL, false, 32, 0, 0);
	RANGE(BOUND_MIN, NULL, BOUND_EXCL, "0", false, 32, 0, 0);
	RANGE(BOUND_MIN, NULL, BOUND_INCL, "0", false, 32, 0, 1);
	RANGE(BOUND_INCL, "b0", BOUND_MAX, NULL, false, 32, 14, 2);
	RANGE(BOUND_MIN, NULL, BOUND_EXCL, "00", true, 2, 8, 2);
	RANGE(BOUND_MIN, NULL, BOUND_INCL, "64", true, 32, 4, 5);
	RANGE(BOUND_INCL, "65", BOUND_INCL, "ab", false, 4, 5, 4);
	RANGE(BOUND_INCL, "65", BOUND_INCL, "ab", true, 4, 12, 4);
	RANGE(BOUND_INCL, "zzz", BOUND_MAX, NULL, false, 32, 0, 0);
	{
		struct store_bound f = bnd(BOUND_INCL, "1"),
				   t = bnd(BOUND_EXCL, "ab");

		CHECK(store_count(s, &f, &t) == 11);
		f = bnd(BOUND_MIN, NULL);
		t = bnd(BOUND_MAX, NULL);
		CHECK(store_count(s, &f, &t) == 16);
		f = bnd(BOUND_EXCL, "63");
		t = bnd(BOUND_INCL, "00");
		CHECK(store_delete_range(s, &f, &t) == 6);
		CHECK(store_delete_range(s, &f, &t) == 0);
		f = bnd(BOUND_MIN, NULL);
		CHECK(store_count(s, &f, &t) == 4);
		CHECK(holds(s, "63", "63") && holds(s, "64", NULL) &&
		      holds(s, "00", NULL) && holds(s, "a", "a"));
		f = bnd(BOUND_INCL, "5");
		t = bnd(BOUND_INCL, "a");
		CHECK(store_count(s, &f, &t) == 3);
	}
#undef RANGE
	check_store(s, "range examples");
	store_destroy(s);
}

/*
 * ---- the randomized run against a model ----
 *
 * The model: for each key of a fixed pool, whether it is present and its
 * value, flags, cas, expiry and store time, with its own time and flush
 * bookkeeping. Its key order is computed its own way: canonical decimals by
 * (length, digits), the rest by bytes.
 */

#define POOL_INT	360
#define POOL_STR	360
#define POOL_MAX	(POOL_INT + POOL_STR + 32)
#define VAL_MAX		3000

struct mkey {
	char k[KEY_MAX_LENGTH + 1];
	size_t n;
	bool is_int;
};

struct ment {
	bool present;
	uint32_t flags;
	rel_time_t exptime;
	rel_time_t stime;
	uint64_t cas;
	uint32_t nval;
	char val[VAL_MAX];
};

static struct mkey pool[POOL_MAX];
static unsigned int npool;
static unsigned int order[POOL_MAX];	/* pool indexes in key order */
static struct ment model[POOL_MAX];
static rel_time_t mnow;			/* the model's clock */
static int64_t munix;
static rel_time_t mpending;		/* delayed flush moment, 0: none */

static bool m_is_int(const char *k, size_t n)
{
	size_t i;

	if (!n || n > 20 || (n > 1 && k[0] == '0'))
		return false;
	for (i = 0; i < n; i++)
		if (k[i] < '0' || k[i] > '9')
			return false;
	return n < 20 || memcmp(k, "18446744073709551615", 20) <= 0;
}

static int m_cmp(const char *a, size_t na, const char *b, size_t nb)
{
	bool ia = m_is_int(a, na), ib = m_is_int(b, nb);
	size_t i;

	if (ia != ib)
		return ia ? -1 : 1;
	if (ia && na != nb)
		return na < nb ? -1 : 1;
	for (i = 0; i < na && i < nb; i++)
		if (a[i] != b[i])
			return (unsigned char)a[i] < (unsigned char)b[i] ?
			       -1 : 1;
	return na < nb ? -1 : na > nb;
}

static void pool_add(const char *k, size_t n)
{
	unsigned int i;

	for (i = 0; i < npool; i++)
		if (pool[i].n == n && !memcmp(pool[i].k, k, n))
			return;
	memcpy(pool[npool].k, k, n);
	pool[npool].n = n;
	pool[npool].is_int = m_is_int(k, n);
	npool++;
}

static int order_cmp(const void *a, const void *b)
{
	const struct mkey *x = &pool[*(const unsigned int *)a];
	const struct mkey *y = &pool[*(const unsigned int *)b];

	return m_cmp(x->k, x->n, y->k, y->n);
}

static void pool_init(void)
{
	static const char *const odd[] = {
		"00", "01", "007", "-1", "+1", "12a", "18446744073709551616",
		"99999999999999999999", "100000000000000000000", "a", "ab",
		"abc", "b", "k1", "k10", "k100",
	};
	char buf[KEY_MAX_LENGTH + 1];
	unsigned int i;

	npool = 0;
	for (i = 0; i < 200; i++) {		/* dense small ints */
		snprintf(buf, sizeof(buf), "%u", i);
		pool_add(buf, strlen(buf));
	}
	for (i = 0; npool < POOL_INT - 4; i++) {	/* sparse, all sizes */
		uint64_t v = rnd() >> rnd_below(64);

		snprintf(buf, sizeof(buf), "%" PRIu64, v);
		pool_add(buf, strlen(buf));
	}
	pool_add("18446744073709551615", 20);
	pool_add("18446744073709551614", 20);
	pool_add("9223372036854775808", 19);
	pool_add("4294967296", 10);
	for (i = 0; i < ARRAY_SIZE(odd); i++)
		pool_add(odd[i], strlen(odd[i]));
	memset(buf, 'L', KEY_MAX_LENGTH);
	pool_add(buf, KEY_MAX_LENGTH);
	buf[KEY_MAX_LENGTH - 1] = 'M';
	pool_add(buf, KEY_MAX_LENGTH);
	while (npool < POOL_MAX - 8) {
		int n = snprintf(buf, sizeof(buf), "%c%u",
				 "kmsz"[rnd_below(4)], rnd_below(1000));

		if (rnd_below(4) == 0)
			n += snprintf(buf + n, sizeof(buf) - (size_t)n, ":%u",
				      rnd_below(100));
		pool_add(buf, (size_t)n);
	}
	for (i = 0; i < npool; i++)
		order[i] = i;
	qsort(order, npool, sizeof(order[0]), order_cmp);
}

static void model_reset(void)
{
	memset(model, 0, sizeof(model));
	munix = T0;
	mnow = 2;
	mpending = 0;
}

static bool m_live(unsigned int i)
{
	return model[i].present &&
	       (!model[i].exptime || model[i].exptime > mnow);
}

/* The model's view of a protocol exptime. */
static rel_time_t m_exptime(int64_t e)
{
	int64_t t;

	if (e == 0)
		return 0;
	if (e < 0)
		return 1;
	t = e <= MONTH ? (int64_t)mnow + e : e - (T0 - 2);
	return t < 1 ? 1 : (rel_time_t)t;
}

static void m_flush_now(void)
{
	unsigned int i;

	for (i = 0; i < npool; i++)
		model[i].present = false;
	mpending = 0;
}

static void m_advance(struct store *s, unsigned int secs)
{
	unsigned int i;

	munix += secs;
	mnow += secs;
	store_set_time(s, munix);
	if (mpending && mpending <= mnow) {
		for (i = 0; i < npool; i++)
			if (model[i].stime < mpending)
				model[i].present = false;
		mpending = 0;
	}
}

/* A random protocol exptime: mostly never, some relative, absolute, past. */
static int64_t rnd_exptime(void)
{
	switch (rnd_below(16)) {
	case 0:
		return 1 + rnd_below(4);
	case 1:
		return T0 + (munix - T0) + 1 + rnd_below(4);
	case 2:
		return -(int64_t)rnd_below(3) - 1;
	case 3:
		return T0 - rnd_below(1000);	/* absolute, past */
	default:
		return 0;
	}
}

static void rnd_value(char *buf, uint32_t *n)
{
	uint32_t len, i;

	switch (rnd_below(8)) {
	case 0:	/* a number, for incr/decr */
		*n = (uint32_t)snprintf(buf, 24, "%" PRIu64,
					rnd() >> rnd_below(64));
		return;
	case 7:	/* a number as strtoull() may or may not read it */
		if (rnd_below(2)) {
			static const char *const pre[] = {
				"", " ", "\t", "0", "-", "+", "-0", " -", "x" };
			static const char *const post[] = {
				"", " ", "\r\n", "a", "\0", "0", " 1", "-" };

			*n = (uint32_t)snprintf(buf, 64, "%s%" PRIu64 "%s",
					pre[rnd_below(9)],
					rnd() >> rnd_below(64),
					post[rnd_below(7)]);
			if (rnd_below(8) == 0)
				buf[(*n)++] = '\0';
			return;
		}
		len = rnd_below(48);
		break;
	case 1:
		len = rnd_below(VAL_MAX / 2);
		break;
	default:
		len = rnd_below(48);
		break;
	}
	for (i = 0; i < len; i++)
		buf[i] = (char)rnd();
	*n = len;
}

/*
 * The reference for what incr accepts: the C library's strtoull() on a
 * NUL-terminated copy followed by "\r\n", checked as memcached's
 * safe_strtoull() checks it.
 */
static bool m_number(const struct ment *e, uint64_t *v)
{
	char text[VAL_MAX + 3], *end;
	unsigned long long n;

	memcpy(text, e->val, e->nval);
	memcpy(text + e->nval, "\r\n", 3);
	errno = 0;
	n = strtoull(text, &end, 10);
	if (errno == ERANGE || end == text)
		return false;
	if (!isspace((unsigned char)*end) && *end != '\0')
		return false;
	if ((long long)n < 0 && memchr(text, '-', (size_t)(end - text)))
		return false;
	*v = n;
	return true;
}

static bool item_matches(const struct item *it, unsigned int i)
{
	const struct ment *e = &model[i];

	return it->nkey == pool[i].n &&
	       !memcmp(item_key(it), pool[i].k, pool[i].n) &&
	       it->nbytes == e->nval &&
	       !memcmp(item_value_const(it), e->val, e->nval) &&
	       item_flags(it) == e->flags && it->cas == e->cas;
}

/* A random bound: a pool key, an odd key, or - / +. */
static struct store_bound rnd_bound(void)
{
	static const char *const extra[] = {
		"", "k", "k5", "zzzz", "1000", "5", "18446744073709551616",
		"99999999999999999999", "00", "L",
	};
	struct store_bound b;
	unsigned int r = rnd_below(20);

	if (r == 0)
		return bnd(BOUND_MIN, NULL);
	if (r == 1)
		return bnd(BOUND_MAX, NULL);
	b.kind = rnd_below(2) ? BOUND_INCL : BOUND_EXCL;
	if (r < 5) {
		b.key = extra[rnd_below(ARRAY_SIZE(extra))];
		b.nkey = strlen(b.key);
	} else {
		unsigned int i = rnd_below(npool);

		b.key = pool[i].k;
		b.nkey = pool[i].n;
	}
	return b;
}

static bool m_in(unsigned int i, const struct store_bound *from,
		 const struct store_bound *to)
{
	int c;

	if (from->kind == BOUND_MAX || to->kind == BOUND_MIN)
		return false;
	if (from->kind != BOUND_MIN) {
		c = m_cmp(pool[i].k, pool[i].n, from->key, from->nkey);
		if (c < 0 || (c == 0 && from->kind == BOUND_EXCL))
			return false;
	}
	if (to->kind != BOUND_MAX) {
		c = m_cmp(pool[i].k, pool[i].n, to->key, to->nkey);
		if (c > 0 || (c == 0 && to->kind == BOUND_EXCL))
			return false;
	}
	return true;
}

static unsigned long mismatches;
static bool verbose_model;

#define MCHECK(cond, ...) do {						\
	if (!(cond)) {							\
		if (mismatches++ < 20)					\
			CHECK_MSG(cond, __VA_ARGS__);			\
		else							\
			check_failed++;					\
	}								\
} while (0)

/* Everything the store holds is what the model holds, and vice versa. */
static void m_verify_all(struct store *s, const char *when)
{
	struct store_bound f = bnd(BOUND_MIN, NULL), t = bnd(BOUND_MAX, NULL);
	unsigned int i, live = 0, k = 0;
	static struct item *out[POOL_MAX + 1];
	struct store_stats st;
	int n;

	check_store(s, when);
	for (i = 0; i < npool; i++)
		live += m_live(i);
	n = store_range(s, &f, &t, false, POOL_MAX + 1, out);
	MCHECK(n == (int)live, "%s: full range %d, model %u", when, n, live);
	for (i = 0; i < npool && n >= 0; i++) {
		unsigned int p = order[i];

		if (!m_live(p))
			continue;
		MCHECK(k < (unsigned int)n && item_matches(out[k], p),
		       "%s: full range item %u (%.*s)", when, k,
		       (int)pool[p].n, pool[p].k);
		k++;
	}
	for (i = 0; n > 0 && i < (unsigned int)n; i++)
		item_put(out[i]);
	store_expire_step(s, 1u << 30);
	store_stats(s, &st);
	MCHECK(st.curr_items == live, "%s: curr_items %" PRIu64 " model %u",
	       when, st.curr_items, live);
	MCHECK(store_count(s, &f, &t) == live, "%s: count", when);
	if (verbose_model)
		printf("%s: %u live keys, %" PRIu64 " items ever stored, "
		       "%" PRIu64 " reclaimed, %" PRIu64 " hash buckets\n",
		       when, live, st.total_items, st.reclaimed,
		       st.hash_buckets);
}

/*
 * One random operation. With @inject, allocation failures are armed and
 * an operation may fail for memory, leaving the model as it was.
 */
static void m_step(struct store *s, bool inject)
{
	static char val[VAL_MAX + 24];
	unsigned int i = rnd_below(npool), r = rnd_below(1000);
	const char *key = pool[i].k;
	size_t nkey = pool[i].n;
	struct ment *e = &model[i];
	bool live = m_live(i);
	uint64_t cas = 0, v, want;
	enum store_miss why;
	struct item *it;
	uint32_t nval;
	int ret;

	if (r < 220) {			/* set / add / replace / cas */
		enum store_op op = r < 120 ? STORE_OP_SET :
				   r < 150 ? STORE_OP_ADD :
				   r < 180 ? STORE_OP_REPLACE : STORE_OP_CAS;
		int64_t pexp = rnd_exptime();
		uint32_t flags = (uint32_t)rnd();
		uint64_t req = live && rnd_below(2) ? e->cas :
			       live ? e->cas + 1 + rnd_below(3) : rnd();
		int expect;

		rnd_value(val, &nval);
		expect = op == STORE_OP_SET ? STORE_STORED :
			 op == STORE_OP_ADD ? (live ? STORE_NOT_STORED :
					       STORE_STORED) :
			 op == STORE_OP_REPLACE ? (live ? STORE_STORED :
						   STORE_NOT_STORED) :
			 !live ? STORE_NOT_FOUND :
			 req == e->cas ? STORE_STORED : STORE_EXISTS;
		ret = put_n(s, key, nkey, val, nval, flags,
			    store_exptime(s, pexp), op, req, &cas);
		if (inject && ret == STORE_NO_MEMORY)
			return;
		MCHECK(ret == expect, "op %d on %.*s: %d, want %d", op,
		       (int)nkey, key, ret, expect);
		if (ret == STORE_STORED) {
			MCHECK(!live || cas != e->cas, "cas not renewed");
			e->present = true;
			e->flags = flags;
			e->exptime = m_exptime(pexp);
			e->stime = mnow;
			e->cas = cas;
			e->nval = nval;
			memcpy(e->val, val, nval);
		}
	} else if (r < 290) {		/* append / prepend */
		bool pre = r >= 255;

		rnd_value(val, &nval);
		if (nval > 64)
			nval = 64;
		if (live && e->nval + nval > VAL_MAX) {
			ret = store_delete(s, key, nkey);
			e->present = false;
			return;
		}
		ret = put_n(s, key, nkey, val, nval, 0, 0,
			    pre ? STORE_OP_PREPEND : STORE_OP_APPEND, 0, &cas);
		if (inject && ret == STORE_NO_MEMORY)
			return;
		MCHECK(ret == (live ? STORE_STORED : STORE_NOT_STORED),
		       "append %.*s: %d", (int)nkey, key, ret);
		if (ret == STORE_STORED) {
			if (pre) {
				memmove(e->val + nval, e->val, e->nval);
				memcpy(e->val, val, nval);
			} else {
				memcpy(e->val + e->nval, val, nval);
			}
			e->nval += nval;
			e->stime = mnow;
			e->cas = cas;
		}
	} else if (r < 360) {		/* delete */
		ret = store_delete(s, key, nkey);
		MCHECK(ret == (live ? 0 : -ENOENT), "delete %.*s: %d",
		       (int)nkey, key, ret);
		e->present = false;
	} else if (r < 560) {		/* get / gat */
		bool touch = r >= 530;
		int64_t pexp = rnd_exptime();

		it = touch ? get_touch(s, key, nkey,
					     store_exptime(s, pexp), &why) :
			     lookup_get(s, key, nkey, &why);
		/* an item made without an expiry slot takes one in a copy;
		 * with no memory for it the gat says so and the item stays
		 * as it was (store_lookup()) */
		if (inject && why == STORE_TOUCH_NO_MEMORY) {
			MCHECK(touch && live && !it, "gat %.*s: no memory",
			       (int)nkey, key);
			MCHECK(!touch_took(s, key, nkey, pexp) ||
			       m_exptime(pexp) == e->exptime,
			       "gat %.*s: touched all the same", (int)nkey,
			       key);
			return;
		}
		MCHECK(!!it == live, "get %.*s: %s", (int)nkey, key,
		       it ? "hit" : "miss");
		MCHECK((why == STORE_HIT) == live, "get %.*s: why %d",
		       (int)nkey, key, why);
		if (it) {
			if (live)
				MCHECK(item_matches(it, i), "get %.*s: value",
				       (int)nkey, key);
			item_put(it);
		}
		if (live && touch)
			e->exptime = m_exptime(pexp);
	} else if (r < 590) {		/* touch */
		int64_t pexp = rnd_exptime();

		ret = touch_key(s, key, nkey, store_exptime(s, pexp));
		if (inject && ret == -ENOMEM) {	/* as the gat above */
			MCHECK(live, "touch %.*s: no memory", (int)nkey, key);
			MCHECK(!touch_took(s, key, nkey, pexp) ||
			       m_exptime(pexp) == e->exptime,
			       "touch %.*s: touched all the same", (int)nkey,
			       key);
			return;
		}
		MCHECK(ret == (live ? 0 : -ENOENT), "touch %.*s", (int)nkey,
		       key);
		if (live)
			e->exptime = m_exptime(pexp);
	} else if (r < 680) {		/* incr / decr */
		bool incr = r < 635;
		uint64_t delta = rnd() >> rnd_below(64);
		bool num = live && m_number(e, &v);

		ret = arith(s, key, nkey, incr, delta, &want, &cas);
		if (inject && ret == -ENOMEM)
			return;
		MCHECK(ret == (!live ? -ENOENT : num ? 0 : -EINVAL),
		       "incr %.*s: %d", (int)nkey, key, ret);
		if (ret == 0 && num) {
			v = incr ? v + delta : delta > v ? 0 : v - delta;
			MCHECK(want == v, "incr %.*s value", (int)nkey, key);
			e->nval = (uint32_t)snprintf(e->val, 24, "%" PRIu64, v);
			e->stime = mnow;
			e->cas = cas;
		}
	} else if (r < 760) {		/* range, either way */
		static struct item *out[64];
		struct store_bound f = rnd_bound(), t = rnd_bound();
		bool rev = r >= 720;
		unsigned int max = 1 + rnd_below(rnd_below(8) ? 20 : 64);
		unsigned int k = 0, j;
		int n = store_range(s, &f, &t, rev, max, out);

		if (inject && n == -ENOMEM)
			return;
		for (j = 0; j < npool && k < max; j++) {
			unsigned int p = order[rev ? npool - 1 - j : j];

			if (!m_live(p) || !m_in(p, &f, &t))
				continue;
			MCHECK((int)k < n && item_matches(out[k], p),
			       "range%s item %u", rev ? " rev" : "", k);
			k++;
		}
		MCHECK(n == (int)k, "range%s: %d items, model %u",
		       rev ? " rev" : "", n, k);
		/* the keys alone: the same keys, copied (nothing changed
		 * since: no expiry or flush can come in between) */
		if (n >= 0) {
			static struct store_key keys[64];
			int nk = store_range_keys(s, &f, &t, rev, max, keys);

			if (!(inject && nk == -ENOMEM)) {
				MCHECK(nk == n, "range keys: %d of %d", nk, n);
				for (j = 0; nk == n && j < (unsigned int)n; j++)
					MCHECK(keys[j].nkey == out[j]->nkey &&
					       !memcmp(keys[j].key,
						       item_key(out[j]),
						       keys[j].nkey) &&
					       keys[j].binary ==
					       !!(out[j]->iflags &
						  ITEM_KEY_BINARY),
					       "range keys: key %u", j);
			}
		}
		for (j = 0; n > 0 && j < (unsigned int)n; j++)
			item_put(out[j]);
	} else if (r < 790) {		/* count */
		struct store_bound f = rnd_bound(), t = rnd_bound();
		uint64_t k = 0;
		unsigned int j;

		for (j = 0; j < npool; j++)
			k += m_live(j) && m_in(j, &f, &t);
		MCHECK(store_count(s, &f, &t) == k, "count");
	} else if (r < 800) {		/* delete_range, mostly narrow */
		unsigned int a = rnd_below(npool), b, j;
		struct store_bound f, t;
		uint64_t k = 0;

		for (j = 0; j < npool; j++)
			if (order[j] == i)
				a = j;
		b = a + rnd_below(12);
		if (b >= npool)
			b = npool - 1;
		f = bnd(BOUND_INCL, NULL);
		f.key = pool[order[a]].k;
		f.nkey = pool[order[a]].n;
		t = bnd(rnd_below(2) ? BOUND_INCL : BOUND_EXCL, NULL);
		t.key = pool[order[b]].k;
		t.nkey = pool[order[b]].n;
		if (rnd_below(50) == 0)
			f = rnd_bound();
		for (j = 0; j < npool; j++) {
			if (m_live(j) && m_in(j, &f, &t)) {
				k++;
				model[j].present = false;
			}
		}
		MCHECK(store_delete_range(s, &f, &t) == k, "delete_range");
	} else if (r < 802) {		/* flush_all now or later, rarely */
		if (rnd_below(10)) {
			store_expire_step(s, 10);
		} else if (rnd_below(4) == 0) {
			rel_time_t when = rnd_below(2) ? 0 : mnow;

			store_flush_all(s, when);
			m_flush_now();
		} else if (rnd_below(2)) {
			rel_time_t when = mnow + 1 + rnd_below(3);

			store_flush_all(s, when);
			mpending = when;
		}
	} else if (r < 830) {		/* time passes */
		m_advance(s, rnd_below(3));
	} else if (r < 840) {
		store_expire_step(s, rnd_below(200));
		store_tidy_partitions(s, rnd_below(3));
	} else {			/* more gets: the common case */
		it = lookup_get(s, key, nkey, NULL);
		MCHECK(!!it == live, "get2 %.*s", (int)nkey, key);
		if (it) {
			if (live)
				MCHECK(item_matches(it, i), "get2 value");
			item_put(it);
		}
	}
}

static void test_model(unsigned int nshards, unsigned long nops)
{
	struct store *s = new_store(nshards, 0, false, 1);
	char when[64];
	unsigned long op;

	if (!s)
		return;
	model_reset();
	mismatches = 0;
	for (op = 1; op <= nops; op++) {
		m_step(s, false);
		if (op % 1000 == 0) {
			/* the clock's work: pages emptied, items moved */
			slab_purge_idle();
			store_expire_step(s, 256);
		}
		if (op % 50000 == 0 || op == nops) {
			snprintf(when, sizeof(when), "model %u shards, op %lu",
				 nshards, op);
			verbose_model = op == nops;
			m_verify_all(s, when);
			verbose_model = false;
		}
	}
	store_destroy(s);
}

static void test_alloc_failures(unsigned int nshards, unsigned long nops)
{
	struct store *s = new_store(nshards, 0, false, 1);
	unsigned long op, failures = ak_alloc_failures();
	char when[64];

	if (!s)
		return;
	model_reset();
	mismatches = 0;
	for (op = 1; op <= nops; op++) {
		ak_alloc_fail_random(7);
		m_step(s, true);
		ak_alloc_fail_random(0);
		if (op % 20000 == 0 || op == nops) {
			snprintf(when, sizeof(when),
				 "alloc failures %u shards, op %lu", nshards,
				 op);
			m_verify_all(s, when);
		}
	}
	/* a failing radix preload: nothing stored, nothing lost */
	radix_tree_preload_drain();
	{
		struct item *it;

		CHECK(store_item_alloc(s, "123456789", 9, 0, 0, 1, &it) == 0);
		memcpy(item_value(it), "v", 1);
		ak_alloc_fail_after(0);
		CHECK(store_item_store(s, it, STORE_OP_SET, 0, NULL) ==
		      STORE_NO_MEMORY);
		ak_alloc_fail_after(-1);
		CHECK(holds(s, "123456789", NULL));
		ak_alloc_fail_after(0);
		CHECK(store_item_alloc(s, "k", 1, 0, 0, 1, &it) == -ENOMEM);
		ak_alloc_fail_after(-1);
	}
	CHECK_MSG(ak_alloc_failures() - failures > nops / 20,
		  "only %lu failures injected", ak_alloc_failures() - failures);
	m_verify_all(s, "alloc failures, end");
	store_destroy(s);
}

/* ---- the memory limit ---- */

static void fill_value(char *buf, uint32_t n, uint64_t tag)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		buf[i] = (char)('a' + (tag + i) % 26);
}

/*
 * Deletes in no order left each slab page a quarter used, and a page
 * with one item in use holds the memory of all: a daemon at -m 64 whose
 * values of 1,000 bytes were mostly deleted grew to 110 MiB when values
 * of 3,000 came. The expiry hand's walk (store_expire_step()) now moves
 * the items off the pages the slab classes empty (slab_draining()):
 * every key still holds its value, the indexes and queues stay whole, an
 * item a reader holds stays where it is, and the pages go back.
 */
#define SPARSE_ITEMS	8000
#define SPARSE_VALUE	1000

static void test_deleted_items_leave_their_pages(unsigned int nshards)
{
	static char val[SPARSE_VALUE], key[32];
	static bool kept[SPARSE_ITEMS];
	struct store *s = new_store(nshards, 0, false, 1);
	struct slab_stats before, sparse, after;
	struct item *held = NULL, *again;
	unsigned int i, call, live = 0, wrong = 0;
	size_t block = 0;
	char when[64];

	if (!s)
		return;
	slab_get_stats(&before);
	for (i = 0; i < SPARSE_ITEMS; i++) {
		/* string keys and integer keys, both indexes */
		snprintf(key, sizeof(key), i % 2 ? "k%u" : "%u", i);
		fill_value(val, SPARSE_VALUE, i);
		CHECK(put_n(s, key, strlen(key), val, SPARSE_VALUE, 0, 0,
			    STORE_OP_SET, 0, NULL) == STORE_STORED);
	}
	for (i = 0; i < SPARSE_ITEMS; i++) {
		kept[i] = rnd_below(4) == 0;
		live += kept[i];
		snprintf(key, sizeof(key), i % 2 ? "k%u" : "%u", i);
		if (!kept[i])
			CHECK(store_delete(s, key, strlen(key)) == 0);
		else if (!held && i % 2) {
			held = lookup_get(s, key, strlen(key), NULL);
			block = item_block_size_of(held);
		}
	}
	slab_thread_flush();
	slab_get_stats(&sparse);
	for (call = 0; call < 16; call++) {
		slab_purge_idle();
		store_expire_step(s, 1u << 20);
		slab_thread_flush();
		if (held)	/* a reader's item is not moved */
			CHECK(!(held->iflags & ITEM_LINKED) ||
			      !slab_draining(held, block) ||
			      lookup_get(s, item_key(held), held->nkey,
					 NULL) == held);
	}
	slab_get_stats(&after);
	snprintf(when, sizeof(when), "sparse pages, %u shards", nshards);
	check_store(s, when);
	CHECK_MSG(after.moved_blocks > before.moved_blocks &&
		  after.drained_pages > before.drained_pages,
		  "%s: %" PRIu64 " items moved, %" PRIu64 " pages emptied",
		  when, after.moved_blocks - before.moved_blocks,
		  after.drained_pages - before.drained_pages);
	/* the quarter kept, packed: a few pages more than its bytes */
	CHECK_MSG(after.page_bytes - before.page_bytes <=
		  (uint64_t)live * (SPARSE_VALUE + 64) + 8 * 65536,
		  "%s: %" PRIu64 " page bytes hold %u items (%" PRIu64
		  " sparse)", when, after.page_bytes - before.page_bytes,
		  live, sparse.page_bytes - before.page_bytes);
	for (i = 0; i < SPARSE_ITEMS; i++) {
		snprintf(key, sizeof(key), i % 2 ? "k%u" : "%u", i);
		fill_value(val, SPARSE_VALUE, i);
		again = lookup_get(s, key, strlen(key), NULL);
		wrong += kept[i] != (again != NULL) ||
			 (again && (again->nbytes != SPARSE_VALUE ||
				    memcmp(item_value(again), val,
					   SPARSE_VALUE)));
		if (again)
			item_put(again);
	}
	CHECK_MSG(!wrong, "%s: %u keys lost or changed", when, wrong);
	if (held)
		item_put(held);
	store_destroy(s);
	slab_thread_flush();
	for (call = 0; call < 16 && slab_drains(); call++)
		slab_purge_idle();
}

static void test_memory_limit(unsigned int nshards)
{
	const size_t limit = 1 << 20;
	struct store *s = new_store(nshards, limit, false, 1);
	static char val[8192];
	struct store_stats st;
	unsigned int i, over = 0, fails = 0, lost = 0;
	char key[32];
	struct item *it;

	if (!s)
		return;
	for (i = 0; i < 20000; i++) {
		uint32_t n = rnd_below(8) ? 10 + rnd_below(400) :
					    rnd_below(6000);
		size_t nkey = i % 2 ? (size_t)snprintf(key, sizeof(key), "%u", i)
				    : (size_t)snprintf(key, sizeof(key),
						       "key:%u", i);

		fill_value(val, n, i);
		if (put_n(s, key, nkey, val, n, i, 0, STORE_OP_SET, 0, NULL) !=
		    STORE_STORED)
			fails++;
		over += store_memory_used(s) > limit;
		/* the item just stored is there (some stay unread) */
		if (i % 3)
			continue;
		it = lookup_get(s, key, nkey, NULL);
		lost += !it || it->nbytes != n || memcmp(item_value(it), val, n);
		if (it)
			item_put(it);
	}
	CHECK_MSG(fails == 0, "%u stores failed", fails);
	CHECK_MSG(over == 0, "%u stores left the memory over the limit", over);
	CHECK_MSG(lost == 0, "%u items gone right after their store", lost);
	store_stats(s, &st);
	CHECK(st.evictions > 0 && st.evicted_unfetched > 0);
	CHECK(st.bytes + st.index_bytes <= limit);
	CHECK(st.bytes + st.index_bytes > limit / 2);	/* the room is used */
	check_store(s, "memory limit");

	/* too large for the whole store */
	CHECK(store_item_alloc(s, "big", 3, 0, 0, (uint32_t)limit, &it) ==
	      -E2BIG);
	it = item_alloc("big", 3, 0, 0, (uint32_t)limit);
	CHECK(it != NULL);
	if (it) {
		memset(item_value(it), 'x', limit);
		CHECK(store_item_store(s, it, STORE_OP_SET, 0, NULL) ==
		      STORE_TOO_LARGE);
	}
	CHECK(store_item_alloc(s, "big", 3, 0, 0, 2 << 20, &it) == -E2BIG);
	CHECK(holds(s, "big", NULL));
	/* an append that would outgrow the item size limit */
	CHECK(set(s, "grow", "x") == STORE_STORED);
	it = item_alloc("grow", 4, 0, 0, 1024 * 1024 - 50);
	if (it) {
		memset(item_value(it), 'y', 1024 * 1024 - 50);
		CHECK(store_item_store(s, it, STORE_OP_APPEND, 0, NULL) ==
		      STORE_TOO_LARGE);
	}
	CHECK(holds(s, "grow", "x"));
	check_store(s, "memory limit, end");
	store_destroy(s);
}

/*
 * A store into a shard with nothing to evict, while the others hold all the
 * memory, evicts from them. Integer keys pick the shard by value >> 6.
 */
static void test_evict_elsewhere(void)
{
	const size_t limit = 512 << 10;
	struct store *s = new_store(4, limit, false, 1);
	static char val[2000];
	struct store_stats st;
	char key[32];
	uint64_t v;
	unsigned int i, fails = 0;

	if (!s)
		return;
	memset(val, 'e', sizeof(val));
	/* shard 0 only: 0..63, 256..319, ... */
	for (v = 0, i = 0; i < 1000; i++, v++) {
		if ((v >> 6) % 4)
			v += 192;
		snprintf(key, sizeof(key), "%" PRIu64, v);
		fails += put_n(s, key, strlen(key), val, sizeof(val), 0, 0,
			       STORE_OP_SET, 0, NULL) != STORE_STORED;
	}
	store_stats(s, &st);
	CHECK(fails == 0 && st.evictions > 0);
	/*
	 * Shard 1 (64..127) is empty: it takes from shard 0 until it holds
	 * half its fair share (limit / 4 / 2: 64 KB, some 30 items here).
	 */
	for (i = 64; i < 88; i++) {
		snprintf(key, sizeof(key), "%u", i);
		fails += put_n(s, key, strlen(key), val, sizeof(val), 0, 0,
			       STORE_OP_SET, 0, NULL) != STORE_STORED;
		CHECK(store_memory_used(s) <= limit);
	}
	CHECK_MSG(fails == 0, "%u stores failed", fails);
	for (i = 64; i < 88; i++) {
		snprintf(key, sizeof(key), "%u", i);
		CHECK(!holds(s, key, NULL));
	}
	/*
	 * Past it, a shard evicts its own: 64..87, read since they came in,
	 * move to main; the first of 88.. never read leave small's tail.
	 */
	for (i = 88; i < 128; i++) {
		snprintf(key, sizeof(key), "%u", i);
		fails += put_n(s, key, strlen(key), val, sizeof(val), 0, 0,
			       STORE_OP_SET, 0, NULL) != STORE_STORED;
	}
	CHECK(fails == 0 && !holds(s, "64", NULL) && !holds(s, "87", NULL) &&
	      holds(s, "88", NULL) && !holds(s, "127", NULL));
	/* one item larger than everything but one shard's share */
	{
		struct item *it = item_alloc("big", 3, 0, 0, 400 << 10);

		if (it) {
			memset(item_value(it), 'b', 400 << 10);
			CHECK(store_item_store(s, it, STORE_OP_SET, 0, NULL) ==
			      STORE_STORED);
		}
		CHECK(store_memory_used(s) <= limit);
	}
	check_store(s, "evict elsewhere");
	store_destroy(s);

	/*
	 * A shard below its share, the others empty: it evicts its own. The
	 * large item costs jemalloc's 448 KiB class (a block of 480 KiB took
	 * 512 KiB, a slab class's half of a 1 MiB page: more than the limit
	 * holds beside the queues), and 40 of 2,000 bytes leave it no room.
	 */
	s = new_store(2, limit, false, 1);
	if (!s)
		return;
	for (i = 0; i < 40; i++) {
		snprintf(key, sizeof(key), "%u", i);
		CHECK(put_n(s, key, strlen(key), val, sizeof(val), 0, 0,
			    STORE_OP_SET, 0, NULL) == STORE_STORED);
	}
	{
		struct item *it = item_alloc("50", 2, 0, 0, 440 << 10);

		if (it) {
			CHECK(item_alloc_size(it) == 448 << 10);
			memset(item_value(it), 'b', 440 << 10);
			CHECK(store_item_store(s, it, STORE_OP_SET, 0, NULL) ==
			      STORE_STORED);
		}
		CHECK(store_memory_used(s) <= limit);
		CHECK(!holds(s, "50", NULL) && holds(s, "0", NULL));
	}
	check_store(s, "evict here after all");
	store_destroy(s);
}

/* Items read since they came in stay; unread ones go first (S3-FIFO). */
static void test_read_items_stay(void)
{
	const size_t limit = 256 << 10;
	struct store *s = new_store(1, limit, false, 4);
	unsigned int i, n = 0, kept_hot = 0, kept_cold = 0, lost_new = 0;
	char key[16], val[100];
	struct store_stats st;

	if (!s)
		return;
	memset(val, 'v', sizeof(val));
	/* fill to a little below the limit: no eviction yet */
	while (store_memory_used(s) +
	       4 * item_total_size("c1234567", 8, 0, 0, sizeof(val)) < limit) {
		snprintf(key, sizeof(key), "c%u", n++);
		CHECK(put_n(s, key, strlen(key), val, sizeof(val), 0, 0,
			    STORE_OP_SET, 0, NULL) == STORE_STORED);
	}
	store_stats(s, &st);
	CHECK(st.evictions == 0 && st.curr_items == n);
	for (i = 0; i < n; i += 2) {		/* read the even ones */
		snprintf(key, sizeof(key), "c%u", i);
		CHECK(!holds(s, key, NULL));
	}
	for (i = 0; i < n / 4; i++) {		/* evict a quarter */
		snprintf(key, sizeof(key), "d%u", i);
		CHECK(put_n(s, key, strlen(key), val, sizeof(val), 0, 0,
			    STORE_OP_SET, 0, NULL) == STORE_STORED);
	}
	for (i = 0; i < n; i++) {
		struct item *it;

		snprintf(key, sizeof(key), "c%u", i);
		it = lookup_get(s, key, strlen(key), NULL);
		if (it) {
			item_put(it);
			if (i % 2)
				kept_cold++;
			else
				kept_hot++;
		}
	}
	/*
	 * A read key still in small when small's tail is cut moves to main
	 * with its frequency spent (S3-FIFO), where the hand may take it:
	 * nearly all the read ones stay, not all.
	 */
	CHECK_MSG(kept_hot * 10 >= (n + 1) / 2 * 9, "hot kept %u of %u",
		  kept_hot, (n + 1) / 2);
	CHECK_MSG(kept_cold < n / 2, "cold kept %u of %u", kept_cold, n / 2);
	/*
	 * The d keys, unread too, may go as well: S3-FIFO evicts a new key
	 * not read since it came in at small's tail (how many depends on the
	 * hash order of main's hand). Every eviction is one of the two.
	 */
	for (i = 0; i < n / 4; i++) {
		snprintf(key, sizeof(key), "d%u", i);
		lost_new += holds(s, key, NULL);
	}
	store_stats(s, &st);
	CHECK(st.evictions > 0 &&
	      st.evictions == n - kept_hot - kept_cold + lost_new);
	check_store(s, "read items stay");
	store_destroy(s);
}

/*
 * A string item entering main is passed by once when its home slot is
 * within the half turn ahead of main's hand (main_entry_freq_locked()):
 * from every hand position exactly half the table, the half that starts
 * at the hand and runs forward, wrapping; with the hand still over the
 * integer keys, the first half.
 */
static void test_main_entry_waits_a_turn(void)
{
	struct store *s = new_store(1, 0, false, 6);
	uint64_t n, hand, pos;
	struct shard *sh;

	if (!s)
		return;
	sh = &s->shards[0];
	shard_lock(sh);
	n = htable_slots_n(&sh->ht);
	CHECK(n == 64 && !sh->ht.old);
	for (hand = 0; hand <= n; hand++) {
		unsigned int got = 0, runs = 0, last;

		sh->hand.in_strs = true;
		sh->hand.slot = hand;
		last = main_entry_freq_locked(sh, (n - 1) << 32);
		for (pos = 0; pos < n; pos++) {
			unsigned int f = main_entry_freq_locked(sh, pos << 32);

			got += f;
			runs += f && !last;
			last = f;
		}
		CHECK_MSG(got == n / 2 && runs == 1, "hand %" PRIu64
			  ": %u protected in %u runs", hand, got, runs);
		CHECK(main_entry_freq_locked(sh, (hand % n) << 32) == 1);
		CHECK(main_entry_freq_locked(sh, ((hand + n - 1) % n) << 32) ==
		      0);
	}
	sh->hand.in_strs = false;
	for (pos = 0; pos < n; pos++)
		CHECK(main_entry_freq_locked(sh, pos << 32) == (pos < n / 2));
	shard_unlock(sh);
	store_destroy(s);
}

static void test_no_evict(unsigned int nshards)
{
	const size_t limit = 1 << 20;
	struct store *s = new_store(nshards, limit, true, 1);
	static char val[4096];
	unsigned int i, stored = 0, refused = 0, lost = 0;
	struct store_stats st;
	char key[32];
	struct item *it;
	int ret;

	if (!s)
		return;
	/* expiring items: the CLOCK hand's search for a dead one finds them */
	for (i = 0; i < 50; i++) {
		snprintf(key, sizeof(key), "e%u", i);
		fill_value(val, 2000, i);
		CHECK(put_n(s, key, strlen(key), val, 2000, 0,
			    store_exptime(s, 1), STORE_OP_SET, 0, NULL) ==
		      STORE_STORED);
	}
	for (i = 0; i < 4000; i++) {
		uint32_t n = 100 + (i * 37) % 3000;

		snprintf(key, sizeof(key), i % 3 ? "%u" : "s%u", i);
		fill_value(val, n, i);
		ret = put_n(s, key, strlen(key), val, n, 0, 0, STORE_OP_SET,
			    0, NULL);
		CHECK(ret == STORE_STORED || ret == STORE_NO_MEMORY);
		if (ret == STORE_STORED)
			stored++;
		else
			refused++;
		CHECK(store_memory_used(s) <= limit);
	}
	CHECK(stored > 0 && refused > 0);
	for (i = 0; i < 4000; i++) {	/* nothing lost, nothing changed */
		uint32_t n = 100 + (i * 37) % 3000;

		snprintf(key, sizeof(key), i % 3 ? "%u" : "s%u", i);
		fill_value(val, n, i);
		it = lookup_get(s, key, strlen(key), NULL);
		if (it) {
			lost += it->nbytes != n ||
				memcmp(item_value(it), val, n);
			item_put(it);
			stored--;
		}
	}
	CHECK_MSG(stored == 0 && lost == 0, "%u stored items missing, %u bad",
		  stored, lost);
	store_stats(s, &st);
	CHECK(st.evictions == 0 && st.reclaimed == 0);
	/* once expired, those make room even without eviction */
	store_set_time(s, T0 + 5);
	refused = 0;
	for (i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "after%u", i);
		fill_value(val, 1000, i);
		refused += put_n(s, key, strlen(key), val, 1000, 0, 0,
				 STORE_OP_SET, 0, NULL) != STORE_STORED;
	}
	CHECK_MSG(refused == 0, "%u refused after expiry", refused);
	store_stats(s, &st);
	CHECK(st.evictions == 0 && st.reclaimed > 0);
	check_store(s, "no evict");
	store_destroy(s);
}

/* ---- threads ---- */

#define MT_THREADS	4
#define MT_KEYS		300

struct mt_arg {
	struct store *s;
	unsigned int id;
	uint64_t rng;
	unsigned long ops;
	unsigned long bad;
	unsigned long nomem;
	unsigned long over;
	size_t limit;
	double seconds;
	unsigned long min_ops;		/* at least this many, however slow */
	uint32_t mine[MT_KEYS];		/* value tag of each private key, 0: none */
};

static uint64_t mt_rnd(struct mt_arg *a)
{
	a->rng ^= a->rng >> 12;
	a->rng ^= a->rng << 25;
	a->rng ^= a->rng >> 27;
	return a->rng * 0x2545f4914f6cdd1dULL;
}

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void mt_key(struct mt_arg *a, unsigned int k, bool mine, char *key)
{
	if (mine && k % 2)
		sprintf(key, "p%u_%u", a->id, k);
	else if (mine)
		sprintf(key, "%u", a->id * 100000 + k);
	else if (k % 2)
		sprintf(key, "s%u", k);
	else
		sprintf(key, "%u", 900000 + k);
}

static void *mt_thread(void *arg)
{
	struct mt_arg *a = arg;
	double end = now_sec() + a->seconds;
	static __thread char val[2048];
	static __thread struct item *out[50];
	char key[32], key2[32];

	while (a->ops % 256 || now_sec() < end || a->ops < a->min_ops) {
		uint64_t r = mt_rnd(a);
		unsigned int k = (unsigned int)(r >> 32) % MT_KEYS;
		bool mine = r & 1;
		unsigned int op = (unsigned int)(r >> 8) % 100;
		uint32_t tag = (uint32_t)(r >> 16) | 1, n;
		struct item *it;

		a->ops++;
		mt_key(a, k, mine, key);
		if (op < 35) {
			int ret;

			n = tag % 600;
			fill_value(val, n, tag);
			ret = put_n(a->s, key, strlen(key), val, n, tag, 0,
				    STORE_OP_SET, 0, NULL);
			a->bad += ret != STORE_STORED && ret != STORE_NO_MEMORY;
			a->nomem += ret == STORE_NO_MEMORY;
			if (mine)
				a->mine[k] = ret == STORE_STORED ? tag : 0;
			a->over += a->limit &&
				   store_memory_used(a->s) > a->limit;
		} else if (op < 70) {
			it = lookup_get(a->s, key, strlen(key), NULL);
			if (it && mine) {
				n = a->mine[k] % 600;
				fill_value(val, n, a->mine[k]);
				a->bad += !a->mine[k] || item_flags(it) != a->mine[k] ||
					  it->nbytes != n ||
					  memcmp(item_value(it), val, n);
			}
			if (it)
				item_put(it);
		} else if (op < 78) {
			store_delete(a->s, key, strlen(key));
			if (mine)
				a->mine[k] = 0;
		} else if (op < 82 && !mine) {
			put_n(a->s, key, strlen(key), "+", 1, 0, 0,
			      STORE_OP_APPEND, 0, NULL);
		} else if (op < 86 && !mine) {
			uint64_t v;

			if (arith(a->s, key, strlen(key), true, 1, &v,
					    NULL) == -ENOENT)
				put_n(a->s, key, strlen(key), "1", 1, 0, 0,
				      STORE_OP_ADD, 0, NULL);
		} else if (op < 94) {	/* a range: sorted and in bounds */
			struct store_bound f = bnd(BOUND_INCL, key), t;
			bool rev = r & 2;
			int j, got;

			mt_key(a, (k + 40) % MT_KEYS, !mine, key2);
			t = bnd(BOUND_INCL, key2);
			if (store_bound_cmp(&f, &t) > 0) {
				struct store_bound x = f;

				f = t;
				t = x;
			}
			got = store_range(a->s, &f, &t, rev, 50, out);
			for (j = 0; j < got; j++) {
				int cf = key_compare(item_key(out[j]),
						     out[j]->nkey, f.key, f.nkey);
				int ct = key_compare(item_key(out[j]),
						     out[j]->nkey, t.key, t.nkey);

				a->bad += cf < 0 || ct > 0;
				if (j)
					a->bad += (key_compare(
						item_key(out[j - 1]),
						out[j - 1]->nkey,
						item_key(out[j]),
						out[j]->nkey) < 0) == rev;
			}
			for (j = 0; j < got; j++)
				item_put(out[j]);
		} else if (op < 96) {
			struct store_bound f = bnd(BOUND_INCL, "s"),
					   t = bnd(BOUND_EXCL, "t");

			if (r & 4)
				store_delete_range(a->s, &f, &t);
			else
				store_count(a->s, &f, &t);
		} else {
			store_expire_step(a->s, 64);
			store_tidy_partitions(a->s, 2);
		}
	}
	radix_tree_preload_drain();
	return NULL;
}

/* The clock thread's work beside the workers: sparse slab pages named,
 * the items on them moved by the expiry hand's walk. */
static bool mt_stop;

static void *mt_clock(void *arg)
{
	struct store *s = arg;
	const struct timespec pause = { 0, 200000 };

	while (!__atomic_load_n(&mt_stop, __ATOMIC_ACQUIRE)) {
		slab_purge_idle();
		store_expire_step(s, 256);
		nanosleep(&pause, NULL);
	}
	return NULL;
}

static void test_threads(unsigned int nshards, size_t limit)
{
	struct store *s = new_store(nshards, limit, false, 1);
	struct mt_arg args[MT_THREADS];
	pthread_t th[MT_THREADS];
	struct store_bound f = bnd(BOUND_MIN, NULL), t = bnd(BOUND_MAX, NULL);
	unsigned long ops = 0, bad = 0, over = 0, nomem = 0;
	struct store_stats st;
	struct slab_stats slabs;
	struct item **out;
	uint64_t bytes = 0, moved;
	pthread_t clock;
	unsigned int i;
	int n;

	if (!s)
		return;
	for (i = 0; i < MT_THREADS; i++) {
		memset(&args[i], 0, sizeof(args[i]));
		args[i].s = s;
		args[i].id = i + 1;
		args[i].rng = rnd() | 1;
		args[i].limit = limit;
		args[i].seconds = 0.6;
		/* enough stores to pass the limit on a loaded machine too */
		args[i].min_ops = 16384;
		CHECK(pthread_create(&th[i], NULL, mt_thread, &args[i]) == 0);
	}
	__atomic_store_n(&mt_stop, false, __ATOMIC_RELEASE);
	CHECK(pthread_create(&clock, NULL, mt_clock, s) == 0);
	slab_get_stats(&slabs);
	moved = slabs.moved_blocks;
	for (i = 0; i < MT_THREADS; i++) {
		pthread_join(th[i], NULL);
		ops += args[i].ops;
		bad += args[i].bad;
		over += args[i].over;
		nomem += args[i].nomem;
	}
	__atomic_store_n(&mt_stop, true, __ATOMIC_RELEASE);
	pthread_join(clock, NULL);
	slab_get_stats(&slabs);
	moved = slabs.moved_blocks - moved;
	CHECK_MSG(bad == 0, "%lu bad answers in %lu operations", bad, ops);
	CHECK_MSG(over == 0, "memory over the limit %lu times", over);
	check_store(s, "threads");
	store_stats(s, &st);
	out = calloc(st.curr_items + 1, sizeof(*out));
	n = store_range(s, &f, &t, false, (unsigned int)st.curr_items + 1, out);
	CHECK_MSG(n >= 0 && (uint64_t)n == st.curr_items,
		  "full walk %d, curr_items %" PRIu64, n, st.curr_items);
	for (i = 0; n > 0 && i < (unsigned int)n; i++) {
		bytes += item_alloc_size(out[i]);
		if (i)
			CHECK(key_compare(item_key(out[i - 1]), out[i - 1]->nkey,
					  item_key(out[i]), out[i]->nkey) < 0);
		item_put(out[i]);
	}
	free(out);
	CHECK_MSG(bytes == st.bytes, "walked bytes %" PRIu64 ", stats %" PRIu64,
		  bytes, st.bytes);
	CHECK(store_count(s, &f, &t) == st.curr_items);
	if (limit)
		CHECK(st.evictions > 0);
	printf("threads: %u shards, limit %zu: %lu ops, %" PRIu64 " items, "
	       "%" PRIu64 " evictions, %lu sets refused for memory, %" PRIu64
	       " items moved\n", nshards, limit, ops, st.curr_items,
	       st.evictions, nomem, moved);
	store_destroy(s);
}

/*
 * Partitions: a store whose partitions split above 4 items. Ranges,
 * counts and delete_range across many partitions give what one tree
 * gives, and each split leaves the partitions covering the keyspace.
 */
/*
 * Keys in increasing order go in after their partition's last item
 * without a descent: the last item stays the rightmost through appends,
 * splits, replaces and deletes of it, and merges.
 */
static void test_sorted_inserts(unsigned int nshards)
{
	struct store_bound f, t;
	struct store *s;
	char key[32];
	unsigned int i;

	new_part_max = 4;
	s = new_store(nshards, 0, false, 1);
	new_part_max = 0;
	if (!s)
		return;
	for (i = 0; i < 600; i++) {
		snprintf(key, sizeof(key), "s%04u", i);
		CHECK(put(s, key, "v", 0, 0, STORE_OP_SET, 0, NULL) ==
		      STORE_STORED);
		if (i % 7 == 0)
			check_store(s, "appending");
	}
	f = bnd(BOUND_MIN, NULL);
	t = bnd(BOUND_MAX, NULL);
	CHECK(store_count(s, &f, &t) == 600);
	/* the last one replaced, then deleted, then appended again */
	CHECK(put(s, "s0599", "w", 0, 0, STORE_OP_SET, 0, NULL) ==
	      STORE_STORED);
	check_store(s, "the last replaced");
	CHECK(store_delete(s, "s0599", 5) == 0);
	check_store(s, "the last deleted");
	CHECK(put(s, "s0599", "x", 0, 0, STORE_OP_SET, 0, NULL) ==
	      STORE_STORED);
	/* going down: each a new first, with a descent */
	for (i = 0; i < 50; i++) {
		snprintf(key, sizeof(key), "r%04u", 50 - i);
		CHECK(put(s, key, "v", 0, 0, STORE_OP_SET, 0, NULL) ==
		      STORE_STORED);
	}
	check_store(s, "prepending");
	/* the top cut off, the rest merged, then appended to again */
	f = bnd(BOUND_INCL, "s0100");
	CHECK(store_delete_range(s, &f, &t) == 500);
	while (store_tidy_partitions(s, 3))
		;
	check_store(s, "merged");
	for (i = 100; i < 300; i++) {
		snprintf(key, sizeof(key), "s%04u", i);
		CHECK(put(s, key, "v", 0, 0, STORE_OP_SET, 0, NULL) ==
		      STORE_STORED);
	}
	check_store(s, "appended after the merges");
	f = bnd(BOUND_MIN, NULL);
	CHECK(store_count(s, &f, &t) == 350);
	CHECK(holds(s, "s0299", "v") && holds(s, "s0300", NULL) &&
	      holds(s, "r0001", "v"));
	store_destroy(s);
}

/*
 * What a lookup reports and does for the meta get: the item as found
 * (last access, fetched before), no bump with STORE_REQ_NO_BUMP, and the
 * recache won once (R: an expiry before the token; the touch before or
 * after the test); a new store of the key starts with no win.
 */
static void test_lookup_meta(unsigned int nshards)
{
	struct store *s = new_store(nshards, 0, false, 4);
	struct store_req req = { .key = "m", .nkey = 1 };
	struct store_res res;
	struct store_bound f, t;

	if (!s)
		return;
	CHECK(set(s, "m", "v") == STORE_STORED);
	/* no bump: nothing recorded */
	req.flags = STORE_REQ_NO_BUMP | STORE_REQ_PEEK;
	store_lookup(s, &req, &res);
	CHECK(res.why == STORE_HIT && !(res.iflags & ITEM_FETCHED) &&
	      res.atime == store_now(s));
	store_set_time(s, T0 + 5);
	req.flags = STORE_REQ_PEEK;
	store_lookup(s, &req, &res);
	CHECK(!(res.iflags & ITEM_FETCHED) && store_now(s) - res.atime == 5);
	store_lookup(s, &req, &res);
	CHECK((res.iflags & ITEM_FETCHED) && res.atime == store_now(s));
	/* R: won by the first request that sees less time left */
	CHECK(put(s, "m", "v", 0, store_exptime(s, 100), STORE_OP_SET, 0,
		  NULL) == STORE_STORED);
	req.flags = STORE_REQ_PEEK | STORE_REQ_RECACHE;
	req.recache = store_exptime(s, 50);
	store_lookup(s, &req, &res);
	CHECK(!res.won && !(res.iflags & ITEM_WIN));
	req.recache = store_exptime(s, 200);
	store_lookup(s, &req, &res);
	CHECK(res.won && !(res.iflags & ITEM_WIN));
	store_lookup(s, &req, &res);
	CHECK(!res.won && (res.iflags & ITEM_WIN));
	/* a touch before the test counts, after it not */
	CHECK(put(s, "m", "v", 0, store_exptime(s, 100), STORE_OP_SET, 0,
		  NULL) == STORE_STORED);
	req.flags = STORE_REQ_PEEK | STORE_REQ_RECACHE | STORE_REQ_TOUCH;
	req.exptime = store_exptime(s, 500);
	store_lookup(s, &req, &res);
	CHECK(!res.won && res.exptime == store_exptime(s, 100));
	req.flags |= STORE_REQ_TOUCH_LATE;
	req.exptime = store_exptime(s, 100);
	store_lookup(s, &req, &res);	/* sees 500: no win; back to 100 */
	CHECK(!res.won && res.exptime == store_exptime(s, 500));
	req.exptime = store_exptime(s, 600);
	store_lookup(s, &req, &res);	/* sees 100 before the touch */
	CHECK(res.won);
	/* no expiry: R never wins */
	CHECK(set(s, "m", "v") == STORE_STORED);
	req.flags = STORE_REQ_PEEK | STORE_REQ_RECACHE;
	store_lookup(s, &req, &res);
	CHECK(!res.won);
	check_store(s, "meta lookups");
	/* a fetch moves the last access forward, not past a flush */
	store_set_time(s, T0 + 9);
	req.flags = STORE_REQ_PEEK;
	store_lookup(s, &req, &res);
	store_flush_all(s, 0);
	CHECK(holds(s, "m", NULL));
	f = bnd(BOUND_MIN, NULL);
	t = bnd(BOUND_MAX, NULL);
	CHECK(store_count(s, &f, &t) == 0);
	check_store(s, "fetched, then flushed");
	store_destroy(s);
}

static void test_partition_splits(unsigned int nshards)
{
	struct store *s;
	struct store_bound f, t;
	struct store_stats st;
	struct item *out[64];
	char key[32], lo[32], hi[32];
	unsigned int i;
	int n;

	new_part_max = 4;
	s = new_store(nshards, 0, false, 1);
	new_part_max = 0;
	if (!s)
		return;
	for (i = 0; i < 1000; i++) {	/* an order the splits do not see */
		snprintf(key, sizeof(key), "k%04u", (i * 7919) % 1000);
		CHECK(put(s, key, "v", 0, 0, STORE_OP_SET, 0, NULL) ==
		      STORE_STORED);
		if (i % 97 == 0)
			check_store(s, "splits while filling");
	}
	for (i = 0; i < 20; i++) {	/* and integer keys beside them */
		snprintf(key, sizeof(key), "%u", i * 1000);
		CHECK(put(s, key, "i", 0, 0, STORE_OP_SET, 0, NULL) ==
		      STORE_STORED);
	}
	check_store(s, "split");
	store_stats(s, &st);
	CHECK_MSG(st.partitions > 100 && st.partitions <= 500 &&
		  st.partition_splits == st.partitions - 1,
		  "%" PRIu64 " partitions after %" PRIu64 " splits",
		  st.partitions, st.partition_splits);

	/* every 50-key window, both ways, and its count */
	for (i = 0; i + 50 <= 1000; i += 37) {
		unsigned int j;

		snprintf(lo, sizeof(lo), "k%04u", i);
		snprintf(hi, sizeof(hi), "k%04u", i + 49);
		f = bnd(BOUND_INCL, lo);
		t = bnd(BOUND_INCL, hi);
		n = store_range(s, &f, &t, false, 64, out);
		CHECK_MSG(n == 50, "window at %u: %d keys", i, n);
		for (j = 0; n == 50 && j < 50; j++) {
			snprintf(key, sizeof(key), "k%04u", i + j);
			CHECK(out[j]->nkey == 5 &&
			      !memcmp(item_key(out[j]), key, 5));
		}
		while (n > 0)
			item_put(out[--n]);
		n = store_range(s, &f, &t, true, 64, out);
		for (j = 0; n == 50 && j < 50; j++) {
			snprintf(key, sizeof(key), "k%04u", i + 49 - j);
			CHECK(!memcmp(item_key(out[j]), key, 5));
		}
		CHECK(n == 50);
		while (n > 0)
			item_put(out[--n]);
		CHECK(store_count(s, &f, &t) == 50);
	}
	/* the integers come first, the strings after, across the splits */
	f = bnd(BOUND_INCL, "15000");
	t = bnd(BOUND_EXCL, "k0003");
	n = store_range(s, &f, &t, false, 64, out);
	CHECK(n == 8 && out[0]->nkey == 5 && out[4]->nkey == 5 &&
	      !memcmp(item_key(out[5]), "k0000", 5));
	while (n > 0)
		item_put(out[--n]);
	f = bnd(BOUND_MIN, NULL);
	t = bnd(BOUND_MAX, NULL);
	CHECK(store_count(s, &f, &t) == 1020);
	/* delete_range over many partitions */
	f = bnd(BOUND_INCL, "k0100");
	t = bnd(BOUND_EXCL, "k0900");
	CHECK(store_delete_range(s, &f, &t) == 800);
	CHECK(holds(s, "k0099", "v") && holds(s, "k0100", NULL) &&
	      holds(s, "k0899", NULL) && holds(s, "k0900", "v"));
	f = bnd(BOUND_MIN, NULL);
	t = bnd(BOUND_MAX, NULL);
	CHECK(store_count(s, &f, &t) == 220);
	check_store(s, "delete_range over partitions");

	/* what the deletes left small merges, a few at a time */
	{
		uint64_t before;
		unsigned int rounds = 0;

		store_stats(s, &st);
		before = st.partitions;
		while (store_tidy_partitions(s, 3) && rounds < 1000) {
			rounds++;
			if (rounds % 10 == 0)
				check_store(s, "merging");
		}
		store_stats(s, &st);
		CHECK_MSG(st.partitions < before - 150 &&
			  st.partition_merges == before - st.partitions,
			  "%" PRIu64 " partitions of %" PRIu64 " after %" PRIu64
			  " merges", st.partitions, before,
			  st.partition_merges);
		check_store(s, "merged");
		f = bnd(BOUND_INCL, "k0090");
		t = bnd(BOUND_INCL, "k0909");
		CHECK(store_count(s, &f, &t) == 20);
		n = store_range(s, &f, &t, true, 64, out);
		CHECK(n == 20 && !memcmp(item_key(out[0]), "k0909", 5) &&
		      !memcmp(item_key(out[10]), "k0099", 5) &&
		      !memcmp(item_key(out[19]), "k0090", 5));
		while (n > 0)
			item_put(out[--n]);
		/* and they split again as they fill */
		for (i = 100; i < 900; i++) {
			snprintf(key, sizeof(key), "k%04u", i);
			CHECK(put(s, key, "v", 0, 0, STORE_OP_SET, 0, NULL) ==
			      STORE_STORED);
		}
		f = bnd(BOUND_MIN, NULL);
		t = bnd(BOUND_MAX, NULL);
		CHECK(store_count(s, &f, &t) == 1020);
		check_store(s, "split after the merges");
	}
	store_destroy(s);
}

/* A pager and writers that split partitions under it. */
#define PG_STABLE	3000

struct pg_arg {
	struct store *s;
	uint64_t rng;
	bool *stop;			/* atomic */
	bool tidy;
	unsigned long *ops;		/* shared: the writers' waves */
};

static void *pg_writer(void *arg)
{
	struct pg_arg *a = arg;
	char key[32];

	while (!__atomic_load_n(a->stop, __ATOMIC_RELAXED)) {
		if (a->tidy) {		/* the third thread merges */
			store_tidy_partitions(a->s, 4);
			continue;
		}
		uint64_t r = a->rng = a->rng * 6364136223846793005ULL +
				      1442695040888963407ULL;
		unsigned int k = (unsigned int)(r >> 33) % PG_STABLE;

		/* keys between the stable ones, never one of them; waves of
		 * mostly sets, then mostly deletes, so partitions split and
		 * then shrink enough to merge */
		bool fill = (__atomic_fetch_add(a->ops, 1, __ATOMIC_RELAXED) /
			     12000) % 2 == 0;

		snprintf(key, sizeof(key), "p%05u_%u", k,
			 (unsigned int)(r >> 20) % 2);
		if ((unsigned int)(r >> 8) % 10 < (fill ? 9u : 0u))
			put(a->s, key, "w", 0, 0, STORE_OP_SET, 0, NULL);
		else
			store_delete(a->s, key, strlen(key));
	}
	radix_tree_preload_drain();
	return NULL;
}

/*
 * Paging: every key present and unchanged for the whole paged scan comes
 * once, never twice, in order, while writers add and delete others in
 * waves and partitions split and merge between pages.
 */
static void test_paging_under_splits(void)
{
	static unsigned char seen[PG_STABLE];
	bool stop = false;
	unsigned long ops = 0;
	struct pg_arg args[3];
	pthread_t th[3];
	struct store_stats st;
	struct store *s;
	unsigned int i, pass, twice = 0, missed = 0, disorder = 0;
	char key[32], last[KEY_MAX_LENGTH + 1];

	new_part_max = 64;
	s = new_store(4, 0, false, 1);
	new_part_max = 0;
	if (!s)
		return;
	for (i = 0; i < PG_STABLE; i += 4) {	/* a quarter: room to merge */
		snprintf(key, sizeof(key), "p%05u", i);
		put(s, key, "s", 0, 0, STORE_OP_SET, 0, NULL);
	}
	for (i = 0; i < 3; i++) {
		args[i].s = s;
		args[i].rng = rnd() | 1;
		args[i].stop = &stop;
		args[i].tidy = i == 2;
		args[i].ops = &ops;
		CHECK(pthread_create(&th[i], NULL, pg_writer, &args[i]) == 0);
	}
	/* 12 passes at least, and until the writers have had a few waves */
	for (pass = 0; pass < 12 ||
	     (__atomic_load_n(&ops, __ATOMIC_RELAXED) < 200000 &&
	      pass < 2000); pass++) {
		bool reverse = pass & 1;
		size_t nlast = 0;

		memset(seen, 0, sizeof(seen));
		for (;;) {
			struct store_bound f = bnd(BOUND_MIN, NULL),
					   t = bnd(BOUND_MAX, NULL);
			struct item *out[7];
			int n, j;

			if (nlast) {
				struct store_bound b = { BOUND_EXCL, last,
							 nlast };

				if (reverse)
					t = b;
				else
					f = b;
			}
			n = store_range(s, &f, &t, reverse, 7, out);
			for (j = 0; j < n; j++) {
				const struct item *it = out[j];
				unsigned int k;

				if (nlast && (key_bytes_cmp(item_key(it),
						it->nkey, last, nlast) > 0) ==
					     reverse)
					disorder++;
				memcpy(last, item_key(it), it->nkey);
				nlast = it->nkey;
				if (it->nkey != 6)
					continue;	/* a writer's */
				if (sscanf(item_key(it) + 1, "%5u", &k) != 1 ||
				    k >= PG_STABLE || k % 4 || seen[k]++)
					twice++;
			}
			for (j = 0; j < n; j++)
				item_put(out[j]);
			if (n < 7)
				break;
		}
		for (i = 0; i < PG_STABLE; i += 4)
			missed += !seen[i];
	}
	__atomic_store_n(&stop, true, __ATOMIC_RELAXED);
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	CHECK_MSG(!twice && !missed && !disorder,
		  "paging under splits: %u twice, %u missed, %u out of order",
		  twice, missed, disorder);
	store_stats(s, &st);
	printf("paging under splits: %u passes, %" PRIu64 " string items, %"
	       PRIu64 " partitions, %" PRIu64 " splits, %" PRIu64 " merges\n",
	       pass, st.curr_str_items, st.partitions, st.partition_splits,
	       st.partition_merges);
	CHECK_MSG(st.partition_splits > 100 && st.partition_merges > 10,
		  "only %" PRIu64 " splits and %" PRIu64 " merges",
		  st.partition_splits, st.partition_merges);
	check_store(s, "paging under splits");
	store_destroy(s);
}

/*
 * A table that grows and is then only read: lookups move its old slots too,
 * so it leaves the two-array lookups of a growing table (a read-mostly
 * load stayed in them, 58 instructions a get more, until enough writes
 * came).
 */
static void test_lookups_finish_a_growing_table(void)
{
	struct store *s = new_store(1, 0, false, 4);
	struct store_stats st = { 0 };
	unsigned int n = 0, i, reads = 0;
	char key[32];

	if (!s)
		return;
	do {
		snprintf(key, sizeof(key), "grow%u", n++);
		CHECK(set(s, key, "v") == STORE_STORED);
		store_stats(s, &st);
	} while (!st.rehashing && n < 100000);
	CHECK(st.rehashing);
	while (st.rehashing && reads < 4 * n) {
		snprintf(key, sizeof(key), "grow%u", reads++ % n);
		CHECK(holds(s, key, "v"));
		store_stats(s, &st);
	}
	CHECK_MSG(!st.rehashing, "%u lookups over %u items left the table "
		  "growing", reads, n);
	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "grow%u", i);
		CHECK(holds(s, key, "v"));
	}
	check_store(s, "lookups finish a growing table");
	store_destroy(s);
}

/*
 * An item stored without an expiry has no room for one (4 bytes saved an
 * item): a touch, a gat, or a stale version that must keep its old item's
 * expiry puts a copy with the room in its place, the same item otherwise:
 * value, flags, cas, marks, time and memory counts; also under -M at the
 * limit, where the touch may pass the limit by the slot's bytes.
 */
static void check_touch_slot(struct store *s, const char *key, bool gat)
{
	size_t nkey = strlen(key);
	uint64_t cas = 0;
	enum store_miss why;
	struct item *it, *was;
	rel_time_t atime;

	it = lookup_get(s, key, nkey, NULL);	/* marks it fetched */
	CHECK(it && !it->has_exptime);
	if (!it)
		return;
	cas = it->cas;
	atime = item_time(it);
	was = it;
	item_put(it);
	if (gat) {
		it = get_touch(s, key, nkey, store_exptime(s, 30), &why);
		CHECK(it && why == STORE_HIT);
		if (it)
			item_put(it);
	} else {
		CHECK(touch_key(s, key, nkey, store_exptime(s, 30)) == 0);
	}
	it = lookup_get(s, key, nkey, NULL);
	CHECK(it && it != was && it->has_exptime &&
	      item_exptime(it) == store_now(s) + 30);
	if (!it)
		return;
	CHECK(it->cas == cas && item_time(it) == atime);
	CHECK(it->iflags & ITEM_FETCHED);
	CHECK(item_flags(it) == 5 && it->nbytes == 5 &&
	      !memcmp(item_value(it), "value", 5));
	item_put(it);
	/* back to no expiry: the slot stays, holding 0 */
	CHECK(touch_key(s, key, nkey, 0) == 0);
	it = lookup_get(s, key, nkey, NULL);
	CHECK(it && it->has_exptime && item_exptime(it) == 0 && it->cas == cas);
	if (it)
		item_put(it);
	check_store(s, key);
}

/*
 * A touch or gat of an item made without an expiry slot, with no memory
 * at all for the copy that has one, answered the hit and left the item
 * untouched, its expiry unset: the client was told TOUCHED for a key that
 * then never expired. Now the lookup says so (STORE_TOUCH_NO_MEMORY, no
 * item), and the item is as it was.
 */
static void test_touch_without_memory_for_a_slot_says_so(void)
{
	struct store *s = new_store(2, 0, false, 1);
	enum store_miss why;
	int64_t t = T0;
	struct item *it;
	unsigned int i;

	if (!s)
		return;
	for (i = 0; i < 2; i++) {
		const char *key = i ? "4242" : "plain";
		size_t nkey = strlen(key);

		CHECK(put(s, key, "value", 5, 0, STORE_OP_SET, 0, NULL) ==
		      STORE_STORED);
		ak_alloc_fail_after(0);		/* the copy's block */
		CHECK(touch_key(s, key, nkey, store_exptime(s, 5)) ==
		      -ENOMEM);
		ak_alloc_fail_after(0);
		it = get_touch(s, key, nkey, store_exptime(s, 5), &why);
		CHECK(!it && why == STORE_TOUCH_NO_MEMORY);
		ak_alloc_fail_after(-1);
		/* as it was: the value, and no expiry */
		store_set_time(s, t += 10);
		CHECK(holds(s, key, "value"));
		/* with memory, the touch takes */
		CHECK(touch_key(s, key, nkey, store_exptime(s, 5)) == 0);
		store_set_time(s, t += 6);
		CHECK(!holds(s, key, "value"));
	}
	check_store(s, "touch without memory");
	store_destroy(s);
}

static void test_touch_gives_an_item_its_expiry_slot(void)
{
	struct store *s = new_store(2, 0, false, 1);
	struct store_set o = { .op = STORE_OP_CAS, .allow_stale = true };
	static char val[1000];
	uint64_t cas = 0;
	struct item *it;
	char key[32];
	unsigned int i;
	int ret;

	if (!s)
		return;
	/* keys whose copy with a slot takes a larger class */
	CHECK(item_total_size("strings", 7, 1, 5, 5) >
	      item_total_size("strings", 7, 0, 5, 5));
	CHECK(item_total_size("4242424", 7, 1, 5, 5) >
	      item_total_size("4242424", 7, 0, 5, 5));
	CHECK(put(s, "strings", "value", 5, 0, STORE_OP_SET, 0, NULL) ==
	      STORE_STORED);
	CHECK(put(s, "4242424", "value", 5, 0, STORE_OP_SET, 0, NULL) ==
	      STORE_STORED);
	check_touch_slot(s, "strings", false);
	check_touch_slot(s, "4242424", true);
	/* it expires as touched */
	CHECK(touch_key(s, "strings", 7, store_exptime(s, 2)) == 0);
	store_set_time(s, T0 + 3);
	CHECK(!holds(s, "strings", "value"));

	/* a stale version (ms I, an older cas) keeps the old item's expiry,
	 * which the new item, made without one, has no room for */
	CHECK(put(s, "ttl", "old", 0, store_exptime(s, 100), STORE_OP_SET, 0,
		  &cas) == STORE_STORED);
	CHECK(store_item_alloc(s, "ttl", 3, 0, 0, 3, &it) == 0);
	if (it) {
		memcpy(item_value(it), "new", 3);
		o.cas = cas - 1;
		CHECK(store_item_store_opts(s, it, &o) == STORE_STORED);
	}
	it = lookup_get(s, "ttl", 3, NULL);
	CHECK(it && (it->iflags & ITEM_STALE) && it->nbytes == 3 &&
	      !memcmp(item_value(it), "new", 3) &&
	      item_exptime(it) == store_now(s) + 100);
	if (it)
		item_put(it);
	check_store(s, "stale version");
	store_destroy(s);

	/* -M, full: the touch still takes, past the limit by a few bytes */
	s = new_store(1, 1 << 20, true, 1);
	if (!s)
		return;
	CHECK(put(s, "strings", "value", 5, 0, STORE_OP_SET, 0, NULL) ==
	      STORE_STORED);
	CHECK(put(s, "4242424", "value", 5, 0, STORE_OP_SET, 0, NULL) ==
	      STORE_STORED);
	for (i = 0, ret = STORE_STORED; ret == STORE_STORED; i++) {
		snprintf(key, sizeof(key), "fill%u", i);
		ret = put_n(s, key, strlen(key), val, sizeof(val), 0, 0,
			    STORE_OP_SET, 0, NULL);
	}
	CHECK(ret == STORE_NO_MEMORY);
	check_touch_slot(s, "strings", true);
	check_touch_slot(s, "4242424", false);
	store_destroy(s);
}

/*
 * incr and append from several threads, with touches that give the items an
 * expiry and take it away: no update is lost (a touch of an item made
 * without an expiry slot replaces it with a copy that has one, and an incr
 * or append built from the item before the touch must take its expiry).
 */
#define UPD_THREADS	4
#define UPD_INCRS	5000
#define UPD_APPENDS	1500

static void *upd_thread(void *arg)
{
	struct store *s = arg;
	unsigned int i;
	uint64_t v;

	for (i = 0; i < UPD_INCRS; i++) {
		arith(s, "ctr", 3, true, 1, &v, NULL);
		arith(s, "77", 2, true, 3, &v, NULL);
		arith(s, "down", 4, false, 1, &v, NULL);
		if (i < UPD_APPENDS)
			put_n(s, "log", 3, i % 2 ? "ab" : "a", 1 + i % 2, 0, 0,
			      i % 3 ? STORE_OP_APPEND : STORE_OP_PREPEND, 0,
			      NULL);
		if (i % 7 == 0) {
			rel_time_t exp = i % 2 ? store_exptime(s, 1000) : 0;

			touch_key(s, "ctr", 3, exp);
			touch_key(s, "77", 2, exp);
			touch_key(s, "log", 3, exp);
		}
	}
	radix_tree_preload_drain();
	return NULL;
}

static void test_concurrent_updates(void)
{
	struct store *s = new_store(2, 0, false, 1);
	pthread_t th[UPD_THREADS];
	char want[32];
	unsigned int i;
	struct item *it;

	if (!s)
		return;
	CHECK(set(s, "ctr", "0") == STORE_STORED);
	CHECK(set(s, "77", "5") == STORE_STORED);
	CHECK(set(s, "down", "1000000") == STORE_STORED);
	CHECK(set(s, "log", "") == STORE_STORED);
	for (i = 0; i < UPD_THREADS; i++)
		CHECK(pthread_create(&th[i], NULL, upd_thread, s) == 0);
	for (i = 0; i < UPD_THREADS; i++)
		pthread_join(th[i], NULL);
	snprintf(want, sizeof(want), "%u", UPD_THREADS * UPD_INCRS);
	CHECK_MSG(holds(s, "ctr", want), "incr lost updates");
	snprintf(want, sizeof(want), "%u", 5 + 3 * UPD_THREADS * UPD_INCRS);
	CHECK_MSG(holds(s, "77", want), "incr of an integer key lost updates");
	snprintf(want, sizeof(want), "%u", 1000000 - UPD_THREADS * UPD_INCRS);
	CHECK_MSG(holds(s, "down", want), "decr lost updates");
	it = lookup_get(s, "log", 3, NULL);
	CHECK_MSG(it && it->nbytes == UPD_THREADS * (UPD_APPENDS * 3 / 2),
		  "append/prepend lost updates: %u bytes",
		  it ? it->nbytes : 0);
	if (it)
		item_put(it);
	check_store(s, "concurrent updates");
	store_destroy(s);
}

/* store_lookup()'s copy into req->buf, and what it reports of a hit. */
static void test_lookup_copy(void)
{
	struct store *s = new_store(4, 0, false, 1);
	char buf[14];
	struct store_req req = { .buf = buf, .room = sizeof(buf) };
	struct store_res res;
	uint64_t cas = 0;
	struct item *it;

	if (!s)
		return;
	CHECK(put(s, "small", "hello", 7, 0, STORE_OP_SET, 0, &cas) ==
	      STORE_STORED);
	CHECK(put(s, "15", "fifteen-bytes!!", 9, 0, STORE_OP_SET, 0, NULL) ==
	      STORE_STORED);
	CHECK(put(s, "14", "fourteen-bytes", 3, 0, STORE_OP_SET, 0, NULL) ==
	      STORE_STORED);

	req.key = "small";
	req.nkey = 5;
	memset(buf, 0, sizeof(buf));
	CHECK(!store_lookup(s, &req, &res));
	CHECK(res.why == STORE_HIT && res.flags == 7 && res.nbytes == 5 &&
	      res.cas == cas && !memcmp(buf, "hello", 5));

	/* 14 bytes fill @room exactly: copied (the value alone) */
	req.key = "14";
	req.nkey = 2;
	CHECK(!store_lookup(s, &req, &res));
	CHECK(res.why == STORE_HIT && res.flags == 3 && res.nbytes == 14 &&
	      !memcmp(buf, "fourteen-bytes", 14));

	/* one byte more does not fit: the item comes back, held */
	req.key = "15";
	it = store_lookup(s, &req, &res);
	CHECK(it && res.why == STORE_HIT && res.nbytes == 15 &&
	      res.flags == 9 && res.cas == (it ? it->cas : 0));
	if (it)
		item_put(it);

	/* a touch through the copying lookup, and a peek */
	req.key = "small";
	req.nkey = 5;
	req.flags = STORE_REQ_TOUCH;
	req.exptime = store_exptime(s, 3);
	CHECK(!store_lookup(s, &req, &res) && res.why == STORE_HIT);
	req = (struct store_req){ .key = "15", .nkey = 2,
				  .flags = STORE_REQ_PEEK };
	CHECK(!store_lookup(s, &req, &res) && res.why == STORE_HIT);
	req.key = "nope";
	req.nkey = 4;
	CHECK(!store_lookup(s, &req, &res) && res.why == STORE_MISS_ABSENT);
	store_set_time(s, T0 + 3);
	CHECK(!lookup_get(s, "small", 5, NULL));
	CHECK(holds(s, "15", "fifteen-bytes!!"));
	check_store(s, "lookup copy");
	store_destroy(s);
}

static void test_bad_config(void)
{
	struct store_config cfg = { .nshards = 3 };
	struct store *s;

	CHECK(store_create(&cfg) == NULL);
	cfg.nshards = 0;
	CHECK(store_create(&cfg) == NULL);
	cfg.nshards = 8192;
	CHECK(store_create(&cfg) == NULL);
	cfg.nshards = 4;
	cfg.hash_bits = 10;
	cfg.mem_limit = 1024;
	cfg.queue_bits = 10;	/* rings of 1,024 slots: past the least
				 * ring and ghost, charged, they do not fit */
	CHECK(store_create(&cfg) == NULL);
	cfg.queue_bits = 0;	/* the least are outside the limit */
	s = store_create(&cfg);
	CHECK(s && store_memory_used(s) == 0);
	if (s)
		store_destroy(s);
	cfg.mem_limit = 0;
	cfg.queue_bits = 25;	/* a first ring of 2^25 slots: too large */
	CHECK(store_create(&cfg) == NULL);
}

/*
 * store_create() with its k-th allocation failing, for every k until one
 * succeeds (the store, the hash tables, the partition map, the first
 * partition): NULL, and nothing leaked or freed twice (ASan).
 */
static void test_create_alloc_failures(void)
{
	struct store_config cfg = { .nshards = 4, .hash_bits = 2 };
	struct store *s = NULL;
	int k;

	for (k = 0; k < 32 && !s; k++) {
		ak_alloc_fail_after(k);
		s = store_create(&cfg);
		ak_alloc_fail_after(-1);
	}
	CHECK_MSG(s && k > 6, "store_create succeeded after %d failures", k);
	if (s)
		check_store(s, "created after failures");
	store_destroy(s);
}

int main(void)
{
	static const uint8_t seed[HASH_SEED_BYTES] = "anchorkv-tests!";
	const char *env = getenv("SEED");
	uint64_t s = env ? strtoull(env, NULL, 0) : 0x5eedULL;

	hash_set_seed(seed);
	rng_state ^= s * 0x9e3779b97f4a7c15ULL;
	printf("seed %" PRIu64 "\n", s);
	pool_init();

	test_keys();
	test_item_shape();
	test_key_prefix_orders_as_bytes();
	test_bad_config();
	test_create_alloc_failures();
	test_examples(1);
	test_examples(16);
	test_lookup_copy();
	test_time();
	test_count_doubtful(1);
	test_count_doubtful(16);
	test_range_int_blocks(1);
	test_range_int_blocks(16);
	test_range_examples(1);
	test_range_examples(4);
	test_range_examples(64);
	test_model(1, 500000);
	test_model(16, 500000);
	test_model(4, 250000);
	test_alloc_failures(4, 60000);
	test_deleted_items_leave_their_pages(1);
	test_deleted_items_leave_their_pages(8);
	test_memory_limit(1);
	test_memory_limit(16);
	test_read_items_stay();
	test_main_entry_waits_a_turn();
	test_evict_elsewhere();
	test_touch_gives_an_item_its_expiry_slot();
	test_touch_without_memory_for_a_slot_says_so();
	test_lookups_finish_a_growing_table();
	test_concurrent_updates();
	test_no_evict(1);
	test_no_evict(8);
	test_threads(8, 256 << 10);
	test_threads(2, 0);
	test_partition_splits(1);
	test_partition_splits(16);
	test_sorted_inserts(1);
	test_sorted_inserts(16);
	test_lookup_meta(1);
	test_lookup_meta(16);
	test_paging_under_splits();
	/* the same with partitions that split above 4 items */
	new_part_max = 4;
	test_model(4, 200000);
	test_alloc_failures(4, 30000);
	test_threads(8, 256 << 10);
	test_threads(2, 0);
	new_part_max = 0;
	radix_tree_preload_drain();
	return check_report();
}
