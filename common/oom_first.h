/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The kernel's OOM killer's first choice: this process's oom_score_adj set
 * to 1000, as colocd sets every member's executor. Root's tools that load a
 * model a member may have written (coloc-profile, coloc-run) run so, since
 * the model's declared weights can take memory no quota bounds.
 */
#ifndef COLOC_COMMON_OOM_FIRST_H
#define COLOC_COMMON_OOM_FIRST_H

/* Write 1000 to /proc/self/oom_score_adj. Returns 0 or -errno. */
int oom_first_self(void);
/* oom_first_self() when the effective uid is root; a failure said on stderr as PROG's. */
void oom_first_if_root(const char *prog);

#endif
