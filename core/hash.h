/* SPDX-License-Identifier: MIT */
/*
 * hash.h - the keyed hash of string keys.
 *
 * SipHash-2-4 through libsodium's crypto_shorthash(), keyed with 16 random
 * bytes drawn once per process. SipHash is a keyed pseudo-random function
 * built for exactly this job (hash-flooding resistance for hash tables):
 * without the key a client cannot compute which keys share a bucket.
 * libsodium is a well-kept, audited library packaged by Debian, so we do not
 * carry a hand-written copy.
 *
 * Synchronization: hash_init() runs once at start-up, before any thread
 * hashes; hash_key() is then read-only and thread safe.
 */
#ifndef ANCHORKV_HASH_H
#define ANCHORKV_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_SEED_BYTES 16

/**
 * hash_init() - draw the per-process random seed
 *
 * Context: start-up, single threaded.
 * Return: 0, or -EIO if libsodium cannot initialise.
 */
int hash_init(void);

/**
 * hash_set_seed() - use a fixed seed (tests only)
 * @seed: HASH_SEED_BYTES bytes
 *
 * Context: single threaded.
 */
void hash_set_seed(const uint8_t seed[HASH_SEED_BYTES]);

/**
 * hash_key() - the keyed 64-bit hash of a key
 * @key: the bytes
 * @len: their number
 *
 * Context: any, after hash_init().
 * Return: SipHash-2-4 of the bytes under the process seed.
 */
uint64_t hash_key(const void *key, size_t len);

#endif /* ANCHORKV_HASH_H */
