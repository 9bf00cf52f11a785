// SPDX-License-Identifier: MIT
/*
 * slab.c - the slab classes between jemalloc's (see slab.h).
 *
 * The tables are built once before main(): for every 8-byte granule of
 * size up to SLAB_MAX, the slab class that serves it (or none) and what a
 * block of it costs. A page is aligned to its own size, so a block's page
 * is its address with the low bits cleared.
 *
 * Lock order: a class lock is a leaf; nothing is taken under it, and the
 * pages it frees are handed to jemalloc after it is released.
 */
#include "slab.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "alloc.h"
#include "compiler.h"
#include "list.h"
#include "lock.h"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#define block_poison(p, n)	ASAN_POISON_MEMORY_REGION(p, n)
#define block_unpoison(p, n)	ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define block_poison(p, n)	((void)(p), (void)(n))
#define block_unpoison(p, n)	((void)(p), (void)(n))
#endif

#define JE_SMALL		128	/* jemalloc's classes are 16 bytes apart
					 * up to here, four per doubling above */
#define SLAB_LOW		64	/* the first class is above this */
#define SLAB_TILED		512	/* classes above it tile their page */
#define PAGE_BLOCKS_MIN		32	/* a tiled class's page holds 32 to 64
					 * blocks, or more at PAGE_TILED_MIN */
#define PAGE_MIN		16384
#define PAGE_SMALL_MAX		65536	/* the classes up to SLAB_TILED */
#define PAGE_TILED_MIN		65536
#define PAGE_MAX		(1u << 20)
#define GRANULES		((SLAB_TABLE_MAX >> SLAB_GRANULE_SHIFT) + 1)
#define PAGE_HEAD		32	/* sizeof(struct slab_page), 16-aligned */
#define TCACHE_BYTES		8192	/* a thread's free blocks of a class */
#define TCACHE_MAX		16
#define TCACHE_CLASSES		256	/* the classes up to SLAB_TABLE_MAX,
					 * at most (256) */
#define PURGE_PAGE		4096	/* the unit madvise() drops */
#define PURGE_MIN		(2 * PURGE_PAGE)	/* a block this large holds
						 * a whole one */
#define BLOCK_SEEN		1	/* in a free block's link: free at
					 * the last slab_purge_idle() */
#define BLOCK_PURGED		2	/* and its memory went back to the
					 * kernel at one */
#define BLOCK_MARKS		3
#define PURGE_BATCH		32	/* blocks purged a class a call, under
					 * its lock: the rest at the next */
#define DRAIN_LOOK		256	/* partial pages looked at for the
					 * sparsest to empty */
#define DRAIN_CALLS		8	/* slab_purge_idle() calls a page may
					 * take to empty before it is let be */

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

struct tcache {			/* of the classes up to SLAB_TABLE_MAX */
	void *blk[TCACHE_CLASSES][TCACHE_MAX];
	uint8_t n[TCACHE_CLASSES];
	bool registered;	/* the thread's end will flush it */
};

static struct slab_class classes[SLAB_CLASSES_MAX];
static unsigned int nclasses;
static unsigned int drains;		/* atomic: pages being emptied */
static unsigned int purge_calls;	/* atomic: slab_purge_idle() calls */
static uint64_t drained;		/* atomic: pages emptied so */
static uint64_t drain_moves;		/* atomic: blocks moved off them */
static unsigned int large_first;	/* the first class above the tables */
static unsigned int purge_first;	/* the first class slab_purge_idle()
					 * looks at: blocks of 8 KiB and up */
uint16_t slab_granule_class[GRANULES];
uint32_t slab_granule_charge[GRANULES];
static __thread struct tcache tcache;
static pthread_key_t tcache_key;
static pthread_once_t tcache_once = PTHREAD_ONCE_INIT;

/*
 * jemalloc 5's size class of @size up to SLAB_MAX: 16 bytes apart up to
 * 128, then four classes per doubling (its large classes too, page
 * multiples from 16 KiB on). Computed, not asked, so that every
 * build charges the same; test_slab checks it against nallocx().
 */
static size_t jemalloc_class(size_t size)
{
	size_t base = JE_SMALL, delta;

	if (size <= 8)
		return 8;
	if (size <= JE_SMALL)
		return (size + 15) & ~(size_t)15;
	while (base * 2 < size)
		base *= 2;
	delta = base / 4;
	return (size + delta - 1) / delta * delta;
}

static uint32_t page_charge(size_t size, size_t psize)
{
	size_t per = (psize - PAGE_HEAD) / size;

	return (uint32_t)((psize + per - 1) / per);
}

static void class_add(size_t size, uint32_t psize)
{
	struct slab_class *c;

	assert(nclasses < SLAB_CLASSES_MAX);
	c = &classes[nclasses++];
	ak_lock_init(&c->lock);
	INIT_LIST_HEAD(&c->partial);
	INIT_LIST_HEAD(&c->drain);
	c->size = (uint32_t)size;
	c->psize = psize;
	c->per_page = (psize - PAGE_HEAD) / c->size;
	assert(c->per_page <= UINT16_MAX);	/* struct slab_page's next */
	/*
	 * A tiled class's page holds its blocks to within 8 bytes each and
	 * its head: a block costs its size. A class up to SLAB_TILED may
	 * leave a tail up to a block long, and one of a block a page is
	 * the page: there the blocks share it.
	 */
	if (size > SLAB_TILED && c->per_page > 1)
		c->charge = (uint32_t)size;
	else
		c->charge = page_charge(size, psize);
	c->tc_max = TCACHE_BYTES / c->size;
	if (c->tc_max > TCACHE_MAX)
		c->tc_max = TCACHE_MAX;
	if (c->tc_max < 2)
		c->tc_max = 2;
}

/* Whether @c is above the tables: no thread cache (slab_alloc_large()),
 * and its pages' memory goes back to the kernel as they come and go. */
static inline bool class_is_large(const struct slab_class *c)
{
	return c->size > SLAB_TABLE_MAX;
}

/*
 * Up to SLAB_TILED, a class every 8 bytes, each in the page of 16 to 64
 * KiB that costs its blocks least (the page's bytes over its blocks).
 */
static void classes_small(void)
{
	size_t size;
	uint32_t p, best;

	for (size = SLAB_LOW + 8; size <= SLAB_TILED; size += 8) {
		if (jemalloc_class(size) == size)
			continue;
		for (best = p = PAGE_MIN; p <= PAGE_SMALL_MAX; p *= 2)
			if (page_charge(size, p) < page_charge(size, best))
				best = p;
		class_add(size, best);
	}
}

/*
 * Above SLAB_TILED, each doubling (lo, 2 lo] gets the page that holds
 * PAGE_BLOCKS_MIN to twice as many of its blocks, and a class for every
 * count of blocks in that page: (page - head) / n, rounded down to 8.
 * The blocks fill their page to within 8 bytes each (no tail a block's
 * size long), and the classes are at most 1/PAGE_BLOCKS_MIN apart. From
 * PURGE_MIN on, whose idle free blocks go back to the kernel, a page
 * holds twice as many, up to PAGE_MAX: classes twice as fine for no
 * lasting memory.
 */
static void classes_tiled(void)
{
	size_t lo, size, last = 0;
	uint32_t psize, n, blocks;

	for (lo = SLAB_TILED; lo < SLAB_MAX; lo *= 2) {
		blocks = lo >= PURGE_MIN ? 2 * PAGE_BLOCKS_MIN : PAGE_BLOCKS_MIN;
		psize = PAGE_TILED_MIN;
		while (psize < blocks * 2 * lo && psize < PAGE_MAX)
			psize *= 2;
		for (n = (uint32_t)((psize - PAGE_HEAD) / lo); n; n--) {
			size = ((psize - PAGE_HEAD) / n) & ~(size_t)7;
			if (size <= lo || size == last)
				continue;
			if (size > 2 * lo || size > SLAB_MAX)
				break;
			class_add(size, psize);
			last = size;
		}
	}
}

__attribute__((constructor)) static void slab_tables_init(void)
{
	size_t size, g;
	unsigned int i;

	classes_small();
	classes_tiled();
	for (large_first = 0; large_first < nclasses; large_first++)
		if (classes[large_first].size > SLAB_TABLE_MAX)
			break;
	assert(large_first <= TCACHE_CLASSES);
	for (purge_first = 0; purge_first < nclasses; purge_first++)
		if (classes[purge_first].size >= PURGE_MIN)
			break;
	for (g = 0, i = 0; g < GRANULES; g++) {
		size_t jc;

		size = g << SLAB_GRANULE_SHIFT;
		jc = jemalloc_class(size ? size : 1);
		while (i < nclasses && classes[i].size < size)
			i++;
		if (size > SLAB_LOW && i < nclasses && classes[i].charge < jc) {
			slab_granule_class[g] = (uint16_t)(i + 1);
			slab_granule_charge[g] = classes[i].charge;
		} else {
			slab_granule_class[g] = 0;
			slab_granule_charge[g] = (uint32_t)jc;
		}
	}
}

/* The class of a block of @size above SLAB_TABLE_MAX, plus one (0:
 * jemalloc's): a binary search. */
unsigned int slab_class_large(size_t size)
{
	unsigned int lo = large_first, hi = nclasses;

	if (size > SLAB_MAX)
		return 0;
	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;

		if (classes[mid].size < size)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == nclasses)	/* above the largest class */
		return 0;
	return classes[lo].charge < jemalloc_class(size) ? lo + 1 : 0;
}

size_t slab_charge_large(size_t size)
{
	unsigned int ci = slab_class_large(size);

	if (ci)
		return classes[ci - 1].charge;
	return size > SLAB_MAX ? ak_good_size(size) : jemalloc_class(size);
}

/* ---- the pages of a class, under its lock ---- */

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

/*
 * Give the kernel back the memory pages inside @len bytes at @p, free
 * bytes of a class of 8 KiB or more (its blocks are few on their page,
 * and a page with one block in use would otherwise hold the others'
 * memory, outside the limit), or a smaller class's idle wholly free page.
 * A page dropped reads as zeros when used again.
 */
static void purge(void *p, size_t len)
{
	const uintptr_t mask = ~(uintptr_t)(PURGE_PAGE - 1);
	uintptr_t lo = ((uintptr_t)p + PURGE_PAGE - 1) & mask;
	uintptr_t hi = ((uintptr_t)p + len) & mask;

	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* A wholly free page, not yet on the class's list; NULL if out of memory. */
static struct slab_page *page_new(const struct slab_class *c)
{
	struct slab_page *pg = ak_page_alloc(c->psize);

	if (!pg)
		return NULL;
	pg->free = NULL;
	pg->nfree = c->per_page;
	pg->next = 0;
	pg->draining = 0;
	INIT_LIST_HEAD(&pg->node);
	if (class_is_large(c))	/* memory jemalloc had: its blocks may wait */
		purge(page_block(c, pg, 0), (size_t)c->per_page * c->size);
	block_poison(page_block(c, pg, 0), (size_t)c->per_page * c->size);
	return pg;
}

/* Put @pg, new and wholly free, on its class's list. */
static void page_add_locked(struct slab_class *c, struct slab_page *pg)
{
	list_add_tail(&pg->node, &c->partial);
	c->empty++;
	c->pages++;
}

/* Take one free block off @pg, which has one. */
static void *page_take_locked(struct slab_class *c, struct slab_page *pg)
{
	void *p;

	if (pg->nfree == c->per_page)
		c->empty--;
	if (pg->free) {
		uintptr_t w;

		p = pg->free;
		block_unpoison(p, sizeof(void *));
		w = *(uintptr_t *)p;
		if (w & BLOCK_PURGED)
			c->purged--;
		pg->free = (void *)(w & ~(uintptr_t)BLOCK_MARKS);
	} else {
		p = page_block(c, pg, pg->next++);
	}
	if (--pg->nfree == 0)
		list_del_init(&pg->node);
	return p;
}

/* @pg, being emptied, is not any more (still on the drain list). */
static void drain_end_locked(struct slab_class *c, struct slab_page *pg)
{
	c->drain_free -= pg->nfree;
	__atomic_store_n(&pg->draining, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->ndrain, c->ndrain - 1, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&drains, 1, __ATOMIC_RELAXED);
}

/*
 * Put @p back on its page. Return: the page if it is now wholly free and
 * the class already keeps one, unlinked for the caller to free after the
 * lock; NULL otherwise.
 */
static struct slab_page *page_give_locked(struct slab_class *c, void *p)
{
	struct slab_page *pg = block_page(c, p);

#ifdef AK_MALLOC_LIBC
	/* the sanitizer build checks what the release build takes on trust */
	if ((size_t)((char *)p - (char *)page_block(c, pg, 0)) % c->size ||
	    (char *)p >= (char *)page_block(c, pg, pg->next))
		abort();
#endif
	block_unpoison(p, sizeof(void *));
	*(void **)p = pg->free;
	block_poison(p, sizeof(void *));
	pg->free = p;
	pg->nfree++;
	if (unlikely(pg->draining)) {
		c->drain_free++;
		if (pg->nfree == c->per_page) {	/* emptied: wholly free */
			drain_end_locked(c, pg);
			__atomic_fetch_add(&drained, 1, __ATOMIC_RELAXED);
		}
	}
	if (pg->nfree == 1)
		list_add(&pg->node, &c->partial);
	if (pg->nfree < c->per_page)
		return NULL;
	if (c->empty) {
		list_del_init(&pg->node);
		c->pages--;
		return pg;
	}
	c->empty++;
	list_move_tail(&pg->node, &c->partial);
	return NULL;
}

/* ---- the classes above 16 KiB; the idle purge from 8 KiB ---- */

/*
 * The classes above 16 KiB take no thread cache: a block comes from its
 * page and goes back to it. A page holds 63 or fewer of their blocks (of
 * 8 to 16 KiB, 64 to 127), and with values of many sizes at a small limit
 * most of their pages are partly free, outside the limit; so a free block
 * of 8 KiB or more (it holds a whole memory page) that stays free on its
 * page from one slab_purge_idle() to the next gives its memory to the
 * kernel. One that is used again within the second, as where one size
 * churns, costs no system call and no page fault; nor does the wholly
 * free page kept (FIFO eviction empties pages in the order they were
 * filled, so the next page is usually the one just emptied). A second
 * wholly free page goes back to jemalloc, its memory to the kernel first,
 * and a new page from jemalloc gives the kernel what it may hold.
 */
static void *large_alloc(struct slab_class *c)
{
	struct slab_page *pg, *fresh = NULL;
	void *p;

	for (;;) {
		ak_lock_acquire(&c->lock);
		if (fresh)
			page_add_locked(c, fresh);
		if (!list_empty(&c->partial))
			break;
		ak_lock_release(&c->lock);
		fresh = page_new(c);
		if (!fresh)
			return NULL;
	}
	pg = list_first_entry(&c->partial, struct slab_page, node);
	p = page_take_locked(c, pg);
	c->out++;
	ak_lock_release(&c->lock);
	block_unpoison(p, c->size);
	return p;
}

/* Drop @pg's purged blocks from the count, the page leaving, under the
 * lock. */
static void page_leave_locked(struct slab_class *c,
			      const struct slab_page *pg)
{
	uintptr_t w;
	void *b;

	if (!c->purged)
		return;
	for (b = pg->free; b; b = (void *)(w & ~(uintptr_t)BLOCK_MARKS)) {
		block_unpoison(b, sizeof(void *));
		w = *(uintptr_t *)b;
		if (w & BLOCK_PURGED)
			c->purged--;
	}
}

/* Give @pg, wholly free and off its class's list, back to jemalloc; its
 * memory to the kernel first for a class above 16 KiB (jemalloc would
 * keep it dirty until its decay). Not below: their pages come and go
 * with the threads' caches, and each new one would fault page by page. */
static void page_free(const struct slab_class *c, struct slab_page *pg)
{
	if (class_is_large(c))
		purge(page_block(c, pg, 0), (size_t)c->per_page * c->size);
	ak_page_free(pg, c->psize);
}

/* Give @p straight back to its page, not through a thread's cache: a
 * block above 16 KiB, or one on a page being emptied. */
static void block_return(struct slab_class *c, void *p)
{
	struct slab_page *pg;

	ak_lock_acquire(&c->lock);
	pg = page_give_locked(c, p);
	if (pg)
		page_leave_locked(c, pg);
	c->out--;
	ak_lock_release(&c->lock);
	if (pg)
		page_free(c, pg);
}

/* Mark @pg's free blocks seen, and purge those seen before, up to @max,
 * under the lock. Return: the blocks purged. */
static unsigned int page_purge_idle_locked(struct slab_class *c,
					   struct slab_page *pg,
					   unsigned int max)
{
	unsigned int n = 0;
	uintptr_t w;
	void *b;

	for (b = pg->free; b && n < max;
	     b = (void *)(w & ~(uintptr_t)BLOCK_MARKS)) {
		block_unpoison(b, sizeof(void *));
		w = *(uintptr_t *)b;
		if (w & BLOCK_SEEN && !(w & BLOCK_PURGED)) {
			purge((char *)b + sizeof(void *),
			      c->size - sizeof(void *));
			*(uintptr_t *)b = w | BLOCK_PURGED;
			n++;
		} else {
			*(uintptr_t *)b = w | BLOCK_SEEN;
		}
		block_poison(b, sizeof(void *));
	}
	return n;
}

/*
 * Below 8 KiB a free block holds no whole memory page of its own, but a
 * class's wholly free page kept for the next allocation (at most one) may
 * stay unused for long: with values of many sizes, one for each of a
 * hundred classes. Its first free block's link is marked at one call;
 * still wholly free at the next, the page goes back to as it came from
 * jemalloc (no block ever handed out) and its memory to the kernel, but
 * for the memory page that holds its head.
 */
static void page_purge_empty_locked(struct slab_class *c)
{
	struct slab_page *pg;
	uintptr_t w;

	if (!c->empty)
		return;
	pg = list_last_entry(&c->partial, struct slab_page, node);
	if (pg->nfree != c->per_page || !pg->free)
		return;		/* in use, or as it came */
	block_unpoison(pg->free, sizeof(void *));
	w = *(uintptr_t *)pg->free;
	if (!(w & BLOCK_SEEN)) {
		*(uintptr_t *)pg->free = w | BLOCK_SEEN;
		block_poison(pg->free, sizeof(void *));
		return;
	}
	block_poison(pg->free, sizeof(void *));
	pg->free = NULL;
	pg->next = 0;
	purge(page_block(c, pg, 0), (size_t)c->per_page * c->size);
}

/* What a page's draining holds for the slab_purge_idle() call @call:
 * 1..65535, never 0. */
static inline uint16_t drain_tick(unsigned int call)
{
	return (uint16_t)(call % 65535 + 1);
}

/*
 * Empty pages that blocks freed in no order left sparse. The class's
 * free blocks on its partial pages (not the wholly free one it keeps, nor
 * those being emptied) are counted from its totals; while they are more
 * than a page and a quarter, the sparsest of the first DRAIN_LOOK partial
 * pages go onto the drain list, as many as the others' free blocks can
 * take the blocks of (with those of the pages already on it), with a
 * quarter of a page to spare: no block is
 * taken from them, one freed there goes straight back (slab_free_class(),
 * slab_alloc_class()), and the store moves the items they hold to the
 * class's other pages as its walk meets them (slab_draining(),
 * slab_alloc_moved()). Emptied, such a page is a wholly free one, kept or
 * given back as any other. One not emptied after DRAIN_CALLS calls (a
 * reply holds an item there, or a block of it waits in an idle thread's
 * cache) goes back on the list, at its end: the pages not tried come
 * first, and a later call may choose it again.
 */
static void drain_step_locked(struct slab_class *c, unsigned int call)
{
	struct slab_page *cand[DRAIN_LOOK], *pg;
	uint16_t now = drain_tick(call);
	uint64_t spare, room, need;
	unsigned int n = 0, i, k;

	while (!list_empty(&c->drain)) {
		pg = list_first_entry(&c->drain, struct slab_page, node);
		if ((uint16_t)((now - pg->draining + 65535) % 65535) <
		    DRAIN_CALLS)
			break;
		drain_end_locked(c, pg);
		/* last to be chosen again, but before the wholly free page
		 * (page_purge_empty_locked() finds it last) */
		if (c->empty)
			list_move_tail(&pg->node, c->partial.prev);
		else
			list_move_tail(&pg->node, &c->partial);
	}
	spare = c->pages * c->per_page - c->out -
		(uint64_t)c->empty * c->per_page - c->drain_free;
	if (c->per_page < 2 || spare * 4 <= (uint64_t)c->per_page * 5)
		return;
	need = (uint64_t)c->ndrain * c->per_page - c->drain_free;
	list_for_each_entry(pg, &c->partial, node) {
		if (pg->nfree == c->per_page)
			continue;	/* the wholly free one */
		/* by free blocks, the most first (insertion) */
		for (i = n; i && cand[i - 1]->nfree < pg->nfree; i--)
			cand[i] = cand[i - 1];
		cand[i] = pg;
		if (++n == DRAIN_LOOK)
			break;
	}
	room = spare;
	for (k = 0; k < n; k++) {
		pg = cand[k];
		/* the others' free blocks take those in use here, and a
		 * quarter page more */
		if (room - pg->nfree < need + (c->per_page - pg->nfree) +
				       c->per_page / 4)
			break;
		room -= pg->nfree;
		need += c->per_page - pg->nfree;
		c->drain_free += pg->nfree;
		__atomic_store_n(&pg->draining, now, __ATOMIC_RELAXED);
		list_move_tail(&pg->node, &c->drain);
	}
	if (!k)
		return;
	__atomic_store_n(&c->ndrain, c->ndrain + k, __ATOMIC_RELAXED);
	__atomic_fetch_add(&drains, k, __ATOMIC_RELAXED);
}

void slab_purge_idle(void)
{
	unsigned int call = __atomic_fetch_add(&purge_calls, 1,
					       __ATOMIC_RELAXED);
	struct slab_page *pg;
	unsigned int i;

	for (i = 0; i < purge_first; i++) {
		struct slab_class *c = &classes[i];

		ak_lock_acquire(&c->lock);
		page_purge_empty_locked(c);
		drain_step_locked(c, call);
		ak_lock_release(&c->lock);
	}
	for (i = purge_first; i < nclasses; i++) {
		struct slab_class *c = &classes[i];
		unsigned int n = 0;

		ak_lock_acquire(&c->lock);
		list_for_each_entry(pg, &c->partial, node) {
			n += page_purge_idle_locked(c, pg, PURGE_BATCH - n);
			if (n == PURGE_BATCH)
				break;
		}
		c->purged += n;
		drain_step_locked(c, call);
		ak_lock_release(&c->lock);
	}
}

/* ---- the thread caches ---- */

static void tcache_end(void *arg)
{
	(void)arg;
	slab_thread_flush();
}

static void tcache_key_make(void)
{
	if (pthread_key_create(&tcache_key, tcache_end))
		abort();
}

/* Have the thread's end flush its cache. */
static __attribute__((noinline)) void tcache_register(struct tcache *tc)
{
	pthread_once(&tcache_once, tcache_key_make);
	tc->registered = true;
	pthread_setspecific(tcache_key, tc);
}

/* Give the @n oldest blocks of @tc's class @i back to their pages. */
static void tcache_drain(struct tcache *tc, unsigned int i, unsigned int n)
{
	struct slab_class *c = &classes[i];
	struct slab_page *done = NULL, *pg;
	unsigned int k;

	ak_lock_acquire(&c->lock);
	for (k = 0; k < n; k++) {
		pg = page_give_locked(c, tc->blk[i][k]);
		if (pg) {
			page_leave_locked(c, pg);
			pg->free = done;
			done = pg;
		}
	}
	c->out -= n;
	ak_lock_release(&c->lock);
	tc->n[i] = (uint8_t)(tc->n[i] - n);
	memmove(tc->blk[i], tc->blk[i] + n, tc->n[i] * sizeof(void *));
	while (done) {
		pg = done;
		done = pg->free;
		page_free(c, pg);
	}
}

/*
 * Fill @tc's class @i with up to half its bound of free blocks, from the
 * class's pages or a new one, and hand out one. Return: the block, or
 * NULL if no page could be had.
 */
static __attribute__((noinline)) void *tcache_fill(struct tcache *tc,
						   unsigned int i)
{
	struct slab_class *c = &classes[i];
	struct slab_page *fresh = NULL;
	unsigned int want = c->tc_max / 2, got;
	void *p;

	if (unlikely(!tc->registered))
		tcache_register(tc);
	for (;;) {
		ak_lock_acquire(&c->lock);
		if (fresh)
			page_add_locked(c, fresh);
		for (got = 0; got < want && !list_empty(&c->partial); got++)
			tc->blk[i][tc->n[i]++] = page_take_locked(c,
				list_first_entry(&c->partial, struct slab_page,
						 node));
		c->out += got;
		ak_lock_release(&c->lock);
		if (got)
			break;
		fresh = page_new(c);
		if (!fresh)
			return NULL;
	}
	for (got = 0; got < tc->n[i]; got++)	/* all are free and poisoned */
		block_poison(tc->blk[i][got], c->size);
	p = tc->blk[i][--tc->n[i]];
	block_unpoison(p, c->size);
	return p;
}

void slab_thread_flush(void)
{
	struct tcache *tc = &tcache;
	unsigned int i;

	for (i = 0; i < large_first; i++)
		if (tc->n[i])
			tcache_drain(tc, i, tc->n[i]);
	tc->registered = false;
}

/* ---- the interface ---- */

/* Whether @p is on a page of @c being emptied. */
static inline bool block_draining(const struct slab_class *c, const void *p)
{
	return __atomic_load_n(&c->ndrain, __ATOMIC_RELAXED) &&
	       __atomic_load_n(&block_page(c, p)->draining, __ATOMIC_RELAXED);
}

/* Give @p back to its class's page being emptied. */
static __attribute__((noinline)) void drain_give(struct slab_class *c,
						 void *p)
{
	block_poison(p, c->size);
	block_return(c, p);
}

void *slab_alloc_class(unsigned int ci)
{
	struct tcache *tc = &tcache;
	void *p;

	if (unlikely(ak_alloc_refused()))
		return NULL;
	for (;;) {
		if (unlikely(!tc->n[ci]))
			return tcache_fill(tc, ci);
		p = tc->blk[ci][--tc->n[ci]];
		if (likely(!block_draining(&classes[ci], p)))
			break;
		/* cached before its page began to be emptied: back to it */
		drain_give(&classes[ci], p);
	}
	block_unpoison(p, classes[ci].size);
	return p;
}

void slab_free_class(void *p, unsigned int ci)
{
	struct tcache *tc = &tcache;
	struct slab_class *c = &classes[ci];

	if (unlikely(block_draining(c, p))) {
		drain_give(c, p);	/* not to be handed out again */
		return;
	}
	block_poison(p, c->size);
	if (unlikely(tc->n[ci] >= c->tc_max))
		tcache_drain(tc, ci, c->tc_max / 2);
	tc->blk[ci][tc->n[ci]++] = p;
	if (unlikely(!tc->registered))
		tcache_register(tc);
}

unsigned int slab_drains(void)
{
	return __atomic_load_n(&drains, __ATOMIC_RELAXED);
}

bool slab_draining(const void *p, size_t size)
{
	unsigned int ci = slab_class_of(size);

	return ci && block_draining(&classes[ci - 1], p);
}

void *slab_alloc_moved(size_t size)
{
	unsigned int ci = slab_class_of(size);
	struct slab_class *c;
	struct slab_page *pg;
	void *p = NULL;

	if (!ci)
		return NULL;
	c = &classes[ci - 1];
	ak_lock_acquire(&c->lock);
	if (!list_empty(&c->partial)) {
		pg = list_first_entry(&c->partial, struct slab_page, node);
		if (pg->nfree < c->per_page) {	/* not the wholly free */
			p = page_take_locked(c, pg);
			c->out++;
		}
	}
	ak_lock_release(&c->lock);
	if (p) {
		block_unpoison(p, c->size);
		__atomic_fetch_add(&drain_moves, 1, __ATOMIC_RELAXED);
	}
	return p;
}

void *slab_alloc_large(size_t size)
{
	unsigned int ci = slab_class_large(size);

	if (!ci)
		return ak_malloc(size);
	if (unlikely(ak_alloc_refused()))
		return NULL;
	return large_alloc(&classes[ci - 1]);
}

void slab_free_large(void *p, size_t size)
{
	unsigned int ci = slab_class_large(size);

	if (!ci)
		ak_free_sized(p, size);
	else if (p)
		block_return(&classes[ci - 1], p);
}

void slab_get_stats(struct slab_stats *st)
{
	unsigned int i;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < nclasses; i++) {
		struct slab_class *c = &classes[i];

		ak_lock_acquire(&c->lock);
		st->pages += c->pages;
		st->page_bytes += c->pages * c->psize;
		st->blocks += c->out;
		st->block_bytes += c->out * c->charge;
		st->purged_bytes += c->purged * c->size;
		ak_lock_release(&c->lock);
	}
	st->drained_pages = __atomic_load_n(&drained, __ATOMIC_RELAXED);
	st->moved_blocks = __atomic_load_n(&drain_moves, __ATOMIC_RELAXED);
}
