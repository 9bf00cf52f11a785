// SPDX-License-Identifier: MIT
/*
 * hitratio.c - the cache-aside replay client and the policy simulators of
 * make bench's hitratio section.
 *
 *   hitratio replay -P mc|resp -p PORT [trace options] [-i PID] [-B BATCH]
 *	Plays a seeded trace cache-aside over one connection, in order, in
 *	batches of BATCH (64): a get of every key of the batch; for each miss
 *	a set of it (noreply is not used: every reply is read and checked),
 *	sent ahead of the next batch's gets. The first half of the trace
 *	warms the cache; the hit ratio is over the second half. Then it asks
 *	the server how many items it holds (stats curr_items, DBSIZE) and
 *	simulates exact LRU and S3-FIFO at that many items on the same
 *	trace. Where values have many sizes (sizes, hotlarge, ranksized),
 *	S3-FIFO is simulated at the server's bytes too (stats bytes, the
 *	text protocol only; as sim -b): a policy that weighs sizes holds
 *	more small items than a FIFO of its items could, so beside the
 *	items it is compared at its memory. With -i, the server's CPU
 *	(utime + stime of /proc/PID/stat) per request is reported too.
 *	Prints one line of name=value pairs.
 *
 *   hitratio fill -P mc|resp -p PORT -v BYTES -k KEYS
 *	Stores KEYS keys ("key:0" on) with a value of BYTES bytes each, in
 *	batches of 64 sets, every reply read, then prints how many items the
 *	server holds: what one item size costs each server at its memory
 *	limit (the caller sends more than fits).
 *
 *   hitratio sim -c ITEMS [-b BYTES] [-s lru|s3fifo|s3clock]
 *                [trace options] [-T SECONDS]
 *	Only the simulators, at ITEMS items (lru and s3fifo unless -s); -T
 *	spreads the trace over that many seconds for its TTLs. With -b they
 *	hold BYTES bytes instead, an item weighing 48 bytes (memcached's
 *	header) + its key + its value, and S3-FIFO's ghost remembers as
 *	many keys as 9/10 of ITEMS (lru and s3fifo only). s3clock is
 *	S3-FIFO whose main queue is a CLOCK over positions fixed by the key
 *	(the server's hand over its hash table; an item entering it within
 *	the half turn ahead of the hand is passed by once), for comparison.
 *
 * Trace options: -a ALPHA (Zipf exponent, 1.0; 0: uniform), -k KEYS
 * (1000000), -n REQUESTS (4000000), -S SEED (1), -m MIX:
 *	plain	Zipf over KEYS keys, 100-byte values, no TTL
 *	scan	plain, and after every 20,000 requests a scan of 5,000
 *		keys never seen before (one-hit keys)
 *	ttl	plain, but a quarter of the keys are stored with a TTL of 2
 *		to 5 seconds
 *	sizes	plain, with a value of 50 to 2,000 bytes per key
 *		(log-uniform; a key keeps its size)
 *	shift	plain, but the popularity drifts: after every 250,000
 *		requests each rank moves to the key 5,000 ranks colder
 *		than it had, so the 5,000 hottest keys go cold at once
 *		(to the tail) and the warm ones behind them turn hot
 *	hotlarge  plain, but the 500 hottest keys have 8,000-byte values
 *		(a size rule must not evict hot large values)
 *	ranksized plain, but a key's value is sized by its popularity:
 *		50 * 40^(1 - ln(rank + 1) / ln KEYS) bytes, 2,000 for the
 *		hottest, 316 at rank 1,000, 50 for the coldest
 * The last two are not in make bench's section; they check that a rule
 * which weighs reads against sizes holds where sizes follow popularity.
 * Popularity is unrelated to key order: key ids are a seeded permutation
 * of the Zipf ranks. A key is "key:<id>".
 *
 * The simulators count items (or bytes, -b), and are written from the
 * papers, independently of the server's code: LRU is a doubly linked
 * list; S3-FIFO (Yang et al., SOSP 2023) a small FIFO of a tenth of the
 * items, a main FIFO with reinsertion by a 2-bit frequency and a ghost
 * FIFO of the keys evicted from the small queue, as many as main holds.
 *
 * A bench tool, not the server: libc only, exits on failure.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SCAN_EVERY	20000
#define SCAN_KEYS	5000
#define VALUE_DEFAULT	100
#define VALUE_MIN	50
#define VALUE_MAX	2000
#define FILL_MAX	(1 << 20)	/* the largest value `fill` sends */
#define TTL_SHARE	4		/* one key in TTL_SHARE has a TTL */
#define SHIFT_EVERY	250000		/* requests between two drifts */
#define SHIFT_RANKS	5000		/* ranks a drift moves */
#define HOT_LARGE_KEYS	500		/* hotlarge: the hottest keys ... */
#define HOT_LARGE_VALUE	8000		/* ... have values this large */

enum mix { MIX_PLAIN, MIX_SCAN, MIX_TTL, MIX_SIZES, MIX_SHIFT,
	   MIX_HOTLARGE, MIX_RANKSIZED };

/*
 * The simulated policies: exact LRU; S3-FIFO as the paper has it; and
 * S3-FIFO whose main queue is a CLOCK over positions fixed by the key's
 * hash (as the server's hand walks its hash table) instead of a FIFO.
 */
enum policy { POL_LRU, POL_S3FIFO, POL_S3CLOCK };

struct trace_opts {
	double alpha;
	uint32_t keys;
	uint64_t requests;
	uint64_t seed;
	enum mix mix;
};

/* One request of the trace. */
struct req {
	uint32_t id;
	uint32_t size;
	uint32_t ttl;		/* seconds, 0: none */
};

struct trace {
	struct trace_opts o;
	double *cdf;		/* cdf[r]: P(rank <= r) */
	uint32_t *perm;		/* rank -> key id */
	uint64_t rng;
	uint64_t i;		/* requests made */
	uint32_t scan_next;	/* the next never-seen id */
	uint32_t scan_left;	/* of the scan under way */
};

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static void *xmalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p)
		die("calloc");
	return p;
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A fixed function of a key id and the seed: its size and TTL. */
static uint64_t id_hash(const struct trace *t, uint32_t id)
{
	uint64_t s = t->o.seed * 0x100000001b3ull + id;

	return splitmix(&s);
}

static void trace_init(struct trace *t, const struct trace_opts *o)
{
	double sum = 0, acc = 0;
	uint32_t r;

	memset(t, 0, sizeof(*t));
	t->o = *o;
	t->cdf = xmalloc(sizeof(double) * o->keys);
	t->perm = xmalloc(sizeof(uint32_t) * o->keys);
	for (r = 0; r < o->keys; r++)
		sum += pow((double)r + 1, -o->alpha);
	for (r = 0; r < o->keys; r++) {
		acc += pow((double)r + 1, -o->alpha);
		t->cdf[r] = acc / sum;
		t->perm[r] = r;
	}
	t->rng = o->seed;
	for (r = o->keys - 1; r > 0; r--) {
		uint32_t j = (uint32_t)(splitmix(&t->rng) % ((uint64_t)r + 1));
		uint32_t x = t->perm[r];

		t->perm[r] = t->perm[j];
		t->perm[j] = x;
	}
	t->scan_next = o->keys;
}

static void trace_free(struct trace *t)
{
	free(t->cdf);
	free(t->perm);
}

/* The largest key id a trace of these options can name, plus one. */
static uint32_t trace_ids(const struct trace_opts *o)
{
	uint64_t n = o->keys;

	if (o->mix == MIX_SCAN)
		n += (o->requests / SCAN_EVERY + 1) * SCAN_KEYS;
	return (uint32_t)n;
}

static void trace_next(struct trace *t, struct req *q)
{
	uint32_t rank = 0;
	uint64_t h;

	if (t->o.mix == MIX_SCAN && t->i && t->i % SCAN_EVERY == 0 &&
	    !t->scan_left)
		t->scan_left = SCAN_KEYS;
	t->i++;
	if (t->scan_left) {
		t->scan_left--;
		q->id = t->scan_next++;
	} else {
		double u = (double)(splitmix(&t->rng) >> 11) * 0x1.0p-53;
		uint32_t lo = 0, hi = t->o.keys - 1;

		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (t->cdf[mid] < u)
				lo = mid + 1;
			else
				hi = mid;
		}
		rank = lo;
		if (t->o.mix == MIX_SHIFT)	/* the drifts so far */
			lo = (uint32_t)((lo + (t->i - 1) / SHIFT_EVERY *
					 SHIFT_RANKS) % t->o.keys);
		q->id = t->perm[lo];
	}
	h = id_hash(t, q->id);
	q->size = VALUE_DEFAULT;
	q->ttl = 0;
	if (t->o.mix == MIX_SIZES)
		q->size = (uint32_t)(VALUE_MIN *
			pow((double)VALUE_MAX / VALUE_MIN,
			    (double)(h >> 11) * 0x1.0p-53));
	if (t->o.mix == MIX_HOTLARGE && rank < HOT_LARGE_KEYS)
		q->size = HOT_LARGE_VALUE;
	if (t->o.mix == MIX_RANKSIZED && t->o.keys > 1)
		q->size = (uint32_t)(VALUE_MIN *
			pow((double)VALUE_MAX / VALUE_MIN,
			    1.0 - log((double)rank + 1) /
				  log((double)t->o.keys)));
	if (t->o.mix == MIX_TTL && h % TTL_SHARE == 0)
		q->ttl = 2 + (uint32_t)((h >> 8) % 4);
}

/* A key's name, as the replay sends it and the simulators weigh it. */
static int key_of(char *buf, uint32_t id)
{
	return sprintf(buf, "key:%u", id);
}

/* ---- simulators ---- */

struct sim_item {
	uint32_t gen;		/* bumped when the item leaves a queue */
	uint8_t where;		/* 0 absent, 1 small (or LRU), 2 main */
	uint8_t freq;
	uint32_t weight;	/* 1, or its bytes (-b) */
	double exp;		/* 0: never */
};

/* A FIFO of (id, gen); an entry whose gen is old is a hole. */
struct fifo {
	uint32_t *id, *gen;
	uint64_t head, tail;	/* push at head, pop at tail */
	uint64_t cap;
};

static void fifo_init(struct fifo *f, uint64_t cap)
{
	f->cap = cap;
	f->id = xmalloc(sizeof(uint32_t) * cap);
	f->gen = xmalloc(sizeof(uint32_t) * cap);
	f->head = f->tail = 0;
}

static void fifo_free(struct fifo *f)
{
	free(f->id);
	free(f->gen);
}

static void fifo_push(struct fifo *f, uint32_t id, uint32_t gen)
{
	if (f->head - f->tail == f->cap) {	/* full of holes: grow */
		struct fifo g;
		uint64_t i;

		fifo_init(&g, f->cap * 2);
		for (i = f->tail; i < f->head; i++)
			fifo_push(&g, f->id[i % f->cap], f->gen[i % f->cap]);
		fifo_free(f);
		*f = g;
	}
	f->id[f->head % f->cap] = id;
	f->gen[f->head % f->cap] = gen;
	f->head++;
}

/*
 * n_small, n_main and the caps count items, or bytes with -b: an item
 * then weighs SIM_ITEM_HEADER + its key + its value, and the ghost holds
 * ghost_cap keys (the main queue's share of the items the server held).
 */
#define SIM_ITEM_HEADER	48	/* memcached's item header with cas */

struct sim {
	uint64_t cap, small_cap, main_cap, ghost_cap;
	uint64_t n_small, n_main;
	bool bytes;
	struct sim_item *it;
	struct fifo small, main, ghost;
	uint64_t *ghost_at;	/* 1 + the ghost position of an id, 0: none */
	uint32_t *prev, *next;	/* LRU: a list through ids, NIL-ended */
	uint32_t lru_head, lru_tail;
	bool lru;
	unsigned int move_at;	/* S3-FIFO: freq to move to main */
	/* main as a CLOCK over slots in key-hash order (the server's hand) */
	uint32_t *slot, *pos, nslots, hand;
	bool clock_main;
};

#define NIL	UINT32_MAX

static void sim_init(struct sim *m, enum policy p, uint64_t cap,
		     uint64_t bytes, uint32_t ids)
{
	uint64_t entries;

	memset(m, 0, sizeof(*m));
	m->lru = p == POL_LRU;
	m->bytes = bytes != 0;
	m->cap = bytes ? bytes : cap ? cap : 1;
	m->small_cap = m->cap / 10 ? m->cap / 10 : 1;
	m->main_cap = m->cap - m->small_cap;
	m->ghost_cap = bytes ? cap - cap / 10 : m->main_cap;
	if (!m->ghost_cap)
		m->ghost_cap = 1;
	entries = bytes ? cap + 1 : m->cap;
	m->move_at = 1;
	m->it = xmalloc(sizeof(*m->it) * ids);
	if (m->lru) {
		m->prev = xmalloc(sizeof(uint32_t) * ids);
		m->next = xmalloc(sizeof(uint32_t) * ids);
		m->lru_head = m->lru_tail = NIL;
		return;
	}
	fifo_init(&m->small, entries / 10 + 16);	/* they grow */
	fifo_init(&m->main, entries + 16);
	fifo_init(&m->ghost, m->ghost_cap + 16);
	m->ghost_at = xmalloc(sizeof(uint64_t) * ids);
	m->clock_main = p == POL_S3CLOCK;
	if (m->clock_main) {
		uint32_t i;

		m->nslots = (uint32_t)(m->main_cap * 5 / 4 + 64);
		m->slot = xmalloc(sizeof(uint32_t) * m->nslots);
		m->pos = xmalloc(sizeof(uint32_t) * ids);
		for (i = 0; i < m->nslots; i++)
			m->slot[i] = NIL;
	}
}

static void main_push(struct sim *m, uint32_t id)
{
	uint64_t h = id * 0x9e3779b97f4a7c15ull;
	uint32_t i;

	if (!m->clock_main) {
		fifo_push(&m->main, id, m->it[id].gen);
		return;
	}
	i = (uint32_t)((h >> 32) % m->nslots);
	while (m->slot[i] != NIL)
		i = (i + 1) % m->nslots;
	m->slot[i] = id;
	m->pos[id] = i;
	/* the server's main_entry_freq_locked(): within the half turn ahead
	 * of the hand, passed by once */
	if ((i + m->nslots - m->hand) % m->nslots < m->nslots / 2)
		m->it[id].freq = 1;
}

static void sim_free(struct sim *m)
{
	free(m->it);
	free(m->prev);
	free(m->next);
	free(m->ghost_at);
	free(m->slot);
	free(m->pos);
	if (!m->lru) {
		fifo_free(&m->small);
		fifo_free(&m->main);
		fifo_free(&m->ghost);
	}
}

static void lru_unlink(struct sim *m, uint32_t id)
{
	uint32_t p = m->prev[id], n = m->next[id];

	if (p != NIL)
		m->next[p] = n;
	else
		m->lru_head = n;
	if (n != NIL)
		m->prev[n] = p;
	else
		m->lru_tail = p;
}

static void lru_push(struct sim *m, uint32_t id)
{
	m->prev[id] = NIL;
	m->next[id] = m->lru_head;
	if (m->lru_head != NIL)
		m->prev[m->lru_head] = id;
	else
		m->lru_tail = id;
	m->lru_head = id;
}

/* Take @id out of the cache (expired, or evicted). */
static void sim_drop(struct sim *m, uint32_t id)
{
	struct sim_item *x = &m->it[id];

	if (m->lru)
		lru_unlink(m, id);
	if (x->where == 2)
		m->n_main -= x->weight;
	else
		m->n_small -= x->weight;
	if (m->clock_main && x->where == 2)
		m->slot[m->pos[id]] = NIL;
	x->where = 0;
	x->gen++;
}

static bool fifo_pop(struct sim *m, struct fifo *f, uint32_t *id)
{
	while (f->tail < f->head) {
		uint64_t i = f->tail++ % f->cap;

		if (m->it[f->id[i]].gen == f->gen[i]) {
			*id = f->id[i];
			return true;
		}
	}
	return false;
}

static void ghost_add(struct sim *m, uint32_t id)
{
	uint32_t old;

	if (m->ghost.head - m->ghost.tail == m->ghost_cap) {
		old = m->ghost.id[m->ghost.tail % m->ghost.cap];
		if (m->ghost_at[old] == m->ghost.tail + 1)
			m->ghost_at[old] = 0;
		m->ghost.tail++;
	}
	m->ghost_at[id] = m->ghost.head + 1;
	m->ghost.id[m->ghost.head % m->ghost.cap] = id;
	m->ghost.head++;
}

static void s3_evict_main(struct sim *m)
{
	uint32_t id;

	while (m->clock_main && m->n_main) {
		id = m->slot[m->hand];
		m->hand = (m->hand + 1) % m->nslots;
		if (id == NIL)
			continue;
		if (m->it[id].freq) {
			m->it[id].freq--;
			continue;
		}
		sim_drop(m, id);
		return;
	}

	while (fifo_pop(m, &m->main, &id)) {
		struct sim_item *x = &m->it[id];

		if (x->freq) {
			x->freq--;
			fifo_push(&m->main, id, x->gen);
			continue;
		}
		sim_drop(m, id);
		return;
	}
}

static void s3_evict(struct sim *m)
{
	uint32_t id;

	if (m->n_small < m->small_cap && m->n_main) {
		s3_evict_main(m);
		return;
	}
	while (fifo_pop(m, &m->small, &id)) {
		struct sim_item *x = &m->it[id];

		if (x->freq >= m->move_at) {
			x->where = 2;
			x->freq = 0;
			m->n_small -= x->weight;
			m->n_main += x->weight;
			main_push(m, id);
			if (m->n_main > m->main_cap)
				s3_evict_main(m);
			if (m->n_small + m->n_main < m->cap)
				return;
			continue;
		}
		sim_drop(m, id);
		ghost_add(m, id);
		return;
	}
	s3_evict_main(m);
}

/* A get at time @now: hit or miss; an expired item goes. */
static bool sim_get(struct sim *m, uint32_t id, double now)
{
	struct sim_item *x = &m->it[id];

	if (!x->where)
		return false;
	if (x->exp && x->exp <= now) {
		sim_drop(m, id);
		return false;
	}
	if (m->lru) {
		lru_unlink(m, id);
		lru_push(m, id);
	} else if (x->freq < 3) {
		x->freq++;
	}
	return true;
}

/* The set that follows a miss, of a value of @size bytes. */
static void sim_set(struct sim *m, uint32_t id, uint32_t size, double exp)
{
	struct sim_item *x = &m->it[id];
	char key[16];

	if (x->where)
		return;		/* set twice in one batch */
	x->weight = 1;
	if (m->bytes)
		x->weight = SIM_ITEM_HEADER + size + (uint32_t)key_of(key, id);
	if (x->weight > m->cap)
		return;		/* it could never fit */
	while (m->n_small + m->n_main + x->weight > m->cap) {
		if (m->lru) {
			sim_drop(m, m->lru_tail);
			continue;
		}
		s3_evict(m);
	}
	x->exp = exp;
	x->freq = 0;
	if (m->lru) {
		x->where = 1;
		m->n_small += x->weight;
		lru_push(m, id);
		return;
	}
	if (m->ghost_at[id] && m->ghost.head - m->ghost_at[id] + 1 <=
			       m->ghost.head - m->ghost.tail) {
		m->ghost_at[id] = 0;
		x->where = 2;
		m->n_main += x->weight;
		main_push(m, id);
		return;
	}
	x->where = 1;
	m->n_small += x->weight;
	fifo_push(&m->small, id, x->gen);
}

/*
 * Play the trace through a simulator, cache-aside in batches as the
 * replay does. Return: the hit ratio over the second half.
 */
static double simulate(const struct trace_opts *o, enum policy p, uint64_t cap,
		       uint64_t bytes, unsigned int batch, double seconds)
{
	uint32_t ids = trace_ids(o);
	struct req *b = xmalloc(sizeof(*b) * batch);
	bool *hit = xmalloc(sizeof(bool) * batch);
	uint64_t done = 0, hits = 0, counted = 0;
	struct trace t;
	struct sim m;

	trace_init(&t, o);
	sim_init(&m, p, cap, bytes, ids);
	while (done < o->requests) {
		unsigned int n = 0, j;
		double now = seconds * (double)done / (double)o->requests;

		while (n < batch && done + n < o->requests)
			trace_next(&t, &b[n++]);
		for (j = 0; j < n; j++) {
			hit[j] = sim_get(&m, b[j].id, now);
			if (done + j >= o->requests / 2) {
				counted++;
				hits += hit[j];
			}
		}
		for (j = 0; j < n; j++)
			if (!hit[j])
				sim_set(&m, b[j].id, b[j].size,
					b[j].ttl ? now + b[j].ttl : 0);
		done += n;
	}
	sim_free(&m);
	trace_free(&t);
	free(b);
	free(hit);
	return counted ? (double)hits / (double)counted : 0;
}

/* ---- the replay client ---- */

struct conn {
	int fd;
	char *in;
	size_t in_len, in_off, in_cap;
	char *out;
	size_t out_len, out_cap;
};

static void out_put(struct conn *c, const void *p, size_t n)
{
	if (c->out_len + n > c->out_cap) {
		c->out_cap = (c->out_len + n) * 2;
		c->out = realloc(c->out, c->out_cap);
		if (!c->out)
			die("realloc");
	}
	memcpy(c->out + c->out_len, p, n);
	c->out_len += n;
}

static void out_flush(struct conn *c)
{
	size_t off = 0;

	while (off < c->out_len) {
		ssize_t w = write(c->fd, c->out + off, c->out_len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write");
		off += (size_t)w;
	}
	c->out_len = 0;
}

/* Make sure @n bytes are buffered from in_off on. */
static void in_need(struct conn *c, size_t n)
{
	while (c->in_len - c->in_off < n) {
		ssize_t r;

		if (c->in_off) {
			memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
			c->in_len -= c->in_off;
			c->in_off = 0;
		}
		if (c->in_cap - c->in_len < 65536) {
			c->in_cap = c->in_cap * 2 + 65536 + n;
			c->in = realloc(c->in, c->in_cap);
			if (!c->in)
				die("realloc");
		}
		r = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fprintf(stderr, "hitratio: the server closed\n");
			exit(2);
		}
		c->in_len += (size_t)r;
	}
}

/* The next line, without its "\r\n" (NUL-terminated in place). */
static char *in_line(struct conn *c)
{
	for (;;) {
		char *s = c->in + c->in_off;
		char *e = memmem(s, c->in_len - c->in_off, "\r\n", 2);

		if (e) {
			*e = 0;
			c->in_off = (size_t)(e - c->in) + 2;
			return s;
		}
		in_need(c, c->in_len - c->in_off + 1);
	}
}

static void in_skip(struct conn *c, size_t n)
{
	in_need(c, n);
	c->in_off += n;
}

static void bad_reply(const char *what, const char *line)
{
	fprintf(stderr, "hitratio: unexpected reply to %s: %.80s\n", what,
		line);
	exit(2);
}

static void conn_open(struct conn *c, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int one = 1;

	memset(c, 0, sizeof(*c));
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (c->fd < 0)
		die("socket");
	if (connect(c->fd, (struct sockaddr *)&a, sizeof(a)))
		die("connect");
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static bool resp;		/* RESP (Redis) rather than memcached text */
static char value_buf[FILL_MAX + 2];

static void send_get(struct conn *c, uint32_t id)
{
	char key[32], line[80];
	int nk = key_of(key, id);
	int n = resp ? sprintf(line, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", nk, key)
		     : sprintf(line, "get %s\r\n", key);

	out_put(c, line, (size_t)n);
}

static void send_set(struct conn *c, const struct req *q)
{
	char key[32], line[160];
	int nk = key_of(key, q->id), n;

	if (resp && q->ttl)
		n = sprintf(line, "*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%u\r\n",
			    nk, key, q->size);
	else if (resp)
		n = sprintf(line, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%u\r\n",
			    nk, key, q->size);
	else
		n = sprintf(line, "set %s 0 %u %u\r\n", key, q->ttl, q->size);
	out_put(c, line, (size_t)n);
	out_put(c, value_buf, q->size);
	out_put(c, "\r\n", 2);
	if (resp && q->ttl) {
		char ttl[12];
		int nt = sprintf(ttl, "%u", q->ttl);

		n = sprintf(line, "$2\r\nEX\r\n$%d\r\n%s\r\n", nt, ttl);
		out_put(c, line, (size_t)n);
	}
}

/* The reply to a get: true on a hit. */
static bool read_get(struct conn *c)
{
	char *l = in_line(c);
	unsigned int flags;
	long len;
	char key[256];

	if (resp) {
		if (l[0] != '$')
			bad_reply("GET", l);
		len = atol(l + 1);
		if (len < 0)
			return false;
		in_skip(c, (size_t)len + 2);
		return true;
	}
	if (!strcmp(l, "END"))
		return false;
	if (sscanf(l, "VALUE %255s %u %ld", key, &flags, &len) != 3)
		bad_reply("get", l);
	in_skip(c, (size_t)len + 2);
	l = in_line(c);
	if (strcmp(l, "END"))
		bad_reply("get", l);
	return true;
}

/* The reply to a set: stored, or refused for memory (counted). */
static bool read_set(struct conn *c)
{
	char *l = in_line(c);

	if (!strcmp(l, resp ? "+OK" : "STORED"))
		return true;
	if (strstr(l, "memory") || strstr(l, "OOM"))
		return false;
	bad_reply("set", l);
	return false;
}

/* The items the server holds; and with the text protocol, @bytes: their
 * bytes (stats bytes). */
static uint64_t server_items(struct conn *c, uint64_t *bytes)
{
	uint64_t items = 0;
	char *l;

	*bytes = 0;
	if (resp) {
		out_put(c, "*1\r\n$6\r\nDBSIZE\r\n", 16);
		out_flush(c);
		l = in_line(c);
		if (l[0] != ':')
			bad_reply("DBSIZE", l);
		return strtoull(l + 1, NULL, 10);
	}
	out_put(c, "stats\r\n", 7);
	out_flush(c);
	while (strcmp(l = in_line(c), "END")) {
		sscanf(l, "STAT curr_items %lu", &items);
		sscanf(l, "STAT bytes %lu", bytes);
	}
	return items;
}

static uint64_t cpu_ticks(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut, st;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		die(path);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			 "%lu %lu", &ut, &st) != 2) {
		fprintf(stderr, "hitratio: cannot read %s\n", path);
		exit(2);
	}
	return ut + st;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void replay(const struct trace_opts *o, int port, int pid,
		   unsigned int batch)
{
	struct req *b = xmalloc(sizeof(*b) * batch);
	bool *hit = xmalloc(sizeof(bool) * batch);
	uint64_t done = 0, hits = 0, counted = 0, refused = 0, items, bytes;
	unsigned int pending = 0, j, n;
	uint64_t ticks = pid ? cpu_ticks(pid) : 0;
	double t0 = now_s(), secs, lru, s3;
	struct trace t;
	struct conn c;

	memset(value_buf, 'v', sizeof(value_buf));
	conn_open(&c, port);
	trace_init(&t, o);
	while (done < o->requests) {
		n = 0;
		while (n < batch && done + n < o->requests)
			trace_next(&t, &b[n++]);
		for (j = 0; j < n; j++)
			send_get(&c, b[j].id);
		out_flush(&c);
		for (; pending; pending--)
			refused += !read_set(&c);
		for (j = 0; j < n; j++) {
			hit[j] = read_get(&c);
			if (done + j >= o->requests / 2) {
				counted++;
				hits += hit[j];
			}
		}
		for (j = 0; j < n; j++) {
			if (!hit[j]) {
				send_set(&c, &b[j]);
				pending++;
			}
		}
		done += n;
	}
	out_flush(&c);
	for (; pending; pending--)
		refused += !read_set(&c);
	secs = now_s() - t0;
	if (pid)
		ticks = cpu_ticks(pid) - ticks;
	items = server_items(&c, &bytes);
	close(c.fd);
	trace_free(&t);
	lru = simulate(o, POL_LRU, items, 0, batch, secs);
	s3 = simulate(o, POL_S3FIFO, items, 0, batch, secs);
	printf("hit=%.4f items=%lu lru=%.4f s3fifo=%.4f seconds=%.1f "
	       "refused=%lu", (double)hits / (double)counted, items, lru, s3,
	       secs, refused);
	if (bytes && items && (o->mix == MIX_SIZES || o->mix == MIX_HOTLARGE ||
			       o->mix == MIX_RANKSIZED))	/* sizes vary */
		printf(" bytes=%lu s3fifo_bytes=%.4f", bytes,
		       simulate(o, POL_S3FIFO, items, bytes, batch, secs));
	if (pid)
		printf(" cpu_us=%.3f", (double)ticks * 1e6 /
		       (double)sysconf(_SC_CLK_TCK) / (double)o->requests);
	printf("\n");
	free(b);
	free(hit);
	free(c.in);
	free(c.out);
}

static void fill(int port, uint32_t size, uint32_t keys)
{
	uint64_t refused = 0, bytes;
	uint32_t id = 0, n, j;
	struct conn c;

	memset(value_buf, 'v', sizeof(value_buf));
	conn_open(&c, port);
	while (id < keys) {
		for (n = 0; n < 64 && id < keys; n++, id++) {
			struct req q = { id, size, 0 };

			send_set(&c, &q);
		}
		out_flush(&c);
		for (j = 0; j < n; j++)
			refused += !read_set(&c);
	}
	printf("items=%lu refused=%lu\n", server_items(&c, &bytes), refused);
	close(c.fd);
	free(c.in);
	free(c.out);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: hitratio replay -P mc|resp -p PORT [-i PID] [-B BATCH] "
		"[trace]\n"
		"       hitratio fill -P mc|resp -p PORT -v BYTES -k KEYS\n"
		"       hitratio sim -c ITEMS [-b BYTES] [-s lru|s3fifo|s3clock] "
		"[-T SECONDS] [trace]\n"
		"trace: [-a ALPHA] [-k KEYS] [-n REQUESTS] [-S SEED] "
		"[-m plain|scan|ttl|sizes|shift|hotlarge|ranksized]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct trace_opts o = { 1.0, 1000000, 4000000, 1, MIX_PLAIN };
	const char *mode = argc > 1 ? argv[1] : "", *only = NULL;
	unsigned int batch = 64;
	double seconds = 0;
	uint64_t items = 0, bytes = 0;
	int port = 0, pid = 0, opt;
	uint32_t vbytes = 0;

	if (argc < 2)
		usage();
	optind = 2;
	while ((opt = getopt(argc, argv, "P:p:i:B:a:k:n:S:m:c:b:s:T:v:")) !=
	       -1) {
		switch (opt) {
		case 'P': resp = !strcmp(optarg, "resp"); break;
		case 'p': port = atoi(optarg); break;
		case 'i': pid = atoi(optarg); break;
		case 'B': batch = (unsigned int)atoi(optarg); break;
		case 'a': o.alpha = atof(optarg); break;
		case 'k': o.keys = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'n': o.requests = strtoull(optarg, NULL, 10); break;
		case 'S': o.seed = strtoull(optarg, NULL, 10); break;
		case 'c': items = strtoull(optarg, NULL, 10); break;
		case 'b': bytes = strtoull(optarg, NULL, 10); break;
		case 's': only = optarg; break;
		case 'T': seconds = atof(optarg); break;
		case 'v': vbytes = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'm':
			if (!strcmp(optarg, "plain"))
				o.mix = MIX_PLAIN;
			else if (!strcmp(optarg, "scan"))
				o.mix = MIX_SCAN;
			else if (!strcmp(optarg, "ttl"))
				o.mix = MIX_TTL;
			else if (!strcmp(optarg, "sizes"))
				o.mix = MIX_SIZES;
			else if (!strcmp(optarg, "shift"))
				o.mix = MIX_SHIFT;
			else if (!strcmp(optarg, "hotlarge"))
				o.mix = MIX_HOTLARGE;
			else if (!strcmp(optarg, "ranksized"))
				o.mix = MIX_RANKSIZED;
			else
				usage();
			break;
		default:
			usage();
		}
	}
	if (!o.keys || !o.requests || !batch || o.alpha < 0)
		usage();
	if (!strcmp(mode, "fill") && port > 0 && vbytes &&
	    vbytes <= FILL_MAX) {
		fill(port, vbytes, o.keys);
		return 0;
	}
	if (!strcmp(mode, "replay") && port > 0) {
		replay(&o, port, pid, batch);
		return 0;
	}
	if (strcmp(mode, "sim") || !items ||
	    (bytes && only && !strcmp(only, "s3clock")))
		usage();
	if (!only || !strcmp(only, "lru"))
		printf("lru=%.4f ", simulate(&o, POL_LRU, items, bytes, batch,
					     seconds));
	if (!only || !strcmp(only, "s3fifo"))
		printf("s3fifo=%.4f ", simulate(&o, POL_S3FIFO, items, bytes,
						batch, seconds));
	if (only && !strcmp(only, "s3clock"))
		printf("s3clock=%.4f ", simulate(&o, POL_S3CLOCK, items, 0,
						 batch, seconds));
	printf("\n");
	return 0;
}
