/* SPDX-License-Identifier: MIT */
/*
 * queues.h - S3-FIFO's small queue and ghost, one shard's (evict.c has
 * the policy: what is evicted, when, and the memory they take).
 *
 * The small queue is a window over the shard's cas sequence: an item in
 * it sits at small[seq & small_mask], seq its cas's (cas >> seq_shift),
 * small_tail <= seq <= the shard's last sequence number, which is at most
 * small_mask past seq; a slot holds no other item. So an item costs no
 * byte for it, the ring's order is the stores' order, and an item leaves
 * its slot in O(1). The main queue is every other linked item, in the
 * order the eviction hand walks the indexes (shard.c). The ghost
 * remembers the keys evicted from small: QUEUES_GHOST_WAYS 16-bit
 * entries per bucket (a 15-bit fingerprint and whether the key had
 * returned from the ghost before), 0 for none, about as many as the shard
 * holds items; a new key found there goes straight to main (but for
 * large values on their first return: queues_link_locked() in shard.h).
 *
 * Below shard.h: a shard embeds a struct queues, and nothing here knows
 * the shard, the store or their locks.
 *
 * Synchronization: the caller holds the lock that guards @q (the lock
 * of the shard that embeds it) for every function but queues_init() and
 * queues_destroy() (exclusive use).
 */
#ifndef ANCHORKV_QUEUES_H
#define ANCHORKV_QUEUES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "item.h"

#define QUEUES_GHOST_WAYS	8
#define QUEUES_MIN_SLOTS	64	/* the ring's first size, at least */
#define QUEUES_MIN_BUCKETS	8	/* the ghost's, of QUEUES_GHOST_WAYS */
#define QUEUES_GHOST_ONCE	1	/* queues_ghost_take(): remembered */
#define QUEUES_GHOST_AGAIN	2	/* remembered, returned before */
#define QUEUES_SMALL_SHARE	10	/* small holds 1/SMALL_SHARE of the
					 * shard's bytes */

struct queues {
	struct item **small;
	uint64_t small_mask;		/* slots - 1 */
	uint64_t small_tail;
	uint64_t small_items;
	uint64_t small_bytes;		/* their item_alloc_size() */
	uint16_t *ghost;
	uint64_t ghost_mask;		/* buckets - 1 */
	uint64_t ghost_entries;
	unsigned int ghost_way;		/* the way a full bucket loses next */
	unsigned int seq_shift;		/* cas >> seq_shift: the sequence */
	bool grow;			/* the window was too short for small */
	uint64_t check_at;		/* items up to which the ring and the
					 * ghost need not grow */
	uint64_t retry_at;		/* items before a failed growth tries
					 * again */
	uint64_t ghost_hits;		/* new keys found in the ghost */
	uint64_t ghost_small;		/* of those, large values sent back to
					 * small (queues_link_locked()) */
	uint64_t moved_main;		/* small -> main: read while in small */
	uint64_t small_aged;		/* small -> main: pushed out of the window */
	uint64_t rescued;		/* small -> main: unread, kept for its
					 * size (evict.c) */
	uint64_t main_rescued;		/* main's hand passed an unread item
					 * by for its size (evict.c) */
	/* what a rescue is worth (evict.c, small_rescue_locked()): the bytes
	 * of the marked items that entered main unread and rescued, or read,
	 * and how many of them were read there before the hand came */
	uint64_t rescue_bytes, rescue_hits;
	uint64_t probe_bytes, probe_hits;
	uint64_t rescue_tries;		/* rescues refused, counted */
};

/**
 * queues_init() - the first small ring and ghost
 * @q:         unused queues
 * @ring_bits: log2 of the ring's slots, the ghost twice as many
 *             fingerprints (0, or below the minimums: the minimums, 64
 *             slots and 64 fingerprints)
 * @seq_shift: how far a cas is shifted to give its sequence number
 *
 * They grow with the items the shard holds (queues_want_sizes()), so
 * a store starts them at the least, and a limit held by a few large items
 * loses none to them: they are counted in it.
 *
 * Context: start-up; allocates. The caller counts queues_memory().
 * Return: 0, or -ENOMEM (nothing held).
 */
int queues_init(struct queues *q, unsigned int ring_bits,
		unsigned int seq_shift);

/* queues_destroy() - free the ring and the ghost. Context: exclusive. */
void queues_destroy(struct queues *q);

/* The bytes of the ring and the ghost. */
static inline uint64_t queues_memory(const struct queues *q)
{
	return (q->small_mask + 1) * sizeof(struct item *) +
	       (q->ghost_mask + 1) * QUEUES_GHOST_WAYS * sizeof(uint16_t);
}

/*
 * Of queues_memory(), what the memory limit counts: all but the least
 * ring and ghost (640 bytes), which a shard has from its start whatever
 * it holds, as it has its first hash array (outside the limit, as
 * memcached's hash table is outside its -m). What they grow to for the
 * items is counted: at a limit that a few large items fill to the byte,
 * the shards' first arrays took the last item (119 values of 100,000
 * bytes at -m 12, where memcached holds 120).
 */
static inline uint64_t queues_memory_charged(const struct queues *q)
{
	return queues_memory(q) -
	       (QUEUES_MIN_SLOTS * sizeof(struct item *) +
		QUEUES_MIN_BUCKETS * QUEUES_GHOST_WAYS * sizeof(uint16_t));
}

/* The slot of the small queue that holds @it if it is there. */
static inline struct item **queues_slot(const struct queues *q,
					const struct item *it)
{
	return &q->small[(READ_ONCE(it->cas) >> q->seq_shift) &
			 q->small_mask];
}

/* Whether @it is in the small queue (else, linked, in the main one). */
static inline bool queues_small_has(const struct queues *q,
				    const struct item *it)
{
	return *queues_slot(q, it) == it;
}

/*
 * Take @it (of @size bytes, item_alloc_size()) out of the small queue if
 * it is there: it leaves the store, or moves to the main queue.
 * Return: whether it was.
 */
static inline bool queues_small_forget(struct queues *q,
				       const struct item *it, size_t size)
{
	struct item **slot = queues_slot(q, it);

	if (*slot != it)
		return false;
	*slot = NULL;
	q->small_items--;
	q->small_bytes -= size;
	return true;
}

/**
 * queues_small_slide() - slide the window up to @seq_last
 * @q:        the queues
 * @seq_last: the shard's last sequence number
 * @bytes:    the shard's item bytes
 *
 * An item whose sequence number falls out of the window (the ring is too
 * short for the small queue: grown at the next store) moves to main as it
 * is. The slow path of queues_small_add().
 */
void queues_small_slide(struct queues *q, uint64_t seq_last, uint64_t bytes);

/**
 * queues_small_add() - put @it at the head of small
 * @q:        the queues
 * @it:       a newly linked item whose cas is the shard's latest
 * @size:     its item_alloc_size()
 * @seq_last: the shard's last sequence number (@it's)
 * @bytes:    the shard's item bytes
 *
 * At the slot of its cas's sequence number, when that is in the window and
 * free. Inline: every store takes it; the window slides one slot a store,
 * inline when that slot is free.
 *
 * Return: whether it went there (else it is in main).
 */
static inline bool queues_small_add(struct queues *q, struct item *it,
				    size_t size, uint64_t seq_last,
				    uint64_t bytes)
{
	uint64_t seq = it->cas >> q->seq_shift;
	struct item **slot;

	if (seq_last - q->small_tail > q->small_mask) {
		if (seq_last - q->small_tail == q->small_mask + 1 &&
		    !q->small[q->small_tail & q->small_mask] &&
		    q->small_items)
			q->small_tail++;
		else
			queues_small_slide(q, seq_last, bytes);
	}
	slot = queues_slot(q, it);
	if (seq < q->small_tail || *slot)
		return false;
	*slot = it;
	q->small_items++;
	q->small_bytes += size;
	return true;
}

/**
 * queues_small_tail() - the item at small's tail
 * @q: queues whose small queue is not empty
 *
 * Empty slots at the tail (items that left) are passed.
 *
 * Return: the oldest item of small.
 */
static inline struct item *queues_small_tail(struct queues *q)
{
	struct item *it;

	while (!(it = q->small[q->small_tail & q->small_mask]))
		q->small_tail++;
	return it;
}

/* What the ghost files a key under: its ikey or its 32-bit hash, mixed. */
uint64_t queues_ghost_hash(bool isint, uint64_t ikey, uint32_t hash);

/* queues_ghost_hash() of @it's key. */
uint64_t queues_item_ghost_hash(const struct item *it);

/* Remember a key evicted from small (@h: queues_ghost_hash()), and
 * whether it had @returned from the ghost before; a full bucket loses one
 * way. */
void queues_ghost_add(struct queues *q, uint64_t h, bool returned);

/*
 * Whether the ghost remembers @h; it leaves the ghost if so.
 * Return: 0 if not, QUEUES_GHOST_ONCE, or QUEUES_GHOST_AGAIN when it was
 * remembered as having returned before (queues_ghost_add()).
 */
unsigned int queues_ghost_take(struct queues *q, uint64_t h);

/**
 * queues_want_sizes() - the ring and ghost sizes @items ask for
 * @q:       the queues
 * @items:   the shard's items
 * @slots:   receives the ring's slots (at least today's)
 * @buckets: receives the ghost's buckets (at least today's)
 */
void queues_want_sizes(const struct queues *q, uint64_t items,
		       uint64_t *slots, uint64_t *buckets);

/* Whether queues_want_sizes() asks for more than there is. */
bool queues_resize_wanted(const struct queues *q, uint64_t items);

/**
 * queues_want_grow() - whether a store should grow the ring or the ghost
 * @q:     the queues
 * @items: the shard's items
 *
 * Inline: a store looks only at two counts until the shard has grown.
 *
 * Return: whether queues_want_sizes() asks for more.
 */
static inline bool queues_want_grow(const struct queues *q, uint64_t items)
{
	if (likely(items < q->retry_at || (!q->grow && items <= q->check_at)))
		return false;
	return queues_resize_wanted(q, items);
}

/**
 * queues_install() - take a larger ring or ghost
 * @q:       the queues
 * @ring:    2^k slots larger than today's, zeroed, or NULL
 * @slots:   its slots
 * @ghost:   a zeroed ghost larger than today's, or NULL
 * @buckets: its buckets
 *
 * The ring's items move to their slots in the larger ring; the ghost
 * starts empty (a fingerprint does not keep the hash bits that would say
 * which of two new buckets is its). The old arrays come back in @ring and
 * @ghost for the caller to free after its lock.
 */
void queues_install(struct queues *q, struct item ***ring, uint64_t slots,
		    uint16_t **ghost, uint64_t buckets);

/* A growth could not be had: do not try again before @items. */
static inline void queues_retry_later(struct queues *q, uint64_t items)
{
	q->retry_at = items;
	q->grow = false;
}

#endif /* ANCHORKV_QUEUES_H */
