// SPDX-License-Identifier: MIT
/*
 * store.c - the store's point operations: lookup, the locked store
 * (replace or insert, reserving memory first; store_commit(), which
 * store_update.c's md, incr and decr call through the private
 * store_commit.h), append and prepend, touch, delete.
 *
 * The rest of the store lives beside it, on the private shard.h:
 * store_life.c (create, destroy, the stats over the shards), evict.c
 * (CLOCK, the memory charge, hash growth), expire.c (clock, exptime,
 * flush_all, active expiry), span.c, range_str.c and range.c (the ordered
 * walks: over the partitions for string keys, the shards for integer
 * keys) and store_check.c (the invariant checker).
 */
#include "store_commit.h"

#include <errno.h>
#include <limits.h>

#include "alloc.h"

#define EVICT_ROUNDS		8	/* cross-shard eviction rounds per store */

/* Most bytes of radix nodes inserting @index into @sh can add. */
static size_t radix_insert_worst_locked(const struct store *s,
					const struct shard *sh, uint64_t index)
{
	ak_lock_assert_held(&sh->lock);
	return radix_tree_insert_nodes_max(&sh->ints, index) * s->node_size;
}

/*
 * Whether c->op may store over @old (NULL: the key is not there), as
 * memcached decides it: STORE_STORED to go on, or what to answer. A cas
 * that is older than @old's, where stale versions are allowed, makes
 * c->it a stale version with @old's TTL.
 */
static inline __attribute__((always_inline))
enum store_result commit_check_op(struct commit *c, struct item *old)
{
	struct item *it = c->it;

	switch (c->op) {
	case STORE_OP_SET:
		return STORE_STORED;
	case STORE_OP_ADD:
		if (old) {
			/* memcached bumps the item an add collides with */
			item_hit(old, 0);
			return STORE_NOT_STORED;
		}
		return STORE_STORED;
	case STORE_OP_REPLACE:
	case STORE_OP_APPEND:
	case STORE_OP_PREPEND:
		return old ? STORE_STORED : STORE_NOT_STORED;
	case STORE_OP_CAS:
		if (!old)
			return STORE_NOT_FOUND;
		if (old->cas == c->req_cas)
			return STORE_STORED;
		if (!c->allow_stale || c->req_cas > old->cas)
			return STORE_EXISTS;
		/* an older version, kept as stale: it keeps the old TTL,
		 * and a win already given stays given */
		if (!item_set_exptime(it, item_exptime(old))) {
			c->slot_for = item_exptime(old);
			return STORE_NOT_STORED;
		}
		it->iflags |= ITEM_STALE | (READ_ONCE(old->iflags) & ITEM_WIN);
		return STORE_STORED;
	default:
		return STORE_NOT_STORED;
	}
}

/*
 * The locked part of every store: find the old item, apply c->op, reserve
 * the memory, link c->it in place of the old one. On STORE_STORED the
 * caller's reference on c->it has gone to the store and c->cas is set.
 * Return: the outcome; STORE_NO_MEMORY with c->short_by set means this
 * shard has nothing left to evict and other shards should free that much.
 */
static enum store_result shard_store_locked(struct store *s, struct shard *sh,
					    struct commit *c,
					    struct dead_list *dead)
{
	rel_time_t now = store_now(s);
	struct item *it = c->it;
	bool intkey = item_is_int(it);
	size_t add, credit, charged = 0;
	size_t old_size = 0;
	enum store_result ret;
	struct item *old;
	struct link l;
	uint64_t seq;
	int err;

	ak_lock_assert_held(&sh->lock);
	old = shard_find_live_locked(s, sh, &c->k, now, dead, NULL);
	if (c->op != STORE_OP_SET) {	/* a set stores whatever is there */
		ret = commit_check_op(c, old);
		if (ret != STORE_STORED)
			return ret;
	}
	if (old)
		c->old_exptime = item_exptime(old);
	if (c->keep_exptime && old &&
	    !item_set_exptime(it, c->old_exptime)) {
		c->slot_for = c->old_exptime;
		return STORE_NOT_STORED;
	}
	if (c->keep_marks && old)
		it->iflags |= READ_ONCE(old->iflags) &
			      (ITEM_FETCHED | ITEM_STALE | ITEM_WIN);

	/*
	 * Reserve the new block (and the radix nodes a fresh insert may add)
	 * less the block it replaces. Evicting may shrink the radix tree so
	 * that the insert needs more nodes: reserve again until it holds.
	 */
	if (old)
		old_size = item_alloc_size(old);
	credit = old_size;
	for (;;) {
		add = c->size;
		if (intkey && !old)
			add += radix_insert_worst_locked(s, sh, it->ikey);
		if (add <= credit + charged)
			break;
		err = mem_charge_locked(s, sh, add - credit - charged, c->defer,
					old, now, dead, &c->short_by);
		if (err && c->overdraw) {
			c->short_by = 0;
			break;		/* mem_add() below counts it all */
		}
		if (err) {
			mem_add(s, -(int64_t)charged);
			if (err != -ENOSPC)
				c->short_by = 0;
			return STORE_NO_MEMORY;
		}
		charged = add - credit;
	}

	/* cas and time before the indexes: a range may meet it at once (a
	 * client's cas, E, is taken as it is: see shard_of_cas()) */
	if (c->has_cas_in) {
		it->cas = c->cas_in;
	} else if (c->keep_cas && old) {
		it->cas = old->cas;
	} else {
		seq = sh->cas_seq + 1;
		__atomic_store_n(&sh->cas_seq, seq, __ATOMIC_RELAXED);
		it->cas = seq << s->shard_bits | sh->index;
	}
	item_set_time(it, c->keep_time && old ? item_time(old) : now);

	l = (struct link){ .it = it, .old = old, .k = &c->k,
			   .size = c->size, .old_size = old_size,
			   .in_place = c->keep_time && old };
	if (shard_link_locked(s, sh, &l, dead)) {
		mem_add(s, -(int64_t)charged);
		return STORE_NO_MEMORY;
	}
	c->split = l.split;
	/* what really changed, less the reservation: never positive */
	mem_add(s, (int64_t)c->size - (int64_t)credit +
		   l.index_added - (int64_t)charged);
	c->cas = it->cas;
	return STORE_STORED;
}

/*
 * Count the memcached class of @it towards store_limit()'s floor, while
 * -m is below 64 classes' pages (above, no floor can pass it). An item over
 * memcached's largest chunk (512 KiB) is chunks of that class there.
 */
static void store_note_mc_class(struct store *s, struct item *it)
{
	size_t limit = READ_ONCE(s->cfg.mem_limit);
	size_t size;
	uint64_t bit;

	if (!limit || limit >= 64 * s->cfg.class_page)
		return;
	size = item_mc_size(it->nkey, item_flags(it), it->nbytes);
	if (size > MC_CHUNK_MAX)
		size = MC_CHUNK_MAX;
	bit = 1ull << (item_mc_class(size) - 1);
	if (READ_ONCE(s->mc_classes) & bit)
		return;
	pthread_mutex_lock(&s->limit_lock);
	if (!(s->mc_classes & bit)) {
		WRITE_ONCE(s->mc_classes, s->mc_classes | bit);
		s->mem_floor += s->cfg.class_page;
		store_limit_update_locked(s);
	}
	pthread_mutex_unlock(&s->limit_lock);
}

/*
 * Store c->it (consuming the caller's reference whatever the outcome):
 * preload, lock, store, unlock, release; evict in other shards and retry
 * when this one has nothing left to evict or is below its share (and then,
 * if the others had nothing, evict here after all).
 */
enum store_result store_commit(struct store *s, struct commit *c)
{
	char split_key[KEY_MAX_LENGTH];
	enum store_result ret;
	unsigned int round;
	struct shard *sh;
	size_t limit;

	c->size = item_alloc_size(c->it);
	store_note_mc_class(s, c->it);
	limit = store_limit(s);
	if (limit && c->size > limit) {
		item_put(c->it);
		return STORE_TOO_LARGE;
	}
	keyref_of_item(&c->k, c->it);
	sh = shard_of(s, &c->k);
	if (c->k.isint && radix_tree_preload()) {
		item_put(c->it);
		return STORE_NO_MEMORY;
	}
	c->defer = true;
	for (round = 0;; round++) {
		uint64_t *old_slots;
		unsigned int grow_bits = 0;
		bool grow_queues;
		DEAD_LIST(dead);

		c->short_by = 0;
		c->slot_for = 0;
		shard_lock(sh);
		ret = shard_store_locked(s, sh, c, &dead);
		if (c->split)	/* the item is the store's once unlocked */
			memcpy(split_key, c->k.key, c->k.nkey);
		old_slots = shard_rehash_step_locked(sh);
		/* memcached's rule: a load of 1.5 */
		if (!c->k.isint && htable_wants_grow(&sh->ht))
			grow_bits = sh->ht.bits;
		grow_queues = queues_want_grow_locked(sh);
		shard_unlock(sh);
		items_release(&dead);
		ak_free(old_slots);
		if (grow_bits)
			shard_grow(sh, grow_bits);
		if (grow_queues)
			mem_grow_queues(s, sh);
		if (c->split) {
			if (part_split(&s->parts, split_key, c->k.nkey))
				store_parts_reclaim(s);
			c->split = false;
		}
		if (ret == STORE_NOT_STORED && c->slot_for) {
			/* the old item's expiry has no room in c->it */
			struct item *copy = item_copy(c->it, c->slot_for);

			if (!copy) {
				ret = STORE_NO_MEMORY;
				break;
			}
			item_put(c->it);
			c->it = copy;
			c->size = item_alloc_size(copy);
			/* the key c->k points at was the old block's */
			keyref_of_item(&c->k, c->it);
			continue;
		}
		if (ret != STORE_NO_MEMORY || !c->short_by)
			break;
		if (round >= EVICT_ROUNDS)
			break;
		if (!store_evict_others(s, sh, c->short_by)) {
			if (!c->defer)
				break;
			c->defer = false;
		}
	}
	if (c->k.isint)
		radix_tree_preload_end();
	if (ret != STORE_STORED)
		item_put(c->it);
	return ret;
}

/* ---- the public item API ---- */

int store_item_alloc(struct store *s, const char *key, size_t nkey,
		     uint32_t flags, rel_time_t exptime, uint32_t nbytes,
		     struct item **out)
{
	size_t limit = store_limit(s);
	struct item *it;

	if (item_mc_size(nkey, flags, nbytes) > s->cfg.item_size_max)
		return -E2BIG;
	/*
	 * Larger than the whole limit? The string key's header is the larger
	 * and slab_charge() never decreases (test_slab), so only an item
	 * that might be asks whether its key is an integer: item_alloc()
	 * does that once.
	 */
	if (limit &&
	    slab_charge(item_block_size(false, exptime, flags, nkey, nbytes)) >
	    limit && item_total_size(key, nkey, exptime, flags, nbytes) > limit)
		return -E2BIG;
	it = item_alloc(key, nkey, flags, exptime, nbytes);
	if (!it)
		return -ENOMEM;
	*out = it;
	return 0;
}

/*
 * Hold the live item of key @k with a reference. Return: it, or NULL.
 * Context: takes and releases the key's shard lock.
 */
struct item *store_hold(struct store *s, const struct keyref *k)
{
	struct shard *sh = shard_of(s, k);
	DEAD_LIST(dead);
	struct item *it;

	shard_lock(sh);
	it = shard_find_live_locked(s, sh, k, store_now(s), &dead, NULL);
	if (it)
		item_get(it);
	shard_unlock(sh);
	items_release(&dead);
	return it;
}

/* append/prepend: join outside the lock, replace only the item joined. */
static __attribute__((noinline))
enum store_result store_concat(struct store *s, struct item *it, bool prepend,
			       struct store_set *o)
{
	enum store_result ret = STORE_NOT_STORED;
	unsigned int tries;
	struct keyref k;

	keyref_of_item(&k, it);
	for (tries = 0; tries < REPLACE_RETRIES; tries++) {
		struct item *old = store_hold(s, &k), *joined;
		struct commit c;
		uint64_t nbytes;
		char *v;

		if (!old && o->vivify) {
			/* none: the block becomes the item, unless one came */
			c = (struct commit){ .it = it, .op = STORE_OP_ADD,
					     .has_cas_in = o->has_cas_in,
					     .cas_in = o->cas_in };
			item_get(it);
			ret = store_commit(s, &c);
			if (ret == STORE_STORED) {
				o->cas_out = c.cas;
				o->nbytes_out = it->nbytes;
			}
			if (ret != STORE_NOT_STORED)
				break;
			continue;
		}
		if (!old) {
			ret = STORE_NOT_STORED;
			break;
		}
		if (o->has_cas && old->cas != o->cas) {
			item_put(old);
			ret = STORE_EXISTS;
			break;
		}
		nbytes = (uint64_t)old->nbytes + it->nbytes;
		if (nbytes > UINT32_MAX ||
		    item_mc_size(k.nkey, item_flags(old), (uint32_t)nbytes) >
		    s->cfg.item_size_max) {
			item_put(old);
			ret = STORE_TOO_LARGE;
			break;
		}
		joined = item_alloc(k.key, k.nkey, item_flags(old),
				    item_exptime(old), (uint32_t)nbytes);
		if (!joined) {
			item_put(old);
			ret = STORE_NO_MEMORY;
			break;
		}
		v = item_value(joined);
		if (prepend) {
			memcpy(v, item_value(it), it->nbytes);
			memcpy(v + it->nbytes, item_value(old), old->nbytes);
		} else {
			memcpy(v, item_value(old), old->nbytes);
			memcpy(v + old->nbytes, item_value(it), it->nbytes);
		}
		c = (struct commit){ .it = joined, .op = STORE_OP_CAS,
				     .req_cas = old->cas, .keep_exptime = true,
				     .has_cas_in = o->has_cas_in,
				     .cas_in = o->cas_in };
		item_put(old);
		ret = store_commit(s, &c);
		if (ret == STORE_STORED) {
			o->cas_out = c.cas;
			o->nbytes_out = (uint32_t)nbytes;
		}
		if (ret == STORE_NOT_FOUND)
			ret = STORE_NOT_STORED;
		if (ret != STORE_EXISTS)
			break;		/* else the old item changed: again */
		ret = STORE_NOT_STORED;
	}
	item_put(it);
	return ret;
}

enum store_result store_item_store_opts(struct store *s, struct item *it,
					struct store_set *o)
{
	struct commit c = { .it = it, .op = o->op, .req_cas = o->cas,
			    .allow_stale = o->allow_stale,
			    .has_cas_in = o->has_cas_in, .cas_in = o->cas_in };
	enum store_result ret;

	o->cas_out = 0;
	o->nbytes_out = it->nbytes;
	if (o->op == STORE_OP_APPEND || o->op == STORE_OP_PREPEND)
		return store_concat(s, it, o->op == STORE_OP_PREPEND, o);
	ret = store_commit(s, &c);
	if (ret == STORE_STORED)
		o->cas_out = c.cas;
	return ret;
}

enum store_result store_item_store(struct store *s, struct item *it,
				   enum store_op op, uint64_t cas,
				   uint64_t *cas_out)
{
	struct store_set o = { .op = op, .cas = cas };
	enum store_result ret = store_item_store_opts(s, it, &o);

	if (ret == STORE_STORED && cas_out)
		*cas_out = o.cas_out;
	return ret;
}

/* Set @it's expiry (it has a slot), keeping the shard's doubtful count. */
static void item_set_exptime_locked(struct store *s, struct shard *sh,
				    struct item *it, rel_time_t exptime)
{
	doubtful_unlink_locked(s, sh, it);
	item_set_exptime(it, exptime);
	doubtful_link_locked(s, sh, it);
}

/*
 * What a hit does to @it and reports of it: the item as found (expiry,
 * last access, flags), the touch, the recache win (the first request to
 * find it stale, or expiring before req->recache, when nobody has won
 * it yet), then the bump.
 */
static inline __attribute__((always_inline))
void lookup_hit_locked(struct store *s, struct shard *sh, struct item *it,
		       bool intkey, const struct store_req *req,
		       struct store_res *res)
{
	uint8_t f = READ_ONCE(it->iflags);
	rel_time_t now, exp = item_exptime_as(it, intkey);

	res->exptime = exp;
	res->atime = item_time(it);
	res->iflags = f;
	res->won = false;
	if (req->flags & STORE_REQ_TOUCH) {
		item_set_exptime_locked(s, sh, it, req->exptime);
		if (!(req->flags & STORE_REQ_TOUCH_LATE))
			exp = req->exptime;
	}
	if (unlikely(req->flags & (STORE_REQ_META | STORE_REQ_RECACHE))) {
		res->won = !(f & ITEM_WIN) &&
			   (((f & ITEM_STALE) &&
			     (req->flags & STORE_REQ_META)) ||
			    ((req->flags & STORE_REQ_RECACHE) && exp &&
			     exp < req->recache));
		if (res->won)
			item_set_flag(it, ITEM_WIN);
	}
	if (req->flags & STORE_REQ_NO_BUMP)
		return;
	item_hit(it, ITEM_FETCHED);
	/* the last access, at most one write a second (flush_all reads it:
	 * only a live item is bumped, so it moves past no flush moment) */
	now = store_now(s);
	if (unlikely(res->atime != now)) {
		doubtful_unlink_locked(s, sh, it);
		item_set_time(it, now);
		doubtful_link_locked(s, sh, it);
	}
}

/*
 * A touch found @old (held) made without an expiry slot: store a copy that
 * has one in its place, the same item otherwise (cas, time, marks, queue).
 * It may pass the limit by the slot's bytes rather than fail: memcached's
 * touch never fails for memory. Return: whether the caller should look
 * again (false: no memory for the copy at all).
 */
static __attribute__((noinline))
bool store_give_slot(struct store *s, struct item *old)
{
	struct item *copy = item_copy(old, 0);
	struct commit c;

	if (!copy)
		return false;
	c = (struct commit){ .it = copy, .op = STORE_OP_CAS,
			     .req_cas = old->cas, .keep_exptime = true,
			     .keep_cas = true, .keep_time = true,
			     .keep_marks = true, .overdraw = true };
	return store_commit(s, &c) != STORE_NO_MEMORY;
}

/*
 * store_lookup()'s one look. A touch that finds an item made without an
 * expiry slot, while @copy allows, returns NULL with the item held in
 * *@old for the caller to give it a slot and look again.
 */
static inline __attribute__((always_inline))
struct item *lookup(struct store *s, const struct store_req *req,
		    struct store_res *res, bool copy, struct item **old)
{
	enum store_miss st = STORE_MISS_ABSENT;
	uint64_t *old_slots;
	struct item *it = NULL;
	DEAD_LIST(dead);
	struct keyref k;
	struct shard *sh;

	if (keyref_valid(req->nkey)) {
		keyref_init(&k, req->key, req->nkey);
		sh = shard_of(s, &k);
		shard_lock(sh);
		it = shard_find_live_locked(s, sh, &k, store_now(s), &dead,
					    &st);
		if (unlikely(it && (req->flags & STORE_REQ_TOUCH) &&
			     req->exptime && !it->has_exptime && copy)) {
			item_get(it);
			shard_unlock(sh);
			items_release(&dead);
			*old = it;
			return NULL;
		}
		if (it) {
			const char *value = item_value_as(it, k.isint);

			lookup_hit_locked(s, sh, it, k.isint, req, res);
			res->flags = item_flags_at(it, value);
			res->nbytes = it->nbytes;
			res->cas = it->cas;
			if (req->buf && it->nbytes <= req->room) {
				memcpy(req->buf, value, it->nbytes);
				it = NULL;
			} else if (req->flags & STORE_REQ_PEEK) {
				it = NULL;
			} else {
				item_get(it);
			}
		}
		/* reads move a growing table too: one that only reads would
		 * never leave its slower two-array lookups */
		old_slots = shard_rehash_step_locked(sh);
		shard_unlock(sh);
		if (unlikely(dead.first))
			items_release(&dead);
		if (unlikely(old_slots))
			ak_free(old_slots);
	}
	res->why = st;
	return it;
}

struct item *store_lookup(struct store *s, const struct store_req *req,
			  struct store_res *res)
{
	unsigned int tries = 0;

	for (;;) {
		struct item *old = NULL;
		struct item *it = lookup(s, req, res, tries < REPLACE_RETRIES,
					 &old);
		bool copied;

		if (likely(!old))
			return it;
		copied = store_give_slot(s, old);
		item_put(old);
		if (unlikely(!copied)) {
			/* no memory at all for the copy: untouched, said */
			res->why = STORE_TOUCH_NO_MEMORY;
			return NULL;
		}
		tries++;
	}
}

int store_delete(struct store *s, const char *key, size_t nkey)
{
	uint64_t *old_slots;
	struct item *it;
	DEAD_LIST(dead);
	struct keyref k;
	struct shard *sh;

	if (!keyref_valid(nkey))
		return -ENOENT;
	keyref_init(&k, key, nkey);
	sh = shard_of(s, &k);
	shard_lock(sh);
	it = shard_find_live_locked(s, sh, &k, store_now(s), &dead, NULL);
	if (it)
		shard_unlink_locked(s, sh, it, &dead);
	old_slots = shard_rehash_step_locked(sh);
	shard_unlock(sh);
	items_release(&dead);
	ak_free(old_slots);
	return it ? 0 : -ENOENT;
}
