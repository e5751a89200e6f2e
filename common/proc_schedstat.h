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

/* Run time and run delay summed over some threads of a process, and which threads they were. */
struct proc_schedstat_sum {
	uint64_t run_ns, delay_ns;
	uint64_t threads_sig; /* an order-free hash of their ids: another set, another value */
	/*
	 * bit i: one of them, runnable at the read (state R in its stat), is
	 * allowed on cpus[i] (those past the 64th on bit 63); cpus NULL: 0
	 */
	uint64_t allowed;
	int nr_threads;
};

/*
 * The sums of process pid's threads allowed on some CPU of cpus[0..nr_cpus)
 * (cpus NULL: all of them) into *sum. 0; -E2BIG where it has more than max_threads threads
 * (the others would go uncounted: a process of very many threads costs its
 * reader no more); -ESRCH where it has none; or -errno.
 */
int proc_schedstat_process_sum(pid_t pid, int max_threads, const int *cpus, int nr_cpus,
			       struct proc_schedstat_sum *sum);

/* The run delay of process pid's threads, summed (proc_schedstat_process_sum's returns). */
int proc_schedstat_process_delay(pid_t pid, int max_threads, uint64_t *delay_ns);

#endif /* COLOC_COMMON_PROC_SCHEDSTAT_H */
