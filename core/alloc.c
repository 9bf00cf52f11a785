// SPDX-License-Identifier: MIT
/*
 * alloc.c - jemalloc (or libc, for sanitizer builds) behind one interface,
 * plus failure injection.
 *
 * The jemalloc build calls malloc() and free(), which are jemalloc's own
 * (Debian's libjemalloc exports them without a prefix) and have a short
 * thread-cache fast path that mallocx() and dallocx() lack in jemalloc 5.3
 * (about 30 instructions against 90 each, measured with callgrind);
 * ak_free_sized() uses sdallocx(), which skips the size lookup of free().
 * ak_good_size() answers small sizes from a table of nallocx() built once
 * before main() (a nallocx() call costs about 35 instructions, a set asks
 * three times).
 */
#include "alloc.h"

#include "compiler.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef AK_MALLOC_LIBC
#include <malloc.h>
#else
#include <jemalloc/jemalloc.h>
#endif

static bool fail_armed;			/* atomic; set by the first arming */
static long fail_after = -1;		/* atomic; < 0: disarmed */
static unsigned int fail_one_in;	/* atomic; 0: disarmed */
static unsigned long fail_count;	/* atomic */
static unsigned long oom_count;		/* atomic: real failures */
static uint64_t fail_rng = 0x9e3779b97f4a7c15ULL; /* atomic; xorshift state */

/* Whether to refuse this allocation; the part behind fail_armed. */
static __attribute__((noinline)) bool inject_failure_armed(void)
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

/*
 * Whether to refuse this allocation: one load and a branch until a test
 * first arms the injector (a daemon never does).
 */
static inline bool inject_failure(void)
{
	if (likely(!__atomic_load_n(&fail_armed, __ATOMIC_RELAXED)))
		return false;
	return inject_failure_armed();
}

bool ak_alloc_refused(void)
{
	return inject_failure();
}

void ak_alloc_fail_after(long n)
{
	__atomic_store_n(&fail_after, n < 0 ? -1 : n, __ATOMIC_RELAXED);
	if (n >= 0)
		__atomic_store_n(&fail_armed, true, __ATOMIC_RELEASE);
}

void ak_alloc_fail_random(unsigned int one_in)
{
	__atomic_store_n(&fail_one_in, one_in, __ATOMIC_RELAXED);
	if (one_in)
		__atomic_store_n(&fail_armed, true, __ATOMIC_RELEASE);
}

unsigned long ak_alloc_failures(void)
{
	return __atomic_load_n(&fail_count, __ATOMIC_RELAXED);
}

unsigned long ak_alloc_failed(void)
{
	return __atomic_load_n(&fail_count, __ATOMIC_RELAXED) +
	       __atomic_load_n(&oom_count, __ATOMIC_RELAXED);
}

/* An allocation the allocator refused is counted (stats malloc_fails). */
static inline void *counted(void *p)
{
	if (unlikely(!p))
		__atomic_fetch_add(&oom_count, 1, __ATOMIC_RELAXED);
	return p;
}

#ifdef AK_MALLOC_LIBC

const char *ak_alloc_name(void) { return "libc"; }

void ak_free_sized(void *ptr, size_t size)
{
	/* the sanitizer build checks what sdallocx() would take on trust */
	if (ptr && size > malloc_usable_size(ptr))
		abort();
	free(ptr);
}

void *ak_malloc(size_t size)
{
	if (inject_failure())
		return NULL;
	return counted(malloc(size ? size : 1));
}

void *ak_realloc(void *ptr, size_t size)
{
	if (inject_failure())
		return NULL;
	return counted(realloc(ptr, size ? size : 1));
}

void ak_free(void *ptr)
{
	free(ptr);
}

size_t ak_usable_size(const void *ptr)
{
	return malloc_usable_size((void *)ptr);
}

void *ak_page_alloc(size_t size)
{
	void *p;

	if (posix_memalign(&p, size, size))
		p = NULL;
	return counted(p);
}

void ak_page_free(void *p, size_t size)
{
	(void)size;
	free(p);
}

size_t ak_good_size(size_t size)
{
	/* glibc: 16-byte granules with an 8-byte header, at least 24 usable */
	size_t n = (size + 8 + 15) & ~(size_t)15;

	return n < 32 ? 24 : n - 8;
}

#else /* jemalloc */

/*
 * The size class of every request up to GOOD_SIZE_TABLE_MAX bytes, per
 * 8-byte granule: jemalloc's classes are multiples of 8, so every size of a
 * granule has the same class. Filled from nallocx() itself before main()
 * (so it is exact whatever jemalloc's configuration), read-only afterwards.
 */
#define GOOD_SIZE_SHIFT		3
#define GOOD_SIZE_TABLE_MAX	8192
static uint16_t good_size_table[(GOOD_SIZE_TABLE_MAX >> GOOD_SIZE_SHIFT) + 1];

static size_t good_size_granule(size_t size)
{
	return (size + (1u << GOOD_SIZE_SHIFT) - 1) >> GOOD_SIZE_SHIFT;
}

__attribute__((constructor)) static void good_size_table_init(void)
{
	size_t g;

	for (g = 0; g < ARRAY_SIZE(good_size_table); g++) {
		size_t n = nallocx(g ? g << GOOD_SIZE_SHIFT : 1, 0);

		/* 0 (no answer) or a class too big to note: ask each time */
		good_size_table[g] = n <= UINT16_MAX ? (uint16_t)n : 0;
	}
}

/*
 * jemalloc's options, read at its start. One arena: the items live in the
 * slab pages (slab.c), a few large allocations a second, and what jemalloc
 * serves itself goes mostly through its thread caches; arenas per CPU (four
 * each by default) only keep their dirty pages apart: 2 to 3 MiB of RSS at
 * -m 64 under test_memlimit's load. No dirty pages kept: what is freed to
 * jemalloc goes back to the kernel at once, not over 10 s, since what comes
 * back to it is mostly a slab page that frees of one size emptied while
 * stores of another take new ones: 1.6 MiB less RSS at that load (a
 * median peak of 85,316 against 86,930 KiB over six runs), for 1.5 times
 * the madvise() calls, some 40 a second there. MALLOC_CONF still
 * overrides it.
 */
const char *malloc_conf = "narenas:1,dirty_decay_ms:0";

const char *ak_alloc_name(void) { return "jemalloc"; }

void *ak_malloc(size_t size)
{
	if (inject_failure())
		return NULL;
	return counted(malloc(size ? size : 1));
}

void *ak_realloc(void *ptr, size_t size)
{
	if (inject_failure())
		return NULL;
	return counted(realloc(ptr, size ? size : 1));
}

void ak_free(void *ptr)
{
	if (ptr)		/* jemalloc's free(NULL) takes its slow path */
		free(ptr);
}

void ak_free_sized(void *ptr, size_t size)
{
	if (ptr)
		sdallocx(ptr, size ? size : 1, 0);
}

size_t ak_usable_size(const void *ptr)
{
	return sallocx(ptr, 0);
}

void *ak_page_alloc(size_t size)
{
	return counted(mallocx(size, MALLOCX_ALIGN(size)));
}

void ak_page_free(void *p, size_t size)
{
	sdallocx(p, size, MALLOCX_ALIGN(size));
}

size_t ak_good_size(size_t size)
{
	if (likely(size <= GOOD_SIZE_TABLE_MAX)) {
		size_t n = good_size_table[good_size_granule(size)];

		if (likely(n))
			return n;
	}
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
