// SPDX-License-Identifier: MIT
/*
 * log.c - timestamped log lines to stderr, one write(2) each.
 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *const tag[] = {
		[LOG_LEVEL_ERROR] = "error: ",
		[LOG_LEVEL_WARN] = "warning: ",
		[LOG_LEVEL_INFO] = "",
		[LOG_LEVEL_CONN] = "",
		[LOG_LEVEL_IO] = "",
	};
	char line[1024];
	struct tm tm;
	time_t now = time(NULL);
	int saved = errno;
	size_t n;
	va_list ap;
	int r;

	if (!log_enabled(level))
		return;
	gmtime_r(&now, &tm);
	n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%SZ", &tm);
	r = snprintf(line + n, sizeof(line) - n, " anchorkv[%ld]: %s",
		     (long)getpid(), tag[level]);
	if (r > 0)
		n += (size_t)r < sizeof(line) - n ? (size_t)r : sizeof(line) - n - 1;
	va_start(ap, fmt);
	r = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	if (r > 0)
		n += (size_t)r < sizeof(line) - n ? (size_t)r : sizeof(line) - n - 1;
	if (n >= sizeof(line) - 1)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	/* best effort: a log line that cannot be written is dropped */
	if (write(STDERR_FILENO, line, n) < 0)
		errno = saved;
	errno = saved;
}
