// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-executor: one tenant's executor process, started by colocd (through
 * daemon/execproc.c) on a shared-memory region laid out as in
 * include/coloc/shm.h. It first enters its sandbox (executor/exec_sandbox.h:
 * the tenant's own uid, no capabilities, Landlock, seccomp) under limits on
 * its address space and on the CPU time its parse may take; only then does
 * it read the model, its weights and any ONNX external data from the sealed
 * memfds colocd inherited to it (never a path: the client opened the files),
 * describe it to colocd (executor/shm_summary.h) and build every oneDNN
 * primitive. Then it serves commands "run layers
 * [first, last) of the query in slot s with these versions on these cores"
 * one at a time: it sleeps on a futex until colocd rings, runs the block,
 * writes the completion and writes to its end of colocd's doorbell pipe.
 * Between blocks it never spins: its OpenMP team sleeps on the same futex
 * (exec_team_wait) and wakes with it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "coloc/protocol.h"
#include "coloc/shm.h"
#include "cli.h"
#include "executor.h"
#include "model_open.h"
#include "exec_sandbox.h"
#include "profile.h"
#include "shm_summary.h"

#define PROG "coloc-executor"
/*
 * The address space it may ever use (weights, activations, oneDNN's
 * scratch, OpenMP stacks), and the CPU seconds its model import may take;
 * colocd's start-up timeout bounds the wall time.
 */
#define EXECUTOR_MAX_AS_BYTES (64ull << 30)
#define EXECUTOR_PARSE_CPU_S 120

static struct {
	int shm_fd, done_fd, model_fd, weights_fd;
	const char *tenant, *cores, *model_name;
	struct onnx_external_fd external[COLOC_MAX_REQUEST_FDS];
	int nr_external;
	long uid, gid;
	bool allow_weak;
} opts = { .shm_fd = -1, .done_fd = -1, .model_fd = -1, .weights_fd = -1 };

/* What the loop needs: the model, one query per slot, and where a slot's tensors go. */
struct server {
	struct coloc_shm *shm;
	struct exec_model *em;
	struct model *m;
	struct exec_cpuset allowed;
	struct exec_query *q[COLOC_SHM_NR_SLOTS];
	unsigned int progress[COLOC_SHM_NR_SLOTS]; /* layers [0, progress) computed */
	int done_fd;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG
		" --shm-fd N --done-fd N --tenant NAME --model-fd N --model-name NAME\n"
		"       [options]\n"
		"One tenant's executor process. colocd starts it (you normally do not): it\n"
		"enters its sandbox (the tenant's uid, no capabilities, Landlock, seccomp),\n"
		"then reads the model from fd N and builds every kernel, then runs the layer\n"
		"blocks colocd writes into the shared memory on fd N (layout:\n"
		"include/coloc/shm.h), signalling each completion on the pipe's write end\n"
		"--done-fd.\n"
		"\n"
		"  -s, --shm-fd N        the shared memory (a sealed memfd) colocd created\n"
		"  -d, --done-fd N       the pipe (write end) to signal after each completion\n"
		"  -t, --tenant NAME     the tenant, for messages\n"
		"  -m, --model-fd N      the model's bytes (a sealed memfd)\n"
		"  -n, --model-name NAME its name as submitted: messages, and '.onnx' for ONNX\n"
		"  -w, --weights-fd N    a weights file (models/WEIGHTS.md); default: the seed's\n"
		"  -x, --external LOC=N  ONNX external data file LOC (as the model names it) on fd N\n"
		"  -c, --cores LIST      CPUs blocks may run on, e.g. 0-3 (default: all online\n"
		"                        CPUs this process may use)\n"
		"  -u, --uid N           the tenant's own uid to run as (default: 'coloc')\n"
		"  -g, --gid N           the tenant's own gid (default: the user's)\n"
		"      --allow-weak-isolation  go on where the kernel lacks a sandbox layer\n"
		"      --print-isa       print the ISA oneDNN dispatches to here and exit (colocd\n"
		"                        asks it once at start, for the profile cache's key)\n"
		"  -h, --help            this help\n"
		"      --version         print the version\n"
		"\n"
		"Exit status: 0 after an exit command, 1 on failure (the reason is also in\n"
		"the shared memory's header), 2 bad usage.\n");
}

/* Writes the reason into the header, marks it failed and wakes colocd. */
static __attribute__((format(printf, 3, 4))) int fail(struct server *s, int code, const char *fmt,
						      ...)
{
	struct coloc_shm_header *h = &s->shm->hdr;
	uint64_t one = 1;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(h->reason, sizeof(h->reason), fmt, ap);
	va_end(ap);
	h->error = code;
	fprintf(stderr, PROG ": tenant %s: %s\n", opts.tenant, h->reason);
	__atomic_store_n(&h->state, COLOC_SHM_FAILED, __ATOMIC_RELEASE);
	if (write(s->done_fd, &one, sizeof(one)) < 0)
		fprintf(stderr, PROG ": signalling colocd: %s\n", strerror(errno));
	return 1;
}

/* The memfd must be what colocd promises: our layout, and a size nobody can shrink. */
static int map_shm(struct server *s, char *why, size_t len)
{
	const struct coloc_shm_header *h;
	struct stat st;
	int seals;

	seals = fcntl(opts.shm_fd, F_GET_SEALS);
	if (fstat(opts.shm_fd, &st) || seals < 0 || (size_t)st.st_size < sizeof(struct coloc_shm)) {
		snprintf(why, len, "fd %d is not a coloc shared-memory memfd", opts.shm_fd);
		return -EINVAL;
	}
	if (!(seals & F_SEAL_SHRINK)) {
		snprintf(why, len, "the shared memory's size is not sealed against shrinking");
		return -EINVAL;
	}
	s->shm = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, opts.shm_fd, 0);
	if (s->shm == MAP_FAILED) {
		snprintf(why, len, "mapping the shared memory: %s", strerror(errno));
		return -errno;
	}
	h = &s->shm->hdr;
	if (h->magic != COLOC_SHM_MAGIC || h->layout_version != COLOC_SHM_LAYOUT_VERSION ||
	    h->nr_slots != COLOC_SHM_NR_SLOTS || h->total_bytes != (uint64_t)st.st_size ||
	    h->data_offset < sizeof(struct coloc_shm) || h->data_offset > (uint64_t)st.st_size ||
	    h->slot_in_capacity > (uint64_t)st.st_size ||
	    h->slot_out_capacity > (uint64_t)st.st_size ||
	    h->data_offset + COLOC_SHM_NR_SLOTS * (h->slot_in_capacity + h->slot_out_capacity) >
		    (uint64_t)st.st_size) {
		snprintf(why, len, "the shared memory has another layout (version %u, want %d)",
			 h->layout_version, COLOC_SHM_LAYOUT_VERSION);
		s->shm = NULL;
		return -EPROTO;
	}
	return 0;
}

static char *slot_in(const struct server *s, unsigned int slot)
{
	const struct coloc_shm_header *h = &s->shm->hdr;

	return (char *)s->shm + h->data_offset +
	       slot * (h->slot_in_capacity + h->slot_out_capacity);
}

static char *slot_out(const struct server *s, unsigned int slot)
{
	return slot_in(s, slot) + s->shm->hdr.slot_in_capacity;
}

/* Whether a later layer reads layer li (if not, it is one of the model's outputs). */
static bool is_read(const struct model *m, int li)
{
	for (int j = li + 1; j < m->nr_layers; j++)
		for (int k = 0; k < m->layers[j].nr_inputs; k++)
			if (m->layers[j].inputs[k] == li)
				return true;
	return false;
}

static size_t layer_bytes(const struct model *m, int li)
{
	return (size_t)model_shape_elems(&m->layers[li].out) * sizeof(float);
}

static int describe_model(struct server *s, char *why, size_t len)
{
	struct coloc_shm_header *h = &s->shm->hdr;
	const struct model *m = s->m;

	h->nr_layers = (__u32)m->nr_layers;
	h->nr_inputs = h->nr_outputs = 0;
	h->in_bytes = h->out_bytes = 0;
	for (int li = 0; li < m->nr_layers; li++) {
		if (m->layers[li].op == MODEL_OP_INPUT) {
			h->nr_inputs++;
			h->in_bytes += layer_bytes(m, li);
		}
		if (!is_read(m, li)) {
			h->nr_outputs++;
			h->out_bytes += layer_bytes(m, li);
		}
	}
	if (h->in_bytes > h->slot_in_capacity || h->out_bytes > h->slot_out_capacity) {
		snprintf(why, len,
			 "one query of %s needs %llu bytes of input and %llu of output; the shared "
			 "memory holds %llu and %llu per slot",
			 m->name, (unsigned long long)h->in_bytes, (unsigned long long)h->out_bytes,
			 (unsigned long long)h->slot_in_capacity,
			 (unsigned long long)h->slot_out_capacity);
		return -E2BIG;
	}
	return 0;
}

/* The CPUs blocks may use: --cores, or every online CPU this process may run on. */
static int allowed_cpus(struct exec_cpuset *set, char *why, size_t len)
{
	cpu_set_t mask;

	if (opts.cores) {
		struct coloc_err cerr = { 0 };
		int ret = exec_cpuset_parse(opts.cores, set, &cerr);

		if (ret)
			snprintf(why, len, "%s", coloc_err_str(&cerr));
		return ret;
	}
	set->nr = 0;
	if (sched_getaffinity(0, sizeof(mask), &mask)) {
		snprintf(why, len, "sched_getaffinity: %s", strerror(errno));
		return -errno;
	}
	for (int cpu = 0; cpu < EXEC_MAX_CPUS && cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &mask) && exec_cpu_online(cpu))
			set->cpus[set->nr++] = cpu;
	return 0;
}

/* Refuses a command: nothing ran. */
static __attribute__((format(printf, 3, 4))) void refuse(struct coloc_shm_done *d, int code,
							 const char *fmt, ...)
{
	va_list ap;

	d->status = COLOC_SHM_DONE_REFUSED;
	d->error = code;
	va_start(ap, fmt);
	vsnprintf(d->reason, sizeof(d->reason), fmt, ap);
	va_end(ap);
}

static bool cpu_allowed(const struct exec_cpuset *set, int cpu)
{
	for (int i = 0; i < set->nr; i++)
		if (set->cpus[i] == cpu)
			return true;
	return false;
}

/* The command's core bitmap as a CPU list; false (and the refusal) if it is not ours. */
static bool take_cores(const struct server *s, const struct coloc_shm_cmd *c,
		       struct exec_cpuset *cores, struct coloc_shm_done *d)
{
	cores->nr = 0;
	for (int cpu = 0; cpu < COLOC_MAX_CPUS && cpu < EXEC_MAX_CPUS; cpu++) {
		if (!(c->cpus[cpu / 64] & (1ull << (cpu % 64))))
			continue;
		if (!cpu_allowed(&s->allowed, cpu)) {
			refuse(d, -EINVAL,
			       "cpu %d is not one of the cores this executor was started on", cpu);
			return false;
		}
		cores->cpus[cores->nr++] = cpu;
	}
	if (!cores->nr)
		refuse(d, -EINVAL, "the block has no cores");
	return cores->nr > 0;
}

static void copy_inputs(struct server *s, unsigned int slot)
{
	const char *src = slot_in(s, slot);

	for (int li = 0; li < s->m->nr_layers; li++) {
		if (s->m->layers[li].op != MODEL_OP_INPUT)
			continue;
		memcpy(exec_query_input(s->q[slot], li), src, layer_bytes(s->m, li));
		src += layer_bytes(s->m, li);
	}
}

static int copy_outputs(struct server *s, unsigned int slot)
{
	char *dst = slot_out(s, slot);

	for (int li = 0; li < s->m->nr_layers; li++) {
		size_t n = layer_bytes(s->m, li);
		int ret;

		if (is_read(s->m, li))
			continue;
		ret = exec_query_read_output(s->q[slot], li, (float *)dst, n / sizeof(float));
		if (ret)
			return ret;
		dst += n;
	}
	return 0;
}

/* One RUN command, read field by field once (colocd could rewrite them meanwhile). */
static void run_command(struct server *s, const struct coloc_shm_cmd *c, struct coloc_shm_done *d)
{
	unsigned int slot = c->slot, first = c->first, last = c->last, flags = c->flags;
	unsigned int nr = (unsigned int)s->m->nr_layers;
	int versions[COLOC_SHM_MAX_BLOCK_LAYERS];
	struct exec_block_stats st = { 0 };
	struct exec_cpuset cores;
	int ret;

	d->slot = slot;
	d->first = first;
	d->last = last;
	if (slot >= COLOC_SHM_NR_SLOTS)
		return refuse(d, -EINVAL, "query slot %u out of range (0..%d)", slot,
			      COLOC_SHM_NR_SLOTS - 1);
	if (first >= last || last > nr || last - first > COLOC_SHM_MAX_BLOCK_LAYERS)
		return refuse(d, -EINVAL,
			      "layers [%u, %u) are not a block of this model's %u layers "
			      "(at most %d per block)",
			      first, last, nr, COLOC_SHM_MAX_BLOCK_LAYERS);
	if (first && first > s->progress[slot])
		return refuse(d, -EINVAL,
			      "the query in slot %u has computed layers [0, %u) only: a block "
			      "from layer %u would read activations never computed",
			      slot, s->progress[slot], first);
	if (flags & ~(unsigned int)COLOC_SHM_RUN_SHARED)
		return refuse(d, -EINVAL, "unknown flags 0x%x in the command", flags);
	for (unsigned int i = 0; i < last - first; i++) {
		int li = (int)(first + i), n = exec_layer_nr_versions(s->em, li);

		versions[i] = c->versions[i];
		if (versions[i] >= n)
			return refuse(d, -EINVAL,
				      "layer %d (%s) has %d version%s; version %d asked", li,
				      s->m->layers[li].name, n, n > 1 ? "s" : "", versions[i]);
	}
	if (!take_cores(s, c, &cores, d))
		return;
	if (!first)
		copy_inputs(s, slot);
	ret = exec_run_block_placed(
		s->em, s->q[slot], (int)first, (int)last, versions, &cores,
		flags & COLOC_SHM_RUN_SHARED ? EXEC_TEAM_SHARED : EXEC_TEAM_PINNED, &st);
	if (!ret && last == nr)
		ret = copy_outputs(s, slot);
	d->block_ns = st.latency_ns;
	d->switch_ns = st.switch_ns;
	if (ret) {
		s->progress[slot] = 0;
		d->status = COLOC_SHM_DONE_FAILED;
		d->error = ret;
		snprintf(d->reason, sizeof(d->reason), "running layers [%u, %u) failed: %s", first,
			 last,
			 ret == -ERANGE ? "an input read as token ids holds a value that is not a "
					  "whole number in [0, vocab) of its embedding" :
					  strerror(-ret));
		return;
	}
	s->progress[slot] = first ? (last > s->progress[slot] ? last : s->progress[slot]) : last;
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static int serve(struct server *s)
{
	struct coloc_shm_cmd *c = &s->shm->cmd;
	struct coloc_shm_done *d = &s->shm->done;
	__u32 seen = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
	uint64_t one = 1;

	/* start-up is over: the header's state says READY */
	if (write(s->done_fd, &one, sizeof(one)) < 0)
		return -errno;
	for (;;) {
		__u32 seq = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
		__u32 op;

		if (seq == seen) {
			/* the team sleeps with the caller, and wakes with it */
			exec_team_wait(&c->seq, seen);
			continue;
		}
		seen = seq;
		d->started_ns = now_ns();
		__atomic_store_n(&d->started_seq, seq, __ATOMIC_RELEASE);
		op = c->op;
		d->status = COLOC_SHM_DONE_OK;
		d->error = 0;
		d->reason[0] = '\0';
		d->block_ns = d->switch_ns = 0;
		d->slot = d->first = d->last = 0;
		d->query_id = c->query_id;
		if (op == COLOC_SHM_OP_RUN)
			run_command(s, c, d);
		else if (op != COLOC_SHM_OP_NOP && op != COLOC_SHM_OP_EXIT)
			refuse(d, -EINVAL, "unknown command %u", op);
		d->ended_ns = now_ns();
		__atomic_store_n(&d->seq, seq, __ATOMIC_RELEASE);
		if (write(s->done_fd, &one, sizeof(one)) < 0)
			return -errno;
		if (op == COLOC_SHM_OP_EXIT)
			return 0;
	}
}

/*
 * Before READY, every version of every layer runs once on all the cores,
 * and every slot's activations once: a model's first run pays the page
 * faults on its weights and activations, the OpenMP team's creation and
 * oneDNN's first-execution work. Left to the first queries, that cost
 * (up to ~2x the profiled latency) would also reach the scheduler as
 * interference and as a prediction error to correct.
 */
static int warm_up(struct server *s, char *why, size_t len)
{
	int nr = s->m->nr_layers, max_v = 1, ret = 0;
	int *versions = calloc((size_t)nr, sizeof(*versions));

	if (!versions) {
		snprintf(why, len, "out of memory for the warm-up run");
		return -ENOMEM;
	}
	for (int l = 0; l < nr; l++)
		if (exec_layer_nr_versions(s->em, l) > max_v)
			max_v = exec_layer_nr_versions(s->em, l);
	/* runs 0 .. max_v - 1: each version on slot 0; then slots 1.. in version 0 */
	for (int run = 0; run < max_v + COLOC_SHM_NR_SLOTS - 1 && !ret; run++) {
		int slot = run < max_v ? 0 : run - max_v + 1;

		for (int l = 0; l < nr; l++) {
			int n = exec_layer_nr_versions(s->em, l);

			versions[l] = run < max_v ? (run < n ? run : n - 1) : 0;
		}
		exec_query_fill_inputs(s->q[slot], s->m, 1);
		ret = exec_run_block(s->em, s->q[slot], 0, nr, versions, &s->allowed, NULL);
		if (ret)
			snprintf(why, len, "the warm-up run failed: %s", strerror(-ret));
	}
	for (int i = 0; i < COLOC_SHM_NR_SLOTS; i++)
		exec_query_reset(s->q[i]);
	free(versions);
	return ret;
}

/*
 * What stays readable: the CPUs' sysfs folder (which CPUs are online). The
 * model, its weights and an ONNX model's imported weights are memfds,
 * reached through /proc/self/fd, which Landlock lets by as an internal
 * filesystem. What the kernel could not enforce goes to
 * stderr.
 */
static int enter_sandbox(pid_t parent, char *why, size_t len)
{
	struct exec_sandbox sb = { .uid = (uid_t)opts.uid,
				   .gid = (gid_t)opts.gid,
				   .parent = parent,
				   .allow_weak = opts.allow_weak };
	char missing[256];
	int n = 0, ret;

	sb.readable[n++] = "/sys/devices/system/cpu";
	ret = exec_sandbox_enter(&sb, missing, sizeof(missing), why, len);
	if (!ret && missing[0])
		fprintf(stderr, PROG ": tenant %s: weak isolation: %s\n", opts.tenant, missing);
	return ret;
}

/* The model's memfds are read: open files are the shared memory and the doorbell only. */
static void close_model_files(void)
{
	close(opts.model_fd);
	if (opts.weights_fd >= 0)
		close(opts.weights_fd);
	for (int i = 0; i < opts.nr_external; i++)
		close(opts.external[i].fd);
}

/*
 * Hard limits, which this process cannot raise again: its address space,
 * and CPU time for the import (SIGXCPU past it; lifted by the caller once
 * the model is in, the soft limit only, under the hard one).
 */
static int limit_resources(char *why, size_t len)
{
	struct rlimit as = { EXECUTOR_MAX_AS_BYTES, EXECUTOR_MAX_AS_BYTES };
	struct rlimit cpu = { EXECUTOR_PARSE_CPU_S, RLIM_INFINITY };
	struct rlimit cur;
	/* AddressSanitizer has reserved terabytes of shadow by now: no AS limit under it */
#if defined(__SANITIZE_ADDRESS__)
	bool limit_as = false;
#else
	bool limit_as = true;
#endif

	/* never above the bound colocd may have set already (--executor-memory) */
	if (!getrlimit(RLIMIT_AS, &cur) && cur.rlim_max < as.rlim_max)
		as = cur;
	if ((limit_as && setrlimit(RLIMIT_AS, &as)) || setrlimit(RLIMIT_CPU, &cpu)) {
		snprintf(why, len, "setrlimit: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

static int setup(struct server *s, pid_t parent, char *why, size_t len)
{
	struct exec_options eo = { 0 };
	struct onnx_import_opts io = { .batch = 1,
				       .external = opts.external,
				       .nr_external = opts.nr_external };
	struct rlimit cpu = { RLIM_INFINITY, RLIM_INFINITY };
	struct coloc_err merr = { 0 };
	char weights_path[32];
	struct model_source src;
	int ret;

	ret = allowed_cpus(&s->allowed, why, len);
	if (ret)
		return ret;
	eo.cpus = s->allowed;
	if (model_path_is_onnx(opts.model_name) && opts.weights_fd >= 0) {
		snprintf(why, len, "%s: an ONNX model's weights are in the file; drop the weights",
			 opts.model_name);
		return -EINVAL;
	}
	/*
	 * Untrusted bytes from here on: read only in the sandbox, within limits
	 * set first (the filter lets no limit but the CPU time's be raised).
	 * Landlock binds the calling thread and those it starts later: no
	 * thread exists yet (oneDNN and OpenMP start theirs in exec_model_load).
	 */
	ret = limit_resources(why, len);
	if (!ret)
		ret = enter_sandbox(parent, why, len);
	if (ret)
		return ret;
	ret = model_open_fd(opts.model_name, opts.model_fd, &io, &src, &merr);
	if (ret) {
		snprintf(why, len, "%s", coloc_err_str(&merr));
		return ret;
	}
	s->m = src.model;
	/* colocd admits the tenant from this summary while the kernels are built */
	ret = shm_summary_fill(s->m, &s->shm->summary, why, len);
	if (!ret && (ret = shm_summary_publish(s->shm, s->done_fd)))
		snprintf(why, len, "signalling colocd: %s", strerror(-ret));
	if (ret)
		return ret;
	if (src.onnx) {
		eo.weights_path = src.weights_path;
	} else if (opts.weights_fd >= 0) {
		snprintf(weights_path, sizeof(weights_path), "/proc/self/fd/%d", opts.weights_fd);
		eo.weights_path = weights_path;
	}
	s->em = exec_model_load(s->m, &eo, &merr);
	model_source_drop_weights(&src);
	close_model_files();
	if (!s->em) {
		snprintf(why, len, "%s", coloc_err_str(&merr));
		return merr.code ? merr.code : -EINVAL;
	}
	/* imported: the soft CPU limit goes (the hard one was never lowered) */
	if (setrlimit(RLIMIT_CPU, &cpu)) {
		snprintf(why, len, "lifting the import's CPU limit: %s", strerror(errno));
		return -errno;
	}
	for (int i = 0; i < COLOC_SHM_NR_SLOTS; i++) {
		s->q[i] = exec_query_new(s->em);
		if (!s->q[i]) {
			snprintf(why, len, "out of memory for the activations of query slot %d", i);
			return -ENOMEM;
		}
	}
	ret = describe_model(s, why, len);
	if (!ret)
		ret = warm_up(s, why, len);
	return ret;
}

/* "LOCATION=FD" (the last '=' splits: a location may hold one) into the table. */
static int parse_external(char *arg)
{
	char *eq = strrchr(arg, '=');
	long fd;

	if (!eq || eq == arg || opts.nr_external >= COLOC_MAX_REQUEST_FDS) {
		fprintf(stderr, PROG ": --external wants LOCATION=FD, at most %d of them\n",
			COLOC_MAX_REQUEST_FDS);
		return 2;
	}
	*eq = '\0';
	if (cli_parse_flag(PROG, "--external", eq + 1, 0, INT32_MAX, &fd))
		return 2;
	opts.external[opts.nr_external++] = (struct onnx_external_fd){ arg, (int)fd };
	return 0;
}

/* colocd links no oneDNN: it asks this binary for the ISA once (daemon/isa_probe.h). */
static void print_isa(void)
{
	char isa[PROFILE_ISA_LEN];

	profile_isa_name(isa, sizeof(isa));
	printf("%s\n", isa);
}

static int parse_args(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "shm-fd", required_argument, NULL, 's' },
		{ "done-fd", required_argument, NULL, 'd' },
		{ "tenant", required_argument, NULL, 't' },
		{ "model-fd", required_argument, NULL, 'm' },
		{ "model-name", required_argument, NULL, 'n' },
		{ "weights-fd", required_argument, NULL, 'w' },
		{ "external", required_argument, NULL, 'x' },
		{ "cores", required_argument, NULL, 'c' },
		{ "uid", required_argument, NULL, 'u' },
		{ "gid", required_argument, NULL, 'g' },
		{ "allow-weak-isolation", no_argument, NULL, 'W' },
		{ "print-isa", no_argument, NULL, 'I' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	int c;
	long v;

	while ((c = getopt_long(argc, argv, "s:d:t:m:n:w:x:c:u:g:h", long_opts, NULL)) != -1) {
		switch (c) {
		case 's':
		case 'd':
		case 'm':
		case 'w':
			if (cli_parse_flag(PROG, "a descriptor", optarg, 0, INT32_MAX, &v))
				return 2;
			*(c == 's' ? &opts.shm_fd :
			  c == 'd' ? &opts.done_fd :
			  c == 'm' ? &opts.model_fd :
				     &opts.weights_fd) = (int)v;
			break;
		case 't':
			opts.tenant = optarg;
			break;
		case 'n':
			opts.model_name = optarg;
			break;
		case 'x':
			if (parse_external(optarg))
				return 2;
			break;
		case 'c':
			opts.cores = optarg;
			break;
		case 'u':
		case 'g':
			/* never 0: root's ids are no tenant's */
			if (cli_parse_flag(PROG, c == 'u' ? "--uid" : "--gid", optarg, 1,
					   UINT32_MAX - 1, c == 'u' ? &opts.uid : &opts.gid))
				return 2;
			break;
		case 'W':
			opts.allow_weak = true;
			break;
		case 'I':
			print_isa();
			exit(0);
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			cli_print_version(PROG);
			exit(0);
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || opts.shm_fd < 0 || opts.done_fd < 0 || !opts.tenant ||
	    opts.model_fd < 0 || !opts.model_name) {
		fprintf(stderr, PROG ": --shm-fd, --done-fd, --tenant, --model-fd and --model-name "
				     "are needed\n");
		usage(stderr);
		return 2;
	}
	if (!opts.uid != !opts.gid) {
		fprintf(stderr, PROG ": --uid and --gid go together\n");
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct server s = { 0 };
	char why[COLOC_SHM_REASON_LEN];
	pid_t parent;
	int ret;

	ret = parse_args(argc, argv);
	if (ret)
		return ret;
	/* die with colocd, from the start: a model can take seconds to load */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	parent = getppid();
	s.done_fd = opts.done_fd;
	ret = map_shm(&s, why, sizeof(why));
	if (ret) {
		fprintf(stderr, PROG ": tenant %s: %s\n", opts.tenant, why);
		return 1;
	}
	s.shm->hdr.executor_pid = getpid();
	ret = setup(&s, parent, why, sizeof(why));
	if (ret)
		return fail(&s, ret, "%s", why);
	__atomic_store_n(&s.shm->hdr.state, COLOC_SHM_READY, __ATOMIC_RELEASE);
	ret = serve(&s);
	if (ret)
		return fail(&s, ret, "signalling colocd: %s", strerror(-ret));
	/* asked to exit: leave nothing behind (LeakSanitizer checks in SANITIZE builds) */
	for (int i = 0; i < COLOC_SHM_NR_SLOTS; i++)
		exec_query_free(s.q[i]);
	exec_model_free(s.em);
	model_free(s.m);
	return 0;
}
