/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The one reader of /proc/PID/stat and /proc/PID/task/TID/stat: the fields
 * after the command name (which may hold spaces and parentheses), numbered
 * as proc(5) numbers them.
 */
#ifndef COLOC_COMMON_PROC_STAT_H
#define COLOC_COMMON_PROC_STAT_H

/* proc(5)'s numbers of the fields coloc reads */
enum {
	PROC_STAT_FLAGS = 9,
	PROC_STAT_UTIME = 14, /* in clock ticks (sysconf(_SC_CLK_TCK)) */
	PROC_STAT_STIME = 15,
	PROC_STAT_PROCESSOR = 39, /* the CPU it last ran on */
};

/*
 * The stat file at path: its state letter into *state (may be NULL) and
 * fields 4 to nr - 1 into field[4] to field[nr - 1] (a negative field reads
 * as its two's complement). 0, -errno if it cannot be read, or -EINVAL if it
 * has fewer fields.
 */
int proc_stat_read(const char *path, char *state, unsigned long long *field, int nr);

/* CPU time (utime + stime) in ns of the process or thread whose stat file is path; 0 or -errno. */
int proc_stat_cpu_ns(const char *path, unsigned long long *ns);

#endif /* COLOC_COMMON_PROC_STAT_H */
