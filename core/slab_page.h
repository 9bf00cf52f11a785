/* SPDX-License-Identifier: MIT */
/*
 * slab_page.h - the slab classes' pages and records, shared by slab.c
 * (the tables, the pages, the threads' caches, the interface) and
 * slab_purge.c (the idle purge and the emptying of sparse pages). Not
 * for the rest of the tree: slab.h is the interface.
 *
 * Synchronization: a class's lock guards what struct slab_class says is
 * under it and its pages' heads; the counts marked atomic are read
 * without it.
 */
#ifndef ANCHORKV_SLAB_PAGE_H
#define ANCHORKV_SLAB_PAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>

#include "list.h"
#include "lock.h"
#include "slab.h"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#define block_poison(p, n)	ASAN_POISON_MEMORY_REGION(p, n)
#define block_unpoison(p, n)	ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define block_poison(p, n)	((void)(p), (void)(n))
#define block_unpoison(p, n)	((void)(p), (void)(n))
#endif

#define PAGE_HEAD		32	/* sizeof(struct slab_page), 16-aligned */
#define PURGE_PAGE		4096	/* the unit madvise() drops */
#define PURGE_MIN		(2 * PURGE_PAGE)	/* a block this large holds
						 * a whole one */
#define BLOCK_SEEN		1	/* in a free block's link: free at
					 * the last slab_purge_idle() */
#define BLOCK_PURGED		2	/* and its memory went back to the
					 * kernel at one */
#define BLOCK_MARKS		3

/*
 * The head of a page: the blocks follow, from PAGE_HEAD on. @next counts
 * the blocks ever handed out from the page's end of never-used ones; the
 * others that are free are on @free, each holding the next.
 */
struct slab_page {
	struct list_head node;	/* on the class's partial list while
				 * nfree > 0; the wholly free at its tail */
	void *free;
	uint32_t nfree;		/* free blocks on the page, used or not */
	uint16_t next;		/* blocks below it have been handed out */
	uint16_t draining;	/* 0, or being emptied, on the class's
				 * drain list, since the slab_purge_idle()
				 * call this tells (drain_tick(); written
				 * under lock, read without: atomic) */
};

struct slab_class {
	struct ak_lock lock;
	uint32_t size;
	uint32_t psize;		/* the page's bytes, a power of two */
	uint32_t per_page;
	uint32_t charge;	/* slab_charge() of a block */
	uint32_t tc_max;	/* free blocks a thread keeps */
	uint32_t ndrain;	/* pages being emptied (written under lock,
				 * read without: atomic) */
	/* below: under lock */
	struct list_head drain;	/* those pages, the oldest first */
	uint64_t drain_free;	/* their free blocks */
	struct list_head partial;
	unsigned int empty;	/* wholly free pages on partial (at most 1
				 * after a free) */
	uint64_t pages;
	uint64_t out;		/* blocks off their pages */
	uint64_t purged;	/* free blocks whose memory the kernel has */
} __attribute__((aligned(64)));

extern struct slab_class slab_classes[SLAB_CLASSES_MAX];
extern unsigned int slab_nclasses;
extern unsigned int slab_purge_first;	/* the first class
					 * slab_purge_idle() purges free
					 * blocks of: 8 KiB and up */
extern unsigned int slab_drain_pages;	/* atomic: pages being emptied */
extern uint64_t slab_drained;		/* atomic: pages emptied so */

static inline struct slab_page *block_page(const struct slab_class *c,
					   const void *p)
{
	return (struct slab_page *)((uintptr_t)p & ~(uintptr_t)(c->psize - 1));
}

static inline void *page_block(const struct slab_class *c,
			       struct slab_page *pg, uint32_t idx)
{
	return (char *)pg + PAGE_HEAD + (size_t)idx * c->size;
}

/* Whether @c is above the tables: no thread cache (slab_alloc_large()),
 * and its pages' memory goes back to the kernel as they come and go. */
static inline bool class_is_large(const struct slab_class *c)
{
	return c->size > SLAB_TABLE_MAX;
}

/*
 * Give the kernel back the memory pages inside @len bytes at @p, free
 * bytes of a class of 8 KiB or more (its blocks are few on their page,
 * and a page with one block in use would otherwise hold the others'
 * memory, outside the limit), or a smaller class's idle wholly free page.
 * A page dropped reads as zeros when used again.
 */
static inline void slab_mem_purge(void *p, size_t len)
{
	const uintptr_t mask = ~(uintptr_t)(PURGE_PAGE - 1);
	uintptr_t lo = ((uintptr_t)p + PURGE_PAGE - 1) & mask;
	uintptr_t hi = ((uintptr_t)p + len) & mask;

	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* @pg, being emptied, is not any more (still on the drain list). */
static inline void drain_end_locked(struct slab_class *c,
				    struct slab_page *pg)
{
	c->drain_free -= pg->nfree;
	__atomic_store_n(&pg->draining, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->ndrain, c->ndrain - 1, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&slab_drain_pages, 1, __ATOMIC_RELAXED);
}

#endif /* ANCHORKV_SLAB_PAGE_H */
