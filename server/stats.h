/* SPDX-License-Identifier: MIT */
/*
 * stats.h - the "stats" command.
 *
 * "stats" sums the counters (counters.h) on demand, reading other
 * threads' counters with relaxed loads. "stats reset" does not write other
 * threads' counters: it records their current values as a baseline that
 * later reports subtract.
 *
 * Synchronization: see stats_hook().
 */
#ifndef ANCHORKV_STATS_H
#define ANCHORKV_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct reply;
struct server;

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
