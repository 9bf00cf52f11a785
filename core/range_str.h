/* SPDX-License-Identifier: MIT */
/*
 * range_str.h - the string part of a range, walked or counted over the
 * partitions (range_str.c); private to the ordered walks.
 */
#ifndef ANCHORKV_RANGE_STR_H
#define ANCHORKV_RANGE_STR_H

#include "span.h"

void strs_walk(struct store *s, struct span *sp, bool reverse, str_fn *fn,
	       void *arg);
bool strs_count_ranked(struct store *s, const struct span *sp, uint64_t *n);
bool item_drop_held(struct store *s, struct item *it, bool del);

#endif /* ANCHORKV_RANGE_STR_H */
