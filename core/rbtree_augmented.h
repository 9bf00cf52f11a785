/* SPDX-License-Identifier: MIT */
/*
 * rbtree_augmented.h - a value per node kept up to date over a subtree,
 * after the Linux kernel's rbtree_augmented.h.
 *
 * The user keeps, in the struct that embeds each rb_node, a value computed
 * from the node and its children's values: a subtree size (for ranks and
 * counts), a maximum end (interval trees). The tree still never compares
 * and still knows nothing of the value: it calls three callbacks at the
 * moments the shape changes, and RB_DECLARE_CALLBACKS() writes the three
 * from one "compute this node's value from its children" function:
 *
 *	static uint32_t thing_size(const struct thing *t)
 *	{
 *		return 1 + size_of(t->node.rb_left) + size_of(t->node.rb_right);
 *	}
 *	RB_DECLARE_CALLBACKS(static, thing_cb, struct thing, node, size,
 *			     thing_size)
 *
 *	rb_link_node(&new->node, parent, link);      (the user's search)
 *	rb_insert_augmented(&new->node, root, &thing_cb);
 *	...
 *	rb_erase_augmented(&old->node, root, &thing_cb);
 *
 * A tree is either augmented or not for its whole life: mixing
 * rb_insert_color()/rb_erase() with these leaves the values stale. Users
 * of a plain tree pay nothing (the plain calls pass no callbacks, and the
 * test of them folds away).
 *
 * Synchronization: the caller provides all locking.
 */
#ifndef ANCHORKV_RBTREE_AUGMENTED_H
#define ANCHORKV_RBTREE_AUGMENTED_H

#include "rbtree.h"

struct rb_augment_callbacks {
	/*
	 * propagate: recompute the value of @node from its children, then
	 * of each ancestor in turn, up to @stop (excluded; NULL: through the
	 * root).
	 */
	void (*propagate)(struct rb_node *node, struct rb_node *stop);
	/* copy: @new took @old's place over the same subtree. */
	void (*copy)(struct rb_node *old, struct rb_node *new);
	/*
	 * rotate: @new took @old's place over the same subtree (copy the
	 * value), and @old is now a child of @new (recompute it).
	 */
	void (*rotate)(struct rb_node *old, struct rb_node *new);
};

/**
 * rb_insert_augmented() - rebalance after rb_link_node(), keeping values
 * @node: the node just linked (its value need not be set)
 * @root: its tree
 * @aug:  the tree's callbacks
 *
 * Computes the value of @node and of every ancestor (each subtree gained
 * @node), then rebalances as rb_insert_color() does, calling @aug->rotate
 * at each rotation. O(log n).
 *
 * Context: the caller holds whatever lock guards the tree.
 */
void rb_insert_augmented(struct rb_node *node, struct rb_root *root,
			 const struct rb_augment_callbacks *aug);

/**
 * rb_insert_augmented_path() - rebalance after rb_link_node(), when the
 * user's search has already set the values on its way down
 * @node: the node just linked, its value set (as a leaf)
 * @root: its tree
 * @aug:  the tree's callbacks
 *
 * The kernel's rb_insert_augmented(): a search that adds to each node it
 * passes (a subtree size: one more) leaves every ancestor right, and
 * recomputing them again would read each one's other child, a cache miss
 * per level. Only the rotations call @aug->rotate. O(log n).
 *
 * Context: the caller holds whatever lock guards the tree.
 */
void rb_insert_augmented_path(struct rb_node *node, struct rb_root *root,
			      const struct rb_augment_callbacks *aug);

/**
 * rb_erase_augmented() - unlink @node and rebalance, keeping values
 * @node: a node on @root
 * @root: the tree
 * @aug:  the tree's callbacks
 *
 * As rb_erase(); the values of the nodes whose subtree lost @node are
 * recomputed before any rotation. O(log n).
 *
 * Context: the caller holds whatever lock guards the tree.
 */
void rb_erase_augmented(struct rb_node *node, struct rb_root *root,
			const struct rb_augment_callbacks *aug);

/**
 * rb_build_balanced() - make a tree of nodes given in order, in O(n)
 * @nodes: @n nodes in the tree's order, on no tree (or on one being
 *         thrown away: every field of theirs is written)
 * @n:     how many
 * @root:  the tree to make; whatever it held is forgotten
 * @aug:   the tree's callbacks, or NULL for a plain tree: each node's
 *         value is computed once its children are in place
 *
 * No comparison and no rotation: every node's two subtrees hold the same
 * number of nodes or one apart, so the height is the least possible. For
 * a split of one tree in two, or a bulk load of sorted input.
 *
 * Context: the caller holds whatever lock guards the tree.
 */
void rb_build_balanced(struct rb_node **nodes, size_t n, struct rb_root *root,
		       const struct rb_augment_callbacks *aug);

/**
 * rb_replace_node_augmented() - put @new in @victim's place, with its value
 * @victim: a node on @root
 * @new:    a node on no tree, which must sort exactly where @victim does
 * @root:   the tree
 * @aug:    the tree's callbacks
 *
 * Context: the caller holds whatever lock guards the tree.
 */
static inline void rb_replace_node_augmented(struct rb_node *victim,
					     struct rb_node *new,
					     struct rb_root *root,
					     const struct rb_augment_callbacks *aug)
{
	rb_replace_node(victim, new, root);
	aug->copy(victim, new);
}

/*
 * RB_DECLARE_CALLBACKS() - define a struct rb_augment_callbacks @rbname
 * @rbstatic:    "static" or nothing
 * @rbname:      the name of the callbacks (and the prefix of the helpers)
 * @rbstruct:    the type that embeds the rb_node, such as struct thing
 * @rbfield:     the name of its rb_node
 * @rbaugmented: the name of its value
 * @rbcompute:   a function (const rbstruct *) -> the value, reading the
 *               node and its children's values only
 */
#define RB_DECLARE_CALLBACKS(rbstatic, rbname, rbstruct, rbfield,	\
			     rbaugmented, rbcompute)			\
static void rbname ## _propagate(struct rb_node *rb,			\
				 struct rb_node *stop)			\
{									\
	while (rb != stop) {						\
		rbstruct *node_ = rb_entry(rb, rbstruct, rbfield);	\
									\
		node_->rbaugmented = rbcompute(node_);			\
		rb = rb_parent(&node_->rbfield);			\
	}								\
}									\
static void rbname ## _copy(struct rb_node *rb_old,			\
			    struct rb_node *rb_new)			\
{									\
	rb_entry(rb_new, rbstruct, rbfield)->rbaugmented =		\
		rb_entry(rb_old, rbstruct, rbfield)->rbaugmented;	\
}									\
static void rbname ## _rotate(struct rb_node *rb_old,			\
			      struct rb_node *rb_new)			\
{									\
	rbstruct *old_ = rb_entry(rb_old, rbstruct, rbfield);		\
	rbstruct *new_ = rb_entry(rb_new, rbstruct, rbfield);		\
									\
	new_->rbaugmented = old_->rbaugmented;				\
	old_->rbaugmented = rbcompute(old_);				\
}									\
rbstatic const struct rb_augment_callbacks rbname = {			\
	.propagate = rbname ## _propagate,				\
	.copy = rbname ## _copy,					\
	.rotate = rbname ## _rotate,					\
}

#endif /* ANCHORKV_RBTREE_AUGMENTED_H */
