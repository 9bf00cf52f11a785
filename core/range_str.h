/* SPDX-License-Identifier: MIT */
/*
 * range_str.h - the string part of a range, walked or counted over the
 * partitions (range_str.c); private to the ordered walks.
 */
#ifndef ANCHORKV_RANGE_STR_H
#define ANCHORKV_RANGE_STR_H

#include "span.h"

/**
 * range_str_walk() - visit the string part of a span in keyspace order
 * @w: the walk (walk_init()): its span is narrowed as the walk goes, so
 *     that a walk its visitor stopped resumes where it stopped; the
 *     visitor is called on each live item in range, under its
 *     partition's lock, and false stops the walk
 *
 * SLICE_ITEMS entries per partition lock hold. The walk counts itself in
 * parts.readers, so no map it reads is freed under it
 * (parts_free_unread_locked()); when
 * the map changes between two slices (a split), it finds its place again
 * in the new one from where the span resumes.
 *
 * Context: no lock held; takes partition and shard locks in turn.
 */
void range_str_walk(struct walk *w);

/**
 * range_str_count_ranked() - count a span's string items from the
 * partitions' counts
 * @s:  the store
 * @sp: the span
 * @n:  out: the count
 *
 * The whole count of each partition inside the span, and in the two at
 * its ends the difference of two ranks (subtree sizes are kept modulo
 * 2^16, so the difference is exact while the partition holds fewer
 * items). Only right while every linked item is live (no doubtful item
 * anywhere: the caller checks).
 *
 * Context: no lock held; takes partition locks in turn.
 * Return: false when it cannot say (a partition too large, or a split
 * under way); *@n is then unchanged and the caller walks.
 */
bool range_str_count_ranked(struct store *s, const struct span *sp,
			    uint64_t *n);

/**
 * range_str_drop_held() - deal with an item a walk met, under its shard lock
 * @s:   the store
 * @it:  the item; the caller holds a reference (taken under a partition
 *       lock) and keeps it
 * @del: unlink it when live (delete_range)
 *
 * If it is still linked: reclaimed when dead, unlinked when live and
 * @del.
 *
 * Context: no lock held; takes the item's shard lock.
 * Return: whether a live item went.
 */
bool range_str_drop_held(struct store *s, struct item *it, bool del);

#endif /* ANCHORKV_RANGE_STR_H */
