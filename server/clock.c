// SPDX-License-Identifier: MIT
/*
 * clock.c - the daemon's monotonic clock, for durations (the store keeps
 * its own seconds: store_set_time()).
 */
#include "clock.h"

#include <time.h>

uint64_t server_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000;
}
