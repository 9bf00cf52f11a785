/* SPDX-License-Identifier: MIT */
/*
 * log.h - the daemon's log: one line per event, to stderr.
 *
 * Start, stop and errors are always logged; -v adds a line per connection
 * opened and closed, -vv a line per read and write burst (the protocol
 * engine logs commands itself at -vv). Each line is written with one
 * write(2), so lines from different threads never interleave:
 *
 *	2024-05-01T12:00:00Z anchorkv[1234]: listening on tcp:127.0.0.1:11211
 *
 * Synchronization: thread safe; the verbosity is read with READ_ONCE()
 * because the "verbosity" command may change it.
 */
#ifndef ANCHORKV_LOG_H
#define ANCHORKV_LOG_H

#include "compiler.h"
#include "settings.h"

enum log_level {
	LOG_LEVEL_ERROR,	/* always */
	LOG_LEVEL_WARN,		/* always */
	LOG_LEVEL_INFO,		/* always: start, stop */
	LOG_LEVEL_CONN,		/* -v: connections */
	LOG_LEVEL_IO,		/* -vv: reads and writes */
};

/**
 * log_msg() - write one log line
 * @level: how important; CONN and IO lines need -v and -vv
 * @fmt:   printf format, without the final newline
 *
 * Context: any thread; one write(2) to stderr.
 */
void log_msg(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/**
 * log_enabled() - whether lines of @level are written now
 * @level: the level
 *
 * Lets callers skip formatting arguments that cost something.
 *
 * Context: any.
 *
 * Return: true if a message of @level would be written.
 */
static inline bool log_enabled(enum log_level level)
{
	int v = READ_ONCE(settings.proto.verbose);

	return level <= LOG_LEVEL_INFO || (int)level - LOG_LEVEL_INFO <= v;
}

#define log_error(...)	log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_conn(...)							\
	do {								\
		if (log_enabled(LOG_LEVEL_CONN))			\
			log_msg(LOG_LEVEL_CONN, __VA_ARGS__);		\
	} while (0)
#define log_io(...)							\
	do {								\
		if (log_enabled(LOG_LEVEL_IO))				\
			log_msg(LOG_LEVEL_IO, __VA_ARGS__);		\
	} while (0)

#endif /* ANCHORKV_LOG_H */
