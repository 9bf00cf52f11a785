// SPDX-License-Identifier: MIT
/*
 * proto_retrieval.c - get, gets, gat, gats, and the VALUE line of a hit
 * (which the range commands use too).
 */
#include "proto_cmd.h"

/* the longest VALUE line: "VALUE " key " " flags " " bytes " " cas " b\r\n"
 * (a listed key may be base64) */
#define VALUE_LINE_MAX	(6 + B64_ENCODED_LEN(KEY_MAX_LENGTH) + 1 + 10 + 1 + \
			 10 + 1 + 20 + 2 + 2)

_Static_assert(VALUE_LINE_MAX + PROTO_COPY_MAX + 2 <= REPLY_RESERVE_MAX,
	       "a copied value and its line fit one reserve");

static inline bool get_kind_touches(int kind)
{
	return kind == GET_GAT || kind == GET_GATS;
}

static inline bool get_kind_cas(int kind)
{
	return kind == GET_GETS || kind == GET_GATS;
}

/*
 * "VALUE <key> <flags> <bytes>[ <cas>]\r\n" then the value and its "\r\n"
 * by reference; @how: VALUE_ flags (with VALUE_LISTED, a key stored as
 * base64 is "VALUE <base64> <flags> <bytes>[ <cas>] b"). Takes over the
 * caller's reference on @it.
 */
void proto_value(struct proto_conn *pc, struct item *it, unsigned int how)
{
	bool coded = (how & VALUE_LISTED) &&
		     (READ_ONCE(it->iflags) & ITEM_KEY_BINARY);
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
	q = put_listed_key(p + 6, item_key(it), it->nkey, coded);
	*q++ = ' ';
	q = fmt_u64(q, item_flags(it));
	*q++ = ' ';
	q = fmt_u64(q, it->nbytes);
	if (how & VALUE_CAS) {
		*q++ = ' ';
		q = fmt_u64(q, pc->ctx->settings->cas_enabled ? it->cas : 0);
	}
	if (unlikely(coded)) {
		*q++ = ' ';
		*q++ = 'b';
	}
	*q++ = '\r';
	*q++ = '\n';
	reply_commit(&pc->out, (size_t)(q - p));
	proto_value_ref(pc, it);
}

/*
 * A hit copied by store_lookup(): "VALUE <key> <flags> <bytes>[ <cas>]",
 * then the value, all copied into the reply.
 */
static void proto_value_copy(struct proto_conn *pc, const char *key,
			     size_t nkey, const struct store_res *val,
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
	memcpy(q, data, val->nbytes);
	q += val->nbytes;
	*q++ = '\r';
	*q++ = '\n';
	reply_commit(&pc->out, (size_t)(q - p));
}

/*
 * Answers one key of a get line. Return: false when the line's answer is
 * an error instead (a gat that could not touch its hit for want of
 * memory: proto_get_oom()); true otherwise.
 */
static bool proto_get_key(struct proto_conn *pc, const char *key,
			  size_t nkey)
{
	struct proto_ctx *ctx = pc->ctx;
	struct proto_stats *st = &ctx->stats;
	bool touch = get_kind_touches(pc->get_kind);
	char data[PROTO_COPY_MAX];
	struct store_req req = {
		.key = key,
		.nkey = nkey,
		.flags = touch ? STORE_REQ_TOUCH : 0,
		.exptime = pc->get_exptime,
		.buf = data,
		.room = sizeof(data),
	};
	struct store_res val;
	enum store_miss why;
	struct item *it;

	pc->get_nkeys++;
	it = store_lookup(ctx->store, &req, &val);
	why = val.why;
	if (unlikely(prefix_stats_on(ctx->settings->prefixes)))
		prefix_stats_count(ctx->settings->prefixes, key, nkey,
				   why == STORE_HIT ? PREFIX_HIT : PREFIX_GET);
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
		return why != STORE_TOUCH_NO_MEMORY;
	}
	if (it)
		proto_value(pc, it,
			    get_kind_cas(pc->get_kind) ? VALUE_CAS : 0);
	else
		proto_value_copy(pc, key, nkey, &val, data,
				 get_kind_cas(pc->get_kind));
	return true;
}

/* An error that is the whole answer to a get line: memcached answers only
 * the error, so what this get queued is taken back when it still can be. */
static void proto_get_error(struct proto_conn *pc, const char *msg,
			    size_t len)
{
	if (pc->get_mark_ok)
		reply_rewind(&pc->out, &pc->get_mark);
	proto_out(pc, msg, len);
}

/* A key too long or with bad bytes. */
static void proto_get_bad_key(struct proto_conn *pc)
{
	proto_get_error(pc, STR_AND_LEN(PROTO_BAD_FORMAT));
}

/* A gat's hit that needed memory to take its new expiry, and there was
 * none (store_lookup()): memcached's answer when a get's reply cannot be
 * built. */
static void proto_get_oom(struct proto_conn *pc)
{
	proto_get_error(pc, STR_AND_LEN("SERVER_ERROR out of memory writing "
					"get response\r\n"));
}

/* The end of a get line: END, or ERROR for a "get" without keys. */
static void proto_get_end(struct proto_conn *pc)
{
	if (!pc->get_nkeys && !get_kind_touches(pc->get_kind))
		proto_out(pc, STR_AND_LEN("ERROR\r\n"));   /* "get" alone */
	else
		proto_out(pc, STR_AND_LEN("END\r\n"));
}

/*
 * The get line's answer is complete at @p: the rest of the line, up to its
 * newline, is read and not answered. @end, @eol: as proto_get_keys().
 * Return: as proto_get_keys().
 */
static const char *proto_get_answered(struct proto_conn *pc, const char *p,
				      const char *end, bool eol)
{
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
 * A NUL in the key token [@key, @p) of a get line: the line ends there, as
 * proto_line() ends a whole line (this is a line read in pieces, longer
 * than PROTO_LINE_MAX). The bytes before the NUL are the last key; the
 * rest of the line, up to its newline, is read and not answered.
 * @end, @eol: as proto_get_keys(). Return: as proto_get_keys().
 */
static const char *proto_get_nul(struct proto_conn *pc, const char *key,
				 const char *p, const char *end, bool eol)
{
	const char *z = memchr(key, '\0', (size_t)(p - key));

	if (z - key > KEY_MAX_LENGTH) {
		proto_get_bad_key(pc);
	} else {
		if (z > key) {
			if (!proto_get_key(pc, key, (size_t)(z - key))) {
				proto_get_oom(pc);
				return proto_get_answered(pc, p, end, eol);
			}
			if (unlikely(pc->state == PROTO_CLOSED))
				return p;
		}
		proto_get_end(pc);
	}
	return proto_get_answered(pc, p, end, eol);
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
		if (unlikely(bad))
			return proto_get_nul(pc, key, p, end, eol);
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
		if (unlikely(!proto_get_key(pc, key, (size_t)(p - key)))) {
			proto_get_oom(pc);
			return proto_get_answered(pc, p, end, eol);
		}
		if (unlikely(pc->state == PROTO_CLOSED))
			return p;
	}
	if (!eol) {
		pc->state = PROTO_GET_CONT;
		return end;
	}
	proto_get_end(pc);
	if (pc->state != PROTO_CLOSED)
		pc->state = PROTO_CMD;
	return end;

bad_key:
	proto_get_bad_key(pc);
	return proto_get_answered(pc, p, end, eol);
}

/*
 * Starts a get line after its command word: [@p, @end) is the rest of the
 * line (@eol) or of what has arrived of it. Return: how far the bytes were
 * used, or NULL when the gat exptime is itself incomplete.
 */
const char *proto_get_begin(struct proto_conn *pc, int kind,
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
size_t proto_get_cont(struct proto_conn *pc, const char *buf,
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

