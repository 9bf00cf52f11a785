// SPDX-License-Identifier: MIT
/*
 * expire.c - the store's clock, exptime, flush_all and active expiry.
 *
 * The store never reads a clock: store_set_time() is told the unix time.
 * Store time counts seconds from an epoch fixed by the first call, so that
 * an item's times fit in 32 bits (rel_time_t, as memcached's). flush_all
 * sets one flush moment (now or pending) that item_flushed() judges items
 * by, without touching them; the expiry hand reclaims what is dead in
 * slices (store_expire_step()).
 */
#include "shard.h"

#define REALTIME_MAXDELTA	(60 * 60 * 24 * 30)	/* memcached's 30 days */
#define EXPIRE_SLICE		64	/* items store_expire_step() checks per hold */

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
	if (rel > ITEM_TIME_MASK - 1)	/* 34 years: an item's time holds it */
		rel = ITEM_TIME_MASK - 1;
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
	/* every item linked now is covered by this flush, now or later */
	for (i = 0; i < s->cfg.nshards; i++) {
		struct shard *sh = &s->shards[i];

		shard_lock(sh);
		sh->doubtful = sh->curr_items;
		shard_unlock(sh);
	}
	pthread_mutex_unlock(&s->flush_lock);
}

/* ---- active expiry ---- */

/*
 * Move the expiry hand over @n items, reclaiming the dead ones and, while
 * a slab class is emptying a page (slab_drains()), moving the live ones
 * on it (shard_move_locked()) when @moved is not NULL: not when an
 * eviction looks for a dead item, which must leave the item its store
 * replaces where it is. Return: how many it reclaimed; *@moved gets how
 * many it moved.
 */
unsigned int shard_expire_locked(struct store *s, struct shard *sh,
				 unsigned int n, rel_time_t now,
				 struct dead_list *dead, unsigned int *moved)
{
	bool draining = moved && slab_drains();
	unsigned int got = 0, m = 0;
	struct item *it;

	ak_lock_assert_held(&sh->lock);
	while (n-- && (it = shard_hand_item_locked(sh, &sh->expire_hand))) {
		shard_hand_step_locked(sh, &sh->expire_hand, it);
		if (item_state(s, it, now) != STORE_HIT) {
			shard_reclaim_locked(s, sh, it, dead);
			got++;
		} else if (draining &&
			   slab_draining(it, item_block_size_of(it)) &&
			   shard_move_locked(s, sh, it, dead)) {
			m++;
		}
	}
	if (moved)
		*moved = m;
	return got;
}

unsigned int store_expire_step(struct store *s, unsigned int budget)
{
	uint64_t quota = ((uint64_t)budget + s->cfg.nshards - 1) /
			 s->cfg.nshards;
	unsigned int start = __atomic_fetch_add(&s->expire_shard, 1,
						__ATOMIC_RELAXED);
	unsigned int i, reclaimed = 0, moved = 0, spent = 0;
	rel_time_t now = store_now(s);

	for (i = 0; i < s->cfg.nshards && spent < budget; i++) {
		struct shard *sh = &s->shards[(start + i) & s->shard_mask];
		uint64_t left = quota;

		while (left) {
			unsigned int m, n = left < EXPIRE_SLICE ?
					    (unsigned int)left : EXPIRE_SLICE;
			DEAD_LIST(dead);

			shard_lock(sh);
			/* at most one lap of the shard per call */
			if (left > sh->curr_items)
				left = sh->curr_items;
			if (n > left)
				n = (unsigned int)left;
			reclaimed += shard_expire_locked(s, sh, n, now, &dead,
							 &m);
			moved += m;
			shard_unlock(sh);
			__atomic_fetch_add(&s->expire_checked, n,
					   __ATOMIC_RELAXED);
			items_release(&dead);
			left -= n;
			spent += n;
		}
	}
	__atomic_fetch_add(&s->expire_reclaimed, reclaimed, __ATOMIC_RELAXED);
	return reclaimed + moved;
}
