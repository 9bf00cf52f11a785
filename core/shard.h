/* SPDX-License-Identifier: MIT */
/*
 * shard.h - the store's private parts: struct store and struct shard,
 * the key reference, the dead list and the helpers that store.c,
 * store_life.c, evict.c, expire.c, the ordered walks (span.c,
 * range_str.c, range.c) and store_check.c share, with shard.c's
 * functions (one shard's indexes' own operations, which call none of
 * those files). The partitions, the string keys' order over every shard,
 * are part.h's (part.c knows nothing of shards). Not for users of the
 * store: they include store.h.
 *
 * Lock order: a shard lock, then a partition lock; never the other way.
 * A thread holds at most one shard lock and at most one partition lock at
 * a time (the debug build asserts both: shard_lock(), part_lock()), but
 * a merge, which holds the split mutex and no shard lock, and takes two
 * neighbouring partitions' locks, the lower first (part_lock_nested()). The
 * string keys' order lives in partitions (struct part), not in the
 * shards: a store, replace or unlink of a string item takes its shard
 * lock, then its partition's for the rbtree; a range or count over string
 * keys takes partition locks only, and so never reclaims (reclaiming
 * takes the shard lock). The flush mutex only serialises concurrent
 * store_flush_all() calls and is never held together with a shard or
 * partition lock.
 *
 * What happens under a shard lock: items are allocated and filled before
 * it (store_item_alloc(), item_alloc()) and radix inserts are preloaded
 * before it, so nothing allocates under it but a radix insert that the
 * preload did not cover. Items unlinked under the lock are either handed
 * over to the other holders of a reference (the store's reference is
 * dropped: they free the block) or, when the store holds the last
 * reference, collected on a local list ("dead", through dead_next) and
 * freed with items_release() after unlocking; an old hash slot array is
 * freed after unlocking too. What does free under the lock is
 * radix_tree_delete(), which gives the nodes it empties back to the
 * thread's preload pool or, when the pool is full, to the allocator.
 *
 * Memory: s->mem_used counts the allocator bytes of every linked item plus
 * every shard's index bytes (radix nodes, S3-FIFO's ring and ghost; the
 * hash tables are outside the limit, as memcached's are). Any growth
 * is reserved first with mem_charge_locked(), which evicts until the
 * reservation fits, so mem_used never exceeds the limit.
 *
 * Per shard, under its lock (store_check_invariants() checks all of it):
 *  - every linked item is on exactly one of the shard's indexes (radix
 *    tree by ikey for integer keys, the hash table for the others), has
 *    ITEM_LINKED set, and its key maps to this shard; a string item is
 *    also in the rbtree of the partition whose interval holds its key
 *    (map_find(), part_lock_key());
 *  - curr_items = curr_int_items + curr_str_items, the entries of the
 *    indexes; bytes the sum of the linked items' item_alloc_size(),
 *    index_bytes radix nodes * node size + queues_memory_charged(); the hash
 *    table's array keeps an empty slot and each entry where linear
 *    probing from its home finds it (htable.h);
 *  - the eviction hand and the expiry hand, on the string part, are at a
 *    slot of the shard's hash table or one past the last;
 *  - S3-FIFO's small ring holds only linked items of the shard, each at
 *    the slot of its cas's sequence number, small_items and small_bytes
 *    their count and bytes; ghost_entries the ghost's fingerprints.
 *
 * Synchronization: a function named _locked expects the shard lock of the
 * shard it is given held and opens with ak_lock_assert_held() on it (a
 * check in the sanitizer and fuzz builds, nothing in a release build).
 * One exception names the lock it expects in its comment and asserts it:
 * part_walk_locked() expects a partition lock. The partitions' own
 * _locked helpers (part.h) expect the item's shard lock as these do; one
 * that expects the split mutex says so in its name
 * (part_merge_under_split()); the others say in their Context line what
 * they take.
 */
#ifndef ANCHORKV_SHARD_H
#define ANCHORKV_SHARD_H

#include "store.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "alloc.h"
#include "compiler.h"
#include "hash.h"
#include "htable.h"
#include "lock.h"
#include "part.h"
#include "queues.h"
#include "radix_tree.h"
#include "rbtree.h"

#define CACHE_LINE		64
#define EPOCH_UNSET		INT64_MIN

/*
 * A position in a shard's items: the next integer index to visit (the
 * radix tree, in key order), or in the string part (the hash table, slot
 * by slot: htable_slot_entry()) the next slot to look at; past the last
 * slot the next lap begins.
 */
struct clock_hand {
	bool in_strs;
	uint64_t ikey;
	uint64_t slot;
};

/* Items to free once the shard lock is dropped (see dead_push()). */
struct dead_list {
	struct item *first;
};

#define DEAD_LIST(name)	struct dead_list name = { NULL }

struct shard {
	struct ak_lock lock;
	/* everything below is guarded by lock, except where marked atomic */
	struct htable ht;		/* string keys by item_key_hash() */
	struct radix_tree_root ints;	/* integer keys by value */
	struct clock_hand hand;		/* the main queue's (evict.c) */
	struct clock_hand expire_hand;	/* store_expire_step() */
	uint64_t cas_seq;		/* atomic reads (flush); written under lock */
	uint64_t flush_cas;		/* atomic: see item_flushed() */
	uint64_t curr_items;
	uint64_t curr_int_items;
	uint64_t curr_str_items;
	uint64_t total_items;
	uint64_t bytes;			/* item_alloc_size() of linked items */
	uint64_t index_bytes;		/* radix nodes + ring + ghost */
	uint64_t evictions;
	uint64_t evicted_unfetched;
	uint64_t evicted_active;
	uint64_t expired_unfetched;
	uint64_t reclaimed;
	/*
	 * At least the number of linked items that may leave the live set
	 * with nobody touching them (item_doubtful(): they expire, or a
	 * flush covers them). While it is 0 the indexes' own counts are the
	 * live counts, and store_count() reads them instead of walking.
	 */
	uint64_t doubtful;
	/* S3-FIFO's small queue and ghost (queues.h; the policy: evict.c) */
	struct queues q;
	unsigned int dead_look;		/* items an eviction's dead search
					 * looks at (evict.c) */
	unsigned int index;
} __attribute__((aligned(CACHE_LINE)));

struct store {
	struct store_config cfg;
	struct shard *shards;
	struct parts parts;		/* the string keys' order (part.h) */
	void *mem;			/* the block holding store and shards */
	unsigned int shard_bits;
	uint32_t shard_mask;
	size_t node_size;		/* radix_tree_node_size() */
	pthread_mutex_t flush_lock;	/* serialises store_flush_all() */
	/* guards cfg.mem_limit's and limit's writers, mc_classes' and
	 * mem_floor (store_limit()) */
	pthread_mutex_t limit_lock;
	uint64_t mc_classes;		/* bit n - 1: memcached's class n */
	size_t mem_floor;		/* cfg.class_page per bit of mc_classes */

	/* read-mostly, lock free */
	int64_t epoch __attribute__((aligned(CACHE_LINE))); /* atomic */
	rel_time_t now;			/* atomic, never decreases */
	/* atomic: low half = done (in effect), high half = pending moment */
	uint64_t flush_word;
	size_t limit;			/* atomic: store_limit() */

	/* written by every store */
	size_t mem_used __attribute__((aligned(CACHE_LINE))); /* atomic */
	unsigned int expire_shard;	/* atomic: next shard to expire */
	uint64_t expire_checked;	/* atomic: items the expiry hand looked at */
	uint64_t expire_reclaimed;	/* atomic: and reclaimed */
	unsigned int evict_shard;	/* atomic: next shard to evict from */
} __attribute__((aligned(CACHE_LINE)));

/**
 * store_limit() - the memory limit in effect
 * @s: the store
 *
 * memcached gives every slab class its first 1 MB page even past -m
 * (do_slabs_newslab() refuses a page over the limit only to a class that
 * has one): at -m 8, values of 50 to 2,000 bytes fill 13 classes and
 * hold 13 MB. So that a small -m holds what memcached holds at the same
 * -m, the limit is at least cfg.class_page (the server's: 1 MiB) for each
 * memcached class an item was stored in while -m was below 64 of them
 * (item_mc_class(), store_note_mc_class()); never more than memcached
 * takes, which also gives a class its first page once the limit is
 * reached. Kept in s->limit, so that reading it costs what reading -m
 * did.
 *
 * Context: any.
 * Return: the bytes; 0: no limit.
 */
static inline size_t store_limit(const struct store *s)
{
	return READ_ONCE(s->limit);
}

/* A key looked up by a client, classified and hashed before any lock. */
struct keyref {
	const char *key;
	size_t nkey;
	bool isint;
	uint64_t ikey;
	uint64_t hash;			/* item_key_hash(); 0 for an integer */
};

static inline void items_release(struct dead_list *dead)
{
	struct item *it = dead->first;

	while (it) {
		struct item *next = it->dead_next;

		item_free(it);	/* the store held the last reference */
		it = next;
	}
	dead->first = NULL;
}

/*
 * The store lets go of an item it has unlinked. When others hold it, the
 * store's reference is just dropped (not the last: nothing is freed under
 * the lock) and the last holder frees it. Otherwise nobody else can reach
 * it (new references are only taken under the lock, from the indexes), so
 * its cas word becomes the link of @dead.
 * Context: the item's shard lock is held.
 */
static inline void dead_push(struct dead_list *dead, struct item *it)
{
	uint32_t ref = __atomic_load_n(&it->refcount, __ATOMIC_ACQUIRE);

	while (ref > 1) {
		if (__atomic_compare_exchange_n(&it->refcount, &ref, ref - 1,
						false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return;
	}
	it->dead_next = dead->first;
	dead->first = it;
}

#ifdef AK_LOCK_DEBUG
/* shard.c: the shard locks this thread holds (lock order; part.h has
 * the partition locks') */
extern __thread unsigned int ak_shards_held;
#endif

static inline void shard_lock(struct shard *sh)
{
#ifdef AK_LOCK_DEBUG
	/* lock order: never a shard lock under a partition or shard lock */
	assert(!ak_parts_held && !ak_shards_held);
	ak_shards_held++;
#endif
	ak_lock_acquire(&sh->lock);
}

static inline void shard_unlock(struct shard *sh)
{
#ifdef AK_LOCK_DEBUG
	ak_shards_held--;
#endif
	ak_lock_release(&sh->lock);
}

/* iflags writers hold the shard lock; readers may not, hence the atomics */
static inline void item_set_flag(struct item *it, uint8_t f)
{
	uint8_t v = READ_ONCE(it->iflags);

	if ((v & f) != f)
		WRITE_ONCE(it->iflags, (uint8_t)(v | f));
}

static inline void item_clear_flag(struct item *it, uint8_t f)
{
	uint8_t v = READ_ONCE(it->iflags);

	if (v & f)
		WRITE_ONCE(it->iflags, (uint8_t)(v & ~f));
}

/*
 * The eviction's frequency, 0..ITEM_FREQ_MAX: FREQ_LO is its bit 0,
 * FREQ_HI its bit 1. A hit adds one (item_hit()); the main queue's hand
 * takes one off each time it passes, and evicts at 0, or at 1 or 2 for
 * the item's size (main_keep_locked() in evict.c).
 */
#define ITEM_FREQ_MAX	3u

static inline unsigned int item_freq(const struct item *it)
{
	uint8_t f = READ_ONCE(it->iflags);

	return (f & ITEM_FREQ_LO ? 1u : 0u) | (f & ITEM_FREQ_HI ? 2u : 0u);
}

static inline void item_set_freq(struct item *it, unsigned int freq)
{
	uint8_t f = READ_ONCE(it->iflags) &
		    (uint8_t)~(ITEM_FREQ_LO | ITEM_FREQ_HI);

	f |= (freq & 1 ? ITEM_FREQ_LO : 0) | (freq & 2 ? ITEM_FREQ_HI : 0);
	WRITE_ONCE(it->iflags, f);
}

/*
 * A read of @it: fetched, and its frequency one up (at most 3), in one
 * write: 0 -> 1 and 2 -> 3 set FREQ_LO, 1 -> 2 trades it for FREQ_HI.
 * Context: the item's shard lock is held.
 */
static inline void item_hit(struct item *it, uint8_t also)
{
	uint8_t f = READ_ONCE(it->iflags), n = f | also;

	if (!(f & ITEM_FREQ_LO))
		n |= ITEM_FREQ_LO;
	else if (!(f & ITEM_FREQ_HI))
		n = (uint8_t)((n & ~ITEM_FREQ_LO) | ITEM_FREQ_HI);
	if (n != f)
		WRITE_ONCE(it->iflags, n);
}

static inline bool item_is_int(const struct item *it)
{
	return READ_ONCE(it->iflags) & ITEM_INTKEY;	/* may run unlocked */
}

/*
 * The store-wide counter is shared by every worker: a change of 0 (a value
 * replaced by one of the same size class, an integer key added without a
 * new radix node) skips the locked add.
 */
static inline void mem_add(struct store *s, int64_t delta)
{
	if (delta)
		__atomic_fetch_add(&s->mem_used, (size_t)delta,
				   __ATOMIC_RELAXED);
}

/* Keyspace order of two items (key_order() on what they record). */
static inline int item_cmp(const struct item *a, const struct item *b)
{
	bool ia = item_is_int(a), ib = item_is_int(b);

	return key_order(ia, ia ? a->ikey : 0, item_key(a), a->nkey,
			 ib, ib ? b->ikey : 0, item_key(b), b->nkey);
}

static inline void keyref_init(struct keyref *k, const char *key, size_t nkey)
{
	k->key = key;
	k->nkey = nkey;
	k->isint = key_is_integer(key, nkey, &k->ikey);
	k->hash = k->isint ? 0 : item_key_hash(key, nkey);
}

static inline void keyref_of_item(struct keyref *k, const struct item *it)
{
	k->key = item_key(it);
	k->nkey = it->nkey;
	k->isint = item_is_int(it);
	k->ikey = k->isint ? it->ikey : 0;
	k->hash = k->isint ? 0 : item_key_hash(k->key, k->nkey);
}

static inline bool keyref_valid(size_t nkey)
{
	return nkey >= 1 && nkey <= KEY_MAX_LENGTH;
}

static inline struct shard *shard_of_int(const struct store *s, uint64_t ikey)
{
	return &s->shards[(ikey >> RADIX_TREE_MAP_SHIFT) & s->shard_mask];
}

static inline struct shard *shard_of_hash(const struct store *s, uint64_t hash)
{
	/* top bits pick the shard, those under them the slot: independent */
	return &s->shards[s->shard_bits ? hash >> (64 - s->shard_bits) : 0];
}

static inline struct shard *shard_of(const struct store *s, const struct keyref *k)
{
	return k->isint ? shard_of_int(s, k->ikey) : shard_of_hash(s, k->hash);
}

/*
 * The shard whose cas sequence an item's cas comes from: the shard index
 * is in the low bits of every cas a shard hands out (shard_store_locked()).
 * Not always the item's own shard: a cas a client chose (E) has any low
 * bits. The flush check reads this shard's snapshot (item_flushed()).
 */
static inline struct shard *shard_of_cas(const struct store *s,
					 const struct item *it)
{
	return &s->shards[READ_ONCE(it->cas) & s->shard_mask];
}

/* The shard an item lives in (its key's), for its lock. */
static inline struct shard *shard_of_item(const struct store *s,
					  const struct item *it)
{
	if (item_is_int(it))
		return shard_of_int(s, it->ikey);
	return shard_of_hash(s, item_key_hash(item_str_key(it), it->nkey));
}

/*
 * An item is flushed if it was stored before the pending flush moment once
 * that moment has come, or before the flush in effect ("done"): stored in
 * an earlier second, or in the same second with a cas the flush had
 * already handed out (shard->flush_cas, a snapshot of the cas sequence).
 */
static inline bool item_flushed(const struct store *s, const struct item *it,
				rel_time_t now)
{
	uint64_t w = __atomic_load_n(&s->flush_word, __ATOMIC_ACQUIRE);
	rel_time_t done = (rel_time_t)w, pend = (rel_time_t)(w >> 32);
	rel_time_t t;

	if (likely(!w))		/* no flush_all yet: most stores */
		return false;
	t = item_time(it);	/* a hit moves it forward */
	if (pend && pend <= now && t < pend)
		return true;
	if (!done || t > done)
		return false;
	if (t < done)
		return true;
	return READ_ONCE(it->cas) <=
	       __atomic_load_n(&shard_of_cas(s, it)->flush_cas,
			       __ATOMIC_RELAXED);
}

/* The latest flush moment, done or pending (0: none yet). */
static inline rel_time_t flush_moment(const struct store *s)
{
	uint64_t w = __atomic_load_n(&s->flush_word, __ATOMIC_ACQUIRE);
	rel_time_t done = (rel_time_t)w, pend = (rel_time_t)(w >> 32);

	return done > pend ? done : pend;
}

/*
 * Whether @it may leave the live set with nobody touching it: it has an
 * expiry, or it was stored at or before the latest flush moment (so a
 * flush covers it now or will). The same answer at link and at unlink
 * unless the expiry or the flush moment changed in between: a touch
 * takes the item off the count and puts it back around the change of
 * its expiry, and a flush_all counts every linked item
 * (store_flush_all()). Erring towards true is safe: it only keeps
 * store_count() on its walk.
 */
static inline bool item_doubtful(const struct store *s, const struct item *it)
{
	rel_time_t m;

	if (item_exptime(it))
		return true;
	m = flush_moment(s);
	return m && item_time(it) <= m;
}

/* @it joins the shard's indexes (its time and expiry set): count it. */
static inline void doubtful_link_locked(const struct store *s,
					struct shard *sh,
					const struct item *it)
{
	ak_lock_assert_held(&sh->lock);
	if (item_doubtful(s, it))
		sh->doubtful++;
}

/* @it leaves the shard's indexes: take it off the doubtful count. */
static inline void doubtful_unlink_locked(const struct store *s,
					  struct shard *sh,
					  const struct item *it)
{
	ak_lock_assert_held(&sh->lock);
	if (item_doubtful(s, it) && sh->doubtful)
		sh->doubtful--;
}

/* item_state() for a caller that knows the key class (a lookup's) */
static inline enum store_miss item_state_as(const struct store *s,
					    const struct item *it,
					    rel_time_t now, bool intkey)
{
	rel_time_t exptime = item_exptime_as(it, intkey);

	if (item_flushed(s, it, now))
		return STORE_MISS_FLUSHED;
	if (exptime && exptime <= now)
		return STORE_MISS_EXPIRED;
	return STORE_HIT;
}

static inline enum store_miss item_state(const struct store *s,
					 const struct item *it, rel_time_t now)
{
	return item_state_as(s, it, now, item_is_int(it));
}

/*
 * A string item left slot @slot of the hash table, and the items after it
 * may have moved back into it: a hand that has just passed the slot (the
 * item it looked at last was there) goes back to it, so that it still
 * sees the item moved in. (One further on may pass an item moved from
 * ahead of it to behind it: that item waits a lap, as an item moved by a
 * growth may.)
 */
static inline void hand_forget(struct clock_hand *h, uint64_t slot)
{
	if (h->in_strs && h->slot == slot + 1)
		h->slot = slot;
}

static inline void hands_forget_locked(struct shard *sh, uint64_t slot)
{
	ak_lock_assert_held(&sh->lock);
	hand_forget(&sh->hand, slot);
	hand_forget(&sh->expire_hand, slot);
}

/* Whether @it is in @sh's small queue (else, linked, in the main one). */
static inline bool small_has_locked(const struct shard *sh,
				    const struct item *it)
{
	ak_lock_assert_held(&sh->lock);
	return queues_small_has(&sh->q, it);
}

/*
 * Take @it out of the small queue if it is there (it leaves the store,
 * or moves to the main queue). Return: whether it was.
 */
static inline bool small_forget_locked(struct shard *sh, struct item *it)
{
	ak_lock_assert_held(&sh->lock);
	return queues_small_forget(&sh->q, it, item_alloc_size(it));
}

/*
 * Count in sh->index_bytes the radix nodes an insert or delete added or
 * freed since @nodes_before. Return: their bytes (negative when freed),
 * for the caller's mem_add(): shard_link_locked() and
 * shard_unlink_locked() both count their index this way.
 */
static inline int64_t index_radix_count_locked(const struct store *s,
					       struct shard *sh,
					       uint64_t nodes_before)
{
	int64_t delta = ((int64_t)sh->ints.nr_nodes - (int64_t)nodes_before) *
			(int64_t)s->node_size;

	ak_lock_assert_held(&sh->lock);
	sh->index_bytes += delta;
	return delta;
}

/*
 * store_life.c: free the partitions' retired maps once no store can read
 * them: every shard lock taken once, then parts_free_unread_locked().
 * Context: no lock held; takes the split mutex, then each shard lock in
 * turn.
 */
void store_parts_reclaim(struct store *s);

/*
 * An item put on a shard's indexes in place of another, or of none
 * (shard_link_locked()); the sizes are item_alloc_size()'s.
 */
struct link {
	struct item *it;		/* linked: its cas and time set */
	struct item *old;		/* the live item it replaces, or NULL */
	const struct keyref *k;		/* its key */
	size_t size, old_size;
	bool in_place;			/* @old changed in place, as memcached
					 * sees it: not counted in total_items */
	bool split;			/* out: its partition should split */
	int64_t index_added;		/* out: radix node bytes it added */
};

/* shard.c: putting an item on the indexes and taking it off (side by
 * side: an index added means both, its header and store_check.c), the
 * hands, the hash table's growth (outside the memory limit) and steps */

static inline int shard_link_locked(struct store *s, struct shard *sh,
				    struct link *l, struct dead_list *dead);
void shard_unlink_locked(struct store *s, struct shard *sh, struct item *it,
			 struct dead_list *dead);
void shard_reclaim_locked(struct store *s, struct shard *sh, struct item *it,
			  struct dead_list *dead);
bool shard_move_locked(struct store *s, struct shard *sh, struct item *it,
		       struct dead_list *dead);
struct item *shard_hand_item_locked(const struct shard *sh,
				    struct clock_hand *h);
void shard_hand_step_locked(const struct shard *sh, struct clock_hand *h,
			    const struct item *it);
void shard_grow(struct shard *sh, unsigned int bits);
uint64_t *shard_rehash_some_locked(struct shard *sh);

/*
 * Move a few old slots of a growing hash table. Return: the old array
 * once the move is complete (ak_free() it after unlocking), else NULL.
 */
static inline uint64_t *shard_rehash_step_locked(struct shard *sh)
{
	ak_lock_assert_held(&sh->lock);
	if (likely(!htable_rehashing(&sh->ht)))
		return NULL;
	return shard_rehash_some_locked(sh);
}

/* evict.c: the memory charge, cross-shard eviction */
int mem_charge_locked(struct store *s, struct shard *sh, size_t bytes,
		      bool defer, const struct item *keep, rel_time_t now,
		      struct dead_list *dead, size_t *short_by);

/* expire.c: the expiry hand's walk */
unsigned int shard_expire_locked(struct store *s, struct shard *sh,
				 unsigned int n, rel_time_t now,
				 struct dead_list *dead, unsigned int *moved);

/* evict.c: the queues' growth within the limit, cross-shard eviction */
void mem_grow_queues(struct store *s, struct shard *sh);
size_t store_evict_others(struct store *s, struct shard *self, size_t need);
/* s->limit from cfg.mem_limit and mem_floor; under s->limit_lock */
void store_limit_update_locked(struct store *s);

/*
 * Put @it at the head of small: at the slot of its cas's sequence number
 * when that is this shard's, in the window and free. Return: whether it
 * went there (else it is in main).
 */
static inline bool small_add_locked(const struct store *s, struct shard *sh,
				    struct item *it, size_t size)
{
	ak_lock_assert_held(&sh->lock);
	if ((it->cas & s->shard_mask) != sh->index ||
	    (it->cas >> s->shard_bits) > sh->cas_seq)
		return false;
	return queues_small_add(&sh->q, it, size, sh->cas_seq, sh->bytes);
}

#define MAIN_SIZE_SHARE		2	/* a read a turn pays for a value
					 * under twice the shard's mean size */

/*
 * Whether @reads pay for a value of @size bytes in main: it is under
 * MAIN_SIZE_SHARE * @reads times the shard's mean item size. A hit ratio
 * counts requests, not bytes: a value twice the mean needs two reads a
 * turn where a mean one needs one (GDSF's frequency over size). Main's
 * hand asks it of an item's reads since it last passed
 * (main_keep_locked() in evict.c); a new key the ghost remembers asks it
 * of one read (queues_link_locked()). With values of one size it always
 * says yes to a read.
 */
static inline bool main_reads_pay_locked(const struct shard *sh,
					 size_t size, unsigned int reads)
{
	ak_lock_assert_held(&sh->lock);
	/* size < MAIN_SIZE_SHARE * reads * bytes / curr_items */
	return (uint64_t)size * sh->curr_items <
	       (uint64_t)MAIN_SIZE_SHARE * reads * sh->bytes;
}

/**
 * main_entry_freq_locked() - the frequency a string item enters main with
 * @sh: the shard
 * @hv: the item's key hash (item_key_hash())
 *
 * In S3-FIFO's main FIFO an entering item waits one full turn before it
 * is judged; over the hash table it lands anywhere ahead of the hand, half
 * a turn on average, and when popularity drifts the new hot keys go
 * before their time. One whose home slot is within the half turn ahead of
 * the hand is passed by once (frequency 1): waits of half a turn to one
 * and a half, one on average, as the FIFO's. tests/bench/hitratio.c's
 * s3clock (the hand, simulated): 1.3 points more on the shift trace, the
 * same as S3-FIFO's within 0.1 on the others. Integer keys (the radix
 * tree's part of the turn, in key order) enter with 0.
 *
 * Context: sh->lock held.
 * Return: 0 or 1.
 */
static inline unsigned int main_entry_freq_locked(const struct shard *sh,
						  uint64_t hv)
{
	const struct htable *ht = &sh->ht;
	uint64_t n = htable_slots_n(ht), hand = 0, pos;

	ak_lock_assert_held(&sh->lock);
	pos = htable_home(hv, ht->bits) +
	      (ht->old ? htable_size(ht->bits - 1) : 0);
	if (sh->hand.in_strs)	/* else it is over the integers, before 0 */
		hand = sh->hand.slot < n ? sh->hand.slot : n;
	return (pos >= hand ? pos - hand : pos + n - hand) < n / 2;
}

/**
 * queues_link_locked() - put a newly linked item in its S3-FIFO queue
 * @s:  the store
 * @sh: its shard
 * @l:  the item (its cas set), the item it replaces (still holding its
 *      cas) or NULL, its key and both sizes (shard_link_locked())
 *
 * A replacement takes the old item's frequency and queue (in small, the
 * slot of its own sequence number: its head); a new key goes to main if
 * the ghost remembers it (main_entry_freq_locked()) and that one read
 * pays for its size (main_reads_pay_locked()), else to small. The ghost
 * says the key was stored again after it was evicted unread; in a cache
 * filled on misses that is a read, but a large value that is written
 * again and again (memtier's sets, say) would fill main with values no
 * one reads. So a large one returns to small, marked: evicted from there
 * unread, the ghost remembers that it came back (small_evict_locked()),
 * and the next time it goes to main whatever its size. A hot value
 * stored on every miss (filled on misses, in bursts that push each other
 * out of small) gets there on its second return.
 * Inline, as every store takes it; queues.c keeps the slow paths.
 *
 * Context: sh->lock held.
 */
static inline void queues_link_locked(struct store *s, struct shard *sh,
				      const struct link *l)
{
	struct item *it = l->it, *old = l->old;
	unsigned int back = 0;

	ak_lock_assert_held(&sh->lock);
	if (old) {
		item_set_freq(it, item_freq(old));
		if (!queues_small_forget(&sh->q, old, l->old_size))
			return;
	} else {
		item_set_freq(it, 0);
		/* an empty ghost (nothing evicted yet) costs no lookup */
		if (sh->q.ghost_entries)
			back = queues_ghost_take(&sh->q, queues_ghost_hash(
					l->k->isint, l->k->ikey,
					(uint32_t)(l->k->hash >> 32)));
		/* the key found counts as one read of the value */
		if (back == QUEUES_GHOST_AGAIN ||
		    (back && main_reads_pay_locked(sh, l->size, 1))) {
			if (!l->k->isint)
				item_set_freq(it, main_entry_freq_locked(sh,
							l->k->hash));
			return;
		}
	}
	if (small_add_locked(s, sh, it, l->size) && back) {
		item_set_marks(it, ITEM_MARK_RETURNED);
		sh->q.ghost_small++;
	}
}

/* Whether a store should call mem_grow_queues(). Context: sh->lock held. */
static inline bool queues_want_grow_locked(const struct shard *sh)
{
	ak_lock_assert_held(&sh->lock);
	return queues_want_grow(&sh->q, sh->curr_items);
}

/*
 * Link l->it into @sh's indexes (the radix tree, or the hash table and its
 * partition's order), S3-FIFO's queues and the counts, in place of l->old,
 * whose store reference goes onto @dead: the mirror of shard_unlink_locked()
 * (shard.c), here to be inlined on every store's path. The memory limit
 * is the caller's: it reserved l->size (and the radix nodes a new integer
 * key may add).
 * Context: sh->lock held (the partition lock is taken inside).
 * Return: 0, or -ENOMEM when a radix insert was not preloaded enough and
 * the allocator failed, or the hash table is full because its larger
 * array could not be had (nothing changed).
 */
static inline int shard_link_locked(struct store *s, struct shard *sh,
				    struct link *l, struct dead_list *dead)
{
	struct item *it = l->it, *old = l->old;
	uint64_t nodes = sh->ints.nr_nodes;

	ak_lock_assert_held(&sh->lock);
	l->split = false;
	if (item_is_int(it)) {
		if (old)
			radix_tree_replace(&sh->ints, it->ikey, it);
		else if (radix_tree_insert(&sh->ints, it->ikey, it))
			return -ENOMEM;	/* not preloaded enough */
	} else if (old) {
		htable_replace(&sh->ht, old, it, l->k->hash);
		part_replace_locked(&s->parts, old, it);
	} else {
		if (unlikely(htable_add(&sh->ht, it, l->k->hash)))
			return -ENOMEM;	/* the table could not grow */
		l->split = part_insert_locked(&s->parts, it);
	}
	queues_link_locked(s, sh, l);
	if (old) {
		doubtful_unlink_locked(s, sh, old);
		item_clear_flag(old, ITEM_LINKED);
		sh->bytes -= l->old_size;
		dead_push(dead, old);
	} else {
		sh->curr_items++;
		if (item_is_int(it))
			sh->curr_int_items++;
		else
			sh->curr_str_items++;
	}
	sh->bytes += l->size;
	sh->total_items += !l->in_place;
	l->index_added = index_radix_count_locked(s, sh, nodes);
	doubtful_link_locked(s, sh, it);
	item_set_flag(it, ITEM_LINKED);
	return 0;
}

#endif /* ANCHORKV_SHARD_H */
