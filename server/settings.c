// SPDX-License-Identifier: MIT
/*
 * settings.c - defaults, the table of settings, the config directives,
 * and the checks that need every setting (settings_finish()).
 *
 * Each setting is one row of setting_table: its config directive, its
 * command-line options, its parser, and a phrase saying what it expects.
 * The config-file parser (conf.c) and the command line (cmdline.c) both
 * go through setting_apply(), so they accept the same values and word
 * their errors the same way.
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
#define HASH_SHARE_OF_LIMIT	64	/* first buckets: at most 1/64 of -m */
#define ITEM_SIZE_MIN		1024u
#define ITEM_SIZE_MAX		(1024u * 1024 * 1024)

void settings_init(struct settings *s)
{
	memset(s, 0, sizeof(*s));
	s->port = 11211;
	snprintf(s->listen, sizeof(s->listen), "%s", "127.0.0.1");
	s->unixsocket_perm = 0700;
	s->backlog = 1024;
	s->maxconns = 1024;
	s->idle_timeout = 0;
	s->threads = 4;
	s->maxbytes = 64u * 1024 * 1024;
	s->evict = true;
	s->reqs_per_event = 20;
	s->prefix_delimiter = ':';
	s->shards = 0;
	s->hash_power = 16;
	s->proto.item_size_max = 1024 * 1024;
	s->proto.range_max = 10000;
	s->proto.cas_enabled = true;
	s->proto.flush_enabled = true;
	s->proto.shutdown_enabled = false;
	s->proto.verbose = 0;
	s->tls.verify_mode = 0;
	s->tls.min_version = 2;
	s->tls.keyformat = 1;
	s->tls.wbuf_size = 16 * 1024;
	s->tls.handshake_timeout = 5;
}

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

static int set_port(struct settings *s, const char *v)
{
	return parse_uint_range(v, 0, 65535, &s->port);
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

static int set_unixsocket(struct settings *s, const char *v)
{
	return parse_string(v, s->unixsocket, sizeof(s->unixsocket));
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

static int set_backlog(struct settings *s, const char *v)
{
	return parse_uint_range(v, 1, 65535, &s->backlog);
}

static int set_maxconns(struct settings *s, const char *v)
{
	return parse_uint_range(v, 1, MAXCONNS_MAX, &s->maxconns);
}

static int set_idle_timeout(struct settings *s, const char *v)
{
	return parse_uint_range(v, 0, 86400 * 365, &s->idle_timeout);
}

static int set_threads(struct settings *s, const char *v)
{
	return parse_uint_range(v, 1, THREADS_MAX, &s->threads);
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

static int set_evict(struct settings *s, const char *v)
{
	return parse_bool(v, &s->evict);
}

static int set_reqs_per_event(struct settings *s, const char *v)
{
	return parse_uint_range(v, 1, 1u << 30, &s->reqs_per_event);
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

static int set_hash_power(struct settings *s, const char *v)
{
	return parse_uint_range(v, HASH_POWER_MIN, HASH_POWER_MAX,
				&s->hash_power);
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

static int set_range_max(struct settings *s, const char *v)
{
	return parse_uint_range(v, 1, RANGE_MAX_MAX, &s->proto.range_max);
}

static int set_cas(struct settings *s, const char *v)
{
	return parse_bool(v, &s->proto.cas_enabled);
}

static int set_flush(struct settings *s, const char *v)
{
	return parse_bool(v, &s->proto.flush_enabled);
}

static int set_shutdown(struct settings *s, const char *v)
{
	return parse_bool(v, &s->proto.shutdown_enabled);
}

static int set_verbosity(struct settings *s, const char *v)
{
	unsigned int n;

	if (parse_uint_range(v, 0, 3, &n))
		return -EINVAL;
	s->proto.verbose = (int)n;
	return 0;
}

static int set_daemonize(struct settings *s, const char *v)
{
	return parse_bool(v, &s->daemonize);
}

static int set_pidfile(struct settings *s, const char *v)
{
	return parse_string(v, s->pidfile, sizeof(s->pidfile));
}

static int set_user(struct settings *s, const char *v)
{
	return parse_string(v, s->user, sizeof(s->user));
}

static int set_logfile(struct settings *s, const char *v)
{
	return parse_string(v, s->logfile, sizeof(s->logfile));
}

static int set_snapshot_file(struct settings *s, const char *v)
{
	return parse_string(v, s->snapshot_file, sizeof(s->snapshot_file));
}

static int set_snapshot_on_exit(struct settings *s, const char *v)
{
	return parse_bool(v, &s->snapshot_on_exit);
}

/* The file itself is read at start-up (server/auth.c), not here. */
static int set_auth_file(struct settings *s, const char *v)
{
	if (!*v)
		return -EINVAL;
	return parse_string(v, s->auth_file, sizeof(s->auth_file));
}
static int set_sasl(struct settings *s, const char *v)
{
	return parse_bool(v, &s->proto.sasl);
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

static int set_tls(struct settings *s, const char *v)
{
	return parse_bool(v, &s->tls.enabled);
}

static int set_ssl_chain_cert(struct settings *s, const char *v)
{
	return parse_string(v, s->tls.chain_cert, sizeof(s->tls.chain_cert));
}

static int set_ssl_key(struct settings *s, const char *v)
{
	return parse_string(v, s->tls.key, sizeof(s->tls.key));
}

static int set_ssl_ca_cert(struct settings *s, const char *v)
{
	return parse_string(v, s->tls.ca_cert, sizeof(s->tls.ca_cert));
}

static int set_ssl_ciphers(struct settings *s, const char *v)
{
	return parse_string(v, s->tls.ciphers, sizeof(s->tls.ciphers));
}

static int set_ssl_verify_mode(struct settings *s, const char *v)
{
	return parse_uint_range(v, 0, 3, &s->tls.verify_mode);
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

static int set_ssl_keyformat(struct settings *s, const char *v)
{
	return parse_uint_range(v, 1, 2, &s->tls.keyformat);
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

static int set_ssl_session_cache(struct settings *s, const char *v)
{
	return parse_bool(v, &s->tls.session_cache);
}

static int set_ssl_kernel_tls(struct settings *s, const char *v)
{
	return parse_bool(v, &s->tls.kernel_tls);
}

static int set_ssl_handshake_timeout(struct settings *s, const char *v)
{
	return parse_uint_range(v, 0, 3600, &s->tls.handshake_timeout);
}

const struct setting_desc setting_table[] = {
	{ "port", 'p', "port", NULL, set_port,
	  "a port number 0..65535" },
	{ "listen", 'l', "listen", NULL, set_listen,
	  "addresses separated by commas: host, host:port, [ipv6]:port" },
	{ "unixsocket", 's', "unix-socket", NULL, set_unixsocket,
	  "a path of at most 107 bytes" },
	{ "unixsocket_perm", 'a', "unix-mask", NULL, set_unixsocket_perm,
	  "an octal mode such as 700" },
	{ "listen_backlog", 'b', "listen-backlog", NULL, set_backlog,
	  "an integer 1..65535" },
	{ "max_connections", 'c', "conn-limit", NULL, set_maxconns,
	  "an integer 1..1000000" },
	{ "idle_timeout", OPT_IDLE_TIMEOUT, "idle-timeout", NULL,
	  set_idle_timeout, "seconds, 0 for never" },
	{ "threads", 't', "threads", NULL, set_threads,
	  "an integer 1..512" },
	{ "memory_limit", 'm', "memory-limit", NULL, set_memory,
	  "megabytes, or a size with a unit such as 512k, 64m or 2g" },
	{ "evict", 'M', "disable-evictions", "no", set_evict,
	  "yes or no" },
	{ "reqs_per_event", 'R', "max-reqs-per-event", NULL,
	  set_reqs_per_event, "an integer 1..1073741824" },
	{ "shards", OPT_SHARDS, "shards", NULL, set_shards,
	  "auto, or a power of two 1..4096" },
	{ "hash_power", OPT_HASH_POWER, "hash-power", NULL, set_hash_power,
	  "an integer 8..30" },
	{ "max_item_size", 'I', "max-item-size", NULL, set_item_size_max,
	  "a size from 1k to 1024m, such as 1m or 4096" },
	{ "range_max", OPT_RANGE_MAX, "range-max", NULL, set_range_max,
	  "an integer 1..1000000" },
	{ "cas", 'C', "disable-cas", "no", set_cas, "yes or no" },
	{ "flush_enabled", 'F', "disable-flush-all", "no", set_flush,
	  "yes or no" },
	{ "shutdown_enabled", 'A', "enable-shutdown", "yes", set_shutdown,
	  "yes or no" },
	{ "verbosity", 0, NULL, NULL, set_verbosity, "an integer 0..3" },
	{ "daemonize", 'd', "daemon", "yes", set_daemonize, "yes or no" },
	{ "pidfile", 'P', "pidfile", NULL, set_pidfile,
	  "a path of at most 1023 bytes" },
	{ "user", 'u', "user", NULL, set_user, "a user name" },
	{ "logfile", OPT_LOGFILE, "logfile", NULL, set_logfile,
	  "a path of at most 1023 bytes" },
	{ "auth_file", 'Y', "auth-file", NULL, set_auth_file,
	  "the path of a file of user:password lines" },
	{ "protocol", 'B', "protocol", NULL, set_protocol,
	  "auto, ascii or binary" },
	{ "sasl", 'S', "enable-sasl", "yes", set_sasl, "yes or no" },
	{ "snapshot_file", 'e', "memory-file", NULL, set_snapshot_file,
	  "a path of at most 1023 bytes" },
	{ "snapshot_on_exit", OPT_SNAPSHOT_ON_EXIT, "snapshot-on-exit", NULL,
	  set_snapshot_on_exit, "yes or no" },
	{ "ssl_enabled", 'Z', "enable-ssl", "yes", set_tls, "yes or no" },
	{ "ssl_chain_cert", 0, NULL, NULL, set_ssl_chain_cert,
	  "a path of at most 1023 bytes" },
	{ "ssl_key", 0, NULL, NULL, set_ssl_key,
	  "a path of at most 1023 bytes" },
	{ "ssl_ca_cert", 0, NULL, NULL, set_ssl_ca_cert,
	  "a path of at most 1023 bytes" },
	{ "ssl_ciphers", 0, NULL, NULL, set_ssl_ciphers,
	  "an OpenSSL cipher list of at most 511 bytes" },
	{ "ssl_verify_mode", 0, NULL, NULL, set_ssl_verify_mode,
	  "0 (none), 1 (request), 2 (require) or 3 (once)" },
	{ "ssl_min_version", 0, NULL, NULL, set_ssl_min_version,
	  "2 or tlsv1.2, 3 or tlsv1.3" },
	{ "ssl_keyformat", 0, NULL, NULL, set_ssl_keyformat,
	  "1 (PEM) or 2 (DER)" },
	{ "ssl_wbuf_size", 0, NULL, NULL, set_ssl_wbuf_size,
	  "kilobytes 1..1024" },
	{ "ssl_session_cache", 0, NULL, NULL, set_ssl_session_cache,
	  "yes or no" },
	{ "ssl_kernel_tls", 0, NULL, NULL, set_ssl_kernel_tls,
	  "yes or no" },
	{ "ssl_handshake_timeout", 0, NULL, NULL, set_ssl_handshake_timeout,
	  "seconds 0..3600, 0 for none" },
};

_Static_assert(ARRAY_SIZE(setting_table) == SETTINGS_NR,
	       "SETTINGS_NR counts the rows of setting_table");

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
	char q[256];

	if (d->set(s, value) == 0)
		return 0;
	setting_quote(value, q, sizeof(q));
	if (opt && *opt)
		snprintf(err, errlen,
			 "invalid value for %s (%s): \"%s\" (expected %s)",
			 d->name, opt, q, d->expect);
	else
		snprintf(err, errlen,
			 "invalid value for %s: \"%s\" (expected %s)",
			 d->name, q, d->expect);
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
