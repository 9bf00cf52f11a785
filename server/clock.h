/* SPDX-License-Identifier: MIT */
/*
 * clock.h - the daemon's monotonic clock.
 *
 * Synchronization: none needed; any thread may call it.
 */
#ifndef ANCHORKV_CLOCK_H
#define ANCHORKV_CLOCK_H

#include <stdint.h>

/**
 * server_now_us() - monotonic microseconds, for durations
 *
 * Context: any.
 * Return: microseconds of the monotonic clock.
 */
uint64_t server_now_us(void);

#endif /* ANCHORKV_CLOCK_H */
