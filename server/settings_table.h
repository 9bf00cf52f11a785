/* SPDX-License-Identifier: MIT */
/*
 * settings_table.h - the table of settings, shared by settings.c (the
 * table, its value parsers, the defaults, the config directives) and
 * cmdline.c (the command line and --help built from it), and read by
 * test_conf (every row whole, and named in the docs with its default).
 * Everyone else includes settings.h.
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

/* How a row's value is read (setting_apply()). */
enum setting_type {
	SETTING_UINT,		/* an unsigned int, a decimal min..max */
	SETTING_BOOL,		/* a bool: yes/no, on/off, true/false, 1/0 */
	SETTING_STRING,		/* a char array of room bytes, no controls */
	SETTING_OTHER,		/* its own parser, set() */
};

/*
 * A setting, once: everything else (the defaults, the range checks, the
 * error messages, getopt's lists, --help) is made from its row, and
 * test_ops checks that conf/anchorkv.conf, the man page and
 * docs/configuration.md name every row with its default.
 */
struct setting_desc {
	const char *name;		/* config directive */
	int opt;			/* short option, OPT_*, or 0 */
	const char *longopt;		/* long option or NULL */
	const char *flag_value;		/* option takes no argument: it sets this */
	enum setting_type type;
	size_t off;			/* UINT, BOOL, STRING: the field's offset
					 * in struct settings */
	size_t room;			/* STRING: the field's bytes */
	unsigned int min, max;		/* UINT: the accepted values */
	int (*set)(struct settings *s, const char *v);	/* OTHER */
	const char *def;		/* the default, as the directive's value
					 * (settings_init() applies it); NULL:
					 * none, the field stays zero */
	const char *expect;		/* the messages' "expected ..."; NULL:
					 * made from the type and bounds */
	const char *arg;		/* --help: the option's argument, or NULL */
	const char *help;		/* --help: what it does */
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
 * setting_expect() - what a row accepts, in words, for a message
 * @d:    the row
 * @out:  the text, NUL terminated
 * @room: bytes at @out
 */
void setting_expect(const struct setting_desc *d, char *out, size_t room);

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
