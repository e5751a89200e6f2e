/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A test's own colocd serving models/mobilenet_v2.model (the real binary,
 * as root): its socket, log and block log in a directory of its own, its
 * BPF pins under a name of the test's pid, the model's quick profile in the
 * test's cache, and optionally tests/hostile_executor.c as its --executor;
 * all stopped and removed at the end. What the member, hostile and sandbox
 * tests' fixtures share; they keep their own clients and checks.
 */
#ifndef COLOC_TESTS_OWN_COLOCD_H
#define COLOC_TESTS_OWN_COLOCD_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct own_colocd {
	char dir[64], sock[128], pin[128], log[128], blocks[128];
	char executor[128]; /* the hostile executor's link, "" without one */
	char model[PATH_MAX];
	const char *cache_dir;
	pid_t pid; /* colocd's, 0 until started */
};

/*
 * Readies d for a colocd named name (in /tmp/coloc-NAME-XXXXXX and
 * /sys/fs/bpf/coloc-NAME-test-PID), the model profiled into cache_dir, with
 * the hostile executor when hostile. 0; 1 when the test is to be skipped
 * (not root, no model: why says so); -1 on a failure, which why names.
 */
int own_colocd_prepare(struct own_colocd *d, const char *name, const char *cache_dir, bool hostile,
		       char *why, size_t len);
/*
 * Starts colocd with --cache-dir, with the hostile executor's --executor
 * and --block-log, and extra (NULL-terminated; 16 flags in all at most, the
 * rest left out). Its pid, or -1 if it did not answer a ping.
 */
pid_t own_colocd_start(struct own_colocd *d, const char *const *extra);
/* Stops colocd if it runs and removes the directory; 0, or -1 if something was left. */
int own_colocd_finish(struct own_colocd *d);

#endif /* COLOC_TESTS_OWN_COLOCD_H */
