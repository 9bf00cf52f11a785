// SPDX-License-Identifier: MIT
/*
 * proto_dump.c - the key dumps of memcached's tools: "lru_crawler metadump",
 * "lru_crawler mgdump" and "stats cachedump" (PROTOCOL.md, "Admin
 * commands").
 *
 * A dump of millions of keys is never queued whole. The connection enters
 * PROTO_DUMP with a cursor (the last key sent); each step takes the next
 * DUMP_BATCH items in keyspace order from store_range(), which holds each
 * lock for a slice only, formats their lines, drops the references and
 * moves the cursor. proto_process() runs steps until the queued replies
 * pass REPLY_HIGH_WATER; the server writes them out and calls again, so a
 * dump costs one batch of memory whatever its size, and a client that
 * does not read stalls only its own dump. An item is listed as it was when
 * its batch was read: the dump is per-item consistent, as memcached's
 * crawler is, not a point-in-time image.
 *
 * anchorkv has no slab classes: class 1 (the one "stats items" shows)
 * holds every item; a dump of any other class is empty. The cls= of a
 * metadump line is the class memcached would give the item's size, as me
 * reports it.
 */
#include "proto_cmd.h"

#include <errno.h>

#include "alloc.h"
#include "base64.h"

#define DUMP_BATCH		64u	/* items per store_range() call */
#define CACHEDUMP_MAX		(2u * 1024 * 1024)	/* memcached's cap */
#define DUMP_CLASSES		64u	/* memcached's MAX_NUMBER_OF_SLAB_CLASSES */

/* The longest line of a dump: a metadump line, its key %-encoded. */
#define DUMP_LINE_MAX	(4 + 3 * KEY_MAX_LENGTH + 8 * 24 + 2)

enum dump_kind {
	DUMP_METADUMP,		/* key=... exp=... la=... (memcached-tool dump) */
	DUMP_MGDUMP,		/* mg <key>[ b] */
	DUMP_CACHEDUMP,		/* ITEM <key> [<n> b; <exp> s] */
};

struct proto_dump {
	enum dump_kind kind;
	bool started;			/* cursor holds the last key sent */
	uint8_t ncursor;
	char cursor[KEY_MAX_LENGTH];
	uint32_t left;			/* cachedump: lines still allowed; 0:
					 * no count limit */
	size_t bytes;			/* cachedump: bytes sent so far */
	/* the store's two clocks, read at the step: rel to unix time */
	int64_t unix_now;
	rel_time_t now;
};

static const char uri_hex[] = "0123456789ABCDEF";

/* memcached's uriencode(): all but [A-Za-z0-9._~-] as %XX. */
static char *put_uri(char *p, const char *key, size_t nkey)
{
	size_t i;

	for (i = 0; i < nkey; i++) {
		unsigned char c = (unsigned char)key[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		    c == '_' || c == '~') {
			*p++ = (char)c;
		} else {
			*p++ = '%';
			*p++ = uri_hex[c >> 4];
			*p++ = uri_hex[c & 15];
		}
	}
	return p;
}

#define PUT_LIT(p, s)	(memcpy((p), (s), sizeof(s) - 1), (p) + sizeof(s) - 1)

/* Unix time of store time @t. */
static uint64_t dump_unix(const struct proto_dump *d, rel_time_t t)
{
	int64_t u = d->unix_now + ((int64_t)t - (int64_t)d->now);

	return u > 0 ? (uint64_t)u : 0;
}

/*
 * memcached 1.6.45's metadump line: "key=<%-encoded> exp=<unix or -1>
 * la=<unix> cas=<n> fetch=<yes|no> cls=<n> size=<n> flags=<n> \n" (the
 * space before the newline is memcached's). Return: the end.
 */
static char *dump_meta_line(struct proto_conn *pc, const struct proto_dump *d,
			    const struct item *it, char *p)
{
	rel_time_t exptime = item_exptime(it);
	uint32_t flags = item_flags(it);
	size_t size = item_mc_size(it->nkey, flags, it->nbytes);

	p = put_uri(PUT_LIT(p, "key="), item_key(it), it->nkey);
	p = PUT_LIT(p, " exp=");
	p = exptime ? fmt_u64(p, dump_unix(d, exptime)) : PUT_LIT(p, "-1");
	p = fmt_u64(PUT_LIT(p, " la="), dump_unix(d, item_time(it)));
	p = fmt_u64(PUT_LIT(p, " cas="), pc->ctx->settings->cas_enabled ?
					 READ_ONCE(it->cas) : 0);
	p = READ_ONCE(it->iflags) & ITEM_FETCHED ? PUT_LIT(p, " fetch=yes") :
						   PUT_LIT(p, " fetch=no");
	p = fmt_u64(PUT_LIT(p, " cls="), item_mc_class(size));
	p = fmt_u64(PUT_LIT(p, " size="), size);
	p = fmt_u64(PUT_LIT(p, " flags="), flags);
	return PUT_LIT(p, " \n");
}

/* "mg <key>\r\n", or "mg <base64> b\r\n" for a binary key. */
static char *dump_mg_line(const struct item *it, char *p)
{
	bool coded = READ_ONCE(it->iflags) & ITEM_KEY_BINARY;

	p = put_listed_key(PUT_LIT(p, "mg "), item_key(it), it->nkey, coded);
	return coded ? PUT_LIT(p, " b\r\n") : PUT_LIT(p, "\r\n");
}

/*
 * memcached's cachedump line, "ITEM <key> [<bytes> b; <unix exp or 0>
 * s]\r\n". Return: the end, or NULL for an item it leaves out (a binary
 * key) or one past the 2 MB cap (*@full set).
 */
static char *dump_cache_line(struct proto_dump *d, const struct item *it,
			     char *p, bool *full)
{
	rel_time_t exptime = item_exptime(it);
	char *start = p;

	if (READ_ONCE(it->iflags) & ITEM_KEY_BINARY)
		return NULL;
	p = put_bytes(PUT_LIT(p, "ITEM "), item_key(it), it->nkey);
	p = fmt_u64(PUT_LIT(p, " ["), it->nbytes);
	p = fmt_u64(PUT_LIT(p, " b; "), exptime ? dump_unix(d, exptime) : 0);
	p = PUT_LIT(p, " s]\r\n");
	/* memcached keeps room for its "END\r\n" and a NUL */
	if (d->bytes + (size_t)(p - start) + 6 > CACHEDUMP_MAX) {
		*full = true;
		return NULL;
	}
	d->bytes += (size_t)(p - start);
	return p;
}

void proto_dump_release(struct proto_conn *pc)
{
	ak_free(pc->dump);
	pc->dump = NULL;
}

/* The line that ends a dump of @kind: "EN" for mgdump, else "END". */
static void dump_end_line(struct proto_conn *pc, enum dump_kind kind)
{
	if (kind == DUMP_MGDUMP)
		proto_out(pc, STR_AND_LEN("EN\r\n"));
	else
		proto_out(pc, STR_AND_LEN("END\r\n"));
}

/* The dump is over (its last line queued, or the connection closing):
 * its state goes, and the engine reads commands again. */
static void dump_finish(struct proto_conn *pc)
{
	proto_dump_release(pc);
	if (pc->state == PROTO_DUMP)
		pc->state = PROTO_CMD;
}

void proto_dump_step(struct proto_conn *pc)
{
	struct proto_dump *d = pc->dump;
	struct store_bound from = { .kind = BOUND_MIN };
	struct store_bound to = { .kind = BOUND_MAX };
	struct item *items[DUMP_BATCH];
	bool full = false;
	int n, i;

	if (d->started) {
		from.kind = BOUND_EXCL;
		from.key = d->cursor;
		from.nkey = d->ncursor;
	}
	d->unix_now = store_unix_time(pc->ctx->store);
	d->now = store_now(pc->ctx->store);
	n = store_range(pc->ctx->store, &from, &to, false, DUMP_BATCH, items);
	if (n < 0) {
		/* the lines so far stand; the error line tells it stopped */
		proto_out(pc, STR_AND_LEN("SERVER_ERROR out of memory\r\n"));
		dump_finish(pc);
		return;
	}
	for (i = 0; i < n; i++) {
		struct item *it = items[i];
		char *p, *q = NULL;

		if (i == n - 1) {
			memcpy(d->cursor, item_key(it), it->nkey);
			d->ncursor = it->nkey;
			d->started = true;
		}
		if (full || pc->state == PROTO_CLOSED) {
			item_put(it);
			continue;
		}
		p = reply_reserve(&pc->out, DUMP_LINE_MAX);
		if (unlikely(!p)) {
			proto_fail(pc);
			item_put(it);
			continue;
		}
		switch (d->kind) {
		case DUMP_METADUMP:
			q = dump_meta_line(pc, d, it, p);
			break;
		case DUMP_MGDUMP:
			q = dump_mg_line(it, p);
			break;
		case DUMP_CACHEDUMP:
			q = dump_cache_line(d, it, p, &full);
			break;
		}
		if (q) {
			reply_commit(&pc->out, (size_t)(q - p));
			if (d->kind == DUMP_CACHEDUMP && d->left &&
			    !--d->left)
				full = true;
		}
		item_put(it);
	}
	if (pc->state == PROTO_CLOSED || full || n < (int)DUMP_BATCH) {
		dump_end_line(pc, d->kind);	/* nothing when closing */
		dump_finish(pc);
	}
}

/*
 * Starts a dump of @kind: the first lines are queued now, the rest by
 * proto_dump_step() as the client reads.
 */
static void dump_start(struct proto_conn *pc, enum dump_kind kind,
		       uint32_t limit, bool every)
{
	struct proto_dump *d;

	if (kind != DUMP_CACHEDUMP)
		proto_out(pc, STR_AND_LEN("OK\r\n"));
	if (!every) {
		dump_end_line(pc, kind);
		return;
	}
	d = ak_malloc(sizeof(*d));
	if (!d) {
		proto_out(pc, STR_AND_LEN("SERVER_ERROR out of memory\r\n"));
		return;
	}
	d->kind = kind;
	d->started = false;
	d->ncursor = 0;
	d->left = limit;
	d->bytes = 0;
	pc->dump = d;
	if (pc->state == PROTO_CMD)
		pc->state = PROTO_DUMP;
	proto_dump_step(pc);
}

/*
 * "all", "hash" or a list "<id>,<id>,..." of classes 1..63, as memcached
 * reads it (empty pieces are skipped). Return: 0 and *@every (whether
 * class 1, which holds every item here, is asked for); -EINVAL for a bad
 * class.
 */
static int dump_classes(const struct token *t, bool *every)
{
	const char *p = t->p, *end = t->p + t->len;

	*every = false;
	if (TOKEN_IS(t, "all") || TOKEN_IS(t, "hash")) {
		*every = true;
		return 0;
	}
	while (p < end) {
		const char *q = memchr(p, ',', (size_t)(end - p));
		struct token id = { .p = p, .len = (size_t)((q ? q : end) - p) };
		uint32_t sid;

		if (id.len) {
			if (!parse_u32(&id, &sid) || sid < 1 ||
			    sid >= DUMP_CLASSES)
				return -EINVAL;
			if (sid == 1)
				*every = true;
		}
		p = q ? q + 1 : end;
	}
	return 0;
}

/*
 * "lru_crawler metadump|mgdump <classes>". memcached's other crawler
 * commands (crawl, tocrawl, sleep, enable, disable) tune a crawler that
 * anchorkv does not have: its expiry hand always runs. They answer ERROR.
 */
void proto_lru_crawler(struct proto_conn *pc, const struct parse_line *l,
		       int arg)
{
	enum dump_kind kind;
	bool every;

	(void)arg;
	if (l->ntok == 3 && TOKEN_IS(&l->tok[1], "metadump")) {
		kind = DUMP_METADUMP;
	} else if (l->ntok == 3 && TOKEN_IS(&l->tok[1], "mgdump")) {
		kind = DUMP_MGDUMP;
	} else {
		proto_out(pc, STR_AND_LEN("ERROR\r\n"));
		return;
	}
	if (dump_classes(&l->tok[2], &every)) {
		proto_out(pc, STR_AND_LEN("BADCLASS invalid class id\r\n"));
		return;
	}
	dump_start(pc, kind, 0, every);
}

void proto_stats_cachedump(struct proto_conn *pc, const struct parse_line *l)
{
	uint32_t id, limit;

	if (l->ntok < 4) {
		proto_out(pc, STR_AND_LEN("CLIENT_ERROR bad command line\r\n"));
		return;
	}
	if (!parse_u32(&l->tok[2], &id) || !parse_u32(&l->tok[3], &limit)) {
		proto_out(pc, STR_AND_LEN(PROTO_BAD_FORMAT));
		return;
	}
	if (id >= DUMP_CLASSES) {
		proto_out(pc, STR_AND_LEN("CLIENT_ERROR Illegal slab id\r\n"));
		return;
	}
	dump_start(pc, DUMP_CACHEDUMP, limit, id == 1);
}
