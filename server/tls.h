/* SPDX-License-Identifier: MIT */
/*
 * tls.h - the server's TLS context (OpenSSL), as memcached's -Z builds it.
 *
 * One SSL_CTX, made from settings.tls at start-up and made anew by
 * tls_reload() ("refresh_certs", SIGHUP). A reload builds a whole new
 * context and swaps it in only when every file loaded; the connections
 * already open keep the context they were made with (OpenSSL counts its
 * references), new ones get the new one. A file that fails keeps the old
 * context and the error is returned in memcached's words.
 *
 * What a connection does with its SSL (handshake, reads, writes) is in
 * conn_tls.c; this file only makes contexts and SSL objects.
 *
 * Synchronization: tls_lock (a mutex inside tls.c) guards the current
 * context pointer; tls_ssl_new() and tls_reload() may run on any thread.
 * The counters are server_stats atomics (counters.h).
 */
#ifndef ANCHORKV_TLS_H
#define ANCHORKV_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ssl_st;

/* An error text: memcached's sentence, a path and OpenSSL's reason. */
#define TLS_ERR_MAX	1400

/**
 * tls_init() - build the context from settings.tls (-Z)
 * @err:    receives the reason on failure
 * @errlen: room in @err
 *
 * Context: main thread, start-up, before privileges are dropped (the key
 * may be readable by root only).
 * Return: 0, or -1.
 */
int tls_init(char *err, size_t errlen);

/**
 * tls_reload() - load the certificate, key and CA files again
 * @err:    receives the reason on failure (memcached's refresh_certs text)
 * @errlen: room in @err
 *
 * Context: any thread; takes tls_lock for the swap only.
 * Return: 0 (new connections use the new files), or -1 (nothing changed).
 */
int tls_reload(char *err, size_t errlen);

/**
 * tls_ssl_new() - a server-side SSL for an accepted socket
 * @fd: the socket
 *
 * Context: any thread; takes tls_lock.
 * Return: the SSL, or NULL (out of memory, or TLS not initialised).
 */
struct ssl_st *tls_ssl_new(int fd);

/**
 * tls_reason() - OpenSSL's first queued reason, the thread's queue emptied
 * @out:  receives it, or "unknown error" when nothing was queued
 * @room: bytes at @out
 *
 * Context: any thread (the queue is the caller's thread's).
 * Return: whether OpenSSL had queued a reason.
 */
bool tls_reason(char *out, size_t room);

/**
 * tls_last_refresh() - unix time the current files were loaded
 *
 * Context: any.
 */
int64_t tls_last_refresh(void);

/**
 * tls_version_name() - memcached's name of a min_version setting
 * @min_version: 2 or 3
 *
 * Return: "tlsv1.2" or "tlsv1.3".
 */
const char *tls_version_name(unsigned int min_version);

/**
 * tls_exit() - free the context (connections are closed by now)
 *
 * Context: main thread, exit.
 */
void tls_exit(void);

#endif /* ANCHORKV_TLS_H */
