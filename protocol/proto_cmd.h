/* SPDX-License-Identifier: MIT */
/*
 * proto_cmd.h - the command table's types and what the protocol engine
 * (proto.c) and its command families share; not for users of the engine,
 * who include proto.h. (Not named proto_internal.h: this is the commands'
 * interface, below the engine and the families alike, not proto.c's
 * private part.)
 *
 *   proto.c            the engine: proto_process(), the command line, the
 *                      command table and its dispatch
 *   proto_data.c       the data block reader of the storage commands
 *   proto_retrieval.c  get, gets, gat, gats; the VALUE line of a hit
 *   proto_storage.c    set, add, replace, append, prepend, cas
 *   proto_update.c     delete, incr, decr, touch
 *   proto_admin.c      flush_all, verbosity, cache_memlimit, shutdown,
 *                      stats, debug
 *   proto_dump.c       lru_crawler metadump and mgdump, stats cachedump
 *   proto_range.c      range, ranges, rrange, rranges, keys, count,
 *                      delete_range
 *   proto_auth.c       the "set <user> <password>" of -Y
 *   proto_meta.c       mg, me, mn (their flags: meta.c)
 *   proto_meta_store.c ms, md, ma
 *
 * Synchronization: everything here runs on the connection's worker thread;
 * the store takes its own locks.
 */
#ifndef ANCHORKV_PROTO_CMD_H
#define ANCHORKV_PROTO_CMD_H

#include "proto.h"

#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "compiler.h"
#include "item.h"
#include "parse.h"
#include "prefix_stats.h"
#include "store.h"

enum get_kind {
	GET_GET,
	GET_GETS,
	GET_GAT,
	GET_GATS,
};

#define STR_AND_LEN(s)	(s), (sizeof(s) - 1)
#define CMD_IS(l, lit)	TOKEN_IS(&(l)->tok[0], lit)

#define PROTO_BAD_FORMAT	"CLIENT_ERROR bad command line format\r\n"
#define PROTO_OPAQUE_TOO_LONG	"CLIENT_ERROR opaque token too long\r\n"
#define PROTO_COPY_MAX	512u	/* values up to this are copied into replies
				 * (store_req.buf), not referenced */

/*
 * Out of memory for a reply: the connection cannot go on. What was queued
 * before is still sent, then the connection closes; nothing more is queued
 * (every queuing helper checks), so that the client sees a cut reply and
 * EOF, never an END after a hole.
 */
static inline void proto_fail(struct proto_conn *pc)
{
	pc->state = PROTO_CLOSED;
}

/*
 * Queues @len bytes, always (an error or a value line). Inline: the length
 * is a constant at every call, so reply_add()'s copy becomes a move or two.
 */
static __attribute__((always_inline)) inline void
proto_out(struct proto_conn *pc, const char *s, size_t len)
{
	if (unlikely(pc->state == PROTO_CLOSED))
		return;
	if (unlikely(reply_add(&pc->out, s, len) < 0))
		proto_fail(pc);
}

/*
 * Queues @it's value, referenced (the reply holds the caller's reference
 * on @it until it is sent), and the "\r\n" after it, copied: the item does
 * not keep it (item.h).
 */
static inline void proto_value_ref(struct proto_conn *pc, struct item *it)
{
	if (unlikely(reply_add_ref(&pc->out, it, item_value(it),
				   it->nbytes) < 0))
		proto_fail(pc);
	else
		proto_out(pc, "\r\n", 2);
}

/* Queues a reply line unless the command said noreply. */
static __attribute__((always_inline)) inline void
proto_reply(struct proto_conn *pc, const char *s, size_t len)
{
	if (!pc->noreply)
		proto_out(pc, s, len);
}

/* Whether the last token of the line is "noreply" (memcached's rule: any
 * command that takes it looks only there). */
static inline bool line_noreply(const struct parse_line *l)
{
	return l->ntok && TOKEN_IS(&l->tok[l->ntok - 1], "noreply");
}

/* "<prefix><n>\r\n", unless noreply. */
static inline void proto_reply_num(struct proto_conn *pc, const char *prefix,
				   size_t plen, uint64_t n)
{
	char *p, *q;

	if (pc->noreply || unlikely(pc->state == PROTO_CLOSED))
		return;
	p = reply_reserve(&pc->out, plen + 22);
	if (unlikely(!p)) {
		proto_fail(pc);
		return;
	}
	memcpy(p, prefix, plen);
	q = fmt_u64(p + plen, n);
	*q++ = '\r';
	*q++ = '\n';
	reply_commit(&pc->out, (size_t)(q - p));
}

/*
 * The commands, as the command table of proto.c names them. A get line
 * (CMDF_GET) is answered key by key as it streams in; every other line is
 * split into tokens and handed to its command's handler.
 */
enum proto_cmd {
	CMD_GET, CMD_GETS, CMD_GAT, CMD_GATS, CMD_BGET,
	CMD_SET, CMD_ADD, CMD_REPLACE, CMD_APPEND, CMD_PREPEND, CMD_CAS,
	CMD_DELETE, CMD_INCR, CMD_DECR, CMD_TOUCH,
	CMD_RANGE, CMD_RANGES, CMD_RRANGE, CMD_RRANGES, CMD_KEYS, CMD_COUNT,
	CMD_DELETE_RANGE,
	CMD_FLUSH_ALL, CMD_VERBOSITY, CMD_VERSION, CMD_QUIT, CMD_SHUTDOWN,
	CMD_STATS, CMD_DEBUG, CMD_CACHE_MEMLIMIT,
	CMD_LRU_CRAWLER, CMD_SNAPSHOT, CMD_REFRESH_CERTS,
	CMD_MG, CMD_MN, CMD_ME, CMD_MS, CMD_MD, CMD_MA,
	CMD_NR,
	CMD_UNKNOWN = CMD_NR,
};

/*
 * A command's handler: @l is the whole line split on spaces (the command
 * word is tok[0]) and holds as many tokens as the command's row allows;
 * @arg is the row's. It answers through pc->out (or, with noreply, not)
 * and may move the engine to another state (PROTO_DATA for a data block,
 * PROTO_DUMP, PROTO_CLOSED). Every handler below: Context: the
 * connection's worker thread, no lock held; the store takes its own.
 */
typedef void proto_cmd_fn(struct proto_conn *pc, const struct parse_line *l,
			  int arg);

#define CMDF_GET	0x01	/* a get line: streamed, arg is an enum get_kind */

/* One row of the command table. */
struct proto_cmd_def {
	enum proto_cmd cmd;
	const char *name;
	uint8_t len;		/* strlen(name) */
	uint8_t min_tok;	/* tokens, the command word included: fewer */
	uint8_t max_tok;	/* or more are answered "ERROR" */
	uint8_t flags;		/* CMDF_ */
	proto_cmd_fn *run;	/* NULL for a get line */
	int arg;
};

#ifdef __SSE2__
/* Bit i set: byte @p[i] of the sixteen at @p is a newline or a NUL. */
static inline unsigned int proto_nl_nul_mask16(const char *p)
{
	const __m128i v = _mm_loadu_si128((const __m128i *)p);

	return (unsigned int)_mm_movemask_epi8(
		_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n')),
			     _mm_cmpeq_epi8(v, _mm_setzero_si128())));
}
#endif

/*
 * The first newline or NUL in [@p, @p + @len), or NULL: one pass over the
 * bytes where two memchr() calls would take two. With SSE2, sixteen bytes
 * a step, the last step's load ending at the last byte (it overlaps bytes
 * already seen, which the mask drops); short buffers go a byte at a time.
 */
static inline const char *proto_nl_or_nul(const char *p, size_t len)
{
#ifdef __SSE2__
	const char *end = p + len;
	unsigned int m;

	if (len >= 16) {
		for (; end - p >= 16; p += 16) {
			m = proto_nl_nul_mask16(p);
			if (m)
				return p + __builtin_ctz(m);
		}
		if (p == end)
			return NULL;
		/* the last 16 bytes; those before @p were looked at */
		m = proto_nl_nul_mask16(end - 16) >> (16 - (end - p));
		return m ? p + __builtin_ctz(m) : NULL;
	}
	for (; len; p++, len--)
		if (*p == '\n' || *p == '\0')
			return p;
	return NULL;
#else
	const char *nl = memchr(p, '\n', len);
	const char *z = memchr(p, '\0', nl ? (size_t)(nl - p) : len);

	return z ? z : nl;
#endif
}

/**
 * proto_line() - find a command line in the bytes at hand
 * @buf:  the line's first byte
 * @len:  the bytes at hand from @buf
 * @endp: set to the end of the line's content when the line is complete
 *
 * As memcached: "\r\n" or "\n" ends a line, but a line of a lone "\r"
 * keeps it; and the line's content ends at its first NUL, because
 * memcached's tokenizer reads C strings: "get a\0b" is "get a", "incr \0
 * 1" is "incr " (ERROR), and what follows the NUL, a noreply included, is
 * not read. No NUL reaches a command's tokens.
 *
 * Context: any.
 * Return: the line's newline, or NULL while it has not arrived.
 */
static inline const char *proto_line(const char *buf, size_t len,
				     const char **endp)
{
	const char *nl = proto_nl_or_nul(buf, len);

	if (unlikely(nl && *nl == '\0')) {
		/* the content ends at the NUL; the line at its newline */
		*endp = nl;
		return memchr(nl, '\n', (size_t)(buf + len - nl));
	}
	if (nl) {
		*endp = nl;
		if (nl - buf > 1 && nl[-1] == '\r')
			(*endp)--;
	}
	return nl;
}

/*
 * proto_bin.c: one binary request from @buf (PROTO_CMD of a binary
 * connection). Return: the bytes of its header, extras and key once they
 * are all in (its value, if any, is then read by PROTO_DATA or dropped by
 * PROTO_SWALLOW); 0 while they are not, or when the connection closes.
 */
size_t proto_bin_command(struct proto_conn *pc, const char *buf, size_t len);

/* proto_retrieval.c */
#define VALUE_CAS	0x1u	/* proto_value(): the cas unique too */
#define VALUE_LISTED	0x2u	/* a range reply: a key stored as base64
				 * goes encoded, " b" at the line's end */
/**
 * proto_value() - queue one VALUE reply: its line, the value and "\r\n"
 * @pc:  the connection
 * @it:  the item; the caller's reference passes to the reply queue
 * @how: VALUE_CAS, VALUE_LISTED
 *
 * Small values are copied, larger ones queued by reference (reply.h).
 * Context: worker thread; no lock held.
 */
void proto_value(struct proto_conn *pc, struct item *it, unsigned int how);

/**
 * proto_get_begin() - start a get line (get, gets, gat, gats) after its
 * command word
 * @pc:   the connection
 * @kind: an enum get_kind
 * @p:    the rest of the line, or of what has arrived of it
 * @end:  its end
 * @eol:  whether the line's end is in (else PROTO_GET_CONT takes the rest)
 *
 * Each key is answered as it is read, so a get line of any length costs
 * no buffer.
 * Context: worker thread; no lock held.
 * Return: how far the bytes were used, or NULL when a gat's exptime is
 * itself cut (the caller waits for more).
 */
const char *proto_get_begin(struct proto_conn *pc, int kind, const char *p,
			    const char *end, bool eol);

/**
 * proto_get_cont() - PROTO_GET_CONT: go on with a get line's keys
 * @pc:  the connection
 * @buf: the bytes at hand
 * @len: their number
 *
 * Context: worker thread; no lock held.
 * Return: bytes used.
 */
size_t proto_get_cont(struct proto_conn *pc, const char *buf, size_t len);

/*
 * proto_data.c: the data block reader, for every command that sends one.
 * proto_data_begin(): the next @total bytes (the value, then in the text
 * protocols its "\r\n": @total is @it's nbytes and at most 2 more) are
 * copied as they arrive, the value into @it and what follows it into
 * pc->data_end; then @complete gets @it (and the caller's reference on
 * it) with the engine back in PROTO_CMD.
 * proto_swallow_begin(): the next @total bytes are dropped (a refused
 * block); nothing once the connection is closing.
 */
void proto_data_begin(struct proto_conn *pc, struct item *it, size_t total,
		      void (*complete)(struct proto_conn *pc,
				       struct item *it));
void proto_swallow_begin(struct proto_conn *pc, size_t total);
/* PROTO_DATA, PROTO_SWALLOW: take what has arrived. Return: bytes used. */
size_t proto_data(struct proto_conn *pc, const char *buf, size_t len);
size_t proto_swallow(struct proto_conn *pc, size_t len);

/* The cas counters of a store in cas mode (cas, ms with C). */
static inline void proto_count_cas(struct proto_stats *st,
				   enum store_result res)
{
	if (res == STORE_STORED)
		st->cas_hits++;
	else if (res == STORE_EXISTS)
		st->cas_badval++;
	else if (res == STORE_NOT_FOUND)
		st->cas_misses++;
}

/* The counters of a lookup that reads (get) or touches (touch, gat). */
static inline void proto_count_lookup(struct proto_stats *st, bool touch,
				      bool hit)
{
	if (touch) {
		st->cmd_touch++;
		if (hit)
			st->touch_hits++;
		else
			st->touch_misses++;
	} else {
		st->cmd_get++;
		if (hit)
			st->get_hits++;
		else
			st->get_misses++;
	}
}

/* proto_storage.c */
/**
 * proto_set_fast() - the usual set, line and data block at once
 * @pc:  the connection (PROTO_CMD)
 * @buf: the bytes at hand, from the line's first
 * @len: their number
 *
 * Takes a "set" line that parse_set_fast() accepts and whose whole data
 * block is in @buf: the value goes straight into the item, stored while
 * the key is at hand. Anything else is left to the general path.
 * Context: worker thread; no lock held.
 * Return: bytes used; 0 when the general path must read the line.
 */
size_t proto_set_fast(struct proto_conn *pc, const char *buf, size_t len);
proto_cmd_fn proto_store;	/* arg: the enum store_op */

/* proto_update.c; arith's arg: true for incr */
proto_cmd_fn proto_delete;
proto_cmd_fn proto_arith;
proto_cmd_fn proto_touch;

/* proto_admin.c */
proto_cmd_fn proto_flush_all;
proto_cmd_fn proto_verbosity;
proto_cmd_fn proto_cache_memlimit;
proto_cmd_fn proto_lru_crawler;
proto_cmd_fn proto_snapshot;
proto_cmd_fn proto_refresh_certs;

/*
 * proto_dump.c: the key dumps (lru_crawler metadump and mgdump: a handler
 * above, then PROTO_DUMP). proto_stats_cachedump() answers "stats
 * cachedump <class> <limit>" (@l: its line) at once. proto_dump_step()
 * queues the next batch of a dump in progress, in key order, and ends it
 * (its END line, the engine back in PROTO_CMD) after the last; the
 * connection calls it while the reply queue has room. proto_dump_release()
 * frees a dump's state (a closing connection, or the dump's end).
 * Context: worker thread; no lock held (the store's range walk takes its
 * own).
 */
void proto_stats_cachedump(struct proto_conn *pc, const struct parse_line *l);
void proto_dump_step(struct proto_conn *pc);
void proto_dump_release(struct proto_conn *pc);
proto_cmd_fn proto_version;
proto_cmd_fn proto_quit;
proto_cmd_fn proto_shutdown;
proto_cmd_fn proto_stats;
#ifdef AK_FAULT_INJECTION
proto_cmd_fn proto_debug;
#endif

/* proto_range.c; range's arg: an enum range_kind, | RANGE_REVERSE */
enum range_kind {
	RANGE_VALUES,		/* range, rrange */
	RANGE_VALUES_CAS,	/* ranges, rranges */
	RANGE_KEYS,		/* keys */
};

#define RANGE_REVERSE	0x10	/* rrange, rranges: from <to> down */

proto_cmd_fn proto_range;
proto_cmd_fn proto_count;
proto_cmd_fn proto_delete_range;

/* Queues @s, a whole line, always (an error chosen at run time). */
static inline void proto_out_str(struct proto_conn *pc, const char *s)
{
	proto_out(pc, s, strlen(s));
}

/* proto_meta.c */
struct meta_req;
/*
 * "<code>[ O<token>][ k<key>]\r\n": a meta reply that echoes only the O
 * and k flags, in the order they came, unless @quiet; an O token too long
 * is answered with its error instead (never quiet).
 */
void proto_meta_code(struct proto_conn *pc, const char *code,
		     const struct meta_req *m, bool quiet);
/*
 * The key and flags of an mg or md line (tok[1], then from tok[2]) into
 * @m, refused as every meta command refuses them. Return: false when the
 * error was answered.
 */
bool proto_meta_read(struct proto_conn *pc, const struct parse_line *l,
		     struct meta_req *m);
proto_cmd_fn proto_mg;
proto_cmd_fn proto_mn;
proto_cmd_fn proto_me;

/* proto_meta_store.c */
proto_cmd_fn proto_ms;
proto_cmd_fn proto_md;
proto_cmd_fn proto_ma;

/**
 * proto_auth_command() - PROTO_CMD before a -Y login (proto_auth.c)
 * @pc:  the connection, not yet authenticated
 * @buf: the bytes at hand
 * @len: their number
 *
 * As memcached 1.6: only "set <key> <flags> <exptime> <bytes>" whose data
 * is "<user> <password>" is read; anything else is answered
 * "CLIENT_ERROR unauthenticated". A login counts in auth_cmds, a failed
 * one in auth_errors (not slowed down, as memcached's are not).
 * Context: worker thread; no lock held.
 * Return: bytes used; 0 while the request is incomplete (or closing).
 */
size_t proto_auth_command(struct proto_conn *pc, const char *buf, size_t len);

#endif /* ANCHORKV_PROTO_CMD_H */
