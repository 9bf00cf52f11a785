// SPDX-License-Identifier: MIT
/*
 * stats.c - the "stats" command family, in memcached 1.6's words.
 *
 * "stats" prints memcached's general statistics in memcached's order,
 * leaving out what has no meaning here (slab mover, LRU crawler, extstore,
 * response object pools), then anchorkv's own. "stats settings" follows
 * memcached's names likewise.
 *
 * anchorkv has no slab classes. "stats items" and "stats slabs" describe
 * the whole store as one pseudo class 1, printed only when it holds items
 * (memcached prints no class that is empty):
 *
 *	stats items: items:1:number, items:1:mem_requested (allocator bytes),
 *	             items:1:evicted, items:1:evicted_unfetched,
 *	             items:1:expired_unfetched, items:1:reclaimed,
 *	             items:1:outofmemory
 *	stats slabs: 1:used_chunks (= items), 1:get_hits, 1:cmd_set,
 *	             1:delete_hits, 1:incr_hits, 1:decr_hits, 1:cas_hits,
 *	             1:cas_badval, 1:touch_hits, then active_slabs (0 or 1)
 *	             and total_malloced (item bytes + index bytes)
 *
 * "stats anchorkv" prints anchorkv's own section alone, "stats shards"
 * each shard's items (integer and string keys), bytes and hash buckets.
 * "stats sizes" answers as memcached does when size tracking is off.
 */
#include "stats.h"

#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "compiler.h"
#include "counters.h"
#include "conn.h"
#include "listener.h"
#include "prefix_stats.h"
#include "reply.h"
#include "saver.h"
#include "server.h"
#include "settings.h"
#include "slab.h"
#include "store.h"
#include "tls.h"
#include "worker.h"

_Static_assert(sizeof(struct proto_stats) % sizeof(uint64_t) == 0,
	       "struct proto_stats must be made of uint64_t counters");
_Static_assert(sizeof(struct worker_io_stats) % sizeof(uint64_t) == 0,
	       "struct worker_io_stats must be made of uint64_t counters");

#define U64_FIELDS(type)	(sizeof(type) / sizeof(uint64_t))

/* Everything "stats" reports, summed over the workers, minus baselines. */
struct stats_totals {
	struct proto_stats p;
	struct worker_io_stats io;
};

/* dst[i] += READ_ONCE(cur[i]) - base[i], never below zero */
static void sum_counters(uint64_t *dst, const uint64_t *cur,
			 const uint64_t *base, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t v = __atomic_load_n(&cur[i], __ATOMIC_RELAXED);

		dst[i] += v > base[i] ? v - base[i] : 0;
	}
}

static void snap_counters(uint64_t *base, const uint64_t *cur, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		base[i] = __atomic_load_n(&cur[i], __ATOMIC_RELAXED);
}

static void stats_sum(struct server *srv, struct stats_totals *t)
{
	unsigned int i;

	memset(t, 0, sizeof(*t));
	pthread_mutex_lock(&srv->stats_lock);
	for (i = 0; i < srv->nworkers; i++) {
		struct worker *w = &srv->workers[i];

		sum_counters((uint64_t *)&t->p, (uint64_t *)&w->ctx.stats,
			     (uint64_t *)&w->base_proto,
			     U64_FIELDS(struct proto_stats));
		sum_counters((uint64_t *)&t->io, (uint64_t *)&w->co.io,
			     (uint64_t *)&w->base_io,
			     U64_FIELDS(struct worker_io_stats));
	}
	pthread_mutex_unlock(&srv->stats_lock);
}

static void stats_reset(struct server *srv)
{
	unsigned int i;

	pthread_mutex_lock(&srv->stats_lock);
	for (i = 0; i < srv->nworkers; i++) {
		struct worker *w = &srv->workers[i];

		snap_counters((uint64_t *)&w->base_proto,
			      (uint64_t *)&w->ctx.stats,
			      U64_FIELDS(struct proto_stats));
		snap_counters((uint64_t *)&w->base_io, (uint64_t *)&w->co.io,
			      U64_FIELDS(struct worker_io_stats));
	}
	stats_write(total_conns, 0);
	stats_write(rejected_conns, 0);
	stats_write(listen_disabled_num, 0);
	stats_write(listen_disabled_us, 0);
	store_stats_reset(srv->store);
	prefix_stats_clear(settings.proto.prefixes);	/* as memcached */
	pthread_mutex_unlock(&srv->stats_lock);
}

static void stat_u64(struct reply *out, const char *name, uint64_t v);

/* "STAT <name> 0" for each space-separated name of @names. */
static void stat_zeros(struct reply *out, const char *names)
{
	const char *p = names;

	while (*p) {
		size_t n = strcspn(p, " ");

		reply_addf(out, "STAT %.*s 0\r\n", (int)n, p);
		p += n;
		while (*p == ' ')
			p++;
	}
}

static void stat_u64(struct reply *out, const char *name, uint64_t v)
{
	reply_addf(out, "STAT %s %" PRIu64 "\r\n", name, v);
}

static void stat_str(struct reply *out, const char *name, const char *v)
{
	reply_addf(out, "STAT %s %s\r\n", name, v);
}

static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

static unsigned int log2_u64(uint64_t n)
{
	unsigned int l = 0;

	while (n >>= 1)
		l++;
	return l;
}

/* The slab classes between jemalloc's (core/slab.h) that hold items. */
static void stats_slabs_own(struct reply *out, const struct slab_stats *ss)
{
	stat_u64(out, "slab_pages", ss->pages);
	stat_u64(out, "slab_page_bytes", ss->page_bytes);
	stat_u64(out, "slab_blocks", ss->blocks);
	stat_u64(out, "slab_purged_bytes", ss->purged_bytes);
	stat_u64(out, "slab_pages_emptied", ss->drained_pages);
	stat_u64(out, "slab_items_moved", ss->moved_blocks);
}

/* anchorkv's own counters, after memcached's in "stats". */
static void stats_own(struct reply *out, const struct stats_totals *t,
		      const struct store_stats *st,
		      const struct slab_stats *ss)
{
	stat_str(out, "anchorkv_version", ANCHORKV_VERSION);
	stat_u64(out, "cmd_range", t->p.cmd_range);
	stat_u64(out, "cmd_count", t->p.cmd_count);
	stat_u64(out, "cmd_delete_range", t->p.cmd_delete_range);
	stat_u64(out, "range_items", t->p.range_items);
	stat_u64(out, "curr_int_items", st->curr_int_items);
	stat_u64(out, "curr_str_items", st->curr_str_items);
	stat_u64(out, "index_bytes", st->index_bytes);
	stat_u64(out, "limit_effective", st->limit_effective);
	stat_u64(out, "hash_buckets", st->hash_buckets);
	stat_u64(out, "radix_nodes", st->radix_nodes);
	/* S3-FIFO (docs/architecture.md, "Eviction") */
	stat_u64(out, "small_queue_items", st->small_items);
	stat_u64(out, "small_queue_bytes", st->small_bytes);
	stat_u64(out, "main_queue_items", st->curr_items - st->small_items);
	stat_u64(out, "ghost_entries", st->ghost_entries);
	stat_u64(out, "ghost_hits", st->ghost_hits);
	stat_u64(out, "ghost_to_small", st->ghost_small);
	stat_u64(out, "moves_to_main", st->moved_main);
	stat_u64(out, "small_window_moves", st->small_aged);
	stat_u64(out, "small_rescues", st->rescued);
	stat_u64(out, "main_rescues", st->main_rescued);
	stat_u64(out, "shards", st->nshards);
	stat_u64(out, "partitions", st->partitions);
	stat_u64(out, "partition_splits", st->partition_splits);
	stat_u64(out, "partition_merges", st->partition_merges);
	stats_slabs_own(out, ss);
	stat_str(out, "allocator", ak_alloc_name());
}

/* memcached's TLS lines, only with -Z, in its place and order */
static void stats_tls(struct server *srv, struct reply *out)
{
	int64_t now = store_unix_time(srv->store);
	int64_t at = tls_last_refresh();

	if (!settings.tls.enabled)
		return;
	if (settings.tls.session_cache)
		stat_u64(out, "ssl_new_sessions", stats_read(ssl_new_sessions));
	stat_u64(out, "ssl_handshake_errors", stats_read(ssl_handshake_errors));
	stat_u64(out, "time_since_server_cert_refresh",
		 (uint64_t)(now > at ? now - at : 0));
}

/* memcached's command counters, in its order */
static void stats_commands(struct reply *out, const struct proto_stats *p)
{
	stat_u64(out, "cmd_get", p->cmd_get);
	stat_u64(out, "cmd_set", p->cmd_set);
	stat_u64(out, "cmd_flush", p->cmd_flush);
	stat_u64(out, "cmd_touch", p->cmd_touch);
	stat_u64(out, "cmd_meta", p->cmd_meta);
	stat_u64(out, "get_hits", p->get_hits);
	stat_u64(out, "get_misses", p->get_misses);
	stat_u64(out, "get_expired", p->get_expired);
	stat_u64(out, "get_flushed", p->get_flushed);
	stat_u64(out, "delete_misses", p->delete_misses);
	stat_u64(out, "delete_hits", p->delete_hits);
	stat_u64(out, "incr_misses", p->incr_misses);
	stat_u64(out, "incr_hits", p->incr_hits);
	stat_u64(out, "decr_misses", p->decr_misses);
	stat_u64(out, "decr_hits", p->decr_hits);
	stat_u64(out, "cas_misses", p->cas_misses);
	stat_u64(out, "cas_hits", p->cas_hits);
	stat_u64(out, "cas_badval", p->cas_badval);
	stat_u64(out, "touch_hits", p->touch_hits);
	stat_u64(out, "touch_misses", p->touch_misses);
	stat_u64(out, "store_too_large", p->store_too_large);
	stat_u64(out, "store_no_memory", p->store_no_memory);
	stat_u64(out, "auth_cmds", p->auth_cmds);
	stat_u64(out, "auth_errors", p->auth_errors);
}

static void stats_general(struct server *srv, struct reply *out)
{
	struct stats_totals t;
	struct store_stats st;
	struct slab_stats ss;
	struct rusage ru;
	time_t now = time(NULL);

	stats_sum(srv, &t);
	store_stats(srv->store, &st);
	getrusage(RUSAGE_SELF, &ru);

	stat_u64(out, "pid", (uint64_t)getpid());
	stat_u64(out, "uptime", (uint64_t)(now - srv->started));
	stat_u64(out, "time", (uint64_t)now);
	stat_str(out, "version", PROTO_VERSION);
	stat_str(out, "libevent", event_get_version());
	stat_u64(out, "pointer_size", 8 * sizeof(void *));
	reply_addf(out, "STAT rusage_user %ld.%06ld\r\n",
		   (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec);
	reply_addf(out, "STAT rusage_system %ld.%06ld\r\n",
		   (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec);
	stat_u64(out, "max_connections", settings.maxconns);
	stat_u64(out, "curr_connections", stats_read(curr_conns));
	stat_u64(out, "total_connections", stats_read(total_conns));
	stat_u64(out, "rejected_connections", stats_read(rejected_conns));
	stat_u64(out, "connection_structures", stats_read(curr_conns));
	/* memcached's response and read-buffer pools: none here (each
	 * connection has its own buffers); tools print the fields */
	stat_zeros(out, "response_obj_oom response_obj_count "
		   "response_obj_bytes read_buf_count read_buf_bytes "
		   "read_buf_bytes_free read_buf_oom");
	/* descriptors held back over max_connections, as at start */
	stat_u64(out, "reserved_fds", settings_reserved_fds(&settings));
	stats_commands(out, &t.p);
	stat_u64(out, "bytes_read", t.io.bytes_read);
	stat_u64(out, "bytes_written", t.io.bytes_written);
	stat_u64(out, "limit_maxbytes", st.limit_maxbytes);
	stat_u64(out, "accepting_conns", stats_read(accepting_conns));
	stat_u64(out, "listen_disabled_num", stats_read(listen_disabled_num));
	stat_u64(out, "time_in_listen_disabled_us",
		 stats_read(listen_disabled_us));
	stat_u64(out, "threads", settings.threads);
	stat_u64(out, "conn_yields", t.io.conn_yields);
	stat_u64(out, "hash_power_level", log2_u64(st.hash_buckets));
	stat_u64(out, "hash_bytes", st.hash_bytes);
	stat_u64(out, "hash_is_expanding", st.rehashing ? 1 : 0);
	/* memcached's slab mover: the items moved off the pages the slab
	 * classes emptied, and those pages (core/slab.h, slab_drains()) */
	slab_get_stats(&ss);
	stat_u64(out, "slab_reassign_rescues", ss.moved_blocks);
	/* its other counters, LRU maintainer and crawler thread, log
	 * watchers and NAPI: anchorkv has none of them */
	stat_zeros(out, "slab_reassign_chunk_rescues "
		   "slab_reassign_evictions_nomem slab_reassign_inline_reclaim "
		   "slab_reassign_busy_items slab_reassign_busy_deletes "
		   "slab_reassign_running");
	stat_u64(out, "slabs_moved", ss.drained_pages);
	stat_zeros(out, "lru_crawler_running "
		   "lru_crawler_starts lru_maintainer_juggles");
	stat_u64(out, "malloc_fails", ak_alloc_failed());
	stat_zeros(out, "log_worker_dropped log_worker_written "
		   "log_watcher_skipped log_watcher_sent log_watchers");
	stats_tls(srv, out);
	stat_zeros(out, "unexpected_napi_ids round_robin_fallback");
	stat_u64(out, "bytes", st.bytes);
	stat_u64(out, "curr_items", st.curr_items);
	stat_u64(out, "total_items", st.total_items);
	stat_zeros(out, "slab_global_page_pool");
	stat_u64(out, "expired_unfetched", st.expired_unfetched);
	stat_u64(out, "evicted_unfetched", st.evicted_unfetched);
	/* S3-FIFO's small never evicts an item read since it came in; main
	 * evicts one read since the hand last passed it only for its size */
	stat_u64(out, "evicted_active", st.evicted_active);
	stat_u64(out, "evictions", st.evictions);
	stat_u64(out, "reclaimed", st.reclaimed);
	/* the expiry hand is what memcached's crawler is */
	stat_u64(out, "crawler_reclaimed", st.expire_reclaimed);
	stat_u64(out, "crawler_items_checked", st.expire_checked);
	/* no LRU segments to move between; every eviction and reclaim is
	 * done by the thread that needs the room */
	stat_zeros(out, "lrutail_reflocked moves_to_cold moves_to_warm "
		   "moves_within_lru");
	stat_u64(out, "direct_reclaims", st.evictions + st.reclaimed);
	stat_zeros(out, "lru_bumps_dropped");
	stats_own(out, &t, &st, &ss);
	saver_stats(&srv->saver, out);
}

static void stats_anchorkv(struct server *srv, struct reply *out)
{
	struct stats_totals t;
	struct store_stats st;
	struct slab_stats ss;

	stats_sum(srv, &t);
	store_stats(srv->store, &st);
	slab_get_stats(&ss);
	stats_own(out, &t, &st, &ss);
	stat_u64(out, "hash_max_probe", store_hash_max_probe(srv->store));
}

/* One group of lines per shard, for spotting a shard that holds more. */
static void stats_shards(struct server *srv, struct reply *out)
{
	struct store_stats st;
	unsigned int i;

	for (i = 0; store_shard_stats(srv->store, i, &st) == 0; i++) {
		reply_addf(out, "STAT shard:%u:items %" PRIu64 "\r\n", i,
			   st.curr_items);
		reply_addf(out, "STAT shard:%u:int_items %" PRIu64 "\r\n", i,
			   st.curr_int_items);
		reply_addf(out, "STAT shard:%u:str_items %" PRIu64 "\r\n", i,
			   st.curr_str_items);
		reply_addf(out, "STAT shard:%u:bytes %" PRIu64 "\r\n", i,
			   st.bytes);
		reply_addf(out, "STAT shard:%u:hash_buckets %" PRIu64 "\r\n",
			   i, st.hash_buckets);
	}
}

/* memcached's ssl_* lines of "stats settings"; ssl_enabled always */
static void stats_tls_settings(struct reply *out)
{
	const struct tls_settings *t = &settings.tls;

	stat_str(out, "ssl_enabled", yes_no(t->enabled));
	if (!t->enabled)
		return;
	stat_str(out, "ssl_chain_cert", t->chain_cert);
	stat_str(out, "ssl_key", t->key[0] ? t->key : t->chain_cert);
	stat_u64(out, "ssl_verify_mode", t->verify_mode);
	stat_u64(out, "ssl_keyformat", t->keyformat);
	stat_str(out, "ssl_ciphers", t->ciphers[0] ? t->ciphers : "NULL");
	stat_str(out, "ssl_ca_cert", t->ca_cert[0] ? t->ca_cert : "NULL");
	stat_u64(out, "ssl_wbuf_size", t->wbuf_size);
	stat_str(out, "ssl_session_cache", yes_no(t->session_cache));
	stat_str(out, "ssl_kernel_tls", yes_no(t->kernel_tls));
	stat_str(out, "ssl_min_version", tls_version_name(t->min_version));
	stat_u64(out, "ssl_handshake_timeout", t->handshake_timeout);
}

static void stats_settings(struct server *srv, struct reply *out)
{
	const struct settings *s = &settings;

	/* cache_memlimit changes it at run time */
	stat_u64(out, "maxbytes", store_mem_limit(srv->store));
	stat_u64(out, "maxconns", s->maxconns);
	stat_u64(out, "tcpport", s->unixsocket[0] ? 0 : s->port);
	stat_u64(out, "udpport", 0);
	stat_str(out, "inter", s->unixsocket[0] ? "NULL" : s->listen);
	stat_u64(out, "verbosity",
		 (uint64_t)READ_ONCE(settings.proto.verbose));
	stat_str(out, "evictions", s->evict ? "on" : "off");
	stat_str(out, "domain_socket",
		 s->unixsocket[0] ? s->unixsocket : "NULL");
	reply_addf(out, "STAT umask %o\r\n", s->unixsocket_perm);
	stat_str(out, "shutdown_command", yes_no(s->proto.shutdown_enabled));
	stat_u64(out, "num_threads", s->threads);
	reply_addf(out, "STAT stat_key_prefix %c\r\n", s->prefix_delimiter);
	stat_str(out, "detail_enabled",
		 yes_no(prefix_stats_on(s->proto.prefixes)));
	stat_u64(out, "reqs_per_event", s->reqs_per_event);
	stat_str(out, "cas_enabled", yes_no(s->proto.cas_enabled));
	stat_u64(out, "tcp_backlog", s->backlog);
	/* memcached's prot_text() */
	stat_str(out, "binding_protocol",
		 s->proto.binding == PROTO_BIND_ASCII ? "ascii" :
		 s->proto.binding == PROTO_BIND_BINARY ? "binary" :
		 "auto-negotiate");
	stat_str(out, "auth_enabled_sasl", yes_no(s->proto.sasl));
	/* as memcached: the file's name, or "no" */
	stat_str(out, "auth_enabled_ascii",
		 s->auth_file[0] && !s->proto.sasl ? s->auth_file : "no");
	stat_u64(out, "item_size_max", s->proto.item_size_max);
	stat_str(out, "maxconns_fast", "yes");
	stat_u64(out, "hashpower_init", s->hash_power);
	stat_str(out, "flush_enabled", yes_no(s->proto.flush_enabled));
	stat_u64(out, "idle_timeout", s->idle_timeout);
	stats_tls_settings(out);
	/* anchorkv's own */
	stat_u64(out, "range_max", s->proto.range_max);
	stat_u64(out, "shards", s->shards);
	stat_u64(out, "shard_hash_bits", s->hash_bits);
	stat_str(out, "daemonize", yes_no(s->daemonize));
	stat_str(out, "config_file", s->config_file[0] ? s->config_file :
		 "NULL");
	stat_str(out, "allocator", ak_alloc_name());
}

static void stats_items(struct server *srv, struct reply *out)
{
	struct stats_totals t;
	struct store_stats st;

	stats_sum(srv, &t);
	store_stats(srv->store, &st);
	if (!st.curr_items)
		return;
	stat_u64(out, "items:1:number", st.curr_items);
	stat_u64(out, "items:1:mem_requested", st.bytes);
	stat_u64(out, "items:1:evicted", st.evictions);
	stat_u64(out, "items:1:outofmemory", t.p.store_no_memory);
	stat_u64(out, "items:1:reclaimed", st.reclaimed);
	stat_u64(out, "items:1:expired_unfetched", st.expired_unfetched);
	stat_u64(out, "items:1:evicted_unfetched", st.evicted_unfetched);
	stat_u64(out, "items:1:evicted_active", st.evicted_active);
}

static void stats_slabs(struct server *srv, struct reply *out)
{
	struct stats_totals t;
	struct store_stats st;

	stats_sum(srv, &t);
	store_stats(srv->store, &st);
	if (st.curr_items) {
		stat_u64(out, "1:used_chunks", st.curr_items);
		stat_u64(out, "1:get_hits", t.p.get_hits);
		stat_u64(out, "1:cmd_set", t.p.cmd_set);
		stat_u64(out, "1:delete_hits", t.p.delete_hits);
		stat_u64(out, "1:incr_hits", t.p.incr_hits);
		stat_u64(out, "1:decr_hits", t.p.decr_hits);
		stat_u64(out, "1:cas_hits", t.p.cas_hits);
		stat_u64(out, "1:cas_badval", t.p.cas_badval);
		stat_u64(out, "1:touch_hits", t.p.touch_hits);
	}
	stat_u64(out, "active_slabs", st.curr_items ? 1 : 0);
	stat_u64(out, "total_malloced", st.bytes + st.index_bytes);
}

struct conns_walk {
	struct reply *out;
	int64_t now;
};

/* A connection's lines of "stats conns" (worker_for_each_conn()). */
static void stats_conn(const struct conn *c, void *arg)
{
	struct conns_walk *walk = arg;
	int64_t last = READ_ONCE(c->last_cmd);

	reply_addf(walk->out, "STAT %d:addr %s\r\n", c->fd, c->addr);
	reply_addf(walk->out, "STAT %d:listen_addr %s\r\n", c->fd,
		   c->listen_addr);
	reply_addf(walk->out, "STAT %d:state %s\r\n", c->fd,
		   conn_state_name(c));
	reply_addf(walk->out, "STAT %d:secs_since_last_cmd %" PRId64 "\r\n",
		   c->fd, walk->now > last ? walk->now - last : 0);
	/* anchorkv's: which connections are encrypted, and how */
	if (c->tr->secure) {
		const char *v = READ_ONCE(c->tls_version);

		reply_addf(walk->out, "STAT %d:tls %s\r\n", c->fd,
			   v ? v : "handshake");
	}
}

/* One line per listener and three or four per connection, as memcached. */
static void stats_conns(struct server *srv, struct reply *out)
{
	int64_t now = store_unix_time(srv->store);
	unsigned int i;

	for (i = 0; i < srv->nlisteners; i++) {
		const struct listener *l = &srv->listeners[i];
		int fd = READ_ONCE(l->fd);

		if (fd < 0)
			continue;
		reply_addf(out, "STAT %d:addr %s\r\n", fd, l->name);
		reply_addf(out, "STAT %d:state conn_listening\r\n", fd);
		reply_addf(out, "STAT %d:secs_since_last_cmd 0\r\n", fd);
	}
	for (i = 0; i < srv->nworkers; i++) {
		struct conns_walk walk = { .out = out, .now = now };

		worker_for_each_conn(&srv->workers[i], stats_conn, &walk);
	}
}

/* Is @args (trimmed) exactly @word? */
static bool args_are(const char *args, size_t len, const char *word)
{
	return len == strlen(word) && !memcmp(args, word, len);
}

bool stats_hook(void *arg, const char *args, size_t len, struct reply *out)
{
	struct worker *w = arg;
	struct server *srv = w->srv;

	while (len && (*args == ' ' || *args == '\t')) {
		args++;
		len--;
	}
	while (len && (args[len - 1] == ' ' || args[len - 1] == '\t' ||
		       args[len - 1] == '\r' || args[len - 1] == '\n'))
		len--;

	if (len == 0)
		stats_general(srv, out);
	else if (args_are(args, len, "settings"))
		stats_settings(srv, out);
	else if (args_are(args, len, "items"))
		stats_items(srv, out);
	else if (args_are(args, len, "slabs"))
		stats_slabs(srv, out);
	else if (args_are(args, len, "conns"))
		stats_conns(srv, out);
	else if (args_are(args, len, "anchorkv"))
		stats_anchorkv(srv, out);
	else if (args_are(args, len, "shards"))
		stats_shards(srv, out);
	else if (args_are(args, len, "sizes"))
		stat_str(out, "sizes_status", "disabled");	/* as memcached */
	else if (args_are(args, len, "reset")) {
		stats_reset(srv);
		reply_add(out, "RESET\r\n", 7);
		return true;
	} else
		return false;
	reply_add(out, "END\r\n", 5);
	return true;
}
