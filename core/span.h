/* SPDX-License-Identifier: MIT */
/*
 * span.h - what is left of a range, private to the ordered walks (span.c,
 * range_str.c, range.c): its integer and string limits, narrowed as a walk
 * goes so that the next slice resumes where the last stopped, and the
 * accumulator a walk puts what it finds in.
 */
#ifndef ANCHORKV_SPAN_H
#define ANCHORKV_SPAN_H

#include "shard.h"

#define SLICE_ITEMS		256	/* entries a range walk visits per lock hold */

/* A limit on the string part of the keyspace. */
struct sbound {
	bool open;			/* no limit */
	bool incl;
	const char *key;
	size_t nkey;
};

/*
 * What is left of a range in one shard (or over all of them): the integer
 * keys [ilo, ihi] when ints, and the string keys between slo and shi when
 * strs. Walks narrow it as they go, so a slice resumes where the last
 * stopped; the buffers hold keys copied from items for that.
 */
struct span {
	bool ints;
	bool strs;
	uint64_t ilo, ihi;
	struct sbound slo, shi;
	char lo_buf[KEY_MAX_LENGTH];
	char hi_buf[KEY_MAX_LENGTH];
};

/*
 * Where a range puts what it finds: items with a reference each in buf,
 * or, in keys mode (keys set), copies of their keys, KEY_MAX_LENGTH bytes
 * apart, and their lengths in lens: no reference taken and dropped.
 */
struct range_acc {
	struct item **buf;
	unsigned int n, max;
	struct store_key *keys;		/* store_range_keys(): copies */
};

/* What a string walk does with each live item in range; false stops it. */
typedef bool str_fn(struct item *it, void *arg);

static inline void sbound_set(struct sbound *b, const char *key, size_t nkey,
			      bool incl)
{
	b->open = false;
	b->incl = incl;
	b->key = key;
	b->nkey = nkey;
}

/* Whether a string key is above the lower / below the upper limit. */
static inline bool sbound_above(const struct sbound *lo, const struct item *it)
{
	int c;

	if (lo->open)
		return true;
	c = key_bytes_cmp(item_key(it), it->nkey, lo->key, lo->nkey);
	return c > 0 || (c == 0 && lo->incl);
}

static inline bool sbound_below(const struct sbound *hi, const struct item *it)
{
	int c;

	if (hi->open)
		return true;
	c = key_bytes_cmp(item_key(it), it->nkey, hi->key, hi->nkey);
	return c < 0 || (c == 0 && hi->incl);
}

bool span_init(struct span *sp, const struct store_bound *from,
	       const struct store_bound *to);
void span_exclude_str(struct span *sp, const struct item *it, bool lo);
void acc_copy_key(struct range_acc *acc, const struct item *it);

/* The visitors of a range (into a struct range_acc) and of a count. */
bool range_str_fn(struct item *it, void *arg);
bool count_str_fn(struct item *it, void *arg);

#endif /* ANCHORKV_SPAN_H */
