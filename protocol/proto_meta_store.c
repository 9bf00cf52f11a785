// SPDX-License-Identifier: MIT
/*
 * proto_meta_store.c - the meta commands of memcached 1.6.45 that write:
 * ms (meta set). Its flags are read by meta_parse() (meta.c); PROTOCOL.md
 * specifies every one.
 */
#include "proto_cmd.h"

#include <errno.h>

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
	proto_out(pc, err, strlen(err));
	proto_swallow_begin(pc, (size_t)len + 2);
}

static void ms_done(struct proto_conn *pc, struct item *it);

void proto_ms(struct proto_conn *pc, const struct parse_line *l, int arg)
{
	struct proto_ctx *ctx = pc->ctx;
	struct store *s = ctx->store;
	struct store_set o = { .op = STORE_OP_SET };
	int32_t ttl = 0;
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
	if (err) {
		ms_refuse(pc, err, len);
		return;
	}
	/* a NUL in a key, as in the classic commands; a binary key that a
	 * reply line (range, keys) could not carry as it is */
	if ((!m.binary && !key_bytes_ok(m.key, m.nkey)) ||
	    (m.binary && !meta_key_plain(m.key, m.nkey))) {
		ms_refuse(pc, PROTO_BAD_FORMAT, len);
		return;
	}
	if (meta_has(&m, 'E')) {
		/* E (a cas of the client's choosing) is not there yet */
		ms_refuse(pc, "CLIENT_ERROR invalid flag\r\n", len);
		return;
	}
	if (meta_has(&m, 'T'))
		ttl = m.ttl_T;
	switch (m.mode) {
	case 0:
	case 'S':
		break;
	case 'E':
		o.op = STORE_OP_ADD;
		break;
	case 'A':
	case 'P':
		o.op = m.mode == 'A' ? STORE_OP_APPEND : STORE_OP_PREPEND;
		o.vivify = meta_has(&m, 'N');
		if (o.vivify)
			ttl = m.ttl_N;
		break;
	case 'R':
		o.op = STORE_OP_REPLACE;
		break;
	default:
		ms_refuse(pc, "CLIENT_ERROR invalid mode for ms M token\r\n",
			  len);
		return;
	}
	if (meta_has(&m, 'C')) {
		o.cas = m.cas_C;
		o.has_cas = true;
		/* set and replace with a cas are a cas; I lets an older
		 * cas store a stale version */
		if (o.op == STORE_OP_SET || o.op == STORE_OP_REPLACE) {
			o.op = STORE_OP_CAS;
			o.allow_stale = m.I;
		}
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
				ms_refuse(pc, "CLIENT_ERROR opaque token too "
					  "long\r\n", len);
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

/* The block of an ms is in: store, answer. */
static void ms_done(struct proto_conn *pc, struct item *it)
{
	struct proto_ctx *ctx = pc->ctx;
	struct proto_stats *st = &ctx->stats;
	struct store_set *o = &pc->meta_set;
	const char *v = item_value(it), *e, *end;
	enum store_result res;
	char *p, *q;

	pc->noreply = false;
	st->cmd_set++;
	if (v[it->nbytes] != '\r' || v[it->nbytes + 1] != '\n') {
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
	q = p + 2;
	end = pc->meta_echo + pc->meta_echo_len;
	for (e = pc->meta_echo; e < end; e++) {
		switch (*e) {
		case 'O':
			*q++ = ' ';
			memcpy(q, e + 2, (unsigned char)e[1]);
			q += (unsigned char)e[1];
			e += 1 + (unsigned char)e[1];
			break;
		case 'k':
			q = meta_put_key(q, item_key(it), it->nkey,
					 it->iflags & ITEM_KEY_BINARY);
			break;
		case 'c':
			*q++ = ' ';
			*q++ = 'c';
			q = fmt_u64(q, ctx->settings->cas_enabled ? o->cas_out :
				    0);
			break;
		case 's':
			*q++ = ' ';
			*q++ = 's';
			q = fmt_u64(q, o->nbytes_out);
			break;
		}
	}
	*q++ = '\r';
	*q++ = '\n';
	reply_commit(&pc->out, (size_t)(q - p));
	item_put(it);
}
