/* SPDX-License-Identifier: MIT */
/*
 * rbtree.h - an intrusive red-black tree, after the Linux kernel's rbtree.
 *
 * The tree is a tool box, not a container: it links, recolours, rebalances,
 * erases, replaces and walks embedded struct rb_node anchors. It never
 * compares keys. The user writes the search loop and the insert-point loop
 * (so the comparison is inlined), then calls rb_link_node() and
 * rb_insert_color():
 *
 *	struct rb_node **link = &root->rb_node, *parent = NULL;
 *	while (*link) {
 *		struct thing *t = rb_entry(*link, struct thing, node);
 *		parent = *link;
 *		link = key < t->key ? &(*link)->rb_left : &(*link)->rb_right;
 *	}
 *	rb_link_node(&new->node, parent, link);
 *	rb_insert_color(&new->node, root);
 *
 * The parent pointer and the colour share one word (nodes are at least
 * 4-byte aligned, the colour is bit 0).
 *
 * Synchronization: the caller provides all locking.
 */
#ifndef ANCHORKV_RBTREE_H
#define ANCHORKV_RBTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

struct rb_node {
	uintptr_t rb_parent_color;	/* parent pointer | colour (bit 0: 1 = black) */
	struct rb_node *rb_right;
	struct rb_node *rb_left;
} __attribute__((aligned(sizeof(long))));

struct rb_root {
	struct rb_node *rb_node;
};

#define RB_ROOT (struct rb_root) { NULL }
#define rb_entry(ptr, type, member) container_of(ptr, type, member)
#define rb_entry_safe(ptr, type, member) \
	({ __typeof__(ptr) rbes_p_ = (ptr); rbes_p_ ? rb_entry(rbes_p_, type, member) : NULL; })

#define RB_RED		0
#define RB_BLACK	1

/**
 * rb_parent() - the parent of @node
 * @node: a node in a tree
 *
 * The parent pointer and the colour share one word; the colour is bit 0.
 *
 * Context: the caller holds the tree's lock.
 * Return: the parent, or NULL for the root.
 */
static inline struct rb_node *rb_parent(const struct rb_node *node)
{
	return (struct rb_node *)(node->rb_parent_color & ~(uintptr_t)3);
}

/**
 * rb_is_black() - whether @node is black
 * @node: a node in a tree
 *
 * Context: the caller holds the tree's lock.
 * Return: true if black.
 */
static inline bool rb_is_black(const struct rb_node *node)
{
	return node->rb_parent_color & RB_BLACK;
}

/**
 * rb_is_red() - whether @node is red
 * @node: a node in a tree
 *
 * Context: the caller holds the tree's lock.
 * Return: true if red.
 */
static inline bool rb_is_red(const struct rb_node *node)
{
	return !rb_is_black(node);
}

#define RB_EMPTY_ROOT(root)	((root)->rb_node == NULL)
/*
 * A node marked with RB_CLEAR_NODE() points to itself as parent. Nothing in
 * rbtree.c marks a node: after rb_erase() (or as the victim of
 * rb_replace_node()) a node is on no tree, but RB_EMPTY_NODE() is true only
 * once the user has called RB_CLEAR_NODE() on it.
 */
#define RB_EMPTY_NODE(node)	((node)->rb_parent_color == (uintptr_t)(node))
#define RB_CLEAR_NODE(node)	((node)->rb_parent_color = (uintptr_t)(node))

/**
 * rb_link_node() - attach @node at the leaf position found by a search
 * @node:    the new node
 * @parent:  the node whose child slot @rb_link is (NULL for the root)
 * @rb_link: the empty child slot found by the insert-point search
 *
 * The tree is unbalanced until rb_insert_color() is called.
 *
 * Context: the caller holds whatever lock guards the tree.
 */
static inline void rb_link_node(struct rb_node *node, struct rb_node *parent,
				struct rb_node **rb_link)
{
	node->rb_parent_color = (uintptr_t)parent;	/* red */
	node->rb_left = node->rb_right = NULL;
	*rb_link = node;
}

/**
 * rb_insert_color() - rebalance after rb_link_node()
 * @node: the node just linked
 * @root: its tree
 *
 * Context: the caller holds whatever lock guards the tree.
 */
void rb_insert_color(struct rb_node *node, struct rb_root *root);

/**
 * rb_erase() - unlink @node from @root and rebalance
 * @node: a node on @root
 * @root: the tree
 *
 * @node is not touched after return except to be unlinked; callers that test
 * RB_EMPTY_NODE() later call RB_CLEAR_NODE() themselves.
 *
 * Context: the caller holds whatever lock guards the tree.
 */
void rb_erase(struct rb_node *node, struct rb_root *root);

/**
 * rb_replace_node() - put @new in the place of @victim without rebalancing
 * @victim: a node on @root
 * @new:    a node on no tree, which must sort exactly where @victim does
 * @root:   the tree
 *
 * Context: the caller holds whatever lock guards the tree.
 */
void rb_replace_node(struct rb_node *victim, struct rb_node *new,
		     struct rb_root *root);

/**
 * rb_first() - the leftmost (smallest) node
 * @root: the tree
 *
 * Context: the caller holds whatever lock guards the tree.
 * Return: the node, or NULL for an empty tree.
 */
struct rb_node *rb_first(const struct rb_root *root);

/**
 * rb_last() - the rightmost (largest) node
 * @root: the tree
 *
 * Context: the caller holds whatever lock guards the tree.
 * Return: the node, or NULL for an empty tree.
 */
struct rb_node *rb_last(const struct rb_root *root);

/**
 * rb_next() - the in-order successor
 * @node: a node on a tree
 *
 * Context: the caller holds whatever lock guards the tree.
 * Return: the next node, or NULL after the last.
 */
struct rb_node *rb_next(const struct rb_node *node);

/**
 * rb_prev() - the in-order predecessor
 * @node: a node on a tree
 *
 * Context: the caller holds whatever lock guards the tree.
 * Return: the previous node, or NULL before the first.
 */
struct rb_node *rb_prev(const struct rb_node *node);

/**
 * rb_first_postorder() - the first node of a postorder walk
 * @root: the tree
 *
 * A postorder walk visits both children of a node before the node, so the
 * walker may free each node it has visited without unlinking it: the walk
 * never reads a visited node again. It is for emptying a tree, not for
 * anything that must keep it valid (the tree is garbage afterwards: reset
 * the root).
 *
 * Context: the caller holds whatever lock guards the tree.
 * Return: the deepest node of the leftmost path, or NULL for an empty tree.
 */
struct rb_node *rb_first_postorder(const struct rb_root *root);

/**
 * rb_next_postorder() - the node after @node in a postorder walk
 * @node: a node of the walk (may be NULL)
 *
 * Reads @node's links, so take the next node before freeing @node (as
 * rbtree_postorder_for_each_entry_safe() does).
 *
 * Context: the caller holds whatever lock guards the tree.
 * Return: the next node, or NULL after the root.
 */
struct rb_node *rb_next_postorder(const struct rb_node *node);

/**
 * rbtree_postorder_for_each_entry_safe() - walk the entries of a tree in
 * postorder, each free to be freed in the body
 * @pos:   the entry cursor (type *)
 * @n:     the next entry, taken before the body runs (type *)
 * @root:  the tree
 * @field: the name of the rb_node in the entry
 */
#define rbtree_postorder_for_each_entry_safe(pos, n, root, field)	      \
	for ((pos) = rb_entry_safe(rb_first_postorder(root),		      \
				   __typeof__(*(pos)), field);		      \
	     (pos) && ((n) = rb_entry_safe(rb_next_postorder(&(pos)->field), \
					  __typeof__(*(pos)), field), 1);    \
	     (pos) = (n))

#endif /* ANCHORKV_RBTREE_H */
