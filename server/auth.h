/* SPDX-License-Identifier: MIT */
/*
 * auth.h - the auth file of -Y / auth_file: who may use the text protocol.
 *
 * As memcached 1.6's -Y: a file of "user:password" lines; when it is set,
 * the first command of a connection must be a "set" whose data is
 * "<user> <password>" (protocol/proto.c asks auth_check() through a hook).
 *
 * The file, line by line ("\n" or "\r\n" ends a line; the last one may lack
 * it):
 *   - the user is what comes before the first ':', the password all that
 *     follows it, colons included;
 *   - a line without ':' (an empty line too) makes the whole file invalid,
 *     as in memcached;
 *   - a line whose user or password is empty or holds a space is skipped
 *     and counted: a client sends "<user> <password>" split on spaces, so
 *     it could never match;
 *   - a line longer than AUTH_LINE_MAX, a NUL byte, a file larger than
 *     AUTH_FILE_MAX, or no usable line at all make the file invalid.
 *
 * Only a digest of each user and password pair is kept (BLAKE2b via
 * libsodium), and auth_check() compares the client's digest with every
 * entry with sodium_memcmp(), so its time does not depend on the secrets.
 *
 * Synchronization: a table is built by the main thread (at start-up, and
 * on SIGHUP into a new table that replaces the old one atomically) and only
 * read afterwards, by every worker.
 */
#ifndef ANCHORKV_AUTH_H
#define ANCHORKV_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#define AUTH_FILE_MAX	(64u * 1024)	/* bytes in the whole file */
#define AUTH_LINE_MAX	1024u		/* bytes in one line, without "\n" */
#define AUTH_DIGEST_LEN	32u

struct auth_entry {
	unsigned char digest[AUTH_DIGEST_LEN];
};

struct auth_table {
	struct auth_entry *entries;	/* ak_malloc'ed */
	unsigned int n;
	unsigned int skipped;		/* lines that could never match */
	unsigned int first_skipped;	/* line number of the first, from 1 */
	struct auth_table *retired;	/* the server's list of replaced ones */
};

/**
 * auth_init() - ready libsodium for the digests
 *
 * Context: start-up, single threaded, before any other auth_ call.
 * Return: 0, or -EIO if libsodium cannot initialise.
 */
int auth_init(void);

/**
 * auth_parse() - read the text of an auth file into a table
 * @text:   the file's bytes (need not be NUL terminated)
 * @len:    their number
 * @t:      filled in; free it with auth_table_free() after success
 * @err:    receives the reason on failure, e.g. "line 3 is not user:password"
 * @errlen: room in @err
 *
 * A pure function: no I/O, no global state. On failure @t holds nothing.
 *
 * Context: any, after auth_init().
 * Return: 0; -EINVAL for an invalid file; -ENOMEM.
 */
int auth_parse(const char *text, size_t len, struct auth_table *t, char *err,
	       size_t errlen);

/**
 * auth_load() - read and parse the auth file at @path
 * @path:   the file
 * @t:      filled in as by auth_parse()
 * @err:    receives the reason on failure (the path is the caller's to add)
 * @errlen: room in @err
 *
 * The bytes read are wiped before they are freed.
 *
 * Context: start-up.
 * Return: 0, or a negative errno (then @err says why).
 */
int auth_load(const char *path, struct auth_table *t, char *err,
	      size_t errlen);

/**
 * auth_check() - whether a user and password pair is in the table
 * @t:    the table
 * @user: the user's bytes
 * @ulen: their number
 * @pass: the password's bytes
 * @plen: their number
 *
 * Compares with every entry, in a time that depends only on @ulen + @plen
 * and the number of entries.
 *
 * Context: any thread; reads @t only.
 * Return: true if some entry matches.
 */
bool auth_check(const struct auth_table *t, const char *user, size_t ulen,
		const char *pass, size_t plen);

/**
 * auth_table_free() - free what auth_parse() allocated
 * @t: the table; empty afterwards
 *
 * Context: any; no other thread may still read @t.
 */
void auth_table_free(struct auth_table *t);

#endif /* ANCHORKV_AUTH_H */
