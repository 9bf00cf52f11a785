// SPDX-License-Identifier: MIT
/*
 * base64.c - base64 for the meta commands' binary keys (see base64.h).
 */
#include "base64.h"

#include <stdint.h>

static const char b64_alphabet[64] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

#define B64_SKIP	0x80	/* not in the alphabet */

/* The value of a text byte; '=' counts as 0 (its group is cut after). */
static uint8_t b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return (uint8_t)(c - 'A');
	if (c >= 'a' && c <= 'z')
		return (uint8_t)(c - 'a' + 26);
	if (c >= '0' && c <= '9')
		return (uint8_t)(c - '0' + 52);
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	if (c == '=')
		return 0;
	return B64_SKIP;
}

size_t b64_encode(const unsigned char *src, size_t len, char *out)
{
	char *o = out;
	size_t i;

	for (i = 0; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8 |
			     src[i + 2];

		*o++ = b64_alphabet[v >> 18];
		*o++ = b64_alphabet[(v >> 12) & 63];
		*o++ = b64_alphabet[(v >> 6) & 63];
		*o++ = b64_alphabet[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t)src[i] << 16;

		if (i + 1 < len)
			v |= (uint32_t)src[i + 1] << 8;
		*o++ = b64_alphabet[v >> 18];
		*o++ = b64_alphabet[(v >> 12) & 63];
		*o++ = i + 1 < len ? b64_alphabet[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	return (size_t)(o - out);
}

size_t b64_decode(const char *src, size_t len, unsigned char *out)
{
	unsigned int n = 0, pad = 0;
	size_t i, valid = 0, o = 0;
	uint32_t group = 0;

	for (i = 0; i < len; i++)
		if (b64_value((unsigned char)src[i]) != B64_SKIP)
			valid++;
	if (!valid || valid % 4)
		return 0;
	for (i = 0; i < len; i++) {
		uint8_t v = b64_value((unsigned char)src[i]);

		if (v == B64_SKIP)
			continue;
		if (src[i] == '=')
			pad++;
		group = group << 6 | v;
		if (++n < 4)
			continue;
		if (pad > 2)
			return 0;
		/* a '=' drops a byte from the end of its group */
		out[o++] = (unsigned char)(group >> 16);
		if (pad < 2)
			out[o++] = (unsigned char)(group >> 8);
		if (!pad)
			out[o++] = (unsigned char)group;
		else
			return o;
		n = 0;
		group = 0;
	}
	return o;
}
