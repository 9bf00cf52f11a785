// SPDX-License-Identifier: MIT
/*
 * test_evict.c - the store's S3-FIFO eviction (core/evict.c) against a
 * reference model written from the algorithm's description, not from the
 * code: the same hits, the same keys held after every request, the same
 * bytes, queue and ghost sizes, with values of one size and of two; then
 * the policy's promises one by one (one-hit keys do not push out the hot
 * set, a key evicted and asked for again goes straight to main unless
 * its value is large, dead items go first, main weighs reads against
 * sizes).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RND_SEED	0x53f1f0c1a55ull

#include "alloc.h"
#include "check.h"
#include "hash.h"
#include "item.h"
#include "lookup_get.h"
#include "rnd.h"
#include "store.h"

#define T0		1000
#define KEYS		150	/* keys "100".."249": one size, one order */
#define KEY_BASE	100
#define VALUE		100
#define HELD		60	/* about this many fit */

static char value[VALUE];

/* A store of one shard, its ring a sixteenth of its hash slots and its
 * ghost an eighth (no fewer than the least). */
static struct store *new_store(size_t limit, unsigned int hash_bits)
{
	struct store_config cfg = {
		.mem_limit = limit,
		.item_size_max = 1024 * 1024,
		.nshards = 1,
		.hash_bits = hash_bits,
		.queue_bits = hash_bits > 4 ? hash_bits - 4 : 0,
	};
	struct store *s = store_create(&cfg);

	CHECK_MSG(s, "store_create(limit %zu, %u hash bits)", limit,
		  hash_bits);
	if (s)
		store_set_time(s, T0);
	return s;
}

/* A store of new_store(0, 13) (a ring for small) whose limit leaves
 * @room bytes for items beyond what it holds empty; NULL if none. */
static struct store *store_with_room(size_t room)
{
	struct store *s = new_store(0, 13);

	if (s)
		CHECK(store_set_mem_limit(s, store_memory_used(s) + room) ==
		      0);
	return s;
}

static int set_key(struct store *s, const char *key, rel_time_t exptime)
{
	struct item *it;
	int err = store_item_alloc(s, key, strlen(key), 0, exptime, VALUE,
				   &it);

	if (err)
		return STORE_NO_MEMORY;
	memcpy(item_value(it), value, VALUE);
	return store_item_store(s, it, STORE_OP_SET, 0, NULL);
}

/* A read, as a client's get: a hit counts for the policy. */
static bool get_key(struct store *s, const char *key)
{
	struct item *it = lookup_get(s, key, strlen(key), NULL);

	if (it)
		item_put(it);
	return it != NULL;
}

/* Whether @key is held, without counting as a read. */
static bool peek_key(struct store *s, const char *key)
{
	struct store_req req = { .key = key, .nkey = strlen(key),
				 .flags = STORE_REQ_NO_BUMP };
	struct store_res res;
	struct item *it = store_lookup(s, &req, &res);

	if (it)
		item_put(it);
	return it != NULL;
}

static void check_store(struct store *s, const char *when)
{
	char why[256];

	CHECK_MSG(store_check_invariants(s, why, sizeof(why)) == 0, "%s: %s",
		  when, why);
}

static int set_sized(struct store *s, const char *key, uint32_t nbytes)
{
	static char buf[4096];
	struct item *it;

	if (store_item_alloc(s, key, strlen(key), 0, 0, nbytes, &it))
		return STORE_NO_MEMORY;
	memcpy(item_value(it), buf, nbytes);
	return store_item_store(s, it, STORE_OP_SET, 0, NULL);
}

/* The bytes of @key's block, held. */
static size_t held_size(struct store *s, const char *key)
{
	struct store_req req = { .key = key, .nkey = strlen(key),
				 .flags = STORE_REQ_NO_BUMP };
	struct store_res res;
	struct item *it = store_lookup(s, &req, &res);
	size_t size = 0;

	if (it) {
		size = item_alloc_size(it);
		item_put(it);
	}
	return size;
}

/* ---- the model: S3-FIFO as the paper and docs/architecture.md say ---- */

struct model_key {
	bool held, small, ghost;
	bool returned;			/* in small or the ghost: came back
					 * from the ghost to small */
	unsigned int freq;
	size_t size;			/* the store's block for it */
};

struct model {
	struct model_key k[KEYS];
	unsigned int fifo[KEYS];	/* small, oldest first, a ring */
	unsigned int fifo_head, fifo_len;
	unsigned int held, small, ghost;
	unsigned int again;		/* keys to main on a second return */
	size_t bytes, small_bytes;	/* of the held keys, of small's */
	unsigned int hand;		/* the key main's hand looks at next */
};

static void model_drop(struct model *m, struct model_key *k)
{
	k->held = false;
	m->held--;
	m->bytes -= k->size;
}

static bool model_small_evict(struct model *m)
{
	while (m->fifo_len) {
		unsigned int i = m->fifo[m->fifo_head];
		struct model_key *k = &m->k[i];

		m->fifo_head = (m->fifo_head + 1) % KEYS;
		m->fifo_len--;
		m->small--;
		m->small_bytes -= k->size;
		k->small = false;
		if (k->freq) {		/* read while in small: to main */
			k->freq = 0;
			k->returned = false;
			continue;
		}
		model_drop(m, k);
		k->ghost = true;		/* keeps k->returned */
		m->ghost++;
		return true;
	}
	return false;
}

/*
 * Main is a CLOCK in key order, passing small's keys by; a key read since
 * the hand passed stays if read three times, or if its bytes are under
 * twice the mean's times its reads (architecture.md, "Main weighs a read
 * against the size"). Integer keys enter main with no frequency.
 */
static bool model_main_evict(struct model *m)
{
	if (m->held == m->small)
		return false;
	for (;;) {
		unsigned int i = m->hand % KEYS;
		struct model_key *k = &m->k[i];

		m->hand = i + 1;
		if (!k->held || k->small)
			continue;
		if (k->freq == 3 ||
		    (k->freq && k->size * m->held < 2 * k->freq * m->bytes)) {
			k->freq--;
			continue;
		}
		model_drop(m, k);
		return true;
	}
}

static bool model_evict(struct model *m)
{
	bool from_small = m->small_bytes * 10 >= m->bytes;

	if (from_small && model_small_evict(m))
		return true;
	if (model_main_evict(m))
		return true;
	return !from_small && model_small_evict(m);
}

/*
 * A key the ghost remembers goes straight to main, unless its bytes are
 * over twice the mean's (the one read it stands for does not pay for it)
 * the first time it comes back: then it goes to small, and if it leaves
 * small unread the ghost remembers that it came back, and the next time
 * it goes to main.
 */
static void model_insert(struct model *m, unsigned int i, size_t size)
{
	struct model_key *k = &m->k[i];
	bool to_main = k->ghost &&
		       (k->returned || size * m->held < 2 * m->bytes);

	m->again += to_main && k->returned;
	k->returned = k->ghost && !to_main;
	if (k->ghost) {
		k->ghost = false;
		m->ghost--;
	}
	k->held = true;
	k->freq = 0;
	k->size = size;
	m->held++;
	m->bytes += size;
	if (to_main)
		return;
	k->small = true;
	m->small++;
	m->small_bytes += size;
	m->fifo[(m->fifo_head + m->fifo_len) % KEYS] = i;
	m->fifo_len++;
}

/*
 * Cache-aside over skewed keys against the model: the store evicts as its
 * memory says, the model as many times, then both insert; the held keys,
 * their bytes, the small queue and the ghost must agree after every
 * request. With @large_every, every such key (from the third) has a value
 * four times the others': main's hand then weighs reads against sizes,
 * and the ghost sends such a key back to small.
 * (The small values stay over half the mean size, so none is rescued:
 * the model has no rescues.)
 */
#define MODEL_LARGE	(4 * VALUE)

static void test_against_model(unsigned int large_every)
{
	static struct model m;
	size_t limit;
	struct store_stats st;
	uint64_t evictions = 0;
	unsigned int step, i, diverged = 0, hits = 0;
	struct store *s = new_store(0, 13);
	char key[16];

	if (!s)
		return;
	memset(&m, 0, sizeof(m));
	limit = store_memory_used(s) + 4096 +
		HELD * item_total_size("100", 3, 0, 0, VALUE);
	CHECK(store_set_mem_limit(s, limit) == 0);
	for (step = 0; step < 20000 && !diverged; step++) {
		uint32_t nbytes;
		bool hit;

		i = rnd_below(rnd_below(KEYS) + 1);	/* low keys are hot */
		snprintf(key, sizeof(key), "%u", KEY_BASE + i);
		hit = get_key(s, key);
		if (hit != m.k[i].held) {
			diverged = step + 1;
			break;
		}
		if (hit) {
			hits++;
			if (m.k[i].freq < 3)
				m.k[i].freq++;
			continue;
		}
		nbytes = large_every && i % large_every == 2 ? MODEL_LARGE :
			 VALUE;
		CHECK(set_sized(s, key, nbytes) == STORE_STORED);
		store_stats(s, &st);
		for (; evictions < st.evictions; evictions++)
			if (!model_evict(&m))
				diverged = step + 1;
		model_insert(&m, i, held_size(s, key));
		for (i = 0; i < KEYS; i++) {
			snprintf(key, sizeof(key), "%u", KEY_BASE + i);
			if (peek_key(s, key) != m.k[i].held)
				diverged = step + 1;
		}
		if (st.small_items != m.small || st.ghost_entries != m.ghost ||
		    st.curr_items != m.held || st.bytes != m.bytes ||
		    st.small_bytes != m.small_bytes)
			diverged = step + 1;
	}
	CHECK_MSG(!diverged, "store and model differ at request %u (one "
		  "large value in %u keys)", diverged, large_every);
	store_stats(s, &st);
	/* every path was taken, and the ring never cut small short */
	CHECK_MSG(st.evictions > 1000 && st.ghost_hits > 100 &&
		  st.moved_main > 100 && hits > 5000 && st.rescued == 0 &&
		  (st.evicted_active > 50) == (large_every != 0) &&
		  (m.again > 10) == (large_every != 0),
		  "evictions %" PRIu64 ", ghost hits %" PRIu64 ", moves %"
		  PRIu64 ", hits %u, rescued %" PRIu64 ", active %" PRIu64
		  ", second returns %u", st.evictions, st.ghost_hits,
		  st.moved_main, hits, st.rescued, st.evicted_active,
		  m.again);
	CHECK(st.small_aged == 0);
	check_store(s, "model");
	store_destroy(s);
}

/* A scan of keys read once, many times the cache, leaves the hot set. */
static void test_one_hit_keys_keep_the_hot_set(void)
{
	struct store *s = new_store(0, 10);
	unsigned int i, lost = 0;
	struct store_stats st;
	char key[32];

	if (!s)
		return;
	CHECK(store_set_mem_limit(s, store_memory_used(s) + 64 * 1024) == 0);
	for (i = 0; i < 100; i++) {		/* the hot set, read twice */
		snprintf(key, sizeof(key), "hot:%u", i);
		CHECK(set_key(s, key, 0) == STORE_STORED);
		CHECK(get_key(s, key) && get_key(s, key));
	}
	for (i = 0; i < 5000; i++) {		/* stored, never read */
		snprintf(key, sizeof(key), "scan:%u", i);
		CHECK(set_key(s, key, 0) == STORE_STORED);
		if (i % 50 == 0) {		/* the hot set stays in use */
			unsigned int j;

			for (j = 0; j < 100; j++) {
				snprintf(key, sizeof(key), "hot:%u", j);
				get_key(s, key);
			}
		}
	}
	for (i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "hot:%u", i);
		lost += !peek_key(s, key);
	}
	store_stats(s, &st);
	CHECK_MSG(lost == 0, "%u of 100 hot keys lost", lost);
	CHECK(st.evictions > 4000 && st.evicted_unfetched > 4000);
	check_store(s, "scan");
	store_destroy(s);
}

/* A key evicted unread and stored again skips small: the ghost knew it. */
static void test_ghost_sends_to_main(void)
{
	struct store *s = new_store(0, 13);	/* a ring for all 400 */
	struct store_stats st;
	unsigned int i, back = 0;
	uint64_t hits;
	char key[32];

	if (!s)
		return;
	CHECK(store_set_mem_limit(s, store_memory_used(s) + 32 * 1024) == 0);
	for (i = 0; i < 400; i++) {
		snprintf(key, sizeof(key), "k%u", i);
		CHECK(set_key(s, key, 0) == STORE_STORED);
	}
	store_stats(s, &st);
	CHECK(st.evictions > 100 && st.ghost_entries > 0 &&
	      st.ghost_entries <= st.evictions);
	hits = st.ghost_hits;	/* a 15-bit fingerprint may have matched */
	for (i = 0; i < 400 && !back; i++) {	/* the first evicted one */
		snprintf(key, sizeof(key), "k%u", i);
		if (!peek_key(s, key)) {
			CHECK(set_key(s, key, 0) == STORE_STORED);
			back = i + 1;
		}
	}
	store_stats(s, &st);
	CHECK(back && st.ghost_hits == hits + 1);
	check_store(s, "ghost");
	store_destroy(s);
}

/*
 * Values evicted unread and stored again (memtier's sets, a writer that
 * rewrites keys no one reads): the ghost sends those of the mean size to
 * main and the large ones, over twice the mean size, back to small, where
 * the next unread keys push them out. When the ghost sent every one to
 * main, the large values stayed there and the keys after them took
 * small's place.
 */
#define GHOST_MEDIUM	300	/* over half the mean size: not rescued */
#define GHOST_SMALL	GHOST_MEDIUM
#define GHOST_LARGE	1500	/* over twice the mean size */
#define GHOST_KEYS	40

/* Store the keys g:0.. of small and large values; count those found in
 * the ghost, and in *@to_small those of them sent back to small. */
static uint64_t ghost_keys_store(struct store *s, uint64_t *to_small)
{
	struct store_stats st;
	uint64_t ghost_hits, ghost_small;
	unsigned int i;
	char key[32];

	store_stats(s, &st);
	ghost_hits = st.ghost_hits;
	ghost_small = st.ghost_small;
	for (i = 0; i < 2 * GHOST_KEYS; i++) {
		snprintf(key, sizeof(key), "g:%u", i);
		CHECK(set_sized(s, key, i % 2 ? GHOST_LARGE : GHOST_SMALL) ==
		      STORE_STORED);
	}
	store_stats(s, &st);
	*to_small = st.ghost_small - ghost_small;
	return st.ghost_hits - ghost_hits;
}

/* Store @n unread medium values, keys @prefix0..; count the keys g:0..
 * held after, the small values' in held[0], the large ones' in held[1]. */
static void ghost_keys_push(struct store *s, const char *prefix,
			    unsigned int n, unsigned int held[2])
{
	unsigned int i;
	char key[32];

	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%s%u", prefix, i);
		CHECK(set_sized(s, key, GHOST_MEDIUM) == STORE_STORED);
	}
	held[0] = held[1] = 0;
	for (i = 0; i < 2 * GHOST_KEYS; i++) {
		snprintf(key, sizeof(key), "g:%u", i);
		held[i % 2] += peek_key(s, key);
	}
}

/*
 * A store with the keys g:0.. stored, evicted unread by @n medium values
 * (returned), stored again, and pushed by @n more unread ones (held:
 * those of g:0.. still held after). NULL when no store could be made.
 */
static struct store *ghost_keys_returned(unsigned int *n, unsigned int held[2])
{
	struct store *s = store_with_room(100 * 1024);
	unsigned int i;
	uint64_t back, to_small;
	char key[32];

	if (!s)
		return NULL;
	ghost_keys_store(s, &to_small);		/* small and large, unread */
	/* medium keys, unread, until all of those went to the ghost */
	for (*n = 0, i = 0; *n < 2000 && i < 2 * GHOST_KEYS; (*n)++) {
		snprintf(key, sizeof(key), "m:%u", *n);
		CHECK(set_sized(s, key, GHOST_MEDIUM) == STORE_STORED);
		for (i = 0; i < 2 * GHOST_KEYS; i++) {
			snprintf(key, sizeof(key), "g:%u", i);
			if (peek_key(s, key))
				break;
		}
	}
	CHECK_MSG(i == 2 * GHOST_KEYS, "key g:%u still held after %u keys",
		  i, *n);
	back = ghost_keys_store(s, &to_small);	/* stored again */
	CHECK_MSG(back >= 2 * GHOST_KEYS && to_small == GHOST_KEYS,
		  "%" PRIu64 " of %u found in the ghost, %" PRIu64 " of %u "
		  "sent to small", back, 2 * GHOST_KEYS, to_small, GHOST_KEYS);
	ghost_keys_push(s, "n:", *n, held);	/* as many again, unread */
	return s;
}

static void test_large_values_stored_again_after_eviction_start_in_small(void)
{
	unsigned int n, held[2];
	struct store *s = ghost_keys_returned(&n, held);

	if (!s)
		return;
	CHECK_MSG(held[0] == GHOST_KEYS && held[1] == 0,
		  "held %u of %u small values and %u of %u large after %u "
		  "new keys", held[0], GHOST_KEYS, held[1], GHOST_KEYS, n);
	check_store(s, "ghost and sizes");
	store_destroy(s);
}

/*
 * Hot large values filled on misses, in bursts that push each other out
 * of small before their next read, came back from the ghost to small
 * every time and were lost again (test_rescue_stops_where_reads_favour_
 * the_read lost 1 to 3 of its 50 in 4 runs of 32): back a second time,
 * they go to main and stay.
 */
static void test_large_values_back_twice_from_the_ghost_go_to_main(void)
{
	unsigned int n, held[2];
	struct store *s = ghost_keys_returned(&n, held);
	uint64_t back, to_small;

	if (!s)
		return;
	/* the large ones again (the small ones are held): the unread keys
	 * pushed in since may have taken a way or two of the ghost */
	back = ghost_keys_store(s, &to_small);
	CHECK_MSG(back >= GHOST_KEYS * 9 / 10 && to_small == 0, "%" PRIu64
		  " of %u found in the ghost again, %" PRIu64 " sent to small",
		  back, GHOST_KEYS, to_small);
	ghost_keys_push(s, "o:", n, held);
	CHECK_MSG(held[0] == GHOST_KEYS && held[1] >= back,
		  "held %u of %u small values and %u of %" PRIu64 " large "
		  "after their second return", held[0], GHOST_KEYS, held[1],
		  back);
	check_store(s, "ghost, back twice");
	store_destroy(s);
}

/*
 * Dead items met on the way (small's tail, main's hand) are reclaimed, not
 * evicted: a full store of expired items makes room without an eviction.
 */
static void test_dead_go_first(void)
{
	struct store *s = new_store(0, 10);
	size_t one = item_total_size("ttl1000", 7, 1, 0, VALUE), limit;
	unsigned int i, n = 0;
	struct store_stats st;
	char key[32];

	if (!s)
		return;
	limit = store_memory_used(s) + 48 * 1024;
	CHECK(store_set_mem_limit(s, limit) == 0);
	while (store_memory_used(s) + 2 * one < limit) {
		snprintf(key, sizeof(key), "ttl%u", 1000 + n++);
		CHECK(set_key(s, key, store_exptime(s, 2)) == STORE_STORED);
		if (n % 3 == 0)
			get_key(s, key);	/* some in main with a freq */
	}
	store_set_time(s, T0 + 5);		/* all of them are dead */
	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "new%u", 1000 + i);
		CHECK(set_key(s, key, 0) == STORE_STORED);
	}
	store_stats(s, &st);
	CHECK_MSG(st.evictions == 0 && st.reclaimed > n / 2,
		  "evictions %" PRIu64 ", reclaimed %" PRIu64 " of %u",
		  st.evictions, st.reclaimed, n);
	check_store(s, "dead");
	store_destroy(s);
}

/*
 * A growth of the queues that failed (no memory: -M at its limit, or the
 * allocator) is not tried again at every store, but once the shard has
 * grown by a quarter.
 */
static void test_failed_queue_growth_backs_off(void)
{
	struct store *s = new_store(0, 4);	/* a ring of 64 slots */
	unsigned long failed;
	unsigned int i;
	char key[32];

	if (!s)
		return;
	for (i = 0; i < 512; i++) {		/* the ring grows above 512 */
		snprintf(key, sizeof(key), "g%u", i);
		CHECK(set_key(s, key, 0) == STORE_STORED);
	}
	failed = ak_alloc_failures();
	ak_alloc_fail_after(1);		/* the item passes, the ring's fails */
	CHECK(set_key(s, "g512", 0) == STORE_STORED);
	CHECK(ak_alloc_failures() == failed + 1);
	ak_alloc_fail_after(100);	/* the next 100 items; then one fails */
	for (i = 513; i < 613; i++) {
		snprintf(key, sizeof(key), "g%u", i);
		CHECK(set_key(s, key, 0) == STORE_STORED);
	}
	CHECK_MSG(ak_alloc_failures() == failed + 1,
		  "a store tried to grow the queues again");
	ak_alloc_fail_after(-1);
	check_store(s, "backoff");
	store_destroy(s);
}

/* Set the keys h<1000 + from> .. h<1000 + to - 1>. */
static void set_keys(struct store *s, unsigned int from, unsigned int to)
{
	char key[32];

	for (; from < to; from++) {
		snprintf(key, sizeof(key), "h%u", 1000 + from);
		CHECK(set_key(s, key, 0) == STORE_STORED);
	}
}

/*
 * The hash table is outside the memory limit, as memcached's is outside
 * its -m: at the limit it still doubles at a load of 3/4, and its array
 * costs no item (counted, the doubling evicted items for its bytes).
 */
static void test_hash_table_is_outside_the_limit(void)
{
	struct store *s = new_store(0, 4);
	struct store_stats st;
	uint64_t per;

	if (!s)
		return;
	set_keys(s, 0, 191);		/* 256 slots, just under 3/4 */
	store_stats(s, &st);
	CHECK_MSG(st.hash_buckets == 256 && st.hash_bytes == 256 * 8,
		  "%" PRIu64 " buckets, %" PRIu64 " bytes", st.hash_buckets,
		  st.hash_bytes);
	CHECK(store_memory_used(s) == st.bytes + st.index_bytes);
	per = st.bytes / st.curr_items;		/* the keys are one size */
	/* room for 100 more items (and a little for the queues), not for
	 * the 512 slots' 4 KiB as well */
	CHECK(store_set_mem_limit(s, store_memory_used(s) + 100 * per +
				  1024) == 0);
	set_keys(s, 191, 291);
	store_stats(s, &st);
	/* 512 slots, or 256 and 512 while the move is under way */
	CHECK_MSG(st.hash_bytes >= 512 * 8 && st.evictions == 0 &&
		  st.curr_items == 291,
		  "%" PRIu64 " hash bytes, %" PRIu64 " evictions, %" PRIu64
		  " items", st.hash_bytes, st.evictions, st.curr_items);
	CHECK(store_memory_used(s) == st.bytes + st.index_bytes);
	CHECK(store_memory_used(s) <= store_mem_limit(s));
	check_store(s, "table outside the limit");
	store_destroy(s);
}

/*
 * memcached gives every slab class its first 1 MB page even past -m: the
 * store's limit is at least cfg.class_page for every memcached class it
 * stored an item of. The classes are memcached 1.6.18's own (`stats
 * slabs` chunk_size at its defaults), 3 to 8; a value of chunk - 59 -
 * nkey bytes fills its class to the byte.
 */
static const unsigned int mc_chunk[] = { 152, 192, 240, 304, 384, 480 };

/* Round @n: one item of each class in mc_chunk[]. */
static void set_one_per_class(struct store *s, unsigned int n)
{
	static char big[480];
	char key[32];
	unsigned int i;

	memset(big, 'b', sizeof(big));
	for (i = 0; i < ARRAY_SIZE(mc_chunk); i++) {
		size_t nkey = (size_t)snprintf(key, sizeof(key), "c%u:%05u",
					       i, n);
		uint32_t nbytes = mc_chunk[i] - 59 - (uint32_t)nkey;
		struct item *it;

		CHECK(store_item_alloc(s, key, nkey, 0, 0, nbytes, &it) == 0);
		memcpy(item_value(it), big, nbytes);
		CHECK(store_item_store(s, it, STORE_OP_SET, 0, NULL) ==
		      STORE_STORED);
	}
}

static void test_limit_takes_a_page_per_memcached_class(void)
{
	const size_t page = 64 * 1024;
	const size_t classes = ARRAY_SIZE(mc_chunk);
	struct store_config cfg = {
		.mem_limit = page, .item_size_max = 1024 * 1024,
		.nshards = 2, .hash_bits = 4, .class_page = page,
	};
	struct store *s = store_create(&cfg);
	struct store_stats st;
	unsigned int n;

	if (!s)
		return;
	store_set_time(s, T0);
	set_one_per_class(s, 0);
	store_stats(s, &st);
	CHECK_MSG(st.limit_effective == classes * page,
		  "%" PRIu64 " after one of each", st.limit_effective);
	for (n = 1; n < 2000; n++)
		set_one_per_class(s, n);
	store_stats(s, &st);
	CHECK(st.limit_maxbytes == page &&
	      st.limit_effective == classes * page);
	CHECK(st.evictions > 0);
	CHECK_MSG(store_memory_used(s) > (classes - 1) * page &&
		  store_memory_used(s) <= classes * page,
		  "%zu bytes used", store_memory_used(s));
	check_store(s, "a page per memcached class");
	store_destroy(s);

	/* without class_page the limit is mem_limit */
	cfg.class_page = 0;
	s = store_create(&cfg);
	if (!s)
		return;
	store_set_time(s, T0);
	for (n = 0; n < 2000; n++)
		set_one_per_class(s, n);
	store_stats(s, &st);
	CHECK(st.limit_effective == page && store_memory_used(s) <= page);
	check_store(s, "no page per class");
	store_destroy(s);
}

#define RESCUE_KEYS	40000
#define SMALL_VALUE	40
#define LARGE_VALUE	1000

/* Key @i of the rescue tests: every other one small. */
static uint32_t rescue_key(char *key, size_t len, unsigned int i)
{
	snprintf(key, len, "r%u", i);
	return i % 2 ? SMALL_VALUE : LARGE_VALUE;
}

/*
 * Keys read alike whatever their size (uniform cache-aside, values of 40
 * and 1,000 bytes): small's unread small values are rescued to main, so
 * the store holds mostly those, more items than the mean size allows, as
 * memcached's slab classes do at a small -m.
 */
static void test_rescue_keeps_small_values_read_alike(void)
{
	struct store *s = store_with_room(256 * 1024);
	unsigned int step, i, held[2] = { 0, 0 };
	uint64_t rescued;
	struct store_stats st;
	char key[32];

	if (!s)
		return;
	for (step = 0; step < 200000; step++) {
		uint32_t nbytes;

		i = rnd_below(RESCUE_KEYS);
		nbytes = rescue_key(key, sizeof(key), i);
		if (!get_key(s, key))
			CHECK(set_sized(s, key, nbytes) == STORE_STORED);
	}
	for (i = 0; i < RESCUE_KEYS; i++) {
		rescue_key(key, sizeof(key), i);
		held[i % 2] += peek_key(s, key);
	}
	store_stats(s, &st);
	rescued = st.rescued;
	/* without rescues about as many of each size: the limit's share of
	 * items of the mean size (main's hand, keeping small values read
	 * once where large ones need two reads, leaves fewer to rescue:
	 * 7,500 where 31,500 were before it; and the ghost, sending large
	 * values back to small, fewer still: 1,100, with 2,330 small values
	 * held where 1,230 were, and 2,240 without a rescue) */
	CHECK_MSG(held[1] > 4 * held[0] && rescued > 500,
		  "held %u small, %u large values; %" PRIu64 " rescued",
		  held[1], held[0], rescued);
	check_store(s, "rescues");
	store_destroy(s);
}

/*
 * Keys read alike, but written apart from their reads (memtier's load:
 * a fifth of the requests set a key drawn at random, values of 32 to
 * 4,096 bytes, the others get one, and a miss stores nothing): a small
 * value seldom gets its read within a turn of main's hand, and once
 * rescued from small it was evicted there all the same at its first
 * pass, unread. The hand now keeps it, under the same rule and measure
 * as small's rescue: the store holds the small values where memcached's
 * slab classes would.
 */
#define APART_SIZE(i)	(32 + (i) * 2654435761u % 4065)	/* 32 to 4,096 */

static void test_rescue_in_main_keeps_small_values_written_apart(void)
{
	struct store *s = store_with_room(4096 * 1024);
	unsigned int step, i, held[2] = { 0, 0 };
	struct store_stats st;
	char key[32];

	if (!s)
		return;
	for (step = 0; step < 400000; step++) {
		i = rnd_below(RESCUE_KEYS);
		snprintf(key, sizeof(key), "w%u", i);
		if (step % 5 == 0)
			CHECK(set_sized(s, key, APART_SIZE(i)) == STORE_STORED);
		else
			get_key(s, key);
	}
	for (i = 0; i < RESCUE_KEYS; i++) {
		snprintf(key, sizeof(key), "w%u", i);
		held[APART_SIZE(i) < 512] += peek_key(s, key);
	}
	store_stats(s, &st);
	/* 3,254 values under 512 bytes held and 2,309 over; 2,476 and
	 * 2,368 by the build before */
	CHECK_MSG(held[1] * 4 > held[0] * 5 && st.main_rescued > 1000,
		  "held %u under 512 bytes, %u over; %" PRIu64 " rescued in "
		  "main", held[1], held[0], st.main_rescued);
	check_store(s, "rescues in main");
	store_destroy(s);
}

/*
 * Reads that favour what small saw read (a hot set of large values read
 * again and again, small values written once and never read): rescues
 * stop once the hand has seen reads in main, but for one candidate in 64,
 * and the hot set stays.
 */
static void test_rescue_stops_where_reads_favour_the_read(void)
{
	struct store *s = store_with_room(72 * 1024);
	unsigned int i, j, lost = 0;
	uint64_t early = 0;
	struct store_stats st;
	char key[32];

	if (!s)
		return;
	for (i = 0; i < 5000; i++) {
		if (i == 1000) {
			store_stats(s, &st);
			early = st.rescued;
		}
		snprintf(key, sizeof(key), "once:%u", i);
		CHECK(set_sized(s, key, SMALL_VALUE) == STORE_STORED);
		for (j = 0; j < 50 && i % 10 == 0; j++) {
			snprintf(key, sizeof(key), "hot:%u", j);
			if (!get_key(s, key))
				CHECK(set_sized(s, key, LARGE_VALUE) ==
				      STORE_STORED);
		}
	}
	for (j = 0; j < 50; j++) {
		snprintf(key, sizeof(key), "hot:%u", j);
		lost += !peek_key(s, key);
	}
	store_stats(s, &st);
	CHECK_MSG(lost == 0, "%u of 50 hot keys lost", lost);
	/* the last 4,000 small values: about one in 64 */
	CHECK_MSG(st.rescued - early <= 2 * 4000 / 64,
		  "%" PRIu64 " rescued, %" PRIu64 " of them early", st.rescued,
		  early);
	check_store(s, "no rescues");
	store_destroy(s);
}

/*
 * Main's hand weighs a read against the value's size: every value in main
 * read once, then new keys (small, read once, so they reach main) push
 * out a part of the store. A small value read once is passed by where a
 * value over twice the mean size needs two reads; a huge one (over six
 * times the mean) read as often as the count holds (three) is passed by
 * as well. The build before the rule lost 28 of the small values and 16
 * of the large ones read once; without the bound of three reads, 6 of the
 * 10 huge values went.
 */
#define SIZE_KEYS	300
#define HUGE_VALUE	4000	/* over 6 times the mean: read three times,
				 * it stays all the same */
#define SIZE_NEW_KEYS	1300

static void size_key(char *key, size_t len, unsigned int i, uint32_t *nbytes)
{
	snprintf(key, len, "z%u", i);
	*nbytes = i % 3 ? SMALL_VALUE :			/* a third large, */
		  i % 30 ? LARGE_VALUE : HUGE_VALUE;	/* a tenth of them
							 * huge */
}

static void test_main_evicts_large_values_read_once_first(void)
{
	struct store *s = store_with_room(200 * 1024);
	unsigned int i, held = 0, lost[3] = { 0, 0, 0 }, kind;
	struct store_stats st;
	uint64_t evictions;
	uint32_t nbytes;
	char key[32];

	if (!s)
		return;
	for (i = 0; i < SIZE_KEYS; i++) {	/* read in small: to main */
		size_key(key, sizeof(key), i, &nbytes);
		CHECK(set_sized(s, key, nbytes) == STORE_STORED);
		CHECK(get_key(s, key));
	}
	/* push them all to main, with values too large to be rescued */
	for (i = 0; i < 60; i++) {
		snprintf(key, sizeof(key), "push:%u", i);
		CHECK(set_sized(s, key, LARGE_VALUE) == STORE_STORED);
	}
	store_stats(s, &st);
	evictions = st.evictions;
	for (i = 0; i < SIZE_KEYS; i++) {	/* then each read once more */
		size_key(key, sizeof(key), i, &nbytes);
		if (!peek_key(s, key))
			continue;
		held++;
		CHECK(get_key(s, key));
		if (i % 30 == 0) {		/* the huge ones: three */
			get_key(s, key);
			get_key(s, key);
		}
	}
	CHECK_MSG(held == SIZE_KEYS, "%u of %u held before the test", held,
		  SIZE_KEYS);
	for (i = 0; i < SIZE_NEW_KEYS; i++) {	/* new keys read in small */
		snprintf(key, sizeof(key), "new:%u", i);
		CHECK(set_sized(s, key, SMALL_VALUE) == STORE_STORED);
		CHECK(get_key(s, key));
	}
	for (i = 0; i < SIZE_KEYS; i++) {
		size_key(key, sizeof(key), i, &nbytes);
		kind = nbytes == SMALL_VALUE ? 0 : nbytes == LARGE_VALUE ? 1 : 2;
		lost[kind] += !peek_key(s, key);
	}
	store_stats(s, &st);
	CHECK_MSG(lost[0] == 0 && lost[1] >= 40 && lost[2] == 0 &&
		  st.evicted_active >= lost[1],
		  "lost %u of 200 small values read once, %u of 90 large read "
		  "once, %u of 10 huge read three times (%" PRIu64
		  " evictions, %" PRIu64 " active)", lost[0], lost[1],
		  lost[2], st.evictions - evictions, st.evicted_active);
	check_store(s, "sizes in main");
	store_destroy(s);
}

/*
 * Values of one size where memcached's slab class and ours hold as many a
 * page: the store holds at least memcached 1.6.18's count at the same -m
 * (each server -t 2, keys key:<n>, `stats` curr_items after a fill of
 * more than fit). The ring and the ghost start at their least, outside
 * the limit, and what they grow to with the items is counted in it.
 */
static void test_large_values_hold_memcacheds_count(void)
{
	static const struct {
		uint32_t nbytes, mb, mc_items;
	} fills[] = {
		{ 8765, 12, 1416 }, { 10899, 12, 1128 }, { 13809, 12, 900 },
		{ 65536, 64, 960 }, { 100000, 64, 640 }, { 200000, 64, 320 },
		{ 500000, 64, 128 },
		/* where the limit holds its items to the byte, the two
		 * shards' least rings and ghosts took the last (119, 1,127):
		 * now outside the limit, as the first hash arrays are */
		{ 100000, 12, 120 }, { 10996, 12, 1128 },
	};
	static char big[500000];
	unsigned int f, n;

	memset(big, 'w', sizeof(big));
	for (f = 0; f < ARRAY_SIZE(fills); f++) {
		struct store_config cfg = {
			.mem_limit = (size_t)fills[f].mb << 20,
			.item_size_max = 1024 * 1024, .nshards = 2,
			.hash_bits = 4, .class_page = 1 << 20,
		};
		struct store *s = store_create(&cfg);
		struct store_stats st;
		char key[32];

		if (!s)
			return;
		store_set_time(s, T0);
		for (n = 0; n < fills[f].mc_items * 3 / 2; n++) {
			size_t nkey = (size_t)snprintf(key, sizeof(key),
						       "key:%u", n);
			struct item *it;

			CHECK(store_item_alloc(s, key, nkey, 0, 0,
					       fills[f].nbytes, &it) == 0);
			memcpy(item_value(it), big, fills[f].nbytes);
			CHECK(store_item_store(s, it, STORE_OP_SET, 0,
					       NULL) == STORE_STORED);
		}
		store_stats(s, &st);
		CHECK_MSG(st.curr_items >= fills[f].mc_items,
			  "%u bytes at -m %u: %" PRIu64 " items, memcached "
			  "%u", fills[f].nbytes, fills[f].mb, st.curr_items,
			  fills[f].mc_items);
		check_store(s, "large values");
		store_destroy(s);
	}
}

int main(void)
{
	hash_init();
	memset(value, 'v', sizeof(value));
	test_against_model(0);
	test_against_model(5);
	test_one_hit_keys_keep_the_hot_set();
	test_ghost_sends_to_main();
	test_large_values_stored_again_after_eviction_start_in_small();
	test_large_values_back_twice_from_the_ghost_go_to_main();
	test_dead_go_first();
	test_failed_queue_growth_backs_off();
	test_hash_table_is_outside_the_limit();
	test_limit_takes_a_page_per_memcached_class();
	test_large_values_hold_memcacheds_count();
	test_rescue_keeps_small_values_read_alike();
	test_rescue_stops_where_reads_favour_the_read();
	test_rescue_in_main_keeps_small_values_written_apart();
	test_main_evicts_large_values_read_once_first();
	return check_report();
}
