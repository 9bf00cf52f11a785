/* SPDX-License-Identifier: MIT */
/*
 * daemon.h - start-up's work on the process: logs, limits, detaching, the
 * pidfile and privileges. Each reads the settings it serves (settings.h)
 * and, on failure, stops the process with die(); none may run once the
 * workers exist, except die() before they start.
 *
 * Synchronization: the main thread, at start-up.
 */
#ifndef ANCHORKV_DAEMON_H
#define ANCHORKV_DAEMON_H

#include <stddef.h>

/**
 * die() - a start-up failure: one line "anchorkv: ..." to stderr, exit 1
 * @fmt: printf format of the reason
 *
 * Context: main thread, start-up only.
 */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/**
 * raise_nofile_limit() - enough descriptors for -c connections, the
 * listeners and the workers; a warning when the hard limit is lower
 *
 * Context: main thread, start-up.
 */
void raise_nofile_limit(void);

/**
 * redirect_logs() - with a logfile setting, send stderr (the log) there
 *
 * Context: main thread, start-up; dies when the file cannot be opened.
 */
void redirect_logs(void);

/**
 * reopen_logs() - open the logfile again (SIGHUP, after log rotation)
 * @err:    receives why it failed
 * @errlen: room in @err
 *
 * The new descriptor replaces stderr in one dup2(); on failure the log
 * goes on to the file it went to.
 *
 * Context: the main thread; the workers may be logging meanwhile.
 * Return: 0, or -1.
 */
int reopen_logs(char *err, size_t errlen);

/**
 * make_absolute() - make a relative path absolute from the working folder
 * @path: the path, rewritten in place
 * @room: size of @path
 * @what: its name in an error ("pidfile")
 *
 * -d changes to /: a path kept for later (the pidfile, a unix socket
 * removed at exit) must not follow it there.
 *
 * Context: main thread, start-up, before daemonize().
 */
void make_absolute(char *path, size_t room, const char *what);

/**
 * daemonize() - -d: fork, leave the terminal's session, change to /, and
 * point stdin/stdout (and stderr unless there is a logfile) at /dev/null
 *
 * Context: main thread, before any other thread or event_base exists.
 */
void daemonize(void);

/**
 * write_pidfile() - -P: write the process id
 *
 * Context: main thread, start-up.
 */
void write_pidfile(void);

/**
 * drop_privileges() - -u: a root process becomes the user after binding
 *
 * Without -u, root is allowed (unlike memcached): the administrator decides.
 *
 * Context: main thread, start-up, after the listeners are bound.
 */
void drop_privileges(void);

#endif /* ANCHORKV_DAEMON_H */
