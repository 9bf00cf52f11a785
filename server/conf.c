// SPDX-License-Identifier: MIT
/*
 * conf.c - the config-file parser (format in conf.h).
 *
 * conf_parse() is a pure function over a buffer so that a fuzz target can
 * drive it directly; it copies each line into a bounded stack buffer, never
 * allocates, and refuses anything it does not understand with a message
 * naming the line.
 */
#include "conf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "settings.h"

static bool is_blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

/*
 * One line, without its newline, NUL terminated in @line (which the
 * function may modify). Return: 0, or -EINVAL with @msg filled.
 */
static int conf_line(char *line, struct settings *s, char *msg,
		     size_t msglen)
{
	char *p = line, *name, *value, *end;

	while (is_blank(*p))
		p++;
	if (*p == '\0' || *p == '#')
		return 0;
	name = p;
	while (*p && !is_blank(*p))
		p++;
	if (*p)
		*p++ = '\0';
	while (is_blank(*p))
		p++;
	value = p;
	end = value + strlen(value);
	while (end > value && is_blank(end[-1]))
		*--end = '\0';
	if (value == end) {
		snprintf(msg, msglen, "missing value for %.64s", name);
		return -EINVAL;
	}
	if (*value == '"') {
		if (end - value < 2 || end[-1] != '"' ||
		    memchr(value + 1, '"', (size_t)(end - value - 2))) {
			snprintf(msg, msglen, "bad quoting in the value of %.64s",
				 name);
			return -EINVAL;
		}
		end[-1] = '\0';
		value++;
	}
	return settings_set(s, name, value, msg, msglen) ? -EINVAL : 0;
}

int conf_parse(const char *origin, const char *buf, size_t len,
	       struct settings *s, char *err, size_t errlen)
{
	char line[CONF_LINE_MAX + 1];
	char msg[512];
	unsigned int lineno = 0;
	size_t pos = 0;

	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (buf + pos)) : len - pos;

		lineno++;
		if (n && buf[pos + n - 1] == '\r')
			n--;
		if (n > CONF_LINE_MAX) {
			snprintf(msg, sizeof(msg), "line longer than %u bytes",
				 CONF_LINE_MAX);
			goto err_line;
		}
		if (memchr(buf + pos, '\0', n)) {
			snprintf(msg, sizeof(msg), "NUL byte in the line");
			goto err_line;
		}
		memcpy(line, buf + pos, n);
		line[n] = '\0';
		if (conf_line(line, s, msg, sizeof(msg)))
			goto err_line;
		pos += nl ? (size_t)(nl - (buf + pos)) + 1 : len - pos;
	}
	return 0;

err_line:
	snprintf(err, errlen, "%s:%u: %s", origin, lineno, msg);
	return -EINVAL;
}

int conf_load(const char *path, struct settings *s, char *err,
	      size_t errlen)
{
	char *buf;
	size_t len = 0;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open config file %s: %s", path,
			 strerror(errno));
		return ret;
	}
	buf = ak_malloc(CONF_FILE_MAX);
	if (!buf) {
		snprintf(err, errlen, "out of memory reading %s", path);
		ret = -ENOMEM;
		goto out_close;
	}
	for (;;) {
		ssize_t n = read(fd, buf + len, CONF_FILE_MAX - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			snprintf(err, errlen, "cannot read config file %s: %s",
				 path, strerror(errno));
			goto out_free;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == CONF_FILE_MAX) {
			snprintf(err, errlen, "config file %s is larger than "
				 "%u bytes", path, CONF_FILE_MAX - 1);
			ret = -EFBIG;
			goto out_free;
		}
	}
	ret = conf_parse(path, buf, len, s, err, errlen);
out_free:
	ak_free(buf);
out_close:
	close(fd);
	return ret;
}
