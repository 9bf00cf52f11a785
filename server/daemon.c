// SPDX-License-Identifier: MIT
/*
 * daemon.c - what start-up does to the process itself: the log file, the
 * descriptor limit, detaching (-d), the pidfile (-P), dropping root (-u),
 * and the one way start-up fails (die()).
 */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "log.h"
#include "settings.h"

/* Start-up failures only: one line to stderr, exit status 1. */
void die(const char *fmt, ...)
{
	char msg[1200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "anchorkv: %s\n", msg);
	exit(SETTINGS_EXIT_FAILURE);
}

/* Enough descriptors for -c connections, listeners and the workers. */
void raise_nofile_limit(void)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)settings.maxconns +
		      settings_reserved_fds(&settings);

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ?
		      want : rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want)
		log_warn("open file limit is %lu, below max_connections (%u) "
			 "plus overhead; connections past it will wait in "
			 "the backlog", (unsigned long)rl.rlim_cur,
			 settings.maxconns);
}

void redirect_logs(void)
{
	int fd;

	if (!settings.logfile[0])
		return;
	fd = open(settings.logfile, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
		  0644);
	if (fd < 0)
		die("cannot open logfile %s: %s", settings.logfile,
		    strerror(errno));
	dup2(fd, STDERR_FILENO);
	close(fd);
}

int reopen_logs(char *err, size_t errlen)
{
	int fd;

	if (!settings.logfile[0])
		return 0;
	fd = open(settings.logfile, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
		  0644);
	if (fd < 0) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	/* atomic: a line being written goes to one file or the other */
	if (dup2(fd, STDERR_FILENO) < 0) {
		snprintf(err, errlen, "%s", strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * -d changes to /: a relative path given for the pidfile or the unix
 * socket (removed at exit) must not follow it there.
 */
void make_absolute(char *path, size_t room, const char *what)
{
	char cwd[SETTINGS_PATH_MAX], abs[SETTINGS_PATH_MAX];
	int n;

	if (!path[0] || path[0] == '/')
		return;
	if (!getcwd(cwd, sizeof(cwd)))
		die("cannot resolve %s %s: %s", what, path, strerror(errno));
	n = snprintf(abs, sizeof(abs), "%s/%s", cwd, path);
	if (n < 0 || (size_t)n >= room)
		die("%s path too long once made absolute: %s/%s", what, cwd,
		    path);
	memcpy(path, abs, (size_t)n + 1);
}

void daemonize(void)
{
	int fd;

	switch (fork()) {
	case -1:
		die("fork: %s", strerror(errno));
	case 0:
		break;
	default:
		_exit(0);
	}
	if (setsid() < 0)
		die("setsid: %s", strerror(errno));
	if (chdir("/"))
		die("chdir /: %s", strerror(errno));
	fd = open("/dev/null", O_RDWR);
	if (fd < 0)
		die("cannot open /dev/null: %s", strerror(errno));
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	if (!settings.logfile[0])
		dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

void write_pidfile(void)
{
	char buf[32];
	int fd, n;

	if (!settings.pidfile[0])
		return;
	fd = open(settings.pidfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		  0644);
	if (fd < 0)
		die("cannot write pidfile %s: %s", settings.pidfile,
		    strerror(errno));
	n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (write(fd, buf, (size_t)n) != n)
		die("cannot write pidfile %s: %s", settings.pidfile,
		    strerror(errno));
	close(fd);
}

/*
 * -u: a root process switches to the user after binding. Without -u, root
 * is allowed (unlike memcached, which refuses): the administrator decides.
 */
void drop_privileges(void)
{
	struct passwd *pw;

	if (!settings.user[0] || geteuid() != 0)
		return;
	pw = getpwnam(settings.user);
	if (!pw)
		die("unknown user %s (-u)", settings.user);
	if (setgroups(0, NULL) || setgid(pw->pw_gid) || setuid(pw->pw_uid))
		die("cannot switch to user %s: %s", settings.user,
		    strerror(errno));
}
