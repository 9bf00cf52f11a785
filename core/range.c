// SPDX-License-Identifier: MIT
/*
 * range.c - ordered ranges over the store: range, count and delete_range.
 *
 * Keyspace order is every integer key, then every string key. String keys
 * are ordered in the partitions and walked there (range_str.c). Integer
 * keys live in the shards' radix trees: they are walked block by block,
 * each block in the shard that owns it, while they are dense enough
 * (range_int_blocks()), and what is left is a k-way merge of the shards'
 * walks (range_merge_shards()): each shard is walked a batch at a time,
 * about its share of the range, under one lock hold per batch, and a next
 * batch is fetched only when the last is used up. count and delete_range
 * walk each shard's integer part whole (or count it from the radix tree's
 * counts) and the partitions' string part, a slice per lock hold.
 */
#include "range_str.h"

#include <errno.h>
#include <limits.h>

#include "alloc.h"

/*
 * Visit up to w->budget integer entries of w->sp in w->sh in keyspace
 * order (w->reverse: descending), narrowing the span past them; a dead
 * one is reclaimed, the visitor sees the live ones. Return: true when this
 * shard's part of the walk is over (span exhausted or the visitor said
 * stop).
 * Context: w->sh's lock held.
 */
static bool walk_slice_locked(struct walk *w)
{
	struct span *sp = w->sp;
	struct radix_tree_iter iter;
	struct item *it;

	ak_lock_assert_held(&w->sh->lock);
	if (!sp->ints || !w->budget)
		return !sp->ints;
	w->now = store_now(w->s);
	/* a visit unlinks at most the item visited: the batch stays valid */
	radix_tree_iter_init(&iter, w->reverse ? sp->ihi : sp->ilo, w->reverse,
			     w->budget);
	while (sp->ints && w->budget) {
		it = radix_tree_iter_next(&w->sh->ints, &iter);
		if (!it || (w->reverse ? it->ikey < sp->ilo :
					 it->ikey > sp->ihi)) {
			sp->ints = false;
			break;
		}
		w->budget--;
		if (w->reverse ? it->ikey == 0 : it->ikey == UINT64_MAX)
			sp->ints = false;
		else if (w->reverse)
			sp->ihi = it->ikey - 1;
		else
			sp->ilo = it->ikey + 1;
		if (item_state(w->s, it, w->now) != STORE_HIT)
			shard_reclaim_locked(w->s, w->sh, it, w->dead);
		else if (!w->fn(w, it))
			return true;
	}
	return !sp->ints;
}

/*
 * Walk the integer part of @tmpl's span in @sh, a slice per lock hold,
 * over a copy of the span (@tmpl's stays as it is, for the next shard).
 */
static void shard_walk(const struct walk *tmpl, struct shard *sh)
{
	struct span sp = *tmpl->sp;
	struct walk w = *tmpl;
	bool done;

	/* the copy's limits may point into the span's buffers: it lives */
	w.sp = &sp;
	w.sh = sh;
	do {
		DEAD_LIST(dead);

		w.dead = &dead;
		w.budget = SLICE_ITEMS;
		shard_lock(sh);
		done = walk_slice_locked(&w);
		shard_unlock(sh);
		items_release(&dead);
	} while (!done);
}

/* delete_range's visitor of the integer part (under the shard lock). */
static bool delete_fn(struct walk *w, struct item *it)
{
	shard_unlink_locked(w->s, w->sh, it, w->dead);
	(*(uint64_t *)w->arg)++;
	return true;
}

static int item_order(const struct item *a, const struct item *b,
		      bool reverse)
{
	int c = item_cmp(a, b);

	return reverse ? -c : c;
}

/* One shard's side of a k-way merge: what is left of its span, and the
 * items fetched from it (with references) not yet taken. */
struct kway_src {
	struct span sp;
	struct item **buf;
	unsigned int pos, n;
	unsigned int batch;		/* items the next fetch asks for */
	bool done;			/* the shard's span is exhausted */
};

/* Fetch up to @want more items of @src from @sh, one lock hold at a time,
 * until some come or the span is over. */
static void kway_fill(struct store *s, struct shard *sh, struct kway_src *src,
		      bool reverse, unsigned int want)
{
	src->pos = src->n = 0;
	while (!src->n && !src->done) {
		/* max above the budget: the walk ends by budget or span,
		 * never because span_collect_fn said stop */
		struct range_acc acc = { src->buf, 0, want + 1, NULL };
		DEAD_LIST(dead);
		struct walk w;

		walk_init(&w, s, &src->sp, reverse, span_collect_fn, &acc);
		w.sh = sh;
		w.dead = &dead;
		w.budget = want;
		shard_lock(sh);
		src->done = walk_slice_locked(&w);
		shard_unlock(sh);
		items_release(&dead);
		src->n = acc.n;
	}
}

/*
 * The first @max integer items of @base (its string part is the
 * partitions', never walked here) over every shard, into @out: a k-way merge
 * that fetches a shard's items a batch at a time and a next batch only
 * when the last is used up, so a range walks about @max items in all, not
 * up to @max in every shard. A first batch is a shard's share of @max and
 * two more; each next one is twice the last (up to what the buffer
 * holds): a shard that holds more of the range than its share costs a few
 * more descents, not a walk of @max. Return: the number kept, or -ENOMEM.
 */
static int range_merge_shards(struct store *s, struct span *base,
			      bool reverse, struct item **out,
			      unsigned int max)
{
	unsigned int ns = s->cfg.nshards, batch, cap, i, n = 0;
	struct kway_src *src;
	struct item **bufs;

	if (!base->ints)
		return 0;
	if (ns == 1) {
		struct range_acc acc = { out, 0, max, NULL };
		struct walk w;

		walk_init(&w, s, base, reverse, span_collect_fn, &acc);
		shard_walk(&w, &s->shards[0]);
		return (int)acc.n;
	}
	cap = max < SLICE_ITEMS ? max : SLICE_ITEMS;
	batch = max / ns + 2;
	if (batch > cap)
		batch = cap;
	src = ak_malloc(ns * sizeof(*src));
	bufs = ak_malloc((size_t)ns * cap * sizeof(*bufs));
	if (!src || !bufs) {
		ak_free(src);
		ak_free(bufs);
		return -ENOMEM;
	}
	for (i = 0; i < ns; i++) {
		src[i].sp = *base;
		src[i].buf = bufs + (size_t)i * cap;
		src[i].pos = src[i].n = 0;
		src[i].batch = batch;
		src[i].done = false;
	}
	while (n < max) {
		struct kway_src *best = NULL;

		for (i = 0; i < ns; i++) {
			struct kway_src *c = &src[i];

			if (c->pos == c->n && !c->done) {
				kway_fill(s, &s->shards[i], c, reverse,
					  c->batch);
				c->batch = c->batch * 2 < cap ? c->batch * 2 :
								cap;
			}
			if (c->pos < c->n &&
			    (!best || item_order(c->buf[c->pos],
						 best->buf[best->pos],
						 reverse) < 0))
				best = c;
		}
		if (!best)
			break;
		out[n++] = best->buf[best->pos++];
	}
	for (i = 0; i < ns; i++)
		while (src[i].pos < src[i].n)
			item_put(src[i].buf[src[i].pos++]);
	ak_free(bufs);
	ak_free(src);
	return (int)n;
}

/*
 * The integer part of @base, block by block (shard_of_int(): 64
 * consecutive keys live in one shard), each block walked in the one shard
 * that owns it: where the keys are dense, a short range takes a lock or
 * two, not one per shard and a merge. Items are appended to @acc in
 * keyspace order and @base's integer part narrowed past the blocks walked
 * (not past a block cut short by a full @acc: the range is over then).
 * It stops after RANGE_BLOCK_MISSES empty blocks in a row (sparse keys):
 * what is left of the integer part is then range_merge_shards()'s.
 */
#define RANGE_BLOCK_MISSES	4

static void range_int_blocks(struct store *s, struct span *base,
			     bool reverse, struct range_acc *acc)
{
	const uint64_t block = ((uint64_t)1 << RADIX_TREE_MAP_SHIFT) - 1;
	unsigned int misses = 0;

	while (base->ints && acc->n < acc->max) {
		uint64_t x = reverse ? base->ihi : base->ilo;
		uint64_t first = x & ~block, last = x | block;
		struct span sp = { .ints = true, .strs = false };
		unsigned int before = acc->n;
		struct walk w;

		sp.ilo = reverse ? (first > base->ilo ? first : base->ilo) : x;
		sp.ihi = reverse ? x : (last < base->ihi ? last : base->ihi);
		walk_init(&w, s, &sp, reverse, span_collect_fn, acc);
		shard_walk(&w, shard_of_int(s, x));
		if (acc->n == acc->max)
			return;		/* full: nothing after it is wanted */
		if (reverse ? first <= base->ilo : last >= base->ihi)
			base->ints = false;
		else if (reverse)
			base->ihi = first - 1;
		else
			base->ilo = last + 1;
		misses = acc->n == before ? misses + 1 : 0;
		if (misses == RANGE_BLOCK_MISSES)
			return;
	}
}

/* The integer part of a range, into @acc (keys mode: held, then copied). */
#define RANGE_INT_STACK		64

static int range_ints(struct store *s, struct span *ints, bool reverse,
		      struct range_acc *acc)
{
	struct item *stack[RANGE_INT_STACK], **its = stack;
	unsigned int room = acc->max - acc->n, i;
	struct range_acc ia;
	int got;

	if (!acc->keys)
		its = acc->buf + acc->n;	/* straight into the result */
	else if (room > RANGE_INT_STACK && !(its = ak_malloc(room *
							     sizeof(*its))))
		return -ENOMEM;
	ia = (struct range_acc){ its, 0, room, NULL };
	if (s->cfg.nshards > 1)
		range_int_blocks(s, ints, reverse, &ia);
	got = ia.n < room ? range_merge_shards(s, ints, reverse, its + ia.n,
					       room - ia.n) : 0;
	if (got >= 0)
		ia.n += (unsigned int)got;
	if (!acc->keys) {
		acc->n += ia.n;
	} else {
		for (i = 0; i < ia.n; i++) {
			if (got >= 0)
				span_acc_copy_key(acc, its[i]);
			item_put(its[i]);
		}
		if (its != stack)
			ak_free(its);
	}
	return got < 0 ? got : 0;
}

/*
 * store_range() and store_range_keys(): keyspace order is every integer
 * key, then every string key: going up, the integer part first (the
 * blocks, then what is left merged over the shards), then the
 * partitions; going down, the other way.
 */
static int range_collect(struct store *s, const struct store_bound *from,
			 const struct store_bound *to, bool reverse,
			 struct range_acc *acc)
{
	struct span base, ints;
	struct walk w;

	if (acc->max > INT_MAX)
		acc->max = INT_MAX;
	if (!acc->max || !span_init(&base, from, to))
		return 0;
	ints = base;
	ints.strs = false;
	base.ints = false;
	walk_init(&w, s, &base, reverse, span_collect_fn, acc);
	if (reverse) {
		range_str_walk(&w);
		if (acc->n == acc->max)
			return (int)acc->n;
	}
	if (ints.ints && range_ints(s, &ints, reverse, acc) < 0) {
		while (!acc->keys && acc->n)
			item_put(acc->buf[--acc->n]);
		return -ENOMEM;
	}
	if (!reverse && acc->n < acc->max)
		range_str_walk(&w);
	return (int)acc->n;
}

int store_range(struct store *s, const struct store_bound *from,
		const struct store_bound *to, bool reverse, unsigned int max,
		struct item **out)
{
	struct range_acc acc = { out, 0, max, NULL };

	return range_collect(s, from, to, reverse, &acc);
}

int store_range_keys(struct store *s, const struct store_bound *from,
		     const struct store_bound *to, bool reverse,
		     unsigned int max, struct store_key *out)
{
	struct range_acc acc = { NULL, 0, max, out };

	return range_collect(s, from, to, reverse, &acc);
}

/*
 * The live integer items of @base in @sh, and *@doubtful set when the
 * shard holds a doubtful item. While it holds none (every linked item is
 * live and will stay so until something unlinks it), the radix tree's
 * counts give the integer part in two descents; else it is walked.
 */
static uint64_t shard_count_ints(struct store *s, struct shard *sh,
				 const struct span *base, uint64_t *strs,
				 bool *doubtful)
{
	struct span rest = *base;
	uint64_t n = 0;
	struct walk w;

	shard_lock(sh);
	if (sh->doubtful)
		*doubtful = true;
	else if (rest.ints) {
		n = radix_tree_count(&sh->ints, rest.ilo, rest.ihi);
		rest.ints = false;
	}
	*strs += sh->curr_str_items;
	shard_unlock(sh);
	if (rest.ints) {
		walk_init(&w, s, &rest, false, span_count_fn, &n);
		shard_walk(&w, sh);
	}
	return n;
}

uint64_t store_count(struct store *s, const struct store_bound *from,
		     const struct store_bound *to)
{
	uint64_t n = 0, strs = 0;
	bool doubtful = false;
	struct span base;
	struct walk w;
	unsigned int i;

	if (!span_init(&base, from, to))
		return 0;
	for (i = 0; i < s->cfg.nshards; i++)
		n += shard_count_ints(s, &s->shards[i], &base, &strs,
				      &doubtful);
	/* the string part, all live: the shards' totals when unbounded,
	 * else the partitions' counts and ranks */
	if (base.strs && !doubtful) {
		if (base.slo.open && base.shi.open)
			return n + strs;
		if (range_str_count_ranked(s, &base, &n))
			return n;
	}
	base.ints = false;
	walk_init(&w, s, &base, false, span_count_fn, &n);
	range_str_walk(&w);
	return n;
}

uint64_t store_delete_range(struct store *s, const struct store_bound *from,
			    const struct store_bound *to)
{
	struct item *buf[SLICE_ITEMS];
	struct span base;
	struct walk w;
	uint64_t n = 0;
	unsigned int i;

	if (!span_init(&base, from, to))
		return 0;
	walk_init(&w, s, &base, false, delete_fn, &n);
	for (i = 0; i < s->cfg.nshards; i++)
		shard_walk(&w, &s->shards[i]);
	/* strings: a batch with references, then each under its shard lock */
	while (base.strs) {
		struct range_acc acc = { buf, 0, SLICE_ITEMS, NULL };

		walk_init(&w, s, &base, false, span_collect_fn, &acc);
		range_str_walk(&w);
		for (i = 0; i < acc.n; i++) {
			n += range_str_drop_held(s, buf[i], true);
			item_put(buf[i]);
		}
	}
	return n;
}

