/* SPDX-License-Identifier: MIT */
/*
 * parse.h - tokens, numbers, keys and range bounds of a request line.
 *
 * Private to protocol/. Everything works in place on the bytes of the
 * line: a token is a pointer and a length into the input buffer, nothing is
 * copied or NUL terminated.
 *
 * Numbers are read as memcached 1.6 reads them (strtoull()/strtol() in its
 * safe_strto*() wrappers): leading white space and a sign are accepted, and
 * the digits may be followed by white space and anything after it. What
 * does not fit the field is refused (memcached truncates it silently).
 *
 * Synchronization: none; pure functions.
 */
#ifndef ANCHORKV_PARSE_H
#define ANCHORKV_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base64.h"
#include "item.h"
#include "store.h"

/* As memcached: at most 23 tokens are split off; the rest is left over. */
#define PARSE_MAX_TOKENS	23

struct token {
	const char *p;
	size_t len;
};

struct parse_line {
	struct token tok[PARSE_MAX_TOKENS];
	unsigned int ntok;	/* tokens split off, the command included */
	bool more;		/* tokens follow the last one split off */
	const char *end;	/* the line's end (its "\r\n" or "\n") */
};

/**
 * parse_tokenize() - split a line on spaces
 * @l:   filled in
 * @p:   the line, without its "\r\n" or "\n"
 * @end: its end
 *
 * Runs of spaces separate tokens; only ' ' separates (as memcached).
 *
 * Context: any; a pure function of its arguments.
 */
void parse_tokenize(struct parse_line *l, const char *p, const char *end);

/**
 * token_is() - whether a token is exactly @s
 * @t:   the token
 * @s:   a NUL-terminated word
 * @len: strlen(@s)
 *
 * Context: any; a pure function of its arguments.
 * Return: true if @t holds exactly the @len bytes of @s.
 */
static inline bool token_is(const struct token *t, const char *s, size_t len)
{
	return t->len == len && __builtin_memcmp(t->p, s, len) == 0;
}

#define TOKEN_IS(t, lit)	token_is((t), (lit), sizeof(lit) - 1)

/**
 * key_bytes_ok() - whether @n bytes at @k make a valid key
 * @k: the bytes
 * @n: their number
 *
 * A key is 1 to KEY_MAX_LENGTH bytes, none of them a space or a NUL. Other
 * control bytes are key bytes, as in memcached (which splits a line on
 * spaces only): memcaslap's keys begin with them.
 *
 * Context: any; a pure function of its arguments.
 * Return: true if every byte may appear in a key.
 */
static inline bool key_bytes_ok(const char *k, size_t n)
{
	size_t i;

	if (n == 0 || n > KEY_MAX_LENGTH)
		return false;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)k[i];

		if (c == ' ' || c == '\0')
			return false;
	}
	return true;
}

/**
 * key_token_end() - find where a key token ends, checking its bytes
 * @p:   the token's first byte
 * @end: the end of the bytes at hand
 * @bad: set when a byte before the returned end is not valid in a key
 *
 * The token ends at the first space or at @end; a NUL in it makes it bad
 * (key_bytes_ok()). Eight bytes are checked at a time while none of them
 * is a space or a NUL: the usual key costs a few word operations instead of
 * a loop per byte.
 *
 * Return: the first space at or after @p, or @end.
 */
static inline const char *key_token_end(const char *p, const char *end,
					bool *bad)
{
	const uint64_t ones = 0x0101010101010101ull;
	const uint64_t highs = 0x8080808080808080ull;

	*bad = false;
	while (end - p >= 8) {
		uint64_t w, sp;

		__builtin_memcpy(&w, p, 8);
		sp = w ^ (0x20 * ones);
		/* a zero byte, or a space (a zero byte of sp) */
		if (((w - ones) & ~w & highs) | ((sp - ones) & ~sp & highs))
			break;
		p += 8;
	}
	for (; p < end; p++) {
		if (*p == ' ')
			break;
		if (*p == '\0')
			*bad = true;
	}
	return p;
}

/* The arguments of a storage command line (set, add, replace, append,
 * prepend, cas), as the general rules read them. */
struct parse_store {
	const char *key;	/* into the line */
	size_t nkey;
	uint32_t flags;
	int32_t exptime;	/* as sent: relative or absolute */
	uint32_t bytes;		/* the data block's length, without "\r\n" */
	uint64_t cas;		/* cas only */
	bool noreply;
};

/**
 * parse_store_line() - the arguments of a tokenized storage command line
 * @l:   the line, split by parse_tokenize()
 * @cas: the command is "cas" (one more number, the cas unique)
 * @st:  filled in; st->noreply is set whenever the token count is right
 *
 * "<cmd> <key> <flags> <exptime> <bytes>[ <cas>][ noreply]": as memcached,
 * a last token other than "noreply" in the noreply position is ignored.
 *
 * Context: any; a pure function of its arguments.
 * Return: 0; -EINVAL when the token count is wrong (memcached answers
 * "ERROR"); -EBADMSG when a token is bad ("CLIENT_ERROR bad command line
 * format", which noreply silences).
 */
int parse_store_line(const struct parse_line *l, bool cas,
		     struct parse_store *st);

/**
 * parse_set_fast() - the usual set line, read in one pass
 * @p:   the start of the input, where a command line begins
 * @end: the end of the bytes at hand
 * @st:  filled in when the line is taken
 *
 * Takes exactly "set <key> <flags> <exptime> <bytes>[ noreply]" ended by
 * "\r\n" or "\n", with single spaces and the numbers as 1 to 9 plain
 * digits: what clients send. Everything else, valid or not, complete or
 * not, is left to the general path (parse_tokenize(), parse_store_line()),
 * which gives the same @st for every line this function takes.
 *
 * Context: any; a pure function of its arguments.
 * Return: the length of the line with its newline, or 0 (not taken).
 */
size_t parse_set_fast(const char *p, const char *end, struct parse_store *st);

/**
 * parse_u64() - an unsigned 64-bit number, as memcached's safe_strtoull()
 * @t:   the token
 * @out: receives the value
 *
 * Return: true if the token is one.
 *
 * Context: any; a pure function of its arguments.
 */
bool parse_u64(const struct token *t, uint64_t *out);

/**
 * parse_u32() - an unsigned 32-bit number
 * @t:   the token
 * @out: receives the value
 *
 * As parse_u64(), and the value must fit in 32 bits.
 *
 * Return: true if the token is one.
 *
 * Context: any; a pure function of its arguments.
 */
bool parse_u32(const struct token *t, uint32_t *out);

/**
 * parse_s32() - a signed 32-bit number, as memcached's safe_strtol()
 * @t:   the token
 * @out: receives the value
 *
 * Return: true if the token is one and it fits in 32 bits.
 *
 * Context: any; a pure function of its arguments.
 */
bool parse_s32(const struct token *t, int32_t *out);

/**
 * parse_count() - a range count: a positive decimal, digits only
 * @t:   the token
 * @cap: the largest count returned; larger ones are capped
 * @out: receives the count, 1..@cap
 *
 * Return: true if the token is one.
 *
 * Context: any; a pure function of its arguments.
 */
bool parse_count(const struct token *t, unsigned int cap, unsigned int *out);

/**
 * parse_bound() - a range bound: "-", "+", "[key", "(key", or "b[<base64>"
 * or "b(<base64>" (the key base64-encoded, as the meta commands' b flag
 * sends it)
 * @t:   the token
 * @b:   filled in; its key points into the token, or into @buf
 * @buf: room for KEY_MAX_LENGTH bytes: a base64 key decoded
 *
 * Return: true if the token is one (a key of 1..KEY_MAX_LENGTH valid
 * bytes; base64: at most KEY_MAX_LENGTH bytes as sent, any bytes decoded).
 *
 * Context: any; a pure function of its arguments.
 */
bool parse_bound(const struct token *t, struct store_bound *b, char *buf);

/**
 * fmt_u64() - write @v in decimal
 * @p: room for 20 bytes
 * @v: the value
 *
 * Return: the end of what was written (no NUL).
 *
 * Context: any; a pure function of its arguments.
 */
static inline char *fmt_u64(char *p, uint64_t v)
{
	char tmp[20];
	unsigned int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/**
 * put_bytes() - copy a short run of bytes (a key) into a reply line
 * @dst: room for @n bytes
 * @src: the bytes
 * @n:   their number, small (a key: at most KEY_MAX_LENGTH)
 *
 * Word copies, the last one overlapping, and no read past @src + @n: for a
 * key this beats both memcpy()'s call and the "rep movs" that the compiler
 * inlines for a bounded memcpy().
 *
 * Return: @dst + @n.
 *
 * Context: any; a pure function of its arguments.
 */
static inline char *put_bytes(char *dst, const char *src, size_t n)
{
	uint64_t w;
	uint32_t h;
	size_t i;

	if (n >= 8) {
		for (i = 0; i + 8 < n; i += 8) {
			__builtin_memcpy(&w, src + i, 8);
			__builtin_memcpy(dst + i, &w, 8);
		}
		__builtin_memcpy(&w, src + n - 8, 8);
		__builtin_memcpy(dst + n - 8, &w, 8);
	} else if (n >= 4) {
		__builtin_memcpy(&h, src, 4);
		__builtin_memcpy(dst, &h, 4);
		__builtin_memcpy(&h, src + n - 4, 4);
		__builtin_memcpy(dst + n - 4, &h, 4);
	} else if (n) {
		dst[0] = src[0];
		dst[n / 2] = src[n / 2];
		dst[n - 1] = src[n - 1];
	}
	return dst + n;
}

/**
 * put_listed_key() - a key into a reply line that shows it (k, me, the
 * dumps, the range replies): as it is, or base64-encoded when @coded
 * @p:     where; room for B64_ENCODED_LEN(@nkey) bytes
 * @key:   the key
 * @nkey:  its length
 * @coded: the item was stored with a base64 key (ITEM_KEY_BINARY), which
 *         may hold any byte; the caller marks it " b" where its line
 *         says so
 *
 * Context: any.
 * Return: the end of what it wrote.
 */
static inline char *put_listed_key(char *p, const char *key, size_t nkey,
				   bool coded)
{
	if (!coded)
		return put_bytes(p, key, nkey);
	return p + b64_encode((const unsigned char *)key, nkey, p);
}

#endif /* ANCHORKV_PARSE_H */
