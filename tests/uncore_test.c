// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of uncore memory-bandwidth discovery (daemon/uncore.c). Parsing is
 * checked on sysfs trees the tests write into a temporary directory, on
 * machines fed as hwloc XML (with gaps in package ids, and sockets whose
 * memory controllers sysfs does not show); on a machine without an uncore
 * PMU the real uncore_open() must find nothing. Run as root: reading real
 * counts needs CPU-wide perf events.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>

#include "kselftest_harness.h"
#include "pmu.h"
#include "testutil.h"
#include "uncore.h"

/* ---- uncore ----------------------------------------------------------------- */

FIXTURE(uncore)
{
	char root[64];
	struct coloc_err err;
	struct topology *topo; /* packages 0 and 1 of 2 cores each: CPUs 0-1 and 2-3 */
};

FIXTURE_SETUP(uncore)
{
	static const int ids[] = { 0, 1 };
	char xml[8192];

	snprintf(self->root, sizeof(self->root), "/tmp/coloc-uncore-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->root));
	coloc_err_clear(&self->err);
	ASSERT_EQ(0, tu_topology_xml(xml, sizeof(xml), ids, 2, 2, 1, 16ull << 20));
	ASSERT_EQ(0, topology_open(xml, &self->topo, NULL));
}

static int test_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

FIXTURE_TEARDOWN(uncore)
{
	topology_close(self->topo);
	nftw(self->root, test_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* Writes root/rel (creating its directories) with content. */
static int test_write(const char *root, const char *rel, const char *content)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "%s\n", content);
	return fclose(f) ? -errno : 0;
}

#define DEV "sys/bus/event_source/devices/"

static void test_imc_pmu(struct __test_metadata *_metadata, const char *root, const char *name,
			 const char *type, const char *cpumask)
{
	char rel[256];
	static const char *const files[][2] = {
		{ "format/event", "config:0-7" },
		{ "format/umask", "config:8-15" },
		{ "events/cas_count_read", "event=0x04,umask=0x03" },
		{ "events/cas_count_read.scale", "6.103515625e-5" },
		{ "events/cas_count_read.unit", "MiB" },
		{ "events/cas_count_write", "event=0x04,umask=0x0c" },
		{ "events/cas_count_write.scale", "6.103515625e-5" },
		{ "events/cas_count_write.unit", "MiB" },
	};

	snprintf(rel, sizeof(rel), DEV "%s/type", name);
	ASSERT_EQ(0, test_write(root, rel, type));
	snprintf(rel, sizeof(rel), DEV "%s/cpumask", name);
	ASSERT_EQ(0, test_write(root, rel, cpumask));
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		snprintf(rel, sizeof(rel), DEV "%s/%s", name, files[i][0]);
		ASSERT_EQ(0, test_write(root, rel, files[i][1]));
	}
}

TEST_F(uncore, encode_terms__places_split_bit_ranges)
{
	char dir[128];
	__u64 cfg[3];

	ASSERT_EQ(0, test_write(self->root, DEV "amd_df/format/event", "config:0-7,32-35,59-60"));
	ASSERT_EQ(0, test_write(self->root, DEV "amd_df/format/umask", "config:8-15"));
	ASSERT_EQ(0, test_write(self->root, DEV "amd_df/format/edge", "config:18"));
	ASSERT_EQ(0, test_write(self->root, DEV "amd_df/format/filter", "config1:0-31"));
	snprintf(dir, sizeof(dir), "%s/" DEV "amd_df", self->root);

	/* 0x1f4: 0xf4 -> 7:0, 0x1 -> 35:32; umask 0x38 -> 15:8; edge -> bit 18 */
	ASSERT_EQ(0, uncore_encode_terms(dir, "event=0x1f4,umask=0x38,edge", cfg, &self->err));
	ASSERT_EQ(0x1000438f4ull, cfg[0]);
	ASSERT_EQ(0, cfg[1]);
	/* 0x3000: 0x00 -> 7:0, 0x0 -> 35:32, 0x3 (bits 13:12) -> 60:59 */
	ASSERT_EQ(0, uncore_encode_terms(dir, "event=0x3000", cfg, NULL));
	ASSERT_EQ(0x1800000000000000ull, cfg[0]);
	ASSERT_EQ(0, uncore_encode_terms(dir, " filter=0xdeadbeef , umask=1", cfg, NULL));
	ASSERT_EQ(0xdeadbeefull, cfg[1]);
	ASSERT_EQ(0x100ull, cfg[0]);
}

TEST_F(uncore, encode_terms__rejects_bad_terms_with_a_message)
{
	char dir[128];
	__u64 cfg[3];

	ASSERT_EQ(0, test_write(self->root, DEV "uncore_imc_0/format/umask", "config:8-15"));
	ASSERT_EQ(0, test_write(self->root, DEV "uncore_imc_0/format/bad", "cfg:0-7"));
	ASSERT_EQ(0, test_write(self->root, DEV "uncore_imc_0/format/rev", "config:7-3"));
	snprintf(dir, sizeof(dir), "%s/" DEV "uncore_imc_0", self->root);

	ASSERT_EQ(-ERANGE, uncore_encode_terms(dir, "umask=0x100", cfg, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "config:8-15"));
	coloc_err_clear(&self->err);
	ASSERT_EQ(-ENOENT, uncore_encode_terms(dir, "thresh=1", cfg, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "thresh"));
	ASSERT_EQ(-EINVAL, uncore_encode_terms(dir, "umask=zz", cfg, NULL));
	ASSERT_EQ(-EINVAL, uncore_encode_terms(dir, "umask=-1", cfg, NULL));
	ASSERT_EQ(-EINVAL, uncore_encode_terms(dir, "../../x=1", cfg, NULL));
	ASSERT_EQ(-EINVAL, uncore_encode_terms(dir, "bad=1", cfg, NULL));
	ASSERT_EQ(-EINVAL, uncore_encode_terms(dir, "rev=1", cfg, NULL));
}

TEST_F(uncore, encode_alias__cas_count_scale_is_64_bytes)
{
	char dir[128];
	double bpc = 0;
	bool scaled = false;
	__u64 cfg[3];

	test_imc_pmu(_metadata, self->root, "uncore_imc_0", "13", "0");
	snprintf(dir, sizeof(dir), "%s/" DEV "uncore_imc_0", self->root);
	ASSERT_EQ(0, uncore_encode_alias(dir, "cas_count_write", cfg, &bpc, &scaled, &self->err));
	ASSERT_EQ(0x0c04ull, cfg[0]);
	ASSERT_TRUE(scaled);
	/* 6.103515625e-5 MiB = 2^-14 * 2^20 bytes */
	ASSERT_TRUE(bpc == 64.0);
	ASSERT_EQ(-ENOENT, uncore_encode_alias(dir, "data_reads", cfg, &bpc, &scaled, NULL));
	ASSERT_EQ(0, test_write(self->root, DEV "uncore_imc_0/events/x.unit", "Joules"));
	ASSERT_EQ(0, test_write(self->root, DEV "uncore_imc_0/events/x", "umask=1"));
	ASSERT_EQ(-EINVAL, uncore_encode_alias(dir, "x", cfg, &bpc, &scaled, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "Joules"));
}

TEST_F(uncore, open_at__plans_imc_channels_per_socket)
{
	const struct uncore_channel *ch;
	struct uncore *u;

	/* two sockets: cpu 0 in package 0, cpu 2 in package 1; PMU names sort numerically */
	test_imc_pmu(_metadata, self->root, "uncore_imc_10", "23", "0,2");
	test_imc_pmu(_metadata, self->root, "uncore_imc_2", "15", "0,2");
	ASSERT_EQ(0, test_write(self->root, DEV "uncore_imc_free_running_0/type", "30"));
	ASSERT_EQ(0, test_write(self->root, DEV "power/type", "9"));

	ASSERT_EQ(0, uncore_open_at(self->root, self->topo, UNCORE_PARSE_ONLY, &u, &self->err));
	ASSERT_EQ(2, uncore_nr_sockets(u));
	ASSERT_EQ(4, uncore_nr_channels(u));
	ASSERT_STREQ("uncore membw: 2 sockets via uncore_imc (4 channels)", uncore_describe(u));
	ch = uncore_channel(u, 0);
	ASSERT_STREQ("uncore_imc_2", ch->pmu);
	ASSERT_EQ(15, ch->type);
	ASSERT_EQ(0, ch->cpu);
	ASSERT_EQ(0, ch->socket);
	ASSERT_EQ(0x0304ull, ch->read_config[0]);
	ASSERT_EQ(0x0c04ull, ch->write_config[0]);
	ASSERT_TRUE(ch->read_bytes_per_count == 64.0);
	ch = uncore_channel(u, 3);
	ASSERT_STREQ("uncore_imc_10", ch->pmu);
	ASSERT_EQ(23, ch->type);
	ASSERT_EQ(2, ch->cpu);
	ASSERT_EQ(1, ch->socket);
	ASSERT_EQ(1, ch->package_id);
	ASSERT_NULL(uncore_channel(u, 4));
	{
		__u64 rd, wr;

		/* a parse-only set has no counters to read, and says so */
		ASSERT_EQ(-EBADF, uncore_read(u, 0, &rd, &wr));
		ASSERT_EQ(-EINVAL, uncore_read(u, 2, &rd, &wr));
		ASSERT_EQ(-EINVAL, uncore_read(u, -1, &rd, &wr));
	}
	uncore_close(u);
}

/*
 * The bug a second socket numbering made: packages 0, 2 and 3, and sysfs
 * shows memory controllers only on CPUs of packages 0 and 3. Package 3 is
 * socket 2 everywhere (the raw id would say 3, a count of the sockets with
 * controllers 1), and socket 1 has no bandwidth rather than package 3's.
 */
TEST_F(uncore, open_at__gap_in_package_ids_keeps_the_topology_socket)
{
	static const int ids[] = { 0, 2, 3 };
	const struct uncore_channel *ch;
	struct topology *topo;
	struct uncore *u;
	char xml[16384];
	__u64 rd, wr;

	ASSERT_EQ(0, tu_topology_xml(xml, sizeof(xml), ids, 3, 2, 1, 16ull << 20));
	ASSERT_EQ(0, topology_open(xml, &topo, &self->err)) TH_LOG("%s", self->err.msg);
	test_imc_pmu(_metadata, self->root, "uncore_imc_0", "13", "0,4");
	test_imc_pmu(_metadata, self->root, "uncore_imc_1", "14", "0,4");

	ASSERT_EQ(0, uncore_open_at(self->root, topo, UNCORE_PARSE_ONLY, &u, &self->err));
	ASSERT_EQ(4, uncore_nr_channels(u));
	ASSERT_EQ(2, uncore_nr_sockets(u));
	ASSERT_STREQ("uncore membw: 2 sockets via uncore_imc (4 channels)", uncore_describe(u));
	for (int i = 0; i < 4; i++) {
		ch = uncore_channel(u, i);
		ASSERT_EQ(topology_cpu_socket(topo, ch->cpu), ch->socket) TH_LOG("channel %d", i);
		ASSERT_EQ(ch->cpu == 0 ? 0 : 2, ch->socket) TH_LOG("channel %d cpu %d", i, ch->cpu);
		ASSERT_EQ(ch->cpu == 0 ? 0 : 3, ch->package_id) TH_LOG("channel %d", i);
	}
	/* socket 1 (package 2) exists and shows no memory controller */
	ASSERT_EQ(-ENOENT, uncore_read(u, 1, &rd, &wr));
	ASSERT_EQ(-EBADF, uncore_read(u, 2, &rd, &wr));
	ASSERT_EQ(-EINVAL, uncore_read(u, 3, &rd, &wr));
	uncore_close(u);
	topology_close(topo);
}

TEST_F(uncore, open_at__amd_umc_encodes_rdwrmask_from_format)
{
	const struct uncore_channel *ch;
	struct uncore *u;

	for (int i = 0; i < 2; i++) {
		char rel[128];

		snprintf(rel, sizeof(rel), DEV "amd_umc_%d/type", i);
		ASSERT_EQ(0, test_write(self->root, rel, i ? "26" : "25"));
		snprintf(rel, sizeof(rel), DEV "amd_umc_%d/cpumask", i);
		ASSERT_EQ(0, test_write(self->root, rel, "0"));
		snprintf(rel, sizeof(rel), DEV "amd_umc_%d/format/event", i);
		ASSERT_EQ(0, test_write(self->root, rel, "config:0-7"));
		snprintf(rel, sizeof(rel), DEV "amd_umc_%d/format/rdwrmask", i);
		ASSERT_EQ(0, test_write(self->root, rel, "config:8-9"));
	}
	ASSERT_EQ(0, test_write(self->root, DEV "amd_df/type", "11"));

	ASSERT_EQ(0, uncore_open_at(self->root, self->topo, UNCORE_PARSE_ONLY, &u, &self->err));
	ASSERT_EQ(1, uncore_nr_sockets(u));
	ASSERT_EQ(2, uncore_nr_channels(u));
	ASSERT_STREQ("uncore membw: 1 socket via amd_umc (2 channels)", uncore_describe(u));
	ch = uncore_channel(u, 1);
	ASSERT_STREQ("amd_umc_1", ch->pmu);
	ASSERT_EQ(26, ch->type);
	/* umc_cas_cmd.rd / .wr: event 0x0a, rdwrmask 1 / 2 at config 9:8 */
	ASSERT_EQ(0x10aull, ch->read_config[0]);
	ASSERT_EQ(0x20aull, ch->write_config[0]);
	ASSERT_TRUE(ch->write_bytes_per_count == 64.0);
	uncore_close(u);
}

TEST_F(uncore, open_at__skips_malformed_pmu_and_says_why)
{
	struct uncore *u;

	test_imc_pmu(_metadata, self->root, "uncore_imc_0", "13", "zero");
	ASSERT_EQ(0, test_write(self->root, DEV "amd_df/type", "11"));
	ASSERT_EQ(0, uncore_open_at(self->root, self->topo, UNCORE_PARSE_ONLY, &u, &self->err));
	ASSERT_EQ(0, uncore_nr_sockets(u));
	ASSERT_STREQ("uncore membw: none (uncore_imc_0: missing, empty or bad 'cpumask')",
		     uncore_describe(u));
	uncore_close(u);

	/* a good PMU beside it still counts; a CPU not online drops its whole PMU */
	test_imc_pmu(_metadata, self->root, "uncore_imc_1", "14", "0");
	test_imc_pmu(_metadata, self->root, "uncore_imc_2", "15", "0,9");
	ASSERT_EQ(0, uncore_open_at(self->root, self->topo, UNCORE_PARSE_ONLY, &u, &self->err));
	ASSERT_EQ(1, uncore_nr_sockets(u));
	ASSERT_EQ(1, uncore_nr_channels(u));
	ASSERT_STREQ("uncore_imc_1", uncore_channel(u, 0)->pmu);
	ASSERT_STREQ("uncore membw: 1 socket via uncore_imc (1 channel) "
		     "[skipped uncore_imc_0: missing, empty or bad 'cpumask']",
		     uncore_describe(u));
	uncore_close(u);
}

TEST_F(uncore, open_at__empty_tree_has_no_sockets)
{
	struct uncore *u;
	__u64 rd, wr;

	ASSERT_EQ(0, uncore_open_at(self->root, self->topo, 0, &u, &self->err));
	ASSERT_EQ(0, uncore_nr_sockets(u));
	ASSERT_STREQ("uncore membw: none (no uncore_imc/amd_umc PMU)", uncore_describe(u));
	/* the sockets exist, their memory controllers are not visible */
	ASSERT_EQ(-ENOENT, uncore_read(u, 0, &rd, &wr));
	ASSERT_EQ(-EINVAL, uncore_read(u, 2, &rd, &wr));
	uncore_close(u);
	ASSERT_EQ(-EINVAL, uncore_open_at(self->root, self->topo, 0x80, &u, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "bad arguments"));
}

TEST_F(uncore, open_at__kernel_refusal_leaves_empty_set_that_says_why)
{
	char expected[128];
	struct uncore *u;
	int fd;

	/* a PMU type no kernel registers: the real perf_event_open() refuses it */
	test_imc_pmu(_metadata, self->root, "uncore_imc_0", "2147483000", "0");
	fd = tu_perf_open(2147483000u, 0x0304, 0);
	ASSERT_GT(0, fd);
	snprintf(expected, sizeof(expected),
		 "uncore membw: none (perf_event_open(uncore_imc_0 on cpu 0): %s)",
		 strerrorname_np(-fd));

	ASSERT_EQ(0, uncore_open_at(self->root, self->topo, 0, &u, &self->err));
	ASSERT_EQ(0, uncore_nr_sockets(u));
	ASSERT_EQ(0, uncore_nr_channels(u));
	ASSERT_STREQ(expected, uncore_describe(u));
	uncore_close(u);
}

/*
 * The read path on real counters: a tree that puts the kernel's software PMU
 * (type 1) where an IMC would be, page faults as "reads" and context switches
 * as "writes", each scaled to 64 bytes per count like cas_count_*.
 */
TEST_F(uncore, read__sums_real_counts_scaled_to_bytes)
{
	const int pages = 64, sleeps = 20;
	long page = sysconf(_SC_PAGESIZE);
	__u64 rd0, wr0, rd1, wr1;
	struct topology *machine;
	struct uncore *u;
	char text[16];
	int cpu = sched_getcpu(), socket;
	char *mem;

	TU_SKIP_UNLESS_CPU_WIDE();
	ASSERT_LE(0, cpu);
	ASSERT_EQ(0, tu_pin_self(cpu));
	test_imc_pmu(_metadata, self->root, "uncore_imc_0", "1", "");
	snprintf(text, sizeof(text), "%d", cpu);
	ASSERT_EQ(0, test_write(self->root, DEV "uncore_imc_0/cpumask", text));
	ASSERT_EQ(0, test_write(self->root, DEV "uncore_imc_0/format/event", "config:0-63"));
	ASSERT_EQ(0, test_write(self->root, DEV "uncore_imc_0/events/cas_count_read", "event=0x2"));
	ASSERT_EQ(0,
		  test_write(self->root, DEV "uncore_imc_0/events/cas_count_write", "event=0x3"));
	/* the counters are real, so is the CPU they are opened on: the machine's topology */
	ASSERT_EQ(0, topology_open(NULL, &machine, &self->err)) TH_LOG("%s", self->err.msg);
	socket = topology_cpu_socket(machine, cpu);

	ASSERT_EQ(0, uncore_open_at(self->root, machine, 0, &u, &self->err));
	topology_close(machine);
	ASSERT_EQ(1, uncore_nr_sockets(u)) TH_LOG("%s", uncore_describe(u));
	ASSERT_EQ(PERF_COUNT_SW_PAGE_FAULTS, uncore_channel(u, 0)->read_config[0]);
	ASSERT_EQ(socket, uncore_channel(u, 0)->socket);
	ASSERT_EQ(0, uncore_read(u, socket, &rd0, &wr0));
	mem = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	madvise(mem, pages * page, MADV_NOHUGEPAGE);
	for (int p = 0; p < pages; p++)
		mem[p * page] = 1;
	munmap(mem, pages * page);
	for (int s = 0; s < sleeps; s++)
		usleep(500);
	ASSERT_EQ(0, uncore_read(u, socket, &rd1, &wr1));
	uncore_close(u);

	/* whole 64-byte lines, at least one per fresh page and one per sleep */
	ASSERT_EQ(0, rd1 % 64);
	ASSERT_EQ(0, wr1 % 64);
	ASSERT_LE((__u64)pages * 64, rd1 - rd0);
	ASSERT_LE((__u64)sleeps * 64, wr1 - wr0);
}

TEST_F(uncore, open__matches_the_machines_sysfs)
{
	int imc_or_umc = 0;
	struct dirent *de;
	struct uncore *u;
	DIR *d;

	ASSERT_EQ(0, uncore_open(&u));
	TH_LOG("%s", uncore_describe(u));
	d = opendir("/sys/bus/event_source/devices");
	ASSERT_NE(NULL, d);
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "uncore_imc", 10) || !strncmp(de->d_name, "amd_umc_", 8))
			imc_or_umc++;
	closedir(d);
	if (!imc_or_umc) {
		ASSERT_EQ(0, uncore_nr_sockets(u));
		ASSERT_NE(NULL, strstr(uncore_describe(u), "none"));
	} else {
		__u64 rd0, wr0, rd1, wr1;

		ASSERT_LT(0, uncore_nr_sockets(u));
		ASSERT_EQ(0, uncore_read(u, 0, &rd0, &wr0));
		usleep(20 * 1000);
		ASSERT_EQ(0, uncore_read(u, 0, &rd1, &wr1));
		ASSERT_LE(rd0, rd1);
		ASSERT_LE(wr0, wr1);
	}
	uncore_close(u);
}

TEST_HARNESS_MAIN
