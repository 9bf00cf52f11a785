/* SPDX-License-Identifier: MIT */
/*
 * fuzz_conn.h - what the targets that drive the protocol engine (fuzz_proto.c,
 * fuzz_bin.c) share: the server's part around one connection.
 */
#ifndef ANCHORKV_FUZZ_CONN_H
#define ANCHORKV_FUZZ_CONN_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "fuzz.h"
#include "../unit/growbuf.h"
#include "proto.h"
#include "reply.h"
#include "store.h"

#define FUZZ_T0		1700000000
/* small sizes, so that refusals and evictions happen */
#define FUZZ_ITEM_MAX	1024u
#define FUZZ_MEM	(8u * 1024)

/* The stats hook: a fixed answer for "stats", unknown for the rest. */
static inline bool fuzz_stats(void *arg, const char *args, size_t len,
			      struct reply *out)
{
	(void)arg;
	(void)args;
	if (len)
		return false;
	reply_add(out, "STAT fuzz 1\r\nEND\r\n", 18);
	return true;
}

/* The auth hook (-Y, -S): user "fuzz", password "secret". */
static inline bool fuzz_auth(void *arg, const char *user, size_t ulen,
			     const char *pass, size_t plen)
{
	(void)arg;
	return ulen == 4 && !memcmp(user, "fuzz", 4) && plen == 6 &&
	       !memcmp(pass, "secret", 6);
}

/* A fresh store of FUZZ_MEM bytes, its clock at FUZZ_T0. */
static inline struct store *fuzz_store(void)
{
	struct store_config cfg = {
		.mem_limit = FUZZ_MEM,
		.item_size_max = FUZZ_ITEM_MAX,
		.nshards = 4,
		.hash_bits = 4,
	};
	struct store *s = store_create(&cfg);

	if (!s)
		FUZZ_FAIL("store_create failed");
	store_set_time(s, FUZZ_T0);
	return s;
}

/*
 * One connection of the protocol engine, with its store and what it was
 * sent and wrote: the part of a target's harness every target shares.
 */
struct fuzz_conn {
	struct store *store;
	struct proto_settings set;
	struct proto_ctx ctx;
	struct proto_conn pc;
	struct growbuf in;	/* received, not consumed */
	struct growbuf out;	/* everything written */
	unsigned int max_reqs;	/* -R */
	bool closed;
};

/*
 * A fresh store and the settings every target shares (small items, a
 * range cap of 1000); the target sets its own options in fc->set, then
 * calls fuzz_conn_start().
 */
static inline void fuzz_conn_init(struct fuzz_conn *fc,
				  enum proto_binding binding,
				  unsigned int max_reqs)
{
	memset(fc, 0, sizeof(*fc));
	fc->store = fuzz_store();
	fc->set.binding = binding;
	fc->set.item_size_max = FUZZ_ITEM_MAX;
	fc->set.range_max = 1000;
	fc->max_reqs = max_reqs;
}

/* The connection opens, with the target's hooks (@arg: theirs). */
static inline void fuzz_conn_start(struct fuzz_conn *fc,
				   const struct proto_hooks *hooks, void *arg)
{
	fc->ctx.store = fc->store;
	fc->ctx.settings = &fc->set;
	fc->ctx.hooks = hooks;
	fc->ctx.hook_arg = arg;
	proto_conn_init(&fc->pc, &fc->ctx);
}

/*
 * fuzz_write_out() - write every reply byte queued on @pc to @out, as a
 * socket would take them.
 *
 * Return: whether there were any.
 */
static inline bool fuzz_write_out(struct proto_conn *pc, struct growbuf *out)
{
	struct iovec iov[64];
	bool any = false;
	int n, i;

	while (reply_pending(&pc->out)) {
		size_t total = 0;

		n = reply_iov(&pc->out, iov, 64);
		FUZZ_CHECK(n > 0, "bytes pending but no iovec");
		for (i = 0; i < n; i++) {
			growbuf_add(out, iov[i].iov_base, iov[i].iov_len);
			total += iov[i].iov_len;
		}
		FUZZ_CHECK(total <= reply_pending(&pc->out),
			   "iovecs hold more than is pending");
		reply_consume(&pc->out, total);
		any = true;
	}
	return any;
}

/*
 * fuzz_pump() - run the engine over @in until it stops making progress,
 * as server/conn.c drives it: what it consumed leaves @in, what it queued
 * goes to @out (fuzz_write_out()), and again while either moves.
 *
 * Return: true if the engine closed the connection; @in then holds what
 * it left unconsumed, for the caller to look at and drop.
 */
static inline bool fuzz_pump(struct proto_conn *pc, struct growbuf *in,
			     struct growbuf *out, unsigned int max_reqs)
{
	unsigned int spins = 0;

	for (;;) {
		size_t n = proto_process(pc, in->p, in->len, max_reqs);
		bool wrote;

		FUZZ_CHECK(n <= in->len, "consumed %zu of %zu bytes", n,
			   in->len);
		wrote = fuzz_write_out(pc, out);
		if (n) {
			memmove(in->p, in->p + n, in->len - n);
			in->len -= n;
		}
		if (proto_closed(pc))
			return true;
		if (!n && !wrote)
			return false;
		FUZZ_CHECK(++spins < 1000000, "no end to the progress");
	}
}

/*
 * fuzz_conn_end() - close the connection: release @pc and the worker's
 * pool, check @store's invariants, destroy it (LeakSanitizer then sees
 * anything left).
 */
static inline void fuzz_conn_end(struct proto_conn *pc, struct proto_ctx *ctx,
				 struct store *store)
{
	char why[256];

	proto_conn_release(pc);
	reply_pool_drain(&ctx->pool);
	if (store_check_invariants(store, why, sizeof(why)))
		FUZZ_FAIL("store invariants: %s", why);
	store_destroy(store);
}

/* fuzz_conn_end() of @fc, and its buffers freed. */
static inline void fuzz_conn_fini(struct fuzz_conn *fc)
{
	fuzz_conn_end(&fc->pc, &fc->ctx, fc->store);
	free(fc->in.p);
	free(fc->out.p);
}

#endif /* ANCHORKV_FUZZ_CONN_H */
