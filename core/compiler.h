/* SPDX-License-Identifier: MIT */
/*
 * compiler.h - the few compiler helpers every part of anchorkv uses.
 *
 * Synchronization: none; these are macros.
 */
#ifndef ANCHORKV_COMPILER_H
#define ANCHORKV_COMPILER_H

#include <stddef.h>

/**
 * container_of() - get the structure that embeds a member
 * @ptr:    pointer to the embedded member
 * @type:   type of the containing structure
 * @member: name of the member inside @type
 *
 * Return: pointer to the structure of @type that holds *@ptr.
 *
 * Context: any.
 */
#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

/* Inlined even at -O0 and -O1: a helper whose constant argument (a NULL
 * callback table) must fold away. glibc's <sys/cdefs.h> has the same. */
#ifndef __always_inline
#define __always_inline	inline __attribute__((always_inline))
#endif

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* Relaxed single loads and stores of shared words (no tearing, no fusing). */
#define READ_ONCE(x)	__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

#endif /* ANCHORKV_COMPILER_H */
