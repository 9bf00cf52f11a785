/* SPDX-License-Identifier: MIT */
/*
 * saver.h - the snapshot written while the server keeps serving (the
 * "snapshot" command, SIGUSR2) on a thread of its own, or at a stop; and
 * what the last one did, for stats.
 *
 * Synchronization: @lock guards every field; the saving thread holds no
 * lock while it writes (snapshot_save() takes the store's locks a slice
 * at a time).
 */
#ifndef ANCHORKV_SAVER_H
#define ANCHORKV_SAVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct reply;
struct store;

struct saver {
	pthread_mutex_t lock;
	struct store *store;
	pthread_t thread;
	bool running;			/* a save is under way */
	bool joinable;			/* @thread is to be joined */
	uint64_t fail_after;		/* test builds: a full disk after so
					 * many bytes (AKV_SNAPSHOT_FAIL_AFTER) */
	/* the last save that ended */
	int64_t last_time;		/* unix time it ended; 0: none yet */
	uint64_t last_items, last_bytes;
	double last_seconds;
	char last_status[300];		/* "ok", or "failed: <why>" */
};

/** saver_init() - no save yet; @s is the store to save */
void saver_init(struct saver *sv, struct store *s);

/**
 * saver_start() - start writing the snapshot on a thread of its own
 * Return: 0; -ENOENT without a snapshot_file; -EBUSY when one is under
 * way; another negative errno when the thread cannot start.
 *
 * Context: the main thread or a worker.
 */
int saver_start(struct saver *sv);

/**
 * saver_save() - write the snapshot now, on this thread (at a stop),
 * after waiting for one under way
 * Return: 0, or a negative errno (the log and last_status say why).
 */
int saver_save(struct saver *sv);

/** saver_finish() - wait for a save under way (at exit) */
void saver_finish(struct saver *sv);

/**
 * saver_stats() - snapshot_in_progress, last_snapshot_time, _items,
 * _bytes, _seconds and _status as "STAT" lines
 */
void saver_stats(struct saver *sv, struct reply *out);

#endif /* ANCHORKV_SAVER_H */
