// SPDX-License-Identifier: MIT
/*
 * proto_bin.c - memcached's binary protocol, which memcached 1.6 still
 * serves (frozen, not removed): a 24-byte header, then extras, key and
 * value, every number big-endian. A connection speaks it when its first
 * byte is the request magic 0x80 (-B auto), or always (-B binary). It
 * shares the store, the cas values, the limits and the counters with the
 * text protocol; PROTOCOL.md, "Binary protocol", says what it answers.
 *
 * What memcached 1.6.18 answers, opcode by opcode (its proto_bin.c is the
 * reference; tests/integration/test_binary.py replays exchanges recorded
 * from it): a quiet opcode (GetQ, SetQ, ...) answers nothing on success,
 * and a quiet get nothing on a miss, but every error is answered; the
 * response carries the request's opcode and opaque.
 */
#include "proto_bin_packet.h"

#include <errno.h>

#include "alloc.h"
#include "meta.h"

/* The opcode a quiet opcode is the quiet form of; @op itself otherwise. */
static uint8_t bin_loud(uint8_t op, bool *quiet)
{
	static const uint8_t loud[][2] = {
		{ BIN_GETQ, BIN_GET }, { BIN_GETKQ, BIN_GETK },
		{ BIN_SETQ, BIN_SET }, { BIN_ADDQ, BIN_ADD },
		{ BIN_REPLACEQ, BIN_REPLACE }, { BIN_DELETEQ, BIN_DELETE },
		{ BIN_INCRQ, BIN_INCR }, { BIN_DECRQ, BIN_DECR },
		{ BIN_QUITQ, BIN_QUIT }, { BIN_FLUSHQ, BIN_FLUSH },
		{ BIN_APPENDQ, BIN_APPEND }, { BIN_PREPENDQ, BIN_PREPEND },
		{ BIN_GATQ, BIN_GAT }, { BIN_GATKQ, BIN_GATK },
	};
	size_t i;

	for (i = 0; i < sizeof(loud) / sizeof(loud[0]); i++) {
		if (loud[i][0] == op) {
			*quiet = true;
			return loud[i][1];
		}
	}
	*quiet = false;
	return op;
}

/* A request memcached calls a protocol error: Invalid arguments, and the
 * connection closes once that is written. */
static void bin_protocol_error(struct proto_conn *pc)
{
	bin_error(pc, BIN_EINVAL, NULL);
	pc->state = PROTO_CLOSED;
}

/*
 * The rest of a request's body that the command does not read (a refused
 * value, an unknown command's body): dropped as it arrives, as memcached
 * does, up to twice the largest item; past that the client is not one
 * that means well and the connection closes without reading it.
 */
static void bin_skip(struct proto_conn *pc, size_t n)
{
	if (!n)
		return;
	if (n > 2 * pc->ctx->settings->item_size_max) {
		pc->state = PROTO_CLOSED;
		return;
	}
	proto_swallow_begin(pc, n);
}

/* ---- get, getk, touch, gat, gatk and their quiet forms ---- */

static void bin_get(struct proto_conn *pc, uint8_t op, bool quiet,
		    const char *ext, const char *key, uint16_t nkey)
{
	struct proto_ctx *ctx = pc->ctx;
	bool touch = op == BIN_TOUCH || op == BIN_GAT || op == BIN_GATK;
	bool with_key = op == BIN_GETK || op == BIN_GATK;
	/* a small value is copied under the shard lock, as get's is */
	char data[PROTO_COPY_MAX];
	struct store_req req = { .key = key, .nkey = nkey, .buf = data,
				 .room = sizeof(data) };
	struct store_res res;
	struct item *it;
	uint32_t vlen;
	size_t head;
	char *p;

	if (touch) {
		req.flags |= STORE_REQ_TOUCH;
		req.exptime = store_exptime(ctx->store,
					    (int64_t)get_be32(ext));
	}
	if (op == BIN_TOUCH)
		req.flags |= STORE_REQ_PEEK;
	it = store_lookup(ctx->store, &req, &res);
	if (unlikely(prefix_stats_on(ctx->settings->prefixes)))
		prefix_stats_count(ctx->settings->prefixes, key, nkey,
				   res.why == STORE_HIT ? PREFIX_HIT :
				   PREFIX_GET);
	proto_count_lookup(&ctx->stats, touch, res.why == STORE_HIT);
	if (unlikely(res.why == STORE_TOUCH_NO_MEMORY)) {
		/* a touch, gat or gatk, quiet or not: the error is answered */
		bin_error(pc, BIN_ENOMEM, NULL);
		return;
	}
	if (res.why != STORE_HIT) {
		if (res.why == STORE_MISS_EXPIRED)
			ctx->stats.get_expired++;
		else if (res.why == STORE_MISS_FLUSHED)
			ctx->stats.get_flushed++;
		if (quiet)
			return;
		if (with_key)	/* the key as body, no text */
			bin_respond(pc, BIN_ENOENT, NULL, 0, key, nkey, NULL, 0,
				    0);
		else
			bin_error(pc, BIN_ENOENT, NULL);
		return;
	}
	if (unlikely(pc->state == PROTO_CLOSED)) {
		if (it)
			item_put(it);
		return;
	}
	/* extras: the client flags; then the key (getk, gatk); the value,
	 * copied with them when it was copied here */
	vlen = op == BIN_TOUCH ? 0 : res.nbytes;
	head = BIN_HEADER + 4 + (with_key ? nkey : 0);
	p = reply_reserve(&pc->out, head + (it ? 0 : vlen));
	if (unlikely(!p)) {
		if (it)
			item_put(it);
		proto_fail(pc);
		return;
	}
	p = bin_put_header(pc, p, BIN_OK, 4, with_key ? nkey : 0,
			   (uint32_t)(head - BIN_HEADER) + vlen,
			   ctx->settings->cas_enabled ? res.cas : 0);
	p = put_be32(p, res.flags);
	if (with_key)
		memcpy(p, key, nkey);
	if (!it) {
		if (vlen)
			memcpy(p + (with_key ? nkey : 0), data, vlen);
		reply_commit(&pc->out, head + vlen);
		return;
	}
	reply_commit(&pc->out, head);
	if (!vlen) {
		item_put(it);
		return;
	}
	if (unlikely(reply_add_ref(&pc->out, it, item_value(it), vlen) < 0))
		proto_fail(pc);
}

/* ---- set, add, replace, append, prepend ---- */

/* The value of a storage request is in: store it and answer. */
static void bin_update_done(struct proto_conn *pc, struct item *it)
{
	struct proto_ctx *ctx = pc->ctx;
	uint8_t op = pc->bin.loud;
	struct store_set o = { .op = (enum store_op)pc->pending_op,
			       .cas = pc->pending_cas };
	enum store_result res;

	ctx->stats.cmd_set++;
	if (o.op == STORE_OP_APPEND || o.op == STORE_OP_PREPEND)
		o.has_cas = o.cas != 0;
	res = store_item_store_opts(ctx->store, it, &o);
	if (o.op == STORE_OP_CAS)
		proto_count_cas(&ctx->stats, res);
	switch (res) {
	case STORE_STORED:
		bin_done(pc, pc->bin.quiet,
			 ctx->settings->cas_enabled ? o.cas_out : 0);
		return;
	case STORE_EXISTS:
		bin_error(pc, BIN_EEXISTS, NULL);
		return;
	case STORE_NOT_FOUND:
		bin_error(pc, BIN_ENOENT, NULL);
		return;
	case STORE_TOO_LARGE:
		ctx->stats.store_too_large++;
		break;
	case STORE_NO_MEMORY:
		ctx->stats.store_no_memory++;
		break;
	default:
		break;
	}
	/* not stored: memcached answers by the command */
	if (op == BIN_ADD)
		bin_error(pc, BIN_EEXISTS, NULL);
	else if (op == BIN_REPLACE)
		bin_error(pc, BIN_ENOENT, NULL);
	else
		bin_error(pc, BIN_NOT_STORED, NULL);
}

/*
 * A storage request whose header, extras and key are in: the item is
 * allocated now and its value read as it arrives (PROTO_DATA), or the
 * request is refused and its value dropped.
 */
static void bin_update(struct proto_conn *pc, uint8_t op, const char *ext,
		       const char *key, uint16_t nkey, uint32_t vlen)
{
	struct proto_ctx *ctx = pc->ctx;
	bool append = op == BIN_APPEND || op == BIN_PREPEND;
	uint32_t flags = append ? 0 : get_be32(ext);
	rel_time_t exptime = append ? 0 :
		store_exptime(ctx->store, (int64_t)get_be32(ext + 4));
	struct item *it;
	int ret;

	if (unlikely(prefix_stats_on(ctx->settings->prefixes)))
		prefix_stats_count(ctx->settings->prefixes, key, nkey,
				   PREFIX_SET);
	ret = store_item_alloc(ctx->store, key, nkey, flags, exptime, vlen,
			       &it);
	if (ret) {
		if (ret == -E2BIG) {
			ctx->stats.store_too_large++;
			bin_error(pc, BIN_E2BIG, NULL);
		} else {
			ctx->stats.store_no_memory++;
			bin_error(pc, BIN_ENOMEM,
				  "Out of memory allocating item");
		}
		/* as memcached: a failed set leaves no old value */
		if (op == BIN_SET)
			store_delete(ctx->store, key, nkey);
		bin_skip(pc, vlen);
		return;
	}
	/* a key no reply line could carry as it is is listed in base64 */
	if (!meta_key_plain(key, nkey))
		it->iflags |= ITEM_KEY_BINARY;	/* not linked yet */
	switch (op) {
	case BIN_ADD:
		pc->pending_op = STORE_OP_ADD;
		break;
	case BIN_REPLACE:
		pc->pending_op = STORE_OP_REPLACE;
		break;
	case BIN_APPEND:
		pc->pending_op = STORE_OP_APPEND;
		break;
	case BIN_PREPEND:
		pc->pending_op = STORE_OP_PREPEND;
		break;
	default:
		pc->pending_op = STORE_OP_SET;
		break;
	}
	pc->pending_cas = pc->bin.cas;
	/* a cas makes set, add and replace a cas (memcached's NREAD_CAS) */
	if (pc->bin.cas && !append)
		pc->pending_op = STORE_OP_CAS;
	proto_data_begin(pc, it, vlen, bin_update_done);
}

/* ---- delete, increment, decrement ---- */

static void bin_delete(struct proto_conn *pc, bool quiet, const char *key,
		       uint16_t nkey)
{
	struct proto_ctx *ctx = pc->ctx;
	struct store_del d = { .key = key, .nkey = nkey,
			       .has_cas = pc->bin.cas != 0,
			       .cas = pc->bin.cas };
	enum store_result res;

	if (unlikely(prefix_stats_on(ctx->settings->prefixes)))
		prefix_stats_count(ctx->settings->prefixes, key, nkey,
				   PREFIX_DELETE);
	res = store_meta_delete(ctx->store, &d);
	if (res == STORE_STORED) {
		ctx->stats.delete_hits++;
		bin_done(pc, quiet, 0);
	} else if (res == STORE_EXISTS) {
		bin_error(pc, BIN_EEXISTS, NULL);
	} else if (res == STORE_NOT_FOUND) {
		ctx->stats.delete_misses++;
		bin_error(pc, BIN_ENOENT, NULL);
	} else {
		bin_error(pc, BIN_ENOMEM, NULL);
	}
}

/* The 8-byte value of a successful increment or decrement. */
static void bin_arith_value(struct proto_conn *pc, bool quiet, uint64_t v,
			    uint64_t cas)
{
	char body[8];

	if (quiet)
		return;
	put_be64(body, v);
	bin_respond(pc, BIN_OK, NULL, 0, NULL, 0, body, 8,
		    pc->ctx->settings->cas_enabled ? cas : 0);
}

/* A miss of an increment or decrement that creates the key with the
 * request's initial value and expiration (unless that is 0xffffffff). */
static void bin_arith_create(struct proto_conn *pc, bool quiet,
			     const char *key, uint16_t nkey, uint64_t initial,
			     uint32_t expiration)
{
	struct proto_ctx *ctx = pc->ctx;
	char num[24];
	uint64_t cas = 0;
	struct item *it;
	size_t n;

	n = (size_t)(fmt_u64(num, initial) - num);
	if (store_item_alloc(ctx->store, key, nkey, 0,
			     store_exptime(ctx->store, (int64_t)expiration),
			     (uint32_t)n, &it)) {
		bin_error(pc, BIN_ENOMEM, "Out of memory allocating new item");
		return;
	}
	if (!meta_key_plain(key, nkey))
		it->iflags |= ITEM_KEY_BINARY;
	memcpy(item_value(it), num, n);
	if (store_item_store(ctx->store, it, STORE_OP_ADD, 0, &cas) ==
	    STORE_STORED)
		bin_arith_value(pc, quiet, initial, cas);
	else
		bin_error(pc, BIN_NOT_STORED, NULL);
}

static void bin_arith(struct proto_conn *pc, uint8_t op, bool quiet,
		      const char *ext, const char *key, uint16_t nkey)
{
	struct proto_ctx *ctx = pc->ctx;
	bool incr = op == BIN_INCR;
	struct store_arith a = { .key = key, .nkey = nkey, .incr = incr,
				 .delta = get_be64(ext),
				 .has_cas = pc->bin.cas != 0,
				 .cmp_cas = pc->bin.cas };
	uint32_t expiration = get_be32(ext + 16);

	switch (store_incr_decr(ctx->store, &a)) {
	case 0:
		if (incr)
			ctx->stats.incr_hits++;
		else
			ctx->stats.decr_hits++;
		bin_arith_value(pc, quiet, a.value, a.cas);
		return;
	case -EINVAL:
		bin_error(pc, BIN_DELTA_BADVAL, NULL);
		return;
	case -EEXIST:
		bin_error(pc, BIN_EEXISTS, NULL);
		return;
	case -ENOENT:
		break;
	default:
		bin_error(pc, BIN_ENOMEM, "Out of memory incrementing value");
		return;
	}
	if (expiration != 0xffffffffu) {
		bin_arith_create(pc, quiet, key, nkey, get_be64(ext + 8),
				 expiration);
		return;
	}
	if (incr)
		ctx->stats.incr_misses++;
	else
		ctx->stats.decr_misses++;
	bin_error(pc, BIN_ENOENT, NULL);
}

/* What a connection may send before it has logged in (memcached's). */
static bool bin_open_before_login(uint8_t opcode)
{
	return opcode == BIN_SASL_LIST || opcode == BIN_SASL_AUTH ||
	       opcode == BIN_SASL_STEP || opcode == BIN_VERSION;
}

/* ---- one request ---- */

/*
 * The requests that are not about items (version, flush, noop, stat, quit,
 * SASL) and the unknown opcodes, from bin_dispatch(): @ext, @key and the
 * @rest of the body as it has them.
 */
static void bin_dispatch_session(struct proto_conn *pc, const char *ext,
				 const char *key, uint32_t rest)
{
	const struct proto_bin_req *rq = &pc->bin;
	uint16_t nkey = rq->keylen;
	uint8_t extlen = rq->extlen;
	uint32_t body = rq->bodylen;
	uint8_t op = rq->loud;

	switch (op) {
	case BIN_VERSION:
		if (extlen || nkey || body)
			break;
		bin_respond(pc, BIN_OK, NULL, 0, NULL, 0,
			    STR_AND_LEN(PROTO_VERSION), 0);
		return;
	case BIN_FLUSH:
		if (nkey || body != extlen || (extlen != 0 && extlen != 4))
			break;
		bin_flush(pc, rq->quiet, ext, extlen);
		return;
	case BIN_NOOP:
		if (extlen || nkey || body)
			break;
		bin_done(pc, false, 0);
		return;
	case BIN_STAT:
		/* as memcached, a body past the key is read as the next
		 * request */
		if (extlen)
			break;
		bin_stats(pc, key, nkey);
		return;
	case BIN_QUIT:
		if (extlen || nkey || body)
			break;
		bin_done(pc, rq->quiet, 0);
		pc->state = PROTO_CLOSED;
		return;
	case BIN_SASL_LIST:
		if (extlen || nkey || body)
			break;
		if (pc->ctx->settings->sasl) {
			pc->authed = false;	/* as memcached's */
			bin_respond(pc, BIN_OK, NULL, 0, NULL, 0,
				    STR_AND_LEN("PLAIN"), 0);
		}
		else	/* memcached's answer without -S */
			bin_error(pc, BIN_UNKNOWN, NULL);
		return;
	case BIN_SASL_AUTH:
	case BIN_SASL_STEP:
		if (extlen || !nkey)
			break;
		if (pc->ctx->settings->sasl) {
			/* proto_bin_command() waited for the data */
			bin_sasl_auth(pc, op, key, nkey, key + nkey, rest);
			return;
		}
		bin_error(pc, BIN_UNKNOWN, NULL);
		bin_skip(pc, rest);
		return;
	default:
		/* memcached drops the body after the header, extras and key
		 * too, and so loses the start of the next request; this
		 * drops the rest of this one (PROTOCOL.md) */
		bin_error(pc, BIN_UNKNOWN, NULL);
		bin_skip(pc, rest);
		return;
	}
	bin_protocol_error(pc);
}

/*
 * The request whose header, extras and key are at @buf: checked as
 * memcached checks it, then run (the item commands here, the others in
 * bin_dispatch_session()).
 */
static void bin_dispatch(struct proto_conn *pc, const char *buf)
{
	struct proto_bin_req *rq = &pc->bin;
	const char *ext = buf + BIN_HEADER, *key = ext + rq->extlen;
	uint16_t nkey = rq->keylen;
	uint8_t extlen = rq->extlen;
	uint32_t body = rq->bodylen;
	uint32_t rest = body - extlen - nkey;	/* the value, if any */
	uint8_t op = rq->loud;
	bool quiet = rq->quiet;

	switch (op) {
	case BIN_SET:
	case BIN_ADD:
	case BIN_REPLACE:
		if (extlen != 8 || !nkey)
			break;
		bin_update(pc, op, ext, key, nkey, rest);
		return;
	case BIN_APPEND:
	case BIN_PREPEND:
		if (extlen || !nkey)
			break;
		bin_update(pc, op, ext, key, nkey, rest);
		return;
	case BIN_GET:
	case BIN_GETK:
		if (extlen || !nkey || body != nkey)
			break;
		bin_get(pc, op, quiet, ext, key, nkey);
		return;
	case BIN_TOUCH:
	case BIN_GAT:
	case BIN_GATK:
		/* memcached does not check the body here: what follows the
		 * key is read as the next request */
		if (extlen != 4 || !nkey)
			break;
		bin_get(pc, op, quiet, ext, key, nkey);
		return;
	case BIN_DELETE:
		if (extlen || !nkey || body != nkey)
			break;
		bin_delete(pc, quiet, key, nkey);
		return;
	case BIN_INCR:
	case BIN_DECR:
		if (extlen != 20 || !nkey || body != nkey + 20u)
			break;
		bin_arith(pc, op, quiet, ext, key, nkey);
		return;
	default:
		bin_dispatch_session(pc, ext, key, rest);
		return;
	}
	bin_protocol_error(pc);
}

size_t proto_bin_command(struct proto_conn *pc, const char *buf, size_t len)
{
	struct proto_bin_req *rq = &pc->bin;
	size_t need;

	if (len < BIN_HEADER)
		return 0;
	if ((unsigned char)buf[0] != BIN_REQ_MAGIC) {
		/* memcached closes without a word, once a header has come */
		pc->state = PROTO_CLOSED;
		return 0;
	}
	rq->opcode = (uint8_t)buf[1];
	rq->keylen = get_be16(buf + 2);
	rq->extlen = (uint8_t)buf[4];
	rq->bodylen = get_be32(buf + 8);
	memcpy(rq->opaque, buf + 12, 4);
	rq->cas = get_be64(buf + 16);
	rq->loud = bin_loud(rq->opcode, &rq->quiet);
	/*
	 * Lengths that contradict each other, or a key over 250 bytes: the
	 * answer memcached gives once the key has come, given at once, and
	 * the connection closes without reading more.
	 */
	if ((uint32_t)rq->keylen + rq->extlen > rq->bodylen) {
		bin_error(pc, BIN_UNKNOWN, NULL);
		pc->state = PROTO_CLOSED;
		return 0;
	}
	/* -S: before its login, a connection may only log in */
	if (!pc->authed && !bin_open_before_login(rq->opcode)) {
		bin_error(pc, BIN_AUTH_ERROR, NULL);
		pc->state = PROTO_CLOSED;
		return 0;
	}
	if (rq->keylen > KEY_MAX_LENGTH) {
		bin_protocol_error(pc);
		return 0;
	}
	need = BIN_HEADER + rq->extlen + rq->keylen;
	/* a login's data is read whole, and is small */
	if (pc->ctx->settings->sasl && !rq->extlen && rq->keylen &&
	    (rq->loud == BIN_SASL_AUTH || rq->loud == BIN_SASL_STEP)) {
		if (rq->bodylen - rq->keylen > SASL_DATA_MAX) {
			bin_protocol_error(pc);
			return 0;
		}
		need = BIN_HEADER + rq->bodylen;
	}
	if (len < need)
		return 0;
	bin_dispatch(pc, buf);
	return need;
}
