/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Small macros and helpers every part of coloc uses. */
#ifndef COLOC_COMMON_UTIL_H
#define COLOC_COMMON_UTIL_H

#include <stdint.h>

/* 0, but a compile error when e is true (the kernel's BUILD_BUG_ON_ZERO). */
#define COLOC_BUILD_BUG_ON_ZERO(e) ((int)sizeof(struct { int : (-!!(e)); }))

/*
 * Elements of an array; a pointer passed by mistake does not compile. The
 * kselftest headers bring their own plain one into the tests.
 */
#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)                                                                       \
	(sizeof(a) / sizeof((a)[0]) + COLOC_BUILD_BUG_ON_ZERO(__builtin_types_compatible_p( \
					      __typeof__(a), __typeof__(&(a)[0]))))
#endif

/*
 * uint64 sums and products that stop at UINT64_MAX instead of wrapping:
 * for bounds made of profile cells (a cell may be up to 1e15 ns, a model
 * 8192 layers), where "never" is the right answer to an absurd one.
 */
static inline uint64_t coloc_sat_add_u64(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

static inline uint64_t coloc_sat_mul_u64(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

#endif /* COLOC_COMMON_UTIL_H */
