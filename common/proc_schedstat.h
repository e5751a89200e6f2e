/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The reader of /proc/PID/task/TID/schedstat: a thread's time on a CPU
 * and its run delay, the time it was runnable but waited for one (the
 * kernel's sched_info, kept whatever the cgroup version and without PSI).
 */
#ifndef COLOC_COMMON_PROC_SCHEDSTAT_H
#define COLOC_COMMON_PROC_SCHEDSTAT_H

#include <stdint.h>
#include <sys/types.h>

/* The schedstat file at path: run time and run delay in ns (either may be NULL). 0 or -errno. */
int proc_schedstat_read(const char *path, uint64_t *run_ns, uint64_t *delay_ns);

/*
 * The run delay of process pid's threads, summed over at most max_threads
 * of them (the others are not read: a process of very many threads costs
 * its reader no more), into *delay_ns. 0 or -errno where pid has none.
 */
int proc_schedstat_process_delay(pid_t pid, int max_threads, uint64_t *delay_ns);

#endif /* COLOC_COMMON_PROC_SCHEDSTAT_H */
