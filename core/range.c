// SPDX-License-Identifier: MIT
/*
 * range.c - ordered ranges over the store: bounds, spans, walks, merge,
 * count and delete_range.
 *
 * String keys are ordered in the partitions (struct part): a range over
 * them descends the tree of the partition its start falls in and walks on
 * into the next partition at a boundary (strs_walk()), SLICE_ITEMS entries
 * per partition lock hold. Integer keys live in the shards' radix trees:
 * they are walked block by block, each block in the shard that owns it,
 * while they are dense enough (range_int_blocks()), and what is left is a
 * k-way merge of the shards' walks (range_merge_shards()): each shard is
 * walked a batch at a time, about its share of the range, under one lock
 * hold per batch, and a next batch is fetched only when the last is used
 * up. count and delete_range walk each shard's integer part whole and the
 * partitions' string part, a slice per lock hold.
 */
#include "shard.h"

#include <errno.h>
#include <limits.h>

#define SLICE_ITEMS		256	/* entries a range walk visits per lock hold */
#define DEAD_SEEN		32	/* dead string items a walk holds per slice */

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

/* What a walk does with each live item in range; false stops the walk. */
typedef bool walk_fn(struct store *s, struct shard *sh, struct item *it,
		     void *arg, struct dead_list *dead);

static void sbound_set(struct sbound *b, const char *key, size_t nkey,
		       bool incl)
{
	b->open = false;
	b->incl = incl;
	b->key = key;
	b->nkey = nkey;
}

/* Turn two bounds into a span. Return: false for an empty range. */
static bool span_init(struct span *sp, const struct store_bound *from,
		      const struct store_bound *to)
{
	uint64_t v;
	int c;

	sp->ints = sp->strs = true;
	sp->ilo = 0;
	sp->ihi = UINT64_MAX;
	sp->slo.open = sp->shi.open = true;

	switch (from->kind) {
	case BOUND_MIN:
		break;
	case BOUND_MAX:
		return false;
	case BOUND_INCL:
	case BOUND_EXCL:
		if (key_is_integer(from->key, from->nkey, &v)) {
			if (from->kind == BOUND_INCL)
				sp->ilo = v;
			else if (v == UINT64_MAX)
				sp->ints = false;
			else
				sp->ilo = v + 1;
		} else {
			sp->ints = false;
			sbound_set(&sp->slo, from->key, from->nkey,
				   from->kind == BOUND_INCL);
		}
		break;
	}
	switch (to->kind) {
	case BOUND_MAX:
		break;
	case BOUND_MIN:
		return false;
	case BOUND_INCL:
	case BOUND_EXCL:
		if (key_is_integer(to->key, to->nkey, &v)) {
			sp->strs = false;
			if (to->kind == BOUND_INCL)
				sp->ihi = v;
			else if (v == 0)
				sp->ints = false;
			else
				sp->ihi = v - 1;
		} else {
			sbound_set(&sp->shi, to->key, to->nkey,
				   to->kind == BOUND_INCL);
		}
		break;
	}
	if (sp->ints && sp->ilo > sp->ihi)
		sp->ints = false;
	if (sp->strs && !sp->slo.open && !sp->shi.open) {
		c = key_bytes_cmp(sp->slo.key, sp->slo.nkey, sp->shi.key,
			    sp->shi.nkey);
		if (c > 0 || (c == 0 && !(sp->slo.incl && sp->shi.incl)))
			sp->strs = false;
	}
	return sp->ints || sp->strs;
}

/* Whether a string key is above the lower / below the upper limit. */
static bool sbound_above(const struct sbound *lo, const struct item *it)
{
	int c;

	if (lo->open)
		return true;
	c = key_bytes_cmp(item_key(it), it->nkey, lo->key, lo->nkey);
	return c > 0 || (c == 0 && lo->incl);
}

static bool sbound_below(const struct sbound *hi, const struct item *it)
{
	int c;

	if (hi->open)
		return true;
	c = key_bytes_cmp(item_key(it), it->nkey, hi->key, hi->nkey);
	return c < 0 || (c == 0 && hi->incl);
}

/* Make the span's lower (@lo) or upper limit exclude @it and what is past. */
static void span_exclude_str(struct span *sp, const struct item *it, bool lo)
{
	char *buf = lo ? sp->lo_buf : sp->hi_buf;

	memcpy(buf, item_key(it), it->nkey);
	sbound_set(lo ? &sp->slo : &sp->shi, buf, it->nkey, false);
}

/* First node of @p at or above @lo (NULL: none). */
static struct rb_node *part_seek_ge_locked(const struct part *p,
					   const struct sbound *lo)
{
	struct rb_node *n = p->tree.rb_node, *best = NULL;

	ak_lock_assert_held(&p->lock);
	if (lo->open)
		return rb_first(&p->tree);
	while (n) {
		if (sbound_above(lo, rb_entry(n, struct item, rbnode))) {
			best = n;
			n = n->rb_left;
		} else {
			n = n->rb_right;
		}
	}
	return best;
}

/* Last node of @p at or below @hi (NULL: none). */
static struct rb_node *part_seek_le_locked(const struct part *p,
					   const struct sbound *hi)
{
	struct rb_node *n = p->tree.rb_node, *best = NULL;

	ak_lock_assert_held(&p->lock);
	if (hi->open)
		return rb_last(&p->tree);
	while (n) {
		if (sbound_below(hi, rb_entry(n, struct item, rbnode))) {
			best = n;
			n = n->rb_right;
		} else {
			n = n->rb_left;
		}
	}
	return best;
}

/*
 * Visit one live item of a walk, or reclaim a dead one. Return: false when
 * @fn asked to stop.
 */
static bool walk_visit_locked(struct store *s, struct shard *sh,
			      struct item *it, rel_time_t now, walk_fn *fn,
			      void *arg, struct dead_list *dead)
{
	ak_lock_assert_held(&sh->lock);
	if (item_state(s, sh, it, now) != STORE_HIT) {
		item_reclaim_locked(s, sh, it, dead);
		return true;
	}
	return fn(s, sh, it, arg, dead);
}

static bool walk_ints_locked(struct store *s, struct shard *sh,
			     struct span *sp, bool reverse,
			     unsigned int *budget, rel_time_t now, walk_fn *fn,
			     void *arg, struct dead_list *dead)
{
	struct radix_tree_iter iter;
	struct item *it;

	ak_lock_assert_held(&sh->lock);
	if (!sp->ints || !*budget)
		return true;
	/* a visit unlinks at most the item visited: the batch stays valid */
	radix_tree_iter_init(&iter, reverse ? sp->ihi : sp->ilo, reverse,
			     *budget);
	while (sp->ints && *budget) {
		it = radix_tree_iter_next(&sh->ints, &iter);
		if (!it || (reverse ? it->ikey < sp->ilo : it->ikey > sp->ihi)) {
			sp->ints = false;
			break;
		}
		(*budget)--;
		if (reverse ? it->ikey == 0 : it->ikey == UINT64_MAX)
			sp->ints = false;
		else if (reverse)
			sp->ihi = it->ikey - 1;
		else
			sp->ilo = it->ikey + 1;
		if (!walk_visit_locked(s, sh, it, now, fn, arg, dead))
			return false;
	}
	return true;
}

/*
 * Visit up to @budget integer entries of @sp in @sh in keyspace order
 * (@reverse: descending), narrowing @sp past them. Return: true when this
 * shard's part of the walk is over (span exhausted or @fn said stop).
 */
static bool walk_slice_locked(struct store *s, struct shard *sh,
			      struct span *sp, bool reverse,
			      unsigned int budget, walk_fn *fn, void *arg,
			      struct dead_list *dead)
{
	ak_lock_assert_held(&sh->lock);
	if (!walk_ints_locked(s, sh, sp, reverse, &budget, store_now(s), fn,
			      arg, dead))
		return true;
	return !sp->ints;
}

/* Walk the integer part of @base in @sh, a slice per lock hold. */
static void shard_walk(struct store *s, struct shard *sh,
		       const struct span *base, bool reverse, walk_fn *fn,
		       void *arg)
{
	struct span sp = *base;
	bool done;

	/* the copy's limits may point into base's buffers: fine, base lives */
	do {
		DEAD_LIST(dead);

		shard_lock(sh);
		done = walk_slice_locked(s, sh, &sp, reverse, SLICE_ITEMS, fn,
					 arg, &dead);
		shard_unlock(sh);
		items_release(&dead);
	} while (!done);
}

/*
 * Where a range puts what it finds: items with a reference each in buf,
 * or, in keys mode (keys set), copies of their keys, KEY_MAX_LENGTH bytes
 * apart, and their lengths in lens: no reference taken and dropped.
 */
struct range_acc {
	struct item **buf;
	unsigned int n, max;
	char *keys;
	uint8_t *lens;
};

static bool range_str_fn(struct item *it, void *arg);
static bool count_str_fn(struct item *it, void *arg);

/* The shard walks' visitors are the string walks' (range_str_fn() ...). */
static bool range_fn(struct store *s, struct shard *sh, struct item *it,
		     void *arg, struct dead_list *dead)
{
	(void)s;
	(void)sh;
	(void)dead;
	return range_str_fn(it, arg);
}

static bool count_fn(struct store *s, struct shard *sh, struct item *it,
		     void *arg, struct dead_list *dead)
{
	(void)s;
	(void)sh;
	(void)dead;
	return count_str_fn(it, arg);
}

static bool delete_fn(struct store *s, struct shard *sh, struct item *it,
		      void *arg, struct dead_list *dead)
{
	item_unlink_locked(s, sh, it, dead);
	(*(uint64_t *)arg)++;
	return true;
}

/* ---- string keys: the partitions' order ---- */

/* What a string walk does with each live item in range; false stops it. */
typedef bool str_fn(struct item *it, void *arg);

/* Copy the key of @it, seen under a lock, to the next entry of keys mode. */
static void acc_copy_key(struct range_acc *acc, const struct item *it)
{
	memcpy(acc->keys + (size_t)acc->n * KEY_MAX_LENGTH, item_key(it),
	       it->nkey);
	acc->lens[acc->n++] = it->nkey;
}

static bool range_str_fn(struct item *it, void *arg)
{
	struct range_acc *acc = arg;

	if (acc->keys) {
		acc_copy_key(acc, it);
	} else {
		item_get(it);
		acc->buf[acc->n++] = it;
	}
	return acc->n < acc->max;
}

static bool count_str_fn(struct item *it, void *arg)
{
	(void)it;
	(*(uint64_t *)arg)++;
	return true;
}

enum part_walk {
	PART_WALK_BUDGET,	/* the budget ran out: more of @p to walk */
	PART_WALK_END,		/* @p holds no more of the span */
	PART_WALK_OVER,		/* the span is over, or the visitor said stop */
};

/* Dead items a string walk met, held, to reclaim after the partition lock. */
struct dead_seen {
	struct item *buf[DEAD_SEEN];
	unsigned int n;
};

/*
 * Visit up to @budget string entries of @sp in @p in keyspace order,
 * narrowing @sp past them; @fn sees the live ones. A dead one cannot be
 * reclaimed here (that takes its shard lock, which comes before a
 * partition lock): up to DEAD_SEEN of them are held in @seen for
 * reclaim_seen(), and the slice ends when it is full.
 */
static enum part_walk part_walk_locked(struct store *s, struct part *p,
				       struct span *sp, bool reverse,
				       unsigned int budget, rel_time_t now,
				       str_fn *fn, void *arg,
				       struct dead_seen *seen)
{
	struct rb_node *node, *next;
	enum part_walk end = PART_WALK_END;
	struct item *last = NULL;

	ak_lock_assert_held(&p->lock);
	node = reverse ? part_seek_le_locked(p, &sp->shi) :
			 part_seek_ge_locked(p, &sp->slo);
	for (; node; node = next) {
		struct item *it = rb_entry(node, struct item, rbnode);

		/* the next one's key, while this one is visited */
		next = reverse ? rb_prev(node) : rb_next(node);
		if (next)
			__builtin_prefetch(rb_entry(next, struct item, rbnode) + 1);
		if (reverse ? !sbound_above(&sp->slo, it) :
			      !sbound_below(&sp->shi, it)) {
			sp->strs = false;
			return PART_WALK_OVER;
		}
		if (!budget-- || seen->n == DEAD_SEEN) {
			end = PART_WALK_BUDGET;	/* the span resumes here */
			break;
		}
		last = it;
		if (item_state(s, shard_of_item(s, it), it, now) != STORE_HIT) {
			item_get(it);
			seen->buf[seen->n++] = it;
			continue;
		}
		if (!fn(it, arg)) {
			end = PART_WALK_OVER;
			break;
		}
	}
	/* the span resumes past the last item visited: one key copy a slice
	 * (the limit this narrows is not the one the loop tests) */
	if (last)
		span_exclude_str(sp, last, !reverse);
	return end;
}

/*
 * An item the caller holds, met under a partition lock, dealt with under
 * its shard lock if it is still linked: reclaimed when dead, and unlinked
 * when live and @del (delete_range). Return: whether a live item went.
 */
static bool item_drop_held(struct store *s, struct item *it, bool del)
{
	struct shard *sh = shard_of_item(s, it);
	bool live = false;
	DEAD_LIST(dead);

	shard_lock(sh);
	if (it->iflags & ITEM_LINKED) {
		live = item_state(s, sh, it, store_now(s)) == STORE_HIT;
		if (!live)
			item_reclaim_locked(s, sh, it, &dead);
		else if (del)
			item_unlink_locked(s, sh, it, &dead);
	}
	shard_unlock(sh);
	items_release(&dead);
	return live && del;
}

/* Reclaim the dead items a walk held. */
static void reclaim_seen(struct store *s, struct dead_seen *seen)
{
	unsigned int i;

	for (i = 0; i < seen->n; i++) {
		item_drop_held(s, seen->buf[i], false);
		item_put(seen->buf[i]);
	}
	seen->n = 0;
}

/* Index in @m of the partition where a walk of @sp starts or resumes. */
static unsigned int map_find_span(const struct part_map *m,
				  const struct span *sp, bool reverse)
{
	const struct sbound *b = reverse ? &sp->shi : &sp->slo;

	if (b->open)
		return reverse ? m->n - 1 : 0;
	return map_find(m, b->key, b->nkey);
}

/*
 * Walk the string part of @sp over the partitions it spans, in keyspace
 * order, SLICE_ITEMS entries per partition lock hold, narrowing @sp as it
 * goes (so a walk stopped by @fn resumes where it stopped). The walk
 * counts itself in map_readers, so no map it reads is freed under it
 * (part_split()); when the map changes between two slices (a split), it
 * finds its place again in the new one from where @sp resumes.
 * Context: no lock held; takes partition and shard locks in turn.
 */
static void strs_walk(struct store *s, struct span *sp, bool reverse,
		      str_fn *fn, void *arg)
{
	rel_time_t now = store_now(s);
	struct part_map *m;
	unsigned int i;

	if (!sp->strs)
		return;
	__atomic_fetch_add(&s->map_readers, 1, __ATOMIC_SEQ_CST);
	m = map_load(s);
	i = map_find_span(m, sp, reverse);
	for (;;) {
		struct dead_seen seen = { .n = 0 };
		struct part *p = m->parts[i];
		enum part_walk end;

		part_lock(p);
		if (map_load(s) != m) {
			part_unlock(p);
			m = map_load(s);
			i = map_find_span(m, sp, reverse);
			continue;
		}
		end = part_walk_locked(s, p, sp, reverse, SLICE_ITEMS, now, fn,
				       arg, &seen);
		part_unlock(p);
		if (seen.n)
			reclaim_seen(s, &seen);
		if (end == PART_WALK_OVER)
			break;
		if (end == PART_WALK_END) {
			if (reverse ? i == 0 : i + 1 == m->n) {
				sp->strs = false;
				break;
			}
			i = reverse ? i - 1 : i + 1;
		}
	}
	__atomic_fetch_sub(&s->map_readers, 1, __ATOMIC_SEQ_CST);
}

/*
 * Items of @p before the span's part of it, modulo 2^16, in one descent:
 * those below the lower limit @b (@upper false), or those up to and at
 * the upper limit @b (@upper true). Either set is a prefix of @p's order.
 */
static uint16_t part_rank_locked(const struct part *p,
				 const struct sbound *b, bool upper)
{
	const struct rb_node *n = p->tree.rb_node;
	uint16_t r = 0;

	ak_lock_assert_held(&p->lock);
	if (b->open)
		return upper ? (uint16_t)p->count : 0;
	while (n) {
		const struct item *it = rb_entry(n, struct item, rbnode);

		if (upper ? sbound_below(b, it) : !sbound_above(b, it)) {
			r += 1 + node_subtree(n->rb_left);
			n = n->rb_right;
		} else {
			n = n->rb_left;
		}
	}
	return r;
}

/*
 * The linked string items of @sp, from the partitions' counts: the whole
 * count of each partition inside the span, and in the two at its ends
 * the difference of two ranks (subtree sizes are kept modulo 2^16, so
 * the difference is exact while the partition holds fewer items). Only
 * right while every linked item is live (no doubtful item anywhere).
 * Return: false when it cannot say (a partition too large, or a split
 * under way); *@n is then unchanged and the caller walks.
 */
static bool strs_count_ranked(struct store *s, const struct span *sp,
			      uint64_t *n)
{
	const struct sbound open = { .open = true };
	unsigned int i, first, last;
	struct part_map *m;
	uint64_t sum = 0;
	bool ok = true;

	__atomic_fetch_add(&s->map_readers, 1, __ATOMIC_SEQ_CST);
	m = map_load(s);
	first = map_find_span(m, sp, false);
	last = map_find_span(m, sp, true);
	for (i = first; ok && i <= last; i++) {
		struct part *p = m->parts[i];

		part_lock(p);
		if (map_load(s) != m || p->count > UINT16_MAX)
			ok = false;
		else if (i != first && i != last)
			sum += p->count;
		else
			sum += (uint16_t)(part_rank_locked(p,
					i == last ? &sp->shi : &open, true) -
				part_rank_locked(p,
					i == first ? &sp->slo : &open, false));
		part_unlock(p);
	}
	__atomic_fetch_sub(&s->map_readers, 1, __ATOMIC_SEQ_CST);
	if (ok)
		*n += sum;
	return ok;
}

/* ---- integer keys: the shards' radix trees ---- */

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
		 * never because range_fn said stop */
		struct range_acc acc = { src->buf, 0, want + 1, NULL, NULL };
		DEAD_LIST(dead);

		shard_lock(sh);
		src->done = walk_slice_locked(s, sh, &src->sp, reverse, want,
					      range_fn, &acc, &dead);
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
		struct range_acc acc = { out, 0, max, NULL, NULL };

		shard_walk(s, &s->shards[0], base, reverse, range_fn, &acc);
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

		sp.ilo = reverse ? (first > base->ilo ? first : base->ilo) : x;
		sp.ihi = reverse ? x : (last < base->ihi ? last : base->ihi);
		shard_walk(s, shard_of_int(s, x), &sp, reverse, range_fn, acc);
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
	ia = (struct range_acc){ its, 0, room, NULL, NULL };
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
				acc_copy_key(acc, its[i]);
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

	if (acc->max > INT_MAX)
		acc->max = INT_MAX;
	if (!acc->max || !span_init(&base, from, to))
		return 0;
	ints = base;
	ints.strs = false;
	base.ints = false;
	if (reverse) {
		strs_walk(s, &base, true, range_str_fn, acc);
		if (acc->n == acc->max)
			return (int)acc->n;
	}
	if (ints.ints && range_ints(s, &ints, reverse, acc) < 0) {
		while (!acc->keys && acc->n)
			item_put(acc->buf[--acc->n]);
		return -ENOMEM;
	}
	if (!reverse && acc->n < acc->max)
		strs_walk(s, &base, false, range_str_fn, acc);
	return (int)acc->n;
}

int store_range(struct store *s, const struct store_bound *from,
		const struct store_bound *to, bool reverse, unsigned int max,
		struct item **out)
{
	struct range_acc acc = { out, 0, max, NULL, NULL };

	return range_collect(s, from, to, reverse, &acc);
}

int store_range_keys(struct store *s, const struct store_bound *from,
		     const struct store_bound *to, bool reverse,
		     unsigned int max, char *keys, uint8_t *lens)
{
	struct range_acc acc = { NULL, 0, max, keys, lens };

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

	shard_lock(sh);
	if (sh->doubtful)
		*doubtful = true;
	else if (rest.ints) {
		n = radix_tree_count(&sh->ints, rest.ilo, rest.ihi);
		rest.ints = false;
	}
	*strs += sh->curr_str_items;
	shard_unlock(sh);
	if (rest.ints)
		shard_walk(s, sh, &rest, false, count_fn, &n);
	return n;
}

uint64_t store_count(struct store *s, const struct store_bound *from,
		     const struct store_bound *to)
{
	uint64_t n = 0, strs = 0;
	bool doubtful = false;
	struct span base;
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
		if (strs_count_ranked(s, &base, &n))
			return n;
	}
	base.ints = false;
	strs_walk(s, &base, false, count_str_fn, &n);
	return n;
}

uint64_t store_delete_range(struct store *s, const struct store_bound *from,
			    const struct store_bound *to)
{
	struct item *buf[SLICE_ITEMS];
	struct span base;
	uint64_t n = 0;
	unsigned int i;

	if (!span_init(&base, from, to))
		return 0;
	for (i = 0; i < s->cfg.nshards; i++)
		shard_walk(s, &s->shards[i], &base, false, delete_fn, &n);
	/* strings: a batch with references, then each under its shard lock */
	while (base.strs) {
		struct range_acc acc = { buf, 0, SLICE_ITEMS, NULL, NULL };

		strs_walk(s, &base, false, range_str_fn, &acc);
		for (i = 0; i < acc.n; i++) {
			n += item_drop_held(s, buf[i], true);
			item_put(buf[i]);
		}
	}
	return n;
}

int store_bound_cmp(const struct store_bound *a, const struct store_bound *b)
{
	int ra = a->kind == BOUND_MIN ? -1 : a->kind == BOUND_MAX ? 1 : 0;
	int rb = b->kind == BOUND_MIN ? -1 : b->kind == BOUND_MAX ? 1 : 0;

	if (ra || rb)
		return ra == rb ? 0 : (ra < rb ? -1 : 1);
	return key_compare(a->key, a->nkey, b->key, b->nkey);
}
