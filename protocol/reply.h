/* SPDX-License-Identifier: MIT */
/*
 * reply.h - a connection's queue of reply bytes, ready for writev().
 *
 * Small replies are copied into fixed-size chunks owned by the queue; values
 * are queued as an iovec pointing into the item, whose reference the queue
 * holds until those bytes are written. The server asks for the unsent
 * iovecs with reply_iov(), writes, and reports how far it got with
 * reply_consume(), which releases finished chunks and item references.
 *
 * Synchronization: one queue per connection, used by its worker only.
 */
#ifndef ANCHORKV_REPLY_H
#define ANCHORKV_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

#include "list.h"

struct item;

#define REPLY_HIGH_WATER	(256u * 1024)	/* stop reading above this */
#define REPLY_CHUNK_BYTES	(16u * 1024)	/* one chunk block, header included */
#define REPLY_RESERVE_MAX	4096u		/* largest reply_reserve() */
#define REPLY_POOL_MAX		64u		/* idle chunks a pool keeps */

/*
 * The chunk and segment layouts are here only so that reply_add() can
 * extend the open segment inline; everything else about them is reply.c's.
 */
struct reply_chunk {
	struct list_head node;		/* in reply.chunks */
	unsigned int nsegs;		/* segments pointing into data */
	unsigned int used;		/* bytes of data filled */
	char data[];
};

#define REPLY_CHUNK_DATA	(REPLY_CHUNK_BYTES - sizeof(struct reply_chunk))

struct reply_seg {
	const char *base;
	size_t len;
	struct item *it;		/* owner: an item reference, or NULL */
	struct reply_chunk *chunk;	/* owner: a chunk, when it is NULL */
};

/*
 * Chunks that queues gave back, for others to take before allocating: one
 * pool per worker (in its struct proto_ctx), used by that worker only.
 */
struct reply_pool {
	struct reply_chunk *chunks[REPLY_POOL_MAX];
	unsigned int n;
};

struct reply {
	struct list_head chunks;	/* struct reply_chunk, oldest first */
	struct reply_pool *pool;	/* where chunks come from and go; or
					 * NULL: allocated and freed */
	struct reply_seg *segs;		/* ring of segments (iov + owner) */
	/*
	 * The open segment: NULL, or the last segment, a copy whose bytes end
	 * at the free end of the last chunk, so that a copy queued next
	 * extends it.
	 */
	struct reply_seg *open;
	unsigned int seg_head;		/* first unsent segment */
	unsigned int seg_count;		/* segments queued */
	unsigned int seg_cap;		/* ring size */
	size_t head_off;		/* bytes of segs[seg_head] already sent */
	size_t pending;			/* bytes queued and unsent */
	bool failed;			/* an allocation failed since last
					 * cleared (by the user) */
};

/* A position in the queue, to take back what was queued after it. */
struct reply_mark {
	unsigned int seg_count;
	size_t last_len;		/* length of the then last segment */
	size_t pending;
	struct reply_chunk *tail;	/* the then last chunk, or NULL */
	size_t tail_used;
};

/**
 * reply_init() - an empty queue
 * @r: the queue
 *
 * Context: the thread that owns the connection; takes no lock.
 */
void reply_init(struct reply *r);

/**
 * reply_trim() - an idle queue gives its kept chunk back
 * @r: the queue; nothing happens while bytes are queued
 *
 * The last chunk is kept while a connection is busy, so that one answering
 * a request at a time allocates nothing; an idle connection gives it to
 * the pool (or frees it), so that it costs no chunk while idle.
 *
 * Context: the thread that owns the connection; takes no lock.
 */
void reply_trim(struct reply *r);

/**
 * reply_pool_drain() - free the chunks a pool holds
 * @pool: the pool; no queue uses it any more
 *
 * Context: the pool's thread, or after it ended.
 */
void reply_pool_drain(struct reply_pool *pool);

/**
 * reply_free() - drop every queued byte and item reference
 * @r: the queue; empty and reusable afterwards
 *
 * Context: the thread that owns the connection; takes no lock.
 */
void reply_free(struct reply *r);

/**
 * reply_add_copy() - queue a copy of @len bytes, the general way
 * @r:   the queue
 * @p:   the bytes
 * @len: their number
 *
 * What reply_add() does when the bytes do not fit the open segment.
 *
 * Return: 0, or -ENOMEM (nothing queued).
 *
 * Context: the thread that owns the connection; takes no lock.
 */
int reply_add_copy(struct reply *r, const void *p, size_t len);

/**
 * reply_add() - queue a copy of @len bytes
 * @r:   the queue
 * @p:   the bytes
 * @len: their number
 *
 * A short reply that follows another copied one (a run of "STORED\r\n")
 * is appended inline to the open segment: one copy and three additions.
 *
 * Return: 0, or -ENOMEM (nothing queued).
 *
 * Context: the thread that owns the connection; takes no lock.
 */
static inline int reply_add(struct reply *r, const void *p, size_t len)
{
	struct reply_seg *seg = r->open;

	if (seg && len <= REPLY_CHUNK_DATA - seg->chunk->used) {
		struct reply_chunk *c = seg->chunk;

		__builtin_memcpy(c->data + c->used, p, len);
		c->used += (unsigned int)len;
		seg->len += len;
		r->pending += len;
		return 0;
	}
	return reply_add_copy(r, p, len);
}

/**
 * reply_addf() - queue printf-formatted text
 * @r:   the queue
 * @fmt: format
 *
 * Return: 0, or -ENOMEM.
 *
 * Context: the thread that owns the connection; takes no lock.
 */
int reply_addf(struct reply *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/**
 * reply_add_ref() - queue @len bytes at @p, owned by item @it
 * @r:   the queue
 * @it:  the item the bytes live in; the caller's reference passes to the
 *       queue, which drops it after the bytes are written (or on failure)
 * @p:   the bytes inside @it
 * @len: their number
 *
 * Return: 0, or -ENOMEM (the reference is dropped).
 *
 * Context: the thread that owns the connection; takes no lock.
 */
int reply_add_ref(struct reply *r, struct item *it, const void *p, size_t len);

/**
 * reply_reserve_slow() - reply_reserve() when the open segment has no room
 * @r:   the queue
 * @len: at most REPLY_RESERVE_MAX
 *
 * Return: where to write, or NULL (-ENOMEM; nothing changed).
 *
 * Context: the thread that owns the connection; takes no lock.
 */
char *reply_reserve_slow(struct reply *r, size_t len);

/**
 * reply_commit_slow() - reply_commit() when there is no open segment
 * @r:   the queue
 * @len: bytes written, <= what was reserved
 *
 * Context: the thread that owns the connection; takes no lock.
 */
void reply_commit_slow(struct reply *r, size_t len);

/**
 * reply_reserve() - room to format up to @len bytes in place
 * @r:   the queue
 * @len: at most REPLY_RESERVE_MAX
 *
 * The bytes written at the returned pointer are queued by reply_commit(),
 * which cannot fail after a successful reserve. Nothing else may be queued
 * in between. When the open segment's chunk has the room, this is its
 * free end (inline).
 *
 * Return: where to write, or NULL (-ENOMEM; nothing changed).
 *
 * Context: the thread that owns the connection; takes no lock.
 */
static inline char *reply_reserve(struct reply *r, size_t len)
{
	struct reply_seg *seg = r->open;

	if (seg && len <= REPLY_RESERVE_MAX &&
	    len <= REPLY_CHUNK_DATA - seg->chunk->used)
		return seg->chunk->data + seg->chunk->used;
	return reply_reserve_slow(r, len);
}

/**
 * reply_commit() - queue bytes written after reply_reserve()
 * @r:   the queue
 * @len: bytes written, <= what was reserved
 *
 * With an open segment, the bytes were reserved at its end (a new chunk
 * closes it): it grows by @len, inline.
 *
 * Context: the thread that owns the connection; takes no lock.
 */
static inline void reply_commit(struct reply *r, size_t len)
{
	struct reply_seg *seg = r->open;

	if (seg) {
		seg->chunk->used += (unsigned int)len;
		seg->len += len;
		r->pending += len;
		return;
	}
	reply_commit_slow(r, len);
}

/**
 * reply_mark() - remember the end of the queue
 * @r: the queue
 * @m: filled in
 *
 * Context: the thread that owns the connection; takes no lock.
 */
void reply_mark(const struct reply *r, struct reply_mark *m);

/**
 * reply_rewind() - drop everything queued after a mark
 * @r: the queue
 * @m: from reply_mark() on @r, with no reply_consume() since
 *
 * Releases the item references queued after the mark.
 *
 * Context: the thread that owns the connection; takes no lock.
 */
void reply_rewind(struct reply *r, const struct reply_mark *m);

/**
 * reply_pending() - bytes queued and not yet written
 * @r: the queue
 *
 * Context: the thread that owns the connection; takes no lock.
 * Return: the number of bytes queued and not yet consumed.
 */
static inline size_t reply_pending(const struct reply *r)
{
	return r->pending;
}

/**
 * reply_iov() - the unsent bytes as iovecs, oldest first
 * @r:   the queue
 * @iov: room for @max iovecs
 * @max: their number
 *
 * Return: the number of iovecs filled (0 when nothing is pending).
 *
 * Context: the thread that owns the connection; takes no lock.
 */
int reply_iov(const struct reply *r, struct iovec *iov, int max);

/**
 * reply_consume() - mark @n bytes written
 * @r: the queue
 * @n: bytes written by the last writev(), <= reply_pending()
 *
 * Releases finished chunks and item references.
 *
 * Context: the thread that owns the connection; takes no lock.
 */
void reply_consume(struct reply *r, size_t n);

#endif /* ANCHORKV_REPLY_H */
