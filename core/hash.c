// SPDX-License-Identifier: MIT
/*
 * hash.c - SipHash-2-4 of string keys under a per-process random seed.
 *
 * libsodium's crypto_shorthash() is SipHash-2-4 with a 16-byte key and an
 * 8-byte output; this file only owns the key (the "seed") and turns the
 * output into a uint64_t.
 */
#include "hash.h"

#include <errno.h>
#include <string.h>

#include <sodium.h>

_Static_assert(crypto_shorthash_KEYBYTES == HASH_SEED_BYTES,
	       "SipHash takes a 16-byte key");
_Static_assert(crypto_shorthash_BYTES == sizeof(uint64_t),
	       "SipHash-2-4 gives 8 bytes");

/*
 * The process seed: written by hash_init() or hash_set_seed() before any
 * thread hashes, read-only afterwards.
 */
static uint8_t hash_seed[HASH_SEED_BYTES];

int hash_init(void)
{
	if (sodium_init() < 0)	/* 0: initialised now, 1: already was */
		return -EIO;
	randombytes_buf(hash_seed, sizeof(hash_seed));
	return 0;
}

void hash_set_seed(const uint8_t seed[HASH_SEED_BYTES])
{
	memcpy(hash_seed, seed, sizeof(hash_seed));
}

uint64_t hash_key(const void *key, size_t len)
{
	unsigned char out[crypto_shorthash_BYTES];
	uint64_t h;

	crypto_shorthash(out, key, len, hash_seed);
	/*
	 * SipHash defines its output as a little-endian 64-bit word: one
	 * load, byte-swapped on a big-endian host.
	 */
	memcpy(&h, out, sizeof(h));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	h = __builtin_bswap64(h);
#endif
	return h;
}
