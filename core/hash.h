/* SPDX-License-Identifier: MIT */
/*
 * hash.h - the keyed hash of string keys.
 *
 * SipHash-1-3 (SipHash with one compression round per 8-byte word and three
 * finalisation rounds), keyed with 16 random bytes drawn once per process.
 * SipHash is a keyed pseudo-random function built for exactly this job
 * (hash-flooding resistance for hash tables): without the key a client
 * cannot compute which keys share a bucket. The 1-3 variant is the one
 * Rust's standard HashMap and CPython (3.11 on) use for that purpose; the
 * authors propose 2-4 as the conservative choice for a MAC, and no attack
 * is known that makes 1-3 collide under an unknown key. Our own code (it
 * is short) rather than libsodium's crypto_shorthash(), which is 2-4 and a
 * call into a shared library: hashing memtier_benchmark's 13-byte keys
 * costs 130 instructions here against 169 there (callgrind). Faster keyed
 * hashes of the multiply-and-mix kind were left out on purpose: several
 * (MurmurHash2/3, CityHash) have seed-independent collisions, which is
 * exactly the flooding a random seed is meant to stop.
 * The seed comes from libsodium's randombytes_buf().
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
