// SPDX-License-Identifier: MIT
/*
 * proto.c - the memcached text protocol engine (see proto.h, PROTOCOL.md).
 *
 * proto_process() is a small state machine over the connection's input:
 *
 *   PROTO_CMD      a command line; complete lines are parsed in place and
 *                  run. A get line is answered key by key, and may leave
 *                  the engine in PROTO_GET_CONT when it stops half way.
 *   PROTO_DATA     the data block of a storage command, copied into the
 *                  item as it arrives, then stored.
 *   PROTO_SWALLOW  the data block of a refused storage command, dropped.
 *   PROTO_GET_CONT the rest of a get line: more keys, or (get_skip) bytes
 *                  to drop up to the newline after a bad key.
 *   PROTO_CLOSED   the connection is to be closed.
 *
 * Replies go to pc->out: fixed lines copied, values by reference to the
 * item. Every reply string is memcached 1.6's.
 *
 * Synchronization: a proto_conn is used by its connection's worker only;
 * the store takes its own locks.
 */
#include "proto.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#include "alloc.h"
#include "compiler.h"
#include "item.h"
#include "parse.h"
#include "store.h"

enum get_kind {
	GET_GET,
	GET_GETS,
	GET_GAT,
	GET_GATS,
};

#define GET_LEAD_MAX	100	/* spaces before a streamed get's command */
#define RANGE_DEFAULT	100u	/* <count> when none is given */
#define RANGE_STACK	128u	/* ranges this long need no allocation */
#define PROTO_COPY_MAX	512u	/* values up to this are copied into replies */

/* the longest VALUE line: "VALUE " key " " flags " " bytes " " cas "\r\n" */
#define VALUE_LINE_MAX	(6 + KEY_MAX_LENGTH + 1 + 10 + 1 + 10 + 1 + 20 + 2)

_Static_assert(VALUE_LINE_MAX + PROTO_COPY_MAX + 2 <= REPLY_RESERVE_MAX,
	       "a copied value and its line fit one reserve");

#define STR_AND_LEN(s)	(s), (sizeof(s) - 1)

static const char s_bad_format[] = "CLIENT_ERROR bad command line format\r\n";

static inline bool get_kind_touches(int kind)
{
	return kind == GET_GAT || kind == GET_GATS;
}

static inline bool get_kind_cas(int kind)
{
	return kind == GET_GETS || kind == GET_GATS;
}

void proto_conn_init(struct proto_conn *pc, struct proto_ctx *ctx)
{
	memset(pc, 0, sizeof(*pc));
	pc->ctx = ctx;
	reply_init(&pc->out);
	pc->state = PROTO_CMD;
	pc->authed = !ctx->settings->auth_enabled;
}

void proto_conn_release(struct proto_conn *pc)
{
	if (pc->pending) {
		item_put(pc->pending);
		pc->pending = NULL;
	}
	reply_free(&pc->out);
	pc->state = PROTO_CLOSED;
}

/*
 * Out of memory for a reply: the connection cannot go on. What was queued
 * before is still sent, then the connection closes; nothing more is queued
 * (every queuing helper checks), so that the client sees a cut reply and
 * EOF, never an END after a hole.
 */
static void proto_fail(struct proto_conn *pc)
{
	pc->state = PROTO_CLOSED;
}

/* Queues @len bytes, always (an error or a value line). */
static void proto_out(struct proto_conn *pc, const char *s, size_t len)
{
	if (unlikely(pc->state == PROTO_CLOSED))
		return;
	if (unlikely(reply_add(&pc->out, s, len) < 0))
		proto_fail(pc);
}

/* Queues a reply line unless the command said noreply. */
static void proto_reply(struct proto_conn *pc, const char *s, size_t len)
{
	if (!pc->noreply)
		proto_out(pc, s, len);
}

/*
 * proto_out() and proto_reply() inlined, for the replies of the hot paths:
 * the length is a constant there, so reply_add()'s copy becomes a move or
 * two.
 */
static __attribute__((always_inline)) inline void
proto_out_hot(struct proto_conn *pc, const char *s, size_t len)
{
	if (unlikely(pc->state == PROTO_CLOSED))
		return;
	if (unlikely(reply_add(&pc->out, s, len) < 0))
		proto_fail(pc);
}

static __attribute__((always_inline)) inline void
proto_reply_hot(struct proto_conn *pc, const char *s, size_t len)
{
	if (!pc->noreply)
		proto_out_hot(pc, s, len);
}

/* "<prefix><n>\r\n", unless noreply. */
static void proto_reply_num(struct proto_conn *pc, const char *prefix,
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

/* Whether the last token of the line is "noreply" (memcached's rule: any
 * command that takes it looks only there). */
static inline bool line_noreply(const struct parse_line *l)
{
	return l->ntok && TOKEN_IS(&l->tok[l->ntok - 1], "noreply");
}

/*
 * "VALUE <key> <flags> <bytes>[ <cas>]\r\n" then the value and its "\r\n"
 * by reference. Takes over the caller's reference on @it.
 */
static void proto_value(struct proto_conn *pc, struct item *it, bool cas)
{
	char *p, *q;

	if (unlikely(pc->state == PROTO_CLOSED)) {
		item_put(it);
		return;
	}
	p = reply_reserve(&pc->out, VALUE_LINE_MAX);
	if (unlikely(!p)) {
		item_put(it);
		proto_fail(pc);
		return;
	}
	memcpy(p, "VALUE ", 6);
	q = put_bytes(p + 6, item_key(it), it->nkey);
	*q++ = ' ';
	q = fmt_u64(q, it->flags);
	*q++ = ' ';
	q = fmt_u64(q, it->nbytes);
	if (cas) {
		*q++ = ' ';
		q = fmt_u64(q, pc->ctx->settings->cas_enabled ? it->cas : 0);
	}
	*q++ = '\r';
	*q++ = '\n';
	reply_commit(&pc->out, (size_t)(q - p));
	if (unlikely(reply_add_ref(&pc->out, it, item_value(it),
				   (size_t)it->nbytes + 2) < 0))
		proto_fail(pc);
}

/* ------------------------------------------------------------------ */
/* get, gets, gat, gats                                                 */

/*
 * A hit copied by store_get_copy(): "VALUE <key> <flags> <bytes>[ <cas>]",
 * then the value, all copied into the reply.
 */
static void proto_value_copy(struct proto_conn *pc, const char *key,
			     size_t nkey, const struct store_value *val,
			     const char *data, bool cas)
{
	char *p, *q;

	p = reply_reserve(&pc->out, VALUE_LINE_MAX + (size_t)val->nbytes + 2);
	if (unlikely(!p)) {
		proto_fail(pc);
		return;
	}
	memcpy(p, "VALUE ", 6);
	q = put_bytes(p + 6, key, nkey);
	*q++ = ' ';
	q = fmt_u64(q, val->flags);
	*q++ = ' ';
	q = fmt_u64(q, val->nbytes);
	if (cas) {
		*q++ = ' ';
		q = fmt_u64(q, pc->ctx->settings->cas_enabled ? val->cas : 0);
	}
	*q++ = '\r';
	*q++ = '\n';
	memcpy(q, data, (size_t)val->nbytes + 2);
	q += val->nbytes + 2;
	reply_commit(&pc->out, (size_t)(q - p));
}

static void proto_get_key(struct proto_conn *pc, const char *key, size_t nkey)
{
	struct proto_ctx *ctx = pc->ctx;
	struct proto_stats *st = &ctx->stats;
	enum store_miss why = STORE_HIT;
	bool touch = get_kind_touches(pc->get_kind);
	char data[PROTO_COPY_MAX + 2];
	struct store_value val;
	struct item *it;

	pc->get_nkeys++;
	it = store_get_copy(ctx->store, key, nkey, touch, pc->get_exptime,
			    data, sizeof(data), &val, &why);
	if (touch) {
		st->cmd_touch++;
		if (why == STORE_HIT)
			st->touch_hits++;
		else
			st->touch_misses++;
	} else {
		st->cmd_get++;
		if (why == STORE_HIT)
			st->get_hits++;
		else
			st->get_misses++;
	}
	if (why != STORE_HIT) {
		if (why == STORE_MISS_EXPIRED)
			st->get_expired++;
		else if (why == STORE_MISS_FLUSHED)
			st->get_flushed++;
		return;
	}
	if (it)
		proto_value(pc, it, get_kind_cas(pc->get_kind));
	else
		proto_value_copy(pc, key, nkey, &val, data,
				 get_kind_cas(pc->get_kind));
}

/* A key too long or with bad bytes: memcached answers only the error, so
 * what this get queued is taken back when it still can be. */
static void proto_get_bad_key(struct proto_conn *pc)
{
	if (pc->get_mark_ok)
		reply_rewind(&pc->out, &pc->get_mark);
	proto_out(pc, STR_AND_LEN(s_bad_format));
}

/*
 * Answers the keys of a get line found in [@p, @end). @eol: @end is the end
 * of the line (its newline was seen); else more of the line is to come and
 * a key running up to @end may be incomplete.
 *
 * Sets pc->state to PROTO_CMD when the line is done, else leaves it in
 * PROTO_GET_CONT. Return: how far the bytes were used.
 */
static const char *proto_get_keys(struct proto_conn *pc, const char *p,
				  const char *end, bool eol)
{
	for (;;) {
		const char *key;
		bool bad;

		while (p < end && *p == ' ')
			p++;
		if (p == end)
			break;
		/* find the key's end and check its bytes in one pass */
		key = p;
		p = key_token_end(p, end, &bad);
		if (p == end && !eol) {
			/* the key may go on in the next read */
			if (p - key <= KEY_MAX_LENGTH) {
				pc->state = PROTO_GET_CONT;
				return key;
			}
			goto bad_key;
		}
		if (bad || p - key > KEY_MAX_LENGTH)
			goto bad_key;
		if (reply_pending(&pc->out) > REPLY_HIGH_WATER) {
			pc->state = PROTO_GET_CONT;
			return key;
		}
		proto_get_key(pc, key, (size_t)(p - key));
		if (unlikely(pc->state == PROTO_CLOSED))
			return p;
	}
	if (!eol) {
		pc->state = PROTO_GET_CONT;
		return end;
	}
	if (!pc->get_nkeys && !get_kind_touches(pc->get_kind))
		proto_out(pc, STR_AND_LEN("ERROR\r\n"));   /* "get" alone */
	else
		proto_out_hot(pc, STR_AND_LEN("END\r\n"));
	if (pc->state != PROTO_CLOSED)
		pc->state = PROTO_CMD;
	return end;

bad_key:
	proto_get_bad_key(pc);
	if (pc->state == PROTO_CLOSED)
		return p;
	if (eol) {
		pc->state = PROTO_CMD;
		return end;
	}
	pc->state = PROTO_GET_CONT;
	pc->get_skip = true;
	return end;
}

/*
 * Starts a get line after its command word: [@p, @end) is the rest of the
 * line (@eol) or of what has arrived of it. Return: how far the bytes were
 * used, or NULL when the gat exptime is itself incomplete.
 */
static const char *proto_get_begin(struct proto_conn *pc, int kind,
				   const char *p, const char *end, bool eol)
{
	pc->get_kind = kind;
	pc->get_nkeys = 0;
	pc->get_skip = false;
	pc->get_exptime = 0;
	reply_mark(&pc->out, &pc->get_mark);
	pc->get_mark_ok = true;

	if (get_kind_touches(kind)) {
		struct token t;
		int32_t exptime;

		while (p < end && *p == ' ')
			p++;
		t.p = p;
		while (p < end && *p != ' ')
			p++;
		t.len = (size_t)(p - t.p);
		if (!eol && p == end)
			return NULL;
		if (!t.len) {
			proto_out(pc, STR_AND_LEN("ERROR\r\n"));
			return end;
		}
		if (!parse_s32(&t, &exptime)) {
			proto_out(pc, STR_AND_LEN(
				"CLIENT_ERROR invalid exptime argument\r\n"));
			if (!eol && pc->state != PROTO_CLOSED) {
				pc->state = PROTO_GET_CONT;
				pc->get_skip = true;
			}
			return end;
		}
		pc->get_exptime = store_exptime(pc->ctx->store, exptime);
	}
	return proto_get_keys(pc, p, end, eol);
}

/*
 * PROTO_GET_CONT: the rest of a get line. Return: bytes used.
 */
static size_t proto_get_cont(struct proto_conn *pc, const char *buf,
			     size_t len)
{
	const char *nl = memchr(buf, '\n', len);
	const char *end, *stop;

	if (pc->get_skip) {
		if (!nl)
			return len;
		pc->get_skip = false;
		pc->state = PROTO_CMD;
		return (size_t)(nl + 1 - buf);
	}
	if (!nl)
		return (size_t)(proto_get_keys(pc, buf, buf + len, false) - buf);
	end = nl;
	if (end > buf && end[-1] == '\r')
		end--;
	stop = proto_get_keys(pc, buf, end, true);
	if (pc->state == PROTO_CMD)
		return (size_t)(nl + 1 - buf);
	return (size_t)(stop - buf);
}

/* ------------------------------------------------------------------ */
/* set, add, replace, append, prepend, cas                              */

/*
 * Allocates the item of a storage command whose line was read into @st.
 * Return: the item, or NULL when it is refused: then the answer is queued
 * and the engine goes to PROTO_SWALLOW (or PROTO_CLOSED).
 */
static __attribute__((always_inline)) inline struct item *
proto_update_alloc(struct proto_conn *pc, const struct parse_store *st,
		   enum store_op op)
{
	struct proto_ctx *ctx = pc->ctx;
	struct item *it;
	int ret;

	ret = store_item_alloc(ctx->store, st->key, st->nkey, st->flags,
			       store_exptime(ctx->store, st->exptime),
			       st->bytes, &it);
	if (likely(ret == 0))
		return it;
	if (ret == -E2BIG) {
		ctx->stats.store_too_large++;
		proto_reply(pc, STR_AND_LEN(
			"SERVER_ERROR object too large for cache\r\n"));
	} else {
		ctx->stats.store_no_memory++;
		proto_reply(pc, STR_AND_LEN(
			"SERVER_ERROR out of memory storing object\r\n"));
	}
	/* as memcached: a failed set must not leave the old value */
	if (op == STORE_OP_SET)
		store_delete(ctx->store, st->key, st->nkey);
	if (pc->state != PROTO_CLOSED) {
		pc->swallow_left = (size_t)st->bytes + 2;
		pc->state = PROTO_SWALLOW;
	}
	return NULL;
}

/* As proto_update_alloc(), then PROTO_DATA fills the item. */
static void proto_update_begin(struct proto_conn *pc,
			       const struct parse_store *st, enum store_op op)
{
	struct item *it = proto_update_alloc(pc, st, op);

	if (!it)
		return;
	pc->pending = it;
	pc->pending_op = op;
	pc->pending_cas = st->cas;
	pc->data_done = 0;
	pc->data_total = (size_t)st->bytes + 2;
	pc->state = PROTO_DATA;
}

static void proto_update(struct proto_conn *pc, const struct parse_line *l,
			 enum store_op op)
{
	struct parse_store st;
	int ret = parse_store_line(l, op == STORE_OP_CAS, &st);

	if (ret == -EINVAL) {
		proto_out(pc, STR_AND_LEN("ERROR\r\n"));
		return;
	}
	pc->noreply = st.noreply;
	if (ret) {
		proto_reply(pc, STR_AND_LEN(s_bad_format));
		return;
	}
	proto_update_begin(pc, &st, op);
}

/*
 * The data block of @it is in: check its end, store, answer. @op and @cas:
 * the command's. @line_key: the key in the command line when that is
 * still at hand, else NULL (a set that fails for memory then deletes the
 * key, which it copies from the item before the store takes the item).
 */
static __attribute__((always_inline)) inline void
proto_update_store(struct proto_conn *pc, struct item *it, enum store_op op,
		   uint64_t cas, const char *line_key)
{
	struct proto_ctx *ctx = pc->ctx;
	struct proto_stats *st = &ctx->stats;
	const char *v = item_value(it);
	bool set = op == STORE_OP_SET;
	char copy[KEY_MAX_LENGTH];
	const char *key = line_key;
	size_t nkey = it->nkey;
	enum store_result res;

	st->cmd_set++;
	if (v[it->nbytes] != '\r' || v[it->nbytes + 1] != '\n') {
		item_put(it);
		proto_reply(pc, STR_AND_LEN("CLIENT_ERROR bad data chunk\r\n"));
		return;
	}
	if (set && !key) {	/* the store takes the item: keep the key */
		memcpy(copy, item_key(it), nkey);
		key = copy;
	}
	res = store_item_store(ctx->store, it, op, cas, NULL);
	if (op == STORE_OP_CAS) {
		if (res == STORE_STORED)
			st->cas_hits++;
		else if (res == STORE_EXISTS)
			st->cas_badval++;
		else if (res == STORE_NOT_FOUND)
			st->cas_misses++;
	}
	switch (res) {
	case STORE_STORED:
		proto_reply_hot(pc, STR_AND_LEN("STORED\r\n"));
		break;
	case STORE_NOT_STORED:
		proto_reply(pc, STR_AND_LEN("NOT_STORED\r\n"));
		break;
	case STORE_EXISTS:
		proto_reply(pc, STR_AND_LEN("EXISTS\r\n"));
		break;
	case STORE_NOT_FOUND:
		proto_reply(pc, STR_AND_LEN("NOT_FOUND\r\n"));
		break;
	case STORE_TOO_LARGE:
		st->store_too_large++;
		proto_reply(pc, STR_AND_LEN(
			"SERVER_ERROR object too large for cache\r\n"));
		break;
	case STORE_NO_MEMORY:
	default:
		st->store_no_memory++;
		proto_reply(pc, STR_AND_LEN(
			"SERVER_ERROR out of memory storing object\r\n"));
		/* as memcached: a failed set must not leave the old value */
		if (set)
			store_delete(ctx->store, key, nkey);
		break;
	}
}

/* PROTO_DATA is over: the pending item is filled. */
static void proto_update_done(struct proto_conn *pc)
{
	struct item *it = pc->pending;

	pc->pending = NULL;
	pc->state = PROTO_CMD;
	proto_update_store(pc, it, (enum store_op)pc->pending_op,
			   pc->pending_cas, NULL);
}

/* PROTO_DATA: copies what has arrived of the block. Return: bytes used. */
static size_t proto_data(struct proto_conn *pc, const char *buf, size_t len)
{
	size_t n = pc->data_total - pc->data_done;

	if (n > len)
		n = len;
	memcpy(item_value(pc->pending) + pc->data_done, buf, n);
	pc->data_done += n;
	if (pc->data_done == pc->data_total)
		proto_update_done(pc);
	return n;
}

/* PROTO_SWALLOW: drops what has arrived of a refused block. */
static size_t proto_swallow(struct proto_conn *pc, size_t len)
{
	size_t n = pc->swallow_left < len ? pc->swallow_left : len;

	pc->swallow_left -= n;
	if (!pc->swallow_left)
		pc->state = PROTO_CMD;
	return n;
}

/* ------------------------------------------------------------------ */
/* delete, incr, decr, touch                                            */

static void proto_delete(struct proto_conn *pc, const struct parse_line *l)
{
	struct proto_ctx *ctx = pc->ctx;
	const struct token *key = &l->tok[1];

	if (l->ntok < 2 || l->ntok > 4) {
		proto_out(pc, STR_AND_LEN("ERROR\r\n"));
		return;
	}
	if (l->ntok > 2) {
		bool hold_zero = TOKEN_IS(&l->tok[2], "0");
		bool valid;

		pc->noreply = line_noreply(l);
		valid = (l->ntok == 3 && (hold_zero || pc->noreply)) ||
			(l->ntok == 4 && hold_zero && pc->noreply);
		if (!valid) {
			proto_reply(pc, STR_AND_LEN(
				"CLIENT_ERROR bad command line format.  "
				"Usage: delete <key> [noreply]\r\n"));
			return;
		}
	}
	if (!key_bytes_ok(key->p, key->len)) {
		proto_reply(pc, STR_AND_LEN(s_bad_format));
		return;
	}
	if (store_delete(ctx->store, key->p, key->len) == 0) {
		ctx->stats.delete_hits++;
		proto_reply(pc, STR_AND_LEN("DELETED\r\n"));
	} else {
		ctx->stats.delete_misses++;
		proto_reply(pc, STR_AND_LEN("NOT_FOUND\r\n"));
	}
}

static void proto_arith(struct proto_conn *pc, const struct parse_line *l,
			bool incr)
{
	struct proto_ctx *ctx = pc->ctx;
	const struct token *key = &l->tok[1];
	uint64_t delta, value;
	int ret;

	if (l->ntok != 3 && l->ntok != 4) {
		proto_out(pc, STR_AND_LEN("ERROR\r\n"));
		return;
	}
	pc->noreply = line_noreply(l);
	if (!key_bytes_ok(key->p, key->len)) {
		proto_reply(pc, STR_AND_LEN(s_bad_format));
		return;
	}
	if (!parse_u64(&l->tok[2], &delta)) {
		proto_reply(pc, STR_AND_LEN(
			"CLIENT_ERROR invalid numeric delta argument\r\n"));
		return;
	}
	ret = store_incr_decr(ctx->store, key->p, key->len, incr, delta,
			      &value, NULL);
	switch (ret) {
	case 0:
		if (incr)
			ctx->stats.incr_hits++;
		else
			ctx->stats.decr_hits++;
		proto_reply_num(pc, "", 0, value);
		break;
	case -ENOENT:
		if (incr)
			ctx->stats.incr_misses++;
		else
			ctx->stats.decr_misses++;
		proto_reply(pc, STR_AND_LEN("NOT_FOUND\r\n"));
		break;
	case -EINVAL:
		proto_reply(pc, STR_AND_LEN("CLIENT_ERROR cannot increment or "
					    "decrement non-numeric value\r\n"));
		break;
	default:
		proto_reply(pc, STR_AND_LEN("SERVER_ERROR out of memory\r\n"));
		break;
	}
}

static void proto_touch(struct proto_conn *pc, const struct parse_line *l)
{
	struct proto_ctx *ctx = pc->ctx;
	const struct token *key = &l->tok[1];
	enum store_miss why = STORE_HIT;
	struct item *it;
	int32_t exptime;

	if (l->ntok != 3 && l->ntok != 4) {
		proto_out(pc, STR_AND_LEN("ERROR\r\n"));
		return;
	}
	pc->noreply = line_noreply(l);
	if (!key_bytes_ok(key->p, key->len)) {
		proto_reply(pc, STR_AND_LEN(s_bad_format));
		return;
	}
	if (!parse_s32(&l->tok[2], &exptime)) {
		proto_reply(pc, STR_AND_LEN(
			"CLIENT_ERROR invalid exptime argument\r\n"));
		return;
	}
	/* a lookup, as memcached's, so expired/flushed misses are counted */
	it = store_get_touch(ctx->store, key->p, key->len,
			     store_exptime(ctx->store, exptime), &why);
	ctx->stats.cmd_touch++;
	if (it) {
		item_put(it);
		ctx->stats.touch_hits++;
		proto_reply(pc, STR_AND_LEN("TOUCHED\r\n"));
		return;
	}
	ctx->stats.touch_misses++;
	if (why == STORE_MISS_EXPIRED)
		ctx->stats.get_expired++;
	else if (why == STORE_MISS_FLUSHED)
		ctx->stats.get_flushed++;
	proto_reply(pc, STR_AND_LEN("NOT_FOUND\r\n"));
}

/* ------------------------------------------------------------------ */
/* flush_all, verbosity, version, quit, shutdown, stats                 */

static void proto_flush_all(struct proto_conn *pc, const struct parse_line *l)
{
	struct proto_ctx *ctx = pc->ctx;
	int32_t delay = 0;

	if (l->ntok > 3) {
		proto_out(pc, STR_AND_LEN("ERROR\r\n"));
		return;
	}
	pc->noreply = line_noreply(l);
	ctx->stats.cmd_flush++;
	if (!ctx->settings->flush_enabled) {
		proto_reply(pc, STR_AND_LEN(
			"CLIENT_ERROR flush_all not allowed\r\n"));
		return;
	}
	if (l->ntok != (pc->noreply ? 2u : 1u) &&
	    !parse_s32(&l->tok[1], &delay)) {
		proto_reply(pc, STR_AND_LEN(
			"CLIENT_ERROR invalid exptime argument\r\n"));
		return;
	}
	store_flush_all(ctx->store,
			delay > 0 ? store_exptime(ctx->store, delay) : 0);
	proto_reply(pc, STR_AND_LEN("OK\r\n"));
}

static void proto_verbosity(struct proto_conn *pc, const struct parse_line *l)
{
	uint32_t level;

	if (l->ntok != 2 && l->ntok != 3) {
		proto_out(pc, STR_AND_LEN("ERROR\r\n"));
		return;
	}
	pc->noreply = line_noreply(l);
	if (!parse_u32(&l->tok[1], &level)) {
		proto_reply(pc, STR_AND_LEN(s_bad_format));
		return;
	}
	/* memcached caps the level at 2; other threads read it for logging */
	__atomic_store_n(&pc->ctx->settings->verbose, level > 2 ? 2 : (int)level,
			 __ATOMIC_RELAXED);
	proto_reply(pc, STR_AND_LEN("OK\r\n"));
}

static void proto_shutdown(struct proto_conn *pc, const struct parse_line *l)
{
	struct proto_ctx *ctx = pc->ctx;

	if (!ctx->settings->shutdown_enabled) {
		proto_out(pc, STR_AND_LEN("ERROR: shutdown not enabled\r\n"));
		return;
	}
	if (l->ntok == 1 || (l->ntok == 2 && TOKEN_IS(&l->tok[1], "graceful"))) {
		if (ctx->hooks && ctx->hooks->shutdown)
			ctx->hooks->shutdown(ctx->hook_arg);
		pc->state = PROTO_CLOSED;
		return;
	}
	proto_out(pc, STR_AND_LEN("CLIENT_ERROR invalid shutdown mode\r\n"));
}

static void proto_stats(struct proto_conn *pc, const char *args,
			const char *end)
{
	struct proto_ctx *ctx = pc->ctx;

	struct reply_mark m;

	while (args < end && *args == ' ')
		args++;
	reply_mark(&pc->out, &m);
	pc->out.failed = false;
	if (ctx->hooks && ctx->hooks->stats &&
	    ctx->hooks->stats(ctx->hook_arg, args, (size_t)(end - args),
			      &pc->out)) {
		/* a line was lost: no stats with a hole, the connection ends */
		if (unlikely(pc->out.failed)) {
			reply_rewind(&pc->out, &m);
			proto_fail(pc);
		}
		return;
	}
	proto_out(pc, STR_AND_LEN("ERROR\r\n"));
}

#ifdef AK_FAULT_INJECTION
/*
 * "debug alloc_fail <one_in>|off", "debug alloc_fail_after <n>" and "debug
 * alloc_failures": allocation failure injection for the sanitizer test build
 * only (-DAK_FAULT_INJECTION); a release build answers ERROR, as to any
 * unknown command. The reply is queued before the injector is armed, so
 * that arming cannot lose it.
 */
static void proto_debug(struct proto_conn *pc, const struct parse_line *l)
{
	bool after = l->ntok == 3 && TOKEN_IS(&l->tok[1], "alloc_fail_after");
	uint32_t n = 0;

	if (l->ntok == 2 && TOKEN_IS(&l->tok[1], "alloc_failures")) {
		proto_reply_num(pc, STR_AND_LEN("ALLOC_FAILURES "),
				ak_alloc_failures());
		return;
	}
	if (l->ntok != 3 ||
	    (!after && !TOKEN_IS(&l->tok[1], "alloc_fail")) ||
	    (!(!after && TOKEN_IS(&l->tok[2], "off")) &&
	     !parse_u32(&l->tok[2], &n))) {
		proto_out(pc, STR_AND_LEN(s_bad_format));
		return;
	}
	if (!after && !n) {
		ak_alloc_fail_random(0);
		ak_alloc_fail_after(-1);
	}
	proto_out(pc, STR_AND_LEN("OK\r\n"));
	if (pc->state == PROTO_CLOSED)
		return;
	if (after)
		ak_alloc_fail_after(n);
	else if (n)
		ak_alloc_fail_random(n);
}
#endif

/* ------------------------------------------------------------------ */
/* range, ranges, rrange, rranges, keys, count, delete_range             */

enum range_kind {
	RANGE_VALUES,		/* range, rrange */
	RANGE_VALUES_CAS,	/* ranges, rranges */
	RANGE_KEYS,		/* keys */
};

static const char s_bad_range[] = "CLIENT_ERROR bad range\r\n";

/* Parses "<from> <to>" at tokens 1 and 2. Return: true if valid. */
static bool proto_bounds(const struct parse_line *l, struct store_bound *from,
			 struct store_bound *to)
{
	return parse_bound(&l->tok[1], from) && parse_bound(&l->tok[2], to) &&
	       store_bound_cmp(from, to) <= 0;
}

static void proto_range(struct proto_conn *pc, const struct parse_line *l,
			enum range_kind kind, bool reverse)
{
	struct proto_ctx *ctx = pc->ctx;
	unsigned int cap = ctx->settings->range_max ? ctx->settings->range_max
						    : RANGE_DEFAULT;
	unsigned int count = RANGE_DEFAULT < cap ? RANGE_DEFAULT : cap;
	struct item *stack[RANGE_STACK], **items = stack;
	struct store_bound from, to;
	int n, i;

	if (l->ntok != 3 && l->ntok != 4) {
		proto_out(pc, STR_AND_LEN("ERROR\r\n"));
		return;
	}
	if (!proto_bounds(l, &from, &to) ||
	    (l->ntok == 4 && !parse_count(&l->tok[3], cap, &count))) {
		proto_out(pc, STR_AND_LEN(s_bad_range));
		return;
	}
	ctx->stats.cmd_range++;
	if (count > RANGE_STACK) {
		items = ak_malloc(count * sizeof(*items));
		if (!items) {
			proto_out(pc, STR_AND_LEN(
				"SERVER_ERROR out of memory\r\n"));
			return;
		}
	}
	n = store_range(ctx->store, &from, &to, reverse, count, items);
	if (n < 0) {
		proto_out(pc, STR_AND_LEN("SERVER_ERROR out of memory\r\n"));
		goto out_free;
	}
	ctx->stats.range_items += (uint64_t)n;
	for (i = 0; i < n; i++) {
		struct item *it = items[i];

		if (pc->state == PROTO_CLOSED) {
			item_put(it);
			continue;
		}
		if (kind == RANGE_KEYS) {
			char *p = reply_reserve(&pc->out, 4 + it->nkey + 2);

			if (p) {
				memcpy(p, "KEY ", 4);
				memcpy(put_bytes(p + 4, item_key(it), it->nkey),
				       "\r\n", 2);
				reply_commit(&pc->out, 4u + it->nkey + 2);
			} else {
				proto_fail(pc);
			}
			item_put(it);
		} else {
			proto_value(pc, it, kind == RANGE_VALUES_CAS);
		}
	}
	proto_out(pc, STR_AND_LEN("END\r\n"));
out_free:
	if (items != stack)
		ak_free(items);
}

static void proto_count(struct proto_conn *pc, const struct parse_line *l)
{
	struct store_bound from, to;

	if (l->ntok != 3) {
		proto_out(pc, STR_AND_LEN("ERROR\r\n"));
		return;
	}
	if (!proto_bounds(l, &from, &to)) {
		proto_out(pc, STR_AND_LEN(s_bad_range));
		return;
	}
	pc->ctx->stats.cmd_count++;
	proto_reply_num(pc, STR_AND_LEN("COUNT "),
			store_count(pc->ctx->store, &from, &to));
}

static void proto_delete_range(struct proto_conn *pc,
			       const struct parse_line *l)
{
	struct store_bound from, to;

	if (l->ntok != 3 && l->ntok != 4) {
		proto_out(pc, STR_AND_LEN("ERROR\r\n"));
		return;
	}
	if (l->ntok == 4) {
		if (!TOKEN_IS(&l->tok[3], "noreply")) {
			proto_out(pc, STR_AND_LEN(s_bad_format));
			return;
		}
		pc->noreply = true;
	}
	if (!proto_bounds(l, &from, &to)) {
		proto_reply(pc, STR_AND_LEN(s_bad_range));
		return;
	}
	pc->ctx->stats.cmd_delete_range++;
	proto_reply_num(pc, STR_AND_LEN("DELETED "),
			store_delete_range(pc->ctx->store, &from, &to));
}

/* ------------------------------------------------------------------ */
/* the command line                                                     */

/* Which get command a command word is, or -1. */
static int proto_get_kind(const char *cmd, size_t n)
{
	if (cmd[0] != 'g')
		return -1;
	if (n == 3 && !memcmp(cmd, "get", 3))
		return GET_GET;
	if (n == 4 && !memcmp(cmd, "gets", 4))
		return GET_GETS;
	if (n == 3 && !memcmp(cmd, "gat", 3))
		return GET_GAT;
	if (n == 4 && !memcmp(cmd, "gats", 4))
		return GET_GATS;
	return -1;
}

#define CMD_IS(l, lit)	TOKEN_IS(&(l)->tok[0], lit)

/* Runs a complete line other than a get line. */
static void proto_run_line(struct proto_conn *pc, const char *p,
			   const char *end)
{
	struct parse_line l;
	const struct token *cmd, *last;

	parse_tokenize(&l, p, end);
	cmd = &l.tok[0];
	switch (cmd->len) {
	case 3:
		if (CMD_IS(&l, "set"))
			proto_update(pc, &l, STORE_OP_SET);
		else if (CMD_IS(&l, "add"))
			proto_update(pc, &l, STORE_OP_ADD);
		else if (CMD_IS(&l, "cas"))
			proto_update(pc, &l, STORE_OP_CAS);
		else
			break;
		return;
	case 4:
		if (CMD_IS(&l, "incr"))
			proto_arith(pc, &l, true);
		else if (CMD_IS(&l, "decr"))
			proto_arith(pc, &l, false);
		else if (CMD_IS(&l, "keys"))
			proto_range(pc, &l, RANGE_KEYS, false);
		else if (CMD_IS(&l, "quit"))
			pc->state = PROTO_CLOSED;
		else
			break;
		return;
	case 5:
		if (CMD_IS(&l, "range"))
			proto_range(pc, &l, RANGE_VALUES, false);
		else if (CMD_IS(&l, "touch"))
			proto_touch(pc, &l);
		else if (CMD_IS(&l, "count"))
			proto_count(pc, &l);
		else if (CMD_IS(&l, "stats"))
			proto_stats(pc, cmd->p + cmd->len, end);
#ifdef AK_FAULT_INJECTION
		else if (CMD_IS(&l, "debug"))
			proto_debug(pc, &l);
#endif
		else
			break;
		return;
	case 6:
		if (CMD_IS(&l, "delete"))
			proto_delete(pc, &l);
		else if (CMD_IS(&l, "append"))
			proto_update(pc, &l, STORE_OP_APPEND);
		else if (CMD_IS(&l, "ranges"))
			proto_range(pc, &l, RANGE_VALUES_CAS, false);
		else if (CMD_IS(&l, "rrange"))
			proto_range(pc, &l, RANGE_VALUES, true);
		else
			break;
		return;
	case 7:
		if (CMD_IS(&l, "replace"))
			proto_update(pc, &l, STORE_OP_REPLACE);
		else if (CMD_IS(&l, "prepend"))
			proto_update(pc, &l, STORE_OP_PREPEND);
		else if (CMD_IS(&l, "rranges"))
			proto_range(pc, &l, RANGE_VALUES_CAS, true);
		else if (CMD_IS(&l, "version"))
			proto_out(pc, STR_AND_LEN("VERSION " PROTO_VERSION
						  "\r\n"));
		else
			break;
		return;
	case 8:
		if (CMD_IS(&l, "shutdown"))
			proto_shutdown(pc, &l);
		else
			break;
		return;
	case 9:
		if (CMD_IS(&l, "flush_all"))
			proto_flush_all(pc, &l);
		else if (CMD_IS(&l, "verbosity"))
			proto_verbosity(pc, &l);
		else
			break;
		return;
	case 12:
		if (CMD_IS(&l, "delete_range"))
			proto_delete_range(pc, &l);
		else
			break;
		return;
	}
	/* memcached drops a connection that sends it HTTP */
	last = &l.tok[l.ntok - 1];
	if (last->len >= 5 && !memcmp(last->p, "HTTP/", 5)) {
		pc->state = PROTO_CLOSED;
		return;
	}
	proto_out(pc, STR_AND_LEN("ERROR\r\n"));
}

/*
 * An incomplete line longer than PROTO_LINE_MAX: a get line is answered as
 * far as it has come; anything else closes the connection, as memcached
 * does. Return: bytes used.
 */
static size_t proto_long_line(struct proto_conn *pc, const char *buf,
			      size_t len)
{
	const char *p = buf, *end = buf + len, *cmd, *stop;
	int kind;

	while (p < end && *p == ' ')
		p++;
	cmd = p;
	while (p < end && *p != ' ')
		p++;
	if (cmd - buf > GET_LEAD_MAX || p == end)
		goto close;
	kind = proto_get_kind(cmd, (size_t)(p - cmd));
	if (kind < 0)
		goto close;
	stop = proto_get_begin(pc, kind, p, end, false);
	if (!stop)
		goto close;
	return (size_t)(stop - buf);
close:
	pc->state = PROTO_CLOSED;
	return 0;
}

/*
 * The usual set (parse_set_fast()): its line, then its data block too when
 * all of it is in @buf, copied straight into the item and stored while the
 * key is still at hand in the line. Return: bytes used; 0 when the line is
 * not one the fast path takes (the general path reads it).
 */
static size_t proto_set_fast(struct proto_conn *pc, const char *buf,
			     size_t len)
{
	struct parse_store st;
	size_t n = parse_set_fast(buf, buf + len, &st), total;
	struct item *it;

	if (!n)
		return 0;
	pc->noreply = st.noreply;
	total = (size_t)st.bytes + 2;
	if (len - n < total) {
		proto_update_begin(pc, &st, STORE_OP_SET);
		return n;
	}
	it = proto_update_alloc(pc, &st, STORE_OP_SET);
	if (!it)
		return n;	/* PROTO_SWALLOW takes the block */
	memcpy(item_value(it), buf + n, total);
	proto_update_store(pc, it, STORE_OP_SET, 0, st.key);
	return n + total;
}

/*
 * PROTO_CMD: runs one command line from @buf. Return: bytes used; 0 when
 * the line is incomplete (or the connection is closing).
 */
static size_t proto_command(struct proto_conn *pc, const char *buf,
			    size_t len)
{
	const char *nl, *end, *p, *cmd, *stop;
	size_t n;
	int kind;

	pc->noreply = false;
	if (buf[0] == 's') {
		n = proto_set_fast(pc, buf, len);
		if (n)
			return n;
		pc->noreply = false;
	}
	nl = memchr(buf, '\n', len);
	if (!nl) {
		if (len > PROTO_LINE_MAX)
			return proto_long_line(pc, buf, len);
		return 0;
	}
	/* as memcached: "\r\n" or "\n" ends a line, but a lone "\r" stays */
	end = nl;
	if (end - buf > 1 && end[-1] == '\r')
		end--;
	p = buf;
	while (p < end && *p == ' ')
		p++;
	cmd = p;
	while (p < end && *p != ' ')
		p++;
	if (p - cmd < 2) {
		proto_out(pc, STR_AND_LEN("ERROR\r\n"));
		return (size_t)(nl + 1 - buf);
	}
	kind = proto_get_kind(cmd, (size_t)(p - cmd));
	/* memcached still takes the ancient "bget" as a get */
	if (kind < 0 && p - cmd == 4 && !memcmp(cmd, "bget", 4))
		kind = GET_GET;
	if (kind >= 0) {
		stop = proto_get_begin(pc, kind, p, end, true);
		if (pc->state == PROTO_GET_CONT)
			return (size_t)(stop - buf);
		return (size_t)(nl + 1 - buf);
	}
	proto_run_line(pc, cmd, end);
	return (size_t)(nl + 1 - buf);
}

/* ------------------------------------------------------------------ */
/* authentication (-Y)                                                  */

#define AUTH_DATA_MAX	8192u	/* the longest "<user> <password>" block */

/*
 * PROTO_CMD before authentication: as memcached 1.6, a line that is not
 * "set <key> <flags> <exptime> <bytes> ..." is answered "unauthenticated";
 * a set is run only once its whole data block has arrived (it stays in the
 * input buffer meanwhile), and its data is "<user> <password>" split on
 * spaces, anything after them ignored. noreply does not silence these
 * answers (memcached's don't either). A line over PROTO_LINE_MAX without
 * a newline, or a block over AUTH_DATA_MAX, closes the connection.
 * Return: bytes used; 0 while incomplete (or closing).
 */
static size_t proto_auth_command(struct proto_conn *pc, const char *buf,
				 size_t len)
{
	struct proto_ctx *ctx = pc->ctx;
	const char *nl = memchr(buf, '\n', len), *end, *data;
	struct parse_line l;
	uint32_t size;
	size_t used;

	if (!nl) {
		if (len > PROTO_LINE_MAX)
			pc->state = PROTO_CLOSED;
		return 0;
	}
	end = nl;
	if (end > buf && end[-1] == '\r')
		end--;
	used = (size_t)(nl + 1 - buf);
	parse_tokenize(&l, buf, end);
	if (l.ntok < 5 || !CMD_IS(&l, "set") || !parse_u32(&l.tok[4], &size)) {
		proto_out(pc, STR_AND_LEN("CLIENT_ERROR unauthenticated\r\n"));
		return used;
	}
	if (size > AUTH_DATA_MAX) {
		pc->state = PROTO_CLOSED;
		return 0;
	}
	if (len - used < (size_t)size + 2)
		return 0;
	data = nl + 1;
	used += (size_t)size + 2;
	if (data[size] != '\r' || data[size + 1] != '\n') {
		proto_out(pc, STR_AND_LEN(
			"CLIENT_ERROR bad command line termination\r\n"));
		return used;
	}
	parse_tokenize(&l, data, data + size);
	if (l.ntok < 2) {
		proto_out(pc, STR_AND_LEN(
			"CLIENT_ERROR bad authentication token format\r\n"));
		return used;
	}
	ctx->stats.auth_cmds++;
	if (ctx->hooks && ctx->hooks->auth &&
	    ctx->hooks->auth(ctx->hook_arg, l.tok[0].p, l.tok[0].len,
			     l.tok[1].p, l.tok[1].len)) {
		pc->authed = true;
		proto_out(pc, STR_AND_LEN("STORED\r\n"));
	} else {
		ctx->stats.auth_errors++;
		proto_out(pc, STR_AND_LEN(
			"CLIENT_ERROR authentication failure\r\n"));
	}
	return used;
}

size_t proto_process(struct proto_conn *pc, const char *buf, size_t len,
		     unsigned int max_reqs)
{
	const char *p = buf, *end = buf + len;
	unsigned int reqs = 0;
	size_t n;

	/* a mark from an earlier call may point at bytes since written */
	pc->get_mark_ok = false;
	for (;;) {
		switch (pc->state) {
		case PROTO_CMD:
			if (p == end || (max_reqs && reqs >= max_reqs) ||
			    reply_pending(&pc->out) > REPLY_HIGH_WATER)
				goto out;
			if (likely(pc->authed))
				n = proto_command(pc, p, (size_t)(end - p));
			else
				n = proto_auth_command(pc, p,
						       (size_t)(end - p));
			if (!n) {
				if (pc->state != PROTO_CLOSED)
					goto out;
			} else {
				p += n;
			}
			reqs++;
			pc->nreqs++;
			break;
		case PROTO_DATA:
			if (p == end)
				goto out;
			p += proto_data(pc, p, (size_t)(end - p));
			break;
		case PROTO_SWALLOW:
			if (p == end)
				goto out;
			p += proto_swallow(pc, (size_t)(end - p));
			break;
		case PROTO_GET_CONT:
			if (p == end ||
			    reply_pending(&pc->out) > REPLY_HIGH_WATER)
				goto out;
			n = proto_get_cont(pc, p, (size_t)(end - p));
			if (!n && pc->state == PROTO_GET_CONT)
				goto out;
			p += n;
			break;
		case PROTO_CLOSED:
		default:
			goto out;
		}
	}
out:
	pc->get_mark_ok = false;
	return (size_t)(p - buf);
}
