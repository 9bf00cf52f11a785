/* SPDX-License-Identifier: MIT */
/*
 * settings_table.h - the table of settings, shared by settings.c (the
 * table, its value parsers, the config directives) and cmdline.c (the
 * command line built from it). Private to those two: everyone else
 * includes settings.h.
 */
#ifndef ANCHORKV_SETTINGS_TABLE_H
#define ANCHORKV_SETTINGS_TABLE_H

#include <stddef.h>

#include "settings.h"

/* Long-only options get codes above every character. */
enum {
	OPT_SHARDS = 256,
	OPT_RANGE_MAX,
	OPT_HASH_POWER,
	OPT_IDLE_TIMEOUT,
	OPT_LOGFILE,
	OPT_SNAPSHOT_ON_EXIT,
};

struct setting_desc {
	const char *name;		/* config directive */
	int opt;			/* short option, OPT_*, or 0 */
	const char *longopt;		/* long option or NULL */
	const char *flag_value;		/* option takes no argument: it sets this */
	int (*set)(struct settings *s, const char *v);
	const char *expect;		/* for error messages */
};

#define SETTINGS_NR	40	/* rows of setting_table (checked in settings.c) */

/* One row per setting: its directive, options, parser and expectation. */
extern const struct setting_desc setting_table[SETTINGS_NR];

/**
 * setting_by_name() - the row of a config directive
 * @name: the directive
 *
 * Return: the row, or NULL.
 */
const struct setting_desc *setting_by_name(const char *name);

/**
 * setting_by_opt() - the row of a command-line option
 * @opt: its letter, or its OPT_* code
 *
 * Return: the row, or NULL.
 */
const struct setting_desc *setting_by_opt(int opt);

/**
 * setting_quote() - a user's value made printable and short, for a message
 * @v:    the value
 * @out:  the result, NUL terminated
 * @room: bytes at @out
 */
void setting_quote(const char *v, char *out, size_t room);

/**
 * setting_apply() - set @d from @value, or word why not
 * @s:      the settings
 * @d:      the row
 * @value:  the text given
 * @opt:    the option it came from, for the message ("-t"), or NULL
 * @err:    receives `invalid value for NAME (OPT): "VALUE" (expected ...)`
 * @errlen: bytes at @err
 *
 * Return: 0, or -EINVAL with @s untouched.
 */
int setting_apply(struct settings *s, const struct setting_desc *d,
		  const char *value, const char *opt, char *err,
		  size_t errlen);

#endif /* ANCHORKV_SETTINGS_TABLE_H */
