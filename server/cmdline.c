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
	const char *arg;	/* --help: its argument */
	const char *help;	/* --help: what it does; NULL: not shown */
} cmdline_only[] = {
	{ "config",	'f', required_argument, "<file>",
	  "read directives from <file> first" },
	{ NULL,		'D', required_argument, "<char>",
	  "key prefix delimiter of stats detail, and turn its counting on "
	  "(default: ':', off)" },
	{ "verbose",	'v', no_argument, NULL,
	  "log connections; -vv also commands and each read and write "
	  "(the verbosity directive)" },
	{ "extended",	'o', required_argument, "<opts>",
	  "memcached extended options: idle_timeout=N, hashpower=N, ssl_*; "
	  "others are ignored with a warning" },
	{ "udp-port",	'U', required_argument, "0",
	  "accepted for memcached compatibility (there is no UDP: -U other "
	  "than 0 is refused)" },
	{ "help",	'h', no_argument, NULL, "this text" },
	{ "version",	'V', no_argument, NULL, "print the version" },
	{ "license",	'i', no_argument, NULL, NULL },
	{ "lock-memory",	'k', no_argument, NULL, NULL },
	{ "enable-coredumps",	'r', no_argument, NULL, NULL },
	{ "enable-largepages",	'L', no_argument, NULL, NULL },
	{ "disable-dumping",	'X', no_argument, NULL, NULL },
	{ "disable-watch",	'W', no_argument, NULL, NULL },
	{ "slab-min-size",	'n', required_argument, NULL, NULL },
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

#define USAGE_COL	31	/* where an option's text starts */
#define USAGE_WIDTH	79

/* One option of --help: @left, then @text wrapped beside it. */
static void usage_entry(const char *left, const char *text)
{
	int col = printf("  %s", left);
	const char *p = text;

	if (col >= USAGE_COL - 1) {
		putchar('\n');
		col = 0;
	}
	while (*p) {
		size_t room = USAGE_WIDTH - USAGE_COL, n = strlen(p);

		if (n > room) {	/* break at the last space that fits, */
			const char *open;

			n = room;
			while (n && p[n] != ' ')
				n--;
			/* but not inside "[evict no]" */
			open = memrchr(p, '[', n);
			if (open && !memchr(open, ']', n - (size_t)(open - p)) &&
			    open > p)
				n = (size_t)(open - p);
			while (n && p[n - 1] == ' ')
				n--;
			if (!n)
				n = room;
		}
		printf("%*s%.*s\n", USAGE_COL - col, "", (int)n, p);
		col = 0;
		p += n;
		while (*p == ' ')
			p++;
	}
}

/* A row's option column: "-p, --port=<num>", "    --shards=<n>", or for
 * the TLS rows memcached sets with -o, "-o ssl_key=<file>". */
/* An option's column: "-p, --port=<num>", "    --shards=<n>" or "-D <char>"
 * (@opt 0: no letter; @arg NULL: no argument). */
static void usage_opts(char *out, size_t room, int opt, const char *longopt,
		       const char *arg)
{
	const char *eq = arg ? "=" : "", *a = arg ? arg : "";

	if (opt && longopt)
		snprintf(out, room, "-%c, --%s%s%s", opt, longopt, eq, a);
	else if (longopt)
		snprintf(out, room, "    --%s%s%s", longopt, eq, a);
	else
		snprintf(out, room, "-%c%s%s", opt, arg ? " " : "", a);
}

/* A row's option column, or for the TLS rows memcached sets with -o,
 * "-o ssl_key=<file>". */
static void usage_left(const struct setting_desc *d, char *out, size_t room)
{
	const char *arg = d->flag_value ? NULL : d->arg;

	if (d->longopt || (d->opt > 0 && d->opt < 256))
		usage_opts(out, room, d->opt < 256 ? d->opt : 0, d->longopt,
			   arg);
	else if (!strncmp(d->name, "ssl_", 4))
		snprintf(out, room, "-o %s%s%s", d->name,
			 d->type == SETTING_BOOL ? "" : "=",
			 d->type == SETTING_BOOL || !arg ? "" : arg);
	else
		snprintf(out, room, "   (config file) %s %s", d->name,
			 arg ? arg : "");
}

static void usage_row(const struct setting_desc *d)
{
	char left[64], text[512], def[96] = "";

	usage_left(d, left, sizeof(left));
	if (d->def && !d->flag_value)
		snprintf(def, sizeof(def), " (default: %s)", d->def);
	if (d->flag_value)
		snprintf(text, sizeof(text), "%s [%s %s]", d->help, d->name,
			 d->flag_value);
	else
		snprintf(text, sizeof(text), "%s%s [%s]", d->help, def,
			 d->name);
	usage_entry(left, text);
}

static void usage_other(const struct cmdline_opt *o)
{
	char left[64];

	usage_opts(left, sizeof(left), o->opt, o->longopt, o->arg);
	usage_entry(left, o->help);
}

void settings_usage(const char *prog)
{
	size_t i;

	printf("anchorkv %s - a memcached-compatible key-value server with "
	       "ordered ranges\n\nusage: %s [options]\n\n"
	       "Each option has a config-file directive (in brackets); "
	       "precedence is\nbuilt-in default < config file (-f) < command "
	       "line.\n\n", ANCHORKV_VERSION, prog);
	usage_other(&cmdline_only[0]);		/* -f first */
	for (i = 0; i < SETTINGS_NR; i++)
		usage_row(&setting_table[i]);
	for (i = 1; i < ARRAY_SIZE(cmdline_only); i++)
		if (cmdline_only[i].help)
			usage_other(&cmdline_only[i]);
	printf("\nExit status: 0 after a clean stop (SIGTERM, SIGINT, "
	       "shutdown), 1 when\nstart-up fails (invalid setting, cannot "
	       "listen, ...).\n");
}
