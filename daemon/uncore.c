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
 * ever come from perf_event_open().
 */
#define _GNU_SOURCE /* strerrorname_np */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include "coloc/limits.h"
#include "cli.h"
#include "cpulist.h"
#include "topology.h"
#include "uncore.h"
#include "util.h"

#define UNCORE_DEVICES "/sys/bus/event_source/devices"
#define UNCORE_LINE_BYTES 64.0

enum uncore_kind {
	UNCORE_KIND_NONE,
	UNCORE_KIND_IMC,
	UNCORE_KIND_UMC,
};

struct uncore {
	int nr_channels;
	struct uncore_channel *channels;
	int *read_fds;
	int *write_fds;
	int nr_sockets; /* with at least one channel */
	int nr_topology_sockets;
	char describe[320];
};

/* ---- small sysfs readers --------------------------------------------------- */

static int uncore_read_text(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	buf[n] = '\0';
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		buf[--n] = '\0';
	return 0;
}

static int uncore_read_long(const char *path, long lo, long hi, long *out)
{
	char buf[64], *end;
	long v;
	int err = uncore_read_text(path, buf, sizeof(buf));

	if (err)
		return err;
	errno = 0;
	v = strtol(buf, &end, 0);
	if (errno || end == buf || *end || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

/* A term or alias name must stay inside its directory. */
static bool uncore_safe_name(const char *s)
{
	if (!*s || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.' && *s != '-')
			return false;
	return true;
}

/* ---- format/ and events/ parsing ----------------------------------------- */

/* Places value into config[] per one format spec such as "config:0-7,32-35", low bits first. */
static int uncore_place(const char *spec, __u64 value, __u64 config[3], struct coloc_err *err)
{
	const char *p = spec;
	int word, placed = 0;
	char *end;

	if (!strncmp(p, "config2:", 8)) {
		word = 2;
		p += 8;
	} else if (!strncmp(p, "config1:", 8)) {
		word = 1;
		p += 8;
	} else if (!strncmp(p, "config:", 7)) {
		word = 0;
		p += 7;
	} else {
		return coloc_err_set(err, -EINVAL,
				     "format '%s': expected config, config1 or config2", spec);
	}
	for (;;) {
		unsigned long lo, hi;
		int width;

		if (!isdigit((unsigned char)*p))
			goto bad;
		errno = 0;
		lo = strtoul(p, &end, 10);
		hi = lo;
		p = end;
		if (*p == '-') {
			p++;
			if (!isdigit((unsigned char)*p))
				goto bad;
			hi = strtoul(p, &end, 10);
			p = end;
		}
		if (errno || lo > 63 || hi > 63 || hi < lo)
			goto bad;
		width = (int)(hi - lo + 1);
		if (placed < 64) {
			__u64 mask = width == 64 ? ~0ull : (1ull << width) - 1;

			config[word] |= ((value >> placed) & mask) << lo;
		}
		placed += width;
		if (!*p)
			break;
		if (*p != ',')
			goto bad;
		p++;
	}
	if (placed < 64 && (value >> placed)) {
		return coloc_err_set(err, -ERANGE, "value 0x%llx does not fit format '%s'",
				     (unsigned long long)value, spec);
	}
	return 0;
bad:
	return coloc_err_set(err, -EINVAL, "format '%s': bad bit range", spec);
}

int uncore_encode_terms(const char *pmu_dir, const char *terms, __u64 config[3],
			struct coloc_err *err)
{
	char copy[512], *save = NULL, *term;

	if (!pmu_dir || !terms || !config)
		return -EINVAL;
	config[0] = config[1] = config[2] = 0;
	if (strlen(terms) >= sizeof(copy)) {
		return coloc_err_set(err, -EINVAL, "event terms too long: '%.60s...'", terms);
	}
	strcpy(copy, terms);
	for (term = strtok_r(copy, ",", &save); term; term = strtok_r(NULL, ",", &save)) {
		char path[PATH_MAX], spec[128], *eq, *name = term, *end;
		__u64 value = 1;
		int ret;

		while (isspace((unsigned char)*name))
			name++;
		end = name + strlen(name);
		while (end > name && isspace((unsigned char)end[-1]))
			*--end = '\0';
		eq = strchr(name, '=');
		if (eq) {
			*eq = '\0';
			errno = 0;
			value = strtoull(eq + 1, &end, 0);
			if (errno || end == eq + 1 || *end || eq[1] == '-') {
				return coloc_err_set(err, -EINVAL, "term '%s': bad value '%s'",
						     name, eq + 1);
			}
		}
		if (!uncore_safe_name(name)) {
			return coloc_err_set(err, -EINVAL, "bad term name '%s' in '%s'", name,
					     terms);
		}
		snprintf(path, sizeof(path), "%s/format/%s", pmu_dir, name);
		ret = uncore_read_text(path, spec, sizeof(spec));
		if (ret)
			return coloc_err_set(err, ret, "term '%s': no format file %s", name, path);
		ret = uncore_place(spec, value, config, err);
		if (ret)
			return ret;
	}
	return 0;
}

static int uncore_unit_bytes(const char *unit, double *bytes)
{
	static const struct {
		const char *name;
		double bytes;
	} units[] = {
		{ "B", 1 },	   { "Bytes", 1 },	 { "bytes", 1 },
		{ "KiB", 1024.0 }, { "MiB", 1048576.0 }, { "GiB", 1073741824.0 },
		{ "KB", 1e3 },	   { "MB", 1e6 },	 { "GB", 1e9 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (!strcmp(unit, units[i].name)) {
			*bytes = units[i].bytes;
			return 0;
		}
	return -EINVAL;
}

int uncore_encode_alias(const char *pmu_dir, const char *name, __u64 config[3],
			double *bytes_per_count, bool *has_scale, struct coloc_err *err)
{
	char path[PATH_MAX], terms[512], text[64], *end;
	double scale = 1.0, unit = 1.0;
	bool scaled = false;
	int ret;

	if (!pmu_dir || !name || !config || !bytes_per_count || !has_scale)
		return -EINVAL;
	if (!uncore_safe_name(name))
		return coloc_err_set(err, -EINVAL, "bad event alias name '%s'", name);
	snprintf(path, sizeof(path), "%s/events/%s", pmu_dir, name);
	ret = uncore_read_text(path, terms, sizeof(terms));
	if (ret)
		return coloc_err_set(err, ret, "no event alias %s", path);
	ret = uncore_encode_terms(pmu_dir, terms, config, err);
	if (ret)
		return ret;

	snprintf(path, sizeof(path), "%s/events/%s.scale", pmu_dir, name);
	ret = uncore_read_text(path, text, sizeof(text));
	if (!ret) {
		errno = 0;
		scale = strtod(text, &end);
		if (errno || end == text || *end || !(scale > 0) || !isfinite(scale))
			return coloc_err_set(err, -EINVAL, "%s: bad scale '%s'", path, text);
		scaled = true;
	} else if (ret != -ENOENT) {
		return ret;
	}
	snprintf(path, sizeof(path), "%s/events/%s.unit", pmu_dir, name);
	ret = uncore_read_text(path, text, sizeof(text));
	if (!ret) {
		if (uncore_unit_bytes(text, &unit))
			return coloc_err_set(err, -EINVAL, "%s: unit '%s' is not a byte unit", path,
					     text);
		scaled = true;
	} else if (ret != -ENOENT) {
		return ret;
	}
	*bytes_per_count = scale * unit;
	*has_scale = scaled;
	return 0;
}

/* ---- discovery ------------------------------------------------------------- */

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

static bool uncore_has_channel_on(const struct uncore *u, int socket)
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

static int uncore_discover(struct uncore *u, const char *root, const struct topology *topo)
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

/* ---- opening and reading ----------------------------------------------------- */

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
