// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A tenant's cpu controller (cgroup.h): its folder's cpu.idle is 1 while
 * it holds no core, so that threads of its executors that run outside its
 * blocks (a member's crafted model may start any number) take only time
 * the other tenants of this colocd leave; 0 while a block of it runs, at
 * the default weight; 0 at the lowest weight while only a late block of
 * it runs (serving_idle.c). A kernel without cpu.idle (before 5.15) gets the
 * lowest cpu.shares (v1) or cpu.weight (v2) for idle and late. Each idle
 * write goes through a file kept open (the rare late one opens it), and
 * only when the state changes. Also reads
 * the tenant's CPU pressure (PSI), the time its threads waited for a CPU.
 * docs/security-executor.md, "Threads outside a block".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include "cgroup.h"

static int open_in(const char *dir, const char *file, int flags)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return open(path, flags | O_CLOEXEC);
}

/* The kernel's CFS weight of each nice level, -20 to 19 (kernel/sched/core.c). */
static const int nice_weight[40] = {
	88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916,
	9548,  7620,  6100,  4904,  3906,  3121,  2501,  1991,  1586,  1277,
	1024,  820,   655,   526,   423,   335,   272,   215,   172,   137,
	110,   87,    70,    56,    45,    36,    29,    23,    18,    15,
};

/*
 * colocd-PID competes (v1: with colocd and the host's processes in
 * colocd's own cpu cgroup) at colocd's own nice, as its executors did when
 * they stayed in colocd's cpu cgroup: a colocd at nice 19 keeps its
 * tenants at 19.
 */
static void weigh_as_colocd(const struct cgroup_root *r)
{
	char val[16];
	int nice, fd;

	errno = 0;
	nice = getpriority(PRIO_PROCESS, 0);
	if ((nice == -1 && errno) || nice < -20 || nice > 19)
		return;
	if (r->mode == CGROUP_V2)
		snprintf(val, sizeof(val), "%d", nice);
	else
		snprintf(val, sizeof(val), "%d", nice_weight[nice + 20]);
	fd = open_in(r->dir[r->cpu_hier],
		     r->mode == CGROUP_V2 ? "cpu.weight.nice" : "cpu.shares", O_WRONLY);
	if (fd < 0)
		return;
	/* refused: the default weight stays, as for a colocd at nice 0 */
	(void)!write(fd, val, strlen(val));
	close(fd);
}

void cgroup_cpu_root_open(struct cgroup_root *r)
{
	int fd;

	r->idle_file[0] = r->late_file[0] = '\0';
	if (r->cpu_hier < 0)
		return;
	weigh_as_colocd(r);
	fd = open_in(r->dir[r->cpu_hier], "cpu.idle", O_RDONLY);
	if (fd >= 0) {
		close(fd);
		snprintf(r->idle_file, sizeof(r->idle_file), "cpu.idle");
		snprintf(r->idle_on, sizeof(r->idle_on), "1");
		snprintf(r->idle_off, sizeof(r->idle_off), "0");
		snprintf(r->late_file, sizeof(r->late_file), "%s",
			 r->mode == CGROUP_V2 ? "cpu.weight" : "cpu.shares");
		snprintf(r->late_on, sizeof(r->late_on), r->mode == CGROUP_V2 ? "1" : "2");
		snprintf(r->late_off, sizeof(r->late_off), r->mode == CGROUP_V2 ? "100" : "1024");
	} else if (r->mode == CGROUP_V2) {
		snprintf(r->idle_file, sizeof(r->idle_file), "cpu.weight");
		snprintf(r->idle_on, sizeof(r->idle_on), "1");
		snprintf(r->idle_off, sizeof(r->idle_off), "100");
	} else {
		snprintf(r->idle_file, sizeof(r->idle_file), "cpu.shares");
		snprintf(r->idle_on, sizeof(r->idle_on), "2");
		snprintf(r->idle_off, sizeof(r->idle_off), "1024");
	}
}

const char *cgroup_cpu_describe(const struct cgroup_root *r, char *buf, size_t len)
{
	if (r->cpu_hier < 0)
		snprintf(buf, len,
			 "no cpu controller (%s): a tenant's threads outside its blocks "
			 "compete with the others' at equal weight",
			 r->cpu_missing[0] ? r->cpu_missing : "none");
	else if (!strcmp(r->idle_file, "cpu.idle"))
		snprintf(buf, len, "cpu.idle 1 while a tenant holds no core");
	else
		snprintf(buf, len,
			 "%s %s while a tenant holds no core (no cpu.idle, Linux < 5.15: "
			 "its threads still take a little of the others' time)",
			 r->idle_file, r->idle_on);
	return buf;
}

int cgroup_cpu_tenant_open(const struct cgroup_root *r, struct cgroup_tenant *t,
			   struct coloc_err *err)
{
	int ret;

	t->idle = -1;
	if (r->cpu_hier >= 0 && r->cpu_hier < t->nr && r->idle_file[0]) {
		t->idle_fd = open_in(t->dir[r->cpu_hier], r->idle_file, O_WRONLY);
		if (t->idle_fd < 0)
			return coloc_err_set(err, -errno, "%s/%s: %s", t->dir[r->cpu_hier],
					     r->idle_file, strerror(errno));
		/* from its first executor on, until its first block */
		ret = cgroup_tenant_set_idle(t, r, true, err);
		if (ret < 0)
			return ret;
	}
	if (t->kill_dir[0])
		t->pressure_fd = open_in(t->kill_dir, "cpu.pressure", O_RDONLY);
	return 0;
}

void cgroup_cpu_tenant_close(struct cgroup_tenant *t)
{
	if (!t->nr) /* never made (zeroed): its fds are not its */
		return;
	if (t->idle_fd >= 0)
		close(t->idle_fd);
	if (t->pressure_fd >= 0)
		close(t->pressure_fd);
	t->idle_fd = t->pressure_fd = -1;
}

int cgroup_tenant_set_idle(struct cgroup_tenant *t, const struct cgroup_root *r, bool idle,
			   struct coloc_err *err)
{
	const char *val = idle ? r->idle_on : r->idle_off;
	size_t len = strlen(val);
	ssize_t n;

	if (t->idle_fd < 0 || t->idle == (int)idle)
		return 0;
	/* a pending signal may interrupt a cgroup write: write again */
	do
		n = pwrite(t->idle_fd, val, len, 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)len)
		return coloc_err_set(err, n < 0 ? -errno : -EIO, "writing '%s' to %s: %s", val,
				     r->idle_file, n < 0 ? strerror(errno) : "short write");
	t->idle = idle;
	t->late = 0; /* a cpu.idle write sets the weight: the idle one, or the default */
	return 1;
}

int cgroup_tenant_set_late(struct cgroup_tenant *t, const struct cgroup_root *r, bool late,
			   struct coloc_err *err)
{
	const char *val = late ? r->late_on : r->late_off;
	size_t len = strlen(val);
	ssize_t n;
	int fd;

	if (!r->late_file[0] || r->cpu_hier < 0 || r->cpu_hier >= t->nr || t->late == (int)late)
		return 0;
	fd = open_in(t->dir[r->cpu_hier], r->late_file, O_WRONLY);
	if (fd < 0)
		return coloc_err_set(err, -errno, "%s/%s: %s", t->dir[r->cpu_hier], r->late_file,
				     strerror(errno));
	do
		n = pwrite(fd, val, len, 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)len)
		n = n < 0 ? -errno : -EIO;
	close(fd);
	if (n < 0)
		return coloc_err_set(err, (int)n, "writing '%s' to %s: %s", val, r->late_file,
				     n == -EIO ? "short write" : strerror((int)-n));
	t->late = late;
	return 1;
}

int cgroup_tenant_cpu_wait(const struct cgroup_tenant *t, uint64_t *ns)
{
	char buf[256], *total;
	ssize_t n;

	if (t->pressure_fd < 0)
		return -ENOENT;
	n = pread(t->pressure_fd, buf, sizeof(buf) - 1, 0);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	/* "some avg10=... avg60=... avg300=... total=US" first */
	total = strstr(buf, "total=");
	if (strncmp(buf, "some ", 5) || !total)
		return -EINVAL;
	*ns = strtoull(total + 6, NULL, 10) * 1000;
	return 0;
}
