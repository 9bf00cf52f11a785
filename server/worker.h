/* SPDX-License-Identifier: MIT */
/*
 * worker.h - the worker threads: one event_base, one protocol context and
 * a set of connections each.
 *
 * The main thread accepts a socket, wraps it in a struct conn
 * (conn_new()), and hands it to the next worker round robin with
 * worker_dispatch(): the conn goes on the worker's queue under its lock
 * and an eventfd wakes the worker, which adopts it into its loop. From
 * then on only that worker touches the connection.
 *
 * Stopping: worker_stop_all() asks every worker (same queue + eventfd) to
 * stop reading, write out the replies already queued for at most
 * WORKER_STOP_TIMEOUT_MS, close its connections and leave its loop, then
 * joins the threads.
 *
 * Synchronization: w->lock guards queue, conns (the list; "stats conns"
 * walks it from other workers) and stop. Everything else is the worker
 * thread's own, except io (stored with WRITE_ONCE) and ctx.stats (the
 * engine's plain increments), which other threads read with relaxed loads,
 * and base_proto/base_io, which srv->stats_lock guards.
 */
#ifndef ANCHORKV_WORKER_H
#define ANCHORKV_WORKER_H

#include <pthread.h>
#include <stdbool.h>

#include "conn.h"
#include "list.h"
#include "proto.h"

#define WORKER_STOP_TIMEOUT_MS	2000

struct event;
struct event_base;
struct server;

struct worker {
	struct server *srv;
	unsigned int id;
	pthread_t thread;
	bool started;
	struct event_base *base;
	int notify_fd;			/* eventfd: queue or stop changed */
	struct event *notify_ev;
	struct event *stop_timer;

	pthread_mutex_t lock;
	struct list_head queue;		/* under lock: conns to adopt */
	struct list_head conns;		/* under lock (writes by owner only) */
	unsigned int nconns;		/* under lock */
	bool stop;			/* under lock: main asked us to stop */

	bool stopping;			/* owner: draining before exit */
	struct proto_ctx ctx;
	struct proto_stats base_proto;	/* stats reset baselines */
	struct worker_io_stats base_io;
	struct conn_owner co;		/* what its connections use of it */
};

/**
 * worker_init_all() - create the workers (not yet running)
 * @srv: the server; srv->store must exist
 *
 * Context: main thread, start-up.
 * Return: 0, or a negative errno (everything created is undone).
 */
int worker_init_all(struct server *srv);

/**
 * worker_start_all() - start the worker threads
 * @srv: the server
 *
 * The threads block SIGTERM and SIGINT, so that the main thread gets them.
 *
 * Context: main thread, start-up.
 * Return: 0, or a negative errno (threads started are stopped again).
 */
int worker_start_all(struct server *srv);

/**
 * worker_dispatch() - hand a new connection to the next worker
 * @srv: the server
 * @c:   from conn_new(); ownership passes to the worker
 *
 * Context: main thread; takes and releases that worker's lock.
 */
void worker_dispatch(struct server *srv, struct conn *c);

/**
 * worker_stop_all() - drain, close and join every worker, free them
 * @srv: the server
 *
 * Context: main thread, after the listeners are closed.
 */
void worker_stop_all(struct server *srv);

/**
 * worker_for_each_conn() - call @fn on each connection of @w
 * @w:   a worker, of any thread
 * @fn:  called with each connection; must not block or take w->lock
 * @arg: passed to @fn
 *
 * For "stats conns": the connection may belong to another thread, so @fn
 * reads it as conn.h allows (relaxed loads of what its owner writes).
 *
 * Context: any thread; takes and releases w->lock.
 */
void worker_for_each_conn(struct worker *w,
			  void (*fn)(const struct conn *c, void *arg),
			  void *arg);

#endif /* ANCHORKV_WORKER_H */
