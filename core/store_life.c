// SPDX-License-Identifier: MIT
/*
 * store_life.c - the store's life cycle (store_create(), store_destroy())
 * and the figures over its shards (stats, memory used, the partitions'
 * tidying on the server's clock). Point operations are store.c's.
 */
#include "shard.h"

#include <errno.h>

#include "alloc.h"

#define NSHARDS_MAX		4096
#define HASH_BITS_DEFAULT	4
#define HASH_BITS_MAX		30
#define QUEUE_BITS_MAX		24
#define ITEM_SIZE_MAX_DEFAULT	(1024 * 1024)
#define PART_MAX_DEFAULT	65536	/* string items a partition splits above */

/* Adds one shard's figures to @st. */
static void shard_stats_add_locked(struct shard *sh, struct store_stats *st)
{
	ak_lock_assert_held(&sh->lock);
	st->curr_items += sh->curr_items;
	st->curr_int_items += sh->curr_int_items;
	st->curr_str_items += sh->curr_str_items;
	st->total_items += sh->total_items;
	st->bytes += sh->bytes;
	st->index_bytes += sh->index_bytes;
	st->evictions += sh->evictions;
	st->evicted_unfetched += sh->evicted_unfetched;
	st->evicted_active += sh->evicted_active;
	st->expired_unfetched += sh->expired_unfetched;
	st->reclaimed += sh->reclaimed;
	st->small_items += sh->q.small_items;
	st->small_bytes += sh->q.small_bytes;
	st->ghost_entries += sh->q.ghost_entries;
	st->ghost_hits += sh->q.ghost_hits;
	st->ghost_small += sh->q.ghost_small;
	st->moved_main += sh->q.moved_main;
	st->small_aged += sh->q.small_aged;
	st->rescued += sh->q.rescued;
	st->main_rescued += sh->q.main_rescued;
	st->hash_buckets += (uint64_t)1 << sh->ht.bits;
	st->hash_bytes += htable_memory(&sh->ht);
	st->radix_nodes += sh->ints.nr_nodes;
	st->rehashing += htable_rehashing(&sh->ht);
}

void store_stats(struct store *s, struct store_stats *st)
{
	unsigned int i;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < s->cfg.nshards; i++) {
		struct shard *sh = &s->shards[i];

		shard_lock(sh);
		shard_stats_add_locked(sh, st);
		shard_unlock(sh);
	}
	st->limit_maxbytes = READ_ONCE(s->cfg.mem_limit);
	st->limit_effective = store_limit(s);
	st->nshards = s->cfg.nshards;
	st->expire_checked = READ_ONCE(s->expire_checked);
	st->expire_reclaimed = READ_ONCE(s->expire_reclaimed);
	pthread_mutex_lock(&s->parts.split_lock);	/* the map stays */
	st->partitions = s->parts.map->n;
	st->partition_splits = s->parts.splits;
	st->partition_merges = s->parts.merges;
	pthread_mutex_unlock(&s->parts.split_lock);
}

int store_shard_stats(struct store *s, unsigned int i, struct store_stats *st)
{
	struct shard *sh;

	if (i >= s->cfg.nshards)
		return -ENOENT;
	sh = &s->shards[i];
	memset(st, 0, sizeof(*st));
	shard_lock(sh);
	shard_stats_add_locked(sh, st);
	shard_unlock(sh);
	st->limit_maxbytes = READ_ONCE(s->cfg.mem_limit);
	st->limit_effective = store_limit(s);
	st->nshards = 1;
	return 0;
}

uint64_t store_hash_max_probe(struct store *s)
{
	uint64_t max = 0;
	unsigned int i;

	for (i = 0; i < s->cfg.nshards; i++) {
		struct shard *sh = &s->shards[i];
		unsigned int probe;

		shard_lock(sh);
		probe = htable_max_probe(&sh->ht);
		shard_unlock(sh);
		if (probe > max)
			max = probe;
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
		sh->evicted_active = 0;
		sh->expired_unfetched = 0;
		sh->reclaimed = 0;
		sh->q.ghost_hits = 0;
		sh->q.ghost_small = 0;
		sh->q.moved_main = 0;
		sh->q.small_aged = 0;
		sh->q.rescued = 0;
		sh->q.main_rescued = 0;
		shard_unlock(sh);
	}
}

unsigned int store_tidy_partitions(struct store *s, unsigned int max)
{
	unsigned int done = parts_tidy(&s->parts, max);

	if (done)
		store_parts_reclaim(s);
	return done;
}

void store_parts_reclaim(struct store *s)
{
	unsigned int i;

	pthread_mutex_lock(&s->parts.split_lock);
	/* a store holds its shard lock while it reads the map: once every
	 * shard lock has been free, none reads a map retired before */
	for (i = 0; i < s->cfg.nshards; i++) {
		shard_lock(&s->shards[i]);
		shard_unlock(&s->shards[i]);
	}
	parts_free_unread_locked(&s->parts);
	pthread_mutex_unlock(&s->parts.split_lock);
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
	if (bits > HASH_BITS_MAX || cfg->queue_bits > QUEUE_BITS_MAX)
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
	pthread_mutex_init(&s->limit_lock, NULL);
	s->limit = s->cfg.mem_limit;

	/* one partition of the string order, holding all of it */
	if (parts_init(&s->parts, cfg->part_max ? cfg->part_max :
			PART_MAX_DEFAULT))
		goto err_destroy_store;

	for (i = 0; i < n; i++, ok++) {
		struct shard *sh = &s->shards[i];
		uint64_t *slots = htable_slots_alloc(bits);

		if (!slots)
			break;
		if (queues_init(&sh->q, cfg->queue_bits, s->shard_bits)) {
			ak_free(slots);
			break;
		}
		ak_lock_init(&sh->lock);
		htable_init(&sh->ht, slots, bits);
		radix_tree_init(&sh->ints);
		sh->index = i;
		/* the hash table is outside the limit, as memcached's is,
		 * and so are the least ring and ghost */
		sh->index_bytes = queues_memory_charged(&sh->q);
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
	parts_destroy(&s->parts);
	for (i = 0; i < s->cfg.nshards; i++) {
		struct shard *sh = &s->shards[i];
		struct radix_tree_iter iter;
		struct item *it;

		radix_tree_for_each(it, &sh->ints, &iter, 0)
			item_put(it);
		htable_destroy(&sh->ht);
		radix_tree_destroy(&sh->ints);
		queues_destroy(&sh->q);
	}
	pthread_mutex_destroy(&s->flush_lock);
	pthread_mutex_destroy(&s->limit_lock);
	ak_free(s->mem);
}

void store_cas_floor(struct store *s, uint64_t cas)
{
	/* a cas is seq << shard_bits | shard: above @cas in every shard */
	uint64_t seq = (cas >> s->shard_bits) + 1;
	unsigned int i;

	for (i = 0; i < s->cfg.nshards; i++) {
		struct shard *sh = &s->shards[i];

		shard_lock(sh);
		if (sh->cas_seq < seq)
			__atomic_store_n(&sh->cas_seq, seq, __ATOMIC_RELAXED);
		shard_unlock(sh);
	}
}

void store_presize(struct store *s, uint64_t str_items)
{
	size_t limit = READ_ONCE(s->cfg.mem_limit);
	/* believed up to 2^28 keys, and what the limit can hold */
	uint64_t most = limit ? limit / ITEM_STR_DATA : 1ull << 28;
	uint64_t per = (str_items < most ? str_items : most) /
		       s->cfg.nshards + 1;
	unsigned int bits = HTABLE_MIN_BITS, i;

	/* as many slots as keep the table below its growth point */
	while (bits < HTABLE_MAX_BITS && htable_size(bits) * 3 / 4 < per)
		bits++;
	for (i = 0; i < s->cfg.nshards; i++) {
		struct shard *sh = &s->shards[i];
		uint64_t *slots, *old;

		if (bits <= sh->ht.bits)
			continue;
		slots = htable_slots_alloc(bits);
		if (!slots)
			return;
		shard_lock(sh);
		if (sh->ht.count || sh->ht.old || sh->ht.bits >= bits) {
			shard_unlock(sh);
			ak_free(slots);
			continue;
		}
		old = sh->ht.slots;
		htable_init(&sh->ht, slots, bits);
		shard_unlock(sh);
		ak_free(old);
	}
}
