/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A process's place in the kernel's OOM killer's order: its own
 * /proc/self/oom_score_adj, written in one place for colocd (its own -900),
 * its executors (1000 a member's, 500 root's, written in the spawn child
 * before exec) and root's tools that load a model a member may have
 * written (coloc-profile, coloc-run: the killer's first choice, 1000,
 * since the model's declared weights can take memory no quota bounds).
 */
#ifndef COLOC_COMMON_OOM_FIRST_H
#define COLOC_COMMON_OOM_FIRST_H

/* the most a process can take: the OOM killer's first choice */
#define OOM_SCORE_FIRST 1000

/*
 * Write score (-1000 to 1000) to /proc/self/oom_score_adj. Returns 0 or
 * -errno (-EINVAL: score out of range). Async-signal-safe, allocates
 * nothing: a child of clone3 or fork may call it before exec.
 */
int oom_score_self(int score);
/* oom_score_self(OOM_SCORE_FIRST) when the effective uid is root; a failure said on stderr as PROG's. */
void oom_first_if_root(const char *prog);

#endif
