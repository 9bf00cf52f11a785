/* SPDX-License-Identifier: MIT */
/*
 * ask.h - anchorkv-cli's session and command line, and one request to one
 * server with its reply printed (ask.c): what the command loop (cli.c)
 * and the merge of the range commands (merge.c) both use.
 */
#ifndef ANCHORKV_CLI_ASK_H
#define ANCHORKV_CLI_ASK_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "conn.h"
#include "ring.h"

#define KEY_BUF		256	/* a key decoded from base64 */
#define PAGE		1000u	/* items per range page (range_max: 10000) */
#define MAX_TOKENS	64

struct cli {
	struct ring ring;
	bool cluster;		/* --servers */
	bool partial;		/* --partial: leave a down server out */
	bool raw;		/* print replies as received */
	int timeout_ms;
	int status;		/* exit status of the last command */
};

struct line {
	char *tok[MAX_TOKENS];
	size_t len[MAX_TOKENS];
	unsigned int ntok;
	const char *data;	/* a storage command's value, or NULL */
	size_t ndata;
};

extern volatile sig_atomic_t interrupted;	/* SIGINT: stop a long
						 * listing */

/* The shape of @l's reply, by its command word (conn.h). */
enum reply_shape shape_of(const struct line *l);

/* A whole reply: raw, or line by line with values shown safely. */
void print_reply(const struct cli *c, const char *p, size_t n);

/* @s failed: say why on stderr, and fail the command. */
void server_failed(struct cli *c, const struct server *s);

/* Sends @l to @s and reads its reply into @out. Return: 0 or -1. */
int ask(struct cli *c, struct server *s, const struct line *l,
	struct buf *out);

#endif /* ANCHORKV_CLI_ASK_H */
