// SPDX-License-Identifier: MIT
/*
 * proto_meta.c - the meta commands of memcached 1.6.45 that read: mg
 * (meta get), me (meta debug) and mn (meta no-op). Their flags are read
 * by meta_parse() (meta.c); PROTOCOL.md specifies every one.
 */
#include "proto_cmd.h"

#include <stdio.h>

#include "base64.h"
#include "meta.h"

/* The longest mg reply line: "VA <size>", then at most 18 flags, of which
 * only k and O are long. */
#define MG_LINE_MAX	(3 + 10 + (META_MAX_TOKENS - 2) * 24 + \
			 4 + B64_ENCODED_LEN(KEY_MAX_LENGTH) + 2 + \
			 1 + META_OPAQUE_MAX + 6 + 2)

void proto_mn(struct proto_conn *pc, const struct parse_line *l, int arg)
{
	(void)l;
	(void)arg;
	proto_out(pc, STR_AND_LEN("MN\r\n"));
}

void proto_me(struct proto_conn *pc, const struct parse_line *l, int arg)
{
	struct store *s = pc->ctx->store;
	const struct token *key = l->tok + 1;
	char keybuf[KEY_MAX_LENGTH];
	struct store_req req = { .key = key->p, .nkey = key->len,
				 .flags = STORE_REQ_NO_BUMP | STORE_REQ_PEEK };
	struct store_res res;
	rel_time_t now;
	char *p, *q;

	(void)arg;
	if (l->ntok < 2 || key->len > KEY_MAX_LENGTH) {
		proto_out(pc, STR_AND_LEN(PROTO_BAD_FORMAT));
		return;
	}
	if (l->ntok >= 3 && TOKEN_IS(&l->tok[2], "b")) {
		req.nkey = b64_decode(key->p, key->len,
				      (unsigned char *)keybuf);
		req.key = keybuf;
	}
	/* a key that does not decode; a NUL in a plain one */
	if (!req.nkey || (req.key == key->p &&
			  !key_bytes_ok(key->p, key->len))) {
		proto_out(pc, STR_AND_LEN(PROTO_BAD_FORMAT));
		return;
	}
	pc->ctx->stats.cmd_meta++;
	store_lookup(s, &req, &res);
	if (res.why != STORE_HIT) {
		proto_out(pc, STR_AND_LEN("EN\r\n"));
		return;
	}
	if (unlikely(pc->state == PROTO_CLOSED))
		return;
	p = reply_reserve(&pc->out, 3 + B64_ENCODED_LEN(KEY_MAX_LENGTH) +
			  120);
	if (unlikely(!p)) {
		proto_fail(pc);
		return;
	}
	now = store_now(s);
	memcpy(p, "ME ", 3);
	q = put_listed_key(p + 3, req.key, req.nkey,
			   res.iflags & ITEM_KEY_BINARY);
	q += sprintf(q, " exp=%d la=%u cas=%llu fetch=%s cls=%u size=%zu\r\n",
		     res.exptime ? (int)(res.exptime - now) : -1,
		     (unsigned int)(now - res.atime),
		     (unsigned long long)(pc->ctx->settings->cas_enabled ?
					  res.cas : 0),
		     (res.iflags & ITEM_FETCHED) ? "yes" : "no",
		     item_mc_class(item_mc_size(req.nkey, res.flags,
						 res.nbytes)),
		     item_mc_size(req.nkey, res.flags, res.nbytes));
	reply_commit(&pc->out, (size_t)(q - p));
}

bool proto_meta_read(struct proto_conn *pc, const struct parse_line *l,
		     struct meta_req *m)
{
	const char *err;

	if (l->ntok < 2) {
		proto_out(pc, STR_AND_LEN(PROTO_BAD_FORMAT));
		return false;
	}
	err = meta_parse(m, l, 2);
	if (!err)
		err = meta_refused(m);
	if (err) {
		proto_out_str(pc, err);
		return false;
	}
	return true;
}

/* The longest line proto_meta_code() builds. */
#define META_CODE_LINE_MAX	(2 + 4 + B64_ENCODED_LEN(KEY_MAX_LENGTH) + 2 + \
				 1 + META_OPAQUE_MAX + 2)

void proto_meta_code(struct proto_conn *pc, const char *code,
		     const struct meta_req *m, bool quiet)
{
	const struct meta_facts f = {
		.key = m->key, .nkey = m->nkey, .binary = m->binary,
	};
	char line[META_CODE_LINE_MAX];
	char *q;

	memcpy(line, code, 2);
	q = meta_put_flags(line + 2, m, &f);
	if (!q) {
		proto_out(pc, STR_AND_LEN(PROTO_OPAQUE_TOO_LONG));
		return;
	}
	if (quiet)
		return;
	*q++ = '\r';
	*q++ = '\n';
	proto_out(pc, line, (size_t)(q - line));
}

/*
 * A miss with N: the empty item that the first client to miss creates
 * (with a won recache: it answers W, the others Z). Its expiry is T's or
 * N's, whichever came last. Return: the item, with a reference, or NULL
 * when another client created it first (*raced) or it could not be made.
 */
static struct item *mg_vivify(struct proto_conn *pc, const struct meta_req *m,
			      int bad, struct store_res *res, bool *raced)
{
	struct store *s = pc->ctx->store;
	struct store_set o = { .op = STORE_OP_ADD };
	rel_time_t exp = 0;
	struct item *it;
	int32_t ttl;

	/* up to a flag that fails (a too long O) */
	if (meta_created_ttl(m, bad >= 0 ? bad : (int)m->nflag, &ttl))
		exp = store_exptime(s, ttl);
	*raced = false;
	if (store_item_alloc(s, m->key, m->nkey, 0, exp, 0, &it))
		return NULL;
	/*
	 * Not linked yet: nobody else sees these bits. The creating mg
	 * wins, and bumps it as it bumps a hit (unless u), unless it
	 * fails. As memcached, the item is not marked as having a binary
	 * key when b was given (k returns its key as it is), unless the key
	 * holds a byte no reply line could carry as it is: then k, me, the
	 * dumps and the range replies list it encoded.
	 */
	if (m->binary && !meta_key_plain(m->key, m->nkey))
		it->iflags |= ITEM_KEY_BINARY;
	if (bad < 0)
		it->iflags |= ITEM_WIN | (m->u ? 0 : ITEM_FETCHED);
	item_get(it);
	o.has_cas_in = meta_has(m, 'E');
	o.cas_in = m->cas_E;
	switch (store_item_store_opts(s, it, &o)) {
	case STORE_STORED:
		res->cas = o.cas_out;
		res->why = STORE_HIT;
		res->flags = 0;
		res->nbytes = 0;
		res->exptime = 0;
		res->atime = store_now(s);
		res->iflags = 0;
		res->won = true;
		return it;
	case STORE_NOT_STORED:
		*raced = true;
		/* fall through */
	default:
		item_put(it);
		return NULL;
	}
}

/*
 * The lookup an mg asks for, from its flags. @bad: the first O token too
 * long, or -1.
 */
static void mg_request(struct store *s, const struct meta_req *m, int bad,
		       struct store_req *req)
{
	int iT = meta_index(m, 'T'), iR = meta_index(m, 'R');

	*req = (struct store_req){ .flags = STORE_REQ_META,
				   .key = m->key, .nkey = m->nkey };
	if (m->u)
		req->flags |= STORE_REQ_NO_BUMP;
	if (iT >= 0 && (bad < 0 || iT < bad)) {
		req->flags |= STORE_REQ_TOUCH;
		req->exptime = store_exptime(s, m->ttl_T);
	}
	if (iR >= 0) {
		req->flags |= STORE_REQ_RECACHE;
		req->recache = store_exptime(s, m->ttl_R);
		if (iT > iR)
			req->flags |= STORE_REQ_TOUCH_LATE;
	}
	if (bad >= 0) {
		/*
		 * memcached answers the error half way through the flags:
		 * what came before it is done (a T), the win is not given,
		 * and an item it locked (any of N T R l h) is not bumped
		 */
		req->flags &= ~(unsigned int)(STORE_REQ_RECACHE |
					      STORE_REQ_META);
		if (meta_has(m, 'N') || iT >= 0 || iR >= 0 ||
		    meta_has(m, 'l') || meta_has(m, 'h'))
			req->flags |= STORE_REQ_NO_BUMP;
	}
}

/*
 * The reply to an mg that found (or created) @it: VA or HD, the flags in
 * the request's order (t sees a T or N before it), the recache marks, the
 * value. Takes over the caller's reference to @it.
 */
static void mg_hit(struct proto_conn *pc, const struct meta_req *m,
		   const struct store_req *req, const struct store_res *res,
		   struct item *it, bool created)
{
	struct store *s = pc->ctx->store;
	rel_time_t now = store_now(s);
	const struct meta_facts f = {
		.echo = META_ECHO('c') | META_ECHO('f') | META_ECHO('h') |
			META_ECHO('l') | META_ECHO('s') | META_ECHO('t'),
		.key = item_key(it), .nkey = it->nkey,
		.binary = it->iflags & ITEM_KEY_BINARY,
		.cas = pc->ctx->settings->cas_enabled ? res->cas : 0,
		.size = res->nbytes, .flags = res->flags,
		.idle = (uint32_t)(now - res->atime),
		.fetched = res->iflags & ITEM_FETCHED,
		.exptime = res->exptime, .now = now,
		.apply_T = true, .apply_N = created,
		.exp_T = created ? store_exptime(s, m->ttl_T) : req->exptime,
		.exp_N = created ? store_exptime(s, m->ttl_N) : 0,
	};
	bool value = m->v && !(meta_has(m, 'C') && res->cas == m->cas_C);
	char *p, *q;

	p = reply_reserve(&pc->out, MG_LINE_MAX);
	if (unlikely(!p)) {
		item_put(it);
		proto_fail(pc);
		return;
	}
	if (value) {
		memcpy(p, "VA ", 3);
		q = fmt_u64(p + 3, res->nbytes);
	} else {
		memcpy(p, "HD", 2);
		q = p + 2;
	}
	q = meta_put_flags(q, m, &f);
	if (!q) {
		item_put(it);
		proto_out(pc, STR_AND_LEN(PROTO_OPAQUE_TOO_LONG));
		return;
	}
	/* Z before X and W: a client is never told both W and Z */
	if (res->iflags & ITEM_WIN) {
		*q++ = ' ';
		*q++ = 'Z';
	}
	if (res->iflags & ITEM_STALE) {
		*q++ = ' ';
		*q++ = 'X';
	}
	if (res->won) {
		*q++ = ' ';
		*q++ = 'W';
	}
	*q++ = '\r';
	*q++ = '\n';
	reply_commit(&pc->out, (size_t)(q - p));
	if (!value) {
		item_put(it);
		return;
	}
	proto_value_ref(pc, it);
}

void proto_mg(struct proto_conn *pc, const struct parse_line *l, int arg)
{
	struct proto_ctx *ctx = pc->ctx;
	struct store *s = ctx->store;
	bool created = false, raced;
	struct store_req req;
	struct store_res res;
	struct meta_req m;
	struct item *it;
	int bad;

	(void)arg;
	if (!proto_meta_read(pc, l, &m))
		return;
	bad = meta_bad_opaque(&m);
	mg_request(s, &m, bad, &req);
	it = store_lookup(s, &req, &res);
	if (unlikely(res.why == STORE_TOUCH_NO_MEMORY)) {
		/* a T that could not be done: neither the hit nor a new item */
		proto_count_lookup(&ctx->stats, true, false);
		proto_out(pc, STR_AND_LEN("SERVER_ERROR out of memory\r\n"));
		return;
	}
	if (!it && meta_has(&m, 'N')) {
		it = mg_vivify(pc, &m, bad, &res, &raced);
		created = it != NULL;
		if (raced)
			it = store_lookup(s, &req, &res);
	}
	proto_count_lookup(&ctx->stats, meta_has(&m, 'T'), it != NULL);
	if (!it) {
		proto_meta_code(pc, "EN", &m, m.q);
		return;
	}
	if (unlikely(pc->state == PROTO_CLOSED)) {
		item_put(it);
		return;
	}
	mg_hit(pc, &m, &req, &res, it, created);
}
