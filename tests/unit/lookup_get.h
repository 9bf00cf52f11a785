/* SPDX-License-Identifier: MIT */
/*
 * lookup_get.h - a plain get for the tests and the core bench: what a
 * "get <key>" asks of store_lookup(). The store exports no such helper:
 * nothing but the tests used it.
 */
#ifndef ANCHORKV_TESTS_LOOKUP_GET_H
#define ANCHORKV_TESTS_LOOKUP_GET_H

#include "store.h"

/*
 * Look @key up as a get does. @why receives the hit or miss reason (may
 * be NULL). Return: the item with a reference for the caller, or NULL.
 */
static inline struct item *lookup_get(struct store *s, const char *key,
				      size_t nkey, enum store_miss *why)
{
	struct store_req req = { .key = key, .nkey = nkey };
	struct store_res res;
	struct item *it = store_lookup(s, &req, &res);

	if (why)
		*why = res.why;
	return it;
}

#endif /* ANCHORKV_TESTS_LOOKUP_GET_H */
