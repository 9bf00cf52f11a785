// SPDX-License-Identifier: MIT
/*
 * test_reply.c - the reply queue against a model byte stream.
 *
 * The model is what a socket would receive: every byte queued, in order.
 * Each test queues copies and item references, drains the queue the way
 * the server does (reply_iov(), a partial "write", reply_consume()) and
 * compares the bytes; item references are checked against the model's
 * count of segments of that item not yet fully written.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "check.h"
#include "hash.h"
#include "item.h"
#include "reply.h"

#define RND_SEED	0x9e3779b97f4a7c15ull
#include "rnd.h"

/* ------------------------------------------------------------------ */
/* the model: the byte stream, and where each reference ends in it       */

#define MODEL_MAX	(1u << 21)
#define REFS_MAX	4096

struct model {
	char *bytes;
	size_t len;		/* queued so far */
	size_t done;		/* consumed so far */
	struct {
		struct item *it;
		size_t end;	/* stream offset after its last byte */
	} refs[REFS_MAX];
	unsigned int nrefs;
};

static void model_init(struct model *m)
{
	memset(m, 0, sizeof(*m));
	m->bytes = malloc(MODEL_MAX);
}

static void model_fini(struct model *m)
{
	free(m->bytes);
}

static void model_add(struct model *m, const void *p, size_t len)
{
	memcpy(m->bytes + m->len, p, len);
	m->len += len;
}

/* An item holding @nbytes of value, key an integer. */
static struct item *make_item(unsigned int n, uint32_t nbytes)
{
	char key[16];
	struct item *it;
	uint32_t i;

	snprintf(key, sizeof(key), "%u", n);
	it = item_alloc(key, strlen(key), 0, 0, nbytes);
	if (!it)
		return NULL;
	for (i = 0; i < nbytes; i++)
		item_value(it)[i] = (char)('a' + (n + i) % 26);
	return it;
}

/* Queues @it's value by reference (taking a reference for the queue). */
static int model_add_ref(struct model *m, struct reply *r, struct item *it)
{
	size_t len = it->nbytes;
	int ret;

	item_get(it);
	ret = reply_add_ref(r, it, item_value(it), len);
	if (ret == 0) {
		model_add(m, item_value(it), len);
		m->refs[m->nrefs].it = it;
		m->refs[m->nrefs].end = m->len;
		m->nrefs++;
	}
	return ret;
}

/* The references the queue should still hold on @it. */
static unsigned int model_refs_of(const struct model *m, const struct item *it)
{
	unsigned int i, n = 0;

	for (i = 0; i < m->nrefs; i++)
		if (m->refs[i].it == it && m->refs[i].end > m->done)
			n++;
	return n;
}

/* Whether the unsent bytes of @r are exactly the model's unsent bytes. */
static bool queue_matches(const struct reply *r, const struct model *m)
{
	struct iovec iov[64];
	size_t off = m->done;
	int n, i;

	if (reply_pending(r) != m->len - m->done)
		return false;
	/* reply_iov() shows at most 64 segments: enough for these tests */
	n = reply_iov(r, iov, 64);
	for (i = 0; i < n; i++) {
		if (off + iov[i].iov_len > m->len ||
		    memcmp(iov[i].iov_base, m->bytes + off, iov[i].iov_len))
			return false;
		off += iov[i].iov_len;
	}
	return n < 64 ? off == m->len : true;
}

/* One "writev" of at most @max bytes over at most @maxiov iovecs; checks
 * the bytes against the model. Return: bytes consumed. */
static size_t drain_step(struct reply *r, struct model *m, size_t max,
			 int maxiov)
{
	struct iovec iov[16];
	size_t total = 0, off = m->done;
	int n, i;
	bool ok = true;

	n = reply_iov(r, iov, maxiov);
	for (i = 0; i < n; i++) {
		size_t len = iov[i].iov_len;

		if (total + len > max)
			len = max - total;
		if (memcmp(iov[i].iov_base, m->bytes + off, len))
			ok = false;
		off += len;
		total += len;
		if (total == max)
			break;
	}
	CHECK(ok);
	reply_consume(r, total);
	m->done += total;
	return total;
}

/* Drains everything in steps; stops (failing) if a step makes no
 * progress, so that a broken queue cannot hang the test. */
static void drain_all(struct reply *r, struct model *m, size_t max,
		      int maxiov)
{
	while (reply_pending(r)) {
		if (!drain_step(r, m, max, maxiov)) {
			CHECK_MSG(0, "no progress with %zu pending",
				  reply_pending(r));
			return;
		}
	}
}

static bool refs_match(const struct model *m)
{
	unsigned int i;

	for (i = 0; i < m->nrefs; i++) {
		struct item *it = m->refs[i].it;

		if (it->refcount != 1 + model_refs_of(m, it))
			return false;
	}
	return true;
}

/* ------------------------------------------------------------------ */

static void test_empty(void)
{
	struct reply r;
	struct iovec iov[4];

	reply_init(&r);
	CHECK(reply_pending(&r) == 0);
	CHECK(reply_iov(&r, iov, 4) == 0);
	reply_consume(&r, 0);
	CHECK(reply_add(&r, "", 0) == 0);
	CHECK(reply_pending(&r) == 0);
	reply_free(&r);
	reply_free(&r);
	CHECK(reply_pending(&r) == 0);
}

/* Small copies in one chunk are one iovec; more chunks, one each. */
static void test_merge_and_chunks(void)
{
	struct model m;
	struct reply r;
	struct iovec iov[16];
	char piece[7];
	unsigned int i;
	size_t chunk_data;
	int n;

	model_init(&m);
	reply_init(&r);
	for (i = 0; i < 1000; i++) {
		memset(piece, 'A' + i % 26, sizeof(piece));
		CHECK(reply_add(&r, piece, sizeof(piece)) == 0);
		model_add(&m, piece, sizeof(piece));
	}
	CHECK(reply_iov(&r, iov, 16) == 1);
	CHECK(queue_matches(&r, &m));

	/* fill past the first chunk: the bytes go on in a second one */
	while (m.len < REPLY_CHUNK_BYTES + 100) {
		memset(piece, 'a' + m.len % 26, sizeof(piece));
		CHECK(reply_add(&r, piece, sizeof(piece)) == 0);
		model_add(&m, piece, sizeof(piece));
	}
	n = reply_iov(&r, iov, 16);
	CHECK(n == 2);
	chunk_data = iov[0].iov_len;
	CHECK(chunk_data < REPLY_CHUNK_BYTES && chunk_data > REPLY_CHUNK_BYTES - 64);
	CHECK(queue_matches(&r, &m));

	/* a copy larger than a chunk spans chunks */
	{
		size_t big = 3 * REPLY_CHUNK_BYTES + 123;
		char *b = malloc(big);

		for (i = 0; i < big; i++)
			b[i] = (char)rnd();
		CHECK(reply_add(&r, b, big) == 0);
		model_add(&m, b, big);
		free(b);
	}
	n = reply_iov(&r, iov, 16);
	CHECK(n >= 5 && n <= 6);
	CHECK(queue_matches(&r, &m));
	drain_all(&r, &m, 5000, 3);
	CHECK(m.done == m.len);
	CHECK(reply_iov(&r, iov, 16) == 0);

	/* once written, the last chunk is reused from its start */
	CHECK(reply_add(&r, "xyz", 3) == 0);
	model_add(&m, "xyz", 3);
	CHECK(queue_matches(&r, &m));
	reply_free(&r);
	model_fini(&m);
}

/* A value line, the value by reference, END: copies merge around refs. */
static void test_value_shape(void)
{
	struct model m;
	struct reply r;
	struct iovec iov[16];
	struct item *a = make_item(1, 12), *b = make_item(2, 2);
	char *p;

	model_init(&m);
	reply_init(&r);
	CHECK(a && b);
	p = reply_reserve(&r, 100);
	CHECK(p != NULL);
	memcpy(p, "VALUE 1 0 12\r\n", 14);
	reply_commit(&r, 14);
	model_add(&m, "VALUE 1 0 12\r\n", 14);
	CHECK(model_add_ref(&m, &r, a) == 0);
	CHECK(reply_add(&r, "VALUE 2 0 2\r\n", 13) == 0);
	model_add(&m, "VALUE 2 0 2\r\n", 13);
	CHECK(model_add_ref(&m, &r, b) == 0);
	CHECK(reply_addf(&r, "%s\r\n", "END") == 0);
	model_add(&m, "END\r\n", 5);
	CHECK(reply_iov(&r, iov, 16) == 5);
	CHECK(queue_matches(&r, &m));
	CHECK(a->refcount == 2 && b->refcount == 2);
	CHECK(refs_match(&m));

	/* iovecs limited to 2: the rest waits */
	CHECK(reply_iov(&r, iov, 2) == 2);
	CHECK(iov[0].iov_len == 14 && iov[1].iov_len == 12);

	/* write up to one byte short of a's end: a still held */
	drain_step(&r, &m, 14 + 11, 16);
	CHECK(a->refcount == 2);
	drain_step(&r, &m, 1, 16);
	CHECK(a->refcount == 1);
	CHECK(refs_match(&m));
	drain_all(&r, &m, 1, 1);
	CHECK(b->refcount == 1);
	item_put(a);
	item_put(b);
	reply_free(&r);
	model_fini(&m);
}

/* Builds the same mixed queue each time: copies, refs, a big copy. */
static void build_mixed(struct reply *r, struct model *m, struct item **its,
			const char *big, size_t nbig)
{
	unsigned int i;

	m->len = m->done = 0;
	m->nrefs = 0;
	for (i = 0; i < 4; i++) {
		char line[64];
		int n = snprintf(line, sizeof(line), "VALUE %u 0 %u\r\n", i,
				 its[i]->nbytes);

		CHECK(reply_add(r, line, (size_t)n) == 0);
		model_add(m, line, (size_t)n);
		CHECK(model_add_ref(m, r, its[i]) == 0);
		if (i == 1) {
			CHECK(reply_add(r, big, nbig) == 0);
			model_add(m, big, nbig);
		}
	}
	CHECK(reply_addf(r, "END %d\r\n", 42) == 0);
	model_add(m, "END 42\r\n", 8);
}

/* Written in two parts, split at every byte offset. */
static void test_every_offset(void)
{
	struct model m;
	struct reply r;
	struct item *its[4];
	size_t nbig = REPLY_CHUNK_BYTES + 500, total, k;
	char *big = malloc(nbig);
	unsigned int i;
	bool bytes_ok = true, refs_ok = true, ends_ok = true;

	model_init(&m);
	for (i = 0; i < 4; i++)
		its[i] = make_item(i, i == 2 ? 3000 : 5 + i);
	for (i = 0; i < nbig; i++)
		big[i] = (char)('0' + i % 10);
	reply_init(&r);
	build_mixed(&r, &m, its, big, nbig);
	total = m.len;
	reply_free(&r);
	for (i = 0; i < 4; i++)
		CHECK(its[i]->refcount == 1);

	for (k = 0; k <= total; k++) {
		reply_init(&r);
		build_mixed(&r, &m, its, big, nbig);
		reply_consume(&r, k);
		m.done = k;
		if (!queue_matches(&r, &m))
			bytes_ok = false;
		if (!refs_match(&m))
			refs_ok = false;
		reply_consume(&r, total - k);
		m.done = total;
		if (reply_pending(&r) || !refs_match(&m))
			ends_ok = false;
		reply_free(&r);
	}
	CHECK(bytes_ok);
	CHECK(refs_ok);
	CHECK(ends_ok);
	for (i = 0; i < 4; i++) {
		CHECK(its[i]->refcount == 1);
		item_put(its[i]);
	}
	free(big);
	model_fini(&m);
}

/* Random queueing and random partial writes against the model. */
/*
 * The open segment (reply.h): none, or the last segment, a copy that ends
 * at the last chunk's free end, so that reply_add() and reply_reserve()
 * may extend it in place.
 */
static bool open_ok(const struct reply *r)
{
	const struct reply_seg *last;

	if (!r->open)
		return true;
	if (!r->seg_count)
		return false;
	last = &r->segs[(r->seg_head + r->seg_count - 1) & (r->seg_cap - 1)];
	return r->open == last && !last->it && last->chunk &&
	       last->chunk == list_last_entry(&r->chunks, struct reply_chunk,
					      node) &&
	       last->base + last->len == last->chunk->data + last->chunk->used;
}

static void test_random(void)
{
	struct model m;
	struct reply r;
	struct item *its[8];
	char buf[6000];
	unsigned int round, i;
	bool refs_ok = true, open_good = true;
	unsigned int opened = 0;

	model_init(&m);
	for (i = 0; i < 8; i++)
		its[i] = make_item(100 + i, rnd_below(2000));
	reply_init(&r);
	for (round = 0; round < 20000 && m.len < MODEL_MAX - 40000 &&
	     m.nrefs < REFS_MAX; round++) {
		unsigned int op = rnd_below(10);
		size_t len;

		if (op < 4) {
			len = rnd_below(op == 0 ? 6000 : 40);
			for (i = 0; i < len; i++)
				buf[i] = (char)rnd();
			CHECK(reply_add(&r, buf, len) == 0);
			model_add(&m, buf, len);
		} else if (op < 5) {
			unsigned int v = (unsigned int)rnd();
			int n = snprintf(buf, sizeof(buf), "STAT x %u\r\n", v);

			CHECK(reply_addf(&r, "STAT x %u\r\n", v) == 0);
			model_add(&m, buf, (size_t)n);
		} else if (op < 6) {
			char *p;

			len = 1 + rnd_below(REPLY_RESERVE_MAX);
			p = reply_reserve(&r, len);
			CHECK(p != NULL);
			for (i = 0; i < len; i++)
				p[i] = buf[i] = (char)rnd();
			/* commit possibly less than reserved */
			len -= rnd_below((unsigned int)len);
			reply_commit(&r, len);
			model_add(&m, buf, len);
		} else if (op < 8) {
			CHECK(model_add_ref(&m, &r, its[rnd_below(8)]) == 0);
		} else {
			drain_step(&r, &m, rnd_below(20000), 1 + rnd_below(16));
		}
		if (!refs_match(&m))
			refs_ok = false;
		if (!open_ok(&r))
			open_good = false;
		opened += r.open != NULL;
	}
	CHECK(refs_ok);
	CHECK(open_good);
	CHECK(opened > 100);	/* the inline path was there to take */
	CHECK(queue_matches(&r, &m) || reply_pending(&r) == m.len - m.done);
	drain_all(&r, &m, 1 + rnd_below(70000), 1 + rnd_below(16));
	CHECK(m.done == m.len);
	CHECK(refs_match(&m));
	for (i = 0; i < 8; i++) {
		CHECK(its[i]->refcount == 1);
		item_put(its[i]);
	}
	reply_free(&r);
	model_fini(&m);
}

/* Rewinding takes back exactly what followed the mark. */
static void test_rewind(void)
{
	struct model m;
	struct reply r;
	struct reply_mark mk;
	struct item *a = make_item(7, 100);
	size_t nbig = 2 * REPLY_CHUNK_BYTES;
	char *big = calloc(1, nbig);
	int round;

	model_init(&m);
	reply_init(&r);
	/* on an empty queue */
	reply_mark(&r, &mk);
	CHECK(reply_add(&r, "abc", 3) == 0);
	CHECK(model_add_ref(&m, &r, a) == 0);
	m.len = 0;
	m.nrefs = 0;
	reply_rewind(&r, &mk);
	CHECK(reply_pending(&r) == 0);
	CHECK(a->refcount == 1);

	for (round = 0; round < 3; round++) {
		size_t keep_len;
		unsigned int keep_refs;

		CHECK(reply_add(&r, "head ", 5) == 0);
		model_add(&m, "head ", 5);
		CHECK(model_add_ref(&m, &r, a) == 0);
		CHECK(reply_add(&r, "mid", 3) == 0);
		model_add(&m, "mid", 3);
		keep_len = m.len;
		keep_refs = m.nrefs;
		reply_mark(&r, &mk);
		/* merges into the last segment, then more of everything */
		CHECK(reply_add(&r, "tail", 4) == 0);
		CHECK(model_add_ref(&m, &r, a) == 0);
		CHECK(reply_add(&r, big, nbig) == 0);
		CHECK(model_add_ref(&m, &r, a) == 0);
		reply_rewind(&r, &mk);
		CHECK(open_ok(&r));
		m.len = keep_len;
		m.nrefs = keep_refs;
		CHECK(queue_matches(&r, &m));
		CHECK(refs_match(&m));
		/* and the queue goes on normally */
		CHECK(reply_add(&r, "after", 5) == 0);
		CHECK(open_ok(&r));
		model_add(&m, "after", 5);
		CHECK(queue_matches(&r, &m));
		drain_step(&r, &m, 7, 4);
		CHECK(refs_match(&m));
	}
	drain_all(&r, &m, 3, 2);
	CHECK(a->refcount == 1);
	item_put(a);
	free(big);
	reply_free(&r);
	model_fini(&m);
}

/* Allocation failures queue nothing, and drop the reference given. */
static void test_alloc_failure(void)
{
	struct model m;
	struct reply r;
	struct item *a = make_item(9, 10);
	size_t nbig = 3 * REPLY_CHUNK_BYTES;
	char *big = calloc(1, nbig);
	int i;

	model_init(&m);
	reply_init(&r);
	ak_alloc_fail_after(0);
	CHECK(reply_add(&r, "x", 1) == -ENOMEM);
	CHECK(reply_pending(&r) == 0);
	ak_alloc_fail_after(0);
	item_get(a);
	CHECK(reply_add_ref(&r, a, item_value(a), 12) == -ENOMEM);
	CHECK(a->refcount == 1);
	ak_alloc_fail_after(0);
	CHECK(reply_reserve(&r, 10) == NULL);
	ak_alloc_fail_after(0);
	CHECK(reply_addf(&r, "%d", 5) == -ENOMEM);
	ak_alloc_fail_after(-1);

	CHECK(reply_add(&r, "keep", 4) == 0);
	model_add(&m, "keep", 4);
	CHECK(model_add_ref(&m, &r, a) == 0);
	/* a long copy failing half way leaves the queue as it was */
	for (i = 0; i < 3; i++) {
		ak_alloc_fail_after(i);
		CHECK(reply_add(&r, big, nbig) == -ENOMEM);
		ak_alloc_fail_after(-1);
		CHECK(queue_matches(&r, &m));
	}
	CHECK(refs_match(&m));
	/* a full ring that cannot grow: the reference is dropped */
	while (r.seg_count < r.seg_cap)
		CHECK(model_add_ref(&m, &r, a) == 0);
	ak_alloc_fail_after(0);
	item_get(a);
	{
		unsigned int before = a->refcount;

		CHECK(reply_add_ref(&r, a, item_value(a), 12) == -ENOMEM);
		CHECK(a->refcount == before - 1);
		ak_alloc_fail_after(0);
		CHECK(reply_add(&r, "v", 1) == -ENOMEM);
	}
	ak_alloc_fail_after(-1);
	CHECK(queue_matches(&r, &m));
	CHECK(refs_match(&m));
	/* reply_free() drops every reference still queued */
	reply_free(&r);
	CHECK(a->refcount == 1);
	item_put(a);
	free(big);
	model_fini(&m);
}

/* reply_addf() output longer than a reserve and than a chunk. */
static void test_addf_long(void)
{
	struct model m;
	struct reply r;
	size_t sizes[] = { 10, REPLY_RESERVE_MAX - 1, REPLY_RESERVE_MAX,
			   REPLY_CHUNK_BYTES - 10, REPLY_CHUNK_BYTES * 2 + 7 };
	unsigned int i, j;
	char *s = malloc(REPLY_CHUNK_BYTES * 3);

	model_init(&m);
	reply_init(&r);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (j = 0; j < sizes[i]; j++)
			s[j] = (char)('a' + (i + j) % 26);
		s[sizes[i]] = '\0';
		CHECK(reply_addf(&r, "<%s>", s) == 0);
		model_add(&m, "<", 1);
		model_add(&m, s, sizes[i]);
		model_add(&m, ">", 1);
		CHECK(queue_matches(&r, &m));
	}
	drain_all(&r, &m, 10000, 16);
	reply_free(&r);
	free(s);
	model_fini(&m);
}

/* An idle queue gives its chunk to the pool; the next busy one takes it. */
static void test_pool(void)
{
	struct reply_pool pool = { .n = 0 };
	struct model m;
	struct reply r, r2;
	struct iovec iov[16];
	struct reply_chunk *kept;
	char piece[100];
	unsigned int i;

	model_init(&m);
	reply_init(&r);
	r.pool = &pool;
	/* a trim with bytes queued does nothing */
	CHECK(reply_add(&r, "abc", 3) == 0);
	model_add(&m, "abc", 3);
	reply_trim(&r);
	CHECK(pool.n == 0 && queue_matches(&r, &m));
	drain_all(&r, &m, 1, 1);
	CHECK(m.done == m.len && reply_iov(&r, iov, 16) == 0);
	/* written: the last chunk stays with the queue until a trim */
	CHECK(!list_empty(&r.chunks));
	kept = list_first_entry(&r.chunks, struct reply_chunk, node);
	reply_trim(&r);
	CHECK(list_empty(&r.chunks) && pool.n == 1 && pool.chunks[0] == kept);
	/* another queue of the pool takes it before allocating */
	reply_init(&r2);
	r2.pool = &pool;
	CHECK(reply_add(&r2, "de", 2) == 0);
	CHECK(pool.n == 0);
	CHECK(list_first_entry(&r2.chunks, struct reply_chunk, node) == kept);
	CHECK(reply_iov(&r2, iov, 16) == 1 && iov[0].iov_len == 2 &&
	      !memcmp(iov[0].iov_base, "de", 2));
	/* a queue freed with several chunks gives them all to the pool */
	for (i = 0; i < 3 * REPLY_CHUNK_BYTES / sizeof(piece); i++) {
		memset(piece, 'a' + i % 26, sizeof(piece));
		CHECK(reply_add(&r, piece, sizeof(piece)) == 0);
		model_add(&m, piece, sizeof(piece));
	}
	CHECK(queue_matches(&r, &m));
	reply_free(&r);
	CHECK(pool.n >= 3 && r.pool == &pool);
	reply_free(&r2);
	reply_pool_drain(&pool);
	CHECK(pool.n == 0);
	/* a full pool frees what does not fit (LeakSanitizer checks) */
	{
		static struct reply many[REPLY_POOL_MAX + 5];

		for (i = 0; i < REPLY_POOL_MAX + 5; i++) {
			reply_init(&many[i]);
			many[i].pool = &pool;
			CHECK(reply_add(&many[i], "x", 1) == 0);
		}
		for (i = 0; i < REPLY_POOL_MAX + 5; i++)
			reply_free(&many[i]);
		CHECK(pool.n == REPLY_POOL_MAX);
	}
	reply_pool_drain(&pool);
	model_fini(&m);
}

int main(void)
{
	if (hash_init() < 0) {
		fprintf(stderr, "hash_init failed\n");
		return 1;
	}
	test_empty();
	test_merge_and_chunks();
	test_value_shape();
	test_every_offset();
	test_random();
	test_rewind();
	test_alloc_failure();
	test_addf_long();
	test_pool();
	return check_report();
}
