// SPDX-License-Identifier: MIT
/*
 * store.c - shards of indexes, CLOCK eviction, the memory limit, expiry and
 * flush_all, and ordered ranges merged over the shards.
 *
 * Lock order: a thread holds at most one shard lock at a time and takes no
 * other lock while holding it. The flush mutex only serialises concurrent
 * store_flush_all() calls and is never held together with a shard lock.
 *
 * Under a shard lock nothing allocates or frees in bulk: items are allocated
 * and filled before (store_item_alloc(), item_alloc()), radix inserts are
 * preloaded before, and items unlinked under the lock are either handed
 * over to the other holders of a reference (the store's reference is
 * dropped: they free the block) or, when the store holds the last
 * reference, collected on a local list ("dead", through dead_next) and
 * freed with items_release() after unlocking. The only allocator calls
 * under a lock are radix_tree_delete() giving back a single emptied node.
 *
 * Memory: s->mem_used counts the allocator bytes of every linked item plus
 * every shard's index bytes (hash bucket arrays and radix nodes). Any growth
 * is reserved first with mem_charge_locked(), which evicts until the
 * reservation fits, so mem_used never exceeds the limit.
 *
 * Per shard, under its lock:
 *  - every linked item is on exactly one index (radix tree by ikey for
 *    integer keys; hash table and rbtree for the others), has ITEM_LINKED
 *    set, and its key maps to this shard;
 *  - curr_items = curr_int_items + curr_str_items, the entries of the
 *    indexes; bytes the sum of the linked items' item_alloc_size(),
 *    index_bytes htable_memory() + radix nodes * node size;
 *  - a clock hand on the string part points at a linked string item of
 *    the shard or is NULL (past the last one).
 *
 * CLOCK: the eviction hand walks the shard's keyspace order (the radix
 * tree, then the rbtree, then around again); a hit sets ITEM_ACCESSED and
 * a store ITEM_NEW, and the hand clears one of them per pass before it
 * evicts, so an item read since the last pass survives two, a fresh one
 * one, and nothing moves on a hit. The expiry hand walks the same way.
 */
#include "store.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "compiler.h"
#include "hash.h"
#include "htable.h"
#include "lock.h"
#include "number.h"
#include "radix_tree.h"

#define CACHE_LINE		64
#define NSHARDS_MAX		4096
#define HASH_BITS_DEFAULT	4
#define HASH_BITS_MAX		30
#define ITEM_SIZE_MAX_DEFAULT	(1024 * 1024)
#define REALTIME_MAXDELTA	(60 * 60 * 24 * 30)	/* memcached's 30 days */
#define EPOCH_UNSET		INT64_MIN
#define SLICE_ITEMS		256	/* entries a range walk visits per lock hold */
#define EXPIRE_SLICE		64	/* items store_expire_step() checks per hold */
#define DEAD_SCAN		1024	/* items -M looks at for a dead one */
#define WALK_BATCH		32	/* radix gang lookup batch */
#define REHASH_STEP		2	/* old buckets moved per write while growing */
#define EVICT_ROUNDS		8	/* cross-shard eviction rounds per store */
#define REPLACE_RETRIES		1000	/* append/prepend/incr: the old item changed */

/* Internal outcomes of shard_store_locked(), beside enum store_result. */
#define STORE_RETRY		(-1)	/* the expected old item is gone */
#define STORE_EVICT_ELSEWHERE	(-2)	/* this shard has nothing to evict */

/*
 * A position in a shard's keyspace order: the next integer index to visit,
 * or the next string item (NULL: past the last one, next is a new lap).
 */
struct clock_hand {
	bool in_strs;
	uint64_t ikey;
	struct item *item;
};

/* Items to free once the shard lock is dropped (see dead_push()). */
struct dead_list {
	struct item *first;
};

#define DEAD_LIST(name)	struct dead_list name = { NULL }

struct shard {
	struct ak_lock lock;
	/* everything below is guarded by lock, except where marked atomic */
	struct htable ht;		/* string keys by item_key_hash() */
	struct rb_root tree;		/* string keys in memcmp order */
	struct radix_tree_root ints;	/* integer keys by value */
	struct clock_hand hand;		/* CLOCK eviction */
	struct clock_hand expire_hand;	/* store_expire_step() */
	uint64_t cas_seq;		/* atomic reads (flush); written under lock */
	uint64_t flush_cas;		/* atomic: see item_flushed() */
	uint64_t curr_items;
	uint64_t curr_int_items;
	uint64_t curr_str_items;
	uint64_t total_items;
	uint64_t bytes;			/* item_alloc_size() of linked items */
	uint64_t index_bytes;		/* hash arrays + radix nodes */
	uint64_t evictions;
	uint64_t evicted_unfetched;
	uint64_t expired_unfetched;
	uint64_t reclaimed;
	uint64_t grow_retry_at;		/* ht.count before a refused grow retries */
	unsigned int index;
} __attribute__((aligned(CACHE_LINE)));

struct store {
	struct store_config cfg;
	struct shard *shards;
	void *mem;			/* the block holding store and shards */
	unsigned int shard_bits;
	uint32_t shard_mask;
	size_t node_size;		/* radix_tree_node_size() */
	pthread_mutex_t flush_lock;	/* serialises store_flush_all() */

	/* read-mostly, lock free */
	int64_t epoch __attribute__((aligned(CACHE_LINE))); /* atomic */
	rel_time_t now;			/* atomic, never decreases */
	/* atomic: low half = done (in effect), high half = pending moment */
	uint64_t flush_word;

	/* written by every store */
	size_t mem_used __attribute__((aligned(CACHE_LINE))); /* atomic */
	unsigned int expire_shard;	/* atomic: next shard to expire */
	unsigned int evict_shard;	/* atomic: next shard to evict from */
} __attribute__((aligned(CACHE_LINE)));

/* A key looked up by a client, classified and hashed before any lock. */
struct keyref {
	const char *key;
	size_t nkey;
	bool isint;
	uint64_t ikey;
	uint32_t hash;
};

/* A limit on the string part of the keyspace. */
struct sbound {
	bool open;			/* no limit */
	bool incl;
	const char *key;
	size_t nkey;
};

/*
 * What is left of a range in one shard (or over all of them): the integer
 * keys [ilo, ihi] when ints, and the string keys between slo and shi when
 * strs. Walks narrow it as they go, so a slice resumes where the last
 * stopped; the buffers hold keys copied from items for that.
 */
struct span {
	bool ints;
	bool strs;
	uint64_t ilo, ihi;
	struct sbound slo, shi;
	char lo_buf[KEY_MAX_LENGTH];
	char hi_buf[KEY_MAX_LENGTH];
};

/* What a walk does with each live item in range; false stops the walk. */
typedef bool walk_fn(struct store *s, struct shard *sh, struct item *it,
		     void *arg, struct dead_list *dead);

/* ---- small helpers ---- */

static void items_release(struct dead_list *dead)
{
	struct item *it = dead->first;

	while (it) {
		struct item *next = it->dead_next;

		item_free(it);	/* the store held the last reference */
		it = next;
	}
	dead->first = NULL;
}

/*
 * The store lets go of an item it has unlinked. When others hold it, the
 * store's reference is just dropped (not the last: nothing is freed under
 * the lock) and the last holder frees it. Otherwise nobody else can reach
 * it (new references are only taken under the lock, from the indexes), so
 * its cas word becomes the link of @dead.
 * Context: the item's shard lock is held.
 */
static void dead_push(struct dead_list *dead, struct item *it)
{
	uint32_t ref = __atomic_load_n(&it->refcount, __ATOMIC_ACQUIRE);

	while (ref > 1) {
		if (__atomic_compare_exchange_n(&it->refcount, &ref, ref - 1,
						false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return;
	}
	it->dead_next = dead->first;
	dead->first = it;
}

static void shard_lock(struct shard *sh)
{
	ak_lock_acquire(&sh->lock);
}

static void shard_unlock(struct shard *sh)
{
	ak_lock_release(&sh->lock);
}

/* iflags writers hold the shard lock; readers may not, hence the atomics */
static void item_set_flag(struct item *it, uint8_t f)
{
	uint8_t v = READ_ONCE(it->iflags);

	if ((v & f) != f)
		WRITE_ONCE(it->iflags, (uint8_t)(v | f));
}

static void item_clear_flag(struct item *it, uint8_t f)
{
	uint8_t v = READ_ONCE(it->iflags);

	if (v & f)
		WRITE_ONCE(it->iflags, (uint8_t)(v & ~f));
}

static bool item_is_int(const struct item *it)
{
	return it->iflags & ITEM_INTKEY;
}

/*
 * The store-wide counter is shared by every worker: a change of 0 (a value
 * replaced by one of the same size class, an integer key added without a
 * new radix node) skips the locked add.
 */
static inline void mem_add(struct store *s, int64_t delta)
{
	if (delta)
		__atomic_fetch_add(&s->mem_used, (size_t)delta,
				   __ATOMIC_RELAXED);
}

/* Bytewise order, a prefix first. */
static int str_cmp(const char *a, size_t na, const char *b, size_t nb)
{
	size_t n = na < nb ? na : nb;
	int c = n ? memcmp(a, b, n) : 0;

	if (c)
		return c;
	return na < nb ? -1 : na > nb;
}

/* Keyspace order of two items. */
static int item_cmp(const struct item *a, const struct item *b)
{
	if (item_is_int(a) != item_is_int(b))
		return item_is_int(a) ? -1 : 1;
	if (item_is_int(a))
		return a->ikey < b->ikey ? -1 : a->ikey > b->ikey;
	return str_cmp(item_key(a), a->nkey, item_key(b), b->nkey);
}

static void keyref_init(struct keyref *k, const char *key, size_t nkey)
{
	k->key = key;
	k->nkey = nkey;
	k->isint = key_is_integer(key, nkey, &k->ikey);
	k->hash = k->isint ? 0 : item_key_hash(key, nkey);
}

static void keyref_of_item(struct keyref *k, const struct item *it)
{
	k->key = item_key(it);
	k->nkey = it->nkey;
	k->isint = item_is_int(it);
	k->ikey = k->isint ? it->ikey : 0;
	k->hash = k->isint ? 0 : item_key_hash(k->key, k->nkey);
}

static bool keyref_valid(size_t nkey)
{
	return nkey >= 1 && nkey <= KEY_MAX_LENGTH;
}

static struct shard *shard_of_int(const struct store *s, uint64_t ikey)
{
	return &s->shards[(ikey >> RADIX_TREE_MAP_SHIFT) & s->shard_mask];
}

static struct shard *shard_of_hash(const struct store *s, uint32_t hash)
{
	/* top bits pick the shard, low bits the bucket: independent */
	return &s->shards[s->shard_bits ? hash >> (32 - s->shard_bits) : 0];
}

static struct shard *shard_of(const struct store *s, const struct keyref *k)
{
	return k->isint ? shard_of_int(s, k->ikey) : shard_of_hash(s, k->hash);
}

static unsigned int radix_height_for(uint64_t index)
{
	if (!index)
		return 1;
	return (63 - __builtin_clzll(index)) / RADIX_TREE_MAP_SHIFT + 1;
}

/* Most bytes of radix nodes inserting @index into @sh can add. */
static size_t radix_insert_worst_locked(const struct store *s,
					const struct shard *sh, uint64_t index)
{
	unsigned int h = radix_height_for(index), cur = sh->ints.height;
	unsigned int nodes;

	if (!cur)
		nodes = h;
	else if (h > cur)
		nodes = (h - cur) + (h - 1);
	else
		nodes = cur - 1;
	return nodes * s->node_size;
}

/*
 * The size memcached 1.6 checks against -I for an item of this shape: its
 * 48-byte header, the 8-byte CAS, the key and its NUL, the flags when they
 * are not 0, the value and its "\r\n". Using the same sum makes the
 * largest value that -I admits the same as there, whatever our own header
 * costs (that is what memory_limit counts, with item_total_size()).
 */
static size_t item_mc_size(size_t nkey, uint32_t flags, uint32_t nbytes)
{
	return 48 + 8 + nkey + 1 + (flags ? sizeof(flags) : 0) +
	       (size_t)nbytes + 2;
}

/* ---- time and flush_all ---- */

static int64_t store_epoch(const struct store *s)
{
	int64_t e = __atomic_load_n(&s->epoch, __ATOMIC_ACQUIRE);

	return e == EPOCH_UNSET ? -2 : e;
}

void store_set_time(struct store *s, int64_t unix_now)
{
	int64_t epoch = __atomic_load_n(&s->epoch, __ATOMIC_ACQUIRE);
	int64_t rel;
	rel_time_t cur;

	if (epoch == EPOCH_UNSET) {
		int64_t want = unix_now - 2;

		if (__atomic_compare_exchange_n(&s->epoch, &epoch, want, false,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			epoch = want;
	}
	rel = unix_now - epoch;
	if (rel > UINT32_MAX - 1)
		rel = UINT32_MAX - 1;
	/* the clock never goes back: a step back is ignored */
	cur = __atomic_load_n(&s->now, __ATOMIC_RELAXED);
	while (rel > (int64_t)cur &&
	       !__atomic_compare_exchange_n(&s->now, &cur, (rel_time_t)rel,
					    true, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
}

rel_time_t store_now(const struct store *s)
{
	return __atomic_load_n(&s->now, __ATOMIC_RELAXED);
}

int64_t store_unix_time(const struct store *s)
{
	return store_epoch(s) + store_now(s);
}

rel_time_t store_exptime(const struct store *s, int64_t exptime)
{
	int64_t t;

	if (exptime == 0)
		return 0;
	if (exptime < 0)
		return 1;	/* in the past: store_now() >= 2 */
	if (exptime <= REALTIME_MAXDELTA)
		t = (int64_t)store_now(s) + exptime;
	else
		t = exptime - store_epoch(s);
	if (t < 1)
		return 1;
	return t > UINT32_MAX ? UINT32_MAX : (rel_time_t)t;
}

/*
 * An item is flushed if it was stored before the pending flush moment once
 * that moment has come, or before the flush in effect ("done"): stored in
 * an earlier second, or in the same second with a cas the flush had
 * already handed out (shard->flush_cas, a snapshot of the cas sequence).
 */
static bool item_flushed(const struct store *s, const struct shard *sh,
			 const struct item *it, rel_time_t now)
{
	uint64_t w = __atomic_load_n(&s->flush_word, __ATOMIC_ACQUIRE);
	rel_time_t done = (rel_time_t)w, pend = (rel_time_t)(w >> 32);

	if (pend && pend <= now && it->time < pend)
		return true;
	if (!done || it->time > done)
		return false;
	if (it->time < done)
		return true;
	return it->cas <= __atomic_load_n(&sh->flush_cas, __ATOMIC_RELAXED);
}

static inline enum store_miss item_state(const struct store *s,
					 const struct shard *sh,
					 const struct item *it, rel_time_t now)
{
	rel_time_t exptime = READ_ONCE(it->exptime);

	if (item_flushed(s, sh, it, now))
		return STORE_MISS_FLUSHED;
	if (exptime && exptime <= now)
		return STORE_MISS_EXPIRED;
	return STORE_HIT;
}

void store_flush_all(struct store *s, rel_time_t when)
{
	rel_time_t now = store_now(s), done, pend;
	unsigned int i;
	uint64_t w;

	pthread_mutex_lock(&s->flush_lock);
	w = __atomic_load_n(&s->flush_word, __ATOMIC_RELAXED);
	done = (rel_time_t)w;
	pend = (rel_time_t)(w >> 32);
	if (when <= now) {
		/*
		 * Now: everything stored up to this call. A pending flush is
		 * cancelled (memcached keeps one flush moment), and one that
		 * already took effect is covered by this one.
		 */
		for (i = 0; i < s->cfg.nshards; i++) {
			struct shard *sh = &s->shards[i];
			uint64_t seq = __atomic_load_n(&sh->cas_seq,
						       __ATOMIC_RELAXED);

			__atomic_store_n(&sh->flush_cas,
					 seq << s->shard_bits | sh->index,
					 __ATOMIC_RELAXED);
		}
		done = now > done ? now : done;
		pend = 0;
	} else {
		/* keep what a pending flush already invalidated */
		if (pend && pend <= now && pend > done) {
			for (i = 0; i < s->cfg.nshards; i++)
				__atomic_store_n(&s->shards[i].flush_cas, 0,
						 __ATOMIC_RELAXED);
			done = pend;
		}
		pend = when;
	}
	__atomic_store_n(&s->flush_word, (uint64_t)pend << 32 | done,
			 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&s->flush_lock);
}

/* ---- one shard's indexes (all _locked: the caller holds sh->lock) ---- */

static inline struct item *shard_find_locked(const struct shard *sh,
				      const struct keyref *k)
{
	struct item *it;

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

	while (*link) {
		struct item *cur = rb_entry(*link, struct item, rbnode);

		parent = *link;
		if (str_cmp(item_key(it), it->nkey, item_key(cur),
			    cur->nkey) < 0)
			link = &(*link)->rb_left;
		else
			link = &(*link)->rb_right;
	}
	rb_link_node(&it->rbnode, parent, link);
	rb_insert_color(&it->rbnode, &sh->tree);
}

static struct item *str_next_locked(const struct item *it)
{
	struct rb_node *n = rb_next(&it->rbnode);

	return n ? rb_entry(n, struct item, rbnode) : NULL;
}

static struct item *str_first_locked(const struct shard *sh)
{
	struct rb_node *n = rb_first(&sh->tree);

	return n ? rb_entry(n, struct item, rbnode) : NULL;
}

/*
 * A string item leaves the rbtree (@repl NULL) or is replaced there by
 * @repl: no hand may keep pointing at it.
 */
static inline void hands_forget_locked(struct shard *sh, struct item *it,
				       struct item *repl)
{
	if (sh->hand.in_strs && sh->hand.item == it)
		sh->hand.item = repl ? repl : str_next_locked(it);
	if (sh->expire_hand.in_strs && sh->expire_hand.item == it)
		sh->expire_hand.item = repl ? repl : str_next_locked(it);
}

/* The item at @h, moving it over gaps and around; NULL: the shard is empty. */
static struct item *hand_item_locked(const struct shard *sh,
				     struct clock_hand *h)
{
	unsigned int lap;

	for (lap = 0; lap < 3; lap++) {
		if (!h->in_strs) {
			void *got;

			if (radix_tree_gang_lookup(&sh->ints, &got, NULL,
						   h->ikey, 1))
				return got;
			h->in_strs = true;
			h->item = str_first_locked(sh);
		}
		if (h->item)
			return h->item;
		h->in_strs = false;
		h->ikey = 0;
	}
	return NULL;
}

/* Move @h past @it, the item at it. */
static void hand_step_locked(const struct shard *sh, struct clock_hand *h,
			     const struct item *it)
{
	if (!item_is_int(it)) {
		h->item = str_next_locked(it);
	} else if (it->ikey == UINT64_MAX) {
		h->in_strs = true;
		h->item = str_first_locked(sh);
	} else {
		h->ikey = it->ikey + 1;
	}
}

static void index_radix_sync_locked(struct store *s, struct shard *sh,
				    uint64_t nodes_before)
{
	int64_t delta = ((int64_t)sh->ints.nr_nodes - (int64_t)nodes_before) *
			(int64_t)s->node_size;

	sh->index_bytes += delta;
	mem_add(s, delta);
}

/*
 * Take @it off every index and the CLOCK list and uncount it; the store's
 * reference goes onto @dead, to be released after unlocking.
 */
static void item_unlink_locked(struct store *s, struct shard *sh,
			       struct item *it, struct dead_list *dead)
{
	size_t size;

	if (item_is_int(it)) {
		uint64_t nodes = sh->ints.nr_nodes;

		radix_tree_delete(&sh->ints, it->ikey);
		index_radix_sync_locked(s, sh, nodes);
		sh->curr_int_items--;
	} else {
		htable_del(&sh->ht, &it->hnode,
			   item_key_hash(item_key(it), it->nkey));
		hands_forget_locked(sh, it, NULL);
		rb_erase(&it->rbnode, &sh->tree);
		RB_CLEAR_NODE(&it->rbnode);
		sh->curr_str_items--;
	}
	item_clear_flag(it, ITEM_LINKED);
	sh->curr_items--;
	size = item_alloc_size(it);
	sh->bytes -= size;
	mem_add(s, -(int64_t)size);
	dead_push(dead, it);
}

/* Unlink an expired or flushed item. */
static void item_reclaim_locked(struct store *s, struct shard *sh,
				struct item *it, struct dead_list *dead)
{
	sh->reclaimed++;
	if (!(it->iflags & ITEM_FETCHED))
		sh->expired_unfetched++;
	item_unlink_locked(s, sh, it, dead);
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
 * Free one item by CLOCK: the item at the hand goes unless it has
 * ITEM_ACCESSED or ITEM_NEW set; the hand clears one of them (ACCESSED
 * first) and moves on. A dead item goes first, as a reclaim. With @live
 * false only a dead item is taken, among the next DEAD_SCAN (the hand keeps
 * its place, so calls that find none search on where the last stopped).
 * @keep (may be NULL) is passed over: the item a store is replacing.
 * Return: false when there was nothing to take.
 */
static bool shard_evict_one_locked(struct store *s, struct shard *sh,
				   rel_time_t now, bool live,
				   const struct item *keep,
				   struct dead_list *dead)
{
	unsigned int looked = 0;
	struct item *it;

	while ((it = hand_item_locked(sh, &sh->hand))) {
		if (it == keep) {
			if (sh->curr_items == 1)
				return false;
			hand_step_locked(sh, &sh->hand, it);
			continue;
		}
		if (item_state(s, sh, it, now) != STORE_HIT) {
			hand_step_locked(sh, &sh->hand, it);
			item_reclaim_locked(s, sh, it, dead);
			return true;
		}
		if (!live) {
			/* look a little further for a dead one */
			if (++looked >= DEAD_SCAN)
				return false;
			hand_step_locked(sh, &sh->hand, it);
			continue;
		}
		if (it->iflags & (ITEM_ACCESSED | ITEM_NEW)) {
			item_clear_flag(it, it->iflags & ITEM_ACCESSED ?
					ITEM_ACCESSED : ITEM_NEW);
			hand_step_locked(sh, &sh->hand, it);
			continue;
		}
		hand_step_locked(sh, &sh->hand, it);
		sh->evictions++;
		if (!(it->iflags & ITEM_FETCHED))
			sh->evicted_unfetched++;
		item_unlink_locked(s, sh, it, dead);
		return true;
	}
	return false;
}

/* Bytes a shard holds, and whether that is below half its fair share. */
static uint64_t shard_held_locked(const struct shard *sh)
{
	return sh->bytes + sh->index_bytes;
}

static bool shard_starved_locked(const struct store *s,
				 const struct shard *sh)
{
	return s->cfg.nshards > 1 &&
	       shard_held_locked(sh) * 2 * s->cfg.nshards < s->cfg.mem_limit;
}

/*
 * Reserve @bytes of the memory limit, evicting from @sh while they do not
 * fit. With @defer, a shard below half its fair share does not evict its
 * own items but asks for memory from the others, so that the memory flows
 * to where the stores are. Return: 0; -ENOSPC when the others should evict
 * (*@short_by says how many bytes are missing); -ENOMEM when no_evict
 * forbids evicting.
 */
static int mem_charge_locked(struct store *s, struct shard *sh, size_t bytes,
			     bool defer, const struct item *keep, rel_time_t now,
			     struct dead_list *dead, size_t *short_by)
{
	size_t limit = s->cfg.mem_limit;
	size_t used;

	if (!limit) {
		mem_add(s, (int64_t)bytes);
		return 0;
	}
	used = __atomic_load_n(&s->mem_used, __ATOMIC_RELAXED);
	for (;;) {
		if (used <= limit && bytes <= limit - used) {
			if (__atomic_compare_exchange_n(&s->mem_used, &used,
							used + bytes, true,
							__ATOMIC_RELAXED,
							__ATOMIC_RELAXED))
				return 0;
			continue;
		}
		if ((defer && !s->cfg.no_evict &&
		     shard_starved_locked(s, sh)) ||
		    !shard_evict_one_locked(s, sh, now, !s->cfg.no_evict,
					    keep, dead)) {
			*short_by = used + bytes - limit;
			return s->cfg.no_evict ? -ENOMEM : -ENOSPC;
		}
		used = __atomic_load_n(&s->mem_used, __ATOMIC_RELAXED);
	}
}

/*
 * Move a few old buckets of a growing hash table. Return: the old array
 * once the move is complete (ak_free() it after unlocking), else NULL.
 */
static struct slist_head *shard_rehash_step_locked(struct store *s,
						   struct shard *sh)
{
	struct slist_head *old, *done = NULL;
	struct slist_node *tmp;
	struct item *it;
	unsigned int i;

	if (likely(!htable_rehashing(&sh->ht)))
		return NULL;
	for (i = 0; i < REHASH_STEP && (old = htable_rehash_bucket(&sh->ht));
	     i++) {
		slist_for_each_entry_safe(it, tmp, old, hnode) {
			slist_del_init(&it->hnode, old);
			slist_add_head(&it->hnode, htable_new_bucket(&sh->ht,
				item_key_hash(item_key(it), it->nkey)));
		}
		done = htable_rehash_advance(&sh->ht);
	}
	if (done) {
		int64_t bytes = (int64_t)ak_usable_size(done);

		sh->index_bytes -= bytes;
		mem_add(s, -bytes);
	}
	return done;
}

/* Whether a write should be followed by shard_grow(). */
static bool shard_wants_grow_locked(const struct shard *sh)
{
	return htable_wants_grow(&sh->ht) && sh->ht.count >= sh->grow_retry_at;
}

/*
 * Start growing @sh's hash table from 2^@bits buckets: allocate the new
 * array unlocked, then reserve its bytes and install it under the lock.
 * Context: no lock held; takes sh->lock.
 */
static void shard_grow(struct store *s, struct shard *sh, unsigned int bits)
{
	struct slist_head *buckets = htable_buckets_alloc(bits + 1);
	DEAD_LIST(dead);
	size_t bytes, short_by;

	if (!buckets)
		return;
	bytes = ak_usable_size(buckets);
	shard_lock(sh);
	if (sh->ht.bits != bits || !htable_wants_grow(&sh->ht))
		goto out_unlock;
	if (mem_charge_locked(s, sh, bytes, false, NULL, store_now(s), &dead,
			      &short_by)) {
		/* no room: try again after the table filled a little more */
		sh->grow_retry_at = sh->ht.count + sh->ht.count / 4 + 1;
		goto out_unlock;
	}
	if (htable_grow_start(&sh->ht, buckets)) {
		mem_add(s, -(int64_t)bytes);
		goto out_unlock;
	}
	sh->index_bytes += bytes;
	buckets = NULL;
out_unlock:
	shard_unlock(sh);
	items_release(&dead);
	ak_free(buckets);
}

/*
 * Evict from the shards other than @self, one lock at a time, until about
 * @need bytes are freed: first from those at or above their fair share,
 * then from any. Return: the bytes freed.
 * Context: no lock held.
 */
static size_t store_evict_others(struct store *s, struct shard *self,
				 size_t need)
{
	unsigned int start = __atomic_fetch_add(&s->evict_shard, 1,
						__ATOMIC_RELAXED);
	uint64_t share = s->cfg.mem_limit / s->cfg.nshards;
	rel_time_t now = store_now(s);
	unsigned int i, pass;
	size_t freed = 0;

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < s->cfg.nshards && freed < need; i++) {
			struct shard *sh =
				&s->shards[(start + i) & s->shard_mask];
			DEAD_LIST(dead);

			if (sh == self)
				continue;
			shard_lock(sh);
			while (freed < need &&
			       (pass || shard_held_locked(sh) >= share)) {
				uint64_t before = shard_held_locked(sh);

				if (!shard_evict_one_locked(s, sh, now, true,
							    NULL, &dead))
					break;
				freed += before - shard_held_locked(sh);
			}
			shard_unlock(sh);
			items_release(&dead);
		}
	}
	return freed;
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

/* ---- expiry ---- */

/* Check up to @n items from the shard's cursor. Return: items reclaimed. */
static unsigned int shard_expire_locked(struct store *s, struct shard *sh,
					unsigned int n, rel_time_t now,
					struct dead_list *dead)
{
	unsigned int got = 0;
	struct item *it;

	while (n-- && (it = hand_item_locked(sh, &sh->expire_hand))) {
		hand_step_locked(sh, &sh->expire_hand, it);
		if (item_state(s, sh, it, now) != STORE_HIT) {
			item_reclaim_locked(s, sh, it, dead);
			got++;
		}
	}
	return got;
}

unsigned int store_expire_step(struct store *s, unsigned int budget)
{
	uint64_t quota = ((uint64_t)budget + s->cfg.nshards - 1) /
			 s->cfg.nshards;
	unsigned int start = __atomic_fetch_add(&s->expire_shard, 1,
						__ATOMIC_RELAXED);
	unsigned int i, reclaimed = 0, spent = 0;
	rel_time_t now = store_now(s);

	for (i = 0; i < s->cfg.nshards && spent < budget; i++) {
		struct shard *sh = &s->shards[(start + i) & s->shard_mask];
		uint64_t left = quota;

		while (left) {
			unsigned int n = left < EXPIRE_SLICE ? (unsigned int)left :
							       EXPIRE_SLICE;
			DEAD_LIST(dead);

			shard_lock(sh);
			/* at most one lap of the shard per call */
			if (left > sh->curr_items)
				left = sh->curr_items;
			if (n > left)
				n = (unsigned int)left;
			reclaimed += shard_expire_locked(s, sh, n, now, &dead);
			shard_unlock(sh);
			items_release(&dead);
			left -= n;
			spent += n;
		}
	}
	return reclaimed;
}

/* ---- ranges ---- */

static void sbound_set(struct sbound *b, const char *key, size_t nkey,
		       bool incl)
{
	b->open = false;
	b->incl = incl;
	b->key = key;
	b->nkey = nkey;
}

/* Turn two bounds into a span. Return: false for an empty range. */
static bool span_init(struct span *sp, const struct store_bound *from,
		      const struct store_bound *to)
{
	uint64_t v;
	int c;

	sp->ints = sp->strs = true;
	sp->ilo = 0;
	sp->ihi = UINT64_MAX;
	sp->slo.open = sp->shi.open = true;

	switch (from->kind) {
	case BOUND_MIN:
		break;
	case BOUND_MAX:
		return false;
	case BOUND_INCL:
	case BOUND_EXCL:
		if (key_is_integer(from->key, from->nkey, &v)) {
			if (from->kind == BOUND_INCL)
				sp->ilo = v;
			else if (v == UINT64_MAX)
				sp->ints = false;
			else
				sp->ilo = v + 1;
		} else {
			sp->ints = false;
			sbound_set(&sp->slo, from->key, from->nkey,
				   from->kind == BOUND_INCL);
		}
		break;
	}
	switch (to->kind) {
	case BOUND_MAX:
		break;
	case BOUND_MIN:
		return false;
	case BOUND_INCL:
	case BOUND_EXCL:
		if (key_is_integer(to->key, to->nkey, &v)) {
			sp->strs = false;
			if (to->kind == BOUND_INCL)
				sp->ihi = v;
			else if (v == 0)
				sp->ints = false;
			else
				sp->ihi = v - 1;
		} else {
			sbound_set(&sp->shi, to->key, to->nkey,
				   to->kind == BOUND_INCL);
		}
		break;
	}
	if (sp->ints && sp->ilo > sp->ihi)
		sp->ints = false;
	if (sp->strs && !sp->slo.open && !sp->shi.open) {
		c = str_cmp(sp->slo.key, sp->slo.nkey, sp->shi.key,
			    sp->shi.nkey);
		if (c > 0 || (c == 0 && !(sp->slo.incl && sp->shi.incl)))
			sp->strs = false;
	}
	return sp->ints || sp->strs;
}

/* Whether a string key is above the lower / below the upper limit. */
static bool sbound_above(const struct sbound *lo, const struct item *it)
{
	int c;

	if (lo->open)
		return true;
	c = str_cmp(item_key(it), it->nkey, lo->key, lo->nkey);
	return c > 0 || (c == 0 && lo->incl);
}

static bool sbound_below(const struct sbound *hi, const struct item *it)
{
	int c;

	if (hi->open)
		return true;
	c = str_cmp(item_key(it), it->nkey, hi->key, hi->nkey);
	return c < 0 || (c == 0 && hi->incl);
}

/* Make the span's lower (@lo) or upper limit exclude @it and what is past. */
static void span_exclude_str(struct span *sp, const struct item *it, bool lo)
{
	char *buf = lo ? sp->lo_buf : sp->hi_buf;

	memcpy(buf, item_key(it), it->nkey);
	sbound_set(lo ? &sp->slo : &sp->shi, buf, it->nkey, false);
}

/* First node at or above @lo (NULL: none). */
static struct rb_node *shard_seek_ge_locked(const struct shard *sh,
					    const struct sbound *lo)
{
	struct rb_node *n = sh->tree.rb_node, *best = NULL;

	if (lo->open)
		return rb_first(&sh->tree);
	while (n) {
		if (sbound_above(lo, rb_entry(n, struct item, rbnode))) {
			best = n;
			n = n->rb_left;
		} else {
			n = n->rb_right;
		}
	}
	return best;
}

/* Last node at or below @hi (NULL: none). */
static struct rb_node *shard_seek_le_locked(const struct shard *sh,
					    const struct sbound *hi)
{
	struct rb_node *n = sh->tree.rb_node, *best = NULL;

	if (hi->open)
		return rb_last(&sh->tree);
	while (n) {
		if (sbound_below(hi, rb_entry(n, struct item, rbnode))) {
			best = n;
			n = n->rb_right;
		} else {
			n = n->rb_left;
		}
	}
	return best;
}

/*
 * Visit one live item of a walk, or reclaim a dead one. Return: false when
 * @fn asked to stop.
 */
static bool walk_visit_locked(struct store *s, struct shard *sh,
			      struct item *it, rel_time_t now, walk_fn *fn,
			      void *arg, struct dead_list *dead)
{
	if (item_state(s, sh, it, now) != STORE_HIT) {
		item_reclaim_locked(s, sh, it, dead);
		return true;
	}
	return fn(s, sh, it, arg, dead);
}

static bool walk_ints_locked(struct store *s, struct shard *sh,
			     struct span *sp, bool reverse,
			     unsigned int *budget, rel_time_t now, walk_fn *fn,
			     void *arg, struct dead_list *dead)
{
	void *batch[WALK_BATCH];
	unsigned int n, i;

	while (sp->ints && *budget) {
		unsigned int want = *budget < WALK_BATCH ? *budget : WALK_BATCH;

		if (reverse)
			n = radix_tree_gang_lookup_rev(&sh->ints, batch, NULL,
						       sp->ihi, want);
		else
			n = radix_tree_gang_lookup(&sh->ints, batch, NULL,
						   sp->ilo, want);
		if (!n)
			sp->ints = false;
		for (i = 0; i < n && sp->ints; i++) {
			struct item *it = batch[i];

			if (reverse ? it->ikey < sp->ilo : it->ikey > sp->ihi) {
				sp->ints = false;
				break;
			}
			(*budget)--;
			if (reverse ? it->ikey == 0 : it->ikey == UINT64_MAX)
				sp->ints = false;
			else if (reverse)
				sp->ihi = it->ikey - 1;
			else
				sp->ilo = it->ikey + 1;
			if (!walk_visit_locked(s, sh, it, now, fn, arg, dead))
				return false;
		}
	}
	return true;
}

static bool walk_strs_locked(struct store *s, struct shard *sh,
			     struct span *sp, bool reverse,
			     unsigned int *budget, rel_time_t now, walk_fn *fn,
			     void *arg, struct dead_list *dead)
{
	struct rb_node *node, *next;
	bool go_on = true;

	if (!sp->strs || !*budget)
		return true;
	node = reverse ? shard_seek_le_locked(sh, &sp->shi) :
			 shard_seek_ge_locked(sh, &sp->slo);
	for (; node; node = next) {
		struct item *it = rb_entry(node, struct item, rbnode);

		if (reverse ? !sbound_above(&sp->slo, it) :
			      !sbound_below(&sp->shi, it))
			break;
		if (!*budget)
			return true;	/* the span already resumes here */
		next = reverse ? rb_prev(node) : rb_next(node);
		(*budget)--;
		/* resume past @it; copied before a reclaim may unlink it */
		span_exclude_str(sp, it, !reverse);
		go_on = walk_visit_locked(s, sh, it, now, fn, arg, dead);
		if (!go_on)
			return false;
	}
	sp->strs = false;
	return true;
}

/*
 * Visit up to @budget entries of @sp in @sh in keyspace order (@reverse:
 * descending), narrowing @sp past them. Return: true when this shard's part
 * of the walk is over (span exhausted or @fn said stop).
 */
static bool walk_slice_locked(struct store *s, struct shard *sh,
			      struct span *sp, bool reverse,
			      unsigned int budget, walk_fn *fn, void *arg,
			      struct dead_list *dead)
{
	rel_time_t now = store_now(s);

	if (!reverse) {
		if (!walk_ints_locked(s, sh, sp, false, &budget, now, fn, arg,
				      dead))
			return true;
		if (!walk_strs_locked(s, sh, sp, false, &budget, now, fn, arg,
				      dead))
			return true;
	} else {
		if (!walk_strs_locked(s, sh, sp, true, &budget, now, fn, arg,
				      dead))
			return true;
		if (!walk_ints_locked(s, sh, sp, true, &budget, now, fn, arg,
				      dead))
			return true;
	}
	return !sp->ints && !sp->strs;
}

/* Walk all of @base in @sh, a slice per lock hold. */
static void shard_walk(struct store *s, struct shard *sh,
		       const struct span *base, bool reverse, walk_fn *fn,
		       void *arg)
{
	struct span sp = *base;
	bool done;

	/* the copy's limits may point into base's buffers: fine, base lives */
	do {
		DEAD_LIST(dead);

		shard_lock(sh);
		done = walk_slice_locked(s, sh, &sp, reverse, SLICE_ITEMS, fn,
					 arg, &dead);
		shard_unlock(sh);
		items_release(&dead);
	} while (!done);
}

struct range_acc {
	struct item **buf;
	unsigned int n, max;
};

static bool range_fn(struct store *s, struct shard *sh, struct item *it,
		     void *arg, struct dead_list *dead)
{
	struct range_acc *acc = arg;

	(void)s;
	(void)sh;
	(void)dead;
	item_get(it);
	acc->buf[acc->n++] = it;
	return acc->n < acc->max;
}

static bool count_fn(struct store *s, struct shard *sh, struct item *it,
		     void *arg, struct dead_list *dead)
{
	(void)s;
	(void)sh;
	(void)it;
	(void)dead;
	(*(uint64_t *)arg)++;
	return true;
}

static bool delete_fn(struct store *s, struct shard *sh, struct item *it,
		      void *arg, struct dead_list *dead)
{
	item_unlink_locked(s, sh, it, dead);
	(*(uint64_t *)arg)++;
	return true;
}

static int item_order(const struct item *a, const struct item *b,
		      bool reverse)
{
	int c = item_cmp(a, b);

	return reverse ? -c : c;
}

/*
 * Merge the sorted @tmp[0..@m) into the sorted @out[0..@n), keeping the
 * first @max; the references of the items dropped are put.
 * Return: the new length of @out.
 */
static unsigned int range_merge(struct item **out, unsigned int n,
				struct item **tmp, unsigned int m,
				unsigned int max, bool reverse)
{
	unsigned int total;

	while (n + m > max) {
		if (!m || (n && item_order(out[n - 1], tmp[m - 1],
					   reverse) > 0))
			item_put(out[--n]);
		else
			item_put(tmp[--m]);
	}
	total = n + m;
	while (m) {
		if (n && item_order(out[n - 1], tmp[m - 1], reverse) > 0)
			out[n + m - 1] = out[n - 1], n--;
		else
			out[n + m - 1] = tmp[m - 1], m--;
	}
	return total;
}

/*
 * @out holds the first max items of the shards walked so far: the shards
 * left need only look before its last one.
 */
static void span_narrow(struct span *sp, const struct item *last,
			bool reverse)
{
	if (!reverse) {
		if (item_is_int(last)) {
			sp->strs = false;
			if (last->ikey == 0 || last->ikey - 1 < sp->ilo)
				sp->ints = false;
			else
				sp->ihi = last->ikey - 1;
		} else {
			span_exclude_str(sp, last, false);
		}
	} else {
		if (item_is_int(last)) {
			if (last->ikey == UINT64_MAX || last->ikey + 1 > sp->ihi)
				sp->ints = false;
			else
				sp->ilo = last->ikey + 1;
		} else {
			sp->ints = false;
			span_exclude_str(sp, last, true);
		}
	}
}

int store_range(struct store *s, const struct store_bound *from,
		const struct store_bound *to, bool reverse, unsigned int max,
		struct item **out)
{
	struct item **tmp = NULL;
	struct span base;
	unsigned int i, n = 0;

	if (max > INT_MAX)
		max = INT_MAX;
	if (!max || !span_init(&base, from, to))
		return 0;
	if (s->cfg.nshards > 1) {
		tmp = ak_malloc((size_t)max * sizeof(*tmp));
		if (!tmp)
			return -ENOMEM;
	}
	for (i = 0; i < s->cfg.nshards && (base.ints || base.strs); i++) {
		struct range_acc acc = { i ? tmp : out, 0, max };

		shard_walk(s, &s->shards[i], &base, reverse, range_fn, &acc);
		n = i ? range_merge(out, n, tmp, acc.n, max, reverse) : acc.n;
		if (n == max)
			span_narrow(&base, out[max - 1], reverse);
	}
	ak_free(tmp);
	return (int)n;
}

uint64_t store_count(struct store *s, const struct store_bound *from,
		     const struct store_bound *to)
{
	struct span base;
	uint64_t n = 0;
	unsigned int i;

	if (!span_init(&base, from, to))
		return 0;
	for (i = 0; i < s->cfg.nshards; i++)
		shard_walk(s, &s->shards[i], &base, false, count_fn, &n);
	return n;
}

uint64_t store_delete_range(struct store *s, const struct store_bound *from,
			    const struct store_bound *to)
{
	struct span base;
	uint64_t n = 0;
	unsigned int i;

	if (!span_init(&base, from, to))
		return 0;
	for (i = 0; i < s->cfg.nshards; i++)
		shard_walk(s, &s->shards[i], &base, false, delete_fn, &n);
	return n;
}

int store_bound_cmp(const struct store_bound *a, const struct store_bound *b)
{
	int ra = a->kind == BOUND_MIN ? -1 : a->kind == BOUND_MAX ? 1 : 0;
	int rb = b->kind == BOUND_MIN ? -1 : b->kind == BOUND_MAX ? 1 : 0;

	if (ra || rb)
		return ra == rb ? 0 : (ra < rb ? -1 : 1);
	return key_compare(a->key, a->nkey, b->key, b->nkey);
}

/* ---- stats, checks, life cycle ---- */

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

#define CHECK_FAIL(...) do {					\
	snprintf(why, len, __VA_ARGS__);			\
	return -EUCLEAN;					\
} while (0)

static bool bucket_holds(const struct slist_head *b, const struct item *it)
{
	const struct item *cur;

	slist_for_each_entry(cur, b, hnode)
		if (cur == it)
			return true;
	return false;
}

/* Count a bucket array's entries, checking each is in its right bucket. */
static int check_buckets_locked(const struct shard *sh,
				const struct slist_head *arr, uint64_t from,
				uint64_t to, uint64_t *count, char *why,
				size_t len)
{
	const struct item *it;
	uint64_t i;

	for (i = from; i < to; i++) {
		slist_for_each_entry(it, &arr[i], hnode) {
			if (!item_is_int(it) && htable_bucket(&sh->ht,
				item_key_hash(item_key(it), it->nkey)) != &arr[i])
				CHECK_FAIL("shard %u: item in a wrong bucket",
					   sh->index);
			if (!(it->iflags & ITEM_LINKED) || item_is_int(it))
				CHECK_FAIL("shard %u: bad item in the hash",
					   sh->index);
			(*count)++;
		}
	}
	return 0;
}

/* One linked item of @sh's indexes: its key, shard and index entries. */
static int check_item_locked(const struct store *s, const struct shard *sh,
			     const struct item *it, char *why, size_t len)
{
	struct keyref k;
	uint64_t v;

	keyref_of_item(&k, it);
	if (!(it->iflags & ITEM_LINKED) || shard_of(s, &k) != sh ||
	    !__atomic_load_n(&it->refcount, __ATOMIC_RELAXED))
		CHECK_FAIL("shard %u: indexed item not linked here", sh->index);
	if (item_is_int(it)) {
		if (!key_is_integer(item_key(it), it->nkey, &v) ||
		    v != it->ikey || it->data_off != ITEM_INT_DATA)
			CHECK_FAIL("shard %u: bad integer key", sh->index);
		if (radix_tree_lookup(&sh->ints, it->ikey) != it)
			CHECK_FAIL("shard %u: integer item %llu not in its "
				   "radix tree", sh->index,
				   (unsigned long long)it->ikey);
	} else {
		if (key_is_integer(item_key(it), it->nkey, NULL) ||
		    it->data_off != ITEM_STR_DATA)
			CHECK_FAIL("shard %u: bad string key", sh->index);
		if (!bucket_holds(htable_bucket(&sh->ht, k.hash), it))
			CHECK_FAIL("shard %u: string item not in its bucket",
				   sh->index);
	}
	return 0;
}

/* A hand on the string part points at a linked string item of @sh. */
static bool check_hand_locked(const struct shard *sh,
			      const struct clock_hand *h)
{
	const struct rb_node *node;

	if (!h->in_strs || !h->item)
		return true;
	for (node = rb_first(&sh->tree); node; node = rb_next(node))
		if (rb_entry(node, struct item, rbnode) == h->item)
			return true;
	return false;
}

static int check_shard_locked(const struct store *s, const struct shard *sh,
			      char *why, size_t len)
{
	uint64_t nint, nstr, bytes = 0, cnt = 0, size;
	const struct item *it, *prev = NULL;
	const struct rb_node *node;
	uint64_t index = 0;
	void *batch[WALK_BATCH];
	unsigned int got, i;
	int err;

	if (!check_hand_locked(sh, &sh->hand) ||
	    !check_hand_locked(sh, &sh->expire_hand))
		CHECK_FAIL("shard %u: a clock hand is off the tree", sh->index);
	nint = sh->ints.count;
	nstr = sh->ht.count;

	for (node = rb_first(&sh->tree); node; node = rb_next(node)) {
		it = rb_entry(node, struct item, rbnode);
		if (item_is_int(it) || !(it->iflags & ITEM_LINKED))
			CHECK_FAIL("shard %u: bad item in the rbtree",
				   sh->index);
		err = check_item_locked(s, sh, it, why, len);
		if (err)
			return err;
		bytes += item_alloc_size(it);
		if (prev && str_cmp(item_key(prev), prev->nkey, item_key(it),
				    it->nkey) >= 0)
			CHECK_FAIL("shard %u: rbtree out of order", sh->index);
		prev = it;
		cnt++;
	}
	if (cnt != nstr)
		CHECK_FAIL("shard %u: rbtree has %llu of %llu", sh->index,
			   (unsigned long long)cnt, (unsigned long long)nstr);

	cnt = 0;
	prev = NULL;
	do {
		got = radix_tree_gang_lookup(&sh->ints, batch, NULL, index,
					     WALK_BATCH);
		for (i = 0; i < got; i++) {
			it = batch[i];
			if (!item_is_int(it) || !(it->iflags & ITEM_LINKED) ||
			    (prev && prev->ikey >= it->ikey))
				CHECK_FAIL("shard %u: bad radix entry",
					   sh->index);
			err = check_item_locked(s, sh, it, why, len);
			if (err)
				return err;
			bytes += item_alloc_size(it);
			prev = it;
			cnt++;
		}
		if (got)
			index = prev->ikey + 1;
	} while (got == WALK_BATCH && prev->ikey != UINT64_MAX);
	if (cnt != nint)
		CHECK_FAIL("shard %u: radix has %llu of %llu", sh->index,
			   (unsigned long long)cnt, (unsigned long long)nint);
	if (nint + nstr != sh->curr_items || nint != sh->curr_int_items ||
	    nstr != sh->curr_str_items || bytes != sh->bytes)
		CHECK_FAIL("shard %u: counts %llu/%llu/%llu bytes %llu, "
			   "indexes have %llu/%llu bytes %llu", sh->index,
			   (unsigned long long)sh->curr_items,
			   (unsigned long long)sh->curr_int_items,
			   (unsigned long long)sh->curr_str_items,
			   (unsigned long long)sh->bytes,
			   (unsigned long long)nint, (unsigned long long)nstr,
			   (unsigned long long)bytes);

	cnt = 0;
	size = (uint64_t)1 << sh->ht.bits;
	err = check_buckets_locked(sh, sh->ht.buckets, sh->ht.rehash_pos,
				   size, &cnt, why, len);
	if (!err && sh->ht.next)
		err = check_buckets_locked(sh, sh->ht.next, 0, 2 * size, &cnt,
					   why, len);
	if (err)
		return err;
	if (cnt != nstr)
		CHECK_FAIL("shard %u: hash has %llu of %llu", sh->index,
			   (unsigned long long)cnt, (unsigned long long)nstr);
	if (sh->index_bytes != htable_memory(&sh->ht) +
			       sh->ints.nr_nodes * s->node_size)
		CHECK_FAIL("shard %u: index bytes %llu, really %llu",
			   sh->index, (unsigned long long)sh->index_bytes,
			   (unsigned long long)(htable_memory(&sh->ht) +
				sh->ints.nr_nodes * s->node_size));
	return 0;
}

int store_check_invariants(struct store *s, char *why, size_t len)
{
	uint64_t total = 0;
	unsigned int i;
	size_t used;
	int err = 0;

	for (i = 0; i < s->cfg.nshards && !err; i++) {
		struct shard *sh = &s->shards[i];

		shard_lock(sh);
		err = check_shard_locked(s, sh, why, len);
		total += sh->bytes + sh->index_bytes;
		shard_unlock(sh);
	}
	if (err)
		return err;
	used = store_memory_used(s);
	if (used != total)
		CHECK_FAIL("memory used %zu, shards hold %llu", used,
			   (unsigned long long)total);
	if (s->cfg.mem_limit && used > s->cfg.mem_limit)
		CHECK_FAIL("memory used %zu over the limit %zu", used,
			   s->cfg.mem_limit);
	return 0;
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
