// SPDX-License-Identifier: MIT
/*
 * hash.c - SipHash of string keys under a per-process random seed.
 *
 * One implementation of SipHash-c-d (Aumasson and Bernstein, "SipHash: a
 * fast short-input PRF", 2012): hash_key() instantiates it as SipHash-1-3
 * with the rounds known at compile time, so that the compiler unrolls and
 * inlines all of it; hash_sip() runs any number of rounds, for the tests
 * (SipHash-2-4 against libsodium's crypto_shorthash(), SipHash-1-3 against
 * the reference implementation's published outputs).
 */
#include "hash.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

/*
 * The process seed as SipHash's two key words: written by hash_init() or
 * hash_set_seed() before any thread hashes, read-only afterwards.
 */
static uint64_t hash_k0, hash_k1;

/*
 * The @n-byte (4 or 8) little-endian word at @p: SipHash reads its input
 * so.
 */
static inline uint64_t sip_le(const unsigned char *p, size_t n)
{
	uint64_t w = 0;

	memcpy(&w, p, n);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w) >> (64 - 8 * n);
#endif
	return w;
}

/*
 * The last @n (0..7) bytes at @p as a little-endian word, without a branch
 * per byte: two overlapping 4-byte loads for 4..7 bytes; the first, middle
 * and last byte (some of them the same) for 1..3.
 */
static inline uint64_t sip_tail(const unsigned char *p, size_t n)
{
	if (n >= 4)
		return sip_le(p, 4) | sip_le(p + n - 4, 4) << (8 * (n - 4));
	if (n)
		return (uint64_t)p[0] | (uint64_t)p[n / 2] << (8 * (n / 2)) |
		       (uint64_t)p[n - 1] << (8 * (n - 1));
	return 0;
}

static inline uint64_t sip_rotl(uint64_t x, unsigned int b)
{
	return (x << b) | (x >> (64 - b));
}

/* The SipRound: add, rotate, xor over the four state words. */
#define SIP_ROUND(v0, v1, v2, v3) do {					\
	v0 += v1; v1 = sip_rotl(v1, 13); v1 ^= v0; v0 = sip_rotl(v0, 32); \
	v2 += v3; v3 = sip_rotl(v3, 16); v3 ^= v2;			\
	v0 += v3; v3 = sip_rotl(v3, 21); v3 ^= v0;			\
	v2 += v1; v1 = sip_rotl(v1, 17); v1 ^= v2; v2 = sip_rotl(v2, 32); \
} while (0)

/*
 * SipHash-@c-@d of @len bytes at @data under the key words @k0, @k1. Always
 * inlined, so that constant @c and @d unroll the round loops.
 */
static inline __attribute__((always_inline))
uint64_t sip_hash(uint64_t k0, uint64_t k1, const void *data, size_t len,
		  unsigned int c, unsigned int d)
{
	const unsigned char *p = data;
	const unsigned char *end = p + (len & ~(size_t)7);
	uint64_t v0 = k0 ^ 0x736f6d6570736575ULL;	/* "somepseu" */
	uint64_t v1 = k1 ^ 0x646f72616e646f6dULL;	/* "dorandom" */
	uint64_t v2 = k0 ^ 0x6c7967656e657261ULL;	/* "lygenera" */
	uint64_t v3 = k1 ^ 0x7465646279746573ULL;	/* "tedbytes" */
	uint64_t m, last = (uint64_t)len << 56;
	unsigned int i;

	for (; p != end; p += 8) {
		m = sip_le(p, 8);
		v3 ^= m;
		for (i = 0; i < c; i++)
			SIP_ROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	last |= sip_tail(p, len & 7);
	v3 ^= last;
	for (i = 0; i < c; i++)
		SIP_ROUND(v0, v1, v2, v3);
	v0 ^= last;
	v2 ^= 0xff;
	for (i = 0; i < d; i++)
		SIP_ROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

static void hash_seed_words(const uint8_t seed[HASH_SEED_BYTES],
			    uint64_t *k0, uint64_t *k1)
{
	*k0 = sip_le(seed, 8);
	*k1 = sip_le(seed + 8, 8);
}

int hash_init(void)
{
	uint8_t seed[HASH_SEED_BYTES];
	size_t got = 0;

	/* the kernel's pool (blocks only until it is first seeded) */
	while (got < sizeof(seed)) {
		ssize_t n = getrandom(seed + got, sizeof(seed) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		got += (size_t)n;
	}
	hash_set_seed(seed);
	explicit_bzero(seed, sizeof(seed));
	return 0;
}

void hash_set_seed(const uint8_t seed[HASH_SEED_BYTES])
{
	hash_seed_words(seed, &hash_k0, &hash_k1);
}

uint64_t hash_key(const void *key, size_t len)
{
	return sip_hash(hash_k0, hash_k1, key, len, 1, 3);
}

uint64_t hash_sip(const uint8_t seed[HASH_SEED_BYTES], const void *data,
		  size_t len, unsigned int c, unsigned int d)
{
	uint64_t k0, k1;

	hash_seed_words(seed, &k0, &k1);
	return sip_hash(k0, k1, data, len, c, d);
}
