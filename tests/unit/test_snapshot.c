// SPDX-License-Identifier: MIT
/*
 * test_snapshot.c - the snapshot file (server/snapshot.c): a store saved
 * and loaded back item for item; expiry across the downtime; cas values
 * kept and new ones above them; a file damaged anywhere (a byte flipped
 * every 4 KiB, cut at random points, empty, a newer format, a larger
 * item size) refused; the memory limit stopping a load; a failed write
 * leaving the previous file as it was.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "check.h"
#include "hash.h"
#include "item.h"
#include "snapshot.h"
#include "store.h"

#define T0		1700000000
#define ITEM_MAX	(2u << 20)
#define BIG		(1u << 20)

static char dir[] = "/tmp/akv-snap-XXXXXX";
static char path[256];

static struct store *new_store(size_t limit)
{
	struct store_config cfg = {
		.mem_limit = limit,
		.item_size_max = ITEM_MAX,
		.nshards = 4,
		.hash_bits = 4,
	};
	struct store *s = store_create(&cfg);

	if (!s) {
		fprintf(stderr, "store_create failed\n");
		exit(1);
	}
	store_set_time(s, T0);
	return s;
}

/* set with a value of @n bytes made from @seed, an expiry in client form */
static void put(struct store *s, const char *key, uint32_t flags,
		int64_t exptime, size_t n, unsigned int seed, bool binary)
{
	struct item *it;
	size_t i;

	if (store_item_alloc(s, key, strlen(key), flags,
			     store_exptime(s, exptime), (uint32_t)n, &it)) {
		fprintf(stderr, "alloc %s failed\n", key);
		exit(1);
	}
	for (i = 0; i < n; i++)	/* NUL, \r and \n among them */
		item_value(it)[i] = (char)((i * 7 + seed) % 256);
	if (binary)
		it->iflags |= ITEM_KEY_BINARY;
	CHECK(store_item_store(s, it, STORE_OP_SET, 0, NULL) == STORE_STORED);
}

static void fill(struct store *s)
{
	char key[64];
	unsigned int i;

	for (i = 0; i < 3000; i++) {
		snprintf(key, sizeof(key), "%u", i * 3);
		put(s, key, i, 0, i % 50, i, false);
	}
	for (i = 0; i < 3000; i++) {
		snprintf(key, sizeof(key), "user:%05u", i);
		put(s, key, 7, i % 2 ? 100 : 0, 32, i, i % 100 == 0);
	}
	put(s, "big", 1, 0, BIG, 5, false);
	put(s, "gone", 0, -1, 3, 0, false);	/* expired already */
}

struct opts_ctx {
	uint64_t calls;
};

static void progress(void *arg, uint64_t items, uint64_t bytes)
{
	struct opts_ctx *c = arg;

	(void)items;
	(void)bytes;
	c->calls++;
}

/* Every item of @a is in @b with the same value, flags, cas, expiry. */
static bool same_items(struct store *a, struct store *b, bool ttl_gone)
{
	struct store_bound from = { .kind = BOUND_MIN };
	struct store_bound to = { .kind = BOUND_MAX };
	static struct item *items[8000];
	int n = store_range(a, &from, &to, false, 8000, items), i;
	bool ok = n > 6000 || ttl_gone;

	for (i = 0; i < n; i++) {
		struct item *x = items[i];
		struct store_req req = { .key = item_key(x), .nkey = x->nkey,
					 .flags = STORE_REQ_NO_BUMP };
		struct store_res res;
		struct item *y = store_lookup(b, &req, &res);

		if (ttl_gone && item_exptime(x)) {
			ok = ok && !y;
		} else if (!y || y->nbytes != x->nbytes ||
			   item_flags(y) != item_flags(x) || y->cas != x->cas ||
			   item_exptime(y) != item_exptime(x) ||
			   (y->iflags & ITEM_KEY_BINARY) !=
			   (x->iflags & ITEM_KEY_BINARY) ||
			   memcmp(item_value(x), item_value(y), x->nbytes)) {
			ok = false;
		}
		if (y)
			item_put(y);
		item_put(x);
	}
	return ok;
}

static const struct snapshot_opts base = {
	.item_size_max = ITEM_MAX,
	.unix_now = T0,
};

static void test_round_trip(void)
{
	struct store *a = new_store(256u << 20), *b = new_store(256u << 20);
	struct snapshot_opts o = base;
	struct snapshot_stats st;
	struct opts_ctx ctx = { 0 };
	struct stat sb;
	uint64_t cas_out = 0;
	struct item *it;

	fill(a);
	CHECK(snapshot_save(a, path, &o, &st) == 0);
	CHECK(st.items == 6001);	/* not the expired one */
	CHECK(stat(path, &sb) == 0 && (uint64_t)sb.st_size == st.bytes);
	o.progress = progress;
	o.arg = &ctx;
	CHECK(snapshot_load(b, path, &o, &st) == 0);
	CHECK_MSG(st.items == 6001 && !st.expired && !st.full, "%llu: %s",
		  (unsigned long long)st.items, st.why);
	CHECK(ctx.calls >= 2);
	{
		char why[256];

		CHECK_MSG(store_check_invariants(b, why, sizeof(why)) == 0,
			  "%s", why);
	}
	CHECK(same_items(a, b, false));
	CHECK(same_items(b, a, false));
	/* a new cas is above every loaded one */
	CHECK(store_item_alloc(b, "new", 3, 0, 0, 1, &it) == 0);
	memcpy(item_value(it), "x", 1);
	CHECK(store_item_store(b, it, STORE_OP_SET, 0, &cas_out) ==
	      STORE_STORED);
	{
		struct store_stats ss;

		store_stats(b, &ss);
		CHECK(ss.curr_items == 6002);
	}
	CHECK(cas_out > 6004);
	store_destroy(b);

	/* 200 s later: the items with 100 s to live are gone */
	b = new_store(256u << 20);
	store_set_time(b, T0 + 200);
	o = base;
	o.unix_now = T0 + 200;
	CHECK(snapshot_load(b, path, &o, &st) == 0);
	CHECK(st.items == 6001 - 1500 && st.expired == 1500);
	store_destroy(b);

	/* a store with room for about half: the load stops at the limit */
	b = new_store(1536u << 10);
	o = base;
	CHECK(snapshot_load(b, path, &o, &st) == 0);
	CHECK(st.full && st.items > 0 && st.items < 6001);
	CHECK(store_memory_used(b) <= (1536u << 10));
	store_destroy(b);
	store_destroy(a);
}

static char *slurp(size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p;
	long n;

	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	p = malloc((size_t)n);
	*len = fread(p, 1, (size_t)n, f);
	fclose(f);
	return p;
}

struct mem {
	const char *p;
	size_t len, pos;
};

static ssize_t mem_read(void *arg, void *buf, size_t len)
{
	struct mem *m = arg;

	if (len > m->len - m->pos)
		len = m->len - m->pos;
	memcpy(buf, m->p + m->pos, len);
	m->pos += len;
	return (ssize_t)len;
}

/* Loads @len bytes at @p into a fresh store. Return: snapshot_read()'s. */
static int load_mem(const char *p, size_t len, struct snapshot_stats *st)
{
	struct store *s = new_store(256u << 20);
	struct mem m = { p, len, 0 };
	struct snapshot_src src = { mem_read, &m };
	int rc = snapshot_read(s, &src, &base, st);

	store_destroy(s);
	return rc;
}

static void test_damage(void)
{
	struct store *a = new_store(256u << 20);
	struct snapshot_stats st;
	size_t len, off;
	unsigned int i, refused = 0, tried = 0;
	char *p, *q;

	fill(a);
	CHECK(snapshot_save(a, path, &base, &st) == 0);
	store_destroy(a);
	p = slurp(&len);
	q = malloc(len);
	CHECK(load_mem(p, len, &st) == 0);
	/* one byte flipped, every 4 KiB and in the last bytes */
	for (off = 0; off < len; off += off < len - 64 ? 4096 : 7) {
		memcpy(q, p, len);
		q[off] ^= 0x20;
		tried++;
		if (load_mem(q, len, &st) < 0 && st.why[0])
			refused++;
		else
			fprintf(stderr, "flip at %zu accepted\n", off);
	}
	CHECK(tried > 300 && refused == tried);
	/* cut short anywhere, or with a byte more */
	srand(7);
	for (i = 0; i < 40; i++) {
		size_t cut = (size_t)rand() % len;

		CHECK(load_mem(p, cut, &st) == -EBADMSG && st.why[0]);
	}
	CHECK(load_mem(p, len - 1, &st) == -EBADMSG);
	memcpy(q, p, len);
	CHECK(load_mem(p, 0, &st) == -EBADMSG &&
	      !strcmp(st.why, "an empty file"));
	{
		char *r = malloc(len + 1);

		memcpy(r, p, len);
		r[len] = 0;
		CHECK(load_mem(r, len + 1, &st) == -EBADMSG &&
		      strstr(st.why, "after the end"));
		free(r);
	}
	/* a newer format, and one written with a larger item size, with
	 * their header checksums right */
	memcpy(q, p, len);
	q[8] = 2;
	{
		uint64_t h = XXH3_64bits(q, 56);

		for (i = 0; i < 8; i++)
			q[56 + i] = (char)(h >> (8 * i));
	}
	CHECK(load_mem(q, len, &st) == -EPROTO &&
	      strstr(st.why, "format version 2"));
	memcpy(q, p, len);
	q[32 + 3] = 1;		/* item_size_max + 16 MiB */
	{
		uint64_t h = XXH3_64bits(q, 56);

		for (i = 0; i < 8; i++)
			q[56 + i] = (char)(h >> (8 * i));
	}
	CHECK(load_mem(q, len, &st) == -ERANGE);
	free(p);
	free(q);
}

static void test_failed_write_keeps_the_old_file(void)
{
	struct store *a = new_store(256u << 20);
	struct snapshot_opts o = base;
	struct snapshot_stats st;
	char tmp[300];
	size_t len1, len2;
	char *before, *after;

	put(a, "first", 0, 0, 10, 1, false);
	CHECK(snapshot_save(a, path, &o, &st) == 0);
	before = slurp(&len1);
	fill(a);
	o.fail_after = 100000;		/* the disk fills up */
	CHECK(snapshot_save(a, path, &o, &st) == -ENOSPC);
	CHECK(strstr(st.why, "No space left") != NULL);
	after = slurp(&len2);
	CHECK(len1 == len2 && !memcmp(before, after, len1));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	CHECK(access(tmp, F_OK) != 0);
	free(before);
	free(after);
	store_destroy(a);
}

int main(void)
{
	if (hash_init() < 0 || !mkdtemp(dir)) {
		fprintf(stderr, "set-up failed\n");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/snap", dir);
	test_round_trip();
	test_damage();
	test_failed_write_keeps_the_old_file();
	unlink(path);
	rmdir(dir);
	return check_report();
}
