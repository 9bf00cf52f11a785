// SPDX-License-Identifier: MIT
/*
 * test_conf.c - the settings table, the config-file parser and the
 * command line (server/settings.c, server/conf.c).
 *
 * The contract checked here:
 *   - the built-in defaults are memcached 1.6's (loopback aside);
 *   - conf/anchorkv.conf, as shipped, changes nothing: its active lines
 *     repeat the defaults;
 *   - every directive takes the values its description promises and
 *     refuses the rest with "ORIGIN:LINE: ... DIRECTIVE ..." (sizes are
 *     checked against a separate model of the k/m/g rules);
 *   - the command line overrides the file, and names the flag in errors;
 *   - any bytes at all give 0 or an error message, never a crash (ASan);
 *   - every row of the settings table is whole (help, argument, words for
 *     its messages) and conf/anchorkv.conf, docs/configuration.md and the
 *     man page name it with its default.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "conf.h"
#include "settings.h"
#include "settings_table.h"

static char err[1024];

static int parse(struct settings *s, const char *text)
{
	err[0] = '\0';
	return conf_parse("t.conf", text, strlen(text), s, err, sizeof(err));
}

/* Compares every field that a config file can set. */
static bool settings_equal(const struct settings *a, const struct settings *b)
{
	return a->port == b->port && !strcmp(a->listen, b->listen) &&
	       !strcmp(a->unixsocket, b->unixsocket) &&
	       a->unixsocket_perm == b->unixsocket_perm &&
	       a->backlog == b->backlog && a->maxconns == b->maxconns &&
	       a->idle_timeout == b->idle_timeout &&
	       a->threads == b->threads && a->maxbytes == b->maxbytes &&
	       a->evict == b->evict &&
	       a->reqs_per_event == b->reqs_per_event &&
	       a->shards == b->shards && a->hash_power == b->hash_power &&
	       a->proto.item_size_max == b->proto.item_size_max &&
	       a->proto.range_max == b->proto.range_max &&
	       a->proto.cas_enabled == b->proto.cas_enabled &&
	       a->proto.flush_enabled == b->proto.flush_enabled &&
	       a->proto.shutdown_enabled == b->proto.shutdown_enabled &&
	       a->proto.verbose == b->proto.verbose &&
	       a->daemonize == b->daemonize &&
	       !strcmp(a->pidfile, b->pidfile) && !strcmp(a->user, b->user) &&
	       !strcmp(a->logfile, b->logfile);
}

static void test_defaults(void)
{
	struct settings s;

	settings_init(&s);
	/* memcached -h: port 11211, 4 threads, 64 MB, 1024 conns, 1m items,
	 * -R 20, backlog 1024, unix mask 700; ours: loopback by default */
	CHECK(s.port == 11211);
	CHECK(!strcmp(s.listen, "127.0.0.1"));
	CHECK(s.threads == 4);
	CHECK(s.maxbytes == 64ull << 20);
	CHECK(s.maxconns == 1024);
	CHECK(s.proto.item_size_max == 1u << 20);
	CHECK(s.reqs_per_event == 20);
	CHECK(s.backlog == 1024);
	CHECK(s.unixsocket_perm == 0700);
	CHECK(s.proto.cas_enabled && s.proto.flush_enabled);
	CHECK(!s.proto.shutdown_enabled && s.evict && !s.daemonize);
	CHECK(s.idle_timeout == 0 && s.proto.verbose == 0);
	CHECK(s.proto.range_max == 10000);
}

/* The shipped file must describe the defaults, not change them. */
static void test_shipped_conf(void)
{
	struct settings def, s;
	int ret;

	settings_init(&def);
	settings_init(&s);
	ret = conf_load("conf/anchorkv.conf", &s, err, sizeof(err));
	CHECK_MSG(ret == 0, "conf/anchorkv.conf: %s", err);
	CHECK(settings_equal(&def, &s));
}

static void test_format(void)
{
	struct settings s, def;

	settings_init(&def);
	settings_init(&s);
	CHECK(parse(&s, "") == 0 && settings_equal(&s, &def));
	CHECK(parse(&s, "\n\n   \n\t\n# threads 9\n   # port 1\n") == 0);
	CHECK(settings_equal(&s, &def));
	/* blanks around, CRLF, no final newline */
	CHECK(parse(&s, "  threads \t 7 \t\r\nport 1234") == 0);
	CHECK(s.threads == 7 && s.port == 1234);
	/* the last of a repeated directive wins */
	CHECK(parse(&s, "threads 2\nthreads 3\n") == 0 && s.threads == 3);
	/* quotes: spaces kept, "" is empty */
	CHECK(parse(&s, "pidfile \"/run/a b.pid\"\n") == 0);
	CHECK(!strcmp(s.pidfile, "/run/a b.pid"));
	CHECK(parse(&s, "pidfile \"\"\n") == 0 && s.pidfile[0] == '\0');
	CHECK(parse(&s, "pidfile \"abc\n") == -EINVAL);
	CHECK(parse(&s, "pidfile \"a\"b\"\n") == -EINVAL);
	/* '#' only comments at the start of a line */
	CHECK(parse(&s, "threads 4 # four\n") == -EINVAL);

	/* errors name the origin, the line and the directive */
	settings_init(&s);
	CHECK(parse(&s, "port 1\n\n# x\nthreads abc\n") == -EINVAL);
	CHECK_MSG(strstr(err, "t.conf:4:") && strstr(err, "threads") &&
		  strstr(err, "\"abc\""), "%s", err);
	CHECK(s.port == 1);	/* lines before the error were applied */
	CHECK(parse(&s, "frobnicate 1\n") == -EINVAL);
	CHECK_MSG(strstr(err, "t.conf:1:") && strstr(err, "frobnicate"),
		  "%s", err);
	CHECK(parse(&s, "threads\n") == -EINVAL);
	CHECK_MSG(strstr(err, "missing value") && strstr(err, "threads"),
		  "%s", err);
	CHECK(parse(&s, "threads   \n") == -EINVAL);

	/* a NUL byte and an overlong line are refused, not trusted */
	{
		static const char nul[] = "port 1\nthreads 4\0 9\n";

		CHECK(conf_parse("n", nul, sizeof(nul) - 1, &s, err,
				 sizeof(err)) == -EINVAL);
		CHECK_MSG(strstr(err, "n:2:") != NULL, "%s", err);
	}
	{
		size_t n = CONF_LINE_MAX + 20;
		char *big = malloc(n + 1);

		memset(big, ' ', n);
		memcpy(big, "listen 1.2.3.4", 14);
		big[n] = '\0';
		CHECK(parse(&s, big) == -EINVAL);
		CHECK_MSG(strstr(err, "longer") != NULL, "%s", err);
		free(big);
	}
}

/* The k/m/g rules, written independently of settings.c. */
static int64_t model_size(const char *v, int64_t bare_unit)
{
	char *end;
	long long n;

	if (*v < '0' || *v > '9')
		return -1;
	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno || n < 0)
		return -1;
	if (!strcmp(end, ""))
		return n * bare_unit;
	if (!strcasecmp(end, "k") || !strcasecmp(end, "kb"))
		return n << 10;
	if (!strcasecmp(end, "m") || !strcasecmp(end, "mb"))
		return n << 20;
	if (!strcasecmp(end, "g") || !strcasecmp(end, "gb"))
		return n << 30;
	return -1;
}

static void test_sizes(void)
{
	static const char *const vals[] = {
		"0", "1", "512", "1023", "1024", "1025", "4096", "1k", "1K",
		"2kb", "1m", "1M", "1mb", "64m", "1023m", "1024m", "1025m",
		"1g", "1G", "2g", "1t", "m", "", "-1", "+5", "1 m", "1mm",
		"1kbb", "0x10", "1048576", "1073741824", "1073741825",
		"99999999999999999999999", "64", "7g",
	};
	size_t i;

	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		struct settings s;
		int64_t want_i = model_size(vals[i], 1);
		int64_t want_m = model_size(vals[i], 1 << 20);
		bool ok_i = want_i >= 1024 && want_i <= (1ll << 30);
		bool ok_m = want_m >= 0;
		int ret;

		settings_init(&s);
		ret = settings_set(&s, "max_item_size", vals[i], err,
				   sizeof(err));
		CHECK_MSG((ret == 0) == ok_i, "max_item_size %s: %d (%s)",
			  vals[i], ret, err);
		if (ok_i && !ret)
			CHECK_MSG((int64_t)s.proto.item_size_max == want_i,
				  "max_item_size %s = %zu", vals[i],
				  s.proto.item_size_max);
		settings_init(&s);
		ret = settings_set(&s, "memory_limit", vals[i], err,
				   sizeof(err));
		CHECK_MSG((ret == 0) == ok_m, "memory_limit %s: %d (%s)",
			  vals[i], ret, err);
		if (ok_m && !ret)
			CHECK_MSG((int64_t)s.maxbytes == want_m,
				  "memory_limit %s = %zu", vals[i], s.maxbytes);
	}
}

struct case_ {
	const char *name;
	const char *value;
	bool ok;
};

static void test_directives(void)
{
	static const struct case_ cases[] = {
		{ "port", "0", true }, { "port", "65535", true },
		{ "port", "65536", false }, { "port", "-1", false },
		{ "port", "80x", false }, { "port", "", false },
		{ "listen", "0.0.0.0", true },
		{ "listen", "127.0.0.1,::1", true },
		{ "listen", "127.0.0.1 ::1", true },
		{ "listen", "[::1]:11311,localhost:5", true },
		{ "listen", "host:0", false }, { "listen", "host:", false },
		{ "listen", "[::1", false }, { "listen", "[]:5", false },
		{ "listen", ",,", false }, { "listen", "a:99999", false },
		{ "unixsocket", "/run/x.sock", true },
		{ "unixsocket", "/run/0123456789012345678901234567890123456789"
		  "01234567890123456789012345678901234567890123456789"
		  "0123456789012345678", false },
		{ "unixsocket_perm", "0777", true },
		{ "unixsocket_perm", "755", true },
		{ "unixsocket_perm", "8", false },
		{ "unixsocket_perm", "1777", false },
		{ "threads", "1", true }, { "threads", "512", true },
		{ "threads", "0", false }, { "threads", "513", false },
		{ "max_connections", "1", true },
		{ "max_connections", "0", false },
		{ "idle_timeout", "0", true }, { "idle_timeout", "600", true },
		{ "idle_timeout", "-5", false },
		{ "reqs_per_event", "1", true },
		{ "reqs_per_event", "0", false },
		{ "shards", "auto", true }, { "shards", "1", true },
		{ "shards", "4096", true }, { "shards", "8192", false },
		{ "shards", "48", false },
		{ "hash_power", "8", true }, { "hash_power", "30", true },
		{ "hash_power", "7", false }, { "hash_power", "31", false },
		{ "range_max", "1", true }, { "range_max", "0", false },
		{ "cas", "yes", true }, { "cas", "OFF", true },
		{ "cas", "maybe", false }, { "evict", "no", true },
		{ "flush_enabled", "false", true },
		{ "shutdown_enabled", "1", true },
		{ "daemonize", "on", true }, { "verbosity", "3", true },
		{ "verbosity", "4", false }, { "user", "nobody", true },
		{ "logfile", "/run/a.log", true },
		{ "pidfile", "/run/a\x01.pid", false },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct settings s, before;
		char text[512];
		int ret;

		settings_init(&s);
		before = s;
		snprintf(text, sizeof(text), "# c\n%s %s\n", cases[i].name,
			 cases[i].value);
		ret = parse(&s, text);
		CHECK_MSG((ret == 0) == cases[i].ok, "%s \"%s\": %d %s",
			  cases[i].name, cases[i].value, ret, err);
		if (ret) {
			/* an empty value is "missing", else it is quoted */
			CHECK_MSG(strstr(err, "t.conf:2:") &&
				  strstr(err, cases[i].name), "%s", err);
			CHECK(settings_equal(&s, &before));
		}
	}
}

static int run_args(struct settings *s, enum settings_action *act, ...)
{
	char *argv[32];
	int argc = 0;
	va_list ap;
	char *a;

	argv[argc++] = "anchorkv";
	va_start(ap, act);
	while ((a = va_arg(ap, char *)) && argc < 31)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	err[0] = '\0';
	return settings_parse_args(s, argc, argv, act, err, sizeof(err));
}

static void test_cmdline(void)
{
	enum settings_action act;
	struct settings s;
	char *argv_f[] = { "anchorkv", "-t", "2", "-f", "x.conf", "-p", "1",
			   NULL };

	CHECK(settings_config_path(7, argv_f) &&
	      !strcmp(settings_config_path(7, argv_f), "x.conf"));

	/* the command line wins over the file */
	settings_init(&s);
	CHECK(parse(&s, "threads 8\nport 2000\ncas no\n") == 0);
	CHECK(run_args(&s, &act, "-t", "2", "--port=3000", "-vv", "-M",
		       "-A", "-f", "ignored.conf", "--shards", "16",
		       NULL) == 0);
	CHECK(act == SETTINGS_RUN);
	CHECK(s.threads == 2 && s.port == 3000 && !s.proto.cas_enabled);
	CHECK(s.proto.verbose == 2 && !s.evict && s.proto.shutdown_enabled);
	CHECK(s.shards == 16);

	settings_init(&s);
	CHECK(run_args(&s, &act, "-C", "-F", "-d", "-I", "2m", "-m", "100",
		       "-c", "77", "-R", "5", "-l", "::1,127.0.0.1",
		       "-o", "idle_timeout=30,hashpower=20,modern", NULL) == 0);
	CHECK(!s.proto.cas_enabled && !s.proto.flush_enabled && s.daemonize);
	CHECK(s.proto.item_size_max == 2u << 20 && s.maxbytes == 100u << 20);
	CHECK(s.maxconns == 77 && s.reqs_per_event == 5);
	CHECK(!strcmp(s.listen, "::1,127.0.0.1"));
	CHECK(s.idle_timeout == 30 && s.hash_power == 20);

	/* errors name the setting and the flag */
	settings_init(&s);
	CHECK(run_args(&s, &act, "-t", "abc", NULL) == -EINVAL);
	CHECK_MSG(!strncmp(err, "invalid value for threads (-t): \"abc\"",
			   36), "%s", err);
	CHECK(run_args(&s, &act, "--range-max", "0", NULL) == -EINVAL);
	CHECK_MSG(strstr(err, "range_max (--range-max)") != NULL, "%s", err);
	CHECK(run_args(&s, &act, "-Q", NULL) == -EINVAL);
	CHECK(run_args(&s, &act, "stray", NULL) == -EINVAL);
	CHECK(run_args(&s, &act, "-U", "11211", NULL) == -EINVAL);
	CHECK(run_args(&s, &act, "-U", "0", "-B", "ascii", NULL) == 0);
	CHECK(run_args(&s, &act, "-o", "nosuch", NULL) == -EINVAL);
	CHECK(run_args(&s, &act, "-p", NULL) == -EINVAL);
	CHECK(run_args(&s, &act, "-V", NULL) == 0 &&
	      act == SETTINGS_VERSION);
	CHECK(run_args(&s, &act, "--help", NULL) == 0 &&
	      act == SETTINGS_HELP);
}

/*
 * Every long option, now made from the settings table: each sets what its
 * short option or directive sets, and a flag takes no argument.
 */
static void test_long_options(void)
{
	enum settings_action act;
	struct settings s;

	settings_init(&s);
	CHECK(run_args(&s, &act, "--port", "4000", "--listen", "127.0.0.1",
		       "--unix-socket", "/tmp/x.sock", "--unix-mask", "750",
		       "--listen-backlog", "64", "--conn-limit", "99",
		       "--idle-timeout", "12", "--threads", "3",
		       "--memory-limit", "32", "--disable-evictions",
		       "--max-reqs-per-event", "7", "--shards", "8",
		       "--hash-power", "18", "--max-item-size", "2m",
		       "--range-max", "55", NULL) == 0);
	CHECK_MSG(act == SETTINGS_RUN, "%s", err);
	CHECK(run_args(&s, &act, "--disable-cas", "--disable-flush-all",
		       "--enable-shutdown", "--verbose", "--daemon",
		       "--pidfile", "/tmp/x.pid", "--user", "nobody",
		       "--logfile", "/tmp/x.log", NULL) == 0);
	CHECK_MSG(act == SETTINGS_RUN, "%s", err);
	CHECK(s.port == 4000 && !strcmp(s.listen, "127.0.0.1"));
	CHECK(!strcmp(s.unixsocket, "/tmp/x.sock") &&
	      s.unixsocket_perm == 0750);
	CHECK(s.backlog == 64 && s.maxconns == 99 && s.idle_timeout == 12);
	CHECK(s.threads == 3 && s.maxbytes == 32u << 20 && !s.evict);
	CHECK(s.reqs_per_event == 7 && s.shards == 8 && s.hash_power == 18);
	CHECK(s.proto.item_size_max == 2u << 20 && s.proto.range_max == 55);
	CHECK(!s.proto.cas_enabled && !s.proto.flush_enabled &&
	      s.proto.shutdown_enabled && s.proto.verbose == 1);
	CHECK(s.daemonize && !strcmp(s.pidfile, "/tmp/x.pid") &&
	      !strcmp(s.user, "nobody") && !strcmp(s.logfile, "/tmp/x.log"));

	settings_init(&s);
	CHECK(run_args(&s, &act, "--auth-file", "/tmp/x.auth", NULL) == 0 &&
	      !strcmp(s.auth_file, "/tmp/x.auth"));
	/* a flag refuses an argument, an option wants one */
	CHECK(run_args(&s, &act, "--daemon=yes", NULL) == -EINVAL);
	CHECK(run_args(&s, &act, "--threads", NULL) == -EINVAL);
	CHECK(run_args(&s, &act, "--version", NULL) == 0 &&
	      act == SETTINGS_VERSION);
	CHECK(run_args(&s, &act, "--no-such-option", NULL) == -EINVAL);
	/* memcached's options without a setting keep their short forms */
	CHECK(run_args(&s, &act, "-D", "/", "-n", "48", "-k", "-r", "-L",
		       "-X", "-W", "-i", NULL) == 0);
	/* -D is stats detail's delimiter, and turns the counting on */
	CHECK(s.prefix_delimiter == '/' && s.detail_enabled);
	settings_init(&s);
	CHECK(s.prefix_delimiter == ':' && !s.detail_enabled);
	CHECK(run_args(&s, &act, "-D", "ab", NULL) == -EINVAL);
	CHECK(run_args(&s, &act, "-k", NULL) == 0 && !s.detail_enabled);
	/* -S is SASL (its file is checked by settings_finish()) */
	CHECK(run_args(&s, &act, "-S", NULL) == 0 && s.proto.sasl);
	settings_init(&s);
	/* -e, memcached's memory file, is the snapshot file */
	CHECK(run_args(&s, &act, "-e", "/tmp/x", NULL) == 0 &&
	      !strcmp(s.snapshot_file, "/tmp/x") && !s.snapshot_on_exit);
	CHECK(run_args(&s, &act, "--memory-file", "/tmp/y",
		       "--snapshot-on-exit", "yes", NULL) == 0 &&
	      !strcmp(s.snapshot_file, "/tmp/y") && s.snapshot_on_exit);
	CHECK(run_args(&s, &act, "--snapshot-on-exit", "maybe", NULL) ==
	      -EINVAL);
}

/* -Z and memcached's -o ssl_* options, the same as directives */
static void test_tls_settings(void)
{
	enum settings_action act;
	struct settings s;

	settings_init(&s);
	CHECK(!s.tls.enabled && s.tls.verify_mode == 0 &&
	      s.tls.min_version == 2 && s.tls.keyformat == 1 &&
	      s.tls.wbuf_size == 16384 && s.tls.handshake_timeout == 5 &&
	      !s.tls.session_cache && !s.tls.kernel_tls);
	CHECK(run_args(&s, &act, "-Z", "-o", "ssl_chain_cert=/c.pem,"
		       "ssl_key=/k.pem,ssl_ca_cert=/ca.pem,ssl_verify_mode=2,"
		       "ssl_min_version=tlsv1.3,ssl_ciphers=ECDHE+AESGCM,"
		       "ssl_session_cache,ssl_wbuf_size=32,ssl_kernel_tls,"
		       "ssl_keyformat=2,ssl_handshake_timeout=9", NULL) == 0);
	CHECK(s.tls.enabled && !strcmp(s.tls.chain_cert, "/c.pem") &&
	      !strcmp(s.tls.key, "/k.pem") && !strcmp(s.tls.ca_cert,
						       "/ca.pem") &&
	      s.tls.verify_mode == 2 && s.tls.min_version == 3 &&
	      !strcmp(s.tls.ciphers, "ECDHE+AESGCM") && s.tls.session_cache &&
	      s.tls.wbuf_size == 32 * 1024 && s.tls.kernel_tls &&
	      s.tls.keyformat == 2 && s.tls.handshake_timeout == 9);
	CHECK(settings_finish(&s, err, sizeof(err)) == 0);
	/* memcached's numbers for the version; 0 and 1 are not offered */
	CHECK(run_args(&s, &act, "-o", "ssl_min_version=2", NULL) == 0 &&
	      s.tls.min_version == 2);
	CHECK(run_args(&s, &act, "-o", "ssl_min_version=1", NULL) == -EINVAL);
	CHECK(strstr(err, "invalid value for ssl_min_version (-o)"));
	CHECK(run_args(&s, &act, "-o", "ssl_verify_mode=4", NULL) == -EINVAL);
	CHECK(run_args(&s, &act, "-o", "ssl_wbuf_size=0", NULL) == -EINVAL);
	CHECK(run_args(&s, &act, "-o", "ssl_session_cache=no", NULL) == 0 &&
	      !s.tls.session_cache);
	CHECK(run_args(&s, &act, "-o", "ssl_chain_cert", NULL) == -EINVAL);
	CHECK(strstr(err, "needs a value"));
	CHECK(run_args(&s, &act, "-o", "ssl_enabled=yes", NULL) == -EINVAL);
	CHECK(run_args(&s, &act, "-o", "ssl_nonsense=1", NULL) == -EINVAL);
	CHECK(strstr(err, "unknown extended option"));
	CHECK(run_args(&s, &act, "-o", "ext_path=/x", NULL) == -EINVAL);
	/* the directives */
	settings_init(&s);
	CHECK(settings_set(&s, "ssl_enabled", "yes", err, sizeof(err)) == 0 &&
	      s.tls.enabled);
	CHECK(settings_set(&s, "ssl_handshake_timeout", "0", err,
			   sizeof(err)) == 0 && s.tls.handshake_timeout == 0);
	CHECK(settings_set(&s, "ssl_handshake_timeout", "3601", err,
			   sizeof(err)) == -EINVAL);
	/* what settings_finish refuses: no certificate, a unix socket */
	CHECK(settings_finish(&s, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "needs a certificate"));
	CHECK(settings_set(&s, "ssl_chain_cert", "/c.pem", err,
			   sizeof(err)) == 0);
	CHECK(settings_finish(&s, err, sizeof(err)) == 0);
	CHECK(settings_set(&s, "unixsocket", "/tmp/s", err, sizeof(err)) == 0);
	CHECK(settings_finish(&s, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "a unix socket (-s) replaces TCP"));
	/* -B, -Y and -S, as memcached binds them */
	settings_init(&s);
	CHECK(settings_finish(&s, err, sizeof(err)) == 0 &&
	      s.proto.binding == PROTO_BIND_AUTO);
	CHECK(run_args(&s, &act, "-Y", "/u", NULL) == 0 &&
	      settings_finish(&s, err, sizeof(err)) == 0 &&
	      s.proto.binding == PROTO_BIND_ASCII);
	settings_init(&s);
	CHECK(run_args(&s, &act, "-Y", "/u", "-B", "binary", NULL) == 0 &&
	      settings_finish(&s, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "use -B ascii"));
	settings_init(&s);
	CHECK(run_args(&s, &act, "-B", "bin", NULL) == -EINVAL);
	unsetenv("MEMCACHED_SASL_PWDB");
	CHECK(run_args(&s, &act, "-S", NULL) == 0 &&
	      settings_finish(&s, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "-Y FILE"));
	setenv("MEMCACHED_SASL_PWDB", "/pw", 1);
	CHECK(settings_finish(&s, err, sizeof(err)) == 0 &&
	      !strcmp(s.auth_file, "/pw") &&
	      s.proto.binding == PROTO_BIND_BINARY);
	unsetenv("MEMCACHED_SASL_PWDB");
	settings_init(&s);
	CHECK(run_args(&s, &act, "-S", "-Y", "/u", "-B", "auto", NULL) == 0 &&
	      settings_finish(&s, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "use -B binary"));
	/* notls: is a listen prefix, valid only with TLS */
	settings_init(&s);
	CHECK(run_args(&s, &act, "-l", "notls:127.0.0.1:1,127.0.0.1:2",
		       NULL) == 0);
	CHECK(settings_finish(&s, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "'notls' option is valid only when SSL is enabled"));
	CHECK(run_args(&s, &act, "-Z", "-o", "ssl_chain_cert=/c", NULL) == 0);
	CHECK(settings_finish(&s, err, sizeof(err)) == 0);
	CHECK(run_args(&s, &act, "-l", "notls:", NULL) == -EINVAL);
	CHECK(run_args(&s, &act, "-l", "notls:[::1]:5", NULL) == 0);
}

static void test_finish(void)
{
	static const unsigned int threads[] = { 1, 3, 4, 5, 100, 512 };
	struct settings s;
	size_t i;

	for (i = 0; i < sizeof(threads) / sizeof(threads[0]); i++) {
		unsigned int want = 1, shift = 0;

		settings_init(&s);
		s.threads = threads[i];
		CHECK(settings_finish(&s, err, sizeof(err)) == 0);
		/* auto: one per thread, rounded up to a power of two */
		while (want < threads[i] && want < 4096)
			want *= 2;
		CHECK_MSG(s.shards == want, "threads %u: shards %u",
			  threads[i], s.shards);
		while ((1u << shift) < s.shards)
			shift++;
		/* buckets over all shards: at least 2^hash_power */
		CHECK(s.hash_bits + shift >= s.hash_power);
		CHECK(s.hash_bits >= 4);
	}
	settings_init(&s);
	s.shards = 8;
	CHECK(settings_finish(&s, err, sizeof(err)) == 0 && s.shards == 8);
	CHECK(s.hash_bits == 13);

	/* a small -m: the first buckets take at most 1/64 of it */
	settings_init(&s);
	s.shards = 2;
	s.maxbytes = 8u << 20;
	CHECK(settings_finish(&s, err, sizeof(err)) == 0);
	CHECK_MSG(s.hash_bits == 13 && s.hash_power == 16,
		  "-m 8: hash_bits %u, hash_power %u", s.hash_bits,
		  s.hash_power);
	s.maxbytes = 64u << 20;	/* 512 KiB of buckets fit in 1/64 */
	CHECK(settings_finish(&s, err, sizeof(err)) == 0 && s.hash_bits == 15);

	/* memcached refuses -I above half of -m */
	settings_init(&s);
	s.maxbytes = 1u << 20;
	CHECK(settings_finish(&s, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(strstr(err, "max_item_size") != NULL, "%s", err);
	s.maxbytes = 0;		/* no limit */
	CHECK(settings_finish(&s, err, sizeof(err)) == 0);
	settings_init(&s);
	s.port = 0;
	CHECK(settings_finish(&s, err, sizeof(err)) == -EINVAL);
}

/* Random and mutated texts: a result and a message, never a crash. */
static void test_random(void)
{
	static const char *const words[] = {
		"port", "listen", "threads", "max_item_size", "pidfile", "\"",
		"#", " ", "\t", "\r", "\n", "1", "64m", "yes", "auto", "[::1]",
		":", ",", "\0", "\xff", "shards", "memory_limit", "unixsocket",
	};
	uint64_t x = 88172645463325252ull;
	unsigned int round;
	bool all_ok = true;

	for (round = 0; round < 20000; round++) {
		char buf[256];
		size_t len = 0;
		struct settings s;
		int ret;

		while (len < sizeof(buf) - 16) {
			const char *w;
			size_t wl;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			if (x % 7 == 0)
				break;
			if (x % 3 == 0) {
				buf[len++] = (char)(x >> 24);
				continue;
			}
			w = words[(x >> 8) % (sizeof(words) / sizeof(words[0]))];
			wl = *w ? strlen(w) : 1;
			memcpy(buf + len, w, wl);
			len += wl;
		}
		settings_init(&s);
		err[0] = '\0';
		ret = conf_parse("r", buf, len, &s, err, sizeof(err));
		if (!(ret == 0 || (ret == -EINVAL && err[0] == 'r')))
			all_ok = false;
	}
	CHECK(all_ok);
}

/* The file at @path (relative to the top of the tree), NUL terminated. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
		if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		} else {
			buf[n] = '\0';
		}
	}
	fclose(f);
	return buf;
}

/* Whether @p starts with @word followed by a space, a tab or the end. */
static bool word_at(const char *p, const char *word)
{
	size_t n = strlen(word);

	return !strncmp(p, word, n) &&
	       (p[n] == ' ' || p[n] == '\t' || p[n] == '\n' || !p[n]);
}

/*
 * conf/anchorkv.conf: a line "name WANT", active or commented out (the
 * active lines repeat the defaults: test_shipped_conf), or for a setting
 * without a default (@want NULL) a commented example "# name ...".
 */
static bool conf_names(const char *conf, const char *name, const char *want)
{
	const char *line;

	for (line = conf; line && *line; line = strchr(line, '\n'),
	     line = line ? line + 1 : NULL) {
		const char *p = line;

		if (!strncmp(p, "# ", 2) && (want || word_at(p + 2, name)))
			p += 2;
		if (!word_at(p, name))
			continue;
		if (!want)
			return true;
		p += strlen(name);
		while (*p == ' ')
			p++;
		if (word_at(p, want))
			return true;
	}
	return false;
}

/* docs/configuration.md: the table row "| `name` | flag | WANT | ...". */
static bool md_names(const char *md, const char *name, const char *want)
{
	char head[80];
	const char *row, *col;
	int i;

	snprintf(head, sizeof(head), "\n| `%s` |", name);
	row = strstr(md, head);
	if (!row || !want)
		return row != NULL;
	for (col = row + 1, i = 0; i < 2 && col; i++)	/* the third column */
		col = strchr(col + 1, '|');
	if (!col)
		return false;
	while (*++col == ' ')
		;
	return word_at(col, want);
}

/*
 * docs/man/anchorkv.1: an entry (from one .TP to the next) names the
 * directive in brackets, and says its default unless an option without
 * argument sets it.
 */
static bool man_names(const char *man, const struct setting_desc *d)
{
	char tag[80], def[120];
	const char *at, *start, *end;

	snprintf(tag, sizeof(tag), "[%s", d->name);
	for (at = strstr(man, tag); at; at = strstr(at + 1, tag))
		if (at[strlen(tag)] == ']' || at[strlen(tag)] == ' ')
			break;
	if (!at)
		return false;
	if (!d->def || d->flag_value)
		return true;
	for (start = at; start > man && strncmp(start, "\n.TP", 4); start--)
		;
	end = strstr(at, "\n.TP");
	if (!end)
		end = at + strlen(at);
	snprintf(def, sizeof(def), "default %s", d->def);
	at = strstr(start, def);
	return at && at < end;
}

static void test_docs_name_every_row(void)
{
	char *conf = slurp("conf/anchorkv.conf");
	char *md = slurp("docs/configuration.md");
	char *man = slurp("docs/man/anchorkv.1");
	size_t i;

	CHECK(conf && md && man);
	if (man) {	/* roff's escaped hyphens, plain */
		char *r = man, *w = man;

		for (; *r; r++)
			if (!(r[0] == '\\' && r[1] == '-'))
				*w++ = *r;
		*w = '\0';
	}
	for (i = 0; i < SETTINGS_NR && conf && md && man; i++) {
		const struct setting_desc *d = &setting_table[i];
		const char *want = d->def;
		char expect[160];

		CHECK_MSG(d->help && *d->help, "%s: no help", d->name);
		CHECK_MSG(d->flag_value || d->type == SETTING_BOOL || d->arg,
			  "%s: no argument for --help", d->name);
		CHECK_MSG(d->type != SETTING_OTHER || d->expect,
			  "%s: no words for its messages", d->name);
		setting_expect(d, expect, sizeof(expect));
		CHECK(*expect);
		CHECK_MSG(conf_names(conf, d->name, want), "conf/anchorkv.conf "
			  "has no line \"%s %s\"", d->name, want ? want : "...");
		CHECK_MSG(md_names(md, d->name, want), "docs/configuration.md "
			  "has no row `%s` with default %s", d->name,
			  want ? want : "(any)");
		CHECK_MSG(man_names(man, d), "docs/man/anchorkv.1 does not "
			  "name [%s]%s%s", d->name,
			  d->def && !d->flag_value ? " with default " : "",
			  d->def && !d->flag_value ? d->def : "");
	}
	free(conf);
	free(md);
	free(man);
}

int main(void)
{
	test_defaults();
	test_shipped_conf();
	test_format();
	test_sizes();
	test_directives();
	test_cmdline();
	test_long_options();
	test_tls_settings();
	test_finish();
	test_random();
	test_docs_name_every_row();
	return check_report();
}
