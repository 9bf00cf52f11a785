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
 * pages it frees are handed to jemalloc after it is released. The
 * clock's purge and the emptying of sparse pages are slab_purge.c's; the
 * records both files share, slab_page.h's.
 */
#include "slab.h"
#include "slab_page.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "compiler.h"
#include "list.h"
#include "lock.h"

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
#define TCACHE_BYTES		8192	/* a thread's free blocks of a class */
#define TCACHE_MAX		16
#define TCACHE_CLASSES		256	/* the classes up to SLAB_TABLE_MAX,
					 * at most (256) */

struct tcache {			/* of the classes up to SLAB_TABLE_MAX */
	void *blk[TCACHE_CLASSES][TCACHE_MAX];
	uint8_t n[TCACHE_CLASSES];
	bool registered;	/* the thread's end will flush it */
};

struct slab_class slab_classes[SLAB_CLASSES_MAX];
unsigned int slab_nclasses;
unsigned int slab_purge_first;
unsigned int slab_drain_pages;
uint64_t slab_drained;
static uint64_t drain_moves;		/* atomic: blocks moved off them */
static unsigned int large_first;	/* the first class above the tables */
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

	assert(slab_nclasses < SLAB_CLASSES_MAX);
	c = &slab_classes[slab_nclasses++];
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
	for (large_first = 0; large_first < slab_nclasses; large_first++)
		if (slab_classes[large_first].size > SLAB_TABLE_MAX)
			break;
	assert(large_first <= TCACHE_CLASSES);
	for (slab_purge_first = 0; slab_purge_first < slab_nclasses;
	     slab_purge_first++)
		if (slab_classes[slab_purge_first].size >= PURGE_MIN)
			break;
	for (g = 0, i = 0; g < GRANULES; g++) {
		size_t jc;

		size = g << SLAB_GRANULE_SHIFT;
		jc = jemalloc_class(size ? size : 1);
		while (i < slab_nclasses && slab_classes[i].size < size)
			i++;
		if (size > SLAB_LOW && i < slab_nclasses && slab_classes[i].charge < jc) {
			slab_granule_class[g] = (uint16_t)(i + 1);
			slab_granule_charge[g] = slab_classes[i].charge;
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
	unsigned int lo = large_first, hi = slab_nclasses;

	if (size > SLAB_MAX)
		return 0;
	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;

		if (slab_classes[mid].size < size)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == slab_nclasses)	/* above the largest class */
		return 0;
	return slab_classes[lo].charge < jemalloc_class(size) ? lo + 1 : 0;
}

size_t slab_charge_large(size_t size)
{
	unsigned int ci = slab_class_large(size);

	if (ci)
		return slab_classes[ci - 1].charge;
	return size > SLAB_MAX ? ak_good_size(size) : jemalloc_class(size);
}

/* ---- the pages of a class, under its lock ---- */

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
		slab_mem_purge(page_block(c, pg, 0),
			       (size_t)c->per_page * c->size);
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
			__atomic_fetch_add(&slab_drained, 1, __ATOMIC_RELAXED);
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

/* ---- the classes above 16 KiB (their idle purge: slab_purge.c) ---- */

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
		slab_mem_purge(page_block(c, pg, 0),
			       (size_t)c->per_page * c->size);
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
	struct slab_class *c = &slab_classes[i];
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
	struct slab_class *c = &slab_classes[i];
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
		if (likely(!block_draining(&slab_classes[ci], p)))
			break;
		/* cached before its page began to be emptied: back to it */
		drain_give(&slab_classes[ci], p);
	}
	block_unpoison(p, slab_classes[ci].size);
	return p;
}

void slab_free_class(void *p, unsigned int ci)
{
	struct tcache *tc = &tcache;
	struct slab_class *c = &slab_classes[ci];

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

bool slab_draining(const void *p, size_t size)
{
	unsigned int ci = slab_class_of(size);

	return ci && block_draining(&slab_classes[ci - 1], p);
}

void *slab_alloc_moved(size_t size)
{
	unsigned int ci = slab_class_of(size);
	struct slab_class *c;
	struct slab_page *pg;
	void *p = NULL;

	if (!ci)
		return NULL;
	c = &slab_classes[ci - 1];
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
	return large_alloc(&slab_classes[ci - 1]);
}

void slab_free_large(void *p, size_t size)
{
	unsigned int ci = slab_class_large(size);

	if (!ci)
		ak_free_sized(p, size);
	else if (p)
		block_return(&slab_classes[ci - 1], p);
}

void slab_get_stats(struct slab_stats *st)
{
	unsigned int i;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < slab_nclasses; i++) {
		struct slab_class *c = &slab_classes[i];

		ak_lock_acquire(&c->lock);
		st->pages += c->pages;
		st->page_bytes += c->pages * c->psize;
		st->blocks += c->out;
		st->block_bytes += c->out * c->charge;
		st->purged_bytes += c->purged * c->size;
		ak_lock_release(&c->lock);
	}
	st->drained_pages = __atomic_load_n(&slab_drained, __ATOMIC_RELAXED);
	st->moved_blocks = __atomic_load_n(&drain_moves, __ATOMIC_RELAXED);
}
