/* SPDX-License-Identifier: MIT */
/*
 * snapshot.h - the store written to a file and read back (warm restart).
 *
 * The file (all numbers little-endian):
 *
 *   header   64 bytes: "AKVSNAP\0", format version (u32), header size
 *            (u32), anchorkv's version (16 bytes, NUL padded), the
 *            writer's item_size_max (u64), when it was written (unix,
 *            u64), the string keys when the writing began (u64: the
 *            loader sizes its hash tables from it), and the XXH3-64 of
 *            the 56 before
 *   blocks   each a 24-byte head: type (u32: 1 items, 2 end), payload
 *            length (u32), records (u32), reserved (u32), and the XXH3-64
 *            of the payload seeded with the XXH3-64 of the head's first 16
 *            bytes; then the payload
 *   items    per record: key length (u8), flags it keeps (u8: ITEM_FETCHED,
 *            ITEM_STALE, ITEM_KEY_BINARY), 0 (u16), client flags (u32),
 *            value length (u32), expiry (unix seconds, u64; 0 never), cas
 *            (u64), the key, the value
 *   end      the last block: items, item blocks and value bytes (u64
 *            each), which must be what came before it; then nothing
 *
 * Items are written in keyspace order, as store_range() walks them, a
 * batch at a time and no lock held while writing: each item is as it was
 * at one moment, the file as a whole is not an image of one moment. The
 * checksums are XXH3 from Debian's libxxhash.
 */
#ifndef ANCHORKV_SNAPSHOT_H
#define ANCHORKV_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct store;

#define SNAPSHOT_MAGIC		"AKVSNAP"	/* and a NUL: 8 bytes */
#define SNAPSHOT_VERSION	1u
#define SNAPSHOT_HEADER		64u
#define SNAPSHOT_BLOCK_HEAD	24u
#define SNAPSHOT_BLOCK		(1u << 20)	/* items per block, in bytes */

struct snapshot_opts {
	size_t item_size_max;		/* -I: what the file may hold */
	int64_t unix_now;		/* expiry is judged against it */
	/* load: called after each block (may be NULL) */
	void (*progress)(void *arg, uint64_t items, uint64_t bytes);
	void *arg;
	/* save, for the fault tests: fail a write once this many bytes
	 * went out (0: never) */
	uint64_t fail_after;
	/* load, for the fuzz target only: take any checksum, so that random
	 * bytes reach the record parser behind it */
	bool no_checksums;
};

struct snapshot_stats {
	uint64_t items;			/* written, or loaded */
	uint64_t bytes;			/* of the file */
	uint64_t expired;		/* load: skipped, expired */
	bool full;			/* load: stopped at the memory limit */
	char why[256];			/* what went wrong */
};

/* Where the reader's bytes come from: a file, or memory (the fuzz target). */
struct snapshot_src {
	/* up to @len bytes into @buf; 0 at the end; -1 with errno */
	ssize_t (*read)(void *arg, void *buf, size_t len);
	void *arg;
};

/**
 * snapshot_save() - write every live item of @s to @path
 * @s:    the store, in use by other threads or not
 * @path: the file; written as @path.tmp, fsynced, renamed over @path,
 *        and the directory fsynced
 * @o:    item_size_max and unix_now go in the header
 * @st:   receives the items and bytes written, or why it failed
 *
 * On failure @path is left as it was and @path.tmp is removed.
 *
 * Context: any thread; takes the store's locks a slice at a time (through
 * store_range()); does I/O with no lock held.
 * Return: 0, or a negative errno.
 */
int snapshot_save(struct store *s, const char *path,
		  const struct snapshot_opts *o, struct snapshot_stats *st);

/**
 * snapshot_read() - load a snapshot from @src into @s
 * @s:   an empty store
 * @src: the bytes
 * @o:   item_size_max (a file written with a larger one is refused),
 *       unix_now (items expired by then are skipped), progress
 * @st:  receives the items loaded, or why the file was refused
 *
 * Every block is checked before its items are stored. When the file is
 * refused, items of the blocks before the damage are in @s: the caller
 * throws @s away. The load stops, without error, when the next item would
 * not fit in the memory limit (@st->full). Each item keeps its cas, and
 * every cas handed out afterwards is above the largest loaded.
 *
 * Context: start-up, before the store is shared.
 * Return: 0; -EBADMSG (damaged, truncated, not a snapshot), -EPROTO (a
 * newer format), -ERANGE (written with a larger item_size_max), -EIO
 * (read error), -ENOMEM; @st->why says which.
 */
int snapshot_read(struct store *s, const struct snapshot_src *src,
		  const struct snapshot_opts *o, struct snapshot_stats *st);

/**
 * snapshot_load() - snapshot_read() from the file @path
 * Return: as snapshot_read(); -ENOENT when there is no file.
 */
int snapshot_load(struct store *s, const char *path,
		  const struct snapshot_opts *o, struct snapshot_stats *st);

#endif /* ANCHORKV_SNAPSHOT_H */
