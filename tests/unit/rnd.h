/* SPDX-License-Identifier: MIT */
/*
 * rnd.h - the xorshift64 generator (Marsaglia's 13/7/17 triple) of the unit
 * tests that want a fixed, repeatable stream.
 *
 * A test defines RND_SEED (non-zero) before including this header; the
 * state, rng_state, is the test's own and may be saved and restored to
 * replay a stream.
 */
#ifndef ANCHORKV_RND_H
#define ANCHORKV_RND_H

#include <stdint.h>

#ifndef RND_SEED
#error "define RND_SEED before including rnd.h"
#endif

static uint64_t rng_state = RND_SEED;

static inline uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

static inline unsigned int rnd_below(unsigned int n)
{
	return (unsigned int)(rnd() % n);
}

#endif /* ANCHORKV_RND_H */
