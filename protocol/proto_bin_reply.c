// SPDX-License-Identifier: MIT
/*
 * proto_bin_reply.c - the binary protocol's responses: a 24-byte header
 * carrying the request's opcode and opaque, then extras, key and body.
 */
#include "proto_bin_packet.h"

/* The response header for the request in pc->bin, at @p. */
char *bin_put_header(const struct proto_conn *pc, char *p, uint16_t status,
		     uint8_t extlen, uint16_t keylen, uint32_t bodylen,
		     uint64_t cas)
{
	p[0] = (char)BIN_RES_MAGIC;
	p[1] = (char)pc->bin.opcode;
	put_be16(p + 2, keylen);
	p[4] = (char)extlen;
	p[5] = 0;			/* raw bytes */
	put_be16(p + 6, status);
	put_be32(p + 8, bodylen);
	memcpy(p + 12, pc->bin.opaque, 4);	/* as sent */
	put_be64(p + 16, cas);
	return p + BIN_HEADER;
}

/*
 * Queues a response: the header, then @ext, @key and @body copied (each
 * may be empty). Every response but a value goes this way.
 */
void bin_respond(struct proto_conn *pc, uint16_t status, const char *ext,
		 uint8_t extlen, const char *key, uint16_t keylen,
		 const char *body, uint32_t blen, uint64_t cas)
{
	size_t head = BIN_HEADER + extlen + keylen;
	char *p;

	if (unlikely(pc->state == PROTO_CLOSED))
		return;
	p = reply_reserve(&pc->out, head);
	if (unlikely(!p)) {
		proto_fail(pc);
		return;
	}
	p = bin_put_header(pc, p, status, extlen, keylen,
			   (uint32_t)(extlen + keylen) + blen, cas);
	if (extlen)
		memcpy(p, ext, extlen);
	if (keylen)
		memcpy(p + extlen, key, keylen);
	reply_commit(&pc->out, head);
	if (blen && unlikely(reply_add_copy(&pc->out, body, blen) < 0))
		proto_fail(pc);
}

/* A success with no body (a store, a delete, a noop), unless quiet. */
void bin_done(struct proto_conn *pc, bool quiet, uint64_t cas)
{
	if (!quiet)
		bin_respond(pc, BIN_OK, NULL, 0, NULL, 0, NULL, 0, cas);
}

/* An error, with memcached's text for it unless @text is given. */
void bin_error(struct proto_conn *pc, uint16_t status, const char *text)
{
	if (!text) {
		switch (status) {
		case BIN_ENOENT:	text = "Not found"; break;
		case BIN_EEXISTS:	text = "Data exists for key."; break;
		case BIN_E2BIG:		text = "Too large."; break;
		case BIN_EINVAL:	text = "Invalid arguments"; break;
		case BIN_NOT_STORED:	text = "Not stored."; break;
		case BIN_DELTA_BADVAL:
			text = "Non-numeric server-side value for incr or decr";
			break;
		case BIN_AUTH_ERROR:	text = "Auth failure."; break;
		case BIN_UNKNOWN:	text = "Unknown command"; break;
		default:		text = "Out of memory"; break;
		}
	}
	bin_respond(pc, status, NULL, 0, NULL, 0, text,
		    (uint32_t)strlen(text), 0);
}
