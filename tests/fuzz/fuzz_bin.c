// SPDX-License-Identifier: MIT
/*
 * fuzz_bin.c - the binary protocol engine (protocol/proto_bin.c), fed any
 * bytes on a connection that speaks it (-B binary).
 *
 * The input is a session, the bytes a client sends, then a 4-byte trailer:
 *
 *	[0..1] a split point (little endian, modulo the session length + 1)
 *	[2]    bits 0-1: -R (0: no cap); bits 2-7: piece size - 1 (1..64)
 *	[3]    bit 0: -C (no cas), bit 1: -F (no flush), bit 2: -S (a SASL
 *	       PLAIN login first; user "fuzz", password "secret"), bit 4:
 *	       also run it with one allocation failing (the split point
 *	       modulo 256 says which)
 *
 * The session runs on a fresh store and connection whole, split in two,
 * and in pieces, with a harness that plays the server (as fuzz_proto.c's).
 *
 * Properties checked, from PROTOCOL.md's "Binary protocol":
 *  1. the output is a sequence of whole responses: magic 0x81, data type
 *     0, a status PROTOCOL.md lists, extras and key within the body, the
 *     body all there, and each response's opcode and opaque those of a
 *     request sent;
 *  2. the output does not depend on how the bytes arrive (split and
 *     pieces write what whole writes);
 *  3. the engine never holds more than one request's header, extras and
 *     key unconsumed (24 + 255 + 250 bytes; with -S, or a SASL Auth and
 *     its data, at most 8192 bytes, which it reads whole), and nothing
 *     inside a value;
 *  4. the store's invariants hold after the session, and closing the
 *     connection frees everything (LeakSanitizer).
 * The run with a failing allocation checks 3 and 4, and 1 up to where the
 * engine had to close the connection for want of memory.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "fuzz.h"
#include "fuzz_conn.h"
#include "../unit/growbuf.h"
#include "hash.h"
#include "proto.h"
#include "reply.h"
#include "store.h"

#define TRAILER		4
#define HEAD_MAX	(24u + 255u + 250u)
#define LOGIN_MAX	(24u + 250u + 8192u)	/* -S: an Auth read whole */

struct harness {
	struct fuzz_conn c;
};

static const struct proto_hooks fuzz_hooks = {
	.stats = fuzz_stats,
	.auth = fuzz_auth,
};

static void h_init(struct harness *h, uint8_t opts, unsigned int max_reqs)
{
	fuzz_conn_init(&h->c, PROTO_BIND_BINARY, max_reqs);
	h->c.set.cas_enabled = !(opts & 1);
	h->c.set.flush_enabled = !(opts & 2);
	h->c.set.sasl = h->c.set.auth_enabled = opts & 4;
	fuzz_conn_start(&h->c, &fuzz_hooks, h);
}

static void h_fini(struct harness *h)
{
	fuzz_conn_fini(&h->c);
}

static void h_run(struct harness *h)
{
	if (fuzz_pump(&h->c.pc, &h->c.in, &h->c.out, h->c.max_reqs)) {
		h->c.closed = true;
		h->c.in.len = 0;
		return;
	}
	/* property 3 */
	FUZZ_CHECK(h->c.in.len < (h->c.set.sasl ? LOGIN_MAX : HEAD_MAX),
		   "%zu bytes left unconsumed", h->c.in.len);
	FUZZ_CHECK(h->c.pc.state == PROTO_CMD || h->c.in.len == 0,
		   "%zu bytes left in state %d", h->c.in.len, (int)h->c.pc.state);
}

static void h_feed(struct harness *h, const uint8_t *p, size_t len)
{
	if (h->c.closed || !len)
		return;
	growbuf_add(&h->c.in, p, len);
	h_run(h);
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* Whether the session holds a request header with this opcode and
 * opaque (a response echoes both). */
static bool sent(const uint8_t *data, size_t len, uint8_t op,
		 const uint8_t *opaque)
{
	size_t i;

	for (i = 0; i + 24 <= len; i++)
		if (data[i] == 0x80 && data[i + 1] == op &&
		    !memcmp(data + i + 12, opaque, 4))
			return true;
	return false;
}

/* Property 1 over @out; @cut: the output may end inside a response. */
static void check_output(const struct growbuf *out, const uint8_t *data,
			 size_t len, bool cut)
{
	static const uint16_t statuses[] = {
		0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x20, 0x81, 0x82,
	};
	const uint8_t *p = (const uint8_t *)out->p;
	size_t left = out->len;

	while (left) {
		uint16_t keylen, status;
		uint32_t body;
		bool known = false;
		size_t i;

		if (left < 24) {
			FUZZ_CHECK(cut, "%zu bytes after the last response",
				   left);
			return;
		}
		keylen = (uint16_t)(p[2] << 8 | p[3]);
		status = (uint16_t)(p[6] << 8 | p[7]);
		body = be32(p + 8);
		FUZZ_CHECK(p[0] == 0x81, "magic 0x%02x", p[0]);
		FUZZ_CHECK(p[5] == 0, "data type %u", p[5]);
		for (i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
			known |= statuses[i] == status;
		FUZZ_CHECK(known, "status 0x%04x", status);
		FUZZ_CHECK((uint32_t)keylen + p[4] <= body,
			   "key %u and extras %u over a body of %u", keylen,
			   p[4], body);
		FUZZ_CHECK(sent(data, len, p[1], p + 12),
			   "opcode 0x%02x and its opaque were not sent", p[1]);
		if (left - 24 < body) {
			FUZZ_CHECK(cut, "a response cut short");
			return;
		}
		p += 24 + body;
		left -= 24 + body;
	}
}

static void compare(const char *how, const struct harness *a,
		    const struct harness *b)
{
	FUZZ_CHECK(a->c.out.len == b->c.out.len &&
		   (!a->c.out.len || !memcmp(a->c.out.p, b->c.out.p, a->c.out.len)),
		   "%s: %zu bytes written, whole: %zu", how, b->c.out.len,
		   a->c.out.len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t seed[HASH_SEED_BYTES] = { 1, 2, 3, 4 };
	struct harness whole, split, pieces;
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
	check_output(&whole.c.out, data, len, false);

	h_init(&split, t[3], t[2] & 3);
	h_feed(&split, data, cut);
	h_feed(&split, data + cut, len - cut);
	compare("split", &whole, &split);

	h_init(&pieces, t[3], 0);
	for (off = 0; off < len; off += piece)
		h_feed(&pieces, data + off,
		       len - off < piece ? len - off : piece);
	compare("pieces", &whole, &pieces);

	if (t[3] & 16) {
		struct harness faulty;

		h_init(&faulty, t[3], t[2] & 3);
		ak_alloc_fail_after((long)(cut % 256));
		h_feed(&faulty, data, len);
		ak_alloc_fail_after(-1);
		check_output(&faulty.c.out, data, len, faulty.c.closed);
		h_fini(&faulty);
	}

	h_fini(&pieces);
	h_fini(&split);
	h_fini(&whole);
	return 0;
}
