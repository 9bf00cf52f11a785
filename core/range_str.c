// SPDX-License-Identifier: MIT
/*
 * range_str.c - the string keys' walks over the partitions (struct part).
 *
 * A range over string keys descends the tree of the partition its start
 * falls in and walks on into the next partition at a boundary
 * (range_str_walk()), SLICE_ITEMS entries per partition lock hold. A bounded
 * count adds whole partitions' counts and, at each end, a difference of
 * two ranks from the subtree sizes (range_str_count_ranked()). A dead item a
 * walk meets is held and reclaimed after the partition lock, under its
 * shard lock (range_str_drop_held()), which comes first in the lock order.
 */
#include "range_str.h"

#define DEAD_SEEN		32	/* dead string items a walk holds per slice */

/*
 * An in-order walk of one partition's tree that keeps the nodes it will
 * come back to on a stack of its own, instead of climbing parent pointers
 * as rb_next() does. Each node pushed has its far child prefetched (the
 * right one going up): the walk reaches that child only after the node's
 * near subtree and the node itself, so the miss on it is under way while
 * they are visited; and its key, which the visit reads. Items are
 * scattered in memory: a step of rb_next() into a right subtree waits on
 * one cache miss after another. An rbtree of n nodes is at most
 * 2 log2(n + 1) deep: 64 covers any partition.
 */
#define WALK_DEPTH		64

struct tree_walk {
	struct rb_node *stack[WALK_DEPTH];
	unsigned int top;
	bool reverse;
};

static inline void tree_push(struct tree_walk *w, struct rb_node *n)
{
	struct rb_node *far = w->reverse ? n->rb_left : n->rb_right;

	if (far)
		__builtin_prefetch(far);
	__builtin_prefetch(rb_entry(n, struct item, rbnode) + 1);
	w->stack[w->top++] = n;
}

/* Push @n and its near descendants: the next nodes in the walk's order. */
static inline void tree_descend(struct tree_walk *w, struct rb_node *n)
{
	while (n) {
		tree_push(w, n);
		n = w->reverse ? n->rb_right : n->rb_left;
	}
}

/*
 * Start a walk of @p at the first node inside @sp's limit on its side
 * (the lower going up): the descent pushes each node it passes that is
 * inside, as the nodes to come back to. Context: @p's lock held.
 */
static void tree_seek_locked(struct tree_walk *w, const struct part *p,
			     const struct span *sp, bool reverse)
{
	const struct sbound *b = reverse ? &sp->shi : &sp->slo;
	struct rb_node *n = p->tree.rb_node;

	ak_lock_assert_held(&p->lock);
	w->top = 0;
	w->reverse = reverse;
	while (n) {
		const struct item *it = rb_entry(n, struct item, rbnode);

		if (reverse ? sbound_below(b, it) : sbound_above(b, it)) {
			tree_push(w, n);
			n = reverse ? n->rb_right : n->rb_left;
		} else {
			n = reverse ? n->rb_left : n->rb_right;
		}
	}
}

/* The next node of the walk (NULL: none), its successors pushed. */
static inline struct rb_node *tree_next(struct tree_walk *w)
{
	struct rb_node *n;

	if (!w->top)
		return NULL;
	n = w->stack[--w->top];
	tree_descend(w, w->reverse ? n->rb_left : n->rb_right);
	return n;
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
 * Visit up to w->budget string entries of w->sp in @p in keyspace order,
 * narrowing the span past them; the visitor sees the live ones. A dead
 * one cannot be reclaimed here (that takes its shard lock, which comes
 * before a partition lock): up to DEAD_SEEN of them are held in @seen for
 * reclaim_seen(), and the slice ends when it is full.
 * Context: @p's lock is held (a partition lock; no shard lock is needed).
 */
static enum part_walk part_walk_locked(struct walk *w, struct part *p,
				       struct dead_seen *seen)
{
	enum part_walk end = PART_WALK_END;
	struct span *sp = w->sp;
	struct item *last = NULL;
	struct tree_walk tw;
	struct rb_node *node;

	ak_lock_assert_held(&p->lock);
	tree_seek_locked(&tw, p, sp, w->reverse);
	while ((node = tree_next(&tw))) {
		struct item *it = rb_entry(node, struct item, rbnode);

		if (w->reverse ? !sbound_above(&sp->slo, it) :
				 !sbound_below(&sp->shi, it)) {
			sp->strs = false;
			return PART_WALK_OVER;
		}
		if (!w->budget || seen->n == DEAD_SEEN) {
			end = PART_WALK_BUDGET;	/* the span resumes here */
			break;
		}
		w->budget--;
		last = it;
		if (item_state(w->s, it, w->now) != STORE_HIT) {
			item_get(it);
			seen->buf[seen->n++] = it;
			continue;
		}
		if (!w->fn(w, it)) {
			end = PART_WALK_OVER;
			break;
		}
	}
	/* the span resumes past the last item visited: one key copy a slice
	 * (the limit this narrows is not the one the loop tests) */
	if (last)
		span_exclude_str(sp, last, !w->reverse);
	return end;
}

/* See range_str.h. */
bool range_str_drop_held(struct store *s, struct item *it, bool del)
{
	struct shard *sh = shard_of_item(s, it);
	bool live = false;
	DEAD_LIST(dead);

	shard_lock(sh);
	if (it->iflags & ITEM_LINKED) {
		live = item_state(s, it, store_now(s)) == STORE_HIT;
		if (!live)
			shard_reclaim_locked(s, sh, it, &dead);
		else if (del)
			shard_unlink_locked(s, sh, it, &dead);
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
		range_str_drop_held(s, seen->buf[i], false);
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

/* See range_str.h. */
void range_str_walk(struct walk *w)
{
	struct store *s = w->s;
	struct part_map *m;
	unsigned int i;

	if (!w->sp->strs)
		return;
	w->now = store_now(s);
	w->sh = NULL;		/* partition locks only: nothing is unlinked */
	w->dead = NULL;
	__atomic_fetch_add(&s->parts.readers, 1, __ATOMIC_SEQ_CST);
	m = map_load(&s->parts);
	i = map_find_span(m, w->sp, w->reverse);
	for (;;) {
		struct dead_seen seen = { .n = 0 };
		struct part *p = m->parts[i];
		enum part_walk end;

		part_lock(p);
		if (map_load(&s->parts) != m) {
			part_unlock(p);
			m = map_load(&s->parts);
			i = map_find_span(m, w->sp, w->reverse);
			continue;
		}
		w->budget = SLICE_ITEMS;
		end = part_walk_locked(w, p, &seen);
		part_unlock(p);
		if (seen.n)
			reclaim_seen(s, &seen);
		if (end == PART_WALK_OVER)
			break;
		if (end == PART_WALK_END) {
			if (w->reverse ? i == 0 : i + 1 == m->n) {
				w->sp->strs = false;
				break;
			}
			i = w->reverse ? i - 1 : i + 1;
		}
	}
	__atomic_fetch_sub(&s->parts.readers, 1, __ATOMIC_SEQ_CST);
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

/* See range_str.h. */
bool range_str_count_ranked(struct store *s, const struct span *sp,
			    uint64_t *n)
{
	const struct sbound open = { .open = true };
	unsigned int i, first, last;
	struct part_map *m;
	uint64_t sum = 0;
	bool ok = true;

	__atomic_fetch_add(&s->parts.readers, 1, __ATOMIC_SEQ_CST);
	m = map_load(&s->parts);
	first = map_find_span(m, sp, false);
	last = map_find_span(m, sp, true);
	for (i = first; ok && i <= last; i++) {
		struct part *p = m->parts[i];

		part_lock(p);
		if (map_load(&s->parts) != m || p->count > UINT16_MAX)
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
	__atomic_fetch_sub(&s->parts.readers, 1, __ATOMIC_SEQ_CST);
	if (ok)
		*n += sum;
	return ok;
}

