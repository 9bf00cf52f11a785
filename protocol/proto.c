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
 * in one file per family (proto_cmd.h lists them).
 *
 * Synchronization: a proto_conn is used by its connection's worker only;
 * the store takes its own locks.
 */
#include "proto_cmd.h"

#define GET_LEAD_MAX	100	/* spaces before a streamed get's command */

void proto_conn_init(struct proto_conn *pc, struct proto_ctx *ctx)
{
	memset(pc, 0, sizeof(*pc));
	pc->ctx = ctx;
	reply_init(&pc->out);
	pc->out.pool = &ctx->pool;
	pc->state = PROTO_CMD;
	pc->authed = !ctx->settings->auth_enabled;
}

void proto_conn_idle(struct proto_conn *pc)
{
	reply_trim(&pc->out);
}

void proto_conn_release(struct proto_conn *pc)
{
	if (pc->pending) {
		item_put(pc->pending);
		pc->pending = NULL;
	}
	proto_dump_release(pc);
	reply_free(&pc->out);
	pc->state = PROTO_CLOSED;
}

/* ------------------------------------------------------------------ */
/* the command table                                                    */

#define TOK_ANY		PARSE_MAX_TOKENS

#define CMD_ROW(c, word, min, max, fl, fn, a) \
	{ .cmd = c, .name = word, .len = sizeof(word) - 1, .min_tok = min, \
	  .max_tok = max, .flags = fl, .run = fn, .arg = a }

/*
 * Every command: its word, how many tokens its line may have (the command
 * word included; more or fewer are answered "ERROR", as memcached does),
 * and its handler. A token count the handler accepts may still be refused
 * there with a CLIENT_ERROR (a bad number, a bad key). proto_cmd_find()
 * tries the rows in this order: the busiest first.
 */
static const struct proto_cmd_def proto_cmds[] = {
	CMD_ROW(CMD_GET,	"get",		0, 0, CMDF_GET, NULL, GET_GET),
	CMD_ROW(CMD_SET,	"set",		5, 6, 0, proto_store, STORE_OP_SET),
	CMD_ROW(CMD_GETS,	"gets",		0, 0, CMDF_GET, NULL, GET_GETS),
	CMD_ROW(CMD_DELETE,	"delete",	2, 4, 0, proto_delete, 0),
	CMD_ROW(CMD_INCR,	"incr",		3, 4, 0, proto_arith, true),
	CMD_ROW(CMD_DECR,	"decr",		3, 4, 0, proto_arith, false),
	CMD_ROW(CMD_TOUCH,	"touch",	3, 4, 0, proto_touch, 0),
	CMD_ROW(CMD_GAT,	"gat",		0, 0, CMDF_GET, NULL, GET_GAT),
	CMD_ROW(CMD_GATS,	"gats",		0, 0, CMDF_GET, NULL, GET_GATS),
	CMD_ROW(CMD_ADD,	"add",		5, 6, 0, proto_store, STORE_OP_ADD),
	CMD_ROW(CMD_REPLACE,	"replace",	5, 6, 0, proto_store,
		STORE_OP_REPLACE),
	CMD_ROW(CMD_APPEND,	"append",	5, 6, 0, proto_store,
		STORE_OP_APPEND),
	CMD_ROW(CMD_PREPEND,	"prepend",	5, 6, 0, proto_store,
		STORE_OP_PREPEND),
	CMD_ROW(CMD_CAS,	"cas",		6, 7, 0, proto_store, STORE_OP_CAS),
	CMD_ROW(CMD_RANGE,	"range",	3, 4, 0, proto_range, RANGE_VALUES),
	CMD_ROW(CMD_KEYS,	"keys",		3, 4, 0, proto_range, RANGE_KEYS),
	CMD_ROW(CMD_RANGES,	"ranges",	3, 4, 0, proto_range,
		RANGE_VALUES_CAS),
	CMD_ROW(CMD_RRANGE,	"rrange",	3, 4, 0, proto_range,
		RANGE_VALUES | RANGE_REVERSE),
	CMD_ROW(CMD_RRANGES,	"rranges",	3, 4, 0, proto_range,
		RANGE_VALUES_CAS | RANGE_REVERSE),
	CMD_ROW(CMD_COUNT,	"count",	3, 3, 0, proto_count, 0),
	CMD_ROW(CMD_DELETE_RANGE, "delete_range", 3, 4, 0, proto_delete_range,
		0),
	CMD_ROW(CMD_MG,		"mg",		1, TOK_ANY, 0, proto_mg, 0),
	CMD_ROW(CMD_MS,		"ms",		1, TOK_ANY, 0, proto_ms, 0),
	CMD_ROW(CMD_MD,		"md",		1, TOK_ANY, 0, proto_md, 0),
	CMD_ROW(CMD_MA,		"ma",		1, TOK_ANY, 0, proto_ma, 0),
	CMD_ROW(CMD_MN,		"mn",		1, TOK_ANY, 0, proto_mn, 0),
	CMD_ROW(CMD_ME,		"me",		1, TOK_ANY, 0, proto_me, 0),
	CMD_ROW(CMD_FLUSH_ALL,	"flush_all",	1, 3, 0, proto_flush_all, 0),
	CMD_ROW(CMD_VERBOSITY,	"verbosity",	2, 3, 0, proto_verbosity, 0),
	CMD_ROW(CMD_VERSION,	"version",	1, TOK_ANY, 0, proto_version, 0),
	CMD_ROW(CMD_QUIT,	"quit",		1, TOK_ANY, 0, proto_quit, 0),
	CMD_ROW(CMD_SHUTDOWN,	"shutdown",	1, TOK_ANY, 0, proto_shutdown, 0),
	CMD_ROW(CMD_STATS,	"stats",	1, TOK_ANY, 0, proto_stats, 0),
	CMD_ROW(CMD_CACHE_MEMLIMIT, "cache_memlimit", 2, 3, 0,
		proto_cache_memlimit, 0),
	CMD_ROW(CMD_LRU_CRAWLER, "lru_crawler",	1, TOK_ANY, 0,
		proto_lru_crawler, 0),
	CMD_ROW(CMD_SNAPSHOT,	"snapshot",	1, 1, 0, proto_snapshot, 0),
	CMD_ROW(CMD_REFRESH_CERTS, "refresh_certs", 1, TOK_ANY, 0,
		proto_refresh_certs, 0),
#ifdef AK_FAULT_INJECTION
	CMD_ROW(CMD_DEBUG,	"debug",	1, TOK_ANY, 0, proto_debug, 0),
#endif
	/* memcached still takes the ancient "bget" as a get */
	CMD_ROW(CMD_BGET,	"bget",		0, 0, CMDF_GET, NULL, GET_GET),
};

/* The row of the command word [@w, @w + @n), or NULL. */
static const struct proto_cmd_def *proto_cmd_find(const char *w, size_t n)
{
	const struct proto_cmd_def *c;

	for (c = proto_cmds; c < proto_cmds + ARRAY_SIZE(proto_cmds); c++)
		if (c->len == n && !memcmp(c->name, w, n))
			return c;
	return NULL;
}

/* ------------------------------------------------------------------ */
/* the command line                                                     */

/* Runs a complete line other than a get line, of command @c or none. */
static void proto_run_line(struct proto_conn *pc,
			   const struct proto_cmd_def *c, const char *p,
			   const char *end)
{
	struct parse_line l;
	const struct token *last;

	parse_tokenize(&l, p, end);
	if (c) {
		if (l.ntok < c->min_tok || l.ntok > c->max_tok)
			proto_out(pc, STR_AND_LEN("ERROR\r\n"));
		else
			c->run(pc, &l, c->arg);
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
	const struct proto_cmd_def *c;

	while (p < end && *p == ' ')
		p++;
	cmd = p;
	while (p < end && *p != ' ')
		p++;
	if (cmd - buf > GET_LEAD_MAX || p == end)
		goto close;
	c = proto_cmd_find(cmd, (size_t)(p - cmd));
	/* get, gets, gat, gats stream; the ancient bget only as a whole line */
	if (!c || !(c->flags & CMDF_GET) || c->cmd == CMD_BGET)
		goto close;
	stop = proto_get_begin(pc, c->arg, p, end, false);
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
	const struct proto_cmd_def *c;
	size_t n;

	pc->noreply = false;
	if (buf[0] == 's') {
		n = proto_set_fast(pc, buf, len);
		if (n)
			return n;
		pc->noreply = false;
	}
	nl = proto_line(buf, len, &end);	/* memcached's: \r\n, \n, a NUL */
	if (!nl) {
		if (len > PROTO_LINE_MAX)
			return proto_long_line(pc, buf, len);
		return 0;
	}
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
	c = proto_cmd_find(cmd, (size_t)(p - cmd));
	if (c && (c->flags & CMDF_GET)) {
		stop = proto_get_begin(pc, c->arg, p, end, true);
		if (pc->state == PROTO_GET_CONT)
			return (size_t)(stop - buf);
		return (size_t)(nl + 1 - buf);
	}
	proto_run_line(pc, c, cmd, end);
	return (size_t)(nl + 1 - buf);
}

/*
 * -vv: tells the server the command line that @n bytes at @p held (a set
 * read by the fast path consumed its data block too: only the line is
 * reported). Before authentication only the byte count is.
 */
static void proto_report(const struct proto_conn *pc, const char *p,
			 size_t n, bool authed)
{
	const struct proto_ctx *ctx = pc->ctx;
	const char *nl;
	size_t len;

	if (!ctx->hooks || !ctx->hooks->command)
		return;
	if (!authed) {
		ctx->hooks->command(ctx->hook_arg, pc, NULL, n);
		return;
	}
	nl = memchr(p, '\n', n);
	len = nl ? (size_t)(nl - p) : n;
	if (nl && len && p[len - 1] == '\r')
		len--;
	ctx->hooks->command(ctx->hook_arg, pc, p, len);
}

/*
 * What a connection speaks, from its first byte (the request magic 0x80
 * is binary) and -B, as memcached decides it. Return: the mode.
 */
static uint8_t proto_pick_mode(struct proto_conn *pc, char first)
{
	if (pc->mode == PROTO_MODE_NEW) {
		switch (pc->ctx->settings->binding) {
		case PROTO_BIND_ASCII:
			pc->mode = PROTO_MODE_ASCII;
			break;
		case PROTO_BIND_BINARY:
			pc->mode = PROTO_MODE_BINARY;
			break;
		default:
			pc->mode = (unsigned char)first == 0x80 ?
				   PROTO_MODE_BINARY : PROTO_MODE_ASCII;
			break;
		}
	}
	return pc->mode;
}

size_t proto_process(struct proto_conn *pc, const char *buf, size_t len,
		     unsigned int max_reqs)
{
	const char *p = buf, *end = buf + len;
	unsigned int reqs = 0;
	bool authed;
	size_t n;

	/* a mark from an earlier call may point at bytes since written */
	pc->get_mark_ok = false;
	for (;;) {
		switch (pc->state) {
		case PROTO_CMD:
			if (p == end || (max_reqs && reqs >= max_reqs) ||
			    reply_pending(&pc->out) > REPLY_HIGH_WATER)
				goto out;
			authed = pc->authed;
			if (unlikely(pc->mode != PROTO_MODE_ASCII) &&
			    proto_pick_mode(pc, *p) == PROTO_MODE_BINARY)
				n = proto_bin_command(pc, p, (size_t)(end - p));
			else if (likely(authed))
				n = proto_command(pc, p, (size_t)(end - p));
			else
				n = proto_auth_command(pc, p,
						       (size_t)(end - p));
			if (unlikely(READ_ONCE(pc->ctx->settings->verbose) >= 2)
			    && n && pc->mode != PROTO_MODE_BINARY)
				proto_report(pc, p, n, authed);
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
		case PROTO_DUMP:
			/* a batch per request, for -R's fairness */
			if ((max_reqs && reqs >= max_reqs) ||
			    reply_pending(&pc->out) > REPLY_HIGH_WATER)
				goto out;
			proto_dump_step(pc);
			reqs++;
			pc->nreqs++;
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
