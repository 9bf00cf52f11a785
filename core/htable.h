/* SPDX-License-Identifier: MIT */
/*
 * htable.h - a hash table of slist buckets (a word per entry) that grows
 * incrementally.
 *
 * A tool box, like the rbtree: the table hands out the bucket where an entry
 * of a given hash lives; the user walks it and compares keys itself:
 *
 *	struct slist_head *b = htable_bucket(&shard->ht, h);
 *	slist_for_each_entry(it, b, hnode)
 *		if (it->nkey == nkey && !memcmp(...)) ...
 *
 * The bucket count is a power of two. Growing never rehashes the whole table
 * at once: htable_grow_start() installs a twice-as-large array (allocated by
 * the caller outside its lock with htable_buckets_alloc()), and from then on
 * each write moves a few old buckets over (htable_rehash_bucket() /
 * htable_rehash_advance()), while htable_bucket() answers with the old or the
 * new bucket depending on whether that old bucket has moved yet. The user
 * writes the move loop because only it knows each entry's hash:
 *
 *	struct slist_head *old;
 *	while (budget-- && (old = htable_rehash_bucket(ht))) {
 *		slist_for_each_entry_safe(it, tmp, old, hnode) {
 *			slist_del_init(&it->hnode, old);
 *			slist_add_head(&it->hnode,
 *				       htable_new_bucket(ht, hash_of(it)));
 *		}
 *		done = htable_rehash_advance(ht);	// old array once finished
 *	}
 *	...unlock...; ak_free(done);
 *
 * Synchronization: the caller provides all locking.
 */
#ifndef ANCHORKV_HTABLE_H
#define ANCHORKV_HTABLE_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "list.h"

#define HTABLE_MIN_BITS	1
#define HTABLE_MAX_BITS	40

struct htable {
	struct slist_head *buckets;	/* current (old, while rehashing) array */
	struct slist_head *next;	/* the larger array while rehashing, else NULL */
	unsigned int bits;		/* log2 of the buckets array size */
	uint64_t rehash_pos;		/* old buckets below this have moved */
	uint64_t count;			/* entries in the table */
};

/* 2^@bits, as a bucket count */
static inline uint64_t htable_size(unsigned int bits)
{
	return (uint64_t)1 << bits;
}

/**
 * htable_buckets_alloc() - allocate an empty bucket array of 2^@bits buckets
 * @bits: log2 of the size, 1..40
 *
 * Context: outside any lock (it allocates).
 * Return: the array, or NULL on allocation failure or @bits out of range.
 */
struct slist_head *htable_buckets_alloc(unsigned int bits);

/**
 * htable_init() - start a table on a caller-allocated array
 * @ht:      the table
 * @buckets: from htable_buckets_alloc(@bits)
 * @bits:    its log2 size
 *
 * Context: the caller provides locking.
 */
void htable_init(struct htable *ht, struct slist_head *buckets, unsigned int bits);

/**
 * htable_destroy() - free the bucket arrays (not the entries)
 * @ht: the table; unusable afterwards until htable_init()
 *
 * Context: the caller has exclusive use of the table.
 */
void htable_destroy(struct htable *ht);

/**
 * htable_bucket() - the bucket where an entry of hash @hash lives now
 * @ht:   the table
 * @hash: the entry's hash
 *
 * Lookups, inserts and deletes all use this bucket, during a rehash too.
 *
 * Context: the caller holds the table's lock.
 * Return: the bucket.
 */
static inline struct slist_head *htable_bucket(const struct htable *ht,
					       uint64_t hash)
{
	uint64_t old_mask = htable_size(ht->bits) - 1;
	uint64_t i = hash & old_mask;

	if (ht->next && i < ht->rehash_pos)
		return &ht->next[hash & (old_mask << 1 | 1)];
	return &ht->buckets[i];
}

/**
 * htable_new_bucket() - the bucket of @hash in the array being grown into
 * @ht:   a table that is rehashing
 * @hash: the entry's hash
 *
 * Context: the caller holds the table's lock.
 * Return: the bucket in the new array.
 */
struct slist_head *htable_new_bucket(const struct htable *ht, uint64_t hash);

/**
 * htable_add() - link @node into the bucket of @hash and count it
 * @ht:   the table
 * @node: an unlinked node
 * @hash: its entry's hash
 *
 * Context: the caller holds the table's lock.
 */
static inline void htable_add(struct htable *ht, struct slist_node *node,
			      uint64_t hash)
{
	slist_add_head(node, htable_bucket(ht, hash));
	ht->count++;
}

/**
 * htable_del() - unlink @node and uncount it
 * @ht:   the table
 * @node: a node linked in @ht
 * @hash: its entry's hash (a node does not know its bucket)
 *
 * Context: the caller holds the table's lock.
 */
static inline void htable_del(struct htable *ht, struct slist_node *node,
			      uint64_t hash)
{
	assert(!slist_unhashed(node) && ht->count > 0);
	slist_del_init(node, htable_bucket(ht, hash));
	ht->count--;
}

/**
 * htable_replace() - put @new where @old is (same key, same hash)
 * @ht:   the table
 * @old:  a node linked in @ht; unlinked afterwards
 * @new:  an unlinked node
 * @hash: their hash
 *
 * Context: the caller holds the table's lock.
 */
static inline void htable_replace(struct htable *ht, struct slist_node *old,
				  struct slist_node *new, uint64_t hash)
{
	assert(!slist_unhashed(old));
	slist_replace(old, new, htable_bucket(ht, hash));
}

/**
 * htable_wants_grow() - whether the table is loaded enough to start growing
 * @ht: the table
 *
 * True when not already rehashing and count exceeds 1.5 x buckets.
 *
 * Context: the caller holds the table's lock.
 * Return: true if the caller should allocate 2^(@ht->bits + 1) buckets and
 * call htable_grow_start().
 */
static inline bool htable_wants_grow(const struct htable *ht)
{
	uint64_t size = htable_size(ht->bits);

	if (ht->next || ht->bits >= HTABLE_MAX_BITS)
		return false;
	/* count > 1.5 * size, in integers (size <= 2^40: no overflow) */
	return ht->count * 2 > size * 3;
}

/**
 * htable_grow_start() - begin moving into a larger array
 * @ht:      the table
 * @buckets: from htable_buckets_alloc(@ht->bits + 1)
 *
 * Context: the caller holds the table's lock.
 * Return: 0; -EBUSY if a rehash is already under way (then @buckets is not
 * taken and the caller frees it).
 */
int htable_grow_start(struct htable *ht, struct slist_head *buckets);

/**
 * htable_rehashing() - whether a rehash is under way
 * @ht: the table
 *
 * Context: the caller holds the table's lock.
 *
 * Return: true while an incremental resize is in progress.
 */
static inline bool htable_rehashing(const struct htable *ht)
{
	return ht->next != NULL;
}

/**
 * htable_slots() - how many slots a walk by htable_slot() visits
 * @ht: the table
 *
 * Slots number the places of the entries so that a walk from slot 0 up
 * sees every entry once, during a rehash too: while rehashing they follow
 * the larger array (2^(bits + 1) slots), else the array (2^bits). A
 * rehash that starts or ends keeps each slot number's place.
 *
 * Context: the caller holds the table's lock.
 * Return: the number of slots.
 */
static inline uint64_t htable_slots(const struct htable *ht)
{
	return htable_size(ht->bits + (ht->next != NULL));
}

/**
 * htable_slot() - the bucket of slot @j
 * @ht: the table
 * @j:  a slot number below htable_slots()
 *
 * While rehashing, slot j below 2^bits is old bucket j until that bucket
 * moves, then new bucket j; slot j + 2^bits is new bucket j + 2^bits once
 * old bucket j has moved, and empty before (its entries are still in old
 * bucket j, which slot j shows).
 *
 * Context: the caller holds the table's lock.
 * Return: the bucket, or NULL for an empty slot.
 */
static inline const struct slist_head *htable_slot(const struct htable *ht,
						   uint64_t j)
{
	uint64_t old = htable_size(ht->bits);

	if (!ht->next)
		return j < old ? &ht->buckets[j] : NULL;
	if (j < old)
		return j < ht->rehash_pos ? &ht->next[j] : &ht->buckets[j];
	if (j < 2 * old && j - old < ht->rehash_pos)
		return &ht->next[j];
	return NULL;
}

/**
 * htable_rehash_bucket() - the next old bucket whose entries must move
 * @ht: the table
 *
 * Context: the caller holds the table's lock.
 * Return: the old bucket at rehash_pos, or NULL when not rehashing.
 */
static inline struct slist_head *
htable_rehash_bucket(const struct htable *ht)
{
	if (!ht->next)
		return NULL;
	return &ht->buckets[ht->rehash_pos];
}

/**
 * htable_rehash_advance() - mark the bucket from htable_rehash_bucket() moved
 * @ht: the table; the bucket must be empty now
 *
 * When the last old bucket has moved the new array becomes the table's.
 *
 * Context: the caller holds the table's lock.
 * Return: the old array when the rehash just finished (the caller frees it
 * with ak_free() after dropping its lock), else NULL (also when no rehash
 * is under way).
 */
struct slist_head *htable_rehash_advance(struct htable *ht);

/**
 * htable_memory() - bytes held by the bucket arrays
 * @ht: the table
 *
 * Context: the caller holds the table's lock.
 * Return: allocator bytes of both arrays.
 */
size_t htable_memory(const struct htable *ht);

/**
 * htable_max_chain() - length of the longest bucket chain (a full scan)
 * @ht: the table
 *
 * For stats and tests; O(buckets).
 *
 * Context: the caller holds the table's lock.
 * Return: the longest chain.
 */
unsigned int htable_max_chain(const struct htable *ht);

#endif /* ANCHORKV_HTABLE_H */
