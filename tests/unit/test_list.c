// SPDX-License-Identifier: MIT
/*
 * test_list.c - list_head against its contract.
 *
 * Every shape is checked in both directions: a list_head's next and prev
 * chains must be mirror images ending at the head. Examples come first,
 * one per operation and per for_each macro, with before/after comments;
 * then a randomized run checks a sequence of operations on two lists
 * against arrays of ids.
 *
 * The random seed is printed; set AK_TEST_SEED=<number> to rerun one.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "check.h"
#include "list.h"

struct elem {
	int id;
	struct list_head link;
};

static void elems_init(struct elem *e, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		e[i].id = (int)i;
		INIT_LIST_HEAD(&e[i].link);
	}
}

static struct elem *elem_new(int id)
{
	struct elem *e = ak_malloc(sizeof(*e));

	if (!e) {
		fprintf(stderr, "test_list: out of memory\n");
		exit(2);
	}
	e->id = id;
	INIT_LIST_HEAD(&e->link);
	return e;
}

static void print_ids(const char *label, const int *ids, size_t n)
{
	size_t i;

	fprintf(stderr, "  %s:", label);
	for (i = 0; i < n; i++)
		fprintf(stderr, " %d", ids[i]);
	fputc('\n', stderr);
}

/*
 * Whether @head holds exactly @ids in order, with every prev pointer the
 * mirror of a next pointer. Prints what it found when not.
 */
static bool list_is(const struct list_head *head, const int *ids, size_t n,
		    const char *what)
{
	const struct list_head *pos, *prev = head;
	int seen[256];
	size_t count = 0;
	bool ok = true;

	for (pos = head->next; pos != head; prev = pos, pos = pos->next) {
		if (!pos || count == ARRAY_SIZE(seen)) {
			fprintf(stderr, "%s: list broken or cyclic\n", what);
			return false;
		}
		if (pos->prev != prev)
			ok = false;
		seen[count] = list_entry(pos, struct elem, link)->id;
		if (count >= n || seen[count] != ids[count])
			ok = false;
		count++;
	}
	if (head->prev != prev || count != n)
		ok = false;
	if (!ok) {
		fprintf(stderr, "%s: list differs%s\n", what,
			head->prev != prev ? " (head->prev wrong)" : "");
		print_ids("expected", ids, n);
		print_ids("found   ", seen, count);
	}
	return ok;
}

#define IDS(...) ((const int[]){ __VA_ARGS__ }), \
		 (sizeof((const int[]){ __VA_ARGS__ }) / sizeof(int))
#define CHECK_LIST(head, ...) \
	CHECK_MSG(list_is(head, IDS(__VA_ARGS__), #head), "see above")
#define CHECK_LIST_EMPTY(head) \
	CHECK_MSG(list_is(head, NULL, 0, #head) && list_empty(head), "not empty")

/* Collected ids of a walk, compared at the end. */
struct walk {
	int ids[64];
	size_t n;
};

static void walk_add(struct walk *w, int id)
{
	if (w->n < ARRAY_SIZE(w->ids))
		w->ids[w->n] = id;
	w->n++;
}

static bool walk_is(const struct walk *w, const int *ids, size_t n,
		    const char *what)
{
	if (w->n == n && (n == 0 || !memcmp(w->ids, ids, n * sizeof(int))))
		return true;
	fprintf(stderr, "%s: walk differs\n", what);
	print_ids("expected", ids, n);
	print_ids("visited ", w->ids, w->n < 64 ? w->n : 64);
	return false;
}

#define CHECK_WALK(w, what, ...) \
	CHECK_MSG(walk_is(w, IDS(__VA_ARGS__), what), "see above")

/* ---- list_head examples ---- */

static void test_list_add(void)
{
	struct elem e[8];
	LIST_HEAD(h);

	elems_init(e, ARRAY_SIZE(e));
	CHECK_LIST_EMPTY(&h);

	/* list_add is stack order: [] -> [1] -> [2 1] -> [3 2 1] */
	list_add(&e[1].link, &h);
	CHECK(!list_empty(&h));
	CHECK_LIST(&h, 1);
	list_add(&e[2].link, &h);
	list_add(&e[3].link, &h);
	CHECK_LIST(&h, 3, 2, 1);

	/* list_add_tail is queue order: [3 2 1] -> [3 2 1 4] */
	list_add_tail(&e[4].link, &h);
	CHECK_LIST(&h, 3, 2, 1, 4);
	CHECK(list_first_entry(&h, struct elem, link) == &e[3]);
	CHECK(list_last_entry(&h, struct elem, link) == &e[4]);
	CHECK(list_next_entry(&e[2], link) == &e[1]);

	/* relative to a node: after 2 -> [3 2 5 1 4]; before 2 -> [3 6 2 5 1 4] */
	list_add(&e[5].link, &e[2].link);
	CHECK_LIST(&h, 3, 2, 5, 1, 4);
	list_add_tail(&e[6].link, &e[2].link);
	CHECK_LIST(&h, 3, 6, 2, 5, 1, 4);
}

static void test_list_del(void)
{
	struct elem e[6];
	LIST_HEAD(h);
	int i;

	elems_init(e, ARRAY_SIZE(e));
	for (i = 1; i <= 5; i++)
		list_add_tail(&e[i].link, &h);
	CHECK_LIST(&h, 1, 2, 3, 4, 5);

	/* middle, first, last: [1 2 3 4 5] -> [1 2 4 5] -> [2 4 5] -> [2 4] */
	list_del(&e[3].link);
	CHECK_LIST(&h, 1, 2, 4, 5);
	CHECK(e[3].link.next == NULL && e[3].link.prev == NULL);
	list_del(&e[1].link);
	CHECK_LIST(&h, 2, 4, 5);
	list_del(&e[5].link);
	CHECK_LIST(&h, 2, 4);

	/* del_init leaves an empty node, and is a no-op on one */
	list_del_init(&e[4].link);
	CHECK_LIST(&h, 2);
	CHECK(list_empty(&e[4].link));
	list_del_init(&e[4].link);
	CHECK(list_empty(&e[4].link));
	CHECK_LIST(&h, 2);

	/* the last one out leaves an empty head */
	list_del_init(&e[2].link);
	CHECK_LIST_EMPTY(&h);

	/* a deleted node may be added again */
	list_add(&e[3].link, &h);
	list_add_tail(&e[4].link, &h);
	CHECK_LIST(&h, 3, 4);
}

static void test_list_splice(void)
{
	struct elem e[10];
	LIST_HEAD(a);
	LIST_HEAD(b);
	LIST_HEAD(c);
	int i;

	elems_init(e, ARRAY_SIZE(e));
	for (i = 1; i <= 3; i++)
		list_add_tail(&e[i].link, &a);
	for (i = 4; i <= 6; i++)
		list_add_tail(&e[i].link, &b);

	/* a [1 2 3] + b [4 5 6] -> a [1 2 3 4 5 6], b [] */
	list_splice_tail_init(&b, &a);
	CHECK_LIST(&a, 1, 2, 3, 4, 5, 6);
	CHECK_LIST_EMPTY(&b);

	/* an empty list adds nothing */
	list_splice_tail_init(&b, &a);
	CHECK_LIST(&a, 1, 2, 3, 4, 5, 6);
	CHECK_LIST_EMPTY(&b);

	/* into an empty list: c [] + a -> c [1 2 3 4 5 6], a [] */
	list_splice_tail_init(&a, &c);
	CHECK_LIST(&c, 1, 2, 3, 4, 5, 6);
	CHECK_LIST_EMPTY(&a);

	/* one entry, and the emptied head is usable again */
	list_add(&e[7].link, &a);
	list_splice_tail_init(&a, &c);
	CHECK_LIST(&c, 1, 2, 3, 4, 5, 6, 7);
	list_add(&e[8].link, &a);
	CHECK_LIST(&a, 8);
}

static void test_list_for_each(void)
{
	struct elem e[10], *pos, *n;
	struct walk w;
	LIST_HEAD(h);
	LIST_HEAD(empty);
	int i;

	elems_init(e, ARRAY_SIZE(e));
	for (i = 1; i <= 6; i++)
		list_add_tail(&e[i].link, &h);

	memset(&w, 0, sizeof(w));
	list_for_each_entry(pos, &h, link)
		walk_add(&w, pos->id);
	CHECK_WALK(&w, "list_for_each_entry", 1, 2, 3, 4, 5, 6);
	CHECK(list_entry_is_head(pos, &h, link));

	/* nothing to visit on an empty list, by either walk */
	memset(&w, 0, sizeof(w));
	list_for_each_entry(pos, &empty, link)
		walk_add(&w, pos->id);
	list_for_each_entry_safe(pos, n, &empty, link)
		walk_add(&w, pos->id);
	CHECK(w.n == 0);

	/* list_for_each_entry_safe deleting the odd ones: [1..6] -> [2 4 6] */
	memset(&w, 0, sizeof(w));
	list_for_each_entry_safe(pos, n, &h, link) {
		walk_add(&w, pos->id);
		if (pos->id % 2)
			list_del(&pos->link);
	}
	CHECK_WALK(&w, "list_for_each_entry_safe", 1, 2, 3, 4, 5, 6);
	CHECK_LIST(&h, 2, 4, 6);
}

/* The _safe walks with deletion, on heap elements that are freed at once. */
static void test_list_for_each_safe_free(void)
{
	struct elem *pos, *n;
	struct walk w;
	LIST_HEAD(h);
	int i;

	for (i = 1; i <= 9; i++)
		list_add_tail(&elem_new(i)->link, &h);

	/* forwards, freeing the even ones: [1..9] -> [1 3 5 7 9] */
	memset(&w, 0, sizeof(w));
	list_for_each_entry_safe(pos, n, &h, link) {
		walk_add(&w, pos->id);
		if (pos->id % 2 == 0) {
			list_del(&pos->link);
			ak_free(pos);
		}
	}
	CHECK_WALK(&w, "list_for_each_entry_safe", 1, 2, 3, 4, 5, 6, 7, 8, 9);
	CHECK_LIST(&h, 1, 3, 5, 7, 9);

	/* again, freeing multiples of 3: [1 3 5 7 9] -> [1 5 7] */
	memset(&w, 0, sizeof(w));
	list_for_each_entry_safe(pos, n, &h, link) {
		walk_add(&w, pos->id);
		if (pos->id % 3 == 0) {
			list_del(&pos->link);
			ak_free(pos);
		}
	}
	CHECK_WALK(&w, "list_for_each_entry_safe", 1, 3, 5, 7, 9);
	CHECK_LIST(&h, 1, 5, 7);

	/* freeing everything */
	list_for_each_entry_safe(pos, n, &h, link) {
		list_del(&pos->link);
		ak_free(pos);
	}
	CHECK_LIST_EMPTY(&h);
}

/* ---- the randomized run ---- */

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static size_t rng_below(size_t n)
{
	return (size_t)(rng_next() % n);
}

enum { POOL = 48, NLISTS = 2 };

/* Where each element is, and each list as an array of ids. */
struct model {
	int where[POOL];		/* -1: on no list, else its index */
	int ids[NLISTS][POOL];
	size_t len[NLISTS];
};

static size_t model_find(const struct model *m, int l, int id)
{
	size_t i;

	for (i = 0; i < m->len[l]; i++)
		if (m->ids[l][i] == id)
			break;
	return i;
}

static void model_insert(struct model *m, int l, size_t at, int id)
{
	memmove(&m->ids[l][at + 1], &m->ids[l][at],
		(m->len[l] - at) * sizeof(int));
	m->ids[l][at] = id;
	m->len[l]++;
	m->where[id] = l;
}

static void model_remove(struct model *m, int id)
{
	int l = m->where[id];
	size_t at = model_find(m, l, id);

	memmove(&m->ids[l][at], &m->ids[l][at + 1],
		(m->len[l] - at - 1) * sizeof(int));
	m->len[l]--;
	m->where[id] = -1;
}

/* A random element that is (@linked) or is not on a list, or -1. */
static int pick(const struct model *m, bool linked)
{
	size_t start = rng_below(POOL), i;

	for (i = 0; i < POOL; i++) {
		int id = (int)((start + i) % POOL);

		if ((m->where[id] >= 0) == linked)
			return id;
	}
	return -1;
}

/* A walk of list @l reached @pos: is it one the model has there? */
static bool walked_into(const struct model *m, const struct elem *pos, int l,
			unsigned long op, unsigned long *bad)
{
	if (pos->id >= 0 && pos->id < POOL && m->where[pos->id] == l)
		return true;
	fprintf(stderr, "random op %lu: a walk of list %d met element %d\n",
		op, l, pos->id);
	++*bad;
	return false;
}

static void test_list_random(uint64_t seed)
{
	enum { OPS = 200000 };
	struct elem e[POOL], *pos, *n;
	struct list_head heads[NLISTS];
	struct model m;
	unsigned long op, bad = 0, ran[10] = { 0 };
	char what[64];
	int l, id, other;
	size_t i;

	rng_state = seed ^ 0x6c697374;		/* "list" */
	elems_init(e, POOL);
	for (l = 0; l < NLISTS; l++) {
		INIT_LIST_HEAD(&heads[l]);
		m.len[l] = 0;
	}
	for (i = 0; i < POOL; i++)
		m.where[i] = -1;

	for (op = 0; op < OPS && bad < 10; op++) {
		unsigned int kind = rng_below(10);

		l = (int)rng_below(NLISTS);
		switch (kind) {
		case 0:		/* list_add */
			if ((id = pick(&m, false)) < 0)
				continue;
			list_add(&e[id].link, &heads[l]);
			model_insert(&m, l, 0, id);
			break;
		case 1:		/* list_add_tail */
			if ((id = pick(&m, false)) < 0)
				continue;
			list_add_tail(&e[id].link, &heads[l]);
			model_insert(&m, l, m.len[l], id);
			break;
		case 2:		/* list_add after an entry */
			id = pick(&m, false);
			other = pick(&m, true);
			if (id < 0 || other < 0)
				continue;
			list_add(&e[id].link, &e[other].link);
			l = m.where[other];
			model_insert(&m, l, model_find(&m, l, other) + 1, id);
			break;
		case 3:		/* list_del, then list_del_init */
			if ((id = pick(&m, true)) < 0)
				continue;
			if (rng_below(2)) {
				list_del(&e[id].link);
			} else {
				list_del_init(&e[id].link);
				if (!list_empty(&e[id].link)) {
					fprintf(stderr, "op %lu: list_del_init"
						" left it linked\n", op);
					bad++;
				}
			}
			model_remove(&m, id);
			break;
		case 4:		/* list_del, then list_add to a head */
			if ((id = pick(&m, true)) < 0)
				continue;
			list_del(&e[id].link);
			list_add(&e[id].link, &heads[l]);
			model_remove(&m, id);
			model_insert(&m, l, 0, id);
			break;
		case 5:		/* list_move_tail */
			if ((id = pick(&m, true)) < 0)
				continue;
			list_move_tail(&e[id].link, &heads[l]);
			model_remove(&m, id);
			model_insert(&m, l, m.len[l], id);
			break;
		case 6:		/* list_add after a node */
			id = pick(&m, false);
			other = pick(&m, true);
			if (id < 0 || other < 0)
				continue;
			list_add(&e[id].link, &e[other].link);
			l = m.where[other];
			model_insert(&m, l, model_find(&m, l, other) + 1, id);
			break;
		case 7:		/* list_splice_tail_init */
			other = 1 - l;
			list_splice_tail_init(&heads[other], &heads[l]);
			for (i = 0; i < m.len[other]; i++)
				model_insert(&m, l, m.len[l], m.ids[other][i]);
			m.len[other] = 0;
			break;
		case 8:		/* list_for_each_entry_safe deleting some */
			list_for_each_entry_safe(pos, n, &heads[l], link) {
				if (!walked_into(&m, pos, l, op, &bad))
					break;
				if (rng_below(4) == 0) {
					list_del(&pos->link);
					model_remove(&m, pos->id);
				}
			}
			break;
		case 9:		/* list_for_each_entry_safe moving some away */
			other = 1 - l;
			list_for_each_entry_safe(pos, n, &heads[l], link) {
				if (!walked_into(&m, pos, l, op, &bad))
					break;
				if (rng_below(4) == 0) {
					list_move_tail(&pos->link,
						       &heads[other]);
					model_remove(&m, pos->id);
					model_insert(&m, other, m.len[other],
						     pos->id);
				}
			}
			break;
		}
		ran[kind]++;
		for (l = 0; l < NLISTS; l++) {
			snprintf(what, sizeof(what),
				 "random op %lu (kind %u), list %d", op, kind, l);
			if (!list_is(&heads[l], m.ids[l], m.len[l], what))
				bad++;
		}
	}
	printf("list random: %lu ops (%lu %lu %lu %lu %lu %lu %lu %lu %lu %lu "
	       "by kind)\n", op, ran[0], ran[1], ran[2], ran[3], ran[4], ran[5],
	       ran[6], ran[7], ran[8], ran[9]);
	CHECK_MSG(bad == 0, "%lu bad states (seed %" PRIu64 ")", bad, seed);
	CHECK(op == OPS);
}

int main(void)
{
	const char *env = getenv("AK_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 20261203;

	printf("test_list: seed %" PRIu64 " (set AK_TEST_SEED to change)\n", seed);

	test_list_add();
	test_list_del();
	test_list_splice();
	test_list_for_each();
	test_list_for_each_safe_free();
	test_list_random(seed);
	return check_report();
}
