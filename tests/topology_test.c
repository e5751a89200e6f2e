// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of common/topology.c. The machine's topology is checked against
 * sysfs, read file by file; machines this one is not (gaps in package ids,
 * packages whose ids do not follow their CPUs, SMT) are fed as hwloc XML and
 * checked against the numbering worked out by hand.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "testutil.h"
#include "topology.h"

static int sysfs_package_id(int cpu)
{
	char path[128];
	int id = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/physical_package_id",
		 cpu);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &id) != 1)
		id = -1;
	fclose(f);
	return id;
}

TEST(topology_open__machine_matches_sysfs)
{
	struct coloc_err err = { 0 };
	struct topology *t;
	int prev = -1;

	ASSERT_EQ(0, topology_open(NULL, &t, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(sysconf(_SC_NPROCESSORS_ONLN), topology_nr_cpus(t));
	ASSERT_LE(1, topology_nr_sockets(t));
	ASSERT_LE(topology_nr_sockets(t), topology_nr_cores(t));
	ASSERT_LE(topology_nr_cores(t), topology_nr_cpus(t));
	for (int i = 0; i < topology_nr_cpus(t); i++) {
		int cpu = topology_cpus(t)[i], s = topology_cpu_socket(t, cpu);

		ASSERT_LT(prev, cpu);
		prev = cpu;
		ASSERT_LE(0, s);
		ASSERT_LT(s, topology_nr_sockets(t));
		ASSERT_EQ(sysfs_package_id(cpu), topology_socket_package_id(t, s))
		TH_LOG("cpu %d", cpu);
		ASSERT_LE(0, topology_cpu_core(t, cpu));
		ASSERT_LT(topology_cpu_core(t, cpu), topology_nr_cores(t));
	}
	/* dense and in package-id order */
	for (int s = 1; s < topology_nr_sockets(t); s++) {
		ASSERT_LT(topology_socket_package_id(t, s - 1), topology_socket_package_id(t, s));
	}
	TH_LOG("%d CPUs, %d cores, %d sockets, %d LLCs of %llu bytes", topology_nr_cpus(t),
	       topology_nr_cores(t), topology_nr_sockets(t), topology_nr_llcs(t),
	       (unsigned long long)topology_llc_bytes(t));
	topology_close(t);
}

TEST(topology_open__gap_in_package_ids_numbers_sockets_densely)
{
	static const int ids[] = { 0, 2 };
	struct coloc_err err = { 0 };
	struct topology *t;
	char xml[16384];

	/* packages 0 and 2, 2 cores of 2 PUs each: CPUs 0-3 and 4-7 */
	ASSERT_EQ(0, tu_topology_xml(xml, sizeof(xml), ids, 2, 2, 2, 32ull << 20));
	ASSERT_EQ(0, topology_open(xml, &t, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(8, topology_nr_cpus(t));
	ASSERT_EQ(4, topology_nr_cores(t));
	ASSERT_EQ(2, topology_nr_sockets(t));
	ASSERT_EQ(2, topology_nr_llcs(t));
	ASSERT_EQ(32ull << 20, topology_llc_bytes(t));
	for (int cpu = 0; cpu < 8; cpu++) {
		ASSERT_EQ(cpu, topology_cpus(t)[cpu]);
		ASSERT_EQ(cpu / 4, topology_cpu_socket(t, cpu)) TH_LOG("cpu %d", cpu);
		ASSERT_EQ(cpu / 2, topology_cpu_core(t, cpu)) TH_LOG("cpu %d", cpu);
		ASSERT_EQ(cpu / 4, topology_cpu_llc(t, cpu)) TH_LOG("cpu %d", cpu);
	}
	ASSERT_EQ(0, topology_socket_package_id(t, 0));
	ASSERT_EQ(2, topology_socket_package_id(t, 1));
	ASSERT_EQ(-1, topology_socket_package_id(t, 2));
	ASSERT_EQ(-1, topology_cpu_socket(t, 8));
	ASSERT_EQ(-1, topology_cpu_socket(t, -1));
	topology_close(t);
}

TEST(topology_open__sockets_follow_package_ids_not_cpu_order)
{
	/* CPUs 0-1 sit in package 5, 2-3 in package 0, 4-5 in package 2 */
	static const int ids[] = { 5, 0, 2 };
	static const int socket_of_cpu[] = { 2, 2, 0, 0, 1, 1 };
	struct coloc_err err = { 0 };
	struct topology *t;
	char xml[16384];

	ASSERT_EQ(0, tu_topology_xml(xml, sizeof(xml), ids, 3, 2, 1, 8ull << 20));
	ASSERT_EQ(0, topology_open(xml, &t, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(3, topology_nr_sockets(t));
	ASSERT_EQ(6, topology_nr_cores(t));
	for (int cpu = 0; cpu < 6; cpu++) {
		ASSERT_EQ(socket_of_cpu[cpu], topology_cpu_socket(t, cpu)) TH_LOG("cpu %d", cpu);
	}
	ASSERT_EQ(0, topology_socket_package_id(t, 0));
	ASSERT_EQ(2, topology_socket_package_id(t, 1));
	ASSERT_EQ(5, topology_socket_package_id(t, 2));
	topology_close(t);
}

TEST(topology_open__bad_xml_is_an_error_that_says_so)
{
	struct coloc_err err = { 0 };
	struct topology *t = (struct topology *)&err;

	ASSERT_EQ(-EINVAL, topology_open("<topology version=\"2.0\"><object", &t, &err));
	ASSERT_NULL(t);
	ASSERT_EQ(-EINVAL, err.code);
	ASSERT_NE(NULL, strstr(err.msg, "XML")) TH_LOG("%s", err.msg);
}

TEST_HARNESS_MAIN
