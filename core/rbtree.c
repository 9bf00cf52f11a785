// SPDX-License-Identifier: MIT
/*
 * rbtree.c - rebalancing, erasing, replacing and walking for the intrusive
 * red-black tree of rbtree.h.
 *
 * The five properties every tree keeps between calls (NIL = an empty child
 * slot, counted as black):
 *
 *   1. every node is red or black;
 *   2. the root is black;
 *   3. a red node has no red child;
 *   4. every path from a node down to a NIL below it meets the same number
 *      of black nodes (the node's "black height");
 *   5. in-order position is the user's key order (kept by the user's insert
 *      loop; the code below only rotates, and rotations keep in-order).
 *
 * From 3 and 4 the longest root-to-NIL path is at most twice the shortest,
 * so the height is at most 2 * log2(n + 1).
 *
 * Diagrams: capitals are red nodes, lower case black ones, (x) is a node of
 * either colour, and a, b, c... are whole subtrees. Left and right cases
 * are mirror images; the comments draw only the one where the parent (on
 * insert) or the doubly black node (on erase) is a left child.
 *
 * Nothing here compares keys, allocates, or takes a lock.
 */
#include "rbtree.h"
#include "rbtree_augmented.h"

#include <assert.h>
#include <limits.h>

/* ---- the colour bit and the parent pointer share rb_parent_color ---- */

static inline void rb_set_parent(struct rb_node *node, struct rb_node *parent)
{
	node->rb_parent_color = (uintptr_t)parent |
				(node->rb_parent_color & RB_BLACK);
}

static inline void rb_set_black(struct rb_node *node)
{
	node->rb_parent_color |= RB_BLACK;
}

static inline void rb_set_red(struct rb_node *node)
{
	node->rb_parent_color &= ~(uintptr_t)RB_BLACK;
}

static inline void rb_set_colour(struct rb_node *node, uintptr_t colour)
{
	node->rb_parent_color = (node->rb_parent_color & ~(uintptr_t)RB_BLACK) |
				colour;
}

static inline uintptr_t rb_colour(const struct rb_node *node)
{
	return node->rb_parent_color & RB_BLACK;
}

/* A NIL (empty slot) counts as black. */
static inline bool rb_is_black_or_nil(const struct rb_node *node)
{
	return !node || rb_is_black(node);
}

/*
 * Make whatever pointed down at @old (its parent's child slot, or the root)
 * point at @new instead. @parent is @old's parent, passed in because callers
 * have usually already rewritten @old's parent word.
 */
static inline void rb_change_child(struct rb_node *old, struct rb_node *new,
				   struct rb_node *parent, struct rb_root *root)
{
	if (!parent)
		root->rb_node = new;
	else if (parent->rb_left == old)
		parent->rb_left = new;
	else
		parent->rb_right = new;
}

/*
 * rb_rotate_left() - lift @x's right child into @x's place
 *
 *        (x)                 (y)
 *        / \                 / \
 *       a  (y)      -->    (x)  c
 *          / \             / \
 *         b   c           a   b
 *
 * In-order (a x b y c) is unchanged. Colours stay with their nodes; the
 * callers recolour.
 */
static __always_inline void
rb_rotate_left(struct rb_node *x, struct rb_root *root,
	       const struct rb_augment_callbacks *aug)
{
	struct rb_node *y = x->rb_right;
	struct rb_node *parent = rb_parent(x);

	x->rb_right = y->rb_left;
	if (y->rb_left)
		rb_set_parent(y->rb_left, x);
	y->rb_left = x;
	rb_set_parent(y, parent);
	rb_change_child(x, y, parent, root);
	rb_set_parent(x, y);
	if (aug)
		aug->rotate(x, y);	/* y took x's place; x is y's child */
}

/*
 * rb_rotate_right() - lift @y's left child into @y's place
 *
 *          (y)             (x)
 *          / \             / \
 *        (x)  c    -->    a  (y)
 *        / \                 / \
 *       a   b               b   c
 */
static __always_inline void
rb_rotate_right(struct rb_node *y, struct rb_root *root,
		const struct rb_augment_callbacks *aug)
{
	struct rb_node *x = y->rb_left;
	struct rb_node *parent = rb_parent(y);

	y->rb_left = x->rb_right;
	if (x->rb_right)
		rb_set_parent(x->rb_right, y);
	x->rb_right = y;
	rb_set_parent(x, parent);
	rb_change_child(y, x, parent, root);
	rb_set_parent(y, x);
	if (aug)
		aug->rotate(y, x);	/* x took y's place; y is x's child */
}

/*
 * Insertion. rb_link_node() hung N, red, in a NIL slot, so property 4 holds
 * and only property 3 (N under a red parent P) or 2 (N is the root) can be
 * broken. P red means P is not the root, so the grandparent G exists and is
 * black. U is P's sibling (N's uncle).
 *
 * Case 1, U red: push G's blackness down one level and go on from G, which
 * may now be red under a red parent. Black heights are unchanged.
 *
 *            g                  G
 *           / \                / \
 *          P   U      -->     p   u
 *         /                  /
 *        N                  N
 *
 * Case 2, U black and N an inner grandchild (P's right): rotate at P so that
 * the red pair lines up on the outside, then do case 3 with N and P swapped.
 *
 *            g                  g
 *           / \                / \
 *          P   u      -->     N   u
 *         / \                / \
 *        a   N              P   c
 *           / \            / \
 *          b   c          a   b
 *
 * Case 3, U black and N an outer grandchild: rotate at G and swap the
 * colours of P and G. P, now black, takes G's place; the black height of
 * every subtree is what it was, and no red node has a red child. Done.
 *
 *            g                  p
 *           / \                / \
 *          P   u      -->     N   G
 *         / \                    / \
 *        N   c                  c   u
 */
static __always_inline void
rb_insert_fixup(struct rb_node *node, struct rb_root *root,
		const struct rb_augment_callbacks *aug)
{
	struct rb_node *parent, *gparent, *uncle;

	while ((parent = rb_parent(node)) && rb_is_red(parent)) {
		/* a red node is never the root, so gparent exists */
		gparent = rb_parent(parent);

		if (parent == gparent->rb_left) {
			uncle = gparent->rb_right;
			/* case 1: red uncle; recolour, go on from gparent */
			if (uncle && rb_is_red(uncle)) {
				rb_set_black(parent);
				rb_set_black(uncle);
				rb_set_red(gparent);
				node = gparent;
				continue;
			}
			/* case 2: inner grandchild; rotate it to the outside */
			if (node == parent->rb_right) {
				rb_rotate_left(parent, root, aug);
				parent = node;
			}
			/* case 3: outer grandchild; rotate at gparent, done */
			rb_set_black(parent);
			rb_set_red(gparent);
			rb_rotate_right(gparent, root, aug);
			break;
		} else {
			uncle = gparent->rb_left;
			/* case 1: red uncle; recolour, go on from gparent */
			if (uncle && rb_is_red(uncle)) {
				rb_set_black(parent);
				rb_set_black(uncle);
				rb_set_red(gparent);
				node = gparent;
				continue;
			}
			/* case 2: inner grandchild; rotate it to the outside */
			if (node == parent->rb_left) {
				rb_rotate_right(parent, root, aug);
				parent = node;
			}
			/* case 3: outer grandchild; rotate at gparent, done */
			rb_set_black(parent);
			rb_set_red(gparent);
			rb_rotate_left(gparent, root, aug);
			break;
		}
	}
	/* Case 1 may have reddened the root; this also colours a lone root. */
	rb_set_black(root->rb_node);
}

void rb_insert_color(struct rb_node *node, struct rb_root *root)
{
	rb_insert_fixup(node, root, NULL);
}

void rb_insert_augmented(struct rb_node *node, struct rb_root *root,
			 const struct rb_augment_callbacks *aug)
{
	/* the new leaf and every ancestor: their subtrees gained it */
	aug->propagate(node, NULL);
	rb_insert_fixup(node, root, aug);
}

void rb_insert_augmented_path(struct rb_node *node, struct rb_root *root,
			      const struct rb_augment_callbacks *aug)
{
	rb_insert_fixup(node, root, aug);
}

/*
 * Erase rebalancing. A black node was unlinked, so every path through the
 * slot X (a child of @parent, possibly NIL) is one black short. Think of X
 * as carrying an extra black ("doubly black"); the loop moves that extra
 * black up, or cancels it by rotation. X is black (or NIL) in the loop: a red
 * X simply turns black and absorbs it. S is X's sibling; S is not NIL, since
 * its side has a black height of at least one more than X's.
 *
 * Case 1, S red (so P is black): rotate at P and swap their colours. X's
 * new sibling is black; go on to cases 2-4.
 *
 *            p                   s
 *           / \                 / \
 *          x   S      -->      P   d
 *             / \             / \
 *            c   d           x   c
 *
 * Case 2, S black with two black children: make S red, so that S's side is
 * one short too, and move the extra black up to P. If P was red, painting
 * it black ends the loop; otherwise go on with X = P.
 *
 *           (p)                 (p) <- now X
 *           / \                 / \
 *          x   s      -->      x   S
 *             / \                 / \
 *            c   d               c   d
 *
 * Case 3, S black, its near child C red, its far child D black: rotate at S
 * and swap the colours of S and C, so that X's sibling has a red far child:
 * case 4.
 *
 *           (p)                 (p)
 *           / \                 / \
 *          x   s      -->      x   c
 *             / \                   \
 *            C   d                   S
 *                                     \
 *                                      d
 *
 * Case 4, S black with a red far child D: rotate at P; S takes P's colour,
 * P and D become black. X's side gains the black P, S's old side keeps its
 * count through the now-black D. Done.
 *
 *           (p)                 (s)
 *           / \                 / \
 *          x   s      -->      p   d
 *             / \             / \
 *           (c)  D           x  (c)
 */
static __always_inline void
rb_erase_color(struct rb_node *node, struct rb_node *parent,
	       struct rb_root *root, const struct rb_augment_callbacks *aug)
{
	struct rb_node *sibling;

	while (node != root->rb_node && rb_is_black_or_nil(node)) {
		if (node == parent->rb_left) {
			sibling = parent->rb_right;
			/* case 1: red sibling; rotate to get a black one */
			if (rb_is_red(sibling)) {
				rb_set_black(sibling);
				rb_set_red(parent);
				rb_rotate_left(parent, root, aug);
				sibling = parent->rb_right;
			}
			/* case 2: black nephews; move the extra black up */
			if (rb_is_black_or_nil(sibling->rb_left) &&
			    rb_is_black_or_nil(sibling->rb_right)) {
				rb_set_red(sibling);
				node = parent;
				parent = rb_parent(node);
				continue;
			}
			/* case 3: far nephew black; rotate the near one up */
			if (rb_is_black_or_nil(sibling->rb_right)) {
				rb_set_black(sibling->rb_left);
				rb_set_red(sibling);
				rb_rotate_right(sibling, root, aug);
				sibling = parent->rb_right;
			}
			/* case 4: far nephew red; rotate at parent, done */
			rb_set_colour(sibling, rb_colour(parent));
			rb_set_black(parent);
			rb_set_black(sibling->rb_right);
			rb_rotate_left(parent, root, aug);
			return;
		} else {
			sibling = parent->rb_left;
			/* case 1: red sibling; rotate to get a black one */
			if (rb_is_red(sibling)) {
				rb_set_black(sibling);
				rb_set_red(parent);
				rb_rotate_right(parent, root, aug);
				sibling = parent->rb_left;
			}
			/* case 2: black nephews; move the extra black up */
			if (rb_is_black_or_nil(sibling->rb_left) &&
			    rb_is_black_or_nil(sibling->rb_right)) {
				rb_set_red(sibling);
				node = parent;
				parent = rb_parent(node);
				continue;
			}
			/* case 3: far nephew black; rotate the near one up */
			if (rb_is_black_or_nil(sibling->rb_left)) {
				rb_set_black(sibling->rb_right);
				rb_set_red(sibling);
				rb_rotate_left(sibling, root, aug);
				sibling = parent->rb_left;
			}
			/* case 4: far nephew red; rotate at parent, done */
			rb_set_colour(sibling, rb_colour(parent));
			rb_set_black(parent);
			rb_set_black(sibling->rb_left);
			rb_rotate_right(parent, root, aug);
			return;
		}
	}
	/* A red X absorbs the extra black; so does the root. */
	if (node)
		rb_set_black(node);
}

/*
 * Erase first unlinks, then rebalances if a black node left its position.
 *
 * Zero or one child: in a valid tree a node with exactly one child is black
 * and the child is a red leaf (a black child would make the two sides'
 * black heights differ). The child takes the node's place and turns black:
 * nothing else changes. A childless node leaves a NIL; if it was black, that
 * slot is one black short.
 *
 *        (p)            (p)           (p)          (p)
 *         |              |             |            |
 *         n      -->     c             n     -->   NIL  (short if n black)
 *        /              (now black)
 *       C
 *
 * Two children: the successor S (leftmost of the right subtree) has no left
 * child. S takes N's place, links and colour; what is lost is S's old
 * position, which is the zero-or-one-child case above, with S's right child
 * R moving up.
 *
 *          (n)                 (s)
 *          / \                 / \
 *         a   b               a   b
 *            / \      -->        / \
 *          ...  ...            ...  ...
 *          /                   /
 *        (s)                  R  (or NIL; short if s was black)
 *          \
 *           R
 *
 * When S is N's right child itself, R simply stays S's right child.
 */
static __always_inline void
rb_erase_node(struct rb_node *node, struct rb_root *root,
	      const struct rb_augment_callbacks *aug)
{
	struct rb_node *child, *parent, *succ;
	bool lost_black;

	if (!node->rb_left || !node->rb_right) {
		child = node->rb_left ? node->rb_left : node->rb_right;
		parent = rb_parent(node);
		rb_change_child(node, child, parent, root);
		/* every ancestor of the unlinked node lost it */
		if (aug && parent)
			aug->propagate(parent, NULL);
		if (child) {
			assert(rb_is_black(node) && rb_is_red(child));
			rb_set_parent(child, parent);
			rb_set_black(child);
			return;
		}
		if (rb_is_black(node) && parent)
			rb_erase_color(NULL, parent, root, aug);
		return;
	}

	succ = node->rb_right;
	while (succ->rb_left)
		succ = succ->rb_left;
	child = succ->rb_right;
	lost_black = rb_is_black(succ);

	if (succ == node->rb_right) {
		parent = succ;		/* child stays succ's right child */
	} else {
		parent = rb_parent(succ);
		parent->rb_left = child;
		if (child)
			rb_set_parent(child, parent);
		succ->rb_right = node->rb_right;
		rb_set_parent(node->rb_right, succ);
	}
	succ->rb_left = node->rb_left;
	rb_set_parent(node->rb_left, succ);
	succ->rb_parent_color = node->rb_parent_color;
	rb_change_child(node, succ, rb_parent(node), root);
	/*
	 * What changed lies on the path from succ's old parent (or succ,
	 * when it was node's right child) up through succ, now in node's
	 * place, to the root: recompute it before any rotation reads it.
	 */
	if (aug)
		aug->propagate(parent, NULL);

	if (!lost_black)
		return;
	if (child) {
		/* succ was black with one (red) child: as in the first case */
		rb_set_black(child);
		return;
	}
	rb_erase_color(NULL, parent, root, aug);
}

void rb_erase(struct rb_node *node, struct rb_root *root)
{
	rb_erase_node(node, root, NULL);
}

void rb_erase_augmented(struct rb_node *node, struct rb_root *root,
			const struct rb_augment_callbacks *aug)
{
	rb_erase_node(node, root, aug);
}

void rb_replace_node(struct rb_node *victim, struct rb_node *new,
		     struct rb_root *root)
{
	struct rb_node *parent = rb_parent(victim);

	*new = *victim;		/* parent, colour and both children */
	if (victim->rb_left)
		rb_set_parent(victim->rb_left, new);
	if (victim->rb_right)
		rb_set_parent(victim->rb_right, new);
	rb_change_child(victim, new, parent, root);
}

struct rb_node *rb_first(const struct rb_root *root)
{
	struct rb_node *node = root->rb_node;

	if (!node)
		return NULL;
	while (node->rb_left)
		node = node->rb_left;
	return node;
}

struct rb_node *rb_last(const struct rb_root *root)
{
	struct rb_node *node = root->rb_node;

	if (!node)
		return NULL;
	while (node->rb_right)
		node = node->rb_right;
	return node;
}

/*
 * The successor is the leftmost node of the right subtree if there is one;
 * otherwise the first ancestor reached from its left side. A node marked
 * with RB_CLEAR_NODE() is on no tree and has no neighbours.
 */
struct rb_node *rb_next(const struct rb_node *node)
{
	struct rb_node *parent;

	if (RB_EMPTY_NODE(node))
		return NULL;
	if (node->rb_right) {
		node = node->rb_right;
		while (node->rb_left)
			node = node->rb_left;
		return (struct rb_node *)node;
	}
	while ((parent = rb_parent(node)) && node == parent->rb_right)
		node = parent;
	return parent;
}

/* The mirror image of rb_next(). */
struct rb_node *rb_prev(const struct rb_node *node)
{
	struct rb_node *parent;

	if (RB_EMPTY_NODE(node))
		return NULL;
	if (node->rb_left) {
		node = node->rb_left;
		while (node->rb_right)
			node = node->rb_right;
		return (struct rb_node *)node;
	}
	while ((parent = rb_parent(node)) && node == parent->rb_left)
		node = parent;
	return parent;
}

/* The first node to visit in postorder below @node: left first, else right. */
static struct rb_node *rb_deepest_first(const struct rb_node *node)
{
	for (;;) {
		if (node->rb_left)
			node = node->rb_left;
		else if (node->rb_right)
			node = node->rb_right;
		else
			return (struct rb_node *)node;
	}
}

struct rb_node *rb_first_postorder(const struct rb_root *root)
{
	if (!root->rb_node)
		return NULL;
	return rb_deepest_first(root->rb_node);
}

struct rb_node *rb_next_postorder(const struct rb_node *node)
{
	struct rb_node *parent;

	if (!node)
		return NULL;
	parent = rb_parent(node);
	/* a left child is followed by its sibling's subtree, then the parent */
	if (parent && node == parent->rb_left && parent->rb_right)
		return rb_deepest_first(parent->rb_right);
	return parent;
}

/* ---- a tree built whole from nodes in order ---- */

static struct rb_node *rb_build(struct rb_node **nodes, size_t lo, size_t hi,
				struct rb_node *parent, unsigned int depth,
				unsigned int red_depth,
				const struct rb_augment_callbacks *aug)
{
	struct rb_node *node;
	size_t mid;

	if (lo >= hi)
		return NULL;
	mid = lo + (hi - lo) / 2;
	node = nodes[mid];
	node->rb_parent_color = (uintptr_t)parent |
				(depth == red_depth ? RB_RED : RB_BLACK);
	node->rb_left = rb_build(nodes, lo, mid, node, depth + 1, red_depth,
				 aug);
	node->rb_right = rb_build(nodes, mid + 1, hi, node, depth + 1,
				  red_depth, aug);
	if (aug)
		aug->propagate(node, parent);	/* this node only */
	return node;
}

void rb_build_balanced(struct rb_node **nodes, size_t n, struct rb_root *root,
		       const struct rb_augment_callbacks *aug)
{
	unsigned int depth = 0;

	/*
	 * Halving keeps the two subtrees of every node within one node of
	 * each other, so every NIL is at depth d or d + 1, d the deepest
	 * level of nodes: all black but that level, red when it is not full
	 * (n + 1 not a power of two), gives every path the same blacks.
	 */
	while (((size_t)2 << depth) <= n)
		depth++;
	if (((n + 1) & n) == 0)
		depth = UINT_MAX;	/* a full tree: all black */
	root->rb_node = rb_build(nodes, 0, n, NULL, 0, depth, aug);
}
