// SPDX-License-Identifier: MIT
/*
 * slab_purge.c - what the server's clock does to the slab classes: once a
 * second (slab_purge_idle()) free blocks of 8 KiB and up idle since the
 * last call give their memory back to the kernel, and ten times a second
 * (slab_drain_step()) so do idle wholly free pages, and pages that frees
 * left sparse are named to empty (their items moved by the store's walk).
 *
 * Lock order: each class's lock in turn, a leaf (see slab.c).
 */
#include "slab.h"
#include "slab_page.h"

#include "compiler.h"
#include "list.h"
#include "lock.h"

#define PURGE_BATCH		32	/* blocks purged a class a call, under
					 * its lock: the rest at the next */
#define DRAIN_LOOK		256	/* partial pages looked at for the
					 * sparsest to empty */
#define DRAIN_CALLS		8	/* slab_purge_idle() and
					 * slab_drain_step() calls a page may
					 * take to empty before it is let be */

static unsigned int drain_calls;	/* atomic: slab_purge_idle() and
					 * slab_drain_step() calls */

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
			slab_mem_purge((char *)b + sizeof(void *),
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
 * Return: whether it marked or gave back a page.
 */
static bool page_purge_empty_locked(struct slab_class *c)
{
	struct slab_page *pg;
	uintptr_t w;

	if (!c->empty)
		return false;
	pg = list_last_entry(&c->partial, struct slab_page, node);
	if (pg->nfree != c->per_page || !pg->free)
		return false;	/* in use, or as it came */
	block_unpoison(pg->free, sizeof(void *));
	w = *(uintptr_t *)pg->free;
	if (!(w & BLOCK_SEEN)) {
		*(uintptr_t *)pg->free = w | BLOCK_SEEN;
		block_poison(pg->free, sizeof(void *));
		return true;
	}
	block_poison(pg->free, sizeof(void *));
	pg->free = NULL;
	pg->next = 0;
	slab_mem_purge(page_block(c, pg, 0), (size_t)c->per_page * c->size);
	return true;
}

/* What a page's draining holds for the call @call:
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
 * Return: whether it named a page.
 */
static bool drain_step_locked(struct slab_class *c, unsigned int call)
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
		return false;
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
		return false;
	__atomic_store_n(&c->ndrain, c->ndrain + k, __ATOMIC_RELAXED);
	__atomic_fetch_add(&slab_drain_pages, k, __ATOMIC_RELAXED);
	return true;
}

void slab_purge_idle(void)
{
	struct slab_page *pg;
	unsigned int i;

	for (i = slab_purge_first; i < slab_nclasses; i++) {
		struct slab_class *c = &slab_classes[i];
		unsigned int n = 0;

		ak_lock_acquire(&c->lock);
		list_for_each_entry(pg, &c->partial, node) {
			n += page_purge_idle_locked(c, pg, PURGE_BATCH - n);
			if (n == PURGE_BATCH)
				break;
		}
		c->purged += n;
		ak_lock_release(&c->lock);
	}
	slab_drain_step();	/* the pages' part, as between the calls */
}

bool slab_drain_step(void)
{
	unsigned int call = __atomic_fetch_add(&drain_calls, 1,
					       __ATOMIC_RELAXED);
	unsigned int i;
	bool busy = false;

	for (i = 0; i < slab_nclasses; i++) {
		struct slab_class *c = &slab_classes[i];

		ak_lock_acquire(&c->lock);
		if (i < slab_purge_first)
			busy |= page_purge_empty_locked(c);
		busy |= drain_step_locked(c, call);
		ak_lock_release(&c->lock);
	}
	return busy;
}

unsigned int slab_drains(void)
{
	return __atomic_load_n(&slab_drain_pages, __ATOMIC_RELAXED);
}
