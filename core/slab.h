/* SPDX-License-Identifier: MIT */
/*
 * slab.h - finer size classes than jemalloc's for the item blocks.
 *
 * jemalloc rounds a block above 128 bytes up to one of four classes per
 * doubling (160, 192, 224, 256, 320, ...): a 162-byte item (a 48-byte
 * header, a 14-byte key, 100 bytes of value) takes 192 bytes, 18 % more
 * than it needs. The slabs add classes between jemalloc's: 8 bytes apart
 * from 72 to 512 bytes (each in the page of 16 to 64 KiB that costs it
 * least), and above 512 classes that tile their page: each doubling (lo,
 * 2 lo] gets one page size, the power of two that holds 32 to 64 of its
 * blocks (64 to 128 from 8 KiB; at least 64 KiB, at most 1 MiB), and a
 * class for every count n of blocks that page can hold, (page - header) /
 * n rounded down to 8. So up to 16 KiB a block wastes at most 1/32 of its
 * size to its class and nothing to its page's tail (memcached's 1 MB
 * pages have almost none either), and such a block is charged its size:
 * where memcached's class holds as many a page, the same limit holds as
 * many items. Above 16 KiB the page is 1 MiB,
 * memcached's, and holds 63 blocks or fewer (32 to 63 of 16 to 32 KiB, 16
 * to 31 of 32 to 64 KiB, one of the largest class, 1 MiB less the
 * header), and a block's class
 * is the one of the most blocks a 1 MiB page can hold at its size, where
 * memcached's classes, 1.25 apart, hold at most as many and jemalloc's,
 * four a doubling, waste up to a fifth. A block size is served from a
 * slab class only where that costs less than jemalloc's class (up to 512
 * bytes counting the class's share of its page), and from jemalloc
 * otherwise. The classes
 * and what each block costs are the same in every build (they do not ask the
 * allocator), so a store holds the same items at the same limit with
 * jemalloc and in the sanitizer build.
 *
 * A page holds blocks of one class; its header (the first 32 bytes) keeps
 * the page's free blocks and how many. Each thread keeps a few free blocks
 * of each class up to 16 KiB (at most 8 KiB of a class) so that an
 * allocation or a free takes no lock mostly; the class lock guards the
 * pages. A page whose blocks are all free goes back to jemalloc, but one
 * per class, kept for the next allocation. The classes above 16 KiB
 * take the class lock at every block (a block of theirs is a large copy
 * anyway), and a page of theirs going back to jemalloc or coming from it
 * gives its memory to the kernel. From 8 KiB on, the memory of the free
 * blocks that stay unused on their pages goes back to the kernel too
 * (slab_purge_idle()): their pages hold few blocks, and a page in use for
 * one block would otherwise hold the free ones' memory. Below, the wholly
 * free page a class keeps does, when it stays so.
 *
 * Synchronization: thread safe. A thread that ends returns its free
 * blocks (a thread-specific destructor); slab_thread_flush() does it early.
 */
#ifndef ANCHORKV_SLAB_H
#define ANCHORKV_SLAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"

#define SLAB_TABLE_MAX	16384	/* sizes the tables below cover */
#define SLAB_MAX	((1u << 20) - 32)	/* the largest block a slab class
						 * serves: a 1 MiB page's */
#define SLAB_CLASSES_MAX 320	/* at most this many classes (319 now) */

#define SLAB_GRANULE_SHIFT	3

/* Per 8-byte granule of size up to SLAB_TABLE_MAX, built before main():
 * the class serving it plus one (0: jemalloc), and what a block costs. */
extern uint16_t slab_granule_class[];
extern uint32_t slab_granule_charge[];

/* The same for a size above SLAB_TABLE_MAX, found by a search. */
unsigned int slab_class_large(size_t size);
size_t slab_charge_large(size_t size);

static inline size_t slab_granule(size_t size)
{
	return (size + (1u << SLAB_GRANULE_SHIFT) - 1) >> SLAB_GRANULE_SHIFT;
}

/* The slab class serving a block of @size plus one; 0: jemalloc does. */
static inline unsigned int slab_class_of(size_t size)
{
	if (__builtin_expect(size > SLAB_TABLE_MAX, 0))
		return slab_class_large(size);
	return slab_granule_class[slab_granule(size)];
}

/**
 * slab_charge() - the bytes a block of @size costs
 * @size: a block size
 *
 * The memory a block takes from its allocator: a slab class's block size,
 * plus, up to 512 bytes, its share of the page (the page's bytes over its
 * blocks, rounded up; above, the blocks tile their page to within 8 bytes
 * each and a 32-byte header); or jemalloc's size class (whatever the
 * build's allocator) for a size no slab class serves more cheaply. What
 * the store counts for an item.
 *
 * Context: any.
 * Return: the bytes, >= @size.
 */
static inline size_t slab_charge(size_t size)
{
	if (__builtin_expect(size > SLAB_TABLE_MAX, 0))
		return slab_charge_large(size);
	return slab_granule_charge[slab_granule(size)];
}

/* Through the thread's cache, a class up to SLAB_TABLE_MAX. */
void *slab_alloc_class(unsigned int ci);
void slab_free_class(void *p, unsigned int ci);
/* A block above SLAB_TABLE_MAX: from its class's page under the class
 * lock (no thread cache), or jemalloc's. */
void *slab_alloc_large(size_t size);
void slab_free_large(void *p, size_t size);

/**
 * slab_alloc() - allocate a block of @size bytes
 * @size: bytes wanted, at least 1
 *
 * From a slab class, or from ak_malloc() where slab_charge() says
 * jemalloc's class is as cheap. The block is 8-byte aligned (the item's
 * alignment; a class 8 bytes off a multiple of 16 gives no more). Fault
 * injection (core/alloc.h) refuses it as it would an ak_malloc().
 *
 * Context: any; may take a class lock (a leaf: nothing is taken under it).
 * Return: the block, or NULL when memory (real or injected) is exhausted.
 */
static inline void *slab_alloc(size_t size)
{
	unsigned int ci;

	if (__builtin_expect(size > SLAB_TABLE_MAX, 0))
		return slab_alloc_large(size);
	ci = slab_granule_class[slab_granule(size)];
	return ci ? slab_alloc_class(ci - 1) : ak_malloc(size);
}

/**
 * slab_free() - release a block from slab_alloc()
 * @p:    the block, or NULL
 * @size: the size it was allocated with
 *
 * Context: any, on any thread; may take a class lock.
 */
static inline void slab_free(void *p, size_t size)
{
	unsigned int ci;

	if (__builtin_expect(size > SLAB_TABLE_MAX, 0)) {
		slab_free_large(p, size);
		return;
	}
	ci = slab_granule_class[slab_granule(size)];
	if (!ci)
		ak_free_sized(p, size);
	else if (p)
		slab_free_class(p, ci - 1);
}

/**
 * slab_thread_flush() - give this thread's cached free blocks back
 *
 * To their pages, which then go back to jemalloc if all their blocks are
 * free. A thread's end does the same.
 *
 * Context: any.
 */
void slab_thread_flush(void);

/**
 * slab_purge_idle() - give the kernel the memory of idle free blocks
 *
 * Of the classes of 8 KiB and up: a block free on its page (not in a
 * thread's cache) already at the last call gives its memory back
 * (madvise(); a page of it reads as zeros when used again), one freed
 * since is marked for the next call. Called once a second, so a block
 * freed and used again within the second keeps its memory; blocks of one
 * class share few pages, and with values of many sizes the free ones
 * would otherwise hold much memory outside the limit. Below 8 KiB, a
 * class's wholly free page kept for the next allocation (one at most), if
 * it was so at the last call, gives the memory of its blocks back, but
 * the memory page of its header, and hands them out from its start again
 * (its blocks do not count in @purged_bytes of slab_get_stats()).
 *
 * It also does what slab_drain_step() does.
 *
 * Context: any; takes each class lock in turn and calls madvise() under
 * it, for at most 32 blocks a class from 8 KiB (the others wait for the
 * next call) and one page below.
 */
void slab_purge_idle(void);

/**
 * slab_drain_step() - the pages' part of slab_purge_idle()
 *
 * Below 8 KiB, a class's wholly free page idle since the last call gives
 * its memory back; in every class the sparse pages are named to empty
 * (slab_drains()). Called between slab_purge_idle()'s calls (the server:
 * ten times a second), so that the memory of pages is given back as fast
 * as frees of one size and stores of another leave them free or sparse:
 * where the items of some sizes are turned out faster than they come
 * (small values kept, larger ones evicted), a second of such frees holds
 * megabytes of pages.
 *
 * Context: any; takes each class lock in turn, a moment each.
 * Return: whether it marked, gave back or named a page: false when a
 * call after it would find nothing to do until pages are freed again.
 */
bool slab_drain_step(void);

/**
 * slab_drains() - how many pages the classes are emptying now
 *
 * Blocks freed in no order (main's hand evicts in the hash table's, and
 * deletes and overwrites of other sizes come as they come) leave a class
 * many pages partly free, and a page with one block in use holds the
 * memory of all. So slab_drain_step() picks, in a class whose free blocks
 * on partly used pages are more than a page and a quarter, its sparsest
 * pages (of the first 256 on its list, as many as the other pages' free
 * blocks can take the blocks of) to empty: no block is handed out from
 * them, one freed there goes straight back, and the store moves the
 * items they hold into the class's other pages (slab_draining(),
 * slab_alloc_moved()). Emptied, a page goes back to jemalloc for any
 * class to use (or stays, the one wholly free page a class keeps); one
 * not emptied within 8 calls (of it or slab_purge_idle()) goes back on its
 * list.
 *
 * Context: any; a relaxed load.
 * Return: the count; 0: no block need move.
 */
unsigned int slab_drains(void);

/**
 * slab_draining() - whether a block is on a page its class is emptying
 * @p:    a block from slab_alloc() of @size
 * @size: its size
 *
 * Context: any; a relaxed load, so a page that began or ended being
 * emptied a moment ago may be seen as it was.
 * Return: true if a copy of the block should move (slab_alloc_moved()).
 */
bool slab_draining(const void *p, size_t size);

/**
 * slab_alloc_moved() - a block to move one that slab_draining() named into
 * @size: the block's size
 *
 * From a page of the class partly in use, never from the page being
 * emptied, nor from the wholly free page the class keeps, nor from a new
 * page: moving only packs the blocks in use. Not refused by fault
 * injection (it never asks the allocator). Free it with slab_free().
 *
 * Context: any; takes the class lock (a leaf), so a caller may hold
 * its own locks.
 * Return: the block, or NULL when the class has no such free block.
 */
void *slab_alloc_moved(size_t size);

/**
 * struct slab_stats - what slab_get_stats() reports
 * @pages:      pages the classes hold
 * @page_bytes: their bytes
 * @blocks:     blocks off their pages: handed out, or free in a thread's
 *              cache (at most 8 KiB of a class a thread)
 * @block_bytes: slab_charge() of those blocks
 * @purged_bytes: free blocks' bytes given back to the kernel
 *              (slab_purge_idle()), in @page_bytes but not in memory
 * @drained_pages: pages emptied by moving their blocks (slab_draining())
 * @moved_blocks: blocks handed out by slab_alloc_moved()
 */
struct slab_stats {
	uint64_t pages;
	uint64_t page_bytes;
	uint64_t blocks;
	uint64_t block_bytes;
	uint64_t purged_bytes;
	uint64_t drained_pages;
	uint64_t moved_blocks;
};

/**
 * slab_get_stats() - the classes' totals
 * @st: filled in
 *
 * Context: any; takes each class lock in turn.
 */
void slab_get_stats(struct slab_stats *st);

#endif /* ANCHORKV_SLAB_H */
