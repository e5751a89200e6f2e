// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * proc_schedstat.h: "RUN_NS DELAY_NS TIMESLICES", one line a thread; a
 * process's threads found by listing its task folder.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "proc_schedstat.h"

int proc_schedstat_read(const char *path, uint64_t *run_ns, uint64_t *delay_ns)
{
	char buf[128];
	uint64_t run, delay;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	if (sscanf(buf, "%" SCNu64 " %" SCNu64, &run, &delay) != 2)
		return -EINVAL;
	if (run_ns)
		*run_ns = run;
	if (delay_ns)
		*delay_ns = delay;
	return 0;
}

/* splitmix64's finaliser: summed over the ids, no subset of other ids adds up to the same */
static uint64_t tid_hash(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Whether the thread whose stat file is at path is runnable now (state R). */
static bool runnable(const char *path)
{
	char buf[512], *close_paren;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* "TID (COMM) S ...": the name may hold spaces and parentheses, the last ')' ends it */
	close_paren = strrchr(buf, ')');
	return close_paren && close_paren[1] == ' ' && close_paren[2] == 'R';
}

/*
 * Whether thread tid may run on one of cpus[] (cpus NULL: any); if so and
 * it is runnable (its stat at stat_path), which, into *allowed.
 */
static bool allowed_on(pid_t tid, const int *cpus, int nr_cpus, const char *stat_path,
		       uint64_t *allowed)
{
	uint64_t bits = 0;
	cpu_set_t mask;

	if (!cpus)
		return true;
	if (sched_getaffinity(tid, sizeof(mask), &mask))
		return false;
	for (int i = 0; i < nr_cpus; i++)
		if (cpus[i] >= 0 && cpus[i] < CPU_SETSIZE && CPU_ISSET(cpus[i], &mask))
			bits |= 1ull << (i < 63 ? i : 63);
	if (bits && runnable(stat_path))
		*allowed |= bits;
	return bits != 0;
}

int proc_schedstat_process_sum(pid_t pid, int max_threads, const int *cpus, int nr_cpus,
			       struct proc_schedstat_sum *sum)
{
	char dir[64], path[128], stat_path[128];
	struct proc_schedstat_sum s = { 0 };
	struct dirent *e;
	uint64_t run, delay;
	int seen = 0, ret = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);

		if (tid <= 0)
			continue;
		if (++seen > max_threads) {
			ret = -E2BIG;
			break;
		}
		snprintf(path, sizeof(path), "%s/%.16s/schedstat", dir, e->d_name);
		snprintf(stat_path, sizeof(stat_path), "%s/%.16s/stat", dir, e->d_name);
		/* a thread that ended since the listing has no time left to add */
		if (!allowed_on(tid, cpus, nr_cpus, stat_path, &s.allowed) ||
		    proc_schedstat_read(path, &run, &delay))
			continue;
		s.run_ns += run;
		s.delay_ns += delay;
		s.threads_sig += tid_hash((uint64_t)tid);
		s.nr_threads++;
	}
	closedir(d);
	if (ret)
		return ret;
	if (!seen)
		return -ESRCH;
	*sum = s;
	return 0;
}

int proc_schedstat_process_delay(pid_t pid, int max_threads, uint64_t *delay_ns)
{
	struct proc_schedstat_sum s;
	int ret = proc_schedstat_process_sum(pid, max_threads, NULL, 0, &s);

	if (ret)
		return ret;
	if (!s.nr_threads)
		return -ESRCH;
	*delay_ns = s.delay_ns;
	return 0;
}
