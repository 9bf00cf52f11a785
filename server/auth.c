// SPDX-License-Identifier: MIT
/*
 * auth.c - the auth file of -Y: parsing, loading, checking (see auth.h).
 */
#include "auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "alloc.h"

int auth_init(void)
{
	return sodium_init() < 0 ? -EIO : 0;	/* 1: it already was */
}

/*
 * The digest of one pair: both lengths first, so that ("ab", "c") and
 * ("a", "bc") differ.
 */
static void auth_digest(const char *user, size_t ulen, const char *pass,
			size_t plen, unsigned char out[AUTH_DIGEST_LEN])
{
	crypto_generichash_state st;
	uint64_t lens[2] = { ulen, plen };

	crypto_generichash_init(&st, NULL, 0, AUTH_DIGEST_LEN);
	crypto_generichash_update(&st, (const unsigned char *)lens,
				  sizeof(lens));
	crypto_generichash_update(&st, (const unsigned char *)user, ulen);
	crypto_generichash_update(&st, (const unsigned char *)pass, plen);
	crypto_generichash_final(&st, out, AUTH_DIGEST_LEN);
}

/* Whether a client could send this as one token: not empty, no space. */
static bool auth_token_ok(const char *p, size_t n)
{
	return n && !memchr(p, ' ', n);
}

int auth_parse(const char *text, size_t len, struct auth_table *t, char *err,
	       size_t errlen)
{
	const char *p = text, *end = text + len;
	unsigned int lineno = 0;
	size_t lines = 1, i;

	memset(t, 0, sizeof(*t));
	if (len > AUTH_FILE_MAX) {
		snprintf(err, errlen, "larger than %u bytes", AUTH_FILE_MAX);
		return -EINVAL;
	}
	for (i = 0; i < len; i++)
		lines += text[i] == '\n';
	t->entries = ak_malloc(lines * sizeof(*t->entries));
	if (!t->entries) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end, *colon;
		size_t n = (size_t)(eol - p);

		lineno++;
		if (n && p[n - 1] == '\r')
			n--;
		if (n > AUTH_LINE_MAX) {
			snprintf(err, errlen, "line %u is longer than %u bytes",
				 lineno, AUTH_LINE_MAX);
			goto err_free;
		}
		if (memchr(p, '\0', n)) {
			snprintf(err, errlen, "line %u holds a NUL byte",
				 lineno);
			goto err_free;
		}
		colon = memchr(p, ':', n);
		if (!colon) {
			snprintf(err, errlen, "line %u is not user:password",
				 lineno);
			goto err_free;
		}
		if (auth_token_ok(p, (size_t)(colon - p)) &&
		    auth_token_ok(colon + 1, (size_t)(p + n - colon - 1))) {
			auth_digest(p, (size_t)(colon - p), colon + 1,
				    (size_t)(p + n - colon - 1),
				    t->entries[t->n].digest);
			t->n++;
		} else if (!t->skipped++) {
			t->first_skipped = lineno;
		}
		p = nl ? nl + 1 : end;
	}
	if (!t->n) {
		snprintf(err, errlen, "no usable user:password line%s",
			 t->skipped ? " (a user or password is empty or holds "
				      "a space)" : "");
		goto err_free;
	}
	return 0;

err_free:
	auth_table_free(t);
	return -EINVAL;
}

int auth_load(const char *path, struct auth_table *t, char *err,
	      size_t errlen)
{
	struct stat st;
	char *buf;
	size_t got = 0;
	int fd, ret;

	memset(t, 0, sizeof(*t));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open it: %s", strerror(errno));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		snprintf(err, errlen, "cannot stat it: %s", strerror(errno));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "not a regular file");
		ret = -EINVAL;
		goto out_close;
	}
	if ((uint64_t)st.st_size > AUTH_FILE_MAX) {
		snprintf(err, errlen, "larger than %u bytes", AUTH_FILE_MAX);
		ret = -EINVAL;
		goto out_close;
	}
	/* one byte more than allowed, to see a file that grew meanwhile */
	buf = ak_malloc(AUTH_FILE_MAX + 1);
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out_close;
	}
	for (;;) {
		ssize_t r = read(fd, buf + got, AUTH_FILE_MAX + 1 - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = -errno;
			snprintf(err, errlen, "cannot read it: %s",
				 strerror(errno));
			goto out_wipe;
		}
		if (r == 0 || got + (size_t)r > AUTH_FILE_MAX) {
			got += (size_t)r;
			break;
		}
		got += (size_t)r;
	}
	ret = auth_parse(buf, got, t, err, errlen);
out_wipe:
	sodium_memzero(buf, AUTH_FILE_MAX + 1);
	ak_free(buf);
out_close:
	close(fd);
	return ret;
}

bool auth_check(const struct auth_table *t, const char *user, size_t ulen,
		const char *pass, size_t plen)
{
	unsigned char d[AUTH_DIGEST_LEN];
	unsigned int i, hits = 0;

	auth_digest(user, ulen, pass, plen, d);
	for (i = 0; i < t->n; i++)
		hits |= sodium_memcmp(d, t->entries[i].digest, sizeof(d)) == 0;
	sodium_memzero(d, sizeof(d));
	return hits != 0;
}

void auth_table_free(struct auth_table *t)
{
	if (t->entries) {
		sodium_memzero(t->entries, t->n * sizeof(*t->entries));
		ak_free(t->entries);
	}
	memset(t, 0, sizeof(*t));
}
