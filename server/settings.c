// SPDX-License-Identifier: MIT
/*
 * settings.c - defaults, the table of settings, and the command line.
 *
 * Each setting is one row of setting_table: its config directive, its
 * command-line options, its parser, and a phrase saying what it expects.
 * The config-file parser (conf.c) and the command line both go through
 * setting_apply(), so they accept the same values and word their errors
 * the same way.
 *
 * The command-line options are memcached 1.6's, with the same letters and
 * long names, except -f, which is the config file here (memcached's slab
 * growth factor has no meaning for anchorkv). memcached options that have
 * no equivalent are accepted with a warning when harmless to ignore, and
 * refused when ignoring them would surprise (UDP, SASL, TLS).
 */
#include "settings.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "version.h"

struct settings settings;

#define THREADS_MAX		512
#define MAXCONNS_MAX		1000000
#define RANGE_MAX_MAX		1000000
#define SHARDS_MAX		4096
#define HASH_POWER_MIN		8
#define HASH_POWER_MAX		30
#define HASH_BITS_MIN		4
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
	s->shards = 0;
	s->hash_power = 16;
	s->proto.item_size_max = 1024 * 1024;
	s->proto.range_max = 10000;
	s->proto.cas_enabled = true;
	s->proto.flush_enabled = true;
	s->proto.shutdown_enabled = false;
	s->proto.verbose = 0;
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

/* One -l address: host, host:port, [v6] or [v6]:port, or a bare v6. */
static bool listen_token_valid(const char *t, size_t len)
{
	const char *port = NULL;
	size_t colons = 0, i;
	uint64_t p;
	char buf[8];

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

/* The file itself is read at start-up (server/auth.c), not here. */
static int set_auth_file(struct settings *s, const char *v)
{
	if (!*v)
		return -EINVAL;
	return parse_string(v, s->auth_file, sizeof(s->auth_file));
}

/* Long-only options get codes above every character. */
enum {
	OPT_SHARDS = 256,
	OPT_RANGE_MAX,
	OPT_HASH_POWER,
	OPT_IDLE_TIMEOUT,
	OPT_LOGFILE,
};

struct setting_desc {
	const char *name;		/* config directive */
	int opt;			/* short option, OPT_*, or 0 */
	const char *longopt;		/* long option or NULL */
	const char *flag_value;		/* option takes no argument: it sets this */
	int (*set)(struct settings *s, const char *v);
	const char *expect;		/* for error messages */
};

static const struct setting_desc setting_table[] = {
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
};

static const struct setting_desc *setting_by_name(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(setting_table); i++)
		if (!strcmp(setting_table[i].name, name))
			return &setting_table[i];
	return NULL;
}

static const struct setting_desc *setting_by_opt(int opt)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(setting_table); i++)
		if (setting_table[i].opt == opt)
			return &setting_table[i];
	return NULL;
}

/* Quotes a user's value for a message: printable, bounded. */
static void quote_value(const char *v, char *out, size_t room)
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

static void opt_name(const struct setting_desc *d, char *out, size_t room)
{
	if (d->opt > 0 && d->opt < 256)
		snprintf(out, room, "-%c", d->opt);
	else if (d->longopt)
		snprintf(out, room, "--%s", d->longopt);
	else
		snprintf(out, room, "%s", "");
}

/*
 * Sets @d from @value; on failure writes
 * `invalid value for NAME (OPT): "VALUE" (expected EXPECT)` to @err, where
 * the "(OPT)" part appears only when @opt is not NULL.
 */
static int setting_apply(struct settings *s, const struct setting_desc *d,
			 const char *value, const char *opt, char *err,
			 size_t errlen)
{
	char q[256];

	if (d->set(s, value) == 0)
		return 0;
	quote_value(value, q, sizeof(q));
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

		quote_value(name, q, sizeof(q));
		snprintf(err, errlen, "unknown directive \"%s\"", q);
		return -ENOENT;
	}
	return setting_apply(s, d, value, NULL, err, errlen);
}

/* ---- command line ---- */

/*
 * Options that set no directive of setting_table: -v counts, the rest act
 * on the run or are memcached's, accepted or refused by name.
 */
static const struct cmdline_opt {
	const char *longopt;
	int opt;
	int has_arg;
} cmdline_only[] = {
	{ "verbose",		'v', no_argument },
	{ "config",		'f', required_argument },
	{ "help",		'h', no_argument },
	{ "version",		'V', no_argument },
	{ "license",		'i', no_argument },
	{ "extended",		'o', required_argument },
	{ "udp-port",		'U', required_argument },
	{ "protocol",		'B', required_argument },
	{ "lock-memory",	'k', no_argument },
	{ "enable-coredumps",	'r', no_argument },
	{ "enable-largepages",	'L', no_argument },
	{ "enable-sasl",	'S', no_argument },
	{ "disable-dumping",	'X', no_argument },
	{ "disable-watch",	'W', no_argument },
	{ "slab-min-size",	'n', required_argument },
	{ NULL,			'D', required_argument },
	{ "memory-file",	'e', required_argument },
	{ "enable-ssl",		'Z', no_argument },
};

#define NR_OPTS	(ARRAY_SIZE(setting_table) + ARRAY_SIZE(cmdline_only))

/* getopt_long()'s lists, made from the two tables above by build_opts() */
static struct option long_opts[NR_OPTS + 1];
static char short_opts[1 + 2 * NR_OPTS + 1];

static void add_opt(size_t *nl, size_t *ns, const char *longopt, int opt,
		    int has_arg)
{
	if (longopt)
		long_opts[(*nl)++] = (struct option){ longopt, has_arg, NULL,
						      opt };
	if (opt > 0 && opt < 256) {
		short_opts[(*ns)++] = (char)opt;
		if (has_arg == required_argument)
			short_opts[(*ns)++] = ':';
	}
}

/* Context: start-up, single threaded (the lists are built once). */
static void build_opts(void)
{
	size_t i, nl = 0, ns = 0;

	if (short_opts[0])
		return;
	short_opts[ns++] = ':';	/* a missing argument is told apart */
	for (i = 0; i < ARRAY_SIZE(setting_table); i++) {
		const struct setting_desc *d = &setting_table[i];

		add_opt(&nl, &ns, d->longopt, d->opt,
			d->flag_value ? no_argument : required_argument);
	}
	for (i = 0; i < ARRAY_SIZE(cmdline_only); i++)
		add_opt(&nl, &ns, cmdline_only[i].longopt, cmdline_only[i].opt,
			cmdline_only[i].has_arg);
	long_opts[nl] = (struct option){ NULL, 0, NULL, 0 };
	short_opts[ns] = '\0';
}

const char *settings_config_path(int argc, char **argv)
{
	const char *path = NULL;
	int c;

	build_opts();
	optind = 0;	/* glibc: full re-initialisation */
	opterr = 0;
	while ((c = getopt_long(argc, argv, short_opts, long_opts, NULL)) != -1)
		if (c == 'f')
			path = optarg;
	optind = 0;
	return path;
}

/* memcached's -o names that describe its slab allocator, LRU threads or
 * extstore: nothing to tune here, so they are ignored with a warning. */
static const char *const ignored_ext[] = {
	"maxconns_fast", "modern", "no_modern", "lru_crawler",
	"no_lru_crawler", "lru_crawler_sleep", "lru_crawler_tocrawl",
	"lru_maintainer", "no_lru_maintainer", "hot_lru_pct", "warm_lru_pct",
	"hot_max_factor", "warm_max_factor", "temporary_ttl", "temp_lru",
	"slab_reassign", "no_slab_reassign", "slab_automove",
	"slab_automove_ratio", "slab_automove_window", "slab_chunk_max",
	"tail_repair_time", "hash_algorithm", "track_sizes",
	"watcher_logbuf_size", "worker_logbuf_size", "read_buf_mem_limit",
	"no_hashexpand", "inline_ascii_response", "no_inline_ascii_response",
	"lru_segmented", "no_lru_segmented", "drop_privileges",
	"no_drop_privileges", "resp_obj_mem_limit", "sock_cookie_id",
};

/* -o a,b=c,...: the memcached extended options that map onto ours. */
static int apply_extended(struct settings *s, const char *arg, char *err,
			  size_t errlen)
{
	char buf[512];
	char *tok, *save = NULL;

	if (strlen(arg) >= sizeof(buf)) {
		snprintf(err, errlen, "-o list too long");
		return -EINVAL;
	}
	memcpy(buf, arg, strlen(arg) + 1);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		const char *val = eq ? eq + 1 : "";
		const struct setting_desc *d = NULL;
		size_t i;
		char q[256];

		if (eq)
			*eq = '\0';
		if (!strcmp(tok, "idle_timeout"))
			d = setting_by_name("idle_timeout");
		else if (!strcmp(tok, "hashpower"))
			d = setting_by_name("hash_power");
		if (d) {
			if (setting_apply(s, d, val, "-o", err, errlen))
				return -EINVAL;
			continue;
		}
		for (i = 0; i < ARRAY_SIZE(ignored_ext); i++)
			if (!strcmp(tok, ignored_ext[i]))
				break;
		quote_value(tok, q, sizeof(q));
		if (i == ARRAY_SIZE(ignored_ext) && strncmp(tok, "ext_", 4) &&
		    strncmp(tok, "ssl_", 4)) {
			snprintf(err, errlen, "unknown extended option (-o): \"%s\"",
				 q);
			return -EINVAL;
		}
		if (!strncmp(tok, "ext_", 4) || !strncmp(tok, "ssl_", 4)) {
			snprintf(err, errlen,
				 "-o %s: extstore and TLS are not supported", q);
			return -EINVAL;
		}
		fprintf(stderr, "anchorkv: ignoring memcached option -o %s "
			"(no equivalent)\n", q);
	}
	return 0;
}

int settings_parse_args(struct settings *s, int argc, char **argv,
			enum settings_action *action, char *err,
			size_t errlen)
{
	int verbose = -1;
	int c;

	*action = SETTINGS_RUN;
	build_opts();
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, short_opts, long_opts, NULL)) != -1) {
		const struct setting_desc *d;
		char opt[40];

		switch (c) {
		case 'h':
			*action = SETTINGS_HELP;
			return 0;
		case 'V':
			*action = SETTINGS_VERSION;
			return 0;
		case 'i':
			printf("anchorkv %s: MIT license. Uses libevent (BSD) "
			       "and jemalloc (BSD).\n", ANCHORKV_VERSION);
			*action = SETTINGS_VERSION;
			return 0;
		case 'f':	/* read before the flags, in main() */
			continue;
		case 'v':
			verbose = verbose < 0 ? 1 : verbose + 1;
			continue;
		case 'o':
			if (apply_extended(s, optarg, err, errlen))
				return -EINVAL;
			continue;
		case 'U':
			if (strcmp(optarg, "0")) {
				snprintf(err, errlen, "UDP is not supported "
					 "(-U %s); only -U 0 is accepted",
					 optarg);
				return -EINVAL;
			}
			continue;
		case 'B':
			if (strcmp(optarg, "ascii") && strcmp(optarg, "auto")) {
				snprintf(err, errlen, "only the ascii protocol "
					 "is supported (-B %s)", optarg);
				return -EINVAL;
			}
			continue;
		case 'k': case 'r': case 'L': case 'X': case 'W':
		case 'n': case 'D':
			fprintf(stderr, "anchorkv: ignoring memcached option -%c "
				"(no equivalent)\n", c);
			continue;
		case 'S': case 'e': case 'Z':
			snprintf(err, errlen, "option -%c (SASL, memory file, "
				 "TLS) is not supported", c);
			return -EINVAL;
		case ':':
			snprintf(err, errlen, "option %s needs a value",
				 argv[optind - 1]);
			return -EINVAL;
		case '?':
			if (optopt && optopt < 256)
				snprintf(err, errlen, "unknown option -%c "
					 "(try --help)", optopt);
			else
				snprintf(err, errlen, "unknown option %s "
					 "(try --help)", argv[optind - 1]);
			return -EINVAL;
		default:
			break;
		}
		d = setting_by_opt(c);
		if (!d) {
			snprintf(err, errlen, "unhandled option %d", c);
			return -EINVAL;
		}
		opt_name(d, opt, sizeof(opt));
		if (setting_apply(s, d, d->flag_value ? d->flag_value : optarg,
				  opt, err, errlen))
			return -EINVAL;
	}
	if (optind < argc) {
		snprintf(err, errlen, "unexpected argument \"%s\" (try --help)",
			 argv[optind]);
		return -EINVAL;
	}
	if (verbose >= 0)
		s->proto.verbose = verbose > 3 ? 3 : verbose;
	return 0;
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
	unsigned int shift;

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
	shift = log2_floor(s->shards);
	s->hash_bits = s->hash_power > shift + HASH_BITS_MIN ?
		       s->hash_power - shift : HASH_BITS_MIN;
	if (s->maxbytes && s->proto.item_size_max > s->maxbytes / 2) {
		snprintf(err, errlen, "max_item_size (-I) %zu is above half "
			 "of memory_limit (-m) %zu bytes; raise -m or lower -I",
			 s->proto.item_size_max, s->maxbytes);
		return -EINVAL;
	}
	if (s->port == 0 && !s->unixsocket[0]) {
		snprintf(err, errlen, "nothing to listen on: port (-p) is 0 "
			 "and no unixsocket (-s) is set");
		return -EINVAL;
	}
	return 0;
}

void settings_usage(const char *prog)
{
	printf(
"anchorkv %s - a memcached-compatible key-value server with ordered ranges\n"
"\n"
"usage: %s [options]\n"
"\n"
"Each option has a config-file directive (in brackets); precedence is\n"
"built-in default < config file (-f) < command line.\n"
"\n"
"  -f, --config=<file>          read directives from <file> first\n"
"  -p, --port=<num>             TCP port (default: 11211) [port]\n"
"  -l, --listen=<addr>          addresses to listen on, comma separated,\n"
"                               each host, host:port or [ipv6]:port\n"
"                               (default: 127.0.0.1) [listen]\n"
"  -s, --unix-socket=<file>     UNIX socket; disables TCP, as memcached\n"
"                               [unixsocket]\n"
"  -a, --unix-mask=<mask>       UNIX socket mode, octal (default: 700)\n"
"                               [unixsocket_perm]\n"
"  -b, --listen-backlog=<num>   listen backlog (default: 1024)\n"
"                               [listen_backlog]\n"
"  -c, --conn-limit=<num>       max simultaneous connections (default: 1024)\n"
"                               [max_connections]\n"
"      --idle-timeout=<secs>    close idle connections (default: 0, never)\n"
"                               [idle_timeout]\n"
"  -t, --threads=<num>          worker threads (default: 4) [threads]\n"
"  -m, --memory-limit=<num>     item memory in megabytes, or with a unit\n"
"                               k/m/g; 0 for no limit (default: 64)\n"
"                               [memory_limit]\n"
"  -M, --disable-evictions      answer SERVER_ERROR out of memory instead\n"
"                               of evicting [evict no]\n"
"  -R, --max-reqs-per-event=<n> requests per connection per event\n"
"                               (default: 20) [reqs_per_event]\n"
"  -I, --max-item-size=<size>   largest item, 1k..1024m (default: 1m)\n"
"                               [max_item_size]\n"
"      --shards=<n>             store shards, a power of two, or auto\n"
"                               (default: auto = threads) [shards]\n"
"      --hash-power=<n>         log2 of the initial hash buckets over all\n"
"                               shards (default: 16) [hash_power]\n"
"      --range-max=<n>          cap of <count> in range commands\n"
"                               (default: 10000) [range_max]\n"
"  -C, --disable-cas            disable CAS [cas no]\n"
"  -F, --disable-flush-all      disable flush_all [flush_enabled no]\n"
"  -A, --enable-shutdown        enable the shutdown command\n"
"                               [shutdown_enabled yes]\n"
"  -Y, --auth-file=<file>       require a user and password from <file>\n"
"                               (user:password lines) on every connection,\n"
"                               as memcached's -Y (default: none) [auth_file]\n"
"  -v, --verbose                log connections; -vv also commands\n"
"                               [verbosity]\n"
"  -d, --daemon                 run as a daemon [daemonize yes]\n"
"  -P, --pidfile=<file>         write the pid to <file> [pidfile]\n"
"  -u, --user=<user>            when started as root, switch to <user>\n"
"                               after binding (root without -u is allowed)\n"
"                               [user]\n"
"      --logfile=<file>         log to <file> instead of stderr [logfile]\n"
"  -o, --extended=<opts>        memcached extended options: idle_timeout=N,\n"
"                               hashpower=N; others are ignored with a\n"
"                               warning\n"
"  -U 0, -B ascii|auto          accepted for memcached compatibility\n"
"                               (there is no UDP: -U other than 0 is refused)\n"
"  -h, --help                   this text\n"
"  -V, --version                print the version\n"
"\n"
"Exit status: 0 after a clean stop (SIGTERM, SIGINT, shutdown), 1 when\n"
"start-up fails (invalid setting, cannot listen, ...).\n",
	       ANCHORKV_VERSION, prog);
}
