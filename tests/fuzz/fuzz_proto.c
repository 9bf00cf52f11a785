// SPDX-License-Identifier: MIT
/*
 * fuzz_proto.c - the request parser and protocol engine, fed any bytes.
 *
 * The input is a session: the bytes a client sends on one connection,
 * then a 4-byte trailer the fuzzer also chooses:
 *
 *	[0..1] a split point (little endian, modulo the session length + 1)
 *	[2]    bits 0-1: -R (0: no cap); bits 2-7: piece size - 1 (1..64)
 *	[3]    bit 0: -C (no cas), bit 1: -F (no flush_all), bit 2: -A,
 *	       bit 3: -Y (authenticate first; "fuzz secret" is accepted),
 *	       bit 4: also run it with one allocation failing (the split
 *	       point modulo 256 says which)
 *
 * The session runs three times, each on a fresh real store (core/) and a
 * fresh connection, with a harness that plays the server's part (append
 * what arrives, proto_process(), write out every queued reply, drop the
 * consumed bytes, call again while that makes progress):
 *
 *	whole   all bytes arrive at once
 *	split   in two reads, cut at the split point, with the -R cap
 *	pieces  in reads of the piece size
 *
 * Properties checked:
 *  1. every reply is well formed: only the lines PROTOCOL.md lists, each
 *     ending "\r\n"; a VALUE line has a valid key and decimal numbers and
 *     is followed by exactly <bytes> bytes and "\r\n", and so is a VA
 *     line (mg); KEY lines of one
 *     answer come in strictly ascending keyspace order;
 *  2. the output does not depend on how the bytes arrive: split and pieces
 *     write what whole writes, with the two exceptions PROTOCOL.md states:
 *     a line still without newline after 2048 bytes closes the connection
 *     (then the output is a prefix of whole's), and VALUE lines of a
 *     streamed get may go out before that get's bad key (so a run of
 *     VALUE blocks right before "CLIENT_ERROR bad command line format" is
 *     dropped before comparing);
 *  3. the engine never needs more buffered input than its bound: when it
 *     stops making progress, what remains is an unfinished line of at most
 *     PROTO_LINE_MAX bytes (at most KEY_MAX_LENGTH inside a streamed get;
 *     before authentication, a set line and at most AUTH_DATA_MAX + 1
 *     bytes of its block), and it never consumes more than it was given;
 *  4. the store's invariants hold after the session, and closing the
 *     connection releases everything (LeakSanitizer).
 *
 * The run with a failing allocation (core/alloc.h's injection) checks 1,
 * 3 and 4 only; its output may end inside an answer when the engine had to
 * close the connection for want of memory.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "base64.h"
#include "fuzz.h"
#include "fuzz_conn.h"
#include "../unit/growbuf.h"
#include "hash.h"
#include "item.h"
#include "proto.h"
#include "reply.h"
#include "store.h"

#define TRAILER		4
/* PROTOCOL.md: an authentication block longer than this closes */
#define AUTH_DATA_MAX	8192u

struct harness {
	struct fuzz_conn c;
	bool closed_long;	/* closed on a line over PROTO_LINE_MAX */
};

static void fuzz_shutdown(void *arg, bool graceful)
{
	(void)arg;
	(void)graceful;
}

static const struct proto_hooks fuzz_hooks = {
	.stats = fuzz_stats,
	.shutdown = fuzz_shutdown,
	.auth = fuzz_auth,
};

static void h_init(struct harness *h, uint8_t opts, unsigned int max_reqs)
{
	/* ascii: fuzz_bin.c has the other */
	fuzz_conn_init(&h->c, PROTO_BIND_ASCII, max_reqs);
	h->closed_long = false;
	h->c.set.cas_enabled = !(opts & 1);
	h->c.set.flush_enabled = !(opts & 2);
	h->c.set.shutdown_enabled = opts & 4;
	h->c.set.auth_enabled = opts & 8;
	fuzz_conn_start(&h->c, &fuzz_hooks, h);
}

static void h_fini(struct harness *h)
{
	fuzz_conn_fini(&h->c);
}

/* Runs the engine over what is buffered until it stops making progress. */
static void h_run(struct harness *h)
{
	const char *nl;

	if (fuzz_pump(&h->c.pc, &h->c.in, &h->c.out, h->c.max_reqs)) {
		/* what is left is an unfinished line over the limit */
		h->c.closed = true;
		h->closed_long = h->c.in.len > PROTO_LINE_MAX &&
				 !memchr(h->c.in.p, '\n', h->c.in.len);
		h->c.in.len = 0;
		return;
	}
	nl = h->c.in.len ? memchr(h->c.in.p, '\n', h->c.in.len) : NULL;
	if (!h->c.pc.authed && nl) {
		/* an authenticating set waits for its whole block */
		FUZZ_CHECK(h->c.in.len - (size_t)(nl + 1 - h->c.in.p) <=
			   AUTH_DATA_MAX + 1,
			   "%zu bytes left after an auth line", h->c.in.len);
		return;
	}
	FUZZ_CHECK(!nl || h->c.pc.state != PROTO_CMD,
		   "a complete line left unconsumed");
	FUZZ_CHECK(h->c.in.len <= PROTO_LINE_MAX,
		   "%zu bytes left unconsumed (state %d)", h->c.in.len,
		   (int)h->c.pc.state);
	FUZZ_CHECK(h->c.pc.state != PROTO_GET_CONT ||
		   h->c.in.len <= KEY_MAX_LENGTH,
		   "%zu bytes left inside a streamed get", h->c.in.len);
	FUZZ_CHECK(h->c.pc.state == PROTO_CMD || h->c.pc.state == PROTO_GET_CONT ||
		   h->c.in.len == 0,
		   "%zu bytes left while reading a data block", h->c.in.len);
}

static void h_feed(struct harness *h, const uint8_t *p, size_t len)
{
	if (h->c.closed || !len)
		return;
	growbuf_add(&h->c.in, p, len);
	h_run(h);
}

/* ------------------------------------------------------------------ */
/* the replies                                                          */

static const char *const fixed_lines[] = {
	"STORED", "NOT_STORED", "EXISTS", "NOT_FOUND", "DELETED", "TOUCHED",
	"OK", "END", "ERROR", ("VERSION " PROTO_VERSION),
	"ERROR: shutdown not enabled",
	"STAT fuzz 1",
	"CLIENT_ERROR bad command line format",
	"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]",
	"CLIENT_ERROR bad data chunk",
	"CLIENT_ERROR invalid numeric delta argument",
	"CLIENT_ERROR cannot increment or decrement non-numeric value",
	"CLIENT_ERROR invalid exptime argument",
	"CLIENT_ERROR flush_all not allowed",
	"CLIENT_ERROR invalid shutdown mode",
	"CLIENT_ERROR bad range",
	"SERVER_ERROR object too large for cache",
	"SERVER_ERROR out of memory storing object",
	"SERVER_ERROR out of memory",
	"CLIENT_ERROR unauthenticated",
	"CLIENT_ERROR authentication failure",
	"CLIENT_ERROR bad authentication token format",
	"CLIENT_ERROR bad command line termination",
	"MN", "EN", "HD", "NS", "EX", "NF",
	"CLIENT_ERROR invalid mode for ms M token",
	"CLIENT_ERROR invalid mode for ma M token",
	"CLIENT_ERROR invalid or duplicate flag",
	"SERVER_ERROR Out of memory allocating new item",
	"CLIENT_ERROR options flags are too long",
	"CLIENT_ERROR duplicate flag",
	"CLIENT_ERROR invalid flag",
	"CLIENT_ERROR error decoding key",
	"CLIENT_ERROR bad token in command line format",
	"CLIENT_ERROR invalid numeric initial value",
	"CLIENT_ERROR invalid numeric delta value",
	"CLIENT_ERROR opaque token too long",
	"BADCLASS invalid class id",
	"CLIENT_ERROR bad command line",
	"CLIENT_ERROR Illegal slab id",
	"MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m",
	"MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes",
	"MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust",
	/* the harness has no snapshot file and no TLS */
	"SERVER_ERROR no snapshot file (-e, snapshot_file)",
	"Error TLS not enabled",
};

static bool line_is(const char *p, size_t n, const char *s)
{
	return strlen(s) == n && !memcmp(p, s, n);
}

/* A canonical unsigned decimal of at most @max_digits digits. */
static bool is_decimal(const char *p, size_t n, size_t max_digits)
{
	size_t i;

	if (n == 0 || n > max_digits || (n > 1 && p[0] == '0'))
		return false;
	for (i = 0; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return false;
	return true;
}

static bool is_key(const char *k, size_t n)
{
	size_t i;

	if (n == 0 || n > KEY_MAX_LENGTH)
		return false;
	for (i = 0; i < n; i++)
		if (k[i] == ' ' || k[i] == '\0')
			return false;
	return true;
}

struct span {
	const char *p;
	size_t len;
};

/* Splits [@p, @end) on single spaces into at most @max fields. */
static unsigned int fields(const char *p, const char *end,
			   struct span *f, unsigned int max)
{
	unsigned int n = 0;

	while (n < max) {
		const char *s = p;

		while (p < end && *p != ' ')
			p++;
		f[n].p = s;
		f[n].len = (size_t)(p - s);
		n++;
		if (p == end)
			return n;
		p++;
	}
	return max + 1;		/* too many */
}

/* "VALUE <key> <flags> <bytes>[ <cas>]": the bytes, or -1 if malformed. */
static long long value_line(const char *p, size_t n)
{
	struct span f[5];
	unsigned int nf;
	unsigned long long v;

	if (n < 6 || memcmp(p, "VALUE ", 6))
		return -1;
	nf = fields(p + 6, p + n, f, 5);
	/* a range reply lists a key stored as base64 so, "b" last */
	if (nf >= 4 && f[nf - 1].len == 1 && f[nf - 1].p[0] == 'b')
		nf--;
	if (nf != 3 && nf != 4)
		return -1;
	if (!is_key(f[0].p, f[0].len) || !is_decimal(f[1].p, f[1].len, 10) ||
	    !is_decimal(f[2].p, f[2].len, 10) ||
	    (nf == 4 && !is_decimal(f[3].p, f[3].len, 20)))
		return -1;
	v = strtoull(f[1].p, NULL, 10);
	if (v > UINT32_MAX)
		return -1;
	v = strtoull(f[2].p, NULL, 10);
	if (v > FUZZ_ITEM_MAX)
		return -1;
	return (long long)v;
}

/* "VA <bytes>[ <flag>*]" (mg): the bytes, or -1 if not such a line. */
static long long va_line(const char *p, size_t n)
{
	const char *num = p + 3, *e = p + n, *sp;
	unsigned long long v;

	if (n < 4 || memcmp(p, "VA ", 3))
		return -1;
	sp = memchr(num, ' ', (size_t)(e - num));
	if (!sp)
		sp = e;
	if (!is_decimal(num, (size_t)(sp - num), 10))
		return -1;
	v = strtoull(num, NULL, 10);
	return v > FUZZ_ITEM_MAX ? -1 : (long long)v;
}

/* A meta reply line with flags: "HD ...", "EN ...", "NS ...", "EX ...",
 * "NF ...", "ME <key> ...". */
static bool meta_line(const char *p, size_t n)
{
	static const char *const codes[] = { "HD ", "EN ", "NS ", "EX ",
					     "NF ", "ME " };
	unsigned int i;

	for (i = 0; n > 3 && i < sizeof(codes) / sizeof(codes[0]); i++)
		if (!memcmp(p, codes[i], 3))
			return true;
	return false;
}

/*
 * Checks the well-formedness of @out (property 1) and writes to @norm the
 * output with every run of VALUE blocks that directly precedes
 * "CLIENT_ERROR bad command line format" taken out (property 2).
 * @cut_ok: the output may stop after a VALUE line (the connection was
 * closed for want of memory).
 */
static void check_output(const struct growbuf *out, struct growbuf *norm,
			 bool cut_ok)
{
	const char *p = out->p, *end = p ? p + out->len : p;
	const char *last_key = NULL;
	size_t last_nkey = 0, run_start = 0;
	bool in_run = false;
	unsigned int i;

	if (!out->len)
		return;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n;
		long long vbytes;
		bool ok = false;

		/* a metadump line ends " \n", as memcached's */
		if (nl && nl - p > 6 && !memcmp(p, "key=", 4) &&
		    nl[-1] == ' ' && nl[-2] != '\r') {
			growbuf_add(norm, p, (size_t)(nl + 1 - p));
			p = nl + 1;
			last_key = NULL;
			in_run = false;
			continue;
		}
		FUZZ_CHECK(nl && nl > p && nl[-1] == '\r',
			   "reply line without \\r\\n at byte %zu",
			   (size_t)(p - out->p));
		n = (size_t)(nl - 1 - p);
		vbytes = value_line(p, n);
		if (vbytes < 0)
			vbytes = va_line(p, n);
		if (vbytes >= 0) {
			const char *blk = nl + 1;

			if (cut_ok && (size_t)(end - blk) < (size_t)vbytes + 2)
				return;
			FUZZ_CHECK((size_t)(end - blk) >= (size_t)vbytes + 2 &&
				   blk[vbytes] == '\r' &&
				   blk[vbytes + 1] == '\n',
				   "VALUE block not %lld bytes + \\r\\n",
				   vbytes);
			if (!in_run) {
				run_start = norm->len;
				in_run = true;
			}
			growbuf_add(norm, p, (size_t)(blk + vbytes + 2 - p));
			p = blk + vbytes + 2;
			last_key = NULL;
			continue;
		}
		if (line_is(p, n, "CLIENT_ERROR bad command line format") &&
		    in_run)
			norm->len = run_start;
		in_run = false;
		if (n > 4 && !memcmp(p, "KEY ", 4)) {
			static char keys[2][KEY_MAX_LENGTH];
			static unsigned int which;
			const char *k = p + 4;
			size_t nk = n - 4;

			/* "KEY <base64> b": a key stored as base64 */
			if (nk > 2 && k[nk - 2] == ' ' && k[nk - 1] == 'b') {
				FUZZ_CHECK(nk - 2 <= B64_ENCODED_LEN(KEY_MAX_LENGTH),
					   "a KEY line's base64 too long");
				which ^= 1;
				nk = b64_decode(k, nk - 2,
						(unsigned char *)keys[which]);
				k = keys[which];
				FUZZ_CHECK(nk, "a KEY line's base64 is not");
			} else {
				FUZZ_CHECK(is_key(k, nk), "bad key in KEY line");
			}
			FUZZ_CHECK(!last_key || fuzz_key_cmp(last_key,
							     last_nkey, k,
							     nk) < 0,
				   "KEY lines out of keyspace order");
			last_key = k;
			last_nkey = nk;
			growbuf_add(norm, p, n + 2);
			p = nl + 1;
			continue;
		}
		last_key = NULL;
		for (i = 0; i < sizeof(fixed_lines) / sizeof(fixed_lines[0]);
		     i++)
			if (line_is(p, n, fixed_lines[i]))
				ok = true;
		if (is_decimal(p, n, 20))
			ok = true;		/* incr/decr */
		if (n > 6 && !memcmp(p, "COUNT ", 6) &&
		    is_decimal(p + 6, n - 6, 20))
			ok = true;
		if (n > 8 && !memcmp(p, "DELETED ", 8) &&
		    is_decimal(p + 8, n - 8, 20))
			ok = true;
		if (meta_line(p, n))
			ok = true;
		/* the lines of mgdump and stats cachedump */
		if ((n > 3 && !memcmp(p, "mg ", 3)) ||
		    (n > 5 && !memcmp(p, "ITEM ", 5)))
			ok = true;
		FUZZ_CHECK(ok, "unexpected reply line \"%.*s\"",
			   (int)(n > 200 ? 200 : n), p);
		growbuf_add(norm, p, n + 2);
		p = nl + 1;
	}
}

/* Property 2 between the whole run and another way of feeding. */
static void compare(const char *how, const struct harness *whole,
		    const struct growbuf *wnorm, const struct harness *other)
{
	struct growbuf onorm = { 0 };

	check_output(&other->c.out, &onorm, false);
	if (other->closed_long) {
		/* closed early: what it wrote, whole wrote first */
		FUZZ_CHECK(other->c.out.len <= whole->c.out.len &&
			   (!other->c.out.len ||
			    !memcmp(other->c.out.p, whole->c.out.p,
				    other->c.out.len)),
			   "%s: output before the long line differs", how);
	} else {
		FUZZ_CHECK(onorm.len == wnorm->len &&
			   (!onorm.len ||
			    !memcmp(onorm.p, wnorm->p, onorm.len)),
			   "%s: output differs from one piece (%zu vs %zu "
			   "bytes)", how, onorm.len, wnorm->len);
		FUZZ_CHECK(other->c.closed == whole->c.closed,
			   "%s: closed %d, in one piece %d", how,
			   other->c.closed, whole->c.closed);
	}
	free(onorm.p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t seed[HASH_SEED_BYTES] = { 1, 2, 3, 4 };
	struct harness whole, split, pieces;
	struct growbuf wnorm = { 0 };
	uint8_t t[TRAILER] = { 0 };
	size_t len = size, cut, piece, off;

	if (size >= TRAILER) {
		len = size - TRAILER;
		memcpy(t, data + len, TRAILER);
	}
	hash_set_seed(seed);
	cut = ((size_t)t[0] | (size_t)t[1] << 8) % (len + 1);
	piece = (size_t)(t[2] >> 2) + 1;

	h_init(&whole, t[3], 0);
	h_feed(&whole, data, len);
	check_output(&whole.c.out, &wnorm, false);
	/* to read what a session gets */
	if (getenv("FUZZ_PRINT") && whole.c.out.len)
		fwrite(whole.c.out.p, 1, whole.c.out.len, stdout);

	h_init(&split, t[3], t[2] & 3);
	h_feed(&split, data, cut);
	h_feed(&split, data + cut, len - cut);
	compare("split", &whole, &wnorm, &split);

	h_init(&pieces, t[3], 0);
	for (off = 0; off < len; off += piece)
		h_feed(&pieces, data + off,
		       len - off < piece ? len - off : piece);
	compare("pieces", &whole, &wnorm, &pieces);

	if (t[3] & 16) {
		struct harness faulty;
		struct growbuf fnorm = { 0 };

		h_init(&faulty, t[3], t[2] & 3);
		ak_alloc_fail_after((long)(cut % 256));
		h_feed(&faulty, data, len);
		ak_alloc_fail_after(-1);
		check_output(&faulty.c.out, &fnorm, faulty.c.closed);
		if (getenv("FUZZ_PRINT")) {
			printf("--- with allocation %zu failing:\n", cut % 256);
			if (faulty.c.out.len)
				fwrite(faulty.c.out.p, 1, faulty.c.out.len, stdout);
		}
		free(fnorm.p);
		h_fini(&faulty);
	}

	free(wnorm.p);
	h_fini(&pieces);
	h_fini(&split);
	h_fini(&whole);
	return 0;
}
