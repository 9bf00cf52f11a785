// SPDX-License-Identifier: MIT
/*
 * akbench.c - the load and range client of `make bench`.
 *
 * It speaks the memcached text protocol and RESP (Redis), over a few TCP
 * connections served by one thread with poll(2), and checks every reply.
 *
 *   akbench load  -P mc|resp -p PORT -n N [-s FIRST] [-x PREFIX] [-d BYTES]
 *                 [-c CONNS] [-D DEPTH] [-z ZKEY]
 *	Stores the keys PREFIX<i> for i = FIRST .. FIRST + N - 1 with a value
 *	of BYTES bytes (set / SET), or with -z adds them to the sorted set
 *	ZKEY (ZADD ZKEY <score> <member>: score 0 when PREFIX is not empty,
 *	else i). Each connection has DEPTH requests in flight. Prints the
 *	number of replies that were not the expected one; exits 1 if any.
 *
 *   akbench range -P mc|resp -p PORT -m MODE -n N [-x PREFIX] [-l LIMIT]
 *                 [-c CONNS] [-T SECONDS] [-e EXPECTED] [-z ZKEY]
 *	Closed loop: each connection sends one request, waits for the whole
 *	reply, checks it and sends the next, for SECONDS. The start key is a
 *	random one of the keys PREFIX<i>, i < N, chosen so that at least
 *	LIMIT keys follow it in key order (bytewise for strings, by value
 *	for integers). MODE is one of
 *	  range, keys      anchorkv: range|keys [<start> + LIMIT
 *	  count            anchorkv: count - +         (expects EXPECTED)
 *	  zlex             ZRANGEBYLEX ZKEY [<start> + LIMIT 0 LIMIT
 *	  zscore           ZRANGE ZKEY <start> +inf BYSCORE LIMIT 0 LIMIT
 *	  zlexcount        ZLEXCOUNT ZKEY - +          (expects EXPECTED)
 *	  zcount           ZCOUNT ZKEY -inf +inf       (expects EXPECTED)
 *	Every reply must hold exactly LIMIT entries (or the count EXPECTED).
 *	The three counts without -e count a range of LIMIT keys instead,
 *	from <start> to the LIMIT-th key from it, <end> (expects LIMIT):
 *	count [<start> [<end>, ZLEXCOUNT ZKEY [<start> [<end>, ZCOUNT ZKEY
 *	<start> <end>.
 *	Prints requests/s and the p50 and p99 latency of every request.
 *
 * A bench tool, not the server: it allocates with libc and exits on
 * failure.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define AKB_MAX_CONNS	256
#define AKB_KEY_MAX	256

enum akb_proto { AKB_MC, AKB_RESP };

enum akb_mode {
	AKB_LOAD, AKB_RANGE, AKB_KEYS, AKB_COUNT,
	AKB_ZLEX, AKB_ZSCORE, AKB_ZLEXCOUNT, AKB_ZCOUNT, AKB_MG,
};

struct akb_opts {
	enum akb_proto proto;
	enum akb_mode mode;
	int port;
	unsigned long long n;		/* keys */
	unsigned long long first;	/* first key index (load) */
	const char *prefix;
	const char *zkey;
	int value_len;
	int conns;
	int depth;
	int limit;
	double seconds;
	long long expected;
};

/* A growable byte buffer. */
struct akb_buf {
	char *data;
	size_t len;
	size_t cap;
};

struct akb_conn {
	int fd;
	struct akb_buf in;
	struct akb_buf out;
	int inflight;
	uint64_t sent_ns;
};

/* Latency samples of the range mode, in nanoseconds. */
struct akb_samples {
	uint64_t *ns;
	size_t len;
	size_t cap;
};

static void akb_die(const char *what)
{
	perror(what);
	exit(2);
}

static uint64_t akb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void akb_buf_reserve(struct akb_buf *b, size_t more)
{
	if (b->len + more <= b->cap)
		return;
	while (b->len + more > b->cap)
		b->cap = b->cap ? b->cap * 2 : 4096;
	b->data = realloc(b->data, b->cap);
	if (!b->data)
		akb_die("realloc");
}

static void akb_buf_add(struct akb_buf *b, const void *p, size_t n)
{
	akb_buf_reserve(b, n);
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void akb_buf_printf(struct akb_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void akb_buf_printf(struct akb_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	akb_buf_reserve(b, 512);
	va_start(ap, fmt);
	n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		akb_die("vsnprintf");
	if ((size_t)n >= b->cap - b->len) {
		akb_buf_reserve(b, (size_t)n + 1);
		va_start(ap, fmt);
		vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

/* Appends one RESP array of argc bulk strings. */
static void akb_resp_cmd(struct akb_buf *b, int argc, const char **argv)
{
	int i;

	akb_buf_printf(b, "*%d\r\n", argc);
	for (i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]);

		akb_buf_printf(b, "$%zu\r\n", n);
		akb_buf_add(b, argv[i], n);
		akb_buf_add(b, "\r\n", 2);
	}
}

static int akb_connect(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd, one = 1;

	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		akb_die("socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		akb_die("connect");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void akb_write_all(struct akb_conn *c)
{
	size_t off = 0;

	while (off < c->out.len) {
		ssize_t n = write(c->fd, c->out.data + off, c->out.len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			akb_die("write");
		off += (size_t)n;
	}
	c->out.len = 0;
}

/* Reads what is there; returns false at end of stream. */
static bool akb_read_some(struct akb_conn *c)
{
	ssize_t n;

	akb_buf_reserve(&c->in, 65536);
	n = read(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len);
	if (n < 0 && errno == EINTR)
		return true;
	if (n <= 0)
		return false;
	c->in.len += (size_t)n;
	return true;
}

static void akb_consume(struct akb_buf *b, size_t n)
{
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
}

/* Length of the line at p (without its \r\n), or -1 if incomplete. */
static long akb_line(const char *p, size_t len)
{
	const char *nl = memchr(p, '\n', len);

	if (!nl || nl == p || nl[-1] != '\r')
		return -1;
	return nl - p - 1;
}

/*
 * akb_parse_mc() - parse one memcached text reply of a range command:
 * VALUE (range: <bytes> is the last token) or KEY entries up to END, a COUNT line, or one error line.
 * Returns the bytes used (0: incomplete); *entries gets the number of
 * entries or the count, -1 for an error line.
 */
static size_t akb_parse_mc(const char *p, size_t len, long long *entries)
{
	size_t pos = 0;
	long long n = 0;

	for (;;) {
		long ll = akb_line(p + pos, len - pos);
		const char *l = p + pos;

		if (ll < 0)
			return 0;
		if (ll == 3 && !memcmp(l, "END", 3)) {
			*entries = n;
			return pos + 5;
		}
		if (ll > 6 && !memcmp(l, "COUNT ", 6) && n == 0) {
			*entries = strtoll(l + 6, NULL, 10);
			return pos + (size_t)ll + 2;
		}
		if (ll > 4 && !memcmp(l, "KEY ", 4)) {
			n++;
			pos += (size_t)ll + 2;
			continue;
		}
		/* mg replies, a batch closed by mn's MN */
		if (ll == 2 && !memcmp(l, "MN", 2)) {
			*entries = n;
			return pos + 4;
		}
		if (ll == 2 && !memcmp(l, "EN", 2)) {
			pos += 4;
			continue;
		}
		if (ll > 3 && !memcmp(l, "VA ", 3)) {
			size_t need = pos + (size_t)ll + 2 +
				      strtoull(l + 3, NULL, 10) + 2;

			if (need > len)
				return 0;
			n++;
			pos = need;
			continue;
		}
		if (ll > 6 && !memcmp(l, "VALUE ", 6)) {
			const char *sp = memrchr(l, ' ', (size_t)ll);
			size_t bytes = strtoull(sp + 1, NULL, 10);
			size_t need = pos + (size_t)ll + 2 + bytes + 2;

			if (need > len)
				return 0;
			n++;
			pos = need;
			continue;
		}
		*entries = -1;
		return pos + (size_t)ll + 2;
	}
}

/*
 * akb_parse_resp() - parse one RESP reply: an array of bulk strings, an
 * integer, a simple string or an error. Returns the bytes used (0:
 * incomplete); *entries gets the array length or the integer, -1 for an
 * error or anything else.
 */
static size_t akb_parse_resp(const char *p, size_t len, long long *entries)
{
	long ll = akb_line(p, len);
	size_t pos;
	long long i, n;

	if (ll < 0)
		return 0;
	pos = (size_t)ll + 2;
	if (p[0] == ':') {
		*entries = strtoll(p + 1, NULL, 10);
		return pos;
	}
	if (p[0] != '*') {
		*entries = -1;
		return pos;
	}
	n = strtoll(p + 1, NULL, 10);
	for (i = 0; i < n; i++) {
		long bl = akb_line(p + pos, len - pos);
		long long blen;

		if (bl < 0)
			return 0;
		if (p[pos] != '$') {
			*entries = -1;
			return pos + (size_t)bl + 2;
		}
		blen = strtoll(p + pos + 1, NULL, 10);
		pos += (size_t)bl + 2;
		if (blen >= 0) {
			if (pos + (size_t)blen + 2 > len)
				return 0;
			pos += (size_t)blen + 2;
		}
	}
	*entries = n;
	return pos;
}

/* ---- load ---- */

static void akb_key(char *dst, const struct akb_opts *o, unsigned long long i)
{
	snprintf(dst, AKB_KEY_MAX, "%s%llu", o->prefix, i);
}

static void akb_load_request(struct akb_conn *c, const struct akb_opts *o,
			     unsigned long long i, const char *value)
{
	char key[AKB_KEY_MAX], score[32];

	akb_key(key, o, i);
	if (o->zkey) {
		const char *argv[4] = { "ZADD", o->zkey, score, key };

		snprintf(score, sizeof(score), "%llu", o->prefix[0] ? 0 : i);
		akb_resp_cmd(&c->out, 4, argv);
	} else if (o->proto == AKB_RESP) {
		const char *argv[3] = { "SET", key, value };

		akb_resp_cmd(&c->out, 3, argv);
	} else {
		akb_buf_printf(&c->out, "set %s 0 0 %d\r\n%s\r\n", key,
			       o->value_len, value);
	}
}

static int akb_load(const struct akb_opts *o)
{
	struct akb_conn conns[AKB_MAX_CONNS];
	struct pollfd pfd[AKB_MAX_CONNS];
	unsigned long long next = o->first, end = o->first + o->n;
	unsigned long long ok = 0, bad = 0;
	const char *expect;
	char *value;
	uint64_t t0;
	int i, busy;

	expect = o->zkey ? ":1" : o->proto == AKB_RESP ? "+OK" : "STORED";
	value = malloc((size_t)o->value_len + 1);
	if (!value)
		akb_die("malloc");
	memset(value, 'x', (size_t)o->value_len);
	value[o->value_len] = '\0';
	memset(conns, 0, sizeof(conns));
	for (i = 0; i < o->conns; i++)
		conns[i].fd = akb_connect(o->port);

	t0 = akb_now_ns();
	do {
		busy = 0;
		for (i = 0; i < o->conns; i++) {
			struct akb_conn *c = &conns[i];

			if (!c->inflight && next < end) {
				while (c->inflight < o->depth && next < end) {
					akb_load_request(c, o, next++, value);
					c->inflight++;
				}
				akb_write_all(c);
			}
			pfd[i].fd = c->fd;
			pfd[i].events = c->inflight ? POLLIN : 0;
			busy += c->inflight;
		}
		if (!busy)
			break;
		if (poll(pfd, (nfds_t)o->conns, 10000) <= 0)
			akb_die("poll (server stalled?)");
		for (i = 0; i < o->conns; i++) {
			struct akb_conn *c = &conns[i];
			size_t pos = 0;
			long ll;

			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (!akb_read_some(c)) {
				fprintf(stderr, "akbench: connection closed\n");
				return 2;
			}
			while (c->inflight &&
			       (ll = akb_line(c->in.data + pos,
					      c->in.len - pos)) >= 0) {
				if ((size_t)ll == strlen(expect) &&
				    !memcmp(c->in.data + pos, expect, (size_t)ll))
					ok++;
				else if (bad++ < 5)
					fprintf(stderr, "akbench: reply %.*s\n",
						(int)ll, c->in.data + pos);
				pos += (size_t)ll + 2;
				c->inflight--;
			}
			akb_consume(&c->in, pos);
		}
	} while (busy);

	printf("stored=%llu errors=%llu seconds=%.3f rate=%.0f\n", ok, bad,
	       (double)(akb_now_ns() - t0) / 1e9,
	       (double)(ok + bad) * 1e9 / (double)(akb_now_ns() - t0));
	free(value);
	return bad ? 1 : 0;
}

/* ---- range ---- */

static int akb_strcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The keys in key order (strings only; integers need no table). */
static char **akb_sorted_keys(const struct akb_opts *o)
{
	char **keys, key[AKB_KEY_MAX];
	unsigned long long i;

	keys = malloc(o->n * sizeof(*keys));
	if (!keys)
		akb_die("malloc");
	for (i = 0; i < o->n; i++) {
		akb_key(key, o, i);
		keys[i] = strdup(key);
		if (!keys[i])
			akb_die("strdup");
	}
	qsort(keys, o->n, sizeof(*keys), akb_strcmp);
	return keys;
}

static void akb_range_request(struct akb_conn *c, const struct akb_opts *o,
			      char **sorted, unsigned int *seed)
{
	unsigned long long span = o->n - (unsigned long long)o->limit + 1;
	unsigned long long pos = ((unsigned long long)rand_r(seed) << 31 |
				  (unsigned long long)rand_r(seed)) % span;
	char start[AKB_KEY_MAX], end[AKB_KEY_MAX], lim[16];
	char bound[AKB_KEY_MAX + 1], ebound[AKB_KEY_MAX + 1];
	bool bounded = o->expected < 0;	/* a count of LIMIT keys */
	unsigned long long last = pos + (unsigned long long)o->limit - 1;

	if (sorted) {
		snprintf(start, sizeof(start), "%s", sorted[pos]);
		snprintf(end, sizeof(end), "%s", sorted[last]);
	} else {
		snprintf(start, sizeof(start), "%llu", pos);
		snprintf(end, sizeof(end), "%llu", last);
	}
	snprintf(lim, sizeof(lim), "%d", o->limit);
	snprintf(bound, sizeof(bound), "[%s", start);
	snprintf(ebound, sizeof(ebound), "[%s", end);

	switch (o->mode) {
	case AKB_MG: {
		/* LIMIT random keys, pipelined, closed by mn */
		int i;

		for (i = 0; i < o->limit; i++) {
			unsigned long long k = ((unsigned long long)rand_r(seed)
						<< 31 | (unsigned long long)
						rand_r(seed)) % o->n;

			akb_buf_printf(&c->out, "mg %s%llu v\r\n", o->prefix, k);
		}
		akb_buf_printf(&c->out, "mn\r\n");
		break;
	}
	case AKB_RANGE:
		akb_buf_printf(&c->out, "range %s + %d\r\n", bound, o->limit);
		break;
	case AKB_KEYS:
		akb_buf_printf(&c->out, "keys %s + %d\r\n", bound, o->limit);
		break;
	case AKB_COUNT:
		if (bounded)
			akb_buf_printf(&c->out, "count %s %s\r\n", bound,
				       ebound);
		else
			akb_buf_printf(&c->out, "count - +\r\n");
		break;
	case AKB_ZLEX: {
		const char *argv[] = { "ZRANGEBYLEX", o->zkey, bound, "+",
				       "LIMIT", "0", lim };

		akb_resp_cmd(&c->out, 7, argv);
		break;
	}
	case AKB_ZSCORE: {
		const char *argv[] = { "ZRANGE", o->zkey, start, "+inf",
				       "BYSCORE", "LIMIT", "0", lim };

		akb_resp_cmd(&c->out, 8, argv);
		break;
	}
	case AKB_ZLEXCOUNT: {
		const char *argv[] = { "ZLEXCOUNT", o->zkey,
				       bounded ? bound : "-",
				       bounded ? ebound : "+" };

		akb_resp_cmd(&c->out, 4, argv);
		break;
	}
	case AKB_ZCOUNT: {
		const char *argv[] = { "ZCOUNT", o->zkey,
				       bounded ? start : "-inf",
				       bounded ? end : "+inf" };

		akb_resp_cmd(&c->out, 4, argv);
		break;
	}
	default:
		break;
	}
	c->sent_ns = akb_now_ns();
	c->inflight = 1;
	akb_write_all(c);
}

static void akb_sample_add(struct akb_samples *s, uint64_t ns)
{
	if (s->len == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 1 << 16;
		s->ns = realloc(s->ns, s->cap * sizeof(*s->ns));
		if (!s->ns)
			akb_die("realloc");
	}
	s->ns[s->len++] = ns;
}

static int akb_u64cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double akb_pct_us(const struct akb_samples *s, double pct)
{
	size_t i;

	if (!s->len)
		return 0;
	i = (size_t)(pct / 100.0 * (double)(s->len - 1) + 0.5);
	return (double)s->ns[i] / 1e3;
}

static int akb_range(const struct akb_opts *o)
{
	struct akb_conn conns[AKB_MAX_CONNS];
	struct pollfd pfd[AKB_MAX_CONNS];
	struct akb_samples s = { 0 };
	unsigned long long bad = 0;
	bool counting = (o->mode == AKB_COUNT || o->mode == AKB_ZLEXCOUNT ||
			 o->mode == AKB_ZCOUNT) && o->expected >= 0;
	long long want = counting ? o->expected : o->limit;
	char **sorted = NULL;
	unsigned int seed = 12345;
	uint64_t t0, t_end, now;
	size_t ops;
	int i;

	if (!counting && o->n < (unsigned long long)o->limit) {
		fprintf(stderr, "akbench: -n below -l\n");
		return 2;
	}
	if (!counting && o->prefix[0] && o->mode != AKB_MG)
		sorted = akb_sorted_keys(o);
	memset(conns, 0, sizeof(conns));
	for (i = 0; i < o->conns; i++)
		conns[i].fd = akb_connect(o->port);

	t0 = akb_now_ns();
	t_end = t0 + (uint64_t)(o->seconds * 1e9);
	for (i = 0; i < o->conns; i++)
		akb_range_request(&conns[i], o, sorted, &seed);
	for (;;) {
		int live = 0;

		for (i = 0; i < o->conns; i++) {
			pfd[i].fd = conns[i].fd;
			pfd[i].events = conns[i].inflight ? POLLIN : 0;
			live += conns[i].inflight;
		}
		if (!live)
			break;
		if (poll(pfd, (nfds_t)o->conns, 10000) <= 0)
			akb_die("poll (server stalled?)");
		for (i = 0; i < o->conns; i++) {
			struct akb_conn *c = &conns[i];
			long long got = 0;
			size_t used;

			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (!akb_read_some(c)) {
				fprintf(stderr, "akbench: connection closed\n");
				return 2;
			}
			used = o->proto == AKB_MC ?
				akb_parse_mc(c->in.data, c->in.len, &got) :
				akb_parse_resp(c->in.data, c->in.len, &got);
			if (!used)
				continue;
			now = akb_now_ns();
			akb_sample_add(&s, now - c->sent_ns);
			if (got != want && bad++ < 5)
				fprintf(stderr, "akbench: %lld entries, want %lld: %.*s\n",
					got, want, (int)(c->in.len < 80 ? c->in.len : 80),
					c->in.data);
			if (used != c->in.len) {
				fprintf(stderr, "akbench: extra bytes after a reply\n");
				return 2;
			}
			akb_consume(&c->in, used);
			c->inflight = 0;
			if (now < t_end)
				akb_range_request(c, o, sorted, &seed);
		}
	}
	now = akb_now_ns();
	qsort(s.ns, s.len, sizeof(*s.ns), akb_u64cmp);
	/* mg: a request is one key of a batch; latencies are the batch's */
	ops = s.len * (o->mode == AKB_MG ? (size_t)o->limit : 1);
	printf("requests=%zu errors=%llu seconds=%.3f rps=%.0f p50_us=%.1f p99_us=%.1f\n",
	       ops, bad, (double)(now - t0) / 1e9,
	       (double)ops * 1e9 / (double)(now - t0),
	       akb_pct_us(&s, 50), akb_pct_us(&s, 99));
	return bad ? 1 : 0;
}

static void akb_usage(void)
{
	fprintf(stderr,
		"usage: akbench load|range -P mc|resp -p PORT -n N [-s FIRST] [-x PREFIX]\n"
		"       [-d BYTES] [-c CONNS] [-D DEPTH] [-z ZKEY] [-m MODE] [-l LIMIT]\n"
		"       [-T SECONDS] [-e EXPECTED]\n");
	exit(2);
}

static enum akb_mode akb_parse_mode(const char *s)
{
	static const char *const names[] = {
		[AKB_RANGE] = "range", [AKB_KEYS] = "keys",
		[AKB_COUNT] = "count", [AKB_ZLEX] = "zlex",
		[AKB_ZSCORE] = "zscore", [AKB_ZLEXCOUNT] = "zlexcount",
		[AKB_ZCOUNT] = "zcount", [AKB_MG] = "mg",
	};
	size_t i;

	for (i = AKB_RANGE; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i]))
			return (enum akb_mode)i;
	akb_usage();
	return AKB_LOAD;
}

int main(int argc, char **argv)
{
	struct akb_opts o = {
		.proto = AKB_MC, .mode = AKB_LOAD, .prefix = "key:",
		.value_len = 32, .conns = 4, .depth = 64, .limit = 100,
		.seconds = 5, .expected = -1,
	};
	bool load;
	int opt;

	if (argc < 2)
		akb_usage();
	load = !strcmp(argv[1], "load");
	if (!load && strcmp(argv[1], "range"))
		akb_usage();
	if (!load)
		o.mode = AKB_RANGE;
	optind = 2;
	while ((opt = getopt(argc, argv, "P:p:n:s:x:d:c:D:z:m:l:T:e:")) != -1) {
		switch (opt) {
		case 'P':
			o.proto = !strcmp(optarg, "resp") ? AKB_RESP : AKB_MC;
			break;
		case 'p':
			o.port = atoi(optarg);
			break;
		case 'n':
			o.n = strtoull(optarg, NULL, 10);
			break;
		case 's':
			o.first = strtoull(optarg, NULL, 10);
			break;
		case 'x':
			o.prefix = optarg;
			break;
		case 'd':
			o.value_len = atoi(optarg);
			break;
		case 'c':
			o.conns = atoi(optarg);
			break;
		case 'D':
			o.depth = atoi(optarg);
			break;
		case 'z':
			o.zkey = optarg;
			break;
		case 'm':
			o.mode = akb_parse_mode(optarg);
			break;
		case 'l':
			o.limit = atoi(optarg);
			break;
		case 'T':
			o.seconds = atof(optarg);
			break;
		case 'e':
			o.expected = atoll(optarg);
			break;
		default:
			akb_usage();
		}
	}
	if (!o.port || o.conns < 1 || o.conns > AKB_MAX_CONNS ||
	    o.depth < 1 || o.limit < 1 || o.value_len < 0 ||
	    (load && o.mode != AKB_LOAD) || (!load && o.mode == AKB_LOAD))
		akb_usage();
	if (o.zkey)
		o.proto = AKB_RESP;
	return load ? akb_load(&o) : akb_range(&o);
}
