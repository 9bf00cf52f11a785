/* SPDX-License-Identifier: MIT */
/*
 * store_commit.h - a new version of an item, committed over the one a
 * client asked for: private to the store's point operations, store.c
 * (set, add, replace, cas, append, prepend, touch, lookup, delete) and
 * store_update.c (md, incr and decr, which copy the held version).
 *
 * The shard lookups below are inline in every operation's locked
 * section; store_commit() and store_hold() are store.c's.
 */
#ifndef ANCHORKV_STORE_COMMIT_H
#define ANCHORKV_STORE_COMMIT_H

#include "shard.h"

#define REPLACE_RETRIES		1000	/* append/prepend/incr: the old item changed */

/*
 * One store in the making: what store_commit() is asked to do, and what
 * shard_store_locked() needs and reports back to it.
 */
struct commit {
	struct item *it;	/* filled; the caller's reference is consumed */
	enum store_op op;
	uint64_t req_cas;	/* STORE_OP_CAS: the cas the old item must have */
	bool keep_exptime;	/* take the old item's exptime (a touch may
				 * have moved it since the new item was built) */
	bool allow_stale;	/* STORE_OP_CAS: a cas below the old item's
				 * stores, marked stale (ms I) */
	bool keep_cas;		/* take the old item's cas (md x) */
	bool has_cas_in;	/* take @cas_in as the new item's cas (E) */
	uint64_t cas_in;
	bool keep_time;		/* and its last access: memcached changes
				 * such an item in place (a touch, md I, an
				 * incr that does not lengthen it), so it is
				 * not counted in total_items */
	bool keep_marks;	/* and its marks (fetched, stale, win) */
	bool overdraw;		/* past the limit rather than fail (the
				 * slot a touch adds: store_give_slot()) */
	rel_time_t old_exptime;	/* out: the old item's expiry */
	rel_time_t slot_for;	/* out, with STORE_NOT_STORED: @it must take
				 * this expiry and has no slot for it */
	uint64_t cas;		/* out: the new item's cas, once stored */
	/* store_commit()'s own, for shard_store_locked() */
	struct keyref k;	/* @it's key */
	size_t size;		/* item_alloc_size(@it) */
	bool defer;		/* see mem_charge_locked() */
	size_t short_by;	/* out: bytes other shards should free */
	bool split;		/* out: the key's partition wants a split */
};

/* ---- one shard's index lookups (the caller holds sh->lock) ---- */

static inline __attribute__((always_inline))
struct item *shard_find_locked(const struct shard *sh, const struct keyref *k)
{
	struct htable_probe p;
	struct item *it;

	ak_lock_assert_held(&sh->lock);
	if (k->isint)
		return radix_tree_lookup(&sh->ints, k->ikey);
	if (likely(!htable_rehashing(&sh->ht))) {
		/*
		 * htable_first()'s loop, for the table that is not growing:
		 * 17 instructions a set and 6 a get fewer than the probe
		 * struct's (callgrind, set16 and p16)
		 */
		uint64_t mask = htable_size(sh->ht.bits) - 1, w;
		uint64_t i = htable_home(k->hash, sh->ht.bits);
		uint64_t tag = htable_tag(k->hash);

		while ((w = sh->ht.slots[i]) != 0) {
			if ((w & ~HTABLE_PTR_MASK) == tag) {
				it = htable_ptr(w);
				if (it->nkey == k->nkey &&
				    !memcmp(item_str_key(it), k->key, k->nkey))
					return it;
			}
			i = (i + 1) & mask;
		}
		return NULL;
	}
	for (it = htable_first(&sh->ht, k->hash, &p); it;
	     it = htable_next(&sh->ht, &p)) {
		if (it->nkey == k->nkey &&
		    !memcmp(item_str_key(it), k->key, k->nkey))
			return it;
	}
	return NULL;
}

/* The live item of key @k, reclaiming a dead one; sets *@why. */
static inline __attribute__((always_inline))
struct item *shard_find_live_locked(struct store *s, struct shard *sh,
				    const struct keyref *k, rel_time_t now,
				    struct dead_list *dead,
				    enum store_miss *why)
{
	struct item *it = shard_find_locked(sh, k);
	enum store_miss st = STORE_MISS_ABSENT;

	ak_lock_assert_held(&sh->lock);
	if (it) {
		st = item_state_as(s, it, now, k->isint);
		if (st != STORE_HIT) {
			shard_reclaim_locked(s, sh, it, dead);
			it = NULL;
		}
	}
	if (why)
		*why = st;
	return it;
}


/*
 * Store c->it (consuming the caller's reference whatever the outcome):
 * preload, lock, store, unlock, release; evict in other shards and retry
 * when this one has nothing left to evict or is below its share.
 * Context: no shard lock held.
 */
enum store_result store_commit(struct store *s, struct commit *c);

/*
 * Hold the live item of key @k with a reference. Return: it, or NULL.
 * Context: takes and releases the key's shard lock.
 */
struct item *store_hold(struct store *s, const struct keyref *k);

#endif /* ANCHORKV_STORE_COMMIT_H */
