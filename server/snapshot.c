// SPDX-License-Identifier: MIT
/*
 * snapshot.c - the store written to a file and read back (see snapshot.h).
 */
#include "snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "alloc.h"
#include "compiler.h"
#include "item.h"
#include "store.h"
#include "version.h"

#define RECORD_HEAD	28u		/* a record before its key and value */
#define SAVE_BATCH	256u		/* items per store_range() call */
#define KEPT_IFLAGS	(ITEM_FETCHED | ITEM_STALE | ITEM_KEY_BINARY)

enum { BLOCK_ITEMS = 1, BLOCK_END = 2 };

static void put_u32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static void put_u64(unsigned char *p, uint64_t v)
{
	put_u32(p, (uint32_t)v);
	put_u32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const unsigned char *p)
{
	return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

/* The checksum of a block: its payload's, seeded by its head's first 16
 * bytes' (type, length, records), so that it covers both. */
static uint64_t block_sum(const unsigned char *head, const void *payload,
			  size_t len)
{
	return XXH3_64bits_withSeed(payload, len, XXH3_64bits(head, 16));
}

static void fail(struct snapshot_stats *st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fail(struct snapshot_stats *st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->why, sizeof(st->why), fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------------ */
/* saving                                                               */

struct writer {
	int fd;
	uint64_t written;
	uint64_t fail_after;
	unsigned char *buf;		/* the block being filled, after its head */
	size_t len, cap;
	uint32_t count;
	uint64_t blocks, items, value_bytes;
};

static int write_all(struct writer *w, const void *p, size_t len)
{
	const char *q = p;

	while (len) {
		size_t n = len;
		ssize_t r;

		if (w->fail_after) {	/* the fault tests' full disk */
			if (w->written >= w->fail_after) {
				errno = ENOSPC;
				return -1;
			}
			if (n > w->fail_after - w->written)
				n = (size_t)(w->fail_after - w->written);
		}
		r = write(w->fd, q, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		q += r;
		len -= (size_t)r;
		w->written += (uint64_t)r;
	}
	return 0;
}

static int flush_block(struct writer *w, uint32_t type)
{
	unsigned char head[SNAPSHOT_BLOCK_HEAD];

	put_u32(head, type);
	put_u32(head + 4, (uint32_t)w->len);
	put_u32(head + 8, w->count);
	put_u32(head + 12, 0);
	put_u64(head + 16, block_sum(head, w->buf, w->len));
	if (write_all(w, head, sizeof(head)) || write_all(w, w->buf, w->len))
		return -1;
	if (type == BLOCK_ITEMS)
		w->blocks++;
	w->len = 0;
	w->count = 0;
	return 0;
}

/* Room for @n more bytes in the block. Return: 0, or -1 (ENOMEM). */
static int reserve(struct writer *w, size_t n)
{
	unsigned char *p;
	size_t cap;

	if (w->len + n <= w->cap)
		return 0;
	cap = w->cap ? w->cap : SNAPSHOT_BLOCK + 4096;
	while (cap < w->len + n)
		cap *= 2;
	p = ak_realloc(w->buf, cap);
	if (!p) {
		errno = ENOMEM;
		return -1;
	}
	w->buf = p;
	w->cap = cap;
	return 0;
}

static int add_item(struct writer *w, const struct item *it,
		    int64_t unix_now, rel_time_t now)
{
	rel_time_t exptime = item_exptime(it);
	uint64_t expiry = 0;
	unsigned char *p;

	if (exptime) {
		int64_t at = unix_now + ((int64_t)exptime - (int64_t)now);

		expiry = at > 0 ? (uint64_t)at : 1;
	}
	if (reserve(w, RECORD_HEAD + it->nkey + it->nbytes))
		return -1;
	p = w->buf + w->len;
	p[0] = it->nkey;
	p[1] = READ_ONCE(it->iflags) & KEPT_IFLAGS;
	p[2] = p[3] = 0;
	put_u32(p + 4, item_flags(it));
	put_u32(p + 8, it->nbytes);
	put_u64(p + 12, expiry);
	put_u64(p + 20, READ_ONCE(it->cas));
	memcpy(p + RECORD_HEAD, item_key(it), it->nkey);
	memcpy(p + RECORD_HEAD + it->nkey, item_value((struct item *)it),
	       it->nbytes);
	w->len += RECORD_HEAD + it->nkey + it->nbytes;
	w->count++;
	w->items++;
	w->value_bytes += it->nbytes;
	if (w->len >= SNAPSHOT_BLOCK)
		return flush_block(w, BLOCK_ITEMS);
	return 0;
}

/* Every live item, a batch of SAVE_BATCH at a time, into blocks. */
static int save_items(struct store *s, struct writer *w,
		      struct snapshot_stats *st)
{
	struct store_bound from = { .kind = BOUND_MIN };
	struct store_bound to = { .kind = BOUND_MAX };
	struct item *items[SAVE_BATCH];
	char last[KEY_MAX_LENGTH];
	int n, i, err = 0;

	do {
		int64_t unix_now = store_unix_time(s);
		rel_time_t now = store_now(s);

		n = store_range(s, &from, &to, false, SAVE_BATCH, items);
		if (n < 0) {
			fail(st, "out of memory walking the store");
			return -ENOMEM;
		}
		for (i = 0; i < n; i++) {
			if (!err && add_item(w, items[i], unix_now, now))
				err = -errno;
			if (i == n - 1) {
				memcpy(last, item_key(items[i]),
				       items[i]->nkey);
				from.kind = BOUND_EXCL;
				from.key = last;
				from.nkey = items[i]->nkey;
			}
			item_put(items[i]);
		}
		if (err) {
			fail(st, "cannot write: %s", strerror(-err));
			return err;
		}
	} while (n == (int)SAVE_BATCH);
	return 0;
}

/* fsync of the directory that holds @path, so that the rename lasts. */
static int sync_dir(const char *path)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	int fd, rc;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	rc = fsync(fd);
	close(fd);
	return rc;
}

int snapshot_save(struct store *s, const char *path,
		  const struct snapshot_opts *o, struct snapshot_stats *st)
{
	unsigned char head[SNAPSHOT_HEADER];
	struct writer w = { .fd = -1, .fail_after = o->fail_after };
	char tmp[4096];
	int err = 0;

	memset(st, 0, sizeof(*st));
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		fail(st, "path too long");
		return -ENAMETOOLONG;
	}
	w.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (w.fd < 0) {
		err = -errno;
		fail(st, "cannot create %s: %s", tmp, strerror(errno));
		return err;
	}
	memset(head, 0, sizeof(head));
	memcpy(head, SNAPSHOT_MAGIC, sizeof(SNAPSHOT_MAGIC));
	put_u32(head + 8, SNAPSHOT_VERSION);
	put_u32(head + 12, SNAPSHOT_HEADER);
	strncpy((char *)head + 16, ANCHORKV_VERSION, 15);
	put_u64(head + 32, o->item_size_max);
	put_u64(head + 40, (uint64_t)o->unix_now);
	{
		/* the loader sizes its hash tables from it */
		struct store_stats ss;

		store_stats(s, &ss);
		put_u64(head + 48, ss.curr_str_items);
	}
	put_u64(head + 56, XXH3_64bits(head, 56));
	if (write_all(&w, head, sizeof(head)))
		goto write_failed;
	err = save_items(s, &w, st);
	if (err)
		goto out;
	if (w.count && flush_block(&w, BLOCK_ITEMS))
		goto write_failed;
	if (reserve(&w, 24)) {
		err = -ENOMEM;
		fail(st, "out of memory");
		goto out;
	}
	put_u64(w.buf, w.items);
	put_u64(w.buf + 8, w.blocks);
	put_u64(w.buf + 16, w.value_bytes);
	w.len = 24;
	if (flush_block(&w, BLOCK_END) || fsync(w.fd))
		goto write_failed;
	if (close(w.fd)) {
		w.fd = -1;
		goto write_failed;
	}
	w.fd = -1;
	if (rename(tmp, path) || sync_dir(path)) {
		err = -errno;
		fail(st, "cannot rename %s to %s: %s", tmp, path,
		     strerror(errno));
		goto out;
	}
	st->items = w.items;
	st->bytes = w.written;
	goto out;
write_failed:
	err = -errno;
	fail(st, "cannot write %s: %s", tmp, strerror(errno));
out:
	if (w.fd >= 0)
		close(w.fd);
	if (err)
		unlink(tmp);
	ak_free(w.buf);
	return err;
}

/* ------------------------------------------------------------------ */
/* loading                                                              */

/* Exactly @len bytes. Return: 0; 1 at a clean end before any byte; -1
 * short (truncated) or a read error (@err set). */
static int read_exact(const struct snapshot_src *src, void *buf, size_t len,
		      int *err)
{
	char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t r = src->read(src->arg, p + got, len - got);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			*err = -EIO;
			return -1;
		}
		if (r == 0) {
			*err = -EBADMSG;
			return got ? -1 : 1;
		}
		got += (size_t)r;
	}
	return 0;
}

struct loader {
	struct store *s;
	const struct snapshot_opts *o;
	struct snapshot_stats *st;
	uint64_t max_cas;
	uint64_t blocks, items, value_bytes;	/* as the end block counts */
	bool full;
};

/* Stores the records of one checked block. Return: 0 or a -errno. */
static int load_block(struct loader *l, const unsigned char *p, size_t len,
		      uint32_t count)
{
	const unsigned char *end = p + len;
	uint32_t i;

	for (i = 0; i < count; i++) {
		struct store_set set = { .op = STORE_OP_SET };
		uint32_t nkey, flags, nbytes;
		size_t limit;
		uint64_t expiry, cas;
		struct item *it;
		rel_time_t exptime = 0;
		int rc;

		if ((size_t)(end - p) < RECORD_HEAD)
			goto bad;
		nkey = p[0];
		flags = get_u32(p + 4);
		nbytes = get_u32(p + 8);
		expiry = get_u64(p + 12);
		cas = get_u64(p + 20);
		if (!nkey || (p[1] & ~KEPT_IFLAGS) || p[2] || p[3] ||
		    (size_t)(end - p) - RECORD_HEAD < nkey ||
		    (size_t)(end - p) - RECORD_HEAD - nkey < nbytes)
			goto bad;
		l->items++;
		l->value_bytes += nbytes;
		if (l->full ||
		    (expiry && (int64_t)expiry <= l->o->unix_now)) {
			if (!l->full)
				l->st->expired++;
			p += RECORD_HEAD + nkey + nbytes;
			continue;
		}
		if (expiry)
			exptime = store_exptime(l->s, (int64_t)expiry);
		limit = store_mem_limit_effective(l->s);
		if (limit && store_memory_used(l->s) +
		    item_total_size((const char *)p + RECORD_HEAD, nkey,
				    exptime, flags, nbytes) > limit) {
			l->full = true;		/* the rest is only checked */
			p += RECORD_HEAD + nkey + nbytes;
			continue;
		}
		rc = store_item_alloc(l->s, (const char *)p + RECORD_HEAD,
				      nkey, flags, exptime, nbytes, &it);
		if (rc == -E2BIG)
			goto bad;
		if (rc) {
			fail(l->st, "out of memory loading");
			return -ENOMEM;
		}
		it->iflags |= p[1] & KEPT_IFLAGS;
		memcpy(item_value(it), p + RECORD_HEAD + nkey, nbytes);
		set.has_cas_in = true;
		set.cas_in = cas;
		if (store_item_store_opts(l->s, it, &set) != STORE_STORED) {
			fail(l->st, "cannot store a loaded item (memory)");
			return -ENOMEM;
		}
		if (cas > l->max_cas)
			l->max_cas = cas;
		l->st->items++;
		p += RECORD_HEAD + nkey + nbytes;
	}
	if (p != end)
		goto bad;
	return 0;
bad:
	fail(l->st, "block %llu: a bad record",
	     (unsigned long long)l->blocks + 1);
	return -EBADMSG;
}

/*
 * The file's header: read, checked (magic, checksum, version, size,
 * max_item_size), and its item count given to store_presize(). Return: 0,
 * or the negative errno snapshot_read() returns (the reason in @st).
 */
static int read_header(struct store *s, const struct snapshot_src *src,
		       const struct snapshot_opts *o,
		       struct snapshot_stats *st)
{
	unsigned char head[SNAPSHOT_HEADER];
	int err = 0, rc;

	rc = read_exact(src, head, sizeof(head), &err);
	if (rc) {
		if (err == -EIO)
			fail(st, "cannot read the header");
		else
			fail(st, rc > 0 ? "an empty file" :
			     "truncated in its header");
		return err;
	}
	st->bytes = sizeof(head);
	if (memcmp(head, SNAPSHOT_MAGIC, sizeof(SNAPSHOT_MAGIC))) {
		fail(st, "not an anchorkv snapshot (bad magic)");
		return -EBADMSG;
	}
	if (!o->no_checksums && get_u64(head + 56) != XXH3_64bits(head, 56)) {
		fail(st, "the header's checksum does not match");
		return -EBADMSG;
	}
	if (get_u32(head + 8) != SNAPSHOT_VERSION) {
		fail(st, "format version %u (written by anchorkv %.15s); this "
		     "anchorkv reads version %u", get_u32(head + 8),
		     (const char *)head + 16, SNAPSHOT_VERSION);
		return -EPROTO;
	}
	if (get_u32(head + 12) != SNAPSHOT_HEADER) {
		fail(st, "a header of %u bytes", get_u32(head + 12));
		return -EBADMSG;
	}
	if (get_u64(head + 32) > o->item_size_max) {
		fail(st, "written with max_item_size %llu, above this server's "
		     "%zu", (unsigned long long)get_u64(head + 32),
		     o->item_size_max);
		return -ERANGE;
	}
	/* a hint, bounded by what the file could hold */
	if (!o->no_checksums)
		store_presize(s, get_u64(head + 48) < (1ull << 32) ?
			      get_u64(head + 48) : 0);
	return 0;
}

int snapshot_read(struct store *s, const struct snapshot_src *src,
		  const struct snapshot_opts *o, struct snapshot_stats *st)
{
	struct loader l = { .s = s, .o = o, .st = st };
	unsigned char bh[SNAPSHOT_BLOCK_HEAD];
	size_t max = SNAPSHOT_BLOCK + o->item_size_max + RECORD_HEAD +
		     KEY_MAX_LENGTH;
	unsigned char *buf = NULL;
	size_t cap = 0;
	int err = 0, rc;

	memset(st, 0, sizeof(*st));
	err = read_header(s, src, o, st);
	if (err)
		return err;
	for (;;) {
		uint32_t type, len, count;

		rc = read_exact(src, bh, sizeof(bh), &err);
		if (rc) {
			fail(st, err == -EIO ? "read error" :
			     "truncated: no end record");
			goto out;
		}
		type = get_u32(bh);
		len = get_u32(bh + 4);
		count = get_u32(bh + 8);
		if ((type != BLOCK_ITEMS && type != BLOCK_END) || len > max ||
		    get_u32(bh + 12) ||
		    (type == BLOCK_END && (len != 24 || count))) {
			fail(st, "block %llu: a bad head",
			     (unsigned long long)l.blocks + 1);
			err = -EBADMSG;
			goto out;
		}
		/* never NULL, even for an empty payload */
		if (len > cap || !buf) {
			unsigned char *p = ak_realloc(buf, len ? len : 1);

			if (!p) {
				fail(st, "out of memory");
				err = -ENOMEM;
				goto out;
			}
			buf = p;
			cap = len ? len : 1;
		}
		rc = read_exact(src, buf, len, &err);
		if (rc) {
			fail(st, err == -EIO ? "read error" :
			     "truncated in block %llu",
			     (unsigned long long)l.blocks + 1);
			if (rc > 0)
				err = -EBADMSG;
			goto out;
		}
		st->bytes += sizeof(bh) + len;
		if (!o->no_checksums &&
		    get_u64(bh + 16) != block_sum(bh, buf, len)) {
			fail(st, "block %llu: the checksum does not match",
			     (unsigned long long)l.blocks + 1);
			err = -EBADMSG;
			goto out;
		}
		if (type == BLOCK_END)
			break;
		err = load_block(&l, buf, len, count);
		if (err)
			goto out;
		l.blocks++;
		if (o->progress)
			o->progress(o->arg, st->items, st->bytes);
	}
	if (get_u64(buf) != l.items || get_u64(buf + 8) != l.blocks ||
	    get_u64(buf + 16) != l.value_bytes) {
		fail(st, "the end record counts %llu items in %llu blocks, "
		     "the file holds %llu in %llu",
		     (unsigned long long)get_u64(buf),
		     (unsigned long long)get_u64(buf + 8),
		     (unsigned long long)l.items,
		     (unsigned long long)l.blocks);
		err = -EBADMSG;
		goto out;
	}
	rc = read_exact(src, bh, 1, &err);
	if (rc <= 0) {
		fail(st, rc ? "read error" : "bytes after the end record");
		err = rc ? -EIO : -EBADMSG;
		goto out;
	}
	err = 0;
	st->full = l.full;
	store_cas_floor(s, l.max_cas);
out:
	ak_free(buf);
	return err;
}

static ssize_t fd_read(void *arg, void *buf, size_t len)
{
	return read(*(int *)arg, buf, len);
}

int snapshot_load(struct store *s, const char *path,
		  const struct snapshot_opts *o, struct snapshot_stats *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct snapshot_src src = { .read = fd_read, .arg = &fd };
	int err;

	memset(st, 0, sizeof(*st));
	if (fd < 0) {
		err = -errno;
		fail(st, "cannot open %s: %s", path, strerror(errno));
		return err;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	err = snapshot_read(s, &src, o, st);
	close(fd);
	return err;
}
