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
 *     again once everybody is done;
 *   - ownership (AK_LOCK_DEBUG, the sanitizer build): ak_lock_held() is
 *     true in the holder only, and ak_lock_assert_held() aborts a thread
 *     that does not hold the lock (the check every _locked helper of the
 *     store opens with).
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

#ifdef AK_LOCK_DEBUG
static unsigned int holder_state;	/* atomic: 1 holding, 2 may release */

static void *holder(void *arg)
{
	struct ak_lock *l = arg;

	ak_lock_acquire(l);
	__atomic_store_n(&holder_state, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&holder_state, __ATOMIC_SEQ_CST) != 2)
		nap();
	ak_lock_release(l);
	return NULL;
}

/* Whether ak_lock_assert_held(@l) kills a child process that runs it. */
static bool assert_aborts(struct ak_lock *l, bool take_first)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		if (!freopen("/dev/null", "w", stderr))	/* the expected report */
			_exit(1);
		if (take_first)
			ak_lock_acquire(l);
		ak_lock_assert_held(l);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return false;
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void test_owner(void)
{
	struct ak_lock l;
	pthread_t t;

	ak_lock_init(&l);
	CHECK(!ak_lock_held(&l));
	ak_lock_acquire(&l);
	CHECK(ak_lock_held(&l));
	ak_lock_release(&l);
	CHECK(!ak_lock_held(&l));

	/* held by another thread: not ours */
	holder_state = 0;
	CHECK(!pthread_create(&t, NULL, holder, &l));
	while (__atomic_load_n(&holder_state, __ATOMIC_SEQ_CST) != 1)
		nap();
	CHECK(!ak_lock_held(&l));
	CHECK(l.word != 0);
	__atomic_store_n(&holder_state, 2, __ATOMIC_SEQ_CST);
	pthread_join(t, NULL);
	CHECK(!ak_lock_held(&l));
	CHECK(l.word == 0);

	/* the assertion: silent in the holder, fatal elsewhere */
	fflush(NULL);
	CHECK_MSG(assert_aborts(&l, false), "assert on a free lock passed");
	CHECK_MSG(!assert_aborts(&l, true), "assert in the holder aborted");
}
#endif

int main(void)
{
	test_uncontended();
	test_mutual_exclusion();
	test_sleepers_are_woken();
#ifdef AK_LOCK_DEBUG
	test_owner();
#endif
	return check_report();
}
