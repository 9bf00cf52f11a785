// SPDX-License-Identifier: MIT
/*
 * test_lock.c - struct ak_lock (core/lock.h) against its contract.
 *
 *   - uncontended: acquire turns the word 0 -> 1, release 1 -> 0;
 *   - mutual exclusion: threads that each add to a plain counter many
 *     times under the lock, with a window inside the critical section
 *     where a second holder would be seen (an "inside" count that must be
 *     1), end with the exact total and no overlap;
 *   - sleeping: while one thread holds the lock, others that want it
 *     announce themselves (the word becomes 2) and sleep; each release
 *     wakes one, and all of them get the lock in the end; the word is 0
 *     again once everybody is done.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "check.h"
#include "lock.h"

#define THREADS		4
#define ROUNDS		200000
#define SLEEPERS	3

static struct ak_lock lock = AK_LOCK_INIT;
static unsigned long counter;		/* guarded by lock, plain on purpose */
static unsigned int inside;		/* atomic */
static unsigned long overlaps;		/* atomic */

static uint32_t lock_word(void)
{
	return __atomic_load_n(&lock.word, __ATOMIC_SEQ_CST);
}

static void test_uncontended(void)
{
	struct ak_lock l;

	ak_lock_init(&l);
	CHECK(l.word == 0);
	ak_lock_acquire(&l);
	CHECK(l.word == 1);
	ak_lock_release(&l);
	CHECK(l.word == 0);
}

static void *adder(void *arg)
{
	unsigned int i;

	(void)arg;
	for (i = 0; i < ROUNDS; i++) {
		unsigned long v;

		ak_lock_acquire(&lock);
		if (__atomic_add_fetch(&inside, 1, __ATOMIC_SEQ_CST) != 1)
			__atomic_add_fetch(&overlaps, 1, __ATOMIC_RELAXED);
		v = counter;
		if (!(i & 63))		/* now and then, a longer hold */
			sched_yield();
		counter = v + 1;
		__atomic_sub_fetch(&inside, 1, __ATOMIC_SEQ_CST);
		ak_lock_release(&lock);
	}
	return NULL;
}

static void test_mutual_exclusion(void)
{
	pthread_t t[THREADS];
	unsigned int i;

	counter = 0;
	for (i = 0; i < THREADS; i++)
		CHECK(!pthread_create(&t[i], NULL, adder, NULL));
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK_MSG(counter == (unsigned long)THREADS * ROUNDS,
		  "counter %lu, want %lu", counter,
		  (unsigned long)THREADS * ROUNDS);
	CHECK_MSG(!overlaps, "%lu overlapping holders", overlaps);
	CHECK(lock_word() == 0);
}

static unsigned int got;		/* atomic: sleepers that got the lock */

static void *sleeper(void *arg)
{
	(void)arg;
	ak_lock_acquire(&lock);
	__atomic_add_fetch(&got, 1, __ATOMIC_SEQ_CST);
	ak_lock_release(&lock);
	return NULL;
}

static void nap(void)
{
	struct timespec ts = { 0, 1000000 };	/* 1 ms */

	nanosleep(&ts, NULL);
}

static void test_sleepers_are_woken(void)
{
	pthread_t t[SLEEPERS];
	unsigned int i, waited;

	got = 0;
	ak_lock_acquire(&lock);
	for (i = 0; i < SLEEPERS; i++)
		CHECK(!pthread_create(&t[i], NULL, sleeper, NULL));
	/* a waiter announces itself after its spins: wait for that (<= 10 s) */
	for (waited = 0; lock_word() != 2 && waited < 10000; waited++)
		nap();
	CHECK_MSG(lock_word() == 2, "word %u with waiters", lock_word());
	CHECK(__atomic_load_n(&got, __ATOMIC_SEQ_CST) == 0);
	ak_lock_release(&lock);
	for (i = 0; i < SLEEPERS; i++)
		pthread_join(t[i], NULL);
	CHECK(got == SLEEPERS);
	CHECK(lock_word() == 0);
}

int main(void)
{
	test_uncontended();
	test_mutual_exclusion();
	test_sleepers_are_woken();
	return check_report();
}
