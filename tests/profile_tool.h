/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the tests of bin/coloc-profile share: a tiny model (two convolutions
 * and a residual add) written to a file, and coloc-profile run to its end.
 */
#ifndef COLOC_TESTS_PROFILE_TOOL_H
#define COLOC_TESTS_PROFILE_TOOL_H

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include "testutil.h"

/* four layers: two convolutions and a residual add */
#define PROFILE_TINY_MODEL_TEXT                                                             \
	"model tiny\n"                                                                      \
	"seed 1\n"                                                                          \
	"macs 163840\n"                                                                     \
	"params 640\n"                                                                      \
	"input data shape=1x8x16x16\n"                                                      \
	"conv c1 out=8 k=3 pad=1 act=relu\n"                                                \
	"conv c2 out=8 k=1\n"                                                               \
	"add a in=c2,c1\n"                                                                  \
	"end\n"

static const char profile_tiny_model[] = PROFILE_TINY_MODEL_TEXT;

/* profile_tiny_model into path; 0 or -1. */
static inline int profile_tool_write_tiny(const char *path)
{
	FILE *f = fopen(path, "w");
	size_t len = strlen(profile_tiny_model);
	int ok;

	if (!f)
		return -1;
	ok = fwrite(profile_tiny_model, 1, len, f) == len;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* coloc-profile with args, run until it exits (run->status, run->output). */
static inline int profile_tool_run(const char *const *args, struct tu_child *run)
{
	char bin[PATH_MAX];
	int ret = tu_child_start(tu_bin("coloc-profile", bin, sizeof(bin)), args, run);

	return ret ? ret : tu_child_finish(run);
}

#endif /* COLOC_TESTS_PROFILE_TOOL_H */
