// SPDX-License-Identifier: MIT
/*
 * alloc.c - jemalloc (or libc, for sanitizer builds) behind one interface,
 * plus failure injection.
 */
#include "alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef AK_MALLOC_LIBC
#include <malloc.h>
#else
#include <jemalloc/jemalloc.h>
#endif

static long fail_after = -1;		/* atomic; < 0: disarmed */
static unsigned int fail_one_in;	/* atomic; 0: disarmed */
static unsigned long fail_count;	/* atomic */
static uint64_t fail_rng = 0x9e3779b97f4a7c15ULL; /* atomic; xorshift state */

static bool inject_failure(void)
{
	long n = __atomic_load_n(&fail_after, __ATOMIC_RELAXED);
	unsigned int one_in = __atomic_load_n(&fail_one_in, __ATOMIC_RELAXED);

	if (n >= 0) {
		n = __atomic_fetch_sub(&fail_after, 1, __ATOMIC_RELAXED);
		if (n == 0) {
			__atomic_fetch_add(&fail_count, 1, __ATOMIC_RELAXED);
			return true;
		}
		if (n < 0) /* raced past zero: disarm */
			__atomic_store_n(&fail_after, -1, __ATOMIC_RELAXED);
	}
	if (one_in) {
		uint64_t x = __atomic_load_n(&fail_rng, __ATOMIC_RELAXED);

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		__atomic_store_n(&fail_rng, x, __ATOMIC_RELAXED);
		if (x % one_in == 0) {
			__atomic_fetch_add(&fail_count, 1, __ATOMIC_RELAXED);
			return true;
		}
	}
	return false;
}

void ak_alloc_fail_after(long n)
{
	__atomic_store_n(&fail_after, n < 0 ? -1 : n, __ATOMIC_RELAXED);
}

void ak_alloc_fail_random(unsigned int one_in)
{
	__atomic_store_n(&fail_one_in, one_in, __ATOMIC_RELAXED);
}

unsigned long ak_alloc_failures(void)
{
	return __atomic_load_n(&fail_count, __ATOMIC_RELAXED);
}

#ifdef AK_MALLOC_LIBC

const char *ak_alloc_name(void) { return "libc"; }

void *ak_malloc(size_t size)
{
	if (inject_failure())
		return NULL;
	return malloc(size ? size : 1);
}

void *ak_realloc(void *ptr, size_t size)
{
	if (inject_failure())
		return NULL;
	return realloc(ptr, size ? size : 1);
}

void ak_free(void *ptr)
{
	free(ptr);
}

size_t ak_usable_size(const void *ptr)
{
	return malloc_usable_size((void *)ptr);
}

size_t ak_good_size(size_t size)
{
	/* glibc: 16-byte granules with an 8-byte header, at least 24 usable */
	size_t n = (size + 8 + 15) & ~(size_t)15;

	return n < 32 ? 24 : n - 8;
}

#else /* jemalloc */

const char *ak_alloc_name(void) { return "jemalloc"; }

void *ak_malloc(size_t size)
{
	if (inject_failure())
		return NULL;
	return mallocx(size ? size : 1, 0);
}

void *ak_realloc(void *ptr, size_t size)
{
	if (inject_failure())
		return NULL;
	if (!ptr)
		return mallocx(size ? size : 1, 0);
	return rallocx(ptr, size ? size : 1, 0);
}

void ak_free(void *ptr)
{
	if (ptr)
		dallocx(ptr, 0);
}

size_t ak_usable_size(const void *ptr)
{
	return sallocx(ptr, 0);
}

size_t ak_good_size(size_t size)
{
	return nallocx(size ? size : 1, 0);
}

#endif

void *ak_calloc(size_t n, size_t size)
{
	void *p;

	if (size && n > SIZE_MAX / size)
		return NULL;
	p = ak_malloc(n * size);
	if (p)
		memset(p, 0, n * size);
	return p;
}
