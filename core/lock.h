/* SPDX-License-Identifier: MIT */
/*
 * lock.h - a small mutex on one futex word, for the store's shard locks.
 *
 * A shard lock is held for well under a microsecond and is almost never
 * contended with one worker thread per core, so what it costs is the
 * uncontended lock and unlock. glibc's pthread_mutex_lock() and unlock()
 * on the shards' adaptive mutexes took 31 and 36 instructions per set
 * (callgrind), calls into libc included; here both fast paths are one
 * atomic instruction, inline.
 *
 * The word is 0 (free), 1 (held, nobody waits) or 2 (held, someone may be
 * waiting in the kernel). lock: 0 -> 1 by compare-and-swap; failing that,
 * spin a little while the holder finishes, then announce a waiter by
 * swapping in 2 and sleep on the futex while the word stays 2, retrying
 * the swap on each wake-up. unlock: swap in 0, and wake one sleeper if the
 * old value was 2. A waiter that takes the lock leaves the word at 2, so
 * its own unlock wakes the next one; at worst one wake-up too many.
 *
 * Not recursive, no owner checks, no priority inheritance; Linux only.
 *
 * Synchronization: this is the synchronization; the word is only touched
 * with atomics.
 */
#ifndef ANCHORKV_LOCK_H
#define ANCHORKV_LOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "compiler.h"

struct ak_lock {
	uint32_t word;		/* 0 free, 1 held, 2 held and maybe waited on */
};

#define AK_LOCK_INIT	{ 0 }

/**
 * ak_lock_init() - make @l a free lock
 * @l: the lock
 *
 * Context: nobody else uses @l yet.
 */
static inline void ak_lock_init(struct ak_lock *l)
{
	__atomic_store_n(&l->word, 0, __ATOMIC_RELAXED);
}

/**
 * ak_lock_wait() - the contended part of ak_lock_acquire()
 * @l: the lock
 *
 * Context: the caller does not hold @l; may sleep.
 */
void ak_lock_wait(struct ak_lock *l);

/**
 * ak_lock_wake() - wake one thread sleeping on @l
 * @l: the lock, just released with waiters announced
 *
 * Context: any.
 */
void ak_lock_wake(struct ak_lock *l);

/**
 * ak_lock_acquire() - take @l, waiting as long as it takes
 * @l: the lock
 *
 * Context: the caller does not hold @l; may sleep when @l is contended.
 */
static inline void ak_lock_acquire(struct ak_lock *l)
{
	uint32_t free_word = 0;

	if (likely(__atomic_compare_exchange_n(&l->word, &free_word, 1, false,
					       __ATOMIC_ACQUIRE,
					       __ATOMIC_RELAXED)))
		return;
	ak_lock_wait(l);
}

/**
 * ak_lock_release() - let go of @l
 * @l: a lock the caller holds
 *
 * Context: the caller holds @l.
 */
static inline void ak_lock_release(struct ak_lock *l)
{
	if (unlikely(__atomic_exchange_n(&l->word, 0, __ATOMIC_RELEASE) == 2))
		ak_lock_wake(l);
}

#endif /* ANCHORKV_LOCK_H */
