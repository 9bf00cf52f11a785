/* SPDX-License-Identifier: MIT */
/*
 * base64.h - base64 (RFC 4648's alphabet, padded) for the meta commands'
 * binary keys: the b flag sends a key encoded, and k returns it encoded.
 *
 * Synchronization: none; pure functions.
 */
#ifndef ANCHORKV_BASE64_H
#define ANCHORKV_BASE64_H

#include <stddef.h>

/* Bytes that b64_encode() writes for @n bytes. */
#define B64_ENCODED_LEN(n)	(((n) + 2) / 3 * 4)

/**
 * b64_encode() - encode bytes, padded with '=' to a multiple of 4
 * @src: the bytes
 * @len: how many
 * @out: room for B64_ENCODED_LEN(@len) bytes (no NUL is written)
 *
 * Return: the bytes written.
 */
size_t b64_encode(const unsigned char *src, size_t len, char *out);

/**
 * b64_decode() - decode text as memcached 1.6 decodes a key
 * @src: the text
 * @len: its length
 * @out: room for @len * 3 / 4 bytes (may not overlap @src); only the
 *       bytes decoded are written
 *
 * As memcached: bytes outside the alphabet are skipped; the others must
 * be a positive multiple of 4; the first group of four that holds '='
 * ends the text, and its one or two '=' drop as many bytes (more is an
 * error).
 *
 * Return: the bytes decoded; 0 for text that is not base64 (or holds
 * nothing).
 */
size_t b64_decode(const char *src, size_t len, unsigned char *out);

#endif /* ANCHORKV_BASE64_H */
