// SPDX-License-Identifier: MIT
/*
 * shard.c - the store's indexes, below everything else of the store: the
 * partitions of the string keys' order (a string item inserted, replaced
 * or erased in its partition's rbtree with the subtree sizes kept, a
 * partition split in two when it grows, two neighbours merged when they
 * shrink, the retired maps and partitions freed once nobody can read
 * them), then one shard's: an item taken off them (unlinked, or reclaimed
 * when dead), the hands that walk them (the radix tree in key order, then
 * the hash table slot by slot; the main queue of the eviction and active
 * expiry both use them), and the steps of a growing hash table. store.c,
 * store_life.c, evict.c, expire.c, the ordered walks (span.c, range_str.c,
 * range.c) and store_check.c call these; these call none of them. (The
 * partitions are here, not in a file of their own, because they and the
 * shards use each other: an unlink erases from the order, a split cycles
 * the shard locks.)
 */
#include "shard.h"

#include "alloc.h"
#include "rbtree_augmented.h"

#define REHASH_STEP		2	/* old buckets moved per write while growing */

#ifdef AK_LOCK_DEBUG
__thread unsigned int ak_shards_held, ak_parts_held;
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
 * store->part_max.
 */
bool order_insert_locked(struct store *s, struct shard *sh, struct item *it)
{
	struct part *p = part_lock_key(s, item_key(it), it->nkey);
	struct rb_node **link = &p->tree.rb_node, *parent = NULL, *n;
	const struct item *last;
	bool big, rightmost = true;

	ak_lock_assert_held(&sh->lock);
	last = p->last ? rb_entry(p->last, struct item, rbnode) : NULL;
	if (last && key_bytes_cmp(item_key(it), it->nkey, item_key(last),
				  last->nkey) > 0) {
		for (n = p->last; n; n = rb_parent(n))
			rb_entry(n, struct item, rbnode)->subtree++;
		parent = p->last;
		link = &parent->rb_right;
	}
	while (*link) {
		struct item *cur = rb_entry(*link, struct item, rbnode);

		parent = *link;
		cur->subtree++;		/* it goes below cur */
		if (key_bytes_cmp(item_key(it), it->nkey, item_key(cur),
				  cur->nkey) < 0) {
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
	big = ++p->count > s->part_max;
	part_unlock(p);
	return big;
}

/* @it (same key) takes @old's place in the order. */
void order_replace_locked(struct store *s, struct shard *sh,
			  struct item *old, struct item *it)
{
	struct part *p = part_lock_key(s, item_key(it), it->nkey);

	ak_lock_assert_held(&sh->lock);
	rb_replace_node_augmented(&old->rbnode, &it->rbnode, &p->tree,
				  &subtree_cb);
	if (p->last == &old->rbnode)
		p->last = &it->rbnode;
	part_unlock(p);
	RB_CLEAR_NODE(&old->rbnode);
}

void order_erase_locked(struct store *s, struct shard *sh, struct item *it)
{
	struct part *p = part_lock_key(s, item_key(it), it->nkey);

	ak_lock_assert_held(&sh->lock);
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
struct part *part_new(const char *lo, size_t nlo)
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
static void map_retire(struct store *s, struct part_map *m)
{
	m->retired = s->retired;
	s->retired = m;
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
	memcpy(np->lo, item_key(it), it->nkey);
	np->lo_pfx = key_prefix(np->lo, np->nlo);
}

/*
 * Free the retired maps and partitions.
 * Context: the split mutex is held, and nobody can read them any more
 * (maps_reclaim()), or the store is being destroyed.
 */
void parts_free_retired(struct store *s)
{
	while (s->retired) {
		struct part_map *m = s->retired;

		s->retired = m->retired;
		ak_free(m);
	}
	while (s->retired_parts) {
		struct part *p = s->retired_parts;

		s->retired_parts = p->retired;
		ak_free(p);
	}
}

/* Free the retired maps if no thread can still read them. */
static void maps_reclaim(struct store *s)
{
	unsigned int i;

	/* a store holds its shard lock while it reads the map: once every
	 * shard lock has been free, none reads a retired one */
	for (i = 0; i < s->cfg.nshards; i++) {
		shard_lock(&s->shards[i]);
		shard_unlock(&s->shards[i]);
	}
	/* a string walk counts itself before it reads the map (both
	 * sequentially consistent, as the publication of a new one) */
	if (__atomic_load_n(&s->map_readers, __ATOMIC_SEQ_CST))
		return;		/* the next split tries again */
	parts_free_retired(s);
}

/*
 * Split the partition that holds @key in two if it has more than
 * store->part_max items: the upper half moves into a new partition under
 * the lock of the one split, so only that partition waits, and the new
 * map is published before that lock is dropped (part_lock_key()).
 * Context: no shard or partition lock is held; takes the split mutex,
 * then the partition's lock, then each shard lock in turn.
 */
void part_split(struct store *s, const char *key, size_t nkey)
{
	struct part_map *m, *nm = NULL;
	struct rb_node **nodes = NULL;
	struct part *p, *np = NULL;
	uint64_t room = 0;
	unsigned int i;

	pthread_mutex_lock(&s->split_lock);
	m = s->map;		/* only splits change it, under this mutex */
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
		if (p->count <= s->part_max || p->count < 2) {
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
	__atomic_store_n(&s->map, nm, __ATOMIC_SEQ_CST);
	part_unlock(p);
	np = NULL;
	nm = NULL;
	map_retire(s, m);
	s->splits++;
	maps_reclaim(s);
out:
	pthread_mutex_unlock(&s->split_lock);
	ak_free(nodes);
	ak_free(np);
	ak_free(nm);
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
static bool part_merge_under_split(struct store *s, unsigned int i,
				   uint64_t room)
{
	struct part_map *m = s->map, *nm;
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
	if (p->count + q->count <= s->part_max / 2 &&
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
		__atomic_store_n(&s->map, nm, __ATOMIC_SEQ_CST);
		merged = true;
	}
	part_unlock(q);
	part_unlock(p);
	if (merged) {
		nm = NULL;
		map_retire(s, m);
		q->retired = s->retired_parts;
		s->retired_parts = q;
		s->merges++;
	}
out:
	ak_free(nodes);
	ak_free(nm);
	return merged;
}

/*
 * Merge up to @max pairs of neighbouring partitions that hold at most
 * part_max / 2 items between them, then free what the merges retired
 * once nobody can read it (maps_reclaim()).
 * Context: no lock held; takes the split mutex, then partition locks one
 * or two at a time, then each shard lock in turn.
 * Return: the merges done.
 */
unsigned int parts_tidy(struct store *s, unsigned int max)
{
	unsigned int i = 0, done = 0;
	uint64_t prev = UINT64_MAX;

	pthread_mutex_lock(&s->split_lock);
	while (done < max && i < s->map->n) {
		struct part *p = s->map->parts[i];
		uint64_t count;

		part_lock(p);
		count = p->count;
		part_unlock(p);
		/* prev: the count of partition i - 1, read just before */
		if (prev <= s->part_max / 2 && prev + count <= s->part_max / 2 &&
		    part_merge_under_split(s, i - 1, prev + count + 64)) {
			done++;
			prev = UINT64_MAX;	/* look at the merged one again */
			i--;
			continue;
		}
		prev = count;
		i++;
	}
	if (done)
		maps_reclaim(s);
	pthread_mutex_unlock(&s->split_lock);
	return done;
}

/* ---- one shard's indexes ---- */

/*
 * Take @it off every index and uncount it; the store's reference goes onto
 * @dead, to be released after unlocking. The mirror of item_link_locked()
 * (shard.h, inline: it is on every store's path).
 */
void item_unlink_locked(struct store *s, struct shard *sh,
			struct item *it, struct dead_list *dead)
{
	size_t size;

	ak_lock_assert_held(&sh->lock);
	if (item_is_int(it)) {
		uint64_t nodes = sh->ints.nr_nodes;

		radix_tree_delete(&sh->ints, it->ikey);
		index_radix_sync_locked(s, sh, nodes);
		sh->curr_int_items--;
	} else {
		hands_forget_locked(sh, it, NULL);
		htable_del(&sh->ht, &it->hnode,
			   item_key_hash(item_key(it), it->nkey));
		order_erase_locked(s, sh, it);
		sh->curr_str_items--;
	}
	small_forget_locked(s, sh, it);
	doubtful_unlink_locked(s, sh, it);
	item_clear_flag(it, ITEM_LINKED);
	sh->curr_items--;
	if (!sh->curr_items)
		sh->doubtful = 0;	/* whatever a flush over-counted */
	size = item_alloc_size(it);
	sh->bytes -= size;
	mem_add(s, -(int64_t)size);
	dead_push(dead, it);
}

/* Unlink an expired or flushed item. */
void item_reclaim_locked(struct store *s, struct shard *sh,
			 struct item *it, struct dead_list *dead)
{
	ak_lock_assert_held(&sh->lock);
	sh->reclaimed++;
	if (!(it->iflags & ITEM_FETCHED))
		sh->expired_unfetched++;
	item_unlink_locked(s, sh, it, dead);
}

/* The first string item at or after slot h->slot (NULL: none). */
static struct item *hand_slot_scan_locked(const struct shard *sh,
					  struct clock_hand *h)
{
	uint64_t n = htable_slots(&sh->ht);

	ak_lock_assert_held(&sh->lock);
	for (; h->slot < n; h->slot++) {
		const struct slist_head *b = htable_slot(&sh->ht, h->slot);

		if (b && !slist_empty(b))
			return slist_entry(b->first, struct item, hnode);
	}
	return NULL;
}

/* The item at @h, moving it over gaps and around; NULL: the shard is empty. */
struct item *hand_item_locked(const struct shard *sh,
			      struct clock_hand *h)
{
	unsigned int lap;

	ak_lock_assert_held(&sh->lock);
	for (lap = 0; lap < 3; lap++) {
		if (!h->in_strs) {
			void *got;

			if (radix_tree_gang_lookup(&sh->ints, &got, NULL,
						   h->ikey, 1))
				return got;
			h->in_strs = true;
			h->slot = 0;
			h->item = NULL;
		}
		if (!h->item && sh->ht.count)
			h->item = hand_slot_scan_locked(sh, h);
		if (h->item)
			return h->item;
		h->in_strs = false;
		h->ikey = 0;
	}
	return NULL;
}

/* Move @h past @it, the item at it. */
void hand_step_locked(const struct shard *sh, struct clock_hand *h,
		      const struct item *it)
{
	ak_lock_assert_held(&sh->lock);
	if (!item_is_int(it)) {
		h->item = str_chain_next(it);
		if (!h->item)
			h->slot++;
	} else if (it->ikey == UINT64_MAX) {
		h->in_strs = true;
		h->slot = 0;
		h->item = NULL;
	} else {
		h->ikey = it->ikey + 1;
	}
}

/*
 * The body of shard_rehash_step_locked() while the table grows: move
 * REHASH_STEP old buckets. Return: the old array once the move is
 * complete (ak_free() it after unlocking), else NULL.
 */
/*
 * Start growing @sh's hash table from 2^@bits buckets: allocate the new
 * array unlocked, install it under the lock. The arrays are outside the
 * memory limit, as memcached's hash table is outside its -m.
 * Context: no lock held; takes sh->lock.
 */
void shard_grow(struct shard *sh, unsigned int bits)
{
	struct slist_head *buckets = htable_buckets_alloc(bits + 1);

	if (!buckets)
		return;
	shard_lock(sh);
	if (sh->ht.bits == bits && htable_wants_grow(&sh->ht) &&
	    !htable_grow_start(&sh->ht, buckets))
		buckets = NULL;
	shard_unlock(sh);
	ak_free(buckets);
}

struct slist_head *shard_rehash_some_locked(struct shard *sh)
{
	struct slist_head *old, *done = NULL;
	struct slist_node *tmp;
	struct item *it;
	unsigned int i;

	ak_lock_assert_held(&sh->lock);
	for (i = 0; i < REHASH_STEP && (old = htable_rehash_bucket(&sh->ht));
	     i++) {
		slist_for_each_entry_safe(it, tmp, old, hnode) {
			slist_del_init(&it->hnode, old);
			slist_add_head(&it->hnode, htable_new_bucket(&sh->ht,
				item_key_hash(item_key(it), it->nkey)));
		}
		done = htable_rehash_advance(&sh->ht);
	}
	return done;
}
