/* SPDX-License-Identifier: MIT */
/*
 * part.h - the partitions: the ordered index of the string keys, over
 * every shard (struct parts, in struct store).
 *
 * The order of the string keys is cut by key range into partitions, each
 * an rbtree of items with subtree sizes (for ranks and counts) under its
 * own lock. A string item is inserted, replaced or erased in its
 * partition under its shard's lock (part_insert_locked() and the others
 * take the partition lock inside); a partition that grows past part_max
 * items splits in two (part_split()), two neighbours that hold at most
 * half that merge (parts_tidy()). A split or a merge publishes a new map
 * and retires the old; a retired map is freed only once no thread can
 * read it: a store reads the map under its shard lock, so the store
 * (store_parts_reclaim(), store_life.c) takes every shard lock once,
 * then frees what is retired if no string walk (parts->readers) is under
 * way (parts_free_unread_locked()). This file knows nothing of shards:
 * that barrier is the store's.
 *
 * Lock order: a shard lock, then one partition lock. The split mutex is
 * taken with no shard or partition lock held, then partition locks (two
 * neighbours for a merge, the lower first: part_lock_nested()), then,
 * by the store's barrier, each shard lock in turn with no partition lock.
 *
 * Synchronization: as each function says.
 */
#ifndef ANCHORKV_PART_H
#define ANCHORKV_PART_H

#include <assert.h>
#include <endian.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "compiler.h"
#include "item.h"
#include "lock.h"
#include "rbtree.h"

#define PARTS_MAX		4096	/* partitions of the string order */

/*
 * A partition of the string keys' order: the rbtree of the string items
 * whose keys fall in it, over every shard. The partitions split the order
 * by key range: each holds the keys from its lower bound (lo, fixed for
 * its life; the first partition has none) up to the next one's. One that
 * grows past parts->part_max items splits in two (part_split()); two
 * neighbours that hold at most half that between them merge into the
 * lower one (part_merge_under_split(), from parts_tidy()),
 * and the upper one is freed with the map that listed it.
 */
struct part {
	struct ak_lock lock;
	/* guarded by lock */
	struct rb_root tree;		/* string items in memcmp order */
	struct rb_node *last;		/* tree's rightmost node, NULL if empty */
	uint64_t count;			/* items in tree */
	/* immutable once the partition is in a map */
	struct part *retired;		/* merged away: the next one to free */
	uint64_t lo_pfx;		/* key_prefix() of lo */
	uint8_t nlo;			/* 0: the first partition, no bound */
	char lo[KEY_MAX_LENGTH];
};

/*
 * The partitions in key order. A map is never changed: a split publishes
 * a new one (parts->map) and retires the old, which is freed once no
 * thread can still read it (parts_free_unread_locked(): after every
 * shard lock was taken once, and no string walk is under way).
 */
struct part_map {
	unsigned int n;
	struct part_map *retired;	/* the next retired map */
	struct part *parts[];
};

/* The ordered index of the string keys: the partitions and their map. */
struct parts {
	struct part_map *map;		/* atomic: the current partitions */
	uint64_t part_max;		/* items a partition splits above */
	unsigned int readers;		/* atomic: string walks under way */
	pthread_mutex_t split_lock;	/* serialises splits and merges */
	struct part_map *retired;	/* under split_lock: maps to free */
	struct part *retired_parts;	/* under split_lock: to free too */
	uint64_t splits;		/* under split_lock */
	uint64_t merges;		/* under split_lock */
};

#ifdef AK_LOCK_DEBUG
/* part.c: the partition locks this thread holds (lock order) */
extern __thread unsigned int ak_parts_held;
#endif

static inline void part_lock(struct part *p)
{
#ifdef AK_LOCK_DEBUG
	assert(!ak_parts_held);	/* one partition lock at a time */
	ak_parts_held++;
#endif
	ak_lock_acquire(&p->lock);
}

/* A second partition lock: only a merge, the upper of two neighbours. */
static inline void part_lock_nested(struct part *p)
{
#ifdef AK_LOCK_DEBUG
	assert(ak_parts_held == 1);
	ak_parts_held++;
#endif
	ak_lock_acquire(&p->lock);
}

static inline void part_unlock(struct part *p)
{
#ifdef AK_LOCK_DEBUG
	ak_parts_held--;
#endif
	ak_lock_release(&p->lock);
}

/*
 * The first 8 bytes of a key, zero-padded, as a big-endian number: two
 * keys whose prefixes differ are in the order of their prefixes
 * (key_bytes_cmp()); equal prefixes say nothing.
 */
static inline uint64_t key_prefix(const char *key, size_t nkey)
{
	uint64_t v = 0;

	memcpy(&v, key, nkey < 8 ? nkey : 8);
	return be64toh(v);
}

/* The subtree size of the item at @n (0: none), modulo 2^16. */
static inline uint16_t node_subtree(const struct rb_node *n)
{
	return n ? rb_entry(n, struct item, rbnode)->subtree : 0;
}

/* The current partitions; see struct part_map for how long they stay. */
static inline struct part_map *map_load(const struct parts *ps)
{
	return __atomic_load_n(&ps->map, __ATOMIC_SEQ_CST);
}

/* Index in @m of the partition that holds string key @key. */
static inline unsigned int map_find(const struct part_map *m,
				    const char *key, size_t nkey)
{
	unsigned int lo = 1, hi = m->n;
	uint64_t pfx;

	if (hi <= 1)
		return 0;	/* one partition: no prefix to compute */
	pfx = key_prefix(key, nkey);
	/* the last partition whose lower bound is at or below the key */
	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		const struct part *p = m->parts[mid];
		bool below = p->lo_pfx != pfx ? p->lo_pfx < pfx :
			key_bytes_cmp(p->lo, p->nlo, key, nkey) <= 0;

		if (below)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

/*
 * Lock the partition that holds string key @key. The map read may be old
 * by the time the lock is taken; a split publishes its map before it
 * drops the lock of the partition it split, so if the map is still the
 * one read, the partition found is the key's.
 * Context: a shard lock is held (it keeps the map read alive:
 * store_parts_reclaim()); takes the partition lock.
 * Return: the partition, locked.
 */
static inline struct part *part_lock_key(const struct parts *ps,
					 const char *key, size_t nkey)
{
	for (;;) {
		struct part_map *m = map_load(ps);
		struct part *p = m->parts[map_find(m, key, nkey)];

		part_lock(p);
		if (likely(map_load(ps) == m))
			return p;
		part_unlock(p);
	}
}

/**
 * parts_init() - one partition holding the whole order, empty
 * @ps:       the partitions
 * @part_max: items a partition splits above
 *
 * Context: no lock; allocates.
 * Return: 0, or -ENOMEM (then parts_destroy() cleans up).
 */
int parts_init(struct parts *ps, uint64_t part_max);

/**
 * parts_destroy() - free the partitions and the items in them
 * @ps: the partitions
 *
 * Drops the store's reference of every item in the trees.
 *
 * Context: nobody else uses the store any more.
 */
void parts_destroy(struct parts *ps);

/*
 * A string item in its partition's rbtree, kept with its subtree sizes:
 * inserted (return: whether the partition has grown past part_max, and
 * should split), in @old's place (same key), or erased.
 * Context: the item's shard lock held (it keeps the map alive); each
 * takes and drops the partition's lock.
 */
bool part_insert_locked(struct parts *ps, struct item *it);
void part_replace_locked(struct parts *ps, struct item *old, struct item *it);
void part_erase_locked(struct parts *ps, struct item *it);

/**
 * part_split() - split the partition holding @key if it is too big
 * @ps:   the partitions
 * @key:  a key it holds
 * @nkey: its length
 *
 * Context: no shard or partition lock held; takes the split mutex, then
 * the partition's lock.
 * Return: whether a map was retired (the store should then reclaim:
 * store_parts_reclaim()).
 */
bool part_split(struct parts *ps, const char *key, size_t nkey);

/**
 * parts_tidy() - merge up to @max pairs of small neighbours
 * @ps:  the partitions
 * @max: the most merges
 *
 * Context: no lock held; takes the split mutex, then partition locks one
 * or two at a time.
 * Return: the merges done (when not 0, the store should reclaim).
 */
unsigned int parts_tidy(struct parts *ps, unsigned int max);

/**
 * parts_free_unread_locked() - free the retired maps and partitions
 * @ps: the partitions
 *
 * Frees them if no string walk is under way; the caller has made sure
 * that no store can still read them (every shard lock taken once since
 * they were retired).
 *
 * Context: the split mutex held.
 */
void parts_free_unread_locked(struct parts *ps);

#endif /* ANCHORKV_PART_H */
