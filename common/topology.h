/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The machine's shape, read from hwloc once: online CPUs, cores, sockets and
 * last-level-cache domains. Sockets have one numbering everywhere in coloc:
 * a dense index 0..n-1 in the order of their physical package ids, so a gap
 * in the ids (packages 0 and 2) still gives sockets 0 and 1, and socket 1 is
 * the same socket for the sensor, the uncore counters and the control
 * protocol. CPUs are OS ids (as sysfs, sched_setaffinity and hwloc's
 * os_index number them).
 */
#ifndef COLOC_COMMON_TOPOLOGY_H
#define COLOC_COMMON_TOPOLOGY_H

#include <stdint.h>
#include "error.h"

struct topology;

/*
 * Reads the topology: this machine's when xml is NULL, else the hwloc XML
 * document in xml (a topology exported with lstopo or
 * hwloc_topology_export_xmlbuffer, or written by a test). CPUs a cgroup
 * keeps this process from are included: coloc watches the whole machine.
 * 0, or -ENOMEM, -EINVAL (hwloc cannot read it) or -ERANGE (a CPU id of
 * COLOC_MAX_CPUS or more), with err saying which.
 */
int topology_open(const char *xml, struct topology **out, struct coloc_err *err);
void topology_close(struct topology *t);

/* Online CPUs, as OS ids in ascending order. */
int topology_nr_cpus(const struct topology *t);
const int *topology_cpus(const struct topology *t);

int topology_nr_cores(const struct topology *t);
int topology_nr_sockets(const struct topology *t);
/* Last-level-cache domains: the L3 caches, or the L2s where there is no L3; 0 if neither. */
int topology_nr_llcs(const struct topology *t);

/* A CPU's socket in [0, nr_sockets), its core in [0, nr_cores), its LLC domain in [0, nr_llcs); -1 for a CPU not online (or without an LLC). */
int topology_cpu_socket(const struct topology *t, int cpu);
int topology_cpu_core(const struct topology *t, int cpu);
int topology_cpu_llc(const struct topology *t, int cpu);

/* The physical_package_id of socket [0, nr_sockets), or -1. */
int topology_socket_package_id(const struct topology *t, int socket);

/* Bytes of the largest last-level cache, 0 when hwloc reports none. */
uint64_t topology_llc_bytes(const struct topology *t);

#endif /* COLOC_COMMON_TOPOLOGY_H */
