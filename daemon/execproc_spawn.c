// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The start of one executor process (execproc_spawn, see execproc.h): the
 * sealed memfd with the layout of include/coloc/shm.h, then coloc-executor
 * started by clone3 in pid, mount, ipc and network namespaces of its own
 * with only that memfd, the write end of the completion pipe, its end of
 * the input socket, its log pipe and the tenant's files open, under
 * rlimits, in its tenant's cgroups (and a cgroup v2 leaf of its own,
 * cgroup_leaf.h), in a session of its own, the OOM killer's first choice
 * (oom_score_adj 1000, root's tenants' 500, which the executor, in its
 * sandbox, cannot lower). A process of several lanes (execproc_spawn_lanes) gets a memfd,
 * a pipe and an input socket per lane, each lane a handle of its own. What
 * follows its start is execproc.c's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "coloc/protocol.h"
#include "exec_log.h"
#include "execproc_internal.h"
#include "oom_first.h"

#define EXECPROC_DEFAULT_CAPACITY (16u << 20)
/*
 * Where the executor finds them: lane i's --shm-fd, --done-fd and
 * --input-fd at 3 + 3i, 4 + 3i and 5 + 3i, then the model, the weights and
 * the external data files.
 */
#define EXECPROC_SHM_FD 3
#define EXECPROC_FDS_PER_LANE 3
#define EXECPROC_MAX_FILES (2 + COLOC_MAX_REQUEST_FDS)
/* RLIMIT_NOFILE: its fds, the model's, each lane's kept input memfds (shm_input.h), oneDNN's few */
#define EXECPROC_NOFILE_LIMIT                                                     \
	(EXECPROC_SHM_FD +                                                        \
	 (EXECPROC_FDS_PER_LANE + COLOC_SHM_NR_SLOTS + 1) * COLOC_MAX_EXECUTORS + \
	 EXECPROC_MAX_FILES + 32)
/* its command line: the options, the files' and each lane's descriptors */
#define EXECPROC_MAX_ARGS \
	(28 + 2 * EXECPROC_MAX_FILES + 2 * EXECPROC_FDS_PER_LANE * COLOC_MAX_EXECUTORS)
#define EXECPROC_THREADS_SLACK 16 /* RLIMIT_NPROC: CPUs + this, per executor */
#define EXECPROC_NR_LIMITS 4
#define EXECPROC_MAX_CGROUP_FDS 5 /* cgroup.procs joined: the caller's (v1: three), its leaf's */

static const int child_limit_ids[EXECPROC_NR_LIMITS] = { RLIMIT_CORE, RLIMIT_NOFILE, RLIMIT_NPROC,
							 RLIMIT_AS };

int execproc_default_executor(char *buf, size_t len, struct coloc_err *err)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;

	if (n < 0)
		return coloc_err_set(err, -errno, "cannot find this program's path: %s",
				     strerror(errno));
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash || (size_t)(slash - buf) + sizeof("/coloc-executor") > len)
		return coloc_err_set(err, -ENAMETOOLONG, "path of coloc-executor too long");
	strcpy(slash + 1, "coloc-executor");
	return 0;
}

static int create_shm(struct execproc *ep, const struct execproc_opts *o, int *memfd,
		      struct coloc_err *err)
{
	size_t in_cap = execproc_page_round(o->slot_in_capacity ?: EXECPROC_DEFAULT_CAPACITY);
	size_t out_cap = execproc_page_round(o->slot_out_capacity ?: EXECPROC_DEFAULT_CAPACITY);
	size_t data_off = execproc_page_round(sizeof(struct coloc_shm));
	char name[COLOC_SHM_NAME_LEN + 16];
	struct coloc_shm_header *h;
	int fd;

	ep->shm_bytes = data_off + COLOC_SHM_NR_SLOTS * (in_cap + out_cap);
	snprintf(name, sizeof(name), "coloc-shm:%s", o->tenant);
	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return coloc_err_set(err, -errno, "memfd_create: %s", strerror(errno));
	/*
	 * sealed size: neither side can shrink it under the other's mapping;
	 * the seal against holes, and F_SEAL_SEAL, come at ready (execproc_slot.c)
	 */
	if (ftruncate(fd, (off_t)ep->shm_bytes) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW)) {
		int e = errno;

		close(fd);
		return coloc_err_set(err, -e, "sizing the shared memory (%zu bytes): %s",
				     ep->shm_bytes, strerror(e));
	}
	ep->shm = mmap(NULL, ep->shm_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ep->shm == MAP_FAILED) {
		int e = errno;

		ep->shm = NULL;
		close(fd);
		return coloc_err_set(err, -e, "mapping the shared memory: %s", strerror(e));
	}
	h = &ep->hdr;
	h->magic = COLOC_SHM_MAGIC;
	h->layout_version = COLOC_SHM_LAYOUT_VERSION;
	h->nr_slots = COLOC_SHM_NR_SLOTS;
	h->total_bytes = ep->shm_bytes;
	h->data_offset = data_off;
	h->slot_in_capacity = in_cap;
	h->slot_out_capacity = out_cap;
	snprintf(h->tenant, sizeof(h->tenant), "%s", o->tenant);
	ep->shm->hdr = *h;
	ep->shm_fd = *memfd = fd; /* the handle's: execproc_free closes it */
	return 0;
}

/* What the executor is started with: the same whichever way it starts. */
struct child_args {
	const char *path;
	char *const *argv;
	char *const *envp;
	/* above every target fd (first_free), close-on-exec */
	int shm_hi[COLOC_MAX_EXECUTORS], done_hi[COLOC_MAX_EXECUTORS]; /* [nr_lanes] */
	int input_hi[COLOC_MAX_EXECUTORS];
	int nr_lanes;
	int log_hi; /* to stdout and stderr */
	int file_hi[EXECPROC_MAX_FILES]; /* to file_fd + i */
	int nr_files;
	int file_fd; /* EXECPROC_SHM_FD + EXECPROC_FDS_PER_LANE * nr_lanes */
	int first_free; /* file_fd + nr_files: where fds of its own may start */
	int cgroup_fds[EXECPROC_MAX_CGROUP_FDS]; /* the caller's, then its leaf's */
	int nr_cgroup_fds;
	struct rlimit limits[EXECPROC_NR_LIMITS];
	bool remount_proc; /* it has a pid and mount namespace of its own */
	int oom_score; /* EXECPROC_OOM_SCORE_MEMBER or _ROOT */
};

/* What the child of clone3 tells colocd before exec: a setback, or why it gave up. */
struct child_report {
	int fatal; /* 0: /proc could not be remounted, it goes on */
	int err; /* an errno */
};

static void child_report(int fd, int fatal, int e)
{
	struct child_report r = { .fatal = fatal, .err = e };

	if (write(fd, &r, sizeof(r)) != sizeof(r))
		_exit(126);
}

/*
 * The child of clone3, a copy of the daemon that only makes system calls
 * (no locks, no allocation) until execve. /proc is mounted afresh for its
 * pid namespace, in its mount namespace, which receives the host's later
 * mounts and unmounts (slave) but sends none back. Then stdin from
 * /dev/null, stdout and stderr into colocd's log pipe (never colocd's own
 * terminal or journal stream), the shared memory, the doorbell and the
 * input socket as fds 3, 4 and 5 (lane 0's), every
 * other fd the daemon holds (sockets, BPF maps, other tenants' memory)
 * closed at exec, default SIGPIPE and SIGCHLD, nothing blocked, killed
 * with its parent, oom_score_adj c->oom_score (colocd's own, inherited, is low;
 * oom_score_self, common/oom_first.h).
 * Reports go through report_fd, which exec closes.
 */
static __attribute__((noreturn)) void child_exec(const struct child_args *c, int report_fd)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t none;
	int null, ret;

	if (c->remount_proc &&
	    (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) ||
	     mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL)))
		child_report(report_fd, 0, errno);
	/* its tenant's cgroups, its own session (no terminal) */
	for (int i = 0; i < c->nr_cgroup_fds; i++)
		if (write(c->cgroup_fds[i], "0", 1) != 1)
			goto fail;
	if (setsid() < 0)
		goto fail;
	ret = oom_score_self(c->oom_score);
	if (ret) {
		errno = -ret;
		goto fail;
	}
	null = open("/dev/null", O_RDONLY);
	sigemptyset(&none);
	if (null < 0 || dup2(null, 0) < 0 || dup2(c->log_hi, 1) < 0 || dup2(c->log_hi, 2) < 0)
		goto fail;
	for (int i = 0; i < c->nr_lanes; i++)
		if (dup2(c->shm_hi[i], EXECPROC_SHM_FD + EXECPROC_FDS_PER_LANE * i) < 0 ||
		    dup2(c->done_hi[i], EXECPROC_SHM_FD + EXECPROC_FDS_PER_LANE * i + 1) < 0 ||
		    dup2(c->input_hi[i], EXECPROC_SHM_FD + EXECPROC_FDS_PER_LANE * i + 2) < 0)
			goto fail;
	for (int i = 0; i < c->nr_files; i++)
		if (dup2(c->file_hi[i], c->file_fd + i) < 0)
			goto fail;
	if (syscall(SYS_close_range, (unsigned int)c->first_free, ~0u, CLOSE_RANGE_CLOEXEC) ||
	    sigaction(SIGPIPE, &dfl, NULL) || sigaction(SIGCHLD, &dfl, NULL) ||
	    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) || sigprocmask(SIG_SETMASK, &none, NULL))
		goto fail;
	/* its limits last: colocd's own fds, above RLIMIT_NOFILE, are still open until exec */
	for (int i = 0; i < EXECPROC_NR_LIMITS; i++)
		if (c->limits[i].rlim_max != RLIM_INFINITY &&
		    setrlimit(child_limit_ids[i], &c->limits[i]))
			goto fail;
	execve(c->path, c->argv, c->envp);
fail:
	child_report(report_fd, 1, errno);
	_exit(127);
}

/*
 * clone3 (clone where a seccomp filter such as systemd's RestrictNamespaces
 * answers ENOSYS, having no way to read clone3's flags) with flags: with
 * the namespaces, the executor is pid 1 of its own pid namespace and can
 * name no other tenant's process (kill, sched_setaffinity, setpriority
 * all fail with ESRCH), while colocd sees it under its host pid; its
 * mount namespace's /proc lists its own process only. Signals are
 * blocked across the clone so that none of the daemon's handlers runs in
 * the child. Returns 1 when the kernel refuses the namespaces (EPERM in a
 * nested container, EINVAL on an old kernel), with the reason in
 * ep->isolation.
 */
static int spawn_cloned(struct execproc *ep, const struct child_args *c, __u64 ns_flags,
			struct coloc_err *err)
{
	struct clone_args ca = { .flags = ns_flags | CLONE_PIDFD,
				 .pidfd = (__u64)(uintptr_t)&ep->pidfd,
				 .exit_signal = SIGCHLD };
	struct child_report r;
	int pipefd[2], err_fd, proc_errno = 0, e;
	sigset_t all, old;
	ssize_t n;
	long pid;

	if (pipe2(pipefd, O_CLOEXEC))
		return coloc_err_set(err, -errno, "pipe2: %s", strerror(errno));
	/* above fds 0 and 3 on, which the child's dup2s overwrite */
	err_fd = fcntl(pipefd[1], F_DUPFD_CLOEXEC, c->first_free);
	e = errno;
	close(pipefd[1]);
	if (err_fd < 0) {
		close(pipefd[0]);
		return coloc_err_set(err, -e, "fcntl: %s", strerror(e));
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0 && errno == ENOSYS)
		pid = syscall(SYS_clone, (unsigned long)ca.flags | SIGCHLD, NULL, &ep->pidfd, NULL,
			      NULL);
	if (pid == 0)
		child_exec(c, err_fd);
	e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(err_fd);
	if (pid < 0) {
		close(pipefd[0]);
		ep->pidfd = -1;
		if (ns_flags && (e == EPERM || e == EINVAL || e == EACCES || e == ENOSPC)) {
			snprintf(ep->isolation, sizeof(ep->isolation),
				 "no pid, mount, ipc or network namespace of its own (the kernel "
				 "refused them: %s)",
				 strerror(e));
			return 1;
		}
		return coloc_err_set(err, -e, "clone: %s", strerror(e));
	}
	ep->pid = (pid_t)pid;
	/* up to EOF: execve succeeded (the pipe closed on exec), unless a fatal report came */
	for (;;) {
		n = read(pipefd[0], &r, sizeof(r));
		if (n < 0 && errno == EINTR)
			continue;
		if (n != sizeof(r))
			break;
		if (!r.fatal) {
			proc_errno = r.err;
			continue;
		}
		close(pipefd[0]);
		waitid((idtype_t)P_PIDFD, (id_t)ep->pidfd, &(siginfo_t){ 0 }, WEXITED);
		ep->dead = true;
		return coloc_err_set(err, -r.err, "cannot run %s: %s", c->path, strerror(r.err));
	}
	close(pipefd[0]);
	ep->own_pidns = ns_flags != 0;
	if (proc_errno)
		snprintf(ep->isolation, sizeof(ep->isolation),
			 "in a pid namespace of its own (and mount, ipc, network); its /proc still "
			 "lists colocd's processes (mounting its own failed: %s)",
			 strerror(proc_errno));
	else if (ns_flags)
		snprintf(ep->isolation, sizeof(ep->isolation),
			 "in a pid namespace of its own (and mount, ipc, network), with a /proc "
			 "of its own");
	return proc_errno ? 2 : 0;
}

static void child_limits(const struct execproc_opts *o, struct rlimit *lim)
{
	long cpus = sysconf(_SC_NPROCESSORS_CONF);
	rlim_t threads =
		(rlim_t)((cpus > 0 ? cpus : 1) + EXECPROC_THREADS_SLACK) * COLOC_MAX_EXECUTORS;

	lim[0] = (struct rlimit){ 0, 0 };
	lim[1] = (struct rlimit){ EXECPROC_NOFILE_LIMIT, EXECPROC_NOFILE_LIMIT };
	/* counted per uid: only a tenant with an own uid gets a bound of its own */
	lim[2] = o->uid ? (struct rlimit){ threads, threads } :
			  (struct rlimit){ RLIM_INFINITY, RLIM_INFINITY };
	lim[3] = (struct rlimit){ RLIM_INFINITY, RLIM_INFINITY };
#if !defined(__SANITIZE_ADDRESS__) /* AddressSanitizer reserves terabytes of shadow */
	if (o->max_address_space)
		lim[3] = (struct rlimit){ o->max_address_space, o->max_address_space };
#endif
}

/*
 * In namespaces of its own; where they are refused (or turned off), in
 * colocd's only if the caller accepts weak isolation.
 */
static int spawn_isolated(struct execproc *ep, const struct execproc_opts *o, struct child_args *c,
			  struct coloc_err *err)
{
	int ret = 1;

	child_limits(o, c->limits);
	c->remount_proc = true;
	if (o->no_namespaces)
		snprintf(ep->isolation, sizeof(ep->isolation),
			 "no pid, mount, ipc or network namespace of its own (turned off)");
	else
		ret = spawn_cloned(ep, c, CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET,
				   err);
	if (ret == 1 && o->allow_weak_isolation) {
		c->remount_proc = false;
		return spawn_cloned(ep, c, 0, err);
	}
	if (ret == 2 && o->allow_weak_isolation)
		return 0;
	if (ret == 2)
		execproc_kill(ep);
	if (ret > 0)
		return coloc_err_set(err, -EPERM,
				     "refusing to run it with weak isolation: %s (colocd "
				     "--allow-weak-isolation accepts that)",
				     ep->isolation);
	return ret;
}

/*
 * Starts the executor with lane i's shared memory, doorbell and input
 * socket as fds 3 + 3i, 4 + 3i and 5 + 3i: in a pid namespace of its own,
 * or where the kernel refuses that, in colocd's. The sources are moved
 * above the targets first so that one dup2 cannot clobber another's source.
 */
static int start_child(struct execproc *ep, const struct execproc_opts *o, const char *path,
		       int nr_lanes, const int *memfd, const int *done_wr, const int *input_ex,
		       int log_wr, struct coloc_err *err)
{
	char fd_s[COLOC_MAX_EXECUTORS][16], done_s[COLOC_MAX_EXECUTORS][16];
	char input_s[COLOC_MAX_EXECUTORS][16];
	char uid_s[16], gid_s[16], num[EXECPROC_MAX_FILES][16];
	/*
	 * A clean environment, with a short OpenMP spin. libgomp's default
	 * (300,000 spins, about 10 ms) keeps idle team threads spinning after a
	 * block on cores that by then belong to another tenant's block; passive
	 * waiting (no spin) puts every thread to sleep between two layers, and
	 * each wake-up of a sleeping vCPU costs tens of us: measured on the
	 * 2-vCPU Xeon VM with coloc-run on 2 cores, MobileNet-V2 took 6.8 ms
	 * passive, 2.6-2.8 ms with 1,000-3,000 spins or the default, and
	 * GoogLeNet 16.0 vs 11.1 ms. 3,000 spins (~0.1 ms) cover the gap
	 * between layers and end soon after a block.
	 */
	char *envp[4 + EXECPROC_MAX_FILES] = { "GOMP_SPINCOUNT=" COLOC_EXECUTOR_GOMP_SPINCOUNT };
	const char *argv[EXECPROC_MAX_ARGS];
	char *ext_args[EXECPROC_MAX_FILES] = { 0 }, *tenant_env = NULL, *model_env = NULL;
	int envc = 1;
	struct child_args c = { .path = path,
				.argv = (char *const *)argv,
				.envp = envp,
				.nr_lanes = nr_lanes,
				.file_fd = EXECPROC_SHM_FD + EXECPROC_FDS_PER_LANE * nr_lanes,
				.oom_score = o->roots_tenant ? EXECPROC_OOM_SCORE_ROOT :
							       EXECPROC_OOM_SCORE_MEMBER };
	int src[EXECPROC_MAX_FILES];
	int argc = 0, ret = 0;

	for (int i = 0; i < o->nr_cgroup_fds; i++)
		c.cgroup_fds[c.nr_cgroup_fds++] = o->cgroup_fds[i];
	if (ep->leaf.procs_fd >= 0)
		c.cgroup_fds[c.nr_cgroup_fds++] = ep->leaf.procs_fd;
	src[c.nr_files++] = o->model_fd;
	if (o->weights_fd >= 0)
		src[c.nr_files++] = o->weights_fd;
	for (int i = 0; i < o->nr_external; i++)
		src[c.nr_files++] = o->external[i].fd;
	c.first_free = c.file_fd + c.nr_files;
	for (int i = 0; i < c.nr_files; i++)
		snprintf(num[i], sizeof(num[i]), "%d", c.file_fd + i);
	argv[argc++] = path;
	for (int i = 0; i < nr_lanes; i++) {
		int at = EXECPROC_SHM_FD + EXECPROC_FDS_PER_LANE * i;

		snprintf(fd_s[i], sizeof(fd_s[i]), "%d", at);
		snprintf(done_s[i], sizeof(done_s[i]), "%d", at + 1);
		snprintf(input_s[i], sizeof(input_s[i]), "%d", at + 2);
		argv[argc++] = "--shm-fd";
		argv[argc++] = fd_s[i];
		argv[argc++] = "--done-fd";
		argv[argc++] = done_s[i];
		argv[argc++] = "--input-fd";
		argv[argc++] = input_s[i];
	}
	/*
	 * The tenant, the model's name and its external files' in the
	 * environment, not on the command line: any local user reads
	 * /proc/PID/cmdline, /proc/PID/environ only root and the same uid
	 * (the executor's own, none once it is not dumpable).
	 */
	if (asprintf(&tenant_env, "COLOC_TENANT=%s", o->tenant) < 0)
		tenant_env = NULL;
	if (asprintf(&model_env, "COLOC_MODEL_NAME=%s", o->model_name) < 0)
		model_env = NULL;
	if (!tenant_env || !model_env)
		ret = coloc_err_set(err, -ENOMEM, "out of memory");
	envp[envc++] = tenant_env;
	envp[envc++] = model_env;
	argv[argc++] = "--model-fd";
	argv[argc++] = num[0];
	if (o->weights_fd >= 0) {
		argv[argc++] = "--weights-fd";
		argv[argc++] = num[1];
	}
	for (int i = 0; i < o->nr_external && !ret; i++) {
		if (asprintf(&ext_args[i], "COLOC_EXTERNAL_%d=%s=%s", i, o->external[i].location,
			     num[c.nr_files - o->nr_external + i]) < 0) {
			ext_args[i] = NULL;
			ret = coloc_err_set(err, -ENOMEM, "out of memory");
			break;
		}
		envp[envc++] = ext_args[i];
	}
	envp[envc] = NULL;
	if (o->cores) {
		argv[argc++] = "--cores";
		argv[argc++] = o->cores;
	}
	if (o->uid) {
		snprintf(uid_s, sizeof(uid_s), "%u", (unsigned int)o->uid);
		snprintf(gid_s, sizeof(gid_s), "%u", (unsigned int)o->gid);
		argv[argc++] = "--uid";
		argv[argc++] = uid_s;
		argv[argc++] = "--gid";
		argv[argc++] = gid_s;
	}
	if (o->allow_weak_isolation)
		argv[argc++] = "--allow-weak-isolation";
	argv[argc] = NULL;

	c.log_hi = -1;
	for (int i = 0; i < nr_lanes; i++)
		c.shm_hi[i] = c.done_hi[i] = c.input_hi[i] = -1;
	for (int i = 0; i < c.nr_files; i++)
		c.file_hi[i] = -1;
	if (!ret) {
		for (int i = 0; i < nr_lanes && !ret; i++) {
			c.shm_hi[i] = fcntl(memfd[i], F_DUPFD_CLOEXEC, c.first_free);
			c.done_hi[i] = fcntl(done_wr[i], F_DUPFD_CLOEXEC, c.first_free);
			c.input_hi[i] = fcntl(input_ex[i], F_DUPFD_CLOEXEC, c.first_free);
			if (c.shm_hi[i] < 0 || c.done_hi[i] < 0 || c.input_hi[i] < 0)
				ret = coloc_err_set(err, -errno, "fcntl: %s", strerror(errno));
		}
		c.log_hi = fcntl(log_wr, F_DUPFD_CLOEXEC, c.first_free);
		for (int i = 0; i < c.nr_files; i++)
			c.file_hi[i] = fcntl(src[i], F_DUPFD_CLOEXEC, c.first_free);
		if (!ret && c.log_hi < 0)
			ret = coloc_err_set(err, -errno, "fcntl: %s", strerror(errno));
		for (int i = 0; i < c.nr_files && !ret; i++)
			if (c.file_hi[i] < 0)
				ret = coloc_err_set(err, -EBADF,
						    "the model's file %d is not an open descriptor",
						    i);
	}
	if (!ret)
		ret = spawn_isolated(ep, o, &c, err);
	for (int i = 0; i < nr_lanes; i++) {
		if (c.shm_hi[i] >= 0)
			close(c.shm_hi[i]);
		if (c.done_hi[i] >= 0)
			close(c.done_hi[i]);
		if (c.input_hi[i] >= 0)
			close(c.input_hi[i]);
	}
	if (c.log_hi >= 0)
		close(c.log_hi);
	for (int i = 0; i < c.nr_files; i++)
		if (c.file_hi[i] >= 0)
			close(c.file_hi[i]);
	for (int i = 0; i < EXECPROC_MAX_FILES; i++)
		free(ext_args[i]);
	free(tenant_env);
	free(model_env);
	return ret;
}

/*
 * A handle with nothing open yet, its doorbell pipe (the write end into
 * *done_wr) and its input socket (the executor's end into *input_ex).
 */
static int lane_new(const struct execproc_opts *o, struct execproc **out, int *done_wr,
		    int *input_ex, struct coloc_err *err)
{
	struct execproc *ep = calloc(1, sizeof(*ep));
	int pipefd[2], sv[2];

	*out = ep;
	if (!ep)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	ep->pidfd = -1;
	ep->pid = -1;
	ep->shm_fd = -1;
	ep->log.fd = -1;
	cgroup_leaf_init(&ep->leaf);
	snprintf(ep->tenant, sizeof(ep->tenant), "%s", o->tenant);
	/*
	 * One open file per end: the executor can change the flags of its
	 * write end only, never make colocd's read end blocking.
	 */
	ep->done_fd = -1;
	ep->input_sock = -1;
	if (pipe2(pipefd, O_CLOEXEC))
		return coloc_err_set(err, -errno, "pipe2: %s", strerror(errno));
	ep->done_fd = pipefd[0];
	*done_wr = pipefd[1];
	if (fcntl(ep->done_fd, F_SETFL, O_NONBLOCK))
		return coloc_err_set(err, -errno, "fcntl: %s", strerror(errno));
	/*
	 * The smallest send buffer: a few messages, so that an executor that
	 * never takes its memfds holds few clients' files (colocd then reads
	 * the input into the slot, serving.c).
	 */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv))
		return coloc_err_set(err, -errno, "socketpair: %s", strerror(errno));
	ep->input_sock = sv[0];
	*input_ex = sv[1];
	setsockopt(ep->input_sock, SOL_SOCKET, SO_SNDBUF, &(int){ 1 }, sizeof(int));
	return 0;
}

/*
 * Lanes 1.. share lane 0's process: its pid, a pidfd of their own, a copy
 * of its leaf's cgroup.kill, no log.
 */
static int lanes_join(struct execproc **eps, int nr, struct coloc_err *err)
{
	for (int i = 1; i < nr; i++) {
		if (eps[0]->leaf.kill_fd >= 0 &&
		    (eps[i]->leaf.kill_fd = fcntl(eps[0]->leaf.kill_fd, F_DUPFD_CLOEXEC, 0)) < 0)
			return coloc_err_set(err, -errno, "fcntl: %s", strerror(errno));
		eps[i]->pid = eps[0]->pid;
		eps[i]->own_pidns = eps[0]->own_pidns;
		eps[i]->lane_sibling = true;
		memcpy(eps[i]->isolation, eps[0]->isolation, sizeof(eps[i]->isolation));
		eps[i]->pidfd = fcntl(eps[0]->pidfd, F_DUPFD_CLOEXEC, 0);
		if (eps[i]->pidfd < 0)
			return coloc_err_set(err, -errno, "fcntl: %s", strerror(errno));
	}
	return 0;
}

int execproc_spawn_lanes(const struct execproc_opts *o, int nr, struct execproc **out,
			 struct coloc_err *err)
{
	int memfd[COLOC_MAX_EXECUTORS], done_wr[COLOC_MAX_EXECUTORS], logfd[2] = { -1, -1 };
	int input_ex[COLOC_MAX_EXECUTORS];
	char path[PATH_MAX];
	int ret = 0;

	if (!o || o->model_fd < 0 || !o->model_name || !o->tenant || !o->tenant[0] ||
	    strlen(o->tenant) >= COLOC_SHM_NAME_LEN || o->nr_external < 0 ||
	    o->nr_external > COLOC_MAX_REQUEST_FDS || (o->nr_external && !o->external) ||
	    nr < 1 || nr > COLOC_MAX_EXECUTORS || o->nr_cgroup_fds < 0 ||
	    o->nr_cgroup_fds >= EXECPROC_MAX_CGROUP_FDS)
		return coloc_err_set(err, -EINVAL,
				     "an executor needs a model descriptor, at most %d external "
				     "data files, a tenant name of 1 to %d bytes and 1 to %d lanes",
				     COLOC_MAX_REQUEST_FDS, COLOC_SHM_NAME_LEN - 1,
				     COLOC_MAX_EXECUTORS);
	if (o->executor)
		snprintf(path, sizeof(path), "%s", o->executor);
	else if ((ret = execproc_default_executor(path, sizeof(path), err)))
		return ret;
	for (int i = 0; i < nr; i++) {
		out[i] = NULL;
		memfd[i] = done_wr[i] = input_ex[i] = -1;
	}
	for (int i = 0; i < nr && !ret; i++) {
		ret = lane_new(o, &out[i], &done_wr[i], &input_ex[i], err);
		if (!ret)
			ret = create_shm(out[i], o, &memfd[i], err);
	}
	if (!ret && pipe2(logfd, O_CLOEXEC))
		ret = coloc_err_set(err, -errno, "pipe2: %s", strerror(errno));
	if (!ret) {
		/* the log's from here on, whatever it answers */
		ret = exec_log_init(&out[0]->log, logfd[0], out[0]->tenant, -1, stdout);
		logfd[0] = -1;
		if (ret)
			ret = coloc_err_set(err, ret, "fcntl: %s", strerror(-ret));
	}
	if (!ret && o->cgroup_leaf_parent)
		ret = cgroup_leaf_create(o->cgroup_leaf_parent, &out[0]->leaf, err);
	if (!ret)
		ret = start_child(out[0], o, path, nr, memfd, done_wr, input_ex, logfd[1], err);
	if (!ret)
		ret = lanes_join(out, nr, err);
	if (out[0])
		out[0]->log.pid = out[0]->pid;
	for (int i = 0; i < nr; i++) {
		if (done_wr[i] >= 0)
			close(done_wr[i]);
		if (input_ex[i] >= 0)
			close(input_ex[i]);
	}
	for (int i = 0; i < 2; i++)
		if (logfd[i] >= 0)
			close(logfd[i]);
	if (!ret)
		return 0;
	coloc_err_prefix(err, "tenant %s: starting its executor", o->tenant);
	/* lane 0 last: it reaps the process the others share */
	for (int i = nr - 1; i >= 0; i--) {
		execproc_free(out[i]);
		out[i] = NULL;
	}
	return ret;
}

int execproc_spawn(const struct execproc_opts *o, struct execproc **out, struct coloc_err *err)
{
	*out = NULL;
	return execproc_spawn_lanes(o, 1, out, err);
}
