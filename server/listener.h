/* SPDX-License-Identifier: MIT */
/*
 * listener.h - the listening sockets and accept.
 *
 * listener_open_all() binds every socket before the process daemonizes or
 * drops privileges, so that a bind error reaches the terminal and the exit
 * status. listener_start(), once the workers run, listens on them and puts
 * them on the main event_base: a client that can connect is served at
 * once (not queued in the backlog while a snapshot loads), and a port that
 * answers means the server is ready. Each
 * accepted socket becomes a struct conn handed to a worker round robin;
 * over -c connections the client gets memcached's
 * "ERROR Too many open connections" and is closed. When accept() fails for
 * lack of file descriptors (EMFILE, ENFILE), accepting pauses for
 * LISTENER_RETRY_MS (listen_disabled_num counts it) and resumes: the
 * server never exits for it.
 *
 * Synchronization: main thread only, except that "stats conns" reads the
 * immutable fd and name of each listener from worker threads.
 */
#ifndef ANCHORKV_LISTENER_H
#define ANCHORKV_LISTENER_H

#include <stdbool.h>
#include <stddef.h>

struct event;
struct server;
struct settings;

#define LISTENER_RETRY_MS	50
#define LISTENER_NAME_MAX	160

struct listener {
	struct server *srv;
	int fd;
	bool is_unix;
	bool loopback;			/* only local clients can reach it */
	bool tls;			/* -Z, and not notls: */
	struct event *ev;
	char name[LISTENER_NAME_MAX];	/* "tcp:127.0.0.1:11211", "unix:/p" */
};

/**
 * listener_open_all() - create and bind every socket (no listen yet)
 * @srv:    the server; receives srv->listeners
 * @s:      the settings (listen, port, unixsocket...)
 * @err:    receives the reason on failure
 * @errlen: room in @err
 *
 * Context: main thread, start-up; allocates.
 * Return: 0, or a negative errno (nothing is left open).
 */
int listener_open_all(struct server *srv, const struct settings *s,
		      char *err, size_t errlen);

/**
 * listener_start() - listen, and accept on the main event_base
 * @srv:     the server, with srv->base and its workers running
 * @backlog: listen(2)'s backlog (-b)
 * @err:     receives the reason on failure
 * @errlen:  room in @err
 *
 * Context: main thread, start-up.
 * Return: 0, -ENOMEM, or listen(2)'s negative errno (another process
 * bound the same port and listened first).
 */
int listener_start(struct server *srv, int backlog, char *err,
		   size_t errlen);

/**
 * listener_close_all() - stop accepting, close, remove the unix socket
 * @srv: the server
 *
 * Context: main thread; idempotent. The array stays allocated (workers
 * may still print it in "stats conns") until listener_free_all().
 */
void listener_close_all(struct server *srv);

/**
 * listener_free_all() - free the listener array
 * @srv: the server, after the workers are joined
 *
 * Context: main thread.
 */
void listener_free_all(struct server *srv);

#endif /* ANCHORKV_LISTENER_H */
