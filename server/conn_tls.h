/* SPDX-License-Identifier: MIT */
/*
 * conn_tls.h - a connection's TLS layer, for conn.c only.
 *
 * conn.c calls these in place of read() and writev() when c->ssl is set;
 * the protocol engine and the reply queue are the same for both. The
 * flags a call leaves in struct conn (handshaking, tls_read_wants_write,
 * tls_write_wants_read) tell conn_update_events() what to wait for.
 *
 * Context: the owning worker thread, for all of them.
 */
#ifndef ANCHORKV_CONN_TLS_H
#define ANCHORKV_CONN_TLS_H

#include <stdbool.h>
#include <stdint.h>

struct conn;

/* Return: 0, or -1 (no SSL could be made: close). Starts the handshake
 * clock (ssl_handshake_timeout, idle_timeout). */
int conn_tls_start(struct conn *c);

/* One step of the handshake. Return: 1 done, 0 waiting for the socket
 * (what for is in the flags), -1 failed (counted in ssl_handshake_errors,
 * logged): close. */
int conn_tls_handshake(struct conn *c);

/* Decrypted input into c->rbuf, as conn_fill(). Return: 0 or -1. */
int conn_tls_fill(struct conn *c);

/* Queued replies through SSL_write, as conn_flush(). Return: 0 or -1. */
int conn_tls_flush(struct conn *c);

/* Whether OpenSSL holds input the socket will not signal again. */
bool conn_tls_pending(const struct conn *c);

/* Whether the handshake ran out of time at @now (then it is counted and
 * logged; the caller closes). */
bool conn_tls_expired(struct conn *c, int64_t now);

/* close_notify when the session is sound, then the SSL freed. */
void conn_tls_free(struct conn *c);

#endif /* ANCHORKV_CONN_TLS_H */
