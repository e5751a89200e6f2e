// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Test helpers (see testutil.h): CPUs, perf events and spinners pinned to
 * a CPU, the binaries under test and child processes, a topology for
 * hwloc, a model's outputs, a shared temporary folder, mutated text. The
 * rest by job: sockets in testutil_socket.c, colocd and its tools in
 * testutil_colocd.c, files in testutil_files.c, /proc in testutil_proc.c,
 * waiting in testutil_wait.c. Everything here is real: processes are
 * forked, pinned with sched_setaffinity and measured through /proc.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/perf_event.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "binpath.h"
#include "executor.h"
#include "model.h"
#include "testutil.h"

int tu_pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

int tu_nr_online_cpus(void)
{
	return (int)sysconf(_SC_NPROCESSORS_ONLN);
}

int tu_perf_open(__u32 type, __u64 config, int cpu)
{
	struct perf_event_attr attr = { .size = sizeof(attr), .type = type, .config = config };
	int fd = syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int tu_cpu_wide_errno(void)
{
	int fd = tu_perf_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 0);

	if (fd < 0)
		return -fd;
	close(fd);
	return 0;
}

int tu_nr_dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

int tu_mount_bpffs(void)
{
	struct statfs st;

	if (!statfs("/sys/fs/bpf", &st) && st.f_type == BPF_FS_MAGIC)
		return 0;
	return mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700") ? -errno : 0;
}

static void tu_spin_forever(unsigned int busy_ms, unsigned int idle_ms)
{
	volatile __u64 sink = 0;

	for (;;) {
		__u64 until = coloc_now_ns() + busy_ms * 1000000ull;

		while (coloc_now_ns() < until)
			for (int i = 0; i < 1000; i++)
				sink += (__u64)i * i;
		if (idle_ms) {
			struct timespec ts = { idle_ms / 1000, (idle_ms % 1000) * 1000000L };

			nanosleep(&ts, NULL);
		}
	}
}

int tu_spawn_spinner(struct tu_spinner *s, int cpu, unsigned int busy_ms, unsigned int idle_ms)
{
	int fds[2];
	char go;

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	s->pid = fork();
	if (s->pid < 0)
		return -errno;
	if (s->pid == 0) {
		close(fds[1]);
		if (cpu >= 0 && tu_pin_self(cpu))
			_exit(3);
		if (read(fds[0], &go, 1) != 1)
			_exit(0);
		tu_spin_forever(busy_ms, idle_ms);
	}
	close(fds[0]);
	s->go_fd = fds[1];
	return 0;
}

void tu_release(struct tu_spinner *s)
{
	if (write(s->go_fd, "g", 1) != 1)
		perror("tu_release");
}

void tu_kill(struct tu_spinner *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		s->pid = 0;
	}
	if (s->go_fd > 0)
		close(s->go_fd);
	s->go_fd = -1;
}

const char *tu_bin(const char *name, char *buf, size_t len)
{
	if (binpath_find(name, buf, len))
		snprintf(buf, len, "bin/%s", name); /* exec then fails and says so */
	return buf;
}

const char *tu_repo_path(const char *rel, char *buf, size_t len)
{
	const char *root = getenv("COLOC_ROOT");

	snprintf(buf, len, "%s/%s", root ? root : ".", rel);
	return buf;
}

int tu_repo_realpath(const char *rel, char *resolved, char *why, size_t len)
{
	char path[PATH_MAX + 64];

	if (realpath(tu_repo_path(rel, path, sizeof(path)), resolved))
		return 0;
	snprintf(why, len, "%.900s not found (set COLOC_ROOT to the repo root)", path);
	return -1;
}

bool tu_child_exited_with(const struct tu_child *c, int code)
{
	return WIFEXITED(c->status) && WEXITSTATUS(c->status) == code;
}

int tu_run(const char *cmd, char *out, size_t len)
{
	char full[4096];
	size_t got = 0;
	FILE *p;
	int st;

	snprintf(full, sizeof(full), "%s 2>&1", cmd);
	p = popen(full, "r");
	if (!p)
		return -1;
	if (len) {
		got = fread(out, 1, len - 1, p);
		out[got] = '\0';
	}
	while (fgetc(p) != EOF)
		;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int tu_child_start(const char *bin, const char *const *args, struct tu_child *c)
{
	const char *argv[24] = { bin };
	int pipefd[2], n = 1;

	for (; args[n - 1] && n < 23; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	if (pipe2(pipefd, O_CLOEXEC))
		return -errno;
	c->pid = fork();
	if (c->pid < 0)
		return -errno;
	if (c->pid == 0) {
		dup2(pipefd[1], STDOUT_FILENO);
		dup2(pipefd[1], STDERR_FILENO);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(pipefd[1]);
	c->out_fd = pipefd[0];
	return 0;
}

void tu_child_read_output(struct tu_child *c)
{
	tu_read_all(c->out_fd, c->output, sizeof(c->output));
	close(c->out_fd);
	c->out_fd = -1;
}

int tu_child_finish(struct tu_child *c)
{
	tu_child_read_output(c);
	return waitpid(c->pid, &c->status, 0) == c->pid ? 0 : -errno;
}

/* An hwloc cpuset string for CPUs [first, first + n): 32-bit words, highest first. */
static void tu_cpuset(char *buf, size_t len, int first, int n)
{
	unsigned long long bits = (n >= 64 ? ~0ull : ((1ull << n) - 1)) << first;

	if (bits >> 32)
		snprintf(buf, len, "0x%08llx,0x%08llx", bits >> 32, bits & 0xffffffffull);
	else
		snprintf(buf, len, "0x%08llx", bits);
}

int tu_topology_xml(char *buf, size_t len, const int *package_ids, int nr_packages,
		    int cores_per_package, int pus_per_core, unsigned long long l3_bytes)
{
	int per_package = cores_per_package * pus_per_core, total = nr_packages * per_package;
	size_t at = 0;
	char set[64];

#define TU_XML(...)                                                 \
	do {                                                        \
		int n_ = snprintf(buf + at, len - at, __VA_ARGS__); \
		if (n_ < 0 || (size_t)n_ >= len - at)               \
			return -ENOSPC;                             \
		at += (size_t)n_;                                   \
	} while (0)

	if (nr_packages < 1 || cores_per_package < 1 || pus_per_core < 1 || total > 64 ||
	    nr_packages > 31 || !len)
		return -EINVAL;
	tu_cpuset(set, sizeof(set), 0, total);
	TU_XML("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	       "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n<topology version=\"2.0\">\n"
	       "<object type=\"Machine\" os_index=\"0\" cpuset=\"%s\" complete_cpuset=\"%s\" "
	       "allowed_cpuset=\"%s\" nodeset=\"0x%08x\" complete_nodeset=\"0x%08x\" "
	       "allowed_nodeset=\"0x%08x\">\n",
	       set, set, set, (1u << nr_packages) - 1, (1u << nr_packages) - 1,
	       (1u << nr_packages) - 1);
	for (int p = 0; p < nr_packages; p++) {
		int first = p * per_package;

		tu_cpuset(set, sizeof(set), first, per_package);
		TU_XML("<object type=\"Package\" os_index=\"%d\" cpuset=\"%s\" complete_cpuset=\"%s\" "
		       "nodeset=\"0x%08x\" complete_nodeset=\"0x%08x\">\n"
		       "<object type=\"NUMANode\" os_index=\"%d\" cpuset=\"%s\" complete_cpuset=\"%s\" "
		       "nodeset=\"0x%08x\" complete_nodeset=\"0x%08x\" local_memory=\"1073741824\"/>\n"
		       "<object type=\"L3Cache\" cpuset=\"%s\" complete_cpuset=\"%s\" cache_size=\"%llu\" "
		       "depth=\"3\" cache_linesize=\"64\" cache_associativity=\"16\" cache_type=\"0\">\n",
		       package_ids[p], set, set, 1u << p, 1u << p, p, set, set, 1u << p, 1u << p,
		       set, set, l3_bytes);
		for (int c = 0; c < cores_per_package; c++) {
			int core_first = first + c * pus_per_core;

			tu_cpuset(set, sizeof(set), core_first, pus_per_core);
			TU_XML("<object type=\"Core\" os_index=\"%d\" cpuset=\"%s\" "
			       "complete_cpuset=\"%s\">\n",
			       c, set, set);
			for (int u = 0; u < pus_per_core; u++) {
				tu_cpuset(set, sizeof(set), core_first + u, 1);
				TU_XML("<object type=\"PU\" os_index=\"%d\" cpuset=\"%s\" "
				       "complete_cpuset=\"%s\"/>\n",
				       core_first + u, set, set);
			}
			TU_XML("</object>\n");
		}
		TU_XML("</object>\n</object>\n");
	}
	TU_XML("</object>\n</topology>\n");
#undef TU_XML
	return 0;
}

int tu_model_outputs_n(const char *path, const float *const *inputs, int n, float **outs,
		       size_t *out_elems)
{
	struct coloc_err err = { 0 };
	struct model *m = model_load(path, &err);
	struct model_io_layout io = { 0 };
	struct exec_options o = { 0 };
	struct exec_model *em = NULL;
	struct exec_query *q = NULL;
	cpu_set_t mask;
	int ret = -1, k;

	for (k = 0; k < n; k++)
		outs[k] = NULL;
	if (!m)
		return -1;
	sched_getaffinity(0, sizeof(mask), &mask);
	for (int cpu = 0; cpu < EXEC_MAX_CPUS && cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &mask) && exec_cpu_online(cpu))
			o.cpus.cpus[o.cpus.nr++] = cpu;
	em = exec_model_load(m, &o, &err);
	q = em ? exec_query_new(em) : NULL;
	if (!q || model_io_layout(m, &io, &err))
		goto out;
	*out_elems = io.out_bytes / sizeof(float);
	for (k = 0; k < n; k++) {
		for (int i = 0; i < io.nr_inputs; i++)
			memcpy(exec_query_input(q, io.inputs[i].layer),
			       (const char *)inputs[k] + io.inputs[i].offset, io.inputs[i].bytes);
		outs[k] = malloc(io.out_bytes);
		if (!outs[k] || exec_run_block(em, q, 0, m->nr_layers, NULL, &o.cpus, NULL))
			goto out;
		for (int i = 0; i < io.nr_outputs; i++)
			if (exec_query_read_output(q, io.outputs[i].layer,
						   outs[k] + io.outputs[i].offset / sizeof(float),
						   io.outputs[i].bytes / sizeof(float)))
				goto out;
	}
	ret = 0;
out:
	for (k = 0; ret && k < n; k++) {
		free(outs[k]);
		outs[k] = NULL;
	}
	model_io_layout_free(&io);
	if (q)
		exec_query_free(q);
	exec_model_free(em);
	model_free(m);
	return ret;
}

float *tu_model_outputs(const char *path, const float *input, size_t *out_elems)
{
	float *out;

	return tu_model_outputs_n(path, &input, 1, &out, out_elems) ? NULL : out;
}

static char tu_tmpdir[128];
static pid_t tu_tmpdir_owner;

static void tu_remove_tmpdir(void)
{
	if (getpid() != tu_tmpdir_owner || !tu_tmpdir[0])
		return;
	if (tu_remove_tree(tu_tmpdir))
		fprintf(stderr, "tests: could not remove %s\n", tu_tmpdir);
}

void tu_shared_tmpdir(const char *name, char *buf, size_t len)
{
	snprintf(tu_tmpdir, sizeof(tu_tmpdir), "/tmp/coloc-%s-XXXXXX", name);
	if (!mkdtemp(tu_tmpdir)) {
		tu_tmpdir[0] = '\0';
	} else {
		tu_tmpdir_owner = getpid();
		atexit(tu_remove_tmpdir);
	}
	snprintf(buf, len, "%s", tu_tmpdir);
}

size_t tu_mutate(char *text, size_t len, int edits, const char *alphabet, uint64_t *rng)
{
	uint64_t r = *rng;

	for (int e = 0; e < edits; e++) {
		size_t at;

		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		at = (size_t)(r % len);
		switch ((r >> 32) % 4) {
		case 0:
			text[at] = (char)(r >> 40);
			break;
		case 1:
			text[at] = alphabet[(r >> 40) % strlen(alphabet)];
			break;
		case 2:
			len = at + 1;
			break;
		default:
			memmove(text + at + 1, text + at, len - at);
			text[at] = "9 \n-"[(r >> 40) % 4];
			len++;
			break;
		}
	}
	*rng = r;
	return len;
}

pid_t tu_spawn_logged(const char *const *argv, const char *log)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		if (fd < 0)
			_exit(127);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

int tu_stop_child(pid_t *pid)
{
	int st = -1;

	if (*pid <= 0)
		return -1;
	kill(*pid, SIGTERM);
	for (int i = 0; i < 100; i++) {
		if (waitpid(*pid, &st, WNOHANG) == *pid) {
			*pid = 0;
			return st;
		}
		usleep(50000);
	}
	kill(*pid, SIGKILL);
	waitpid(*pid, NULL, 0);
	*pid = 0;
	return -1;
}

pid_t tu_fork_without_cap(int cap)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (syscall(SYS_capget, &h, d))
		_exit(2);
	d[cap / 32].effective &= ~(1u << (cap % 32));
	if (syscall(SYS_capset, &h, d))
		_exit(2);
	return 0;
}
