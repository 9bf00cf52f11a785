// SPDX-License-Identifier: MIT
/*
 * conn.c - reading requests, writing replies, closing (see conn.h).
 *
 * Life of a connection on its worker:
 *
 *	readable ---> conn_fill() ---> conn_run()
 *	writable (or a yield) ---------^   |
 *	                                   +- proto_process(), at most -R
 *	                                   +- conn_flush(): writev until EAGAIN
 *	                                   +- conn_update_events()
 *
 * conn_update_events() decides what to wait for: readable unless the
 * client has stopped sending, the connection is closing, or more than
 * REPLY_HIGH_WATER bytes of replies wait; writable while replies wait, and
 * also after a yield (-R requests run and input left): the socket is
 * normally writable at once, so the connection runs again on the loop's
 * next turn, after every other ready socket of the worker has had its own
 * (memcached's conn_yields does the same).
 *
 * The bytes move through the connection's transport (c->tr: plain here,
 * TLS in conn_tls.c, chosen by the listener): conn_fill() and
 * conn_flush() call it, and what its calls leave (a handshake not done, a
 * read that waits for writable, a write that waits for readable, input it
 * holds) adds to what conn_update_events() waits for.
 *
 * A connection whose client has shut its sending side (EOF) still gets the
 * replies to every complete request it sent, then is closed. A closing
 * connection (quit, protocol error, server stop) writes what is queued,
 * then closes. Either waits at most CONN_LINGER_SECS (or idle_timeout) for
 * a client that does not read.
 */
#include "conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "alloc.h"
#include "compiler.h"
#include "log.h"
#include "reply.h"
#include "settings.h"
#include "store.h"

void conn_addr_format(const struct sockaddr *sa, socklen_t salen, char *out,
		      size_t room)
{
	char host[INET6_ADDRSTRLEN];

	switch (sa->sa_family) {
	case AF_INET: {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(out, room, "tcp:%s:%u", host, ntohs(in->sin_port));
		break;
	}
	case AF_INET6: {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(out, room, "tcp6:[%s]:%u", host,
			 ntohs(in6->sin6_port));
		break;
	}
	case AF_UNIX: {
		const struct sockaddr_un *un = (const struct sockaddr_un *)sa;
		size_t off = offsetof(struct sockaddr_un, sun_path);
		size_t n = salen > off ? salen - off : 0;

		n = strnlen(un->sun_path, n < sizeof(un->sun_path) ?
				n : sizeof(un->sun_path));
		snprintf(out, room, "unix:%.*s", (int)n, un->sun_path);
		break;
	}
	default:
		snprintf(out, room, "unknown:%d", sa->sa_family);
	}
}

struct conn *conn_new(int fd, const struct sockaddr *sa, socklen_t salen,
		      const char *listen_addr, const struct conn_transport *tr)
{
	struct conn *c = ak_calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->rsize = CONN_RBUF_SIZE;	/* the buffer comes with input */
	c->fd = fd;
	INIT_LIST_HEAD(&c->node);
	conn_addr_format(sa, salen, c->addr, sizeof(c->addr));
	c->listen_addr = listen_addr;
	c->tr = tr;
	return c;
}

void conn_discard(struct conn *c)
{
	close(c->fd);
	ak_free(c->rbuf);
	ak_free(c);
	stats_dec(curr_conns);
}

/*
 * An input buffer for a connection about to read: one its worker keeps,
 * or a new one. Return: 0, or -1 (out of memory: close).
 */
static int conn_rbuf_get(struct conn *c)
{
	struct conn_owner *o = c->owner;

	if (c->rbuf)
		return 0;
	c->rbuf = o->nr_rbufs ? o->rbufs[--o->nr_rbufs] :
		  ak_malloc(CONN_RBUF_SIZE);
	if (!c->rbuf) {
		log_error("connection %s: out of memory for its input, "
			  "closing", c->addr);
		return -1;
	}
	c->rsize = CONN_RBUF_SIZE;
	return 0;
}

/* The input is all consumed: the buffer goes back to the worker (or is
 * freed: one grown for a long line, or the worker has enough). */
static void conn_rbuf_put(struct conn *c)
{
	struct conn_owner *o = c->owner;

	if (!c->rbuf || c->rlen)
		return;
	if (c->rsize == CONN_RBUF_SIZE && o->nr_rbufs < CONN_RBUF_CACHE)
		o->rbufs[o->nr_rbufs++] = c->rbuf;
	else
		ak_free(c->rbuf);
	c->rbuf = NULL;
	c->rsize = CONN_RBUF_SIZE;
}

void conn_owner_release(struct conn_owner *o)
{
	while (o->nr_rbufs)
		ak_free(o->rbufs[--o->nr_rbufs]);
	ak_free(o->gather_buf);
	o->gather_buf = NULL;
}

/*
 * How long a connection may go without progress (input the engine consumed,
 * a reply byte written); 0: forever. Bytes read that complete nothing, a
 * line trickled in, are not progress: memcached times out such a client.
 */
static unsigned int conn_timeout_secs(const struct conn *c)
{
	if (c->handshaking) {
		int64_t left = c->hs_deadline - conn_now(c);

		if (!c->hs_deadline)
			return 0;
		return left > 1 ? (unsigned int)left : 1;
	}
	if (c->closing || c->eof)
		return settings.idle_timeout && settings.idle_timeout <
		       CONN_LINGER_SECS ? settings.idle_timeout :
		       CONN_LINGER_SECS;
	return settings.idle_timeout;
}

void conn_close(struct conn *c)
{
	struct conn_owner *w = c->owner;

	log_conn("<%d connection closed (%s)", c->fd, c->addr);
	if (w->current == c)
		w->current = NULL;
	if (c->rev)
		event_free(c->rev);
	if (c->wev)
		event_free(c->wev);
	if (c->tr->release)
		c->tr->release(c);
	close(c->fd);
	proto_conn_release(&c->pc);
	stats_dec(curr_conns);
	c->rlen = 0;
	conn_rbuf_put(c);
	w->conn_gone(w, c);
	ak_free(c);
}

/* Whether the transport holds input the socket will not signal again. */
static bool conn_tr_pending(const struct conn *c)
{
	return c->tr->pending && c->tr->pending(c);
}

/*
 * Reads what the socket has, up to the room in the buffer.
 * Return: 0 (data, EOF noted in c->eof, or nothing yet), -1 on an error.
 */
static int conn_fill(struct conn *c)
{
	if (conn_rbuf_get(c))
		return -1;
	return c->tr->fill(c);
}

/* The plain transport's read: read() until the socket or the buffer is
 * empty. */
static int plain_fill(struct conn *c)
{
	for (;;) {
		size_t room = c->rsize - c->rlen;
		ssize_t n;

		if (room == 0)
			return 0;
		n = read(c->fd, c->rbuf + c->rlen, room);
		if (n > 0) {
			conn_got(c, (size_t)n);
			log_io("<%d read %zd bytes", c->fd, n);
			/* a short read drained the socket: no second syscall */
			if ((size_t)n < room)
				return 0;
			continue;
		}
		if (n == 0) {
			c->eof = true;
			return 0;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		log_conn("<%d read error: %s", c->fd, strerror(errno));
		return -1;
	}
}

/*
 * Writes queued replies until none are left or the socket is full.
 * Return: 0, or -1 when the socket failed (the connection must close).
 */
static int conn_flush(struct conn *c)
{
	return c->tr->flush(c);
}

/* The plain transport's write: send() or sendmsg() until nothing is
 * queued or the socket is full. */
static int plain_flush(struct conn *c)
{
	struct conn_owner *w = c->owner;
	struct reply *out = &c->pc.out;

	while (reply_pending(out)) {
		struct msghdr msg = { 0 };
		ssize_t n;
		int cnt = reply_iov(out, w->iov, IOV_MAX);

		if (cnt <= 0)
			break;
		/* one iovec (a run of short replies): send() spares the
		 * kernel the msghdr and iovec copies */
		if (cnt == 1) {
			n = send(c->fd, w->iov[0].iov_base, w->iov[0].iov_len,
				 MSG_NOSIGNAL);
		} else {
			msg.msg_iov = w->iov;
			msg.msg_iovlen = (size_t)cnt;
			n = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
		}
		if (n > 0) {
			conn_sent(c, (size_t)n);
			log_io(">%d wrote %zd bytes", c->fd, n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		log_conn(">%d write error: %s", c->fd,
			 n < 0 ? strerror(errno) : "wrote nothing");
		return -1;
	}
	return 0;
}

const struct conn_transport conn_plain = {
	.name = "",
	.fill = plain_fill,
	.flush = plain_flush,
};

void conn_command_hook(void *arg, const struct proto_conn *pc,
		       const char *line, size_t len)
{
	const struct conn *c = container_of(pc, struct conn, pc);
	char text[201];
	size_t i;

	(void)arg;
	/* -vv never shows what may hold a password */
	if (!line) {
		log_msg(LOG_LEVEL_IO, "<%d (%zu bytes before authentication, "
			"not shown)", c->fd, len);
		return;
	}
	if (len > sizeof(text) - 1)
		len = sizeof(text) - 1;
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)line[i];

		text[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '.';
	}
	text[len] = '\0';
	log_msg(LOG_LEVEL_IO, "<%d %s", c->fd, text);
}

/*
 * Runs the requests in the input buffer, at most *@budget of them, and
 * takes what it ran off *@budget.
 * Return: true when it consumed bytes.
 */
static bool conn_process(struct conn *c, unsigned int *budget)
{
	struct conn_owner *w = c->owner;
	unsigned int before = c->pc.nreqs, done;
	size_t used;

	WRITE_ONCE(w->current, c);
	/* no buffer while idle: a dump's next batch needs no input */
	used = proto_process(&c->pc, c->rbuf ? c->rbuf : "", c->rlen,
			     *budget);
	WRITE_ONCE(w->current, NULL);
	done = c->pc.nreqs - before;
	*budget -= done < *budget ? done : *budget;
	if (used) {
		if (used < c->rlen)
			memmove(c->rbuf, c->rbuf + used, c->rlen - used);
		c->rlen -= used;
		c->last_active = conn_now(c);
		WRITE_ONCE(c->last_cmd, c->last_active);
	}
	if (proto_closed(&c->pc)) {
		c->closing = true;
		c->rlen = 0;	/* nothing after quit or an error is run */
	}
	return used > 0;
}

/*
 * The buffer is full and the engine took nothing: it needs a longer line
 * than the buffer holds. The engine bounds its lines, so this is a guard.
 * Return: 0, or -1 (close).
 */
static int conn_grow(struct conn *c)
{
	size_t size = c->rsize * 2;
	char *p;

	if (size > CONN_RBUF_MAX) {
		log_warn("connection %s: request line over %u bytes, closing",
			 c->addr, CONN_RBUF_MAX);
		return -1;
	}
	p = ak_realloc(c->rbuf, size);
	if (!p) {
		log_error("connection %s: out of memory for its input",
			  c->addr);
		return -1;
	}
	c->rbuf = p;
	c->rsize = size;
	return 0;
}

/*
 * Return: 0, or -1 when libevent could not add an event (out of memory):
 * the connection would wait for nothing, so the caller closes it.
 */
static int conn_update_events(struct conn *c, bool yield)
{
	size_t pending = reply_pending(&c->pc.out);
	bool want_read = !c->closing && !c->eof && pending <= REPLY_HIGH_WATER &&
			 c->rlen < c->rsize;
	/* a yield waits for writable, as memcached does: the loop polls the
	 * other sockets first, then this one's write callback runs it */
	bool want_write = pending > 0 || yield || proto_busy(&c->pc);
	unsigned int secs = conn_timeout_secs(c);
	struct timeval tv = { .tv_sec = secs, .tv_usec = 0 };

	if (c->handshaking) {
		/* the handshake said which; the read timeout is the deadline */
		want_read = !c->read_wants_write;
		want_write = c->read_wants_write;
		if (want_read) {
			/* added again even when it is: the timeout restarts
			 * with what is left of the deadline */
			if (event_add(c->rev, secs ? &tv : NULL))
				goto fail;
			c->reading = true;
		}
	} else {
		if (c->write_wants_read) {
			want_read = true;	/* and not writable: it would spin */
			want_write = yield || proto_busy(&c->pc);
		}
		if (c->read_wants_write)
			want_write = true;
		/* input the transport holds: the socket will not say so */
		if (want_read && conn_tr_pending(c))
			want_write = true;
	}
	if (want_read != c->reading) {
		if (want_read && event_add(c->rev, secs ? &tv : NULL))
			goto fail;
		if (!want_read)
			event_del(c->rev);
		c->reading = want_read;
	}
	/* re-adding restarts the timeout: it measures time without progress */
	if (want_write) {
		if ((!c->writing || secs) &&
		    event_add(c->wev, secs ? &tv : NULL))
			goto fail;
		c->writing = true;
	} else if (c->writing) {
		event_del(c->wev);
		c->writing = false;
	}
	return 0;
fail:
	log_error("connection %s: cannot add its events (out of memory), "
		  "closing", c->addr);
	return -1;
}

/*
 * Process, write, decide; may close (and free) the connection.
 *
 * Runs requests until the input holds only an incomplete one, -R requests
 * have run (then it yields), or the replies pass REPLY_HIGH_WATER and the
 * socket will not take them yet (then the write callback resumes).
 */
static void conn_run(struct conn *c)
{
	unsigned int budget = settings.reqs_per_event;
	bool yield = false;

	for (;;) {
		bool ran = false, progress = false;

		if (!c->closing && (c->rlen || proto_busy(&c->pc)) &&
		    budget && reply_pending(&c->pc.out) <= REPLY_HIGH_WATER) {
			ran = true;
			progress = conn_process(c, &budget);
		}
		if (conn_flush(c) < 0)
			goto close;
		if (c->closing) {
			if (reply_pending(&c->pc.out))
				break;		/* write, then close */
			goto close;
		}
		if (!c->rlen && !proto_busy(&c->pc)) {
			if (c->eof && !reply_pending(&c->pc.out))
				goto close;
			break;
		}
		/* input is left, or a dump has more to queue */
		if (!budget) {
			yield = true;
			WRITE_ONCE(c->owner->io.conn_yields,
				   c->owner->io.conn_yields + 1);
			break;
		}
		if (reply_pending(&c->pc.out) > REPLY_HIGH_WATER)
			break;
		/* more requests may be complete; or the replies were above
		 * the high water mark when we came in and are below it now */
		if (progress || !ran || proto_busy(&c->pc))
			continue;
		/* the rest is an incomplete request */
		if (c->rlen == c->rsize && conn_grow(c) < 0)
			goto close;
		if (c->eof && !reply_pending(&c->pc.out))
			goto close;	/* it will never be completed */
		break;
	}
	conn_rbuf_put(c);
	/* idle: the reply chunk goes back to the worker too */
	if (!c->rbuf && !reply_pending(&c->pc.out) && !proto_busy(&c->pc))
		proto_conn_idle(&c->pc);
	if (conn_update_events(c, yield) == 0)
		return;
close:
	conn_close(c);
}

/*
 * Closes a connection without progress for its timeout plus @slack seconds;
 * true if it did.
 */
static bool conn_check_idle(struct conn *c, unsigned int slack)
{
	unsigned int secs = conn_timeout_secs(c);

	if (c->handshaking) {
		/* not yet (the clock counts whole seconds): wait what is left,
		 * not a whole timeout more */
		if (!c->tr->expired(c, conn_now(c)) &&
		    !conn_update_events(c, false))
			return false;
		conn_close(c);
		return true;
	}
	if (!secs || conn_now(c) - c->last_active < (int64_t)secs + slack)
		return false;
	if (c->closing || c->eof)
		log_conn("<%d closing: client did not read its replies for "
			 "%u s", c->fd, secs);
	else
		log_conn("<%d idle for %u s, closing", c->fd, secs);
	conn_close(c);
	return true;
}

/*
 * A handshake's step on an event. Return: true when the connection may
 * go on (the handshake is done); false when it waits or was closed.
 */
static bool conn_handshake(struct conn *c)
{
	int rc = c->tr->handshake(c);

	if (rc > 0) {
		/* the read event kept the handshake's deadline: re-armed with
		 * the connection's own timeout by conn_update_events() */
		if (c->reading)
			event_del(c->rev);
		c->reading = false;
		return true;
	}
	if (rc < 0 || conn_update_events(c, false))
		conn_close(c);
	return false;
}

static bool conn_may_fill(const struct conn *c)
{
	return !c->eof && !c->closing;
}

static void conn_on_read(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	if ((what & EV_TIMEOUT) && !(what & EV_READ)) {
		conn_check_idle(c, 0);
		return;
	}
	/* each read re-arms the timeout, so a client trickling bytes that
	 * complete nothing is caught here; the clock counts whole seconds,
	 * a second more makes sure a full timeout went by */
	if (conn_check_idle(c, 1))
		return;
	if (c->handshaking && !conn_handshake(c))
		return;
	if (conn_may_fill(c) && conn_fill(c) < 0) {
		conn_close(c);
		return;
	}
	conn_run(c);
}

static void conn_on_write(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	bool fill;

	(void)fd;
	if ((what & EV_TIMEOUT) && !(what & EV_WRITE)) {
		conn_check_idle(c, 0);
		return;
	}
	/* input may be due here, not on a read event: what came with the
	 * handshake's end, a read that waited for writable, or what the
	 * transport holds */
	if (c->handshaking) {
		if (conn_check_idle(c, 1) || !conn_handshake(c))
			return;
		fill = true;
	} else {
		fill = c->read_wants_write || conn_tr_pending(c);
	}
	if (fill && conn_may_fill(c) && conn_fill(c) < 0) {
		conn_close(c);
		return;
	}
	conn_run(c);
}

void conn_adopt(struct conn_owner *w, struct conn *c)
{
	c->owner = w;
	proto_conn_init(&c->pc, w->ctx);
	c->last_cmd = c->last_active = conn_now(c);
	c->rev = event_new(w->base, c->fd, EV_READ | EV_PERSIST, conn_on_read,
			   c);
	c->wev = event_new(w->base, c->fd, EV_WRITE | EV_PERSIST,
			   conn_on_write, c);
	if (!c->rev || !c->wev) {
		log_error("connection %s: out of memory for its events",
			  c->addr);
		conn_close(c);
		return;
	}
	if (c->tr->start && c->tr->start(c)) {
		conn_close(c);
		return;
	}
	log_conn("<%d new %sconnection from %s on %s (worker %u)", c->fd,
		 c->tr->name, c->addr, c->listen_addr, w->id);
	if (conn_update_events(c, false))
		conn_close(c);
}

void conn_stop(struct conn *c)
{
	c->closing = true;
	c->rlen = 0;
	if (conn_flush(c) < 0 || !reply_pending(&c->pc.out)) {
		conn_close(c);
		return;
	}
	if (conn_update_events(c, false))
		conn_close(c);
}

const char *conn_state_name(const struct conn *c)
{
	if (READ_ONCE(c->owner->current) == c)
		return "conn_parse_cmd";
	switch (READ_ONCE(c->pc.state)) {
	case PROTO_CLOSED:
		return "conn_closing";
	case PROTO_DATA:
		return "conn_nread";
	case PROTO_SWALLOW:
		return "conn_swallow";
	case PROTO_GET_CONT:
		return "conn_read";
	case PROTO_CMD:
	default:
		break;
	}
	if (READ_ONCE(c->pc.out.pending))
		return "conn_mwrite";
	return "conn_waiting";
}
