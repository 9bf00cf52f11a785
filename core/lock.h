/* SPDX-License-Identifier: MIT */
/*
 * lock.h - a small mutex on one futex word, for the store's shard locks.
 *
 * Both fast paths are one atomic instruction, inline; why not a pthread
 * mutex: docs/architecture.md, "Design notes".
 *
 * The word is 0 (free), 1 (held, nobody waits) or 2 (held, someone may be
 * waiting in the kernel). lock: 0 -> 1 by compare-and-swap; failing that,
 * spin a little while the holder finishes, then announce a waiter by
 * swapping in 2 and sleep on the futex while the word stays 2, retrying
 * the swap on each wake-up. unlock: swap in 0, and wake one sleeper if the
 * old value was 2. A waiter that takes the lock leaves the word at 2, so
 * its own unlock wakes the next one; at worst one wake-up too many.
 *
 * Not recursive, no priority inheritance, no owner checks but in the
 * AK_LOCK_DEBUG build (ak_lock_assert_held()); Linux only.
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
#ifdef AK_LOCK_DEBUG
	uintptr_t owner;	/* atomic: ak_lock_self() of the holder, or 0 */
#endif
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
#ifdef AK_LOCK_DEBUG
	__atomic_store_n(&l->owner, 0, __ATOMIC_RELAXED);
#endif
}

#ifdef AK_LOCK_DEBUG
#include <assert.h>

extern __thread char ak_lock_self_tag;

/* A value that tells the calling thread apart from every other live one. */
static inline uintptr_t ak_lock_self(void)
{
	return (uintptr_t)&ak_lock_self_tag;
}

/**
 * ak_lock_held() - whether the calling thread holds @l (debug builds only)
 * @l: the lock
 *
 * Context: any.
 * Return: true when this thread took @l and has not released it.
 */
static inline bool ak_lock_held(const struct ak_lock *l)
{
	return __atomic_load_n(&l->owner, __ATOMIC_RELAXED) == ak_lock_self();
}

/**
 * ak_lock_assert_held() - abort unless the calling thread holds @l
 * @l: the lock a function's Context line says it expects held
 *
 * The kernel's lockdep_assert_held(): a check in builds with AK_LOCK_DEBUG
 * (the sanitizer and fuzz builds), nothing in a release build.
 *
 * Context: any.
 */
#define ak_lock_assert_held(l)	assert(ak_lock_held(l))

static inline void ak_lock_set_owner(struct ak_lock *l, uintptr_t owner)
{
	__atomic_store_n(&l->owner, owner, __ATOMIC_RELAXED);
}
#else
#define ak_lock_assert_held(l)	((void)(l))
static inline void ak_lock_set_owner(struct ak_lock *l, uintptr_t owner)
{
	(void)l;
	(void)owner;
}

static inline uintptr_t ak_lock_self(void)
{
	return 0;
}
#endif

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

	if (unlikely(!__atomic_compare_exchange_n(&l->word, &free_word, 1,
						  false, __ATOMIC_ACQUIRE,
						  __ATOMIC_RELAXED)))
		ak_lock_wait(l);
	ak_lock_set_owner(l, ak_lock_self());
}

/**
 * ak_lock_release() - let go of @l
 * @l: a lock the caller holds
 *
 * Context: the caller holds @l.
 */
static inline void ak_lock_release(struct ak_lock *l)
{
	ak_lock_assert_held(l);
	ak_lock_set_owner(l, 0);
	if (unlikely(__atomic_exchange_n(&l->word, 0, __ATOMIC_RELEASE) == 2))
		ak_lock_wake(l);
}

#endif /* ANCHORKV_LOCK_H */
