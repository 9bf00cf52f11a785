// SPDX-License-Identifier: MIT
/*
 * part.c - the partitions of the string keys' order (see part.h): a
 * string item inserted, replaced or erased in its partition's rbtree with
 * the subtree sizes kept, a partition split in two when it grows, two
 * neighbours merged when they shrink, and the retired maps and
 * partitions freed once the store says nobody can read them. Nothing here
 * knows the shards.
 */
#include "part.h"

#include <errno.h>

#include "alloc.h"
#include "rbtree_augmented.h"

#ifdef AK_LOCK_DEBUG
__thread unsigned int ak_parts_held;
#endif

/* ---- a string item in its partition's order ---- */

/* A partition's rbtree keeps each item's subtree size, modulo 2^16. */
static uint16_t item_subtree(const struct item *it)
{
	return (uint16_t)(1 + node_subtree(it->rbnode.rb_left) +
			  node_subtree(it->rbnode.rb_right));
}

RB_DECLARE_CALLBACKS(static, subtree_cb, struct item, rbnode, subtree,
		     item_subtree);

/*
 * Link @it into its partition's order. A key above the partition's last
 * one (sorted input: a load in key order) goes right below that last
 * node, without a descent: only the right spine, hot in the cache, gains
 * it in its subtree sizes. Return: whether the partition has grown past
 * part_max.
 */
bool part_insert_locked(struct parts *ps, struct item *it)
{
	/* once: the subtree counts written below may alias @it's fields */
	const char *key = item_str_key(it);
	size_t nkey = it->nkey;
	struct part *p = part_lock_key(ps, key, nkey);
	struct rb_node **link = &p->tree.rb_node, *parent = NULL, *n;
	const struct item *last;
	bool big, rightmost = true;

	last = p->last ? rb_entry(p->last, struct item, rbnode) : NULL;
	if (last &&
	    key_bytes_cmp(key, nkey, item_str_key(last), last->nkey) > 0) {
		for (n = p->last; n; n = rb_parent(n))
			rb_entry(n, struct item, rbnode)->subtree++;
		parent = p->last;
		link = &parent->rb_right;
	}
	while (*link) {
		struct item *cur = rb_entry(*link, struct item, rbnode);

		parent = *link;
		cur->subtree++;		/* it goes below cur */
		if (key_bytes_cmp(key, nkey, item_str_key(cur), cur->nkey) < 0) {
			link = &(*link)->rb_left;
			rightmost = false;
		} else {
			link = &(*link)->rb_right;
		}
	}
	it->subtree = 1;
	rb_link_node(&it->rbnode, parent, link);
	rb_insert_augmented_path(&it->rbnode, &p->tree, &subtree_cb);
	if (rightmost)
		p->last = &it->rbnode;
	big = ++p->count > ps->part_max;
	part_unlock(p);
	return big;
}

/* @it (same key) takes @old's place in the order. */
void part_replace_locked(struct parts *ps, struct item *old, struct item *it)
{
	struct part *p = part_lock_key(ps, item_str_key(it), it->nkey);

	rb_replace_node_augmented(&old->rbnode, &it->rbnode, &p->tree,
				  &subtree_cb);
	if (p->last == &old->rbnode)
		p->last = &it->rbnode;
	part_unlock(p);
	RB_CLEAR_NODE(&old->rbnode);
}

void part_erase_locked(struct parts *ps, struct item *it)
{
	struct part *p = part_lock_key(ps, item_str_key(it), it->nkey);

	if (p->last == &it->rbnode)
		p->last = rb_prev(&it->rbnode);
	rb_erase_augmented(&it->rbnode, &p->tree, &subtree_cb);
	p->count--;
	part_unlock(p);
	RB_CLEAR_NODE(&it->rbnode);
}

/*
 * An empty partition whose keys start at @lo (@nlo 0: no bound).
 * Context: no lock needed (it allocates). Return: it, or NULL.
 */
static struct part *part_new(const char *lo, size_t nlo)
{
	struct part *p = ak_calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	ak_lock_init(&p->lock);
	p->tree = RB_ROOT;
	p->nlo = (uint8_t)nlo;
	memcpy(p->lo, lo, nlo);
	p->lo_pfx = key_prefix(lo, nlo);
	return p;
}

/* Append the nodes of @tree to @nodes in order. Return: how many. */
static size_t tree_list(const struct rb_root *tree, struct rb_node **nodes)
{
	struct rb_node *node;
	size_t n = 0;

	for (node = rb_first(tree); node; node = rb_next(node))
		nodes[n++] = node;
	return n;
}

/* Put @m, no longer the store's map, on the list of those to free. */
static void map_retire(struct parts *ps, struct part_map *m)
{
	m->retired = ps->retired;
	ps->retired = m;
}

/*
 * Split @p's items, listed in order in @nodes (room for p->count), in two:
 * the lower half stays, the upper half goes to the empty @np, each tree
 * built again balanced (rb_build_balanced(): an in-order walk and a
 * build, no rotation and no erase); @np's lower bound becomes the
 * smallest key moved.
 */
static void part_halve_locked(struct part *p, struct part *np,
			      struct rb_node **nodes)
{
	size_t n, keep;
	struct item *it;

	ak_lock_assert_held(&p->lock);
	n = tree_list(&p->tree, nodes);
	keep = n / 2;
	rb_build_balanced(nodes, keep, &p->tree, &subtree_cb);
	rb_build_balanced(nodes + keep, n - keep, &np->tree, &subtree_cb);
	p->last = rb_last(&p->tree);
	np->last = rb_last(&np->tree);
	p->count = keep;
	np->count = n - keep;
	it = rb_entry(nodes[keep], struct item, rbnode);
	np->nlo = it->nkey;
	memcpy(np->lo, item_str_key(it), it->nkey);
	np->lo_pfx = key_prefix(np->lo, np->nlo);
}

/* Free the retired maps and partitions. Context: the split mutex held,
 * and nobody can read them any more, or the store is being destroyed. */
static void parts_free_retired(struct parts *ps)
{
	while (ps->retired) {
		struct part_map *m = ps->retired;

		ps->retired = m->retired;
		ak_free(m);
	}
	while (ps->retired_parts) {
		struct part *p = ps->retired_parts;

		ps->retired_parts = p->retired;
		ak_free(p);
	}
}

void parts_free_unread_locked(struct parts *ps)
{
	/* a string walk counts itself before it reads the map (both
	 * sequentially consistent, as the publication of a new one) */
	if (__atomic_load_n(&ps->readers, __ATOMIC_SEQ_CST))
		return;		/* the next split or merge tries again */
	parts_free_retired(ps);
}

/*
 * Split the partition that holds @key in two if it has more than
 * ps->part_max items: the upper half moves into a new partition under
 * the lock of the one split, so only that partition waits, and the new
 * map is published before that lock is dropped (part_lock_key()).
 */
bool part_split(struct parts *ps, const char *key, size_t nkey)
{
	struct part_map *m, *nm = NULL;
	struct rb_node **nodes = NULL;
	struct part *p, *np = NULL;
	bool retired = false;
	uint64_t room = 0;
	unsigned int i;

	pthread_mutex_lock(&ps->split_lock);
	m = ps->map;		/* only splits change it, under this mutex */
	if (m->n >= PARTS_MAX)
		goto out;
	np = part_new("", 0);
	nm = ak_malloc(sizeof(*nm) + (m->n + 1) * sizeof(nm->parts[0]));
	if (!np || !nm)
		goto out;
	i = map_find(m, key, nkey);
	p = m->parts[i];
	for (;;) {
		part_lock(p);
		if (p->count <= ps->part_max || p->count < 2) {
			part_unlock(p);
			goto out;	/* another split came first */
		}
		if (p->count <= room)
			break;
		/* the list of its nodes is allocated outside its lock */
		room = p->count + p->count / 8 + 64;
		part_unlock(p);
		ak_free(nodes);
		nodes = ak_malloc(room * sizeof(*nodes));
		if (!nodes)
			goto out;
	}
	part_halve_locked(p, np, nodes);
	nm->n = m->n + 1;
	nm->retired = NULL;
	memcpy(nm->parts, m->parts, (i + 1) * sizeof(nm->parts[0]));
	nm->parts[i + 1] = np;
	memcpy(nm->parts + i + 2, m->parts + i + 1,
	       (m->n - i - 1) * sizeof(nm->parts[0]));
	__atomic_store_n(&ps->map, nm, __ATOMIC_SEQ_CST);
	part_unlock(p);
	np = NULL;
	nm = NULL;
	map_retire(ps, m);
	ps->splits++;
	retired = true;
out:
	pthread_mutex_unlock(&ps->split_lock);
	ak_free(nodes);
	ak_free(np);
	ak_free(nm);
	return retired;
}

/* A new map: @m without its partition @i. */
static void map_copy_without(struct part_map *nm, const struct part_map *m,
			     unsigned int i)
{
	nm->n = m->n - 1;
	nm->retired = NULL;
	memcpy(nm->parts, m->parts, i * sizeof(nm->parts[0]));
	memcpy(nm->parts + i, m->parts + i + 1,
	       (m->n - i - 1) * sizeof(nm->parts[0]));
}

/*
 * Merge partitions @i and @i + 1 of the current map into @i, if between
 * them they hold at most part_max / 2 items: both locks (the lower first),
 * an in-order list of both trees' nodes, one balanced tree built from it;
 * the new map is published before the locks go, and the upper partition
 * is retired with the old map (a writer may still be waiting on its
 * lock: it will see the map changed, and look again).
 * Context: the split mutex is held, no shard or partition lock.
 * Return: whether they merged.
 */
static bool part_merge_under_split(struct parts *ps, unsigned int i,
				   uint64_t room)
{
	struct part_map *m = ps->map, *nm;
	struct part *p = m->parts[i], *q = m->parts[i + 1];
	struct rb_node **nodes;
	bool merged = false;
	size_t n = 0;

	nm = ak_malloc(sizeof(*nm) + (m->n - 1) * sizeof(nm->parts[0]));
	nodes = ak_malloc((room ? room : 1) * sizeof(*nodes));
	if (!nm || !nodes)
		goto out;
	part_lock(p);
	part_lock_nested(q);
	if (p->count + q->count <= ps->part_max / 2 &&
	    p->count + q->count <= room) {
		n = tree_list(&p->tree, nodes);
		n += tree_list(&q->tree, nodes + n);
		rb_build_balanced(nodes, n, &p->tree, &subtree_cb);
		p->last = rb_last(&p->tree);
		q->tree = RB_ROOT;
		q->last = NULL;
		p->count = n;
		q->count = 0;
		map_copy_without(nm, m, i + 1);
		__atomic_store_n(&ps->map, nm, __ATOMIC_SEQ_CST);
		merged = true;
	}
	part_unlock(q);
	part_unlock(p);
	if (merged) {
		nm = NULL;
		map_retire(ps, m);
		q->retired = ps->retired_parts;
		ps->retired_parts = q;
		ps->merges++;
	}
out:
	ak_free(nodes);
	ak_free(nm);
	return merged;
}

unsigned int parts_tidy(struct parts *ps, unsigned int max)
{
	unsigned int i = 0, done = 0;
	uint64_t prev = UINT64_MAX;

	pthread_mutex_lock(&ps->split_lock);
	while (done < max && i < ps->map->n) {
		struct part *p = ps->map->parts[i];
		uint64_t count;

		part_lock(p);
		count = p->count;
		part_unlock(p);
		/* prev: the count of partition i - 1, read just before */
		if (prev <= ps->part_max / 2 &&
		    prev + count <= ps->part_max / 2 &&
		    part_merge_under_split(ps, i - 1, prev + count + 64)) {
			done++;
			prev = UINT64_MAX;	/* look at the merged one again */
			i--;
			continue;
		}
		prev = count;
		i++;
	}
	pthread_mutex_unlock(&ps->split_lock);
	return done;
}

/* ---- the partitions' life ---- */

int parts_init(struct parts *ps, uint64_t part_max)
{
	memset(ps, 0, sizeof(*ps));
	ps->part_max = part_max;
	pthread_mutex_init(&ps->split_lock, NULL);
	ps->map = ak_malloc(sizeof(*ps->map) + sizeof(ps->map->parts[0]));
	if (!ps->map)
		return -ENOMEM;
	ps->map->n = 0;
	ps->map->retired = NULL;
	ps->map->parts[0] = part_new("", 0);
	if (!ps->map->parts[0])
		return -ENOMEM;
	ps->map->n = 1;
	return 0;
}

void parts_destroy(struct parts *ps)
{
	unsigned int i;

	for (i = 0; ps->map && i < ps->map->n; i++) {
		struct part *p = ps->map->parts[i];
		struct item *it, *next;

		/* postorder: each item is put after the walk has left it */
		rbtree_postorder_for_each_entry_safe(it, next, &p->tree, rbnode)
			item_put(it);
		ak_free(p);
	}
	ak_free(ps->map);
	ps->map = NULL;
	parts_free_retired(ps);
	pthread_mutex_destroy(&ps->split_lock);
}
