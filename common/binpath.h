/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Where another coloc binary is, for the tools and tests that run one. */
#ifndef COLOC_COMMON_BINPATH_H
#define COLOC_COMMON_BINPATH_H

#include <stddef.h>

/*
 * Writes into buf the path of the coloc binary name: $COLOC_BIN/name when
 * COLOC_BIN is set (make check sets it); otherwise the one beside the running
 * executable (bin/ holds every binary), or the bin/ of the build tree a test
 * binary belongs to (build/obj/tests -> bin, build/san/tests -> build/san/bin).
 * 0 when that file is executable, -ENOENT or -ENAMETOOLONG otherwise.
 */
int binpath_find(const char *name, char *buf, size_t len);

#endif /* COLOC_COMMON_BINPATH_H */
