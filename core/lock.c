// SPDX-License-Identifier: MIT
/*
 * lock.c - the slow paths of struct ak_lock: spinning, then sleeping on the
 * futex word (see lock.h for the protocol).
 */
#include "lock.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#define AK_LOCK_SPINS	100	/* tries before sleeping */

#ifdef AK_LOCK_DEBUG
__thread char ak_lock_self_tag;
#endif

/* Sleep while the word is still @val (the kernel checks, atomically). */
static void ak_lock_futex_wait(struct ak_lock *l, uint32_t val)
{
	/* EAGAIN (the word changed), EINTR: the caller looks again */
	syscall(SYS_futex, &l->word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static inline void ak_lock_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

void ak_lock_wait(struct ak_lock *l)
{
	unsigned int spin;

	/* the holder is probably about to leave: try again for a while */
	for (spin = 0; spin < AK_LOCK_SPINS; spin++) {
		uint32_t w = __atomic_load_n(&l->word, __ATOMIC_RELAXED);

		if (w == 0 &&
		    __atomic_compare_exchange_n(&l->word, &w, 1, false,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return;
		if (w == 2)	/* others already sleep: join them */
			break;
		ak_lock_cpu_relax();
	}
	/* announce a waiter; taking a free lock this way leaves it at 2 */
	while (__atomic_exchange_n(&l->word, 2, __ATOMIC_ACQUIRE) != 0)
		ak_lock_futex_wait(l, 2);
}

void ak_lock_wake(struct ak_lock *l)
{
	syscall(SYS_futex, &l->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
