// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The executors' sandbox (docs/security-sandbox.md), seen from outside and
 * tried from inside. From outside: a real colocd serving two tenants of
 * models/mobilenet_v2.model; each executor's /proc status (seccomp, no
 * privileges, a uid of its own that no user has, no groups), its cgroup
 * and the cpuset that follows its blocks' cores; and the refusal to run
 * without isolation unless colocd is told to. From inside: a process that
 * enters the sandbox as an executor does (exec_sandbox_enter) and then
 * tries what a compromised executor would.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "coloc/protocol.h"
#include "coloc/sensor.h"
#include "cpulist.h"
#include "exec_sandbox.h"
#include "fd_closer.h"
#include "own_colocd.h"
#include "sandbox.h"
#include "serving_internal.h"
#include "submit_stalled.h"
#include "testutil.h"

#define READY_S 180

static char cache_dir[64];

__attribute__((constructor)) static void make_cache_dir(void)
{
	tu_shared_tmpdir("sandbox-test", cache_dir, sizeof(cache_dir));
}

static int read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	while (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = '\0';
	return 0;
}

FIXTURE(daemon)
{
	struct own_colocd d;
};

/* The executor pid of tenant name once it is ready, from status --json; 0 if never. */
static pid_t ready_pid(FIXTURE_DATA(daemon) * self, const char *name, char *isolation, size_t len)
{
	char args[128], out[16384];

	snprintf(args, sizeof(args), "status %s --json", name);
	for (int i = 0; i < READY_S * 10; i++, usleep(100000)) {
		char *p, *q;

		if (tu_colocctl(self->d.sock, args, out, sizeof(out)) ||
		    !strstr(out, "\"state\":\"ready\"") || !(p = strstr(out, "\"pid\":")))
			continue;
		q = strstr(out, "\"isolation\":\"");
		if (q) {
			q += strlen("\"isolation\":\"");
			snprintf(isolation, len, "%.*s", (int)strcspn(q, "\""), q);
		}
		return (pid_t)atoi(p + strlen("\"pid\":"));
	}
	return 0;
}

FIXTURE_SETUP(daemon)
{
	char why[8192];
	int r = own_colocd_prepare(&self->d, "sandbox", cache_dir, false, why, sizeof(why));

	if (r > 0)
		SKIP(return, "%.900s", why);
	ASSERT_EQ(0, r) TH_LOG("%s", why);
}

FIXTURE_TEARDOWN(daemon)
{
	if (own_colocd_finish(&self->d))
		TH_LOG("could not remove %s", self->d.dir);
}

/*
 * Two tenants under the static policy (each owns half the cores): each
 * executor runs under seccomp with no privilege, in a uid of its own that
 * no user has and no other tenant's executor shares, with no group; in its
 * tenant's cgroup, whose cpuset after a few queries holds the cores of its
 * blocks: half the machine, the other tenant's half another.
 */
TEST_F_TIMEOUT(daemon, executor__own_uid_no_privilege_seccomp_cgroup_cpuset_follows, 600)
{
	const char *names[2] = { "sba", "sbb" };
	const char *policy[] = { "--policy", "static", NULL };
	char out[4096], args[PATH_MAX + 128], iso[512], val[256];
	char cpus[2][256] = { "", "" }, dirs[2][PATH_MAX + 64];
	int nr_cpus = tu_nr_online_cpus(), set[2][COLOC_MAX_CPUS], nr_set[2];
	unsigned long uids[2];
	pid_t pids[2];

	if (nr_cpus < 2)
		SKIP(return, "needs 2 CPUs for two tenants of their own cores");
	ASSERT_LT(0, own_colocd_start(&self->d, policy)) TH_LOG("colocd did not start");
	for (int t = 0; t < 2; t++) {
		snprintf(args, sizeof(args), "submit %s %s --qos-ms 60000", names[t],
			 self->d.model);
		ASSERT_EQ(0, tu_colocctl(self->d.sock, args, out, sizeof(out))) TH_LOG("%s", out);
	}
	for (int t = 0; t < 2; t++) {
		struct passwd *pw;

		pids[t] = ready_pid(self, names[t], iso, sizeof(iso));
		ASSERT_LT(0, pids[t]) TH_LOG("tenant %s never got ready", names[t]);
		TH_LOG("%s: pid %d, %s", names[t], pids[t], iso);
		tu_proc_status_field(pids[t], "Seccomp", val, sizeof(val));
		EXPECT_STREQ("2", val);
		tu_proc_status_field(pids[t], "NoNewPrivs", val, sizeof(val));
		EXPECT_STREQ("1", val);
		tu_proc_status_field(pids[t], "CapEff", val, sizeof(val));
		EXPECT_STREQ("0000000000000000", val);
		tu_proc_status_field(pids[t], "CapBnd", val, sizeof(val));
		EXPECT_STREQ("0000000000000000", val);
		tu_proc_status_field(pids[t], "Groups", val, sizeof(val));
		EXPECT_STREQ("", val);
		tu_proc_status_field(pids[t], "Uid", val, sizeof(val));
		uids[t] = strtoul(val, NULL, 10);
		EXPECT_GE(uids[t], SANDBOX_DEFAULT_UID_FIRST);
		EXPECT_LE(uids[t], SANDBOX_DEFAULT_UID_LAST);
		pw = getpwuid((uid_t)uids[t]);
		EXPECT_EQ(NULL, pw);
		snprintf(val, sizeof(val), "uid %lu", uids[t]);
		EXPECT_NE(NULL, strstr(iso, val)) TH_LOG("isolation: %s", iso);
		tu_proc_status_field(pids[t], "Gid", val, sizeof(val));
		EXPECT_EQ(uids[t], strtoul(val, NULL, 10));
	}
	EXPECT_NE(uids[0], uids[1]);
	for (int i = 0; i < 6; i++)
		for (int t = 0; t < 2; t++) {
			snprintf(args, sizeof(args), "infer %s", names[t]);
			ASSERT_EQ(0, tu_colocctl(self->d.sock, args, out, sizeof(out)))
			TH_LOG("%s", out);
		}
	for (int t = 0; t < 2; t++) {
		char cg[PATH_MAX], path[PATH_MAX + 64], want[64];

		tu_proc_cgroup(pids[t], "cpuset", cg, sizeof(cg));
		if (!cg[0])
			tu_proc_cgroup(pids[t], "", cg, sizeof(cg));
		snprintf(want, sizeof(want), "/tenant-%s", names[t]);
		ASSERT_NE(NULL, strstr(cg, want)) TH_LOG("cgroup %s", cg);
		/* v2: in a leaf of its own under its tenant's, whose cpuset it is */
		if (strstr(cg, want)[strlen(want)] == '/') {
			EXPECT_EQ(0, strncmp(strstr(cg, want) + strlen(want), "/exec-", 6));
			strstr(cg, want)[strlen(want)] = '\0';
		}
		snprintf(path, sizeof(path), "/sys/fs/cgroup/cpuset%s/cpuset.cpus", cg);
		if (access(path, R_OK))
			snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cpuset.cpus", cg);
		ASSERT_EQ(0, read_text(path, cpus[t], sizeof(cpus[t]))) TH_LOG("%s", path);
		snprintf(dirs[t], sizeof(dirs[t]), "%.*s", (int)(strrchr(path, '/') - path), path);
		nr_set[t] = cpulist_parse(cpus[t], CPULIST_SYSFS, set[t], COLOC_MAX_CPUS, NULL);
		TH_LOG("%s: cgroup %s, cpuset.cpus %s", names[t], cg, cpus[t]);
		/* static: half the cores each */
		EXPECT_EQ(nr_cpus / 2, nr_set[t]);
	}
	for (int i = 0; i < nr_set[0]; i++)
		for (int j = 0; j < nr_set[1]; j++)
			EXPECT_NE(set[0][i], set[1][j]);
	/* removed: its cgroup goes too, once its executor has exited */
	for (int t = 0; t < 2; t++) {
		snprintf(args, sizeof(args), "remove %s", names[t]);
		ASSERT_EQ(0, tu_colocctl(self->d.sock, args, out, sizeof(out))) TH_LOG("%s", out);
	}
	for (int t = 0; t < 2; t++) {
		for (int i = 0; i < 50 && !access(dirs[t], F_OK); i++)
			usleep(100000);
		EXPECT_NE(0, access(dirs[t], F_OK))
		TH_LOG("%s still there after its tenant went", dirs[t]);
	}
}

/*
 * Isolation that cannot be had is an error: with its namespaces turned
 * off, colocd refuses to start the tenant's executor and says which flag
 * accepts that; with --allow-weak-isolation too, the tenant serves and
 * its status says what is missing.
 */
TEST_F_TIMEOUT(daemon, submit__weak_isolation_refused_unless_allowed, 600)
{
	const char *strict[] = { "--no-namespaces", NULL };
	const char *weak[] = { "--no-namespaces", "--allow-weak-isolation", NULL };
	char out[4096], args[PATH_MAX + 128], iso[512] = "";

	ASSERT_LT(0, own_colocd_start(&self->d, strict)) TH_LOG("colocd did not start");
	snprintf(args, sizeof(args), "submit sbw %s --qos-ms 60000", self->d.model);
	EXPECT_NE(0, tu_colocctl(self->d.sock, args, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "--allow-weak-isolation")) TH_LOG("%s", out);
	EXPECT_NE(0, tu_colocctl(self->d.sock, "status sbw", out, sizeof(out)));
	tu_stop_colocd(self->d.pid);
	self->d.pid = 0;

	ASSERT_LT(0, own_colocd_start(&self->d, weak)) TH_LOG("colocd did not start");
	ASSERT_EQ(0, tu_colocctl(self->d.sock, args, out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_LT(0, ready_pid(self, "sbw", iso, sizeof(iso)));
	EXPECT_NE(NULL, strstr(iso, "no pid, mount, ipc or network namespace")) TH_LOG("%s", iso);
	EXPECT_NE(NULL, strstr(iso, "turned off")) TH_LOG("%s", iso);
	EXPECT_EQ(0, tu_colocctl(self->d.sock, "infer sbw", out, sizeof(out))) TH_LOG("%s", out);
}

/* What a process that entered the sandbox could still do, tried from inside it. */
struct inside {
	int entered; /* exec_sandbox_enter's return */
	char why[256], missing[256];
	int kill_other, open_passwd, open_sysfs, socket_unix, fork_child, exec_shell;
	int thread; /* pthread_create's return */
	/* madvise on a shared memfd's page: what the executor needs, what would harm colocd */
	int populate, dontneed, remove, pageout, cold;
};

static void *nothing(void *arg)
{
	return arg;
}

static int err_of(long ret)
{
	return ret < 0 ? errno : 0;
}

/* madvise's answers (0 or the errno) on a page of a shared memfd, as a query slot's. */
static void shared_page_advice(struct inside *in)
{
	int fd = memfd_create("slot", 0);
	char *page = MAP_FAILED;

	if (fd >= 0 && !ftruncate(fd, 4096))
		page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (page == MAP_FAILED) {
		in->populate = -1;
		return;
	}
	in->populate = err_of(madvise(page, 4096, MADV_POPULATE_WRITE));
	in->dontneed = err_of(madvise(page, 4096, MADV_DONTNEED));
	in->remove = err_of(madvise(page, 4096, MADV_REMOVE));
	in->pageout = err_of(madvise(page, 4096, MADV_PAGEOUT));
	in->cold = err_of(madvise(page, 4096, MADV_COLD));
}

/*
 * A process entering the sandbox as an executor with a tenant's uid cannot
 * signal another tenant's process (another uid, outside its Landlock
 * domain), open /etc/passwd (world-readable, but not for Landlock), make a
 * socket (the way to colocd's control socket), fork or exec, or give a
 * shared memory's pages back or push them out (MADV_REMOVE, _PAGEOUT,
 * _COLD: colocd would fault them back in); it can still read the CPUs'
 * sysfs folder it is allowed, start a thread, and populate or drop its
 * own view of a shared page (MADV_POPULATE_WRITE, _DONTNEED).
 */
TEST(exec_sandbox_enter__denies_what_a_compromised_executor_would_try)
{
	struct inside *in =
		mmap(NULL, sizeof(*in), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t other, child;
	int status;

	if (geteuid() != 0)
		SKIP(return, "needs root to switch uids");
	ASSERT_NE(MAP_FAILED, in);
	other = fork();
	ASSERT_LE(0, other);
	if (!other) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (setresgid(SANDBOX_DEFAULT_UID_FIRST + 1, SANDBOX_DEFAULT_UID_FIRST + 1,
			      SANDBOX_DEFAULT_UID_FIRST + 1) ||
		    setresuid(SANDBOX_DEFAULT_UID_FIRST + 1, SANDBOX_DEFAULT_UID_FIRST + 1,
			      SANDBOX_DEFAULT_UID_FIRST + 1))
			_exit(1);
		pause();
		_exit(0);
	}
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		struct exec_sandbox sb = { .uid = SANDBOX_DEFAULT_UID_FIRST,
					   .gid = SANDBOX_DEFAULT_UID_FIRST,
					   .readable = { "/sys/devices/system/cpu", NULL },
					   .parent = getppid() };
		pthread_t th;
		int fd;

		in->entered = exec_sandbox_enter(&sb, in->missing, sizeof(in->missing), in->why,
						 sizeof(in->why));
		if (in->entered)
			_exit(1);
		in->kill_other = err_of(kill(other, SIGKILL));
		fd = open("/etc/passwd", O_RDONLY);
		in->open_passwd = err_of(fd);
		fd = open("/sys/devices/system/cpu/online", O_RDONLY);
		in->open_sysfs = err_of(fd);
		in->socket_unix = err_of(socket(AF_UNIX, SOCK_STREAM, 0));
		child = fork();
		if (!child)
			_exit(0);
		in->fork_child = err_of(child);
		execl("/bin/sh", "sh", "-c", "true", (char *)NULL);
		in->exec_shell = errno;
		in->thread = pthread_create(&th, NULL, nothing, NULL);
		if (!in->thread)
			pthread_join(th, NULL);
		shared_page_advice(in);
		_exit(0);
	}
	ASSERT_EQ(child, waitpid(child, &status, 0));
	kill(other, SIGKILL);
	waitpid(other, NULL, 0);
	TH_LOG("entered: %d %s; missing: %s", in->entered, in->why, in->missing);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, in->entered);
	EXPECT_STREQ("", in->missing);
	EXPECT_EQ(EPERM, in->kill_other);
	EXPECT_EQ(EACCES, in->open_passwd);
	EXPECT_EQ(0, in->open_sysfs);
	EXPECT_EQ(0, in->thread);
	EXPECT_EQ(0, in->populate);
	EXPECT_EQ(0, in->dontneed);
#if defined(__SANITIZE_ADDRESS__)
	/* sanitizer builds log what the filter would deny (LeakSanitizer needs it) */
	TH_LOG("sanitizer build: the seccomp filter logs instead of denying");
#else
	EXPECT_EQ(EPERM, in->socket_unix);
	EXPECT_EQ(EPERM, in->fork_child);
	EXPECT_EQ(EPERM, in->exec_shell);
	EXPECT_EQ(EPERM, in->remove);
	EXPECT_EQ(EPERM, in->pageout);
	EXPECT_EQ(EPERM, in->cold);
#endif
	munmap(in, sizeof(*in));
}

/*
 * The shipped unit, which must let colocd build all of the above, stays
 * hardened by systemd's own measure: an exposure of 2.5 or less, without
 * CAP_KILL (colocd kills its executors through their cgroup v2 leaves;
 * docs/security-sandbox.md, "The unit").
 */
TEST(unit__systemd_analyze_security_at_most_2_5)
{
	const char *root = getenv("COLOC_ROOT");
	char dir[] = "/tmp/coloc-unit-XXXXXX", cmd[2048], out[16384];
	const char *at;
	double exposure;

	if (tu_run("systemd-analyze security --help >/dev/null 2>&1", NULL, 0))
		SKIP(return, "systemd-analyze security is missing");
	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(cmd, sizeof(cmd),
		 "sed 's|@SBINDIR@|/usr/sbin|' '%s/dist/colocd.service.in' > %s/colocd.service && "
		 "systemd-analyze security --offline=yes %s/colocd.service 2>&1; rm -rf %s",
		 root ? root : ".", dir, dir, dir);
	tu_run(cmd, out, sizeof(out));
	at = strstr(out, "Overall exposure level for colocd.service: ");
	ASSERT_NE(NULL, at) TH_LOG("%s", out);
	exposure = strtod(at + strlen("Overall exposure level for colocd.service: "), NULL);
	TH_LOG("exposure %.1f", exposure);
	EXPECT_LE(exposure, 2.5);
	/* the analyzer's check mark: the service cannot signal other users' processes */
	EXPECT_NE(NULL, strstr(out, "\u2713 CapabilityBoundingSet=~CAP_KILL"))
	TH_LOG("the unit still has CAP_KILL");
}

/*
 * The unit's TasksMax= holds colocd's own threads and every executor's at
 * 128 CPUs (its comment's ceiling) and on this machine, counted here from
 * colocd's bounds: its loop, a closer thread per fd_closer entry and
 * those retired from it, a copy and SUBMIT_STALLED_MAX stalled ones, the
 * state writer, the uid-list rebuild and SV_PROFILE_PARSERS profile
 * parsers; each tenant's executors by their
 * uid's RLIMIT_NPROC ((CPUs + 16) x COLOC_MAX_EXECUTORS, execproc_spawn.c).
 */
TEST(unit__tasks_max_holds_colocd_and_its_executors)
{
	const long own = 1 + FD_CLOSER_UIDS + FD_CLOSER_RETIRED_MAX + 1 + SUBMIT_STALLED_MAX + 1 +
			 1 + SV_PROFILE_PARSERS;
	const char *root = getenv("COLOC_ROOT");
	long cpus = sysconf(_SC_NPROCESSORS_CONF), tasks_max;
	char path[PATH_MAX], *unit, *at;
	size_t len;

	snprintf(path, sizeof(path), "%s/dist/colocd.service.in", root ? root : ".");
	unit = tu_read_file(path, &len);
	ASSERT_NE(NULL, unit);
	at = strstr(unit, "\nTasksMax=");
	/* main: none, systemd's default (15 % of pid_max: 4,915 where it is 32,768) */
	ASSERT_NE(NULL, at) TH_LOG("no TasksMax= in %s", path);
	tasks_max = strtol(at + strlen("\nTasksMax="), NULL, 10);
	TH_LOG("TasksMax %ld; colocd's own %ld, with every executor %ld here (%ld CPUs), %ld "
	       "at 128",
	       tasks_max, own, own + COLOC_MAX_TENANTS * COLOC_MAX_EXECUTORS * (cpus + 16), cpus,
	       own + COLOC_MAX_TENANTS * COLOC_MAX_EXECUTORS * (128L + 16));
	EXPECT_GE(tasks_max, own + COLOC_MAX_TENANTS * COLOC_MAX_EXECUTORS * (128L + 16));
	EXPECT_GE(tasks_max, own + COLOC_MAX_TENANTS * COLOC_MAX_EXECUTORS * (cpus + 16));
	free(unit);
}

TEST_HARNESS_MAIN
