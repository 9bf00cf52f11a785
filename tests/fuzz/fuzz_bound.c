// SPDX-License-Identifier: MIT
/*
 * fuzz_bound.c - the range bound parser, the number parsers and the range
 * queries they feed, against PROTOCOL.md.
 *
 * The input is up to four tokens separated by '\n' (a byte no token of a
 * request line can hold): <from>, <to>, a third bound, and a count.
 *
 * Properties checked, each against a model written here from PROTOCOL.md
 * and not from protocol/parse.c:
 *  1. parse_bound() accepts exactly "-", "+", "[key" and "(key" with a
 *     valid key (1..250 bytes, none of them a space or a NUL), and
 *     "b[<base64>" and "b(<base64>" (at most 250 bytes of base64 as
 *     memcached reads a key: bytes outside the alphabet skipped, groups of
 *     four, a '=' ends the text), and returns the kind and the key bytes;
 *  2. parse_count() accepts exactly a positive decimal of digits only, and
 *     caps it; parse_u64(), parse_u32() and parse_s32() accept exactly
 *     optional white space, an optional sign, digits, then the end or
 *     white space, with the value in the field's range (an unsigned
 *     number with a sign is read as strtoull() reads it, and refused when
 *     that looks negative, as memcached's safe_strtoull() does);
 *  3. store_bound_cmp() orders bounds as the keyspace order does (integer
 *     keys by value, then bytewise; brackets ignored), antisymmetrically;
 *  4. on a real store holding fixed keys and the tokens' keys,
 *     store_range() forward and reverse, store_count() and
 *     store_delete_range() give exactly the model's keys and numbers; its
 *     partitions split above 2 string keys, so ranges and counts cross
 *     partition boundaries (and the ranks at both ends of a count), and
 *     merge again once the store is emptied.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "hash.h"
#include "item.h"
#include "parse.h"
#include "store.h"

#define NTOK		4
#define COUNT_CAP	64u
#define NKEYS_MAX	32

static const char *const fixed_keys[] = {
	"0", "1", "2", "9", "10", "99", "100", "18446744073709551615",
	"18446744073709551616", "-1", "+1", "007", "00", "A", "a", "ab", "b",
	"[", "(", "~", "\xff",
};

/* ---- models ---- */

struct mbound {
	int kind;		/* 0: "-", 1: "+", 2: "[", 3: "(" */
	const char *key;
	size_t nkey;
	bool coded;		/* b[ or b(: key points to buf */
	char buf[256];
};

/* A base64 character's value, 64 for '=', -1 for any other byte. */
static int model_b64_char(unsigned char c)
{
	static const char abc[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		"0123456789+/=";
	const char *at = c ? strchr(abc, c) : NULL;

	return at ? (int)(at - abc) : -1;
}

/* memcached's reading of a base64 key (PROTOCOL.md, "Reading the flags"):
 * the length decoded into @out, or 0. */
static size_t model_b64(const char *p, size_t n, char *out)
{
	int vals[256];
	size_t nv = 0, i, o = 0;

	for (i = 0; i < n; i++) {
		int v = model_b64_char((unsigned char)p[i]);

		if (v >= 0)
			vals[nv++] = v;
	}
	if (!nv || nv % 4)
		return 0;
	for (i = 0; i < nv; i += 4) {
		unsigned int pad = 0, j;
		unsigned long w = 0;

		for (j = 0; j < 4; j++) {
			pad += vals[i + j] == 64;
			w = w * 64 + (vals[i + j] == 64 ? 0 : vals[i + j]);
		}
		if (pad > 2)
			return 0;
		for (j = 0; j < 3 - pad; j++)
			out[o++] = (char)(w >> (16 - 8 * j));
		if (pad)
			break;
	}
	return o;
}

static bool model_key_ok(const char *k, size_t n)
{
	size_t i;

	if (n < 1 || n > 250)
		return false;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)k[i];

		if (c == 0x20 || c == 0x00)
			return false;
	}
	return true;
}

static bool model_bound(const char *p, size_t n, struct mbound *b)
{
	memset(b, 0, sizeof(*b));
	if (n == 1 && p[0] == '-')
		return b->kind = 0, true;
	if (n == 1 && p[0] == '+')
		return b->kind = 1, true;
	if (n >= 3 && n - 2 <= 250 && p[0] == 'b' &&
	    (p[1] == '[' || p[1] == '(')) {
		b->nkey = model_b64(p + 2, n - 2, b->buf);
		b->kind = p[1] == '[' ? 2 : 3;
		b->key = b->buf;
		b->coded = true;
		return b->nkey > 0;
	}
	if (n >= 1 && (p[0] == '[' || p[0] == '(') &&
	    model_key_ok(p + 1, n - 1)) {
		b->kind = p[0] == '[' ? 2 : 3;
		b->key = p + 1;
		b->nkey = n - 1;
		return true;
	}
	return false;
}

/* Where a bound sits, brackets ignored: -1 before all, 1 after all. */
static int model_bound_cmp(const struct mbound *a, const struct mbound *b)
{
	int pa = a->kind == 0 ? -1 : a->kind == 1 ? 1 : 0;
	int pb = b->kind == 0 ? -1 : b->kind == 1 ? 1 : 0;

	if (pa || pb)
		return pa == pb ? 0 : (pa < pb ? -1 : 1);
	return fuzz_key_cmp(a->key, a->nkey, b->key, b->nkey);
}

/* Whether a key is inside [from, to] with the brackets' meaning. */
static bool model_in_range(const char *k, size_t n, const struct mbound *from,
			   const struct mbound *to)
{
	int c;

	if (from->kind == 1 || to->kind == 0)
		return false;
	if (from->kind >= 2) {
		c = fuzz_key_cmp(k, n, from->key, from->nkey);
		if (c < 0 || (c == 0 && from->kind == 3))
			return false;
	}
	if (to->kind >= 2) {
		c = fuzz_key_cmp(k, n, to->key, to->nkey);
		if (c > 0 || (c == 0 && to->kind == 3))
			return false;
	}
	return true;
}

static bool model_count(const char *p, size_t n, unsigned int cap,
			unsigned int *out)
{
	uint64_t v = 0;
	size_t i;

	if (!n)
		return false;
	for (i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(p[i] - '0');
		if (v > cap)
			v = (uint64_t)cap + 1;	/* saturate */
	}
	if (!v)
		return false;
	*out = v > cap ? cap : (unsigned int)v;
	return true;
}

static bool model_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
	       c == '\r';
}

/*
 * The shape of a number: white space, sign, digits, then end or white
 * space. @neg and the magnitude (saturated at 2^64, @big set) out.
 */
static bool model_number(const char *p, size_t n, bool *neg, uint64_t *mag,
			 bool *big)
{
	size_t i = 0, d0;

	*neg = false;
	*big = false;
	*mag = 0;
	while (i < n && model_space(p[i]))
		i++;
	if (i < n && (p[i] == '+' || p[i] == '-'))
		*neg = p[i++] == '-';
	d0 = i;
	while (i < n && p[i] >= '0' && p[i] <= '9') {
		unsigned int d = (unsigned int)(p[i] - '0');

		if (*mag > (UINT64_MAX - d) / 10)
			*big = true;
		else
			*mag = *mag * 10 + d;
		i++;
	}
	return i > d0 && (i == n || model_space(p[i]));
}

/*
 * strtoull() (which negates modulo 2^64), then memcached's check: a value
 * with the top bit set is refused if the token holds a '-' anywhere (even
 * after the number: "18446744073709551615\t-" is refused too).
 */
static bool model_u64(const char *p, size_t n, uint64_t *out)
{
	uint64_t mag;
	bool neg, big;

	if (!model_number(p, n, &neg, &mag, &big) || big)
		return false;
	if (neg)
		mag = 0 - mag;
	if (mag >> 63 && memchr(p, '-', n))
		return false;
	*out = mag;
	return true;
}

static bool model_s32(const char *p, size_t n, int32_t *out)
{
	uint64_t mag;
	bool neg, big;

	if (!model_number(p, n, &neg, &mag, &big) || big)
		return false;
	if (neg ? mag > (uint64_t)INT32_MAX + 1 : mag > INT32_MAX)
		return false;
	*out = neg ? (int32_t)(-(int64_t)mag) : (int32_t)mag;
	return true;
}

/* ---- checks ---- */

static void check_numbers(const char *p, size_t n)
{
	struct token t = { p, n };
	uint64_t v = 0, mv = 0;
	uint32_t v32 = 0;
	int32_t s32 = 0, ms32 = 0;
	unsigned int c = 0, mc = 0;
	bool ok, mok;

	ok = parse_count(&t, COUNT_CAP, &c);
	mok = model_count(p, n, COUNT_CAP, &mc);
	FUZZ_CHECK(ok == mok && (!ok || c == mc),
		   "parse_count \"%.*s\": %d %u, model %d %u", (int)n, p, ok,
		   c, mok, mc);
	ok = parse_u64(&t, &v);
	mok = model_u64(p, n, &mv);
	FUZZ_CHECK(ok == mok && (!ok || v == mv),
		   "parse_u64 \"%.*s\": %d, model %d", (int)n, p, ok, mok);
	ok = parse_u32(&t, &v32);
	mok = mok && mv <= UINT32_MAX;
	FUZZ_CHECK(ok == mok && (!ok || v32 == mv),
		   "parse_u32 \"%.*s\": %d, model %d", (int)n, p, ok, mok);
	ok = parse_s32(&t, &s32);
	mok = model_s32(p, n, &ms32);
	FUZZ_CHECK(ok == mok && (!ok || s32 == ms32),
		   "parse_s32 \"%.*s\": %d, model %d", (int)n, p, ok, mok);
}

static struct store *fuzz_store(void)
{
	static const uint8_t seed[HASH_SEED_BYTES] = { 9, 8, 7 };
	static struct store *s;
	struct store_config cfg = {
		.mem_limit = 0,
		.item_size_max = 1024,
		.nshards = 4,
		.hash_bits = 4,
		.part_max = 2,
	};

	if (!s) {
		hash_set_seed(seed);
		s = store_create(&cfg);
		if (!s)
			FUZZ_FAIL("store_create failed");
		store_set_time(s, 1700000000);
	}
	return s;
}

static void put_key(struct store *s, const char *k, size_t n)
{
	struct item *it;

	if (store_item_alloc(s, k, n, 0, 0, 1, &it))
		FUZZ_FAIL("store_item_alloc failed");
	memcpy(item_value(it), "v", 1);
	if (store_item_store(s, it, STORE_OP_SET, 0, NULL) != STORE_STORED)
		FUZZ_FAIL("set failed");
}

struct keyset {
	const char *k[NKEYS_MAX];
	size_t n[NKEYS_MAX];
	unsigned int count;
};

static void keyset_add(struct keyset *ks, const char *k, size_t n)
{
	unsigned int i;

	for (i = 0; i < ks->count; i++)
		if (ks->n[i] == n && !memcmp(ks->k[i], k, n))
			return;
	ks->k[ks->count] = k;
	ks->n[ks->count] = n;
	ks->count++;
}

/* The keys of @ks inside the range, in order (reverse: descending). */
static unsigned int model_range(const struct keyset *ks,
				const struct mbound *from,
				const struct mbound *to, bool reverse,
				unsigned int *idx)
{
	unsigned int i, j, n = 0;

	for (i = 0; i < ks->count; i++) {
		if (!model_in_range(ks->k[i], ks->n[i], from, to))
			continue;
		for (j = n; j > 0; j--) {
			int c = fuzz_key_cmp(ks->k[idx[j - 1]],
					     ks->n[idx[j - 1]], ks->k[i],
					     ks->n[i]);

			if (reverse ? c >= 0 : c <= 0)
				break;
			idx[j] = idx[j - 1];
		}
		idx[j] = i;
		n++;
	}
	return n;
}

static void check_range(struct store *s, const struct keyset *ks,
			const struct store_bound *from,
			const struct store_bound *to, const struct mbound *mf,
			const struct mbound *mt, unsigned int count)
{
	struct item *items[NKEYS_MAX];
	unsigned int idx[NKEYS_MAX], want, i;
	int rev, got;

	for (rev = 0; rev < 2; rev++) {
		want = model_range(ks, mf, mt, rev, idx);
		if (want > count)
			want = count;
		got = store_range(s, from, to, rev, count, items);
		FUZZ_CHECK(got == (int)want, "store_range %s: %d items, "
			   "model %u", rev ? "reverse" : "forward", got, want);
		for (i = 0; i < want; i++) {
			const struct item *it = items[i];

			FUZZ_CHECK(it->nkey == ks->n[idx[i]] &&
				   !memcmp(item_key(it), ks->k[idx[i]],
					   it->nkey),
				   "store_range item %u is \"%.*s\", model "
				   "\"%.*s\"", i, (int)it->nkey, item_key(it),
				   (int)ks->n[idx[i]], ks->k[idx[i]]);
		}
		for (i = 0; i < (unsigned int)got; i++)
			item_put(items[i]);
	}
	want = model_range(ks, mf, mt, false, idx);
	FUZZ_CHECK(store_count(s, from, to) == want,
		   "store_count %llu, model %u",
		   (unsigned long long)store_count(s, from, to), want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	struct token tok[NTOK];
	struct store_bound b[NTOK];
	char bufs[NTOK][KEY_MAX_LENGTH];
	struct mbound mb[NTOK];
	bool ok[NTOK];
	struct keyset ks = { .count = 0 };
	struct store_bound all_from = { .kind = BOUND_MIN };
	struct store_bound all_to = { .kind = BOUND_MAX };
	struct store *s;
	unsigned int ntok = 0, i, j, count = 100;
	char why[256];
	uint64_t total, removed;

	/* the tokens */
	while (ntok < NTOK) {
		const char *nl = ntok < NTOK - 1 ?
			memchr(p, '\n', (size_t)(end - p)) : NULL;

		tok[ntok].p = p;
		tok[ntok].len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		ntok++;
		if (!nl)
			break;
		p = nl + 1;
	}

	/* properties 1 and 2 */
	for (i = 0; i < ntok; i++) {
		bool mok;

		memset(&b[i], 0, sizeof(b[i]));
		ok[i] = parse_bound(&tok[i], &b[i], bufs[i]);
		mok = model_bound(tok[i].p, tok[i].len, &mb[i]);
		FUZZ_CHECK(ok[i] == mok, "parse_bound \"%.*s\": %d, model %d",
			   (int)tok[i].len, tok[i].p, ok[i], mok);
		if (ok[i]) {
			static const enum bound_kind kinds[] = {
				BOUND_MIN, BOUND_MAX, BOUND_INCL, BOUND_EXCL,
			};

			FUZZ_CHECK(b[i].kind == kinds[mb[i].kind],
				   "parse_bound kind %d, model %d",
				   (int)b[i].kind, mb[i].kind);
			FUZZ_CHECK(b[i].nkey == mb[i].nkey &&
				   (mb[i].coded ? b[i].key == bufs[i] &&
				    !memcmp(b[i].key, mb[i].key, b[i].nkey) :
				    b[i].key == mb[i].key),
				   "parse_bound key differs from the token's");
		}
		check_numbers(tok[i].p, tok[i].len);
	}

	/* property 3 */
	for (i = 0; i < ntok; i++) {
		for (j = 0; j < ntok; j++) {
			int c, m;

			if (!ok[i] || !ok[j])
				continue;
			c = store_bound_cmp(&b[i], &b[j]);
			m = model_bound_cmp(&mb[i], &mb[j]);
			FUZZ_CHECK((c > 0) - (c < 0) == m,
				   "store_bound_cmp(%u, %u) = %d, model %d",
				   i, j, c, m);
		}
	}

	/* property 4 */
	if (ntok < 2 || !ok[0] || !ok[1])
		return 0;
	if (ntok == NTOK && !model_count(tok[3].p, tok[3].len, COUNT_CAP,
					 &count))
		count = 100;
	if (count > NKEYS_MAX)
		count = NKEYS_MAX;
	s = fuzz_store();
	for (i = 0; i < sizeof(fixed_keys) / sizeof(fixed_keys[0]); i++)
		keyset_add(&ks, fixed_keys[i], strlen(fixed_keys[i]));
	for (i = 0; i < ntok && i < 3; i++)
		if (ok[i] && mb[i].key)
			keyset_add(&ks, mb[i].key, mb[i].nkey);
	for (i = 0; i < ks.count; i++)
		put_key(s, ks.k[i], ks.n[i]);

	check_range(s, &ks, &b[0], &b[1], &mb[0], &mb[1], count);
	if (ntok > 2 && ok[2])
		check_range(s, &ks, &b[1], &b[2], &mb[1], &mb[2], count);

	/* delete_range removes what count counted, and nothing else */
	total = store_count(s, &all_from, &all_to);
	FUZZ_CHECK(total == ks.count, "store holds %llu keys, put %u",
		   (unsigned long long)total, ks.count);
	removed = store_count(s, &b[0], &b[1]);
	FUZZ_CHECK(store_delete_range(s, &b[0], &b[1]) == removed,
		   "store_delete_range differs from store_count");
	FUZZ_CHECK(store_count(s, &all_from, &all_to) == total - removed,
		   "store_delete_range removed keys outside the range");
	FUZZ_CHECK(store_count(s, &b[0], &b[1]) == 0,
		   "store_delete_range left keys of the range");
	if (store_check_invariants(s, why, sizeof(why)))
		FUZZ_FAIL("store invariants: %s", why);
	store_delete_range(s, &all_from, &all_to);
	FUZZ_CHECK(store_count(s, &all_from, &all_to) == 0,
		   "store not empty after delete_range - +");
	while (store_tidy_partitions(s, 64))
		;	/* all empty: back to one partition */
	if (store_check_invariants(s, why, sizeof(why)))
		FUZZ_FAIL("store invariants after merging: %s", why);
	return 0;
}
