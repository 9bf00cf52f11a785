// SPDX-License-Identifier: MIT
/*
 * proto_storage.c - set, add, replace, append, prepend and cas: the
 * command line, the data block copied into the item as it arrives (or
 * swallowed when the item is refused), the store and its answer; and the
 * one-pass set of the usual case.
 */
#include "proto_cmd.h"

#include <errno.h>

/*
 * Allocates the item of a storage command whose line was read into @st.
 * Return: the item, or NULL when it is refused: then the answer is queued
 * and the engine goes to PROTO_SWALLOW (or PROTO_CLOSED).
 */
static __attribute__((always_inline)) inline struct item *
proto_store_alloc(struct proto_conn *pc, const struct parse_store *st,
		   enum store_op op)
{
	struct proto_ctx *ctx = pc->ctx;
	struct item *it;
	int ret;

	/* stats detail: memcached counts a set once its line is read */
	if (unlikely(prefix_stats_on(ctx->settings->prefixes)))
		prefix_stats_count(ctx->settings->prefixes, st->key, st->nkey,
				   PREFIX_SET);
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
	proto_swallow_begin(pc, (size_t)st->bytes + 2);
	return NULL;
}

static void proto_store_done(struct proto_conn *pc, struct item *it);

/* As proto_store_alloc(), then PROTO_DATA fills the item. */
static void proto_store_begin(struct proto_conn *pc,
			       const struct parse_store *st, enum store_op op)
{
	struct item *it = proto_store_alloc(pc, st, op);

	if (!it)
		return;
	pc->pending_op = op;
	pc->pending_cas = st->cas;
	proto_data_begin(pc, it, (size_t)st->bytes + 2, proto_store_done);
}

void proto_store(struct proto_conn *pc, const struct parse_line *l, int arg)
{
	enum store_op op = (enum store_op)arg;
	struct parse_store st;
	int ret = parse_store_line(l, op == STORE_OP_CAS, &st);

	if (ret == -EINVAL) {	/* the table's token rule refused these already */
		proto_out(pc, STR_AND_LEN("ERROR\r\n"));
		return;
	}
	pc->noreply = st.noreply;
	if (ret) {
		proto_reply(pc, STR_AND_LEN(PROTO_BAD_FORMAT));
		return;
	}
	proto_store_begin(pc, &st, op);
}

/*
 * The data block of @it is in: check its end, store, answer. @op and @cas:
 * the command's. @line_key: the key in the command line when that is
 * still at hand, else NULL (a set that fails for memory then deletes the
 * key, which it copies from the item before the store takes the item).
 */
static __attribute__((always_inline)) inline void
proto_store_item(struct proto_conn *pc, struct item *it, enum store_op op,
		   uint64_t cas, const char *line_key, const char *end)
{
	struct proto_ctx *ctx = pc->ctx;
	struct proto_stats *st = &ctx->stats;
	bool set = op == STORE_OP_SET;
	char copy[KEY_MAX_LENGTH];
	const char *key = line_key;
	size_t nkey = it->nkey;
	enum store_result res;

	st->cmd_set++;
	if (end[0] != '\r' || end[1] != '\n') {
		item_put(it);
		proto_reply(pc, STR_AND_LEN("CLIENT_ERROR bad data chunk\r\n"));
		return;
	}
	if (set && !key) {	/* the store takes the item: keep the key */
		memcpy(copy, item_key(it), nkey);
		key = copy;
	}
	res = store_item_store(ctx->store, it, op, cas, NULL);
	if (op == STORE_OP_CAS)
		proto_count_cas(st, res);
	switch (res) {
	case STORE_STORED:
		proto_reply(pc, STR_AND_LEN("STORED\r\n"));
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

/* The block of a storage command read by the general path is in. */
static void proto_store_done(struct proto_conn *pc, struct item *it)
{
	proto_store_item(pc, it, (enum store_op)pc->pending_op,
			   pc->pending_cas, NULL, pc->data_end);
}

/*
 * The usual set (parse_set_fast()): its line, then its data block too when
 * all of it is in @buf, copied straight into the item and stored while the
 * key is still at hand in the line. Return: bytes used; 0 when the line is
 * not one the fast path takes (the general path reads it).
 */
size_t proto_set_fast(struct proto_conn *pc, const char *buf, size_t len)
{
	struct parse_store st;
	size_t n = parse_set_fast(buf, buf + len, &st), total;
	struct item *it;

	if (!n)
		return 0;
	pc->noreply = st.noreply;
	total = (size_t)st.bytes + 2;
	if (len - n < total) {
		proto_store_begin(pc, &st, STORE_OP_SET);
		return n;
	}
	it = proto_store_alloc(pc, &st, STORE_OP_SET);
	if (!it)
		return n;	/* PROTO_SWALLOW takes the block */
	memcpy(item_value(it), buf + n, st.bytes);
	proto_store_item(pc, it, STORE_OP_SET, 0, st.key, buf + n + st.bytes);
	return n + total;
}
