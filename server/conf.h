/* SPDX-License-Identifier: MIT */
/*
 * conf.h - the config file: one "directive value" per line.
 *
 * The format is redis.conf's, simplified:
 *
 *	# a comment (only at the start of a line)
 *	port 11211
 *	listen 127.0.0.1,::1
 *	pidfile "/run/anchorkv.pid"
 *
 * Blank lines and lines whose first non-blank character is '#' are
 * skipped. A directive is separated from its value by spaces or tabs; the
 * value runs to the end of the line (trailing blanks removed) and may be
 * put in double quotes (no escapes; "" is the empty string). A directive
 * given twice takes the last value. Lines may end in "\n" or "\r\n".
 * Every directive and the values it accepts are those of settings_set().
 *
 * Synchronization: pure functions over their arguments.
 */
#ifndef ANCHORKV_CONF_H
#define ANCHORKV_CONF_H

#include <stddef.h>

struct settings;

#define CONF_LINE_MAX	4096	/* longest line, without its newline */
#define CONF_FILE_MAX	(1u << 20)

/**
 * conf_parse() - apply every directive of a config text to @s
 * @origin: name for messages (the file name), e.g. "conf/anchorkv.conf"
 * @buf:    the text; any bytes (NUL bytes are refused, not trusted)
 * @len:    its length
 * @s:      the settings to change
 * @err:    receives "ORIGIN:LINE: what is wrong" on failure
 * @errlen: room in @err
 *
 * Stops at the first error; directives before it have been applied.
 *
 * Context: any; touches only @s and @err; does not allocate.
 * Return: 0, or -EINVAL.
 */
int conf_parse(const char *origin, const char *buf, size_t len,
	       struct settings *s, char *err, size_t errlen);

/**
 * conf_load() - read a config file and apply it
 * @path:   the file
 * @s:      the settings to change
 * @err:    receives the reason on failure
 * @errlen: room in @err
 *
 * Context: start-up; allocates a buffer for the file.
 * Return: 0; -EINVAL for a bad line; a negative errno if the file cannot
 * be read.
 */
int conf_load(const char *path, struct settings *s, char *err,
	      size_t errlen);

#endif /* ANCHORKV_CONF_H */
