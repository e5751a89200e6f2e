// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Test helpers that read what /proc says of a process (declared in
 * testutil.h): its threads and their states, its CPU time, the steal of
 * the vCPUs, a field of its status file, its cgroups, its threads'
 * voluntary context switches, and its peak RSS reset.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc_stat.h"
#include "proc_tasks.h"
#include "testutil.h"

struct count_threads {
	bool (*pred)(pid_t pid, pid_t tid, void *ctx);
	void *ctx;
	int n;
};

static void count_thread_if(pid_t pid, pid_t tid, void *ctx)
{
	struct count_threads *c = ctx;

	c->n += !c->pred || c->pred(pid, tid, c->ctx);
}

int tu_count_threads(pid_t pid, bool (*pred)(pid_t pid, pid_t tid, void *ctx), void *ctx, int *nr)
{
	struct count_threads c = { .pred = pred, .ctx = ctx };
	int all = tu_tasks_each(pid, count_thread_if, &c);

	if (nr)
		*nr = all < 0 ? 0 : all;
	return all < 0 ? -1 : c.n;
}

char tu_thread_state(pid_t pid, pid_t tid)
{
	char path[96], state;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	return proc_stat_read(path, &state, NULL, 0) ? '?' : state;
}

int tu_proc_cpu_ns(pid_t pid, __u64 *ns)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	return proc_stat_cpu_ns(path, ns);
}

int tu_task_cpu_ns(pid_t pid, pid_t tid, __u64 *ns)
{
	char path[96];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	return proc_stat_cpu_ns(path, ns);
}

int tu_steal_ns(__u64 *ns)
{
	unsigned long long v[8];
	FILE *f = fopen("/proc/stat", "r");
	int n;

	if (!f)
		return -errno;
	/* cpu user nice system idle iowait irq softirq steal */
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n != 8)
		return -EINVAL;
	*ns = v[7] * (1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK));
	return 0;
}

/* tu_proc_status_field on the status file at path (a process's or a thread's). */
static int status_field_at(const char *path, const char *field, char *val, size_t len)
{
	char line[512];
	size_t n = strlen(field);
	int ret = -1;
	FILE *f;

	if (len)
		val[0] = '\0';
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (ret && fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':') {
			char *v = line + n + 1;

			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = '\0';
			snprintf(val, len, "%s", v);
			ret = 0;
		}
	fclose(f);
	return ret;
}

int tu_proc_status_field(pid_t pid, const char *field, char *val, size_t len)
{
	char path[64];

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	return status_field_at(path, field, val, len);
}

/* Whether list (v1's "cpu,cpuacct", v2's "") names ctl ("" for v2). */
static bool cgroup_controllers_have(const char *list, const char *ctl)
{
	size_t n = strlen(ctl);

	if (!n)
		return !*list;
	for (const char *p = list;; p++) {
		if (!strncmp(p, ctl, n) && (p[n] == ',' || !p[n]))
			return true;
		p = strchr(p, ',');
		if (!p)
			return false;
	}
}

int tu_proc_cgroup(pid_t pid, const char *ctl, char *dir, size_t len)
{
	char path[64], line[PATH_MAX];
	int r = -1;
	FILE *f;

	dir[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	/* hierarchy-ID:controllers:path */
	while (r && fgets(line, sizeof(line), f)) {
		char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;

		if (!b)
			continue;
		*b = '\0';
		if (!cgroup_controllers_have(a + 1, ctl))
			continue;
		b[1 + strcspn(b + 1, "\n")] = '\0';
		snprintf(dir, len, "%s", b + 1);
		r = 0;
	}
	fclose(f);
	return r;
}

static bool add_voluntary_switches(pid_t pid, pid_t tid, void *sum)
{
	char path[96], val[32];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	/* a thread that just ended adds nothing */
	if (!status_field_at(path, "voluntary_ctxt_switches", val, sizeof(val)))
		*(long *)sum += strtol(val, NULL, 10);
	return true;
}

long tu_voluntary_switches(pid_t pid)
{
	long sum = 0;

	if (tu_count_threads(pid ? pid : getpid(), add_voluntary_switches, &sum, NULL) < 0)
		return -1;
	return sum;
}

long tu_proc_status_kb(pid_t pid, const char *field)
{
	char val[64], *end;
	long kb;

	if (tu_proc_status_field(pid, field, val, sizeof(val)))
		return -1;
	kb = strtol(val, &end, 10);
	return end == val ? -1 : kb;
}

bool tu_no_children(pid_t pid, int ms)
{
	char path[64], buf[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	for (int waited = 0; waited <= ms; waited += 10) {
		FILE *f = fopen(path, "r");
		bool none = f && !fgets(buf, sizeof(buf), f);

		if (f)
			fclose(f);
		if (none)
			return true;
		usleep(10000);
	}
	return false;
}

void tu_reset_peak_rss(pid_t pid)
{
	char path[64];
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/clear_refs", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/clear_refs");
	f = fopen(path, "w");
	if (f) {
		fputs("5", f);
		fclose(f);
	}
}

int tu_cgroup2_mount(const char *under, char *buf, size_t len)
{
	char dev[64], dir[200], type[64];
	FILE *f = fopen("/proc/mounts", "re");
	int err = -ENOENT;

	while (f && fscanf(f, "%63s %199s %63s %*[^\n]", dev, dir, type) == 3)
		if (!strcmp(type, "cgroup2") && (!under || !strncmp(dir, under, strlen(under)))) {
			snprintf(buf, len, "%s", dir);
			err = 0;
			break;
		}
	if (f)
		fclose(f);
	return err;
}
