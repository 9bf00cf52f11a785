/* SPDX-License-Identifier: MIT */
/*
 * htable.h - an open-addressing hash table of pointers that grows
 * incrementally.
 *
 * Why not chains: a chained table puts its link in every entry, and in
 * the store that is 8 bytes of every string item, counted in -m; here an
 * entry is one word of the array (outside -m, as memcached's buckets are)
 * and the item keeps nothing. Each word is the pointer with the low 16
 * bits of its home slot above it (the tag): a probe reads the key of an
 * item only when the tags agree (as often as a chain of its bucket would
 * hold it), and the home slot of any word follows from its tag and where
 * it lies, so a delete moves the entries after the hole back without
 * hashing their keys (no tombstones: the table never clogs). Linear
 * probing keeps a probe in one or two cache lines of the array.
 *
 * A tool box, like the rbtree: the table hands out the entries whose tag
 * matches a hash; the user compares keys itself:
 *
 *	struct htable_probe p;
 *	for (it = htable_first(&shard->ht, hv, &p); it;
 *	     it = htable_next(&shard->ht, &p))
 *		if (it->nkey == nkey && !memcmp(...)) ...
 *
 * A hash value @hv is 64 bits; the home slot comes from its high half
 * (bits 32 and up: whatever picks a shard from its top bits stays
 * independent of the slot while the table is below 2^(32 - shard bits)
 * slots). An entry lies less than 2^16 slots after its home (an insert
 * that would put it further fails).
 *
 * The slot count is a power of two and the load below 3/4 but while
 * growing. Growing never
 * rehashes the whole table at once: htable_grow_start() installs a
 * twice-as-large array (allocated by the caller outside its lock with
 * htable_slots_alloc()) and keeps the old one; inserts go to the new
 * array, and each write moves a few old slots over:
 *
 *	void *p;
 *	while (budget-- && htable_rehashing(ht)) {
 *		p = htable_rehash_entry(ht);	// NULL: an empty slot
 *		done = htable_rehash_advance(ht, p ? hash_of(p) : 0);
 *	}
 *	...unlock...; ak_free(done);		// the old array, once
 *
 * The user writes the loop because only it knows an entry's hash. While
 * growing, lookups look in the new array and then in the old one's slots
 * that have not moved; a delete there leaves a mark (HTABLE_GONE) that
 * probes pass over, since moving entries back could carry them below the
 * slots already moved.
 *
 * Slots are numbered for walks (htable_slot_entry()): the array's
 * 2^bits, and while growing the old array's unmoved slots first (numbers
 * 0 .. 2^(bits - 1) - 1), then the new array's. A walk from slot 0 up sees
 * every entry at least once while nothing is written; an entry moved back
 * by a delete, or over by the growth, may be passed once or seen twice.
 *
 * Entries are pointers to 8-byte aligned objects below 2^48 (user-space
 * addresses on x86-64 and arm64).
 *
 * Synchronization: the caller provides all locking.
 */
#ifndef ANCHORKV_HTABLE_H
#define ANCHORKV_HTABLE_H

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

#define HTABLE_MIN_BITS	2
#define HTABLE_MAX_BITS	32
#define HTABLE_TAG_SHIFT 48
#define HTABLE_PTR_MASK	((UINT64_C(1) << HTABLE_TAG_SHIFT) - 1)
#define HTABLE_GONE	UINT64_C(1)	/* deleted from the old array */

_Static_assert(sizeof(void *) == sizeof(uint64_t),
	       "the table's words hold a pointer and a tag");

struct htable {
	uint64_t *slots;	/* the array (the larger one while growing) */
	uint64_t *old;		/* the array being emptied, else NULL */
	unsigned int bits;	/* log2 of slots' length */
	uint64_t rehash_pos;	/* old slots below this have moved */
	uint64_t count;		/* entries in both arrays */
};

/* A lookup under way: htable_first(), htable_next(). */
struct htable_probe {
	const uint64_t *arr;
	uint64_t mask;
	uint64_t i;		/* the slot read next */
	uint64_t left;		/* slots it may still read (old array) */
	uint64_t tag;		/* in place: the word's top 16 bits */
	uint64_t hv;
	bool in_old;
};

/* 2^@bits, as a slot count */
static inline uint64_t htable_size(unsigned int bits)
{
	return (uint64_t)1 << bits;
}

/* The home slot of @hv in an array of 2^@bits slots. */
static inline uint64_t htable_home(uint64_t hv, unsigned int bits)
{
	return (hv >> 32) & (htable_size(bits) - 1);
}

static inline uint64_t htable_tag(uint64_t hv)
{
	return (hv >> 32 & 0xffff) << HTABLE_TAG_SHIFT;
}

/* The home slot of @word, found in slot @j of an array of 2^@bits. */
static inline uint64_t htable_word_home(uint64_t word, uint64_t j,
					unsigned int bits)
{
	uint64_t mask = htable_size(bits) - 1;
	uint64_t dmask = mask < 0xffff ? mask : 0xffff;

	return (j - ((j - (word >> HTABLE_TAG_SHIFT)) & dmask)) & mask;
}

/* The object of a used word (not 0, not HTABLE_GONE). */
static inline void *htable_ptr(uint64_t word)
{
	return (void *)(uintptr_t)(word & HTABLE_PTR_MASK);
}

static inline bool htable_used(uint64_t word)
{
	return word > HTABLE_GONE;
}

/**
 * htable_slots_alloc() - allocate an empty array of 2^@bits slots
 * @bits: log2 of the size, HTABLE_MIN_BITS..HTABLE_MAX_BITS
 *
 * Context: outside any lock (it allocates).
 * Return: the array, or NULL on allocation failure or @bits out of range.
 */
uint64_t *htable_slots_alloc(unsigned int bits);

/**
 * htable_init() - start a table on a caller-allocated array
 * @ht:    the table
 * @slots: from htable_slots_alloc(@bits)
 * @bits:  its log2 size
 *
 * Context: the caller provides locking.
 */
void htable_init(struct htable *ht, uint64_t *slots, unsigned int bits);

/**
 * htable_destroy() - free the arrays (not the entries)
 * @ht: the table; unusable afterwards until htable_init()
 *
 * Context: the caller has exclusive use of the table.
 */
void htable_destroy(struct htable *ht);

void *htable_next_old(const struct htable *ht, struct htable_probe *p);

/**
 * htable_next() - the next entry whose tag matches the probe's hash
 * @ht: the table
 * @p:  a probe started by htable_first()
 *
 * Context: the caller holds the table's lock; no write since htable_first().
 * Return: the entry, or NULL when there is none left.
 */
static inline void *htable_next(const struct htable *ht,
				struct htable_probe *p)
{
	uint64_t w;

	if (!p->in_old) {
		while ((w = p->arr[p->i]) != 0) {
			p->i = (p->i + 1) & p->mask;
			if ((w & ~HTABLE_PTR_MASK) == p->tag)
				return htable_ptr(w);
		}
		if (!ht->old)
			return NULL;
	}
	return htable_next_old(ht, p);
}

/**
 * htable_first() - start a lookup of the entries of hash @hv
 * @ht: the table
 * @hv: the hash
 * @p:  the probe's state, the caller's
 *
 * Entries whose hash differs from @hv in its tag are never returned;
 * those whose tag agrees are, and the caller compares their keys.
 *
 * Context: the caller holds the table's lock.
 * Return: the first candidate, or NULL.
 */
static inline void *htable_first(const struct htable *ht, uint64_t hv,
				 struct htable_probe *p)
{
	p->arr = ht->slots;
	p->mask = htable_size(ht->bits) - 1;
	p->i = htable_home(hv, ht->bits);
	p->tag = htable_tag(hv);
	p->hv = hv;
	p->in_old = false;
	return htable_next(ht, p);
}

/**
 * htable_add() - insert @ptr, an object of hash @hv not in the table
 * @ht:  the table
 * @ptr: the object
 * @hv:  its hash
 *
 * The table keeps a free slot in its array (lookups end at one): past
 * its growth point it still takes entries while a larger array cannot be
 * had, up to one slot short of full.
 *
 * Context: the caller holds the table's lock.
 * Return: 0, or -ENOSPC when the array is that full or the entry would
 * lie 2^16 slots or more after its home (nothing changed).
 */
static inline int htable_add(struct htable *ht, const void *ptr, uint64_t hv)
{
	uint64_t mask = htable_size(ht->bits) - 1;
	uint64_t i = htable_home(hv, ht->bits), d = 0;

	assert(!((uintptr_t)ptr & ~HTABLE_PTR_MASK) && !((uintptr_t)ptr & 7));
	if (unlikely(ht->count >= mask))
		return -ENOSPC;
	while (ht->slots[i]) {
		i = (i + 1) & mask;
		if (unlikely(++d > 0xffff))
			return -ENOSPC;
	}
	ht->slots[i] = htable_tag(hv) | (uintptr_t)ptr;
	ht->count++;
	return 0;
}

/**
 * htable_del() - remove @ptr, an entry of hash @hv
 * @ht:  the table
 * @ptr: an entry of @ht
 * @hv:  its hash (an entry does not know its slot)
 *
 * Context: the caller holds the table's lock.
 * Return: the number (htable_slot_entry()) of the slot it held; entries
 * after it in its run of used slots may have moved back into it.
 */
uint64_t htable_del(struct htable *ht, const void *ptr, uint64_t hv);

/**
 * htable_replace() - put @new where @old is (same key, same hash)
 * @ht:  the table
 * @old: an entry of @ht; not in it afterwards
 * @new: an object not in the table
 * @hv:  their hash
 *
 * Context: the caller holds the table's lock.
 */
void htable_replace(struct htable *ht, const void *old, const void *new,
		    uint64_t hv);

/**
 * htable_wants_grow() - whether the table is loaded enough to start growing
 * @ht: the table
 *
 * True when not already growing and count is 3/4 of the slots or more.
 *
 * Context: the caller holds the table's lock.
 * Return: true if the caller should allocate 2^(@ht->bits + 1) slots and
 * call htable_grow_start().
 */
static inline bool htable_wants_grow(const struct htable *ht)
{
	if (ht->old || ht->bits >= HTABLE_MAX_BITS)
		return false;
	return ht->count * 4 >= htable_size(ht->bits) * 3;
}

/**
 * htable_grow_start() - begin moving into a larger array
 * @ht:    the table
 * @slots: from htable_slots_alloc(@ht->bits + 1)
 *
 * Context: the caller holds the table's lock.
 * Return: 0; -EBUSY if a growth is already under way (then @slots is not
 * taken and the caller frees it).
 */
int htable_grow_start(struct htable *ht, uint64_t *slots);

/**
 * htable_rehashing() - whether a growth is under way
 * @ht: the table
 *
 * Context: the caller holds the table's lock.
 * Return: true while old slots remain to move.
 */
static inline bool htable_rehashing(const struct htable *ht)
{
	return ht->old != NULL;
}

/**
 * htable_rehash_entry() - the entry of the next old slot to move
 * @ht: a growing table
 *
 * Context: the caller holds the table's lock.
 * Return: the entry, or NULL when that slot is empty.
 */
static inline void *htable_rehash_entry(const struct htable *ht)
{
	uint64_t w = ht->old[ht->rehash_pos];

	return htable_used(w) ? htable_ptr(w) : NULL;
}

/**
 * htable_rehash_advance() - move the next old slot's entry
 * @ht: a growing table
 * @hv: the hash of htable_rehash_entry()'s entry (any value if NULL)
 *
 * When the last old slot has moved the new array is the table's alone.
 *
 * Context: the caller holds the table's lock.
 * Return: the old array when the growth just finished (the caller frees
 * it with ak_free() after dropping its lock), else NULL.
 */
uint64_t *htable_rehash_advance(struct htable *ht, uint64_t hv);

/**
 * htable_slots_n() - how many slot numbers a walk visits
 * @ht: the table
 *
 * Context: the caller holds the table's lock.
 * Return: 2^bits, plus the old array's 2^(bits - 1) while growing.
 */
static inline uint64_t htable_slots_n(const struct htable *ht)
{
	return htable_size(ht->bits) +
	       (ht->old ? htable_size(ht->bits - 1) : 0);
}

/**
 * htable_slot_entry() - the entry in slot number @j
 * @ht: the table
 * @j:  below htable_slots_n()
 *
 * Context: the caller holds the table's lock.
 * Return: the entry, or NULL for an empty slot.
 */
static inline void *htable_slot_entry(const struct htable *ht, uint64_t j)
{
	uint64_t w;

	if (ht->old) {
		uint64_t half = htable_size(ht->bits - 1);

		if (j < half) {
			w = j < ht->rehash_pos ? 0 : ht->old[j];
			return htable_used(w) ? htable_ptr(w) : NULL;
		}
		j -= half;
	}
	w = ht->slots[j];
	return w ? htable_ptr(w) : NULL;
}

/**
 * htable_memory() - bytes held by the arrays
 * @ht: the table
 *
 * Context: the caller holds the table's lock.
 * Return: allocator bytes of both arrays.
 */
size_t htable_memory(const struct htable *ht);

/**
 * htable_max_probe() - the longest probe a hit takes (a full scan)
 * @ht: the table
 *
 * For stats and tests: the most slots read to find an entry, its own
 * included (1: every entry in its home slot); O(slots).
 *
 * Context: the caller holds the table's lock.
 * Return: the longest probe, 0 for an empty table.
 */
unsigned int htable_max_probe(const struct htable *ht);

#endif /* ANCHORKV_HTABLE_H */
