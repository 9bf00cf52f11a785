// SPDX-License-Identifier: MIT
/*
 * worker.c - worker threads, the hand-over queue, and stopping.
 */
#include "worker.h"

#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "alloc.h"
#include "compiler.h"
#include "conn.h"
#include "log.h"
#include "radix_tree.h"
#include "reply.h"
#include "server.h"
#include "settings.h"

static void worker_notify(struct worker *w)
{
	uint64_t one = 1;

	/* cannot fail short of the counter reaching 2^64 - 1 */
	if (write(w->notify_fd, &one, sizeof(one)) < 0)
		log_error("worker %u: cannot wake it: %s", w->id,
			  strerror(errno));
}

/* A connection closed (conn_close()): off the list, and maybe the end. */
static void worker_conn_gone(struct conn_owner *o, struct conn *c)
{
	struct worker *w = container_of(o, struct worker, co);

	pthread_mutex_lock(&w->lock);
	list_del(&c->node);
	w->nconns--;
	pthread_mutex_unlock(&w->lock);
	if (w->stopping && list_empty(&w->conns))
		event_base_loopbreak(w->base);
}

/* A handed-over connection joins the list, then runs on the loop. */
static void worker_adopt(struct worker *w, struct conn *c)
{
	pthread_mutex_lock(&w->lock);
	list_add_tail(&c->node, &w->conns);
	w->nconns++;
	pthread_mutex_unlock(&w->lock);
	conn_adopt(&w->co, c);
}

void worker_for_each_conn(struct worker *w,
			  void (*fn)(const struct conn *c, void *arg),
			  void *arg)
{
	const struct conn *c;

	pthread_mutex_lock(&w->lock);
	list_for_each_entry(c, &w->conns, node)
		fn(c, arg);
	pthread_mutex_unlock(&w->lock);
}

static void worker_begin_stop(struct worker *w)
{
	struct conn *c, *tmp;
	struct timeval tv = {
		.tv_sec = WORKER_STOP_TIMEOUT_MS / 1000,
		.tv_usec = (WORKER_STOP_TIMEOUT_MS % 1000) * 1000,
	};

	w->stopping = true;
	list_for_each_entry_safe(c, tmp, &w->conns, node)
		conn_stop(c);
	if (list_empty(&w->conns))
		event_base_loopbreak(w->base);
	else
		evtimer_add(w->stop_timer, &tv);
}

static void worker_on_stop_timer(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct conn *c, *tmp;

	(void)fd;
	(void)what;
	log_warn("worker %u: closing %u connections whose clients did not "
		 "read their replies within %u ms", w->id, w->nconns,
		 WORKER_STOP_TIMEOUT_MS);
	list_for_each_entry_safe(c, tmp, &w->conns, node)
		conn_close(c);
	event_base_loopbreak(w->base);
}

static void worker_on_notify(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct conn *c, *tmp;
	LIST_HEAD(fresh);
	uint64_t count;
	bool stop;

	(void)what;
	if (read(fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		log_error("worker %u: eventfd read: %s", w->id,
			  strerror(errno));
	pthread_mutex_lock(&w->lock);
	list_splice_tail_init(&w->queue, &fresh);
	stop = w->stop;
	pthread_mutex_unlock(&w->lock);

	list_for_each_entry_safe(c, tmp, &fresh, node) {
		list_del_init(&c->node);
		if (stop)
			conn_discard(c);
		else
			worker_adopt(w, c);
	}
	if (stop && !w->stopping)
		worker_begin_stop(w);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct conn *c, *tmp;
	LIST_HEAD(left);

	event_base_dispatch(w->base);

	/* the loop ended: nothing may outlive the thread */
	list_for_each_entry_safe(c, tmp, &w->conns, node)
		conn_close(c);
	pthread_mutex_lock(&w->lock);
	list_splice_tail_init(&w->queue, &left);
	pthread_mutex_unlock(&w->lock);
	list_for_each_entry_safe(c, tmp, &left, node)
		conn_discard(c);
	radix_tree_preload_drain();
	return NULL;
}

static void worker_destroy(struct worker *w)
{
	if (w->notify_ev)
		event_free(w->notify_ev);
	if (w->stop_timer)
		event_free(w->stop_timer);
	if (w->notify_fd >= 0)
		close(w->notify_fd);
	if (w->base)
		event_base_free(w->base);
	conn_owner_release(&w->co);
	reply_pool_drain(&w->ctx.pool);
	pthread_mutex_destroy(&w->lock);
}

static int worker_init(struct server *srv, struct worker *w, unsigned int id)
{
	w->srv = srv;
	w->id = id;
	w->notify_fd = -1;
	pthread_mutex_init(&w->lock, NULL);
	INIT_LIST_HEAD(&w->queue);
	INIT_LIST_HEAD(&w->conns);
	w->ctx.store = srv->store;
	w->ctx.settings = &settings.proto;
	w->ctx.hooks = srv->hooks;
	w->ctx.hook_arg = w;

	w->base = event_base_new();
	if (!w->base)
		return -ENOMEM;
	w->notify_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->notify_fd < 0)
		return -errno;
	w->notify_ev = event_new(w->base, w->notify_fd, EV_READ | EV_PERSIST,
				 worker_on_notify, w);
	w->stop_timer = evtimer_new(w->base, worker_on_stop_timer, w);
	if (!w->notify_ev || !w->stop_timer)
		return -ENOMEM;
	if (event_add(w->notify_ev, NULL))
		return -ENOMEM;
	w->co.base = w->base;
	w->co.ctx = &w->ctx;
	w->co.store = srv->store;
	w->co.id = id;
	w->co.conn_gone = worker_conn_gone;
	return 0;
}

int worker_init_all(struct server *srv)
{
	unsigned int i;
	int err;

	srv->nworkers = settings.threads;
	srv->workers = ak_calloc(srv->nworkers, sizeof(*srv->workers));
	if (!srv->workers)
		return -ENOMEM;
	for (i = 0; i < srv->nworkers; i++) {
		err = worker_init(srv, &srv->workers[i], i);
		if (err)
			goto err_destroy;
	}
	return 0;

err_destroy:
	do
		worker_destroy(&srv->workers[i]);
	while (i-- > 0);
	ak_free(srv->workers);
	srv->workers = NULL;
	srv->nworkers = 0;
	return err;
}

int worker_start_all(struct server *srv)
{
	sigset_t block, old;
	unsigned int i;
	int err = 0;

	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGUSR2);
	sigaddset(&block, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	for (i = 0; i < srv->nworkers; i++) {
		struct worker *w = &srv->workers[i];

		err = -pthread_create(&w->thread, NULL, worker_main, w);
		if (err)
			break;
		w->started = true;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

void worker_dispatch(struct server *srv, struct conn *c)
{
	struct worker *w = &srv->workers[srv->next_worker];

	srv->next_worker = (srv->next_worker + 1) % srv->nworkers;
	pthread_mutex_lock(&w->lock);
	if (w->stop) {
		pthread_mutex_unlock(&w->lock);
		conn_discard(c);
		return;
	}
	list_add_tail(&c->node, &w->queue);
	pthread_mutex_unlock(&w->lock);
	worker_notify(w);
}

void worker_stop_all(struct server *srv)
{
	unsigned int i;

	if (!srv->workers)
		return;
	for (i = 0; i < srv->nworkers; i++) {
		struct worker *w = &srv->workers[i];

		pthread_mutex_lock(&w->lock);
		w->stop = true;
		pthread_mutex_unlock(&w->lock);
		if (w->started)
			worker_notify(w);
	}
	for (i = 0; i < srv->nworkers; i++) {
		struct worker *w = &srv->workers[i];

		if (w->started)
			pthread_join(w->thread, NULL);
		worker_destroy(w);
	}
	ak_free(srv->workers);
	srv->workers = NULL;
	srv->nworkers = 0;
}
