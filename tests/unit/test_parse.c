// SPDX-License-Identifier: MIT
/*
 * test_parse.c - the set fast path against the general path.
 *
 * parse_set_fast() must take only lines that the general path
 * (the command line cut at its newline as proto_command() cuts it,
 * parse_tokenize(), parse_store_line()) reads as a valid set, and then
 * give the same arguments; it may leave any line to the general path.
 * Lines are generated: canonical ones, whose values the generator knows
 * (the fast path must take every one of them and return those values),
 * and mutated ones (odd spaces, signs, long numbers, bad key bytes, cut
 * lines, other commands, missing or odd line ends), compared with the
 * general path.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "parse.h"

#define RND_SEED	0x9e3779b97f4a7c15ull
#include "rnd.h"

#define LINE_ROOM	1024

struct line {
	char p[LINE_ROOM];
	size_t len;
};

static void put(struct line *l, const void *p, size_t n)
{
	if (l->len + n > sizeof(l->p))
		n = sizeof(l->p) - l->len;
	memcpy(l->p + l->len, p, n);
	l->len += n;
}

static void puts_(struct line *l, const char *s)
{
	put(l, s, strlen(s));
}

static void put_u64(struct line *l, uint64_t v)
{
	char tmp[24];

	snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v);
	puts_(l, tmp);
}

/*
 * The general path, as proto_command() and proto_run_line() run it for a
 * set. Return: 0 and *@used when the line is a set that parse_store_line()
 * accepts; -EAGAIN when no newline is in the bytes; -ENOENT when it is not
 * a set line; else what parse_store_line() returned.
 */
static int general(const char *buf, size_t len, struct parse_store *st,
		   size_t *used)
{
	const char *nl = memchr(buf, '\n', len), *end, *p;
	struct parse_line l;

	if (!nl)
		return -EAGAIN;
	end = nl;
	if (end - buf > 1 && end[-1] == '\r')
		end--;
	p = buf;
	while (p < end && *p == ' ')
		p++;
	parse_tokenize(&l, p, end);
	if (!l.ntok || !TOKEN_IS(&l.tok[0], "set"))
		return -ENOENT;
	*used = (size_t)(nl + 1 - buf);
	return parse_store_line(&l, false, st);
}

static bool same_store(const struct parse_store *a,
		       const struct parse_store *b)
{
	return a->key == b->key && a->nkey == b->nkey &&
	       a->flags == b->flags && a->exptime == b->exptime &&
	       a->bytes == b->bytes && a->cas == b->cas &&
	       a->noreply == b->noreply;
}

static const char *show(const char *p, size_t n)
{
	static char out[4 * LINE_ROOM + 1];
	size_t i, o = 0;

	for (i = 0; i < n && o + 5 < sizeof(out); i++) {
		unsigned char c = (unsigned char)p[i];

		if (c >= 0x20 && c < 0x7f && c != '\\')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, sizeof(out) - o,
					      "\\x%02x", c);
	}
	out[o] = '\0';
	return out;
}

/* ------------------------------------------------------------------ */
/* canonical lines: the fast path takes them, with the generator's values */

static void gen_key(struct line *l, size_t n)
{
	static const char chars[] =
		"abcdefghijklmnopqrstuvwxyz0123456789-_:.{}[]()/\x01\x7f\xc3\xa9";
	size_t i;

	for (i = 0; i < n; i++)
		l->p[l->len++] = chars[rnd_below(sizeof(chars) - 1)];
}

static uint32_t gen_num(unsigned int max_digits)
{
	unsigned int digits = 1 + rnd_below(max_digits), i;
	uint32_t v = 0;

	for (i = 0; i < digits; i++)
		v = v * 10 + (i || digits == 1 ? rnd_below(10) : 1 + rnd_below(9));
	return v;
}

static void test_canonical(void)
{
	unsigned int i, taken = 0, n = 20000;

	for (i = 0; i < n; i++) {
		struct line l = { .len = 0 };
		struct parse_store fast, gen;
		size_t nkey = 1 + rnd_below(i % 10 ? 40 : KEY_MAX_LENGTH);
		uint32_t flags = gen_num(9), exptime = gen_num(9);
		uint32_t bytes = gen_num(i % 3 ? 4 : 9);
		bool noreply = !rnd_below(4), crlf = rnd_below(8);
		size_t used = 0, got;
		const char *key;

		puts_(&l, "set ");
		key = l.p + l.len;
		gen_key(&l, nkey);
		puts_(&l, " ");
		put_u64(&l, flags);
		puts_(&l, " ");
		put_u64(&l, exptime);
		puts_(&l, " ");
		put_u64(&l, bytes);
		if (noreply)
			puts_(&l, " noreply");
		puts_(&l, crlf ? "\r\n" : "\n");
		used = l.len;
		/* what follows: a data block, or nothing */
		if (rnd_below(2))
			puts_(&l, "0123456789\r\n");

		got = parse_set_fast(l.p, l.p + l.len, &fast);
		CHECK_MSG(got == used, "\"%s\": took %zu, not %zu",
			  show(l.p, l.len), got, used);
		if (got != used)
			continue;
		taken++;
		CHECK(fast.key == key && fast.nkey == nkey);
		CHECK(fast.flags == flags && fast.exptime == (int32_t)exptime);
		CHECK(fast.bytes == bytes && fast.noreply == noreply);
		CHECK(fast.cas == 0);
		/* and the general path reads the same */
		CHECK(general(l.p, l.len, &gen, &used) == 0);
		CHECK(same_store(&fast, &gen));
		/* every cut of the line is left to the general path */
		got = rnd_below((unsigned int)used);
		CHECK_MSG(parse_set_fast(l.p, l.p + got, &fast) == 0,
			  "cut at %zu: \"%s\"", got, show(l.p, got));
	}
	CHECK(taken == n);
}

/* ------------------------------------------------------------------ */
/* mutated lines: whatever the fast path takes, the general path agrees   */

static const char *const pieces[] = {
	"set", "set ", "sets", "get", "Set", " ", "  ", "\t", "\r", "\n",
	"\r\n", "\0", "k", "key", "ke y", "0", "00", "1", "9", "10",
	"999999999", "1000000000", "4294967295", "4294967296", "2147483647",
	"2147483648", "-1", "+1", "-0", " 1", "1 ", "1x", "x1", "noreply",
	"noreply ", "noreplyx", "norepl", " noreply", "cas", "\xff", "\x01",
};

static void gen_mutated(struct line *l)
{
	unsigned int n = 1 + rnd_below(14), i;

	/* start like a set most of the time, so that it gets far */
	if (rnd_below(4)) {
		puts_(l, "set ");
		gen_key(l, 1 + rnd_below(rnd_below(8) ? 20 : 260));
	}
	for (i = 0; i < n; i++) {
		const char *s = pieces[rnd_below(sizeof(pieces) /
						 sizeof(pieces[0]))];

		/* "\0" is one byte */
		put(l, s, *s ? strlen(s) : 1);
	}
}

/* A canonical line with one byte changed, dropped or doubled. */
static void gen_edited(struct line *l)
{
	static const char bytes[] = " \t\r\n\0+-0123456789xn";
	size_t at;

	puts_(l, "set ");
	gen_key(l, 1 + rnd_below(12));
	puts_(l, " ");
	put_u64(l, gen_num(10));
	puts_(l, " ");
	put_u64(l, gen_num(10));
	puts_(l, " ");
	put_u64(l, gen_num(10));
	if (rnd_below(3) == 0)
		puts_(l, " noreply");
	puts_(l, "\r\n");
	at = rnd_below((unsigned int)l->len);
	switch (rnd_below(3)) {
	case 0:
		l->p[at] = bytes[rnd_below(sizeof(bytes) - 1)];
		break;
	case 1:
		memmove(l->p + at, l->p + at + 1, l->len - at - 1);
		l->len--;
		break;
	default:
		if (l->len < sizeof(l->p)) {
			memmove(l->p + at + 1, l->p + at, l->len - at);
			l->len++;
		}
		break;
	}
}

static void test_mutated(void)
{
	unsigned int i, taken = 0, general_ok = 0, n = 200000;

	for (i = 0; i < n; i++) {
		struct line l = { .len = 0 };
		struct parse_store fast, gen;
		size_t got, used = 0;
		char *copy;
		int ret;

		if (i & 1)
			gen_mutated(&l);
		else
			gen_edited(&l);
		/* exactly the bytes at hand, so ASan sees any read past them */
		copy = malloc(l.len ? l.len : 1);
		if (!copy)
			abort();
		memcpy(copy, l.p, l.len);
		got = parse_set_fast(copy, copy + l.len, &fast);
		ret = general(copy, l.len, &gen, &used);
		if (ret == 0)
			general_ok++;
		if (got) {
			taken++;
			CHECK_MSG(ret == 0 && got == used && same_store(&fast, &gen),
				  "\"%s\": fast took %zu, general %d used %zu",
				  show(copy, l.len), got, ret, used);
		}
		free(copy);
	}
	/* the generators reach both sides */
	CHECK(taken > n / 20);
	CHECK(general_ok > taken);
}

/* ------------------------------------------------------------------ */
/* a few lines by hand                                                   */

static void test_by_hand(void)
{
	static const struct {
		const char *line;
		bool taken;
	} cases[] = {
		{ "set k 0 0 1\r\n", true },
		{ "set k 0 0 1\n", true },
		{ "set k 1 2 3 noreply\r\n", true },
		{ "set k 0 0 999999999\r\n", true },
		{ "set k 0 0 1000000000\r\n", false },	/* general: too large */
		{ "set  k 0 0 1\r\n", false },
		{ "set k 0 0 1 \r\n", false },
		{ "set k 0 0 1\r", false },		/* no newline yet */
		{ "set k 0 0 1", false },
		{ "set k 0 -1 1\r\n", false },
		{ "set k 0 0 1 junk\r\n", false },	/* general: valid */
		{ "set k\n 0 0 1\r\n", false },
		{ "set k\r 0 0 1\r\n", true },		/* \r is a key byte */
		{ " set k 0 0 1\r\n", false },
		{ "set k 0 0 1\r\r\n", false },
	};
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *s = cases[i].line;
		size_t len = strlen(s);
		struct parse_store fast, gen;
		size_t got = parse_set_fast(s, s + len, &fast), used = 0;

		CHECK_MSG((got != 0) == cases[i].taken, "\"%s\"",
			  show(s, len));
		if (got)
			CHECK(general(s, len, &gen, &used) == 0 &&
			      got == used && same_store(&fast, &gen));
	}
}

int main(void)
{
	test_by_hand();
	test_canonical();
	test_mutated();
	return check_report();
}
