// SPDX-License-Identifier: MIT
/*
 * store.c - the store's life cycle and its point operations: lookup, the
 * locked store (replace or insert, reserving memory first), append and
 * prepend, incr and decr, delete, and the stats over the shards.
 *
 * The rest of the store lives beside it, on the private shard.h: evict.c
 * (CLOCK, the memory charge, hash growth), expire.c (clock, exptime,
 * flush_all, active expiry), range.c (ordered walks over the shards) and
 * store_check.c (the invariant checker).
 */
#include "shard.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>

#include "number.h"

#define NSHARDS_MAX		4096
#define HASH_BITS_DEFAULT	4
#define HASH_BITS_MAX		30
#define ITEM_SIZE_MAX_DEFAULT	(1024 * 1024)
#define EVICT_ROUNDS		8	/* cross-shard eviction rounds per store */
#define REPLACE_RETRIES		1000	/* append/prepend/incr: the old item changed */

/* Internal outcomes of shard_store_locked(), beside enum store_result. */
#define STORE_RETRY		(-1)	/* the expected old item is gone */
#define STORE_EVICT_ELSEWHERE	(-2)	/* this shard has nothing to evict */

/* Most bytes of radix nodes inserting @index into @sh can add. */
static size_t radix_insert_worst_locked(const struct store *s,
					const struct shard *sh, uint64_t index)
{
	ak_lock_assert_held(&sh->lock);
	return radix_tree_insert_nodes_max(&sh->ints, index) * s->node_size;
}

/* ---- one shard's indexes (all _locked: the caller holds sh->lock) ---- */

static inline struct item *shard_find_locked(const struct shard *sh,
					     const struct keyref *k)
{
	struct item *it;

	ak_lock_assert_held(&sh->lock);
	if (k->isint)
		return radix_tree_lookup(&sh->ints, k->ikey);
	slist_for_each_entry(it, htable_bucket(&sh->ht, k->hash), hnode) {
		if (it->nkey == k->nkey &&
		    !memcmp(item_key(it), k->key, k->nkey))
			return it;
	}
	return NULL;
}

static void shard_rb_insert_locked(struct shard *sh, struct item *it)
{
	struct rb_node **link = &sh->tree.rb_node, *parent = NULL;

	ak_lock_assert_held(&sh->lock);
	while (*link) {
		struct item *cur = rb_entry(*link, struct item, rbnode);

		parent = *link;
		if (key_bytes_cmp(item_key(it), it->nkey, item_key(cur),
			    cur->nkey) < 0)
			link = &(*link)->rb_left;
		else
			link = &(*link)->rb_right;
	}
	rb_link_node(&it->rbnode, parent, link);
	rb_insert_color(&it->rbnode, &sh->tree);
}

/* The live item of key @k, reclaiming a dead one; sets *@why. */
static inline __attribute__((always_inline))
struct item *shard_find_live_locked(struct store *s, struct shard *sh,
				    const struct keyref *k, rel_time_t now,
				    struct dead_list *dead,
				    enum store_miss *why)
{
	struct item *it = shard_find_locked(sh, k);
	enum store_miss st = STORE_MISS_ABSENT;

	ak_lock_assert_held(&sh->lock);
	if (it) {
		st = item_state(s, sh, it, now);
		if (st != STORE_HIT) {
			item_reclaim_locked(s, sh, it, dead);
			it = NULL;
		}
	}
	if (why)
		*why = st;
	return it;
}

/*
 * The locked part of every store: find the old item, apply @op, reserve the
 * memory, link @it in place of the old one. With @expect, store only if
 * @expect is the live item of the key (and give @it its current exptime).
 * On STORE_STORED the caller's reference on @it has gone to the store.
 * @k is @it's key and @size its item_alloc_size(), both computed before
 * the lock. @defer: see mem_charge_locked().
 * Return: an enum store_result, STORE_RETRY (@expect is not the live item)
 * or STORE_EVICT_ELSEWHERE (*@short_by bytes must be freed in other shards).
 */
static int shard_store_locked(struct store *s, struct shard *sh,
			      struct item *it, const struct keyref *k,
			      size_t size, enum store_op op,
			      uint64_t req_cas, const struct item *expect,
			      bool defer, uint64_t *cas_out,
			      struct dead_list *dead, size_t *short_by)
{
	rel_time_t now = store_now(s);
	bool intkey = item_is_int(it);
	size_t add, credit, charged = 0;
	size_t old_size = 0;
	uint64_t nodes;
	struct item *old;
	uint64_t seq;
	int err;

	ak_lock_assert_held(&sh->lock);
	old = shard_find_live_locked(s, sh, k, now, dead, NULL);
	if (expect && old != expect)
		return STORE_RETRY;
	switch (op) {
	case STORE_OP_SET:
		break;
	case STORE_OP_ADD:
		if (old) {
			/* memcached bumps the item an add collides with */
			item_set_flag(old, ITEM_ACCESSED);
			return STORE_NOT_STORED;
		}
		break;
	case STORE_OP_REPLACE:
	case STORE_OP_APPEND:
	case STORE_OP_PREPEND:
		if (!old)
			return STORE_NOT_STORED;
		break;
	case STORE_OP_CAS:
		if (!old)
			return STORE_NOT_FOUND;
		if (old->cas != req_cas)
			return STORE_EXISTS;
		break;
	default:
		return STORE_NOT_STORED;
	}
	if (expect)
		it->exptime = READ_ONCE(expect->exptime);

	/*
	 * Reserve the new block (and the radix nodes a fresh insert may add)
	 * less the block it replaces. Evicting may shrink the radix tree so
	 * that the insert needs more nodes: reserve again until it holds.
	 */
	if (old)
		old_size = item_alloc_size(old);
	credit = old_size;
	for (;;) {
		add = size;
		if (intkey && !old)
			add += radix_insert_worst_locked(s, sh, it->ikey);
		if (add <= credit + charged)
			break;
		err = mem_charge_locked(s, sh, add - credit - charged, defer,
					old, now, dead, short_by);
		if (err) {
			mem_add(s, -(int64_t)charged);
			return err == -ENOSPC ? STORE_EVICT_ELSEWHERE :
						STORE_NO_MEMORY;
		}
		charged = add - credit;
	}

	nodes = sh->ints.nr_nodes;
	if (intkey) {
		if (old) {
			radix_tree_replace(&sh->ints, it->ikey, it);
		} else if (radix_tree_insert(&sh->ints, it->ikey, it)) {
			/* not preloaded enough and the allocator failed */
			mem_add(s, -(int64_t)charged);
			return STORE_NO_MEMORY;
		}
	} else if (old) {
		htable_replace(&sh->ht, &old->hnode, &it->hnode, k->hash);
		hands_forget_locked(sh, old, it);
		rb_replace_node(&old->rbnode, &it->rbnode, &sh->tree);
		RB_CLEAR_NODE(&old->rbnode);
	} else {
		htable_add(&sh->ht, &it->hnode, k->hash);
		shard_rb_insert_locked(sh, it);
	}

	if (old) {
		item_clear_flag(old, ITEM_LINKED);
		sh->bytes -= old_size;
		dead_push(dead, old);
	} else {
		sh->curr_items++;
		if (intkey)
			sh->curr_int_items++;
		else
			sh->curr_str_items++;
	}
	sh->bytes += size;
	sh->total_items++;
	sh->index_bytes += (sh->ints.nr_nodes - nodes) * s->node_size;
	/* what really changed, less the reservation: never positive */
	mem_add(s, (int64_t)size - (int64_t)credit +
		   (int64_t)((sh->ints.nr_nodes - nodes) * s->node_size) -
		   (int64_t)charged);

	seq = sh->cas_seq + 1;
	__atomic_store_n(&sh->cas_seq, seq, __ATOMIC_RELAXED);
	it->cas = seq << s->shard_bits | sh->index;
	it->time = now;
	item_set_flag(it, ITEM_LINKED | ITEM_NEW);
	if (cas_out)
		*cas_out = it->cas;
	return STORE_STORED;
}

/*
 * Store @it (consuming the caller's reference whatever the outcome):
 * preload, lock, store, unlock, release; evict in other shards and retry
 * when this one has nothing left to evict or is below its share (and then,
 * if the others had nothing, evict here after all).
 */
static int store_commit(struct store *s, struct item *it, enum store_op op,
			uint64_t req_cas, const struct item *expect,
			uint64_t *cas_out)
{
	size_t size = item_alloc_size(it);
	struct keyref k;
	struct shard *sh;
	unsigned int round;
	bool defer = true;
	int ret;

	if (s->cfg.mem_limit && size > s->cfg.mem_limit) {
		item_put(it);
		return STORE_TOO_LARGE;
	}
	keyref_of_item(&k, it);
	sh = shard_of(s, &k);
	if (k.isint && radix_tree_preload()) {
		item_put(it);
		return STORE_NO_MEMORY;
	}
	for (round = 0;; round++) {
		struct slist_head *old_buckets;
		size_t short_by = 0;
		unsigned int grow_bits = 0;
		DEAD_LIST(dead);

		shard_lock(sh);
		ret = shard_store_locked(s, sh, it, &k, size, op, req_cas,
					 expect, defer, cas_out, &dead,
					 &short_by);
		old_buckets = shard_rehash_step_locked(s, sh);
		if (!k.isint && shard_wants_grow_locked(sh))
			grow_bits = sh->ht.bits;
		shard_unlock(sh);
		items_release(&dead);
		ak_free(old_buckets);
		if (grow_bits)
			shard_grow(s, sh, grow_bits);
		if (ret != STORE_EVICT_ELSEWHERE)
			break;
		if (round >= EVICT_ROUNDS) {
			ret = STORE_NO_MEMORY;
			break;
		}
		if (!store_evict_others(s, sh, short_by)) {
			if (!defer) {
				ret = STORE_NO_MEMORY;
				break;
			}
			defer = false;
		}
	}
	if (k.isint)
		radix_tree_preload_end();
	if (ret != STORE_STORED)
		item_put(it);
	return ret;
}

/* ---- the public item API ---- */

int store_item_alloc(struct store *s, const char *key, size_t nkey,
		     uint32_t flags, rel_time_t exptime, uint32_t nbytes,
		     struct item **out)
{
	size_t total = item_total_size(key, nkey, nbytes);
	struct item *it;

	if (item_mc_size(nkey, flags, nbytes) > s->cfg.item_size_max ||
	    (s->cfg.mem_limit && total > s->cfg.mem_limit))
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
static struct item *store_hold(struct store *s, const struct keyref *k)
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
			       uint64_t *cas_out)
{
	struct keyref k;
	unsigned int tries;
	int ret = STORE_NOT_STORED;

	keyref_of_item(&k, it);
	for (tries = 0; tries < REPLACE_RETRIES; tries++) {
		struct item *old = store_hold(s, &k), *joined;
		uint64_t nbytes;
		char *v;

		if (!old) {
			ret = STORE_NOT_STORED;
			break;
		}
		nbytes = (uint64_t)old->nbytes + it->nbytes;
		if (nbytes > UINT32_MAX ||
		    item_mc_size(k.nkey, old->flags, (uint32_t)nbytes) >
		    s->cfg.item_size_max) {
			item_put(old);
			ret = STORE_TOO_LARGE;
			break;
		}
		joined = item_alloc(k.key, k.nkey, old->flags, old->exptime,
				    (uint32_t)nbytes);
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
		memcpy(v + nbytes, "\r\n", 2);
		ret = store_commit(s, joined, STORE_OP_SET, 0, old, cas_out);
		item_put(old);
		if (ret != STORE_RETRY)
			break;
		ret = STORE_NOT_STORED;
	}
	item_put(it);
	return (enum store_result)ret;
}

enum store_result store_item_store(struct store *s, struct item *it,
				   enum store_op op, uint64_t cas,
				   uint64_t *cas_out)
{
	if (op == STORE_OP_APPEND || op == STORE_OP_PREPEND)
		return store_concat(s, it, op == STORE_OP_PREPEND, cas_out);
	return (enum store_result)store_commit(s, it, op, cas, NULL, cas_out);
}

/*
 * get, gat and touch. With @buf, a value that fits in @room is copied there
 * instead of being held (see store_get_copy()).
 */
static struct item *store_lookup(struct store *s, const char *key,
				 size_t nkey, bool touch, rel_time_t exptime,
				 bool hold, char *buf, size_t room,
				 struct store_value *val, enum store_miss *why)
{
	enum store_miss st = STORE_MISS_ABSENT;
	struct item *it = NULL;
	DEAD_LIST(dead);
	struct keyref k;
	struct shard *sh;

	if (keyref_valid(nkey)) {
		keyref_init(&k, key, nkey);
		sh = shard_of(s, &k);
		shard_lock(sh);
		it = shard_find_live_locked(s, sh, &k, store_now(s), &dead,
					    &st);
		if (it) {
			if (touch)
				WRITE_ONCE(it->exptime, exptime);
			item_set_flag(it, ITEM_ACCESSED | ITEM_FETCHED);
			if (buf) {
				val->flags = it->flags;
				val->nbytes = it->nbytes;
				val->cas = it->cas;
				if ((size_t)it->nbytes + 2 <= room) {
					memcpy(buf, item_value(it),
					       (size_t)it->nbytes + 2);
					it = NULL;
				}
			}
			if (it && hold)
				item_get(it);
		}
		shard_unlock(sh);
		if (unlikely(dead.first))
			items_release(&dead);
	}
	if (why)
		*why = st;
	return it;
}

struct item *store_get(struct store *s, const char *key, size_t nkey,
		       enum store_miss *why)
{
	return store_lookup(s, key, nkey, false, 0, true, NULL, 0, NULL, why);
}

struct item *store_get_touch(struct store *s, const char *key, size_t nkey,
			     rel_time_t exptime, enum store_miss *why)
{
	return store_lookup(s, key, nkey, true, exptime, true, NULL, 0, NULL,
			    why);
}

struct item *store_get_copy(struct store *s, const char *key, size_t nkey,
			    bool touch, rel_time_t exptime, char *buf,
			    size_t room, struct store_value *val,
			    enum store_miss *why)
{
	return store_lookup(s, key, nkey, touch, exptime, true, buf, room, val,
			    why);
}

int store_touch(struct store *s, const char *key, size_t nkey,
		rel_time_t exptime)
{
	return store_lookup(s, key, nkey, true, exptime, false, NULL, 0, NULL,
			    NULL) ?
	       0 : -ENOENT;
}

int store_delete(struct store *s, const char *key, size_t nkey)
{
	struct slist_head *old_buckets;
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
		item_unlink_locked(s, sh, it, &dead);
	old_buckets = shard_rehash_step_locked(s, sh);
	shard_unlock(sh);
	items_release(&dead);
	ak_free(old_buckets);
	return it ? 0 : -ENOENT;
}

/*
 * Read the value of @it as memcached's safe_strtoull() reads it: leading
 * white space, an optional sign, decimal digits, then white space, a NUL or
 * the end of the value. No digits or an overflow is not a number; a minus
 * sign is refused only when the negated result would be negative as a
 * signed 64-bit number, as there.
 */
static bool item_value_u64(const struct item *it, uint64_t *out)
{
	const char *end = item_value_const(it) + it->nbytes;
	const char *p;
	bool minus;
	uint64_t v;

	p = number_scan(item_value_const(it), end, UINT64_MAX, &minus, &v);
	if (!p || (p < end && *p != '\0' && !number_isspace(*p)))
		return false;
	if (minus) {
		v = (uint64_t)0 - v;
		if ((int64_t)v < 0)
			return false;
	}
	*out = v;
	return true;
}

int store_incr_decr(struct store *s, const char *key, size_t nkey, bool incr,
		    uint64_t delta, uint64_t *value, uint64_t *cas_out)
{
	unsigned int tries;
	struct keyref k;

	if (!keyref_valid(nkey))
		return -ENOENT;
	keyref_init(&k, key, nkey);
	for (tries = 0; tries < REPLACE_RETRIES; tries++) {
		struct item *old = store_hold(s, &k), *it;
		char text[24];
		uint64_t v;
		int len, ret;

		if (!old)
			return -ENOENT;
		if (!item_value_u64(old, &v)) {
			item_put(old);
			return -EINVAL;
		}
		if (incr)
			v += delta;		/* wraps at 2^64 */
		else
			v = delta > v ? 0 : v - delta;
		len = snprintf(text, sizeof(text), "%llu",
			       (unsigned long long)v);
		it = item_alloc(k.key, k.nkey, old->flags, old->exptime,
				(uint32_t)len);
		if (!it) {
			item_put(old);
			return -ENOMEM;
		}
		memcpy(item_value(it), text, (size_t)len);
		memcpy(item_value(it) + len, "\r\n", 2);
		ret = store_commit(s, it, STORE_OP_SET, 0, old, cas_out);
		item_put(old);
		if (ret == STORE_STORED) {
			*value = v;
			return 0;
		}
		if (ret != STORE_RETRY)
			return -ENOMEM;
	}
	return -ENOMEM;
}

void store_stats(struct store *s, struct store_stats *st)
{
	unsigned int i;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < s->cfg.nshards; i++) {
		struct shard *sh = &s->shards[i];

		shard_lock(sh);
		st->curr_items += sh->curr_items;
		st->curr_int_items += sh->curr_int_items;
		st->curr_str_items += sh->curr_str_items;
		st->total_items += sh->total_items;
		st->bytes += sh->bytes;
		st->index_bytes += sh->index_bytes;
		st->evictions += sh->evictions;
		st->evicted_unfetched += sh->evicted_unfetched;
		st->expired_unfetched += sh->expired_unfetched;
		st->reclaimed += sh->reclaimed;
		st->hash_buckets += (uint64_t)1 << sh->ht.bits;
		st->radix_nodes += sh->ints.nr_nodes;
		st->rehashing += htable_rehashing(&sh->ht);
		shard_unlock(sh);
	}
	st->limit_maxbytes = s->cfg.mem_limit;
	st->nshards = s->cfg.nshards;
}

uint64_t store_hash_max_chain(struct store *s)
{
	uint64_t max = 0;
	unsigned int i;

	for (i = 0; i < s->cfg.nshards; i++) {
		struct shard *sh = &s->shards[i];
		unsigned int chain;

		shard_lock(sh);
		chain = htable_max_chain(&sh->ht);
		shard_unlock(sh);
		if (chain > max)
			max = chain;
	}
	return max;
}

void store_stats_reset(struct store *s)
{
	unsigned int i;

	for (i = 0; i < s->cfg.nshards; i++) {
		struct shard *sh = &s->shards[i];

		shard_lock(sh);
		sh->total_items = 0;
		sh->evictions = 0;
		sh->evicted_unfetched = 0;
		sh->expired_unfetched = 0;
		sh->reclaimed = 0;
		shard_unlock(sh);
	}
}

size_t store_memory_used(const struct store *s)
{
	return __atomic_load_n(&s->mem_used, __ATOMIC_RELAXED);
}

struct store *store_create(const struct store_config *cfg)
{
	unsigned int n = cfg->nshards, bits = cfg->hash_bits, i, ok = 0;
	struct store *s;
	void *mem;

	if (!n || n > NSHARDS_MAX || (n & (n - 1)))
		return NULL;
	if (bits == 0)
		bits = HASH_BITS_DEFAULT;
	if (bits > HASH_BITS_MAX)
		return NULL;
	if (cfg->item_size_max > UINT32_MAX / 2)
		return NULL;
	mem = ak_calloc(1, sizeof(*s) + n * sizeof(struct shard) + CACHE_LINE);
	if (!mem)
		return NULL;
	s = (struct store *)(((uintptr_t)mem + CACHE_LINE - 1) &
			     ~(uintptr_t)(CACHE_LINE - 1));
	s->mem = mem;
	s->cfg = *cfg;
	s->cfg.hash_bits = bits;
	if (!s->cfg.item_size_max)
		s->cfg.item_size_max = ITEM_SIZE_MAX_DEFAULT;
	s->shards = (struct shard *)(s + 1);
	while ((1u << s->shard_bits) < n)
		s->shard_bits++;
	s->shard_mask = n - 1;
	s->node_size = radix_tree_node_size();
	s->epoch = EPOCH_UNSET;
	s->now = 2;
	pthread_mutex_init(&s->flush_lock, NULL);

	for (i = 0; i < n; i++, ok++) {
		struct shard *sh = &s->shards[i];
		struct slist_head *buckets = htable_buckets_alloc(bits);

		if (!buckets)
			break;
		ak_lock_init(&sh->lock);
		htable_init(&sh->ht, buckets, bits);
		sh->tree = RB_ROOT;
		radix_tree_init(&sh->ints);
		sh->index = i;
		sh->index_bytes = htable_memory(&sh->ht);
		s->mem_used += sh->index_bytes;
	}
	if (ok < n)
		goto err_destroy_store;
	if (s->cfg.mem_limit && s->mem_used > s->cfg.mem_limit)
		goto err_destroy_store;	/* the empty indexes do not fit */
	return s;

err_destroy_store:
	s->cfg.nshards = ok;
	store_destroy(s);
	return NULL;
}

void store_destroy(struct store *s)
{
	unsigned int i;

	if (!s)
		return;
	for (i = 0; i < s->cfg.nshards; i++) {
		struct shard *sh = &s->shards[i];
		struct rb_node *node;
		void *batch[WALK_BATCH];
		uint64_t index = 0;
		unsigned int got, j;

		while ((node = rb_first(&sh->tree))) {
			rb_erase(node, &sh->tree);
			item_put(rb_entry(node, struct item, rbnode));
		}
		do {
			got = radix_tree_gang_lookup(&sh->ints, batch, NULL,
						     index, WALK_BATCH);
			for (j = 0; j < got; j++) {
				struct item *it = batch[j];

				index = it->ikey + 1;
				item_put(it);
			}
		} while (got == WALK_BATCH && index);
		htable_destroy(&sh->ht);
		radix_tree_destroy(&sh->ints);
	}
	pthread_mutex_destroy(&s->flush_lock);
	ak_free(s->mem);
}
