// SPDX-License-Identifier: MIT
/*
 * item.c - the item block, its references, and the key classes.
 *
 * One allocation per item: the header, the key, the value, the flags. The
 * header is as long as the key class needs (item_data_offset()): an
 * integer key is indexed by value and carries no hash or tree anchors.
 */
#include "item.h"

#include <string.h>

#include "slab.h"

size_t item_total_size(const char *key, size_t nkey, uint32_t flags,
		       uint32_t nbytes)
{
	return slab_charge(item_block_size(key_is_integer(key, nkey, NULL),
					    flags, nkey, nbytes));
}

struct item *item_alloc(const char *key, size_t nkey, uint32_t flags,
			rel_time_t exptime, uint32_t nbytes)
{
	struct item *it;
	uint64_t ikey;
	bool intkey = key_is_integer(key, nkey, &ikey);

	it = slab_alloc(item_block_size(intkey, flags, nkey, nbytes));
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
	it->exptime = exptime;
	it->nbytes = nbytes & ITEM_NBYTES_MAX;
	it->has_flags = flags != 0;
	it->refcount = 1;
	it->nkey = (uint8_t)nkey;
	/* the time, right before the key (item_tail()) */
	memset((char *)it + item_data_offset(intkey) - sizeof(rel_time_t), 0,
	       sizeof(rel_time_t));
	memcpy((char *)it + item_data_offset(intkey), key, nkey);
	if (flags)	/* the block's last bytes: after the value */
		memcpy((char *)it + item_block_size(intkey, flags, nkey,
						    nbytes) - ITEM_FLAGS_SIZE,
		       &flags, sizeof(flags));
	return it;
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
