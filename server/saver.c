// SPDX-License-Identifier: MIT
/*
 * saver.c - the snapshot written on a thread of its own, or at a stop
 * (see saver.h); the file format is snapshot.c's.
 */
#include "saver.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "reply.h"
#include "settings.h"
#include "snapshot.h"
#include "store.h"

#define SAVER_NICE	10	/* the saving thread's nice value */

void saver_init(struct saver *sv, struct store *s)
{
	memset(sv, 0, sizeof(*sv));
	pthread_mutex_init(&sv->lock, NULL);
	sv->store = s;
	snprintf(sv->last_status, sizeof(sv->last_status), "none");
#ifdef AK_FAULT_INJECTION
	{
		const char *v = getenv("AKV_SNAPSHOT_FAIL_AFTER");

		if (v)
			sv->fail_after = strtoull(v, NULL, 10);
	}
#endif
}

/* One save, recorded for stats. Context: no lock held. */
static int save_once(struct saver *sv)
{
	struct snapshot_opts o = {
		.item_size_max = settings.proto.item_size_max,
		.unix_now = time(NULL),
		.fail_after = sv->fail_after,
	};
	const char *path = settings.snapshot_file;
	int64_t start = server_now_us();
	struct snapshot_stats st;
	double secs;
	int rc;

	log_info("snapshot %s: writing", path);
	rc = snapshot_save(sv->store, path, &o, &st);
	secs = (double)(server_now_us() - start) / 1e6;
	pthread_mutex_lock(&sv->lock);
	sv->last_time = time(NULL);
	sv->last_seconds = secs;
	if (rc) {
		sv->last_items = sv->last_bytes = 0;
		snprintf(sv->last_status, sizeof(sv->last_status),
			 "failed: %s", st.why);
	} else {
		sv->last_items = st.items;
		sv->last_bytes = st.bytes;
		snprintf(sv->last_status, sizeof(sv->last_status), "ok");
	}
	pthread_mutex_unlock(&sv->lock);
	if (rc)
		log_error("snapshot %s not written: %s; the previous one, if "
			  "any, is as it was", path, st.why);
	else
		log_info("snapshot %s written: %" PRIu64 " items, %.1f MB in "
			 "%.2f s", path, st.items, (double)st.bytes / 1e6, secs);
	return rc;
}

static void *saver_main(void *arg)
{
	struct saver *sv = arg;
	sigset_t all;

	/* signals are the main thread's */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	/* the workers come first: this thread takes the CPU they leave
	 * (a nice value is per thread on Linux) */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid),
			SAVER_NICE))
		log_warn("snapshot: cannot lower the saving thread's "
			 "priority: %s", strerror(errno));
	save_once(sv);
	pthread_mutex_lock(&sv->lock);
	sv->running = false;
	pthread_mutex_unlock(&sv->lock);
	return NULL;
}

int saver_start(struct saver *sv)
{
	pthread_t old;
	bool join;
	int rc;

	if (!settings.snapshot_file[0])
		return -ENOENT;
	pthread_mutex_lock(&sv->lock);
	if (sv->running) {
		pthread_mutex_unlock(&sv->lock);
		return -EBUSY;
	}
	join = sv->joinable;
	old = sv->thread;
	sv->joinable = false;
	sv->running = true;
	pthread_mutex_unlock(&sv->lock);
	if (join)
		pthread_join(old, NULL);	/* it has ended: at once */
	rc = pthread_create(&sv->thread, NULL, saver_main, sv);
	pthread_mutex_lock(&sv->lock);
	if (rc)
		sv->running = false;
	else
		sv->joinable = true;
	pthread_mutex_unlock(&sv->lock);
	return -rc;
}

void saver_finish(struct saver *sv)
{
	bool join;

	pthread_mutex_lock(&sv->lock);
	join = sv->joinable;
	sv->joinable = false;
	pthread_mutex_unlock(&sv->lock);
	if (join)
		pthread_join(sv->thread, NULL);
}

int saver_save(struct saver *sv)
{
	if (!settings.snapshot_file[0]) {
		log_info("no snapshot_file (-e): nothing written");
		return 0;
	}
	saver_finish(sv);
	store_set_time(sv->store, time(NULL));
	return save_once(sv);
}

void saver_stats(struct saver *sv, struct reply *out)
{
	pthread_mutex_lock(&sv->lock);
	reply_addf(out, "STAT snapshot_in_progress %d\r\n", sv->running);
	reply_addf(out, "STAT last_snapshot_time %" PRId64 "\r\n",
		   sv->last_time);
	reply_addf(out, "STAT last_snapshot_items %" PRIu64 "\r\n",
		   sv->last_items);
	reply_addf(out, "STAT last_snapshot_bytes %" PRIu64 "\r\n",
		   sv->last_bytes);
	reply_addf(out, "STAT last_snapshot_seconds %.3f\r\n",
		   sv->last_seconds);
	reply_addf(out, "STAT last_snapshot_status %s\r\n", sv->last_status);
	pthread_mutex_unlock(&sv->lock);
}
