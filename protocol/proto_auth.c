// SPDX-License-Identifier: MIT
/*
 * proto_auth.c - authentication (-Y): the "set" whose data block is "<user>
 * <password>", as memcached 1.6 takes it.
 */
#include "proto_cmd.h"

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
size_t proto_auth_command(struct proto_conn *pc, const char *buf,
				 size_t len)
{
	struct proto_ctx *ctx = pc->ctx;
	const char *end, *data, *nl = proto_line(buf, len, &end);
	struct parse_line l;
	uint32_t size;
	size_t used;

	if (!nl) {
		if (len > PROTO_LINE_MAX)
			pc->state = PROTO_CLOSED;
		return 0;
	}
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
