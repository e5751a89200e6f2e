// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The memory controllers' uncore PMUs found (uncore.c): each (PMU, cpumask
 * CPU) pair of /sys/bus/event_source/devices a channel, its read and write
 * events planned (aliases or, for AMD's UMCs, perf's codes placed with
 * format/), its socket from the topology, and the set described in words.
 */
#define _GNU_SOURCE /* strverscmp */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coloc/limits.h"
#include "cli.h"
#include "cpulist.h"
#include "topology.h"
#include "uncore_internal.h"
#include "util.h"

#define UNCORE_DEVICES "/sys/bus/event_source/devices"
#define UNCORE_LINE_BYTES 64.0

enum uncore_kind {
	UNCORE_KIND_NONE,
	UNCORE_KIND_IMC,
	UNCORE_KIND_UMC,
};

/* The free-running IMC PMUs (uncore_imc_free_running_N) would double count: skip them. */
static enum uncore_kind uncore_kind_of(const char *name)
{
	if (!strcmp(name, "uncore_imc") ||
	    (!strncmp(name, "uncore_imc_", 11) && cli_all_digits(name + 11)))
		return UNCORE_KIND_IMC;
	if (!strncmp(name, "amd_umc_", 8) && cli_all_digits(name + 8))
		return UNCORE_KIND_UMC;
	return UNCORE_KIND_NONE;
}

static int uncore_cmp_names(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

/* Encodes one alias into config, defaulting to 64 bytes per count when sysfs gives no scale. */
static int uncore_plan_alias(const char *dir, const char *name, __u64 config[3],
			     double *bytes_per_count, struct coloc_err *err)
{
	bool has_scale;
	int ret = uncore_encode_alias(dir, name, config, bytes_per_count, &has_scale, err);

	if (!ret && !has_scale)
		*bytes_per_count = UNCORE_LINE_BYTES;
	return ret;
}

/* Read and write events of one PMU, with bytes per count. */
static int uncore_plan_events(const char *dir, enum uncore_kind kind, struct uncore_channel *ch,
			      struct coloc_err *err)
{
	/* server IMCs, then client IMCs, which name the same two counters differently */
	static const char *const imc_aliases[][2] = {
		{ "cas_count_read", "cas_count_write" },
		{ "data_reads", "data_writes" },
	};
	struct coloc_err why = { 0 };
	int ret = -ENOENT;

	if (kind == UNCORE_KIND_UMC) {
		ch->read_bytes_per_count = UNCORE_LINE_BYTES;
		ch->write_bytes_per_count = UNCORE_LINE_BYTES;
		ret = uncore_encode_terms(dir, "event=0x0a,rdwrmask=0x1", ch->read_config, err);
		if (ret)
			return ret;
		return uncore_encode_terms(dir, "event=0x0a,rdwrmask=0x2", ch->write_config, err);
	}
	/* a missing alias is not the error yet: the client IMCs' names may exist */
	for (size_t i = 0; i < ARRAY_SIZE(imc_aliases) && ret == -ENOENT; i++) {
		coloc_err_clear(&why);
		ret = uncore_plan_alias(dir, imc_aliases[i][0], ch->read_config,
					&ch->read_bytes_per_count, &why);
		if (!ret)
			ret = uncore_plan_alias(dir, imc_aliases[i][1], ch->write_config,
						&ch->write_bytes_per_count, &why);
	}
	if (ret == -ENOENT)
		return coloc_err_set(err, ret,
				     "no cas_count_read/cas_count_write or data_reads/data_writes");
	return ret ? coloc_err_set(err, ret, "%s", why.msg) : 0;
}

static int uncore_add_channel(struct uncore *u, const struct uncore_channel *ch)
{
	struct uncore_channel *grown =
		realloc(u->channels, (size_t)(u->nr_channels + 1) * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	u->channels = grown;
	u->channels[u->nr_channels++] = *ch;
	return 0;
}

/*
 * Adds one channel per cpumask CPU of a PMU, on the socket the topology
 * gives that CPU, or none and the reason in err.
 */
static int uncore_plan_pmu(struct uncore *u, const char *root, const struct topology *topo,
			   const char *name, enum uncore_kind kind, struct coloc_err *err)
{
	char dir[PATH_MAX], path[PATH_MAX + 32], text[4096];
	struct uncore_channel ch = { 0 };
	int cpus[COLOC_MAX_CPUS], nr, ret, first = u->nr_channels;
	long v;

	snprintf(dir, sizeof(dir), "%s%s/%s", root, UNCORE_DEVICES, name);
	snprintf(ch.pmu, sizeof(ch.pmu), "%s", name);
	snprintf(path, sizeof(path), "%s/type", dir);
	ret = uncore_read_long(path, 0, UINT32_MAX, &v);
	if (ret)
		return coloc_err_set(err, ret, "unreadable or bad 'type'");
	ch.type = (__u32)v;
	ret = uncore_plan_events(dir, kind, &ch, err);
	if (ret)
		return ret;

	snprintf(path, sizeof(path), "%s/cpumask", dir);
	ret = uncore_read_text(path, text, sizeof(text));
	nr = ret ? ret : cpulist_parse(text, CPULIST_SYSFS, cpus, COLOC_MAX_CPUS, NULL);
	if (nr <= 0)
		return coloc_err_set(err, nr ? nr : -EINVAL, "missing, empty or bad 'cpumask'");
	for (int i = 0; i < nr; i++) {
		ch.cpu = cpus[i];
		ch.socket = topology_cpu_socket(topo, cpus[i]);
		ch.package_id = topology_socket_package_id(topo, ch.socket);
		if (ch.socket < 0) {
			u->nr_channels = first;
			return coloc_err_set(err, -ENODEV, "cpumask CPU %d is not an online CPU",
					     cpus[i]);
		}
		ret = uncore_add_channel(u, &ch);
		if (ret) {
			u->nr_channels = first;
			return ret;
		}
	}
	return 0;
}

bool uncore_has_channel_on(const struct uncore *u, int socket)
{
	for (int i = 0; i < u->nr_channels; i++)
		if (u->channels[i].socket == socket)
			return true;
	return false;
}

/* Sockets with at least one channel. */
static int uncore_count_sockets(const struct uncore *u)
{
	int nr = 0;

	for (int s = 0; s < u->nr_topology_sockets; s++)
		nr += uncore_has_channel_on(u, s);
	return nr;
}

static void uncore_describe_set(struct uncore *u, bool saw_df, const char *skipped)
{
	bool imc = false, umc = false;
	char *d = u->describe;
	size_t len = sizeof(u->describe);
	int n;

	for (int i = 0; i < u->nr_channels; i++) {
		if (uncore_kind_of(u->channels[i].pmu) == UNCORE_KIND_IMC)
			imc = true;
		else
			umc = true;
	}
	if (!u->nr_channels && skipped[0]) {
		snprintf(d, len, "uncore membw: none (%s)", skipped);
		return;
	}
	if (!u->nr_channels) {
		snprintf(d, len, "uncore membw: none (no uncore_imc/amd_umc PMU%s)",
			 saw_df ? "; amd_df present, but its DRAM events mix reads and writes" :
				  "");
		return;
	}
	n = snprintf(d, len, "uncore membw: %d socket%s via %s%s%s (%d channel%s)", u->nr_sockets,
		     u->nr_sockets == 1 ? "" : "s", imc ? "uncore_imc" : "", imc && umc ? "+" : "",
		     umc ? "amd_umc" : "", u->nr_channels, u->nr_channels == 1 ? "" : "s");
	if (skipped[0] && n > 0 && (size_t)n < len)
		snprintf(d + n, len - (size_t)n, " [skipped %s]", skipped);
}

int uncore_discover(struct uncore *u, const char *root, const struct topology *topo)
{
	char devices[PATH_MAX], skipped[160] = "";
	struct dirent *de;
	char **names = NULL;
	int nr_names = 0, ret = 0;
	bool saw_df = false;
	DIR *dir;

	snprintf(devices, sizeof(devices), "%s%s", root, UNCORE_DEVICES);
	dir = opendir(devices);
	if (!dir) {
		/* No event_source bus at all: no uncore PMU, not an error. */
		uncore_describe_set(u, false, "");
		return 0;
	}
	while ((de = readdir(dir))) {
		char **grown;

		if (!strcmp(de->d_name, "amd_df"))
			saw_df = true;
		if (uncore_kind_of(de->d_name) == UNCORE_KIND_NONE)
			continue;
		grown = realloc(names, (size_t)(nr_names + 1) * sizeof(*names));
		if (!grown || !(grown[nr_names] = strdup(de->d_name))) {
			names = grown ? grown : names;
			ret = -ENOMEM;
			break;
		}
		names = grown;
		nr_names++;
	}
	closedir(dir);
	if (names)
		qsort(names, (size_t)nr_names, sizeof(*names), uncore_cmp_names);
	for (int i = 0; !ret && i < nr_names; i++) {
		struct coloc_err why = { 0 };
		int r = uncore_plan_pmu(u, root, topo, names[i], uncore_kind_of(names[i]), &why);

		if (r == -ENOMEM)
			ret = r;
		else if (r && !skipped[0])
			snprintf(skipped, sizeof(skipped), "%s: %s", names[i], coloc_err_str(&why));
	}
	for (int i = 0; i < nr_names; i++)
		free(names[i]);
	free(names);
	if (ret)
		return ret;
	u->nr_sockets = uncore_count_sockets(u);
	uncore_describe_set(u, saw_df, skipped);
	return 0;
}
