// SPDX-License-Identifier: MIT
/*
 * proto_update.c - the commands that change one key and take no data
 * block: delete, incr, decr, touch. (The commands that list keys, keys
 * and the ranges, are proto_range.c's.)
 */
#include "proto_cmd.h"

#include <errno.h>

void proto_delete(struct proto_conn *pc, const struct parse_line *l, int arg)
{
	struct proto_ctx *ctx = pc->ctx;
	const struct token *key = &l->tok[1];

	(void)arg;
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
		proto_reply(pc, STR_AND_LEN(PROTO_BAD_FORMAT));
		return;
	}
	if (unlikely(prefix_stats_on(ctx->settings->prefixes)))
		prefix_stats_count(ctx->settings->prefixes, key->p, key->len,
				   PREFIX_DELETE);
	if (store_delete(ctx->store, key->p, key->len) == 0) {
		ctx->stats.delete_hits++;
		proto_reply(pc, STR_AND_LEN("DELETED\r\n"));
	} else {
		ctx->stats.delete_misses++;
		proto_reply(pc, STR_AND_LEN("NOT_FOUND\r\n"));
	}
}

void proto_arith(struct proto_conn *pc, const struct parse_line *l, int incr)
{
	struct proto_ctx *ctx = pc->ctx;
	const struct token *key = &l->tok[1];
	struct store_arith a = { .key = key->p, .nkey = key->len,
				 .incr = incr };
	int ret;

	pc->noreply = line_noreply(l);
	if (!key_bytes_ok(key->p, key->len)) {
		proto_reply(pc, STR_AND_LEN(PROTO_BAD_FORMAT));
		return;
	}
	if (!parse_u64(&l->tok[2], &a.delta)) {
		proto_reply(pc, STR_AND_LEN(
			"CLIENT_ERROR invalid numeric delta argument\r\n"));
		return;
	}
	ret = store_incr_decr(ctx->store, &a);
	switch (ret) {
	case 0:
		if (incr)
			ctx->stats.incr_hits++;
		else
			ctx->stats.decr_hits++;
		proto_reply_num(pc, "", 0, a.value);
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

void proto_touch(struct proto_conn *pc, const struct parse_line *l, int arg)
{
	struct proto_ctx *ctx = pc->ctx;
	const struct token *key = &l->tok[1];
	struct store_req req = { .key = key->p, .nkey = key->len,
				 .flags = STORE_REQ_TOUCH | STORE_REQ_PEEK };
	struct store_res res;
	int32_t exptime;

	(void)arg;
	pc->noreply = line_noreply(l);
	if (!key_bytes_ok(key->p, key->len)) {
		proto_reply(pc, STR_AND_LEN(PROTO_BAD_FORMAT));
		return;
	}
	if (!parse_s32(&l->tok[2], &exptime)) {
		proto_reply(pc, STR_AND_LEN(
			"CLIENT_ERROR invalid exptime argument\r\n"));
		return;
	}
	/* a lookup, as memcached's, so expired/flushed misses are counted */
	req.exptime = store_exptime(ctx->store, exptime);
	store_lookup(ctx->store, &req, &res);
	ctx->stats.cmd_touch++;
	if (res.why == STORE_HIT) {
		ctx->stats.touch_hits++;
		proto_reply(pc, STR_AND_LEN("TOUCHED\r\n"));
		return;
	}
	ctx->stats.touch_misses++;
	if (unlikely(res.why == STORE_TOUCH_NO_MEMORY)) {
		proto_reply(pc, STR_AND_LEN("SERVER_ERROR out of memory\r\n"));
		return;
	}
	if (res.why == STORE_MISS_EXPIRED)
		ctx->stats.get_expired++;
	else if (res.why == STORE_MISS_FLUSHED)
		ctx->stats.get_flushed++;
	proto_reply(pc, STR_AND_LEN("NOT_FOUND\r\n"));
}

