// SPDX-License-Identifier: MIT
/*
 * meta.c - the meta commands' flag parser and the flags every reply
 * shares (see meta.h).
 */
#include "meta.h"

#include <limits.h>
#include <string.h>

#include "base64.h"

#define META_BAD_FORMAT		"CLIENT_ERROR bad command line format\r\n"
#define META_BAD_TOKEN		"CLIENT_ERROR bad token in command line format\r\n"

/*
 * A flag's argument (the bytes after its first), as memcached 1.6.45
 * reads one: digits only, at least one, at most 11 (22 for 64 bits), and
 * no overflow.
 */
/* Digits only, at least one, at most @maxlen of them, and at most @max. */
static bool digits_u64(const char *p, size_t n, size_t maxlen, uint64_t max,
		       uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n < 1 || n > maxlen)
		return false;
	for (i = 0; i < n; i++) {
		unsigned int d = (unsigned char)p[i] - '0';

		if (d > 9 || v > (max - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static bool arg_u64(const struct token *t, size_t maxlen, uint64_t max,
		    uint64_t *out)
{
	return digits_u64(t->p + 1, t->len - 1, maxlen, max, out);
}

/* A signed one may start with '-' within the 11 bytes ("-" alone is 0). */
static bool arg_i32(const struct token *t, int32_t *out)
{
	const char *p = t->p + 1;
	size_t n = t->len - 1;
	uint64_t v;

	if (n < 1 || n > 11)
		return false;
	if (*p != '-') {
		if (!digits_u64(p, n, 11, INT32_MAX, &v))
			return false;
		*out = (int32_t)v;
		return true;
	}
	if (n == 1) {
		*out = 0;
		return true;
	}
	if (!digits_u64(p + 1, n - 1, 10, (uint64_t)INT32_MAX + 1, &v))
		return false;
	*out = (int32_t)(0 - v);
	return true;
}

/* No flag seen yet: the key as it is, the flags from token @first on. */
static void meta_reset(struct meta_req *m, const struct parse_line *l,
		       unsigned int first)
{
	memset(m->seen, 0, sizeof(m->seen));
	m->binary = m->q = m->v = m->u = m->I = m->x = false;
	m->ttl_T = m->ttl_N = m->ttl_R = 0;
	m->cas_C = m->cas_E = m->delta_D = m->initial_J = 0;
	m->flags_F = 0;
	m->mode = 0;
	m->key = l->tok[1].p;
	m->nkey = l->tok[1].len;
	m->flag = l->tok + first;
	m->nflag = l->ntok > first ? l->ntok - first : 0;
}

const char *meta_parse(struct meta_req *m, const struct parse_line *l,
		       unsigned int first)
{
	const struct token *key = &l->tok[1];
	const char *err = META_BAD_FORMAT;
	bool bad = false;
	uint64_t u;
	unsigned int i;

	meta_reset(m, l, first);
	if (key->len > KEY_MAX_LENGTH)
		return META_BAD_FORMAT;
	if (l->ntok > META_MAX_TOKENS || l->more)
		return "CLIENT_ERROR options flags are too long\r\n";
	for (i = first; i < l->ntok; i++) {
		const struct token *t = &l->tok[i];
		unsigned int o = (unsigned char)t->p[0];

		if (o >= 127 || meta_has(m, (char)o))
			return "CLIENT_ERROR duplicate flag\r\n";
		m->seen[o / 32] |= 1u << (o % 32);
		switch (o) {
		case 'b':
			m->nkey = b64_decode(key->p, key->len,
					     (unsigned char *)m->keybuf);
			m->key = m->keybuf;
			m->binary = true;
			if (!m->nkey) {
				err = "CLIENT_ERROR error decoding key\r\n";
				bad = true;
			}
			break;
		case 'N':
		case 'T':
		case 'R':
			if (!arg_i32(t, o == 'N' ? &m->ttl_N : o == 'T' ?
					&m->ttl_T : &m->ttl_R)) {
				err = META_BAD_TOKEN;
				bad = true;
			}
			break;
		case 'l': case 'O': case 'P': case 'L': case 'k': case 's':
		case 't': case 'c': case 'f': case 'h':
			break;
		case 'v':
			m->v = true;
			break;
		case 'u':
			m->u = true;
			break;
		case 'q':
			m->q = true;
			break;
		case 'x':
			m->x = true;
			break;
		case 'I':
			m->I = true;
			break;
		case 'F':
			/* memcached keeps the error said before, if any */
			if (arg_u64(t, 11, UINT32_MAX, &u))
				m->flags_F = (uint32_t)u;
			else
				bad = true;
			break;
		case 'C':
		case 'E':
			if (!arg_u64(t, 22, UINT64_MAX, o == 'C' ? &m->cas_C :
							 &m->cas_E)) {
				err = META_BAD_TOKEN;
				bad = true;
			}
			break;
		case 'M':
			/* the byte after M; a bare M reads the separator */
			m->mode = t->len > 1 ? t->p[1] : ' ';
			break;
		case 'J':
			if (!arg_u64(t, 22, UINT64_MAX, &m->initial_J)) {
				err = "CLIENT_ERROR invalid numeric initial "
				      "value\r\n";
				bad = true;
			}
			break;
		case 'D':
			if (!arg_u64(t, 22, UINT64_MAX, &m->delta_D)) {
				err = "CLIENT_ERROR invalid numeric delta "
				      "value\r\n";
				bad = true;
			}
			break;
		default:
			return "CLIENT_ERROR invalid flag\r\n";
		}
	}
	return bad ? err : NULL;
}

char *meta_put_key(char *p, const char *key, size_t nkey, bool binary)
{
	*p++ = ' ';
	*p++ = 'k';
	p = put_listed_key(p, key, nkey, binary);
	if (binary) {
		*p++ = ' ';
		*p++ = 'b';
	}
	return p;
}

char *meta_put_opaque(char *p, const struct token *t)
{
	if (t->len > META_OPAQUE_MAX)
		return NULL;
	*p++ = ' ';
	memcpy(p, t->p, t->len);
	return p + t->len;
}

char *meta_put_flags(char *p, const struct meta_req *m,
		     const struct meta_facts *f)
{
	rel_time_t exp = f->exptime;
	unsigned int i;

	for (i = 0; i < m->nflag && p; i++) {
		const struct token *t = &m->flag[i];
		char c = t->p[0];

		if (c == 'O') {
			p = meta_put_opaque(p, t);
			continue;
		}
		if (c == 'k') {
			p = meta_put_key(p, f->key, f->nkey, f->binary);
			continue;
		}
		if (c == 'T' && f->apply_T)
			exp = f->exp_T;
		else if (c == 'N' && f->apply_N)
			exp = f->exp_N;
		if (c < 'a' || c > 'z' || !(f->echo & META_ECHO(c)))
			continue;
		switch (c) {
		case 'c':
			p = meta_put_num(p, 'c', f->cas);
			break;
		case 'f':
			p = meta_put_num(p, 'f', f->flags);
			break;
		case 'h':
			memcpy(p, f->fetched ? " h1" : " h0", 3);
			p += 3;
			break;
		case 'l':
			p = meta_put_num(p, 'l', f->idle);
			break;
		case 's':
			p = meta_put_num(p, 's', f->size);
			break;
		case 't':
			p = meta_put_ttl(p, exp, f->now);
			break;
		}
	}
	return p;
}
