/* SPDX-License-Identifier: MIT */
/*
 * proto_internal.h - what the protocol engine (proto.c) and its command
 * families share; not for users of the engine, who include proto.h.
 *
 *   proto.c            the engine: proto_process(), the command line, the
 *                      command table and its dispatch
 *   proto_retrieval.c  get, gets, gat, gats; the VALUE line of a hit
 *   proto_storage.c    set, add, replace, append, prepend, cas; the data
 *                      block reader
 *   proto_keys.c       delete, incr, decr, touch
 *   proto_admin.c      flush_all, verbosity, shutdown, stats, debug
 *   proto_range.c      range, ranges, rrange, rranges, keys, count,
 *                      delete_range
 *   proto_auth.c       the "set <user> <password>" of -Y
 *
 * Synchronization: everything here runs on the connection's worker thread;
 * the store takes its own locks.
 */
#ifndef ANCHORKV_PROTO_INTERNAL_H
#define ANCHORKV_PROTO_INTERNAL_H

#include "proto.h"

#include <string.h>

#include "compiler.h"
#include "item.h"
#include "parse.h"
#include "store.h"

enum get_kind {
	GET_GET,
	GET_GETS,
	GET_GAT,
	GET_GATS,
};

#define STR_AND_LEN(s)	(s), (sizeof(s) - 1)
#define CMD_IS(l, lit)	TOKEN_IS(&(l)->tok[0], lit)

#define PROTO_BAD_FORMAT	"CLIENT_ERROR bad command line format\r\n"

/*
 * Out of memory for a reply: the connection cannot go on. What was queued
 * before is still sent, then the connection closes; nothing more is queued
 * (every queuing helper checks), so that the client sees a cut reply and
 * EOF, never an END after a hole.
 */
static inline void proto_fail(struct proto_conn *pc)
{
	pc->state = PROTO_CLOSED;
}

/*
 * Queues @len bytes, always (an error or a value line). Inline: the length
 * is a constant at every call, so reply_add()'s copy becomes a move or two.
 */
static __attribute__((always_inline)) inline void
proto_out(struct proto_conn *pc, const char *s, size_t len)
{
	if (unlikely(pc->state == PROTO_CLOSED))
		return;
	if (unlikely(reply_add(&pc->out, s, len) < 0))
		proto_fail(pc);
}

/* Queues a reply line unless the command said noreply. */
static __attribute__((always_inline)) inline void
proto_reply(struct proto_conn *pc, const char *s, size_t len)
{
	if (!pc->noreply)
		proto_out(pc, s, len);
}

/* Whether the last token of the line is "noreply" (memcached's rule: any
 * command that takes it looks only there). */
static inline bool line_noreply(const struct parse_line *l)
{
	return l->ntok && TOKEN_IS(&l->tok[l->ntok - 1], "noreply");
}

/* proto.c: "<prefix><n>\r\n", unless noreply. */
void proto_reply_num(struct proto_conn *pc, const char *prefix, size_t plen,
		     uint64_t n);

/* proto_retrieval.c */
void proto_value(struct proto_conn *pc, struct item *it, bool cas);
const char *proto_get_begin(struct proto_conn *pc, int kind, const char *p,
			    const char *end, bool eol);
size_t proto_get_cont(struct proto_conn *pc, const char *buf, size_t len);

/* proto_storage.c */
size_t proto_set_fast(struct proto_conn *pc, const char *buf, size_t len);
void proto_update(struct proto_conn *pc, const struct parse_line *l,
		  enum store_op op);
size_t proto_data(struct proto_conn *pc, const char *buf, size_t len);
size_t proto_swallow(struct proto_conn *pc, size_t len);

/* proto_keys.c */
void proto_delete(struct proto_conn *pc, const struct parse_line *l);
void proto_arith(struct proto_conn *pc, const struct parse_line *l, bool incr);
void proto_touch(struct proto_conn *pc, const struct parse_line *l);

/* proto_admin.c */
void proto_flush_all(struct proto_conn *pc, const struct parse_line *l);
void proto_verbosity(struct proto_conn *pc, const struct parse_line *l);
void proto_shutdown(struct proto_conn *pc, const struct parse_line *l);
void proto_stats(struct proto_conn *pc, const char *args, const char *end);
#ifdef AK_FAULT_INJECTION
void proto_debug(struct proto_conn *pc, const struct parse_line *l);
#endif

/* proto_range.c */
enum range_kind {
	RANGE_VALUES,		/* range, rrange */
	RANGE_VALUES_CAS,	/* ranges, rranges */
	RANGE_KEYS,		/* keys */
};

void proto_range(struct proto_conn *pc, const struct parse_line *l,
		 enum range_kind kind, bool reverse);
void proto_count(struct proto_conn *pc, const struct parse_line *l);
void proto_delete_range(struct proto_conn *pc, const struct parse_line *l);

/* proto_auth.c */
size_t proto_auth_command(struct proto_conn *pc, const char *buf, size_t len);

#endif /* ANCHORKV_PROTO_INTERNAL_H */
