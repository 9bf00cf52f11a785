// SPDX-License-Identifier: MIT
/*
 * ring.c - twemproxy's ketama placement, rebuilt (see ring.h). MD5 is
 * OpenSSL's.
 */
#include "ring.h"

#include <ctype.h>
#include <stdbool.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POINTS_PER_SERVER	160	/* nutcracker's KETAMA_POINTS_PER_SERVER */
#define POINTS_PER_HASH		4

static int add_server(struct ring *r, const char *hostport,
		      unsigned int weight, const char *name, size_t nlen,
		      char *err, size_t errlen)
{
	struct server *s;

	r->servers = realloc(r->servers, (r->nservers + 1) * sizeof(*s));
	if (!r->servers) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	s = &r->servers[r->nservers];
	if (server_init(s, hostport)) {
		snprintf(err, errlen, "%s", s->err);
		return -1;
	}
	s->weight = weight;
	if (nlen) {
		if (nlen >= sizeof(s->name))
			nlen = sizeof(s->name) - 1;
		memcpy(s->name, name, nlen);
		s->name[nlen] = '\0';
	}
	r->nservers++;
	return 0;
}

int ring_parse_list(struct ring *r, const char *list, char *err,
		    size_t errlen)
{
	const char *p = list;

	memset(r, 0, sizeof(*r));
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		char one[300];

		if (n && n < sizeof(one)) {
			memcpy(one, p, n);
			one[n] = '\0';
			if (add_server(r, one, 1, NULL, 0, err, errlen))
				return -1;
		} else if (n) {
			snprintf(err, errlen, "server address too long");
			return -1;
		}
		p += n + (comma ? 1 : 0);
	}
	if (!r->nservers) {
		snprintf(err, errlen, "no servers in \"%s\"", list);
		return -1;
	}
	return 0;
}

/* A pool setting @key whose value is not @want (any value when NULL). */
static int yml_refuses(const char *p, const char *key, const char *want,
		       char *err, size_t errlen)
{
	char val[64] = "";

	if (strncmp(p, key, strlen(key)))
		return 0;
	sscanf(p + strlen(key), "%63s", val);
	if (want && !strcmp(val, want))
		return 0;
	snprintf(err, errlen, "%s %s is not supported (anchorkv-cli places "
		 "keys as hash: fnv1a_64, distribution: ketama, no hash_tag)",
		 key, val);
	return -1;
}

int ring_parse_yml(struct ring *r, const char *path, char *err,
		   size_t errlen)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	bool in_servers = false;
	int pools = 0;

	memset(r, 0, sizeof(*r));
	if (!f) {
		snprintf(err, errlen, "cannot open %s", path);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *hash = strchr(line, '#');
		char addr[300], name[300] = "";
		unsigned int weight;
		char *colon;

		if (hash)
			*hash = '\0';
		if (line[0] && !isspace((unsigned char)line[0]) &&
		    strchr(line, ':')) {
			if (++pools > 1)
				break;		/* the first pool only */
			in_servers = false;
			continue;
		}
		while (isspace((unsigned char)*p))
			p++;
		if (!strncmp(p, "servers:", 8)) {
			in_servers = true;
			continue;
		}
		/* only the placement this file rebuilds */
		if (yml_refuses(p, "hash:", "fnv1a_64", err, errlen) ||
		    yml_refuses(p, "distribution:", "ketama", err, errlen) ||
		    yml_refuses(p, "hash_tag:", NULL, err, errlen)) {
			fclose(f);
			return -1;
		}
		if (!in_servers || *p != '-')
			continue;
		p++;
		while (isspace((unsigned char)*p))
			p++;
		if (sscanf(p, "%299s %299s", addr, name) < 1)
			continue;
		colon = strrchr(addr, ':');
		if (!colon || !isdigit((unsigned char)colon[1])) {
			snprintf(err, errlen, "%s: bad server \"%s\" (host:port:"
				 "weight [name])", path, addr);
			fclose(f);
			return -1;
		}
		weight = (unsigned int)strtoul(colon + 1, NULL, 10);
		*colon = '\0';
		if (!weight || add_server(r, addr, weight, name, strlen(name),
					  err, errlen)) {
			if (!weight)
				snprintf(err, errlen, "%s: a weight of 0", path);
			fclose(f);
			return -1;
		}
	}
	fclose(f);
	if (!r->nservers) {
		snprintf(err, errlen, "%s: no servers", path);
		return -1;
	}
	return 0;
}

static uint32_t md5_point(const char *s, size_t len, unsigned int i)
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dlen = 0;

	EVP_Digest(s, len, d, &dlen, EVP_md5(), NULL);
	return (uint32_t)d[3 + i * 4] << 24 | (uint32_t)d[2 + i * 4] << 16 |
	       (uint32_t)d[1 + i * 4] << 8 | d[i * 4];
}

static int point_cmp(const void *a, const void *b)
{
	const struct ring_point *x = a, *y = b;

	return x->value < y->value ? -1 : x->value > y->value;
}

int ring_build(struct ring *r)
{
	unsigned int total = 0, i, n = 0;

	for (i = 0; i < r->nservers; i++)
		total += r->servers[i].weight;
	r->points = calloc((size_t)r->nservers * POINTS_PER_SERVER * 2 + 4,
			   sizeof(*r->points));
	if (!r->points)
		return -1;
	for (i = 0; i < r->nservers; i++) {
		/* nutcracker's arithmetic, in float as it does it */
		float pct = (float)r->servers[i].weight / (float)total;
		unsigned int per = (unsigned int)(floorf(
			(float)(pct * POINTS_PER_SERVER / 4 *
				(float)r->nservers + 0.0000000001)) * 4);
		unsigned int k, x;

		for (k = 1; k <= per / POINTS_PER_HASH; k++) {
			char host[300 + 12];
			int len = snprintf(host, sizeof(host), "%s-%u",
					   r->servers[i].name, k - 1);

			for (x = 0; x < POINTS_PER_HASH; x++) {
				r->points[n].value = md5_point(host,
							       (size_t)len, x);
				r->points[n++].server = i;
			}
		}
	}
	r->npoints = n;
	qsort(r->points, n, sizeof(*r->points), point_cmp);
	return 0;
}

uint32_t ring_hash(const char *key, size_t len)
{
	uint32_t h = (uint32_t)0xcbf29ce484222325ull;
	size_t i;

	/* as nutcracker: a byte is a (signed) char widened to 32 bits */
	for (i = 0; i < len; i++) {
		h ^= (uint32_t)(int32_t)(signed char)key[i];
		h *= (uint32_t)0x100000001b3ull;
	}
	return h;
}

unsigned int ring_server(const struct ring *r, const char *key, size_t len)
{
	uint32_t h = ring_hash(key, len);
	unsigned int lo = 0, hi = r->npoints;

	if (r->nservers == 1 || !r->npoints)
		return 0;
	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (r->points[mid].value < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	return r->points[lo == r->npoints ? 0 : lo].server;
}

void ring_free(struct ring *r)
{
	unsigned int i;

	for (i = 0; i < r->nservers; i++) {
		server_close(&r->servers[i]);
		free(r->servers[i].rbuf);
	}
	free(r->servers);
	free(r->points);
	memset(r, 0, sizeof(*r));
}
