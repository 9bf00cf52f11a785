// SPDX-License-Identifier: MIT
/*
 * radix_tree.c - a map from uint64_t index to pointer, 64-way nodes.
 *
 * A node at shift s holds, in slot d, what the tree stores for the indexes
 * whose bits [s, s + 6) equal d: a child node (shift s - 6) when s > 0, an
 * entry when s == 0 (a leaf). The top node of a tree of height h has shift
 * 6 * (h - 1), so the tree covers the indexes below 2^(6h); height 11 covers
 * all of uint64_t (its top node uses slots 0..15 only).
 *
 * Invariants, checked by tests/unit/test_radix_tree.c:
 *  - root->rnode == NULL iff root->height == 0 iff root->count == 0;
 *  - a child's shift is its parent's minus 6; leaves, and only they, have
 *    shift 0, all at the same depth;
 *  - bit d of node->bitmap is set iff node->slots[d] != NULL, and
 *    node->count is the number of those bits, never 0 for a linked node;
 *  - the height is the least that covers the largest index: a top node of
 *    height > 1 uses some slot other than 0;
 *  - root->nr_nodes is the number of nodes reachable from root->rnode.
 * A node outside any tree (in the pool, or just allocated) is clean: every
 * slot NULL, bitmap and count 0. Nodes are unlinked only once empty, so they
 * come back clean.
 *
 * No parent pointers: delete and the gang lookups keep the path they walked
 * on the stack (at most RADIX_TREE_MAX_PATH nodes).
 */
#include "radix_tree.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "alloc.h"

#define RADIX_TREE_MAP_MASK	((uint64_t)RADIX_TREE_MAP_SIZE - 1)

struct radix_tree_node {
	uint64_t bitmap;	/* bit d set iff slots[d] != NULL */
	uint8_t shift;		/* index bits below this node's digit */
	uint8_t count;		/* slots in use: 1..64 while linked */
	uint64_t entries;	/* entries in this node's subtree */
	void *slots[RADIX_TREE_MAP_SIZE]; /* children, or entries if shift 0 */
};

_Static_assert(RADIX_TREE_MAP_SIZE == 64, "one bitmap bit per slot");
_Static_assert(RADIX_TREE_MAX_PATH * RADIX_TREE_MAP_SHIFT >= 64 &&
	       (RADIX_TREE_MAX_PATH - 1) * RADIX_TREE_MAP_SHIFT < 64,
	       "RADIX_TREE_MAX_PATH levels cover exactly 64 index bits");

/*
 * The per-thread node pool: filled by radix_tree_preload() outside locks,
 * drawn on by inserts, topped up by deletes. Its nodes are clean.
 */
struct radix_tree_pool {
	unsigned int nr;
	struct radix_tree_node *nodes[RADIX_TREE_PRELOAD_SIZE];
};

static __thread struct radix_tree_pool radix_tree_pool;

/* The least height whose tree covers @index. */
static unsigned int radix_tree_height_for(uint64_t index)
{
	if (!index)
		return 1;
	return (63 - __builtin_clzll(index)) / RADIX_TREE_MAP_SHIFT + 1;
}

unsigned int radix_tree_insert_nodes_max(const struct radix_tree_root *root,
					 uint64_t index)
{
	unsigned int h = radix_tree_height_for(index), cur = root->height;

	if (!cur)
		return h;
	if (h > cur)
		return (h - cur) + (h - 1);
	return cur - 1;
}

/* The largest index a tree of @height >= 1 covers. */
static uint64_t radix_tree_max_index(unsigned int height)
{
	unsigned int bits = height * RADIX_TREE_MAP_SHIFT;

	return bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
}

/* The slot of @node on the way to @index. */
static unsigned int node_offset(const struct radix_tree_node *node,
				uint64_t index)
{
	return (index >> node->shift) & RADIX_TREE_MAP_MASK;
}

/* The index bits @node spans (its digit and every bit below), as a mask. */
static uint64_t node_span_mask(const struct radix_tree_node *node)
{
	unsigned int bits = node->shift + RADIX_TREE_MAP_SHIFT;

	return bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
}

/* @index with @node's digit set to @offset and every lower bit cleared. */
static uint64_t node_slot_start(const struct radix_tree_node *node,
				uint64_t index, unsigned int offset)
{
	return (index & ~node_span_mask(node)) |
	       ((uint64_t)offset << node->shift);
}

static void node_set(struct radix_tree_node *node, unsigned int offset,
		     void *ptr)
{
	assert(!node->slots[offset] && ptr);
	node->slots[offset] = ptr;
	node->bitmap |= (uint64_t)1 << offset;
	node->count++;
}

static void node_clear(struct radix_tree_node *node, unsigned int offset)
{
	assert(node->slots[offset] && node->count);
	node->slots[offset] = NULL;
	node->bitmap &= ~((uint64_t)1 << offset);
	node->count--;
}

/* Give a clean node back: to this thread's pool while it has room. */
static void node_put(struct radix_tree_node *node)
{
	struct radix_tree_pool *pool = &radix_tree_pool;

	assert(!node->bitmap && !node->count && !node->entries);
	if (pool->nr < RADIX_TREE_PRELOAD_SIZE)
		pool->nodes[pool->nr++] = node;
	else
		ak_free(node);
}

/*
 * Take @want clean nodes, from the pool first, then from the allocator.
 * All or nothing: on failure the nodes taken go back to the pool (which had
 * run dry, so they fit).
 */
static int nodes_get(struct radix_tree_node **nodes, unsigned int want)
{
	struct radix_tree_pool *pool = &radix_tree_pool;
	unsigned int i;

	for (i = 0; i < want; i++) {
		if (pool->nr) {
			nodes[i] = pool->nodes[--pool->nr];
			continue;
		}
		nodes[i] = ak_calloc(1, sizeof(*nodes[i]));
		if (!nodes[i])
			goto err_put_nodes;
	}
	return 0;

err_put_nodes:
	while (i--)
		node_put(nodes[i]);
	return -ENOMEM;
}

void radix_tree_init(struct radix_tree_root *root)
{
	*root = (struct radix_tree_root)RADIX_TREE_INIT;
}

int radix_tree_preload(void)
{
	struct radix_tree_pool *pool = &radix_tree_pool;
	struct radix_tree_node *node;

	while (pool->nr < RADIX_TREE_PRELOAD_SIZE) {
		node = ak_calloc(1, sizeof(*node));
		if (!node)
			return -ENOMEM;
		pool->nodes[pool->nr++] = node;
	}
	return 0;
}

void radix_tree_preload_end(void)
{
	/*
	 * Nothing to undo: the pool is per thread, so the bracket needs no
	 * pinning. The call marks where the preloaded insert ends.
	 */
}

void radix_tree_preload_drain(void)
{
	struct radix_tree_pool *pool = &radix_tree_pool;

	while (pool->nr)
		ak_free(pool->nodes[--pool->nr]);
}

int radix_tree_insert(struct radix_tree_root *root, uint64_t index,
		      void *item)
{
	struct radix_tree_node *fresh[RADIX_TREE_PRELOAD_SIZE];
	struct radix_tree_node *node, *top;
	unsigned int height = radix_tree_height_for(index);
	unsigned int want, nr, offset;
	int err;

	assert(item && !((uintptr_t)item & 1));

	/* Count the nodes this insert adds; nothing changes yet. */
	if (!root->rnode) {
		want = height;
	} else if (height > root->height) {
		/*
		 * One new top node per added level; @index's digit in the
		 * new top is not 0, so its path below the top is all new.
		 */
		want = (height - root->height) + (height - 1);
	} else {
		for (node = root->rnode;; node = node->slots[offset]) {
			offset = node_offset(node, index);
			if (!node->slots[offset])
				break;
			if (!node->shift)
				return -EEXIST;
		}
		want = node->shift / RADIX_TREE_MAP_SHIFT;
	}
	assert(want <= RADIX_TREE_PRELOAD_SIZE);
	err = nodes_get(fresh, want);
	if (err)
		return err;

	/* From here on nothing can fail. */
	nr = want;
	if (!root->rnode) {
		top = fresh[--nr];
		top->shift = (height - 1) * RADIX_TREE_MAP_SHIFT;
		root->rnode = top;
		root->height = height;
	}
	while (root->height < height) {
		top = fresh[--nr];
		top->shift = root->height * RADIX_TREE_MAP_SHIFT;
		top->entries = root->rnode->entries;
		node_set(top, 0, root->rnode);
		root->rnode = top;
		root->height++;
	}
	for (node = root->rnode; node->shift; node = node->slots[offset]) {
		offset = node_offset(node, index);
		node->entries++;
		if (!node->slots[offset]) {
			struct radix_tree_node *child = fresh[--nr];

			child->shift = node->shift - RADIX_TREE_MAP_SHIFT;
			node_set(node, offset, child);
		}
	}
	node->entries++;
	node_set(node, node_offset(node, index), item);
	assert(nr == 0);
	root->nr_nodes += want;
	root->count++;
	return 0;
}

/* The leaf slot for @index, or NULL when no leaf covers it. */
static void **radix_tree_lookup_slot(const struct radix_tree_root *root,
				     uint64_t index)
{
	struct radix_tree_node *node = root->rnode;

	if (!node || index > radix_tree_max_index(root->height))
		return NULL;
	while (node->shift) {
		node = node->slots[node_offset(node, index)];
		if (!node)
			return NULL;
	}
	return &node->slots[node_offset(node, index)];
}

void *radix_tree_lookup(const struct radix_tree_root *root, uint64_t index)
{
	void **slot = radix_tree_lookup_slot(root, index);

	return slot ? *slot : NULL;
}

void *radix_tree_replace(struct radix_tree_root *root, uint64_t index,
			 void *item)
{
	void **slot = radix_tree_lookup_slot(root, index);
	void *old;

	assert(item && !((uintptr_t)item & 1));
	if (!slot || !*slot)
		return NULL;
	old = *slot;
	*slot = item;
	return old;
}

/* Drop top nodes that only use slot 0, so the height is the least needed. */
static void radix_tree_shrink(struct radix_tree_root *root)
{
	struct radix_tree_node *top = root->rnode;

	while (root->height > 1 && top->bitmap == 1) {
		root->rnode = top->slots[0];
		node_clear(top, 0);
		top->entries = 0;	/* all of them are the child's */
		node_put(top);
		root->nr_nodes--;
		root->height--;
		top = root->rnode;
	}
}

void *radix_tree_delete(struct radix_tree_root *root, uint64_t index)
{
	struct radix_tree_node *path[RADIX_TREE_MAX_PATH];
	unsigned int offsets[RADIX_TREE_MAX_PATH];
	struct radix_tree_node *node = root->rnode;
	unsigned int depth = 0, d;
	void *item;

	if (!node || index > radix_tree_max_index(root->height))
		return NULL;
	for (;;) {
		path[depth] = node;
		offsets[depth] = node_offset(node, index);
		if (!node->shift)
			break;
		node = node->slots[offsets[depth]];
		if (!node)
			return NULL;
		depth++;
	}
	item = node->slots[offsets[depth]];
	if (!item)
		return NULL;

	/* Clear the entry, then free the nodes that leaves empty, upward;
	 * every node on the path holds one entry fewer. */
	for (d = 0; d <= depth; d++)
		path[d]->entries--;
	node_clear(node, offsets[depth]);
	while (!node->count) {
		node_put(node);
		root->nr_nodes--;
		if (!depth) {
			root->rnode = NULL;
			root->height = 0;
			break;
		}
		node = path[--depth];
		node_clear(node, offsets[depth]);
	}
	radix_tree_shrink(root);
	root->count--;
	return item;
}

/*
 * radix_tree_leaf_ge() - the leaf holding the first entry at or after
 * *@pindex, which is moved to that entry's index. NULL if there is none.
 *
 * A descent steered by the bitmaps: in each node it takes the first used
 * slot at or after the digit of the index; a node with none sends the
 * index past its span and the walk back to the parent. Each node on the
 * way is left at most once, so the cost is O(height) bitmap scans.
 */
static struct radix_tree_node *radix_tree_leaf_ge(
		const struct radix_tree_root *root, uint64_t *pindex)
{
	struct radix_tree_node *path[RADIX_TREE_MAX_PATH];
	struct radix_tree_node *node = root->rnode;
	uint64_t index = *pindex, limit, bits;
	unsigned int depth = 0, offset;

	if (!node)
		return NULL;
	limit = radix_tree_max_index(root->height);
	if (index > limit)
		return NULL;
	path[0] = node;
	for (;;) {
		offset = node_offset(node, index);
		bits = node->bitmap >> offset;
		if (bits) {
			if (!(bits & 1)) {
				/* skip to the start of the next used slot */
				offset += __builtin_ctzll(bits);
				index = node_slot_start(node, index, offset);
			}
			if (!node->shift) {
				*pindex = index;
				return node;
			}
			node = node->slots[offset];
			path[++depth] = node;
			continue;
		}
		/* Nothing here at or after @index: go past this node. */
		if (!depth)
			return NULL;
		index |= node_span_mask(node);
		if (index == limit)
			return NULL;
		index++;
		/* Climb while the increment carried past a parent's digit. */
		do {
			node = path[--depth];
		} while (depth && !node_offset(node, index));
	}
}

/*
 * radix_tree_leaf_le() - the leaf holding the last entry at or before
 * *@pindex, which is moved to that entry's index. NULL if there is none.
 * The mirror image of radix_tree_leaf_ge().
 */
static struct radix_tree_node *radix_tree_leaf_le(
		const struct radix_tree_root *root, uint64_t *pindex)
{
	struct radix_tree_node *path[RADIX_TREE_MAX_PATH];
	struct radix_tree_node *node = root->rnode;
	uint64_t index = *pindex, limit, bits;
	unsigned int depth = 0, offset;

	if (!node)
		return NULL;
	limit = radix_tree_max_index(root->height);
	if (index > limit)
		index = limit;
	path[0] = node;
	for (;;) {
		offset = node_offset(node, index);
		/* the slots at or below @offset, @offset moved to bit 63 */
		bits = node->bitmap << (63 - offset);
		if (bits) {
			if (!(bits >> 63)) {
				/* skip to the end of the previous used slot */
				offset -= __builtin_clzll(bits);
				index = node_slot_start(node, index, offset) |
					(((uint64_t)1 << node->shift) - 1);
			}
			if (!node->shift) {
				*pindex = index;
				return node;
			}
			node = node->slots[offset];
			path[++depth] = node;
			continue;
		}
		/* Nothing here at or before @index: go below this node. */
		if (!depth)
			return NULL;
		index &= ~node_span_mask(node);
		if (!index)
			return NULL;
		index--;
		/* Climb while the decrement borrowed from a parent's digit. */
		do {
			node = path[--depth];
		} while (depth &&
			 node_offset(node, index) == RADIX_TREE_MAP_MASK);
	}
}

unsigned int radix_tree_gang_lookup(const struct radix_tree_root *root,
				    void **results, uint64_t *indices,
				    uint64_t first_index,
				    unsigned int max_items)
{
	struct radix_tree_node *leaf;
	uint64_t index = first_index, base, bits;
	unsigned int n = 0, offset;

	while (n < max_items) {
		leaf = radix_tree_leaf_ge(root, &index);
		if (!leaf)
			break;
		base = index & ~RADIX_TREE_MAP_MASK;
		offset = index & RADIX_TREE_MAP_MASK;
		bits = leaf->bitmap & (UINT64_MAX << offset);
		do {
			offset = __builtin_ctzll(bits);
			bits &= bits - 1;
			results[n] = leaf->slots[offset];
			if (indices)
				indices[n] = base | offset;
			n++;
		} while (bits && n < max_items);
		if (base == (UINT64_MAX & ~RADIX_TREE_MAP_MASK))
			break;	/* the last leaf of the index space */
		index = base + RADIX_TREE_MAP_SIZE;
	}
	return n;
}

unsigned int radix_tree_gang_lookup_rev(const struct radix_tree_root *root,
					void **results, uint64_t *indices,
					uint64_t last_index,
					unsigned int max_items)
{
	struct radix_tree_node *leaf;
	uint64_t index = last_index, base, bits;
	unsigned int n = 0, offset;

	while (n < max_items) {
		leaf = radix_tree_leaf_le(root, &index);
		if (!leaf)
			break;
		base = index & ~RADIX_TREE_MAP_MASK;
		offset = index & RADIX_TREE_MAP_MASK;
		bits = leaf->bitmap & (((uint64_t)2 << offset) - 1);
		do {
			offset = 63 - __builtin_clzll(bits);
			bits &= ~((uint64_t)1 << offset);
			results[n] = leaf->slots[offset];
			if (indices)
				indices[n] = base | offset;
			n++;
		} while (bits && n < max_items);
		if (!base)
			break;	/* the first leaf of the index space */
		index = base - 1;
	}
	return n;
}

/*
 * The entries with an index at most @index. One descent: at each node, the
 * entries of the slots before the path's digit are added up, reading the
 * children on the shorter side (the node's own total minus the slots from
 * the digit on, when that side is shorter), so at most 32 children per
 * level; a leaf's slots are entries, counted from its bitmap.
 */
static uint64_t radix_tree_count_le(const struct radix_tree_root *root,
				    uint64_t index)
{
	const struct radix_tree_node *node = root->rnode;
	uint64_t below = 0;

	if (!node)
		return 0;
	if (index >= radix_tree_max_index(root->height))
		return node->entries;
	for (;;) {
		unsigned int digit = node_offset(node, index);
		uint64_t before = node->bitmap & (((uint64_t)1 << digit) - 1);
		uint64_t after = node->bitmap & ~before &
				 ~((uint64_t)1 << digit);
		const struct radix_tree_node *next = node->slots[digit];

		if (!node->shift)
			return below + (uint64_t)__builtin_popcountll(before) +
			       (next ? 1 : 0);
		if (__builtin_popcountll(before) <= __builtin_popcountll(after)) {
			for (; before; before &= before - 1) {
				const struct radix_tree_node *c =
					node->slots[__builtin_ctzll(before)];

				below += c->entries;
			}
		} else {
			uint64_t sum = next ? next->entries : 0;

			for (; after; after &= after - 1) {
				const struct radix_tree_node *c =
					node->slots[__builtin_ctzll(after)];

				sum += c->entries;
			}
			below += node->entries - sum;
		}
		if (!next)
			return below;
		node = next;
	}
}

uint64_t radix_tree_count(const struct radix_tree_root *root, uint64_t first,
			  uint64_t last)
{
	if (first > last)
		return 0;
	return radix_tree_count_le(root, last) -
	       (first ? radix_tree_count_le(root, first - 1) : 0);
}

void radix_tree_iter_init(struct radix_tree_iter *iter, uint64_t start,
			  bool reverse, unsigned int batch)
{
	iter->next = start;
	iter->pos = 0;
	iter->n = 0;
	iter->batch = batch && batch < RADIX_TREE_ITER_BATCH ?
		      batch : RADIX_TREE_ITER_BATCH;
	iter->reverse = reverse;
	iter->done = false;
}

void *radix_tree_iter_next(const struct radix_tree_root *root,
			   struct radix_tree_iter *iter)
{
	uint64_t last;

	if (iter->pos == iter->n) {
		if (iter->done)
			return NULL;
		iter->n = iter->reverse ?
			radix_tree_gang_lookup_rev(root, iter->entries,
						   iter->indices, iter->next,
						   iter->batch) :
			radix_tree_gang_lookup(root, iter->entries,
					       iter->indices, iter->next,
					       iter->batch);
		iter->pos = 0;
		if (iter->n < iter->batch)
			iter->done = true;	/* nothing beyond it */
		if (!iter->n)
			return NULL;
		last = iter->indices[iter->n - 1];
		if (last == (iter->reverse ? 0 : UINT64_MAX))
			iter->done = true;	/* the end of the index space */
		else
			iter->next = iter->reverse ? last - 1 : last + 1;
	}
	return iter->entries[iter->pos++];
}

static void radix_tree_node_destroy(struct radix_tree_node *node)
{
	uint64_t bits = node->bitmap;
	unsigned int offset;

	while (node->shift && bits) {
		offset = __builtin_ctzll(bits);
		bits &= bits - 1;
		radix_tree_node_destroy(node->slots[offset]);
	}
	ak_free(node);
}

void radix_tree_destroy(struct radix_tree_root *root)
{
	if (root->rnode)
		radix_tree_node_destroy(root->rnode);
	radix_tree_init(root);
}

size_t radix_tree_node_size(void)
{
	return ak_good_size(sizeof(struct radix_tree_node));
}
