/* SPDX-License-Identifier: MIT */
/*
 * radix_tree.h - a map from uint64_t index to pointer, after the Linux
 * kernel's radix tree.
 *
 * Nodes have 64 slots (6 bits of the index per level). The height grows with
 * the largest index stored (height 1 covers 0..63, height 11 covers all of
 * uint64_t) and shrinks again when the top node is left with only slot 0.
 * A node left empty by a delete is freed at once. Dense runs of indexes share
 * leaves, so the index costs a little more than 8 bytes per entry there.
 * Entries are non-NULL pointers with bit 0 clear.
 *
 * Preallocation: an insert may need up to RADIX_TREE_PRELOAD_SIZE new nodes:
 * a path of RADIX_TREE_MAX_PATH nodes into an empty tree, or, when the height
 * grows (at worst from 1 to 11), one new top node per added level plus a new
 * path below the top (10 + 10). radix_tree_preload() fills a per-thread pool
 * with that many, outside any lock; the insert that follows, under the
 * caller's lock, takes nodes from the pool and cannot fail for lack of
 * memory. radix_tree_preload_end() closes the bracket:
 *
 *	if (radix_tree_preload())
 *		return -ENOMEM;		// nothing changed
 *	lock(shard);
 *	err = radix_tree_insert(&shard->ints, index, item);	// 0 or -EEXIST
 *	unlock(shard);
 *	radix_tree_preload_end();
 *
 * Synchronization: the caller provides all locking. The preload pool is
 * per thread and needs none.
 */
#ifndef ANCHORKV_RADIX_TREE_H
#define ANCHORKV_RADIX_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RADIX_TREE_MAP_SHIFT	6
#define RADIX_TREE_MAP_SIZE	(1u << RADIX_TREE_MAP_SHIFT)
#define RADIX_TREE_MAX_PATH	11	/* ceil(64 / 6) levels */
/* Most nodes one insert can need, and what radix_tree_preload() pools. */
#define RADIX_TREE_PRELOAD_SIZE	(2 * RADIX_TREE_MAX_PATH - 2)

struct radix_tree_node;

struct radix_tree_root {
	struct radix_tree_node *rnode;	/* NULL when empty */
	unsigned int height;		/* 0 when empty */
	uint64_t count;			/* entries */
	uint64_t nr_nodes;		/* nodes allocated for this tree */
};

#define RADIX_TREE_INIT { NULL, 0, 0, 0 }

/**
 * radix_tree_init() - make @root an empty tree
 * @root: the tree
 *
 * Context: the caller provides locking.
 */
void radix_tree_init(struct radix_tree_root *root);

/**
 * radix_tree_preload() - fill this thread's node pool for one insert
 *
 * On success the pool holds RADIX_TREE_PRELOAD_SIZE nodes, so the next
 * radix_tree_insert() by this thread cannot fail with -ENOMEM. On failure
 * no tree has changed (a pool partly filled is kept for the next call).
 * The pool belongs to the thread, not to a tree; a thread that exits with
 * a pool should call radix_tree_preload_drain() first.
 *
 * Context: must not be called with a lock held that an allocation could
 * wait on; takes no lock.
 * Return: 0, or -ENOMEM.
 */
int radix_tree_preload(void);

/**
 * radix_tree_preload_end() - close the bracket opened by radix_tree_preload()
 *
 * The nodes left in the pool are kept for the thread's next preload.
 *
 * Context: any; takes no lock.
 */
void radix_tree_preload_end(void);

/**
 * radix_tree_preload_drain() - free this thread's pooled nodes
 *
 * For a thread that exits, and for leak checks.
 *
 * Context: outside any preload bracket.
 */
void radix_tree_preload_drain(void);

/**
 * radix_tree_insert() - store @item at @index
 * @root:  the tree
 * @index: any uint64_t
 * @item:  non-NULL pointer, bit 0 clear
 *
 * New nodes come from this thread's preload pool first, then from the
 * allocator.
 *
 * Context: the caller holds the tree's lock.
 * Return: 0; -EEXIST if @index is taken (tree unchanged); -ENOMEM only when
 * not preloaded and the allocator failed (tree unchanged).
 */
int radix_tree_insert(struct radix_tree_root *root, uint64_t index, void *item);

/**
 * radix_tree_lookup() - the entry at @index
 * @root:  the tree
 * @index: the index
 *
 * Context: the caller holds the tree's lock.
 * Return: the entry, or NULL.
 */
void *radix_tree_lookup(const struct radix_tree_root *root, uint64_t index);

/**
 * radix_tree_replace() - swap the entry at an occupied @index for @item
 * @root:  the tree
 * @index: an index that holds an entry
 * @item:  the new entry
 *
 * Context: the caller holds the tree's lock.
 * Return: the old entry, or NULL (and nothing stored) if @index was empty.
 */
void *radix_tree_replace(struct radix_tree_root *root, uint64_t index, void *item);

/**
 * radix_tree_delete() - remove the entry at @index
 * @root:  the tree
 * @index: the index
 *
 * Nodes left empty are freed (to this thread's pool while it has room, else
 * to the allocator) and the height is shrunk to the minimum.
 *
 * Context: the caller holds the tree's lock.
 * Return: the removed entry, or NULL if there was none.
 */
void *radix_tree_delete(struct radix_tree_root *root, uint64_t index);

/**
 * radix_tree_gang_lookup() - the first entries at or after @first_index
 * @root:        the tree
 * @results:     receives up to @max_items entries, in increasing index order
 * @indices:     receives their indexes (may be NULL)
 * @first_index: where to start
 * @max_items:   room in @results
 *
 * Context: the caller holds the tree's lock.
 * Return: the number of entries stored in @results.
 */
unsigned int radix_tree_gang_lookup(const struct radix_tree_root *root,
				    void **results, uint64_t *indices,
				    uint64_t first_index, unsigned int max_items);

/**
 * radix_tree_gang_lookup_rev() - the last entries at or before @last_index
 * @root:       the tree
 * @results:    receives up to @max_items entries, in decreasing index order
 * @indices:    receives their indexes (may be NULL)
 * @last_index: where to start
 * @max_items:  room in @results
 *
 * Context: the caller holds the tree's lock.
 * Return: the number of entries stored in @results.
 */
unsigned int radix_tree_gang_lookup_rev(const struct radix_tree_root *root,
					void **results, uint64_t *indices,
					uint64_t last_index, unsigned int max_items);

/**
 * radix_tree_count() - the number of entries with an index in [@first, @last]
 * @root:  the tree
 * @first: the lowest index counted
 * @last:  the highest index counted
 *
 * Each node keeps the number of entries below it, so this is two descents
 * (entries up to @last, less those before @first), each reading at most
 * half of a node's children per level: O(height), whatever the count.
 *
 * Context: the caller holds the tree's lock.
 * Return: the count; 0 when @first > @last.
 */
uint64_t radix_tree_count(const struct radix_tree_root *root, uint64_t first,
			  uint64_t last);

#define RADIX_TREE_ITER_BATCH	32	/* entries one gang lookup reads */

/*
 * A walk over a tree's entries in index order, reading them a gang lookup
 * at a time (see radix_tree_for_each()).
 */
struct radix_tree_iter {
	uint64_t next;		/* where the next batch starts */
	unsigned int pos;	/* entries of the batch returned so far */
	unsigned int n;		/* entries in the batch */
	unsigned int batch;	/* entries to read per lookup */
	bool reverse;		/* decreasing index order */
	bool done;		/* no entry beyond this batch */
	void *entries[RADIX_TREE_ITER_BATCH];
	uint64_t indices[RADIX_TREE_ITER_BATCH];
};

/**
 * radix_tree_iter_init() - start a walk
 * @iter:    the iterator
 * @start:   the first index to look at
 * @reverse: false: from @start up; true: from @start down
 * @batch:   entries to read per lookup, 1..RADIX_TREE_ITER_BATCH (0: the
 *           most); a walk that stops early wants no more than it needs
 *
 * Context: any.
 */
void radix_tree_iter_init(struct radix_tree_iter *iter, uint64_t start,
			  bool reverse, unsigned int batch);

/**
 * radix_tree_iter_next() - the next entry of a walk
 * @root: the tree
 * @iter: the iterator
 *
 * Entries are read a batch at a time; the next batch starts after the last
 * index returned, so between batches the tree may change. An entry of the
 * current batch is returned as it was read: the caller may delete the entry
 * just returned, but must not free one the walk has not reached yet.
 *
 * Context: the caller holds the tree's lock across each call.
 * Return: the entry, or NULL when the walk is over.
 */
void *radix_tree_iter_next(const struct radix_tree_root *root,
			   struct radix_tree_iter *iter);

/* The index of the entry radix_tree_iter_next() returned last. */
static inline uint64_t radix_tree_iter_index(const struct radix_tree_iter *iter)
{
	return iter->indices[iter->pos - 1];
}

/**
 * radix_tree_for_each() - walk every entry from @start up
 * @entry: the cursor (a pointer)
 * @root:  the tree
 * @iter:  a struct radix_tree_iter *
 * @start: the first index
 */
#define radix_tree_for_each(entry, root, iter, start)			\
	for (radix_tree_iter_init(iter, start, false, 0);		\
	     ((entry) = radix_tree_iter_next(root, iter)) != NULL;)

/**
 * radix_tree_destroy() - free every node of @root (not the entries)
 * @root: the tree; empty afterwards
 *
 * Context: the caller has exclusive use of the tree.
 */
void radix_tree_destroy(struct radix_tree_root *root);

/**
 * radix_tree_insert_nodes_max() - most nodes radix_tree_insert() of @index
 * can add to @root as it is now
 * @root:  the tree
 * @index: the index to insert
 *
 * Growing the tree to cover @index adds a node per new level, and the
 * path down to @index may need a node per level below the top: what a
 * caller reserves (in memory accounting) before an insert. Never more than
 * RADIX_TREE_PRELOAD_SIZE.
 *
 * Context: the caller's lock on @root.
 * Return: the number of nodes.
 */
unsigned int radix_tree_insert_nodes_max(const struct radix_tree_root *root,
					 uint64_t index);

/**
 * radix_tree_node_size() - bytes one node takes from the allocator
 *
 * Context: any.
 * Return: the allocator's size class for a node.
 */
size_t radix_tree_node_size(void);

#endif /* ANCHORKV_RADIX_TREE_H */
