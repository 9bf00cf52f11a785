// SPDX-License-Identifier: MIT
/*
 * counters.c - the process-wide connection counters (counters.h).
 */
#include "counters.h"

struct server_stats server_stats;
