// SPDX-License-Identifier: MIT
/*
 * main.c - start-up, the main thread's loop, and a clean stop.
 *
 * Start-up order matters:
 *   1. settings: defaults < config file (-f) < command line; exit 1 on a
 *      bad value, naming the setting;
 *   2. bind every listener (errors still reach the terminal);
 *   3. daemonize (-d), write the pidfile (-P), drop root (-u), all in
 *      daemon.c: before any thread or event_base exists, since fork()
 *      keeps only one thread;
 *   4. the store (and the snapshot), the workers, the main loop's
 *      events; then listen, so that a port that answers is a server that
 *      serves; then run.
 *
 * The main thread's loop carries the listeners, SIGTERM/SIGINT, SIGHUP
 * (reloads the auth file of -Y, as memcached does) and a
 * one-second clock that tells the store the time and reclaims expired
 * items a slice at a time. On SIGTERM or SIGINT (or "shutdown" with -A):
 * stop accepting, let the workers write the replies already queued (at
 * most WORKER_STOP_TIMEOUT_MS), join them, free the store, remove the
 * pidfile, exit 0.
 */
#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <openssl/crypto.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "auth.h"
#include "clock.h"
#include "conf.h"
#include "conn.h"
#include "daemon.h"
#include "hash.h"
#include "listener.h"
#include "log.h"
#include "prefix_stats.h"
#include "saver.h"
#include "server.h"
#include "settings.h"
#include "slab.h"
#include "snapshot.h"
#include "tls.h"
#include "stats.h"
#include "store.h"
#include "version.h"
#include "worker.h"

#define EXPIRE_SLICE		4096	/* items examined per store_expire_step() */
#define TIDY_MERGES		4	/* partition merges per clock tick */
#define EXPIRE_TICK_US		5000	/* time the clock may spend reclaiming */
#define DRAIN_TICK_US		100000	/* between the drain's ticks */
#define DRAIN_WALK_US		2000	/* time a drain tick may spend moving */

static const struct timeval drain_tick = { 0, DRAIN_TICK_US };

static void load_settings(int argc, char **argv)
{
	enum settings_action action;
	const char *path;
	char err[1024];

	settings_init(&settings);
	path = settings_config_path(argc, argv);
	if (path) {
		if (conf_load(path, &settings, err, sizeof(err)))
			die("%s", err);
		snprintf(settings.config_file, sizeof(settings.config_file),
			 "%s", path);
	}
	if (settings_parse_args(&settings, argc, argv, &action, err,
				sizeof(err)))
		die("%s", err);
	if (action == SETTINGS_HELP) {
		settings_usage(argv[0]);
		exit(0);
	}
	if (action == SETTINGS_VERSION) {
		printf("anchorkv %s\n", ANCHORKV_VERSION);
		exit(0);
	}
	if (settings_finish(&settings, err, sizeof(err)))
		die("%s", err);
}

/* "shutdown" (enabled by -A): stop as on SIGTERM, from the main thread;
 * "shutdown graceful" as on SIGUSR1 (memcached's warm restart gesture). */
static void server_shutdown_hook(void *arg, bool graceful)
{
	struct worker *w = arg;

	__atomic_store_n(&w->srv->shutdown_cmd, true, __ATOMIC_RELAXED);
	kill(getpid(), graceful ? SIGUSR1 : SIGTERM);
}

/* -Y: the first command of a connection gives a user and password. */
static bool server_auth_hook(void *arg, const char *user, size_t ulen,
			     const char *pass, size_t plen)
{
	struct worker *w = arg;
	const struct auth_table *t = __atomic_load_n(&w->srv->auth,
						     __ATOMIC_ACQUIRE);

	return t && auth_check(t, user, ulen, pass, plen);
}

/* "snapshot": write the snapshot on the saver's thread. */
static int server_snapshot_hook(void *arg)
{
	struct worker *w = arg;

	return saver_start(&w->srv->saver);
}

/* What the protocol engine calls of the server (arg: the worker). */
/* "refresh_certs": the TLS files read again (tls.h). */
static int server_refresh_certs_hook(void *arg, char *err, size_t errlen)
{
	(void)arg;
	if (tls_reload(err, errlen)) {
		if (settings.tls.enabled)
			log_error("refresh_certs: %s; the old certificates "
				  "stay", err);
		return -1;
	}
	log_info("refresh_certs: TLS certificates reloaded");
	return 0;
}

static const struct proto_hooks server_hooks = {
	.refresh_certs = server_refresh_certs_hook,
	.stats = stats_hook,
	.shutdown = server_shutdown_hook,
	.snapshot = server_snapshot_hook,
	.auth = server_auth_hook,
	.command = conn_command_hook,
};

static void server_stop(struct server *srv, const char *why)
{
	if (srv->stopping)
		return;
	srv->stopping = true;
	log_info("%s: stopping (closing listeners, flushing replies)", why);
	listener_close_all(srv);
	event_base_loopbreak(srv->base);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;

	(void)what;
	srv->stop_signal = (int)sig;
	/* SIGUSR1: a graceful stop that writes the snapshot; SIGTERM and
	 * SIGINT write it with snapshot_on_exit */
	if (sig == SIGUSR1 || settings.snapshot_on_exit)
		srv->save_on_stop = true;
	if (__atomic_load_n(&srv->shutdown_cmd, __ATOMIC_RELAXED))
		server_stop(srv, sig == SIGUSR1 ? "shutdown graceful" :
			    "shutdown command");
	else
		server_stop(srv, sig == SIGINT ? "SIGINT" :
			    sig == SIGUSR1 ? "SIGUSR1" : "SIGTERM");
}

static void on_clock(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;
	uint64_t start = server_now_us();
	unsigned int round;

	(void)fd;
	(void)what;
	store_set_time(srv->store, time(NULL));
	/* free item blocks above 16 KiB idle for a second leave memory */
	slab_purge_idle();
	/* partitions that deletes left small join their neighbours */
	store_tidy_partitions(srv->store, TIDY_MERGES);
	/* reclaim in slices while there is something to reclaim, and walk
	 * on while a slab class is emptying a page */
	for (round = 0; round < 64; round++) {
		if (!store_expire_step(srv->store, EXPIRE_SLICE) &&
		    !slab_drains())
			break;
		if (server_now_us() - start > EXPIRE_TICK_US)
			break;
	}
	/* the drain ticks again (or tries at the next tick) */
	if (srv->drain_idle && evtimer_add(srv->drain, &drain_tick) == 0)
		srv->drain_idle = false;
}

/*
 * Between the clock's ticks, the slab classes' pages (slab_drain_step():
 * idle wholly free pages give their memory back, sparse pages are named
 * to empty), and while some are being emptied a walk that moves their
 * items, 2 ms at most. A tick that finds nothing to do stops them until
 * the clock's next tick, so an idle server wakes twice a second, not
 * eleven times.
 */
static void on_drain(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;
	uint64_t start;
	unsigned int round;

	(void)fd;
	(void)what;
	if (!slab_drain_step() && !slab_drains()) {
		event_del(srv->drain);
		srv->drain_idle = true;
		return;
	}
	if (!slab_drains())
		return;
	start = server_now_us();
	for (round = 0; round < 64 && slab_drains(); round++) {
		store_expire_step(srv->store, EXPIRE_SLICE);
		if (server_now_us() - start > DRAIN_WALK_US)
			break;
	}
}

static void log_start(const struct server *srv)
{
	char where[600];
	size_t o = 0;
	unsigned int i;

	where[0] = '\0';
	for (i = 0; i < srv->nlisteners && o < sizeof(where) - 1; i++) {
		int n = snprintf(where + o, sizeof(where) - o, "%s%s",
				 i ? ", " : "", srv->listeners[i].name);

		if (n < 0)
			break;
		o += (size_t)n;
	}
	log_info("anchorkv %s starting: pid %ld, listening on %s, threads %u, "
		 "memory %zu MB, shards %u, max item %zu, max connections %u, "
		 "allocator %s, libevent %s", ANCHORKV_VERSION, (long)getpid(),
		 where, settings.threads, settings.maxbytes >> 20,
		 settings.shards, settings.proto.item_size_max,
		 settings.maxconns, ak_alloc_name(), event_get_version());
	if (settings.proto.shutdown_enabled)
		log_info("the shutdown command is enabled (-A)");
	if (settings.proto.auth_enabled)
		log_info("authentication required: %u user:password entries "
			 "from %s (-Y)", srv->auth->n, settings.auth_file);
	if (settings.tls.enabled)
		log_info("TLS (-Z): %s from %s, at least %s, client "
			 "certificates: %s", OpenSSL_version(OPENSSL_VERSION),
			 settings.tls.chain_cert,
			 tls_version_name(settings.tls.min_version),
			 settings.tls.verify_mode == 0 ? "not asked" :
			 settings.tls.verify_mode == 1 ? "requested" :
			 "required");
}

/* Reads the auth file into a new table. Return: it, or NULL (@err says
 * why). */
static struct auth_table *auth_read(char *err, size_t errlen)
{
	struct auth_table *t = ak_malloc(sizeof(*t));

	if (!t) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (auth_load(settings.auth_file, t, err, errlen)) {
		ak_free(t);
		return NULL;
	}
	if (t->skipped)
		log_warn("auth_file %s: %u line(s) skipped, the first is line "
			 "%u: a user or password that is empty or holds a "
			 "space can never be sent by a client",
			 settings.auth_file, t->skipped, t->first_skipped);
	return t;
}

/*
 * -Y: reads the auth file, or refuses to start. Before the listeners open
 * and privileges are dropped, so the file may be readable by root only.
 */
static void load_auth(struct server *srv)
{
	char err[256];

	if (!settings.auth_file[0])
		return;
	srv->auth = auth_read(err, sizeof(err));
	if (!srv->auth)
		die("auth_file (-Y) %s: %s", settings.auth_file, err);
	settings.proto.auth_enabled = true;
}

/*
 * SIGHUP: opens the logfile again (logrotate renames it, then signals),
 * and, as memcached, reads the auth file again. A file that fails to load
 * leaves the users as they were; connections already authenticated stay
 * so.
 */
static void on_sighup(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;
	struct auth_table *t, *old;
	char err[256];

	(void)sig;
	(void)what;
	if (settings.logfile[0]) {
		if (reopen_logs(err, sizeof(err)))
			log_error("SIGHUP: cannot reopen logfile %s: %s; the "
				  "log goes on to the file it went to",
				  settings.logfile, err);
		else
			log_info("SIGHUP: logfile %s reopened",
				 settings.logfile);
	}
	if (settings.tls.enabled) {
		char terr[TLS_ERR_MAX];

		if (tls_reload(terr, sizeof(terr)))
			log_error("SIGHUP: %s; the old TLS certificates stay",
				  terr);
		else
			log_info("SIGHUP: TLS certificates reloaded");
	}
	if (!settings.proto.auth_enabled) {
		log_info("SIGHUP: no auth_file to reload");
		return;
	}
	t = auth_read(err, sizeof(err));
	if (!t) {
		log_error("SIGHUP: auth_file %s: %s; the users stay as they "
			  "were", settings.auth_file, err);
		return;
	}
	old = srv->auth;
	__atomic_store_n(&srv->auth, t, __ATOMIC_RELEASE);
	/* a worker may still be reading it: freed at exit */
	old->retired = srv->auth_retired;
	srv->auth_retired = old;
	log_info("SIGHUP: auth_file %s reloaded: %u user:password entries",
		 settings.auth_file, t->n);
}

static void free_auth(struct server *srv)
{
	struct auth_table *t = srv->auth_retired;

	while (t) {
		struct auth_table *next = t->retired;

		auth_table_free(t);
		ak_free(t);
		t = next;
	}
	if (srv->auth) {
		auth_table_free(srv->auth);
		ak_free(srv->auth);
	}
}

/*
 * One line per address outside loopback, unless -Y is set: without TLS
 * anyone who can reach it, or read the traffic, gets every item; with TLS
 * but no client certificates required, the traffic is private but anyone
 * can still connect.
 */
static void warn_exposed(const struct server *srv)
{
	bool certs = settings.tls.verify_mode >= 2;
	unsigned int i;

	if (settings.proto.auth_enabled)
		return;
	for (i = 0; i < srv->nlisteners; i++) {
		const struct listener *l = &srv->listeners[i];

		if (l->loopback)
			continue;
		if (!l->tls)
			log_warn("listening on %s, which is not a loopback "
				 "address, without authentication (-Y): "
				 "anyone who can reach it can read, change "
				 "and delete every item", l->name);
		else if (!certs)
			log_warn("listening on %s with TLS, which is not a "
				 "loopback address, without authentication "
				 "(-Y) or client certificates "
				 "(ssl_verify_mode 2): the traffic is "
				 "encrypted, but anyone who can reach it can "
				 "connect and read, change and delete every "
				 "item", l->name);
	}
}

/*
 * -Z: the TLS context from the certificate files, or refuse to start;
 * before privileges are dropped (the key may be readable by root only).
 */
static void load_tls(void)
{
	char err[TLS_ERR_MAX];

	if (!settings.tls.enabled)
		return;
	if (tls_init(err, sizeof(err)))
		die("TLS (-Z): %s", err);
}

static struct store *create_store(void)
{
	struct store_config cfg = {
		.mem_limit = settings.maxbytes,
		.item_size_max = settings.proto.item_size_max,
		.nshards = settings.shards,
		.hash_bits = settings.hash_bits,
		.no_evict = !settings.evict,
		.class_page = 1024 * 1024,	/* memcached's slab page */
	};

	return store_create(&cfg);
}

struct load_progress {
	int64_t started_us, last_us;
};

/* A line a second while a large snapshot loads. */
static void load_progress(void *arg, uint64_t items, uint64_t bytes)
{
	struct load_progress *p = arg;
	int64_t now = server_now_us();

	if (now - p->last_us < 1000000)
		return;
	p->last_us = now;
	log_info("loading snapshot %s: %" PRIu64 " items, %.0f MB/s",
		 settings.snapshot_file, items,
		 (double)bytes / (double)(now - p->started_us));
}

/*
 * -e: the snapshot is loaded before any connection is accepted. A file
 * that is refused is kept as FILE.bad, and the start is a clean, empty
 * one: nothing of it is served.
 */
static void load_snapshot(struct server *srv)
{
	struct load_progress prog = { server_now_us(), server_now_us() };
	struct snapshot_opts o = {
		.item_size_max = settings.proto.item_size_max,
		.unix_now = time(NULL),
		.progress = load_progress,
		.arg = &prog,
	};
	const char *path = settings.snapshot_file;
	struct snapshot_stats st;
	char bad[SETTINGS_PATH_MAX + 8];
	double secs;
	int rc;

	if (!path[0])
		return;
	snprintf(bad, sizeof(bad), "%s.tmp", path);
	if (!unlink(bad))
		log_warn("snapshot %s: removed %s, left by a save that did not "
			 "finish", path, bad);
	rc = snapshot_load(srv->store, path, &o, &st);
	secs = (double)(server_now_us() - prog.started_us) / 1e6;
	if (rc == -ENOENT) {
		log_info("snapshot %s: no file, starting empty", path);
		return;
	}
	if (rc) {
		snprintf(bad, sizeof(bad), "%s.bad", path);
		if (rename(path, bad))
			log_error("snapshot %s: cannot rename it to %s: %s",
				  path, bad, strerror(errno));
		log_error("snapshot %s refused: %s; starting empty, the file "
			  "is kept as %s", path, st.why, bad);
		store_destroy(srv->store);
		srv->store = create_store();
		if (!srv->store)
			die("cannot create the store again");
		store_set_time(srv->store, time(NULL));
		return;
	}
	log_info("snapshot %s loaded: %" PRIu64 " items (%" PRIu64
		 " expired left out), %.1f MB in %.2f s, %.0f MB/s%s", path,
		 st.items, st.expired, (double)st.bytes / 1e6, secs,
		 secs > 0 ? (double)st.bytes / 1e6 / secs : 0.0,
		 st.full ? "; stopped at memory_limit: the rest is left out" :
			   "");
}

/* SIGUSR2: a snapshot written while serving, as the snapshot command. */
static void on_sigusr2(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;
	int rc;

	(void)sig;
	(void)what;
	rc = saver_start(&srv->saver);
	if (rc == -ENOENT)
		log_warn("SIGUSR2: no snapshot_file (-e) to write");
	else if (rc == -EBUSY)
		log_warn("SIGUSR2: a snapshot is already being written");
	else if (rc)
		log_error("SIGUSR2: cannot start a snapshot: %s",
			  strerror(-rc));
}

static void setup_events(struct server *srv)
{
	struct timeval one_sec = { 1, 0 };

	srv->sigterm = evsignal_new(srv->base, SIGTERM, on_signal, srv);
	srv->sigint = evsignal_new(srv->base, SIGINT, on_signal, srv);
	srv->sigusr1 = evsignal_new(srv->base, SIGUSR1, on_signal, srv);
	srv->sigusr2 = evsignal_new(srv->base, SIGUSR2, on_sigusr2, srv);
	srv->sighup = evsignal_new(srv->base, SIGHUP, on_sighup, srv);
	srv->clock = event_new(srv->base, -1, EV_PERSIST, on_clock, srv);
	srv->drain = event_new(srv->base, -1, EV_PERSIST, on_drain, srv);
	if (!srv->sigterm || !srv->sigint || !srv->sigusr1 || !srv->sigusr2 ||
	    !srv->sighup || !srv->clock || !srv->drain ||
	    evsignal_add(srv->sigterm, NULL) ||
	    evsignal_add(srv->sigint, NULL) || evsignal_add(srv->sigusr1, NULL) ||
	    evsignal_add(srv->sigusr2, NULL) ||
	    evsignal_add(srv->sighup, NULL) || evtimer_add(srv->clock, &one_sec) ||
	    evtimer_add(srv->drain, &drain_tick))
		die("cannot set up the main event loop");
}

static void free_events(struct server *srv)
{
	if (srv->sigterm)
		event_free(srv->sigterm);
	if (srv->sigint)
		event_free(srv->sigint);
	if (srv->sigusr1)
		event_free(srv->sigusr1);
	if (srv->sigusr2)
		event_free(srv->sigusr2);
	if (srv->sighup)
		event_free(srv->sighup);
	if (srv->clock)
		event_free(srv->clock);
	if (srv->drain)
		event_free(srv->drain);
}

/*
 * The port accepts connections (into the backlog) as soon as it is bound,
 * before the loop handles signals: a SIGTERM or SIGHUP sent then would
 * take the default action and kill the process. Hold them (@held) until
 * setup_events() has given them their handlers.
 */
static void hold_stop_signals(sigset_t *held)
{
	sigemptyset(held);
	sigaddset(held, SIGTERM);
	sigaddset(held, SIGINT);
	sigaddset(held, SIGUSR1);
	sigaddset(held, SIGUSR2);
	sigaddset(held, SIGHUP);
	pthread_sigmask(SIG_BLOCK, held, NULL);
}

/* -d changes to /, SIGHUP opens the logfile again, and the snapshot is
 * written at the stop: relative paths are resolved at start. */
static void resolve_paths(void)
{
	make_absolute(settings.logfile, sizeof(settings.logfile), "logfile");
	make_absolute(settings.snapshot_file, sizeof(settings.snapshot_file),
		      "snapshot_file");
	make_absolute(settings.tls.chain_cert, sizeof(settings.tls.chain_cert),
		      "ssl_chain_cert");
	make_absolute(settings.tls.key, sizeof(settings.tls.key), "ssl_key");
	make_absolute(settings.tls.ca_cert, sizeof(settings.tls.ca_cert),
		      "ssl_ca_cert");
}

/* The store, the stats detail table, and the snapshot loaded into it. */
static void open_store(struct server *srv)
{
	srv->store = create_store();
	if (!srv->store)
		die("cannot create the store (memory %zu, shards %u)",
		    settings.maxbytes, settings.shards);
	store_set_time(srv->store, time(NULL));
	settings.proto.prefixes = prefix_stats_create(settings.prefix_delimiter);
	if (!settings.proto.prefixes)
		die("cannot create the stats detail table");
	prefix_stats_enable(settings.proto.prefixes, settings.detail_enabled);
	load_snapshot(srv);
	saver_init(&srv->saver, srv->store);
}

/*
 * After the loop: the listeners close, the workers drain, the snapshot is
 * written if the stop asked for it, and everything is freed. Return: the
 * exit status.
 */
static int stop_server(struct server *srv)
{
	int status = 0;

	listener_close_all(srv);
	worker_stop_all(srv);
	if (srv->save_on_stop && saver_save(&srv->saver))
		status = SETTINGS_EXIT_FAILURE;
	saver_finish(&srv->saver);
	listener_free_all(srv);
	free_events(srv);
	event_base_free(srv->base);
	store_destroy(srv->store);
	prefix_stats_destroy(settings.proto.prefixes);
	settings.proto.prefixes = NULL;
	free_auth(srv);
	tls_exit();
	pthread_mutex_destroy(&srv->stats_lock);
	if (settings.pidfile[0] && unlink(settings.pidfile) && errno != ENOENT)
		log_warn("cannot remove pidfile %s: %s", settings.pidfile,
			 strerror(errno));
	log_info("anchorkv stopped");
	return status;
}

int main(int argc, char **argv)
{
	struct server srv = { 0 };
	char err[1024];
	sigset_t held;
	int ret;

	/* libevent allocates through our allocator too */
	event_set_mem_functions(ak_malloc, ak_realloc, ak_free);
	signal(SIGPIPE, SIG_IGN);
	hold_stop_signals(&held);

	load_settings(argc, argv);
	resolve_paths();
	redirect_logs();
	raise_nofile_limit();
	if (hash_init())
		die("cannot draw the hash seed (getrandom)");
	if (auth_init())
		die("cannot initialise libsodium (the auth file's digests)");
	load_auth(&srv);
	load_tls();

	make_absolute(settings.pidfile, sizeof(settings.pidfile), "pidfile");
	if (settings.daemonize)
		make_absolute(settings.unixsocket, sizeof(settings.unixsocket),
			      "unixsocket");
	ret = listener_open_all(&srv, &settings, err, sizeof(err));
	if (ret)
		die("%s", err);
	warn_exposed(&srv);
	if (settings.daemonize)
		daemonize();
	write_pidfile();
	drop_privileges();

	srv.started = time(NULL);
	srv.hooks = &server_hooks;
	pthread_mutex_init(&srv.stats_lock, NULL);
	open_store(&srv);

	srv.base = event_base_new();
	if (!srv.base)
		die("cannot create the main event loop");
	ret = worker_init_all(&srv);
	if (ret)
		die("cannot create the workers: %s", strerror(-ret));
	setup_events(&srv);
	pthread_sigmask(SIG_UNBLOCK, &held, NULL);
	ret = worker_start_all(&srv);
	if (ret)
		die("cannot start the worker threads: %s", strerror(-ret));
	log_start(&srv);
	/* the ports answer once everything that serves them is up */
	if (listener_start(&srv, (int)settings.backlog, err, sizeof(err)))
		die("%s", err);

	event_base_dispatch(srv.base);
	return stop_server(&srv);
}
