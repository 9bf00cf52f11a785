// SPDX-License-Identifier: MIT
/*
 * test_rbtree.c - the red-black tree against its contract.
 *
 * The tree never compares, so this file does what a user does: embeds an
 * rb_node in a keyed struct and writes the search and insert loops. Every
 * change is followed by an invariant checker (root black, no red-red, equal
 * black heights, parent pointers, strict in-order keys, node count), and a
 * randomized run of over a million operations is checked against a bitmap
 * model of the key set.
 *
 * The random seed is printed; set AK_TEST_SEED=<number> to rerun one.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "check.h"
#include "rbtree.h"
#include "rbtree_augmented.h"

struct tnode {
	uint64_t key;
	uint32_t size;		/* the augmented tests: nodes in the subtree */
	struct rb_node rb;
};

/* ---- the user's side: allocation, search, insert ---- */

static struct tnode *tnode_new(uint64_t key)
{
	struct tnode *t = ak_malloc(sizeof(*t));

	if (!t) {
		fprintf(stderr, "test_rbtree: out of memory\n");
		exit(2);
	}
	t->key = key;
	RB_CLEAR_NODE(&t->rb);
	return t;
}

static struct tnode *tree_search(const struct rb_root *root, uint64_t key)
{
	struct rb_node *n = root->rb_node;

	while (n) {
		struct tnode *t = rb_entry(n, struct tnode, rb);

		if (key < t->key)
			n = n->rb_left;
		else if (key > t->key)
			n = n->rb_right;
		else
			return t;
	}
	return NULL;
}

/* The first node whose key is >= @key, or NULL. */
static struct tnode *tree_lower_bound(const struct rb_root *root, uint64_t key)
{
	struct rb_node *n = root->rb_node;
	struct tnode *best = NULL;

	while (n) {
		struct tnode *t = rb_entry(n, struct tnode, rb);

		if (t->key >= key) {
			best = t;
			n = n->rb_left;
		} else {
			n = n->rb_right;
		}
	}
	return best;
}

/* Links @new unless its key is present; returns the node holding the key. */
static struct tnode *tree_insert(struct rb_root *root, struct tnode *new)
{
	struct rb_node **link = &root->rb_node, *parent = NULL;

	while (*link) {
		struct tnode *t = rb_entry(*link, struct tnode, rb);

		parent = *link;
		if (new->key < t->key)
			link = &(*link)->rb_left;
		else if (new->key > t->key)
			link = &(*link)->rb_right;
		else
			return t;
	}
	rb_link_node(&new->rb, parent, link);
	rb_insert_color(&new->rb, root);
	return new;
}

static void tree_free_all(struct rb_root *root)
{
	struct rb_node *n;

	while ((n = rb_first(root))) {
		rb_erase(n, root);
		ak_free(rb_entry(n, struct tnode, rb));
	}
}

static uint64_t key_of(const struct rb_node *n)
{
	return rb_entry(n, struct tnode, rb)->key;
}

/* ---- the invariant checker ---- */

struct rb_check {
	char why[256];		/* first violation found */
	size_t count;
	bool have_prev;
	uint64_t prev_key;
	int max_depth;
};

static void check_fail(struct rb_check *c, const char *fmt, ...)
{
	va_list ap;

	if (c->why[0])
		return;
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
}

/* Returns the black height of @n (NIL = 1), or -1 on a violation. */
static int check_subtree(struct rb_check *c, const struct rb_node *n,
			 const struct rb_node *parent, int depth)
{
	int lh, rh;

	if (!n) {
		if (depth > c->max_depth)
			c->max_depth = depth;
		return 1;
	}
	if (c->count > (1u << 26)) {
		check_fail(c, "more nodes than ever inserted: a cycle?");
		return -1;
	}
	if (rb_parent(n) != parent) {
		check_fail(c, "node %" PRIu64 ": parent pointer %p, expected %p",
			   key_of(n), (void *)rb_parent(n), (const void *)parent);
		return -1;
	}
	if (n->rb_parent_color & 2) {
		check_fail(c, "node %" PRIu64 ": stray bit 1 in parent word",
			   key_of(n));
		return -1;
	}
	if (rb_is_red(n) && parent && rb_is_red(parent)) {
		check_fail(c, "red node %" PRIu64 " under red node %" PRIu64,
			   key_of(n), key_of(parent));
		return -1;
	}
	lh = check_subtree(c, n->rb_left, n, depth + 1);
	if (lh < 0)
		return -1;
	if (c->have_prev && c->prev_key >= key_of(n)) {
		check_fail(c, "in-order keys not increasing: %" PRIu64
			   " then %" PRIu64, c->prev_key, key_of(n));
		return -1;
	}
	c->have_prev = true;
	c->prev_key = key_of(n);
	c->count++;
	rh = check_subtree(c, n->rb_right, n, depth + 1);
	if (rh < 0)
		return -1;
	if (lh != rh) {
		check_fail(c, "node %" PRIu64 ": black heights %d left, %d right",
			   key_of(n), lh, rh);
		return -1;
	}
	return lh + (rb_is_black(n) ? 1 : 0);
}

/*
 * Checks every invariant of @root holding @count nodes, and that the
 * rb_first/rb_next and rb_last/rb_prev walks visit exactly @count nodes in
 * order. On failure prints @what and the first violation and returns false.
 */
static bool rb_valid(const struct rb_root *root, size_t count, const char *what)
{
	struct rb_check c = { .why = "" };
	const struct rb_node *n, *prev;
	size_t walked;
	int bh, bound;

	if (root->rb_node && !rb_is_black(root->rb_node))
		check_fail(&c, "root is red");
	bh = check_subtree(&c, root->rb_node, NULL, 0);
	if (bh >= 0 && c.count != count)
		check_fail(&c, "%zu nodes in tree, expected %zu", c.count, count);
	/* height <= 2 log2(n + 1): 2^(depth/2) <= n + 1 */
	for (bound = 0; ((size_t)1 << bound) <= count + 1 && bound < 62; bound++)
		;
	if (!c.why[0] && c.max_depth > 2 * bound)
		check_fail(&c, "depth %d for %zu nodes", c.max_depth, count);

	if (!c.why[0]) {
		walked = 0;
		prev = NULL;
		for (n = rb_first(root); n && walked <= count; n = rb_next(n)) {
			if (prev && key_of(prev) >= key_of(n)) {
				check_fail(&c, "rb_next goes from %" PRIu64
					   " to %" PRIu64, key_of(prev), key_of(n));
				break;
			}
			if (rb_prev(n) != prev) {
				check_fail(&c, "rb_prev(rb_next(x)) != x "
					   "at %" PRIu64, key_of(n));
				break;
			}
			prev = n;
			walked++;
		}
		if (walked != count)
			check_fail(&c, "rb_next walk saw %zu nodes, expected %zu",
				   walked, count);
		if (prev != rb_last(root))
			check_fail(&c, "rb_next walk did not end at rb_last");
	}
	if (!c.why[0]) {
		walked = 0;
		for (n = rb_last(root); n && walked <= count; n = rb_prev(n))
			walked++;
		if (walked != count)
			check_fail(&c, "rb_prev walk saw %zu nodes, expected %zu",
				   walked, count);
	}
	if (c.why[0]) {
		fprintf(stderr, "rbtree invalid (%s): %s\n", what, c.why);
		return false;
	}
	return true;
}

/* ---- a small PRNG (splitmix64), seeded from AK_TEST_SEED ---- */

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rng_below(uint64_t n)
{
	return rng_next() % n;
}

/* ---- examples ---- */

static void test_empty(void)
{
	struct rb_root root = RB_ROOT;

	CHECK(RB_EMPTY_ROOT(&root));
	CHECK(rb_first(&root) == NULL);
	CHECK(rb_last(&root) == NULL);
	CHECK(tree_search(&root, 0) == NULL);
	CHECK(tree_lower_bound(&root, 0) == NULL);
	CHECK(rb_valid(&root, 0, "empty"));
}

static void test_one_node(void)
{
	struct rb_root root = RB_ROOT;
	struct tnode *t = tnode_new(42);

	CHECK(RB_EMPTY_NODE(&t->rb));
	CHECK(tree_insert(&root, t) == t);
	CHECK(!RB_EMPTY_NODE(&t->rb));
	CHECK(!RB_EMPTY_ROOT(&root));
	CHECK(root.rb_node == &t->rb);
	CHECK(rb_is_black(&t->rb));
	CHECK(rb_parent(&t->rb) == NULL);
	CHECK(rb_first(&root) == &t->rb && rb_last(&root) == &t->rb);
	CHECK(rb_next(&t->rb) == NULL && rb_prev(&t->rb) == NULL);
	CHECK(tree_search(&root, 42) == t);
	CHECK(tree_search(&root, 41) == NULL && tree_search(&root, 43) == NULL);
	CHECK(rb_valid(&root, 1, "one node"));

	/* a duplicate is refused by the user's insert loop */
	{
		struct tnode *dup = tnode_new(42);

		CHECK(tree_insert(&root, dup) == t);
		CHECK(RB_EMPTY_NODE(&dup->rb));
		ak_free(dup);
	}

	rb_erase(&t->rb, &root);
	CHECK(RB_EMPTY_ROOT(&root));
	CHECK(rb_valid(&root, 0, "one node erased"));
	/* erase does not mark the node; the user does */
	CHECK(!RB_EMPTY_NODE(&t->rb));
	RB_CLEAR_NODE(&t->rb);
	CHECK(RB_EMPTY_NODE(&t->rb));
	CHECK(rb_next(&t->rb) == NULL && rb_prev(&t->rb) == NULL);
	ak_free(t);
}

/*
 * Any valid red-black tree of three nodes is balanced: a chain would have
 * NIL slots at black depths 1 and 2 or 3 below a black root.
 *
 *	1              2
 *	 \            / \
 *	  2    -->   1   3
 *	   \
 *	    3
 */
static void test_three_balanced(void)
{
	static const uint64_t orders[6][3] = {
		{ 1, 2, 3 }, { 1, 3, 2 }, { 2, 1, 3 },
		{ 2, 3, 1 }, { 3, 1, 2 }, { 3, 2, 1 },
	};
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(orders); i++) {
		struct rb_root root = RB_ROOT;

		for (j = 0; j < 3; j++)
			tree_insert(&root, tnode_new(orders[i][j]));
		CHECK_MSG(key_of(root.rb_node) == 2 &&
			  root.rb_node->rb_left &&
			  key_of(root.rb_node->rb_left) == 1 &&
			  root.rb_node->rb_right &&
			  key_of(root.rb_node->rb_right) == 3,
			  "order %zu: not balanced", i);
		CHECK(rb_valid(&root, 3, "three nodes"));
		tree_free_all(&root);
	}
}

/* Sorted inserts are the worst case for an unbalanced tree. */
static void test_monotonic_inserts(void)
{
	enum { N = 2000 };
	struct rb_root up = RB_ROOT, down = RB_ROOT;
	unsigned long bad = 0;
	uint64_t i;

	for (i = 0; i < N; i++) {
		tree_insert(&up, tnode_new(i));
		tree_insert(&down, tnode_new(N - i));
		if ((i < 300 || i % 97 == 0) &&
		    (!rb_valid(&up, i + 1, "ascending") ||
		     !rb_valid(&down, i + 1, "descending")))
			bad++;
	}
	CHECK_MSG(bad == 0, "%lu invalid states", bad);
	CHECK(rb_valid(&up, N, "ascending, end"));
	CHECK(rb_valid(&down, N, "descending, end"));
	CHECK(key_of(rb_first(&up)) == 0 && key_of(rb_last(&up)) == N - 1);
	CHECK(key_of(rb_first(&down)) == 1 && key_of(rb_last(&down)) == N);

	/* erase from the front and from the back: the other worst cases */
	for (i = 0; i < N; i++) {
		struct rb_node *a = rb_first(&up), *b = rb_last(&down);

		rb_erase(a, &up);
		rb_erase(b, &down);
		if (key_of(a) != i || key_of(b) != N - i)
			bad++;
		ak_free(rb_entry(a, struct tnode, rb));
		ak_free(rb_entry(b, struct tnode, rb));
		if ((i % 53 == 0 || i > N - 100) &&
		    (!rb_valid(&up, N - i - 1, "erase first") ||
		     !rb_valid(&down, N - i - 1, "erase last")))
			bad++;
	}
	CHECK_MSG(bad == 0, "%lu bad erasures", bad);
	CHECK(RB_EMPTY_ROOT(&up) && RB_EMPTY_ROOT(&down));
}

/* Fisher-Yates over keys 1..n. */
static void shuffle_keys(uint64_t *keys, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		keys[i] = i + 1;
	for (i = n; i > 1; i--) {
		size_t j = rng_below(i);
		uint64_t tmp = keys[i - 1];

		keys[i - 1] = keys[j];
		keys[j] = tmp;
	}
}

static struct rb_node *find_shape(struct rb_node *n, int children)
{
	struct rb_node *found;
	int have;

	if (!n)
		return NULL;
	have = !!n->rb_left + !!n->rb_right;
	if (have == children)
		return n;
	found = find_shape(n->rb_left, children);
	return found ? found : find_shape(n->rb_right, children);
}

/*
 * Erase the root, a leaf, a node with one child and a node with two
 * children, each from a tree that has one; check the keys left and the
 * invariants.
 */
static void erase_and_check(struct rb_root *root, struct rb_node *victim,
			    size_t n, const char *what)
{
	uint64_t gone = key_of(victim);
	struct rb_node *it;
	uint64_t expect = 1;
	bool keys_ok = true;

	rb_erase(victim, root);
	ak_free(rb_entry(victim, struct tnode, rb));
	CHECK_MSG(rb_valid(root, n - 1, what), "%s of %zu", what, n);
	for (it = rb_first(root); it; it = rb_next(it), expect++) {
		if (expect == gone)
			expect++;
		if (key_of(it) != expect)
			keys_ok = false;
	}
	CHECK_MSG(keys_ok && tree_search(root, gone) == NULL,
		  "%s: wrong keys after erasing %" PRIu64, what, gone);
}

static void test_erase_shapes(void)
{
	static const struct {
		const char *what;
		int children;
	} shapes[] = {
		{ "leaf", 0 }, { "one child", 1 }, { "two children", 2 },
	};
	uint64_t keys[64];
	size_t s, n, i;
	unsigned long found[3] = { 0 };

	for (n = 1; n <= 64; n++) {
		for (s = 0; s < ARRAY_SIZE(shapes); s++) {
			struct rb_root root = RB_ROOT;
			struct rb_node *victim;

			shuffle_keys(keys, n);
			for (i = 0; i < n; i++)
				tree_insert(&root, tnode_new(keys[i]));
			victim = find_shape(root.rb_node, shapes[s].children);
			if (victim) {
				found[s]++;
				erase_and_check(&root, victim, n, shapes[s].what);
			}
			tree_free_all(&root);
		}
		/* the root itself */
		{
			struct rb_root root = RB_ROOT;

			shuffle_keys(keys, n);
			for (i = 0; i < n; i++)
				tree_insert(&root, tnode_new(keys[i]));
			erase_and_check(&root, root.rb_node, n, "root");
			tree_free_all(&root);
		}
	}
	for (s = 0; s < ARRAY_SIZE(shapes); s++)
		CHECK_MSG(found[s] > 10, "only %lu trees had a %s node",
			  found[s], shapes[s].what);
}

/* Every node of every tree of up to 40 nodes, in two insertion orders. */
static void test_erase_every_position(void)
{
	uint64_t keys[40];
	unsigned long bad = 0, runs = 0;
	size_t n, k, i;
	int order;

	for (n = 1; n <= 40; n++) {
		for (order = 0; order < 2; order++) {
			for (k = 1; k <= n; k++) {
				struct rb_root root = RB_ROOT;
				struct tnode *victim;

				if (order == 0) {
					for (i = 0; i < n; i++)
						keys[i] = i + 1;
				} else {
					shuffle_keys(keys, n);
				}
				for (i = 0; i < n; i++)
					tree_insert(&root, tnode_new(keys[i]));
				victim = tree_search(&root, k);
				rb_erase(&victim->rb, &root);
				ak_free(victim);
				runs++;
				if (!rb_valid(&root, n - 1, "erase position") ||
				    tree_search(&root, k))
					bad++;
				tree_free_all(&root);
			}
		}
	}
	CHECK_MSG(bad == 0, "%lu of %lu erasures left a bad tree", bad, runs);
}

/*
 * rb_replace_node() swaps a node for another of the same key: the shape,
 * colours and order stay; the old node is unreachable.
 */
static void test_replace(void)
{
	enum { N = 300 };
	struct rb_root root = RB_ROOT;
	uint64_t keys[N];
	size_t i;
	unsigned long bad = 0;

	shuffle_keys(keys, N);
	for (i = 0; i < N; i++)
		tree_insert(&root, tnode_new(keys[i] * 10));

	for (i = 0; i < N; i++) {
		/* root first, then the rest in a shuffled order */
		struct tnode *old = i == 0 ?
			rb_entry(root.rb_node, struct tnode, rb) :
			tree_search(&root, keys[i] * 10);
		struct tnode *new = tnode_new(old->key);
		struct rb_node *prev = rb_prev(&old->rb);
		struct rb_node *next = rb_next(&old->rb);
		bool was_black = rb_is_black(&old->rb);
		bool was_root = root.rb_node == &old->rb;

		rb_replace_node(&old->rb, &new->rb, &root);
		ak_free(old);
		if (tree_search(&root, new->key) != new ||
		    rb_prev(&new->rb) != prev || rb_next(&new->rb) != next ||
		    rb_is_black(&new->rb) != was_black ||
		    (root.rb_node == &new->rb) != was_root ||
		    (prev && rb_next(prev) != &new->rb) ||
		    (next && rb_prev(next) != &new->rb))
			bad++;
		if (!rb_valid(&root, N, "after replace"))
			bad++;
	}
	CHECK_MSG(bad == 0, "%lu bad replacements", bad);
	tree_free_all(&root);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* first/last/next/prev over random distinct keys against a sorted array. */
/*
 * A postorder walk visits every node once, each after both its children,
 * and lets the body free the node it is given: the freeing walk below runs
 * under ASan, which would report any read of a freed node.
 */
static void test_postorder(void)
{
	static const size_t sizes[] = { 0, 1, 2, 3, 4, 7, 8, 15, 100, 1000,
					5000 };
	size_t z;

	for (z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		size_t n = sizes[z], i, seen = 0, freed = 0;
		struct rb_root root = RB_ROOT;
		bool *visited = ak_calloc(n + 1, sizeof(*visited));
		struct tnode *pos, *next;
		bool order_ok = true;

		/* keys 0..n-1, inserted in a shuffled order */
		for (i = 0; i < n; i++) {
			struct tnode *t = tnode_new(i);

			CHECK(tree_insert(&root, t) == t);
		}
		for (i = 0; i < n; i++) {
			uint64_t k = rng_below(n);
			struct tnode *t = tree_search(&root, k);

			/* move key k's node out and back: shapes vary */
			rb_erase(&t->rb, &root);
			CHECK(tree_insert(&root, t) == t);
		}
		CHECK(rb_valid(&root, n, "postorder tree"));

		rbtree_postorder_for_each_entry_safe(pos, next, &root, rb) {
			struct rb_node *l = pos->rb.rb_left, *r = pos->rb.rb_right;

			if (pos->key >= n || visited[pos->key] ||
			    (l && !visited[key_of(l)]) ||
			    (r && !visited[key_of(r)]))
				order_ok = false;
			else
				visited[pos->key] = true;
			seen++;
		}
		CHECK_MSG(order_ok && seen == n, "postorder over %zu nodes: "
			  "%zu visited, order %s", n, seen,
			  order_ok ? "right" : "wrong");
		/* the first node of the walk is a leaf */
		if (n)
			CHECK(!rb_first_postorder(&root)->rb_left &&
			      !rb_first_postorder(&root)->rb_right);

		rbtree_postorder_for_each_entry_safe(pos, next, &root, rb) {
			ak_free(pos);
			freed++;
		}
		root = RB_ROOT;
		CHECK(freed == n);
		ak_free(visited);
	}
	{
		struct rb_root empty = RB_ROOT;

		CHECK(rb_first_postorder(&empty) == NULL);
		CHECK(rb_next_postorder(NULL) == NULL);
	}
}

static void test_walks(void)
{
	enum { N = 1000 };
	struct rb_root root = RB_ROOT;
	uint64_t *sorted = ak_malloc(N * sizeof(*sorted));
	struct rb_node *n;
	size_t i, count = 0;
	bool fwd_ok = true, back_ok = true, lb_ok = true;

	while (count < N) {
		struct tnode *t = tnode_new(rng_next());

		if (tree_insert(&root, t) == t)
			sorted[count++] = t->key;
		else
			ak_free(t);
	}
	qsort(sorted, N, sizeof(*sorted), cmp_u64);
	CHECK(rb_valid(&root, N, "random keys"));

	for (n = rb_first(&root), i = 0; n; n = rb_next(n), i++)
		if (i >= N || key_of(n) != sorted[i])
			fwd_ok = false;
	CHECK_MSG(fwd_ok && i == N, "forward walk: %zu nodes", i);

	for (n = rb_last(&root), i = N; n; n = rb_prev(n))
		if (i == 0 || key_of(n) != sorted[--i])
			back_ok = false;
	CHECK_MSG(back_ok && i == 0, "backward walk stopped at %zu", i);

	CHECK(key_of(rb_first(&root)) == sorted[0]);
	CHECK(key_of(rb_last(&root)) == sorted[N - 1]);
	CHECK(rb_prev(rb_first(&root)) == NULL);
	CHECK(rb_next(rb_last(&root)) == NULL);

	/* from the middle: a few steps each way, and the lower bound */
	for (i = 0; i < N; i++) {
		struct tnode *at = tree_lower_bound(&root, sorted[i]);
		struct tnode *above = sorted[i] == UINT64_MAX ? NULL :
				      tree_lower_bound(&root, sorted[i] + 1);
		struct rb_node *a, *b;

		if (!at || at->key != sorted[i] ||
		    (i + 1 < N ? !above || above->key != sorted[i + 1] :
				 above != NULL))
			lb_ok = false;
		a = rb_next(&tree_search(&root, sorted[i])->rb);
		b = rb_prev(&tree_search(&root, sorted[i])->rb);
		if ((i + 1 < N ? !a || key_of(a) != sorted[i + 1] : a != NULL) ||
		    (i > 0 ? !b || key_of(b) != sorted[i - 1] : b != NULL))
			fwd_ok = false;
	}
	CHECK_MSG(lb_ok, "lower bound search disagrees with the sorted array");
	CHECK_MSG(fwd_ok, "rb_next/rb_prev from the middle disagree");

	ak_free(sorted);
	tree_free_all(&root);
}

/* ---- the randomized run against a bitmap model ---- */

/*
 * Key indexes 0..MODEL_KEYS-1 map to keys spread over the whole u64 range
 * (monotonically, so index order is key order). The model is a bitmap of
 * present indexes plus the node the test linked for each.
 */
enum { MODEL_KEYS = 1 << 14, MODEL_WORDS = MODEL_KEYS / 64 };

struct model {
	uint64_t bits[MODEL_WORDS];
	struct tnode *node[MODEL_KEYS];
	size_t count;
};

static uint64_t idx_key(size_t idx)
{
	return (uint64_t)idx * (UINT64_MAX / (MODEL_KEYS - 1));
}

static bool model_has(const struct model *m, size_t idx)
{
	return m->bits[idx / 64] >> (idx % 64) & 1;
}

static void model_set(struct model *m, size_t idx, struct tnode *t)
{
	m->bits[idx / 64] |= (uint64_t)1 << (idx % 64);
	m->node[idx] = t;
	m->count++;
}

static void model_clear(struct model *m, size_t idx)
{
	m->bits[idx / 64] &= ~((uint64_t)1 << (idx % 64));
	m->node[idx] = NULL;
	m->count--;
}

/* The smallest present index >= @idx, or MODEL_KEYS. */
static size_t model_next(const struct model *m, size_t idx)
{
	size_t w = idx / 64;
	uint64_t word;

	if (idx >= MODEL_KEYS)
		return MODEL_KEYS;
	word = m->bits[w] & (~(uint64_t)0 << (idx % 64));
	while (!word) {
		if (++w == MODEL_WORDS)
			return MODEL_KEYS;
		word = m->bits[w];
	}
	return w * 64 + (size_t)__builtin_ctzll(word);
}

/* The largest present index <= @idx, or (size_t)-1. */
static size_t model_prev(const struct model *m, size_t idx)
{
	size_t w = idx / 64;
	uint64_t word;

	if (idx == (size_t)-1)
		return (size_t)-1;
	word = m->bits[w] & (~(uint64_t)0 >> (63 - idx % 64));
	while (!word) {
		if (w-- == 0)
			return (size_t)-1;
		word = m->bits[w];
	}
	return w * 64 + 63 - (size_t)__builtin_clzll(word);
}

/* A present index near a random one, or a random index if none. */
static size_t model_pick_present(const struct model *m, size_t window)
{
	size_t idx = rng_below(window), p = model_next(m, idx);

	if (p == MODEL_KEYS)
		p = model_next(m, 0);
	return p == MODEL_KEYS ? idx : p;
}

struct run_stats {
	unsigned long ops[5];
	unsigned long mismatches;
	unsigned long full_checks, cheap_checks;
	size_t max_nodes;
	unsigned long empty_seen;
};

#define MAX_REPORTS 20

static void mismatch(struct run_stats *st, unsigned long op, const char *fmt, ...)
{
	va_list ap;

	if (st->mismatches++ >= MAX_REPORTS)
		return;
	fprintf(stderr, "random op %lu: ", op);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Tree and model hold the same nodes under the same keys, in order. */
static bool same_as_model(const struct rb_root *root, const struct model *m)
{
	const struct rb_node *n = rb_first(root);
	size_t idx = model_next(m, 0);

	for (; n && idx < MODEL_KEYS; n = rb_next(n), idx = model_next(m, idx + 1))
		if (n != &m->node[idx]->rb)
			break;
	if (n || idx < MODEL_KEYS) {
		fprintf(stderr, "tree and model differ at index %zu (key %" PRIu64
			" in tree)\n", idx, n ? key_of(n) : 0);
		return false;
	}
	return true;
}

enum { OP_INSERT, OP_ERASE, OP_LOOKUP, OP_WALK, OP_REPLACE };

/* Lower bound of a random key, then a few steps either way. */
static void random_walk(const struct rb_root *root, const struct model *m,
			struct run_stats *st, unsigned long op)
{
	size_t idx = rng_below(MODEL_KEYS), want = model_next(m, idx);
	size_t steps = 1 + rng_below(8), s;
	bool forward = rng_below(2);
	struct tnode *got = tree_lower_bound(root, idx_key(idx));
	const struct rb_node *n, *expect;

	if (got != (want < MODEL_KEYS ? m->node[want] : NULL)) {
		mismatch(st, op, "lower bound of %zu: wrong node", idx);
		return;
	}
	for (n = got ? &got->rb : NULL, s = 0; n && s < steps; s++) {
		if (forward) {
			n = rb_next(n);
			want = model_next(m, want + 1);
			expect = want < MODEL_KEYS ? &m->node[want]->rb : NULL;
		} else {
			n = rb_prev(n);
			want = model_prev(m, want - 1);
			expect = want != (size_t)-1 ? &m->node[want]->rb : NULL;
		}
		if (n != expect) {
			mismatch(st, op, "%s step %zu from %zu",
				 forward ? "rb_next" : "rb_prev", s, idx);
			return;
		}
	}
}

static void random_op(struct rb_root *root, struct model *m,
		      struct run_stats *st, unsigned long op,
		      const unsigned int mix[5], size_t window)
{
	unsigned int r = rng_below(100), kind = 0, acc = mix[0];
	size_t idx;
	struct tnode *t, *got;

	while (r >= acc)
		acc += mix[++kind];
	st->ops[kind]++;

	switch (kind) {
	case OP_INSERT:
		idx = rng_below(window);
		t = tnode_new(idx_key(idx));
		got = tree_insert(root, t);
		if (model_has(m, idx)) {
			if (got != m->node[idx])
				mismatch(st, op, "insert %zu: duplicate "
					 "not found", idx);
			ak_free(t);
		} else {
			if (got != t)
				mismatch(st, op, "insert %zu: absent key "
					 "found", idx);
			model_set(m, idx, t);
		}
		break;
	case OP_ERASE:
		/* mostly keys that are there, else erasing rarely hits */
		idx = rng_below(4) ? model_pick_present(m, window) :
				     rng_below(window);
		got = tree_search(root, idx_key(idx));
		if (got != m->node[idx]) {
			mismatch(st, op, "erase %zu: search found %p, model %p",
				 idx, (void *)got, (void *)m->node[idx]);
			break;
		}
		if (got) {
			rb_erase(&got->rb, root);
			model_clear(m, idx);
			ak_free(got);
		}
		break;
	case OP_LOOKUP:
		idx = rng_below(window);
		got = tree_search(root, idx_key(idx));
		if (got != m->node[idx])
			mismatch(st, op, "lookup %zu: found %p, model %p",
				 idx, (void *)got, (void *)m->node[idx]);
		break;
	case OP_WALK:
		random_walk(root, m, st, op);
		break;
	case OP_REPLACE:
		idx = model_pick_present(m, window);
		if (!model_has(m, idx))
			break;
		got = m->node[idx];
		t = tnode_new(got->key);
		rb_replace_node(&got->rb, &t->rb, root);
		ak_free(got);		/* ASan catches any link left to it */
		m->node[idx] = t;
		if (tree_search(root, t->key) != t)
			mismatch(st, op, "replace %zu: new node not found", idx);
		break;
	}
}

/* Root black and parentless; first and last match the model. */
static bool cheap_check(const struct rb_root *root, const struct model *m)
{
	size_t lo = model_next(m, 0), hi = model_prev(m, MODEL_KEYS - 1);
	struct rb_node *first = rb_first(root), *last = rb_last(root);

	if (!m->count)
		return !root->rb_node;
	return root->rb_node && rb_is_black(root->rb_node) &&
	       !rb_parent(root->rb_node) &&
	       first == &m->node[lo]->rb && last == &m->node[hi]->rb;
}

/*
 * Statistics, the cheap check every CHEAP_EVERY ops, the full one every
 * FULL_EVERY. Returns false when the run should stop: a broken tree, or a
 * storm of mismatches.
 */
enum { FULL_EVERY = 10000, CHEAP_EVERY = 250, MAX_MISMATCHES = 1000 };

static bool after_op(const struct rb_root *root, const struct model *m,
		     struct run_stats *st, unsigned long op)
{
	if (m->count > st->max_nodes)
		st->max_nodes = m->count;
	if (!m->count)
		st->empty_seen++;
	if (op % CHEAP_EVERY == 0) {
		st->cheap_checks++;
		if (!cheap_check(root, m))
			mismatch(st, op, "cheap check failed (%zu nodes)",
				 m->count);
	}
	if (op % FULL_EVERY == FULL_EVERY - 1) {
		st->full_checks++;
		if (!rb_valid(root, m->count, "random run") ||
		    !same_as_model(root, m))
			return false;
	}
	if (st->mismatches > MAX_MISMATCHES) {
		fprintf(stderr, "too many mismatches\n");
		return false;
	}
	return true;
}

static void test_random(uint64_t seed)
{
	/*
	 * Each round of ROUND ops leans one way, so the tree grows to
	 * thousands of nodes, churns, and drains to empty, over and over;
	 * windows restrict inserts to few keys so small trees get hammered too.
	 */
	enum { ROUNDS = 21, ROUND = 50000 };
	static const unsigned int mixes[3][5] = {
		/* insert, erase, lookup, walk, replace (percent) */
		{ 55, 15, 12, 10, 8 },		/* grow */
		{ 30, 30, 16, 14, 10 },		/* churn */
		{ 25, 45, 10, 12, 8 },		/* drain */
	};
	static const size_t windows[] = { MODEL_KEYS, 16, MODEL_KEYS, 256,
					  MODEL_KEYS, 3 };
	struct model *m = ak_calloc(1, sizeof(*m));
	struct rb_root root = RB_ROOT;
	struct run_stats st = { .ops = { 0 } };
	unsigned long op = 0, total = 0;
	bool valid = true;
	int round;
	size_t k;

	if (!m) {
		fprintf(stderr, "test_rbtree: out of memory\n");
		exit(2);
	}
	rng_state = seed;
	for (round = 0; round < ROUNDS && valid; round++) {
		const unsigned int *mix = mixes[round % 3];
		size_t window = windows[round % ARRAY_SIZE(windows)];
		int i;

		for (i = 0; i < ROUND && valid; i++, op++) {
			random_op(&root, m, &st, op, mix, window);
			valid = after_op(&root, m, &st, op);
		}
	}
	if (!valid)
		fprintf(stderr, "random run stopped at op %lu, seed %" PRIu64
			"\n", op, seed);
	if (valid) {
		st.full_checks++;
		valid = rb_valid(&root, m->count, "random run, end") &&
			same_as_model(&root, m);
	}
	for (round = 0; round < 5; round++)
		total += st.ops[round];
	printf("random: %lu ops (insert %lu, erase %lu, lookup %lu, walk %lu, "
	       "replace %lu), max %zu nodes, empty at %lu op ends, "
	       "%lu full + %lu cheap checks\n",
	       total, st.ops[OP_INSERT], st.ops[OP_ERASE], st.ops[OP_LOOKUP],
	       st.ops[OP_WALK], st.ops[OP_REPLACE], st.max_nodes, st.empty_seen,
	       st.full_checks, st.cheap_checks);
	CHECK_MSG(total >= 1000000, "only %lu ops ran", total);
	CHECK_MSG(valid, "invariants or model broken (seed %" PRIu64 ")", seed);
	CHECK_MSG(st.mismatches == 0, "%lu ops disagreed with the model (seed %"
		  PRIu64 ")", st.mismatches, seed);
	CHECK_MSG(st.max_nodes > 5000 && st.empty_seen > 0,
		  "the run did not both grow big and drain (max %zu)",
		  st.max_nodes);

	/* the model holds every live node, even if the tree is broken */
	for (k = 0; k < MODEL_KEYS; k++)
		ak_free(m->node[k]);
	ak_free(m);
}

/* ---- the augmented tree: subtree sizes ---- */

static uint32_t tsize(const struct rb_node *n)
{
	return n ? rb_entry(n, struct tnode, rb)->size : 0;
}

static uint32_t tnode_size(const struct tnode *t)
{
	return 1 + tsize(t->rb.rb_left) + tsize(t->rb.rb_right);
}

RB_DECLARE_CALLBACKS(static, tsize_cb, struct tnode, rb, size, tnode_size);

/* Every node's size is its subtree's node count; returns the count, or
 * UINT32_MAX at the first node where it is not. */
static uint32_t sizes_check(const struct rb_node *n)
{
	uint32_t l, r;

	if (!n)
		return 0;
	l = sizes_check(n->rb_left);
	r = sizes_check(n->rb_right);
	if (l == UINT32_MAX || r == UINT32_MAX ||
	    rb_entry(n, struct tnode, rb)->size != 1 + l + r)
		return UINT32_MAX;
	return 1 + l + r;
}

/* The number of keys below @key, from the sizes: one descent. */
static uint32_t tree_rank(const struct rb_root *root, uint64_t key)
{
	const struct rb_node *n = root->rb_node;
	uint32_t below = 0;

	while (n) {
		const struct tnode *t = rb_entry(n, struct tnode, rb);

		if (key <= t->key) {
			n = n->rb_left;
		} else {
			below += 1 + tsize(n->rb_left);
			n = n->rb_right;
		}
	}
	return below;
}

/*
 * Links @new (whose key is absent) by the user's search, augmented: for
 * odd keys the search counts @new in each node it passes and calls
 * rb_insert_augmented_path(), for even ones rb_insert_augmented() does it.
 */
static void aug_insert(struct rb_root *root, struct tnode *new)
{
	struct rb_node **link = &root->rb_node, *parent = NULL;
	bool path = new->key & 1;

	while (*link) {
		parent = *link;
		if (path)
			rb_entry(parent, struct tnode, rb)->size++;
		link = new->key < key_of(parent) ? &parent->rb_left :
						   &parent->rb_right;
	}
	rb_link_node(&new->rb, parent, link);
	if (path) {
		new->size = 1;
		rb_insert_augmented_path(&new->rb, root, &tsize_cb);
	} else {
		rb_insert_augmented(&new->rb, root, &tsize_cb);
	}
}

/*
 * Random inserts, erases and replaces over a small key space, so that the
 * tree grows, churns and drains; after every operation the root's size is
 * the model's count, and every 500 operations the whole tree is checked
 * (shape, colours, every size) and 32 ranks are compared with the model.
 */
static void test_augmented(uint64_t seed)
{
	enum { KEYS = 3000, OPS = 300000, AUG_FULL = 500 };
	struct tnode **node = ak_calloc(KEYS, sizeof(*node));
	struct rb_root root = RB_ROOT;
	unsigned long op, full = 0, bad_root = 0, bad_full = 0, bad_rank = 0;
	uint32_t count = 0, max_count = 0;
	size_t k;

	rng_state = seed ^ 0xa5a5a5a5ULL;
	for (op = 0; op < OPS; op++) {
		/* lean towards inserts, then erases, in waves of 30000;
		 * a present key is erased, replaced (r < 10) or left */
		unsigned int grow = (op / 30000) % 2 ? 20 : 80;
		uint64_t key = rng_below(KEYS);
		unsigned int r = (unsigned int)rng_below(100);

		if (!node[key] && r < grow) {
			node[key] = tnode_new(key);
			aug_insert(&root, node[key]);
			count++;
		} else if (node[key] && r >= grow) {
			rb_erase_augmented(&node[key]->rb, &root, &tsize_cb);
			ak_free(node[key]);
			node[key] = NULL;
			count--;
		} else if (node[key] && r < 10) {
			struct tnode *t = tnode_new(key);

			rb_replace_node_augmented(&node[key]->rb, &t->rb, &root,
						  &tsize_cb);
			ak_free(node[key]);
			node[key] = t;
		}
		if (count > max_count)
			max_count = count;
		if (tsize(root.rb_node) != count)
			bad_root++;
		if (op % AUG_FULL == AUG_FULL - 1) {
			int q;

			full++;
			if (!rb_valid(&root, count, "augmented") ||
			    sizes_check(root.rb_node) != count)
				bad_full++;
			for (q = 0; q < 32; q++) {
				uint64_t at = rng_below(KEYS + 1);
				uint32_t want = 0;

				for (k = 0; k < at; k++)
					want += node[k] != NULL;
				if (tree_rank(&root, at) != want)
					bad_rank++;
			}
		}
	}
	printf("augmented: %lu ops, max %u nodes, %lu full checks\n", op,
	       max_count, full);
	CHECK_MSG(bad_root == 0, "%lu ops left a wrong root size", bad_root);
	CHECK_MSG(bad_full == 0, "%lu full checks failed", bad_full);
	CHECK_MSG(bad_rank == 0, "%lu ranks disagreed with the model",
		  bad_rank);
	CHECK_MSG(max_count > 1500 && full == OPS / AUG_FULL,
		  "the run stayed small (max %u)", max_count);
	for (k = 0; k < KEYS; k++)
		ak_free(node[k]);
	ak_free(node);
}

/* Levels of nodes below and at @n. */
static unsigned int tree_depth(const struct rb_node *n)
{
	unsigned int l, r;

	if (!n)
		return 0;
	l = tree_depth(n->rb_left);
	r = tree_depth(n->rb_right);
	return 1 + (l > r ? l : r);
}

/*
 * rb_build_balanced() of every size up to 600 (full trees among them),
 * plain and augmented: a valid red-black tree of the nodes in their order,
 * every subtree size right, no deeper than a balanced tree can be; and it
 * keeps working as a tree: inserts and erases after it stay valid.
 */
static void test_build_balanced(void)
{
	enum { MAX = 600 };
	struct tnode **t = ak_calloc(MAX + 1, sizeof(*t));
	struct rb_node **nodes = ak_calloc(MAX, sizeof(*nodes));
	unsigned long bad = 0, bad_depth = 0;
	size_t n, i;

	for (n = 0; n <= MAX; n++) {
		bool aug = n % 2;
		struct rb_root root = RB_ROOT;
		unsigned int levels = 0;

		for (i = 0; i < n; i++) {
			t[i] = tnode_new(2 * i);
			t[i]->size = 0;
			nodes[i] = &t[i]->rb;
		}
		rb_build_balanced(nodes, n, &root, aug ? &tsize_cb : NULL);
		while (((size_t)1 << levels) <= n)
			levels++;	/* a balanced tree has this many */
		if (!rb_valid(&root, n, "built") ||
		    (aug && sizes_check(root.rb_node) != n))
			bad++;
		if (tree_depth(root.rb_node) != levels)
			bad_depth++;
		if (aug && n > 2) {	/* then used as any augmented tree */
			t[n] = tnode_new(2 * (n / 2) + 1);
			aug_insert(&root, t[n]);
			rb_erase_augmented(&t[0]->rb, &root, &tsize_cb);
			if (!rb_valid(&root, n, "built, then changed") ||
			    sizes_check(root.rb_node) != n)
				bad++;
			ak_free(t[n]);
		}
		for (i = 0; i < n; i++)
			ak_free(t[i]);
	}
	CHECK_MSG(bad == 0, "%lu built trees were wrong", bad);
	CHECK_MSG(bad_depth == 0, "%lu built trees deeper than balanced",
		  bad_depth);
	ak_free(t);
	ak_free(nodes);
}

int main(void)
{
	const char *env = getenv("AK_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 20261203;

	printf("test_rbtree: seed %" PRIu64 " (set AK_TEST_SEED to change)\n",
	       seed);
	rng_state = seed;

	test_empty();
	test_one_node();
	test_three_balanced();
	test_monotonic_inserts();
	test_erase_shapes();
	test_erase_every_position();
	test_replace();
	test_walks();
	test_postorder();
	test_random(seed);
	test_augmented(seed);
	test_build_balanced();
	return check_report();
}
