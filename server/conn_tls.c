// SPDX-License-Identifier: MIT
/*
 * conn_tls.c - reading and writing a connection through OpenSSL (see
 * conn_tls.h; the context is tls.c's).
 *
 * The handshake runs on the worker's loop like any other input: SSL_accept
 * on a nonblocking socket says whether it waits to read or to write, and
 * the connection waits for that. It must end by ssl_handshake_timeout
 * (and idle_timeout) after the accept; a client that sends nothing, or a
 * byte at a time, is closed then and counted in ssl_handshake_errors.
 *
 * Writes: a run of small replies is gathered into the worker's gather_buf
 * (ssl_wbuf_size, 16 KB: one TLS record) and written with one SSL_write,
 * as memcached does; a piece at least that long (a large value) is handed
 * to SSL_write where it lies, so OpenSSL's encryption into its record is
 * the value's only copy. Partial-write mode makes each SSL_write one
 * record, consumed from the queue as it goes. A write that blocks must be
 * repeated with the same bytes and length: the queue still holds them
 * (nothing is consumed until written), tls_retry keeps the length.
 */
#include "conn_tls.h"

#include <errno.h>
#include <limits.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <string.h>

#include "alloc.h"
#include "compiler.h"
#include "conn.h"
#include "counters.h"
#include "log.h"
#include "reply.h"
#include "settings.h"
#include "store.h"
#include "tls.h"

/* Logs why the session failed and empties the thread's error queue. */
static void tls_fail(struct conn *c, const char *what, int err)
{
	int sys = errno;
	char why[256];

	/* OpenSSL's own reason, else what the socket or the client did */
	if (!tls_reason(why, sizeof(why))) {
		if (err == SSL_ERROR_SYSCALL && sys)
			snprintf(why, sizeof(why), "%s", strerror(sys));
		else if (err == SSL_ERROR_SYSCALL ||
			 err == SSL_ERROR_ZERO_RETURN)
			snprintf(why, sizeof(why), "%s", "the client closed");
		else
			snprintf(why, sizeof(why), "SSL error %d", err);
	}
	c->tls_dead = true;
	log_conn("<%d TLS %s failed (%s): %s", c->fd, what, c->addr, why);
}

static int conn_tls_start(struct conn *c)
{
	unsigned int hs = settings.tls.handshake_timeout;
	unsigned int idle = settings.idle_timeout;
	unsigned int secs = hs && idle ? (hs < idle ? hs : idle) : hs | idle;

	c->ssl = tls_ssl_new(c->fd);
	if (!c->ssl) {
		log_error("connection %s: cannot create its TLS session (out "
			  "of memory)", c->addr);
		return -1;
	}
	c->handshaking = true;
	c->hs_deadline = secs ? conn_now(c) + secs : 0;
	return 0;
}

static int conn_tls_handshake(struct conn *c)
{
	int rc = SSL_accept(c->ssl), err;

	if (rc == 1) {
		c->handshaking = false;
		c->read_wants_write = false;
		WRITE_ONCE(c->tls_version, SSL_get_version(c->ssl));
		c->last_active = conn_now(c);
		log_conn("<%d TLS handshake done: %s %s", c->fd,
			 SSL_get_version(c->ssl), SSL_get_cipher_name(c->ssl));
		return 1;
	}
	err = SSL_get_error(c->ssl, rc);
	if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
		c->read_wants_write = err == SSL_ERROR_WANT_WRITE;
		return 0;
	}
	stats_inc(ssl_handshake_errors);
	tls_fail(c, "handshake", err);
	return -1;
}

static bool conn_tls_expired(struct conn *c, int64_t now)
{
	if (!c->handshaking || !c->hs_deadline || now < c->hs_deadline)
		return false;
	stats_inc(ssl_handshake_errors);
	c->tls_dead = true;
	log_conn("<%d TLS handshake not done in time (%s), closing", c->fd,
		 c->addr);
	return true;
}

static int conn_tls_fill(struct conn *c)
{
	c->read_wants_write = false;
	for (;;) {
		size_t room = c->rsize - c->rlen;
		int n, err;

		if (room == 0)
			return 0;
		n = SSL_read(c->ssl, c->rbuf + c->rlen,
			     room > INT_MAX ? INT_MAX : (int)room);
		if (n > 0) {
			conn_got(c, (size_t)n);
			log_io("<%d read %d bytes (TLS)", c->fd, n);
			/* all OpenSSL had: as a short read() of a plain
			 * connection, no second call to find the socket empty
			 * (if it is not, the read event comes again) */
			if (!SSL_has_pending(c->ssl))
				return 0;
			continue;
		}
		err = SSL_get_error(c->ssl, n);
		switch (err) {
		case SSL_ERROR_WANT_READ:
			return 0;
		case SSL_ERROR_WANT_WRITE:
			c->read_wants_write = true;
			return 0;
		case SSL_ERROR_ZERO_RETURN:
			c->eof = true;
			return 0;
		default:
			tls_fail(c, "read", err);
			return -1;
		}
	}
}

/*
 * What the next SSL_write sends: the front piece where it lies when it is
 * long (or alone), else the front pieces copied into the worker's buffer.
 * A repeated write takes exactly tls_retry bytes, the same ones.
 * Return: the length, with *@buf set; 0 when the buffer cannot be had.
 */
static size_t tls_next(struct conn *c, int cnt, const void **buf)
{
	struct conn_owner *w = c->owner;
	size_t wbuf = settings.tls.wbuf_size;
	size_t want = c->tls_retry ? c->tls_retry : wbuf;
	size_t len = 0;
	int i;

	if (w->iov[0].iov_len >= want || (cnt == 1 && !c->tls_retry)) {
		*buf = w->iov[0].iov_base;
		len = c->tls_retry ? c->tls_retry : w->iov[0].iov_len;
		return len > INT_MAX ? INT_MAX : len;
	}
	if (!w->gather_buf) {
		w->gather_buf = ak_malloc(wbuf);
		if (!w->gather_buf)
			return 0;
	}
	/*
	 * A repeated write was gathered here too, so it fits: its front
	 * piece has not shrunk (nothing was consumed). Never more than the
	 * buffer, whatever: OpenSSL refuses a shorter repeat, it is not
	 * written past.
	 */
	if (want > wbuf)
		want = wbuf;
	for (i = 0; i < cnt && len < want; i++) {
		size_t n = w->iov[i].iov_len;

		if (n > want - len)
			n = want - len;
		memcpy(w->gather_buf + len, w->iov[i].iov_base, n);
		len += n;
	}
	*buf = w->gather_buf;
	return len;
}

static int conn_tls_flush(struct conn *c)
{
	struct conn_owner *w = c->owner;
	struct reply *out = &c->pc.out;

	c->write_wants_read = false;
	while (reply_pending(out)) {
		const void *buf = NULL;
		int cnt = reply_iov(out, w->iov, IOV_MAX), n, err;
		size_t len;

		if (cnt <= 0)
			break;
		len = tls_next(c, cnt, &buf);
		if (!len) {
			log_error("connection %s: out of memory for its TLS "
				  "output, closing", c->addr);
			return -1;
		}
		n = SSL_write(c->ssl, buf, (int)len);
		if (n > 0) {
			c->tls_retry = 0;
			conn_sent(c, (size_t)n);
			log_io(">%d wrote %d bytes (TLS)", c->fd, n);
			continue;
		}
		err = SSL_get_error(c->ssl, n);
		if (err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) {
			c->tls_retry = len;
			c->write_wants_read = err == SSL_ERROR_WANT_READ;
			return 0;
		}
		tls_fail(c, "write", err);
		return -1;
	}
	return 0;
}

static bool conn_tls_pending(const struct conn *c)
{
	return c->ssl && !c->handshaking && SSL_has_pending(c->ssl);
}

static void conn_tls_free(struct conn *c)
{
	if (!c->ssl)
		return;
	/* one close_notify, best effort: the socket closes next */
	if (!c->handshaking && !c->tls_dead && SSL_shutdown(c->ssl) < 0)
		ERR_clear_error();
	SSL_free(c->ssl);
	c->ssl = NULL;
}

const struct conn_transport conn_tls = {
	.name = "TLS ",
	.secure = true,
	.start = conn_tls_start,
	.handshake = conn_tls_handshake,
	.expired = conn_tls_expired,
	.fill = conn_tls_fill,
	.flush = conn_tls_flush,
	.pending = conn_tls_pending,
	.release = conn_tls_free,
};
