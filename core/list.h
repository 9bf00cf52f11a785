/* SPDX-License-Identifier: MIT */
/*
 * list.h - intrusive doubly linked lists (list_head), after the Linux
 * kernel's include/linux/list.h.
 *
 * The anchor is embedded in the object; container_of() (list_entry()) gets
 * the object back. A list_head is circular with a head sentinel (the slab
 * classes' pages, a reply's chunks, a worker's connections and its queue
 * of new ones). The store's hash table has no list: it is an array of
 * item pointers (htable.h), so that an item pays no word for it. Only
 * what the code uses is here, as in the kernel ("code that is never used
 * tends to be frowned upon"): add a helper with its first user.
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

/* Join @entry's neighbours to each other; @entry's own links are left
 * as they were, for the caller to reset or reuse (the kernel's
 * __list_del_entry()). */
static inline void list_unlink(struct list_head *entry)
{
	entry->next->prev = entry->prev;
	entry->prev->next = entry->next;
}

/**
 * list_del_init() - unlink @entry and leave it as an empty, unlinked node
 * @entry: a linked node (or an initialised unlinked one: then a no-op)
 *
 * Context: any; the caller provides the locking of the list.
 */
static inline void list_del_init(struct list_head *entry)
{
	list_unlink(entry);
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
	list_unlink(entry);
	entry->next = NULL;
	entry->prev = NULL;
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
	list_unlink(entry);
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
	list_unlink(entry);
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

#endif /* ANCHORKV_LIST_H */
