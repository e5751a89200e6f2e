/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the tests of bin/coloc-profile share: a tiny model (two convolutions
 * and a residual add) written to a file, with two weights files that differ
 * in one parameter, and coloc-profile run to its end.
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
	return tu_write_file(path, profile_tiny_model, strlen(profile_tiny_model));
}

/*
 * profile_tiny_model into model, its seed's weights (coloc-run
 * --save-weights) into w1, and into w2 the same with the last parameter 1.0f:
 * 0, or -1 with what failed in out (len bytes).
 */
static inline int profile_tool_write_tiny_weights(const char *model, const char *w1, const char *w2,
						  char *out, size_t len)
{
	char cmd[2048], bin[PATH_MAX];
	FILE *f;
	int ok;

	if (profile_tool_write_tiny(model)) {
		snprintf(out, len, "cannot write %s", model);
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "%s '%s' --save-weights '%s' && cp '%s' '%s'",
		 tu_bin("coloc-run", bin, sizeof(bin)), model, w1, w1, w2);
	if (tu_run(cmd, out, len))
		return -1;
	snprintf(out, len, "cannot change the last parameter of %s", w2);
	f = fopen(w2, "r+");
	if (!f)
		return -1;
	ok = fseek(f, -4, SEEK_END) == 0 && fwrite("\0\0\200\77", 1, 4, f) == 4; /* 1.0f */
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
