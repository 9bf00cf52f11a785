/* SPDX-License-Identifier: MIT */
/*
 * number.h - reading a decimal number as strtoull() reads it, for the
 * protocol's number tokens (protocol/parse.c) and for incr/decr on a
 * stored value (core/store.c). What may follow the digits, and when a
 * minus sign is refused, differs between those two callers and stays
 * with them.
 *
 * Synchronization: none; pure functions.
 */
#ifndef ANCHORKV_NUMBER_H
#define ANCHORKV_NUMBER_H

#include <stdbool.h>
#include <stdint.h>

/**
 * number_isspace() - isspace() in the C locale
 * @c: the byte
 *
 * Context: any.
 * Return: true for space, \t, \n, \v, \f and \r.
 */
static inline bool number_isspace(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/**
 * number_scan() - white space, an optional sign, then decimal digits
 * @p:   the first byte
 * @end: one past the last byte that may be read
 * @max: the largest magnitude accepted
 * @neg: receives whether the sign was a minus
 * @mag: receives the magnitude of the digits
 *
 * Context: any.
 * Return: the first byte after the digits, or NULL when there is no digit
 * or the magnitude is above @max (strtoull()'s ERANGE).
 */
static inline const char *number_scan(const char *p, const char *end,
				      uint64_t max, bool *neg, uint64_t *mag)
{
	const char *digits;
	uint64_t v = 0;

	while (p < end && number_isspace(*p))
		p++;
	*neg = false;
	if (p < end && (*p == '+' || *p == '-')) {
		*neg = *p == '-';
		p++;
	}
	digits = p;
	while (p < end && *p >= '0' && *p <= '9') {
		unsigned int d = (unsigned int)(*p - '0');

		if (v > (max - d) / 10)
			return NULL;
		v = v * 10 + d;
		p++;
	}
	if (p == digits)
		return NULL;
	*mag = v;
	return p;
}

#endif /* ANCHORKV_NUMBER_H */
