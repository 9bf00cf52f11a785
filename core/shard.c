// SPDX-License-Identifier: MIT
/*
 * shard.c - one shard's indexes, below everything else of the store but
 * the partitions (part.c): an item taken off them (unlinked, or reclaimed
 * when dead; a string item's partition erases it), the hands that walk
 * them (the radix tree in key order, then the hash table slot by slot;
 * the main queue of the eviction and active expiry both use them), and
 * the steps of a growing hash table. store.c, store_life.c, evict.c,
 * expire.c, the ordered walks (span.c, range_str.c, range.c) and
 * store_check.c call these; these call none of them. Linking an item is
 * shard_link_locked(), inline in shard.h beside this file's unlink.
 */
#include "shard.h"

#include "alloc.h"

#define REHASH_STEP		2	/* old buckets moved per write while growing */

#ifdef AK_LOCK_DEBUG
__thread unsigned int ak_shards_held;
#endif

/* ---- one shard's indexes ---- */

/*
 * Take @it off every index and uncount it; the store's reference goes onto
 * @dead, to be released after unlocking. The mirror of shard_link_locked()
 * (shard.h, inline: it is on every store's path).
 */
void shard_unlink_locked(struct store *s, struct shard *sh,
			 struct item *it, struct dead_list *dead)
{
	size_t size;

	ak_lock_assert_held(&sh->lock);
	if (item_is_int(it)) {
		uint64_t nodes = sh->ints.nr_nodes;

		radix_tree_delete(&sh->ints, it->ikey);
		index_radix_sync_locked(s, sh, nodes);
		sh->curr_int_items--;
	} else {
		hands_forget_locked(sh, it, NULL);
		htable_del(&sh->ht, &it->hnode,
			   item_key_hash(item_key(it), it->nkey));
		part_erase_locked(&s->parts, it);
		sh->curr_str_items--;
	}
	small_forget_locked(s, sh, it);
	doubtful_unlink_locked(s, sh, it);
	item_clear_flag(it, ITEM_LINKED);
	sh->curr_items--;
	if (!sh->curr_items)
		sh->doubtful = 0;	/* whatever a flush over-counted */
	size = item_alloc_size(it);
	sh->bytes -= size;
	mem_add(s, -(int64_t)size);
	dead_push(dead, it);
}

/* Unlink an expired or flushed item. */
void shard_reclaim_locked(struct store *s, struct shard *sh,
			  struct item *it, struct dead_list *dead)
{
	ak_lock_assert_held(&sh->lock);
	sh->reclaimed++;
	if (!(it->iflags & ITEM_FETCHED))
		sh->expired_unfetched++;
	shard_unlink_locked(s, sh, it, dead);
}

/* The first string item at or after slot h->slot (NULL: none). */
static struct item *hand_slot_scan_locked(const struct shard *sh,
					  struct clock_hand *h)
{
	uint64_t n = htable_slots(&sh->ht);

	ak_lock_assert_held(&sh->lock);
	for (; h->slot < n; h->slot++) {
		const struct slist_head *b = htable_slot(&sh->ht, h->slot);

		if (b && !slist_empty(b))
			return slist_entry(b->first, struct item, hnode);
	}
	return NULL;
}

/* The item at @h, moving it over gaps and around; NULL: the shard is empty. */
struct item *shard_hand_item_locked(const struct shard *sh,
				    struct clock_hand *h)
{
	unsigned int lap;

	ak_lock_assert_held(&sh->lock);
	for (lap = 0; lap < 3; lap++) {
		if (!h->in_strs) {
			void *got;

			if (radix_tree_gang_lookup(&sh->ints, &got, NULL,
						   h->ikey, 1))
				return got;
			h->in_strs = true;
			h->slot = 0;
			h->item = NULL;
		}
		if (!h->item && sh->ht.count)
			h->item = hand_slot_scan_locked(sh, h);
		if (h->item)
			return h->item;
		h->in_strs = false;
		h->ikey = 0;
	}
	return NULL;
}

/* Move @h past @it, the item at it. */
void shard_hand_step_locked(const struct shard *sh, struct clock_hand *h,
			    const struct item *it)
{
	ak_lock_assert_held(&sh->lock);
	if (!item_is_int(it)) {
		h->item = str_chain_next(it);
		if (!h->item)
			h->slot++;
	} else if (it->ikey == UINT64_MAX) {
		h->in_strs = true;
		h->slot = 0;
		h->item = NULL;
	} else {
		h->ikey = it->ikey + 1;
	}
}

/*
 * The body of shard_rehash_step_locked() while the table grows: move
 * REHASH_STEP old buckets. Return: the old array once the move is
 * complete (ak_free() it after unlocking), else NULL.
 */
/*
 * Start growing @sh's hash table from 2^@bits buckets: allocate the new
 * array unlocked, install it under the lock. The arrays are outside the
 * memory limit, as memcached's hash table is outside its -m.
 * Context: no lock held; takes sh->lock.
 */
void shard_grow(struct shard *sh, unsigned int bits)
{
	struct slist_head *buckets = htable_buckets_alloc(bits + 1);

	if (!buckets)
		return;
	shard_lock(sh);
	if (sh->ht.bits == bits && htable_wants_grow(&sh->ht) &&
	    !htable_grow_start(&sh->ht, buckets))
		buckets = NULL;
	shard_unlock(sh);
	ak_free(buckets);
}

struct slist_head *shard_rehash_some_locked(struct shard *sh)
{
	struct slist_head *old, *done = NULL;
	struct slist_node *tmp;
	struct item *it;
	unsigned int i;

	ak_lock_assert_held(&sh->lock);
	for (i = 0; i < REHASH_STEP && (old = htable_rehash_bucket(&sh->ht));
	     i++) {
		slist_for_each_entry_safe(it, tmp, old, hnode) {
			slist_del_init(&it->hnode, old);
			slist_add_head(&it->hnode, htable_new_bucket(&sh->ht,
				item_key_hash(item_key(it), it->nkey)));
		}
		done = htable_rehash_advance(&sh->ht);
	}
	return done;
}
