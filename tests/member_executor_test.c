// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd against a member's executor: one that stalls mid-block below the
 * hang limit (daemon/serving_overrun.c), and what other local users see of
 * one (docs/security-executor.md). A real colocd serving one CPU, whose
 * --executor is tests/hostile_executor.c; the tenant hostile-stall takes
 * its first block and stalls in it until the test sends SIGUSR1, the
 * honest tenant runs the real executor. The stalled block overruns its
 * bound and gives its core back, so the honest tenant's query is
 * answered while the stalled one is still out and its tenant still ready
 * (without the bound they waited until the hang limit killed it); once
 * woken, the late block completes OK and both tenants go on serving. The
 * tenant hostile-spin starts threads that spin on no block: its cgroup is
 * idle while it holds no core, and the honest tenant's blocks run at
 * their table's pace beside them, with no overrun charged. An
 * executor's command line, which every user reads, names neither its
 * tenant nor its model; its environment, which does, only root reads.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <grp.h>
#include <unistd.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "own_colocd.h"
#include "testutil.h"

#define READY_S 180
#define WAIT_S 60

static char cache_dir[64];

__attribute__((constructor)) static void make_cache_dir(void)
{
	tu_shared_tmpdir("member-executor-test", cache_dir, sizeof(cache_dir));
}

FIXTURE(member)
{
	struct own_colocd d;
};

FIXTURE_SETUP(member)
{
	char why[8192];
	cpu_set_t all, one;
	int r = own_colocd_prepare(&self->d, "member", cache_dir, true, why, sizeof(why));

	if (r > 0)
		SKIP(return, "%.900s", why);
	ASSERT_EQ(0, r) TH_LOG("%s", why);
	/* colocd serves the CPUs it may run on: one, which the stalled block holds */
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(all), &all));
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &all)) {
			CPU_SET(c, &one);
			break;
		}
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(one), &one));
	own_colocd_start(&self->d, NULL);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(all), &all));
	ASSERT_LT(0, self->d.pid) TH_LOG("colocd did not start");
}

FIXTURE_TEARDOWN(member)
{
	if (own_colocd_finish(&self->d))
		TH_LOG("could not remove %s", self->d.dir);
}

/* The number after "key": in out, or -1. */
static long json_num(const char *out, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(out, pat);
	return p ? strtol(p + strlen(pat), NULL, 10) : -1;
}

/* Submits tenant name and waits until it is ready: its executor's pid, 0 if never. */
static pid_t submit_ready(FIXTURE_DATA(member) * self, const char *name)
{
	char args[PATH_MAX + 128], out[16384];

	snprintf(args, sizeof(args), "submit %s %s --qos-ms 60000", name, self->d.model);
	if (tu_colocctl(self->d.sock, args, out, sizeof(out)))
		return 0;
	snprintf(args, sizeof(args), "status %s --json", name);
	for (int i = 0; i < READY_S * 10; i++, usleep(100000))
		if (!tu_colocctl(self->d.sock, args, out, sizeof(out)) &&
		    strstr(out, "\"state\":\"ready\""))
			return (pid_t)json_num(out, "pid");
	return 0;
}

/* Tenant name's status --json into out; 0 or colocctl's status. */
static int status_of(FIXTURE_DATA(member) * self, const char *name, char *out, size_t len)
{
	char args[128];

	snprintf(args, sizeof(args), "status %s --json", name);
	return tu_colocctl(self->d.sock, args, out, len);
}

/* Whether the child has not exited yet (it is not reaped here). */
static bool still_running(const struct tu_child *c)
{
	siginfo_t info = { 0 };

	return !waitid(P_PID, (id_t)c->pid, &info, WEXITED | WNOHANG | WNOWAIT) && !info.si_pid;
}

/*
 * The number in file (cpu.idle, cpu.weight, ...) of pid's tenant folder:
 * v1, its cgroup in the cpu hierarchy; v2, the parent of its leaf. -1 if
 * there is none to read.
 */
static long cpu_file_of(pid_t pid, const char *name)
{
	char cg[PATH_MAX], file[PATH_MAX + 64];
	FILE *f;
	long v = -1;

	file[0] = '\0';
	if (!tu_proc_cgroup(pid, "cpu", cg, sizeof(cg)))
		snprintf(file, sizeof(file), "/sys/fs/cgroup/cpu%s/%s", cg, name);
	else if (!tu_proc_cgroup(pid, "", cg, sizeof(cg)) && strrchr(cg, '/'))
		snprintf(file, sizeof(file), "/sys/fs/cgroup%.*s/%s", (int)(strrchr(cg, '/') - cg),
			 cg, name);
	f = file[0] ? fopen(file, "re") : NULL;
	if (f && fscanf(f, "%ld", &v) != 1)
		v = -1;
	if (f)
		fclose(f);
	return v;
}

/* Whether pid's tenant weighs v2 (its cpu.weight) or, without one, v1 (cpu.shares). */
static bool cpu_weight_is(pid_t pid, long v2, long v1)
{
	long w = cpu_file_of(pid, "cpu.weight");

	return w > 0 ? w == v2 : cpu_file_of(pid, "cpu.shares") == v1;
}

/*
 * The stalled block gives its only core back at its bound: the honest
 * tenant's queries are answered while the stalled query is still out and
 * its tenant ready, its overrun counted; woken, it completes OK, and both
 * tenants serve again on the core it no longer holds.
 */
TEST_F_TIMEOUT(member, stall__the_core_goes_to_the_honest_tenant_while_it_lasts, 600)
{
	const char *args[] = { "--socket", self->d.sock, "infer", "hostile-stall", NULL };
	char bin[512], out[16384];
	struct tu_child stalled;
	pid_t honest, hostile;
	int i;

	honest = submit_ready(self, "honest");
	hostile = submit_ready(self, "hostile-stall");
	ASSERT_LT(0, honest);
	ASSERT_LT(0, hostile);
	ASSERT_EQ(0, tu_child_start(tu_bin("colocctl", bin, sizeof(bin)), args, &stalled));
	/* its block sent, and the executor stalling in it (it never completes on its own) */
	for (i = 0; i < WAIT_S * 20; i++, usleep(50000))
		if (!status_of(self, "hostile-stall", out, sizeof(out)) &&
		    json_num(out, "in_flight") == 1)
			break;
	ASSERT_EQ(1, json_num(out, "in_flight")) TH_LOG("%s", out);

	/* one query: under ASan at load three could outlast the late block's hang limit */
	EXPECT_EQ(0, tu_colocctl(self->d.sock, "infer honest", out, sizeof(out))) TH_LOG("%s", out);
	/* answered while the stalled block is still out: not killed as hung, not completed */
	EXPECT_TRUE(still_running(&stalled));
	ASSERT_EQ(0, status_of(self, "hostile-stall", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "\"state\":\"ready\"")) TH_LOG("%s", out);
	EXPECT_EQ(1, json_num(out, "in_flight")) TH_LOG("%s", out);
	EXPECT_EQ(1, json_num(out, "overruns")) TH_LOG("%s", out);
	/* late: not idle, at the lowest weight (on main the default: 1/2 of the core) */
	if (cpu_file_of(hostile, "cpu.idle") >= 0) {
		EXPECT_EQ(0, cpu_file_of(hostile, "cpu.idle"));
		EXPECT_TRUE(cpu_weight_is(hostile, 1, 2))
		TH_LOG("cpu.weight %ld, cpu.shares %ld", cpu_file_of(hostile, "cpu.weight"),
		       cpu_file_of(hostile, "cpu.shares"));
	}

	/* woken: the late block ends OK and frees nothing twice */
	ASSERT_EQ(0, kill(hostile, SIGUSR1));
	ASSERT_EQ(0, tu_child_finish(&stalled));
	EXPECT_TRUE(tu_child_exited_with(&stalled, 0)) TH_LOG("%s", stalled.output);
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(0, tu_colocctl(self->d.sock, "infer honest", out, sizeof(out)))
		TH_LOG("%s", out);
		EXPECT_EQ(0, tu_colocctl(self->d.sock, "infer hostile-stall", out, sizeof(out)))
		TH_LOG("%s", out);
	}
	ASSERT_EQ(0, status_of(self, "hostile-stall", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "\"state\":\"ready\"")) TH_LOG("%s", out);
	EXPECT_EQ(0, json_num(out, "in_flight")) TH_LOG("%s", out);
	EXPECT_EQ(1, json_num(out, "overruns")) TH_LOG("%s", out);
	/* nothing out: idle (the kernel's idle weight; cpu.idle 0 gives back the default) */
	if (cpu_file_of(hostile, "cpu.idle") >= 0)
		EXPECT_EQ(1, cpu_file_of(hostile, "cpu.idle"));
}

/*
 * Tenant name's blocks in the block log: the sum of their measured times
 * over the sum of their table's (alone_us); -1 if none. The slowest block's
 * line into slowest.
 */
static double block_time_ratio(const char *log, const char *name, char *slowest, size_t len)
{
	double measured = 0, alone = 0, worst = 0;
	char line[1024], copy[1024];
	FILE *f = fopen(log, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *col[12], *save = NULL, *p = line;
		int c = 0;

		snprintf(copy, sizeof(copy), "%s", line);
		while (c < 12 && (col[c] = strtok_r(p, "\t", &save)))
			p = NULL, c++;
		if (c < 12 || strcmp(col[1], name) || atof(col[8]) <= 0)
			continue;
		measured += atof(col[10]);
		alone += atof(col[8]);
		if (atof(col[10]) / atof(col[8]) > worst)
			snprintf(slowest, len, "%s", copy);
		worst = atof(col[10]) / atof(col[8]) > worst ? atof(col[10]) / atof(col[8]) : worst;
	}
	fclose(f);
	return alone > 0 ? measured / alone : -1;
}

/*
 * A tenant whose executor spins threads on no block (hostile-spin) on the
 * core the honest tenant's blocks run on: its cgroup reads cpu.idle 1
 * while it holds no core; the honest blocks take in all less than half
 * what 32 spinners beside them cost on main (1/33 of the core: 31.8x
 * their table, and 20 of 20 commands overran; 9.6x here at load 24 from
 * the host's other work, at nice 19 as the test); at most 2 of the honest commands overrun (on a
 * loaded host a block may stall where its threads' CPU pressure does not
 * show it: a vCPU the hypervisor preempts); the honest tenant's cgroup
 * is idle again once its queries are answered.
 */
TEST_F_TIMEOUT(member, spin__threads_on_no_block_take_only_idle_time, 600)
{
	char out[16384];
	pid_t honest, hog;
	double ratio;
	int failed = 0;

	honest = submit_ready(self, "honest");
	hog = submit_ready(self, "hostile-spin");
	ASSERT_LT(0, honest);
	ASSERT_LT(0, hog);
	EXPECT_EQ(1, cpu_file_of(hog, "cpu.idle"));
	for (int i = 0; i < 20; i++)
		if (tu_colocctl(self->d.sock, "infer honest", out, sizeof(out)) && !failed++)
			TH_LOG("%s", out);
	EXPECT_EQ(0, failed);
	ASSERT_EQ(0, status_of(self, "honest", out, sizeof(out)));
	EXPECT_GE(2, json_num(out, "overruns")) TH_LOG("%s", out);
	EXPECT_LE(0, json_num(out, "overruns"));
	EXPECT_EQ(1, cpu_file_of(honest, "cpu.idle"));
	EXPECT_EQ(1, cpu_file_of(hog, "cpu.idle"));
	ASSERT_EQ(0, status_of(self, "hostile-spin", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "\"state\":\"ready\"")) TH_LOG("%s", out);
	ratio = block_time_ratio(self->d.blocks, "honest", out, sizeof(out));
	TH_LOG("honest blocks: measured / table %.2f in all; the slowest: %s", ratio, out);
	EXPECT_LT(0, ratio);
	EXPECT_GT(16.0, ratio);
}

/* Waits until tenant name's status says failed, for why: its status into out. */
static bool failed_for(FIXTURE_DATA(member) * self, const char *name, const char *why, char *out,
		       size_t len)
{
	for (int i = 0; i < WAIT_S * 10; i++, usleep(100000))
		if (!status_of(self, name, out, len) && strstr(out, "\"state\":\"failed\"") &&
		    strstr(out, why))
			return true;
	return false;
}

#define SLOT_PAGES_GIVEN_BACK "gave its query slots' pages back"

/*
 * An executor that declares a query as large as its slots (16 MiB in, 16
 * out) and never allocates their pages: colocd allocates none of them for
 * it (on main its copies faulted in and kept 32 MiB a query, in colocd's
 * RssShmem and its own memory cgroup), the query and the tenant fail for
 * it, and the honest tenant answers on.
 */
TEST_F_TIMEOUT(member, bigkeep__colocd_faults_in_no_slot_page_for_it, 600)
{
	char out[16384];
	long before, after;

	ASSERT_LT(0, submit_ready(self, "honest"));
	ASSERT_LT(0, submit_ready(self, "hostile-bigkeep"));
	before = tu_proc_status_kb(self->d.pid, "RssShmem");
	ASSERT_LE(0, before);
	EXPECT_NE(0, tu_colocctl(self->d.sock, "infer hostile-bigkeep", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, SLOT_PAGES_GIVEN_BACK)) TH_LOG("%s", out);
	after = tu_proc_status_kb(self->d.pid, "RssShmem");
	TH_LOG("colocd's RssShmem %ld kB before the query, %ld kB after", before, after);
	EXPECT_GT(16 << 10, after - before);
	EXPECT_TRUE(failed_for(self, "hostile-bigkeep", SLOT_PAGES_GIVEN_BACK, out, sizeof(out)))
	TH_LOG("%s", out);
	EXPECT_EQ(0, tu_colocctl(self->d.sock, "infer honest", out, sizeof(out))) TH_LOG("%s", out);
}

/*
 * An executor that allocates its slots at ready, as the real one does, and
 * from its first block on gives them back every way it has and takes them
 * again, in a loop that races colocd's check of a slot and its copy into
 * it (hostile-punch): the memfd's seals refuse every way, so each of its
 * 20 queries is answered and colocd's RssShmem grows by no slot's input
 * (on main the second query failed for it, and so did the tenant).
 */
TEST_F_TIMEOUT(member, punch__slot_pages_cannot_be_given_back, 600)
{
	char out[16384];
	long before, after;

	ASSERT_LT(0, submit_ready(self, "honest"));
	ASSERT_LT(0, submit_ready(self, "hostile-punch"));
	EXPECT_EQ(0, tu_colocctl(self->d.sock, "infer hostile-punch", out, sizeof(out)))
	TH_LOG("%s", out);
	before = tu_proc_status_kb(self->d.pid, "RssShmem");
	for (int i = 0; i < 20; i++) {
		ASSERT_EQ(0, tu_colocctl(self->d.sock, "infer hostile-punch", out, sizeof(out)))
		TH_LOG("query %d: %s", i, out);
	}
	after = tu_proc_status_kb(self->d.pid, "RssShmem");
	TH_LOG("colocd's RssShmem %ld kB before the 20 queries, %ld kB after", before, after);
	EXPECT_LT(after - before, 64);
	ASSERT_EQ(0, status_of(self, "hostile-punch", out, sizeof(out)));
	EXPECT_EQ(NULL, strstr(out, "\"state\":\"failed\"")) TH_LOG("%s", out);
	EXPECT_EQ(0, tu_colocctl(self->d.sock, "infer honest", out, sizeof(out))) TH_LOG("%s", out);
}

/* /proc/pid/file read by nobody (uid and gid 65534) in a child: 0 if it could, else the errno. */
static int read_as_nobody(pid_t pid, const char *file)
{
	char path[64], buf[64];
	pid_t child;
	int st = -1;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, file);
	child = fork();
	if (child == 0) {
		int fd;

		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(255);
		fd = open(path, O_RDONLY);
		_exit(fd < 0 || read(fd, buf, sizeof(buf)) < 0 ? errno : 0);
	}
	if (child < 0 || waitpid(child, &st, 0) != child || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* /proc/pid/cmdline as root, its NULs made spaces; 0 or -errno. */
static int cmdline_of(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	for (ssize_t i = 0; i < n; i++)
		buf[i] = buf[i] ? buf[i] : ' ';
	buf[n] = '\0';
	return 0;
}

/*
 * A serving executor's command line (any user's to read) holds neither
 * its tenant's name nor the model's path as submitted; they are in its
 * environment, which another user cannot read.
 */
TEST_F_TIMEOUT(member, cmdline__names_neither_tenant_nor_model, 600)
{
	char cmdline[4096];
	pid_t pid = submit_ready(self, "secretive");

	ASSERT_LT(0, pid);
	ASSERT_EQ(0, cmdline_of(pid, cmdline, sizeof(cmdline)));
	TH_LOG("%s", cmdline);
	EXPECT_EQ(NULL, strstr(cmdline, "secretive"));
	EXPECT_EQ(NULL, strstr(cmdline, self->d.model));
	EXPECT_EQ(NULL, strstr(cmdline, "mobilenet"));
	EXPECT_EQ(0, read_as_nobody(pid, "cmdline"));
	EXPECT_EQ(EACCES, read_as_nobody(pid, "environ"));
}

TEST_HARNESS_MAIN
