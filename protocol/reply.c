// SPDX-License-Identifier: MIT
/*
 * reply.c - a connection's queue of reply bytes, ready for writev().
 *
 * Two kinds of storage hold the queued bytes:
 *
 *  - chunks: fixed-size blocks owned by the queue, into which small replies
 *    are copied. Bytes are only ever appended to the last chunk, and a chunk
 *    is never moved or grown (iovecs point into it), so a new chunk is
 *    started when the last one is full.
 *  - items: a value is queued as a pointer into its item, whose reference
 *    the queue holds until those bytes are written.
 *
 * The queue itself is a ring of segments, each one {base, len, owner}, in
 * the order the bytes go out. Copied bytes that directly follow the last
 * segment in the same chunk extend that segment, so a run of small replies
 * becomes one iovec.
 *
 * A chunk counts the segments that point into it. When the last of them is
 * written, the chunk is freed, unless it is the last chunk, which is then
 * emptied and reused: a connection that answers one request at a time
 * allocates nothing after its first reply. When the connection goes idle,
 * reply_trim() gives that chunk to the worker's pool, from which the next
 * busy queue takes one before allocating ("freed" above means the same:
 * into the pool while it has room).
 *
 * Synchronization: one queue per connection, used by its worker only.
 */
#include "reply.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "compiler.h"
#include "item.h"

#define REPLY_SEGS_MIN		16u	/* first ring size */
#define REPLY_SEGS_KEEP		256u	/* an empty ring larger is freed */

_Static_assert(REPLY_RESERVE_MAX <= REPLY_CHUNK_BYTES / 2,
	       "a reserve must fit in an empty chunk");

static inline struct reply_seg *reply_seg_at(const struct reply *r,
					     unsigned int i)
{
	return &r->segs[(r->seg_head + i) & (r->seg_cap - 1)];
}

static inline struct reply_seg *reply_last_seg(const struct reply *r)
{
	return reply_seg_at(r, r->seg_count - 1);
}

static inline struct reply_chunk *reply_tail(const struct reply *r)
{
	if (list_empty(&r->chunks))
		return NULL;
	return list_last_entry(&r->chunks, struct reply_chunk, node);
}

void reply_init(struct reply *r)
{
	INIT_LIST_HEAD(&r->chunks);
	r->pool = NULL;
	r->segs = NULL;
	r->open = NULL;
	r->seg_head = 0;
	r->seg_count = 0;
	r->seg_cap = 0;
	r->head_off = 0;
	r->pending = 0;
	r->failed = false;
}

/* A chunk off the queue's list: into the pool if it has room, else freed. */
static void reply_chunk_put(struct reply *r, struct reply_chunk *c)
{
	struct reply_pool *pool = r->pool;

	list_del(&c->node);
	if (pool && pool->n < REPLY_POOL_MAX)
		pool->chunks[pool->n++] = c;
	else
		ak_free(c);
}

/* Frees a chunk that no segment points into any more, unless it is the last
 * chunk: that one is emptied for reuse. */
static void reply_chunk_idle(struct reply *r, struct reply_chunk *c)
{
	if (c->node.next == &r->chunks) {
		c->used = 0;
		return;
	}
	reply_chunk_put(r, c);
}

void reply_trim(struct reply *r)
{
	struct reply_chunk *c, *tmp;

	if (r->seg_count)
		return;
	list_for_each_entry_safe(c, tmp, &r->chunks, node)
		reply_chunk_put(r, c);
	r->open = NULL;
}

void reply_pool_drain(struct reply_pool *pool)
{
	while (pool->n)
		ak_free(pool->chunks[--pool->n]);
}

/* Drops what a written (or discarded) segment holds. */
static void reply_seg_release(struct reply *r, struct reply_seg *seg)
{
	if (seg->it) {
		item_put(seg->it);
		seg->it = NULL;
	} else if (--seg->chunk->nsegs == 0) {
		reply_chunk_idle(r, seg->chunk);
	}
}

void reply_free(struct reply *r)
{
	struct reply_pool *pool = r->pool;
	struct reply_chunk *c, *tmp;
	unsigned int i;

	for (i = 0; i < r->seg_count; i++) {
		struct reply_seg *seg = reply_seg_at(r, i);

		if (seg->it)
			item_put(seg->it);
	}
	list_for_each_entry_safe(c, tmp, &r->chunks, node)
		reply_chunk_put(r, c);
	ak_free(r->segs);
	reply_init(r);
	r->pool = pool;
}

/* Makes room for one more segment in the ring. Return: 0 or -ENOMEM. */
static int reply_ring_room(struct reply *r)
{
	struct reply_seg *segs;
	unsigned int cap, i;

	if (likely(r->seg_count < r->seg_cap))
		return 0;
	cap = r->seg_cap ? r->seg_cap * 2 : REPLY_SEGS_MIN;
	if (cap < r->seg_cap)
		return -ENOMEM;
	segs = ak_malloc(cap * sizeof(*segs));
	if (!segs) {
		r->failed = true;
		return -ENOMEM;
	}
	for (i = 0; i < r->seg_count; i++)
		segs[i] = *reply_seg_at(r, i);
	ak_free(r->segs);
	r->segs = segs;
	r->seg_cap = cap;
	r->seg_head = 0;
	if (r->open)	/* still the last one, moved */
		r->open = reply_last_seg(r);
	return 0;
}

/* Appends a segment; the ring has room (reply_ring_room()). */
static inline struct reply_seg *reply_push(struct reply *r)
{
	struct reply_seg *seg;

	r->seg_count++;
	seg = reply_last_seg(r);
	return seg;
}

/*
 * The last chunk if it has @need free bytes (emptying it first if nothing
 * points into it), else a new last chunk. Return: the chunk or NULL.
 */
static struct reply_chunk *reply_chunk_room(struct reply *r, size_t need)
{
	struct reply_chunk *c = reply_tail(r);

	if (c) {
		if (!c->nsegs)
			c->used = 0;
		if (REPLY_CHUNK_DATA - c->used >= need)
			return c;
	}
	c = r->pool && r->pool->n ? r->pool->chunks[--r->pool->n] :
	    ak_malloc(REPLY_CHUNK_BYTES);
	if (!c) {
		r->failed = true;
		return NULL;
	}
	c->nsegs = 0;
	c->used = 0;
	list_add_tail(&c->node, &r->chunks);
	/* bytes go to the new chunk now: the open segment ends elsewhere */
	r->open = NULL;
	return c;
}

/* Queues @len bytes just written at the free end of chunk @c; the ring has
 * room for a segment. */
static void reply_queue_copy(struct reply *r, struct reply_chunk *c,
			     size_t len)
{
	const char *p = c->data + c->used;
	struct reply_seg *seg;

	if (r->seg_count) {
		seg = reply_last_seg(r);
		if (seg->chunk == c && !seg->it && seg->base + seg->len == p) {
			seg->len += len;
			goto out;
		}
	}
	seg = reply_push(r);
	seg->base = p;
	seg->len = len;
	seg->it = NULL;
	seg->chunk = c;
	c->nsegs++;
out:
	c->used += (unsigned int)len;
	r->pending += len;
	r->open = seg;
}

char *reply_reserve_slow(struct reply *r, size_t len)
{
	struct reply_chunk *c;

	if (len > REPLY_RESERVE_MAX)
		return NULL;
	if (reply_ring_room(r) < 0)
		return NULL;
	c = reply_chunk_room(r, len);
	if (!c)
		return NULL;
	return c->data + c->used;
}

void reply_commit_slow(struct reply *r, size_t len)
{
	if (len)
		reply_queue_copy(r, reply_tail(r), len);
}

int reply_add_copy(struct reply *r, const void *p, size_t len)
{
	const char *src = p;
	struct reply_mark m;

	if (len <= REPLY_RESERVE_MAX) {
		char *dst = reply_reserve(r, len);

		if (!dst)
			return -ENOMEM;
		memcpy(dst, src, len);
		reply_commit(r, len);
		return 0;
	}
	/* a long copy fills the last chunk, then whole new ones */
	reply_mark(r, &m);
	while (len) {
		struct reply_chunk *c;
		size_t n;

		if (reply_ring_room(r) < 0)
			goto err_rewind;
		c = reply_chunk_room(r, 1);
		if (!c)
			goto err_rewind;
		n = REPLY_CHUNK_DATA - c->used;
		if (n > len)
			n = len;
		memcpy(c->data + c->used, src, n);
		reply_queue_copy(r, c, n);
		src += n;
		len -= n;
	}
	return 0;
err_rewind:
	reply_rewind(r, &m);
	return -ENOMEM;
}

int reply_addf(struct reply *r, const char *fmt, ...)
{
	struct reply_chunk *c = reply_tail(r);
	size_t room = 0;
	va_list ap;
	char *buf;
	int n, ret;

	if (reply_ring_room(r) < 0)
		return -ENOMEM;
	if (c) {
		if (!c->nsegs)
			c->used = 0;
		room = REPLY_CHUNK_DATA - c->used;
	}
	va_start(ap, fmt);
	n = vsnprintf(room ? c->data + c->used : NULL, room, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n < room) {
		reply_commit(r, (size_t)n);
		return 0;
	}
	/* did not fit: format again where it does */
	if ((size_t)n < REPLY_RESERVE_MAX) {
		buf = reply_reserve(r, (size_t)n + 1);
		if (!buf)
			return -ENOMEM;
		va_start(ap, fmt);
		vsnprintf(buf, (size_t)n + 1, fmt, ap);
		va_end(ap);
		reply_commit(r, (size_t)n);
		return 0;
	}
	buf = ak_malloc((size_t)n + 1);
	if (!buf) {
		r->failed = true;
		return -ENOMEM;
	}
	va_start(ap, fmt);
	vsnprintf(buf, (size_t)n + 1, fmt, ap);
	va_end(ap);
	ret = reply_add(r, buf, (size_t)n);
	ak_free(buf);
	return ret;
}

int reply_add_ref(struct reply *r, struct item *it, const void *p, size_t len)
{
	struct reply_seg *seg;

	if (!len) {
		item_put(it);
		return 0;
	}
	if (reply_ring_room(r) < 0) {
		item_put(it);
		return -ENOMEM;
	}
	seg = reply_push(r);
	seg->base = p;
	seg->len = len;
	seg->it = it;
	seg->chunk = NULL;
	r->open = NULL;
	r->pending += len;
	return 0;
}

int reply_iov(const struct reply *r, struct iovec *iov, int max)
{
	unsigned int i, n;

	if (max <= 0)
		return 0;
	n = r->seg_count < (unsigned int)max ? r->seg_count : (unsigned int)max;
	for (i = 0; i < n; i++) {
		const struct reply_seg *seg = reply_seg_at(r, i);

		iov[i].iov_base = (void *)seg->base;
		iov[i].iov_len = seg->len;
	}
	if (n) {
		iov[0].iov_base = (char *)iov[0].iov_base + r->head_off;
		iov[0].iov_len -= r->head_off;
	}
	return (int)n;
}

void reply_consume(struct reply *r, size_t n)
{
	if (n > r->pending)
		n = r->pending;
	r->pending -= n;
	while (n) {
		struct reply_seg *seg = reply_seg_at(r, 0);
		size_t left = seg->len - r->head_off;

		if (n < left) {
			r->head_off += n;
			break;
		}
		n -= left;
		r->head_off = 0;
		r->seg_head = (r->seg_head + 1) & (r->seg_cap - 1);
		r->seg_count--;
		reply_seg_release(r, seg);
	}
	if (!r->seg_count) {
		r->open = NULL;
		r->seg_head = 0;
		if (r->seg_cap > REPLY_SEGS_KEEP) {
			ak_free(r->segs);
			r->segs = NULL;
			r->seg_cap = 0;
		}
	}
}

void reply_mark(const struct reply *r, struct reply_mark *m)
{
	struct reply_chunk *c = reply_tail(r);

	m->seg_count = r->seg_count;
	m->last_len = r->seg_count ? reply_last_seg(r)->len : 0;
	m->pending = r->pending;
	m->tail = c;
	m->tail_used = c ? c->used : 0;
}

void reply_rewind(struct reply *r, const struct reply_mark *m)
{
	struct reply_chunk *c, *tmp;
	bool after = !m->tail;

	while (r->seg_count > m->seg_count) {
		struct reply_seg *seg = reply_last_seg(r);

		r->seg_count--;
		if (seg->it)
			item_put(seg->it);
		else
			seg->chunk->nsegs--;
	}
	if (r->seg_count)
		reply_last_seg(r)->len = m->last_len;
	r->open = NULL;		/* the next copy looks again */
	/* chunks started after the mark hold nothing queued before it */
	list_for_each_entry_safe(c, tmp, &r->chunks, node) {
		if (after) {
			reply_chunk_put(r, c);
		} else if (c == m->tail) {
			c->used = (unsigned int)m->tail_used;
			after = true;
		}
	}
	r->pending = m->pending;
}
