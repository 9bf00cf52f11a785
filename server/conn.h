/* SPDX-License-Identifier: MIT */
/*
 * conn.h - one client connection: socket, input buffer, protocol state.
 *
 * The protocol state (struct proto_conn, which holds the queue of replies)
 * is embedded; the protocol engine never sees the socket. A read fills the
 * input buffer, proto_process() consumes every complete request in it and
 * queues the replies, which go out with as few writev() calls as the
 * socket allows. A connection holds an input buffer only while it has
 * input: an idle one gives it back to its worker's cache of them, as
 * memcached does, so that an idle connection costs its struct alone. While more than REPLY_HIGH_WATER bytes of replies wait,
 * the connection is not read (a client that never reads its replies costs
 * bounded memory). After -R requests in one go with input left, the
 * connection yields to the others of its worker (conn_yields).
 *
 * Synchronization: a connection belongs to one worker thread. Other
 * threads read only addr, listen_addr and fd (immutable once handed over)
 * and, for "stats conns", last_cmd and the protocol state with relaxed
 * loads, under the owning worker's lock.
 */
#ifndef ANCHORKV_CONN_H
#define ANCHORKV_CONN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "compiler.h"
#include "counters.h"
#include "list.h"
#include "proto.h"
#include "store.h"

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

#define CONN_RBUF_SIZE		(16u * 1024)	/* input buffer */
#define CONN_RBUF_CACHE		64	/* idle input buffers a worker keeps */
#define CONN_RBUF_MAX		(1u << 20)	/* it never needs to grow past */
#define CONN_LINGER_SECS	10	/* closing: max wait for the client to read */
#define CONN_ADDR_MAX		160	/* >= LISTENER_NAME_MAX */

struct conn;
struct conn_transport;
struct event;
struct ssl_st;
struct event_base;
struct store;

/*
 * What a connection needs of the thread that owns it. A worker embeds one
 * (container_of() gets the worker back in conn_gone), so conn.c knows no
 * worker: it is told where to run and whom to tell when it closes.
 */
struct conn_owner {
	struct event_base *base;	/* the loop the connections run on */
	struct proto_ctx *ctx;		/* their protocol context */
	struct store *store;		/* for the time of day */
	unsigned int id;		/* names the owner in the log */
	struct conn *current;		/* owner writes: conn in proto_process */
	struct worker_io_stats io;	/* bytes moved, yields */
	/* a connection closed and is about to be freed: take it off the
	 * owner's books (called from conn_close()) */
	void (*conn_gone)(struct conn_owner *o, struct conn *c);
	struct iovec iov[IOV_MAX];	/* writev scratch */
	char *gather_buf;		/* a transport's small replies gathered
					 * (TLS: ssl_wbuf_size) */
	/* input buffers (CONN_RBUF_SIZE) that idle connections gave back */
	char *rbufs[CONN_RBUF_CACHE];
	unsigned int nr_rbufs;
};

struct conn {
	struct proto_conn pc;		/* the protocol state, embedded */
	struct conn_owner *owner;
	struct list_head node;		/* the owner's: its queue, its list */
	int fd;
	struct event *rev;		/* EV_READ | EV_PERSIST */
	struct event *wev;		/* EV_WRITE | EV_PERSIST */
	bool reading;			/* rev added */
	bool writing;			/* wev added */
	bool eof;			/* the client shut its sending side */
	bool closing;			/* quit, fatal error or server stop */
	char *rbuf;			/* input not yet consumed; NULL while idle */
	size_t rlen;
	size_t rsize;			/* its size (CONN_RBUF_SIZE while NULL) */
	int64_t last_cmd;		/* unix time of the last request */
	int64_t last_active;		/* unix time of the last progress */
	char addr[CONN_ADDR_MAX];	/* "tcp:127.0.0.1:54321" */
	const char *listen_addr;	/* its listener's name */

	/*
	 * The transport, chosen at accept and immutable: how the bytes are
	 * read and written (plain, TLS); what its calls leave for
	 * conn_update_events() to wait for is in the fields below it.
	 */
	const struct conn_transport *tr;
	bool handshaking;		/* its handshake is not done */
	bool read_wants_write;		/* its read waits for writable */
	bool write_wants_read;		/* its write waits for readable */
	int64_t hs_deadline;		/* unix time the handshake must end by */

	/* TLS's own (conn_tls.c; stats reads tls_version) */
	bool tls_dead;			/* a fatal error, no close_notify */
	struct ssl_st *ssl;		/* the session, or NULL */
	const char *tls_version;	/* "TLSv1.3" once done; stats reads */
	size_t tls_retry;		/* a blocked SSL_write's length: repeat it */
};

/*
 * A transport: how a connection's bytes move, as memcached's c->read and
 * c->sendmsg. conn.c calls these and tests no transport by name; plain
 * sockets are conn_plain (conn.c), TLS is conn_tls (conn_tls.h), given to
 * conn_new() by the listener. Context: the owning worker thread.
 */
struct conn_transport {
	const char *name;	/* for the log: "" or "TLS " */
	bool secure;		/* "stats conns" shows its version */
	/* at adoption: 0, or -1 (close); may start a handshake */
	int (*start)(struct conn *c);
	/* one handshake step: 1 done, 0 waiting (for what: the flags), -1
	 * failed (close) */
	int (*handshake)(struct conn *c);
	/* whether the handshake ran out of time at @now (then counted and
	 * logged; the caller closes) */
	bool (*expired)(struct conn *c, int64_t now);
	/* input into c->rbuf (conn_got()): 0, EOF in c->eof, or -1 */
	int (*fill)(struct conn *c);
	/* queued replies out (conn_sent()) until none or blocked: 0 or -1 */
	int (*flush)(struct conn *c);
	/* whether it holds input the socket will not signal again */
	bool (*pending)(const struct conn *c);
	/* before the socket closes */
	void (*release)(struct conn *c);
};

extern const struct conn_transport conn_plain;

/*
 * What reading and writing do to a connection, whether through read() and
 * writev() (conn.c) or through OpenSSL (conn_tls.c). Context: the owning
 * worker thread.
 */

/* The owner's clock: the store's unix time. */
static inline int64_t conn_now(const struct conn *c)
{
	return store_unix_time(c->owner->store);
}

/* @n bytes (decrypted, for TLS) were read into the input buffer. */
static inline void conn_got(struct conn *c, size_t n)
{
	c->rlen += n;
	WRITE_ONCE(c->owner->io.bytes_read, c->owner->io.bytes_read + n);
}

/* @n reply bytes were written: off the queue, counted, progress made. */
static inline void conn_sent(struct conn *c, size_t n)
{
	reply_consume(&c->pc.out, n);
	WRITE_ONCE(c->owner->io.bytes_written,
		   c->owner->io.bytes_written + n);
	c->last_active = conn_now(c);
}

/**
 * conn_new() - wrap an accepted socket
 * @fd:          the socket, nonblocking
 * @sa:          the peer address from accept()
 * @salen:       its length
 * @listen_addr: the listener's name, which outlives the connection
 * @tr:          its transport: &conn_plain, or &conn_tls (the handshake
 *               starts on the worker)
 *
 * Context: main thread; allocates.
 * Return: the connection (not yet owned by a worker), or NULL.
 */
struct conn *conn_new(int fd, const struct sockaddr *sa, socklen_t salen,
		      const char *listen_addr, const struct conn_transport *tr);

/**
 * conn_adopt() - start serving a connection on its owner's loop
 * @o: the owner, which has put @c on its books (conn_close() calls
 *     o->conn_gone to take it off)
 * @c: from conn_new()
 *
 * Closes the connection if its events cannot be created.
 *
 * Context: the owner's thread.
 */
void conn_adopt(struct conn_owner *o, struct conn *c);

/**
 * conn_discard() - close a connection that was never adopted
 * @c: from conn_new()
 *
 * Context: any thread that owns @c.
 */
void conn_discard(struct conn *c);

/**
 * conn_owner_release() - free what an owner keeps for its connections
 * @o: the owner, whose connections are all closed
 *
 * Context: the owner's thread, or after it ended.
 */
void conn_owner_release(struct conn_owner *o);

/**
 * conn_stop() - the server is stopping: no more requests, flush, close
 * @c: the connection
 *
 * Closes at once when nothing is queued; otherwise the connection closes
 * when its replies are written (or when the worker gives up waiting).
 *
 * Context: the owning worker thread.
 */
void conn_stop(struct conn *c);

/**
 * conn_command_hook() - -vv's line for a command the engine ran
 * @arg:  the hook argument (unused)
 * @pc:   the protocol state of a struct conn
 * @line: the command line, or NULL before authentication
 * @len:  its length, or the bytes consumed before authentication
 *
 * Logs "<fd line" as memcached -vv does, non-printable bytes as '.', at
 * most 200 of them; before authentication only the byte count. The
 * engine's proto_hooks.command.
 *
 * Context: the owning worker thread.
 */
void conn_command_hook(void *arg, const struct proto_conn *pc,
		       const char *line, size_t len);

/**
 * conn_close() - close and free a connection
 * @c: the connection; freed, after its owner's conn_gone has seen it
 *
 * Context: the owning worker thread.
 */
void conn_close(struct conn *c);

/**
 * conn_state_name() - memcached's name for what a connection is doing
 * @c: a connection of any worker
 *
 * Context: the caller holds the owner's lock; relaxed reads.
 * Return: "conn_waiting", "conn_nread", "conn_mwrite", ... (static).
 */
const char *conn_state_name(const struct conn *c);

/**
 * conn_addr_format() - "tcp:1.2.3.4:5", "tcp6:[::1]:5" or "unix:/path"
 * @sa:    an address
 * @salen: its length
 * @out:   receives the text
 * @room:  size of @out
 *
 * Context: any.
 */
void conn_addr_format(const struct sockaddr *sa, socklen_t salen, char *out,
		      size_t room);

#endif /* ANCHORKV_CONN_H */
