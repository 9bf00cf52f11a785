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
 * item. Every reply string is memcached 1.6's. The commands themselves live
 * in one file per family (proto_internal.h lists them).
 *
 * Synchronization: a proto_conn is used by its connection's worker only;
 * the store takes its own locks.
 */
#include "proto_internal.h"

#define GET_LEAD_MAX	100	/* spaces before a streamed get's command */

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

/* "<prefix><n>\r\n", unless noreply. */
void proto_reply_num(struct proto_conn *pc, const char *prefix, size_t plen,
		     uint64_t n)
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
