/* SPDX-License-Identifier: MIT */
/*
 * check.h - the unit tests' tiny harness.
 *
 * CHECK(cond) counts one check; a failing one prints where and why and the
 * run goes on. check_report() prints the closing line "N passed, N failed"
 * and returns the process exit code (non-zero on any failure).
 */
#ifndef ANCHORKV_CHECK_H
#define ANCHORKV_CHECK_H

#include <stdio.h>

static unsigned long check_passed, check_failed;

#define CHECK(cond) do {						\
	if (cond) {							\
		check_passed++;						\
	} else {							\
		check_failed++;						\
		fprintf(stderr, "%s:%d: %s: check failed: %s\n",	\
			__FILE__, __LINE__, __func__, #cond);		\
	}								\
} while (0)



#define CHECK_MSG(cond, ...) do {					\
	if (cond) {							\
		check_passed++;						\
	} else {							\
		check_failed++;						\
		fprintf(stderr, "%s:%d: %s: check failed: %s: ",	\
			__FILE__, __LINE__, __func__, #cond);		\
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
	}								\
} while (0)

static inline int check_report(void)
{
	printf("%lu passed, %lu failed\n", check_passed, check_failed);
	return check_failed ? 1 : 0;
}

#endif /* ANCHORKV_CHECK_H */
