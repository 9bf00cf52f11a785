// SPDX-License-Identifier: MIT
/*
 * test_base64.c - base64 of the meta commands' binary keys: RFC 4648's
 * vectors, round trips of every length and byte, and memcached 1.6's
 * decoding rules (skipped bytes, the group with '=', errors).
 */
#include "base64.h"
#include "check.h"

#include <string.h>

static void check_decodes(const char *text, const char *want, size_t nwant)
{
	unsigned char out[64];
	size_t n = b64_decode(text, strlen(text), out);

	CHECK_MSG(n == nwant && !memcmp(out, want, nwant),
		  "\"%s\": %zu bytes, want %zu", text, n, nwant);
}

static void test_vectors(void)
{
	static const char *const plain[] = {
		"", "f", "fo", "foo", "foob", "fooba", "foobar",
	};
	static const char *const coded[] = {
		"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy",
	};
	char out[16];
	unsigned int i;

	for (i = 0; i < 7; i++) {
		size_t n = b64_encode((const unsigned char *)plain[i],
				      strlen(plain[i]), out);

		CHECK(n == strlen(coded[i]) && !memcmp(out, coded[i], n));
		CHECK(n == B64_ENCODED_LEN(strlen(plain[i])));
		if (i)
			check_decodes(coded[i], plain[i], strlen(plain[i]));
	}
}

static void test_round_trips(void)
{
	unsigned char in[256], back[256];
	char text[B64_ENCODED_LEN(256)];
	unsigned int len, i;

	for (len = 1; len <= 256; len++) {
		size_t n, m;

		for (i = 0; i < len; i++)
			in[i] = (unsigned char)(i * 37 + len);
		n = b64_encode(in, len, text);
		m = b64_decode(text, n, back);
		CHECK_MSG(m == len && !memcmp(in, back, len), "length %u", len);
	}
}

/* What memcached 1.6's decoder does with text that is not clean. */
static void test_memcached_rules(void)
{
	/* bytes outside the alphabet are skipped */
	check_decodes("Zm9v\nYmFy", "foobar", 6);
	check_decodes("Z.m.9.v", "foo", 3);
	/* the first group with '=' ends the text */
	check_decodes("Zg==Zm9v", "f", 1);
	/* '=' counts where it stands, and drops a byte at the end */
	check_decodes("Z=9v", "d\x0f", 2);
	/* errors: nothing, not a multiple of 4, three or four '=' */
	check_decodes("", "", 0);
	check_decodes("...", "", 0);
	check_decodes("Zm9", "", 0);
	check_decodes("Zm9vY", "", 0);
	check_decodes("Z===", "", 0);
	check_decodes("====", "", 0);
}

int main(void)
{
	test_vectors();
	test_round_trips();
	test_memcached_rules();
	return check_report();
}
