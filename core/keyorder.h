/* SPDX-License-Identifier: MIT */
/*
 * keyorder.h - which keys are integer keys, and the keyspace order.
 *
 * An integer key is a canonical unsigned 64-bit decimal; keyspace order
 * (what ranges walk and what anchorkv-cli merges the servers' answers
 * in) is every integer key by value, then every other key bytewise. The
 * store (core/item.h includes this) and anchorkv-cli (tools/cli) share
 * these definitions; nothing here depends on the rest of core/.
 *
 * Synchronization: pure functions.
 */
#ifndef ANCHORKV_KEYORDER_H
#define ANCHORKV_KEYORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "compiler.h"

/**
 * key_is_integer() - whether a key is a canonical unsigned 64-bit decimal
 * @key:   the bytes
 * @nkey:  their number
 * @value: receives the value when true (may be NULL)
 *
 * Canonical: 1 to 20 digits, no sign, no leading zero (except "0" itself),
 * value <= 18446744073709551615.
 *
 * Context: any.
 * Return: true for integer keys.
 */
static inline bool key_is_integer(const char *key, size_t nkey,
				  uint64_t *value)
{
	uint64_t v = 0;
	unsigned int d;
	size_t i, n;

	if (nkey == 0 || nkey > 20)
		return false;
	if (key[0] == '0' && nkey > 1)
		return false;
	/* 19 digits always fit; the 20th may not, and is checked after */
	n = nkey < 20 ? nkey : 19;
	for (i = 0; i < n; i++) {
		d = (unsigned int)((unsigned char)key[i] - '0');
		if (d > 9)
			return false;
		v = v * 10 + d;
	}
	if (unlikely(nkey == 20)) {
		d = (unsigned int)((unsigned char)key[19] - '0');
		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (value)
		*value = v;
	return true;
}

/**
 * key_bytes_cmp() - bytewise order of two keys, a prefix first
 * @a, @na: first key
 * @b, @nb: second key
 *
 * Context: any.
 * Return: <0, 0 or >0.
 */
static inline int key_bytes_cmp(const char *a, size_t na, const char *b,
				size_t nb)
{
	size_t n = na < nb ? na : nb;
	int c = n ? memcmp(a, b, n) : 0;

	if (c)
		return c;
	return na < nb ? -1 : na > nb;
}

/**
 * key_order() - keyspace order of two keys already classified
 * @ia, @va, @a, @na: whether the first key is an integer key, its value
 *                    (when it is), its bytes
 * @ib, @vb, @b, @nb: the same of the second
 *
 * Every integer key, in numeric order, then every other key by
 * key_bytes_cmp(). key_compare() classifies and calls this; the store's
 * item_cmp() passes what its items record.
 *
 * Context: any.
 * Return: <0, 0 or >0.
 */
static inline int key_order(bool ia, uint64_t va, const char *a, size_t na,
			    bool ib, uint64_t vb, const char *b, size_t nb)
{
	if (ia != ib)
		return ia ? -1 : 1;
	if (ia)
		return va < vb ? -1 : va > vb;
	return key_bytes_cmp(a, na, b, nb);
}

#endif /* ANCHORKV_KEYORDER_H */
