// SPDX-License-Identifier: MIT
/*
 * store_check.c - store_check_invariants(): every shard's indexes, counts
 * and clock hands against each other, the partitions' order and against
 * the memory counter, as shard.h states them. For tests and fuzzers; it
 * walks everything under each shard lock in turn, then each partition's,
 * so it needs a store nobody else writes.
 */
#include "shard.h"

#include <errno.h>
#include <stdio.h>

#define CHECK_FAIL(...) do {					\
	snprintf(why, len, __VA_ARGS__);			\
	return -EUCLEAN;					\
} while (0)

/* Whether a lookup of hash @hv in @sh's table finds @it. */
static bool table_finds(const struct shard *sh, uint64_t hv,
			const struct item *it)
{
	struct htable_probe p;
	const struct item *cur;

	for (cur = htable_first(&sh->ht, hv, &p); cur;
	     cur = htable_next(&sh->ht, &p))
		if (cur == it)
			return true;
	return false;
}

/*
 * Count an array's entries (slots @from up), checking each word's tag is
 * its key's home slot and the array keeps a free slot.
 */
static int check_slots_locked(const struct shard *sh, const uint64_t *arr,
			      unsigned int bits, uint64_t from,
			      uint64_t *count, char *why, size_t len)
{
	uint64_t i, w, hv, empty = 0;
	const struct item *it;

	ak_lock_assert_held(&sh->lock);
	for (i = from; i < htable_size(bits); i++) {
		w = arr[i];
		if (!htable_used(w)) {
			empty++;
			continue;
		}
		it = htable_ptr(w);
		if (!(it->iflags & ITEM_LINKED) || item_is_int(it))
			CHECK_FAIL("shard %u: bad item in the hash", sh->index);
		hv = item_key_hash(item_key(it), it->nkey);
		if ((w & ~HTABLE_PTR_MASK) != htable_tag(hv) ||
		    htable_word_home(w, i, bits) != htable_home(hv, bits))
			CHECK_FAIL("shard %u: item in a wrong slot", sh->index);
		(*count)++;
	}
	/* the old array of a growing table needs none: a probe there
	 * counts the slots left (htable_next_old()) */
	if (!empty && arr == sh->ht.slots)
		CHECK_FAIL("shard %u: hash array full", sh->index);
	return 0;
}

/* One linked item of @sh's indexes: its key, shard and index entries. */
static int check_item_locked(const struct store *s, const struct shard *sh,
			     const struct item *it, char *why, size_t len)
{
	struct keyref k;
	uint64_t v;

	ak_lock_assert_held(&sh->lock);
	keyref_of_item(&k, it);
	if (!(it->iflags & ITEM_LINKED) || shard_of(s, &k) != sh ||
	    !__atomic_load_n(&it->refcount, __ATOMIC_RELAXED))
		CHECK_FAIL("shard %u: indexed item not linked here", sh->index);
	if (it->has_flags && !item_flags(it))
		CHECK_FAIL("shard %u: flags 0 stored", sh->index);
	if (item_is_int(it)) {
		if (!key_is_integer(item_key(it), it->nkey, &v) ||
		    v != it->ikey || item_key(it) != (const char *)it +
		    item_data_offset(true, it->has_exptime))
			CHECK_FAIL("shard %u: bad integer key", sh->index);
		if (radix_tree_lookup(&sh->ints, it->ikey) != it)
			CHECK_FAIL("shard %u: integer item %llu not in its "
				   "radix tree", sh->index,
				   (unsigned long long)it->ikey);
	} else {
		if (key_is_integer(item_key(it), it->nkey, NULL) ||
		    item_key(it) != (const char *)it +
		    item_data_offset(false, it->has_exptime))
			CHECK_FAIL("shard %u: bad string key", sh->index);
		if (!table_finds(sh, k.hash, it))
			CHECK_FAIL("shard %u: string item not found in the "
				   "hash", sh->index);
	}
	return 0;
}

/* A hand on the string part is at a slot of @sh's table or one past. */
static bool check_hand_locked(const struct shard *sh,
			      const struct clock_hand *h)
{
	ak_lock_assert_held(&sh->lock);
	return !h->in_strs || h->slot <= htable_slots_n(&sh->ht);
}

/*
 * Whether @it is in the rbtree of the partition its key maps to: a
 * descent by key, so a misplaced or out of order item is not found.
 * Context: the item's shard lock is held (lock order: then the partition).
 */
static bool part_holds(const struct store *s, const struct item *it)
{
	struct part *p = part_lock_key(&s->parts, item_key(it), it->nkey);
	const struct rb_node *n;
	bool found = false;

	n = p->tree.rb_node;
	while (n && !found) {
		const struct item *cur = rb_entry(n, struct item, rbnode);
		int c = key_bytes_cmp(item_key(it), it->nkey, item_key(cur),
				      cur->nkey);

		found = cur == it;
		n = c < 0 ? n->rb_left : n->rb_right;
	}
	part_unlock(p);
	return found;
}

/*
 * Every partition's rbtree: linked string items in strictly increasing key
 * order, as many as it counts, each with the size of its subtree (modulo
 * 2^16), at or above the partition's lower bound and below the next
 * one's, the last of them the partition's last; the bounds in increasing
 * order, the first open. Return: 0, and the items of all of them in *@total.
 */
static int check_parts(struct store *s, uint64_t *total, char *why,
		       size_t len)
{
	const struct part_map *m = map_load(&s->parts);
	unsigned int i;

	*total = 0;
	if (!m->n || m->parts[0]->nlo)
		CHECK_FAIL("the first partition has a lower bound");
	for (i = 0; i < m->n; i++) {
		struct part *p = m->parts[i];
		const struct part *next = i + 1 < m->n ? m->parts[i + 1] : NULL;
		const struct item *it, *prev = NULL;
		const struct rb_node *node;
		uint64_t cnt = 0;
		bool bad = false;

		if (i && (!p->nlo || p->lo_pfx != key_prefix(p->lo, p->nlo) ||
			  key_bytes_cmp(m->parts[i - 1]->lo,
					m->parts[i - 1]->nlo, p->lo,
					p->nlo) >= 0))
			CHECK_FAIL("partition %u: its bound is out of order", i);
		part_lock(p);
		for (node = rb_first(&p->tree); node && !bad;
		     node = rb_next(node)) {
			it = rb_entry(node, struct item, rbnode);
			bad = item_is_int(it) || !(it->iflags & ITEM_LINKED) ||
			      (prev && key_bytes_cmp(item_key(prev), prev->nkey,
						     item_key(it), it->nkey) >= 0) ||
			      key_bytes_cmp(item_key(it), it->nkey, p->lo,
					    p->nlo) < 0 ||
			      (next && key_bytes_cmp(item_key(it), it->nkey,
						     next->lo, next->nlo) >= 0) ||
			      it->subtree != (uint16_t)(1 +
					node_subtree(node->rb_left) +
					node_subtree(node->rb_right));
			prev = it;
			cnt++;
		}
		bad = bad || cnt != p->count;
		if (!bad && p->last != rb_last(&p->tree)) {
			part_unlock(p);
			CHECK_FAIL("partition %u: its last node is not its "
				   "rightmost", i);
		}
		part_unlock(p);
		if (bad)
			CHECK_FAIL("partition %u: a bad item, out of order, out "
				   "of its bounds, a wrong subtree size, or "
				   "miscounted (%llu of %llu)",
				   i, (unsigned long long)cnt,
				   (unsigned long long)p->count);
		*total += cnt;
	}
	return 0;
}

/*
 * The queues of S3-FIFO: every item of the small ring is linked, of this
 * shard, at the slot of its cas's sequence number, inside the window
 * [small_tail, cas_seq] no wider than the ring, with none of the marks
 * of an item entering main (ITEM_MARK_RETURNED is small's own); the
 * counts are the ring's; a linked item is in small or, by definition, in
 * main; the ghost's count is its fingerprints'.
 */
static int check_queues_locked(const struct store *s, const struct shard *sh,
			       char *why, size_t len)
{
	uint64_t i, n = 0, bytes = 0, ghosts = 0;

	ak_lock_assert_held(&sh->lock);
	if (sh->q.small_mask & (sh->q.small_mask + 1) ||
	    sh->q.ghost_mask & (sh->q.ghost_mask + 1))
		CHECK_FAIL("shard %u: a queue size is no power of two",
			   sh->index);
	for (i = 0; i <= sh->q.small_mask; i++) {
		const struct item *it = sh->q.small[i];
		uint64_t seq;

		if (!it)
			continue;
		seq = it->cas >> s->shard_bits;
		if (!(it->iflags & ITEM_LINKED) ||
		    shard_of_item(s, it) != sh ||
		    (it->cas & s->shard_mask) != sh->index ||
		    (seq & sh->q.small_mask) != i || seq < sh->q.small_tail ||
		    seq > sh->cas_seq ||
		    seq - sh->q.small_tail > sh->q.small_mask ||
		    (item_marks(it) & ~ITEM_MARK_RETURNED))
			CHECK_FAIL("shard %u: bad item in small slot %llu",
				   sh->index, (unsigned long long)i);
		n++;
		bytes += item_alloc_size(it);
	}
	if (n != sh->q.small_items || bytes != sh->q.small_bytes ||
	    n > sh->curr_items)
		CHECK_FAIL("shard %u: small counts %llu items %llu bytes, "
			   "ring has %llu/%llu", sh->index,
			   (unsigned long long)sh->q.small_items,
			   (unsigned long long)sh->q.small_bytes,
			   (unsigned long long)n, (unsigned long long)bytes);
	for (i = 0; i < (sh->q.ghost_mask + 1) * QUEUES_GHOST_WAYS; i++)
		ghosts += sh->q.ghost[i] != 0;
	if (ghosts != sh->q.ghost_entries)
		CHECK_FAIL("shard %u: ghost counts %llu, has %llu", sh->index,
			   (unsigned long long)sh->q.ghost_entries,
			   (unsigned long long)ghosts);
	return 0;
}

static int check_shard_locked(const struct store *s, const struct shard *sh,
			      char *why, size_t len)
{
	uint64_t nint, nstr, bytes = 0, cnt = 0, size, doubt = 0;
	const struct item *it, *prev = NULL;
	struct radix_tree_iter iter;
	uint64_t slot;
	int err;

	ak_lock_assert_held(&sh->lock);
	if (!check_hand_locked(sh, &sh->hand) ||
	    !check_hand_locked(sh, &sh->expire_hand))
		CHECK_FAIL("shard %u: a clock hand is off the table", sh->index);
	nint = sh->ints.count;
	nstr = sh->ht.count;

	for (slot = 0; slot < htable_slots_n(&sh->ht); slot++) {
		it = htable_slot_entry(&sh->ht, slot);
		if (!it)
			continue;
		if (item_is_int(it) || !(it->iflags & ITEM_LINKED))
			CHECK_FAIL("shard %u: bad item in the hash", sh->index);
		err = check_item_locked(s, sh, it, why, len);
		if (err)
			return err;
		if (!part_holds(s, it))
			CHECK_FAIL("shard %u: string item not in its "
				   "partition", sh->index);
		bytes += item_alloc_size(it);
		doubt += item_doubtful(s, it);
		cnt++;
	}
	if (cnt != nstr)
		CHECK_FAIL("shard %u: hash slots have %llu of %llu", sh->index,
			   (unsigned long long)cnt, (unsigned long long)nstr);

	cnt = 0;
	prev = NULL;
	radix_tree_for_each(it, &sh->ints, &iter, 0) {
		if (!item_is_int(it) || !(it->iflags & ITEM_LINKED) ||
		    it->ikey != radix_tree_iter_index(&iter) ||
		    (prev && prev->ikey >= it->ikey))
			CHECK_FAIL("shard %u: bad radix entry", sh->index);
		err = check_item_locked(s, sh, it, why, len);
		if (err)
			return err;
		bytes += item_alloc_size(it);
		doubt += item_doubtful(s, it);
		prev = it;
		cnt++;
	}
	if (cnt != nint)
		CHECK_FAIL("shard %u: radix has %llu of %llu", sh->index,
			   (unsigned long long)cnt, (unsigned long long)nint);
	/* over-counting is allowed (a flush counts every item), missing one
	 * is not: store_count() would count a dead item */
	if (sh->doubtful < doubt || sh->doubtful > sh->curr_items)
		CHECK_FAIL("shard %u: %llu doubtful counted, %llu doubtful "
			   "items of %llu", sh->index,
			   (unsigned long long)sh->doubtful,
			   (unsigned long long)doubt,
			   (unsigned long long)sh->curr_items);
	if (nint + nstr != sh->curr_items || nint != sh->curr_int_items ||
	    nstr != sh->curr_str_items || bytes != sh->bytes)
		CHECK_FAIL("shard %u: counts %llu/%llu/%llu bytes %llu, "
			   "indexes have %llu/%llu bytes %llu", sh->index,
			   (unsigned long long)sh->curr_items,
			   (unsigned long long)sh->curr_int_items,
			   (unsigned long long)sh->curr_str_items,
			   (unsigned long long)sh->bytes,
			   (unsigned long long)nint, (unsigned long long)nstr,
			   (unsigned long long)bytes);

	cnt = 0;
	err = check_slots_locked(sh, sh->ht.slots, sh->ht.bits, 0, &cnt, why,
				 len);
	if (!err && sh->ht.old)
		err = check_slots_locked(sh, sh->ht.old, sh->ht.bits - 1,
					 sh->ht.rehash_pos, &cnt, why, len);
	if (err)
		return err;
	if (cnt != nstr)
		CHECK_FAIL("shard %u: hash has %llu of %llu", sh->index,
			   (unsigned long long)cnt, (unsigned long long)nstr);
	size = sh->ints.nr_nodes * s->node_size +
	       queues_memory_charged(&sh->q);
	if (sh->index_bytes != size)
		CHECK_FAIL("shard %u: index bytes %llu, really %llu",
			   sh->index, (unsigned long long)sh->index_bytes,
			   (unsigned long long)size);
	return check_queues_locked(s, sh, why, len);
}

int store_check_invariants(struct store *s, char *why, size_t len)
{
	uint64_t total = 0, strs = 0, in_parts;
	unsigned int i;
	size_t used, limit;
	int err = 0;

	for (i = 0; i < s->cfg.nshards && !err; i++) {
		struct shard *sh = &s->shards[i];

		shard_lock(sh);
		err = check_shard_locked(s, sh, why, len);
		total += sh->bytes + sh->index_bytes;
		strs += sh->curr_str_items;
		shard_unlock(sh);
	}
	if (err)
		return err;
	/* every string item is in exactly one partition: each shard's are
	 * found in theirs, and the partitions hold no more than that */
	err = check_parts(s, &in_parts, why, len);
	if (err)
		return err;
	if (in_parts != strs)
		CHECK_FAIL("partitions hold %llu string items, shards %llu",
			   (unsigned long long)in_parts,
			   (unsigned long long)strs);
	used = store_memory_used(s);
	if (used != total)
		CHECK_FAIL("memory used %zu, shards hold %llu", used,
			   (unsigned long long)total);
	limit = store_limit(s);
	if (limit && used > limit)
		CHECK_FAIL("memory used %zu over the limit %zu", used, limit);
	return 0;
}
