// SPDX-License-Identifier: MIT
/*
 * test_alloc.c - core/alloc.h against what the allocator really does.
 *
 * Built twice: with the sanitizers and the C library's malloc like every
 * unit test, and as test_alloc_jemalloc against the release object of
 * alloc.c and jemalloc, where ak_good_size() answers from its table. There
 * the reference is the block itself: ak_usable_size() (sallocx()) of a
 * block of every size up to past the table's end must equal the class
 * ak_good_size() promised for that size, and freeing it with
 * ak_free_sized() under the size asked for must be accepted.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "check.h"

#define SIZES_CHECKED	20000	/* past the table (8 KiB) into nallocx() */

static void test_good_size_is_the_block_size(void)
{
	bool jemalloc = !strcmp(ak_alloc_name(), "jemalloc");
	unsigned long bad = 0, small = 0;
	size_t size;

	for (size = 0; size <= SIZES_CHECKED; size++) {
		size_t good = ak_good_size(size);
		char *p = ak_malloc(size);

		CHECK(p);
		if (!p)
			return;
		memset(p, 0xa5, size);
		if (good < size)
			small++;
		/*
		 * The C library's sanitizer build reports the size asked for as
		 * usable, so only jemalloc's classes can be compared exactly.
		 */
		if (jemalloc && good != ak_usable_size(p)) {
			if (!bad++)
				fprintf(stderr, "size %zu: good %zu usable %zu\n",
					size, good, ak_usable_size(p));
		}
		ak_free_sized(p, size);
	}
	CHECK_MSG(!small, "%lu sizes got a smaller class", small);
	CHECK_MSG(!bad, "%lu sizes differ from their block", bad);
}

static void test_free_sized_takes_any_size_of_the_class(void)
{
	char *p = ak_malloc(100);
	char *q = ak_calloc(3, 33);

	CHECK(p && q);
	if (!p || !q)
		return;
	/* the size asked for, or the class's size: both are valid */
	ak_free_sized(p, 100);
	ak_free_sized(q, ak_usable_size(q));
	ak_free_sized(NULL, 100);
	ak_free(NULL);
}

static void test_injected_failure(void)
{
	unsigned long before = ak_alloc_failures();
	void *a, *b;

	ak_alloc_fail_after(1);
	a = ak_malloc(10);
	b = ak_malloc(10);
	CHECK(a && !b);
	CHECK(ak_alloc_failures() == before + 1);
	b = ak_malloc(10);	/* disarmed again */
	CHECK(b);
	ak_free_sized(a, 10);
	ak_free(b);
}

int main(void)
{
	printf("allocator: %s\n", ak_alloc_name());
	test_good_size_is_the_block_size();
	test_free_sized_takes_any_size_of_the_class();
	test_injected_failure();
	return check_report();
}
