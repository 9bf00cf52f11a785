// SPDX-License-Identifier: MIT
/*
 * queues.c - S3-FIFO's small ring and ghost (see queues.h): the window's
 * slide, the ghost's fingerprints, the sizes they grow to.
 */
#include "queues.h"

#include <errno.h>

#include "alloc.h"

#define SMALL_MAX_SLOTS		(1ull << 28)
#define SMALL_ITEMS_PER_SLOT	8	/* grow the ring above this */
#define GHOST_MAX_BUCKETS	(1ull << 28)

/* ---- the small queue ---- */

void queues_small_slide(struct queues *q, uint64_t seq_last, uint64_t bytes)
{
	while (seq_last - q->small_tail > q->small_mask) {
		struct item *it;

		if (!q->small_items) {
			q->small_tail = seq_last - q->small_mask;
			return;
		}
		it = q->small[q->small_tail & q->small_mask];
		if (it) {
			queues_small_forget(q, it, item_alloc_size(it));
			item_set_marks(it, 0);	/* ITEM_MARK_RETURNED */
			q->small_aged++;
			if (q->small_bytes * QUEUES_SMALL_SHARE < bytes)
				q->grow = true;
		}
		q->small_tail++;
	}
}

/* ---- the ghost ---- */

uint64_t queues_ghost_hash(bool isint, uint64_t ikey, uint32_t hash)
{
	uint64_t h = isint ? ikey : ((uint64_t)hash << 32 | 0x5bd1e995u);

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

uint64_t queues_item_ghost_hash(const struct item *it)
{
	if (READ_ONCE(it->iflags) & ITEM_INTKEY)
		return queues_ghost_hash(true, it->ikey, 0);
	return queues_ghost_hash(false, 0, (uint32_t)(item_key_hash(
			item_key(it), it->nkey) >> 32));
}

#define GHOST_RETURNED	0x8000u	/* of an entry: returned before */

/* The bucket of @h and its 15-bit fingerprint, never 0 (0 marks a free
 * way). */
static uint16_t *ghost_bucket(const struct queues *q, uint64_t h,
			      uint16_t *fp)
{
	*fp = (uint16_t)(h >> 49) ? (uint16_t)(h >> 49) : 1;
	return &q->ghost[(h & q->ghost_mask) * QUEUES_GHOST_WAYS];
}

void queues_ghost_add(struct queues *q, uint64_t h, bool returned)
{
	uint16_t fp, *b = ghost_bucket(q, h, &fp);
	unsigned int w;

	if (returned)
		fp |= GHOST_RETURNED;
	for (w = 0; w < QUEUES_GHOST_WAYS; w++) {
		if (!b[w]) {
			b[w] = fp;
			q->ghost_entries++;
			return;
		}
	}
	b[q->ghost_way++ % QUEUES_GHOST_WAYS] = fp;
}

unsigned int queues_ghost_take(struct queues *q, uint64_t h)
{
	uint16_t fp, *b = ghost_bucket(q, h, &fp);
	unsigned int w;

	for (w = 0; w < QUEUES_GHOST_WAYS; w++) {
		if ((b[w] & ~GHOST_RETURNED) == fp) {
			bool again = b[w] & GHOST_RETURNED;

			b[w] = 0;
			q->ghost_entries--;
			q->ghost_hits++;
			return again ? QUEUES_GHOST_AGAIN : QUEUES_GHOST_ONCE;
		}
	}
	return 0;
}

/* ---- their sizes ---- */

/*
 * The item count up to which neither the ring nor the ghost asks to grow
 * (queues_want_sizes()): a store checks no more than that until then.
 */
static void check_at_set(struct queues *q)
{
	uint64_t ring = SMALL_ITEMS_PER_SLOT * (q->small_mask + 1);
	uint64_t ghost = (q->ghost_mask + 1) * QUEUES_GHOST_WAYS * 3 / 2;

	q->check_at = ring < ghost ? ring : ghost;
}

int queues_init(struct queues *q, unsigned int ring_bits,
		unsigned int seq_shift)
{
	uint64_t slots = (uint64_t)1 << ring_bits;
	uint64_t buckets = slots * 2 / QUEUES_GHOST_WAYS;

	if (slots < QUEUES_MIN_SLOTS)
		slots = QUEUES_MIN_SLOTS;
	if (buckets < QUEUES_MIN_BUCKETS)
		buckets = QUEUES_MIN_BUCKETS;
	q->small = ak_calloc(slots, sizeof(*q->small));
	q->ghost = ak_calloc(buckets * QUEUES_GHOST_WAYS, sizeof(*q->ghost));
	if (!q->small || !q->ghost) {
		queues_destroy(q);
		return -ENOMEM;
	}
	q->small_mask = slots - 1;
	q->ghost_mask = buckets - 1;
	q->seq_shift = seq_shift;
	check_at_set(q);
	return 0;
}

void queues_destroy(struct queues *q)
{
	ak_free(q->small);
	ak_free(q->ghost);
	q->small = NULL;
	q->ghost = NULL;
}

void queues_want_sizes(const struct queues *q, uint64_t items,
		       uint64_t *slots, uint64_t *buckets)
{
	*slots = q->small_mask + 1;
	*buckets = q->ghost_mask + 1;
	if ((items > SMALL_ITEMS_PER_SLOT * *slots || q->grow) &&
	    *slots < SMALL_MAX_SLOTS)
		*slots *= 2;
	/*
	 * About one fingerprint per item: grow at 1.5, once the shard has
	 * evicted (a store that only grows never reads its ghost)
	 */
	if (q->ghost_entries &&
	    items * 2 > *buckets * QUEUES_GHOST_WAYS * 3 &&
	    *buckets < GHOST_MAX_BUCKETS)
		*buckets *= 2;
}

bool queues_resize_wanted(const struct queues *q, uint64_t items)
{
	uint64_t slots, buckets;

	queues_want_sizes(q, items, &slots, &buckets);
	return slots != q->small_mask + 1 || buckets != q->ghost_mask + 1;
}

void queues_install(struct queues *q, struct item ***ring, uint64_t slots,
		    uint16_t **ghost, uint64_t buckets)
{
	struct item **old_ring = q->small;
	uint16_t *old_ghost = q->ghost;
	uint64_t i;

	if (*ring) {
		for (i = 0; i <= q->small_mask; i++) {
			struct item *it = old_ring[i];

			if (it)
				(*ring)[(it->cas >> q->seq_shift) &
					(slots - 1)] = it;
		}
		q->small = *ring;
		q->small_mask = slots - 1;
		q->grow = false;
		*ring = old_ring;
	}
	if (*ghost) {
		q->ghost = *ghost;
		q->ghost_mask = buckets - 1;
		q->ghost_entries = 0;
		*ghost = old_ghost;
	}
	check_at_set(q);
}
