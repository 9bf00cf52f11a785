/* SPDX-License-Identifier: MIT */
/*
 * fuzz_conn.h - what the targets that drive the protocol engine (fuzz_proto.c,
 * fuzz_bin.c) share: the server's part around one connection.
 */
#ifndef ANCHORKV_FUZZ_CONN_H
#define ANCHORKV_FUZZ_CONN_H

#include <stdbool.h>
#include <sys/uio.h>

#include "fuzz.h"
#include "../unit/growbuf.h"
#include "proto.h"
#include "reply.h"
#include "store.h"

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

#endif /* ANCHORKV_FUZZ_CONN_H */
