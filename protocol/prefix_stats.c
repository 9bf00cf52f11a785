// SPDX-License-Identifier: MIT
/*
 * prefix_stats.c - per key prefix counts for "stats detail" (see
 * prefix_stats.h): a hash table of PREFIX_BUCKETS chains under one lock.
 */
#include "prefix_stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "compiler.h"
#include "hash.h"
#include "item.h"
#include "lock.h"
#include "reply.h"

#define PREFIX_BUCKETS	256u	/* memcached's PREFIX_HASH_SIZE */

struct prefix_entry {
	struct prefix_entry *next;	/* hash chain */
	uint64_t get, hit, set, del;
	uint8_t len;
	char prefix[KEY_MAX_LENGTH];
};

struct prefix_stats {
	struct ak_lock lock;		/* guards the fields below */
	struct prefix_entry *buckets[PREFIX_BUCKETS];
	unsigned int count;
	bool on;			/* atomic: counting */
	char delim;
};

struct prefix_stats *prefix_stats_create(char delim)
{
	struct prefix_stats *ps = ak_calloc(1, sizeof(*ps));

	if (!ps)
		return NULL;
	ak_lock_init(&ps->lock);
	ps->delim = delim;
	return ps;
}

/* Frees a chain of entries unlinked from the table. */
static void entries_free(struct prefix_entry *e)
{
	while (e) {
		struct prefix_entry *next = e->next;

		ak_free(e);
		e = next;
	}
}

void prefix_stats_destroy(struct prefix_stats *ps)
{
	if (!ps)
		return;
	prefix_stats_clear(ps);
	ak_free(ps);
}

void prefix_stats_enable(struct prefix_stats *ps, bool on)
{
	WRITE_ONCE(ps->on, on);
}

bool prefix_stats_on(const struct prefix_stats *ps)
{
	return ps && READ_ONCE(ps->on);
}

char prefix_stats_delimiter(const struct prefix_stats *ps)
{
	return ps->delim;
}

static struct prefix_entry *find_locked(struct prefix_stats *ps,
					unsigned int b, const char *p,
					size_t len)
{
	struct prefix_entry *e;

	ak_lock_assert_held(&ps->lock);
	for (e = ps->buckets[b]; e; e = e->next)
		if (e->len == len && !memcmp(e->prefix, p, len))
			return e;
	return NULL;
}

static void count_locked(struct prefix_entry *e, enum prefix_op op)
{
	switch (op) {
	case PREFIX_HIT:
		e->hit++;
		/* fall through */
	case PREFIX_GET:
		e->get++;
		break;
	case PREFIX_SET:
		e->set++;
		break;
	case PREFIX_DELETE:
		e->del++;
		break;
	}
}

void prefix_stats_count(struct prefix_stats *ps, const char *key,
			size_t nkey, enum prefix_op op)
{
	const char *end = memchr(key, ps->delim, nkey);
	struct prefix_entry *e, *fresh;
	unsigned int b;
	size_t len;

	if (!end)
		return;
	len = (size_t)(end - key);
	b = (unsigned int)(hash_key(key, len) % PREFIX_BUCKETS);
	ak_lock_acquire(&ps->lock);
	e = find_locked(ps, b, key, len);
	if (likely(e)) {
		count_locked(e, op);
		ak_lock_release(&ps->lock);
		return;
	}
	ak_lock_release(&ps->lock);

	/* a new prefix: allocate outside the lock, then look again */
	fresh = ak_calloc(1, sizeof(*fresh));
	ak_lock_acquire(&ps->lock);
	e = find_locked(ps, b, key, len);
	if (!e && fresh && ps->count < PREFIX_STATS_MAX) {
		memcpy(fresh->prefix, key, len);
		fresh->len = (uint8_t)len;
		fresh->next = ps->buckets[b];
		ps->buckets[b] = fresh;
		ps->count++;
		e = fresh;
		fresh = NULL;
	}
	if (e)
		count_locked(e, op);
	ak_lock_release(&ps->lock);
	ak_free(fresh);
}

static int entry_cmp(const void *a, const void *b)
{
	const struct prefix_entry *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->prefix, y->prefix, n);

	return c ? c : (int)x->len - (int)y->len;
}

int prefix_stats_dump(struct prefix_stats *ps, struct reply *out)
{
	struct prefix_entry *copy = NULL;
	unsigned int n, i, b;

	ak_lock_acquire(&ps->lock);
	n = ps->count;
	ak_lock_release(&ps->lock);
	/* the table only grows between the two looks, up to the cap */
	if (n) {
		n = PREFIX_STATS_MAX < n + 64 ? PREFIX_STATS_MAX : n + 64;
		copy = ak_malloc((size_t)n * sizeof(*copy));
		if (!copy)
			return -ENOMEM;
	}
	i = 0;
	ak_lock_acquire(&ps->lock);
	for (b = 0; b < PREFIX_BUCKETS && copy; b++) {
		const struct prefix_entry *e;

		for (e = ps->buckets[b]; e && i < n; e = e->next)
			copy[i++] = *e;
	}
	ak_lock_release(&ps->lock);
	if (i)
		qsort(copy, i, sizeof(*copy), entry_cmp);
	for (b = 0; b < i; b++)
		reply_addf(out, "PREFIX %.*s get %llu hit %llu set %llu "
			   "del %llu\r\n", (int)copy[b].len, copy[b].prefix,
			   (unsigned long long)copy[b].get,
			   (unsigned long long)copy[b].hit,
			   (unsigned long long)copy[b].set,
			   (unsigned long long)copy[b].del);
	reply_add(out, "END\r\n", 5);
	ak_free(copy);
	return 0;
}

void prefix_stats_clear(struct prefix_stats *ps)
{
	struct prefix_entry *gone = NULL;
	unsigned int b;

	if (!ps)
		return;
	ak_lock_acquire(&ps->lock);
	for (b = 0; b < PREFIX_BUCKETS; b++) {
		struct prefix_entry *e = ps->buckets[b];

		while (e) {
			struct prefix_entry *next = e->next;

			e->next = gone;
			gone = e;
			e = next;
		}
		ps->buckets[b] = NULL;
	}
	ps->count = 0;
	ak_lock_release(&ps->lock);
	entries_free(gone);
}
