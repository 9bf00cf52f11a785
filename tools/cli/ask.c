// SPDX-License-Identifier: MIT
/*
 * ask.c - anchorkv-cli's one request to one server, and its reply
 * printed: what the command loop (cli.c) and the merge of the range
 * commands (merge.c) both use.
 */
#include <stdio.h>
#include <string.h>

#include "ask.h"
#include "conn.h"

/* ------------------------------------------------------------------ */
/* printing                                                             */

/* Bytes shown readably: printable ASCII as is, the rest escaped. */
static void put_safe(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c == '\\')
			fputs("\\\\", stdout);
		else if (c == '\r')
			fputs("\\r", stdout);
		else if (c == '\n')
			fputs("\\n", stdout);
		else if (c == '\t')
			fputs("\\t", stdout);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\x%02x", c);
		else
			putchar(c);
	}
}

/* A whole reply: raw, or line by line with values shown safely. */
void print_reply(const struct cli *c, const char *p, size_t n)
{
	const char *end = p + n;

	if (c->raw) {
		fwrite(p, 1, n, stdout);
		return;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		long vlen = -1;

		if (len && p[len - 1] == '\r')
			len--;
		put_safe(p, len);
		putchar('\n');
		if (len > 6 && !memcmp(p, "VALUE ", 6))
			vlen = reply_field_num(p, len, 3);
		else if (len > 3 && !memcmp(p, "VA ", 3))
			vlen = reply_field_num(p, len, 1);
		p = nl ? nl + 1 : end;
		if (vlen >= 0 && (size_t)(end - p) >= (size_t)vlen + 2) {
			put_safe(p, (size_t)vlen);
			putchar('\n');
			p += vlen + 2;
		}
	}
}

void server_failed(struct cli *c, const struct server *s)
{
	fprintf(stderr, "anchorkv-cli: %s: %s\n", s->addr, s->err);
	c->status = 1;
}

/* ------------------------------------------------------------------ */
/* one request to one server                                            */

enum reply_shape shape_of(const struct line *l)
{
	const char *w = l->tok[0];

	if (!strcmp(w, "get") || !strcmp(w, "gets") || !strcmp(w, "gat") ||
	    !strcmp(w, "gats") || !strcmp(w, "bget") || !strcmp(w, "range") ||
	    !strcmp(w, "ranges") || !strcmp(w, "rrange") ||
	    !strcmp(w, "rranges"))
		return SHAPE_VALUES;
	if (!strcmp(w, "stats") || !strcmp(w, "keys"))
		return SHAPE_LIST;
	if (!strcmp(w, "lru_crawler"))
		return SHAPE_DUMP;
	if (w[0] == 'm' && w[1] && !w[2] && strchr("gsdane", w[1]))
		return SHAPE_META;
	if (!strcmp(w, "quit") || (!strcmp(w, "shutdown")))
		return SHAPE_NONE;
	return SHAPE_LINE;
}

/* The request bytes of @l: its tokens, and its data block. */
static void request_bytes(const struct line *l, struct buf *out)
{
	unsigned int i;

	for (i = 0; i < l->ntok; i++) {
		if (i)
			buf_adds(out, " ");
		buf_add(out, l->tok[i], l->len[i]);
	}
	buf_adds(out, "\r\n");
	if (l->data) {
		buf_add(out, l->data, l->ndata);
		buf_adds(out, "\r\n");
	}
	/* a meta command may be quiet: mn closes it, and its reply */
	if (shape_of(l) == SHAPE_META && strcmp(l->tok[0], "mn"))
		buf_adds(out, "mn\r\n");
}

/* Sends @l to @s and reads its reply into @out. Return: 0 or -1. */
int ask(struct cli *c, struct server *s, const struct line *l,
	struct buf *out)
{
	struct buf req = { 0 };
	enum reply_shape shape = shape_of(l);
	int rc;

	request_bytes(l, &req);
	rc = server_send(s, req.p, req.len, c->timeout_ms);
	buf_free(&req);
	if (!rc)
		rc = server_read_reply(s, shape, out, c->timeout_ms);
	if (rc)
		return -1;
	/* drop the MN that closed a meta request */
	if (shape == SHAPE_META && strcmp(l->tok[0], "mn") && out->len >= 4 &&
	    !memcmp(out->p + out->len - 4, "MN\r\n", 4))
		out->len -= 4;
	return 0;
}
