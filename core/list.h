/* SPDX-License-Identifier: MIT */
/*
 * list.h - intrusive doubly linked lists (list_head) and singly linked hash
 * chains (slist), after the Linux kernel's include/linux/list.h.
 *
 * The anchor is embedded in the object; container_of() (list_entry(),
 * slist_entry()) gets the object back. A list_head is circular with a head
 * sentinel (the slab classes' pages, a reply's chunks, a worker's
 * connections and its queue of new ones). The store's hash buckets are slists, not the
 * kernel's hlist: a head and a node are one pointer each, where hlist's
 * node is two (next and pprev), because an item pays for its node and the
 * chains stay short (1.5 to 2 items on average as the table grows), so a
 * removal that walks its bucket from the head costs less than a word per
 * item. Only what the code uses is here, as in the kernel ("code that is
 * never used tends to be frowned upon"): add a helper with its first user.
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
#define list_next_entry(pos, member) \
	list_entry((pos)->member.next, __typeof__(*(pos)), member)
#define list_entry_is_head(pos, head, member) (&(pos)->member == (head))

/* Walk the entries of @head; @pos is the containing structure. */
#define list_for_each_entry(pos, head, member)				\
	for (pos = list_first_entry(head, __typeof__(*pos), member);	\
	     !list_entry_is_head(pos, head, member);			\
	     pos = list_next_entry(pos, member))

/* Walk, allowing @pos to be unlinked and freed; @n is scratch. */
#define list_for_each_entry_safe(pos, n, head, member)			\
	for (pos = list_first_entry(head, __typeof__(*pos), member),	\
	     n = list_next_entry(pos, member);				\
	     !list_entry_is_head(pos, head, member);			\
	     pos = n, n = list_next_entry(n, member))

/* ---- slist: hash chains ---- */

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
