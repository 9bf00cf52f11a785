// SPDX-License-Identifier: MIT
/*
 * store_update.c - the point operations that build a new version of the
 * item they hold and commit it over that version (store_commit()), again
 * when it changed meanwhile: md with I or x (the meta delete that keeps
 * the item), incr and decr.
 */
#include "store_commit.h"

#include <errno.h>
#include <stdio.h>

#include "number.h"

/*
 * Read the value of @it as memcached's safe_strtoull() reads it: leading
 * white space, an optional sign, decimal digits, then white space, a NUL or
 * the end of the value. No digits or an overflow is not a number; a minus
 * sign is refused only when the negated result would be negative as a
 * signed 64-bit number, as there.
 */
static bool item_value_u64(const struct item *it, uint64_t *out)
{
	const char *end = item_value_const(it) + it->nbytes;
	const char *p;
	bool minus;
	uint64_t v;

	p = number_scan(item_value_const(it), end, UINT64_MAX, &minus, &v);
	if (!p || (p < end && *p != '\0' && !number_isspace(*p)))
		return false;
	if (minus) {
		v = (uint64_t)0 - v;
		if ((int64_t)v < 0)
			return false;
	}
	*out = v;
	return true;
}

enum store_result store_meta_delete(struct store *s, const struct store_del *d)
{
	unsigned int tries;
	struct keyref k;

	if (!keyref_valid(d->nkey))
		return STORE_NOT_FOUND;
	keyref_init(&k, d->key, d->nkey);
	if (!d->stale && !d->remove_value) {
		struct shard *sh = shard_of(s, &k);
		enum store_result ret = STORE_STORED;
		struct item *it;
		DEAD_LIST(dead);

		shard_lock(sh);
		it = shard_find_live_locked(s, sh, &k, store_now(s), &dead,
					    NULL);
		if (!it)
			ret = STORE_NOT_FOUND;
		else if (d->has_cas && it->cas != d->cas)
			ret = STORE_EXISTS;
		else
			shard_unlink_locked(s, sh, it, &dead);
		shard_unlock(sh);
		items_release(&dead);
		return ret;
	}
	for (tries = 0; tries < REPLACE_RETRIES; tries++) {
		struct item *old = store_hold(s, &k), *it;
		enum store_result ret;
		uint32_t nbytes;
		struct commit c;

		if (!old)
			return STORE_NOT_FOUND;
		if (d->has_cas && old->cas != d->cas) {
			item_put(old);
			return STORE_EXISTS;
		}
		/* the new version: the value emptied (x) or copied (I) */
		nbytes = d->remove_value ? 0 : old->nbytes;
		/* x's item has T's expiry or none, as memcached makes it */
		it = item_alloc(k.key, k.nkey,
				d->remove_value ? d->flags : item_flags(old),
				d->set_ttl ? d->ttl : d->remove_value ? 0 :
				item_exptime(old), nbytes);
		if (!it) {
			item_put(old);
			return STORE_NO_MEMORY;
		}
		memcpy(item_value(it), item_value(old), nbytes);
		if (d->stale)
			it->iflags |= ITEM_STALE;
		/* the flags of a held item change under its shard lock */
		it->iflags |= READ_ONCE(old->iflags) &
			      (ITEM_KEY_BINARY |
			       (d->remove_value ? 0 : ITEM_FETCHED));
		c = (struct commit){ .it = it, .op = STORE_OP_CAS,
				     .req_cas = old->cas,
				     .keep_exptime = !d->set_ttl &&
						     !d->remove_value,
				     .keep_cas = !d->stale,
				     .keep_time = !d->remove_value,
				     .has_cas_in = d->has_cas_in,
				     .cas_in = d->cas_in };
		item_put(old);
		ret = store_commit(s, &c);
		if (ret == STORE_STORED || ret == STORE_NO_MEMORY)
			return ret;
		if (ret == STORE_NOT_FOUND)
			return STORE_NOT_FOUND;
		/* else the old item changed: again */
	}
	return STORE_NO_MEMORY;
}

int store_incr_decr(struct store *s, struct store_arith *a)
{
	unsigned int tries;
	struct keyref k;

	if (!keyref_valid(a->nkey))
		return -ENOENT;
	keyref_init(&k, a->key, a->nkey);
	for (tries = 0; tries < REPLACE_RETRIES; tries++) {
		struct item *old = store_hold(s, &k), *it;
		enum store_result res;
		struct commit c;
		char text[24];
		uint64_t v;
		int len, ret;

		if (!old)
			return -ENOENT;
		/* memcached's order: an empty value, the cas, the number */
		if (!old->nbytes || (a->has_cas && old->cas != a->cmp_cas)) {
			ret = old->nbytes ? -EEXIST : -EINVAL;
			item_put(old);
			return ret;
		}
		if (!item_value_u64(old, &v)) {
			item_put(old);
			return -EINVAL;
		}
		if (a->incr)
			v += a->delta;		/* wraps at 2^64 */
		else
			v = a->delta > v ? 0 : v - a->delta;
		len = snprintf(text, sizeof(text), "%llu",
			       (unsigned long long)v);
		it = item_alloc(k.key, k.nkey, item_flags(old),
				a->set_ttl ? a->ttl : item_exptime(old),
				(uint32_t)len);
		if (!it) {
			item_put(old);
			return -ENOMEM;
		}
		memcpy(item_value(it), text, (size_t)len);
		/* memcached rewrites a number that does not grow in place:
		 * the item's marks (fetched, stale, win, binary key) and its
		 * last access stay (a grown one is a new item) */
		c = (struct commit){ .it = it, .op = STORE_OP_CAS,
				     .req_cas = old->cas,
				     .keep_exptime = !a->set_ttl,
				     .keep_time = (uint32_t)len <= old->nbytes,
				     .has_cas_in = a->has_cas_in,
				     .cas_in = a->cas_in };
		if (c.keep_time)
			it->iflags |= READ_ONCE(old->iflags) &
				      (ITEM_FETCHED | ITEM_STALE | ITEM_WIN |
				       ITEM_KEY_BINARY);
		item_put(old);
		res = store_commit(s, &c);
		if (res == STORE_STORED) {
			a->value = v;
			a->cas = c.cas;
			a->exptime = c.old_exptime;
			return 0;
		}
		if (res == STORE_NOT_FOUND)
			return -ENOENT;
		if (res != STORE_EXISTS)
			return -ENOMEM;
		/* else the old item changed: again */
	}
	return -ENOMEM;
}
