// SPDX-License-Identifier: MIT
/*
 * test_slab.c - core/slab.h: what a block costs, and the blocks themselves.
 *
 * Built twice, as test_alloc is: with the sanitizers (the C library's
 * malloc under the pages; ASan sees a block used after its free while it
 * waits in a cache or on its page) and as test_slab_jemalloc against the
 * release objects, where the charge of every size a slab class does not
 * serve must be jemalloc's own class (nallocx()), and never more.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "check.h"
#include "slab.h"

/* A block's share of a 1 MiB page (its 32-byte head off) holding as
 * many blocks of @size, rounded up to 8, as fit. */
static size_t page_share(size_t size)
{
	size_t per = ((1u << 20) - 32) / ((size + 7) & ~(size_t)7);

	return ((1u << 20) + per - 1) / per;
}

/* The blocks of @size a 1 MiB page holds (its 32-byte head off). */
static size_t per_page(size_t size)
{
	return ((1u << 20) - 32) / ((size + 7) & ~(size_t)7);
}

/* The block of the class that tiles a 1 MiB page with as many blocks of
 * @size as fit: what it costs. */
static size_t page_block(size_t size)
{
	return ((1u << 20) - 32) / per_page(size) & ~(size_t)7;
}

/* Purge until nothing more goes: what earlier tests left free. */
static void purge_settle(void)
{
	struct slab_stats st;
	uint64_t last = UINT64_MAX;
	unsigned int calls;

	for (calls = 0; calls < 1024; calls++) {
		slab_purge_idle();
		slab_get_stats(&st);
		if (st.purged_bytes == last)
			break;
		last = st.purged_bytes;
	}
}

static void test_charge_is_never_above_jemalloc(void)
{
	bool jemalloc = !strcmp(ak_alloc_name(), "jemalloc");
	unsigned long bad = 0, below = 0, finer = 0, coarse = 0;
	size_t size, prev = 0, first_coarse = 0;

	for (size = 1; size <= SLAB_MAX + 5000; size++) {
		size_t ch = slab_charge(size);

		/* above SLAB_MAX the allocator's own class: the C
		 * library's may be below the largest slab class's */
		if (ch < size || (ch < prev && size <= SLAB_MAX))
			below++;
		prev = ch;
		if (jemalloc && ch > ak_good_size(size))
			bad++;
		/* the classes above 512 are at most 1/32 of a block apart
		 * and tile their pages to within 8 bytes a block, the
		 * page's 32-byte head shared by at least 32 blocks; above
		 * 16 KiB a block costs no more than its share of a 1 MiB
		 * page holding as many as fit */
		if (size > 512 && size <= SLAB_TABLE_MAX - 8 &&
		    ch > size + size / 32 + 8 + 1 && !coarse++)
			first_coarse = size;
		if (size > SLAB_TABLE_MAX && size <= SLAB_MAX &&
		    ch > page_share(size) && !coarse++)
			first_coarse = size;
		if (jemalloc && ch < ak_good_size(size))
			finer++;
	}
	CHECK_MSG(!below, "%lu sizes charged below their size or a smaller "
		  "size", below);
	CHECK_MSG(!bad, "%lu sizes charged above jemalloc's class", bad);
	CHECK_MSG(!coarse, "%lu sizes above 512 charged over 1/32 more, or "
		  "over their share of a 1 MiB page (first %zu)", coarse,
		  first_coarse);
	if (jemalloc)
		CHECK_MSG(finer > SLAB_MAX / 8, "only %lu sizes cheaper than "
			  "jemalloc", finer);
	/* the string item of a 10-byte key and 100 bytes of value, 172
	 * bytes (176 with client flags) */
	CHECK(slab_charge(172) < 192);
	CHECK(slab_charge(176) < 192);
	CHECK(slab_charge(176) <= 180);
	/* memtier's default: a 15-byte key and 32 bytes of value, 109
	 * bytes (113 with flags), which jemalloc rounds to 112 (128) and
	 * memcached to its class of 120 */
	CHECK(slab_charge(109) <= 113);
	CHECK(slab_charge(113) < 128);
	CHECK(slab_charge(113) <= 121);
	CHECK(slab_charge(100) <= 105);
	/* a 10-byte key and 300 bytes of value, 376 bytes: no more than
	 * memcached's class of 384 */
	CHECK(slab_charge(376) <= 378);
	/* a 10-byte key and 1,100 bytes of value, 1,162: memcached's class
	 * is 1,184; a class of 1,168, 56 blocks tiling a 64 KiB page, what
	 * a block costs */
	CHECK(slab_charge(1162) == 1168);
	/* a 12-byte key and 8,800 bytes of value, 8,864: jemalloc's class
	 * is 10,240 and memcached's 8,880 (8,887 with its share of a 1 MB
	 * page); a class of 8,880, 118 blocks in a 1 MiB page */
	CHECK(slab_charge(8864) == 8880);
	CHECK(slab_charge(8864) == page_block(8864));
	/* a 10-byte key and 10,996 and 13,809 bytes of value: memcached's
	 * classes of 11,104 and 13,880 hold 94 and 75 a 1 MB page; here
	 * as many a MiB */
	CHECK(per_page(slab_charge(10996 + 58)) >= 94);
	CHECK(per_page(slab_charge(13809 + 58)) >= 75);
	/* a 12-byte key and 1,409 bytes of value, 1,473: memcached's class
	 * of 1,480 fits it exactly; within a class step of it */
	CHECK(slab_charge(1473) <= 1480 + 1480 / 32);
	/* sizes jemalloc serves at no loss stay with it */
	CHECK(slab_charge(160) == 160);
	CHECK(slab_charge(96) == 96);
	CHECK(slab_charge(64) == 64);
	CHECK(slab_charge(SLAB_MAX + 1) == ak_good_size(SLAB_MAX + 1));
	/* values of 16 KiB, 32 KiB, 64 KiB and 100,000 bytes (10-byte
	 * keys): memcached's classes of 17,352, 33,904, 66,232 and 103,496
	 * hold 60, 30, 15 and 10 in its 1 MB page, jemalloc's of 20, 40,
	 * 80 and 112 KiB 51, 25, 12 and 9 a MiB; here 63, 31, 15 and 10 */
	CHECK(slab_charge(16384 + 58) == page_block(16384 + 58));
	CHECK(slab_charge(16384 + 58) <= (1u << 20) / 63 + 1);
	CHECK(slab_charge(32768 + 58) <= (1u << 20) / 31 + 1);
	CHECK(slab_charge(65536 + 58) <= (1u << 20) / 15 + 1);
	CHECK(slab_charge(100000 + 58) <= (1u << 20) / 10 + 1);
	/* above the largest class (1 MiB less the page head): jemalloc */
	CHECK(slab_class_of(SLAB_MAX + 1) == 0);
	CHECK(slab_class_of(SLAB_MAX) == 0);
	CHECK(slab_charge(SLAB_MAX) == 1u << 20);
}

#define BLOCKS	20000

struct blk {
	unsigned char *p;
	size_t size;
};

static struct blk blks[BLOCKS];

static size_t size_of(unsigned int i)
{
	return 65 + (i * 2654435761u) % (SLAB_TABLE_MAX + 600);
}

static void test_blocks_hold_their_bytes(void)
{
	struct slab_stats st;
	unsigned long bad = 0, misaligned = 0;
	unsigned int i;
	size_t k;

	for (i = 0; i < BLOCKS; i++) {
		blks[i].size = size_of(i);
		blks[i].p = slab_alloc(blks[i].size);
		CHECK(blks[i].p);
		if (!blks[i].p)
			return;
		if ((uintptr_t)blks[i].p & 7)	/* struct item's alignment */
			misaligned++;
		memset(blks[i].p, (int)(i & 0xff), blks[i].size);
	}
	slab_get_stats(&st);
	CHECK(st.pages > 0);
	CHECK(st.blocks > 0 && st.blocks <= BLOCKS);
	CHECK(st.page_bytes >= st.block_bytes);
	/* free every other one, allocate them again, check everybody */
	for (i = 0; i < BLOCKS; i += 2)
		slab_free(blks[i].p, blks[i].size);
	for (i = 0; i < BLOCKS; i += 2) {
		blks[i].p = slab_alloc(blks[i].size);
		CHECK(blks[i].p);
		if (!blks[i].p)
			return;
		memset(blks[i].p, (int)(i & 0xff), blks[i].size);
	}
	for (i = 0; i < BLOCKS; i++)
		for (k = 0; k < blks[i].size; k++)
			if (blks[i].p[k] != (unsigned char)(i & 0xff)) {
				bad++;
				break;
			}
	CHECK_MSG(!bad, "%lu blocks overwritten", bad);
	CHECK(!misaligned);
	for (i = 0; i < BLOCKS; i++)
		slab_free(blks[i].p, blks[i].size);
	slab_thread_flush();
	slab_get_stats(&st);
	CHECK_MSG(st.blocks == 0, "%llu blocks still out",
		  (unsigned long long)st.blocks);
	/* what stays is at most one wholly free page a class */
	CHECK_MSG(st.pages <= SLAB_CLASSES_MAX, "%llu pages kept",
		  (unsigned long long)st.pages);
}

static void test_free_pages_go_back(void)
{
	struct slab_stats before, full, after;
	unsigned int i;

	slab_get_stats(&before);
	for (i = 0; i < BLOCKS; i++) {
		blks[i].size = 176;
		blks[i].p = slab_alloc(176);
		CHECK(blks[i].p);
		if (!blks[i].p)
			return;
	}
	slab_get_stats(&full);
	CHECK_MSG(full.page_bytes >= BLOCKS * 176, "%llu page bytes hold "
		  "%d blocks of 176", (unsigned long long)full.page_bytes,
		  BLOCKS);
	/* the charge covers what the pages take */
	CHECK(full.page_bytes - before.page_bytes <=
	      (uint64_t)BLOCKS * slab_charge(176) + 65536);
	for (i = 0; i < BLOCKS; i++)
		slab_free(blks[i].p, 176);
	slab_thread_flush();
	slab_get_stats(&after);
	CHECK(after.pages <= before.pages + 1);
	CHECK(after.blocks == 0);
}

/* Blocks of the classes above 16 KiB: no thread cache, a page kept. */
#define LARGE	96

static void test_large_blocks_go_back_to_their_pages(void)
{
	struct slab_stats before, full, after;
	unsigned long bad = 0, served = 0;
	unsigned int i;
	size_t k;

	slab_thread_flush();
	slab_get_stats(&before);
	for (i = 0; i < LARGE; i++) {
		blks[i].size = SLAB_TABLE_MAX + 1 +
			       (i * 2654435761u) % (131072 - SLAB_TABLE_MAX);
		if (i < 4)
			blks[i].size = SLAB_MAX - i * 120000;
		served += slab_class_of(blks[i].size) != 0;
		blks[i].p = slab_alloc(blks[i].size);
		CHECK(blks[i].p);
		if (!blks[i].p)
			return;
		memset(blks[i].p, (int)(i & 0xff), blks[i].size);
	}
	slab_get_stats(&full);
	/* jemalloc's classes, four a doubling, are the cheaper for about
	 * half the sizes above 64 KiB, where a 1 MiB page holds 15 blocks
	 * or fewer, and for all of them above 512 KiB */
	CHECK_MSG(served > LARGE / 2, "%lu of %d served", served, LARGE);
	CHECK(full.blocks - before.blocks == served);
	CHECK(full.page_bytes - before.page_bytes >= full.block_bytes -
	      before.block_bytes);
	for (i = 0; i < LARGE; i++)
		for (k = 0; k < blks[i].size; k += 97)
			if (blks[i].p[k] != (unsigned char)(i & 0xff)) {
				bad++;
				break;
			}
	CHECK_MSG(!bad, "%lu large blocks overwritten", bad);
	for (i = 0; i < LARGE; i++)
		slab_free(blks[i].p, blks[i].size);
	slab_get_stats(&after);	/* no flush: nothing waits in a cache */
	CHECK_MSG(after.blocks == before.blocks, "%llu large blocks out",
		  (unsigned long long)(after.blocks - before.blocks));
	/* a wholly free page kept a class, at most */
	CHECK_MSG(after.pages - before.pages <= served, "%llu pages kept",
		  (unsigned long long)(after.pages - before.pages));
	/* idle, the kept pages' blocks give their memory back */
	slab_purge_idle();
	slab_purge_idle();
	slab_get_stats(&after);
	CHECK(after.pages == before.pages || after.purged_bytes > 0);
}

/* Allocate blks[i] of @size for i from @from below @n by @step, filled
 * with @byte. Return: false if one was refused. */
static bool blocks_fill(unsigned int from, unsigned int n, unsigned int step,
			size_t size, int byte)
{
	unsigned int i;

	for (i = from; i < n; i += step) {
		blks[i].p = slab_alloc(size);
		CHECK(blks[i].p);
		if (!blks[i].p)
			return false;
		memset(blks[i].p, byte, size);
	}
	return true;
}

/* The blocks of blks[] below @n whose bytes are not @odd or @even, as
 * their index is. */
static unsigned long blocks_bad(unsigned int n, size_t size, int odd,
				int even)
{
	unsigned long bad = 0;
	unsigned int i;
	size_t k;

	for (i = 0; i < n; i++)
		for (k = 0; k < size; k += 61)
			if (blks[i].p[k] != (unsigned char)(i % 2 ? odd :
							    even)) {
				bad++;
				break;
			}
	return bad;
}

/* Free blocks above 16 KiB idle from one slab_purge_idle() to the next
 * give their memory back; used again, they hold what is written. */
#define IDLE	40
#define IDLE_SIZE	40000

static void test_idle_large_blocks_leave_memory(void)
{
	struct slab_stats before, st;
	unsigned long bad = 0;
	unsigned int i, freed = 0;
	size_t charge = slab_charge(IDLE_SIZE);

	/* what earlier tests left free is purged first: 32 blocks a class
	 * a call */
	purge_settle();
	slab_get_stats(&before);
	if (!blocks_fill(0, IDLE, 1, IDLE_SIZE, 0x33))
		return;
	for (i = 0; i < IDLE; i += 2, freed++)
		slab_free(blks[i].p, IDLE_SIZE);
	/* ten times a second, the drain step leaves them be */
	slab_drain_step();
	slab_drain_step();
	slab_get_stats(&st);
	st.purged_bytes -= before.purged_bytes;
	CHECK_MSG(st.purged_bytes == 0, "%llu bytes purged by drain steps",
		  (unsigned long long)st.purged_bytes);
	slab_purge_idle();	/* marks them */
	slab_get_stats(&st);
	st.purged_bytes -= before.purged_bytes;
	CHECK_MSG(st.purged_bytes == 0, "%llu bytes purged at once",
		  (unsigned long long)st.purged_bytes);
	slab_purge_idle();	/* still free: purged */
	slab_get_stats(&st);
	st.purged_bytes -= before.purged_bytes;
	CHECK_MSG(st.purged_bytes / (charge - charge % 8) <= freed &&
		  st.purged_bytes >= (uint64_t)freed * (IDLE_SIZE - 8),
		  "%llu bytes purged of %u blocks of %zu",
		  (unsigned long long)st.purged_bytes, freed, charge);
	if (!blocks_fill(0, IDLE, 2, IDLE_SIZE, 0x44))
		return;
	slab_get_stats(&st);
	st.purged_bytes -= before.purged_bytes;
	CHECK_MSG(st.purged_bytes == 0, "%llu bytes still purged",
		  (unsigned long long)st.purged_bytes);
	bad = blocks_bad(IDLE, IDLE_SIZE, 0x33, 0x44);
	CHECK_MSG(!bad, "%lu blocks lost their bytes", bad);
	/* free again, purged, then the pages leave with their marks but
	 * one, kept wholly free, whose blocks are purged when idle */
	for (i = 0; i < IDLE; i += 2)
		slab_free(blks[i].p, IDLE_SIZE);
	slab_purge_idle();
	slab_purge_idle();
	for (i = 1; i < IDLE; i += 2)
		slab_free(blks[i].p, IDLE_SIZE);
	slab_get_stats(&st);
	CHECK(st.pages == before.pages + 1);
	CHECK(st.blocks == before.blocks);
	CHECK(st.purged_bytes - before.purged_bytes <
	      (uint64_t)IDLE * IDLE_SIZE);
	slab_purge_idle();
	slab_purge_idle();
	slab_get_stats(&st);
	st.purged_bytes -= before.purged_bytes;
	CHECK_MSG(st.purged_bytes >= (uint64_t)per_page(IDLE_SIZE) *
		  IDLE_SIZE, "%llu bytes of the kept page purged",
		  (unsigned long long)st.purged_bytes);
}

/* The same from 8 KiB, where the blocks pass through the thread's cache:
 * those back on their page are purged when idle. */
#define CACHED	30
#define CACHED_SIZE	12000

static void test_idle_cached_blocks_leave_memory(void)
{
	struct slab_stats mid, st, purged;
	unsigned long bad = 0;
	unsigned int i;

	if (!blocks_fill(0, CACHED, 1, CACHED_SIZE, 0x55))
		return;
	/* what earlier tests left free is purged first */
	purge_settle();
	slab_get_stats(&mid);
	for (i = 0; i < CACHED; i += 2)
		slab_free(blks[i].p, CACHED_SIZE);
	slab_thread_flush();	/* to their page */
	slab_purge_idle();
	slab_get_stats(&st);
	CHECK(st.purged_bytes == mid.purged_bytes);
	slab_purge_idle();
	slab_get_stats(&purged);
	CHECK_MSG(purged.purged_bytes - mid.purged_bytes >=
		  (uint64_t)CACHED / 2 * CACHED_SIZE, "%llu bytes purged",
		  (unsigned long long)(purged.purged_bytes -
				       mid.purged_bytes));
	if (!blocks_fill(0, CACHED, 2, CACHED_SIZE, 0x66))
		return;
	slab_get_stats(&st);	/* purged blocks were taken again */
	CHECK(st.purged_bytes < purged.purged_bytes);
	bad = blocks_bad(CACHED, CACHED_SIZE, 0x55, 0x66);
	CHECK_MSG(!bad, "%lu blocks lost their bytes", bad);
	for (i = 0; i < CACHED; i++)
		slab_free(blks[i].p, CACHED_SIZE);
	slab_thread_flush();
}

static void test_injected_failure_refuses_a_block(void)
{
	void *p;

	ak_alloc_fail_after(0);
	p = slab_alloc(176);
	CHECK(!p);
	p = slab_alloc(176);
	CHECK(p);
	slab_free(p, 176);
	slab_free(NULL, 176);
	ak_alloc_fail_after(-1);
}

/* Blocks allocated on one thread and freed on another, both ways. */
#define ROUNDS		200
#define PER_ROUND	256

struct handoff {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	void *blocks[PER_ROUND];
	int full;		/* 1: blocks wait for the consumer */
	int done;
};

static void *consumer(void *arg)
{
	struct handoff *h = arg;
	unsigned int r, i;

	for (r = 0; r < ROUNDS; r++) {
		pthread_mutex_lock(&h->mu);
		while (!h->full)
			pthread_cond_wait(&h->cv, &h->mu);
		for (i = 0; i < PER_ROUND; i++)
			slab_free(h->blocks[i], size_of(i));
		h->full = 0;
		pthread_cond_signal(&h->cv);
		pthread_mutex_unlock(&h->mu);
	}
	/* and some of its own, cached when it ends */
	for (i = 0; i < PER_ROUND; i++)
		h->blocks[i] = slab_alloc(size_of(i));
	for (i = 0; i < PER_ROUND; i++)
		slab_free(h->blocks[i], size_of(i));
	return NULL;
}

static void test_threads_hand_blocks_over(void)
{
	struct handoff h = { .mu = PTHREAD_MUTEX_INITIALIZER,
			     .cv = PTHREAD_COND_INITIALIZER };
	struct slab_stats st;
	pthread_t t;
	unsigned int r, i;

	slab_thread_flush();
	CHECK(!pthread_create(&t, NULL, consumer, &h));
	for (r = 0; r < ROUNDS; r++) {
		pthread_mutex_lock(&h.mu);
		while (h.full)
			pthread_cond_wait(&h.cv, &h.mu);
		for (i = 0; i < PER_ROUND; i++) {
			h.blocks[i] = slab_alloc(size_of(i));
			memset(h.blocks[i], 0x5a, size_of(i));
		}
		h.full = 1;
		pthread_cond_signal(&h.cv);
		pthread_mutex_unlock(&h.mu);
	}
	CHECK(!pthread_join(t, NULL));
	slab_thread_flush();
	slab_get_stats(&st);
	CHECK_MSG(st.blocks == 0, "%llu blocks still out after both threads "
		  "flushed", (unsigned long long)st.blocks);
}

/*
 * Threads taking and giving back blocks above 16 KiB of four sizes (so
 * that blocks in use and free ones share pages), each checking the bytes
 * it wrote, while another purges the idle ones over and over: the purge
 * must touch the free blocks only, and writes its marks into them under
 * the class lock (ThreadSanitizer sees the order in test_slab_tsan).
 */
#define CHURNERS	2
#define CHURN_ROUNDS	300
#define CHURN_BLOCKS	24

static int churn_done;

static size_t churn_size(unsigned int i)
{
	return SLAB_TABLE_MAX + 1 + (i % 4) * 23456;
}

static void *churner(void *arg)
{
	unsigned int t = (unsigned int)(uintptr_t)arg, r, i;
	unsigned char *b[CHURN_BLOCKS] = { NULL }, fill[CHURN_BLOCKS];
	unsigned long bad = 0;
	size_t k;

	for (r = 0; r < CHURN_ROUNDS; r++) {
		/* every other slot changes hands each round: a block freed
		 * stays free a round, long enough to be purged */
		for (i = (r + t) % 2; i < CHURN_BLOCKS; i += 2) {
			if (b[i]) {
				for (k = 0; k < churn_size(i); k += 509)
					if (b[i][k] != fill[i]) {
						bad++;
						break;
					}
				slab_free(b[i], churn_size(i));
				b[i] = NULL;
				continue;
			}
			b[i] = slab_alloc(churn_size(i));
			if (!b[i]) {
				bad++;
				continue;
			}
			fill[i] = (unsigned char)(r + i + 1);
			memset(b[i], fill[i], churn_size(i));
		}
		nanosleep(&(struct timespec){ .tv_nsec = 200000 }, NULL);
	}
	for (i = 0; i < CHURN_BLOCKS; i++)
		slab_free(b[i], churn_size(i));
	__atomic_add_fetch(&churn_done, 1, __ATOMIC_RELEASE);
	return (void *)bad;
}

static void test_purge_beside_churning_threads(void)
{
	pthread_t t[CHURNERS];
	struct slab_stats st;
	unsigned long bad = 0;
	unsigned int i;
	void *ret;

	for (i = 0; i < CHURNERS; i++)
		CHECK(!pthread_create(&t[i], NULL, churner,
				      (void *)(uintptr_t)i));
	while (__atomic_load_n(&churn_done, __ATOMIC_ACQUIRE) < CHURNERS)
		slab_purge_idle();
	for (i = 0; i < CHURNERS; i++) {
		CHECK(!pthread_join(t[i], &ret));
		bad += (unsigned long)(uintptr_t)ret;
	}
	CHECK_MSG(!bad, "%lu blocks lost their bytes or were refused", bad);
	slab_get_stats(&st);
	CHECK(st.page_bytes >= st.purged_bytes);
}

/*
 * A class below 8 KiB keeps its wholly free page; idle from one
 * slab_purge_idle() or slab_drain_step() to the next, its memory goes
 * back to the kernel but for the memory page of its head, and its blocks
 * are handed out again from the start. Run first: the class has no other
 * page then (and after the first run, only that one).
 */
#define EMPTY_SIZE	3000		/* 43 blocks of 3,040 a 128 KiB page */
#define EMPTY_BLOCKS	3		/* the third lies past 8 KiB */

static void idle_empty_page_leaves_memory(void (*tick)(void))
{
	/* the page's first blocks, as the first run had them new */
	static unsigned char *first[EMPTY_BLOCKS];
	unsigned char *b[EMPTY_BLOCKS], *again[EMPTY_BLOCKS];
	unsigned long bad = 0;
	uintptr_t page;
	unsigned int i;
	size_t k;

	for (i = 0; i < EMPTY_BLOCKS; i++) {
		b[i] = slab_alloc(EMPTY_SIZE);
		CHECK(b[i]);
		if (!b[i])
			return;
		memset(b[i], 0x5a, EMPTY_SIZE);
		if (!first[EMPTY_BLOCKS - 1])
			first[i] = b[i];
	}
	for (i = 0; i < EMPTY_BLOCKS; i++)
		slab_free(b[i], EMPTY_SIZE);
	slab_thread_flush();		/* to their page, wholly free, kept */
	tick();				/* marks it */
	tick();				/* still free: purged */
	for (i = 0; i < EMPTY_BLOCKS; i++) {
		again[i] = slab_alloc(EMPTY_SIZE);
		CHECK(again[i]);
		if (!again[i])
			return;
	}
	/* the page's blocks from the first, as a new page's */
	page = (uintptr_t)again[0] - 32;
	CHECK_MSG(page % 4096 == 0 && again[0] == first[0] &&
		  again[EMPTY_BLOCKS - 1] == first[EMPTY_BLOCKS - 1],
		  "blocks at %p and %p, new %p", (void *)again[0],
		  (void *)again[EMPTY_BLOCKS - 1], (void *)first[0]);
	/* the memory pages past the head's read as zeros */
	for (i = 0; i < EMPTY_BLOCKS; i++)
		for (k = 0; k < EMPTY_SIZE; k++)
			if ((uintptr_t)(again[i] + k) >= page + 4096 &&
			    again[i][k] != 0)
				bad++;
	CHECK_MSG(!bad, "%lu bytes past the first memory page kept", bad);
	for (i = 0; i < EMPTY_BLOCKS; i++)
		slab_free(again[i], EMPTY_SIZE);
	slab_thread_flush();
}

static void test_idle_empty_page_leaves_memory(void)
{
	idle_empty_page_leaves_memory(slab_purge_idle);
}

static bool drain_busy[2];
static unsigned int drain_calls_made;

static void drain_step_recorded(void)
{
	drain_busy[drain_calls_made++ % 2] = slab_drain_step();
}

/*
 * The server calls slab_drain_step() ten times a second so that a page
 * freed gives its memory back within a fraction of that: with small
 * values kept and larger ones evicted, the wholly free pages of a second
 * held megabytes past -m 64 (test_memlimit's load). It says whether it
 * did anything: the server stops the ticks when it did not, until the
 * clock's next (an idle server woke eleven times a second).
 */
static void test_drain_step_purges_an_idle_empty_page(void)
{
	bool again[3];

	idle_empty_page_leaves_memory(drain_step_recorded);
	CHECK_MSG(drain_busy[0] && drain_busy[1],
		  "marking, then purging: busy %d, %d", drain_busy[0],
		  drain_busy[1]);
	/* the page the helper used last is wholly free again */
	again[0] = slab_drain_step();	/* marked */
	again[1] = slab_drain_step();	/* purged */
	again[2] = slab_drain_step();	/* nothing left to do */
	CHECK_MSG(again[0] && again[1] && !again[2],
		  "busy %d, %d, then %d", again[0], again[1], again[2]);
}

/*
 * Frees in no order leave a class's pages each a quarter used: a page
 * with one block in use holds the memory of all, so memory freed for one
 * size stayed from every other (anchorkv grew 46 MB past -m 64 when
 * values of 1,000 bytes were mostly deleted and values of 3,000 came).
 * slab_purge_idle() now names the sparsest pages to empty: a block on
 * them is never handed out again, the blocks named move (as the store's
 * walk moves its items) into the class's other pages, and the emptied
 * pages go back.
 */
#define SPARSE_SIZE	1000		/* 65 blocks of 1,000 a 64 KiB page */
#define SPARSE_BLOCKS	6500		/* 100 pages */

static void test_sparse_pages_are_emptied(void)
{
	static unsigned char *b[SPARSE_BLOCKS];
	struct slab_stats before, sparse, after;
	unsigned long bad = 0, landed = 0, moved = 0, named = 0;
	unsigned int i, call, live = 0;
	size_t k;

	slab_get_stats(&before);
	for (i = 0; i < SPARSE_BLOCKS; i++) {
		b[i] = slab_alloc(SPARSE_SIZE);
		CHECK(b[i]);
		if (!b[i])
			return;
		memset(b[i], (int)(i * 7 + 1), SPARSE_SIZE);
	}
	for (i = 0; i < SPARSE_BLOCKS; i++) {
		if (i % 4 == 1) {
			live++;
			continue;
		}
		slab_free(b[i], SPARSE_SIZE);
		b[i] = NULL;
	}
	slab_thread_flush();
	slab_get_stats(&sparse);
	for (call = 0; call < 16; call++) {
		void *fresh;

		slab_purge_idle();
		if (!call)
			CHECK_MSG(slab_drains() > 0, "%u pages being emptied",
				  slab_drains());
		/* what is handed out comes from the other pages */
		fresh = slab_alloc(SPARSE_SIZE);
		CHECK(fresh);
		landed += fresh && slab_draining(fresh, SPARSE_SIZE);
		slab_free(fresh, SPARSE_SIZE);
		for (i = 0; i < SPARSE_BLOCKS; i++) {
			unsigned char *to;

			if (!b[i] || !slab_draining(b[i], SPARSE_SIZE))
				continue;
			named++;
			to = slab_alloc_moved(SPARSE_SIZE);
			if (!to)
				continue;
			landed += slab_draining(to, SPARSE_SIZE);
			memcpy(to, b[i], SPARSE_SIZE);
			slab_free(b[i], SPARSE_SIZE);
			b[i] = to;
			moved++;
		}
		slab_thread_flush();
	}
	slab_get_stats(&after);
	CHECK_MSG(!landed, "%lu blocks handed out on a page being emptied",
		  landed);
	CHECK_MSG(moved > 0 && moved == named, "%lu of %lu blocks moved",
		  moved, named);
	CHECK(after.moved_blocks - before.moved_blocks == moved);
	CHECK(after.drained_pages > before.drained_pages);
	/* the live quarter packed: its pages and one more, where a hundred
	 * pages held it */
	CHECK_MSG(after.page_bytes - before.page_bytes <=
		  (uint64_t)live * SPARSE_SIZE + 2 * 65536,
		  "%llu page bytes hold %u blocks of %d (%llu sparse)",
		  (unsigned long long)(after.page_bytes - before.page_bytes),
		  live, SPARSE_SIZE,
		  (unsigned long long)(sparse.page_bytes - before.page_bytes));
	for (i = 0; i < SPARSE_BLOCKS; i++) {
		if (!b[i])
			continue;
		for (k = 0; k < SPARSE_SIZE; k++)
			bad += b[i][k] != (unsigned char)(i * 7 + 1);
		slab_free(b[i], SPARSE_SIZE);
	}
	CHECK_MSG(!bad, "%lu bytes changed by the moves", bad);
	slab_thread_flush();
	for (call = 0; call < 16 && slab_drains(); call++)
		slab_purge_idle();
	CHECK(slab_drains() == 0);
}

/*
 * A block on a page being emptied that nobody moves (a reply holds its
 * item) does not keep the page from the allocations for ever: after 8
 * calls of slab_purge_idle() the page is let be, and another is tried.
 * Two pages of a class no other test uses, one block held on each.
 */
#define HELD_SIZE	2000		/* 32 blocks of 2,040 a 64 KiB page */
#define HELD_BLOCKS	64

static void test_held_block_lets_its_page_be(void)
{
	static unsigned char *b[HELD_BLOCKS];
	bool first, second;
	unsigned int i, call;

	for (i = 0; i < HELD_BLOCKS; i++) {
		b[i] = slab_alloc(HELD_SIZE);
		CHECK(b[i]);
		if (!b[i])
			return;
	}
	CHECK(((uintptr_t)b[0] ^ (uintptr_t)b[HELD_BLOCKS / 2]) >= 65536);
	for (i = 0; i < HELD_BLOCKS; i++)
		if (i % (HELD_BLOCKS / 2)) {
			slab_free(b[i], HELD_SIZE);
			b[i] = NULL;
		}
	slab_thread_flush();
	slab_purge_idle();
	first = slab_draining(b[0], HELD_SIZE);
	second = slab_draining(b[HELD_BLOCKS / 2], HELD_SIZE);
	CHECK_MSG(first != second, "pages being emptied: %d, %d", first,
		  second);
	for (call = 0; call < 8; call++)
		slab_purge_idle();
	CHECK_MSG(slab_draining(b[0], HELD_SIZE) == second &&
		  slab_draining(b[HELD_BLOCKS / 2], HELD_SIZE) == first,
		  "after 9 calls: %d, %d", slab_draining(b[0], HELD_SIZE),
		  slab_draining(b[HELD_BLOCKS / 2], HELD_SIZE));
	slab_free(b[0], HELD_SIZE);
	slab_free(b[HELD_BLOCKS / 2], HELD_SIZE);
	slab_thread_flush();
	for (call = 0; call < 16 && slab_drains(); call++)
		slab_purge_idle();
	CHECK(slab_drains() == 0);
}

int main(void)
{
	printf("allocator: %s\n", ak_alloc_name());
	test_idle_empty_page_leaves_memory();
	test_drain_step_purges_an_idle_empty_page();
	test_charge_is_never_above_jemalloc();
	test_blocks_hold_their_bytes();
	test_free_pages_go_back();
	test_idle_large_blocks_leave_memory();
	test_idle_cached_blocks_leave_memory();
	test_large_blocks_go_back_to_their_pages();
	test_injected_failure_refuses_a_block();
	test_threads_hand_blocks_over();
	test_purge_beside_churning_threads();
	test_sparse_pages_are_emptied();
	test_held_block_lets_its_page_be();
	return check_report();
}
