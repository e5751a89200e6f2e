// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Memory bandwidth per socket from the memory controllers' uncore PMUs.
 *
 * The kernel describes each uncore PMU in sysfs under
 * /sys/bus/event_source/devices/NAME: `type` (perf_event_attr.type),
 * `cpumask` (one CPU per socket or die to open its events on), `format/`
 * (where each event field goes in config, e.g. "config:0-7,32-35") and, for
 * some PMUs, `events/` aliases with their `.scale` and `.unit`. This file
 * reads all of that instead of hard-coding codes per CPU model:
 *
 *   uncore_imc, uncore_imc_N (Intel client / server IMC channels): aliases
 *     cas_count_read / cas_count_write (server) or data_reads / data_writes
 *     (client), scale 6.103515625e-5 MiB = 64 bytes per count;
 *   amd_umc_N (AMD Zen 4+, Linux 6.9+): no aliases in sysfs; perf's
 *     amdzen4/memory-controller.json defines umc_cas_cmd.rd / .wr as
 *     event=0x0a with rdwrmask=1 / 2, and its recommended.json counts 64
 *     bytes per CAS; the fields are placed with the PMU's format/ files.
 *
 * amd_df (the Zen data fabric) is seen but not used: its DRAM channel events
 * count read and write beats together and their codes differ per family.
 *
 * Each (PMU, cpumask CPU) pair is a channel; the topology (common/topology.h)
 * gives its CPU's socket, in the one numbering every part of coloc uses, so a
 * socket whose memory controllers sysfs does not show simply has no channel
 * and the others keep their numbers. uncore_read() sums a socket's channels
 * into cumulative bytes. Everything takes a sysfs root and a topology so
 * tests can parse a tree and a machine they wrote; the counts themselves only
 * ever come from perf_event_open(). Here: the events opened and read; the
 * channels are found in uncore_discover.c, sysfs read and encoded in
 * uncore_sysfs.c.
 */
#define _GNU_SOURCE /* strerrorname_np */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include "coloc/limits.h"
#include "topology.h"
#include "uncore_internal.h"
#include "util.h"

static int uncore_perf_open(__u32 type, const __u64 config[3], int cpu)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = type,
		.config = config[0],
		.config1 = config[1],
		.config2 = config[2],
		.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
	};
	int fd = syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static int uncore_open_events(struct uncore *u, struct coloc_err *why)
{
	u->read_fds = malloc((size_t)u->nr_channels * sizeof(int));
	u->write_fds = malloc((size_t)u->nr_channels * sizeof(int));
	if (!u->read_fds || !u->write_fds)
		return -ENOMEM;
	for (int i = 0; i < u->nr_channels; i++)
		u->read_fds[i] = u->write_fds[i] = -1;
	for (int i = 0; i < u->nr_channels; i++) {
		const struct uncore_channel *ch = &u->channels[i];
		int fd = uncore_perf_open(ch->type, ch->read_config, ch->cpu);

		if (fd >= 0) {
			u->read_fds[i] = fd;
			fd = uncore_perf_open(ch->type, ch->write_config, ch->cpu);
		}
		if (fd < 0)
			return coloc_err_set(why, fd, "perf_event_open(%s on cpu %d): %s", ch->pmu,
					     ch->cpu, strerrorname_np(-fd) ?: "unknown error");
		u->write_fds[i] = fd;
	}
	return 0;
}

static void uncore_release_events(struct uncore *u)
{
	for (int i = 0; i < u->nr_channels; i++) {
		if (u->read_fds && u->read_fds[i] >= 0)
			close(u->read_fds[i]);
		if (u->write_fds && u->write_fds[i] >= 0)
			close(u->write_fds[i]);
	}
	free(u->read_fds);
	free(u->write_fds);
	u->read_fds = u->write_fds = NULL;
}

int uncore_open_at(const char *root, const struct topology *topo, unsigned int flags,
		   struct uncore **out, struct coloc_err *err)
{
	struct coloc_err why = { 0 };
	struct uncore *u;
	int ret;

	if (!root || !topo || !out || (flags & ~UNCORE_PARSE_ONLY))
		return coloc_err_set(err, -EINVAL, "uncore_open_at: bad arguments");
	*out = NULL;
	/* "/" and "" both mean the machine's own sysfs. */
	if (!strcmp(root, "/"))
		root = "";
	u = calloc(1, sizeof(*u));
	if (!u)
		return coloc_err_set(err, -ENOMEM, "out of memory planning uncore counters");
	u->nr_topology_sockets = topology_nr_sockets(topo);
	ret = uncore_discover(u, root, topo);
	if (!ret && !(flags & UNCORE_PARSE_ONLY) && u->nr_channels) {
		ret = uncore_open_events(u, &why);
		/*
		 * A PMU the kernel will not open for us (not root, a hypervisor
		 * that hides it) leaves the daemon without bandwidth, not
		 * without a start: an empty set that says why.
		 */
		if (ret && ret != -ENOMEM) {
			uncore_release_events(u);
			u->nr_channels = 0;
			u->nr_sockets = 0;
			snprintf(u->describe, sizeof(u->describe), "uncore membw: none (%s)",
				 coloc_err_str(&why));
			ret = 0;
		}
	}
	if (ret) {
		uncore_close(u);
		return coloc_err_set(err, ret, "out of memory planning uncore counters");
	}
	*out = u;
	return 0;
}

int uncore_open(struct uncore **out)
{
	struct topology *topo;
	int ret = topology_open(NULL, &topo, NULL);

	if (ret)
		return ret;
	ret = uncore_open_at("/", topo, 0, out, NULL);
	topology_close(topo);
	return ret;
}

int uncore_nr_sockets(const struct uncore *u)
{
	return u ? u->nr_sockets : 0;
}

int uncore_nr_channels(const struct uncore *u)
{
	return u ? u->nr_channels : 0;
}

const struct uncore_channel *uncore_channel(const struct uncore *u, int i)
{
	if (!u || i < 0 || i >= u->nr_channels)
		return NULL;
	return &u->channels[i];
}

/* Bytes a counter fd has counted, scaled up if the PMU multiplexed it. */
static int uncore_fd_bytes(int fd, double bytes_per_count, __u64 *bytes)
{
	struct {
		__u64 value, enabled, running;
	} r;
	ssize_t n = read(fd, &r, sizeof(r));

	if (n < 0)
		return -errno;
	if (n != (ssize_t)sizeof(r))
		return -EIO;
	if (r.running && r.running < r.enabled) {
		double count = (double)r.value * (double)r.enabled / (double)r.running;

		*bytes = (__u64)llround(count * bytes_per_count);
	} else if (bytes_per_count == floor(bytes_per_count)) {
		/* the common case, 64-byte lines: exact in integers */
		*bytes = r.value * (__u64)bytes_per_count;
	} else {
		*bytes = (__u64)llround((double)r.value * bytes_per_count);
	}
	return 0;
}

int uncore_read(struct uncore *u, int socket, __u64 *read_bytes, __u64 *write_bytes)
{
	__u64 rd = 0, wr = 0;

	if (!u || !read_bytes || !write_bytes || socket < 0 || socket >= u->nr_topology_sockets)
		return -EINVAL;
	if (!uncore_has_channel_on(u, socket))
		return -ENOENT;
	if (!u->read_fds)
		return -EBADF; /* planned with UNCORE_PARSE_ONLY: nothing to read */
	for (int i = 0; i < u->nr_channels; i++) {
		const struct uncore_channel *ch = &u->channels[i];
		__u64 r, w;
		int err;

		if (ch->socket != socket)
			continue;
		err = uncore_fd_bytes(u->read_fds[i], ch->read_bytes_per_count, &r);
		if (!err)
			err = uncore_fd_bytes(u->write_fds[i], ch->write_bytes_per_count, &w);
		if (err)
			return err;
		rd += r;
		wr += w;
	}
	*read_bytes = rd;
	*write_bytes = wr;
	return 0;
}

const char *uncore_describe(const struct uncore *u)
{
	return u ? u->describe : "uncore membw: none (not opened)";
}

void uncore_close(struct uncore *u)
{
	if (!u)
		return;
	uncore_release_events(u);
	free(u->channels);
	free(u);
}
