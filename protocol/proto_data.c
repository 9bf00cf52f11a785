// SPDX-License-Identifier: MIT
/*
 * proto_data.c - the data block reader: the value of a storage command,
 * copied into its item as it arrives (PROTO_DATA) and then handed to the
 * command's completion, or dropped when the item was refused
 * (PROTO_SWALLOW). Every command family that sends a data block uses it;
 * proto_process() runs it.
 */
#include "proto_cmd.h"

#include <assert.h>

void proto_data_begin(struct proto_conn *pc, struct item *it, size_t total,
		      void (*complete)(struct proto_conn *pc,
				       struct item *it))
{
	assert(total >= it->nbytes && total - it->nbytes <= sizeof(pc->data_end));
	pc->pending = it;
	pc->data_done = 0;
	pc->data_total = total;
	pc->data_complete = complete;
	pc->state = PROTO_DATA;
}

void proto_swallow_begin(struct proto_conn *pc, size_t total)
{
	if (pc->state == PROTO_CLOSED)
		return;
	pc->swallow_left = total;
	pc->state = PROTO_SWALLOW;
}

/* PROTO_DATA: copies what has arrived of the block. Return: bytes used. */
size_t proto_data(struct proto_conn *pc, const char *buf, size_t len)
{
	size_t n = pc->data_total - pc->data_done, done = pc->data_done, v = 0;
	struct item *it = pc->pending;

	if (n > len)
		n = len;
	if (done < it->nbytes) {
		v = it->nbytes - done < n ? it->nbytes - done : n;
		memcpy(item_value(it) + done, buf, v);
	}
	if (v < n)	/* past the value: its "\r\n" */
		memcpy(pc->data_end + (done + v - it->nbytes), buf + v, n - v);
	pc->data_done += n;
	if (pc->data_done == pc->data_total) {
		pc->pending = NULL;
		pc->state = PROTO_CMD;
		pc->data_complete(pc, it);
	}
	return n;
}

/* PROTO_SWALLOW: drops what has arrived of a refused block. */
size_t proto_swallow(struct proto_conn *pc, size_t len)
{
	size_t n = pc->swallow_left < len ? pc->swallow_left : len;

	pc->swallow_left -= n;
	if (!pc->swallow_left)
		pc->state = PROTO_CMD;
	return n;
}
