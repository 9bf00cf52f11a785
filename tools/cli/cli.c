// SPDX-License-Identifier: MIT
/*
 * cli.c - anchorkv-cli: the command-line client of anchorkv, as redis-cli
 * is Redis's.
 *
 *   anchorkv-cli [-h HOST] [-p PORT] [command ...]     one-shot
 *   anchorkv-cli                                       interactive
 *   ... | anchorkv-cli                                 commands from a pipe
 *   anchorkv-cli --stat [-i SECONDS] [-r COUNT]        counters every second
 *   anchorkv-cli --servers a:p,b:p,c:p | --servers pool.yml  a cluster
 *
 * With several servers a command on a key goes to the server that
 * twemproxy's ketama ring gives it (ring.c), a command on the keyspace
 * (range, ranges, rrange, rranges, keys) goes to every server and the
 * answers are merged in keyspace order, page by page, and count and
 * delete_range add up. The range commands are always paged here: without
 * a <count> they list the whole range. See anchorkv-cli.1.
 */
#include <errno.h>
#include <editline/readline.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ask.h"
#include "base64.h"
#include "conn.h"
#include "merge.h"
#include "ring.h"
#include "version.h"

volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* ------------------------------------------------------------------ */
/* the other commands                                                   */

/* Whether @w is a storage command: a data block follows its line. */
static bool is_storage(const char *w)
{
	return !strcmp(w, "set") || !strcmp(w, "add") ||
	       !strcmp(w, "replace") || !strcmp(w, "append") ||
	       !strcmp(w, "prepend") || !strcmp(w, "cas") || !strcmp(w, "ms");
}

/* The server of a command on one key: the ring's choice. */
static struct server *server_of(struct cli *c, const struct line *l,
				unsigned int keytok)
{
	if (keytok >= l->ntok)
		return &c->ring.servers[0];
	return &c->ring.servers[ring_server(&c->ring, l->tok[keytok],
					    l->len[keytok])];
}

/* get/gets/gat/gats over several servers: each is asked for its keys;
 * the values come out in the order asked. */
static void run_get(struct cli *c, const struct line *l, unsigned int first)
{
	unsigned int n = c->ring.nservers, i, k;
	struct buf *replies = calloc(n, sizeof(*replies));
	struct buf out = { 0 };

	for (i = 0; i < n; i++) {
		struct line q = *l;

		q.ntok = first;
		for (k = first; k < l->ntok; k++)
			if (ring_server(&c->ring, l->tok[k], l->len[k]) == i) {
				q.tok[q.ntok] = l->tok[k];
				q.len[q.ntok++] = l->len[k];
			}
		if (q.ntok == first)
			continue;
		if (ask(c, &c->ring.servers[i], &q, &replies[i])) {
			server_failed(c, &c->ring.servers[i]);
			goto out;
		}
		if (line_is_error(replies[i].p, replies[i].len)) {
			print_reply(c, replies[i].p, replies[i].len);
			c->status = 1;
			goto out;
		}
	}
	/* each key's VALUE block, from its server's reply */
	for (k = first; k < l->ntok; k++) {
		struct buf *r = &replies[ring_server(&c->ring, l->tok[k],
						     l->len[k])];
		const char *p = r->p, *end = r->p + r->len;

		while (p && p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t len = (size_t)(nl - p) - 1;
			long vlen = reply_field_num(p, len, 3);
			const char *next;

			if (len < 6 || memcmp(p, "VALUE ", 6) || vlen < 0)
				break;
			next = nl + 1 + vlen + 2;
			if (len > 6 + l->len[k] &&
			    !memcmp(p + 6, l->tok[k], l->len[k]) &&
			    p[6 + l->len[k]] == ' ') {
				buf_add(&out, p, (size_t)(next - p));
				break;
			}
			p = next;
		}
	}
	buf_adds(&out, "END\r\n");
	print_reply(c, out.p, out.len);
out:
	for (i = 0; i < n; i++)
		buf_free(&replies[i]);
	free(replies);
	buf_free(&out);
}

/* A command with no key (stats, version, flush_all, ...): every server,
 * each reply under its address when there are several. */
static void run_all(struct cli *c, const struct line *l)
{
	struct buf out = { 0 };
	unsigned int i;

	for (i = 0; i < c->ring.nservers; i++) {
		struct server *s = &c->ring.servers[i];

		out.len = 0;
		if (ask(c, s, l, &out)) {
			if (shape_of(l) == SHAPE_NONE)
				continue;
			server_failed(c, s);
			if (!c->partial)
				break;
			continue;
		}
		if (c->cluster && !c->raw)
			printf("# %s\n", s->addr);
		print_reply(c, out.p, out.len);
		if (line_is_error(out.p, out.len))
			c->status = 1;
		if (shape_of(l) == SHAPE_NONE)
			server_close(s);
	}
	buf_free(&out);
}

static void run_line(struct cli *c, struct line *l)
{
	const char *w = l->tok[0];
	struct buf out = { 0 };
	struct server *s;
	unsigned int keytok = 1;

	c->status = 0;
	if (!strcmp(w, "range") || !strcmp(w, "ranges") ||
	    !strcmp(w, "rrange") || !strcmp(w, "rranges") ||
	    !strcmp(w, "keys")) {
		run_range(c, l);
		return;
	}
	if (!strcmp(w, "count") || !strcmp(w, "delete_range")) {
		run_sum(c, l);
		return;
	}
	if (!strcmp(w, "gat") || !strcmp(w, "gats"))
		keytok = 2;
	if (!strcmp(w, "get") || !strcmp(w, "gets") || !strcmp(w, "gat") ||
	    !strcmp(w, "gats")) {
		if (c->ring.nservers > 1) {
			run_get(c, l, keytok);
			return;
		}
	} else if (!is_storage(w) && strcmp(w, "delete") && strcmp(w, "incr") &&
		   strcmp(w, "decr") && strcmp(w, "touch") && strcmp(w, "mg") &&
		   strcmp(w, "md") && strcmp(w, "ma") && strcmp(w, "me")) {
		run_all(c, l);
		return;
	}
	s = server_of(c, l, keytok);
	if (ask(c, s, l, &out)) {
		server_failed(c, s);
	} else {
		print_reply(c, out.p, out.len);
		if (line_is_error(out.p, out.len))
			c->status = 1;
	}
	buf_free(&out);
}

/* Splits @text into @l's tokens (in place). Return: the token count. */
static unsigned int tokenize(char *text, struct line *l)
{
	char *p = text;

	memset(l, 0, sizeof(*l));
	while (*p && l->ntok < MAX_TOKENS) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		l->tok[l->ntok] = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		l->len[l->ntok] = (size_t)(p - l->tok[l->ntok]);
		l->ntok++;
		if (*p)
			*p++ = '\0';
	}
	return l->ntok;
}

/*
 * A typed storage command's value: its last token when the line holds more
 * than the command's own (set/add/replace/append/prepend: 5, cas: 6, with
 * a noreply one more), else the next line; for ms, whose flags are many,
 * always the next line.
 */
static int storage_data(struct line *l, char *(*next)(void *), void *arg,
			char **owned)
{
	unsigned int own = !strcmp(l->tok[0], "cas") ? 6 : 5;

	*owned = NULL;
	if (strcmp(l->tok[0], "ms")) {
		unsigned int nr = l->ntok > own &&
				  !strcmp(l->tok[own], "noreply");

		if (l->ntok > own + nr) {
			l->data = l->tok[l->ntok - 1];
			l->ndata = l->len[l->ntok - 1];
			l->ntok--;
			return 0;
		}
	}
	*owned = next(arg);
	if (!*owned)
		return -1;
	l->data = *owned;
	l->ndata = strlen(*owned);
	return 0;
}

/* ------------------------------------------------------------------ */
/* modes                                                                */

static char *next_stdin(void *arg)
{
	char *p = NULL;
	size_t cap = 0;
	ssize_t n = getline(&p, &cap, stdin);

	(void)arg;
	if (n < 0) {
		free(p);
		return NULL;
	}
	while (n && (p[n - 1] == '\n' || p[n - 1] == '\r'))
		p[--n] = '\0';
	return p;
}

static char *next_readline(void *arg)
{
	return readline((const char *)arg);
}

/* Runs one typed line. Return: false to stop (quit). */
static bool run_text(struct cli *c, char *text, char *(*next)(void *),
		     void *arg)
{
	struct line l;
	char *owned = NULL;
	bool go_on = true;

	if (!tokenize(text, &l))
		return true;
	if (!strcmp(l.tok[0], "quit") || !strcmp(l.tok[0], "exit"))
		return false;
	if (is_storage(l.tok[0]) && storage_data(&l, next, arg, &owned)) {
		fprintf(stderr, "anchorkv-cli: %s: no data\n", l.tok[0]);
		c->status = 1;
		return false;
	}
	run_line(c, &l);
	fflush(stdout);
	free(owned);
	return go_on;
}

static int run_pipe(struct cli *c)
{
	char *text;
	int worst = 0;

	while ((text = next_stdin(NULL))) {
		bool go_on = run_text(c, text, next_stdin, NULL);

		free(text);
		if (c->status)
			worst = c->status;
		if (!go_on)
			break;
	}
	return worst;
}

static int run_interactive(struct cli *c)
{
	char prompt[320], hist[4096] = "";
	const char *home = getenv("HOME");
	char *text;

	if (home)
		snprintf(hist, sizeof(hist), "%s/.anchorkv_cli_history", home);
	if (hist[0])
		read_history(hist);
	if (c->cluster)
		snprintf(prompt, sizeof(prompt), "anchorkv[%u servers]> ",
			 c->ring.nservers);
	else
		snprintf(prompt, sizeof(prompt), "%s> ",
			 c->ring.servers[0].addr);
	while ((text = readline(prompt))) {
		bool go_on;

		if (*text)
			add_history(text);
		go_on = run_text(c, text, next_readline, (void *)"");
		free(text);
		if (!go_on)
			break;
	}
	if (hist[0])
		write_history(hist);
	return 0;
}

static const char *human(unsigned long long v, char *buf, size_t len)
{
	static const char unit[] = "BKMGT";
	double d = (double)v;
	int i = 0;

	while (d >= 1024 && i < 4) {
		d /= 1024;
		i++;
	}
	snprintf(buf, len, i ? "%.2f%c" : "%.0f%c", d, unit[i]);
	return buf;
}

/* The counters --stat shows, summed over the servers. */
struct counters {
	unsigned long long items, bytes, conns, gets, sets, hits, misses,
			   evictions;
};

static int read_counters(struct cli *c, struct counters *t)
{
	static const struct line stats = { .tok = { "stats" },
					   .len = { 5 }, .ntok = 1 };
	struct buf out = { 0 };
	unsigned int i;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < c->ring.nservers; i++) {
		struct server *s = &c->ring.servers[i];
		const char *p;

		out.len = 0;
		if (ask(c, s, &stats, &out)) {
			if (c->partial)
				continue;
			server_failed(c, s);
			buf_free(&out);
			return -1;
		}
		for (p = out.p; p && *p; p = strchr(p, '\n'), p = p ? p + 1 :
		     NULL) {
			char name[64];
			unsigned long long v;

			if (sscanf(p, "STAT %63s %llu", name, &v) != 2)
				continue;
			if (!strcmp(name, "curr_items"))
				t->items += v;
			else if (!strcmp(name, "bytes"))
				t->bytes += v;
			else if (!strcmp(name, "curr_connections"))
				t->conns += v;
			else if (!strcmp(name, "cmd_get"))
				t->gets += v;
			else if (!strcmp(name, "cmd_set"))
				t->sets += v;
			else if (!strcmp(name, "get_hits"))
				t->hits += v;
			else if (!strcmp(name, "get_misses"))
				t->misses += v;
			else if (!strcmp(name, "evictions"))
				t->evictions += v;
		}
	}
	buf_free(&out);
	return 0;
}

/* --stat: a line of the main counters every interval, as redis-cli's. */
static int run_stat(struct cli *c, double interval, long repeat)
{
	struct counters prev, cur;
	struct timespec ts = { (time_t)interval,
			       (long)((interval - (long)interval) * 1e9) };
	long n;

	if (read_counters(c, &prev))
		return 1;
	for (n = 0; (repeat < 0 || n < repeat) && !interrupted; n++) {
		char mem[32];
		unsigned long long dh, dm;

		nanosleep(&ts, NULL);
		if (interrupted)
			break;
		if (read_counters(c, &cur))
			return 1;
		if (n % 20 == 0)
			printf("%-12s %-10s %-8s %-12s %-12s %-7s %s\n",
			       "items", "mem", "clients", "gets/s", "sets/s",
			       "hit%", "evictions");
		dh = cur.hits - prev.hits;
		dm = cur.misses - prev.misses;
		printf("%-12llu %-10s %-8llu %-12.0f %-12.0f %-7.1f %llu\n",
		       cur.items, human(cur.bytes, mem, sizeof(mem)),
		       cur.conns, (double)(cur.gets - prev.gets) / interval,
		       (double)(cur.sets - prev.sets) / interval,
		       dh + dm ? 100.0 * (double)dh / (double)(dh + dm) : 0.0,
		       cur.evictions);
		fflush(stdout);
		prev = cur;
	}
	return 0;
}

static void usage(FILE *f)
{
	fputs("Usage: anchorkv-cli [options] [command [arg ...]]\n"
	      "  -h, --host <host>       server host (default: 127.0.0.1)\n"
	      "  -p, --port <port>       server port (default: 11211)\n"
	      "  --servers <list|file>   several servers: host:port,host:port"
	      ",...\n"
	      "                          or a nutcracker.yml (its first pool)"
	      "\n"
	      "  --partial               with --servers: leave a server that "
	      "does not\n"
	      "                          answer out of a range, count or --stat"
	      "\n"
	      "                          (a warning says so) instead of failing"
	      "\n"
	      "  --raw / --no-raw        replies as received / readable (default"
	      ":\n"
	      "                          readable on a terminal, raw otherwise)"
	      "\n"
	      "  --stat                  a line of counters every interval\n"
	      "  -i <seconds>            --stat's interval (default: 1)\n"
	      "  -r <count>              --stat's lines (default: until Ctrl-C)"
	      "\n"
	      "  -t <ms>                 reply timeout (default: 5000)\n"
	      "  --help, --version\n"
	      "Without a command: commands from standard input when it is not "
	      "a\n"
	      "terminal, else an interactive prompt. A storage command's value"
	      " is the\n"
	      "last argument, or the line after the command.\n", f);
}

/*
 * The servers: --servers (a list, or twemproxy's YAML), else the one of
 * -h and -p. Return: 0, or -1 after saying why.
 */
static int cli_ring(struct cli *c, const char *servers, const char *host,
		    const char *port)
{
	char err[512], addr[300];
	int rc;

	if (servers) {
		size_t n = strlen(servers);

		c->cluster = true;
		if ((n > 4 && !strcmp(servers + n - 4, ".yml")) ||
		    (n > 5 && !strcmp(servers + n - 5, ".yaml")))
			rc = ring_parse_yml(&c->ring, servers, err,
					    sizeof(err));
		else
			rc = ring_parse_list(&c->ring, servers, err,
					     sizeof(err));
	} else {
		snprintf(addr, sizeof(addr), "%s:%s", host, port);
		rc = ring_parse_list(&c->ring, addr, err, sizeof(err));
	}
	if (rc || ring_build(&c->ring)) {
		fprintf(stderr, "anchorkv-cli: %s\n", rc ? err :
			"out of memory");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct cli c = { .timeout_ms = 5000 };
	const char *host = "127.0.0.1", *port = "11211", *servers = NULL;
	bool stat = false, raw_set = false;
	double interval = 1;
	long repeat = -1;
	int i, rc = 0;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;

		if ((!strcmp(a, "-h") || !strcmp(a, "--host")) && more) {
			host = argv[++i];
		} else if ((!strcmp(a, "-p") || !strcmp(a, "--port")) && more) {
			port = argv[++i];
		} else if (!strcmp(a, "--servers") && more) {
			servers = argv[++i];
		} else if (!strcmp(a, "--partial")) {
			c.partial = true;
		} else if (!strcmp(a, "--raw") || !strcmp(a, "--no-raw")) {
			c.raw = !strcmp(a, "--raw");
			raw_set = true;
		} else if (!strcmp(a, "--stat")) {
			stat = true;
		} else if (!strcmp(a, "-i") && more) {
			interval = atof(argv[++i]);
		} else if (!strcmp(a, "-r") && more) {
			repeat = atol(argv[++i]);
		} else if (!strcmp(a, "-t") && more) {
			c.timeout_ms = atoi(argv[++i]);
		} else if (!strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--version")) {
			puts("anchorkv-cli " ANCHORKV_VERSION);
			return 0;
		} else {
			fprintf(stderr, "anchorkv-cli: unknown option %s\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (interval <= 0 || c.timeout_ms <= 0) {
		fprintf(stderr, "anchorkv-cli: -i and -t take a positive "
			"number\n");
		return 2;
	}
	if (cli_ring(&c, servers, host, port))
		return 2;
	if (!raw_set)
		c.raw = !isatty(STDOUT_FILENO);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGINT, on_sigint);

	if (stat) {
		rc = run_stat(&c, interval, repeat);
	} else if (i < argc) {
		/* one-shot: an argument is a token; a storage command's
		 * last one is its value, whatever bytes it holds */
		struct line l;

		memset(&l, 0, sizeof(l));
		for (; i < argc && l.ntok < MAX_TOKENS; i++) {
			l.tok[l.ntok] = argv[i];
			l.len[l.ntok++] = strlen(argv[i]);
		}
		if (is_storage(l.tok[0]) && l.ntok > 2) {
			l.ntok--;
			l.data = l.tok[l.ntok];
			l.ndata = l.len[l.ntok];
		}
		run_line(&c, &l);
		rc = c.status;
	} else if (!isatty(STDIN_FILENO)) {
		rc = run_pipe(&c);
	} else {
		rc = run_interactive(&c);
	}
	fflush(stdout);
	ring_free(&c.ring);
	return rc;
}
