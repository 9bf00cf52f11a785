/* SPDX-License-Identifier: MIT */
/*
 * proto.h - the memcached text protocol engine: bytes in, replies out.
 *
 * No sockets here. The server hands each connection's input bytes to
 * proto_process(); the engine parses every complete request in them in
 * place, runs it against the store, and queues the replies in the
 * connection's struct reply (reply.h), from which the server writes with
 * writev(). Values are queued by reference to the item (zero copy).
 *
 * A data block (set and friends) is copied into the freshly allocated item
 * as it arrives, so the server's input buffer stays small whatever the
 * value size. A declared value larger than the item size limit is answered
 * "SERVER_ERROR object too large for cache" and its bytes are read and
 * discarded ("swallowed") without being buffered.
 *
 * With auth_enabled (-Y), a connection starts unauthenticated: until a
 * "set" whose data is "<user> <password>" is accepted by the auth hook,
 * every other line is answered "CLIENT_ERROR unauthenticated", as in
 * memcached 1.6 (PROTOCOL.md, "Authentication").
 *
 * Synchronization: a struct proto_conn belongs to one connection and so to
 * one worker thread; the struct proto_ctx and its stats belong to one worker
 * thread. The store takes its own locks.
 */
#ifndef ANCHORKV_PROTO_H
#define ANCHORKV_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reply.h"
#include "store.h"
#include "version.h"

struct store;
struct item;

#define PROTO_LINE_MAX		2048	/* a non-get line longer than this closes */

/*
 * What "version", "stats" and the binary Version reply answer: the plain
 * number of the memcached release whose protocol this is, 1.6.18 (the
 * release every reply is checked against byte for byte: Debian's, which
 * the tests run beside anchorkv). Clients parse it as a version number:
 * Perl's Cache::Memcached::Fast dies on anything else, libmemcached
 * refuses a major version of 0, Dalli turns the meta protocol on above
 * 1.6, memcapable picks its 1.6 expectations from it. anchorkv's own
 * version (ANCHORKV_VERSION) is in "stats anchorkv", --version and the
 * log line at start.
 */
#define PROTO_VERSION		"1.6.18"

/* Per-worker counters, summed by the server for "stats". Field names are
 * memcached's where memcached has the counter. */
struct proto_stats {
	uint64_t cmd_get;		/* keys requested by get/gets (as memcached
					 * 1.6, gat/gats count in cmd_touch) */
	uint64_t cmd_set;		/* storage commands (set/add/replace/append/prepend/cas) */
	uint64_t cmd_flush;
	uint64_t cmd_touch;
	uint64_t cmd_meta;		/* me requests with a valid key (as
					 * memcached 1.6 counts cmd_meta) */
	uint64_t get_hits;
	uint64_t get_misses;
	uint64_t get_expired;
	uint64_t get_flushed;
	uint64_t delete_misses;
	uint64_t delete_hits;
	uint64_t incr_misses;
	uint64_t incr_hits;
	uint64_t decr_misses;
	uint64_t decr_hits;
	uint64_t cas_misses;
	uint64_t cas_hits;
	uint64_t cas_badval;
	uint64_t touch_hits;
	uint64_t touch_misses;
	uint64_t store_too_large;
	uint64_t store_no_memory;
	uint64_t cmd_range;		/* range/ranges/rrange/rranges/keys */
	uint64_t cmd_count;
	uint64_t cmd_delete_range;
	uint64_t range_items;		/* items returned by range commands */
	uint64_t auth_cmds;
	uint64_t auth_errors;
};

/* -B: which protocols a connection may speak (memcached's binding). */
enum proto_binding {
	PROTO_BIND_AUTO,	/* the first byte decides: 0x80 is binary */
	PROTO_BIND_ASCII,	/* text only (-Y forces it, as memcached) */
	PROTO_BIND_BINARY,	/* binary only: other bytes close */
};

/* What the protocol needs to know of the settings (owned by the server). */
struct proto_settings {
	enum proto_binding binding;	/* -B */
	size_t item_size_max;		/* -I */
	unsigned int range_max;		/* cap of <count> in range commands */
	bool cas_enabled;		/* !-C */
	bool flush_enabled;		/* !-F */
	bool shutdown_enabled;		/* -A */
	bool auth_enabled;		/* -Y: connections start unauthenticated */
	bool sasl;			/* -S: binary connections log in by SASL
					 * with the users of -Y's file */
	int verbose;			/* -v count; "verbosity" changes it */
	/* stats detail (-D, "stats detail on"): shared by every worker; NULL:
	 * none, "stats detail" is refused */
	struct prefix_stats *prefixes;
};

struct proto_conn;
struct proto_dump;

/* room for refresh_certs' error line: a sentence, a path, OpenSSL's reason */
#define PROTO_CERT_ERR_MAX	1400

/*
 * Callbacks into the server, for the few commands whose answer is the
 * server's (stats sections it owns, shutdown, a password to check) and
 * for -vv's log of the commands run. A narrow set of hooks, not a
 * framework: each one does one named job.
 */
struct proto_hooks {
	/*
	 * stats: append the reply to "stats [args]" (args is what followed
	 * "stats", without leading spaces, may be empty; not NUL terminated),
	 * including the final "END\r\n", or an error line. Return false if the
	 * sub-command is unknown (then the engine answers "ERROR\r\n").
	 */
	bool (*stats)(void *arg, const char *args, size_t len, struct reply *out);
	/*
	 * shutdown: stop the server (only called when enabled); @graceful:
	 * "shutdown graceful", which also writes the snapshot (-e).
	 */
	void (*shutdown)(void *arg, bool graceful);
	/*
	 * snapshot: start writing the snapshot while serving. Return: 0;
	 * -ENOENT without a snapshot file; -EBUSY when one is being written.
	 */
	int (*snapshot)(void *arg);
	/*
	 * auth: whether this user and password may use the connection (only
	 * called when auth_enabled). The bytes are not NUL terminated.
	 */
	bool (*auth)(void *arg, const char *user, size_t ulen,
		     const char *pass, size_t plen);
	/*
	 * refresh_certs: read the TLS files again. Return: 0, or -1 with
	 * @err (NUL terminated, no line end) in memcached's words.
	 */
	int (*refresh_certs)(void *arg, char *err, size_t errlen);
	/*
	 * command: the engine ran a command line of @pc (only called while
	 * settings->verbose >= 2, for -vv's log): @line is the line without
	 * its "\r\n" and without a data block (not NUL terminated). Before
	 * authentication @line is NULL and @len the bytes consumed, which are
	 * not to be shown.
	 */
	void (*command)(void *arg, const struct proto_conn *pc,
			const char *line, size_t len);
};

#define PROTO_KEYS_BUF	128	/* keys replies this long need no allocation */

/* Per-worker context shared by that worker's connections. */
struct proto_ctx {
	struct store *store;
	struct proto_settings *settings;
	const struct proto_hooks *hooks;
	void *hook_arg;
	struct proto_stats stats;	/* this worker's counters */
	struct reply_pool pool;		/* reply chunks its idle queues gave back */
	/*
	 * Where a keys reply of up to PROTO_KEYS_BUF keys has the store copy
	 * them (32 KB; a longer one allocates): used and done with inside
	 * one command, so the worker's connections share it.
	 */
	struct store_key keys[PROTO_KEYS_BUF];
};

/* What a connection speaks, decided by its first byte (-B auto). */
enum proto_mode {
	PROTO_MODE_NEW,		/* nothing read yet */
	PROTO_MODE_ASCII,
	PROTO_MODE_BINARY,
};

/* The binary request being run or read (proto_bin.c), host order. */
struct proto_bin_req {
	uint8_t opcode;		/* as sent: the response echoes it */
	uint8_t loud;		/* the opcode, quiet forms mapped to theirs */
	bool quiet;
	uint8_t extlen;
	uint16_t keylen;
	uint32_t bodylen;
	char opaque[4];		/* as sent: the response echoes it */
	uint64_t cas;
};

enum proto_state {
	PROTO_CMD,		/* waiting for a command line */
	PROTO_DATA,		/* copying a data block into pending */
	PROTO_SWALLOW,		/* discarding a refused data block */
	PROTO_GET_CONT,		/* inside an overlong get line: more keys follow */
	PROTO_DUMP,		/* a key dump has more lines to queue */
	PROTO_CLOSED,		/* quit, fatal error: the server closes */
};

/* One connection's protocol state; the server embeds it in its conn. */
struct proto_conn {
	struct proto_ctx *ctx;
	struct reply out;		/* replies not yet written */
	enum proto_state state;
	/* PROTO_DATA: a data block read into pending, then handed to
	 * data_complete (proto_data_begin()) */
	struct item *pending;
	size_t data_done;		/* bytes of the block received */
	size_t data_total;		/* the value's, and "\r\n" in text */
	char data_end[2];		/* the bytes after the value: "\r\n"
					 * (the item does not keep them) */
	void (*data_complete)(struct proto_conn *pc, struct item *it);
	/* what the storage command waiting for its block said */
	uint64_t pending_cas;
	int pending_op;			/* enum store_op */
	bool noreply;
	/* the meta set (ms) waiting for its block: its store request, q,
	 * and the flags its reply echoes, in order (proto_meta_store.c) */
	struct store_set meta_set;
	bool meta_q;
	uint8_t meta_echo_len;
	char meta_echo[72];
	/* PROTO_SWALLOW */
	size_t swallow_left;
	/* PROTO_GET_CONT */
	int get_kind;			/* which of get/gets/gat/gats */
	uint32_t get_exptime;
	unsigned int get_nkeys;		/* keys of the line so far */
	bool get_skip;			/* bad key seen: drop the rest of the line */
	bool get_mark_ok;		/* get_mark valid (same proto_process call) */
	struct reply_mark get_mark;	/* where this get's replies began */
	/* PROTO_DUMP: where the dump is (proto_dump.c) */
	struct proto_dump *dump;
	unsigned int nreqs;		/* requests handled (for stats conns; a
					 * dump counts one per batch) */
	bool authed;			/* past authentication, or none needed */
	uint8_t mode;			/* enum proto_mode */
	bool sasl_done;			/* -S: this connection logged in once */
	struct proto_bin_req bin;	/* PROTO_MODE_BINARY */
};

/**
 * proto_conn_init() - prepare the protocol state of a new connection
 * @pc:  the state
 * @ctx: the worker's context
 *
 * Context: the owning worker thread.
 */
void proto_conn_init(struct proto_conn *pc, struct proto_ctx *ctx);

/**
 * proto_conn_idle() - the connection waits for input with nothing queued
 * @pc: the state
 *
 * Gives its reply chunk back to the worker's pool (reply_trim()).
 *
 * Context: the thread that owns the connection.
 */
void proto_conn_idle(struct proto_conn *pc);

/**
 * proto_conn_release() - drop everything a connection holds
 * @pc: the state; unusable afterwards until proto_conn_init()
 *
 * Frees a half-read item and every queued reply, dropping item references.
 *
 * Context: the owning worker thread.
 */
void proto_conn_release(struct proto_conn *pc);

/**
 * proto_process() - parse and run the requests in @buf
 * @pc:       the connection's state
 * @buf:      bytes received and not yet consumed
 * @len:      their number
 * @max_reqs: stop after this many requests (-R fairness); 0: no cap
 *
 * Consumes every complete request and every byte of a data block being read
 * or swallowed. Stops early, leaving bytes unconsumed, when: the rest is an
 * incomplete command line; @max_reqs requests were handled; the queued
 * output exceeds REPLY_HIGH_WATER (the server writes it out, then calls
 * again with the rest); or the connection must close (proto_closed()).
 * An incomplete line longer than PROTO_LINE_MAX that is not a get/gets/
 * gat/gats line closes the connection, as memcached does; a get line is
 * answered key by key as it streams in, so it needs no large buffer.
 *
 * Context: the owning worker thread; the store takes its own locks.
 * Return: the number of bytes consumed from @buf.
 */
size_t proto_process(struct proto_conn *pc, const char *buf, size_t len,
		     unsigned int max_reqs);

/**
 * proto_busy() - whether the engine has output to make without input
 * @pc: the state
 *
 * A key dump (lru_crawler metadump, mgdump, stats cachedump) queues its
 * lines a batch per proto_process() call while the queued replies stay
 * below REPLY_HIGH_WATER: the server calls proto_process() again, with or
 * without new input, once it has written them.
 *
 * Context: the owning worker thread.
 *
 * Return: true while a dump is under way.
 */
static inline bool proto_busy(const struct proto_conn *pc)
{
	return pc->state == PROTO_DUMP;
}

/**
 * proto_closed() - whether the connection is to be closed
 * @pc: the state
 *
 * After "quit" or a fatal protocol error. Output already queued should be
 * written first (memcached writes a pending error line before closing).
 *
 * Context: the owning worker thread.
 *
 * Return: true once the engine has decided to close the connection.
 */
static inline bool proto_closed(const struct proto_conn *pc)
{
	return pc->state == PROTO_CLOSED;
}

#endif /* ANCHORKV_PROTO_H */
