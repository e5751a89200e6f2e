// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * PMU detection for colocd: what this machine can count, decided by trying.
 *
 * pmu_detect() identifies the CPU from /proc/cpuinfo, takes its event table
 * from pmu_events.c, and asks the kernel: hardware cycles opened CPU-wide on
 * CPU 0 means a core PMU answers; then each counter of the table is opened
 * once, and only those that open are marked available. Software counters
 * need no PMU but are probed the same way (perf_event_paranoid can refuse
 * CPU-wide events). The sensor later opens one fd per available counter per
 * CPU with pmu_open_counter(). pmu_describe() builds the start-up line that
 * tells the operator which signals are live: on a VM without a PMU colocd
 * runs on task time and software counters, and says so.
 */
#define _GNU_SOURCE /* strerrorname_np */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include "pmu.h"
#include "uncore.h"

static const char *const pmu_counter_names[COLOC_NR_COUNTERS] = {
	[COLOC_CTR_CYCLES] = "cycles",	       [COLOC_CTR_INSTRUCTIONS] = "instructions",
	[COLOC_CTR_LLC_REFS] = "llc_refs",     [COLOC_CTR_LLC_MISSES] = "llc_misses",
	[COLOC_CTR_DRAM_FILLS] = "dram_fills", [COLOC_CTR_CTX_SWITCHES] = "ctx_switches",
	[COLOC_CTR_MIGRATIONS] = "migrations", [COLOC_CTR_PAGE_FAULTS] = "page_faults",
};

const char *pmu_counter_name(enum coloc_counter ctr)
{
	if ((unsigned int)ctr >= COLOC_NR_COUNTERS)
		return "?";
	return pmu_counter_names[ctr];
}

static int pmu_perf_open(__u32 type, __u64 config, int cpu)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = type,
		.config = config,
		.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
	};
	int fd = syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static bool pmu_is_hardware(enum coloc_counter ctr)
{
	return COLOC_HW_COUNTER_MASK & (1u << ctr);
}

/* Value of "key<spaces>: value" when line starts with key followed by only blanks and ':'. */
static const char *pmu_cpuinfo_value(const char *line, const char *key)
{
	size_t n = strlen(key);

	if (strncmp(line, key, n))
		return NULL;
	line += n;
	while (*line == ' ' || *line == '\t')
		line++;
	if (*line != ':')
		return NULL;
	line++;
	while (*line == ' ' || *line == '\t')
		line++;
	return line;
}

static int pmu_parse_int(const char *s, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || v < 0 || v > 0xffff || (*end && *end != '\n'))
		return -EINVAL;
	*out = (int)v;
	return 0;
}

int pmu_parse_cpuinfo(const char *text, char *vendor, size_t vendor_len, int *family, int *model)
{
	bool have_vendor = false, have_family = false, have_model = false;
	const char *line = text;

	if (!text || !vendor || !vendor_len || !family || !model)
		return -EINVAL;
	/* Only the first processor block: it ends at the first empty line. */
	while (*line && *line != '\n') {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		char buf[256];
		const char *v;

		if (len >= sizeof(buf))
			len = sizeof(buf) - 1;
		memcpy(buf, line, len);
		buf[len] = '\0';
		if ((v = pmu_cpuinfo_value(buf, "vendor_id"))) {
			snprintf(vendor, vendor_len, "%s", v);
			have_vendor = true;
		} else if ((v = pmu_cpuinfo_value(buf, "cpu family"))) {
			if (pmu_parse_int(v, family))
				return -EINVAL;
			have_family = true;
		} else if ((v = pmu_cpuinfo_value(buf, "model"))) {
			if (pmu_parse_int(v, model))
				return -EINVAL;
			have_model = true;
		}
		if (!eol)
			break;
		line = eol + 1;
	}
	return have_vendor && have_family && have_model ? 0 : -ENOENT;
}

static int pmu_read_cpuinfo(struct pmu_info *info)
{
	/* The first processor block is well within this; the rest is not needed. */
	char buf[16384];
	ssize_t n, total = 0;
	int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (total < (ssize_t)sizeof(buf) - 1) {
		n = read(fd, buf + total, sizeof(buf) - 1 - total);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			close(fd);
			return (int)n;
		}
		if (n == 0)
			break;
		total += n;
	}
	close(fd);
	buf[total] = '\0';
	return pmu_parse_cpuinfo(buf, info->vendor, sizeof(info->vendor), &info->family,
				 &info->model);
}

static int pmu_probe_membw(void)
{
	struct uncore *u;
	int n;

	if (uncore_open(&u))
		return 0;
	n = uncore_nr_sockets(u);
	uncore_close(u);
	return n;
}

int pmu_detect(struct pmu_info *info)
{
	const struct pmu_event *events;
	const char *table;
	int fd, err;

	if (!info)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	/* An unreadable /proc/cpuinfo only costs the table: generic events remain. */
	if (pmu_read_cpuinfo(info)) {
		snprintf(info->vendor, sizeof(info->vendor), "unknown");
		info->family = -1;
		info->model = -1;
	}
	err = pmu_event_table_lookup(info->vendor, info->family, info->model, &events, &table);
	if (err)
		return err;
	info->table = table;
	memcpy(info->events, events, sizeof(info->events));

	fd = pmu_perf_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 0);
	if (fd >= 0) {
		info->present = true;
		close(fd);
	} else {
		info->open_errno = -fd;
	}

	for (int c = 0; c < COLOC_NR_COUNTERS; c++) {
		const struct pmu_event *ev = &info->events[c];

		if (!ev->name || (pmu_is_hardware(c) && !info->present))
			continue;
		fd = pmu_perf_open(ev->type, ev->config, 0);
		if (fd < 0)
			continue;
		close(fd);
		info->available_mask |= 1u << c;
	}
	info->membw_sockets = pmu_probe_membw();
	return 0;
}

int pmu_open_counter(const struct pmu_info *info, enum coloc_counter ctr, int cpu)
{
	const struct pmu_event *ev;

	if (!info || (unsigned int)ctr >= COLOC_NR_COUNTERS || cpu < 0)
		return -EINVAL;
	ev = &info->events[ctr];
	if (!ev->name)
		return -EOPNOTSUPP;
	if (pmu_is_hardware(ctr) && !info->present)
		return info->open_errno ? -info->open_errno : -ENODEV;
	return pmu_perf_open(ev->type, ev->config, cpu);
}

struct pmu_line {
	char *buf;
	size_t len, used;
};

static void pmu_line_add(struct pmu_line *l, const char *sep, const char *s)
{
	int n;

	if (l->used >= l->len)
		return;
	n = snprintf(l->buf + l->used, l->len - l->used, "%s%s", sep, s);
	if (n > 0)
		l->used += (size_t)n;
}

static const char *pmu_errno_name(int err)
{
	const char *name = strerrorname_np(err);

	return name ? name : "unknown error";
}

void pmu_describe(const struct pmu_info *info, char *buf, size_t len)
{
	struct pmu_line l = { .buf = buf, .len = len };
	char what[128];
	int absent = 0;

	if (!buf || !len)
		return;
	buf[0] = '\0';
	if (!info)
		return;
	if (info->present)
		snprintf(what, sizeof(what), "core PMU (%s, %s family 0x%x model 0x%x)",
			 info->table, info->vendor, info->family, info->model);
	else if (info->open_errno == EACCES || info->open_errno == EPERM)
		snprintf(what, sizeof(what),
			 "hardware PMU not accessible (perf cycles: %s; needs root or CAP_PERFMON)",
			 pmu_errno_name(info->open_errno));
	else
		snprintf(what, sizeof(what), "no hardware PMU (perf cycles: %s)",
			 pmu_errno_name(info->open_errno));
	pmu_line_add(&l, "signals: ", what);
	pmu_line_add(&l, " \u2014 live: task_clock", "");
	for (int c = 0; c < COLOC_NR_COUNTERS; c++)
		if (info->available_mask & (1u << c))
			pmu_line_add(&l, " ", pmu_counter_name(c));
	if (info->membw_sockets > 0)
		pmu_line_add(&l, " ", "membw");

	pmu_line_add(&l, "; absent:", "");
	for (int c = 0; c < COLOC_NR_COUNTERS; c++)
		if (!(info->available_mask & (1u << c))) {
			pmu_line_add(&l, " ", pmu_counter_name(c));
			absent++;
		}
	if (info->membw_sockets <= 0) {
		pmu_line_add(&l, " ", "membw");
		absent++;
	}
	if (!absent)
		pmu_line_add(&l, " ", "none");
}
