// SPDX-License-Identifier: MIT
/*
 * replay.c - runs a fuzz target's saved inputs without libFuzzer.
 *
 * Linked with one target (FUZZ_TARGET, e.g. "proto") and built with gcc
 * and ASan+UBSan, it feeds every file of tests/fuzz/regress/<target>/ and
 * tests/fuzz/corpus/<target>/ (relative to the current directory, the
 * repository root under `make test`), or the files named on its command
 * line, to the target's LLVMFuzzerTestOneInput(). A violated property
 * aborts, as under libFuzzer; otherwise it ends "N passed, N failed".
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#ifndef FUZZ_TARGET
#error "FUZZ_TARGET must name the target"
#endif

static unsigned long replay_passed, replay_failed;

static void replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		replay_failed++;
		return;
	}
	for (;;) {
		if (len == cap) {
			cap = cap ? cap * 2 : 4096;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		n = fread(buf + len, 1, cap - len, f);
		if (!n)
			break;
		len += n;
	}
	if (ferror(f)) {
		fprintf(stderr, "%s: read error\n", path);
		replay_failed++;
	} else {
		/* a copy of exactly @len bytes, so ASan sees any overread */
		unsigned char *exact = malloc(len ? len : 1);

		if (!exact)
			abort();
		memcpy(exact, buf, len);
		LLVMFuzzerTestOneInput(exact, len);
		free(exact);
		replay_passed++;
	}
	free(buf);
	fclose(f);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of @dir, in name order. Return: how many. */
static unsigned long replay_dir(const char *dir)
{
	char **names = NULL;
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			names = realloc(names, cap * sizeof(*names));
			if (!names)
				abort();
		}
		names[n] = malloc(strlen(dir) + strlen(de->d_name) + 2);
		if (!names[n])
			abort();
		sprintf(names[n], "%s/%s", dir, de->d_name);
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), name_cmp);
	for (i = 0; i < n; i++) {
		replay_file(names[i]);
		free(names[i]);
	}
	free(names);
	return n;
}

int main(int argc, char **argv)
{
	unsigned long files = 0;
	int i;

	if (argc > 1) {
		for (i = 1; i < argc; i++)
			replay_file(argv[i]);
	} else {
		files += replay_dir("tests/fuzz/regress/" FUZZ_TARGET);
		files += replay_dir("tests/fuzz/corpus/" FUZZ_TARGET);
		if (!files) {
			fprintf(stderr, "no inputs under tests/fuzz/*/%s\n",
				FUZZ_TARGET);
			replay_failed++;
		}
	}
	printf("%lu passed, %lu failed\n", replay_passed, replay_failed);
	return replay_failed ? 1 : 0;
}
