// SPDX-License-Identifier: MIT
/*
 * parse.c - tokens, numbers, keys and range bounds of a request line.
 *
 * See parse.h. The number rules copy what strtoull()/strtol() accept in
 * memcached's safe_strto*() wrappers, so that a line memcached takes is
 * taken here and one it refuses is refused, except that a value too large
 * for its field is refused instead of being truncated.
 */
#include "parse.h"

#include <string.h>

/* isspace() in the C locale */
static inline bool parse_isspace(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

void parse_tokenize(struct parse_line *l, const char *p, const char *end)
{
	unsigned int n = 0;

	l->more = false;
	for (;;) {
		const char *s;

		while (p < end && *p == ' ')
			p++;
		if (p == end)
			break;
		if (n == PARSE_MAX_TOKENS) {
			l->more = true;
			break;
		}
		s = p;
		while (p < end && *p != ' ')
			p++;
		l->tok[n].p = s;
		l->tok[n].len = (size_t)(p - s);
		n++;
	}
	l->ntok = n;
}

/*
 * The common part of the number parsers: white space, a sign, at least one
 * digit, then the end of the token or white space. Return: false on no
 * digits, bad bytes, or a magnitude above @max.
 */
static bool parse_magnitude(const struct token *t, uint64_t max, bool *neg,
			    uint64_t *mag)
{
	const char *p = t->p, *end = t->p + t->len, *digits;
	uint64_t v = 0;

	while (p < end && parse_isspace(*p))
		p++;
	*neg = false;
	if (p < end && (*p == '+' || *p == '-')) {
		*neg = *p == '-';
		p++;
	}
	digits = p;
	while (p < end && *p >= '0' && *p <= '9') {
		unsigned int d = (unsigned int)(*p - '0');

		if (v > (max - d) / 10)
			return false;		/* ERANGE */
		v = v * 10 + d;
		p++;
	}
	if (p == digits)
		return false;
	if (p < end && !parse_isspace(*p))
		return false;
	*mag = v;
	return true;
}

bool parse_u64(const struct token *t, uint64_t *out)
{
	uint64_t v;
	bool neg;

	if (!parse_magnitude(t, UINT64_MAX, &neg, &v))
		return false;
	if (neg)
		v = -v;
	/* strtoull() negates; memcached refuses what then looks negative */
	if ((int64_t)v < 0 && memchr(t->p, '-', t->len))
		return false;
	*out = v;
	return true;
}

bool parse_u32(const struct token *t, uint32_t *out)
{
	uint64_t v;

	if (!parse_u64(t, &v) || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

bool parse_s32(const struct token *t, int32_t *out)
{
	uint64_t v;
	bool neg;

	if (!parse_magnitude(t, (uint64_t)INT32_MAX + 1, &neg, &v))
		return false;
	if (!neg && v > INT32_MAX)
		return false;
	*out = neg ? (int32_t)(0 - (int64_t)v) : (int32_t)v;
	return true;
}

bool parse_count(const struct token *t, unsigned int cap, unsigned int *out)
{
	uint64_t v = 0;
	size_t i;

	if (t->len == 0)
		return false;
	for (i = 0; i < t->len; i++) {
		char c = t->p[i];

		if (c < '0' || c > '9')
			return false;
		if (v <= UINT32_MAX)
			v = v * 10 + (uint64_t)(c - '0');
	}
	if (v == 0)
		return false;
	*out = v > cap ? cap : (unsigned int)v;
	return true;
}

bool parse_bound(const struct token *t, struct store_bound *b)
{
	b->key = NULL;
	b->nkey = 0;
	if (t->len == 1 && t->p[0] == '-') {
		b->kind = BOUND_MIN;
		return true;
	}
	if (t->len == 1 && t->p[0] == '+') {
		b->kind = BOUND_MAX;
		return true;
	}
	if (t->len < 2 || (t->p[0] != '[' && t->p[0] != '('))
		return false;
	if (!key_bytes_ok(t->p + 1, t->len - 1))
		return false;
	b->kind = t->p[0] == '[' ? BOUND_INCL : BOUND_EXCL;
	b->key = t->p + 1;
	b->nkey = t->len - 1;
	return true;
}
