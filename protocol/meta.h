/* SPDX-License-Identifier: MIT */
/*
 * meta.h - the flags of the meta commands (mg, ms, md, ma), read once by
 * one parser for all four, as memcached 1.6.45 reads them.
 *
 * A flag is a token whose first byte names it; some carry a token after
 * that byte (T30, Oabc). Each may appear once. The parser checks every
 * flag any meta command knows; each command then acts on those it uses,
 * in the order they came (a reply's flags follow the request's order).
 *
 * Private to protocol/. Synchronization: none; pure functions of the line.
 */
#ifndef ANCHORKV_META_H
#define ANCHORKV_META_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "item.h"
#include "parse.h"

#define META_MAX_TOKENS		20	/* the command, the key and flags */
#define META_OPAQUE_MAX		32	/* bytes of an O token, O included */

struct meta_req {
	/* the key, decoded when b */
	const char *key;
	size_t nkey;
	bool binary;			/* b */
	char keybuf[KEY_MAX_LENGTH];
	/* the flags, in the request's order */
	const struct token *flag;
	unsigned int nflag;
	uint32_t seen[4];		/* a bit per first byte 0..126 */
	/* what flags say */
	bool q, v, u, I, x;
	int32_t ttl_T, ttl_N, ttl_R;	/* T, N, R: client exptimes */
	uint64_t cas_C, cas_E;		/* C, E */
	uint32_t flags_F;		/* F */
	uint64_t delta_D, initial_J;	/* D, J */
	char mode;			/* M: the byte after it */
};

/* Whether flag @c came (its first byte). */
static inline bool meta_has(const struct meta_req *m, char c)
{
	unsigned int b = (unsigned char)c;

	return b < 127 && (m->seen[b / 32] >> (b % 32) & 1);
}

/* The index of flag @c among @m's flags, or -1. */
static inline int meta_index(const struct meta_req *m, char c)
{
	unsigned int i;

	for (i = 0; i < m->nflag; i++)
		if (m->flag[i].p[0] == c)
			return (int)i;
	return -1;
}

/*
 * The TTL of an item a command creates on a miss (N): memcached makes it
 * with none, then takes T's or N's, whichever came last among the flags
 * before index @before. Return: false for none, else true and *@ttl (the
 * client's exptime).
 */
static inline bool meta_created_ttl(const struct meta_req *m, int before,
				    int32_t *ttl)
{
	int iT = meta_index(m, 'T'), iN = meta_index(m, 'N');

	if (iT >= before)
		iT = -1;
	if (iN >= before)
		iN = -1;
	if (iT < 0 && iN < 0)
		return false;
	*ttl = iT > iN ? m->ttl_T : m->ttl_N;
	return true;
}

/* The first O token too long for a reply, or -1. */
static inline int meta_bad_opaque(const struct meta_req *m)
{
	unsigned int i;

	for (i = 0; i < m->nflag; i++)
		if (m->flag[i].p[0] == 'O' && m->flag[i].len > META_OPAQUE_MAX)
			return (int)i;
	return -1;
}

/**
 * meta_parse() - read the key and the flags of a meta command
 * @m:     filled in
 * @l:     the line: tok[0] the command, tok[1] the key, then @first
 *         and on the flags (ms has its length between)
 * @first: the first flag's token
 *
 * The key must be at most KEY_MAX_LENGTH bytes as sent; with b it is
 * decoded into @m->keybuf.
 *
 * Return: NULL, or the whole error line to answer (memcached's
 * CLIENT_ERROR strings, with "\r\n").
 */
const char *meta_parse(struct meta_req *m, const struct parse_line *l,
		       unsigned int first);

/* Whether a key can be sent as it is in a reply line: no space, NUL,
 * "\r" or "\n" in it. */
static inline bool meta_key_plain(const char *key, size_t nkey)
{
	size_t i;

	for (i = 0; i < nkey; i++)
		if (key[i] == ' ' || key[i] == '\0' || key[i] == '\r' ||
		    key[i] == '\n')
			return false;
	return true;
}

/* " <c><v>": a flag and its number, into a reply line. */
static inline char *meta_put_num(char *p, char c, uint64_t v)
{
	*p++ = ' ';
	*p++ = c;
	return fmt_u64(p, v);
}

/* " t<seconds left>", or " t-1" for an item that never expires. */
static inline char *meta_put_ttl(char *p, rel_time_t exp, rel_time_t now)
{
	if (exp)
		return meta_put_num(p, 't', (uint32_t)(exp - now));
	memcpy(p, " t-1", 4);
	return p + 4;
}

/*
 * What every meta command refuses once its flags are read: a NUL in a
 * key sent as it is (as the classic commands do). Return: NULL, or the
 * error line.
 */
static inline const char *meta_refused(const struct meta_req *m)
{
	if (!m->binary && !key_bytes_ok(m->key, m->nkey))
		return "CLIENT_ERROR bad command line format\r\n";
	return NULL;
}

/**
 * meta_put_key() - " k<key>" into a reply line, encoded (and " b") when
 * @binary
 * @p: where; room for 2 + B64_ENCODED_LEN(KEY_MAX_LENGTH) + 2 bytes
 *
 * Return: the end of what it wrote.
 */
char *meta_put_key(char *p, const char *key, size_t nkey, bool binary);

/**
 * meta_put_opaque() - " O<token>" into a reply line
 * @p: where; room for 1 + META_OPAQUE_MAX bytes
 * @t: the O token as sent
 *
 * Return: the end of what it wrote, or NULL when the token is over
 * META_OPAQUE_MAX bytes (the command answers the error instead).
 */
char *meta_put_opaque(char *p, const struct token *t);

/*
 * What a meta reply's flags report, gathered by the command; the emitter
 * below writes those the request asked for, in its order.
 */
#define META_ECHO(c)	(1u << ((c) - 'a'))	/* a lowercase flag */

struct meta_facts {
	unsigned int echo;	/* META_ECHO() of the flags besides O and k
				 * this command answers (of c f h l s t) */
	const char *key;	/* k: as listed (encoded when binary) */
	size_t nkey;
	bool binary;
	uint64_t cas;		/* c: 0 when cas is off */
	uint32_t size;		/* s */
	uint32_t flags;		/* f */
	uint32_t idle;		/* l: seconds since the last access */
	bool fetched;		/* h */
	/* t: the expiry the item had, and what T and N (when they apply)
	 * make of it for a t after them */
	rel_time_t exptime, now;
	bool apply_T, apply_N;
	rel_time_t exp_T, exp_N;
};

/**
 * meta_put_flags() - the flags of a meta reply, in the request's order
 * @p: where; room for the command's longest line (each flag comes once:
 *     one key, one opaque, numbers of at most 20 digits)
 * @m: the request (its flags; an ms keeps them past its data block and
 *     passes a meta_req holding those alone)
 * @f: what they report
 *
 * O and k always; the others when @f->echo names them. T and N report
 * nothing but change the expiry a later t reports.
 *
 * Return: the end of what was written, or NULL when an O token is longer
 * than META_OPAQUE_MAX (the command answers "CLIENT_ERROR opaque token
 * too long").
 */
char *meta_put_flags(char *p, const struct meta_req *m,
		     const struct meta_facts *f);

#endif /* ANCHORKV_META_H */
