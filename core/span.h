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

struct walk;

/*
 * What a walk does with each live item in range; false stops it. It runs
 * under the lock the walk holds: the item's shard lock on the integer part
 * (w->sh is that shard, w->dead takes what it unlinks), its partition's
 * lock on the string part (w->sh and w->dead NULL: nothing may be
 * unlinked there).
 */
typedef bool walk_fn(struct walk *w, struct item *it);

/*
 * A walk over what is left of a range, carried from slice to slice in one
 * object, as the kernel's struct xa_state carries an xarray walk: the
 * store, the span (narrowed past every entry visited, so the next slice
 * resumes there), the direction, the entries the slice may still visit,
 * the time items are judged live at, the visitor and its argument, and,
 * on the integer part, the shard locked and the dead list of the slice.
 * walk_init() sets the first six; the walkers set the rest.
 */
struct walk {
	struct store *s;
	struct span *sp;
	bool reverse;
	walk_fn *fn;
	void *arg;
	unsigned int budget;
	rel_time_t now;
	struct shard *sh;
	struct dead_list *dead;
};

static inline void walk_init(struct walk *w, struct store *s,
			     struct span *sp, bool reverse, walk_fn *fn,
			     void *arg)
{
	*w = (struct walk){ .s = s, .sp = sp, .reverse = reverse, .fn = fn,
			    .arg = arg };
}

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

/**
 * span_init() - the span of a range
 * @sp:   filled in (its buffers are not used yet)
 * @from: the lower bound as the client gave it (store.h)
 * @to:   the upper bound
 *
 * Context: any; no lock, nothing allocated.
 * Return: false when the range is empty (from above to, or an open bound
 * on a key that excludes all), else true.
 */
bool span_init(struct span *sp, const struct store_bound *from,
	       const struct store_bound *to);

/**
 * span_exclude_str() - move a string limit past an item a walk visited
 * @sp: the span
 * @it: the item; its key is copied into the span's buffer
 * @lo: the lower limit (a walk upwards), else the upper
 *
 * Context: the lock under which @it was seen (its shard's or its
 * partition's) is held: the key is read from the item.
 */
void span_exclude_str(struct span *sp, const struct item *it, bool lo);

/**
 * span_acc_copy_key() - the key of @it into the next entry of a keys-mode
 * accumulator
 * @acc: the accumulator (keys set, n below max)
 * @it:  the item
 *
 * Context: the lock under which @it was seen is held; no reference taken.
 */
void span_acc_copy_key(struct range_acc *acc, const struct item *it);

/*
 * Two visitors (walk_fn) of every walk: span_collect_fn() puts each item
 * into the struct range_acc w->arg (a reference taken, or its key copied
 * in keys mode) and stops when it is full; span_count_fn() adds one to
 * the uint64_t w->arg. Context: the lock of the walk is held.
 */
bool span_collect_fn(struct walk *w, struct item *it);
bool span_count_fn(struct walk *w, struct item *it);

#endif /* ANCHORKV_SPAN_H */
