/* SPDX-License-Identifier: MIT */
/*
 * conn_tls.h - the TLS transport of a connection (struct conn_transport,
 * conn.h).
 *
 * The listener gives it to the connections of a TLS listener; conn.c
 * calls it as it calls the plain one: the handshake on the worker's loop,
 * then reads and writes through OpenSSL. The flags its calls leave in
 * struct conn (handshaking, read_wants_write, write_wants_read) tell
 * conn_update_events() what to wait for.
 *
 * Context: the owning worker thread.
 */
#ifndef ANCHORKV_CONN_TLS_H
#define ANCHORKV_CONN_TLS_H

#include "conn.h"

extern const struct conn_transport conn_tls;

#endif /* ANCHORKV_CONN_TLS_H */
