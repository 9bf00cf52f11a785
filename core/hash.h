/* SPDX-License-Identifier: MIT */
/*
 * hash.h - the keyed hash of string keys.
 *
 * SipHash-1-3 (one compression round per 8-byte word, three finalisation
 * rounds), keyed with 16 random bytes drawn once per process from the
 * kernel (getrandom(2)): without the key a client cannot compute
 * which keys share a bucket. Why this hash and not another:
 * docs/architecture.md, "Design notes".
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
 * Return: 0, or -EIO if getrandom(2) fails (it blocks until the kernel's
 * pool is first seeded, which is long done after boot).
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
 * Return: SipHash-1-3 of the bytes under the process seed.
 */
uint64_t hash_key(const void *key, size_t len);

/**
 * hash_sip() - SipHash-@c-@d under a given seed (reference form, for tests)
 * @seed: HASH_SEED_BYTES bytes, SipHash's key
 * @data: the bytes
 * @len:  their number
 * @c:    compression rounds per 8-byte word
 * @d:    finalisation rounds
 *
 * The same code as hash_key(), with the rounds and the key as arguments:
 * hash_sip(seed, data, len, 1, 3) is hash_key(data, len) under @seed, and
 * hash_sip(seed, data, len, 2, 4) is the SipHash-2-4 of the paper.
 *
 * Context: any.
 * Return: the 64-bit SipHash output (its 8 bytes read little-endian).
 */
uint64_t hash_sip(const uint8_t seed[HASH_SEED_BYTES], const void *data,
		  size_t len, unsigned int c, unsigned int d);

#endif /* ANCHORKV_HASH_H */
