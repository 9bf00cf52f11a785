// SPDX-License-Identifier: MIT
/*
 * htable.c - a power-of-two array of slist buckets that grows one old bucket
 * at a time.
 *
 * Invariants, with S = 2^bits:
 *  - not rehashing (next == NULL, rehash_pos == 0): an entry of hash h is in
 *    buckets[h & (S - 1)].
 *  - rehashing (next holds 2S buckets): old buckets [0, rehash_pos) are
 *    empty, their entries having moved to next[h & (2S - 1)]; an entry whose
 *    old index h & (S - 1) is >= rehash_pos is still in buckets[h & (S - 1)].
 * Old bucket i splits into new buckets i and i + S, so moving it never
 * touches another old bucket.
 */
#include "htable.h"

#include <assert.h>
#include <errno.h>

#include "alloc.h"

struct slist_head *htable_buckets_alloc(unsigned int bits)
{
	if (bits < HTABLE_MIN_BITS || bits > HTABLE_MAX_BITS)
		return NULL;
	/* An all-zero slist_head is an empty bucket. */
	return ak_calloc(htable_size(bits), sizeof(struct slist_head));
}

void htable_init(struct htable *ht, struct slist_head *buckets, unsigned int bits)
{
	assert(bits >= HTABLE_MIN_BITS && bits <= HTABLE_MAX_BITS);
	ht->buckets = buckets;
	ht->next = NULL;
	ht->bits = bits;
	ht->rehash_pos = 0;
	ht->count = 0;
}

void htable_destroy(struct htable *ht)
{
	ak_free(ht->buckets);
	ak_free(ht->next);
	ht->buckets = NULL;
	ht->next = NULL;
	ht->rehash_pos = 0;
	ht->count = 0;
}

struct slist_head *htable_new_bucket(const struct htable *ht, uint64_t hash)
{
	assert(ht->next);
	return &ht->next[hash & (htable_size(ht->bits + 1) - 1)];
}

int htable_grow_start(struct htable *ht, struct slist_head *buckets)
{
	if (ht->next)
		return -EBUSY;
	assert(buckets && ht->bits < HTABLE_MAX_BITS);
	assert(ak_usable_size(buckets) >=
	       htable_size(ht->bits + 1) * sizeof(struct slist_head));
	ht->next = buckets;
	ht->rehash_pos = 0;
	return 0;
}

struct slist_head *htable_rehash_advance(struct htable *ht)
{
	struct slist_head *old;

	if (!ht->next)
		return NULL;
	/* Moving on from a non-empty bucket would lose its entries. */
	assert(slist_empty(&ht->buckets[ht->rehash_pos]));
	if (++ht->rehash_pos < htable_size(ht->bits))
		return NULL;

	old = ht->buckets;
	ht->buckets = ht->next;
	ht->next = NULL;
	ht->bits++;
	ht->rehash_pos = 0;
	return old;
}

size_t htable_memory(const struct htable *ht)
{
	size_t bytes = 0;

	if (ht->buckets)
		bytes += ak_usable_size(ht->buckets);
	if (ht->next)
		bytes += ak_usable_size(ht->next);
	return bytes;
}

static unsigned int htable_chain_len(const struct slist_head *b)
{
	const struct slist_node *n;
	unsigned int len = 0;

	slist_for_each(n, b)
		len++;
	return len;
}

unsigned int htable_max_chain(const struct htable *ht)
{
	uint64_t size = htable_size(ht->bits);
	unsigned int len, max = 0;
	uint64_t i;

	if (!ht->buckets)
		return 0;
	for (i = ht->rehash_pos; i < size; i++) {
		len = htable_chain_len(&ht->buckets[i]);
		if (len > max)
			max = len;
	}
	if (!ht->next)
		return max;
	for (i = 0; i < 2 * size; i++) {
		len = htable_chain_len(&ht->next[i]);
		if (len > max)
			max = len;
	}
	return max;
}
