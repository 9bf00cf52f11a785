/* SPDX-License-Identifier: MIT */
/*
 * conn.h - anchorkv-cli's connection to one server: blocking I/O with a
 * timeout, and the reading of one whole reply of the memcached protocol.
 */
#ifndef ANCHORKV_CLI_CONN_H
#define ANCHORKV_CLI_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer. */
struct buf {
	char *p;
	size_t len, cap;
};

void buf_add(struct buf *b, const void *p, size_t len);
void buf_adds(struct buf *b, const char *s);
void buf_free(struct buf *b);

struct server {
	char host[256];
	char port[8];
	char name[300];		/* the ring's name: nutcracker's label, or
				 * host:port (host alone for port 11211) */
	char addr[300];		/* host:port, for messages */
	unsigned int weight;
	int fd;			/* -1: not connected */
	char *rbuf;		/* received, not consumed: [rpos, rlen) */
	size_t rpos, rlen, rcap;
	char err[640];		/* why the last call failed */
};

/* How a reply ends, by the command that asked for it. */
enum reply_shape {
	SHAPE_LINE,		/* one line */
	SHAPE_VALUES,		/* VALUE blocks, then END */
	SHAPE_LIST,		/* lines (STAT, KEY, ITEM, PREFIX) up to END */
	SHAPE_DUMP,		/* OK, lines, then END or EN (lru_crawler) */
	SHAPE_META,		/* meta replies (VA + data) up to MN */
	SHAPE_NONE,		/* quit: nothing, the server closes */
};

/**
 * server_init() - fill in a server from "host:port" (port 11211 if none)
 * Return: 0, or -1 with a message in @s->err.
 */
int server_init(struct server *s, const char *hostport);

/** server_connect() - connect if not yet; Return: 0, or -1 (@s->err). */
int server_connect(struct server *s, int timeout_ms);

void server_close(struct server *s);

/** server_send() - write all of @p; Return: 0, or -1 (@s->err). */
int server_send(struct server *s, const void *p, size_t len, int timeout_ms);

/**
 * server_read_reply() - read one whole reply of @shape into @out
 * Return: 0, or -1 (@s->err: a timeout, the server closed, ...).
 */
int server_read_reply(struct server *s, enum reply_shape shape,
		      struct buf *out, int timeout_ms);

/**
 * server_read_line() - one line without its "\r\n" (or "\n"), copied to
 * @out (reset first). Return: 0, or -1 (@s->err).
 */
int server_read_line(struct server *s, struct buf *out, int timeout_ms);

/** server_read_bytes() - exactly @n bytes, appended to @out. */
int server_read_bytes(struct server *s, size_t n, struct buf *out,
		      int timeout_ms);

/**
 * reply_field_num() - the number that field @field (0 is the first) of a
 * reply line starts with: the <bytes> of "VALUE <key> <flags> <bytes>"
 * (3) or "VA <size> ..." (1). Return: it, or -1.
 */
long reply_field_num(const char *p, size_t n, int field);

/* Whether a reply line is an error: ERROR, CLIENT_ERROR ..., SERVER_ERROR. */
bool line_is_error(const char *p, size_t n);

#endif /* ANCHORKV_CLI_CONN_H */
