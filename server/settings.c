// SPDX-License-Identifier: MIT
/*
 * settings.c - the table of settings, the defaults and checks made from
 * it, the config directives, and the checks that need every setting
 * (settings_finish()).
 *
 * Each setting is one row of setting_table: its config directive, its
 * command-line options, its type and bounds (or its own parser), its
 * default written as the directive's value, and its help. settings_init()
 * applies the defaults through the same parsers a config file goes
 * through; the config-file parser (conf.c) and the command line
 * (cmdline.c, which also prints --help from the rows) both go through
 * setting_apply(), so they accept the same values and word their errors
 * the same way, in words made from the row (setting_expect()).
 */
#include "settings.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "settings_table.h"

struct settings settings;

#define THREADS_MAX		512
#define MAXCONNS_MAX		1000000
#define RANGE_MAX_MAX		1000000
#define SHARDS_MAX		4096
#define HASH_POWER_MIN		8
#define HASH_POWER_MAX		30
#define HASH_BITS_MIN		4
#define HASH_POWER_FLOOR	8	/* the least hash_power accepts */
#define HASH_SHARE_OF_LIMIT	64	/* first slots: at most 1/64 of -m */
#define ITEM_SIZE_MIN		1024u
#define ITEM_SIZE_MAX		(1024u * 1024 * 1024)

/* ---- value parsers: 0 or -EINVAL, and @s untouched on failure ---- */

/* A decimal without sign, spaces or junk, at most @max. */
static int parse_u64(const char *v, uint64_t max, uint64_t *out)
{
	uint64_t n = 0;

	if (!*v)
		return -EINVAL;
	for (; *v; v++) {
		uint64_t d = (uint64_t)(*v - '0');

		if (*v < '0' || *v > '9')
			return -EINVAL;
		if (d > max || n > (max - d) / 10)
			return -EINVAL;
		n = n * 10 + d;
	}
	*out = n;
	return 0;
}

static int parse_uint_range(const char *v, unsigned int min, unsigned int max,
			    unsigned int *out)
{
	uint64_t n;

	if (parse_u64(v, max, &n) || n < min)
		return -EINVAL;
	*out = (unsigned int)n;
	return 0;
}

static int parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = { "yes", "on", "true", "1" };
	static const char *const no[] = { "no", "off", "false", "0" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(yes); i++) {
		if (!strcasecmp(v, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(v, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * A size: digits, then an optional unit k, m or g (any case, optionally
 * followed by "b"). Without a unit the number counts @unit bytes.
 */
static int parse_size(const char *v, uint64_t unit, uint64_t max,
		      uint64_t *out)
{
	char digits[32];
	size_t n = strspn(v, "0123456789");
	const char *u = v + n;
	uint64_t num, mult = unit;

	if (n == 0 || n >= sizeof(digits))
		return -EINVAL;
	memcpy(digits, v, n);
	digits[n] = '\0';
	if (*u) {
		switch (tolower((unsigned char)*u)) {
		case 'k':
			mult = 1024;
			break;
		case 'm':
			mult = 1024 * 1024;
			break;
		case 'g':
			mult = 1024 * 1024 * 1024;
			break;
		default:
			return -EINVAL;
		}
		u++;
		if (*u == 'b' || *u == 'B')
			u++;
		if (*u)
			return -EINVAL;
	}
	if (parse_u64(digits, max / mult, &num))
		return -EINVAL;
	*out = num * mult;
	return 0;
}

/* Copies a string setting; refuses one that does not fit or has controls. */
static int parse_string(const char *v, char *dst, size_t room)
{
	size_t len = strlen(v);
	size_t i;

	if (len >= room)
		return -EINVAL;
	for (i = 0; i < len; i++)
		if (iscntrl((unsigned char)v[i]))
			return -EINVAL;
	memcpy(dst, v, len + 1);
	return 0;
}

bool settings_notls(const char **addr, size_t *len)
{
	if (*len <= SETTINGS_NOTLS_LEN ||
	    memcmp(*addr, SETTINGS_NOTLS, SETTINGS_NOTLS_LEN))
		return false;
	*addr += SETTINGS_NOTLS_LEN;
	*len -= SETTINGS_NOTLS_LEN;
	return true;
}

/* One -l address: host, host:port, [v6] or [v6]:port, or a bare v6. */
static bool listen_token_valid(const char *t, size_t len)
{
	const char *port = NULL;
	size_t colons = 0, i;
	uint64_t p;
	char buf[8];

	settings_notls(&t, &len);
	if (len == 0)
		return false;
	for (i = 0; i < len; i++)
		if (!isgraph((unsigned char)t[i]))
			return false;
	if (t[0] == '[') {
		const char *close = memchr(t, ']', len);

		if (!close || close == t + 1)
			return false;
		if (close + 1 < t + len) {
			if (close[1] != ':')
				return false;
			port = close + 2;
		}
	} else {
		for (i = 0; i < len; i++)
			colons += t[i] == ':';
		if (colons == 1) {
			port = (const char *)memchr(t, ':', len) + 1;
			if (port == t + 1)
				return false;
		}
	}
	if (port) {
		size_t plen = (size_t)(t + len - port);

		if (plen == 0 || plen >= sizeof(buf))
			return false;
		memcpy(buf, port, plen);
		buf[plen] = '\0';
		if (parse_u64(buf, 65535, &p) || p == 0)
			return false;
	}
	return true;
}

/* Accepts commas and/or spaces between addresses; stores commas. */
static int set_listen(struct settings *s, const char *v)
{
	char out[SETTINGS_LISTEN_MAX];
	size_t o = 0;
	const char *p = v;

	while (*p) {
		size_t len;

		p += strspn(p, ", \t");
		if (!*p)
			break;
		len = strcspn(p, ", \t");
		if (!listen_token_valid(p, len))
			return -EINVAL;
		if (o + len + 2 > sizeof(out))
			return -EINVAL;
		if (o)
			out[o++] = ',';
		memcpy(out + o, p, len);
		o += len;
		p += len;
	}
	if (o == 0)
		return -EINVAL;
	out[o] = '\0';
	memcpy(s->listen, out, o + 1);
	return 0;
}

static int set_unixsocket_perm(struct settings *s, const char *v)
{
	unsigned int m = 0;
	const char *p;

	if (!*v || strlen(v) > 4)
		return -EINVAL;
	for (p = v; *p; p++) {
		if (*p < '0' || *p > '7')
			return -EINVAL;
		m = m * 8 + (unsigned int)(*p - '0');
	}
	if (m > 0777)
		return -EINVAL;
	s->unixsocket_perm = m;
	return 0;
}

static int set_memory(struct settings *s, const char *v)
{
	uint64_t n;

	/* a bare number is megabytes, as memcached's -m */
	if (parse_size(v, 1024 * 1024, (uint64_t)SIZE_MAX / 2, &n))
		return -EINVAL;
	s->maxbytes = (size_t)n;
	return 0;
}

static int set_shards(struct settings *s, const char *v)
{
	unsigned int n;

	if (!strcasecmp(v, "auto")) {
		s->shards = 0;
		return 0;
	}
	if (parse_uint_range(v, 0, SHARDS_MAX, &n) || (n & (n - 1)))
		return -EINVAL;
	s->shards = n;
	return 0;
}

static int set_item_size_max(struct settings *s, const char *v)
{
	uint64_t n;

	/* a bare number is bytes, as memcached's -I */
	if (parse_size(v, 1, ITEM_SIZE_MAX, &n) || n < ITEM_SIZE_MIN)
		return -EINVAL;
	s->proto.item_size_max = (size_t)n;
	return 0;
}

static int set_verbosity(struct settings *s, const char *v)
{
	unsigned int n;

	if (parse_uint_range(v, 0, 3, &n))
		return -EINVAL;
	s->proto.verbose = (int)n;
	return 0;
}

/* The file itself is read at start-up (server/auth.c), not here. */
static int set_auth_file(struct settings *s, const char *v)
{
	if (!*v)
		return -EINVAL;
	return parse_string(v, s->auth_file, sizeof(s->auth_file));
}
/* -B: memcached's words for its binding protocol */
static int set_protocol(struct settings *s, const char *v)
{
	if (!strcmp(v, "auto"))
		s->proto.binding = PROTO_BIND_AUTO;
	else if (!strcmp(v, "ascii"))
		s->proto.binding = PROTO_BIND_ASCII;
	else if (!strcmp(v, "binary"))
		s->proto.binding = PROTO_BIND_BINARY;
	else
		return -EINVAL;
	s->binding_set = true;
	return 0;
}

/* memcached's numbers (2, 3) or the names it prints (tlsv1.2, tlsv1.3);
 * TLS 1.0 and 1.1 (memcached's 0 and 1) are not offered */
static int set_ssl_min_version(struct settings *s, const char *v)
{
	if (!strcmp(v, "2") || !strcasecmp(v, "tlsv1.2"))
		s->tls.min_version = 2;
	else if (!strcmp(v, "3") || !strcasecmp(v, "tlsv1.3"))
		s->tls.min_version = 3;
	else
		return -EINVAL;
	return 0;
}

/* kilobytes, as memcached's */
static int set_ssl_wbuf_size(struct settings *s, const char *v)
{
	unsigned int kb;

	if (parse_uint_range(v, 1, 1024, &kb))
		return -EINVAL;
	s->tls.wbuf_size = kb * 1024;
	return 0;
}

/*
 * The row helpers: a field's offset, checked at compile time to be of the
 * type its row reads (a row cannot write an int through an unsigned).
 */
#define FIELD_OF(f, type)						\
	(offsetof(struct settings, f) +					\
	 0 * sizeof(char[__builtin_types_compatible_p(			\
		__typeof__(((struct settings *)0)->f), type) ? 1 : -1]))
#define UINT(f, lo, hi)	.type = SETTING_UINT, .off = FIELD_OF(f, unsigned int), \
			.min = (lo), .max = (hi)
#define BOOL(f)		.type = SETTING_BOOL, .off = FIELD_OF(f, bool)
#define STRING(f)	.type = SETTING_STRING, .off = offsetof(struct settings, f), \
			.room = sizeof(((struct settings *)0)->f)
#define OTHER(fn)	.type = SETTING_OTHER, .set = (fn)

const struct setting_desc setting_table[] = {
	/* network */
	{ "port", 'p', "port", NULL, UINT(port, 0, 65535), .def = "11211",
	  .arg = "<num>", .help = "TCP port; 0 turns TCP off" },
	{ "listen", 'l', "listen", NULL, OTHER(set_listen),
	  .def = "127.0.0.1", .arg = "<addr>",
	  .expect = "addresses separated by commas: host, host:port, "
		    "[ipv6]:port",
	  .help = "addresses to listen on, comma separated, each host, "
		  "host:port or [ipv6]:port; with -Z, notls:<addr> keeps one "
		  "plain" },
	{ "unixsocket", 's', "unix-socket", NULL, STRING(unixsocket),
	  .arg = "<file>", .help = "UNIX socket; disables TCP, as memcached" },
	{ "unixsocket_perm", 'a', "unix-mask", NULL, OTHER(set_unixsocket_perm),
	  .def = "700", .arg = "<mask>", .expect = "an octal mode such as 700",
	  .help = "UNIX socket mode, octal" },
	{ "listen_backlog", 'b', "listen-backlog", NULL, UINT(backlog, 1, 65535),
	  .def = "1024", .arg = "<num>", .help = "listen backlog" },
	{ "max_connections", 'c', "conn-limit", NULL,
	  UINT(maxconns, 1, MAXCONNS_MAX), .def = "1024", .arg = "<num>",
	  .help = "max simultaneous connections" },
	{ "idle_timeout", OPT_IDLE_TIMEOUT, "idle-timeout", NULL,
	  UINT(idle_timeout, 0, 86400 * 365), .def = "0", .arg = "<secs>",
	  .help = "close connections idle this many seconds; 0 never" },
	/* threads and memory */
	{ "threads", 't', "threads", NULL, UINT(threads, 1, THREADS_MAX),
	  .def = "4", .arg = "<num>", .help = "worker threads" },
	{ "memory_limit", 'm', "memory-limit", NULL, OTHER(set_memory),
	  .def = "64", .arg = "<num>",
	  .expect = "megabytes, or a size with a unit such as 512k, 64m or 2g",
	  .help = "item memory in megabytes, or with a unit k/m/g; 0 for no "
		  "limit" },
	{ "evict", 'M', "disable-evictions", "no", BOOL(evict), .def = "yes",
	  .help = "answer SERVER_ERROR out of memory instead of evicting" },
	{ "reqs_per_event", 'R', "max-reqs-per-event", NULL,
	  UINT(reqs_per_event, 1, 1u << 30), .def = "20", .arg = "<n>",
	  .help = "requests per connection per event" },
	{ "shards", OPT_SHARDS, "shards", NULL, OTHER(set_shards),
	  .def = "auto", .arg = "<n>",
	  .expect = "auto, or a power of two 1..4096",
	  .help = "store shards, a power of two, or auto: as many as the "
		  "threads" },
	{ "hash_power", OPT_HASH_POWER, "hash-power", NULL,
	  UINT(hash_power, HASH_POWER_MIN, HASH_POWER_MAX), .def = "16",
	  .arg = "<n>",
	  .help = "log2 of the initial hash slots over all shards" },
	{ "max_item_size", 'I', "max-item-size", NULL, OTHER(set_item_size_max),
	  .def = "1m", .arg = "<size>",
	  .expect = "a size from 1k to 1024m, such as 1m or 4096",
	  .help = "largest item, 1k..1024m" },
	{ "range_max", OPT_RANGE_MAX, "range-max", NULL,
	  UINT(proto.range_max, 1, RANGE_MAX_MAX), .def = "10000",
	  .arg = "<n>", .help = "cap of <count> in range commands" },
	{ "cas", 'C', "disable-cas", "no", BOOL(proto.cas_enabled),
	  .def = "yes", .help = "disable CAS" },
	{ "flush_enabled", 'F', "disable-flush-all", "no",
	  BOOL(proto.flush_enabled), .def = "yes",
	  .help = "disable flush_all" },
	{ "shutdown_enabled", 'A', "enable-shutdown", "yes",
	  BOOL(proto.shutdown_enabled), .def = "no",
	  .help = "enable the shutdown command" },
	{ "verbosity", 0, NULL, NULL, OTHER(set_verbosity), .def = "0",
	  .arg = "<n>", .expect = "an integer 0..3",
	  .help = "0 start, stop and errors; 1 also connections; 2 (or 3) "
		  "also commands and each read and write; -v and -vv set 1 "
		  "and 2" },
	/* process */
	{ "daemonize", 'd', "daemon", "yes", BOOL(daemonize), .def = "no",
	  .help = "run as a daemon" },
	{ "pidfile", 'P', "pidfile", NULL, STRING(pidfile), .arg = "<file>",
	  .help = "write the pid to <file>" },
	{ "user", 'u', "user", NULL, STRING(user), .arg = "<user>",
	  .expect = "a user name",
	  .help = "when started as root, switch to <user> after binding "
		  "(root without -u is allowed)" },
	{ "logfile", OPT_LOGFILE, "logfile", NULL, STRING(logfile),
	  .arg = "<file>", .help = "log to <file> instead of stderr" },
	/* security */
	{ "auth_file", 'Y', "auth-file", NULL, OTHER(set_auth_file),
	  .arg = "<file>",
	  .expect = "the path of a file of user:password lines",
	  .help = "require a user and password from <file> (user:password "
		  "lines) on every connection, as memcached's -Y" },
	{ "protocol", 'B', "protocol", NULL, OTHER(set_protocol),
	  .def = "auto", .arg = "<p>", .expect = "auto, ascii or binary",
	  .help = "auto (a connection's first byte decides), ascii, or "
		  "binary; -Y implies ascii" },
	{ "sasl", 'S', "enable-sasl", "yes", BOOL(proto.sasl), .def = "no",
	  .help = "the binary protocol only, with a SASL PLAIN login as a "
		  "user of -Y's file" },
	/* warm restart */
	{ "snapshot_file", 'e', "memory-file", NULL, STRING(snapshot_file),
	  .arg = "<file>",
	  .help = "warm restart: load <file> at start, write it at a "
		  "graceful stop (SIGUSR1, shutdown graceful)" },
	{ "snapshot_on_exit", OPT_SNAPSHOT_ON_EXIT, "snapshot-on-exit", NULL,
	  BOOL(snapshot_on_exit), .def = "no", .arg = "yes|no",
	  .help = "SIGTERM and SIGINT write it too" },
	/* TLS: -Z, and memcached's -o ssl_*=... */
	{ "ssl_enabled", 'Z', "enable-ssl", "yes", BOOL(tls.enabled),
	  .def = "no",
	  .help = "TLS on every TCP listener (OpenSSL; TLS 1.2 and 1.3), set "
		  "up with the -o ssl_* options below" },
	{ "ssl_chain_cert", 0, NULL, NULL, STRING(tls.chain_cert),
	  .arg = "<file>", .help = "certificate chain, PEM" },
	{ "ssl_key", 0, NULL, NULL, STRING(tls.key), .arg = "<file>",
	  .help = "private key, when not in the chain file" },
	{ "ssl_ca_cert", 0, NULL, NULL, STRING(tls.ca_cert), .arg = "<file>",
	  .help = "CAs whose client certificates are accepted" },
	{ "ssl_ciphers", 0, NULL, NULL, STRING(tls.ciphers), .arg = "<list>",
	  .expect = "an OpenSSL cipher list of at most 511 bytes",
	  .help = "OpenSSL cipher list for TLS 1.2" },
	{ "ssl_verify_mode", 0, NULL, NULL, UINT(tls.verify_mode, 0, 3),
	  .def = "0", .arg = "0..3",
	  .help = "client certificates: 0 none, 1 request, 2 require, 3 "
		  "once" },
	{ "ssl_min_version", 0, NULL, NULL, OTHER(set_ssl_min_version),
	  .def = "2", .arg = "2|3", .expect = "2 or tlsv1.2, 3 or tlsv1.3",
	  .help = "lowest TLS: 2 or tlsv1.2, 3 or tlsv1.3" },
	{ "ssl_keyformat", 0, NULL, NULL, UINT(tls.keyformat, 1, 2),
	  .def = "1", .arg = "1|2", .help = "key file format: 1 PEM, 2 DER" },
	{ "ssl_wbuf_size", 0, NULL, NULL, OTHER(set_ssl_wbuf_size),
	  .def = "16", .arg = "<kb>", .expect = "kilobytes 1..1024",
	  .help = "reply bytes gathered into one record, kilobytes" },
	{ "ssl_session_cache", 0, NULL, NULL, BOOL(tls.session_cache),
	  .def = "no", .help = "server-side session resumption" },
	{ "ssl_kernel_tls", 0, NULL, NULL, BOOL(tls.kernel_tls), .def = "no",
	  .help = "kernel TLS offload when available" },
	{ "ssl_handshake_timeout", 0, NULL, NULL,
	  UINT(tls.handshake_timeout, 0, 3600), .def = "5", .arg = "<secs>",
	  .help = "close a client whose handshake is not done by then; 0 "
		  "never" },
};

#undef FIELD_OF
#undef UINT
#undef BOOL
#undef STRING
#undef OTHER

_Static_assert(ARRAY_SIZE(setting_table) == SETTINGS_NR,
	       "SETTINGS_NR counts the rows of setting_table");

/* Set @d from @v by its type. Return: 0, or -EINVAL with @s untouched. */
static int setting_parse(struct settings *s, const struct setting_desc *d,
			 const char *v)
{
	char *field = (char *)s + d->off;
	unsigned int n;

	switch (d->type) {
	case SETTING_UINT:
		if (parse_uint_range(v, d->min, d->max, &n))
			return -EINVAL;
		memcpy(field, &n, sizeof(n));
		return 0;
	case SETTING_BOOL:
		return parse_bool(v, (bool *)field);
	case SETTING_STRING:
		return parse_string(v, field, d->room);
	case SETTING_OTHER:
		return d->set(s, v);
	}
	return -EINVAL;
}

void setting_expect(const struct setting_desc *d, char *out, size_t room)
{
	if (d->expect)
		snprintf(out, room, "%s", d->expect);
	else if (d->type == SETTING_UINT)
		snprintf(out, room, "an integer %u..%u", d->min, d->max);
	else if (d->type == SETTING_BOOL)
		snprintf(out, room, "yes or no");
	else if (d->type == SETTING_STRING)
		snprintf(out, room, "a path of at most %zu bytes",
			 d->room - 1);
	else	/* every OTHER row words its own (test_conf checks) */
		snprintf(out, room, "a valid value");
}

void settings_init(struct settings *s)
{
	size_t i;

	memset(s, 0, sizeof(*s));
	s->prefix_delimiter = ':';	/* -D's, not a directive */
	for (i = 0; i < SETTINGS_NR; i++) {
		const struct setting_desc *d = &setting_table[i];

		/* a default its own row refuses is a bug (test_conf) */
		if (d->def && setting_parse(s, d, d->def))
			abort();
	}
	s->binding_set = false;		/* the default is not -B given */
}

const struct setting_desc *setting_by_name(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(setting_table); i++)
		if (!strcmp(setting_table[i].name, name))
			return &setting_table[i];
	return NULL;
}

const struct setting_desc *setting_by_opt(int opt)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(setting_table); i++)
		if (setting_table[i].opt == opt)
			return &setting_table[i];
	return NULL;
}

/* Quotes a user's value for a message: printable, bounded. */
void setting_quote(const char *v, char *out, size_t room)
{
	size_t o = 0, i;

	for (i = 0; v[i] && o + 5 < room; i++) {
		unsigned char ch = (unsigned char)v[i];

		if (i == 60) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		if (isprint(ch) && ch != '"' && ch != '\\') {
			out[o++] = (char)ch;
		} else {
			int n = snprintf(out + o, room - o, "\\x%02x", ch);

			if (n < 0 || (size_t)n >= room - o)
				break;
			o += (size_t)n;
		}
	}
	out[o] = '\0';
}

/*
 * Sets @d from @value; on failure writes
 * `invalid value for NAME (OPT): "VALUE" (expected EXPECT)` to @err, where
 * the "(OPT)" part appears only when @opt is not NULL.
 */
int setting_apply(struct settings *s, const struct setting_desc *d,
			 const char *value, const char *opt, char *err,
			 size_t errlen)
{
	char q[256], expect[160];

	if (setting_parse(s, d, value) == 0)
		return 0;
	setting_quote(value, q, sizeof(q));
	setting_expect(d, expect, sizeof(expect));
	if (opt && *opt)
		snprintf(err, errlen,
			 "invalid value for %s (%s): \"%s\" (expected %s)",
			 d->name, opt, q, expect);
	else
		snprintf(err, errlen,
			 "invalid value for %s: \"%s\" (expected %s)",
			 d->name, q, expect);
	return -EINVAL;
}

int settings_set(struct settings *s, const char *name, const char *value,
		 char *err, size_t errlen)
{
	const struct setting_desc *d = setting_by_name(name);

	if (!d) {
		char q[256];

		setting_quote(name, q, sizeof(q));
		snprintf(err, errlen, "unknown directive \"%s\"", q);
		return -ENOENT;
	}
	return setting_apply(s, d, value, NULL, err, errlen);
}

static unsigned int log2_floor(unsigned int n)
{
	unsigned int l = 0;

	while (n >>= 1)
		l++;
	return l;
}

int settings_finish(struct settings *s, char *err, size_t errlen)
{
	unsigned int shift, power;

	if (s->shards == 0) {
		/*
		 * One shard per worker thread: a range and a count visit
		 * every shard, so each one more costs every range a descent
		 * (docs/architecture.md, "Scaling"); more shards only lower
		 * lock contention on many cores.
		 */
		unsigned int want = s->threads, n = 1;

		while (n < want && n < SHARDS_MAX)
			n <<= 1;
		s->shards = n;
	}
	/*
	 * The first hash tables take at most 1/HASH_SHARE_OF_LIMIT of the
	 * memory limit (which does not count them, as memcached's -m does
	 * not count its table): a small -m gets a small table; they grow
	 * with the items.
	 */
	power = s->hash_power;
	while (s->maxbytes && power > HASH_POWER_FLOOR &&
	       (sizeof(void *) << power) > s->maxbytes / HASH_SHARE_OF_LIMIT)
		power--;
	shift = log2_floor(s->shards);
	s->hash_bits = power > shift + HASH_BITS_MIN ?
		       power - shift : HASH_BITS_MIN;
	if (s->maxbytes && s->proto.item_size_max > s->maxbytes / 2) {
		snprintf(err, errlen, "max_item_size (-I) %zu is above half "
			 "of memory_limit (-m) %zu bytes; raise -m or lower -I",
			 s->proto.item_size_max, s->maxbytes);
		return -EINVAL;
	}
	if (strstr(s->listen, SETTINGS_NOTLS) && !s->tls.enabled) {
		/* memcached's words */
		snprintf(err, errlen, "'notls' option is valid only when SSL "
			 "is enabled (-Z)");
		return -EINVAL;
	}
	if (s->tls.enabled && (s->unixsocket[0] || s->port == 0)) {
		snprintf(err, errlen, "TLS (-Z) needs a TCP port: %s",
			 s->unixsocket[0] ? "a unix socket (-s) replaces TCP "
			 "and is not encrypted" : "port (-p) is 0");
		return -EINVAL;
	}
	if (s->tls.enabled && !s->tls.chain_cert[0]) {
		snprintf(err, errlen, "TLS (-Z) needs a certificate: "
			 "-o ssl_chain_cert=FILE (and ssl_key=FILE when the "
			 "key is not in it)");
		return -EINVAL;
	}
	/*
	 * As memcached: SASL (-S) is for the binary protocol only, and then
	 * -Y's file (or memcached's MEMCACHED_SASL_PWDB) holds its users;
	 * ascii authentication (-Y alone) is for ascii only.
	 */
	if (s->proto.sasl) {
		const char *pwdb = getenv("MEMCACHED_SASL_PWDB");

		if (s->binding_set && s->proto.binding != PROTO_BIND_BINARY) {
			snprintf(err, errlen, "the ascii protocol (-B %s) "
				 "cannot be allowed with SASL (-S): use -B "
				 "binary", s->proto.binding == PROTO_BIND_AUTO ?
				 "auto" : "ascii");
			return -EINVAL;
		}
		s->proto.binding = PROTO_BIND_BINARY;
		if (!s->auth_file[0] && pwdb && *pwdb &&
		    parse_string(pwdb, s->auth_file, sizeof(s->auth_file))) {
			snprintf(err, errlen, "MEMCACHED_SASL_PWDB is too long");
			return -EINVAL;
		}
		if (!s->auth_file[0]) {
			snprintf(err, errlen, "SASL (-S) needs a file of "
				 "user:password lines: -Y FILE (or "
				 "MEMCACHED_SASL_PWDB=FILE)");
			return -EINVAL;
		}
	} else if (s->auth_file[0]) {
		if (s->binding_set && s->proto.binding != PROTO_BIND_ASCII) {
			snprintf(err, errlen, "the binary protocol (-B %s) "
				 "cannot be allowed with ascii authentication "
				 "(-Y): use -B ascii",
				 s->proto.binding == PROTO_BIND_AUTO ? "auto" :
				 "binary");
			return -EINVAL;
		}
		s->proto.binding = PROTO_BIND_ASCII;
	}
	if (s->port == 0 && !s->unixsocket[0]) {
		snprintf(err, errlen, "nothing to listen on: port (-p) is 0 "
			 "and no unixsocket (-s) is set");
		return -EINVAL;
	}
	return 0;
}
