// SPDX-License-Identifier: MIT
/*
 * span.c - a range's bounds turned into a span, the span narrowed past
 * what a walk visited, and the visitors that collect or count.
 */
#include "span.h"

/* Turn two bounds into a span. Return: false for an empty range. */
bool span_init(struct span *sp, const struct store_bound *from,
	       const struct store_bound *to)
{
	uint64_t v;
	int c;

	sp->ints = sp->strs = true;
	sp->ilo = 0;
	sp->ihi = UINT64_MAX;
	sp->slo.open = sp->shi.open = true;

	switch (from->kind) {
	case BOUND_MIN:
		break;
	case BOUND_MAX:
		return false;
	case BOUND_INCL:
	case BOUND_EXCL:
		if (key_is_integer(from->key, from->nkey, &v)) {
			if (from->kind == BOUND_INCL)
				sp->ilo = v;
			else if (v == UINT64_MAX)
				sp->ints = false;
			else
				sp->ilo = v + 1;
		} else {
			sp->ints = false;
			sbound_set(&sp->slo, from->key, from->nkey,
				   from->kind == BOUND_INCL);
		}
		break;
	}
	switch (to->kind) {
	case BOUND_MAX:
		break;
	case BOUND_MIN:
		return false;
	case BOUND_INCL:
	case BOUND_EXCL:
		if (key_is_integer(to->key, to->nkey, &v)) {
			sp->strs = false;
			if (to->kind == BOUND_INCL)
				sp->ihi = v;
			else if (v == 0)
				sp->ints = false;
			else
				sp->ihi = v - 1;
		} else {
			sbound_set(&sp->shi, to->key, to->nkey,
				   to->kind == BOUND_INCL);
		}
		break;
	}
	if (sp->ints && sp->ilo > sp->ihi)
		sp->ints = false;
	if (sp->strs && !sp->slo.open && !sp->shi.open) {
		c = key_bytes_cmp(sp->slo.key, sp->slo.nkey, sp->shi.key,
			    sp->shi.nkey);
		if (c > 0 || (c == 0 && !(sp->slo.incl && sp->shi.incl)))
			sp->strs = false;
	}
	return sp->ints || sp->strs;
}

/* Make the span's lower (@lo) or upper limit exclude @it and what is past. */
void span_exclude_str(struct span *sp, const struct item *it, bool lo)
{
	char *buf = lo ? sp->lo_buf : sp->hi_buf;

	memcpy(buf, item_key(it), it->nkey);
	sbound_set(lo ? &sp->slo : &sp->shi, buf, it->nkey, false);
}

/* Copy the key of @it, seen under a lock, to the next entry of keys mode. */
void span_acc_copy_key(struct range_acc *acc, const struct item *it)
{
	struct store_key *k = &acc->keys[acc->n++];

	memcpy(k->key, item_key(it), it->nkey);
	k->nkey = it->nkey;
	k->binary = READ_ONCE(it->iflags) & ITEM_KEY_BINARY;
}

bool span_collect_fn(struct walk *w, struct item *it)
{
	struct range_acc *acc = w->arg;

	if (acc->keys) {
		span_acc_copy_key(acc, it);
	} else {
		item_get(it);
		acc->buf[acc->n++] = it;
	}
	return acc->n < acc->max;
}

bool span_count_fn(struct walk *w, struct item *it)
{
	(void)it;
	(*(uint64_t *)w->arg)++;
	return true;
}

int store_bound_cmp(const struct store_bound *a, const struct store_bound *b)
{
	int ra = a->kind == BOUND_MIN ? -1 : a->kind == BOUND_MAX ? 1 : 0;
	int rb = b->kind == BOUND_MIN ? -1 : b->kind == BOUND_MAX ? 1 : 0;

	if (ra || rb)
		return ra == rb ? 0 : (ra < rb ? -1 : 1);
	return key_compare(a->key, a->nkey, b->key, b->nkey);
}
