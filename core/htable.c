// SPDX-License-Identifier: MIT
/*
 * htable.c - an open-addressing array of tagged pointers that grows one old
 * slot at a time (see htable.h).
 *
 * Invariants, with S = 2^bits and mask S - 1:
 *  - an entry of home slot h lies in slot (h + d) & mask, d < 2^16, and
 *    every slot from h up to it holds an entry (linear probing); its
 *    word's top 16 bits are h's low 16 bits;
 *  - the array has an empty slot (count < S - 1), so a probe ends;
 *  - growing (old != NULL, 2^(bits - 1) slots): old slots below
 *    rehash_pos are empty, their entries having moved to the array; an
 *    entry of an old slot at or above it has not moved. The old array
 *    only loses entries: a delete writes HTABLE_GONE, a move 0. Probing
 *    it from a home below rehash_pos starts at rehash_pos, and wrapping
 *    past its end goes on at rehash_pos: the slots between an entry's
 *    home and the entry that are at or above rehash_pos still hold
 *    entries or marks.
 */
#include "htable.h"

#include <assert.h>
#include <errno.h>

#include "alloc.h"

uint64_t *htable_slots_alloc(unsigned int bits)
{
	if (bits < HTABLE_MIN_BITS || bits > HTABLE_MAX_BITS)
		return NULL;
	/* an all-zero word is an empty slot */
	return ak_calloc(htable_size(bits), sizeof(uint64_t));
}

void htable_init(struct htable *ht, uint64_t *slots, unsigned int bits)
{
	assert(bits >= HTABLE_MIN_BITS && bits <= HTABLE_MAX_BITS);
	ht->slots = slots;
	ht->old = NULL;
	ht->bits = bits;
	ht->rehash_pos = 0;
	ht->count = 0;
}

void htable_destroy(struct htable *ht)
{
	ak_free(ht->slots);
	ak_free(ht->old);
	ht->slots = NULL;
	ht->old = NULL;
	ht->rehash_pos = 0;
	ht->count = 0;
}

/* The old array's slot after @i, passing over those that have moved. */
static inline uint64_t old_next(const struct htable *ht, uint64_t i)
{
	i = (i + 1) & (htable_size(ht->bits - 1) - 1);
	return i < ht->rehash_pos ? ht->rehash_pos : i;
}

void *htable_next_old(const struct htable *ht, struct htable_probe *p)
{
	uint64_t w;

	if (!p->in_old) {
		p->in_old = true;
		p->arr = ht->old;
		p->i = htable_home(p->hv, ht->bits - 1);
		if (p->i < ht->rehash_pos)
			p->i = ht->rehash_pos;
		p->left = htable_size(ht->bits - 1) - ht->rehash_pos;
	}
	while (p->left && (w = p->arr[p->i]) != 0) {
		p->left--;
		p->i = old_next(ht, p->i);
		if (htable_used(w) && (w & ~HTABLE_PTR_MASK) == p->tag)
			return htable_ptr(w);
	}
	p->left = 0;
	return NULL;
}

/* The slot of @ptr in the array, or -1. */
static int64_t slot_find(const struct htable *ht, const void *ptr,
			 uint64_t hv)
{
	uint64_t mask = htable_size(ht->bits) - 1;
	uint64_t i = htable_home(hv, ht->bits), w;

	while ((w = ht->slots[i]) != 0) {
		if (htable_ptr(w) == ptr)
			return (int64_t)i;
		i = (i + 1) & mask;
	}
	return -1;
}

/* The slot of @ptr in the old array, or -1. */
static int64_t old_find(const struct htable *ht, const void *ptr, uint64_t hv)
{
	uint64_t i = htable_home(hv, ht->bits - 1), w, left;

	if (i < ht->rehash_pos)
		i = ht->rehash_pos;
	left = htable_size(ht->bits - 1) - ht->rehash_pos;
	while (left-- && (w = ht->old[i]) != 0) {
		if (htable_used(w) && htable_ptr(w) == ptr)
			return (int64_t)i;
		i = old_next(ht, i);
	}
	return -1;
}

/*
 * Empty slot @hole of the array, moving back the entries after it that
 * may lie there (Knuth's algorithm R): one whose home is not in the
 * slots after the hole up to itself.
 */
static void slot_remove(struct htable *ht, uint64_t hole)
{
	uint64_t mask = htable_size(ht->bits) - 1;
	uint64_t j = hole, w, home;

	for (;;) {
		j = (j + 1) & mask;
		w = ht->slots[j];
		if (!w)
			break;
		home = htable_word_home(w, j, ht->bits);
		if (((j - home) & mask) >= ((j - hole) & mask)) {
			ht->slots[hole] = w;
			hole = j;
		}
	}
	ht->slots[hole] = 0;
}

uint64_t htable_del(struct htable *ht, const void *ptr, uint64_t hv)
{
	int64_t i = slot_find(ht, ptr, hv);

	assert(ht->count > 0);
	ht->count--;
	if (i >= 0) {
		slot_remove(ht, (uint64_t)i);
		return (uint64_t)i + (ht->old ? htable_size(ht->bits - 1) : 0);
	}
	assert(ht->old);
	i = old_find(ht, ptr, hv);
	assert(i >= 0);
	ht->old[i] = HTABLE_GONE;
	return (uint64_t)i;
}

void htable_replace(struct htable *ht, const void *old, const void *new,
		    uint64_t hv)
{
	int64_t i = slot_find(ht, old, hv);
	uint64_t *arr = ht->slots;

	assert(!((uintptr_t)new & ~HTABLE_PTR_MASK));
	if (i < 0) {
		assert(ht->old);
		i = old_find(ht, old, hv);
		arr = ht->old;
	}
	assert(i >= 0);
	arr[i] = (arr[i] & ~HTABLE_PTR_MASK) | (uintptr_t)new;
}

int htable_grow_start(struct htable *ht, uint64_t *slots)
{
	if (ht->old)
		return -EBUSY;
	assert(slots && ht->bits < HTABLE_MAX_BITS);
	assert(ak_usable_size(slots) >=
	       htable_size(ht->bits + 1) * sizeof(uint64_t));
	ht->old = ht->slots;
	ht->slots = slots;
	ht->bits++;
	ht->rehash_pos = 0;
	return 0;
}

uint64_t *htable_rehash_advance(struct htable *ht, uint64_t hv)
{
	uint64_t mask = htable_size(ht->bits) - 1, i, w, *old;

	assert(ht->old);
	w = ht->old[ht->rehash_pos];
	if (htable_used(w)) {
		i = htable_home(hv, ht->bits);
		while (ht->slots[i])
			i = (i + 1) & mask;
		assert(((i - htable_home(hv, ht->bits)) & mask) <= 0xffff);
		ht->slots[i] = htable_tag(hv) | (w & HTABLE_PTR_MASK);
	}
	ht->old[ht->rehash_pos] = 0;
	if (++ht->rehash_pos < htable_size(ht->bits - 1))
		return NULL;

	old = ht->old;
	ht->old = NULL;
	ht->rehash_pos = 0;
	return old;
}

size_t htable_memory(const struct htable *ht)
{
	size_t bytes = 0;

	if (ht->slots)
		bytes += ak_usable_size(ht->slots);
	if (ht->old)
		bytes += ak_usable_size(ht->old);
	return bytes;
}

unsigned int htable_max_probe(const struct htable *ht)
{
	uint64_t size = htable_size(ht->bits), i, w, d, max = 0;

	if (!ht->slots)
		return 0;
	for (i = 0; i < size; i++) {
		w = ht->slots[i];
		if (!w)
			continue;
		d = (i - htable_word_home(w, i, ht->bits)) & (size - 1);
		if (d + 1 > max)
			max = d + 1;
	}
	if (!ht->old)
		return (unsigned int)max;
	/* the old array: counted as a probe of it (marks included) */
	size /= 2;
	for (i = ht->rehash_pos; i < size; i++) {
		w = ht->old[i];
		if (!htable_used(w))
			continue;
		d = (i - htable_word_home(w, i, ht->bits - 1)) & (size - 1);
		if (d + 1 > max)
			max = d + 1;
	}
	return (unsigned int)max;
}
