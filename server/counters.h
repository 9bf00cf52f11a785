/* SPDX-License-Identifier: MIT */
/*
 * counters.h - the server's own counters, apart from the "stats" command
 * that reports them (stats.c), so that what counts (listener.c, conn.c)
 * and what reports depend on this header, not on each other.
 *
 * Counters live where they are counted: the protocol engine counts
 * commands in its per-worker struct proto_stats, each worker counts the
 * bytes it moves and the times it yields (struct worker_io_stats), the
 * store counts items, and the process-wide connection counters below are
 * atomics (the one allowed global besides the settings, defined in
 * counters.c).
 *
 * Synchronization: server_stats fields are accessed only with the
 * stats_inc()/stats_dec()/stats_read()/stats_write() atomics; a worker's
 * io counters are written by the worker and read relaxed by others.
 */
#ifndef ANCHORKV_COUNTERS_H
#define ANCHORKV_COUNTERS_H

#include <stdint.h>

struct server_stats {
	uint64_t curr_conns;		/* client connections open */
	uint64_t total_conns;		/* accepted (resettable) */
	uint64_t rejected_conns;	/* refused over -c (resettable) */
	uint64_t listen_disabled_num;	/* accept paused on EMFILE (resettable) */
	uint64_t listen_disabled_us;	/* time spent paused (resettable) */
	uint64_t accepting_conns;	/* 1 while the listeners are enabled */
	uint64_t ssl_handshake_errors;	/* TLS handshakes failed or timed out */
	uint64_t ssl_new_sessions;	/* TLS sessions cached (ssl_session_cache) */
};

extern struct server_stats server_stats;

#define stats_inc(field)	__atomic_fetch_add(&server_stats.field, 1, __ATOMIC_RELAXED)
#define stats_add(field, n)	__atomic_fetch_add(&server_stats.field, (n), __ATOMIC_RELAXED)
#define stats_dec(field)	__atomic_fetch_sub(&server_stats.field, 1, __ATOMIC_RELAXED)
#define stats_read(field)	__atomic_load_n(&server_stats.field, __ATOMIC_RELAXED)
#define stats_write(field, v)	__atomic_store_n(&server_stats.field, (v), __ATOMIC_RELAXED)

/* A worker's own I/O counters; the worker writes, others read relaxed. */
struct worker_io_stats {
	uint64_t bytes_read;
	uint64_t bytes_written;
	uint64_t conn_yields;		/* -R cap reached with input left */
};

#endif /* ANCHORKV_COUNTERS_H */
