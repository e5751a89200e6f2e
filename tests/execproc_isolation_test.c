// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * How daemon/execproc.c isolates an executor: it runs as an unprivileged
 * user with no capabilities, no_new_privs, not dumpable and with only the
 * shared memory and the doorbell open; each is pid 1 of a pid namespace of
 * its own, from which another tenant's executor cannot be named; it dies
 * with its driver; where the kernel refuses the namespaces it falls back
 * only when weak isolation is accepted, and says so.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "execproc_fixture.h"
#include "proc_fds.h"
#include "proc_tasks.h"

struct proc_creds {
	long uid[4], gid[4];
	unsigned long long cap_inh, cap_prm, cap_eff, cap_bnd, cap_amb;
	int no_new_privs;
	long tgid;
};

static int read_creds(const char *status_path, struct proc_creds *c)
{
	char line[256];
	FILE *f = fopen(status_path, "r");
	int found = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		found += sscanf(line, "Uid: %ld %ld %ld %ld", &c->uid[0], &c->uid[1], &c->uid[2],
				&c->uid[3]) == 4;
		found += sscanf(line, "Gid: %ld %ld %ld %ld", &c->gid[0], &c->gid[1], &c->gid[2],
				&c->gid[3]) == 4;
		found += sscanf(line, "CapInh: %llx", &c->cap_inh);
		found += sscanf(line, "CapPrm: %llx", &c->cap_prm);
		found += sscanf(line, "CapEff: %llx", &c->cap_eff);
		found += sscanf(line, "CapBnd: %llx", &c->cap_bnd);
		found += sscanf(line, "CapAmb: %llx", &c->cap_amb);
		found += sscanf(line, "NoNewPrivs: %d", &c->no_new_privs);
		found += sscanf(line, "Tgid: %ld", &c->tgid);
	}
	fclose(f);
	return found == 9 ? 0 : -EINVAL;
}

/* In a child dropped to uid: can it read the executor's memory? 0 if every way was refused. */
static int peek_as(uid_t uid, gid_t gid, pid_t pid, void *addr)
{
	pid_t child = fork();
	int status;

	if (!child) {
		char path[64], byte;
		struct iovec local = { &byte, 1 }, remote = { addr, 1 };

		if (setgroups(0, NULL) || setgid(gid) || setuid(uid))
			_exit(3);
		snprintf(path, sizeof(path), "/proc/%d/mem", pid);
		if (open(path, O_RDONLY) >= 0)
			_exit(1);
		if (process_vm_readv(pid, &local, 1, &remote, 1, 0) >= 0 || errno != EPERM)
			_exit(2);
		_exit(0);
	}
	if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

struct unprivileged {
	struct __test_metadata *_metadata;
	const struct passwd *pw; /* the executor's user */
};

/* Thread tid of executor pid runs as u->pw's user, with no capabilities and no_new_privs. */
static void expect_unprivileged(pid_t pid, pid_t tid, void *ctx)
{
	struct unprivileged *u = ctx;
	struct __test_metadata *_metadata = u->_metadata;
	struct proc_creds c;
	char path[96];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	ASSERT_EQ(0, read_creds(path, &c)) TH_LOG("thread %d", tid);
	for (int i = 0; i < 4; i++) {
		EXPECT_EQ((long)u->pw->pw_uid, c.uid[i]) TH_LOG("thread %d", tid);
		EXPECT_EQ((long)u->pw->pw_gid, c.gid[i]) TH_LOG("thread %d", tid);
	}
	EXPECT_EQ(0, c.cap_inh | c.cap_prm | c.cap_eff | c.cap_amb);
	EXPECT_EQ(0, c.cap_bnd) TH_LOG("thread %d CapBnd %llx", tid, c.cap_bnd);
	EXPECT_EQ(1, c.no_new_privs);
	EXPECT_EQ((long)pid, c.tgid);
}

/* Descriptor path of the executor is one of its six: 0 to 5 (proc_fds_each's callback). */
static void expect_one_of_six(const char *path, const char *link, void *ctx)
{
	struct __test_metadata *_metadata = ctx;

	EXPECT_LE(atoi(strrchr(path, '/') + 1), 5) TH_LOG("unexpected fd %s (%s)", path, link);
}

TEST_F(execproc, executor__unprivileged_no_caps_not_dumpable)
{
	pid_t pid = execproc_pid(self->ep);
	struct passwd *pw = getpwnam("coloc");
	const char *user = pw ? "coloc" : "nobody";
	struct unprivileged u = { ._metadata = _metadata };
	char path[300];
	struct stat st;
	int nr_threads, nr_fds;

	if (!pw)
		pw = getpwnam("nobody");
	ASSERT_NE(NULL, pw);
	u.pw = pw;
	EXPECT_EQ(pid, execproc_header(self->ep)->executor_pid);
	/* every thread, the OpenMP team included: credentials are per thread */
	nr_threads = tu_tasks_each(pid, expect_unprivileged, &u);
	ASSERT_LT(0, nr_threads);
	TH_LOG("executor pid %d runs as %s (uid %d) with %d thread(s)", pid, user, pw->pw_uid,
	       nr_threads);
	/* a non-dumpable process's /proc files belong to root, not to its uid */
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	ASSERT_EQ(0, stat(path, &st));
	EXPECT_EQ(0, st.st_uid);
	/* another process of the same user (another tenant) cannot read its memory */
	EXPECT_EQ(0, peek_as(pw->pw_uid, pw->pw_gid, pid, (void *)0x400000));
	/*
	 * open files: stdin, stdout, stderr, the shared memory, the doorbell and
	 * the input socket, no more
	 */
	nr_fds = proc_fds_each(pid, expect_one_of_six, _metadata);
	ASSERT_LE(0, nr_fds);
	EXPECT_LE(nr_fds, 6);
}

/* The pids in the NSpid line of /proc/PID/status, outermost first; how many. */
static int read_nspid(pid_t pid, long *ids, int max)
{
	char line[256], *p = line, *end;
	int n = 0;

	if (tu_proc_status_field(pid, "NSpid", line, sizeof(line)))
		return -ENOENT;
	while (n < max) {
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		ids[n++] = v;
		p = end;
	}
	return n;
}

static pid_t status_ppid(pid_t pid)
{
	char ppid[32];

	return tu_proc_status_field(pid, "PPid", ppid, sizeof(ppid)) ? -1 : (pid_t)atoi(ppid);
}

static ino_t ns_ino(pid_t pid, const char *ns)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, ns);
	return stat(path, &st) ? 0 : st.st_ino;
}

static ino_t pidns_ino(pid_t pid)
{
	return ns_ino(pid, "pid");
}

/* The processes a /proc lists (its numeric entries); the first few names in first. */
static int proc_pids(const char *proc, char *first, size_t len)
{
	DIR *dir = opendir(proc);
	struct dirent *de;
	size_t used = 0;
	int n = 0;

	if (!dir)
		return -errno;
	first[0] = '\0';
	while ((de = readdir(dir))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		if (used + strlen(de->d_name) + 2 < len)
			used += (size_t)snprintf(first + used, len - used, "%s ", de->d_name);
		n++;
	}
	closedir(dir);
	return n;
}

/*
 * From inside `inside`'s pid namespace (a child of this test that joins
 * it through the pidfd), can `target` (a host pid) be named? Returns the
 * errno kill(target, 0) and sched_getaffinity(target) fail with, 0 if
 * either succeeds, or -1 if the probe could not run.
 */
static int probe_from_ns(int inside_pidfd, pid_t target, bool *sees_own_pid1)
{
	int pipefd[2], res[2] = { -1, -1 };
	int home = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
	pid_t probe = -1;

	if (home < 0)
		return -1;
	if (pipe(pipefd)) {
		close(home);
		return -1;
	}
	/* for children only: this test itself stays where it is */
	if (!setns(inside_pidfd, CLONE_NEWPID))
		probe = fork();
	if (!probe) {
		cpu_set_t set;
		int r[2];

		/* root here: only naming can fail, not permission */
		r[0] = kill(target, 0) ? errno : 0;
		if (!r[0])
			r[0] = sched_getaffinity(target, sizeof(set), &set) ? errno : 0;
		r[1] = kill(1, 0) ? errno : 0;
		_exit(write(pipefd[1], r, sizeof(r)) == sizeof(r) ? 0 : 1);
	}
	/* back: later children of this test start in its own namespace */
	if (setns(home, CLONE_NEWPID))
		probe = -1;
	close(home);
	close(pipefd[1]);
	if (probe > 0 && read(pipefd[0], res, sizeof(res)) != sizeof(res))
		res[0] = -1;
	close(pipefd[0]);
	if (probe > 0)
		waitpid(probe, NULL, 0);
	*sees_own_pid1 = res[1] == 0;
	return probe > 0 ? res[0] : -1;
}

/*
 * Each executor is pid 1 of a pid namespace of its own (NSpid: its host
 * pid, then 1), not this test's, not the other tenant's; and from inside
 * one, the other tenant's executor cannot be named at all.
 */
TEST_F(execproc, spawn__each_executor_in_its_own_pid_namespace)
{
	char path[512], bin[512];
	struct execproc_opts o = { .tenant = "other", .weights_fd = -1 };
	struct coloc_err err = { 0 };
	pid_t pid = execproc_pid(self->ep), other_pid;
	int self_ns_fd;
	struct execproc *other;
	bool sees_pid1 = false;
	struct stat st;
	long ids[4];

	if (!execproc_own_pidns(self->ep))
		SKIP(return, "executor runs in colocd's pid namespace: %s",
			   execproc_isolation(self->ep));
	TH_LOG("%s", execproc_isolation(self->ep));
	ASSERT_EQ(2, read_nspid(pid, ids, 4));
	EXPECT_EQ(pid, ids[0]);
	EXPECT_EQ(1, ids[1]);
	EXPECT_NE(0, pidns_ino(pid));
	EXPECT_NE(pidns_ino(getpid()), pidns_ino(pid));
	/* still colocd's child, seen under its host pid */
	EXPECT_EQ(getpid(), status_ppid(pid));
	/* its /proc, seen through its root: itself, as pid 1, and nothing else */
	if (strstr(execproc_isolation(self->ep), "with a /proc of its own")) {
		char proc[64], names[128];

		EXPECT_NE(ns_ino(getpid(), "mnt"), ns_ino(pid, "mnt"));
		snprintf(proc, sizeof(proc), "/proc/%d/root/proc", pid);
		EXPECT_EQ(1, proc_pids(proc, names, sizeof(names)))
		TH_LOG("%s lists %s", proc, names);
		EXPECT_STREQ("1 ", names);
		/* the control: this test's /proc lists more than one process */
		EXPECT_LT(1, proc_pids("/proc", names, sizeof(names)));
	}

	model_path(path, sizeof(path), "mobilenet_v2");
	o.executor = tu_bin("coloc-executor", bin, sizeof(bin));
	ASSERT_EQ(0, spawn_path(&o, path, &other, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, execproc_wait_ready(other, READY_MS, &err)) TH_LOG("%s", coloc_err_str(&err));
	other_pid = execproc_pid(other);
	ASSERT_EQ(2, read_nspid(other_pid, ids, 4));
	EXPECT_EQ(other_pid, ids[0]);
	EXPECT_EQ(1, ids[1]);
	EXPECT_NE(pidns_ino(pid), pidns_ino(other_pid));
	EXPECT_NE(pidns_ino(getpid()), pidns_ino(other_pid));

	/* a probe in the first tenant's namespace: the other executor has no pid there */
	EXPECT_EQ(ESRCH, probe_from_ns(execproc_pidfd(self->ep), other_pid, &sees_pid1));
	EXPECT_TRUE(sees_pid1); /* its own executor, as pid 1 */
	/* the control: from this test's namespace the same probe names it */
	self_ns_fd = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
	ASSERT_GE(self_ns_fd, 0);
	EXPECT_EQ(0, probe_from_ns(self_ns_fd, other_pid, &sees_pid1));
	close(self_ns_fd);
	/* and this test's next children are in its own namespace again */
	ASSERT_EQ(0, stat("/proc/self/ns/pid_for_children", &st));
	EXPECT_EQ(pidns_ino(getpid()), st.st_ino);
	execproc_free(other);
}

/* The executor's parent (colocd) dies: the executor is killed with it (PR_SET_PDEATHSIG). */
TEST(execproc_spawn__executor_dies_with_its_driver)
{
	char bin[512], path[512];
	struct execproc_opts o = { .tenant = "orphan", .weights_fd = -1 };
	struct pollfd p = { .events = POLLIN };
	int pipefd[2], ret;
	pid_t driver, executor = 0;
	__u64 t0;

	model_path(path, sizeof(path), "mobilenet_v2");
	if (access(path, R_OK))
		SKIP(return, "%s not found (set COLOC_ROOT to the repo root)", path);
	o.executor = tu_bin("coloc-executor", bin, sizeof(bin));
	ASSERT_EQ(0, pipe(pipefd));
	driver = fork();
	ASSERT_GE(driver, 0);
	if (!driver) {
		struct coloc_err err = { 0 };
		struct execproc *ep;
		pid_t pid = -1;

		if (!spawn_path(&o, path, &ep, &err) && !execproc_wait_ready(ep, READY_MS, &err))
			pid = execproc_pid(ep);
		if (write(pipefd[1], &pid, sizeof(pid)) != sizeof(pid))
			_exit(1);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	ASSERT_EQ((ssize_t)sizeof(executor), read(pipefd[0], &executor, sizeof(executor)));
	close(pipefd[0]);
	ASSERT_GT(executor, 0);
	p.fd = pidfd_open(executor, 0);
	ASSERT_GE(p.fd, 0);
	t0 = coloc_now_ns();
	ASSERT_EQ(0, kill(driver, SIGKILL));
	ASSERT_EQ(driver, waitpid(driver, NULL, 0));
	ret = poll(&p, 1, 10000);
	EXPECT_EQ(1, ret) TH_LOG("the executor outlived its driver by 10 s");
	TH_LOG("executor gone %.3f ms after its driver was killed", (coloc_now_ns() - t0) / 1e6);
	close(p.fd);
	if (ret != 1)
		kill(executor, SIGKILL);
}

/* What a driver without CAP_SYS_ADMIN saw of its executor. */
struct fallback_seen {
	int spawn, ready, stop; /* the calls' returns */
	bool own_pidns;
	pid_t pid;
	int nspid; /* entries in its NSpid line */
	ino_t ns; /* its pid namespace */
	char isolation[COLOC_ERR_MSG_MAX];
};

/*
 * Where the kernel refuses the namespaces (here: a driver that dropped
 * CAP_SYS_ADMIN from its effective set, as in a nested container) and weak
 * isolation is accepted, the executor still starts, in the driver's pid
 * namespace, serves, stops, and execproc_isolation() says why.
 */
TEST(execproc_spawn__refused_namespace_falls_back_when_weak_allowed)
{
	char bin[512], path[512];
	struct execproc_opts o = { .tenant = "fallback",
				   .weights_fd = -1,
				   .allow_weak_isolation = true };
	struct fallback_seen *seen;
	int status;
	pid_t driver;

	model_path(path, sizeof(path), "mobilenet_v2");
	if (access(path, R_OK))
		SKIP(return, "%s not found (set COLOC_ROOT to the repo root)", path);
	o.executor = tu_bin("coloc-executor", bin, sizeof(bin));
	seen = mmap(NULL, sizeof(*seen), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, seen);
	driver = tu_fork_without_cap(CAP_SYS_ADMIN);
	ASSERT_GE(driver, 0);
	if (!driver) {
		struct coloc_err err = { 0 };
		struct execproc *ep = NULL;
		long ids[4];

		seen->spawn = spawn_path(&o, path, &ep, &err);
		if (seen->spawn)
			_exit(4);
		seen->own_pidns = execproc_own_pidns(ep);
		snprintf(seen->isolation, sizeof(seen->isolation), "%s", execproc_isolation(ep));
		seen->ready = execproc_wait_ready(ep, READY_MS, &err);
		seen->pid = execproc_pid(ep);
		seen->nspid = read_nspid(seen->pid, ids, 4);
		seen->ns = pidns_ino(seen->pid);
		seen->stop = execproc_stop(ep, DONE_MS, &err);
		execproc_free(ep);
		_exit(0);
	}
	ASSERT_EQ(driver, waitpid(driver, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	TH_LOG("%s", seen->isolation);
	EXPECT_EQ(0, seen->spawn);
	EXPECT_FALSE(seen->own_pidns);
	EXPECT_NE(NULL,
		  strstr(seen->isolation, "the kernel refused them: Operation not permitted"));
	EXPECT_EQ(0, seen->ready);
	EXPECT_GT(seen->pid, 1);
	EXPECT_EQ(1, seen->nspid); /* one level: the driver's (and this test's) namespace */
	EXPECT_EQ(pidns_ino(getpid()), seen->ns);
	EXPECT_EQ(0, seen->stop);
	munmap(seen, sizeof(*seen));
}

/*
 * Without weak isolation accepted, the same refusal is an error that names
 * the missing layer and the flag, and no executor is left behind; so is
 * turning the namespaces off (colocd --no-namespaces).
 */
struct refusal_seen {
	int spawn;
	bool got_handle, no_child;
	char msg[COLOC_ERR_MSG_MAX];
};

TEST(execproc_spawn__refused_namespace_is_an_error_unless_weak_allowed)
{
	char bin[512], path[512];
	struct execproc_opts o = { .tenant = "strict", .weights_fd = -1 };
	struct refusal_seen *seen;
	struct coloc_err err = { 0 };
	struct execproc *ep = NULL;
	int status;
	pid_t driver;

	model_path(path, sizeof(path), "mobilenet_v2");
	if (access(path, R_OK))
		SKIP(return, "%s not found (set COLOC_ROOT to the repo root)", path);
	o.executor = tu_bin("coloc-executor", bin, sizeof(bin));
	seen = mmap(NULL, sizeof(*seen), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, seen);
	driver = tu_fork_without_cap(CAP_SYS_ADMIN);
	ASSERT_GE(driver, 0);
	if (!driver) {
		struct coloc_err cerr = { 0 };
		struct execproc *cep = NULL;

		seen->spawn = spawn_path(&o, path, &cep, &cerr);
		snprintf(seen->msg, sizeof(seen->msg), "%s", coloc_err_str(&cerr));
		seen->got_handle = cep != NULL;
		/* no child of its own left: the refused spawn started none */
		seen->no_child = waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD;
		execproc_free(cep);
		_exit(0);
	}
	ASSERT_EQ(driver, waitpid(driver, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	TH_LOG("%s", seen->msg);
	EXPECT_EQ(-EPERM, seen->spawn);
	EXPECT_NE(NULL, strstr(seen->msg, "Operation not permitted"));
	EXPECT_NE(NULL, strstr(seen->msg, "--allow-weak-isolation"));
	EXPECT_FALSE(seen->got_handle);
	EXPECT_TRUE(seen->no_child);
	munmap(seen, sizeof(*seen));

	/* turned off on purpose: refused the same way, in this process */
	o.no_namespaces = true;
	EXPECT_EQ(-EPERM, spawn_path(&o, path, &ep, &err));
	EXPECT_EQ(NULL, ep);
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "turned off"))
	TH_LOG("%s", coloc_err_str(&err));
}

TEST_HARNESS_MAIN
