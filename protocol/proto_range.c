// SPDX-License-Identifier: MIT
/*
 * proto_range.c - the range commands: range, ranges, rrange, rranges, keys,
 * count, delete_range (PROTOCOL.md, "Range commands").
 */
#include "proto_cmd.h"

#include "alloc.h"

#define RANGE_DEFAULT	100u	/* <count> when none is given */
#define RANGE_STACK	128u	/* ranges this long need no allocation */

static const char s_bad_range[] = "CLIENT_ERROR bad range\r\n";

/* A range's bounds, and room for their keys decoded from base64. */
struct proto_bounds {
	struct store_bound from, to;
	char from_buf[KEY_MAX_LENGTH], to_buf[KEY_MAX_LENGTH];
};

/* Parses "<from> <to>" at tokens 1 and 2. Return: true if valid. */
static bool proto_bounds(const struct parse_line *l, struct proto_bounds *b)
{
	return parse_bound(&l->tok[1], &b->from, b->from_buf) &&
	       parse_bound(&l->tok[2], &b->to, b->to_buf) &&
	       store_bound_cmp(&b->from, &b->to) <= 0;
}

/*
 * keys: "KEY <key>" lines from keys the store copied under its locks
 * (store_range_keys()), so no item is referenced per key; "KEY <base64> b"
 * for a key stored as base64 (ms ... b), which may hold any byte.
 */
static void proto_keys_reply(struct proto_conn *pc,
			     const struct store_bound *from,
			     const struct store_bound *to, bool reverse,
			     unsigned int count)
{
	struct store_key *keys = pc->ctx->keys;
	int n, i;

	if (count > PROTO_KEYS_BUF) {
		keys = ak_malloc((size_t)count * sizeof(*keys));
		if (!keys) {
			proto_out(pc, STR_AND_LEN(
				"SERVER_ERROR out of memory\r\n"));
			return;
		}
	}
	n = store_range_keys(pc->ctx->store, from, to, reverse, count, keys);
	if (n < 0) {
		proto_out(pc, STR_AND_LEN("SERVER_ERROR out of memory\r\n"));
		goto out_free;
	}
	pc->ctx->stats.range_items += (uint64_t)n;
	for (i = 0; i < n && pc->state != PROTO_CLOSED; i++) {
		const struct store_key *k = &keys[i];
		char *p = reply_reserve(&pc->out, 4 + B64_ENCODED_LEN(k->nkey) +
					4);
		char *q;

		if (!p) {
			proto_fail(pc);
			break;
		}
		memcpy(p, "KEY ", 4);
		q = put_listed_key(p + 4, k->key, k->nkey, k->binary);
		if (k->binary) {
			memcpy(q, " b", 2);
			q += 2;
		}
		memcpy(q, "\r\n", 2);
		reply_commit(&pc->out, (size_t)(q + 2 - p));
	}
	proto_out(pc, STR_AND_LEN("END\r\n"));
out_free:
	if (keys != pc->ctx->keys)
		ak_free(keys);
}

void proto_range(struct proto_conn *pc, const struct parse_line *l, int arg)
{
	enum range_kind kind = (enum range_kind)(arg & ~RANGE_REVERSE);
	bool reverse = arg & RANGE_REVERSE;
	struct proto_ctx *ctx = pc->ctx;
	unsigned int cap = ctx->settings->range_max ? ctx->settings->range_max
						    : RANGE_DEFAULT;
	unsigned int count = RANGE_DEFAULT < cap ? RANGE_DEFAULT : cap;
	struct item *stack[RANGE_STACK], **items = stack;
	struct proto_bounds b;
	int n, i;

	if (!proto_bounds(l, &b) ||
	    (l->ntok == 4 && !parse_count(&l->tok[3], cap, &count))) {
		proto_out(pc, STR_AND_LEN(s_bad_range));
		return;
	}
	ctx->stats.cmd_range++;
	if (kind == RANGE_KEYS) {
		proto_keys_reply(pc, &b.from, &b.to, reverse, count);
		return;
	}
	if (count > RANGE_STACK) {
		items = ak_malloc(count * sizeof(*items));
		if (!items) {
			proto_out(pc, STR_AND_LEN(
				"SERVER_ERROR out of memory\r\n"));
			return;
		}
	}
	n = store_range(ctx->store, &b.from, &b.to, reverse, count, items);
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
		proto_value(pc, it, VALUE_LISTED |
			    (kind == RANGE_VALUES_CAS ? VALUE_CAS : 0));
	}
	proto_out(pc, STR_AND_LEN("END\r\n"));
out_free:
	if (items != stack)
		ak_free(items);
}

void proto_count(struct proto_conn *pc, const struct parse_line *l, int arg)
{
	struct proto_bounds b;

	(void)arg;
	if (!proto_bounds(l, &b)) {
		proto_out(pc, STR_AND_LEN(s_bad_range));
		return;
	}
	pc->ctx->stats.cmd_count++;
	proto_reply_num(pc, STR_AND_LEN("COUNT "),
			store_count(pc->ctx->store, &b.from, &b.to));
}

void proto_delete_range(struct proto_conn *pc, const struct parse_line *l,
			int arg)
{
	struct proto_bounds b;

	(void)arg;
	if (l->ntok == 4) {
		if (!TOKEN_IS(&l->tok[3], "noreply")) {
			proto_out(pc, STR_AND_LEN(PROTO_BAD_FORMAT));
			return;
		}
		pc->noreply = true;
	}
	if (!proto_bounds(l, &b)) {
		proto_reply(pc, STR_AND_LEN(s_bad_range));
		return;
	}
	pc->ctx->stats.cmd_delete_range++;
	proto_reply_num(pc, STR_AND_LEN("DELETED "),
			store_delete_range(pc->ctx->store, &b.from, &b.to));
}
