// SPDX-License-Identifier: MIT
/*
 * test_list.c - list_head and hlist against their contracts.
 *
 * Every shape is checked in both directions: a list_head's next and prev
 * chains must be mirror images ending at the head; an hlist's pprev pointers
 * must each point at the pointer that points at the node. Examples come
 * first, one per operation and per for_each macro, with before/after comments;
 * then a randomized run checks a sequence of operations on two lists and
 * three buckets against arrays of ids.
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
	struct hlist_node hnode;
	struct slist_node snode;
};

static void elems_init(struct elem *e, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		e[i].id = (int)i;
		INIT_LIST_HEAD(&e[i].link);
		INIT_HLIST_NODE(&e[i].hnode);
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
	INIT_HLIST_NODE(&e->hnode);
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

/* The same for a bucket, checking each pprev. */
static bool hlist_is(const struct hlist_head *h, const int *ids, size_t n,
		     const char *what)
{
	struct hlist_node *const *pprev = &h->first;
	const struct hlist_node *pos;
	int seen[256];
	size_t count = 0;
	bool ok = true;

	for (pos = h->first; pos; pprev = &pos->next, pos = pos->next) {
		if (count == ARRAY_SIZE(seen)) {
			fprintf(stderr, "%s: hlist cyclic\n", what);
			return false;
		}
		if (pos->pprev != pprev)
			ok = false;
		seen[count] = hlist_entry(pos, struct elem, hnode)->id;
		if (count >= n || seen[count] != ids[count])
			ok = false;
		count++;
	}
	if (count != n)
		ok = false;
	if (!ok) {
		fprintf(stderr, "%s: hlist differs\n", what);
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
#define CHECK_HLIST(head, ...) \
	CHECK_MSG(hlist_is(head, IDS(__VA_ARGS__), #head), "see above")
#define CHECK_HLIST_EMPTY(head) \
	CHECK_MSG(hlist_is(head, NULL, 0, #head) && hlist_empty(head), "not empty")

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
	CHECK(list_first_entry_or_null(&h, struct elem, link) == NULL);

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
	CHECK(list_first_entry_or_null(&h, struct elem, link) == &e[3]);
	CHECK(list_is_last(&e[4].link, &h));
	CHECK(!list_is_last(&e[1].link, &h));
	CHECK(list_next_entry(&e[2], link) == &e[1]);
	CHECK(list_prev_entry(&e[2], link) == &e[3]);

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

static void test_list_move(void)
{
	struct elem e[8];
	LIST_HEAD(a);
	LIST_HEAD(b);
	int i;

	elems_init(e, ARRAY_SIZE(e));
	for (i = 1; i <= 4; i++)
		list_add_tail(&e[i].link, &a);

	/* within one list: [1 2 3 4] -> [3 1 2 4] -> [3 2 4 1] */
	list_move(&e[3].link, &a);
	CHECK_LIST(&a, 3, 1, 2, 4);
	list_move_tail(&e[1].link, &a);
	CHECK_LIST(&a, 3, 2, 4, 1);
	/* the first to the front and the last to the back change nothing */
	list_move(&e[3].link, &a);
	list_move_tail(&e[1].link, &a);
	CHECK_LIST(&a, 3, 2, 4, 1);

	/*
	 * between lists: a [3 2 4 1], b [] -> a [3 4 1], b [2]
	 *                                  -> a [3 1],   b [2 4]
	 */
	list_move(&e[2].link, &b);
	CHECK_LIST(&a, 3, 4, 1);
	CHECK_LIST(&b, 2);
	list_move_tail(&e[4].link, &b);
	CHECK_LIST(&a, 3, 1);
	CHECK_LIST(&b, 2, 4);

	/* after a node of the other list: b [2 4] -> [2 1 4] */
	list_move(&e[1].link, &e[2].link);
	CHECK_LIST(&a, 3);
	CHECK_LIST(&b, 2, 1, 4);

	/* the only entry leaves: a [] */
	list_move_tail(&e[3].link, &b);
	CHECK_LIST_EMPTY(&a);
	CHECK_LIST(&b, 2, 1, 4, 3);
}

static void test_list_replace(void)
{
	struct elem e[10];
	LIST_HEAD(h);
	LIST_HEAD(one);
	int i;

	elems_init(e, ARRAY_SIZE(e));
	for (i = 1; i <= 3; i++)
		list_add_tail(&e[i].link, &h);

	/* [1 2 3] -> [1 7 3] -> [8 7 3] -> [8 7 9] */
	list_replace(&e[2].link, &e[7].link);
	CHECK_LIST(&h, 1, 7, 3);
	list_replace(&e[1].link, &e[8].link);
	CHECK_LIST(&h, 8, 7, 3);
	list_replace(&e[3].link, &e[9].link);
	CHECK_LIST(&h, 8, 7, 9);

	/* the only entry: [4] -> [5] */
	list_add(&e[4].link, &one);
	list_replace(&e[4].link, &e[5].link);
	CHECK_LIST(&one, 5);
	/* the replaced node may be reused */
	INIT_LIST_HEAD(&e[4].link);
	list_add(&e[4].link, &one);
	CHECK_LIST(&one, 4, 5);
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
	struct list_head *p, *q;
	struct walk w;
	LIST_HEAD(h);
	LIST_HEAD(empty);
	int i;

	elems_init(e, ARRAY_SIZE(e));
	for (i = 1; i <= 6; i++)
		list_add_tail(&e[i].link, &h);

	memset(&w, 0, sizeof(w));
	list_for_each(p, &h)
		walk_add(&w, list_entry(p, struct elem, link)->id);
	CHECK_WALK(&w, "list_for_each", 1, 2, 3, 4, 5, 6);

	memset(&w, 0, sizeof(w));
	list_for_each_entry(pos, &h, link)
		walk_add(&w, pos->id);
	CHECK_WALK(&w, "list_for_each_entry", 1, 2, 3, 4, 5, 6);
	CHECK(list_entry_is_head(pos, &h, link));

	memset(&w, 0, sizeof(w));
	list_for_each_entry_reverse(pos, &h, link)
		walk_add(&w, pos->id);
	CHECK_WALK(&w, "list_for_each_entry_reverse", 6, 5, 4, 3, 2, 1);

	/* continue after 3: visits 4 5 6; after the last: nothing */
	memset(&w, 0, sizeof(w));
	list_for_each_entry(pos, &h, link)
		if (pos->id == 3)
			break;
	list_for_each_entry_continue(pos, &h, link)
		walk_add(&w, pos->id);
	CHECK_WALK(&w, "list_for_each_entry_continue", 4, 5, 6);
	memset(&w, 0, sizeof(w));
	pos = &e[6];
	list_for_each_entry_continue(pos, &h, link)
		walk_add(&w, pos->id);
	CHECK(w.n == 0);

	/* from 3: visits 3 4 5 6; from the head (a finished walk): nothing */
	memset(&w, 0, sizeof(w));
	pos = &e[3];
	list_for_each_entry_from(pos, &h, link)
		walk_add(&w, pos->id);
	CHECK_WALK(&w, "list_for_each_entry_from", 3, 4, 5, 6);
	memset(&w, 0, sizeof(w));
	list_for_each_entry_from(pos, &h, link)
		walk_add(&w, pos->id);
	CHECK(w.n == 0);

	/* nothing to visit on an empty list, by any walk */
	memset(&w, 0, sizeof(w));
	list_for_each(p, &empty)
		walk_add(&w, -1);
	list_for_each_safe(p, q, &empty)
		walk_add(&w, -1);
	list_for_each_entry(pos, &empty, link)
		walk_add(&w, pos->id);
	list_for_each_entry_reverse(pos, &empty, link)
		walk_add(&w, pos->id);
	list_for_each_entry_safe(pos, n, &empty, link)
		walk_add(&w, pos->id);
	list_for_each_entry_safe_reverse(pos, n, &empty, link)
		walk_add(&w, pos->id);
	CHECK(w.n == 0);

	/* list_for_each_safe deleting the odd ones: [1..6] -> [2 4 6] */
	memset(&w, 0, sizeof(w));
	list_for_each_safe(p, q, &h) {
		walk_add(&w, list_entry(p, struct elem, link)->id);
		if (list_entry(p, struct elem, link)->id % 2)
			list_del(p);
	}
	CHECK_WALK(&w, "list_for_each_safe", 1, 2, 3, 4, 5, 6);
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

	/* backwards, freeing multiples of 3: [1 3 5 7 9] -> [1 5 7] */
	memset(&w, 0, sizeof(w));
	list_for_each_entry_safe_reverse(pos, n, &h, link) {
		walk_add(&w, pos->id);
		if (pos->id % 3 == 0) {
			list_del(&pos->link);
			ak_free(pos);
		}
	}
	CHECK_WALK(&w, "list_for_each_entry_safe_reverse", 9, 7, 5, 3, 1);
	CHECK_LIST(&h, 1, 5, 7);

	/* freeing everything, backwards then forwards */
	list_for_each_entry_safe_reverse(pos, n, &h, link) {
		if (pos->id == 7) {
			list_del(&pos->link);
			ak_free(pos);
		}
	}
	list_for_each_entry_safe(pos, n, &h, link) {
		list_del(&pos->link);
		ak_free(pos);
	}
	CHECK_LIST_EMPTY(&h);
}

/* ---- hlist examples ---- */

static void test_hlist_basic(void)
{
	struct elem e[10];
	struct hlist_head h = HLIST_HEAD_INIT, g;
	int i;

	elems_init(e, ARRAY_SIZE(e));
	INIT_HLIST_HEAD(&g);
	CHECK_HLIST_EMPTY(&h);
	CHECK_HLIST_EMPTY(&g);
	CHECK(hlist_unhashed(&e[1].hnode));

	/* add_head is stack order: [3 2 1] */
	for (i = 1; i <= 3; i++)
		hlist_add_head(&e[i].hnode, &h);
	CHECK_HLIST(&h, 3, 2, 1);
	CHECK(!hlist_unhashed(&e[1].hnode) && !hlist_empty(&h));

	/* add_behind: after 2 -> [3 2 4 1]; after the last -> [3 2 4 1 5] */
	hlist_add_behind(&e[4].hnode, &e[2].hnode);
	CHECK_HLIST(&h, 3, 2, 4, 1);
	hlist_add_behind(&e[5].hnode, &e[1].hnode);
	CHECK_HLIST(&h, 3, 2, 4, 1, 5);
	CHECK(!hlist_unhashed(&e[5].hnode));

	/* replace first, middle, last: [3 2 4 1 5] -> [6 2 7 1 8] */
	hlist_replace(&e[3].hnode, &e[6].hnode);
	hlist_replace(&e[4].hnode, &e[7].hnode);
	hlist_replace(&e[5].hnode, &e[8].hnode);
	CHECK_HLIST(&h, 6, 2, 7, 1, 8);
	CHECK(hlist_unhashed(&e[3].hnode) && hlist_unhashed(&e[4].hnode) &&
	      hlist_unhashed(&e[5].hnode));

	/* del_init middle, first, last: -> [6 2 1 8] -> [2 1 8] -> [2 1] */
	hlist_del_init(&e[7].hnode);
	CHECK_HLIST(&h, 6, 2, 1, 8);
	hlist_del_init(&e[6].hnode);
	CHECK_HLIST(&h, 2, 1, 8);
	hlist_del_init(&e[8].hnode);
	CHECK_HLIST(&h, 2, 1);
	CHECK(hlist_unhashed(&e[7].hnode) && hlist_unhashed(&e[6].hnode) &&
	      hlist_unhashed(&e[8].hnode));

	/* del_init of an unhashed node changes nothing */
	hlist_del_init(&e[8].hnode);
	CHECK_HLIST(&h, 2, 1);

	/* a removed node goes into another bucket */
	hlist_add_head(&e[8].hnode, &g);
	CHECK_HLIST(&g, 8);

	/* replace the only node; empty the buckets */
	hlist_replace(&e[8].hnode, &e[9].hnode);
	CHECK_HLIST(&g, 9);
	hlist_del_init(&e[9].hnode);
	hlist_del_init(&e[1].hnode);
	hlist_del_init(&e[2].hnode);
	CHECK_HLIST_EMPTY(&g);
	CHECK_HLIST_EMPTY(&h);
}

static void test_hlist_for_each(void)
{
	struct elem e[10], *pos;
	struct hlist_head h = HLIST_HEAD_INIT, empty = HLIST_HEAD_INIT;
	struct hlist_node *p, *q;
	struct walk w;
	int i;

	elems_init(e, ARRAY_SIZE(e));
	for (i = 6; i >= 1; i--)
		hlist_add_head(&e[i].hnode, &h);
	CHECK_HLIST(&h, 1, 2, 3, 4, 5, 6);

	memset(&w, 0, sizeof(w));
	hlist_for_each(p, &h)
		walk_add(&w, hlist_entry(p, struct elem, hnode)->id);
	CHECK_WALK(&w, "hlist_for_each", 1, 2, 3, 4, 5, 6);

	memset(&w, 0, sizeof(w));
	hlist_for_each_entry(pos, &h, hnode)
		walk_add(&w, pos->id);
	CHECK_WALK(&w, "hlist_for_each_entry", 1, 2, 3, 4, 5, 6);
	CHECK(pos == NULL);

	/* continue after 3: 4 5 6; after the last: nothing */
	memset(&w, 0, sizeof(w));
	pos = &e[3];
	hlist_for_each_entry_continue(pos, hnode)
		walk_add(&w, pos->id);
	CHECK_WALK(&w, "hlist_for_each_entry_continue", 4, 5, 6);
	memset(&w, 0, sizeof(w));
	pos = &e[6];
	hlist_for_each_entry_continue(pos, hnode)
		walk_add(&w, pos->id);
	CHECK(w.n == 0);

	/* from 3: 3 4 5 6; from NULL (a finished walk): nothing */
	memset(&w, 0, sizeof(w));
	pos = &e[3];
	hlist_for_each_entry_from(pos, hnode)
		walk_add(&w, pos->id);
	CHECK_WALK(&w, "hlist_for_each_entry_from", 3, 4, 5, 6);
	memset(&w, 0, sizeof(w));
	hlist_for_each_entry_from(pos, hnode)
		walk_add(&w, pos->id);
	CHECK(w.n == 0);

	/* empty bucket */
	memset(&w, 0, sizeof(w));
	hlist_for_each(p, &empty)
		walk_add(&w, -1);
	hlist_for_each_safe(p, q, &empty)
		walk_add(&w, -1);
	hlist_for_each_entry(pos, &empty, hnode)
		walk_add(&w, pos->id);
	hlist_for_each_entry_safe(pos, q, &empty, hnode)
		walk_add(&w, pos->id);
	CHECK(w.n == 0);

	/* hlist_for_each_safe deleting the odd ones: -> [2 4 6] */
	memset(&w, 0, sizeof(w));
	hlist_for_each_safe(p, q, &h) {
		walk_add(&w, hlist_entry(p, struct elem, hnode)->id);
		if (hlist_entry(p, struct elem, hnode)->id % 2)
			hlist_del_init(p);
	}
	CHECK_WALK(&w, "hlist_for_each_safe", 1, 2, 3, 4, 5, 6);
	CHECK_HLIST(&h, 2, 4, 6);
}

static void test_hlist_for_each_safe_free(void)
{
	struct hlist_head h = HLIST_HEAD_INIT;
	struct hlist_node *n;
	struct elem *pos;
	struct walk w;
	int i;

	for (i = 9; i >= 1; i--)
		hlist_add_head(&elem_new(i)->hnode, &h);

	/* freeing multiples of 3, including the last: -> [1 2 4 5 7 8] */
	memset(&w, 0, sizeof(w));
	hlist_for_each_entry_safe(pos, n, &h, hnode) {
		walk_add(&w, pos->id);
		if (pos->id % 3 == 0) {
			hlist_del_init(&pos->hnode);
			ak_free(pos);
		}
	}
	CHECK_WALK(&w, "hlist_for_each_entry_safe", 1, 2, 3, 4, 5, 6, 7, 8, 9);
	CHECK_HLIST(&h, 1, 2, 4, 5, 7, 8);

	/* freeing the first, then everything */
	hlist_for_each_entry_safe(pos, n, &h, hnode) {
		hlist_del_init(&pos->hnode);
		ak_free(pos);
		break;
	}
	CHECK_HLIST(&h, 2, 4, 5, 7, 8);
	hlist_for_each_entry_safe(pos, n, &h, hnode) {
		hlist_del_init(&pos->hnode);
		ak_free(pos);
	}
	CHECK_HLIST_EMPTY(&h);
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

enum { POOL = 48, NLISTS = 2, NBUCKETS = 3 };

/* Where each element is, and each list (or bucket) as an array of ids. */
struct model {
	int where[POOL];		/* -1: on no list, else its index */
	int ids[NBUCKETS > NLISTS ? NBUCKETS : NLISTS][POOL];
	size_t len[NBUCKETS > NLISTS ? NBUCKETS : NLISTS];
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
		case 4:		/* list_move */
			if ((id = pick(&m, true)) < 0)
				continue;
			list_move(&e[id].link, &heads[l]);
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
		case 6:		/* list_replace */
			id = pick(&m, false);
			other = pick(&m, true);
			if (id < 0 || other < 0)
				continue;
			list_replace(&e[other].link, &e[id].link);
			l = m.where[other];
			i = model_find(&m, l, other);
			m.ids[l][i] = id;
			m.where[id] = l;
			m.where[other] = -1;
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
		case 9:		/* list_for_each_entry_safe_reverse moving some */
			other = 1 - l;
			list_for_each_entry_safe_reverse(pos, n, &heads[l], link) {
				if (!walked_into(&m, pos, l, op, &bad))
					break;
				if (rng_below(4) == 0) {
					list_move(&pos->link, &heads[other]);
					model_remove(&m, pos->id);
					model_insert(&m, other, 0, pos->id);
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

static void test_hlist_random(uint64_t seed)
{
	enum { OPS = 200000 };
	struct elem e[POOL], *pos;
	struct hlist_head buckets[NBUCKETS];
	struct hlist_node *n;
	struct model m;
	unsigned long op, bad = 0, ran[5] = { 0 };
	char what[64];
	int b, id, other;
	size_t i;

	rng_state = seed ^ 0x686c697374;	/* "hlist" */
	elems_init(e, POOL);
	for (b = 0; b < NBUCKETS; b++) {
		INIT_HLIST_HEAD(&buckets[b]);
		m.len[b] = 0;
	}
	for (i = 0; i < POOL; i++)
		m.where[i] = -1;

	for (op = 0; op < OPS && bad < 10; op++) {
		unsigned int kind = rng_below(5);

		b = (int)rng_below(NBUCKETS);
		switch (kind) {
		case 0:		/* hlist_add_head */
			if ((id = pick(&m, false)) < 0)
				continue;
			hlist_add_head(&e[id].hnode, &buckets[b]);
			model_insert(&m, b, 0, id);
			break;
		case 1:		/* hlist_add_behind */
			id = pick(&m, false);
			other = pick(&m, true);
			if (id < 0 || other < 0)
				continue;
			hlist_add_behind(&e[id].hnode, &e[other].hnode);
			b = m.where[other];
			model_insert(&m, b, model_find(&m, b, other) + 1, id);
			break;
		case 2:		/* hlist_del_init */
			if ((id = pick(&m, true)) < 0)
				continue;
			hlist_del_init(&e[id].hnode);
			model_remove(&m, id);
			break;
		case 3:		/* hlist_replace */
			id = pick(&m, false);
			other = pick(&m, true);
			if (id < 0 || other < 0)
				continue;
			hlist_replace(&e[other].hnode, &e[id].hnode);
			b = m.where[other];
			m.ids[b][model_find(&m, b, other)] = id;
			m.where[id] = b;
			m.where[other] = -1;
			break;
		case 4:		/* hlist_for_each_entry_safe deleting some */
			hlist_for_each_entry_safe(pos, n, &buckets[b], hnode) {
				if (!walked_into(&m, pos, b, op, &bad))
					break;
				if (rng_below(3) == 0) {
					hlist_del_init(&pos->hnode);
					model_remove(&m, pos->id);
				}
			}
			break;
		}
		ran[kind]++;
		for (b = 0; b < NBUCKETS; b++) {
			snprintf(what, sizeof(what),
				 "random op %lu (kind %u), bucket %d", op, kind, b);
			if (!hlist_is(&buckets[b], m.ids[b], m.len[b], what))
				bad++;
		}
		for (i = 0; i < POOL; i++) {
			if (hlist_unhashed(&e[i].hnode) != (m.where[i] < 0)) {
				fprintf(stderr, "op %lu: node %zu is %shashed\n",
					op, i, m.where[i] < 0 ? "" : "un");
				bad++;
			}
		}
	}
	printf("hlist random: %lu ops (%lu %lu %lu %lu %lu by kind)\n", op,
	       ran[0], ran[1], ran[2], ran[3], ran[4]);
	CHECK_MSG(bad == 0, "%lu bad states (seed %" PRIu64 ")", bad, seed);
	CHECK(op == OPS);
}

/* The ids of slist @h, in order, into @ids; returns how many. */
static size_t slist_ids(const struct slist_head *h, int *ids, size_t max)
{
	const struct elem *e;
	size_t n = 0;

	slist_for_each_entry(e, h, snode)
		if (n < max)
			ids[n++] = e->id;
	return n;
}

#define CHECK_SLIST(h, ...) do {					\
	const int want_[] = { __VA_ARGS__ };				\
	int got_[16];							\
	size_t n_ = slist_ids((h), got_, ARRAY_SIZE(got_));		\
	CHECK(n_ == ARRAY_SIZE(want_) &&				\
	      !memcmp(got_, want_, sizeof(want_)));			\
} while (0)

static void test_slist_basic(void)
{
	struct slist_head h = { NULL };
	struct slist_node *tmp;
	struct elem e[10], *pos;
	int i, n = 0;

	elems_init(e, ARRAY_SIZE(e));
	for (i = 0; i < 10; i++)
		INIT_SLIST_NODE(&e[i].snode);
	CHECK(slist_empty(&h) && slist_unhashed(&e[1].snode));

	/* add_head is stack order: [3 2 1] */
	for (i = 1; i <= 3; i++)
		slist_add_head(&e[i].snode, &h);
	CHECK_SLIST(&h, 3, 2, 1);
	CHECK(!slist_unhashed(&e[1].snode) && !slist_empty(&h));

	/* replace first, middle, last: [3 2 1] -> [4 5 6] */
	slist_replace(&e[3].snode, &e[4].snode, &h);
	slist_replace(&e[2].snode, &e[5].snode, &h);
	slist_replace(&e[1].snode, &e[6].snode, &h);
	CHECK_SLIST(&h, 4, 5, 6);
	CHECK(slist_unhashed(&e[1].snode) && slist_unhashed(&e[2].snode) &&
	      slist_unhashed(&e[3].snode));

	/* del_init middle, last, first: -> [4 6] -> [4] -> [] */
	slist_del_init(&e[5].snode, &h);
	CHECK_SLIST(&h, 4, 6);
	slist_del_init(&e[6].snode, &h);
	CHECK_SLIST(&h, 4);
	slist_del_init(&e[4].snode, &h);
	CHECK(slist_empty(&h) && slist_unhashed(&e[4].snode));

	/* the safe walk may unlink the entry it stands on */
	for (i = 1; i <= 5; i++)
		slist_add_head(&e[i].snode, &h);
	slist_for_each_entry_safe(pos, tmp, &h, snode) {
		if (pos->id % 2)
			slist_del_init(&pos->snode, &h);
		n++;
	}
	CHECK(n == 5);
	CHECK_SLIST(&h, 4, 2);
}

int main(void)
{
	const char *env = getenv("AK_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 20261203;

	printf("test_list: seed %" PRIu64 " (set AK_TEST_SEED to change)\n", seed);

	test_list_add();
	test_list_del();
	test_list_move();
	test_list_replace();
	test_list_splice();
	test_list_for_each();
	test_list_for_each_safe_free();
	test_hlist_basic();
	test_hlist_for_each();
	test_hlist_for_each_safe_free();
	test_slist_basic();
	test_list_random(seed);
	test_hlist_random(seed);
	return check_report();
}
