/* SPDX-License-Identifier: MIT */
/*
 * store.h - the item store: shards of indexes, eviction and memory limit.
 *
 * The store is split into shards. Each shard owns a hash table for string
 * keys, a radix tree for integer keys, the queues of its S3-FIFO eviction
 * (a small ring, a ghost of fingerprints, a hand over the indexes for the
 * main queue: evict.c) and one lock (struct ak_lock, lock.h). The order of
 * string keys is not the shards': the store's partitions (shard.h,
 * struct part) each hold the string items of one key interval in an
 * augmented rbtree, under a lock of their own, taken inside a shard lock
 * (docs/architecture.md has the lock order). The functions below take and
 * release the locks themselves around the smallest critical sections; the
 * _locked helpers of shard.h expect them held. Nothing under a shard lock
 * allocates, frees, or does I/O: items are allocated and filled before
 * the lock (store_item_alloc()), radix inserts are preloaded before it,
 * and replaced or evicted items are released after it.
 *
 * Keys: an integer key (canonical unsigned 64-bit decimal, see
 * key_is_integer()) lives in the radix tree of shard (value >> 6) %
 * nshards; any other key lives in the hash table of the shard given by
 * the top bits of item_key_hash() (the bits under them pick the slot) and in
 * the rbtree of the partition whose interval holds it. Keyspace order
 * (what ranges walk) is integer keys by value, then other keys bytewise
 * (key_compare()).
 *
 * Time: the store never reads a clock. store_set_time() tells it the unix
 * time (the daemon does it every second, tests whenever they like); expiry
 * and flush_all are judged against that.
 *
 * Synchronization: every function here takes the locks it needs (see each
 * Context line); the caller holds none.
 */
#ifndef ANCHORKV_STORE_H
#define ANCHORKV_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "item.h"

struct store;

struct store_config {
	size_t mem_limit;		/* bytes for items + indexes; 0: no limit */
	size_t item_size_max;		/* largest item block (-I); 0: 1 MB */
	unsigned int nshards;		/* power of two, 1..4096 */
	unsigned int hash_bits;		/* initial log2 hash slots per shard,
					 * 2..30; 0: 4 */
	unsigned int queue_bits;	/* initial log2 of S3-FIFO's small
					 * ring's slots per shard, the ghost's
					 * fingerprints twice as many, up to
					 * 24; 0: the least (they grow with
					 * the items) */
	bool no_evict;			/* -M: refuse instead of evicting */
	size_t class_page;		/* the limit is at least this much for
					 * every memcached class stored in,
					 * as memcached's first page of a class
					 * (store_mem_limit_effective()); 0:
					 * the limit is mem_limit */
	uint64_t part_max;		/* string items a partition of the
					 * order splits above; 0: 65536 */
};

enum store_op {
	STORE_OP_SET,
	STORE_OP_ADD,
	STORE_OP_REPLACE,
	STORE_OP_APPEND,
	STORE_OP_PREPEND,
	STORE_OP_CAS,
};

enum store_result {
	STORE_STORED,		/* "STORED" */
	STORE_NOT_STORED,	/* "NOT_STORED" (add/replace/append/prepend) */
	STORE_EXISTS,		/* "EXISTS" (cas mismatch) */
	STORE_NOT_FOUND,	/* "NOT_FOUND" (cas on a missing key) */
	STORE_NO_MEMORY,	/* "SERVER_ERROR out of memory storing object" */
	STORE_TOO_LARGE,	/* "SERVER_ERROR object too large for cache" */
};

enum store_miss {
	STORE_HIT,
	STORE_MISS_ABSENT,
	STORE_MISS_EXPIRED,	/* found but expired (counted as get_expired) */
	STORE_MISS_FLUSHED,	/* found but invalidated by flush_all */
	STORE_TOUCH_NO_MEMORY,	/* found live, but a touch needed a copy
				 * there was no memory for: untouched */
};

enum bound_kind {
	BOUND_MIN,		/* "-": below every key */
	BOUND_MAX,		/* "+": above every key */
	BOUND_INCL,		/* "[key" */
	BOUND_EXCL,		/* "(key" */
};

struct store_bound {
	enum bound_kind kind;
	const char *key;	/* BOUND_INCL / BOUND_EXCL only */
	size_t nkey;
};

/* One key of store_range_keys(), copied. */
struct store_key {
	uint8_t nkey;
	bool binary;		/* stored with a base64 key (ITEM_KEY_BINARY):
				 * a reply lists it encoded */
	char key[KEY_MAX_LENGTH];
};

struct store_stats {
	uint64_t curr_items;		/* linked items */
	uint64_t curr_int_items;	/* of which integer keys */
	uint64_t curr_str_items;	/* of which other keys */
	uint64_t total_items;		/* items ever linked (since reset) */
	uint64_t bytes;			/* allocator bytes of linked items */
	uint64_t index_bytes;		/* radix nodes + S3-FIFO's rings and
					 * ghosts: counted in the limit */
	uint64_t limit_maxbytes;	/* the memory limit */
	uint64_t limit_effective;	/* store_mem_limit_effective() */
	uint64_t evictions;		/* items evicted to make room (since reset) */
	uint64_t evicted_unfetched;	/* of which never read */
	uint64_t evicted_active;	/* of which read since the hand
					 * last passed (main_keep_locked()) */
	uint64_t expired_unfetched;	/* expired items reclaimed never read */
	uint64_t reclaimed;		/* expired/flushed items reclaimed */
	uint64_t small_items;		/* in the small queues (evict.c) */
	uint64_t small_bytes;		/* their item bytes */
	uint64_t ghost_entries;		/* evicted keys remembered */
	uint64_t ghost_hits;		/* new keys found there: to main,
					 * but for the large ones */
	uint64_t ghost_small;		/* large ones back to small, on their
					 * first return */
	uint64_t moved_main;		/* small -> main, read while in small */
	uint64_t small_aged;		/* small -> main, out of the ring */
	uint64_t rescued;		/* small -> main, unread, kept for its
					 * small size */
	uint64_t main_rescued;		/* main's hand: unread, kept a turn
					 * more for its small size */
	uint64_t expire_checked;	/* items the expiry hand looked at, and */
	uint64_t expire_reclaimed;	/* reclaimed (since the start) */
	uint64_t hash_buckets;		/* hash slots over all shards */
	uint64_t hash_bytes;		/* their arrays (not in the limit) */
	uint64_t radix_nodes;		/* radix nodes over all shards */
	uint64_t rehashing;		/* shards growing their table now */
	uint64_t nshards;
	uint64_t partitions;		/* of the string keys' order */
	uint64_t partition_splits;	/* since the start */
	uint64_t partition_merges;	/* since the start */
};

/**
 * store_create() - make an empty store
 * @cfg: sizes and policies (copied)
 *
 * The empty indexes (S3-FIFO's first rings and ghosts; the hash tables,
 * nshards * 2^hash_bits slots, are outside the limit) count against
 * mem_limit and must fit in it. String keys are hashed with hash_key(), so
 * hash_init() (or hash_set_seed()) should have run.
 *
 * Context: start-up; allocates.
 * Return: the store, or NULL on a bad @cfg or allocation failure.
 */
struct store *store_create(const struct store_config *cfg);

/**
 * store_destroy() - free the store and drop its references on every item
 * @s: the store; no other thread may use it
 *
 * Context: exclusive use.
 */
void store_destroy(struct store *s);

/**
 * store_set_time() - set the store's clock
 * @s:        the store
 * @unix_now: current unix time in seconds
 *
 * The first call fixes the store's epoch (unix_now - 2). The store clock
 * never goes back: a call with an earlier time than the clock is ignored.
 *
 * Context: any; lock free.
 */
void store_set_time(struct store *s, int64_t unix_now);

/**
 * store_now() - the store's clock in store time
 * @s: the store
 *
 * Context: any; lock free.
 * Return: seconds since the store's epoch (always >= 2).
 */
rel_time_t store_now(const struct store *s);

/**
 * store_unix_time() - the store's clock as unix time
 * @s: the store
 *
 * Context: any; lock free.
 *
 * Return: the current time of the store's clock, in seconds since 1970.
 */
int64_t store_unix_time(const struct store *s);

/**
 * store_exptime() - convert a client exptime to store time
 * @s:       the store
 * @exptime: as in the memcached protocol: 0 never; 1..2592000 (30 days)
 *           seconds from now; larger: unix time; negative: already expired
 *
 * Context: any; lock free.
 * Return: 0 for never, else a store time (in the past for expired ones).
 */
rel_time_t store_exptime(const struct store *s, int64_t exptime);

/**
 * store_item_alloc() - allocate an item to fill and then store
 * @s:       the store
 * @key:     the key, 1..KEY_MAX_LENGTH bytes (checked by the caller)
 * @nkey:    its length
 * @flags:   client flags
 * @exptime: store time from store_exptime()
 * @nbytes:  value length; the caller writes nbytes bytes at item_value()
 *           (not the "\r\n" after them)
 * @out:     receives the item, with one reference for the caller
 *
 * Context: takes no lock; allocates.
 * Return: 0; -E2BIG if the item is over item_size_max counted as
 * memcached counts it (48-byte header, CAS, key, NUL, flags, value, "\r\n")
 * or over the whole memory limit; -ENOMEM if the allocator failed.
 */
int store_item_alloc(struct store *s, const char *key, size_t nkey,
		     uint32_t flags, rel_time_t exptime, uint32_t nbytes,
		     struct item **out);

/**
 * store_item_store() - set/add/replace/append/prepend/cas an item
 * @s:       the store
 * @it:      from store_item_alloc(), filled; the caller's reference is
 *           consumed whatever the result
 * @op:      the memcached command
 * @cas:     STORE_OP_CAS only: the cas unique the client sent
 * @cas_out: receives the new item's cas when stored (may be NULL)
 *
 * Evicts by S3-FIFO to make room, or with no_evict answers
 * STORE_NO_MEMORY. Append and prepend build the joined item outside the
 * lock and retry if the old one changed meanwhile.
 *
 * Context: takes and releases shard locks.
 * Return: the memcached outcome.
 */
enum store_result store_item_store(struct store *s, struct item *it,
				   enum store_op op, uint64_t cas,
				   uint64_t *cas_out);

/*
 * A store with the meta set's options (ms): what it asks and what it made.
 * @cas is compared by STORE_OP_CAS, and by append and prepend when
 * @has_cas; @vivify makes append and prepend store the block as the item
 * on a miss; @allow_stale makes STORE_OP_CAS store a cas below the
 * item's as a stale version (it keeps the old TTL and recache win).
 * A cas a client chose (@cas_in, E) is taken as it is, not checked for
 * uniqueness (as memcached): an item stored with one in the same second
 * as an immediate flush_all may be taken as stored before it.
 */
struct store_set {
	enum store_op op;
	uint64_t cas;
	bool has_cas;
	bool vivify;
	bool allow_stale;
	bool has_cas_in;	/* E: the new item's cas is @cas_in */
	uint64_t cas_in;
	uint64_t cas_out;	/* out: the new item's cas when stored, else 0 */
	uint32_t nbytes_out;	/* out: the value length stored (append:
				 * the joined one), else the block's */
};

/**
 * store_item_store_opts() - store_item_store() with struct store_set
 * @s:  the store
 * @it: from store_item_alloc(), filled; the reference is consumed
 * @o:  the request, and on return what it made
 *
 * Context: takes and releases shard locks.
 * Return: the memcached outcome.
 */
enum store_result store_item_store_opts(struct store *s, struct item *it,
					struct store_set *o);

/*
 * A point lookup: what it asks (struct store_req) and what it found
 * (struct store_res). get, gets, gat, gats and touch are each a request;
 * the meta commands' flags (TTL left, last access, no bump, ...) grow
 * these two structs, not the argument lists.
 */
enum store_req_flags {
	STORE_REQ_TOUCH	= 1u << 0,	/* set the expiry to @exptime (gat) */
	STORE_REQ_PEEK	= 1u << 1,	/* no reference wanted (touch) */
	STORE_REQ_NO_BUMP = 1u << 2,	/* leave the frequency, the fetched
					 * mark and the last access (mg u) */
	STORE_REQ_RECACHE = 1u << 3,	/* win the recache if the expiry is
					 * before @recache (mg R) */
	STORE_REQ_TOUCH_LATE = 1u << 4,	/* the R test sees the expiry from
					 * before the touch (R came first) */
	STORE_REQ_META	= 1u << 5,	/* a meta get: a stale item's first
					 * finder wins the recache */
};

struct store_req {
	const char *key;
	size_t nkey;
	unsigned int flags;	/* enum store_req_flags */
	rel_time_t exptime;	/* STORE_REQ_TOUCH: the new expiry, store time */
	char *buf;		/* if set, receives a value of at most
				 * @room bytes */
	size_t room;		/* size of @buf */
	rel_time_t recache;	/* STORE_REQ_RECACHE: store time */
};

struct store_res {
	enum store_miss why;	/* hit, or why not */
	/* a hit's item, also when its value was copied to req->buf */
	uint32_t flags;		/* client flags */
	uint32_t nbytes;	/* value length without "\r\n" */
	uint64_t cas;
	/* as the hit found them, before this request changed them */
	rel_time_t exptime;	/* 0: never */
	rel_time_t atime;	/* last stored or fetched */
	uint8_t iflags;		/* ITEM_FETCHED, ITEM_STALE, ITEM_WIN,
				 * ITEM_KEY_BINARY */
	bool won;		/* this request won the recache: the item
				 * was stale or near expiry, and nobody had
				 * won it (ITEM_WIN is now set) */
};

/**
 * store_lookup() - look a key up
 * @s:   the store
 * @req: the key and what to do with it
 * @res: receives the outcome
 *
 * An expired or flushed item found is unlinked (lazy expiry) and reported
 * as a miss. A hit adds one to the item's 2-bit frequency without moving it, marks it
 * fetched and makes now its last access, unless STORE_REQ_NO_BUMP. The
 * recache is won (res->won) by the first request that finds the item
 * stale, or with STORE_REQ_RECACHE expiring before req->recache.
 *
 * A touch (STORE_REQ_TOUCH) of an item made without an expiry slot gives
 * it a copy that has one. With no memory for that copy at all (the limit
 * does not refuse it: only the allocator can), the item stays as it was
 * and res->why is STORE_TOUCH_NO_MEMORY, with no item. Where other
 * writers replace the item again each time it is copied, the last copy
 * is touched or not, as the newer writes came after the touch.
 *
 * With req->buf, a value that fits is copied there under the shard lock,
 * so that no reference is taken and dropped: a small reply is cheaper
 * copied than sent from the item. Values are never changed once linked,
 * so the copy is the value at the moment of the lookup.
 *
 * Context: takes and releases the key's shard lock.
 * Return: a hit's item with a reference for the caller (item_put() it);
 * NULL on a miss, with STORE_REQ_PEEK, or when the value was copied (then
 * res->why is STORE_HIT).
 */
struct item *store_lookup(struct store *s, const struct store_req *req,
			  struct store_res *res);

/**
 * store_delete() - remove a key
 * @s:    the store
 * @key:  the key
 * @nkey: its length
 *
 * Context: takes and releases the key's shard lock.
 * Return: 0, or -ENOENT.
 */
int store_delete(struct store *s, const char *key, size_t nkey);

/*
 * An incr or decr: what it asks and, on success, what it made. The meta
 * arithmetic command (ma: initial value, TTL, cas to compare) grows this
 * struct, not an argument list.
 */
struct store_arith {
	const char *key;
	size_t nkey;
	bool incr;		/* true: incr (wraps at 2^64); false: decr
				 * (floors at 0) */
	uint64_t delta;		/* the amount */
	bool has_cas;		/* ma C: only if the item's cas is @cmp_cas */
	uint64_t cmp_cas;
	bool set_ttl;		/* ma T: the new item's expiry is @ttl */
	rel_time_t ttl;
	bool has_cas_in;	/* ma E: the new item's cas is @cas_in */
	uint64_t cas_in;
	uint64_t value;		/* out: the new value */
	uint64_t cas;		/* out: the new item's cas */
	rel_time_t exptime;	/* out: the item's expiry before @ttl */
};

/**
 * store_incr_decr() - add to or subtract from a decimal value
 * @s: the store
 * @a: the request; on success its value and cas are filled in
 *
 * The value must be a decimal of at most 20 digits that fits in 64 bits.
 * The result is stored as its decimal text, without padding, keeping the
 * item's flags and expiry.
 *
 * Context: takes and releases the key's shard lock; allocates outside it.
 * Return: 0; -ENOENT; -EINVAL for a non-numeric value; -EEXIST when
 * @has_cas and the cas differs; -ENOMEM.
 */
int store_incr_decr(struct store *s, struct store_arith *a);

/*
 * A meta delete (md): delete, or keep the item marked stale (I), or
 * replace its value by an empty one (x), if its cas is @cas when
 * @has_cas.
 */
struct store_del {
	const char *key;
	size_t nkey;
	bool has_cas;
	uint64_t cas;
	bool stale;		/* I: mark stale with a new cas, its recache
				 * win open again, instead of deleting */
	bool remove_value;	/* x: an empty value with @flags, keeping
				 * the cas (unless @stale) */
	bool set_ttl;		/* the expiry becomes @ttl (with I or x) */
	rel_time_t ttl;
	uint32_t flags;
	bool has_cas_in;	/* E: with I or x, the new cas is @cas_in */
	uint64_t cas_in;
};

/**
 * store_meta_delete() - md
 * @s: the store
 * @d: the request
 *
 * Context: takes and releases the key's shard lock; allocates outside it
 * (I and x build the new version of the item, which replaces the old one
 * only if that did not change meanwhile).
 * Return: STORE_STORED (done), STORE_EXISTS (the cas differs),
 * STORE_NOT_FOUND, STORE_NO_MEMORY.
 */
enum store_result store_meta_delete(struct store *s, const struct store_del *d);

/**
 * store_flush_all() - invalidate every item stored up to a moment
 * @s:    the store
 * @when: 0 for now, else the store time at which every item stored before
 *        it becomes invalid (flush_all with a delay)
 *
 * Invalidated items are unlinked lazily (on access, and by
 * store_expire_step()), never in bulk under a lock. Items stored in the
 * same second as an immediate flush but after it survive it (a per-shard
 * cas snapshot tells them apart); an item stored at or after @when
 * survives a delayed flush. A later flush replaces a pending delayed one,
 * as in memcached, but never revives what a flush already invalidated.
 *
 * Context: takes no shard lock (a store-wide mutex serialises concurrent
 * flushes); lookups read the flush state lock free.
 */
void store_flush_all(struct store *s, rel_time_t when);

/**
 * store_tidy_partitions() - merge partitions of the order that shrank
 * @s:   the store
 * @max: merges to do at most
 *
 * Two neighbouring partitions that hold at most half of what makes one
 * split (store_config.part_max) between them become one, so that deletes
 * do not leave many near-empty partitions behind. Call it periodically
 * (the server does, on its clock).
 *
 * Context: takes the store's split mutex, one or two partition locks at
 * a time, and each shard lock in turn; allocates outside them.
 * Return: the merges done.
 */
unsigned int store_tidy_partitions(struct store *s, unsigned int max);

/**
 * store_expire_step() - reclaim expired and flushed items, a slice at a time
 * @s:      the store
 * @budget: items to examine at most (over all shards)
 *
 * Call it periodically; each call holds each shard lock only for a bounded
 * slice. While a slab class is emptying a page (slab_drains()), the live
 * items met on it move to the class's other pages (a copy, in the same
 * place in every index and queue: clients see nothing of it).
 *
 * Context: takes and releases shard locks (and class locks inside them).
 * Return: items reclaimed or moved.
 */
unsigned int store_expire_step(struct store *s, unsigned int budget);

/**
 * store_range() - items of a key range, in keyspace order
 * @s:       the store
 * @from:    the lower bound
 * @to:      the upper bound
 * @reverse: false: the first @max items from @from up; true: the first
 *           @max from @to down
 * @max:     room in @out
 * @out:     receives the items, each with a reference for the caller
 *
 * Integer keys are walked block by block in the shards that own them,
 * and merged over the shards where they are sparse; string keys are
 * walked in the partitions of the order, the one holding the start first.
 * Each lock is held for a slice of a few hundred entries at most
 * (resuming after the last key seen). Expired and flushed items are
 * skipped (and reclaimed). An empty or inverted range gives 0.
 *
 * Context: takes and releases shard and partition locks; allocates scratch.
 * Return: number of items in @out, or -ENOMEM.
 */
int store_range(struct store *s, const struct store_bound *from,
		const struct store_bound *to, bool reverse, unsigned int max,
		struct item **out);

/**
 * store_range_keys() - the keys of store_range(), copied
 * @s, @from, @to, @reverse, @max: as store_range()
 * @out:     room for @max keys
 *
 * For a reply of keys alone: a string key is copied under its
 * partition's lock, so no reference is taken and dropped per key (an
 * integer key is copied from an item held for the merge).
 *
 * Context: as store_range().
 * Return: number of keys, or -ENOMEM.
 */
int store_range_keys(struct store *s, const struct store_bound *from,
		     const struct store_bound *to, bool reverse,
		     unsigned int max, struct store_key *out);

/**
 * store_count() - number of live items in a key range
 * @s:    the store
 * @from: the lower bound
 * @to:   the upper bound
 *
 * Each lock is held for bounded slices only: a string interval is read
 * from the partitions' counts and ranks, or walked, under partition locks;
 * integer blocks under their shard's lock.
 *
 * Context: takes and releases shard and partition locks.
 * Return: the count.
 */
uint64_t store_count(struct store *s, const struct store_bound *from,
		     const struct store_bound *to);

/**
 * store_delete_range() - remove every item of a key range
 * @s:    the store
 * @from: the lower bound
 * @to:   the upper bound
 *
 * Each lock is held for bounded slices only; a string item is found
 * under its partition's lock and unlinked under its shard's; removed
 * items are released outside the locks.
 *
 * Context: takes and releases shard and partition locks.
 * Return: the number of live items removed.
 */
uint64_t store_delete_range(struct store *s, const struct store_bound *from,
			    const struct store_bound *to);

/**
 * store_bound_cmp() - order two bounds as range limits
 * @a: a bound
 * @b: a bound
 *
 * For validating "from <= to" in the protocol.
 *
 * Context: any.
 * Return: <0, 0 or >0 as the position of @a is before, at or after @b.
 */
int store_bound_cmp(const struct store_bound *a, const struct store_bound *b);

/**
 * store_stats() - totals over every shard
 * @s:  the store
 * @st: filled in
 *
 * Context: takes and releases each shard lock in turn.
 */
void store_stats(struct store *s, struct store_stats *st);

/**
 * store_shard_stats() - the figures of one shard
 * @s:  the store
 * @i:  the shard, 0..nshards - 1
 * @st: filled in as store_stats() fills it, for that shard alone
 *      (nshards 1; limit_maxbytes the store's)
 *
 * Which shard a string key lands in follows its keyed hash, so two
 * processes spread the same keys differently (the hash-flooding test
 * observes that through "stats shards").
 *
 * Context: takes and releases that shard's lock.
 * Return: 0, or -ENOENT when there is no shard @i.
 */
int store_shard_stats(struct store *s, unsigned int i, struct store_stats *st);

/**
 * store_hash_max_probe() - the longest probe of a hit over every shard
 * @s: the store
 *
 * Walks every slot of every table, so it costs O(slots); for a debugging
 * stat ("stats anchorkv"), not for the plain "stats" a monitor polls.
 *
 * Context: takes and releases each shard lock in turn.
 * Return: the most slots a lookup of a stored key reads (htable_max_probe()).
 */
uint64_t store_hash_max_probe(struct store *s);

/**
 * store_stats_reset() - zero the resettable counters (stats reset)
 * @s: the store
 *
 * Context: takes and releases each shard lock in turn.
 */
void store_stats_reset(struct store *s);

/**
 * store_set_mem_limit() - change the memory limit at run time
 * @s:     the store
 * @limit: the new limit in bytes; 0: none
 *
 * A lower limit evicts (S3-FIFO, the fullest shards first) until the store
 * fits; stores racing with it evict as well. Under no_evict (-M) the
 * limit is not lowered below what is held, since no item may be dropped.
 *
 * Context: takes and releases each shard lock in turn.
 * Return: 0; -ERANGE if the indexes alone do not fit in @limit; -ENOSPC
 * under no_evict when the items held do not fit.
 */
int store_set_mem_limit(struct store *s, size_t limit);

/**
 * store_mem_limit() - the memory limit now
 * @s: the store
 *
 * Context: any; lock free.
 * Return: the limit in bytes; 0: none.
 */
size_t store_mem_limit(const struct store *s);

/**
 * store_mem_limit_effective() - the memory limit the store keeps to now
 * @s: the store
 *
 * store_mem_limit(), or more when the memcached classes items were stored
 * in would take more at memcached's -m: cfg.class_page each (the server's
 * is 1 MiB), as memcached gives every class its first page past -m
 * (docs/configuration.md).
 *
 * Context: any; lock free.
 * Return: the limit in bytes; 0: none.
 */
size_t store_mem_limit_effective(const struct store *s);

/**
 * store_presize() - size the empty hash tables for @str_items string keys
 * @s:         the store, its shards still empty
 * @str_items: how many string keys are about to be stored (a snapshot's
 *             hint), so that the tables need not grow on the way
 *
 * A shard that holds items is left as it is. With a memory limit, the hint
 * is believed up to the string items the limit could hold; the tables
 * themselves are outside the limit (as memcached's hash table is outside
 * its -m).
 *
 * Context: start-up; takes and releases each shard lock; allocates
 * outside them.
 */
void store_presize(struct store *s, uint64_t str_items);

/**
 * store_cas_floor() - hand out only cas values above @cas from now on
 * @s:   the store
 * @cas: the largest cas in use (items loaded with their own, E)
 *
 * Context: takes and releases each shard lock in turn.
 */
void store_cas_floor(struct store *s, uint64_t cas);

/**
 * store_memory_used() - bytes charged against the memory limit now
 * @s: the store
 *
 * Linked items' allocator bytes plus index bytes, over all shards.
 *
 * Context: any; lock free.
 * Return: the bytes.
 */
size_t store_memory_used(const struct store *s);

/**
 * store_check_invariants() - verify every shard's structure (tests)
 * @s:   the store
 * @why: receives a description of the first problem found
 * @len: room in @why
 *
 * Per shard: every item is linked, in exactly the index
 * of its key class (radix by value, or hash table and rbtree) of the right
 * shard; the rbtree is in order and the radix tree and hash hold exactly
 * those items; the counters, bytes and index bytes match; every item of
 * the small queue sits at the slot of its cas in the ring's window, and
 * the queue and ghost counts are what they hold. Then the memory
 * counter equals the shards' total and is within the limit; that last part
 * holds only while no other thread uses the store.
 *
 * Context: takes and releases each shard lock in turn; O(items + slots).
 * Return: 0, or -EUCLEAN with @why filled.
 */
int store_check_invariants(struct store *s, char *why, size_t len);

#endif /* ANCHORKV_STORE_H */
