// SPDX-License-Identifier: MIT
/*
 * listener.c - binding, accepting, and the EMFILE back-off (listener.h).
 */
#include "listener.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "alloc.h"
#include "compiler.h"
#include "conn.h"
#include "conn_tls.h"
#include "log.h"
#include "clock.h"
#include "server.h"
#include "settings.h"
#include "counters.h"
#include "worker.h"

#define ACCEPT_BATCH	64	/* accepts per wake-up, then others' turn */
#define LISTENER_WARN_EVERY_US	(10u * 1000 * 1000)

static const char too_many_conns[] = "ERROR Too many open connections\r\n";

static int listener_add(struct server *srv, int fd, const char *name,
			bool is_unix, bool loopback)
{
	struct listener *l;

	l = ak_realloc(srv->listeners,
		       (srv->nlisteners + 1) * sizeof(*srv->listeners));
	if (!l)
		return -ENOMEM;
	srv->listeners = l;
	l += srv->nlisteners++;
	memset(l, 0, sizeof(*l));
	l->srv = srv;
	l->fd = fd;
	l->is_unix = is_unix;
	l->loopback = loopback;
	snprintf(l->name, sizeof(l->name), "%s", name);
	return 0;
}

static bool addr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		const uint8_t *b = in6->sin6_addr.s6_addr;

		if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
			return true;
		return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && b[12] == 127;
	}
	return sa->sa_family == AF_UNIX;
}

/* Splits one -l entry into host and port text (see settings.c). */
static void split_host_port(const char *tok, size_t len, char *host,
			    size_t hroom, char *port, size_t proom,
			    unsigned int default_port)
{
	const char *colon = NULL;
	size_t colons = 0, i, hlen;

	snprintf(port, proom, "%u", default_port);
	if (tok[0] == '[') {
		const char *close = memchr(tok, ']', len);

		hlen = (size_t)(close - tok - 1);
		snprintf(host, hroom, "%.*s", (int)hlen, tok + 1);
		if (close + 1 < tok + len)
			snprintf(port, proom, "%.*s",
				 (int)(tok + len - close - 2), close + 2);
		return;
	}
	for (i = 0; i < len; i++) {
		if (tok[i] == ':') {
			colons++;
			colon = tok + i;
		}
	}
	if (colons == 1) {
		snprintf(host, hroom, "%.*s", (int)(colon - tok), tok);
		snprintf(port, proom, "%.*s", (int)(tok + len - colon - 1),
			 colon + 1);
	} else {
		snprintf(host, hroom, "%.*s", (int)len, tok);
	}
}

static int listen_one_tcp(struct server *srv, const struct settings *s,
			  const char *tok, size_t len, char *err, size_t errlen)
{
	struct addrinfo hints = { 0 }, *res, *ai;
	char host[256], port[16], name[LISTENER_NAME_MAX];
	int bound = 0, rc, last_errno = 0;
	/* -Z with -l notls:<addr>: this one stays plain, as memcached */
	bool tls = !settings_notls(&tok, &len) && s->tls.enabled;

	split_host_port(tok, len, host, sizeof(host), port, sizeof(port),
			s->port);
	if (!strcmp(port, "0"))
		return 0;	/* -p 0: no TCP on this address */
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "cannot listen on %.*s: %s", (int)len,
			 tok, gai_strerror(rc));
		return -EINVAL;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		int one = 1, fd;

		conn_addr_format(ai->ai_addr, ai->ai_addrlen, name,
				 sizeof(name));
		fd = socket(ai->ai_family,
			    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			last_errno = errno;
			continue;	/* e.g. no IPv6 in this kernel */
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ai->ai_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
				   sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen)) {
			last_errno = errno;
			close(fd);
			/* a name with several addresses may have some that
			 * this host cannot bind (no IPv6): skip those */
			if ((errno == EADDRNOTAVAIL || errno == EAFNOSUPPORT) &&
			    res->ai_next)
				continue;
			snprintf(err, errlen, "cannot listen on %s: %s", name,
				 strerror(last_errno));
			freeaddrinfo(res);
			return -last_errno;
		}
		if (listener_add(srv, fd, name, false,
				 addr_is_loopback(ai->ai_addr))) {
			close(fd);
			freeaddrinfo(res);
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		srv->listeners[srv->nlisteners - 1].tls = tls;
		bound++;
	}
	freeaddrinfo(res);
	if (!bound) {
		snprintf(err, errlen, "cannot listen on %.*s: %s", (int)len,
			 tok, strerror(last_errno ? last_errno : EADDRNOTAVAIL));
		return -(last_errno ? last_errno : EADDRNOTAVAIL);
	}
	return 0;
}

static int listen_unix(struct server *srv, const struct settings *s,
		       char *err, size_t errlen)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char name[LISTENER_NAME_MAX];
	struct stat st;
	int fd, ret;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", s->unixsocket);
	snprintf(name, sizeof(name), "unix:%s", s->unixsocket);
	if (lstat(s->unixsocket, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "cannot listen on %s: the path "
				 "exists and is not a socket", name);
			return -EEXIST;
		}
		unlink(s->unixsocket);	/* a stale socket, as memcached */
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto err_errno;
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)))
		goto err_close;
	if (chmod(s->unixsocket, s->unixsocket_perm))
		goto err_unlink;
	ret = listener_add(srv, fd, name, true, true);
	if (ret) {
		errno = -ret;
		goto err_unlink;
	}
	return 0;

err_unlink:
	ret = errno;
	unlink(s->unixsocket);
	errno = ret;
err_close:
	ret = errno;
	close(fd);
	errno = ret;
err_errno:
	ret = errno;
	snprintf(err, errlen, "cannot listen on %s: %s", name, strerror(ret));
	return -ret;
}

int listener_open_all(struct server *srv, const struct settings *s,
		      char *err, size_t errlen)
{
	const char *p = s->listen;
	int ret;

	if (s->unixsocket[0]) {
		/* as memcached: a unix socket replaces TCP */
		ret = listen_unix(srv, s, err, errlen);
		if (ret)
			goto err_close;
		return 0;
	}
	while (*p) {
		size_t len = strcspn(p, ",");

		if (len) {
			ret = listen_one_tcp(srv, s, p, len, err, errlen);
			if (ret)
				goto err_close;
		}
		p += len;
		if (*p == ',')
			p++;
	}
	if (!srv->nlisteners) {
		snprintf(err, errlen, "nothing to listen on (port 0 and no "
			 "address with a port)");
		ret = -EINVAL;
		goto err_close;
	}
	return 0;

err_close:
	listener_close_all(srv);
	listener_free_all(srv);
	return ret;
}

/* Out of descriptors: stop accepting for a moment, warn now and then. */
static void listener_pause(struct server *srv, const struct listener *l,
			   int err)
{
	struct timeval tv = { 0, LISTENER_RETRY_MS * 1000 };
	uint64_t now = server_now_us();
	unsigned int i;

	srv->accept_pauses++;
	if (!srv->accept_warned_at_us ||
	    now - srv->accept_warned_at_us >= LISTENER_WARN_EVERY_US) {
		log_warn("accept on %s: %s; accepting paused %u times for "
			 "%d ms each since the last warning (see "
			 "listen_disabled_num)", l->name, strerror(err),
			 srv->accept_pauses, LISTENER_RETRY_MS);
		srv->accept_warned_at_us = now;
		srv->accept_pauses = 0;
	}

	for (i = 0; i < srv->nlisteners; i++)
		if (srv->listeners[i].ev)
			event_del(srv->listeners[i].ev);
	stats_write(accepting_conns, 0);
	stats_inc(listen_disabled_num);
	srv->accept_paused_at_us = now;
	evtimer_add(srv->accept_retry, &tv);
}

static void listener_on_retry(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;
	unsigned int i;

	(void)fd;
	(void)what;
	if (srv->stopping)
		return;
	for (i = 0; i < srv->nlisteners; i++)
		if (srv->listeners[i].ev)
			event_add(srv->listeners[i].ev, NULL);
	stats_add(listen_disabled_us,
		  server_now_us() - srv->accept_paused_at_us);
	stats_write(accepting_conns, 1);
}

static void listener_on_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct listener *l = arg;
	struct server *srv = l->srv;
	int i;

	(void)what;
	for (i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_storage ss;
		socklen_t sslen = sizeof(ss);
		struct conn *c;
		int fd, one = 1;

		fd = accept4(lfd, (struct sockaddr *)&ss, &sslen,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			switch (errno) {
			case EAGAIN:
#if EWOULDBLOCK != EAGAIN
			case EWOULDBLOCK:
#endif
				return;
			case EINTR:
			case ECONNABORTED:
			case EPROTO:
				continue;
			case EMFILE:
			case ENFILE:
			case ENOBUFS:
			case ENOMEM:
				listener_pause(srv, l, errno);
				return;
			default:
				log_error("accept on %s: %s", l->name,
					  strerror(errno));
				return;
			}
		}
		if (stats_read(curr_conns) >= settings.maxconns) {
			/* memcached's answer; best effort, then close */
			if (send(fd, too_many_conns, sizeof(too_many_conns) - 1,
				 MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
				log_conn("rejected connection: %s",
					 strerror(errno));
			close(fd);
			stats_inc(rejected_conns);
			log_conn("%s: too many open connections (%u), "
				 "rejected one", l->name, settings.maxconns);
			continue;
		}
		if (!l->is_unix)
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
				   sizeof(one));
		c = conn_new(fd, (struct sockaddr *)&ss, sslen, l->name,
			     l->tls ? &conn_tls : &conn_plain);
		if (!c) {
			log_error("out of memory for a new connection on %s",
				  l->name);
			close(fd);
			continue;
		}
		if (l->is_unix)
			snprintf(c->addr, sizeof(c->addr), "%s", l->name);
		stats_inc(curr_conns);
		stats_inc(total_conns);
		worker_dispatch(srv, c);
	}
}

int listener_start(struct server *srv, int backlog, char *err,
		   size_t errlen)
{
	unsigned int i;

	srv->accept_retry = evtimer_new(srv->base, listener_on_retry, srv);
	if (!srv->accept_retry)
		goto err_nomem;
	for (i = 0; i < srv->nlisteners; i++) {
		struct listener *l = &srv->listeners[i];

		if (listen(l->fd, backlog)) {
			int ret = errno;

			snprintf(err, errlen, "cannot listen on %s: %s",
				 l->name, strerror(ret));
			return -ret;
		}
		l->ev = event_new(srv->base, l->fd, EV_READ | EV_PERSIST,
				  listener_on_accept, l);
		if (!l->ev || event_add(l->ev, NULL))
			goto err_nomem;
	}
	stats_write(accepting_conns, 1);
	return 0;

err_nomem:
	snprintf(err, errlen, "out of memory for the listeners' events");
	return -ENOMEM;
}

void listener_close_all(struct server *srv)
{
	unsigned int i;

	if (srv->accept_retry) {
		event_free(srv->accept_retry);
		srv->accept_retry = NULL;
	}
	for (i = 0; i < srv->nlisteners; i++) {
		struct listener *l = &srv->listeners[i];
		int fd = l->fd;

		if (l->ev) {
			event_free(l->ev);
			l->ev = NULL;
		}
		if (fd < 0)
			continue;
		WRITE_ONCE(l->fd, -1);
		close(fd);
		if (l->is_unix)
			unlink(l->name + strlen("unix:"));
	}
	stats_write(accepting_conns, 0);
}

void listener_free_all(struct server *srv)
{
	ak_free(srv->listeners);
	srv->listeners = NULL;
	srv->nlisteners = 0;
}
