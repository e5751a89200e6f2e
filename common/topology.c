// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * hwloc, read once into plain tables: for each online CPU its socket, core
 * and LLC domain. hwloc's own logical indexes follow the cpuset order, which
 * on some machines differs from the package-id order the kernel prints; the
 * socket index here is the package-id order, so it matches what an operator
 * reads in /sys/devices/system/cpu/cpuN/topology/physical_package_id (minus
 * the gaps). Nothing of hwloc survives topology_open(): callers never see a
 * hwloc object, and a test can load an XML topology of a machine it is not
 * running on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <hwloc.h>
#include "coloc/limits.h"
#include "topology.h"
#include "util.h"

struct topology {
	int nr_cpus, nr_cores, nr_sockets, nr_llcs;
	int cpus[COLOC_MAX_CPUS]; /* online OS ids, ascending */
	/* by OS id; -1 where the CPU is not online */
	int cpu_socket[COLOC_MAX_CPUS];
	int cpu_core[COLOC_MAX_CPUS];
	int cpu_llc[COLOC_MAX_CPUS];
	int socket_package_id[COLOC_MAX_CPUS];
	uint64_t llc_bytes;
};

/* hwloc's unknown index sorts last, so a package without an id still gets a socket. */
static int topology_cmp_packages(const void *a, const void *b)
{
	unsigned int x = (*(hwloc_obj_t const *)a)->os_index;
	unsigned int y = (*(hwloc_obj_t const *)b)->os_index;

	return (x > y) - (x < y);
}

static int topology_read_sockets(struct topology *t, hwloc_topology_t topo, struct coloc_err *err)
{
	int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
	hwloc_obj_t *packages;

	/* no package objects (some hypervisors): the whole machine is one socket */
	if (n <= 0) {
		t->nr_sockets = 1;
		t->socket_package_id[0] = 0;
		for (int i = 0; i < t->nr_cpus; i++)
			t->cpu_socket[t->cpus[i]] = 0;
		return 0;
	}
	packages = calloc((size_t)n, sizeof(*packages));
	if (!packages)
		return coloc_err_set(err, -ENOMEM, "out of memory reading the topology");
	for (int i = 0; i < n; i++)
		packages[i] = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, (unsigned int)i);
	qsort(packages, (size_t)n, sizeof(*packages), topology_cmp_packages);
	for (int s = 0; s < n; s++) {
		unsigned int cpu;

		t->socket_package_id[s] = packages[s]->os_index == HWLOC_UNKNOWN_INDEX ?
						  -1 :
						  (int)packages[s]->os_index;
		hwloc_bitmap_foreach_begin(cpu, packages[s]->cpuset)
		{
			if (cpu < COLOC_MAX_CPUS)
				t->cpu_socket[cpu] = s;
		}
		hwloc_bitmap_foreach_end();
	}
	t->nr_sockets = n;
	free(packages);
	return 0;
}

/* The L3s, else the L2s: the widest caches that hold data. */
static void topology_read_llcs(struct topology *t, hwloc_topology_t topo)
{
	static const hwloc_obj_type_t levels[] = { HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L2CACHE };

	for (size_t l = 0; l < ARRAY_SIZE(levels) && !t->nr_llcs; l++) {
		int n = hwloc_get_nbobjs_by_type(topo, levels[l]);

		for (int i = 0; i < n; i++) {
			hwloc_obj_t o = hwloc_get_obj_by_type(topo, levels[l], (unsigned int)i);
			unsigned int cpu;

			if (o->attr && o->attr->cache.size > t->llc_bytes)
				t->llc_bytes = o->attr->cache.size;
			hwloc_bitmap_foreach_begin(cpu, o->cpuset)
			{
				if (cpu < COLOC_MAX_CPUS)
					t->cpu_llc[cpu] = i;
			}
			hwloc_bitmap_foreach_end();
		}
		t->nr_llcs = n > 0 ? n : 0;
	}
}

static int topology_read(struct topology *t, hwloc_topology_t topo, struct coloc_err *err)
{
	int nr_pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
	int nr_cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);

	for (int i = 0; i < COLOC_MAX_CPUS; i++)
		t->cpu_socket[i] = t->cpu_core[i] = t->cpu_llc[i] = -1;
	/* PU objects come in cpuset order, so OS ids ascend */
	for (int i = 0; i < nr_pus; i++) {
		hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, (unsigned int)i);
		hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_CORE, pu);

		if (pu->os_index >= COLOC_MAX_CPUS)
			return coloc_err_set(err, -ERANGE,
					     "CPU %u is beyond the %d CPUs coloc supports "
					     "(COLOC_MAX_CPUS in include/coloc/limits.h)",
					     pu->os_index, COLOC_MAX_CPUS);
		t->cpus[t->nr_cpus++] = (int)pu->os_index;
		/* a PU without a core object is a core of its own */
		t->cpu_core[pu->os_index] = core ? (int)core->logical_index : nr_cores + i;
	}
	if (!t->nr_cpus)
		return coloc_err_set(err, -EINVAL, "hwloc found no CPU in the topology");
	t->nr_cores = nr_cores > 0 ? nr_cores : t->nr_cpus;
	if (nr_cores <= 0)
		for (int i = 0; i < t->nr_cpus; i++)
			t->cpu_core[t->cpus[i]] = i;
	topology_read_llcs(t, topo);
	return topology_read_sockets(t, topo, err);
}

int topology_open(const char *xml, struct topology **out, struct coloc_err *err)
{
	hwloc_topology_t topo;
	struct topology *t;
	int ret;

	if (!out)
		return coloc_err_set(err, -EINVAL, "topology_open: no place for the result");
	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return coloc_err_set(err, -ENOMEM, "out of memory reading the topology");
	if (hwloc_topology_init(&topo)) {
		free(t);
		return coloc_err_set(err, -ENOMEM, "hwloc cannot start: out of memory");
	}
	hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
	if (xml && hwloc_topology_set_xmlbuffer(topo, xml, (int)strlen(xml) + 1)) {
		ret = coloc_err_set(err, -EINVAL, "hwloc cannot use the XML topology given");
		goto out;
	}
	if (hwloc_topology_load(topo)) {
		ret = coloc_err_set(err, -EINVAL, "hwloc cannot read the %s topology",
				    xml ? "XML" : "machine's");
		goto out;
	}
	ret = topology_read(t, topo, err);
out:
	hwloc_topology_destroy(topo);
	if (ret) {
		free(t);
		return ret;
	}
	*out = t;
	return 0;
}

void topology_close(struct topology *t)
{
	free(t);
}

int topology_nr_cpus(const struct topology *t)
{
	return t->nr_cpus;
}

const int *topology_cpus(const struct topology *t)
{
	return t->cpus;
}

int topology_nr_cores(const struct topology *t)
{
	return t->nr_cores;
}

int topology_nr_sockets(const struct topology *t)
{
	return t->nr_sockets;
}

int topology_nr_llcs(const struct topology *t)
{
	return t->nr_llcs;
}

int topology_cpu_socket(const struct topology *t, int cpu)
{
	return cpu >= 0 && cpu < COLOC_MAX_CPUS ? t->cpu_socket[cpu] : -1;
}

int topology_cpu_core(const struct topology *t, int cpu)
{
	return cpu >= 0 && cpu < COLOC_MAX_CPUS ? t->cpu_core[cpu] : -1;
}

int topology_cpu_llc(const struct topology *t, int cpu)
{
	return cpu >= 0 && cpu < COLOC_MAX_CPUS ? t->cpu_llc[cpu] : -1;
}

int topology_socket_package_id(const struct topology *t, int socket)
{
	return socket >= 0 && socket < t->nr_sockets ? t->socket_package_id[socket] : -1;
}

uint64_t topology_llc_bytes(const struct topology *t)
{
	return t->llc_bytes;
}
