// SPDX-License-Identifier: MIT
/*
 * item.c - the item block, its references, and the key classes.
 *
 * One allocation per item: the header, the expiry, the key, the value, the
 * flags. The header is as long as the key class needs (item_data_offset()):
 * an integer key is indexed by value and carries no hash or tree anchors;
 * the expiry and the flags take room only when they are not 0.
 */
#include "item.h"

#include <string.h>

#include "slab.h"

size_t item_total_size(const char *key, size_t nkey, rel_time_t exptime,
		       uint32_t flags, uint32_t nbytes)
{
	return slab_charge(item_block_size(key_is_integer(key, nkey, NULL),
					   exptime, flags, nkey, nbytes));
}

/* The header of a new block, its expiry and key; the value is the caller's. */
static inline __attribute__((always_inline))
struct item *item_init(const char *key, size_t nkey, uint32_t flags,
		       rel_time_t exptime, bool slot, uint32_t nbytes)
{
	uint64_t ikey = 0;
	bool intkey = key_is_integer(key, nkey, &ikey);
	size_t off = item_data_offset(intkey, slot);
	size_t size = item_block_size(intkey, slot, flags, nkey, nbytes);
	struct item *it = slab_alloc(size);

	if (!it)
		return NULL;
	if (intkey) {
		it->ikey = ikey;
		it->iflags = ITEM_INTKEY;
	} else {
		RB_CLEAR_NODE(&it->rbnode);
		it->iflags = 0;
	}
	it->subtree = 0;
	it->cas = 0;
	it->time = 0;
	it->nbytes = nbytes & ITEM_NBYTES_MAX;
	it->has_flags = flags != 0;
	it->has_exptime = slot;
	it->refcount = 1;
	it->nkey = (uint8_t)nkey;
	if (slot)
		memcpy((char *)it + off - ITEM_EXPTIME_SIZE, &exptime,
		       sizeof(exptime));
	memcpy((char *)it + off, key, nkey);
	if (flags)	/* the block's last bytes: after the value */
		memcpy((char *)it + size - ITEM_FLAGS_SIZE, &flags,
		       sizeof(flags));
	return it;
}

struct item *item_alloc(const char *key, size_t nkey, uint32_t flags,
			rel_time_t exptime, uint32_t nbytes)
{
	return item_init(key, nkey, flags, exptime, exptime != 0, nbytes);
}

struct item *item_copy(const struct item *it, rel_time_t exptime)
{
	uint8_t f = __atomic_load_n(&it->iflags, __ATOMIC_RELAXED);
	struct item *copy;

	copy = item_init(item_key(it), it->nkey, item_flags(it), exptime, true,
			 it->nbytes);
	if (!copy)
		return NULL;
	copy->iflags = f & (uint8_t)~ITEM_LINKED;
	memcpy(item_value(copy), item_value_const(it), it->nbytes);
	return copy;
}

void item_free(struct item *it)
{
	slab_free(it, item_block_size_of(it));
}

void item_put(struct item *it)
{
	if (__atomic_fetch_sub(&it->refcount, 1, __ATOMIC_ACQ_REL) == 1)
		item_free(it);
}

int key_compare(const char *a, size_t na, const char *b, size_t nb)
{
	uint64_t va = 0, vb = 0;
	bool ia = key_is_integer(a, na, &va);
	bool ib = key_is_integer(b, nb, &vb);

	return key_order(ia, va, a, na, ib, vb, b, nb);
}
