// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * proc_schedstat.h: "RUN_NS DELAY_NS TIMESLICES", one line a thread; a
 * process's threads found by listing its task folder.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
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

int proc_schedstat_process_delay(pid_t pid, int max_threads, uint64_t *delay_ns)
{
	char dir[64], path[128];
	struct dirent *e;
	uint64_t sum = 0, delay;
	int read_any = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	d = opendir(dir);
	if (!d)
		return -errno;
	while (read_any < max_threads && (e = readdir(d))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "%s/%.16s/schedstat", dir, e->d_name);
		/* a thread that ended since the listing has no delay left to add */
		if (proc_schedstat_read(path, NULL, &delay))
			continue;
		sum += delay;
		read_any++;
	}
	closedir(d);
	if (!read_any)
		return -ESRCH;
	*delay_ns = sum;
	return 0;
}
