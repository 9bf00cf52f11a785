/* SPDX-License-Identifier: MIT */
/*
 * settings.h - what the daemon was told to do: defaults, command line and
 * config file, all feeding one struct settings.
 *
 * Precedence: built-in defaults < config file (-f) < command line flags.
 * Every setting is described once, in a table in settings.c that names its
 * config directive, its short and long command-line options and its
 * parser, so that the command line and the config file accept exactly the
 * same values and report errors in the same words:
 *
 *	anchorkv: invalid value for threads (-t): "abc" (expected an integer 1..512)
 *	anchorkv: conf/anchorkv.conf:12: invalid value for threads: "abc" (...)
 *
 * The parsers write only into the struct settings they are given; the
 * global `settings` is the daemon's copy, filled once at start-up.
 *
 * Synchronization: written at start-up by the main thread before any other
 * thread exists; read-only afterwards, except proto.verbose, which the
 * "verbosity" command changes (read it with READ_ONCE()).
 */
#ifndef ANCHORKV_SETTINGS_H
#define ANCHORKV_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"	/* struct proto_settings */
#include "version.h"

#define SETTINGS_LISTEN_MAX	512	/* -l: comma-separated addresses */
#define SETTINGS_PATH_MAX	1024	/* -P, -f, logfile */
#define SETTINGS_UNIX_MAX	108	/* -s: sizeof(sun_path) on Linux */
#define SETTINGS_USER_MAX	64

#define SETTINGS_CIPHERS_MAX	512	/* ssl_ciphers */
#define SETTINGS_NOTLS		"notls:"	/* -l notls:<addr>: plain */
#define SETTINGS_NOTLS_LEN	(sizeof(SETTINGS_NOTLS) - 1)

/*
 * TLS (-Z and memcached's -o ssl_* options, the same as directives): what
 * server/tls.c builds its OpenSSL context from. The values are memcached's:
 * verify_mode 0 none, 1 request, 2 require, 3 once; min_version 2 TLS 1.2,
 * 3 TLS 1.3; keyformat 1 PEM, 2 DER.
 */
struct tls_settings {
	bool enabled;				/* -Z: every TCP listener */
	char chain_cert[SETTINGS_PATH_MAX];	/* "": none */
	char key[SETTINGS_PATH_MAX];		/* "": in chain_cert */
	char ca_cert[SETTINGS_PATH_MAX];	/* "": no client CA */
	char ciphers[SETTINGS_CIPHERS_MAX];	/* "": OpenSSL's default */
	unsigned int verify_mode;		/* 0..3 */
	unsigned int min_version;		/* 2 or 3 */
	unsigned int keyformat;			/* 1 or 2 */
	unsigned int wbuf_size;			/* bytes gathered per record */
	unsigned int handshake_timeout;		/* seconds; 0: none */
	bool session_cache;
	bool kernel_tls;
};

/* Exit status for every start-up failure (bad value, bind failure...). */
#define SETTINGS_EXIT_FAILURE	1

struct settings {
	/* network */
	unsigned int port;			/* -p; 0: no TCP */
	char listen[SETTINGS_LISTEN_MAX];	/* -l: "addr[,addr...]" */
	char unixsocket[SETTINGS_UNIX_MAX];	/* -s; "" none */
	unsigned int unixsocket_perm;		/* -a, octal */
	unsigned int backlog;			/* -b */
	unsigned int maxconns;			/* -c */
	unsigned int idle_timeout;		/* seconds; 0: never */

	/* threads and memory */
	unsigned int threads;			/* -t */
	size_t maxbytes;			/* -m, bytes; 0: no limit */
	bool evict;				/* !-M */
	unsigned int reqs_per_event;		/* -R */
	char prefix_delimiter;			/* -D: stats detail's */
	bool detail_enabled;			/* -D given: stats detail on */
	unsigned int shards;			/* 0: auto (settings_finish) */
	unsigned int hash_power;		/* log2 hash slots, all shards */
	unsigned int hash_bits;			/* per shard (settings_finish) */

	/* what the protocol engine reads (item_size_max, range_max, cas,
	 * flush, shutdown, verbose) */
	struct proto_settings proto;

	/* process */
	bool daemonize;				/* -d */
	char pidfile[SETTINGS_PATH_MAX];	/* -P */
	char user[SETTINGS_USER_MAX];		/* -u */
	char logfile[SETTINGS_PATH_MAX];	/* "" : stderr */
	/* warm restart (-e, snapshot_file): loaded at start, written at a
	 * graceful stop (SIGUSR1, shutdown graceful), and at SIGTERM too
	 * with snapshot_on_exit */
	char snapshot_file[SETTINGS_PATH_MAX];	/* "": none */
	bool snapshot_on_exit;
	char config_file[SETTINGS_PATH_MAX];	/* -f, for stats settings */

	/* security */
	char auth_file[SETTINGS_PATH_MAX];	/* -Y; "": no authentication */
	bool binding_set;			/* -B given (proto.binding) */
	struct tls_settings tls;		/* -Z, -o ssl_*=... */
};

extern struct settings settings;

enum settings_action {
	SETTINGS_RUN,
	SETTINGS_HELP,		/* -h: usage printed, exit 0 */
	SETTINGS_VERSION,	/* -V: version printed, exit 0 */
};

/**
 * settings_notls() - take a "notls:" prefix off one -l address
 * @addr: the address; moved past the prefix when it has one
 * @len:  its length; shortened as well
 *
 * Context: any.
 * Return: whether it had the prefix (the listener stays plain under -Z).
 */
bool settings_notls(const char **addr, size_t *len);

/**
 * settings_reserved_fds() - the descriptors the daemon keeps beside its
 * connections
 * @s: the settings
 *
 * Two a worker (its event loop's epoll descriptor and its eventfd) and 64
 * for the rest (the main loop, listeners, the log, a snapshot being
 * written, the TLS files, the standard streams). The open file limit the
 * daemon asks for is max_connections plus these (raise_nofile_limit());
 * `stats` shows them as reserved_fds, and `make install` writes the same
 * sum into the systemd unit (tests/integration/test_ops.py compares).
 *
 * Context: any.
 */
static inline unsigned int settings_reserved_fds(const struct settings *s)
{
	return 2u * s->threads + 64;
}

/**
 * settings_init() - fill @s with the built-in defaults
 * @s: the settings
 *
 * Context: any; touches only @s.
 */
void settings_init(struct settings *s);

/**
 * settings_set() - set one setting from its config-file directive name
 * @s:      the settings
 * @name:   directive name, e.g. "threads"
 * @value:  its value as text (NUL terminated)
 * @err:    receives a message on failure, e.g.
 *          `invalid value for threads: "abc" (expected ...)`
 * @errlen: room in @err
 *
 * Context: any; touches only @s.
 * Return: 0; -ENOENT for an unknown directive; -EINVAL for a bad value.
 */
int settings_set(struct settings *s, const char *name, const char *value,
		 char *err, size_t errlen);

/**
 * settings_config_path() - find -f/--config FILE on a command line
 * @argc: argument count
 * @argv: arguments (not modified)
 *
 * The config file is read before the other flags are applied, so that the
 * flags override it whatever their order.
 *
 * Context: start-up; uses getopt state.
 * Return: the path (pointing into @argv), or NULL if none is given.
 */
const char *settings_config_path(int argc, char **argv);

/**
 * settings_parse_args() - apply the command-line flags to @s
 * @s:      the settings (defaults and config file already applied)
 * @argc:   argument count
 * @argv:   arguments
 * @action: receives what to do next
 * @err:    receives a message on failure
 * @errlen: room in @err
 *
 * Prints the usage or the version itself for -h and -V, warnings for
 * memcached options that have no meaning here.
 *
 * Context: start-up; uses getopt state.
 * Return: 0, or -EINVAL (then @err says why).
 */
int settings_parse_args(struct settings *s, int argc, char **argv,
			enum settings_action *action, char *err,
			size_t errlen);

/**
 * settings_finish() - derive the automatic values and check the whole
 * @s:      the settings
 * @err:    receives a message on failure
 * @errlen: room in @err
 *
 * Picks the shard count when it is automatic, the per-shard hash size, and
 * refuses combinations memcached refuses (an item limit above half the
 * memory limit).
 *
 * Context: any; touches only @s.
 * Return: 0, or -EINVAL.
 */
int settings_finish(struct settings *s, char *err, size_t errlen);

/**
 * settings_usage() - print the --help text
 * @prog: the program name
 *
 * Context: start-up.
 */
void settings_usage(const char *prog);

#endif /* ANCHORKV_SETTINGS_H */
