/* SPDX-License-Identifier: MIT */
/*
 * prefix_stats.h - memcached's "stats detail": per key prefix counts of
 * gets, hits, sets and deletes.
 *
 * A key's prefix is what comes before its first delimiter (':' unless -D
 * says otherwise); a key without one is not counted. As memcached, the
 * classic commands count: each key of get/gets/gat/gats (a hit or not),
 * each storage command (set/add/replace/append/prepend/cas, as it is read,
 * whatever the outcome), each delete. The table holds at most
 * PREFIX_STATS_MAX prefixes: memcached's grows without bound, this one
 * stops adding (keys of new prefixes past the cap are not counted).
 *
 * Synchronization: one lock for the table, a leaf (nothing is taken while
 * it is held, nothing allocated or freed under it). The counting is off
 * unless "stats detail on" or -D turned it on; the flag is read relaxed.
 */
#ifndef ANCHORKV_PREFIX_STATS_H
#define ANCHORKV_PREFIX_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PREFIX_STATS_MAX	10000u

struct prefix_stats;
struct reply;

enum prefix_op {
	PREFIX_GET,
	PREFIX_HIT,		/* a get that hit: counts a get and a hit */
	PREFIX_SET,
	PREFIX_DELETE,
};

/**
 * prefix_stats_create() - an empty table, counting off
 * @delim: the prefix delimiter
 *
 * Context: allocates.
 * Return: the table, or NULL.
 */
struct prefix_stats *prefix_stats_create(char delim);

/**
 * prefix_stats_destroy() - free the table
 * @ps: the table (may be NULL); no other thread may use it
 */
void prefix_stats_destroy(struct prefix_stats *ps);

/**
 * prefix_stats_enable() - turn the counting on or off
 * @ps: the table
 * @on: whether to count
 *
 * Context: any thread.
 */
void prefix_stats_enable(struct prefix_stats *ps, bool on);

/**
 * prefix_stats_on() - whether the counting is on
 * @ps: the table, or NULL (then false)
 *
 * Context: any thread; lock free.
 */
bool prefix_stats_on(const struct prefix_stats *ps);

/**
 * prefix_stats_delimiter() - the prefix delimiter
 * @ps: the table
 */
char prefix_stats_delimiter(const struct prefix_stats *ps);

/**
 * prefix_stats_count() - count one operation on a key
 * @ps:   the table
 * @key:  the key
 * @nkey: its length
 * @op:   what was done
 *
 * Call it only when prefix_stats_on(). A new prefix's entry is allocated
 * before the lock is taken.
 *
 * Context: any thread; takes the table's lock; may allocate.
 */
void prefix_stats_count(struct prefix_stats *ps, const char *key,
			size_t nkey, enum prefix_op op);

/**
 * prefix_stats_dump() - memcached's "stats detail dump" reply
 * @ps:  the table
 * @out: receives "PREFIX <prefix> get <n> hit <n> set <n> del <n>\r\n"
 *       per prefix, then "END\r\n"
 *
 * The entries are copied under the lock, then formatted.
 *
 * Context: any thread; takes the table's lock; allocates.
 * Return: 0, or -ENOMEM (nothing queued).
 */
int prefix_stats_dump(struct prefix_stats *ps, struct reply *out);

/**
 * prefix_stats_clear() - forget every prefix ("stats reset")
 * @ps: the table (may be NULL)
 *
 * Context: any thread; takes the table's lock; frees after it.
 */
void prefix_stats_clear(struct prefix_stats *ps);

#endif /* ANCHORKV_PREFIX_STATS_H */
