/* SPDX-License-Identifier: MIT */
/*
 * alloc.h - the one place anchorkv allocates memory.
 *
 * Every allocation of core/, protocol/ and server/ goes through these
 * functions. The default build maps them to jemalloc (malloc/free, which
 * are jemalloc's own, and its non-standard sdallocx/sallocx/nallocx), so
 * that the size the store accounts for is the size jemalloc really hands
 * out. Built with -DAK_MALLOC_LIBC (the sanitizer
 * builds) they map to the C library, so that AddressSanitizer sees every
 * block.
 *
 * Failure injection lives here too: tests arm it with ak_alloc_fail_after()
 * or ak_alloc_fail_random(); every allocation that is then refused returns
 * NULL exactly as a real out-of-memory would.
 *
 * Synchronization: thread safe; the injection counters are atomics.
 */
#ifndef ANCHORKV_ALLOC_H
#define ANCHORKV_ALLOC_H

#include <stdbool.h>
#include <stddef.h>

/**
 * ak_malloc() - allocate @size bytes
 * @size: bytes wanted, may be 0
 *
 * Context: any; takes no lock of anchorkv's.
 * Return: the block, or NULL when memory (real or injected) is exhausted.
 */
void *ak_malloc(size_t size);

/**
 * ak_calloc() - allocate @n * @size zeroed bytes
 * @n:    number of elements
 * @size: size of one element
 *
 * Context: any.
 * Return: the zeroed block, or NULL on overflow or exhaustion.
 */
void *ak_calloc(size_t n, size_t size);

/**
 * ak_realloc() - resize a block from ak_malloc()
 * @ptr:  block or NULL
 * @size: new size
 *
 * Context: any.
 * Return: the new block, or NULL (then @ptr is untouched).
 */
void *ak_realloc(void *ptr, size_t size);

/**
 * ak_free() - release a block from ak_malloc(), ak_calloc() or ak_realloc()
 * @ptr: block or NULL
 *
 * Context: any.
 */
void ak_free(void *ptr);

/**
 * ak_free_sized() - release a block whose requested size the caller knows
 * @ptr:  block from ak_malloc() or ak_calloc(), or NULL
 * @size: the size that was asked for (anything from it up to the block's
 *        ak_usable_size() will do)
 *
 * Cheaper than ak_free() with jemalloc, which then need not look the size
 * up. The sanitizer build checks @size and aborts on a wrong one.
 *
 * Context: any.
 */
void ak_free_sized(void *ptr, size_t size);

/**
 * ak_usable_size() - bytes the allocator really reserved for a block
 * @ptr: a live block
 *
 * Context: any.
 * Return: the usable size, >= the size asked for.
 */
size_t ak_usable_size(const void *ptr);

/**
 * ak_good_size() - bytes the allocator would reserve for a request of @size
 * @size: a request size
 *
 * Lets a caller account for a block before it allocates it.
 *
 * Context: any.
 * Return: the size class that ak_malloc(@size) would hand out.
 */
size_t ak_good_size(size_t size);

/**
 * ak_alloc_refused() - whether failure injection refuses this allocation
 *
 * For an allocator layered on this one (core/slab.c) that serves a block
 * without calling ak_malloc(): it asks here so that injection refuses its
 * blocks as it refuses ak_malloc()'s, and counts the refusal.
 *
 * Context: any.
 * Return: true if the allocation must fail.
 */
bool ak_alloc_refused(void);

/**
 * ak_page_alloc() - allocate @size bytes aligned to @size
 * @size: a power of two, at least 4096
 *
 * Not subject to failure injection (the layer above asks
 * ak_alloc_refused() for each of its blocks); a real failure is counted.
 *
 * Context: any.
 * Return: the block, or NULL.
 */
void *ak_page_alloc(size_t size);

/**
 * ak_page_free() - release a block from ak_page_alloc()
 * @p:    the block
 * @size: its size
 *
 * Context: any.
 */
void ak_page_free(void *p, size_t size);

/**
 * ak_alloc_fail_after() - make the allocation after the next @n fail
 * @n: allocations to let through before one fails; negative disarms
 *
 * After the failure the injector disarms itself.
 *
 * Context: any; for tests.
 */
void ak_alloc_fail_after(long n);

/**
 * ak_alloc_fail_random() - fail each allocation with probability 1 / @one_in
 * @one_in: 0 disarms
 *
 * Context: any; for tests and fault-injection runs.
 */
void ak_alloc_fail_random(unsigned int one_in);

/**
 * ak_alloc_failures() - how many allocations were refused by injection
 *
 * Context: any.
 * Return: the count since start.
 */
unsigned long ak_alloc_failures(void);

/**
 * ak_alloc_failed() - how many allocations failed, injected or real
 *
 * Context: any.
 * Return: the count since start (stats malloc_fails).
 */
unsigned long ak_alloc_failed(void);

/**
 * ak_alloc_name() - the allocator this build uses ("jemalloc" or "libc")
 *
 * Context: any.
 * Return: a static string.
 */
const char *ak_alloc_name(void);

#endif /* ANCHORKV_ALLOC_H */
