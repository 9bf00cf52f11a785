// SPDX-License-Identifier: MIT
/*
 * test_auth.c - the auth file parser and checker (server/auth.c).
 *
 * The contract checked here (see auth.h):
 *   - "user:password" lines, "\n" or "\r\n", the last one with or without
 *     its newline; the password runs to the end of the line, colons and
 *     tabs included;
 *   - a line without ':' (an empty one too), a NUL byte, a line over
 *     AUTH_LINE_MAX, a file over AUTH_FILE_MAX, or no usable line refuse
 *     the file, with the line number in the message;
 *   - a user or password that is empty or holds a space is skipped and
 *     counted (the first such line is remembered);
 *   - auth_check() accepts exactly the pairs of the file, whatever their
 *     number (memcached stops at 8);
 *   - random files agree with a separate model of these rules;
 *   - auth_load() reads a file, and refuses a missing one or a directory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "check.h"

static char err[256];

static int parse(struct auth_table *t, const char *text)
{
	err[0] = '\0';
	return auth_parse(text, strlen(text), t, err, sizeof(err));
}

static bool ok(const struct auth_table *t, const char *user,
	       const char *pass)
{
	return auth_check(t, user, strlen(user), pass, strlen(pass));
}

static void test_basic(void)
{
	struct auth_table t;

	CHECK(parse(&t, "alice:secret\nbob:pa:ss\ncarol:x\ty\n") == 0);
	CHECK(t.n == 3 && t.skipped == 0);
	CHECK(ok(&t, "alice", "secret"));
	CHECK(ok(&t, "bob", "pa:ss"));
	CHECK(ok(&t, "carol", "x\ty"));
	CHECK(!ok(&t, "alice", "secre"));
	CHECK(!ok(&t, "alice", "secrets"));
	CHECK(!ok(&t, "alic", "esecret"));	/* the lengths are hashed too */
	CHECK(!ok(&t, "bob", "pa"));
	CHECK(!ok(&t, "alice", "pa:ss"));	/* pairs, not users x passwords */
	CHECK(!ok(&t, "", ""));
	auth_table_free(&t);
	CHECK(t.entries == NULL && t.n == 0);
}

static void test_line_ends(void)
{
	struct auth_table t;

	/* no final newline: the whole password (memcached drops a byte) */
	CHECK(parse(&t, "alice:secret") == 0);
	CHECK(ok(&t, "alice", "secret") && !ok(&t, "alice", "secre"));
	auth_table_free(&t);

	CHECK(parse(&t, "alice:secret\r\nbob:x\r\n") == 0);
	CHECK(t.n == 2 && ok(&t, "alice", "secret") && ok(&t, "bob", "x"));
	CHECK(!ok(&t, "alice", "secret\r"));
	auth_table_free(&t);

	/* a lone "\r" inside the password stays part of it */
	CHECK(parse(&t, "alice:a\rb\n") == 0);
	CHECK(ok(&t, "alice", "a\rb"));
	auth_table_free(&t);
}

static void test_refused(void)
{
	struct auth_table t;
	char big[AUTH_LINE_MAX + 64];

	CHECK(parse(&t, "") == -EINVAL);
	CHECK(!strcmp(err, "no usable user:password line"));
	CHECK(t.entries == NULL);
	CHECK(parse(&t, "\n") == -EINVAL);
	CHECK(!strcmp(err, "line 1 is not user:password"));
	CHECK(parse(&t, "alice:secret\n\nbob:x\n") == -EINVAL);
	CHECK(!strcmp(err, "line 2 is not user:password"));
	CHECK(parse(&t, "alice:x\n# comment\n") == -EINVAL);
	CHECK(!strcmp(err, "line 2 is not user:password"));
	CHECK(parse(&t, "alice:x\nbob\n") == -EINVAL);
	CHECK(!strcmp(err, "line 2 is not user:password"));

	CHECK(auth_parse("a:b\nc:d\0e\n", 10, &t, err, sizeof(err)) == -EINVAL);
	CHECK(!strcmp(err, "line 2 holds a NUL byte"));

	/* AUTH_LINE_MAX bytes pass, one more does not ("\r" not counted) */
	memset(big, 'x', sizeof(big));
	memcpy(big, "u:", 2);
	strcpy(big + AUTH_LINE_MAX, "\r\n");
	CHECK(parse(&t, big) == 0 && t.n == 1);
	auth_table_free(&t);
	big[AUTH_LINE_MAX] = 'x';
	strcpy(big + AUTH_LINE_MAX + 1, "\n");
	CHECK(parse(&t, big) == -EINVAL);
	CHECK(!strcmp(err, "line 1 is longer than 1024 bytes"));

	CHECK(parse(&t, ":pw\nbob:\nal ice:x\ncarol:a b\n") == -EINVAL);
	CHECK(!strcmp(err, "no usable user:password line (a user or password "
			   "is empty or holds a space)"));
}

static void test_skipped(void)
{
	struct auth_table t;

	CHECK(parse(&t, "alice:x\n:pw\nbob:\ncarol:a b\ndave:y\n") == 0);
	CHECK(t.n == 2 && t.skipped == 3 && t.first_skipped == 2);
	CHECK(ok(&t, "alice", "x") && ok(&t, "dave", "y"));
	CHECK(!ok(&t, "", "pw") && !ok(&t, "bob", "") &&
	      !ok(&t, "carol", "a b"));
	auth_table_free(&t);
}

/* memcached keeps the first 8 entries; every one counts here */
static void test_many_and_duplicates(void)
{
	static char text[AUTH_FILE_MAX + 2];
	struct auth_table t;
	size_t o = 0;
	unsigned int i, n = 0;
	char u[32], p[32];

	for (i = 0; i < 2000; i++)
		o += (size_t)sprintf(text + o, "u%u:p%u\n", i, i * 7);
	CHECK(parse(&t, text) == 0 && t.n == 2000);
	for (i = 0; i < 2000; i++) {
		sprintf(u, "u%u", i);
		sprintf(p, "p%u", i * 7);
		n += ok(&t, u, p);
	}
	CHECK(n == 2000);
	CHECK(!ok(&t, "u1", "p14"));
	auth_table_free(&t);

	CHECK(parse(&t, "bob:a\nbob:b\n") == 0);
	CHECK(ok(&t, "bob", "a") && ok(&t, "bob", "b") && !ok(&t, "bob", "c"));
	auth_table_free(&t);

	/* the size limit: AUTH_FILE_MAX bytes pass, one more does not */
	memset(text, 'x', AUTH_FILE_MAX + 1);
	for (o = 0; o + 100 <= AUTH_FILE_MAX; o += 100) {
		memcpy(text + o, "u:", 2);
		text[o + 99] = '\n';
	}
	memcpy(text + o, "u:", 2);	/* the last line, cut by the limit */
	CHECK(auth_parse(text, AUTH_FILE_MAX, &t, err, sizeof(err)) == 0);
	auth_table_free(&t);
	CHECK(auth_parse(text, AUTH_FILE_MAX + 1, &t, err, sizeof(err)) ==
	      -EINVAL);
	CHECK(!strcmp(err, "larger than 65536 bytes"));
}

/*
 * Random files from a tiny alphabet, against a model written another way:
 * split the whole text on "\n" with strsep(), then each line on the first
 * ':' with strchr().
 */
#define MODEL_MAX	64

struct model {
	char user[MODEL_MAX][64];
	char pass[MODEL_MAX][64];
	unsigned int n;
	bool valid;
};

static void model_build(char *text, struct model *m)
{
	char *line, *rest = text;

	m->n = 0;
	m->valid = true;
	while ((line = strsep(&rest, "\n")) != NULL) {
		size_t len = strlen(line);
		char *colon;

		if (!rest && !len)	/* after the final newline */
			break;
		if (len && line[len - 1] == '\r')
			line[--len] = '\0';
		colon = strchr(line, ':');
		if (!colon) {
			m->valid = false;
			return;
		}
		*colon = '\0';
		if (!line[0] || !colon[1] || strchr(line, ' ') ||
		    strchr(colon + 1, ' '))
			continue;
		strcpy(m->user[m->n], line);
		strcpy(m->pass[m->n], colon + 1);
		m->n++;
	}
	if (!m->n)
		m->valid = false;
}

static void random_token(char *out, unsigned int max)
{
	static const char alpha[] = "ab: \r";
	unsigned int n = (unsigned int)rand() % max, i;

	for (i = 0; i < n; i++)
		out[i] = alpha[rand() % 5];
	out[n] = '\0';
}

static void test_random_model(void)
{
	unsigned int round, failures = 0;

	srand(1606);
	for (round = 0; round < 3000; round++) {
		char text[MODEL_MAX * 40], copy[sizeof(text)], tok[16];
		unsigned int lines = (unsigned int)rand() % 6, i, j;
		struct auth_table t;
		struct model m;
		size_t o = 0;
		int ret;

		for (i = 0; i < lines; i++) {
			random_token(tok, 5);
			o += (size_t)sprintf(text + o, "%s", tok);
			if (rand() % 8)
				text[o++] = ':';
			random_token(tok, 6);
			o += (size_t)sprintf(text + o, "%s", tok);
			if (i + 1 < lines || rand() % 2)
				text[o++] = '\n';
		}
		text[o] = '\0';
		memcpy(copy, text, o + 1);
		model_build(copy, &m);
		ret = auth_parse(text, o, &t, err, sizeof(err));
		if ((ret == 0) != m.valid) {
			failures++;
			continue;
		}
		if (ret)
			continue;
		if (t.n != m.n)
			failures++;
		for (i = 0; i < m.n; i++)
			failures += !ok(&t, m.user[i], m.pass[i]);
		/* random other pairs match only if the model has them */
		for (j = 0; j < 8; j++) {
			char u[8], p[8];
			bool want = false;

			random_token(u, 4);
			random_token(p, 4);
			for (i = 0; i < m.n; i++)
				want |= !strcmp(u, m.user[i]) &&
					!strcmp(p, m.pass[i]);
			failures += ok(&t, u, p) != want;
		}
		auth_table_free(&t);
	}
	CHECK_MSG(failures == 0, "%u disagreements with the model", failures);
}

static void test_load(void)
{
	char path[] = "test_auth_XXXXXX";
	struct auth_table t;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK(write(fd, "alice:secret\n", 13) == 13);
	close(fd);
	CHECK(auth_load(path, &t, err, sizeof(err)) == 0);
	CHECK(t.n == 1 && ok(&t, "alice", "secret"));
	auth_table_free(&t);
	unlink(path);
	CHECK(auth_load(path, &t, err, sizeof(err)) == -ENOENT);
	CHECK(!strcmp(err, "cannot open it: No such file or directory"));
	CHECK(auth_load(".", &t, err, sizeof(err)) == -EINVAL);
	CHECK(!strcmp(err, "not a regular file"));
}

int main(void)
{
	if (auth_init() < 0) {
		fprintf(stderr, "auth_init failed\n");
		return 1;
	}
	test_basic();
	test_line_ends();
	test_refused();
	test_skipped();
	test_many_and_duplicates();
	test_random_model();
	test_load();
	return check_report();
}
