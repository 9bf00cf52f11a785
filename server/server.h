/* SPDX-License-Identifier: MIT */
/*
 * server.h - the daemon's state, owned by main() and passed, never global.
 *
 * The main thread owns the listeners, the signal events, the one-second
 * clock and the accept back-off timer, all on its own event_base. Each
 * worker (worker.h) owns another event_base, a protocol context and the
 * connections handed to it.
 *
 * Synchronization: every field is set up by the main thread before the
 * workers start and read-only for them afterwards, except where a comment
 * says otherwise.
 */
#ifndef ANCHORKV_SERVER_H
#define ANCHORKV_SERVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "auth.h"
#include "saver.h"

struct event;
struct event_base;
struct listener;
struct proto_hooks;
struct store;
struct worker;

struct server {
	struct event_base *base;	/* the main thread's loop */
	struct store *store;
	/* -Y: NULL without it; atomic, since SIGHUP replaces it while the
	 * workers read it; a replaced table stays on auth_retired until exit */
	struct auth_table *auth;
	struct auth_table *auth_retired;	/* main thread */
	const struct proto_hooks *hooks;	/* the engine's calls into us */
	struct worker *workers;
	unsigned int nworkers;
	unsigned int next_worker;	/* main thread: round robin */

	struct listener *listeners;	/* main thread after start */
	unsigned int nlisteners;
	struct event *accept_retry;	/* EMFILE back-off timer */
	uint64_t accept_paused_at_us;	/* main thread: when accept stopped */
	uint64_t accept_warned_at_us;	/* main thread: last EMFILE warning */
	unsigned int accept_pauses;	/* main thread: since that warning */

	struct event *sigterm;
	struct event *sigint;
	struct event *sigusr1;
	struct event *sigusr2;
	struct event *sighup;		/* reloads the auth file */
	struct event *clock;		/* one-second tick */
	struct event *drain;		/* ten a second: pages emptied */
	bool drain_idle;		/* drain stopped until the clock */
	time_t started;			/* process start, unix time */

	pthread_mutex_t stats_lock;	/* guards the workers' stats baselines */
	bool stopping;			/* main thread */
	int stop_signal;		/* main thread: what stopped us */
	bool shutdown_cmd;		/* atomic: "shutdown" was received */
	bool save_on_stop;		/* main thread: write the snapshot */
	struct saver saver;		/* the snapshot, and its stats */
};

#endif /* ANCHORKV_SERVER_H */
