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

#define REHASH_STEP		4	/* old slots moved per store or lookup
				 * while growing: 3 entries at a load of
				 * 3/4, done before the new array is 3/4
				 * full */

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
		mem_add(s, index_radix_count_locked(s, sh, nodes));
		sh->curr_int_items--;
	} else {
		hands_forget_locked(sh, htable_del(&sh->ht, it,
				item_key_hash(item_str_key(it), it->nkey)));
		part_erase_locked(&s->parts, it);
		sh->curr_str_items--;
	}
	small_forget_locked(sh, it);
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

/*
 * @it's bytes into @to, but for what others may touch meanwhile: the
 * refcount (a walk under a partition lock takes a reference) and a string
 * item's place in its partition's order (rbnode and subtree, written
 * under the partition lock, which part_replace_locked() takes to copy
 * them). The rest changes only under the shard lock, held.
 */
static void item_move_bytes(struct item *to, const struct item *it,
			    size_t size)
{
	size_t anchors = (size_t)(item_anchors_end(it) - (const char *)it);

	memcpy(to, it, offsetof(struct item, refcount));
	to->refcount = 1;
	memcpy(&to->nkey, &it->nkey,
	       offsetof(struct item, subtree) - offsetof(struct item, nkey));
	to->subtree = 0;
	to->time = it->time;
	if (item_is_int(it))
		to->ikey = it->ikey;
	else
		RB_CLEAR_NODE(&to->rbnode);
	memcpy((char *)to + anchors, (const char *)it + anchors,
	       size - anchors);
}

/*
 * Put a copy of @it, linked in @sh, in a block of its size class off the
 * page the class is emptying (slab_draining()), in @it's place on every
 * index and in the small ring (same cas, so the same slot), as a store
 * replacing it with the same bytes would; @it goes onto @dead. An item a
 * reply or walk holds stays (moved, it would take two blocks until they
 * let go). Counts, the memory charge, the hands' places and the queues'
 * order do not change. Return: whether it moved (not when held, or when
 * its class has no other free block).
 */
bool shard_move_locked(struct store *s, struct shard *sh, struct item *it,
		       struct dead_list *dead)
{
	size_t size = item_block_size_of(it);
	struct item **slot;
	struct item *to;

	ak_lock_assert_held(&sh->lock);
	if (__atomic_load_n(&it->refcount, __ATOMIC_ACQUIRE) != 1)
		return false;
	to = slab_alloc_moved(size);
	if (!to)
		return false;
	item_move_bytes(to, it, size);
	if (item_is_int(it)) {
		radix_tree_replace(&sh->ints, it->ikey, to);
	} else {
		htable_replace(&sh->ht, it, to,
			       item_key_hash(item_str_key(it), it->nkey));
		part_replace_locked(&s->parts, it, to);
	}
	slot = queues_slot(&sh->q, it);
	if (*slot == it)
		*slot = to;
	item_clear_flag(it, ITEM_LINKED);
	dead_push(dead, it);
	return true;
}

/* The first string item at or after slot h->slot (NULL: none). */
static struct item *hand_slot_scan_locked(const struct shard *sh,
					  struct clock_hand *h)
{
	uint64_t n = htable_slots_n(&sh->ht);
	struct item *it;

	ak_lock_assert_held(&sh->lock);
	for (; h->slot < n; h->slot++) {
		it = htable_slot_entry(&sh->ht, h->slot);
		if (it)
			return it;
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
		}
		if (sh->ht.count) {
			struct item *it = hand_slot_scan_locked(sh, h);

			if (it)
				return it;
		}
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
		h->slot++;
	} else if (it->ikey == UINT64_MAX) {
		h->in_strs = true;
		h->slot = 0;
	} else {
		h->ikey = it->ikey + 1;
	}
}

/*
 * Start growing @sh's hash table from 2^@bits slots: allocate the new
 * array unlocked, install it under the lock. The arrays are outside the
 * memory limit, as memcached's hash table is outside its -m.
 * Context: no lock held; takes sh->lock.
 */
void shard_grow(struct shard *sh, unsigned int bits)
{
	uint64_t *slots = htable_slots_alloc(bits + 1);

	if (!slots)
		return;
	shard_lock(sh);
	if (sh->ht.bits == bits && htable_wants_grow(&sh->ht) &&
	    !htable_grow_start(&sh->ht, slots))
		slots = NULL;
	shard_unlock(sh);
	ak_free(slots);
}

/*
 * The old array is gone: its slot numbers, before the new array's, go
 * too (htable_slot_entry()); a hand among them goes to the first new slot.
 */
static void hand_regrown(struct clock_hand *h, uint64_t half)
{
	if (h->in_strs)
		h->slot = h->slot < half ? 0 : h->slot - half;
}

/*
 * The body of shard_rehash_step_locked() while the table grows: move
 * REHASH_STEP old slots. Return: the old array once the move is complete
 * (ak_free() it after unlocking), else NULL.
 */
uint64_t *shard_rehash_some_locked(struct shard *sh)
{
	uint64_t *done = NULL;
	struct item *it;
	unsigned int i;

	ak_lock_assert_held(&sh->lock);
	for (i = 0; i < REHASH_STEP && htable_rehashing(&sh->ht); i++) {
		it = htable_rehash_entry(&sh->ht);
		done = htable_rehash_advance(&sh->ht, it ?
				item_key_hash(item_str_key(it), it->nkey) : 0);
	}
	if (done) {
		hand_regrown(&sh->hand, htable_size(sh->ht.bits - 1));
		hand_regrown(&sh->expire_hand, htable_size(sh->ht.bits - 1));
	}
	return done;
}
