// SPDX-License-Identifier: MIT
/*
 * fuzz_snapshot.c - the snapshot reader (server/snapshot.c) on any bytes.
 *
 * The input is a snapshot file as the warm restart would find it; one of
 * odd length is read with the checksums not checked, so that the fuzzer
 * reaches the fields and records they protect. Checked:
 *  1. no crash, no leak, no read past a buffer, whatever the bytes;
 *  2. a file accepted leaves a store whose structure is sound
 *     (store_check_invariants()) and holds exactly the items the reader
 *     says it loaded, within the memory limit;
 *  3. a file refused says why.
 * The seeds (tests/fuzz/corpus/snapshot) are files the daemon wrote.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "hash.h"
#include "snapshot.h"
#include "store.h"

#define FUZZ_T0		1700000000
#define FUZZ_MEM	(8u << 20)

struct mem {
	const uint8_t *p;
	size_t len, pos;
};

static ssize_t mem_read(void *arg, void *buf, size_t len)
{
	struct mem *m = arg;

	/* short reads, as a pipe or a slow disk would give */
	if (len > 4099)
		len = 4099;
	if (len > m->len - m->pos)
		len = m->len - m->pos;
	memcpy(buf, m->p + m->pos, len);
	m->pos += len;
	return (ssize_t)len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t seed[HASH_SEED_BYTES] = { 5, 6, 7, 8 };
	struct store_config cfg = {
		.mem_limit = FUZZ_MEM,
		.item_size_max = 64u << 10,
		.nshards = 4,
		.hash_bits = 4,
		.part_max = 4,
	};
	struct snapshot_opts o = {
		.item_size_max = 64u << 10,
		.unix_now = FUZZ_T0,
	};
	struct mem m = { data, size, 0 };
	struct snapshot_src src = { mem_read, &m };
	struct snapshot_stats st;
	struct store_stats ss;
	struct store *s;
	char why[256];
	int rc;

	/* an input of odd length skips the checksums: random bytes reach
	 * the header's fields and the records behind them */
	o.no_checksums = size & 1;
	hash_set_seed(seed);
	s = store_create(&cfg);
	if (!s)
		FUZZ_FAIL("store_create failed");
	store_set_time(s, FUZZ_T0);
	rc = snapshot_read(s, &src, &o, &st);
	if (rc == 0) {
		if (store_check_invariants(s, why, sizeof(why)))
			FUZZ_FAIL("store invariants after a load: %s", why);
		store_stats(s, &ss);
		FUZZ_CHECK(ss.curr_items == st.items,
			   "loaded %llu items, the store holds %llu",
			   (unsigned long long)st.items,
			   (unsigned long long)ss.curr_items);
		FUZZ_CHECK(store_memory_used(s) <= FUZZ_MEM,
			   "over the memory limit");
	} else {
		FUZZ_CHECK(st.why[0], "refused (%d) without a reason", rc);
	}
	store_destroy(s);
	return 0;
}
