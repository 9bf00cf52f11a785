// SPDX-License-Identifier: MIT
/*
 * proto_bin_admin.c - the binary protocol's Flush, Stat (with a group's
 * name as key), and SASL's Auth and Step (-S: PLAIN, with the users of
 * -Y's file), as memcached 1.6.18 answers them.
 */
#include "proto_bin_packet.h"

#include <strings.h>

/* ---- flush, stat ---- */

void bin_flush(struct proto_conn *pc, bool quiet, const char *ext,
	       uint8_t extlen)
{
	struct proto_ctx *ctx = pc->ctx;
	uint32_t delay = extlen == 4 ? get_be32(ext) : 0;

	if (!ctx->settings->flush_enabled) {
		bin_error(pc, BIN_AUTH_ERROR, NULL);
		return;
	}
	store_flush_all(ctx->store, delay > 0 ?
			store_exptime(ctx->store, (int64_t)delay) : 0);
	ctx->stats.cmd_flush++;
	bin_done(pc, quiet, 0);
}

/* One statistic as a response: its name as key, its value as body. */
static void bin_stat(struct proto_conn *pc, const char *name, size_t nlen,
		     const char *val, size_t vlen)
{
	bin_respond(pc, BIN_OK, NULL, 0, name, (uint16_t)nlen, val,
		    (uint32_t)vlen, 0);
}

/*
 * Stat: the text protocol's "stats <key>" (the server's hook), each STAT
 * line a response of its own, then an empty one; "detail dump" is one
 * response named "detailed" holding the dump's lines; a key that names
 * no section: Not found.
 */
void bin_stats(struct proto_conn *pc, const char *key, uint16_t nkey)
{
	struct proto_ctx *ctx = pc->ctx;
	struct reply tmp;
	struct iovec iov[64];
	bool detail = nkey >= 11 && !memcmp(key, "detail dump", 11);
	char *text = NULL;
	size_t len = 0, off = 0;
	int n, i;

	reply_init(&tmp);
	if (nkey >= 6 && !memcmp(key, "detail", 6)) {
		if (!ctx->settings->prefixes) {
			bin_error(pc, BIN_ENOENT, NULL);
			goto out;
		}
		if (detail) {
			if (prefix_stats_dump(ctx->settings->prefixes, &tmp))
				tmp.failed = true;	/* answered below */
		} else if (nkey == 9 && !memcmp(key + 6, " on", 3)) {
			prefix_stats_enable(ctx->settings->prefixes, true);
		} else if (nkey == 10 && !memcmp(key + 6, " off", 4)) {
			prefix_stats_enable(ctx->settings->prefixes, false);
		} else {
			bin_error(pc, BIN_ENOENT, NULL);
			goto out;
		}
	} else if (!ctx->hooks || !ctx->hooks->stats ||
		   !ctx->hooks->stats(ctx->hook_arg, key, nkey, &tmp)) {
		bin_error(pc, BIN_ENOENT, NULL);
		goto out;
	}
	/* the text reply, flat */
	len = reply_pending(&tmp);
	text = ak_malloc(len ? len : 1);
	if (!text || tmp.failed) {
		bin_error(pc, BIN_ENOMEM, "Out of memory generating stats");
		goto out;
	}
	while ((n = reply_iov(&tmp, iov, 64)) > 0) {
		size_t got = 0;

		for (i = 0; i < n; i++) {
			memcpy(text + off, iov[i].iov_base, iov[i].iov_len);
			off += iov[i].iov_len;
			got += iov[i].iov_len;
		}
		reply_consume(&tmp, got);
	}
	if (detail) {
		bin_stat(pc, STR_AND_LEN("detailed"), text, len);
	} else {
		const char *p = text, *end = text + len;

		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			const char *eol = nl ? nl : end, *name, *sp;

			if (eol > p && eol[-1] == '\r')
				eol--;
			if (eol - p > 5 && !memcmp(p, "STAT ", 5)) {
				name = p + 5;
				sp = memchr(name, ' ', (size_t)(eol - name));
				if (!sp)
					sp = eol;
				bin_stat(pc, name, (size_t)(sp - name),
					 sp < eol ? sp + 1 : sp,
					 sp < eol ? (size_t)(eol - sp - 1) : 0);
			}
			p = nl ? nl + 1 : end;
		}
	}
	bin_stat(pc, NULL, 0, NULL, 0);		/* the end */
out:
	ak_free(text);
	reply_free(&tmp);
}

/* ---- SASL (-S): PLAIN, with the users of -Y's file ---- */

/*
 * SASL Auth and Step: mechanism @mech, data @data. PLAIN's data is
 * "authzid NUL authcid NUL password"; the authzid must be empty or the
 * authcid (no acting as another user). PLAIN needs no step, so a Step
 * fails, as it does in memcached's Cyrus SASL when nothing was started.
 * As in memcached, every Auth and Step (and List Mechs) first logs the
 * connection out, and a connection logs in once: a later Auth fails.
 */
void bin_sasl_auth(struct proto_conn *pc, uint8_t op, const char *mech,
		   uint16_t nmech, const char *data, uint32_t vlen)
{
	struct proto_ctx *ctx = pc->ctx;
	const char *end = data + vlen, *z1, *z2;

	if (nmech > SASL_MECH_MAX) {
		bin_error(pc, BIN_EINVAL, NULL);
		return;
	}
	ctx->stats.auth_cmds++;
	pc->authed = false;
	if (op == BIN_SASL_AUTH && !pc->sasl_done && nmech == 5 &&
	    !strncasecmp(mech, "PLAIN", 5) && vlen &&
	    (z1 = memchr(data, '\0', vlen)) &&
	    (z2 = memchr(z1 + 1, '\0', (size_t)(end - z1 - 1)))) {
		const char *user = z1 + 1, *pass = z2 + 1;
		size_t nuser = (size_t)(z2 - user);

		if ((z1 == data || ((size_t)(z1 - data) == nuser &&
				    !memcmp(data, user, nuser))) &&
		    ctx->hooks && ctx->hooks->auth &&
		    ctx->hooks->auth(ctx->hook_arg, user, nuser, pass,
				     (size_t)(end - pass))) {
			pc->authed = true;
			pc->sasl_done = true;
			bin_respond(pc, BIN_OK, NULL, 0, NULL, 0,
				    STR_AND_LEN("Authenticated"), 0);
			return;
		}
	}
	ctx->stats.auth_errors++;
	bin_error(pc, BIN_AUTH_ERROR, NULL);
}
