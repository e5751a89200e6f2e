/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Small macros every part of coloc uses. */
#ifndef COLOC_COMMON_UTIL_H
#define COLOC_COMMON_UTIL_H

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

#endif /* COLOC_COMMON_UTIL_H */
