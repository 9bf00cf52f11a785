/* SPDX-License-Identifier: MIT */
/*
 * stats.h - the server's counters and the "stats" command.
 *
 * Counters live where they are counted: the protocol engine counts
 * commands in its per-worker struct proto_stats, each worker counts the
 * bytes it moves and the times it yields (struct worker_io_stats), the
 * store counts items, and the process-wide connection counters below are
 * atomics (the one allowed global besides the settings). "stats" sums them
 * all on demand, reading other threads' counters with relaxed loads.
 *
 * "stats reset" does not write other threads' counters: it records their
 * current values as a baseline that later reports subtract.
 *
 * Synchronization: server_stats fields are accessed only with the
 * stats_inc()/stats_dec()/stats_read()/stats_write() atomics.
 */
#ifndef ANCHORKV_STATS_H
#define ANCHORKV_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct reply;
struct server;

struct server_stats {
	uint64_t curr_conns;		/* client connections open */
	uint64_t total_conns;		/* accepted (resettable) */
	uint64_t rejected_conns;	/* refused over -c (resettable) */
	uint64_t listen_disabled_num;	/* accept paused on EMFILE (resettable) */
	uint64_t listen_disabled_us;	/* time spent paused (resettable) */
	uint64_t accepting_conns;	/* 1 while the listeners are enabled */
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

/**
 * stats_hook() - the protocol engine's "stats [args]" callback
 * @arg:  the worker running the command (struct worker *)
 * @args: what followed "stats", not NUL terminated
 * @len:  its length
 * @out:  the connection's reply queue
 *
 * Answers "stats", "stats settings", "stats items", "stats slabs",
 * "stats conns", "stats sizes", "stats anchorkv" and "stats reset".
 *
 * Context: a worker thread; takes the server's stats lock and, for
 * "stats conns", each worker's lock in turn; the store takes its own.
 * Return: false for an unknown sub-command (the engine answers ERROR).
 */
bool stats_hook(void *arg, const char *args, size_t len, struct reply *out);

#endif /* ANCHORKV_STATS_H */
