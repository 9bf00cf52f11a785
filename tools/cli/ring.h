/* SPDX-License-Identifier: MIT */
/*
 * ring.h - the servers of a pool and where a key goes: the ketama ring of
 * twemproxy (nutcracker 0.5: 160 points per server scaled by weight, four
 * per MD5 of "<name>-<n>", a key placed by its fnv1a_64 hash), so that
 * anchorkv-cli and a nutcracker pool put every key on the same server.
 */
#ifndef ANCHORKV_CLI_RING_H
#define ANCHORKV_CLI_RING_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"

struct ring_point {
	uint32_t value;
	unsigned int server;
};

struct ring {
	struct server *servers;
	unsigned int nservers;
	struct ring_point *points;
	unsigned int npoints;
};

/**
 * ring_parse_list() - servers from "host:port[,host:port...]"
 * Return: 0, or -1 with a message in @err.
 */
int ring_parse_list(struct ring *r, const char *list, char *err,
		    size_t errlen);

/**
 * ring_parse_yml() - servers from a nutcracker.yml: the "servers" of its
 * first pool, "host:port:weight [name]" each.
 * Return: 0, or -1 with a message in @err.
 */
int ring_parse_yml(struct ring *r, const char *path, char *err,
		   size_t errlen);

/** ring_build() - the continuum of the servers. Return: 0, or -1. */
int ring_build(struct ring *r);

/** ring_hash() - twemproxy's fnv1a_64 of a key (32 bits, as it computes) */
uint32_t ring_hash(const char *key, size_t len);

/** ring_server() - the index of the server that holds @key */
unsigned int ring_server(const struct ring *r, const char *key, size_t len);

void ring_free(struct ring *r);

#endif /* ANCHORKV_CLI_RING_H */
