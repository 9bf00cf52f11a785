/* SPDX-License-Identifier: MIT */
/*
 * merge.h - anchorkv-cli's commands on the keyspace over every server of
 * a cluster (merge.c).
 */
#ifndef ANCHORKV_CLI_MERGE_H
#define ANCHORKV_CLI_MERGE_H

#include "ask.h"

/* range, ranges, rrange, rranges, keys over every server, merged in
 * keyspace order page by page (merge.c) */
void run_range(struct cli *c, const struct line *l);

/* count and delete_range over every server, added up (merge.c) */
void run_sum(struct cli *c, const struct line *l);

#endif /* ANCHORKV_CLI_MERGE_H */
