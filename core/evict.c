// SPDX-License-Identifier: MIT
/*
 * evict.c - CLOCK eviction, the memory charge and hash table growth.
 *
 * CLOCK: the eviction hand walks the shard's items (the radix tree, then
 * the hash table slot by slot, then around again); a hit sets
 * ITEM_ACCESSED and a store ITEM_NEW, and the hand clears one of them per
 * pass before it evicts, so an item read since the last pass survives
 * two, a fresh one one, and nothing moves on a hit. The hands move with shard.c's
 * hand_item_locked() and hand_step_locked(), as the expiry hand does.
 *
 * A shard that must make room evicts its own items unless it holds less
 * than half its fair share of the limit; then the store evicts from the
 * others (store_evict_others()), one shard lock at a time, so memory flows
 * to the shards that are written.
 */
#include "shard.h"

#include <errno.h>

#define DEAD_SCAN		1024	/* items -M looks at for a dead one */

/*
 * Free one item by CLOCK: the item at the hand goes unless it has
 * ITEM_ACCESSED or ITEM_NEW set; the hand clears one of them (ACCESSED
 * first) and moves on. A dead item goes first, as a reclaim. With @live
 * false only a dead item is taken, among the next DEAD_SCAN (the hand keeps
 * its place, so calls that find none search on where the last stopped).
 * @keep (may be NULL) is passed over: the item a store is replacing.
 * Return: false when there was nothing to take.
 */
static bool shard_evict_one_locked(struct store *s, struct shard *sh,
				   rel_time_t now, bool live,
				   const struct item *keep,
				   struct dead_list *dead)
{
	unsigned int looked = 0;
	struct item *it;

	ak_lock_assert_held(&sh->lock);
	while ((it = hand_item_locked(sh, &sh->hand))) {
		if (it == keep) {
			if (sh->curr_items == 1)
				return false;
			hand_step_locked(sh, &sh->hand, it);
			continue;
		}
		if (item_state(s, it, now) != STORE_HIT) {
			hand_step_locked(sh, &sh->hand, it);
			item_reclaim_locked(s, sh, it, dead);
			return true;
		}
		if (!live) {
			/* look a little further for a dead one */
			if (++looked >= DEAD_SCAN)
				return false;
			hand_step_locked(sh, &sh->hand, it);
			continue;
		}
		if (it->iflags & (ITEM_ACCESSED | ITEM_NEW)) {
			item_clear_flag(it, it->iflags & ITEM_ACCESSED ?
					ITEM_ACCESSED : ITEM_NEW);
			hand_step_locked(sh, &sh->hand, it);
			continue;
		}
		hand_step_locked(sh, &sh->hand, it);
		sh->evictions++;
		if (!(it->iflags & ITEM_FETCHED))
			sh->evicted_unfetched++;
		item_unlink_locked(s, sh, it, dead);
		return true;
	}
	return false;
}

/* Bytes a shard holds, and whether that is below half its fair share. */
static uint64_t shard_held_locked(const struct shard *sh)
{
	ak_lock_assert_held(&sh->lock);
	return sh->bytes + sh->index_bytes;
}

static bool shard_starved_locked(const struct store *s,
				 const struct shard *sh)
{
	ak_lock_assert_held(&sh->lock);
	return s->cfg.nshards > 1 &&
	       shard_held_locked(sh) * 2 * s->cfg.nshards <
	       READ_ONCE(s->cfg.mem_limit);
}

/*
 * Reserve @bytes of the memory limit, evicting from @sh while they do not
 * fit. With @defer, a shard below half its fair share does not evict its
 * own items but asks for memory from the others, so that the memory flows
 * to where the stores are. Return: 0; -ENOSPC when the others should evict
 * (*@short_by says how many bytes are missing); -ENOMEM when no_evict
 * forbids evicting.
 */
int mem_charge_locked(struct store *s, struct shard *sh, size_t bytes,
		      bool defer, const struct item *keep, rel_time_t now,
		      struct dead_list *dead, size_t *short_by)
{
	size_t limit = READ_ONCE(s->cfg.mem_limit);
	size_t used;

	ak_lock_assert_held(&sh->lock);
	if (!limit) {
		mem_add(s, (int64_t)bytes);
		return 0;
	}
	used = __atomic_load_n(&s->mem_used, __ATOMIC_RELAXED);
	for (;;) {
		if (used <= limit && bytes <= limit - used) {
			if (__atomic_compare_exchange_n(&s->mem_used, &used,
							used + bytes, true,
							__ATOMIC_RELAXED,
							__ATOMIC_RELAXED))
				return 0;
			continue;
		}
		if ((defer && !s->cfg.no_evict &&
		     shard_starved_locked(s, sh)) ||
		    !shard_evict_one_locked(s, sh, now, !s->cfg.no_evict,
					    keep, dead)) {
			*short_by = used + bytes - limit;
			return s->cfg.no_evict ? -ENOMEM : -ENOSPC;
		}
		used = __atomic_load_n(&s->mem_used, __ATOMIC_RELAXED);
	}
}

/*
 * Start growing @sh's hash table from 2^@bits buckets: allocate the new
 * array unlocked, then reserve its bytes and install it under the lock.
 * Context: no lock held; takes sh->lock.
 */
void shard_grow(struct store *s, struct shard *sh, unsigned int bits)
{
	struct slist_head *buckets = htable_buckets_alloc(bits + 1);
	DEAD_LIST(dead);
	size_t bytes, short_by;

	if (!buckets)
		return;
	bytes = ak_usable_size(buckets);
	shard_lock(sh);
	if (sh->ht.bits != bits || !htable_wants_grow(&sh->ht))
		goto out_unlock;
	if (mem_charge_locked(s, sh, bytes, false, NULL, store_now(s), &dead,
			      &short_by)) {
		/* no room: try again after the table filled a little more */
		sh->grow_retry_at = sh->ht.count + sh->ht.count / 4 + 1;
		goto out_unlock;
	}
	if (htable_grow_start(&sh->ht, buckets)) {
		mem_add(s, -(int64_t)bytes);
		goto out_unlock;
	}
	sh->index_bytes += bytes;
	buckets = NULL;
out_unlock:
	shard_unlock(sh);
	items_release(&dead);
	ak_free(buckets);
}

/*
 * Evict from the shards other than @self, one lock at a time, until about
 * @need bytes are freed: first from those at or above their fair share,
 * then from any. Return: the bytes freed.
 * Context: no lock held.
 */
size_t store_evict_others(struct store *s, struct shard *self,
			  size_t need)
{
	unsigned int start = __atomic_fetch_add(&s->evict_shard, 1,
						__ATOMIC_RELAXED);
	uint64_t share = READ_ONCE(s->cfg.mem_limit) / s->cfg.nshards;
	rel_time_t now = store_now(s);
	unsigned int i, pass;
	size_t freed = 0;

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < s->cfg.nshards && freed < need; i++) {
			struct shard *sh =
				&s->shards[(start + i) & s->shard_mask];
			DEAD_LIST(dead);

			if (sh == self)
				continue;
			shard_lock(sh);
			while (freed < need &&
			       (pass || shard_held_locked(sh) >= share)) {
				uint64_t before = shard_held_locked(sh);

				if (!shard_evict_one_locked(s, sh, now, true,
							    NULL, &dead))
					break;
				freed += before - shard_held_locked(sh);
			}
			shard_unlock(sh);
			items_release(&dead);
		}
	}
	return freed;
}

int store_set_mem_limit(struct store *s, size_t limit)
{
	uint64_t index = 0;
	unsigned int i;
	size_t used;

	for (i = 0; i < s->cfg.nshards; i++) {
		struct shard *sh = &s->shards[i];

		shard_lock(sh);
		index += sh->index_bytes;
		shard_unlock(sh);
	}
	if (limit && index >= limit)
		return -ERANGE;		/* not even the empty indexes fit */
	if (limit && s->cfg.no_evict && store_memory_used(s) > limit)
		return -ENOSPC;		/* -M: no item is dropped for it */
	WRITE_ONCE(s->cfg.mem_limit, limit);
	while (limit && (used = store_memory_used(s)) > limit)
		if (!store_evict_others(s, NULL, used - limit))
			break;
	return 0;
}

size_t store_mem_limit(const struct store *s)
{
	return READ_ONCE(s->cfg.mem_limit);
}
