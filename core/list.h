/* SPDX-License-Identifier: MIT */
/*
 * list.h - intrusive doubly linked lists (list_head) and hash-bucket lists
 * (hlist_head/hlist_node), after the Linux kernel's include/linux/list.h.
 *
 * The anchor is embedded in the object; container_of() (list_entry(),
 * hlist_entry()) gets the object back. A list_head is circular with a head
 * sentinel. An hlist_head is one pointer, so a bucket array costs a word per
 * bucket; its nodes keep a pointer to the previous node's next pointer
 * (pprev), so a node unlinks itself in O(1) without knowing its bucket.
 *
 * Synchronization: the caller provides all locking.
 */
#ifndef ANCHORKV_LIST_H
#define ANCHORKV_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

struct list_head {
	struct list_head *next, *prev;
};

#define LIST_HEAD_INIT(name) { &(name), &(name) }
#define LIST_HEAD(name) struct list_head name = LIST_HEAD_INIT(name)

/**
 * INIT_LIST_HEAD() - make @list an empty list (or an unlinked node)
 * @list: the head or node
 *
 * Context: any; the caller provides the locking of the list.
 */
static inline void INIT_LIST_HEAD(struct list_head *list)
{
	list->next = list;
	list->prev = list;
}

/**
 * list_link_between() - link @entry between two adjacent nodes
 * @entry: node to insert, not on any list
 * @prev:  the node that will precede it
 * @next:  the node that will follow it (@prev->next)
 *
 * The step list_add() and list_add_tail() share.
 *
 * Context: any; the caller provides the locking of the list.
 */
static inline void list_link_between(struct list_head *entry,
				     struct list_head *prev,
				     struct list_head *next)
{
	next->prev = entry;
	entry->next = next;
	entry->prev = prev;
	prev->next = entry;
}

/**
 * list_add() - insert @entry right after @head (stack order)
 * @entry: node to insert, not on any list
 * @head:  list head or node to insert after
 *
 * Context: any; the caller provides the locking of the list.
 */
static inline void list_add(struct list_head *entry, struct list_head *head)
{
	list_link_between(entry, head, head->next);
}

/**
 * list_add_tail() - insert @entry right before @head (queue order)
 * @entry: node to insert, not on any list
 * @head:  list head or node to insert before
 *
 * Context: any; the caller provides the locking of the list.
 */
static inline void list_add_tail(struct list_head *entry, struct list_head *head)
{
	list_link_between(entry, head->prev, head);
}

/**
 * list_del_init() - unlink @entry and leave it as an empty, unlinked node
 * @entry: a linked node (or an initialised unlinked one: then a no-op)
 *
 * Context: any; the caller provides the locking of the list.
 */
static inline void list_del_init(struct list_head *entry)
{
	entry->next->prev = entry->prev;
	entry->prev->next = entry->next;
	INIT_LIST_HEAD(entry);
}

/**
 * list_del() - unlink @entry; it must not be used again before re-adding
 * @entry: a linked node
 *
 * Context: any; the caller provides the locking of the list.
 */
static inline void list_del(struct list_head *entry)
{
	entry->next->prev = entry->prev;
	entry->prev->next = entry->next;
	entry->next = NULL;
	entry->prev = NULL;
}

/**
 * list_replace() - put @new where @old is; @old is left dangling
 * @old: a linked node
 * @new: a node on no list
 *
 * Context: any; the caller provides the locking of the list.
 */
static inline void list_replace(struct list_head *old, struct list_head *new)
{
	new->next = old->next;
	new->next->prev = new;
	new->prev = old->prev;
	new->prev->next = new;
}

/**
 * list_move() - unlink @entry and insert it after @head
 * @entry: a linked node
 * @head:  where it goes
 *
 * Context: any; the caller provides the locking of the list.
 */
static inline void list_move(struct list_head *entry, struct list_head *head)
{
	entry->next->prev = entry->prev;
	entry->prev->next = entry->next;
	list_add(entry, head);
}

/**
 * list_move_tail() - unlink @entry and insert it before @head
 * @entry: a linked node
 * @head:  where it goes
 *
 * Context: any; the caller provides the locking of the list.
 */
static inline void list_move_tail(struct list_head *entry, struct list_head *head)
{
	entry->next->prev = entry->prev;
	entry->prev->next = entry->next;
	list_add_tail(entry, head);
}

/**
 * list_empty() - whether @head has no entries
 * @head: the list
 *
 * Context: any; the caller provides the locking of the list.
 * Return: true if @head has no entry.
 */
static inline bool list_empty(const struct list_head *head)
{
	return head->next == head;
}

/**
 * list_is_last() - whether @entry is the last one on @head
 * @entry: a node on @head
 * @head:  the list
 *
 * Context: any; the caller provides the locking of the list.
 * Return: true if @entry is the last entry of @head.
 */
static inline bool list_is_last(const struct list_head *entry,
				const struct list_head *head)
{
	return entry->next == head;
}

/**
 * list_splice_tail_init() - move every entry of @list to the end of @head
 * @list: the list to empty
 * @head: the list that receives them
 *
 * Context: any; the caller provides the locking of the list.
 */
static inline void list_splice_tail_init(struct list_head *list,
					 struct list_head *head)
{
	if (list_empty(list))
		return;
	list->next->prev = head->prev;
	head->prev->next = list->next;
	list->prev->next = head;
	head->prev = list->prev;
	INIT_LIST_HEAD(list);
}

#define list_entry(ptr, type, member) container_of(ptr, type, member)
#define list_first_entry(head, type, member) list_entry((head)->next, type, member)
#define list_last_entry(head, type, member) list_entry((head)->prev, type, member)
#define list_first_entry_or_null(head, type, member) \
	(list_empty(head) ? NULL : list_first_entry(head, type, member))
#define list_next_entry(pos, member) \
	list_entry((pos)->member.next, __typeof__(*(pos)), member)
#define list_prev_entry(pos, member) \
	list_entry((pos)->member.prev, __typeof__(*(pos)), member)
#define list_entry_is_head(pos, head, member) (&(pos)->member == (head))

#define list_for_each(pos, head) \
	for (pos = (head)->next; pos != (head); pos = pos->next)
#define list_for_each_safe(pos, n, head) \
	for (pos = (head)->next, n = pos->next; pos != (head); pos = n, n = pos->next)

/* Walk the entries of @head; @pos is the containing structure. */
#define list_for_each_entry(pos, head, member)				\
	for (pos = list_first_entry(head, __typeof__(*pos), member);	\
	     !list_entry_is_head(pos, head, member);			\
	     pos = list_next_entry(pos, member))

/* Walk backwards. */
#define list_for_each_entry_reverse(pos, head, member)			\
	for (pos = list_last_entry(head, __typeof__(*pos), member);	\
	     !list_entry_is_head(pos, head, member);			\
	     pos = list_prev_entry(pos, member))

/* Walk, allowing @pos to be unlinked and freed; @n is scratch. */
#define list_for_each_entry_safe(pos, n, head, member)			\
	for (pos = list_first_entry(head, __typeof__(*pos), member),	\
	     n = list_next_entry(pos, member);				\
	     !list_entry_is_head(pos, head, member);			\
	     pos = n, n = list_next_entry(n, member))

/* Walk backwards, allowing @pos to be unlinked and freed. */
#define list_for_each_entry_safe_reverse(pos, n, head, member)		\
	for (pos = list_last_entry(head, __typeof__(*pos), member),	\
	     n = list_prev_entry(pos, member);				\
	     !list_entry_is_head(pos, head, member);			\
	     pos = n, n = list_prev_entry(n, member))

/* Continue a walk after @pos (which is not visited again). */
#define list_for_each_entry_continue(pos, head, member)			\
	for (pos = list_next_entry(pos, member);			\
	     !list_entry_is_head(pos, head, member);			\
	     pos = list_next_entry(pos, member))

/* Continue a walk from @pos itself. */
#define list_for_each_entry_from(pos, head, member)			\
	for (; !list_entry_is_head(pos, head, member);			\
	     pos = list_next_entry(pos, member))

/* ---- hlist: singly headed lists for hash buckets ---- */

struct hlist_head {
	struct hlist_node *first;
};

struct hlist_node {
	struct hlist_node *next, **pprev;
};

#define HLIST_HEAD_INIT { .first = NULL }

static inline void INIT_HLIST_HEAD(struct hlist_head *h)
{
	h->first = NULL;
}

/**
 * INIT_HLIST_NODE() - mark @n as unlinked (hlist_unhashed() is then true)
 * @n: the node
 *
 * Context: any; the caller provides the locking of the list.
 */
static inline void INIT_HLIST_NODE(struct hlist_node *n)
{
	n->next = NULL;
	n->pprev = NULL;
}

/**
 * hlist_unhashed() - whether @n is on no hlist
 * @n: a node initialised with INIT_HLIST_NODE() or unlinked by hlist_del_init()
 *
 * Context: any; the caller provides the locking of the list.
 * Return: true if @n is on no list.
 */
static inline bool hlist_unhashed(const struct hlist_node *n)
{
	return !n->pprev;
}

/**
 * hlist_empty() - whether a bucket holds no node
 * @h: the bucket
 *
 * Context: any; the caller provides the locking of the list.
 * Return: true if @h is empty.
 */
static inline bool hlist_empty(const struct hlist_head *h)
{
	return !h->first;
}

/**
 * hlist_del_init() - unlink @n from its bucket and mark it unlinked
 * @n: a node, linked or not
 *
 * Context: any; the caller provides the locking of the list.
 */
static inline void hlist_del_init(struct hlist_node *n)
{
	if (hlist_unhashed(n))
		return;
	*n->pprev = n->next;
	if (n->next)
		n->next->pprev = n->pprev;
	INIT_HLIST_NODE(n);
}

/**
 * hlist_add_head() - insert @n first in bucket @h
 * @n: an unlinked node
 * @h: the bucket
 *
 * Context: any; the caller provides the locking of the list.
 */
static inline void hlist_add_head(struct hlist_node *n, struct hlist_head *h)
{
	struct hlist_node *first = h->first;

	n->next = first;
	if (first)
		first->pprev = &n->next;
	h->first = n;
	n->pprev = &h->first;
}

/**
 * hlist_add_behind() - insert @n right after @prev
 * @n:    an unlinked node
 * @prev: a linked node
 *
 * Context: any; the caller provides the locking of the list.
 */
static inline void hlist_add_behind(struct hlist_node *n, struct hlist_node *prev)
{
	n->next = prev->next;
	prev->next = n;
	n->pprev = &prev->next;
	if (n->next)
		n->next->pprev = &n->next;
}

/**
 * hlist_replace() - put @new where @old is, leaving @old unlinked
 * @old: a linked node
 * @new: an unlinked node
 *
 * Context: any; the caller provides the locking of the list.
 */
static inline void hlist_replace(struct hlist_node *old, struct hlist_node *new)
{
	new->next = old->next;
	new->pprev = old->pprev;
	*new->pprev = new;
	if (new->next)
		new->next->pprev = &new->next;
	INIT_HLIST_NODE(old);
}

#define hlist_entry(ptr, type, member) container_of(ptr, type, member)
#define hlist_entry_safe(ptr, type, member) \
	({ __typeof__(ptr) hes_p_ = (ptr); hes_p_ ? hlist_entry(hes_p_, type, member) : NULL; })

#define hlist_for_each(pos, head) \
	for (pos = (head)->first; pos; pos = pos->next)
#define hlist_for_each_safe(pos, n, head) \
	for (pos = (head)->first; pos && ((n = pos->next), 1); pos = n)

/* Walk the entries of bucket @head; @pos is the containing structure. */
#define hlist_for_each_entry(pos, head, member)				\
	for (pos = hlist_entry_safe((head)->first, __typeof__(*(pos)), member); \
	     pos;							\
	     pos = hlist_entry_safe((pos)->member.next, __typeof__(*(pos)), member))

/* Continue after @pos. */
#define hlist_for_each_entry_continue(pos, member)			\
	for (pos = hlist_entry_safe((pos)->member.next, __typeof__(*(pos)), member); \
	     pos;							\
	     pos = hlist_entry_safe((pos)->member.next, __typeof__(*(pos)), member))

/* Continue from @pos itself. */
#define hlist_for_each_entry_from(pos, member)				\
	for (; pos;							\
	     pos = hlist_entry_safe((pos)->member.next, __typeof__(*(pos)), member))

/* Walk, allowing @pos to be unlinked and freed; @n is a struct hlist_node *. */
#define hlist_for_each_entry_safe(pos, n, head, member)			\
	for (pos = hlist_entry_safe((head)->first, __typeof__(*pos), member); \
	     pos && ((n = pos->member.next), 1);				\
	     pos = hlist_entry_safe(n, __typeof__(*pos), member))

/*
 * slist: a singly linked bucket list, for hash chains where a word per
 * node matters more than O(1) removal. A node does not know its bucket:
 * removing or replacing it walks the bucket from its head, which is cheap
 * for the short chains of a hash table that grows. An unlinked node's next
 * is SLIST_UNLINKED (not NULL, which ends a chain).
 */
struct slist_node {
	struct slist_node *next;
};

struct slist_head {
	struct slist_node *first;
};

#define SLIST_UNLINKED	((struct slist_node *)(uintptr_t)1)

/**
 * INIT_SLIST_NODE() - mark @n as unlinked (slist_unhashed() is then true)
 * @n: the node
 *
 * Context: any; the caller provides the locking of the list.
 */
static inline void INIT_SLIST_NODE(struct slist_node *n)
{
	n->next = SLIST_UNLINKED;
}

/**
 * slist_unhashed() - whether @n is on no slist
 * @n: a node initialised with INIT_SLIST_NODE() or unlinked by
 *     slist_del_init()
 *
 * Context: any; the caller provides the locking of the list.
 * Return: true if @n is on no list.
 */
static inline bool slist_unhashed(const struct slist_node *n)
{
	return n->next == SLIST_UNLINKED;
}

/**
 * slist_empty() - whether a bucket holds no node
 * @h: the bucket
 *
 * Context: any; the caller provides the locking of the list.
 * Return: true if @h is empty.
 */
static inline bool slist_empty(const struct slist_head *h)
{
	return !h->first;
}

/**
 * slist_add_head() - insert @n first in bucket @h
 * @n: an unlinked node
 * @h: the bucket
 *
 * Context: any; the caller provides the locking of the list.
 */
static inline void slist_add_head(struct slist_node *n, struct slist_head *h)
{
	n->next = h->first;
	h->first = n;
}

/* The link that points at @n in bucket @h, which holds it. */
static inline struct slist_node **slist_link(struct slist_head *h,
					     const struct slist_node *n)
{
	struct slist_node **pp = &h->first;

	while (*pp != n)
		pp = &(*pp)->next;
	return pp;
}

/**
 * slist_del_init() - unlink @n from bucket @h and mark it unlinked
 * @n: a node of @h
 * @h: its bucket
 *
 * Context: any; the caller provides the locking of the list.
 */
static inline void slist_del_init(struct slist_node *n, struct slist_head *h)
{
	*slist_link(h, n) = n->next;
	INIT_SLIST_NODE(n);
}

/**
 * slist_replace() - put @new where @old is in bucket @h, leaving @old
 * unlinked
 * @old: a node of @h
 * @new: an unlinked node
 * @h:   their bucket
 *
 * Context: any; the caller provides the locking of the list.
 */
static inline void slist_replace(struct slist_node *old, struct slist_node *new,
				 struct slist_head *h)
{
	new->next = old->next;
	*slist_link(h, old) = new;
	INIT_SLIST_NODE(old);
}

#define slist_entry(ptr, type, member) container_of(ptr, type, member)
#define slist_entry_safe(ptr, type, member) \
	({ __typeof__(ptr) ses_p_ = (ptr); ses_p_ ? slist_entry(ses_p_, type, member) : NULL; })

#define slist_for_each(pos, head) \
	for (pos = (head)->first; pos; pos = pos->next)

/* Walk the entries of bucket @head; @pos is the containing structure. */
#define slist_for_each_entry(pos, head, member)				\
	for (pos = slist_entry_safe((head)->first, __typeof__(*(pos)), member); \
	     pos;							\
	     pos = slist_entry_safe((pos)->member.next, __typeof__(*(pos)), member))

/* Walk, allowing @pos to be unlinked; @n is a struct slist_node *. */
#define slist_for_each_entry_safe(pos, n, head, member)			\
	for (pos = slist_entry_safe((head)->first, __typeof__(*pos), member); \
	     pos && ((n = pos->member.next), 1);				\
	     pos = slist_entry_safe(n, __typeof__(*pos), member))

#endif /* ANCHORKV_LIST_H */
