// SPDX-License-Identifier: MIT
/*
 * test_radix_tree.c - the radix tree (core/radix_tree.c).
 *
 * The contract checked here:
 *   - lookup, insert (-EEXIST on a taken index), replace, delete and both
 *     gang lookups agree with a reference model, a sorted array of
 *     (index, entry) searched by bisection, over a million random
 *     operations with dense, sparse, low, high and mixed indexes;
 *   - after every batch the invariant checker walks the whole tree: every
 *     entry reachable and met once, in index order, exactly the model's;
 *     root->count and root->nr_nodes exact; no empty node; per-node count
 *     and bitmap consistent with the slots; each level's shift right; the
 *     height the least that covers the largest index;
 *   - preloading: after radix_tree_preload() an insert cannot fail for
 *     memory, even one that grows the tree from height 1 to 11; a preload
 *     that fails, at any allocation, returns -ENOMEM and changes no tree;
 *     an insert without preload that meets an allocation failure returns
 *     -ENOMEM and leaves the tree exactly as it was; the pool is per thread.
 *
 * RADIX_SEED=<n> in the environment repeats a run.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "check.h"
#include "radix_tree.h"

/*
 * The node layout is private to core/radix_tree.c; the invariant checker
 * needs it, so it is repeated here. Keep the two in step (the size is
 * cross-checked with radix_tree_node_size() below).
 */
struct radix_tree_node {
	uint64_t bitmap;
	uint8_t shift;
	uint8_t count;
	uint64_t entries;
	void *slots[RADIX_TREE_MAP_SIZE];
};

/* ---- random numbers ---------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)	/* splitmix64 */
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A made-up entry: never dereferenced, non-NULL, bit 0 clear. */
static void *rnd_item(void)
{
	return (void *)(uintptr_t)((rnd() & ~(uint64_t)3) | 4);
}

/* ---- the reference model: a sorted array ------------------------------- */

struct model_entry {
	uint64_t index;
	void *item;
};

struct model {
	struct model_entry *e;
	size_t nr, cap;
};

/* Allocated up front, so that no model operation allocates while failure
 * injection is armed. */
static void model_init(struct model *m, size_t cap)
{
	m->e = ak_malloc(cap * sizeof(*m->e));
	if (!m->e) {
		fprintf(stderr, "out of memory for the model\n");
		exit(2);
	}
	m->nr = 0;
	m->cap = cap;
}

static void model_free(struct model *m)
{
	ak_free(m->e);
	m->e = NULL;
	m->nr = m->cap = 0;
}

/* The first position whose index is >= @index. */
static size_t model_lower(const struct model *m, uint64_t index)
{
	size_t lo = 0, hi = m->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->e[mid].index < index)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool model_has(const struct model *m, uint64_t index, size_t *pos)
{
	*pos = model_lower(m, index);
	return *pos < m->nr && m->e[*pos].index == index;
}

static void *model_get(const struct model *m, uint64_t index)
{
	size_t pos;

	return model_has(m, index, &pos) ? m->e[pos].item : NULL;
}

static int model_insert(struct model *m, uint64_t index, void *item)
{
	size_t pos;

	if (model_has(m, index, &pos))
		return -EEXIST;
	if (m->nr == m->cap) {
		fprintf(stderr, "model full\n");
		exit(2);
	}
	memmove(&m->e[pos + 1], &m->e[pos], (m->nr - pos) * sizeof(*m->e));
	m->e[pos].index = index;
	m->e[pos].item = item;
	m->nr++;
	return 0;
}

static void *model_delete(struct model *m, uint64_t index)
{
	size_t pos;
	void *item;

	if (!model_has(m, index, &pos))
		return NULL;
	item = m->e[pos].item;
	m->nr--;
	memmove(&m->e[pos], &m->e[pos + 1], (m->nr - pos) * sizeof(*m->e));
	return item;
}

static void *model_replace(struct model *m, uint64_t index, void *item)
{
	size_t pos;
	void *old;

	if (!model_has(m, index, &pos))
		return NULL;
	old = m->e[pos].item;
	m->e[pos].item = item;
	return old;
}

static unsigned int model_gang(const struct model *m, void **items,
			       uint64_t *indices, uint64_t first,
			       unsigned int max)
{
	size_t pos = model_lower(m, first);
	unsigned int n = 0;

	for (; pos < m->nr && n < max; pos++, n++) {
		items[n] = m->e[pos].item;
		indices[n] = m->e[pos].index;
	}
	return n;
}

static unsigned int model_gang_rev(const struct model *m, void **items,
				   uint64_t *indices, uint64_t last,
				   unsigned int max)
{
	/* the first position past every index <= @last */
	size_t pos = last == UINT64_MAX ? m->nr : model_lower(m, last + 1);
	unsigned int n = 0;

	for (; pos > 0 && n < max; pos--, n++) {
		items[n] = m->e[pos - 1].item;
		indices[n] = m->e[pos - 1].index;
	}
	return n;
}

static uint64_t model_random_index(const struct model *m)
{
	return m->e[rnd() % m->nr].index;
}

/* ---- the invariant checker --------------------------------------------- */

/* Digits of @index in base 64: the height a tree holding it must have. */
static unsigned int min_height(uint64_t index)
{
	unsigned int h = 1;

	while (index >= 64) {
		index /= 64;
		h++;
	}
	return h;
}

struct walk {
	const struct model *m;
	size_t pos;		/* model entries met so far */
	uint64_t nodes;		/* nodes met so far */
};

static bool walk_node(struct walk *w, const struct radix_tree_node *node,
		      unsigned int shift, uint64_t prefix)
{
	unsigned int d, used = 0;
	size_t start = w->pos;

	w->nodes++;
	if (node->shift != shift) {
		fprintf(stderr, "node %#" PRIx64 ": shift %u, want %u\n",
			prefix, node->shift, shift);
		return false;
	}
	if (!node->count || node->count != __builtin_popcountll(node->bitmap)) {
		fprintf(stderr, "node %#" PRIx64 ": count %u, bitmap %#" PRIx64
			"\n", prefix, node->count, node->bitmap);
		return false;
	}
	for (d = 0; d < RADIX_TREE_MAP_SIZE; d++) {
		const void *slot = node->slots[d];
		uint64_t index;

		if (!!slot != ((node->bitmap >> d) & 1)) {
			fprintf(stderr, "node %#" PRIx64 ": slot %u %s but bit "
				"%s\n", prefix, d, slot ? "used" : "empty",
				slot ? "clear" : "set");
			return false;
		}
		if (!slot)
			continue;
		used++;
		if (shift == 60 && d >= 16) {
			fprintf(stderr, "top node uses slot %u > 15\n", d);
			return false;
		}
		index = prefix | ((uint64_t)d << shift);
		if (shift) {
			if (!walk_node(w, slot, shift - 6, index))
				return false;
			continue;
		}
		if (w->pos >= w->m->nr || w->m->e[w->pos].index != index ||
		    w->m->e[w->pos].item != slot) {
			fprintf(stderr, "entry %#" PRIx64 " -> %p not the "
				"model's next (%zu of %zu)\n", index, slot,
				w->pos, w->m->nr);
			return false;
		}
		w->pos++;
	}
	if (node->entries != w->pos - start) {
		fprintf(stderr, "node %#" PRIx64 ": %" PRIu64 " entries, %zu "
			"below it\n", prefix, node->entries, w->pos - start);
		return false;
	}
	return used == node->count;
}

/*
 * tree_ok() - the whole tree against its invariants and the model
 *
 * Depth-first in slot order meets the entries in index order, so matching
 * them one by one against the sorted model shows every entry reachable and
 * met once, and nothing else in the tree.
 */
static bool tree_ok(const struct radix_tree_root *root, const struct model *m)
{
	struct walk w = { .m = m };
	unsigned int height;

	if (root->count != m->nr) {
		fprintf(stderr, "count %" PRIu64 ", model %zu\n", root->count,
			m->nr);
		return false;
	}
	if (!m->nr) {
		if (root->rnode || root->height || root->nr_nodes) {
			fprintf(stderr, "empty tree: rnode %p height %u nodes %"
				PRIu64 "\n", (void *)root->rnode, root->height,
				root->nr_nodes);
			return false;
		}
		return true;
	}
	height = min_height(m->e[m->nr - 1].index);
	if (root->height != height || !root->rnode) {
		fprintf(stderr, "height %u, want %u\n", root->height, height);
		return false;
	}
	if (!walk_node(&w, root->rnode, (height - 1) * 6, 0))
		return false;
	if (w.pos != m->nr) {
		fprintf(stderr, "met %zu entries, model has %zu\n", w.pos,
			m->nr);
		return false;
	}
	if (w.nodes != root->nr_nodes) {
		fprintf(stderr, "met %" PRIu64 " nodes, nr_nodes %" PRIu64 "\n",
			w.nodes, root->nr_nodes);
		return false;
	}
	return true;
}

/* What a failed operation must leave exactly as it was. */
struct snapshot {
	struct radix_tree_node *rnode;
	unsigned int height;
	uint64_t count, nr_nodes;
};

static struct snapshot snap(const struct radix_tree_root *root)
{
	return (struct snapshot){ root->rnode, root->height, root->count,
				  root->nr_nodes };
}

static bool snap_equal(const struct radix_tree_root *root, struct snapshot s)
{
	return root->rnode == s.rnode && root->height == s.height &&
	       root->count == s.count && root->nr_nodes == s.nr_nodes;
}

/* ---- gang lookups against the model ------------------------------------ */

#define GANG_MAX 1100

static void *gang_items[GANG_MAX], *model_items[GANG_MAX];
static uint64_t gang_indices[GANG_MAX], model_indices[GANG_MAX];

/* Both directions from @start, up to @max entries; true if both agree. */
static bool gang_agrees(const struct radix_tree_root *root,
			const struct model *m, uint64_t start,
			unsigned int max, bool rev, bool want_indices)
{
	uint64_t *idx = want_indices ? gang_indices : NULL;
	unsigned int n, want, i;

	if (rev) {
		n = radix_tree_gang_lookup_rev(root, gang_items, idx, start,
					       max);
		want = model_gang_rev(m, model_items, model_indices, start,
				      max);
	} else {
		n = radix_tree_gang_lookup(root, gang_items, idx, start, max);
		want = model_gang(m, model_items, model_indices, start, max);
	}
	if (n != want) {
		fprintf(stderr, "gang%s from %#" PRIx64 " max %u: %u entries, "
			"want %u\n", rev ? "_rev" : "", start, max, n, want);
		return false;
	}
	for (i = 0; i < n; i++) {
		if (gang_items[i] != model_items[i] ||
		    (idx && idx[i] != model_indices[i])) {
			fprintf(stderr, "gang%s from %#" PRIx64 " max %u: "
				"entry %u is %#" PRIx64 " -> %p, want %#"
				PRIx64 " -> %p\n", rev ? "_rev" : "", start,
				max, i, idx ? idx[i] : 0, gang_items[i],
				model_indices[i], model_items[i]);
			return false;
		}
	}
	return true;
}

/* radix_tree_count() over [@first, @last] against the model. */
static bool count_agrees(const struct radix_tree_root *root,
			 const struct model *m, uint64_t first, uint64_t last)
{
	uint64_t got = radix_tree_count(root, first, last), want = 0;

	if (first <= last)
		want = (last == UINT64_MAX ? m->nr : model_lower(m, last + 1)) -
		       model_lower(m, first);
	if (got != want)
		fprintf(stderr, "count [%#" PRIx64 ", %#" PRIx64 "]: %" PRIu64
			", want %" PRIu64 "\n", first, last, got, want);
	return got == want;
}

/* ---- examples ----------------------------------------------------------- */

#define ITEM(n)	((void *)(uintptr_t)(((n) + 1) * 8))

static void test_empty(void)
{
	struct radix_tree_root root = RADIX_TREE_INIT;
	void *res[4];
	uint64_t idx[4];

	CHECK(!radix_tree_lookup(&root, 0));
	CHECK(!radix_tree_lookup(&root, UINT64_MAX));
	CHECK(!radix_tree_delete(&root, 0));
	CHECK(!radix_tree_delete(&root, UINT64_MAX));
	CHECK(!radix_tree_replace(&root, 5, ITEM(5)));
	CHECK(radix_tree_gang_lookup(&root, res, idx, 0, 4) == 0);
	CHECK(radix_tree_gang_lookup_rev(&root, res, idx, UINT64_MAX, 4) == 0);
	CHECK(root.rnode == NULL && root.height == 0 && root.count == 0 &&
	      root.nr_nodes == 0);
	radix_tree_init(&root);
	CHECK(root.rnode == NULL && root.height == 0);
	radix_tree_destroy(&root);
	CHECK(root.rnode == NULL && root.nr_nodes == 0);
}

static void test_basic(void)
{
	struct radix_tree_root root;
	struct model m;

	radix_tree_init(&root);
	model_init(&m, 16);

	/* one leaf covers 0..63 */
	CHECK(radix_tree_insert(&root, 0, ITEM(0)) == 0);
	model_insert(&m, 0, ITEM(0));
	CHECK(root.height == 1 && root.nr_nodes == 1 && root.count == 1);
	CHECK(radix_tree_insert(&root, 63, ITEM(63)) == 0);
	model_insert(&m, 63, ITEM(63));
	CHECK(root.height == 1 && root.nr_nodes == 1 && root.count == 2);

	/* 64 needs a second level: before: [leaf 0..63]
	 * after: top -> { slot 0: leaf 0..63, slot 1: leaf 64..127 } */
	CHECK(radix_tree_insert(&root, 64, ITEM(64)) == 0);
	model_insert(&m, 64, ITEM(64));
	CHECK(root.height == 2 && root.nr_nodes == 3);
	CHECK(tree_ok(&root, &m));

	/* a taken index: -EEXIST, the old entry stays */
	CHECK(radix_tree_insert(&root, 0, ITEM(99)) == -EEXIST);
	CHECK(radix_tree_insert(&root, 64, ITEM(99)) == -EEXIST);
	CHECK(radix_tree_lookup(&root, 0) == ITEM(0));
	CHECK(radix_tree_lookup(&root, 64) == ITEM(64));
	CHECK(!radix_tree_lookup(&root, 1) && !radix_tree_lookup(&root, 65));
	CHECK(!radix_tree_lookup(&root, 4096));
	CHECK(root.count == 3);

	/* replace swaps an entry, and stores nothing at an empty index */
	CHECK(radix_tree_replace(&root, 64, ITEM(640)) == ITEM(64));
	model_replace(&m, 64, ITEM(640));
	CHECK(radix_tree_lookup(&root, 64) == ITEM(640));
	CHECK(radix_tree_replace(&root, 65, ITEM(65)) == NULL);
	CHECK(radix_tree_replace(&root, UINT64_MAX, ITEM(65)) == NULL);
	CHECK(!radix_tree_lookup(&root, 65) && root.count == 3);
	CHECK(tree_ok(&root, &m));

	/* the largest index: height 11, nine new tops (heights 3..11) on the
	 * slot-0 chain and a new path of ten nodes below the top */
	CHECK(radix_tree_insert(&root, UINT64_MAX, ITEM(1)) == 0);
	model_insert(&m, UINT64_MAX, ITEM(1));
	CHECK(root.height == 11 && root.nr_nodes == 3 + 9 + 10);
	CHECK(radix_tree_lookup(&root, UINT64_MAX) == ITEM(1));
	CHECK(!radix_tree_lookup(&root, UINT64_MAX - 1));
	CHECK(tree_ok(&root, &m));

	/* deletes free emptied nodes and shrink the height back */
	CHECK(!radix_tree_delete(&root, UINT64_MAX - 1));
	CHECK(!radix_tree_delete(&root, 1));
	CHECK(radix_tree_delete(&root, UINT64_MAX) == ITEM(1));
	model_delete(&m, UINT64_MAX);
	CHECK(root.height == 2 && root.nr_nodes == 3);
	CHECK(tree_ok(&root, &m));
	CHECK(radix_tree_delete(&root, 64) == ITEM(640));
	model_delete(&m, 64);
	CHECK(root.height == 1 && root.nr_nodes == 1);
	CHECK(tree_ok(&root, &m));
	CHECK(radix_tree_delete(&root, 0) == ITEM(0));
	CHECK(radix_tree_delete(&root, 0) == NULL);
	CHECK(radix_tree_delete(&root, 63) == ITEM(63));
	CHECK(!root.rnode && root.height == 0 && root.nr_nodes == 0 &&
	      root.count == 0);

	/* a lone entry far from 0: the top keeps its place, then shrinks
	 * when only slot 0 is left in use */
	CHECK(radix_tree_insert(&root, 1ULL << 30, ITEM(2)) == 0);
	CHECK(radix_tree_insert(&root, 5, ITEM(5)) == 0);
	CHECK(root.height == 6 && root.nr_nodes == 6 + 5);
	CHECK(radix_tree_delete(&root, 1ULL << 30) == ITEM(2));
	CHECK(root.height == 1 && root.nr_nodes == 1);
	CHECK(radix_tree_lookup(&root, 5) == ITEM(5));
	radix_tree_destroy(&root);
	CHECK(!root.rnode && root.count == 0 && root.nr_nodes == 0);
	model_free(&m);
}

/* Height h holds exactly the indexes below 2^(6h); each lone entry needs a
 * path of h nodes. */
static void test_heights(void)
{
	struct radix_tree_root root = RADIX_TREE_INIT;
	unsigned int h;

	for (h = 1; h <= 11; h++) {
		uint64_t last = h == 11 ? UINT64_MAX : (1ULL << (6 * h)) - 1;
		uint64_t first = h == 1 ? 0 : 1ULL << (6 * (h - 1));

		CHECK(min_height(first) == h && min_height(last) == h);
		CHECK(radix_tree_insert(&root, first, ITEM(h)) == 0);
		CHECK_MSG(root.height == h && root.nr_nodes == h,
			  "first %#" PRIx64 ": height %u nodes %" PRIu64,
			  first, root.height, root.nr_nodes);
		CHECK(radix_tree_delete(&root, first) == ITEM(h));
		CHECK(radix_tree_insert(&root, last, ITEM(h)) == 0);
		CHECK_MSG(root.height == h && root.nr_nodes == h,
			  "last %#" PRIx64 ": height %u nodes %" PRIu64,
			  last, root.height, root.nr_nodes);
		CHECK(radix_tree_lookup(&root, last) == ITEM(h));
		if (h < 11)
			CHECK(!radix_tree_lookup(&root, last + 1));
		CHECK(radix_tree_delete(&root, last) == ITEM(h));
		CHECK(!root.rnode && root.nr_nodes == 0);
	}
}

static void test_node_size(void)
{
	size_t size = radix_tree_node_size();

	CHECK(size >= RADIX_TREE_MAP_SIZE * sizeof(void *) + 8);
	CHECK(size == ak_good_size(sizeof(struct radix_tree_node)));
	CHECK(size <= 640);
}

/* Gang lookups at both ends of the index space and across node edges. */
static void test_gang_edges(void)
{
	static const uint64_t edges[] = {
		0, 1, 62, 63, 64, 65, 127, 128, 4095, 4096, 4097,
		(1ULL << 36) - 1, 1ULL << 36, (1ULL << 60) - 1, 1ULL << 60,
		(1ULL << 63) - 1, 1ULL << 63, UINT64_MAX - 64, UINT64_MAX - 63,
		UINT64_MAX - 1, UINT64_MAX,
	};
	static const unsigned int maxes[] = { 0, 1, 2, 3, 7, 64, 1000 };
	const unsigned int nr = sizeof(edges) / sizeof(edges[0]);
	struct radix_tree_root root = RADIX_TREE_INIT;
	struct model m;
	unsigned int i, j, k, n;
	void *res[32];
	uint64_t idx[32];
	bool ok = true;

	model_init(&m, 64);

	/* only small indexes: a height-1 tree */
	for (i = 0; i < 4; i++) {
		CHECK(radix_tree_insert(&root, edges[i], ITEM(i)) == 0);
		model_insert(&m, edges[i], ITEM(i));
	}
	CHECK(root.height == 1);
	CHECK(radix_tree_gang_lookup(&root, res, idx, 1000, 32) == 0);
	CHECK(radix_tree_gang_lookup(&root, res, idx, UINT64_MAX, 32) == 0);
	n = radix_tree_gang_lookup_rev(&root, res, idx, UINT64_MAX, 32);
	CHECK(n == 4 && idx[0] == 63 && idx[3] == 0 && res[0] == ITEM(3));
	CHECK(radix_tree_gang_lookup_rev(&root, res, idx, 0, 32) == 1 &&
	      idx[0] == 0);

	for (i = 4; i < nr; i++) {
		CHECK(radix_tree_insert(&root, edges[i], ITEM(i)) == 0);
		model_insert(&m, edges[i], ITEM(i));
	}
	CHECK(tree_ok(&root, &m));

	/* everything, both ways */
	n = radix_tree_gang_lookup(&root, res, idx, 0, 32);
	CHECK(n == nr);
	for (i = 0; i < n && i < nr; i++)
		CHECK(idx[i] == edges[i] && res[i] == ITEM(i));
	n = radix_tree_gang_lookup_rev(&root, res, idx, UINT64_MAX, 32);
	CHECK(n == nr);
	for (i = 0; i < n && i < nr; i++)
		CHECK(idx[i] == edges[nr - 1 - i] &&
		      res[i] == ITEM(nr - 1 - i));
	/* the very ends */
	CHECK(radix_tree_gang_lookup(&root, res, idx, UINT64_MAX, 32) == 1 &&
	      idx[0] == UINT64_MAX);
	CHECK(radix_tree_gang_lookup_rev(&root, res, NULL, 0, 32) == 1 &&
	      res[0] == ITEM(0));

	/* from every edge and its neighbours, every count, both ways */
	for (i = 0; i < nr; i++)
		for (j = 0; j < 3; j++)
			for (k = 0; k < sizeof(maxes) / sizeof(maxes[0]); k++) {
				uint64_t start = edges[i] + j - 1;

				ok &= gang_agrees(&root, &m, start, maxes[k],
						  false, true);
				ok &= gang_agrees(&root, &m, start, maxes[k],
						  true, true);
			}
	CHECK(ok);

	/* without the end entries, lookups from the ends find nothing there */
	CHECK(radix_tree_delete(&root, 0) == ITEM(0));
	CHECK(radix_tree_delete(&root, UINT64_MAX) == ITEM(nr - 1));
	CHECK(radix_tree_gang_lookup(&root, res, idx, UINT64_MAX, 32) == 0);
	CHECK(radix_tree_gang_lookup_rev(&root, res, idx, 0, 32) == 0);
	CHECK(radix_tree_gang_lookup(&root, res, idx, 0, 1) == 1 &&
	      idx[0] == 1);
	CHECK(radix_tree_gang_lookup_rev(&root, res, idx, UINT64_MAX, 1) == 1 &&
	      idx[0] == UINT64_MAX - 1);
	radix_tree_destroy(&root);
	model_free(&m);
}

/*
 * The iterator walks exactly what the model holds from its start, in
 * order, whatever the batch size, across batch boundaries and the two ends
 * of the index space; the entry just returned may be deleted mid-walk.
 */
static bool iter_agrees(const struct radix_tree_root *root,
			const struct model *m, uint64_t start, bool rev,
			unsigned int batch)
{
	struct radix_tree_iter iter;
	size_t pos, end;
	void *entry;

	radix_tree_iter_init(&iter, start, rev, batch);
	/* the model's positions the walk must visit, in walk order */
	if (rev) {
		pos = start == UINT64_MAX ? m->nr : model_lower(m, start + 1);
		end = 0;
	} else {
		pos = model_lower(m, start);
		end = m->nr;
	}
	while ((entry = radix_tree_iter_next(root, &iter))) {
		const struct model_entry *want;

		if (pos == end) {
			fprintf(stderr, "iter%s from %#" PRIx64 " batch %u: "
				"an entry past the model's\n", rev ? "_rev" : "",
				start, batch);
			return false;
		}
		want = rev ? &m->e[--pos] : &m->e[pos++];
		if (entry != want->item ||
		    radix_tree_iter_index(&iter) != want->index) {
			fprintf(stderr, "iter%s from %#" PRIx64 " batch %u: "
				"%#" PRIx64 " -> %p, want %#" PRIx64 " -> %p\n",
				rev ? "_rev" : "", start, batch,
				radix_tree_iter_index(&iter), entry,
				want->index, want->item);
			return false;
		}
	}
	if (pos != end)
		fprintf(stderr, "iter%s from %#" PRIx64 " batch %u: stopped "
			"%zu entries short\n", rev ? "_rev" : "", start,
			batch, rev ? pos - end : end - pos);
	return pos == end;
}

static void test_iter(void)
{
	static const uint64_t edges[] = {
		0, 1, 2, 31, 32, 33, 63, 64, 65, 4095, 4096, 1ULL << 40,
		(1ULL << 63) - 1, 1ULL << 63, UINT64_MAX - 1, UINT64_MAX,
	};
	static const unsigned int batches[] = { 0, 1, 2, 3, 31, 32, 33, 1000 };
	const unsigned int nr = sizeof(edges) / sizeof(edges[0]);
	struct radix_tree_root root = RADIX_TREE_INIT;
	struct radix_tree_iter iter;
	unsigned int i, j, k, seen;
	struct model m;
	void *entry;
	bool ok = true;

	model_init(&m, 256);
	/* an empty tree: no entry, from anywhere */
	ok &= iter_agrees(&root, &m, 0, false, 0);
	ok &= iter_agrees(&root, &m, UINT64_MAX, true, 0);
	CHECK(ok);

	/* the edges, then a run of 100 so that batches of 32 fill up */
	for (i = 0; i < nr; i++) {
		CHECK(radix_tree_insert(&root, edges[i], ITEM(i)) == 0);
		model_insert(&m, edges[i], ITEM(i));
	}
	for (i = 0; i < 100; i++) {
		CHECK(radix_tree_insert(&root, 1000 + i, ITEM(100 + i)) == 0);
		model_insert(&m, 1000 + i, ITEM(100 + i));
	}
	for (i = 0; i < nr; i++)
		for (j = 0; j < 3; j++)
			for (k = 0; k < sizeof(batches) / sizeof(batches[0]);
			     k++) {
				uint64_t start = edges[i] + j - 1;

				ok &= iter_agrees(&root, &m, start, false,
						  batches[k]);
				ok &= iter_agrees(&root, &m, start, true,
						  batches[k]);
			}
	CHECK(ok);

	/* counts between every two edges and their neighbours */
	for (i = 0; i < nr; i++)
		for (j = 0; j < nr; j++)
			for (k = 0; k < 3; k++)
				ok &= count_agrees(&root, &m, edges[i] + k - 1,
						   edges[j]);
	CHECK(ok);
	CHECK(radix_tree_count(&root, 0, UINT64_MAX) == m.nr);

	/* radix_tree_for_each() sees every entry once, in order */
	seen = 0;
	radix_tree_for_each(entry, &root, &iter, 0) {
		CHECK(seen < m.nr && entry == m.e[seen].item &&
		      radix_tree_iter_index(&iter) == m.e[seen].index);
		seen++;
	}
	CHECK(seen == m.nr);

	/* deleting the entry just returned, every one of them, empties it */
	seen = 0;
	radix_tree_iter_init(&iter, 0, false, 3);
	while ((entry = radix_tree_iter_next(&root, &iter))) {
		CHECK(radix_tree_delete(&root, radix_tree_iter_index(&iter)) ==
		      entry);
		model_delete(&m, radix_tree_iter_index(&iter));
		seen++;
	}
	CHECK(seen == nr + 100 && m.nr == 0);
	CHECK(root.count == 0);
	CHECK(tree_ok(&root, &m));
	radix_tree_destroy(&root);
	model_free(&m);
}

/*
 * Every index of 0..100000, filled in order and then deleted in a random
 * order, against a presence array; the sorted model is rebuilt from it for
 * the invariant checker.
 */
#define DENSE_N 100001

static void model_from_present(struct model *m, const uint8_t *present,
			       void *const *items)
{
	uint64_t i;

	m->nr = 0;
	for (i = 0; i < DENSE_N; i++)
		if (present[i]) {
			m->e[m->nr].index = i;
			m->e[m->nr].item = items[i];
			m->nr++;
		}
}

static void test_dense_fill(void)
{
	struct radix_tree_root root = RADIX_TREE_INIT;
	uint8_t *present = ak_calloc(DENSE_N, 1);
	void **items = ak_malloc(DENSE_N * sizeof(*items));
	uint64_t *order = ak_malloc(DENSE_N * sizeof(*order));
	uint64_t i, nodes = 0, level;
	struct model m;
	bool ok = true;

	model_init(&m, DENSE_N);
	if (!present || !items || !order)
		exit(2);
	for (i = 0; i < DENSE_N; i++) {
		items[i] = rnd_item();
		ok &= radix_tree_insert(&root, i, items[i]) == 0;
		present[i] = 1;
		order[i] = i;
	}
	CHECK(ok);
	/* full leaves: ceil(N / 64) of them, ceil(N / 4096) above, one top */
	for (level = 64; level / 64 < DENSE_N; level *= 64)
		nodes += (DENSE_N + level - 1) / level;
	CHECK(root.height == 3 && root.nr_nodes == nodes);
	model_from_present(&m, present, items);
	CHECK(tree_ok(&root, &m));
	CHECK(gang_agrees(&root, &m, 0, 1000, false, true));
	CHECK(gang_agrees(&root, &m, 4095, 3, false, true));
	CHECK(gang_agrees(&root, &m, 4096, 3, true, true));
	CHECK(gang_agrees(&root, &m, DENSE_N + 5, 70, true, true));
	CHECK(gang_agrees(&root, &m, UINT64_MAX, 70, true, false));

	for (i = DENSE_N - 1; i > 0; i--) {	/* Fisher-Yates */
		uint64_t j = rnd() % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (i = 0; i < DENSE_N; i++) {
		uint64_t index = order[i];

		ok &= radix_tree_delete(&root, index) == items[index];
		ok &= !radix_tree_lookup(&root, index);
		present[index] = 0;
		if (i % 10000 == 0 || i == DENSE_N / 2 + 7) {
			model_from_present(&m, present, items);
			ok &= tree_ok(&root, &m);
			ok &= gang_agrees(&root, &m, rnd() % DENSE_N, 200,
					  false, true);
			ok &= gang_agrees(&root, &m, rnd() % DENSE_N, 200,
					  true, true);
		}
		if (!ok)
			break;
	}
	CHECK_MSG(ok, "dense delete %" PRIu64, i);
	CHECK(!root.rnode && root.nr_nodes == 0 && root.count == 0);
	model_free(&m);
	ak_free(order);
	ak_free(items);
	ak_free(present);
}

/* ---- randomized runs against the model ---------------------------------- */

enum dist { DIST_DENSE, DIST_SPARSE, DIST_LOW, DIST_HIGH, DIST_MIXED };

static const char *const dist_name[] = {
	"dense", "sparse", "low", "high", "mixed",
};

static uint64_t pick_index(enum dist d)
{
	unsigned int k;

	switch (d) {
	case DIST_DENSE:
		return rnd() % 100001;
	case DIST_SPARSE:
		return rnd();
	case DIST_LOW:		/* 0..4095, most below 64 */
		return rnd() % (1ULL << (rnd() % 13));
	case DIST_HIGH:
		return UINT64_MAX - rnd() % (1ULL << (rnd() % 13));
	case DIST_MIXED:
	default:
		k = rnd() % 5;
		if (k < 4)
			return pick_index((enum dist)(k));
		/* around a height boundary 2^(6k) */
		k = 1 + rnd() % 10;
		return (1ULL << (6 * k)) + rnd() % 7 - 3;
	}
}

/* The index an operation aims at: mostly one the model holds (so deletes
 * and lookups hit), sometimes its neighbour, else a fresh one. */
static uint64_t pick_target(const struct model *m, enum dist d)
{
	unsigned int r = rnd() % 8;

	if (m->nr && r < 4)
		return model_random_index(m);
	if (m->nr && r == 4)
		return model_random_index(m) + (rnd() & 1 ? 1 : -1);
	if (r == 5)
		return rnd() & 1 ? 0 : UINT64_MAX;
	return pick_index(d);
}

static uint64_t pick_gang_start(const struct model *m, enum dist d)
{
	switch (rnd() % 6) {
	case 0:
		return 0;
	case 1:
		return UINT64_MAX;
	case 2:
	case 3:
		return m->nr ? model_random_index(m) + rnd() % 3 - 1 :
			       pick_index(d);
	default:
		return pick_index(d);
	}
}

static unsigned int pick_gang_max(void)
{
	unsigned int r = rnd() % 32;

	if (r == 0)
		return 0;
	if (r == 1)
		return 200 + rnd() % (GANG_MAX - 200);
	return 1 + rnd() % 130;
}

static const unsigned long dist_cap[] = {
	[DIST_DENSE] = 4000, [DIST_SPARSE] = 1500, [DIST_LOW] = 800,
	[DIST_HIGH] = 800, [DIST_MIXED] = 2500,
};

/*
 * random_run() - @ops random operations of distribution @d, each checked
 * against the model; the whole tree is checked every few thousand.
 *
 * The run alternates a growing phase (more inserts) and a shrinking one
 * (more deletes, down to empty every other time), so trees grow, shrink
 * and start again from nothing. A quarter of the inserts are preloaded
 * with every allocation made to fail: they must not return -ENOMEM.
 */
static void random_run(enum dist d, unsigned long ops)
{
	struct radix_tree_root root = RADIX_TREE_INIT;
	unsigned long failed_before = check_failed, op, phase_ops = 0;
	unsigned long injected = ak_alloc_failures();
	bool growing = true, to_empty = false;
	unsigned int cycles = 0;
	struct model m;

	model_init(&m, dist_cap[d] + 1);
	for (op = 0; op < ops; op++) {
		unsigned int r = rnd() % 100, ins = growing ? 45 : 12;
		unsigned int del = growing ? 12 : 45;
		uint64_t index = pick_target(&m, d);
		void *item, *got;

		if (r < ins && m.nr < dist_cap[d]) {
			bool preload = rnd() % 4 == 0;
			int err, want;

			item = rnd_item();
			if (preload) {
				CHECK(radix_tree_preload() == 0);
				ak_alloc_fail_random(1);
			}
			err = radix_tree_insert(&root, index, item);
			if (preload) {
				ak_alloc_fail_random(0);
				radix_tree_preload_end();
			}
			want = model_insert(&m, index, item);
			CHECK_MSG(err == want, "insert %#" PRIx64 ": %d, want "
				  "%d", index, err, want);
		} else if (r < ins + del) {
			got = radix_tree_delete(&root, index);
			item = model_delete(&m, index);
			CHECK_MSG(got == item, "delete %#" PRIx64 ": %p, want "
				  "%p", index, got, item);
		} else if (r < ins + del + 15) {
			got = radix_tree_lookup(&root, index);
			item = model_get(&m, index);
			CHECK_MSG(got == item, "lookup %#" PRIx64 ": %p, want "
				  "%p", index, got, item);
		} else if (r < ins + del + 25) {
			void *new_item = rnd_item();

			got = radix_tree_replace(&root, index, new_item);
			item = model_replace(&m, index, new_item);
			CHECK_MSG(got == item, "replace %#" PRIx64 ": %p, want "
				  "%p", index, got, item);
		} else if (r % 4) {
			CHECK(gang_agrees(&root, &m, pick_gang_start(&m, d),
					  pick_gang_max(), r % 2, rnd() % 4));
		} else {
			uint64_t a = pick_gang_start(&m, d);
			uint64_t b = rnd() % 2 ? pick_gang_start(&m, d) :
				     a + rnd() % 5000;

			CHECK(count_agrees(&root, &m, a, b < a ? UINT64_MAX : b));
			CHECK(count_agrees(&root, &m, b, a));
		}
		CHECK_MSG(root.count == m.nr, "count %" PRIu64 ", want %zu",
			  root.count, m.nr);

		if (++phase_ops > 20000 || (growing && m.nr >= dist_cap[d]) ||
		    (!growing && m.nr <= (to_empty ? 0 : dist_cap[d] / 16))) {
			CHECK(tree_ok(&root, &m));
			growing = !growing;
			if (growing)
				to_empty = ++cycles % 2;
			phase_ops = 0;
		} else if (op % 4096 == 0) {
			CHECK(tree_ok(&root, &m));
		}
		if (check_failed != failed_before) {
			fprintf(stderr, "%s run stopped at op %lu\n",
				dist_name[d], op);
			break;
		}
	}
	CHECK(tree_ok(&root, &m));
	/* the preloaded inserts never reached the allocator */
	CHECK(ak_alloc_failures() == injected);
	printf("random %-6s %lu ops, %u cycles, %zu entries, %" PRIu64
	       " nodes at the end\n", dist_name[d], op, cycles, m.nr,
	       root.nr_nodes);
	radix_tree_destroy(&root);
	model_free(&m);
}

/*
 * Random inserts and deletes with one allocation in three refused and the
 * pool often drained: every insert gives 0, -EEXIST or -ENOMEM as the
 * model says, and a refused one leaves the tree exactly as it was.
 */
static void random_faults(unsigned long ops)
{
	struct radix_tree_root root = RADIX_TREE_INIT;
	unsigned long op, nomem = 0;
	struct model m;
	bool ok = true;

	model_init(&m, 2001);
	for (op = 0; op < ops && ok; op++) {
		enum dist d = (enum dist)(rnd() % 5);
		uint64_t index = pick_target(&m, d);
		struct snapshot before = snap(&root);
		void *item = rnd_item();
		int err;

		if (rnd() % 3 == 0) {
			ok &= radix_tree_delete(&root, index) ==
			      model_delete(&m, index);
			continue;
		}
		if (m.nr == 2000)
			continue;
		if (rnd() % 2)
			radix_tree_preload_drain();
		ak_alloc_fail_random(3);
		err = radix_tree_insert(&root, index, item);
		ak_alloc_fail_random(0);
		if (err == -ENOMEM) {
			nomem++;
			ok &= snap_equal(&root, before);
			ok &= !radix_tree_lookup(&root, index);
			ok &= model_get(&m, index) == NULL;
		} else {
			ok &= err == model_insert(&m, index, item);
		}
		if (!ok || op % 1000 == 0)
			ok &= tree_ok(&root, &m);
	}
	CHECK_MSG(ok, "fault run failed at op %lu", op);
	CHECK(tree_ok(&root, &m));
	CHECK(nomem > 0);
	printf("faults: %lu ops, %lu inserts refused\n", op, nomem);
	radix_tree_destroy(&root);
	model_free(&m);
}

/* ---- preloading and allocation failure ---------------------------------- */

/* A tree holding @n random indexes of distribution @d, and its model. */
static void build(struct radix_tree_root *root, struct model *m,
		  enum dist d, unsigned int n)
{
	while (m->nr < n) {
		uint64_t index = pick_index(d);
		void *item = rnd_item();

		if (model_insert(m, index, item) == 0)
			CHECK(radix_tree_insert(root, index, item) == 0);
	}
}

/* (a) after a successful preload the insert cannot fail for memory */
static void test_preload_guarantee(void)
{
	struct radix_tree_root root = RADIX_TREE_INIT;
	unsigned long injected;
	struct model m;
	int i;

	model_init(&m, 8);

	/* height 1 -> 11: ten new tops and a ten-node path, all preloaded */
	CHECK(radix_tree_insert(&root, 7, ITEM(7)) == 0);
	model_insert(&m, 7, ITEM(7));
	radix_tree_preload_drain();
	CHECK(radix_tree_preload() == 0);
	injected = ak_alloc_failures();
	ak_alloc_fail_after(0);	/* the very next allocation fails */
	CHECK(radix_tree_insert(&root, UINT64_MAX, ITEM(1)) == 0);
	ak_alloc_fail_after(-1);
	radix_tree_preload_end();
	model_insert(&m, UINT64_MAX, ITEM(1));
	CHECK(ak_alloc_failures() == injected); /* nothing was allocated */
	CHECK(root.height == 11 && root.nr_nodes == 1 + 10 + 10);
	CHECK(tree_ok(&root, &m));

	/* an empty tree to height 11, with every allocation refused */
	radix_tree_destroy(&root);
	m.nr = 0;
	CHECK(radix_tree_preload() == 0);
	ak_alloc_fail_random(1);
	CHECK(radix_tree_insert(&root, UINT64_MAX - 1, ITEM(2)) == 0);
	ak_alloc_fail_random(0);
	radix_tree_preload_end();
	model_insert(&m, UINT64_MAX - 1, ITEM(2));
	CHECK(root.nr_nodes == 11 && tree_ok(&root, &m));

	/* a full pool needs no allocation to stay full */
	for (i = 0; i < 3; i++) {
		CHECK(radix_tree_preload() == 0);
		radix_tree_preload_end();
	}
	ak_alloc_fail_random(1);
	CHECK(radix_tree_preload() == 0);
	ak_alloc_fail_random(0);
	CHECK(ak_alloc_failures() == injected);

	/* deletes refill the pool: an unpreloaded insert then needs no
	 * allocation either */
	radix_tree_destroy(&root);
	m.nr = 0;
	radix_tree_preload_drain();
	CHECK(radix_tree_insert(&root, UINT64_MAX, ITEM(3)) == 0);
	CHECK(radix_tree_delete(&root, UINT64_MAX) == ITEM(3));
	CHECK(root.nr_nodes == 0);
	ak_alloc_fail_random(1);
	CHECK(radix_tree_insert(&root, UINT64_MAX, ITEM(3)) == 0);
	ak_alloc_fail_random(0);
	model_insert(&m, UINT64_MAX, ITEM(3));
	CHECK(tree_ok(&root, &m));
	CHECK(ak_alloc_failures() == injected);
	radix_tree_destroy(&root);
	model_free(&m);
}

/*
 * radix_tree_insert_nodes_max() bounds what an insert adds, from the tree
 * as it stands: the store reserves that many nodes' bytes before it. Keys
 * of every magnitude (a random bit length), into trees of every height.
 */
static void test_insert_nodes_max(void)
{
	struct radix_tree_root root = RADIX_TREE_INIT;
	unsigned int round, i, tight = 0;

	for (round = 0; round < 200; round++) {
		for (i = 0; i < 50; i++) {
			unsigned int bits = (unsigned int)(rnd() % 65);
			uint64_t index = bits ? rnd() >> (64 - bits) : 0;
			unsigned int max = radix_tree_insert_nodes_max(&root,
								       index);
			uint64_t before = root.nr_nodes;

			if (radix_tree_lookup(&root, index))
				continue;
			CHECK(max <= RADIX_TREE_PRELOAD_SIZE);
			CHECK(radix_tree_insert(&root, index, rnd_item()) == 0);
			CHECK_MSG(root.nr_nodes - before <= max,
				  "index %" PRIu64 ": %" PRIu64 " nodes added, "
				  "bound %u", index, root.nr_nodes - before, max);
			tight += root.nr_nodes - before == max;
		}
		radix_tree_destroy(&root);
	}
	/* the bound is reached (a first insert, a tree grown from height 1) */
	CHECK(tight > 0);
}

/* (b) a preload refused at any of its allocations changes no tree */
static void test_preload_failure(void)
{
	struct radix_tree_root root = RADIX_TREE_INIT;
	struct snapshot before;
	unsigned long injected;
	struct model m;
	uint64_t index;
	long k;

	model_init(&m, 201);
	build(&root, &m, DIST_MIXED, 200);
	before = snap(&root);

	for (k = 0; k < RADIX_TREE_PRELOAD_SIZE; k++) {
		radix_tree_preload_drain();
		injected = ak_alloc_failures();
		ak_alloc_fail_after(k);
		CHECK_MSG(radix_tree_preload() == -ENOMEM, "fail after %ld", k);
		ak_alloc_fail_after(-1);
		CHECK(ak_alloc_failures() == injected + 1);
		CHECK(snap_equal(&root, before));
	}
	CHECK(tree_ok(&root, &m));

	/* the fault stops: the next preload succeeds, and the insert after
	 * it needs no allocation */
	do
		index = pick_index(DIST_SPARSE);
	while (model_get(&m, index));
	CHECK(radix_tree_preload() == 0);
	ak_alloc_fail_random(1);
	CHECK(radix_tree_insert(&root, index, ITEM(1)) == 0);
	ak_alloc_fail_random(0);
	radix_tree_preload_end();
	model_insert(&m, index, ITEM(1));
	CHECK(tree_ok(&root, &m));

	/* a pool partly filled is kept: after 5 of its nodes, exactly the
	 * rest is allocated */
	radix_tree_preload_drain();
	ak_alloc_fail_after(5);
	CHECK(radix_tree_preload() == -ENOMEM);
	injected = ak_alloc_failures();
	ak_alloc_fail_after(RADIX_TREE_PRELOAD_SIZE - 5);
	CHECK(radix_tree_preload() == 0);
	CHECK(ak_malloc(1) == NULL);	/* the injector was one away */
	ak_alloc_fail_after(-1);
	CHECK(ak_alloc_failures() == injected + 1);
	radix_tree_destroy(&root);
	model_free(&m);
}

/*
 * Insert @index without preload, refusing the first, second, ... allocation
 * in turn: each attempt returns -ENOMEM and leaves the tree exactly as it
 * was, until enough allocations succeed. Returns the nodes the insert took.
 */
static unsigned int insert_refused(struct radix_tree_root *root,
				   struct model *m, uint64_t index)
{
	struct snapshot before = snap(root);
	void *item = rnd_item();
	unsigned long injected;
	unsigned int k;
	int err = -ENOMEM;
	bool ok = true;

	for (k = 0; k <= RADIX_TREE_PRELOAD_SIZE && err == -ENOMEM; k++) {
		radix_tree_preload_drain();
		injected = ak_alloc_failures();
		ak_alloc_fail_after(k);
		err = radix_tree_insert(root, index, item);
		ak_alloc_fail_after(-1);
		if (err == -ENOMEM) {
			ok &= ak_alloc_failures() == injected + 1;
			ok &= snap_equal(root, before);
			ok &= !radix_tree_lookup(root, index);
			ok &= tree_ok(root, m);
		}
	}
	CHECK_MSG(ok, "index %#" PRIx64 " refused at %u", index, k);
	CHECK_MSG(err == 0, "index %#" PRIx64 ": %d", index, err);
	model_insert(m, index, item);
	CHECK(tree_ok(root, m));
	CHECK(root->nr_nodes == before.nr_nodes + (k - 1));
	return k - 1;
}

/* (c) an insert without preload that meets an allocation failure */
static void test_insert_nomem(void)
{
	struct radix_tree_root root = RADIX_TREE_INIT;
	struct model m;
	unsigned int i;

	model_init(&m, 400);

	/* empty -> height 11: a path of 11 nodes */
	CHECK(insert_refused(&root, &m, UINT64_MAX - 3) == 11);
	radix_tree_destroy(&root);
	m.nr = 0;

	/* height 1 -> 11: 10 tops and a path of 10 */
	CHECK(radix_tree_insert(&root, 3, ITEM(3)) == 0);
	model_insert(&m, 3, ITEM(3));
	CHECK(insert_refused(&root, &m, UINT64_MAX) == 20);
	/* beside an existing leaf: no node */
	CHECK(insert_refused(&root, &m, 4) == 0);
	/* height 11 -> new leaf under the existing level-2 node */
	CHECK(insert_refused(&root, &m, 64) == 1);
	/* the third digit differs: two new nodes */
	CHECK(insert_refused(&root, &m, 4096 * 5) == 2);

	/* random shapes */
	build(&root, &m, DIST_MIXED, 300);
	for (i = 0; i < 60; i++) {
		uint64_t index;

		do
			index = pick_index((enum dist)(rnd() % 5));
		while (model_get(&m, index));
		insert_refused(&root, &m, index);
	}
	/* a taken index is -EEXIST before any allocation */
	radix_tree_preload_drain();
	ak_alloc_fail_random(1);
	CHECK(radix_tree_insert(&root, UINT64_MAX, ITEM(0)) == -EEXIST);
	ak_alloc_fail_random(0);
	CHECK(tree_ok(&root, &m));
	radix_tree_destroy(&root);
	model_free(&m);
}

/* Deletes give nodes to the pool until it is full, then to the allocator:
 * LeakSanitizer and ASan see that every node is freed exactly once. */
static void test_pool_overflow(void)
{
	struct radix_tree_root root = RADIX_TREE_INIT;
	struct model m;
	size_t i;

	model_init(&m, 501);
	build(&root, &m, DIST_SPARSE, 500);
	CHECK(root.nr_nodes > 2 * RADIX_TREE_PRELOAD_SIZE);
	radix_tree_preload_drain();
	for (i = m.nr; i-- > 0;)
		CHECK(radix_tree_delete(&root, m.e[i].index) == m.e[i].item);
	m.nr = 0;
	CHECK(tree_ok(&root, &m));
	model_free(&m);
}

/* The pool is per thread: another thread's full pool does not help. */
struct thread_result {
	int err_unpreloaded, err_preload, err_preloaded;
};

static void *pool_thread(void *arg)
{
	struct thread_result *res = arg;
	struct radix_tree_root root = RADIX_TREE_INIT;

	ak_alloc_fail_random(1);
	res->err_unpreloaded = radix_tree_insert(&root, 1ULL << 40, ITEM(0));
	ak_alloc_fail_random(0);
	res->err_preload = radix_tree_preload();
	ak_alloc_fail_random(1);
	res->err_preloaded = radix_tree_insert(&root, 1ULL << 40, ITEM(0));
	ak_alloc_fail_random(0);
	radix_tree_preload_end();
	radix_tree_destroy(&root);
	radix_tree_preload_drain();
	return NULL;
}

static void test_pool_per_thread(void)
{
	struct thread_result res = { 1, 1, 1 };
	struct radix_tree_root root = RADIX_TREE_INIT;
	pthread_t t;

	CHECK(radix_tree_insert(&root, 1, ITEM(1)) == 0);
	CHECK(radix_tree_preload() == 0);	/* this thread's pool: full */
	CHECK(pthread_create(&t, NULL, pool_thread, &res) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(res.err_unpreloaded == -ENOMEM);
	CHECK(res.err_preload == 0);
	CHECK(res.err_preloaded == 0);
	/* and this thread's pool is still whole: height 1 -> 11 takes all */
	ak_alloc_fail_random(1);
	CHECK(radix_tree_insert(&root, UINT64_MAX, ITEM(2)) == 0);
	ak_alloc_fail_random(0);
	radix_tree_preload_end();
	CHECK(root.nr_nodes == 21);
	radix_tree_destroy(&root);
}

int main(void)
{
	const char *seed = getenv("RADIX_SEED");
	unsigned int d;

	rng_state = seed ? strtoull(seed, NULL, 0) : 20240611;
	printf("RADIX_SEED=%" PRIu64 "\n", rng_state);

	test_empty();
	test_basic();
	test_heights();
	test_node_size();
	test_gang_edges();
	test_iter();
	test_dense_fill();
	test_preload_guarantee();
	test_insert_nodes_max();
	test_preload_failure();
	test_insert_nomem();
	test_pool_overflow();
	test_pool_per_thread();
	for (d = DIST_DENSE; d <= DIST_MIXED; d++)
		random_run((enum dist)d, 210000);
	random_faults(100000);

	radix_tree_preload_drain();
	return check_report();
}
