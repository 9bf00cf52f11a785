// SPDX-License-Identifier: MIT
/*
 * evict.c - S3-FIFO eviction's policy (its small ring and ghost are
 * queues.c's), the memory charge and the queues' growth within it.
 *
 * S3-FIFO (Yang et al., "FIFO queues are all you need for cache
 * eviction", SOSP 2023), per shard:
 *
 *   new key --(in the ghost?)-- no --> [ small queue, FIFO ] --> tail:
 *                   |   (or over twice the  read since it came in?
 *                  yes   mean, first time)   yes: to main, freq 0 or 1
 *                   v                        no:  evicted, key to ghost
 *             [ main queue: the hand over the indexes, 2-bit freq ]
 *                   freq > 0: freq - 1, the hand moves on; 0: evicted
 *                   (and freq 1 or 2 at 2 * freq times the mean size;
 *                   a small unread one is rescued as at small's tail)
 *
 * A hit only adds one to the item's 2-bit frequency (item_hit()): no
 * list moves, no lock beyond the shard's it already holds. The small queue
 * takes about a tenth of the shard's bytes (QUEUES_SMALL_SHARE): a store
 * that must make room evicts from small while it is at least that, else
 * from main. The small queue is a ring of item pointers indexed by the
 * item's cas sequence (queues.h), so an item costs no bytes for it: a
 * store takes the next sequence number, so the ring's order is the
 * stores' order, and an item leaves its slot in O(1) when it is deleted
 * or replaced. The main queue is the CLOCK hand over the shard's indexes
 * (the radix tree, then the hash table slot by slot), for no bytes per
 * item. An item entering it lands anywhere ahead of the hand, where a
 * FIFO would put it a full turn away: one of a string key within the half
 * turn ahead gets a frequency of 1 (main_entry_freq_locked()), so that it
 * waits a turn on average, as in the FIFO. The simulator of
 * tests/bench/hitratio.c (s3clock) measures it as good as a FIFO with
 * reinsertion (within 0.1 points on every trace of make bench). The ghost
 * is a table of 15-bit fingerprints, QUEUES_GHOST_WAYS per bucket, about
 * as many as the shard holds items; a new key found there goes straight
 * to main, unless its value is over twice the shard's mean size (one
 * read does not pay for it: main_reads_pay_locked()) on its first return:
 * then it starts in small again, and evicted from there unread it is
 * remembered as returned, and goes to main the next time
 * (queues_link_locked() in shard.h).
 *
 * Dead items (expired, flushed) go first: met at small's tail or by
 * main's hand they are reclaimed, and while the shard holds items that
 * may die, the expiry hand looks ahead for one before a live item goes
 * (dead_look_locked()).
 *
 * A shard that must make room evicts its own items unless it holds less
 * than half its fair share of the limit; then the store evicts from the
 * others (store_evict_others()), one shard lock at a time, so memory flows
 * to the shards that are written.
 */
#include "shard.h"

#include <errno.h>

#include "alloc.h"

#define DEAD_SCAN		1024	/* items -M looks at for a dead one */
#define DEAD_LOOK_MAX		64	/* an eviction's look for a dead one */
#define RESCUE_SHARE		2	/* a rescue is of an item under 1/2 the
					 * shard's mean size */
#define RESCUE_MARGIN		3	/* while rescued items are read 3 times
					 * as often a byte as items read in
					 * small */
#define RESCUE_EXPLORE		64	/* one refused candidate in 64 is
					 * rescued all the same */
#define RESCUE_MEMORY		64	/* the rescue counts halve past 64
					 * times the shard's bytes */

/* Unlink a live item to make room, and count it. */
static void item_evict_locked(struct store *s, struct shard *sh,
			      struct item *it, struct dead_list *dead)
{
	ak_lock_assert_held(&sh->lock);
	sh->evictions++;
	if (!(it->iflags & ITEM_FETCHED))
		sh->evicted_unfetched++;
	shard_unlink_locked(s, sh, it, dead);
}

/*
 * Whether an unread item of @size bytes is kept in main instead of
 * evicted, at small's tail or by main's hand: it is under half the
 * shard's mean size, and the items rescued so have been read in main, per
 * byte, at least RESCUE_MARGIN times as often as those read in small
 * (RESCUE_EXPLORE keeps that measured while the answer is no). Where
 * reads do not favour what small saw read (keys read about as often, or
 * only written), holding the small values holds more items, and
 * memcached's slab classes hold them so at a small -m; where they do, the
 * rescues stop. What was read is counted by the hand
 * (main_mark_seen_locked()).
 */
static bool small_rescue_locked(struct shard *sh, size_t size)
{
	const struct queues *q = &sh->q;

	ak_lock_assert_held(&sh->lock);
	if (size * RESCUE_SHARE >= sh->bytes / sh->curr_items)
		return false;
	/* rescue_hits / rescue_bytes >= RESCUE_MARGIN probe_hits /
	 * probe_bytes */
	if ((double)q->rescue_hits * (double)(q->probe_bytes + 1) >=
	    RESCUE_MARGIN * (double)q->probe_hits * (double)q->rescue_bytes)
		return true;
	return ++sh->q.rescue_tries % RESCUE_EXPLORE == 0;
}

/*
 * Mark @it, of @size bytes, with no frequency in main: the hand counts
 * whether it is read before it comes (main_mark_seen_locked()), for a
 * rescue (ITEM_MARK_RESCUED) or for a move of an item read in small.
 */
static void rescue_mark_locked(struct shard *sh, struct item *it,
			       size_t size, uint32_t mark)
{
	struct queues *q = &sh->q;

	item_set_marks(it, mark);
	if (mark == ITEM_MARK_RESCUED)
		q->rescue_bytes += size;
	else
		q->probe_bytes += size;
	if (q->rescue_bytes + q->probe_bytes > RESCUE_MEMORY * sh->bytes) {
		q->rescue_bytes /= 2;
		q->rescue_hits /= 2;
		q->probe_bytes /= 2;
		q->probe_hits /= 2;
	}
}

/*
 * @it leaves small for main, with the frequency that makes it wait about
 * a turn of the hand. One that gets none is marked (@mark): the hand
 * counts whether it was read before it came (main_mark_seen_locked()).
 */
static void small_to_main_locked(struct shard *sh, struct item *it,
				 size_t size, uint32_t mark)
{
	unsigned int freq;

	ak_lock_assert_held(&sh->lock);
	small_forget_locked(sh, it);
	item_set_marks(it, 0);		/* ITEM_MARK_RETURNED */
	freq = item_is_int(it) ? 0 : main_entry_freq_locked(sh,
			item_key_hash(item_str_key(it), it->nkey));
	item_set_freq(it, freq);
	if (!freq)
		rescue_mark_locked(sh, it, size, mark);
}

/* The hand passes @it, marked when it entered main or was rescued there
 * last: count whether it was read since (it came with no frequency). */
static void main_mark_seen_locked(struct shard *sh, struct item *it,
				  uint32_t marks)
{
	ak_lock_assert_held(&sh->lock);
	item_set_marks(it, 0);
	if (marks & ITEM_MARK_RESCUED) {
		if (item_freq(it))	/* read in main */
			sh->q.rescue_hits++;
	} else if (item_freq(it)) {	/* it came with none */
		sh->q.probe_hits++;
	}
}

/*
 * Make room from small's tail: an item read since it came in (or @keep,
 * being replaced) moves to main, and so does a small one while rescues
 * pay (small_rescue_locked()); the first that does neither is evicted and
 * its key remembered in the ghost. Return: false when small ran empty.
 */
static bool small_evict_locked(struct store *s, struct shard *sh,
			       rel_time_t now, const struct item *keep,
			       struct dead_list *dead)
{
	ak_lock_assert_held(&sh->lock);
	while (sh->q.small_items) {
		struct item *it = queues_small_tail(&sh->q);
		size_t size;

		if (item_state(s, it, now) != STORE_HIT) {
			shard_reclaim_locked(s, sh, it, dead);
			return true;
		}
		if (it == keep) {
			small_forget_locked(sh, it);
			continue;
		}
		size = item_alloc_size(it);
		if (item_freq(it)) {
			small_to_main_locked(sh, it, size, ITEM_MARK_PROBED);
			sh->q.moved_main++;
			continue;
		}
		if (small_rescue_locked(sh, size)) {
			small_to_main_locked(sh, it, size, ITEM_MARK_RESCUED);
			sh->q.rescued++;
			continue;
		}
		queues_ghost_add(&sh->q, queues_item_ghost_hash(it),
				 item_marks(it) & ITEM_MARK_RETURNED);
		item_evict_locked(s, sh, it, dead);
		return true;
	}
	return false;
}

/*
 * Whether main's hand passes @it by, of frequency @freq (the reads since
 * it last passed, at most ITEM_FREQ_MAX): read at all, and those reads
 * pay for its size (main_reads_pay_locked(): under MAIN_SIZE_SHARE *
 * @freq times the shard's mean size), or read as often as the count
 * holds. The bytes of a large value read once would hold more hits as
 * small values read as often; a value read ITEM_FREQ_MAX times a turn
 * stays whatever its size, so that hot large values are not cut by the
 * rule.
 */
static bool main_keep_locked(const struct shard *sh, const struct item *it,
			     unsigned int freq)
{
	ak_lock_assert_held(&sh->lock);
	if (freq >= ITEM_FREQ_MAX)
		return true;
	return freq && main_reads_pay_locked(sh, item_alloc_size(it), freq);
}

/*
 * Make room from main: the hand passes the items of small by; an item of
 * main it keeps (main_keep_locked()) loses one of its frequency and is
 * passed by; an unread one is rescued as at small's tail, under the same
 * rule and measure (small_rescue_locked()): a small value seldom gets a
 * read within a turn where the keys written are not those missed
 * (memtier's sets), and rescued from small it went at the hand's first
 * pass; any other is evicted.
 * Return: false when main holds nothing but @keep.
 */
static bool main_evict_locked(struct store *s, struct shard *sh,
			      rel_time_t now, const struct item *keep,
			      struct dead_list *dead)
{
	uint64_t main_items = sh->curr_items - sh->q.small_items;
	struct item *it;

	ak_lock_assert_held(&sh->lock);
	if (keep && !small_has_locked(sh, keep))
		main_items--;
	if (!main_items)
		return false;
	while ((it = shard_hand_item_locked(sh, &sh->hand))) {
		unsigned int freq;
		uint32_t marks;

		shard_hand_step_locked(sh, &sh->hand, it);
		if (it == keep)
			continue;
		if (item_state(s, it, now) != STORE_HIT) {
			shard_reclaim_locked(s, sh, it, dead);
			return true;
		}
		if (small_has_locked(sh, it))
			continue;
		marks = item_marks(it);
		if (unlikely(marks))
			main_mark_seen_locked(sh, it, marks);
		freq = item_freq(it);
		if (main_keep_locked(sh, it, freq)) {
			item_set_freq(it, freq - 1);
			continue;
		}
		if (!freq) {
			size_t size = item_alloc_size(it);

			if (small_rescue_locked(sh, size)) {
				rescue_mark_locked(sh, it, size,
						   ITEM_MARK_RESCUED);
				sh->q.main_rescued++;
				continue;
			}
		}
		if (freq)
			sh->evicted_active++;
		item_evict_locked(s, sh, it, dead);
		return true;
	}
	return false;
}

/*
 * With -M: reclaim a dead item among the next DEAD_SCAN the hand passes
 * (it keeps its place, so calls that find none search on where the last
 * stopped). Return: false when there was none.
 */
static bool dead_reclaim_locked(struct store *s, struct shard *sh,
				rel_time_t now, const struct item *keep,
				struct dead_list *dead)
{
	unsigned int looked;
	struct item *it;

	ak_lock_assert_held(&sh->lock);
	for (looked = 0; looked < DEAD_SCAN &&
	     (it = shard_hand_item_locked(sh, &sh->hand)); looked++) {
		shard_hand_step_locked(sh, &sh->hand, it);
		if (it != keep && item_state(s, it, now) != STORE_HIT) {
			shard_reclaim_locked(s, sh, it, dead);
			return true;
		}
		if (sh->curr_items == 1)
			return false;
	}
	return false;
}

/*
 * Before a live item is evicted, the expiry hand looks at a few items for
 * a dead one (only while the shard has items that may die: doubtful). It
 * looks further each time it finds one and less each time it does not
 * (1 to DEAD_LOOK_MAX items), so a mass expiry is reclaimed at once and
 * TTLs that have not run out cost about one item per eviction.
 * Return: whether it reclaimed one.
 */
static bool dead_look_locked(struct store *s, struct shard *sh,
			     rel_time_t now, struct dead_list *dead)
{
	unsigned int n = sh->dead_look ? sh->dead_look : 1;

	ak_lock_assert_held(&sh->lock);
	if (shard_expire_locked(s, sh, n, now, dead, NULL)) {
		sh->dead_look = n < DEAD_LOOK_MAX ? 2 * n : n;
		return true;
	}
	sh->dead_look = n / 2;
	return false;
}

/*
 * Free one item: from small while it holds QUEUES_SMALL_SHARE of the shard's
 * bytes, else from main; from the other when one has nothing. With @live
 * false only a dead item is taken. @keep (may be NULL) is not evicted:
 * the item a store is replacing.
 * Return: false when there was nothing to take.
 */
static bool shard_evict_one_locked(struct store *s, struct shard *sh,
				   rel_time_t now, bool live,
				   const struct item *keep,
				   struct dead_list *dead)
{
	bool from_small;

	ak_lock_assert_held(&sh->lock);
	if (!live)
		return dead_reclaim_locked(s, sh, now, keep, dead);
	if (sh->doubtful && dead_look_locked(s, sh, now, dead))
		return true;
	from_small = sh->q.small_bytes * QUEUES_SMALL_SHARE >= sh->bytes;
	if (from_small && small_evict_locked(s, sh, now, keep, dead))
		return true;
	if (main_evict_locked(s, sh, now, keep, dead))
		return true;
	return !from_small && small_evict_locked(s, sh, now, keep, dead);
}

/* ---- the queues' memory ---- */

/**
 * mem_grow_queues() - double the small ring or the ghost as the shard grew
 * @s:  the store
 * @sh: the shard
 *
 * The new arrays are allocated unlocked and installed under the lock
 * (queues_install()) when their bytes fit, reserved with
 * mem_charge_locked(), which may evict.
 *
 * Context: no lock held; takes sh->lock.
 */
void mem_grow_queues(struct store *s, struct shard *sh)
{
	struct item **ring = NULL;
	uint16_t *ghost = NULL;
	uint64_t slots, buckets, had_slots, had_buckets;
	size_t add = 0, short_by;
	DEAD_LIST(dead);

	shard_lock(sh);
	had_slots = sh->q.small_mask + 1;
	had_buckets = sh->q.ghost_mask + 1;
	queues_want_sizes(&sh->q, sh->curr_items, &slots, &buckets);
	shard_unlock(sh);
	if (slots == had_slots && buckets == had_buckets)
		return;			/* grown by another store */
	if (slots != had_slots)
		ring = ak_calloc(slots, sizeof(*ring));
	if (buckets != had_buckets)
		ghost = ak_calloc(buckets * QUEUES_GHOST_WAYS, sizeof(*ghost));
	/* what the arrays add to queues_memory(), and to what is charged */
	if (ring)
		add += (slots - had_slots) * sizeof(*ring);
	if (ghost)
		add += (buckets - had_buckets) * QUEUES_GHOST_WAYS *
		       sizeof(*ghost);

	shard_lock(sh);
	if (had_slots != sh->q.small_mask + 1 ||
	    had_buckets != sh->q.ghost_mask + 1)
		goto out_unlock;	/* grown meanwhile */
	if ((slots != had_slots && !ring) ||
	    (buckets != had_buckets && !ghost) ||
	    mem_charge_locked(s, sh, add, false, NULL, store_now(s), &dead,
			      &short_by)) {
		/* no memory (-M, or the allocator): not at every store */
		queues_retry_later(&sh->q,
				   sh->curr_items + sh->curr_items / 4 + 1);
		goto out_unlock;
	}
	/* ring and ghost come back as the old arrays */
	queues_install(&sh->q, &ring, slots, &ghost, buckets);
	sh->index_bytes += add;
out_unlock:
	shard_unlock(sh);
	items_release(&dead);
	ak_free(ring);
	ak_free(ghost);
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
	       shard_held_locked(sh) * 2 * s->cfg.nshards < store_limit(s);
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
	size_t limit = store_limit(s);
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
	uint64_t share = store_limit(s) / s->cfg.nshards;
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
	pthread_mutex_lock(&s->limit_lock);
	used = store_memory_used(s);
	if (limit && s->cfg.no_evict && used > limit && used > s->mem_floor) {
		pthread_mutex_unlock(&s->limit_lock);
		return -ENOSPC;		/* -M: no item is dropped for it */
	}
	WRITE_ONCE(s->cfg.mem_limit, limit);
	store_limit_update_locked(s);
	pthread_mutex_unlock(&s->limit_lock);
	limit = store_limit(s);
	while (limit && (used = store_memory_used(s)) > limit)
		if (!store_evict_others(s, NULL, used - limit))
			break;
	return 0;
}

void store_limit_update_locked(struct store *s)
{
	size_t limit = s->cfg.mem_limit;

	WRITE_ONCE(s->limit, limit && limit < s->mem_floor ? s->mem_floor :
						      limit);
}

size_t store_memory_used(const struct store *s)
{
	return __atomic_load_n(&s->mem_used, __ATOMIC_RELAXED);
}

size_t store_mem_limit(const struct store *s)
{
	return READ_ONCE(s->cfg.mem_limit);
}

size_t store_mem_limit_effective(const struct store *s)
{
	return store_limit(s);
}
