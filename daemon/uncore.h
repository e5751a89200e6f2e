/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Per-socket DRAM read/write bytes from the memory controllers' uncore PMUs
 * (Intel uncore_imc*, AMD amd_umc_*), found through sysfs. colocd reads the
 * cumulative byte counts about once a second and turns them into GB/s per
 * socket. Sockets are the topology's (common/topology.h): the one dense
 * numbering the whole daemon uses. On a machine without such a PMU (a VM,
 * for one) the set is empty: uncore_open() succeeds and uncore_nr_sockets()
 * is 0.
 */
#ifndef COLOC_DAEMON_UNCORE_H
#define COLOC_DAEMON_UNCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "error.h"
#include "topology.h"

struct uncore;

/*
 * Discovers and opens every memory-controller PMU under a sysfs root ("/"
 * for the machine), placing each on the socket topo gives its CPU. 0 with an
 * empty set when none exist, none parse, or the kernel refuses to open them:
 * uncore_describe() says which. -ENOMEM or -EINVAL otherwise, with err (may
 * be NULL) saying so. See UNCORE_PARSE_ONLY.
 */
int uncore_open_at(const char *root, const struct topology *topo, unsigned int flags,
		   struct uncore **out, struct coloc_err *err);
/* The same for this machine, with its own reading of the topology. */
int uncore_open(struct uncore **out);
/* Sockets with at least one memory-controller channel; 0 when no uncore PMU. */
int uncore_nr_sockets(const struct uncore *u);
/*
 * Cumulative DRAM bytes read and written on the topology's socket
 * [0, topology_nr_sockets); 0, -ENOENT for a socket without a channel (its
 * memory controllers are not visible), or another -errno.
 */
int uncore_read(struct uncore *u, int socket, __u64 *read_bytes, __u64 *write_bytes);
/* One line, e.g. "uncore membw: 2 sockets via uncore_imc (12 channels)". */
const char *uncore_describe(const struct uncore *u);
void uncore_close(struct uncore *u);

/* uncore_open_at() flag: parse sysfs and plan the events, open nothing (for tests). */
#define UNCORE_PARSE_ONLY 1u

/* One planned memory-controller counter pair: a PMU instance on one CPU of a socket. */
struct uncore_channel {
	char pmu[64]; /* sysfs name, e.g. "uncore_imc_3" */
	__u32 type; /* perf_event_attr.type from sysfs */
	__u64 read_config[3]; /* config, config1, config2 */
	__u64 write_config[3];
	double read_bytes_per_count; /* from .scale x .unit, or the PMU kind's default */
	double write_bytes_per_count;
	int cpu; /* from the PMU's cpumask */
	int socket; /* the topology's socket of cpu */
	int package_id; /* that socket's physical_package_id */
};

int uncore_nr_channels(const struct uncore *u);
/* NULL when i is out of range. */
const struct uncore_channel *uncore_channel(const struct uncore *u, int i);

/*
 * Encodes perf event terms ("event=0x04,umask=0x03", a bare term means 1)
 * with the PMU's sysfs format/ files ("config:0-7,32-35", "config1:0-31")
 * into config[0..2]. 0, -ENOENT for a term without a format file, -ERANGE for
 * a value wider than its field, -EINVAL for bad syntax; err (may be NULL)
 * says which.
 */
int uncore_encode_terms(const char *pmu_dir, const char *terms, __u64 config[3],
			struct coloc_err *err);

/*
 * Encodes the events/NAME alias of a PMU and its bytes per count from
 * events/NAME.scale and events/NAME.unit (1.0 when neither exists, so the
 * caller's default applies when *has_scale is false).
 */
int uncore_encode_alias(const char *pmu_dir, const char *name, __u64 config[3],
			double *bytes_per_count, bool *has_scale, struct coloc_err *err);

#endif /* COLOC_DAEMON_UNCORE_H */
