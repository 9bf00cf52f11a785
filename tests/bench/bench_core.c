// SPDX-License-Identifier: MIT
/*
 * bench_core.c - ns per operation of the core structures, and bytes per
 * entry, single threaded, on the release build (jemalloc).
 *
 * For N = 1M and 10M entries, each structure is built once with N entries
 * (untimed); then each of 5 runs takes a sample of P = min(N / 2, 1M)
 * entries out, puts them back (timed: inserts into a structure of N - P
 * entries) and looks up P random keys (timed). Each figure is the median
 * of the 5 runs:
 *  (a) the radix tree with dense integer keys against the same keys, as
 *      text, in a bare hash table (struct htable + item blocks, no store):
 *      radix inserts of a run of consecutive keys in order, hash inserts
 *      in random order (hashing included); lookups from the key text (so
 *      the radix side pays key_is_integer(), the hash side SipHash), in
 *      random order, touching the item found;
 *  (b) the rbtree with the same text keys: inserts and lookups in random
 *      order, and ordered walks of 100 entries from a random key;
 *  (c) the store (16 shards, no memory limit): set of new keys (allocate,
 *      fill, store) and get (lookup, reference, put) with integer keys
 *      ("1234567") against string keys ("k1234567");
 *  (d) bytes per entry of the store, from jemalloc's own "stats.allocated"
 *      before and after building it, next to what memcached 1.6 would take
 *      for the same item.
 * On this kind of machine a random access to DRAM costs some 100-300 ns,
 * so at these sizes most figures count cache and TLB misses.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jemalloc/jemalloc.h>

#include "alloc.h"
#include "hash.h"
#include "htable.h"
#include "../unit/lookup_get.h"
#include "item.h"
#include "radix_tree.h"
#include "rbtree.h"
#include "store.h"

#define RUNS		5
#define SAMPLE_MAX	(1000u * 1000)
#define WALK_LEN	100
#define WALKS		20000
#define VALUE_LEN	10
#define NSHARDS		16
#define KEY_TEXT	24

enum bench_row {
	ROW_RADIX_INSERT,
	ROW_RADIX_LOOKUP,
	ROW_HASH_INSERT,
	ROW_HASH_LOOKUP,
	ROW_RB_INSERT,
	ROW_RB_LOOKUP,
	ROW_RB_WALK,
	ROW_SET_INT,
	ROW_GET_INT,
	ROW_SET_STR,
	ROW_GET_STR,
	ROW_RANGE10_INT,
	ROW_RANGE100_INT,
	ROW_COUNT1K_INT,
	ROW_RANGE10_STR,
	ROW_RANGE100_STR,
	ROW_COUNT_REST_STR,
	ROW_LOAD_SORTED_STR,
	ROW_LOAD_RANDOM_STR,
	NROWS
};

static const char *const row_name[NROWS] = {
	"radix insert, dense int keys, in order",
	"radix lookup from key text, random",
	"htable insert, same keys as text, random",
	"htable lookup from key text, random",
	"rbtree insert, text keys, random order",
	"rbtree lookup, random",
	"rbtree walk of 100 entries (per walk)",
	"store set new key, integer keys",
	"store get, integer keys",
	"store set new key, string keys",
	"store get, string keys",
	"store range of 10, integer keys",
	"store range of 100, integer keys",
	"store count of 1000, integer keys",
	"store range of 10, string keys",
	"store range of 100, string keys",
	"store count from a random key to the end, string keys",
	"store load of new string keys, in key order",
	"store load of the same keys, random order",
};

struct bench {
	size_t n;
	char (*keys)[KEY_TEXT];		/* decimal text of 0..n-1 */
	uint8_t *klen;
	uint32_t *perm;			/* a random permutation of 0..n-1 */
	struct item **blocks;		/* string-key item blocks of keys */
	double ns[NROWS][RUNS];
	double bytes_int, bytes_str;	/* per entry, whole store */
	double block_int, block_str;	/* per entry, item blocks alone */
};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static volatile uint64_t sink;

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dULL;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static size_t je_allocated(void)
{
	uint64_t epoch = 1;
	size_t allocated = 0, len = sizeof(allocated);

	mallctl("epoch", NULL, NULL, &epoch, sizeof(epoch));
	if (mallctl("stats.allocated", &allocated, &len, NULL, 0))
		return 0;
	return allocated;
}

static void *xmalloc(size_t n)
{
	void *p = ak_malloc(n);

	if (!p) {
		fprintf(stderr, "bench_core: out of memory\n");
		exit(1);
	}
	return p;
}

/* A string-key item block for the bare htable / rbtree benches. */
static struct item *block_new(const char *key, size_t nkey)
{
	struct item *it = xmalloc(ITEM_STR_DATA + nkey);

	memset(it, 0, ITEM_STR_DATA);	/* iflags 0: a string key's header */
	RB_CLEAR_NODE(&it->rbnode);
	it->nkey = (uint8_t)nkey;
	it->refcount = 1;
	memcpy((char *)item_key(it), key, nkey);
	return it;
}

static void bench_setup(struct bench *b, bool blocks)
{
	size_t i;

	b->keys = xmalloc(b->n * sizeof(*b->keys));
	b->klen = xmalloc(b->n);
	b->perm = xmalloc(b->n * sizeof(*b->perm));
	b->blocks = blocks ? xmalloc(b->n * sizeof(*b->blocks)) : NULL;
	for (i = 0; i < b->n; i++) {
		b->klen[i] = (uint8_t)snprintf(b->keys[i], KEY_TEXT, "%zu", i);
		b->perm[i] = (uint32_t)i;
		if (blocks)
			b->blocks[i] = block_new(b->keys[i], b->klen[i]);
	}
	for (i = b->n - 1; i > 0; i--) {
		size_t j = rnd() % (i + 1);
		uint32_t t = b->perm[i];

		b->perm[i] = b->perm[j];
		b->perm[j] = t;
	}
}

static void bench_teardown(struct bench *b)
{
	size_t i;

	for (i = 0; b->blocks && i < b->n; i++)
		ak_free(b->blocks[i]);
	ak_free(b->blocks);
	ak_free(b->perm);
	ak_free(b->klen);
	ak_free(b->keys);
}

static size_t sample(const struct bench *b)
{
	return b->n / 2 < SAMPLE_MAX ? b->n / 2 : SAMPLE_MAX;
}

/* The random keys of run @run: perm[off .. off + sample). */
static size_t sample_off(const struct bench *b, unsigned int run)
{
	return (size_t)run * sample(b) % (b->n - sample(b) + 1);
}

/* (a) radix tree against a bare hash table */
static void bench_radix(struct bench *b)
{
	size_t i, p = sample(b);
	struct radix_tree_root root;
	unsigned int run;
	uint64_t v, sum = 0;
	double t;

	radix_tree_init(&root);
	for (i = 0; i < b->n; i++)
		radix_tree_insert(&root, i, b->blocks[i]);
	for (run = 0; run < RUNS; run++) {
		size_t first = (rnd() % (b->n - p)) & ~(size_t)63;
		size_t off = sample_off(b, run);

		for (i = first; i < first + p; i++)
			radix_tree_delete(&root, i);
		t = now_ns();
		for (i = first; i < first + p; i++)
			radix_tree_insert(&root, i, b->blocks[i]);
		b->ns[ROW_RADIX_INSERT][run] = (now_ns() - t) / (double)p;

		t = now_ns();
		for (i = off; i < off + p; i++) {
			uint32_t k = b->perm[i];
			struct item *it;

			if (key_is_integer(b->keys[k], b->klen[k], &v)) {
				it = radix_tree_lookup(&root, v);
				sum += it->nkey;
			}
		}
		b->ns[ROW_RADIX_LOOKUP][run] = (now_ns() - t) / (double)p;
	}
	sink += sum;
	radix_tree_destroy(&root);
	radix_tree_preload_drain();
}

static struct item *htable_find(struct htable *ht, const char *key,
				size_t nkey, uint64_t hash)
{
	struct htable_probe pr;
	struct item *it;

	for (it = htable_first(ht, hash, &pr); it; it = htable_next(ht, &pr))
		if (it->nkey == nkey && !memcmp(item_key(it), key, nkey))
			return it;
	return NULL;
}

static void bench_htable(struct bench *b)
{
	size_t i, p = sample(b);
	unsigned int bits = 1, run;
	struct htable ht;
	uint64_t sum = 0;
	double t;

	/* below the growth point (3/4), as the store keeps it */
	while (((size_t)3 << bits) / 4 <= b->n)
		bits++;
	htable_init(&ht, htable_slots_alloc(bits), bits);
	for (i = 0; i < b->n; i++) {
		struct item *it = b->blocks[i];

		htable_add(&ht, it, item_key_hash(item_key(it), it->nkey));
	}
	for (run = 0; run < RUNS; run++) {
		size_t off = sample_off(b, run);

		for (i = off; i < off + p; i++)
			htable_del(&ht, b->blocks[b->perm[i]],
				   item_key_hash(item_key(b->blocks[b->perm[i]]),
						 b->blocks[b->perm[i]]->nkey));
		t = now_ns();
		for (i = off; i < off + p; i++) {
			struct item *it = b->blocks[b->perm[i]];

			htable_add(&ht, it, item_key_hash(item_key(it), it->nkey));
		}
		b->ns[ROW_HASH_INSERT][run] = (now_ns() - t) / (double)p;

		off = sample_off(b, run + 1);
		t = now_ns();
		for (i = off; i < off + p; i++) {
			uint32_t k = b->perm[i];
			struct item *it;

			it = htable_find(&ht, b->keys[k], b->klen[k],
					 item_key_hash(b->keys[k], b->klen[k]));
			sum += it ? it->nkey : 0;
		}
		b->ns[ROW_HASH_LOOKUP][run] = (now_ns() - t) / (double)p;
	}
	sink += sum;
	htable_destroy(&ht);
}

static int key_cmp(const char *a, size_t na, const char *b, size_t nb)
{
	int c = memcmp(a, b, na < nb ? na : nb);

	return c ? c : (na > nb) - (na < nb);
}

/* (b) rbtree: the search loops are the user's, as the tool box wants */
static void rb_insert_item(struct rb_root *root, struct item *it)
{
	struct rb_node **link = &root->rb_node, *parent = NULL;

	while (*link) {
		struct item *cur = rb_entry(*link, struct item, rbnode);

		parent = *link;
		link = key_cmp(item_key(it), it->nkey, item_key(cur),
			       cur->nkey) < 0 ?
		       &(*link)->rb_left : &(*link)->rb_right;
	}
	rb_link_node(&it->rbnode, parent, link);
	rb_insert_color(&it->rbnode, root);
}

static void bench_rbtree(struct bench *b)
{
	struct rb_root root = RB_ROOT;
	size_t i, p = sample(b);
	unsigned int run;
	uint64_t sum = 0;
	double t;

	for (i = 0; i < b->n; i++)
		rb_insert_item(&root, b->blocks[i]);
	for (run = 0; run < RUNS; run++) {
		size_t off = sample_off(b, run);

		for (i = off; i < off + p; i++)
			rb_erase(&b->blocks[b->perm[i]]->rbnode, &root);
		t = now_ns();
		for (i = off; i < off + p; i++)
			rb_insert_item(&root, b->blocks[b->perm[i]]);
		b->ns[ROW_RB_INSERT][run] = (now_ns() - t) / (double)p;

		off = sample_off(b, run + 1);
		t = now_ns();
		for (i = off; i < off + p; i++) {
			uint32_t k = b->perm[i];
			struct rb_node *node = root.rb_node;

			while (node) {
				struct item *cur = rb_entry(node, struct item,
							    rbnode);
				int c = key_cmp(b->keys[k], b->klen[k],
						item_key(cur), cur->nkey);

				if (!c) {
					sum += cur->nkey;
					break;
				}
				node = c < 0 ? node->rb_left : node->rb_right;
			}
		}
		b->ns[ROW_RB_LOOKUP][run] = (now_ns() - t) / (double)p;

		t = now_ns();
		for (i = 0; i < WALKS; i++) {
			uint32_t k = b->perm[(off + i) % b->n];
			struct rb_node *node = root.rb_node, *first = NULL;
			unsigned int j;

			while (node) {	/* the first entry >= the key */
				struct item *cur = rb_entry(node, struct item,
							    rbnode);

				if (key_cmp(item_key(cur), cur->nkey, b->keys[k],
					    b->klen[k]) >= 0) {
					first = node;
					node = node->rb_left;
				} else {
					node = node->rb_right;
				}
			}
			for (j = 0; first && j < WALK_LEN;
			     j++, first = rb_next(first))
				sum += rb_entry(first, struct item,
						rbnode)->nkey;
		}
		b->ns[ROW_RB_WALK][run] = (now_ns() - t) / WALKS;
	}
	sink += sum;
	for (i = 0; i < b->n; i++)
		RB_CLEAR_NODE(&b->blocks[i]->rbnode);
}

/* The store key of entry @i: its number, or "k" and its number. */
static size_t store_key(const struct bench *b, size_t i, bool strkeys,
			char *key)
{
	size_t nk = b->klen[i];

	if (!strkeys) {
		memcpy(key, b->keys[i], nk);
		return nk;
	}
	key[0] = 'k';
	memcpy(key + 1, b->keys[i], nk);
	return nk + 1;
}

static void store_set(struct store *s, const char *key, size_t nkey,
		      size_t *blocks)
{
	struct item *it;

	if (store_item_alloc(s, key, nkey, 0, 0, VALUE_LEN, &it)) {
		fprintf(stderr, "bench_core: item alloc failed\n");
		exit(1);
	}
	memcpy(item_value(it), "0123456789", VALUE_LEN);
	*blocks += item_alloc_size(it);
	if (store_item_store(s, it, STORE_OP_SET, 0, NULL) != STORE_STORED) {
		fprintf(stderr, "bench_core: store failed\n");
		exit(1);
	}
}

/* (c) and (d): the store */
#define RANGE_SAMPLE	20000	/* range requests per run */

/*
 * Ranges of 10 and 100 from random start keys (both key classes), for
 * integer keys counts of 1000 (in the NSHARDS shards of the store), for
 * string keys counts from a random key to the end (the partitions of the
 * order: whole counts and two ranks): ns per request.
 */
static void bench_store_ranges(struct bench *b, struct store *s, bool strkeys,
			       unsigned int run)
{
	static struct item *out[100];
	static const unsigned int lens[2] = { 10, 100 };
	size_t off = sample_off(b, run + 2), i, nk;
	char key[KEY_TEXT + 1], last[KEY_TEXT + 1];
	unsigned int l, j;
	uint64_t sum = 0;
	double t;
	int got;

	for (l = 0; l < 2; l++) {
		t = now_ns();
		for (i = off; i < off + RANGE_SAMPLE; i++) {
			struct store_bound f = { BOUND_INCL, key, 0 };
			struct store_bound to = { BOUND_MAX, NULL, 0 };

			nk = store_key(b, b->perm[i % b->n], strkeys, key);
			f.nkey = nk;
			got = store_range(s, &f, &to, false, lens[l], out);
			for (j = 0; got > 0 && j < (unsigned int)got; j++) {
				sum += out[j]->nbytes;
				item_put(out[j]);
			}
		}
		b->ns[strkeys ? (l ? ROW_RANGE100_STR : ROW_RANGE10_STR) :
			       (l ? ROW_RANGE100_INT : ROW_RANGE10_INT)][run] =
			(now_ns() - t) / RANGE_SAMPLE;
	}
	if (!strkeys) {
		t = now_ns();
		for (i = off; i < off + RANGE_SAMPLE; i++) {
			size_t k = b->perm[i % b->n];
			struct store_bound f = { BOUND_INCL, key, 0 };
			struct store_bound to = { BOUND_INCL, last, 0 };

			f.nkey = store_key(b, k, false, key);
			to.nkey = (size_t)snprintf(last, sizeof(last), "%zu",
						   k + 999);
			sum += store_count(s, &f, &to);
		}
		b->ns[ROW_COUNT1K_INT][run] = (now_ns() - t) / RANGE_SAMPLE;
	} else {
		/* string order is not numeric: from a key to the last one,
		 * the partitions' counts and two ranks */
		t = now_ns();
		for (i = off; i < off + RANGE_SAMPLE; i++) {
			struct store_bound f = { BOUND_INCL, key, 0 };
			struct store_bound to = { BOUND_MAX, NULL, 0 };

			f.nkey = store_key(b, b->perm[i % b->n], true, key);
			sum += store_count(s, &f, &to);
		}
		b->ns[ROW_COUNT_REST_STR][run] = (now_ns() - t) / RANGE_SAMPLE;
	}
	sink += sum;
}

static void bench_store(struct bench *b, bool strkeys)
{
	struct store_config cfg = {
		.mem_limit = 0,
		.item_size_max = 1024 * 1024,
		.nshards = NSHARDS,
		.hash_bits = 10,
	};
	size_t before = je_allocated(), blocks = 0, i, p = sample(b);
	struct store *s = store_create(&cfg);
	char key[KEY_TEXT + 1];
	unsigned int run;
	uint64_t sum = 0;
	size_t nk;
	double t;

	if (!s) {
		fprintf(stderr, "bench_core: store_create failed\n");
		exit(1);
	}
	store_set_time(s, time(NULL));
	for (i = 0; i < b->n; i++) {
		nk = store_key(b, i, strkeys, key);
		store_set(s, key, nk, &blocks);
	}
	if (strkeys) {
		b->bytes_str = (double)(je_allocated() - before) / (double)b->n;
		b->block_str = (double)blocks / (double)b->n;
	} else {
		b->bytes_int = (double)(je_allocated() - before) / (double)b->n;
		b->block_int = (double)blocks / (double)b->n;
	}
	for (run = 0; run < RUNS; run++) {
		size_t off = sample_off(b, run);

		for (i = off; i < off + p; i++) {
			nk = store_key(b, b->perm[i], strkeys, key);
			store_delete(s, key, nk);
		}
		t = now_ns();
		for (i = off; i < off + p; i++) {
			nk = store_key(b, b->perm[i], strkeys, key);
			store_set(s, key, nk, &blocks);
		}
		b->ns[strkeys ? ROW_SET_STR : ROW_SET_INT][run] =
			(now_ns() - t) / (double)p;

		off = sample_off(b, run + 1);
		t = now_ns();
		for (i = off; i < off + p; i++) {
			struct item *it;

			nk = store_key(b, b->perm[i], strkeys, key);
			it = lookup_get(s, key, nk, NULL);
			if (it) {
				sum += it->nbytes;
				item_put(it);
			}
		}
		b->ns[strkeys ? ROW_GET_STR : ROW_GET_INT][run] =
			(now_ns() - t) / (double)p;
	}
	for (run = 0; run < RUNS; run++)
		bench_store_ranges(b, s, strkeys, run);
	sink += sum;
	store_destroy(s);
	radix_tree_preload_drain();
}

#define LOAD_KEY	12	/* "k" and 10 digits, NUL */

/*
 * A load of sample() new string keys into an empty store, per key: in key
 * order, as a snapshot's load comes (each key goes after its partition's
 * last, with no descent), and the same keys in random order.
 */
static void bench_store_load(struct bench *b)
{
	struct store_config cfg = {
		.mem_limit = 0,
		.item_size_max = 1024 * 1024,
		.nshards = NSHARDS,
		.hash_bits = 10,
	};
	size_t p = sample(b), i, j, blocks = 0;
	char (*keys)[LOAD_KEY] = xmalloc(p * LOAD_KEY);
	uint32_t *order = xmalloc(p * sizeof(*order));
	unsigned int run, sorted;

	for (i = 0; i < p; i++) {
		snprintf(keys[i], LOAD_KEY, "k%010zu", i);
		order[i] = (uint32_t)i;
	}
	for (i = p - 1; i > 0; i--) {
		uint32_t x = order[i];

		j = rnd() % (i + 1);
		order[i] = order[j];
		order[j] = x;
	}
	for (run = 0; run < RUNS; run++) {
		for (sorted = 0; sorted < 2; sorted++) {
			struct store *s = store_create(&cfg);
			double t;

			if (!s) {
				fprintf(stderr, "bench_core: store_create "
					"failed\n");
				exit(1);
			}
			store_set_time(s, time(NULL));
			t = now_ns();
			for (i = 0; i < p; i++)
				store_set(s, keys[sorted ? i : order[i]],
					  LOAD_KEY - 1, &blocks);
			b->ns[sorted ? ROW_LOAD_SORTED_STR :
				       ROW_LOAD_RANDOM_STR][run] =
				(now_ns() - t) / (double)p;
			store_destroy(s);
		}
	}
	radix_tree_preload_drain();
	ak_free(order);
	ak_free(keys);
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v)
{
	double c[RUNS];

	memcpy(c, v, sizeof(c));
	qsort(c, RUNS, sizeof(c[0]), dbl_cmp);
	return c[RUNS / 2];
}

/* What memcached 1.6 takes for an item: header, key + NUL, data + CRLF,
 * rounded up to its slab class (96 bytes, then x1.25 aligned to 8). */
static unsigned int memcached_chunk(unsigned int nkey, unsigned int nbytes)
{
	unsigned int need = 48 + 8 + nkey + 1 + nbytes + 2, c = 96;

	while (c < need)
		c = ((unsigned int)(c * 1.25) + 7) & ~7u;
	return c;
}

int main(void)
{
	static struct bench b[2] = { { .n = 1000000 }, { .n = 10000000 } };
	unsigned int i, row;
	double t0 = now_ns();

	if (hash_init()) {
		fprintf(stderr, "bench_core: hash_init failed\n");
		return 1;
	}
	for (i = 0; i < 2; i++) {
		bench_setup(&b[i], true);
		bench_radix(&b[i]);
		bench_htable(&b[i]);
		bench_rbtree(&b[i]);
		bench_teardown(&b[i]);
		bench_setup(&b[i], false);	/* keys and permutation only */
		bench_store(&b[i], false);
		bench_store(&b[i], true);
		bench_store_load(&b[i]);
		bench_teardown(&b[i]);
		fprintf(stderr, "bench_core: %zu entries done (%.0f s)\n",
			b[i].n, (now_ns() - t0) / 1e9);
	}

	printf("anchorkv core benchmark: %s, 1 thread, ns per operation, "
	       "median of %d runs\n\n", ak_alloc_name(), RUNS);
	printf("%-42s %10s %10s\n", "", "1M", "10M");
	for (row = 0; row < NROWS; row++) {
		if (row == ROW_RB_INSERT || row == ROW_SET_INT ||
		    row == ROW_RANGE10_INT)
			printf("\n");
		printf("%-42s %10.1f %10.1f\n", row_name[row],
		       median(b[0].ns[row]), median(b[1].ns[row]));
	}
	printf("\nbytes per entry in the store (jemalloc stats.allocated "
	       "after / before, %d shards),\nkey of 6-8 bytes, value of %d "
	       "bytes:\n", NSHARDS, VALUE_LEN);
	printf("%-42s %10s %10s\n", "", "1M", "10M");
	printf("%-42s %10.1f %10.1f\n", "integer keys, all in",
	       b[0].bytes_int, b[1].bytes_int);
	printf("%-42s %10.1f %10.1f\n", "  of which item blocks (40-byte header)",
	       b[0].block_int, b[1].block_int);
	printf("%-42s %10.1f %10.1f\n", "string keys, all in",
	       b[0].bytes_str, b[1].bytes_str);
	printf("%-42s %10.1f %10.1f\n", "  of which item blocks",
	       b[0].block_str, b[1].block_str);
	printf("%-42s %10u %10u\n", "memcached 1.6 slab chunk (same item)",
	       memcached_chunk(8, VALUE_LEN), memcached_chunk(8, VALUE_LEN));
	printf("\nmemcached: a 48-byte header + 8-byte cas + key + 1 + value "
	       "+ 2, rounded up to\nits slab class (96, 120, 152, ...), "
	       "plus 8 bytes per bucket of its hash table\n(1.5 entries per "
	       "bucket before it grows: some 5-11 bytes per entry).\n");
	return sink == 42 ? 1 : 0;
}
