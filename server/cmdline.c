// SPDX-License-Identifier: MIT
/*
 * cmdline.c - the command line: getopt's option lists, made from the
 * settings table, memcached's -o list, and --help.
 *
 * The command-line options are memcached 1.6's, with the same letters and
 * long names, except -f, which is the config file here (memcached's slab
 * growth factor has no meaning for anchorkv). memcached options that have
 * no equivalent are accepted with a warning when harmless to ignore, and
 * refused when ignoring them would surprise (UDP, SASL, extstore).
 */
#include "settings.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "compiler.h"
#include "settings_table.h"
#include "version.h"

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
	{ "lock-memory",	'k', no_argument },
	{ "enable-coredumps",	'r', no_argument },
	{ "enable-largepages",	'L', no_argument },
	{ "disable-dumping",	'X', no_argument },
	{ "disable-watch",	'W', no_argument },
	{ "slab-min-size",	'n', required_argument },
	{ NULL,			'D', required_argument },
};

#define NR_OPTS	(SETTINGS_NR + ARRAY_SIZE(cmdline_only))

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
	for (i = 0; i < SETTINGS_NR; i++) {
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
		else if (!strncmp(tok, "ssl_", 4) && strcmp(tok, "ssl_enabled"))
			d = setting_by_name(tok);
		/* memcached's two flags among them take no value */
		if (d && !eq && (!strcmp(tok, "ssl_session_cache") ||
				 !strcmp(tok, "ssl_kernel_tls")))
			val = "yes";
		else if (d && !eq && strncmp(tok, "ssl_", 4) == 0) {
			snprintf(err, errlen, "-o %s needs a value (%s=...)",
				 tok, tok);
			return -EINVAL;
		}
		if (d) {
			if (setting_apply(s, d, val, "-o", err, errlen))
				return -EINVAL;
			continue;
		}
		for (i = 0; i < ARRAY_SIZE(ignored_ext); i++)
			if (!strcmp(tok, ignored_ext[i]))
				break;
		setting_quote(tok, q, sizeof(q));
		if (i == ARRAY_SIZE(ignored_ext) && strncmp(tok, "ext_", 4)) {
			snprintf(err, errlen, "unknown extended option (-o): \"%s\"",
				 q);
			return -EINVAL;
		}
		if (!strncmp(tok, "ext_", 4)) {
			snprintf(err, errlen,
				 "-o %s: extstore is not supported", q);
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
		case 'D':	/* memcached: the delimiter, and detail on */
			if (!optarg[0] || optarg[1]) {
				snprintf(err, errlen, "-D takes one character "
					 "(-D %s)", optarg);
				return -EINVAL;
			}
			s->prefix_delimiter = optarg[0];
			s->detail_enabled = true;
			continue;
		case 'k': case 'r': case 'L': case 'X': case 'W':
		case 'n':
			fprintf(stderr, "anchorkv: ignoring memcached option -%c "
				"(no equivalent)\n", c);
			continue;
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
"                               each host, host:port or [ipv6]:port; with\n"
"                               -Z, notls:<addr> keeps one plain\n"
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
"  -Z, --enable-ssl             TLS on every TCP listener (OpenSSL; TLS 1.2\n"
"                               and 1.3) [ssl_enabled yes]; set with -o:\n"
"         ssl_chain_cert=<file> certificate chain, PEM [ssl_chain_cert]\n"
"         ssl_key=<file>        private key, when not in the chain file\n"
"                               [ssl_key]\n"
"         ssl_keyformat=1|2     key file format: 1 PEM, 2 DER (default: 1)\n"
"                               [ssl_keyformat]\n"
"         ssl_ca_cert=<file>    CAs whose client certificates are accepted\n"
"                               [ssl_ca_cert]\n"
"         ssl_verify_mode=0..3  client certificates: 0 none, 1 request,\n"
"                               2 require, 3 once (default: 0)\n"
"                               [ssl_verify_mode]\n"
"         ssl_min_version=2|3   lowest TLS: 2 or tlsv1.2, 3 or tlsv1.3\n"
"                               (default: 2) [ssl_min_version]\n"
"         ssl_ciphers=<list>    OpenSSL cipher list for TLS 1.2\n"
"                               [ssl_ciphers]\n"
"         ssl_session_cache     server-side session resumption (default:\n"
"                               off) [ssl_session_cache]\n"
"         ssl_wbuf_size=<kb>    reply bytes gathered into one record\n"
"                               (default: 16) [ssl_wbuf_size]\n"
"         ssl_kernel_tls        kernel TLS offload when available\n"
"                               [ssl_kernel_tls]\n"
"         ssl_handshake_timeout=<secs>\n"
"                               close a client whose handshake is not done\n"
"                               by then (default: 5; 0 never)\n"
"                               [ssl_handshake_timeout]\n"
"  -e, --memory-file=<file>     warm restart: load <file> at start, write it\n"
"                               at a graceful stop (SIGUSR1, shutdown\n"
"                               graceful) [snapshot_file]\n"
"      --snapshot-on-exit=yes|no\n"
"                               SIGTERM and SIGINT write it too (default:\n"
"                               no) [snapshot_on_exit]\n"
"  -D <char>                    key prefix delimiter of stats detail, and\n"
"                               turn its counting on (default: ':', off)\n"
"  -v, --verbose                log connections; -vv also commands\n"
"                               [verbosity]\n"
"  -d, --daemon                 run as a daemon [daemonize yes]\n"
"  -P, --pidfile=<file>         write the pid to <file> [pidfile]\n"
"  -u, --user=<user>            when started as root, switch to <user>\n"
"                               after binding (root without -u is allowed)\n"
"                               [user]\n"
"      --logfile=<file>         log to <file> instead of stderr [logfile]\n"
"  -o, --extended=<opts>        memcached extended options: idle_timeout=N,\n"
"                               hashpower=N, ssl_*; others are ignored\n"
"                               with a warning\n"
"  -S, --enable-sasl            the binary protocol only, with a SASL PLAIN\n"
"                               login as a user of -Y's file [sasl yes]\n"
"  -B, --protocol=<p>           auto (default: a connection's first byte\n"
"                               decides), ascii, or binary; -Y implies\n"
"                               ascii [protocol]\n"
"  -U 0                         accepted for memcached compatibility\n"
"                               (there is no UDP: -U other than 0 is refused)\n"
"  -h, --help                   this text\n"
"  -V, --version                print the version\n"
"\n"
"Exit status: 0 after a clean stop (SIGTERM, SIGINT, shutdown), 1 when\n"
"start-up fails (invalid setting, cannot listen, ...).\n",
	       ANCHORKV_VERSION, prog);
}
