/* SPDX-License-Identifier: MIT */
/*
 * item.h - one entry of the store: header, key and value in one block.
 *
 * Layout of the block: the header, then the expiry when the item has one,
 * then the key bytes (nkey, no NUL), then the value (nbytes; not its
 * "\r\n", which a reply adds: two bytes an item are worth more than the
 * copy of two bytes a hit), then the client flags when they are not 0.
 * The block comes from slab_alloc(): a slab class between jemalloc's size
 * classes where that costs less (core/slab.h).
 *
 * One anchor is embedded: rbnode (key order, string keys, in a
 * partition's rbtree, with subtree, the size of the subtree it heads).
 * The hash table of string keys is an array of pointers (htable.h) and
 * costs the item nothing; no eviction list does either: the shard's small
 * queue is a ring of pointers indexed by the item's cas, and its main
 * queue is the order of the indexes themselves (evict.c). Integer keys
 * are indexed by the shard's radix tree, by value, and do not use rbnode:
 * their ikey shares that space (a union), and their block ends the header
 * right after ikey (item_data_offset(), told by ITEM_INTKEY), so an
 * integer item's rbnode does not even exist. Nothing that can be computed
 * is stored: the hash of a string key is recomputed when needed, the
 * block's size comes from the shape.
 *
 * Lifetime: an item is born with one reference, its creator's. Linking it
 * into the store hands that reference to the store; every lookup that
 * returns an item takes one more for the caller, who drops it with
 * item_put() when the reply no longer needs the bytes. The block is freed
 * when the last reference goes, whatever lock is or is not held then.
 *
 * Synchronization: refcount is atomic; every other field is written only
 * before the item is linked or under its shard's lock, and is read-only for
 * holders of a reference once linked (iflags, the time and the expiry are
 * read with relaxed loads).
 */
#ifndef ANCHORKV_ITEM_H
#define ANCHORKV_ITEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hash.h"
#include "keyorder.h"
#include "list.h"
#include "rbtree.h"
#include "slab.h"

#define KEY_MAX_LENGTH	250

/* rel_time_t: seconds since the store's epoch; 0 in exptime means never. */
typedef uint32_t rel_time_t;

enum item_iflags {
	ITEM_LINKED	= 1u << 0,	/* in its shard's indexes */
	ITEM_INTKEY	= 1u << 1,	/* key is a canonical u64, indexed by radix */
	ITEM_FREQ_LO	= 1u << 2,	/* the eviction's 2-bit frequency: */
	ITEM_FETCHED	= 1u << 3,	/* read at least once (stats) */
	ITEM_FREQ_HI	= 1u << 4,	/* see item_freq() in shard.h */
	ITEM_STALE	= 1u << 5,	/* marked stale (md I): mg answers X */
	ITEM_WIN	= 1u << 6,	/* a client was told it won the recache
					 * (mg W): the others get Z */
	ITEM_KEY_BINARY	= 1u << 7,	/* stored with a base64 key (ms b): k
					 * returns it encoded */
};

struct item {
	union {
		uint64_t cas;		/* unique per modification */
		/*
		 * Only once the store has unlinked the item and holds its last
		 * reference (nobody else can reach it): the link of the list
		 * of items to free after the shard lock is dropped.
		 */
		struct item *dead_next;
	};
	uint32_t nbytes : 30;		/* value length without "\r\n" */
	uint32_t has_flags : 1;		/* client flags stored (not 0) */
	uint32_t has_exptime : 1;	/* an expiry slot before the key */
	uint32_t refcount;		/* atomic */
	uint8_t nkey;			/* key length, 1..250 */
	uint8_t iflags;			/* enum item_iflags; relaxed loads */
	/*
	 * String keys: items in the rbtree subtree this item heads, counted
	 * modulo 2^16 (a partition's ranks, see part_rank_locked()); under
	 * its partition's lock.
	 */
	uint16_t subtree;
	rel_time_t time;		/* last stored or fetched (flush_all,
					 * mg l, me la): item_time() */
	union {
		struct rb_node rbnode;	/* string keys: key order */
		uint64_t ikey;		/* ITEM_INTKEY: the key's value */
	};
	/*
	 * After the last field the item's key class uses (ikey for integer
	 * keys, which do without rbnode; rbnode for the others):
	 *   rel_time_t exptime;	only when has_exptime: item_exptime()
	 * then the key, the value, then the client flags, only when
	 * has_flags (item_flags()). The expiry and the flags are mostly 0,
	 * and take no room then: 4 bytes each an item. The flags never
	 * change; an item made without an expiry slot that is given an
	 * expiry (a touch) is copied into a block that has one
	 * (store_lookup()), so has_exptime never changes either.
	 */
};

#define ITEM_INT_DATA	(offsetof(struct item, ikey) + sizeof(uint64_t))
#define ITEM_STR_DATA	sizeof(struct item)
#define ITEM_EXPTIME_SIZE sizeof(rel_time_t)	/* before the key, when
						 * has_exptime */
#define ITEM_FLAGS_SIZE	sizeof(uint32_t)	/* after the value, when
						 * has_flags */
#define ITEM_NBYTES_MAX	((1u << 30) - 1)	/* -I is at most 1 GiB, the
						 * header included */

/*
 * The header sizes decide the size class of the usual item: a 32-byte
 * value with a 6-digit integer key, flags 0 and no expiry takes 32 + 6 +
 * 32 = 70 bytes, with a 14-byte string key 48 + 14 + 32 = 94 (4 more
 * with flags, 4 more with an expiry); a 10-byte key and a 50-byte value
 * 108, against 119 in memcached (its 48-byte header, the cas, the key's
 * NUL, the value's "\r\n").
 */
_Static_assert(ITEM_INT_DATA == 32, "integer items: a 32-byte header");
_Static_assert(ITEM_STR_DATA == 48, "string items: a 48-byte header");
_Static_assert((ITEM_STR_DATA - ITEM_INT_DATA) % ITEM_INTKEY == 0,
	       "item_key() computes the offset from the ITEM_INTKEY bit");

/**
 * item_data_offset() - where the key of an item of this class starts
 * @intkey:  whether the key is an integer key (key_is_integer())
 * @exptime: whether the item has an expiry slot
 *
 * Return: the header size: ITEM_INT_DATA or ITEM_STR_DATA, and the slot.
 */
static inline size_t item_data_offset(bool intkey, bool exptime)
{
	return (intkey ? ITEM_INT_DATA : ITEM_STR_DATA) +
	       (exptime ? ITEM_EXPTIME_SIZE : 0);
}

/* Where an item's anchors end: its expiry slot, or its key. */
static inline char *item_anchors_end(const struct item *it)
{
	/* ITEM_INTKEY never changes; other bits may, hence the relaxed load */
	unsigned int intkey = __atomic_load_n(&it->iflags, __ATOMIC_RELAXED) &
			      ITEM_INTKEY;

	return (char *)it + ITEM_STR_DATA -
	       intkey * ((ITEM_STR_DATA - ITEM_INT_DATA) / ITEM_INTKEY);
}

/* item_anchors_end() for a caller that knows the key class: no load */
static inline char *item_anchors_end_as(const struct item *it, bool intkey)
{
	return (char *)it + (intkey ? ITEM_INT_DATA : ITEM_STR_DATA);
}

/* item_exptime() for a caller that knows the key class (a lookup's) */
static inline rel_time_t item_exptime_as(const struct item *it, bool intkey)
{
	if (!it->has_exptime)
		return 0;
	return __atomic_load_n((rel_time_t *)item_anchors_end_as(it, intkey),
			       __ATOMIC_RELAXED);
}

/**
 * item_exptime() - when the item expires, in store time (0: never)
 * @it: the item
 *
 * Context: any; a relaxed load (a touch moves it, under the shard lock).
 */
static inline rel_time_t item_exptime(const struct item *it)
{
	if (!it->has_exptime)
		return 0;
	return __atomic_load_n((rel_time_t *)item_anchors_end(it),
			       __ATOMIC_RELAXED);
}

/**
 * item_set_exptime() - set the expiry of an item that can hold it
 * @it:      the item; unlinked, or linked and under its shard's lock
 * @exptime: the expiry; not 0 only if @it has_exptime
 *
 * Return: false, changing nothing, if @exptime is not 0 and @it has no
 * slot for it (item_copy() makes a block that has one).
 */
static inline bool item_set_exptime(struct item *it, rel_time_t exptime)
{
	if (!it->has_exptime)
		return exptime == 0;
	__atomic_store_n((rel_time_t *)item_anchors_end(it), exptime,
			 __ATOMIC_RELAXED);
	return true;
}

/*
 * The top two bits of it->time are the eviction's marks (evict.c). On an
 * item that entered the main queue and that the hand has not passed
 * since: it came from small unread, rescued for its size (RESCUED), or
 * read, with no frequency (PROBED). On an item in small: the ghost sent
 * it back there, too large for main on one read (RETURNED, the bit main
 * calls PROBED; queues_link_locked()); a move to main clears it. They
 * change under the shard lock, as the time does once the item is linked.
 * The time is seconds since the store's epoch: 30 bits hold 34 years.
 */
#define ITEM_TIME_MASK		((1u << 30) - 1)
#define ITEM_MARK_RESCUED	(1u << 31)
#define ITEM_MARK_PROBED	(1u << 30)
#define ITEM_MARK_RETURNED	(1u << 30)
#define ITEM_MARKS		(ITEM_MARK_RESCUED | ITEM_MARK_PROBED)

/**
 * item_time() - when the item was last stored or fetched
 * @it: the item
 *
 * Context: any; a relaxed load (a hit moves it forward, item_set_time()).
 */
static inline rel_time_t item_time(const struct item *it)
{
	return __atomic_load_n(&it->time, __ATOMIC_RELAXED) & ITEM_TIME_MASK;
}

/* Set the time, keeping the marks. Context: the item is not linked, or
 * its shard lock is held. */
static inline void item_set_time(struct item *it, rel_time_t t)
{
	uint32_t m = __atomic_load_n(&it->time, __ATOMIC_RELAXED) & ITEM_MARKS;

	__atomic_store_n(&it->time, m | (t & ITEM_TIME_MASK), __ATOMIC_RELAXED);
}

/* The eviction's marks (ITEM_MARK_*). Context: as item_set_time(). */
static inline uint32_t item_marks(const struct item *it)
{
	return __atomic_load_n(&it->time, __ATOMIC_RELAXED) & ITEM_MARKS;
}

static inline void item_set_marks(struct item *it, uint32_t marks)
{
	uint32_t t = __atomic_load_n(&it->time, __ATOMIC_RELAXED);

	__atomic_store_n(&it->time, (t & ITEM_TIME_MASK) | marks,
			 __ATOMIC_RELAXED);
}

/**
 * item_flags() - the client flags
 * @it: the item
 *
 * Context: any; they never change once the item is made.
 */
static inline uint32_t item_flags(const struct item *it);

/**
 * item_key() - the key bytes (not NUL terminated)
 * @it: the item
 */
static inline const char *item_key(const struct item *it)
{
	return item_anchors_end(it) + it->has_exptime * ITEM_EXPTIME_SIZE;
}

/* item_key() for a caller that knows the key class: no load of iflags */
static inline const char *item_key_as(const struct item *it, bool intkey)
{
	return item_anchors_end_as(it, intkey) +
	       it->has_exptime * ITEM_EXPTIME_SIZE;
}

/**
 * item_str_key() - item_key() of an item known to have a string key
 * @it: an item of a partition's tree or the hash table
 *
 * The same address without reading iflags: what the tree descents and
 * the hash probes compare against.
 */
static inline const char *item_str_key(const struct item *it)
{
	return item_key_as(it, false);
}

/**
 * item_value() - the value bytes (nbytes, no "\r\n" after them)
 * @it: the item
 */
static inline char *item_value(struct item *it)
{
	return (char *)item_key(it) + it->nkey;
}

static inline const char *item_value_const(const struct item *it)
{
	return item_key(it) + it->nkey;
}

/**
 * item_value_as() - item_value() for a caller that knows the key class
 * @it:     the item
 * @intkey: whether its key is an integer key (a lookup's keyref says)
 */
static inline const char *item_value_as(const struct item *it, bool intkey)
{
	return item_key_as(it, intkey) + it->nkey;
}

/* item_flags() of @it, whose value is at @value */
static inline uint32_t item_flags_at(const struct item *it,
				     const char *value)
{
	uint32_t flags;

	if (!it->has_flags)
		return 0;
	memcpy(&flags, value + it->nbytes, sizeof(flags));
	return flags;
}

static inline uint32_t item_flags(const struct item *it)
{
	return item_flags_at(it, item_value_const(it));
}

/**
 * item_block_size() - the bytes of an item's block: header, expiry, key,
 * value and flags
 * @intkey:  whether the key is an integer key (key_is_integer())
 * @exptime: the expiry (4 bytes when not 0)
 * @flags:   the client flags (4 bytes when not 0)
 * @nkey:    key length
 * @nbytes:  value length
 *
 * The one formula of an item's size; the helpers below apply it to an item
 * or round it to the allocator's size class.
 *
 * Context: any.
 * Return: the bytes item_alloc() asks the allocator for.
 */
static inline size_t item_block_size(bool intkey, rel_time_t exptime,
				     uint32_t flags, size_t nkey,
				     uint32_t nbytes)
{
	return item_data_offset(intkey, exptime) + nkey + (size_t)nbytes +
	       (flags ? ITEM_FLAGS_SIZE : 0);
}

/**
 * item_block_size_of() - item_block_size() of an existing item
 * @it: the item
 *
 * Context: any.
 * Return: the bytes item_alloc() asked for @it's block.
 */
static inline size_t item_block_size_of(const struct item *it)
{
	return item_block_size(__atomic_load_n(&it->iflags, __ATOMIC_RELAXED) &
			       ITEM_INTKEY, it->has_exptime, it->has_flags,
			       it->nkey, it->nbytes);
}

/**
 * item_alloc_size() - the allocator bytes of an item's block
 * @it: the item
 *
 * What the store counts against the memory limit for @it, computed from
 * its shape rather than stored: slab_charge() of its block, the slab
 * class's share of its page or jemalloc's size class.
 *
 * Context: any.
 * Return: the bytes.
 */
static inline size_t item_alloc_size(const struct item *it)
{
	return slab_charge(item_block_size_of(it));
}

/**
 * item_alloc() - allocate an unlinked item with one reference
 * @key:     the key (1..KEY_MAX_LENGTH bytes, checked by the caller)
 * @nkey:    its length
 * @flags:   client flags
 * @exptime: expiry in store time (0 = never)
 * @nbytes:  value length; the caller fills nbytes bytes at item_value()
 *
 * Copies the key, and sets ITEM_INTKEY and ikey if the key is a canonical
 * u64. The cas and time fields are set when the store links the item; the
 * expiry and the flags are stored only when not 0 (has_exptime,
 * has_flags).
 *
 * Context: any lock state; allocates, so store users call it before taking a
 * shard lock.
 * Return: the item, or NULL on allocation failure.
 */
struct item *item_alloc(const char *key, size_t nkey, uint32_t flags,
			rel_time_t exptime, uint32_t nbytes);

/**
 * item_copy() - an unlinked copy of an item, with an expiry slot
 * @it:      the item (a reference held: its key, value and flags do not
 *           change)
 * @exptime: the copy's expiry
 *
 * The key, value, flags and marks of @it (not ITEM_LINKED) in a block that
 * has an expiry slot, with one reference: what a touch stores in place of
 * an item made without one. The cas and time are the caller's to set.
 *
 * Context: any lock state; allocates.
 * Return: the copy, or NULL on allocation failure.
 */
struct item *item_copy(const struct item *it, rel_time_t exptime);

/**
 * item_total_size() - allocator bytes an item of this shape would take
 * @key:     the key (its class decides the header size)
 * @nkey:    key length
 * @exptime: the expiry
 * @flags:   the client flags
 * @nbytes:  value length
 *
 * Context: any.
 * Return: slab_charge() of the block item_alloc() would get: what the
 * store will count for it.
 */
size_t item_total_size(const char *key, size_t nkey, rel_time_t exptime,
		       uint32_t flags, uint32_t nbytes);

/**
 * item_mc_size() - the size memcached 1.6 checks against -I
 * @nkey:   key length
 * @flags:  client flags
 * @nbytes: value length
 *
 * Not ours: memcached's 48-byte header, the 8-byte CAS, the key and its
 * NUL, the flags when they are not 0, the value and its "\r\n". The store
 * checks -I against this sum so that the largest value -I admits is the
 * same as memcached's, whatever our own header costs (what the memory
 * limit counts, with item_total_size()).
 *
 * Context: any.
 * Return: the bytes.
 */
static inline size_t item_mc_size(size_t nkey, uint32_t flags, uint32_t nbytes)
{
	return 48 + 8 + nkey + 1 + (flags ? sizeof(flags) : 0) +
	       (size_t)nbytes + 2;
}

#define MC_CHUNK_MAX	(512 * 1024)	/* memcached's largest class: larger
					 * items are chunks of it */

/**
 * item_mc_class() - memcached's slab class of an item of @size bytes
 * @size: item_mc_size()
 *
 * With memcached's default classes (96 bytes, then each 1.25 times the
 * last, 8-byte aligned): what me and lru_crawler metadump report as cls,
 * for tools that read it. anchorkv has no classes.
 *
 * Context: any.
 * Return: the class, 1..63.
 */
static inline unsigned int item_mc_class(size_t size)
{
	unsigned int id = 1;
	size_t c = 96;

	while (c < size && id < 63) {
		c = ((c * 5 / 4) + 7) & ~(size_t)7;
		id++;
	}
	return id;
}

/**
 * item_get() - take one more reference
 * @it: an item the caller already holds a reference to (or finds under its
 *      shard lock)
 *
 * Context: any.
 */
static inline void item_get(struct item *it)
{
	__atomic_fetch_add(&it->refcount, 1, __ATOMIC_RELAXED);
}

/**
 * item_put() - drop one reference, freeing the item with the last one
 * @it: the item
 *
 * Context: any; must not be called with a shard lock held when it may be
 * the last reference of a large item (freeing is not done under locks).
 */
void item_put(struct item *it);

/**
 * item_free() - free an item whose only reference the caller holds
 * @it: the item; nobody else can reach it (unlinked, refcount 1)
 *
 * item_put() without the atomic decrement, for the store's dead list.
 *
 * Context: any; not under a shard lock for a large item.
 */
void item_free(struct item *it);

/**
 * item_key_hash() - the hash the store indexes a string key by
 * @key:  the bytes
 * @nkey: their number
 *
 * hash_key()'s keyed SipHash. Its high half is the string keys' 32-bit
 * hash: the store picks the shard from its top bits and the slot of the
 * hash table from its low bits (htable.h).
 *
 * Context: any, after hash_init().
 * Return: the hash.
 */
static inline uint64_t item_key_hash(const char *key, size_t nkey)
{
	return hash_key(key, nkey);
}

/**
 * key_compare() - compare two keys in keyspace order
 * @a, @na: first key
 * @b, @nb: second key
 *
 * Keyspace order: every integer key, in numeric order, then every other key
 * in bytewise order (memcmp; a prefix sorts before its extensions).
 *
 * Context: any.
 * Return: <0, 0 or >0.
 */
int key_compare(const char *a, size_t na, const char *b, size_t nb);

#endif /* ANCHORKV_ITEM_H */
