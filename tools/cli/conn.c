// SPDX-License-Identifier: MIT
/*
 * conn.c - anchorkv-cli's connection to one server (see conn.h).
 */
#include "conn.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void buf_add(struct buf *b, const void *p, size_t len)
{
	if (b->len + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;

		while (cap < b->len + len + 1)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (!b->p) {
			fprintf(stderr, "anchorkv-cli: out of memory\n");
			exit(2);
		}
		b->cap = cap;
	}
	if (len)
		memcpy(b->p + b->len, p, len);
	b->len += len;
	b->p[b->len] = '\0';
}

void buf_adds(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

void buf_free(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

int server_init(struct server *s, const char *hostport)
{
	const char *colon = strrchr(hostport, ':');
	size_t hlen = colon ? (size_t)(colon - hostport) : strlen(hostport);
	const char *port = colon ? colon + 1 : "11211";
	char *end;
	long n;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->weight = 1;
	n = strtol(port, &end, 10);
	if (!hlen || hlen >= sizeof(s->host) || *end || end == port ||
	    n < 1 || n > 65535) {
		snprintf(s->err, sizeof(s->err), "bad server address \"%s\" "
			 "(host:port)", hostport);
		return -1;
	}
	memcpy(s->host, hostport, hlen);
	snprintf(s->port, sizeof(s->port), "%ld", n);
	snprintf(s->addr, sizeof(s->addr), "%s:%s", s->host, s->port);
	/* nutcracker's name of an unnamed server */
	if (n == 11211)
		snprintf(s->name, sizeof(s->name), "%s", s->host);
	else
		snprintf(s->name, sizeof(s->name), "%s", s->addr);
	return 0;
}

static int fail(struct server *s, const char *what, int err)
{
	snprintf(s->err, sizeof(s->err), "%s: %s", what, strerror(err));
	server_close(s);
	return -1;
}

/* Waits until @fd is ready for @events. Return: 0, or -1 (@s->err). */
static int wait_fd(struct server *s, short events, int timeout_ms)
{
	struct pollfd pfd = { .fd = s->fd, .events = events };
	int n;

	do
		n = poll(&pfd, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return fail(s, "poll", errno);
	if (n == 0) {
		snprintf(s->err, sizeof(s->err), "no answer within %d ms",
			 timeout_ms);
		server_close(s);
		return -1;
	}
	return 0;
}

int server_connect(struct server *s, int timeout_ms)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *ai;
	int err = ECONNREFUSED, rc;

	if (s->fd >= 0)
		return 0;
	rc = getaddrinfo(s->host, s->port, &hints, &res);
	if (rc) {
		snprintf(s->err, sizeof(s->err), "cannot resolve %s: %s",
			 s->host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
				SOCK_CLOEXEC, ai->ai_protocol);
		socklen_t len = sizeof(err);

		if (fd < 0) {
			err = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno !=
		    EINPROGRESS) {
			err = errno;
			close(fd);
			continue;
		}
		s->fd = fd;
		if (wait_fd(s, POLLOUT, timeout_ms)) {
			err = ETIMEDOUT;
			continue;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
			close(fd);
			s->fd = -1;
			continue;
		}
		freeaddrinfo(res);
		s->rpos = s->rlen = 0;
		return 0;
	}
	freeaddrinfo(res);
	snprintf(s->err, sizeof(s->err), "cannot connect: %s", strerror(err));
	return -1;
}

void server_close(struct server *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->rpos = s->rlen = 0;
}

int server_send(struct server *s, const void *p, size_t len, int timeout_ms)
{
	const char *q = p;

	if (server_connect(s, timeout_ms))
		return -1;
	while (len) {
		ssize_t n = send(s->fd, q, len, MSG_NOSIGNAL);

		if (n > 0) {
			q += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return fail(s, "send", errno);
		if (wait_fd(s, POLLOUT, timeout_ms))
			return -1;
	}
	return 0;
}

/* Reads what has arrived into rbuf, waiting for some. */
static int fill(struct server *s, int timeout_ms)
{
	ssize_t n;

	if (s->fd < 0) {
		snprintf(s->err, sizeof(s->err), "not connected");
		return -1;
	}
	if (s->rpos && s->rpos == s->rlen)
		s->rpos = s->rlen = 0;
	if (s->rlen + 65536 > s->rcap) {
		if (s->rpos) {
			memmove(s->rbuf, s->rbuf + s->rpos, s->rlen - s->rpos);
			s->rlen -= s->rpos;
			s->rpos = 0;
		}
		if (s->rlen + 65536 > s->rcap) {
			s->rcap = s->rcap ? s->rcap * 2 : 131072;
			s->rbuf = realloc(s->rbuf, s->rcap);
			if (!s->rbuf) {
				fprintf(stderr, "anchorkv-cli: out of memory\n");
				exit(2);
			}
		}
	}
	for (;;) {
		n = recv(s->fd, s->rbuf + s->rlen, s->rcap - s->rlen, 0);
		if (n > 0) {
			s->rlen += (size_t)n;
			return 0;
		}
		if (n == 0) {
			snprintf(s->err, sizeof(s->err), "the server closed "
				 "the connection");
			server_close(s);
			return -1;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return fail(s, "recv", errno);
		if (wait_fd(s, POLLIN, timeout_ms))
			return -1;
	}
}

int server_read_line(struct server *s, struct buf *out, int timeout_ms)
{
	for (;;) {
		char *p = s->rbuf + s->rpos;
		char *nl = s->rlen > s->rpos ?
			   memchr(p, '\n', s->rlen - s->rpos) : NULL;

		if (nl) {
			size_t n = (size_t)(nl - p);

			s->rpos += n + 1;
			if (n && p[n - 1] == '\r')
				n--;
			out->len = 0;
			buf_add(out, p, n);
			return 0;
		}
		if (fill(s, timeout_ms))
			return -1;
	}
}

int server_read_bytes(struct server *s, size_t n, struct buf *out,
		      int timeout_ms)
{
	while (s->rlen - s->rpos < n)
		if (fill(s, timeout_ms))
			return -1;
	buf_add(out, s->rbuf + s->rpos, n);
	s->rpos += n;
	return 0;
}

bool line_is_error(const char *p, size_t n)
{
	return (n >= 5 && !memcmp(p, "ERROR", 5)) ||
	       (n >= 12 && !memcmp(p, "CLIENT_ERROR", 12)) ||
	       (n >= 12 && !memcmp(p, "SERVER_ERROR", 12));
}

static bool line_eq(const struct buf *l, const char *s)
{
	return l->len == strlen(s) && !memcmp(l->p, s, l->len);
}

/* Whether @l is @pfx and at least one byte more. */
static bool line_starts(const struct buf *l, const char *pfx)
{
	size_t n = strlen(pfx);

	return l->len > n && !memcmp(l->p, pfx, n);
}

long reply_field_num(const char *p, size_t n, int field)
{
	const char *end = p + n;
	long v = 0;
	int i;

	for (i = 0; i < field; i++) {
		p = memchr(p, ' ', (size_t)(end - p));
		if (!p)
			return -1;
		p++;
	}
	if (p >= end || *p < '0' || *p > '9')
		return -1;
	while (p < end && *p >= '0' && *p <= '9' && v < (1L << 40))
		v = v * 10 + (*p++ - '0');
	return v;
}

/* Appends one reply line, with "\r\n" (or "\n" for a metadump line). */
static void add_line(struct buf *out, const struct buf *l, bool lf_only)
{
	buf_add(out, l->p, l->len);
	buf_adds(out, lf_only ? "\n" : "\r\n");
}

int server_read_reply(struct server *s, enum reply_shape shape,
		      struct buf *out, int timeout_ms)
{
	struct buf l = { 0 };
	bool first = true;
	int rc = -1;

	if (shape == SHAPE_NONE)
		return 0;
	for (;;) {
		long n = -1;

		if (server_read_line(s, &l, timeout_ms))
			goto out;
		add_line(out, &l, shape == SHAPE_DUMP && l.len > 4 &&
			 !memcmp(l.p, "key=", 4));
		if (shape == SHAPE_LINE || line_is_error(l.p, l.len))
			break;
		if (shape == SHAPE_VALUES && l.len > 6 &&
		    !memcmp(l.p, "VALUE ", 6))
			n = reply_field_num(l.p, l.len, 3);
		if (shape == SHAPE_META && l.len > 3 && !memcmp(l.p, "VA ", 3))
			n = reply_field_num(l.p, l.len, 1);
		if (n >= 0) {
			if (server_read_bytes(s, (size_t)n + 2, out,
					      timeout_ms))
				goto out;
			first = false;
			continue;
		}
		if (shape == SHAPE_META && line_eq(&l, "MN"))
			break;
		if ((shape == SHAPE_VALUES || shape == SHAPE_LIST ||
		     shape == SHAPE_DUMP) && line_eq(&l, "END"))
			break;
		if (shape == SHAPE_DUMP && line_eq(&l, "EN"))
			break;
		/* a one-line answer to a listing command: RESET, OK
		 * (stats detail on), BADCLASS, COUNT ... */
		if (first && shape == SHAPE_LIST &&
		    !line_starts(&l, "STAT ") && !line_starts(&l, "ITEM ") &&
		    !line_starts(&l, "KEY ") && !line_starts(&l, "PREFIX "))
			break;
		if (first && shape == SHAPE_DUMP && !line_eq(&l, "OK"))
			break;
		first = false;
	}
	rc = 0;
out:
	buf_free(&l);
	return rc;
}
