/* SPDX-License-Identifier: MIT */
/*
 * fuzz.h - what the fuzz targets share.
 *
 * Each target defines LLVMFuzzerTestOneInput(), libFuzzer's entry point.
 * Built with clang -fsanitize=fuzzer it is driven by libFuzzer; built with
 * replay.c instead (gcc, ASan+UBSan) it replays the files of the target's
 * corpus and regression directories, for `make test`.
 *
 * A target checks properties, not only the absence of crashes. A violated
 * property calls FUZZ_FAIL(), which prints why and aborts: libFuzzer then
 * keeps the input as a crash. Only the harness aborts; the code under test
 * never asserts on the bytes it is given.
 */
#ifndef ANCHORKV_FUZZ_H
#define ANCHORKV_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_FAIL(...) do {						\
	fprintf(stderr, "%s:%d: property violated: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__);					\
	fputc('\n', stderr);						\
	abort();							\
} while (0)

#define FUZZ_CHECK(cond, ...) do {					\
	if (!(cond))							\
		FUZZ_FAIL(__VA_ARGS__);					\
} while (0)

/*
 * fuzz_key_cmp() - the keyspace order of PROTOCOL.md, written apart from
 * the store's: canonical unsigned 64-bit decimals by value, then every
 * other key bytewise, a prefix before its extensions.
 */
static inline int fuzz_is_int_key(const char *k, size_t n)
{
	static const char max[] = "18446744073709551615";
	size_t i;

	if (n == 0 || n > 20 || (n > 1 && k[0] == '0'))
		return 0;
	for (i = 0; i < n; i++)
		if (k[i] < '0' || k[i] > '9')
			return 0;
	if (n == 20) {
		for (i = 0; i < n; i++)
			if (k[i] != max[i])
				return k[i] < max[i];
	}
	return 1;
}

static inline int fuzz_key_cmp(const char *a, size_t na, const char *b,
			       size_t nb)
{
	int ia = fuzz_is_int_key(a, na), ib = fuzz_is_int_key(b, nb);
	size_t i, n = na < nb ? na : nb;

	if (ia != ib)
		return ia ? -1 : 1;
	/* equal-length canonical decimals compare bytewise, as strings do */
	if (ia && na != nb)
		return na < nb ? -1 : 1;
	for (i = 0; i < n; i++) {
		unsigned char ca = (unsigned char)a[i];
		unsigned char cb = (unsigned char)b[i];

		if (ca != cb)
			return ca < cb ? -1 : 1;
	}
	return na == nb ? 0 : (na < nb ? -1 : 1);
}

#endif /* ANCHORKV_FUZZ_H */
