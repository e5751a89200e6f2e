/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Driving bin/coloc-stress from another program: started once under
 * --control on a set of cores, its level changed on stdin (each change
 * acknowledged on its stdout), stopped by EOF, after which it reports the
 * bandwidth it achieved at each level. Used by coloc-calibrate-level to
 * take the PMU level model's points and by coloc-profile to measure layers
 * under stress.
 */
#ifndef COLOC_STRESS_CTL_H
#define COLOC_STRESS_CTL_H

#include <stdio.h>
#include <sys/types.h>
#include "error.h"

#define STRESS_CTL_LEVELS 101 /* levels 0..100 */

/*
 * Sees each line coloc-stress prints but the acknowledgements: its banner
 * until its load is on, then its report once stopped.
 */
typedef void (*stress_ctl_line_fn)(void *ctx, const char *line);

struct stress_ctl {
	pid_t pid;
	FILE *out; /* its stdout */
	int in_fd; /* its stdin: the levels */
	stress_ctl_line_fn on_line; /* NULL: its lines are only parsed */
	void *ctx; /* on_line's */
	double gbps[STRESS_CTL_LEVELS]; /* after stop: rate at each level; < 0: none reported */
};

/*
 * Starts bin (coloc-stress) on cores (a CPU list) with kind ("llc" or
 * "membw") and fill ("spin" or "sleep") at level 0, with those cores as its
 * affinity whatever the calling thread's is, and waits until its load is
 * on. on_line (may be NULL) is called with ctx on its other lines. 0 or
 * -errno with err saying why (-EINVAL: cores is not a CPU list).
 */
int stress_ctl_start(struct stress_ctl *s, const char *bin, const char *cores, const char *kind,
		     const char *fill, stress_ctl_line_fn on_line, void *ctx,
		     struct coloc_err *err);
/* Sets the level (0..100) and waits for the acknowledgement. 0 or -errno. */
int stress_ctl_set_level(struct stress_ctl *s, int level, struct coloc_err *err);
/* Stops it and fills gbps[] from its report. 0, or -ECHILD when it failed. */
int stress_ctl_stop(struct stress_ctl *s, struct coloc_err *err);

#endif /* COLOC_STRESS_CTL_H */
