/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * For the tests of bench-qos's awk scripts (tools/bench-qos-*.awk): one run
 * of a script as bench-qos runs it, awk -f with its -v settings, its input
 * on stdin.
 */
#ifndef COLOC_TESTS_BENCH_QOS_AWK_H
#define COLOC_TESTS_BENCH_QOS_AWK_H

#include <stdio.h>
#include <stdlib.h>
#include "testutil.h"

/*
 * tools/SCRIPT with "-v NAME=VALUE" settings vars on input (a printf format:
 * lines end in \\n); its output and errors in out, its exit status returned.
 */
static inline int bench_qos_awk(const char *script, const char *vars, const char *input,
				char *out, size_t len)
{
	const char *root = getenv("COLOC_ROOT");
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), "printf '%s' | awk %s -f %s/tools/%s", input, vars,
		 root ? root : ".", script);
	return tu_run(cmd, out, len);
}

#endif
