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

#include <errno.h>
#include <limits.h>
#include <string.h>

#include "base64.h"
#include "number.h"

/* The first space at or after @p, or @end; eight bytes a step. */
static inline const char *parse_find_space(const char *p, const char *end)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t ones = 0x0101010101010101ull;

	while (end - p >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		w ^= 0x20 * ones;	/* a space becomes a zero byte */
		w = (w - ones) & ~w & (0x80 * ones);
		/* the lowest flagged byte is the first zero (no false
		 * positive below it) */
		if (w)
			return p + (__builtin_ctzll(w) >> 3);
		p += 8;
	}
#endif
	while (p < end && *p != ' ')
		p++;
	return p;
}

void parse_tokenize(struct parse_line *l, const char *p, const char *end)
{
	unsigned int n = 0;

	l->more = false;
	l->end = end;
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
		p = parse_find_space(p, end);
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
	const char *end = t->p + t->len;
	const char *p = number_scan(t->p, end, max, neg, mag);

	return p && (p == end || number_isspace(*p));
}

/*
 * The usual number: 1 to 9 plain digits, which fits every field. Return:
 * true with *@out set, or false for anything else (the full rules apply).
 */
static inline bool parse_plain(const struct token *t, uint32_t *out)
{
	uint32_t v = 0;
	size_t i;

	if (t->len == 0 || t->len > 9)
		return false;
	for (i = 0; i < t->len; i++) {
		unsigned int d = (unsigned int)((unsigned char)t->p[i] - '0');

		if (d > 9)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

bool parse_u64(const struct token *t, uint64_t *out)
{
	uint64_t v;
	uint32_t small;
	bool neg;

	if (parse_plain(t, &small)) {
		*out = small;
		return true;
	}

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

	if (parse_plain(t, out))
		return true;

	if (!parse_u64(t, &v) || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

bool parse_s32(const struct token *t, int32_t *out)
{
	uint32_t small;
	uint64_t v;
	bool neg;

	if (parse_plain(t, &small)) {
		*out = (int32_t)small;	/* at most 999999999 */
		return true;
	}

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

bool parse_bound(const struct token *t, struct store_bound *b, char *buf)
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
	if (t->len >= 3 && t->p[0] == 'b' && (t->p[1] == '[' || t->p[1] == '(')) {
		/* b[<base64> or b(<base64>: any key, as the meta b flag sends
		 * it (and as range replies list a key stored that way) */
		if (t->len - 2 > KEY_MAX_LENGTH)
			return false;
		b->nkey = b64_decode(t->p + 2, t->len - 2,
				     (unsigned char *)buf);
		if (!b->nkey)
			return false;
		b->kind = t->p[1] == '[' ? BOUND_INCL : BOUND_EXCL;
		b->key = buf;
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

int parse_store_line(const struct parse_line *l, bool cas,
		     struct parse_store *st)
{
	unsigned int want = cas ? 6 : 5;
	const struct token *key = &l->tok[1];
	int32_t vlen;

	if (l->ntok != want && l->ntok != want + 1)
		return -EINVAL;
	st->noreply = TOKEN_IS(&l->tok[l->ntok - 1], "noreply");
	st->cas = 0;
	if (!key_bytes_ok(key->p, key->len) ||
	    !parse_u32(&l->tok[2], &st->flags) ||
	    !parse_s32(&l->tok[3], &st->exptime) ||
	    !parse_s32(&l->tok[4], &vlen) ||
	    (cas && !parse_u64(&l->tok[5], &st->cas)) ||
	    vlen < 0 || vlen > INT_MAX - 2)
		return -EBADMSG;
	st->key = key->p;
	st->nkey = key->len;
	st->bytes = (uint32_t)vlen;
	return 0;
}

/*
 * The first space, NUL or newline at or after @p, or @end: where a key
 * that the fast path takes ends (a space) or where it gives up (a NUL is
 * a bad key byte, a newline ends the line before the key does).
 */
static inline const char *parse_key_end(const char *p, const char *end)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t ones = 0x0101010101010101ull;

	/* skip eight bytes at a time while none is below '!' */
	while (end - p >= 8) {
		uint64_t w, low;

		memcpy(&w, p, 8);
		low = (w - 0x21 * ones) & ~w & (0x80 * ones);
		/* the lowest flag is a true one (a borrow only flags bytes
		 * above one): a space usually, else a control byte that the
		 * loop below looks at */
		if (low) {
			p += __builtin_ctzll(low) >> 3;
			if (*p == ' ')
				return p;
			break;
		}
		p += 8;
	}
#endif
	while (p < end && *p != ' ' && *p != '\0' && *p != '\n')
		p++;
	return p;
}

/*
 * What the fast path reads after the key's space, at most: three numbers
 * of up to 9 digits, each read up to the byte after (10 bytes, the first
 * two then a space), " noreply", "\r\n".
 */
#define PARSE_SET_TAIL	48

/*
 * 1 to 9 plain digits at @t, in bytes that may be read up to the tenth:
 * Return: the byte after them, or NULL (none, or more than 9).
 */
static inline const char *parse_fast_u32(const char *t, uint32_t *out)
{
	unsigned int d = (unsigned int)((unsigned char)t[0] - '0'), k;
	uint32_t v;

	if (d > 9)
		return NULL;
	v = d;
	for (k = 1; k < 10; k++) {
		d = (unsigned int)((unsigned char)t[k] - '0');
		if (d > 9)
			break;
		v = v * 10 + d;
	}
	if (k == 10)
		return NULL;
	*out = v;
	return t + k;
}

/*
 * The numbers, noreply and line end of a set line, from @t, which may be
 * read for PARSE_SET_TAIL bytes. Return: their length with the newline,
 * or 0.
 */
static __attribute__((always_inline)) inline size_t
parse_set_tail(const char *t, struct parse_store *st)
{
	const char *t0 = t;
	uint32_t flags, exptime, bytes;

	t = parse_fast_u32(t, &flags);
	if (!t || *t++ != ' ')
		return 0;
	t = parse_fast_u32(t, &exptime);
	if (!t || *t++ != ' ')
		return 0;
	t = parse_fast_u32(t, &bytes);
	if (!t)
		return 0;
	st->noreply = false;
	if (*t == ' ') {
		if (memcmp(t, " noreply", 8))
			return 0;
		t += 8;
		st->noreply = true;
	}
	if (*t == '\r')
		t++;
	if (*t != '\n')
		return 0;
	st->flags = flags;
	st->exptime = (int32_t)exptime;
	st->bytes = bytes;
	st->cas = 0;
	return (size_t)(t + 1 - t0);
}

/*
 * parse_set_tail() near the end of the input: on a copy padded with NULs,
 * which no rule there takes, so that it never reads past @end.
 */
static __attribute__((noinline)) size_t
parse_set_tail_padded(const char *p, const char *end, struct parse_store *st)
{
	char pad[PARSE_SET_TAIL];
	size_t n = (size_t)(end - p);

	memcpy(pad, p, n);
	memset(pad + n, 0, sizeof(pad) - n);
	return parse_set_tail(pad, st);
}

size_t parse_set_fast(const char *p, const char *end, struct parse_store *st)
{
	const char *start = p, *key;
	size_t n;

	/* the shortest is "set k 0 0 0\n" */
	if (end - p < 12 || memcmp(p, "set ", 4))
		return 0;
	key = p + 4;
	p = parse_key_end(key, end);
	if (p == key || p == end || *p != ' ' || p - key > KEY_MAX_LENGTH)
		return 0;
	st->key = key;
	st->nkey = (size_t)(p - key);
	p++;
	if (end - p >= PARSE_SET_TAIL)
		n = parse_set_tail(p, st);
	else
		n = parse_set_tail_padded(p, end, st);
	if (!n)
		return 0;
	return (size_t)(p - start) + n;
}
