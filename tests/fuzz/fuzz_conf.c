// SPDX-License-Identifier: MIT
/*
 * fuzz_conf.c - the config-file parser (server/conf.c), fed any bytes.
 *
 * The input is the text of a config file. Properties checked:
 *  1. conf_parse() returns 0 or -EINVAL; on error the message is NUL
 *     terminated and reads "fuzz.conf:LINE: ..." with LINE a line of the
 *     text; on success the settings hold only values their directives
 *     accept (ranges of settings.c's table, NUL-terminated strings without
 *     control bytes);
 *  2. lines are independent and the last value wins, as conf.h says:
 *     parsing the text in two calls cut at a line boundary gives the same
 *     settings and the same error (its line number shifted), and parsing
 *     it twice gives what parsing it once gives;
 *  3. "\r\n" and "\n" end lines alike: the text with every bare "\n"
 *     turned into "\r\n" gives the same settings and error.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "fuzz.h"
#include "settings.h"

#define ORIGIN	"fuzz.conf"

struct result {
	struct settings s;
	int ret;
	char err[1024];
};

static void parse_into(struct result *r, const char *buf, size_t len)
{
	r->err[0] = '\0';
	r->ret = conf_parse(ORIGIN, buf, len, &r->s, r->err, sizeof(r->err));
	FUZZ_CHECK(r->ret == 0 || r->ret == -EINVAL, "conf_parse returned %d",
		   r->ret);
	FUZZ_CHECK(memchr(r->err, '\0', sizeof(r->err)),
		   "error message not terminated");
}

static void parse_fresh(struct result *r, const char *buf, size_t len)
{
	memset(r, 0, sizeof(*r));
	settings_init(&r->s);
	parse_into(r, buf, len);
}

/* The line number of an error message, and where its text begins. */
static unsigned long err_line(const struct result *r, const char **text)
{
	const char *p = r->err + strlen(ORIGIN ":");
	char *end;
	unsigned long n;

	FUZZ_CHECK(!strncmp(r->err, ORIGIN ":", strlen(ORIGIN ":")) &&
		   isdigit((unsigned char)*p),
		   "error without origin and line: \"%s\"", r->err);
	n = strtoul(p, &end, 10);
	FUZZ_CHECK(!strncmp(end, ": ", 2) && end[2],
		   "error without a reason: \"%s\"", r->err);
	*text = end + 2;
	return n;
}

static bool str_ok(const char *s, size_t room)
{
	const char *end = memchr(s, '\0', room);
	const char *p;

	if (!end)
		return false;
	for (p = s; p < end; p++)
		if (iscntrl((unsigned char)*p))
			return false;
	return true;
}

/* What settings.c's table allows (property 1). */
static void check_values(const struct settings *s)
{
	FUZZ_CHECK(s->port <= 65535, "port %u", s->port);
	FUZZ_CHECK(str_ok(s->listen, sizeof(s->listen)), "listen");
	FUZZ_CHECK(str_ok(s->unixsocket, sizeof(s->unixsocket)), "unixsocket");
	FUZZ_CHECK(s->unixsocket_perm <= 0777, "unixsocket_perm");
	FUZZ_CHECK(s->backlog >= 1 && s->backlog <= 65535, "backlog");
	FUZZ_CHECK(s->maxconns >= 1 && s->maxconns <= 1000000, "maxconns");
	FUZZ_CHECK(s->idle_timeout <= 86400u * 365, "idle_timeout");
	FUZZ_CHECK(s->threads >= 1 && s->threads <= 512, "threads");
	FUZZ_CHECK(s->maxbytes <= SIZE_MAX / 2, "maxbytes");
	FUZZ_CHECK(s->reqs_per_event >= 1 && s->reqs_per_event <= 1u << 30,
		   "reqs_per_event");
	FUZZ_CHECK(s->shards <= 4096 && !(s->shards & (s->shards - 1)),
		   "shards %u", s->shards);
	FUZZ_CHECK(s->hash_power >= 8 && s->hash_power <= 30, "hash_power");
	FUZZ_CHECK(s->proto.item_size_max >= 1024 &&
		   s->proto.item_size_max <= 1024u * 1024 * 1024,
		   "max_item_size %zu", s->proto.item_size_max);
	FUZZ_CHECK(s->proto.range_max >= 1 && s->proto.range_max <= 1000000,
		   "range_max");
	FUZZ_CHECK(s->proto.verbose >= 0 && s->proto.verbose <= 3,
		   "verbosity");
	FUZZ_CHECK(str_ok(s->pidfile, sizeof(s->pidfile)), "pidfile");
	FUZZ_CHECK(str_ok(s->user, sizeof(s->user)), "user");
	FUZZ_CHECK(str_ok(s->logfile, sizeof(s->logfile)), "logfile");
}

static void check_same(const char *how, const struct result *a,
		       const struct result *b)
{
	FUZZ_CHECK(a->ret == b->ret, "%s: returned %d, else %d", how, a->ret,
		   b->ret);
	FUZZ_CHECK(!strcmp(a->err, b->err), "%s: \"%s\", else \"%s\"", how,
		   a->err, b->err);
	FUZZ_CHECK(!memcmp(&a->s, &b->s, sizeof(a->s)),
		   "%s: different settings", how);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct result *one, *two, *other;
	unsigned long lines = 1, cut_line = 0, i;
	size_t cut = 0, n;
	char *crlf;
	const char *text, *text2;

	if (size > CONF_FILE_MAX)
		return 0;
	one = malloc(sizeof(*one));
	two = malloc(sizeof(*two));
	other = malloc(sizeof(*other));
	crlf = malloc(2 * size + 1);
	if (!one || !two || !other || !crlf)
		abort();

	for (i = 0; i < size; i++)
		if (buf[i] == '\n')
			lines++;

	/* property 1 */
	parse_fresh(one, buf, size);
	if (one->ret) {
		unsigned long l = err_line(one, &text);

		FUZZ_CHECK(l >= 1 && l <= lines, "error on line %lu of %lu",
			   l, lines);
	} else {
		check_values(&one->s);
		/* and the whole set may be finished without harm */
		memcpy(other, one, sizeof(*one));
		settings_finish(&other->s, other->err, sizeof(other->err));
	}

	/* property 2: cut after the middle newline */
	for (i = 0; i < size; i++) {
		if (buf[i] == '\n' && ++cut_line == lines / 2) {
			cut = i + 1;
			break;
		}
	}
	if (cut) {
		parse_fresh(two, buf, cut);
		if (!two->ret) {
			parse_into(two, buf + cut, size - cut);
			if (two->ret) {
				/* the second call counts lines from 1 */
				unsigned long l1 = err_line(one, &text);
				unsigned long l2 = err_line(two, &text2);

				FUZZ_CHECK(one->ret && l1 == l2 + cut_line &&
					   !strcmp(text, text2),
					   "cut: \"%s\", whole \"%s\"",
					   two->err, one->err);
				two->ret = one->ret;
				memcpy(two->err, one->err, sizeof(two->err));
			}
		}
		check_same("cut at a line", one, two);
	}
	if (!one->ret) {
		memcpy(two, one, sizeof(*one));
		parse_into(two, buf, size);
		check_same("parsed twice", one, two);
	}

	/* property 3 */
	for (i = 0, n = 0; i < size; i++) {
		if (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r'))
			crlf[n++] = '\r';
		crlf[n++] = buf[i];
	}
	if (n <= CONF_FILE_MAX) {
		parse_fresh(two, crlf, n);
		check_same("\\r\\n", one, two);
	}

	free(crlf);
	free(other);
	free(two);
	free(one);
	return 0;
}
