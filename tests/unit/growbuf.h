/* SPDX-License-Identifier: MIT */
/*
 * growbuf.h - a growable byte buffer for test harnesses (the protocol unit
 * test and the protocol fuzz target collect what the engine writes in it).
 *
 * Allocation failure aborts: a harness has no way on without its buffer.
 */
#ifndef ANCHORKV_GROWBUF_H
#define ANCHORKV_GROWBUF_H

#include <stdlib.h>
#include <string.h>

struct growbuf {
	char *p;
	size_t len, cap;
};

static inline void growbuf_add(struct growbuf *b, const void *p, size_t len)
{
	if (!len)
		return;
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;

		while (cap < b->len + len)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (!b->p)
			abort();
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, len);
	b->len += len;
}

#endif /* ANCHORKV_GROWBUF_H */
