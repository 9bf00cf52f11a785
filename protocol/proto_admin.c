// SPDX-License-Identifier: MIT
/*
 * proto_admin.c - flush_all, verbosity, cache_memlimit, shutdown, stats,
 * and the fault injection commands of the sanitizer build (debug).
 */
#include "proto_cmd.h"

#include <errno.h>

#include "alloc.h"

void proto_flush_all(struct proto_conn *pc, const struct parse_line *l,
		     int arg)
{
	struct proto_ctx *ctx = pc->ctx;
	int32_t delay = 0;

	(void)arg;
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

void proto_verbosity(struct proto_conn *pc, const struct parse_line *l,
		     int arg)
{
	uint32_t level;

	(void)arg;
	pc->noreply = line_noreply(l);
	if (!parse_u32(&l->tok[1], &level)) {
		proto_reply(pc, STR_AND_LEN(PROTO_BAD_FORMAT));
		return;
	}
	/* memcached caps the level at 2; other threads read it for logging */
	__atomic_store_n(&pc->ctx->settings->verbose, level > 2 ? 2 : (int)level,
			 __ATOMIC_RELAXED);
	proto_reply(pc, STR_AND_LEN("OK\r\n"));
}

/*
 * "cache_memlimit <MB> [noreply]": memcached's bounds and replies; a lower
 * limit evicts down to it at once (store_set_mem_limit()). A number past
 * 32 bits is refused as not megabytes, where memcached truncates it.
 */
void proto_cache_memlimit(struct proto_conn *pc, const struct parse_line *l,
			  int arg)
{
	uint64_t mb;
	int err;

	(void)arg;
	pc->noreply = line_noreply(l);
	if (!parse_u64(&l->tok[1], &mb)) {
		proto_reply(pc, STR_AND_LEN("ERROR\r\n"));
		return;
	}
	if (mb < 8) {
		proto_reply(pc, STR_AND_LEN("MEMLIMIT_TOO_SMALL cannot set "
					    "maxbytes to less than 8m\r\n"));
		return;
	}
	if (mb > 1000000000) {
		proto_reply(pc, STR_AND_LEN("MEMLIMIT_ADJUST_FAILED input "
					    "value is megabytes not bytes\r\n"));
		return;
	}
	err = store_set_mem_limit(pc->ctx->store, (size_t)mb << 20);
	if (err) {
		proto_reply(pc, STR_AND_LEN("MEMLIMIT_ADJUST_FAILED out of "
					    "bounds or unable to adjust\r\n"));
		return;
	}
	proto_reply(pc, STR_AND_LEN("OK\r\n"));
}

/*
 * "snapshot": the snapshot file (-e) written while the server goes on
 * serving (stats last_snapshot_* say how it went).
 */
void proto_snapshot(struct proto_conn *pc, const struct parse_line *l,
		    int arg)
{
	struct proto_ctx *ctx = pc->ctx;
	int rc = -ENOENT;

	(void)l;
	(void)arg;
	if (ctx->hooks && ctx->hooks->snapshot)
		rc = ctx->hooks->snapshot(ctx->hook_arg);
	if (!rc)
		proto_out(pc, STR_AND_LEN("OK\r\n"));
	else if (rc == -EBUSY)
		proto_out(pc, STR_AND_LEN("SERVER_ERROR a snapshot is already "
					  "being written\r\n"));
	else if (rc == -ENOENT)
		proto_out(pc, STR_AND_LEN("SERVER_ERROR no snapshot file "
					  "(-e, snapshot_file)\r\n"));
	else
		proto_out(pc, STR_AND_LEN("SERVER_ERROR cannot start a "
					  "snapshot\r\n"));
}

/*
 * "refresh_certs": the TLS certificate, key and CA files read again
 * (memcached's command). OK, or memcached's sentence saying which file
 * failed; the old ones stay then.
 */
void proto_refresh_certs(struct proto_conn *pc, const struct parse_line *l,
			 int arg)
{
	struct proto_ctx *ctx = pc->ctx;
	char err[PROTO_CERT_ERR_MAX];
	size_t n;

	(void)arg;
	pc->noreply = line_noreply(l);
	/* as memcached: noreply silences the OK, never the error */
	if (!ctx->hooks || !ctx->hooks->refresh_certs) {
		proto_out(pc, STR_AND_LEN("Error TLS not enabled\r\n"));
		return;
	}
	if (!ctx->hooks->refresh_certs(ctx->hook_arg, err, sizeof(err) - 2)) {
		proto_reply(pc, STR_AND_LEN("OK\r\n"));
		return;
	}
	n = strnlen(err, sizeof(err) - 2);
	memcpy(err + n, "\r\n", 2);
	proto_out(pc, err, n + 2);
}

/* "version": the memcached release whose protocol this is, and ours */
void proto_version(struct proto_conn *pc, const struct parse_line *l, int arg)
{
	(void)l;
	(void)arg;
	proto_out(pc, STR_AND_LEN("VERSION " PROTO_VERSION "\r\n"));
}

void proto_quit(struct proto_conn *pc, const struct parse_line *l, int arg)
{
	(void)l;
	(void)arg;
	pc->state = PROTO_CLOSED;
}

void proto_shutdown(struct proto_conn *pc, const struct parse_line *l, int arg)
{
	struct proto_ctx *ctx = pc->ctx;

	(void)arg;
	if (!ctx->settings->shutdown_enabled) {
		proto_out(pc, STR_AND_LEN("ERROR: shutdown not enabled\r\n"));
		return;
	}
	if (l->ntok == 1 || (l->ntok == 2 && TOKEN_IS(&l->tok[1], "graceful"))) {
		if (ctx->hooks && ctx->hooks->shutdown)
			ctx->hooks->shutdown(ctx->hook_arg, l->ntok == 2);
		pc->state = PROTO_CLOSED;
		return;
	}
	proto_out(pc, STR_AND_LEN("CLIENT_ERROR invalid shutdown mode\r\n"));
}

/*
 * "stats detail on|off|dump": memcached's per prefix counts
 * (prefix_stats.h); a further token is ignored, as memcached ignores it.
 */
static void proto_stats_detail(struct proto_conn *pc,
			       const struct parse_line *l)
{
	struct prefix_stats *ps = pc->ctx->settings->prefixes;
	const struct token *t = &l->tok[2];

	if (!ps) {
		proto_out(pc, STR_AND_LEN(
			"CLIENT_ERROR stats detail not allowed\r\n"));
		return;
	}
	if (l->ntok >= 3 && (TOKEN_IS(t, "on") || TOKEN_IS(t, "off"))) {
		prefix_stats_enable(ps, TOKEN_IS(t, "on"));
		proto_out(pc, STR_AND_LEN("OK\r\n"));
		return;
	}
	if (l->ntok >= 3 && TOKEN_IS(t, "dump")) {
		struct reply_mark m;

		if (pc->state == PROTO_CLOSED)
			return;
		reply_mark(&pc->out, &m);
		pc->out.failed = false;
		if (prefix_stats_dump(ps, &pc->out)) {
			proto_out(pc, STR_AND_LEN(
				"SERVER_ERROR out of memory\r\n"));
		} else if (unlikely(pc->out.failed)) {
			/* a line was lost: no dump with a hole */
			reply_rewind(&pc->out, &m);
			proto_fail(pc);
		}
		return;
	}
	proto_out(pc, STR_AND_LEN(
		"CLIENT_ERROR usage: stats detail on|off|dump\r\n"));
}

/* "stats [args]": the server's hook answers, from the raw rest of line */
void proto_stats(struct proto_conn *pc, const struct parse_line *l, int arg)
{
	struct proto_ctx *ctx = pc->ctx;
	const char *args = l->tok[0].p + l->tok[0].len, *end = l->end;
	struct reply_mark m;

	(void)arg;
	if (l->ntok >= 2 && TOKEN_IS(&l->tok[1], "cachedump")) {
		proto_stats_cachedump(pc, l);
		return;
	}
	if (l->ntok >= 2 && TOKEN_IS(&l->tok[1], "detail")) {
		proto_stats_detail(pc, l);
		return;
	}

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
void proto_debug(struct proto_conn *pc, const struct parse_line *l, int arg)
{
	bool after = l->ntok == 3 && TOKEN_IS(&l->tok[1], "alloc_fail_after");
	uint32_t n = 0;

	(void)arg;
	if (l->ntok == 2 && TOKEN_IS(&l->tok[1], "alloc_failures")) {
		proto_reply_num(pc, STR_AND_LEN("ALLOC_FAILURES "),
				ak_alloc_failures());
		return;
	}
	if (l->ntok != 3 ||
	    (!after && !TOKEN_IS(&l->tok[1], "alloc_fail")) ||
	    (!(!after && TOKEN_IS(&l->tok[2], "off")) &&
	     !parse_u32(&l->tok[2], &n))) {
		proto_out(pc, STR_AND_LEN(PROTO_BAD_FORMAT));
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

