/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Helpers shared by coloc's tests: real busy processes pinned to a CPU, their
 * CPU time as the kernel accounts it, running coloc's binaries, mutating
 * good text to fuzz a parser (testutil.c), sockets and talking to a colocd
 * over its socket (testutil_socket.c), colocd and its tools
 * (testutil_colocd.c), files and folders (testutil_files.c), what /proc
 * says of a process (testutil_proc.c) and waiting on a condition
 * (testutil_wait.c).
 */
#ifndef COLOC_TESTUTIL_H
#define COLOC_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>
#include "mono_clock.h"

int tu_pin_self(int cpu);
int tu_nr_online_cpus(void);
/* A CPU-wide perf event of type/config on cpu (all tasks): its fd, or -errno. */
int tu_perf_open(__u32 type, __u64 config, int cpu);
/* CPU-wide perf events need root (or CAP_PERFMON, or perf_event_paranoid <= 0): 0 or errno. */
int tu_cpu_wide_errno(void);
#define TU_SKIP_UNLESS_CPU_WIDE()                                                      \
	do {                                                                           \
		int __e = tu_cpu_wide_errno();                                         \
		if (__e)                                                               \
			SKIP(return, "CPU-wide perf events refused (%s): run as root", \
			     strerrorname_np(__e));                                    \
	} while (0)

/*
 * A child that waits for tu_release(), then, pinned to cpu (-1: anywhere),
 * spins busy_ms and sleeps idle_ms in turn until killed.
 */
struct tu_spinner {
	pid_t pid;
	int go_fd;
};
int tu_spawn_spinner(struct tu_spinner *s, int cpu, unsigned int busy_ms, unsigned int idle_ms);
void tu_release(struct tu_spinner *s);
void tu_kill(struct tu_spinner *s);

/* utime + stime of a process from /proc/PID/stat, in ns. */
int tu_proc_cpu_ns(pid_t pid, __u64 *ns);
/* The same of one of its threads. */
int tu_task_cpu_ns(pid_t pid, pid_t tid, __u64 *ns);
/*
 * Time a hypervisor stole from all vCPUs so far (/proc/stat), in ns. The
 * sensor counts on-CPU time by the clock, so a stolen stretch counts for the
 * task that held the vCPU; the kernel's utime+stime leave it out. Comparing
 * the two, the steal of the interval widens the upper bound.
 */
int tu_steal_ns(__u64 *ns);

/* Entries of directory dir but those whose name starts with '.'; -1 when it cannot be read. */
int tu_nr_dir_entries(const char *dir);

/*
 * The threads of pid (/proc/PID/task) for which pred holds (every one when
 * pred is NULL): how many, -1 when the folder cannot be read; *nr (unless
 * NULL) how many threads there were, 0 when it cannot be read.
 */
int tu_count_threads(pid_t pid, bool (*pred)(pid_t pid, pid_t tid, void *ctx), void *ctx,
		     int *nr);
/* Thread tid of pid's state letter, from /proc/PID/task/TID/stat; '?' when it cannot be read. */
char tu_thread_state(pid_t pid, pid_t tid);
/* Mounts bpffs at /sys/fs/bpf unless one is there (a fresh machine has none). */
int tu_mount_bpffs(void);
/* Path of a coloc binary, found as binpath_find() does (common/binpath.h). */
const char *tu_bin(const char *name, char *buf, size_t len);
/* rel (e.g. "models/mobilenet_v2.model") in the repository: under $COLOC_ROOT, else "."; buf. */
const char *tu_repo_path(const char *rel, char *buf, size_t len);
/*
 * rel in the repository (tu_repo_path) resolved by realpath into resolved
 * (PATH_MAX bytes): 0; -1 with why (len bytes: the path not found, and to
 * set COLOC_ROOT), for the test to skip.
 */
int tu_repo_realpath(const char *rel, char *resolved, char *why, size_t len);
/* tests/hostile_executor.c's binary, built beside the running test; NULL if unknown. */
const char *tu_hostile_executor_bin(char *buf, size_t len);
/*
 * Makes dir/executor, a link to the hostile executor, with dir/coloc-executor
 * beside it, a link to the real one (for the honest tenants); the first's
 * path in executor. 0 or -1.
 */
int tu_hostile_executor_dir(const char *dir, char *executor, size_t len);
/* Runs a shell command; its stdout+stderr go to out. Returns the exit status or -1. */
int tu_run(const char *cmd, char *out, size_t len);
/* Runs colocctl --socket SOCK ARGS (ARGS as a shell reads them), as tu_run does. */
int tu_colocctl(const char *sock, const char *args, char *out, size_t len);
/* Drops this process to uid (gid the same) with the coloc group, if it exists. 0 or -1. */
int tu_become_member(uid_t uid);
/*
 * colocctl (its path) --socket sock ARGS... as uid (0: root) with the coloc
 * group, opened as root and fexecve'd (a clone may sit in a 0700 directory
 * the member cannot search); its stdout and stderr in out. Its exit status,
 * or -1.
 */
int tu_colocctl_as(const char *colocctl, const char *sock, uid_t uid, const char *const *args,
		   char *out, size_t len);

/* A coloc binary run as a child, its stdout and stderr going to a pipe. */
struct tu_child {
	pid_t pid;
	int out_fd;
	int status; /* from waitpid, once reaped */
	char output[32768];
};
/* Runs bin with args (NULL-terminated, at most 22). */
int tu_child_start(const char *bin, const char *const *args, struct tu_child *c);
/* Whether the reaped child exited with code (not by a signal). */
bool tu_child_exited_with(const struct tu_child *c, int code);
/* Reads the child's output until it closes it; does not reap the child. */
void tu_child_read_output(struct tu_child *c);
/* Reads its output and reaps it. */
int tu_child_finish(struct tu_child *c);

/* Starts colocd with its output in log; waits (up to a minute) until it answers a ping. */
pid_t tu_start_colocd(const char *socket_path, const char *pin_dir, const char *log);
/* The same with more flags (NULL-terminated, at most 18). */
pid_t tu_start_colocd_with(const char *socket_path, const char *pin_dir, const char *log,
			   const char *const *extra);
/* SIGTERM, then the exit status; -1 (and SIGKILL) if it has not exited within a minute. */
int tu_stop_colocd(pid_t pid);
/* One request line (with '\n') -> one response line. Returns bytes or -errno. */
int tu_request(const char *socket_path, const char *req, char *resp, size_t len);
/*
 * len bytes of data with nr_fds (at most TU_MAX_FDS) riding on them, tried
 * again for up to 5 s while colocd has not admitted the connection (EPERM):
 * 0 or -errno.
 */
#define TU_MAX_FDS 253
int tu_send_fds(int fd, const void *data, size_t len, const int *fds, int nr_fds, int flags);
/*
 * A TCP (protocol 0) or MPTCP socket with SO_LINGER linger_s towards a
 * listener on 127.0.0.1 (*listener) that never accepts nor reads, its send
 * queue full: its last close waits out the linger. -1 on failure (*listener
 * -1 when the protocol is not there).
 */
int tu_lingering_socket(int protocol, int linger_s, int *listener);
/* The same with descriptors riding on the line (SCM_RIGHTS), as submit takes its files. */
int tu_request_fds(const char *socket_path, const char *req, const int *fds, int nr_fds,
		   char *resp, size_t len);
/*
 * A sealed copy of the file at path (submit_file_seal, as colocd makes of a
 * submitted file): the fd, or -errno.
 */
int tu_sealed_copy(const char *path);
int tu_connect(const char *socket_path);
int tu_read_line(int fd, char *buf, size_t len);

/*
 * Writes into buf an hwloc XML topology of a machine that is not this one:
 * nr_packages packages whose physical ids are package_ids[] (in that order,
 * gaps allowed), each with cores_per_package cores of pus_per_core PUs and
 * one L3 of l3_bytes; CPUs are numbered 0, 1, ... in the order written,
 * the PUs of a core adjacent. At most 64 CPUs. 0, or -ENOSPC / -EINVAL.
 */
int tu_topology_xml(char *buf, size_t len, const int *package_ids, int nr_packages,
		    int cores_per_package, int pus_per_core, unsigned long long l3_bytes);

/*
 * The outputs of the model at path on input, run in this process by the
 * executor library on every CPU this process may use (the reference a
 * tenant's executor process must match); malloc'd, *out_elems floats, or NULL.
 */
float *tu_model_outputs(const char *path, const float *input, size_t *out_elems);
/*
 * The same for each of n inputs with one load of the model (a load is most
 * of a call's time): outs[k] malloc'd, *out_elems floats each. 0, or -1 with
 * every outs[k] NULL.
 */
int tu_model_outputs_n(const char *path, const float *const *inputs, int n, float **outs,
		       size_t *out_elems);

/*
 * Makes /tmp/coloc-NAME-XXXXXX into buf ("" if it cannot), removed with
 * everything in it when the process that made it exits: call it from a
 * constructor, so the harness's forked tests share it and only the parent
 * removes it.
 */
void tu_shared_tmpdir(const char *name, char *buf, size_t len);

/*
 * Makes model's latency profile in cache_dir with bin/coloc-profile (one
 * iteration, stress level 50: quick, for tests that need colocd to find a
 * profile), unless an earlier test of the binary made it. 0, or -1 with
 * the command and its output in out.
 */
int tu_quick_profile(const char *model, const char *cache_dir, char *out, size_t len);
/*
 * The same for model with the weights file weights (coloc-profile
 * --weights: the key colocd finds for a submit with them), reusing the
 * cache's when there is one.
 */
int tu_quick_profile_weights(const char *model, const char *weights, const char *cache_dir,
			     char *out, size_t len);

/*
 * Makes edits random edits to the len bytes of text, which has room for
 * len + edits: each overwrites a byte with any value or with one of
 * alphabet's characters, cuts the text after a byte, or inserts one of
 * "9 \n-". *rng is the xorshift64 state, advanced. Returns the new length.
 */
size_t tu_mutate(char *text, size_t len, int edits, const char *alphabet, uint64_t *rng);

/* A TCP port free now on 127.0.0.1, below the ephemeral range, drawn at random; or -1. */
int tu_free_port(void);

/* Starts argv (argv[0] a path) with stdout and stderr appended to log: its pid, or -1. */
pid_t tu_spawn_logged(const char *const *argv, const char *log);

/* SIGTERM, then SIGKILL after 5 s; *pid is set to 0. The wait status, or -1. */
int tu_stop_child(pid_t *pid);

/*
 * Calls done(ctx) until it returns true, poll_us apart, for at most
 * timeout_ms on the monotonic clock (testutil_wait.c): whether it did.
 */
bool tu_wait_for(bool (*done)(void *ctx), void *ctx, unsigned int timeout_ms, unsigned int poll_us);
/* A minute: the deadline of a wait for what takes seconds on a quiet machine. */
#define TU_WAIT_MS 60000

/* The whole file, malloc'd and NUL-terminated (*len without the NUL), or NULL. */
char *tu_read_file(const char *path, size_t *len);
/* Reads fd to its end, or until buf (len bytes) is full, into buf, ended by a NUL: bytes read. */
size_t tu_read_all(int fd, char *buf, size_t len);
/* Writes len bytes of data as the whole of path (created or truncated): 0 or -1. */
int tu_write_file(const char *path, const void *data, size_t len);

/*
 * The value of field (e.g. "Uid") in /proc/PID/status (pid 0: this
 * process), its leading blanks and newline cut, into val: 0, or -1 with
 * val "" when the file or the field is not there.
 */
int tu_proc_status_field(pid_t pid, const char *field, char *val, size_t len);
/*
 * pid's cgroup path as /proc/PID/cgroup writes it, in the v1 hierarchy
 * whose controllers include ctl ("cpu" finds "cpu,cpuacct"), or with ctl
 * "" the v2 one, into dir: 0, or -1 with dir "" when there is none.
 */
int tu_proc_cgroup(pid_t pid, const char *ctl, char *dir, size_t len);
/* Voluntary context switches of every thread of pid (0: this process) so far, or -1. */
long tu_voluntary_switches(pid_t pid);
/* The first cgroup v2 mount point in /proc/mounts whose path starts with under (NULL: any): 0 or -ENOENT. */
int tu_cgroup2_mount(const char *under, char *buf, size_t len);
/* A kB field of /proc/PID/status (pid 0: this process), e.g. "VmRSS"; -1 if unknown. */
long tu_proc_status_kb(pid_t pid, const char *field);
/* Whether pid's main thread has no child process (colocd's executors reaped) within ms. */
bool tu_no_children(pid_t pid, int ms);
/* Resets pid's VmHWM to its current VmRSS (clear_refs 5; pid 0: this process). */
void tu_reset_peak_rss(pid_t pid);

/*
 * Makes a new directory for a test's files into buf: as root
 * TU_ROOT_TMP/NAME-XXXXXX (root's tools refuse a model below /tmp, which
 * every user may write: common/trusted_path.h), as another user
 * /tmp/coloc-NAME-XXXXXX. 0, or -errno with buf "".
 */
#define TU_ROOT_TMP "/var/lib/coloc-test"
int tu_make_tmpdir(const char *name, char *buf, size_t len);
/*
 * Removes path and everything below it, following no link and running no
 * shell; "" or a path not there is nothing to do. 0, or the -errno of the
 * first entry that could not be removed (the others are removed still).
 */
int tu_remove_tree(const char *path);

/*
 * Forks a driver that dies with its parent and has dropped capability cap
 * from its effective set (as a process in a nested container lacks it): 0
 * in the driver, its pid in the parent, -errno when fork fails. A driver
 * that cannot drop it exits with status 2.
 */
pid_t tu_fork_without_cap(int cap);

#endif /* COLOC_TESTUTIL_H */
