// SPDX-License-Identifier: MIT
/*
 * merge.c - anchorkv-cli's range commands over every server of a
 * cluster: range, ranges, rrange, rranges and keys page by page from each
 * server, merged in keyspace order; count and delete_range added up.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ask.h"
#include "base64.h"
#include "conn.h"
#include "keyorder.h"
#include "merge.h"

/* ------------------------------------------------------------------ */
/* keyspace order                                                       */

/* anchorkv's keyspace order (core/keyorder.h): integer keys by value,
 * then bytewise. */
static int key_cmp(const char *a, size_t na, const char *b, size_t nb)
{
	uint64_t x = 0, y = 0;
	bool ia = key_is_integer(a, na, &x), ib = key_is_integer(b, nb, &y);

	return key_order(ia, x, a, na, ib, y, b, nb);
}

/* ------------------------------------------------------------------ */
/* the range commands over every server                                 */

struct item_ref {
	size_t key, nkey;	/* in the page */
	size_t off, len;	/* the whole entry: its lines and data */
	bool coded;		/* listed base64, a "b" ending its line */
};

struct scan {
	struct server *s;
	bool live;		/* still has pages, not left out */
	bool done;		/* its last page was short */
	struct buf page;
	struct item_ref *items;
	size_t nitems, pos, room;
	char last[340];		/* the last key of the page, for the next */
	size_t nlast;
	bool last_coded;	/* it is base64: the next page is from b( */
};

/* The key of entry @it of @sc's page, decoded into @buf if it was listed
 * in base64. Return: the key; its length in *@n. */
static const char *ref_key(const struct scan *sc, const struct item_ref *it,
			   char *buf, size_t *n)
{
	const char *k = sc->page.p + it->key;

	if (!it->coded) {
		*n = it->nkey;
		return k;
	}
	*n = b64_decode(k, it->nkey, (unsigned char *)buf);
	return buf;
}

/* Splits a page reply into entries. Return: 0, or -1 (an error line). */
static int scan_parse(struct scan *sc, bool values)
{
	const char *p = sc->page.p, *end = p + sc->page.len;

	sc->nitems = sc->pos = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)(nl - p) - 1;
		struct item_ref *it;
		const char *key = p + (values ? 6 : 4), *sp;
		long vlen = 0;

		if (len == 3 && !memcmp(p, "END", 3))
			return 0;
		if (!(values ? len > 6 && !memcmp(p, "VALUE ", 6) :
			       len > 4 && !memcmp(p, "KEY ", 4)))
			return -1;
		if (values)
			vlen = reply_field_num(p, len, 3);
		sp = memchr(key, ' ', (size_t)(p + len - key));
		if (sc->nitems == sc->room) {
			sc->room = sc->room ? sc->room * 2 : PAGE;
			sc->items = realloc(sc->items,
					    sc->room * sizeof(*sc->items));
			if (!sc->items) {
				fprintf(stderr, "anchorkv-cli: out of memory\n");
				exit(2);
			}
		}
		it = &sc->items[sc->nitems++];
		it->key = (size_t)(key - sc->page.p);
		it->nkey = (size_t)((sp ? sp : p + len) - key);
		/* "KEY <base64> b", "VALUE <base64> ... b" (PROTOCOL.md);
		 * one longer than a key's base64 is left as it is */
		it->coded = len > 2 && p[len - 2] == ' ' && p[len - 1] == 'b' &&
			    it->nkey <= B64_ENCODED_LEN(KEY_BUF - 1);
		it->off = (size_t)(p - sc->page.p);
		p = nl + 1 + (values ? vlen + 2 : 0);
		it->len = (size_t)(p - sc->page.p) - it->off;
	}
	return 0;
}

/*
 * The next page of @sc: "<cmd> <from> <to> <n>", moving the bound of the
 * walk's direction past the last key. Return: 0, or -1 (@sc->s->err).
 */
static int scan_fetch(struct cli *c, struct scan *sc, const struct line *l,
		      bool reverse, bool values, unsigned long long left)
{
	struct line q = *l;
	char bound[344], count[24];
	unsigned int n = left < PAGE ? (unsigned int)left : PAGE;
	int rc;

	if (sc->nlast) {
		size_t at = 0;

		if (sc->last_coded)
			bound[at++] = 'b';
		bound[at++] = '(';
		memcpy(bound + at, sc->last, sc->nlast);
		bound[at + sc->nlast] = '\0';
		q.tok[reverse ? 2 : 1] = bound;
		q.len[reverse ? 2 : 1] = at + sc->nlast;
	}
	snprintf(count, sizeof(count), "%u", n);
	q.tok[3] = count;
	q.len[3] = strlen(count);
	q.ntok = 4;
	sc->page.len = 0;
	rc = ask(c, sc->s, &q, &sc->page);
	if (rc)
		return -1;
	if (scan_parse(sc, values)) {
		const char *p = sc->page.p;
		size_t len = strcspn(p, "\r\n");

		snprintf(sc->s->err, sizeof(sc->s->err), "%.*s", (int)len, p);
		return -2;
	}
	sc->done = sc->nitems < n;
	if (sc->nitems) {
		const struct item_ref *it = &sc->items[sc->nitems - 1];

		if (it->nkey > sizeof(sc->last)) {
			snprintf(sc->s->err, sizeof(sc->s->err),
				 "a key of %zu bytes in a reply", it->nkey);
			return -1;
		}
		memcpy(sc->last, sc->page.p + it->key, it->nkey);
		sc->nlast = it->nkey;
		sc->last_coded = it->coded;
	}
	return 0;
}

/*
 * range, ranges, rrange, rranges, keys: a k-way merge of every server's
 * pages, a server asked for its next page only when the merge has used
 * up its last one.
 */
/* Whether the next item of scan @a comes before @b's in the walk's order. */
static bool scan_before(const struct scan *a, const struct scan *b,
			bool reverse)
{
	char abuf[KEY_BUF], bbuf[KEY_BUF];
	const char *ka, *kb;
	size_t na, nb;
	int cmp;

	ka = ref_key(a, &a->items[a->pos], abuf, &na);
	kb = ref_key(b, &b->items[b->pos], bbuf, &nb);
	cmp = key_cmp(ka, na, kb, nb);
	return reverse ? cmp > 0 : cmp < 0;
}

void run_range(struct cli *c, const struct line *l)
{
	bool reverse = l->tok[0][0] == 'r' && l->tok[0][1] == 'r';
	bool values = strcmp(l->tok[0], "keys") != 0;
	unsigned long long count = ~0ull, sent = 0;
	unsigned int n = c->ring.nservers, i;
	struct scan *scans = calloc(n, sizeof(*scans));
	struct buf out = { 0 };
	int rc;

	if (l->ntok < 3 || l->ntok > 4) {
		print_reply(c, "ERROR\r\n", 7);
		c->status = 1;
		free(scans);
		return;
	}
	if (l->ntok == 4) {
		char *end;

		errno = 0;
		count = strtoull(l->tok[3], &end, 10);
		if (*end || errno || !count || l->tok[3][0] == '-') {
			print_reply(c, "CLIENT_ERROR bad range\r\n", 24);
			c->status = 1;
			free(scans);
			return;
		}
	}
	for (i = 0; i < n; i++) {
		scans[i].s = &c->ring.servers[i];
		scans[i].live = true;
		rc = scan_fetch(c, &scans[i], l, reverse, values, count);
		if (rc == -2 || (rc && !c->partial)) {
			/* a bad range is every server's answer: show it */
			if (rc == -2 && n == 1) {
				print_reply(c, scans[i].page.p,
					    scans[i].page.len);
				c->status = 1;
			} else {
				server_failed(c, scans[i].s);
			}
			goto out;
		}
		if (rc) {
			fprintf(stderr, "anchorkv-cli: %s left out: %s\n",
				scans[i].s->addr, scans[i].s->err);
			scans[i].live = false;
		}
	}
	while (sent < count && !interrupted) {
		struct scan *best = NULL;

		for (i = 0; i < n; i++) {
			struct scan *sc = &scans[i];

			if (!sc->live)
				continue;
			if (sc->pos == sc->nitems) {
				if (sc->done) {
					sc->live = false;
					continue;
				}
				rc = scan_fetch(c, sc, l, reverse, values,
						count - sent);
				if (rc) {
					server_failed(c, sc->s);
					goto out;
				}
				if (!sc->nitems) {
					sc->live = false;
					continue;
				}
			}
			if (!best || scan_before(sc, best, reverse))
				best = sc;
		}
		if (!best)
			break;
		buf_add(&out, best->page.p + best->items[best->pos].off,
			best->items[best->pos].len);
		best->pos++;
		sent++;
		/* print as it goes: a scan of millions is never held whole */
		if (out.len > (1u << 20)) {
			print_reply(c, out.p, out.len);
			out.len = 0;
		}
	}
	buf_adds(&out, "END\r\n");
	print_reply(c, out.p, out.len);
out:
	for (i = 0; i < n; i++) {
		buf_free(&scans[i].page);
		free(scans[i].items);
	}
	free(scans);
	buf_free(&out);
}

/* count and delete_range: the sum of every server's. */
void run_sum(struct cli *c, const struct line *l)
{
	const char *word = !strcmp(l->tok[0], "count") ? "COUNT " : "DELETED ";
	unsigned long long total = 0;
	struct buf out = { 0 };
	unsigned int i;
	char line[64];

	for (i = 0; i < c->ring.nservers; i++) {
		struct server *s = &c->ring.servers[i];
		size_t wl = strlen(word);

		out.len = 0;
		if (ask(c, s, l, &out)) {
			if (!c->partial) {
				server_failed(c, s);
				goto done;
			}
			fprintf(stderr, "anchorkv-cli: %s left out: %s\n",
				s->addr, s->err);
			continue;
		}
		if (out.len <= wl + 2 || memcmp(out.p, word, wl)) {
			print_reply(c, out.p, out.len);	/* an error, or quiet */
			c->status = out.len ? 1 : 0;
			goto done;
		}
		total += strtoull(out.p + wl, NULL, 10);
	}
	snprintf(line, sizeof(line), "%s%llu\r\n", word, total);
	print_reply(c, line, strlen(line));
done:
	buf_free(&out);
}
