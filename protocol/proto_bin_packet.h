/* SPDX-License-Identifier: MIT */
/*
 * proto_bin_packet.h - memcached's binary protocol inside protocol/: the
 * packet's numbers, and what its files share. proto_bin.c reads the requests and
 * answers the data commands; proto_bin_admin.c flush, stat and SASL;
 * proto_bin_reply.c builds the responses for both. Not for the rest of
 * the tree: proto.h's proto_bin_command() is the interface.
 */
#ifndef ANCHORKV_PROTO_BIN_PACKET_H
#define ANCHORKV_PROTO_BIN_PACKET_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "proto_cmd.h"

#define BIN_HEADER	24u
#define SASL_MECH_MAX	32u	/* memcached's MAX_SASL_MECH_LEN */
#define SASL_DATA_MAX	8192u	/* a login's data; more closes */
#define BIN_REQ_MAGIC	0x80
#define BIN_RES_MAGIC	0x81

enum bin_opcode {
	BIN_GET = 0x00, BIN_SET = 0x01, BIN_ADD = 0x02, BIN_REPLACE = 0x03,
	BIN_DELETE = 0x04, BIN_INCR = 0x05, BIN_DECR = 0x06, BIN_QUIT = 0x07,
	BIN_FLUSH = 0x08, BIN_GETQ = 0x09, BIN_NOOP = 0x0a,
	BIN_VERSION = 0x0b, BIN_GETK = 0x0c, BIN_GETKQ = 0x0d,
	BIN_APPEND = 0x0e, BIN_PREPEND = 0x0f, BIN_STAT = 0x10,
	BIN_SETQ = 0x11, BIN_ADDQ = 0x12, BIN_REPLACEQ = 0x13,
	BIN_DELETEQ = 0x14, BIN_INCRQ = 0x15, BIN_DECRQ = 0x16,
	BIN_QUITQ = 0x17, BIN_FLUSHQ = 0x18, BIN_APPENDQ = 0x19,
	BIN_PREPENDQ = 0x1a, BIN_TOUCH = 0x1c, BIN_GAT = 0x1d,
	BIN_GATQ = 0x1e, BIN_SASL_LIST = 0x20, BIN_SASL_AUTH = 0x21,
	BIN_SASL_STEP = 0x22, BIN_GATK = 0x23, BIN_GATKQ = 0x24,
};

enum bin_status {
	BIN_OK = 0x00,
	BIN_ENOENT = 0x01,
	BIN_EEXISTS = 0x02,
	BIN_E2BIG = 0x03,
	BIN_EINVAL = 0x04,
	BIN_NOT_STORED = 0x05,
	BIN_DELTA_BADVAL = 0x06,
	BIN_AUTH_ERROR = 0x20,
	BIN_UNKNOWN = 0x81,
	BIN_ENOMEM = 0x82,
};

static inline uint16_t get_be16(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;

	return (uint16_t)(u[0] << 8 | u[1]);
}

static inline uint32_t get_be32(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;

	return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 |
	       (uint32_t)u[2] << 8 | u[3];
}

static inline uint64_t get_be64(const char *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

static inline char *put_be16(char *p, uint16_t v)
{
	p[0] = (char)(v >> 8);
	p[1] = (char)v;
	return p + 2;
}

static inline char *put_be32(char *p, uint32_t v)
{
	p[0] = (char)(v >> 24);
	p[1] = (char)(v >> 16);
	p[2] = (char)(v >> 8);
	p[3] = (char)v;
	return p + 4;
}

static inline char *put_be64(char *p, uint64_t v)
{
	return put_be32(put_be32(p, (uint32_t)(v >> 32)), (uint32_t)v);
}

/* The response header for the request in pc->bin, at @p; returns past
 * it. */
char *bin_put_header(const struct proto_conn *pc, char *p, uint16_t status,
		     uint8_t extlen, uint16_t keylen, uint32_t bodylen,
		     uint64_t cas);

/* Queues a response: the header, then @ext, @key and @body copied. */
void bin_respond(struct proto_conn *pc, uint16_t status, const char *ext,
		 uint8_t extlen, const char *key, uint16_t keylen,
		 const char *body, uint32_t blen, uint64_t cas);

/* A success with no body (a store, a delete, a noop), unless quiet. */
void bin_done(struct proto_conn *pc, bool quiet, uint64_t cas);

/* An error, with memcached's text for it unless @text is given. */
void bin_error(struct proto_conn *pc, uint16_t status, const char *text);

/* Flush, with its optional delay (proto_bin_admin.c). */
void bin_flush(struct proto_conn *pc, bool quiet, const char *ext,
	       uint8_t extlen);

/* Stat: every general statistic, or the group @key names. */
void bin_stats(struct proto_conn *pc, const char *key, uint16_t nkey);

/* SASL Auth and Step with mechanism @mech and data @data. */
void bin_sasl_auth(struct proto_conn *pc, uint8_t op, const char *mech,
		   uint16_t nmech, const char *data, uint32_t vlen);

#endif /* ANCHORKV_PROTO_BIN_PACKET_H */
