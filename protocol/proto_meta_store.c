// SPDX-License-Identifier: MIT
/*
 * proto_meta_store.c - the meta commands of memcached 1.6.45 that write:
 * ms (meta set), md (meta delete), ma (meta arithmetic). Their flags are
 * read by meta_parse() (meta.c); PROTOCOL.md specifies every one.
 */
#include "proto_cmd.h"

#include <errno.h>
#include <stdio.h>

#include "base64.h"
#include "meta.h"

/* The reply's echoed flags, kept from the line until the block is in:
 * 'k', 'c', 's', or 'O' and a length byte and the token. */
_Static_assert(sizeof(((struct proto_conn *)0)->meta_echo) >=
	       (META_MAX_TOKENS - 3) + 2 + META_OPAQUE_MAX,
	       "room for every echoed flag and one opaque token");

/* The ms reply line: a code, the echoed flags, "\r\n". */
#define MS_LINE_MAX	(2 + 4 * 22 + 4 + B64_ENCODED_LEN(KEY_MAX_LENGTH) + \
			 2 + 1 + META_OPAQUE_MAX + 2)

/* <datalen> as memcached 1.6.45 reads it: a signed 32-bit decimal of at
 * most 11 bytes, not negative. */
static bool ms_datalen(const struct token *t, uint32_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (t->len < 1 || t->len > 11)
		return false;
	if (t->p[0] == '-') {
		/* "-0" is 0; any other negative is refused */
		for (i = 1; i < t->len; i++)
			if (t->p[i] != '0')
				return false;
		if (t->len == 1)
			return false;
		*out = 0;
		return true;
	}
	for (; i < t->len; i++) {
		unsigned int d = (unsigned char)t->p[i] - '0';

		if (d > 9)
			return false;
		v = v * 10 + d;
		if (v > INT32_MAX - 2)
			return false;
	}
	*out = (uint32_t)v;
	return true;
}

/* An error before the block: answered, and the block dropped. */
static void ms_refuse(struct proto_conn *pc, const char *err, uint32_t len)
{
	proto_out_str(pc, err);
	proto_swallow_begin(pc, (size_t)len + 2);
}

static void ms_done(struct proto_conn *pc, struct item *it);

/*
 * The store an ms asks for, from its flags: the mode (M), the TTL (T, or
 * N's for an autovivifying append), the cas to compare (C, with I) and
 * the one to set (E). Return: NULL, or the error line of a bad mode.
 */
static const char *ms_options(const struct meta_req *m, struct store_set *o,
			      int32_t *ttl)
{
	*o = (struct store_set){ .op = STORE_OP_SET };
	*ttl = meta_has(m, 'T') ? m->ttl_T : 0;
	switch (m->mode) {
	case 0:
	case 'S':
		break;
	case 'E':
		o->op = STORE_OP_ADD;
		break;
	case 'A':
	case 'P':
		o->op = m->mode == 'A' ? STORE_OP_APPEND : STORE_OP_PREPEND;
		o->vivify = meta_has(m, 'N');
		if (o->vivify)
			*ttl = m->ttl_N;
		break;
	case 'R':
		o->op = STORE_OP_REPLACE;
		break;
	default:
		return "CLIENT_ERROR invalid mode for ms M token\r\n";
	}
	o->has_cas_in = meta_has(m, 'E');
	o->cas_in = m->cas_E;
	if (meta_has(m, 'C')) {
		o->cas = m->cas_C;
		o->has_cas = true;
		/* set and replace with a cas are a cas; I lets an older
		 * cas store a stale version */
		if (o->op == STORE_OP_SET || o->op == STORE_OP_REPLACE) {
			o->op = STORE_OP_CAS;
			o->allow_stale = m->I;
		}
	}
	return NULL;
}

void proto_ms(struct proto_conn *pc, const struct parse_line *l, int arg)
{
	struct proto_ctx *ctx = pc->ctx;
	struct store *s = ctx->store;
	struct store_set o;
	int32_t ttl;
	struct meta_req m;
	const char *err;
	struct item *it;
	unsigned int i;
	uint32_t len;
	char *e;
	int ret;

	(void)arg;
	if (l->ntok < 3 || !ms_datalen(&l->tok[2], &len)) {
		proto_out(pc, STR_AND_LEN(PROTO_BAD_FORMAT));
		return;
	}
	err = meta_parse(&m, l, 3);
	if (!err)
		err = meta_refused(&m);
	if (!err)
		err = ms_options(&m, &o, &ttl);
	if (err) {
		ms_refuse(pc, err, len);
		return;
	}
	ret = store_item_alloc(s, m.key, m.nkey, m.flags_F,
			       store_exptime(s, ttl), len, &it);
	if (ret) {
		if (ret == -E2BIG) {
			ctx->stats.store_too_large++;
			err = "SERVER_ERROR object too large for cache\r\n";
		} else {
			ctx->stats.store_no_memory++;
			err = "SERVER_ERROR out of memory storing object\r\n";
		}
		/* as memcached: a failed store must not leave the old value */
		store_delete(s, m.key, m.nkey);
		ms_refuse(pc, err, len);
		return;
	}
	if (m.binary)
		it->iflags |= ITEM_KEY_BINARY;	/* not linked yet */
	/* the flags the reply echoes, in order */
	e = pc->meta_echo;
	for (i = 0; i < m.nflag; i++) {
		const struct token *t = &m.flag[i];

		switch (t->p[0]) {
		case 'O':
			if (t->len > META_OPAQUE_MAX) {
				item_put(it);
				ms_refuse(pc, PROTO_OPAQUE_TOO_LONG, len);
				return;
			}
			*e++ = 'O';
			*e++ = (char)t->len;
			memcpy(e, t->p, t->len);
			e += t->len;
			break;
		case 'k':
		case 'c':
		case 's':
			*e++ = t->p[0];
			break;
		}
	}
	pc->meta_echo_len = (uint8_t)(e - pc->meta_echo);
	pc->meta_set = o;
	pc->meta_q = m.q;
	proto_data_begin(pc, it, (size_t)len + 2, ms_done);
}

/* The flags of an ms's reply: those proto_ms() kept, as tokens again. */
static char *ms_put_flags(struct proto_conn *pc, const struct item *it,
			  char *q)
{
	const char *e = pc->meta_echo, *end = pc->meta_echo + pc->meta_echo_len;
	const struct store_set *o = &pc->meta_set;
	struct token tok[META_MAX_TOKENS];
	struct meta_req m = { .flag = tok };
	const struct meta_facts f = {
		.echo = META_ECHO('c') | META_ECHO('s'),
		.key = item_key(it), .nkey = it->nkey,
		.binary = it->iflags & ITEM_KEY_BINARY,
		.cas = pc->ctx->settings->cas_enabled ? o->cas_out : 0,
		.size = o->nbytes_out,
	};

	for (; e < end; e++, m.nflag++) {
		tok[m.nflag].p = e;
		tok[m.nflag].len = 1;
		if (*e == 'O') {	/* 'O', its length, the token */
			tok[m.nflag].p = e + 2;
			tok[m.nflag].len = (unsigned char)e[1];
			e += 1 + (unsigned char)e[1];
		}
	}
	return meta_put_flags(q, &m, &f);	/* O was checked: not NULL */
}

/* The block of an ms is in: store, answer. */
static void ms_done(struct proto_conn *pc, struct item *it)
{
	struct proto_ctx *ctx = pc->ctx;
	struct proto_stats *st = &ctx->stats;
	struct store_set *o = &pc->meta_set;
	enum store_result res;
	char *p, *q;

	pc->noreply = false;
	st->cmd_set++;
	if (pc->data_end[0] != '\r' || pc->data_end[1] != '\n') {
		item_put(it);
		proto_out(pc, STR_AND_LEN("CLIENT_ERROR bad data chunk\r\n"));
		return;
	}
	item_get(it);		/* for the key in the reply */
	res = store_item_store_opts(ctx->store, it, o);
	if (o->op == STORE_OP_CAS)
		proto_count_cas(st, res);
	if (res == STORE_NO_MEMORY) {
		st->store_no_memory++;
		item_put(it);
		proto_out(pc, STR_AND_LEN(
			"SERVER_ERROR out of memory storing object\r\n"));
		return;
	}
	if ((res == STORE_STORED && pc->meta_q) ||
	    unlikely(pc->state == PROTO_CLOSED)) {
		item_put(it);
		return;
	}
	p = reply_reserve(&pc->out, MS_LINE_MAX);
	if (unlikely(!p)) {
		item_put(it);
		proto_fail(pc);
		return;
	}
	switch (res) {
	case STORE_STORED:
		memcpy(p, "HD", 2);
		break;
	case STORE_EXISTS:
		memcpy(p, "EX", 2);
		break;
	case STORE_NOT_FOUND:
		memcpy(p, "NF", 2);
		break;
	default:		/* not stored; an append grown too large */
		memcpy(p, "NS", 2);
		break;
	}
	q = ms_put_flags(pc, it, p + 2);
	*q++ = '\r';
	*q++ = '\n';
	reply_commit(&pc->out, (size_t)(q - p));
	item_put(it);
}

void proto_md(struct proto_conn *pc, const struct parse_line *l, int arg)
{
	struct proto_ctx *ctx = pc->ctx;
	struct store_del d = { 0 };
	enum store_result res;
	struct meta_req m;

	(void)arg;
	if (!proto_meta_read(pc, l, &m))
		return;
	/* as memcached: a bad O is answered before anything is done */
	if (meta_bad_opaque(&m) >= 0) {
		proto_out(pc, STR_AND_LEN(
			PROTO_OPAQUE_TOO_LONG));
		return;
	}
	d.key = m.key;
	d.nkey = m.nkey;
	d.has_cas = meta_has(&m, 'C');
	d.cas = m.cas_C;
	d.stale = m.I;
	d.remove_value = m.x;
	/* T takes effect with I or x only */
	d.set_ttl = meta_has(&m, 'T') && (m.I || m.x);
	d.ttl = store_exptime(ctx->store, m.ttl_T);
	d.flags = m.flags_F;
	d.has_cas_in = meta_has(&m, 'E');
	d.cas_in = m.cas_E;
	res = store_meta_delete(ctx->store, &d);
	switch (res) {
	case STORE_STORED:
		if (!m.I)
			ctx->stats.delete_hits++;
		proto_meta_code(pc, "HD", &m, m.q);
		break;
	case STORE_EXISTS:
		ctx->stats.delete_misses++;
		proto_meta_code(pc, "EX", &m, false);
		break;
	case STORE_NOT_FOUND:
		ctx->stats.delete_misses++;
		proto_meta_code(pc, "NF", &m, false);
		break;
	default:
		proto_out(pc, STR_AND_LEN("SERVER_ERROR out of memory\r\n"));
		break;
	}
}

/*
 * ma on a miss with N: the item made of J's value (flags 0, T's or N's
 * TTL, whichever came last). Return: 0 and its cas, 1 when it could not
 * be added (another client's came first), -1 out of memory.
 */
static int ma_vivify(struct proto_conn *pc, const struct meta_req *m,
		     uint64_t *cas, rel_time_t *exp)
{
	struct store *s = pc->ctx->store;
	struct store_set o = { .op = STORE_OP_ADD };
	int32_t ttl = 0;
	char text[24];
	struct item *it;
	int n;

	meta_created_ttl(m, (int)m->nflag, &ttl);
	*exp = store_exptime(s, ttl);
	n = snprintf(text, sizeof(text), "%llu",
		     (unsigned long long)m->initial_J);
	if (store_item_alloc(s, m->key, m->nkey, 0, *exp, (uint32_t)n, &it))
		return -1;
	memcpy(item_value(it), text, (size_t)n);
	o.has_cas_in = meta_has(m, 'E');
	o.cas_in = m->cas_E;
	switch (store_item_store_opts(s, it, &o)) {
	case STORE_STORED:
		*cas = o.cas_out;
		return 0;
	case STORE_NOT_STORED:
		return 1;
	default:
		return -1;
	}
}

/*
 * The reply to an ma that counted (or created, @created) its item: a
 * code, the flags in order (t sees a T or N before it), then the value
 * with v.
 */
static void ma_reply(struct proto_conn *pc, const struct meta_req *m,
		     const struct store_arith *a, bool created)
{
	struct store *s = pc->ctx->store;
	const struct meta_facts f = {
		.echo = META_ECHO('c') | META_ECHO('t'),
		.key = m->key, .nkey = m->nkey, .binary = m->binary,
		.cas = pc->ctx->settings->cas_enabled ? a->cas : 0,
		.exptime = created ? 0 : a->exptime,
		.now = store_now(s),
		.apply_T = true, .exp_T = a->ttl,
		.apply_N = created,
		.exp_N = created ? store_exptime(s, m->ttl_N) : 0,
	};
	char line[MS_LINE_MAX + 24], num[24], *p;
	int nlen = snprintf(num, sizeof(num), "%llu",
			    (unsigned long long)a->value);

	if (m->v) {
		memcpy(line, "VA ", 3);
		p = fmt_u64(line + 3, (uint64_t)nlen);
	} else {
		memcpy(line, "HD", 2);
		p = line + 2;
	}
	p = meta_put_flags(p, m, &f);
	if (!p) {
		proto_out(pc, STR_AND_LEN(PROTO_OPAQUE_TOO_LONG));
		return;
	}
	if (m->v) {
		*p++ = '\r';
		*p++ = '\n';
		memcpy(p, num, (size_t)nlen);
		p += nlen;
	}
	*p++ = '\r';
	*p++ = '\n';
	if (!m->q)
		proto_out(pc, line, (size_t)(p - line));
}

void proto_ma(struct proto_conn *pc, const struct parse_line *l, int arg)
{
	struct proto_ctx *ctx = pc->ctx;
	struct store *s = ctx->store;
	struct store_arith a = { .incr = true, .delta = 1 };
	bool created = false;
	const char *err;
	rel_time_t exp;
	struct meta_req m;
	int ret, iT;

	(void)arg;
	if (l->ntok < 2) {
		proto_out(pc, STR_AND_LEN(PROTO_BAD_FORMAT));
		return;
	}
	if (meta_parse(&m, l, 2)) {
		proto_out(pc, STR_AND_LEN(
			"CLIENT_ERROR invalid or duplicate flag\r\n"));
		return;
	}
	err = meta_refused(&m);
	if (err) {
		proto_out_str(pc, err);
		return;
	}
	switch (m.mode) {
	case 0:
	case 'I':
	case '+':
		break;
	case 'D':
	case '-':
		a.incr = false;
		break;
	default:
		proto_out(pc, STR_AND_LEN(
			"CLIENT_ERROR invalid mode for ma M token\r\n"));
		return;
	}
	if (meta_has(&m, 'D'))
		a.delta = m.delta_D;
	a.key = m.key;
	a.nkey = m.nkey;
	/* as memcached: C0 compares nothing */
	a.has_cas = meta_has(&m, 'C') && m.cas_C;
	a.cmp_cas = m.cas_C;
	iT = meta_index(&m, 'T');
	a.set_ttl = iT >= 0;
	a.ttl = store_exptime(s, m.ttl_T);
	a.has_cas_in = meta_has(&m, 'E');
	a.cas_in = m.cas_E;
	ret = store_incr_decr(s, &a);
	if (ret == -ENOENT && meta_has(&m, 'N')) {
		ret = ma_vivify(pc, &m, &a.cas, &exp);
		if (ret > 0) {
			proto_meta_code(pc, "NS", &m, false);
			return;
		}
		if (ret < 0) {
			proto_out(pc, STR_AND_LEN("SERVER_ERROR Out of memory "
						  "allocating new item\r\n"));
			return;
		}
		created = true;
		a.value = m.initial_J;
	}
	if (ret == -EINVAL) {
		proto_out(pc, STR_AND_LEN("CLIENT_ERROR cannot increment or "
					  "decrement non-numeric value\r\n"));
		return;
	}
	if (ret == -ENOMEM) {
		proto_out(pc, STR_AND_LEN("SERVER_ERROR out of memory\r\n"));
		return;
	}
	if (ret == -ENOENT || ret == -EEXIST) {
		if (ret == -ENOENT) {
			if (a.incr)
				ctx->stats.incr_misses++;
			else
				ctx->stats.decr_misses++;
		}
		proto_meta_code(pc, ret == -ENOENT ? "NF" : "EX", &m, false);
		return;
	}
	if (!created) {
		if (a.incr)
			ctx->stats.incr_hits++;
		else
			ctx->stats.decr_hits++;
	}
	ma_reply(pc, &m, &a, created);
}
