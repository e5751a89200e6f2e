// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The executor's serving loop over the shared memory (shm_serve.h): the
 * memfd's checks, the model's description in the header, the warm-up, and
 * the command loop: a RUN command's fields read once and checked, its
 * input copied from the slot (or its client's memfd, shm_input.h) by its
 * first block's team when it starts a query, its block run on its cores,
 * its output copied into the slot when it ends one. Between
 * commands the OpenMP team sleeps on the doorbell (exec_team_wait;
 * docs/design/serving-path.md); in a process of several lanes, until
 * another lane needs its threads (exec_team_turns_join; docs/design/lanes.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "shm_serve.h"
#include "mono_clock.h"

int shm_serve_map(struct shm_serve *s, int fd, char *why, size_t len)
{
	const struct coloc_shm_header *h;
	struct coloc_shm *shm;
	struct stat st;
	int seals;

	seals = fcntl(fd, F_GET_SEALS);
	if (fstat(fd, &st) || seals < 0 || (size_t)st.st_size < sizeof(struct coloc_shm)) {
		snprintf(why, len, "fd %d is not a coloc shared-memory memfd", fd);
		return -EINVAL;
	}
	if (!(seals & F_SEAL_SHRINK)) {
		snprintf(why, len, "the shared memory's size is not sealed against shrinking");
		return -EINVAL;
	}
	shm = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (shm == MAP_FAILED) {
		snprintf(why, len, "mapping the shared memory: %s", strerror(errno));
		return -errno;
	}
	h = &shm->hdr;
	if (h->magic != COLOC_SHM_MAGIC || h->layout_version != COLOC_SHM_LAYOUT_VERSION ||
	    h->nr_slots != COLOC_SHM_NR_SLOTS || h->total_bytes != (uint64_t)st.st_size ||
	    h->data_offset < sizeof(struct coloc_shm) || h->data_offset > (uint64_t)st.st_size ||
	    h->slot_in_capacity > (uint64_t)st.st_size ||
	    h->slot_out_capacity > (uint64_t)st.st_size ||
	    h->data_offset + COLOC_SHM_NR_SLOTS * (h->slot_in_capacity + h->slot_out_capacity) >
		    (uint64_t)st.st_size) {
		snprintf(why, len, "the shared memory has another layout (version %u, want %d)",
			 h->layout_version, COLOC_SHM_LAYOUT_VERSION);
		munmap(shm, (size_t)st.st_size);
		return -EPROTO;
	}
	s->shm = shm;
	s->shm_bytes = (size_t)st.st_size;
	s->input.sock = -1;
	return 0;
}

int shm_serve_allowed_cpus(const char *text, struct exec_cpuset *set, char *why, size_t len)
{
	cpu_set_t mask;

	if (text) {
		struct coloc_err cerr = { 0 };
		int ret = exec_cpuset_parse(text, set, &cerr);

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

static char *slot_in(const struct shm_serve *s, unsigned int slot)
{
	const struct coloc_shm_header *h = &s->shm->hdr;

	return (char *)s->shm + h->data_offset +
	       slot * (h->slot_in_capacity + h->slot_out_capacity);
}

static char *slot_out(const struct shm_serve *s, unsigned int slot)
{
	return slot_in(s, slot) + s->shm->hdr.slot_in_capacity;
}

static int describe_model(struct shm_serve *s, char *why, size_t len)
{
	struct coloc_shm_header *h = &s->shm->hdr;
	struct coloc_err cerr = { 0 };
	int ret = model_io_layout(s->m, &s->io, &cerr);

	if (ret) {
		snprintf(why, len, "%s", coloc_err_str(&cerr));
		return ret;
	}
	s->staged = calloc((size_t)s->io.nr_inputs + 1, sizeof(*s->staged));
	if (!s->staged) {
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	h->nr_layers = (__u32)s->m->nr_layers;
	h->nr_inputs = (__u32)s->io.nr_inputs;
	h->nr_outputs = (__u32)s->io.nr_outputs;
	h->in_bytes = s->io.in_bytes;
	h->out_bytes = s->io.out_bytes;
	if (h->in_bytes > h->slot_in_capacity || h->out_bytes > h->slot_out_capacity) {
		snprintf(why, len,
			 "one query of %s needs %llu bytes of input and %llu of output; the shared "
			 "memory holds %llu and %llu per slot",
			 s->m->name, (unsigned long long)h->in_bytes,
			 (unsigned long long)h->out_bytes, (unsigned long long)h->slot_in_capacity,
			 (unsigned long long)h->slot_out_capacity);
		return -E2BIG;
	}
	return 0;
}

/*
 * The query a slot's started query lives in: its own while it runs, else
 * one of the lane's arenas no slot holds, made when all are held. A query
 * holds an arena from its first block to its last (or its failure): so a
 * lane holds as many as it has queries stopped between blocks at once, not
 * one per slot. NULL when out of memory.
 */
static struct exec_query *slot_query(struct shm_serve *s, unsigned int slot)
{
	for (int i = 0; i < COLOC_SHM_NR_SLOTS && !s->q[slot]; i++) {
		bool held = false;

		if (!s->pool[i])
			s->pool[i] = exec_query_new_live(s->em, s->lane);
		if (!s->pool[i])
			return NULL;
		for (unsigned int k = 0; k < COLOC_SHM_NR_SLOTS && !held; k++)
			held = s->q[k] == s->pool[i];
		if (!held)
			s->q[slot] = s->pool[i];
	}
	return s->q[slot];
}

/*
 * Every version of every layer runs once on all the cores, in the lane's
 * first arena: a model's first run pays the page faults on its weights and
 * activations, the OpenMP team's creation and oneDNN's first-execution
 * work. Left to the first queries, that cost (up to ~2x the profiled
 * latency) would also reach the scheduler as interference and as a
 * prediction error to correct. The lane's later arenas are not warmed
 * (docs/design/arena-plan.md says why).
 */
static int warm_up(struct shm_serve *s, char *why, size_t len)
{
	int nr = s->m->nr_layers, max_v = 1, ret = 0;
	int *versions = calloc((size_t)nr, sizeof(*versions));
	struct exec_query *q = slot_query(s, 0);

	if (!versions || !q) {
		free(versions);
		snprintf(why, len, "out of memory for the warm-up run");
		return -ENOMEM;
	}
	for (int l = 0; l < nr; l++)
		if (exec_layer_nr_versions(s->em, l) > max_v)
			max_v = exec_layer_nr_versions(s->em, l);
	for (int run = 0; run < max_v && !ret; run++) {
		for (int l = 0; l < nr; l++) {
			int n = exec_layer_nr_versions(s->em, l);

			versions[l] = run < n ? run : n - 1;
		}
		exec_query_fill_inputs(q, s->m, 1);
		ret = exec_run_block(s->em, q, 0, nr, versions, &s->allowed, NULL);
		if (ret)
			snprintf(why, len, "the warm-up run failed: %s", strerror(-ret));
	}
	exec_query_reset(q);
	s->q[0] = NULL;
	free(versions);
	return ret;
}

/* The slots' input and output pages mapped now (colocd allocates them): no fault on a query. */
static void populate_slots(const struct shm_serve *s)
{
	const struct coloc_shm_header *h = &s->shm->hdr;
	unsigned long long page = (unsigned long long)sysconf(_SC_PAGESIZE);

	for (unsigned int k = 0; k < COLOC_SHM_NR_SLOTS; k++) {
		madvise(slot_in(s, k), (h->in_bytes + page - 1) / page * page,
			MADV_POPULATE_WRITE);
		madvise(slot_out(s, k), (h->out_bytes + page - 1) / page * page,
			MADV_POPULATE_WRITE);
	}
}

int shm_serve_prepare(struct shm_serve *s, char *why, size_t len)
{
	int ret = describe_model(s, why, len);

	if (!ret)
		populate_slots(s);

	if (!ret && s->team_turns) {
		ret = exec_team_turns_join(&s->shm->cmd.seq, s->allowed.nr);
		if (ret)
			snprintf(why, len, "joining the lanes' turns at OpenMP teams: %s",
				 strerror(-ret));
	}
	if (!ret)
		ret = warm_up(s, why, len);
	return ret;
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
static bool take_cores(const struct shm_serve *s, const struct coloc_shm_cmd *c,
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

/* The query's input from src into its activations, by its first block's team. */
static void stage_inputs(struct shm_serve *s, unsigned int slot, const char *src)
{
	for (int i = 0; i < s->io.nr_inputs; i++) {
		const struct model_io_tensor *t = &s->io.inputs[i];

		s->staged[i] =
			(struct exec_input_copy){ .dst = exec_query_input(s->q[slot], t->layer),
						  .src = src + t->offset,
						  .bytes = t->bytes };
	}
	exec_query_stage_inputs(s->q[slot], s->staged, s->io.nr_inputs);
}

static int copy_outputs(struct shm_serve *s, unsigned int slot)
{
	char *dst = slot_out(s, slot);

	for (int i = 0; i < s->io.nr_outputs; i++) {
		const struct model_io_tensor *t = &s->io.outputs[i];
		int ret = exec_query_read_output(s->q[slot], t->layer, (float *)(dst + t->offset),
						 t->bytes / sizeof(float));

		if (ret)
			return ret;
	}
	return 0;
}

/*
 * The command's plan into ends[]: its blocks' ends, each after the one
 * before, the last at last. false (and the refusal) if it is not one.
 */
static bool take_plan(const struct coloc_shm_cmd *c, unsigned int first, unsigned int last,
		      unsigned int *ends, unsigned int *ncores, unsigned int *nr,
		      struct coloc_shm_done *d)
{
	unsigned int n = c->nr_blocks, prev = first;

	if (n < 1 || n > COLOC_SHM_MAX_PLAN_BLOCKS) {
		refuse(d, -EINVAL, "a plan of %u blocks (1..%d)", n, COLOC_SHM_MAX_PLAN_BLOCKS);
		return false;
	}
	for (unsigned int i = 0; i < n; i++) {
		ends[i] = c->block_last[i];
		ncores[i] = c->block_cores[i];
		if (ends[i] <= prev || ends[i] > last || (i == n - 1 && ends[i] != last)) {
			refuse(d, -EINVAL,
			       "block %u of the plan ends at layer %u: blocks must follow each other "
			       "from layer %u to layer %u",
			       i, ends[i], first, last);
			return false;
		}
		prev = ends[i];
	}
	*nr = n;
	return true;
}

/* The command's versions, each checked against its layer's count. */
static bool take_versions(const struct shm_serve *s, const struct coloc_shm_cmd *c,
			  unsigned int first, unsigned int last, int *versions,
			  struct coloc_shm_done *d)
{
	for (unsigned int i = 0; i < last - first; i++) {
		int li = (int)(first + i), n = exec_layer_nr_versions(s->em, li);

		versions[i] = c->versions[i];
		if (versions[i] >= n) {
			refuse(d, -EINVAL, "layer %d (%s) has %d version%s; version %d asked", li,
			       s->m->layers[li].name, n, n > 1 ? "s" : "", versions[i]);
			return false;
		}
	}
	return true;
}

/* Whether colocd asked the command seq to stop at its next boundary. */
static bool yield_asked(const struct shm_serve *s, __u32 seq)
{
	return __atomic_load_n(&s->shm->yield.seq, __ATOMIC_ACQUIRE) == seq;
}

/*
 * The plan's blocks in order on cores, until its end or a yield; done's
 * last, nr_blocks and times say how far it went. 0 or the failing block's
 * negative errno.
 */
static int run_plan(struct shm_serve *s, __u32 seq, unsigned int slot, unsigned int first,
		    const unsigned int *ends, const unsigned int *ncores, unsigned int nr_blocks,
		    const int *versions, const struct exec_cpuset *cores,
		    enum exec_team_placement placement, struct coloc_shm_done *d)
{
	unsigned int from = first;

	for (unsigned int i = 0; i < nr_blocks; i++) {
		struct exec_block_stats st = { 0 };
		struct exec_cpuset blk = *cores;
		int ret;

		if (i && yield_asked(s, seq))
			break;
		blk.nr = (int)ncores[i];
		ret = exec_run_block_placed(s->em, s->q[slot], (int)from, (int)ends[i],
					    versions + (from - first), &blk, placement, &st);
		/* the input's copy is the command's, not the block's (colocd's copy part) */
		d->block_ns += st.latency_ns - st.input_ns;
		d->switch_ns += st.switch_ns;
		if (ret)
			return ret;
		d->blocks_ns[i] = st.latency_ns - st.input_ns;
		d->nr_blocks = i + 1;
		d->last = ends[i];
		from = ends[i];
	}
	return 0;
}

/*
 * The query's input: in the slot, or with in_fd (>= 0) in its client's
 * memfd (taken into s->input's kept ones, *in_fd then -1). NULL, and the
 * refusal, when that memfd cannot be mapped.
 */
static const char *input_of(struct shm_serve *s, unsigned int slot, int *in_fd,
			    struct coloc_shm_done *d)
{
	const char *src = slot_in(s, slot);
	char why[COLOC_SHM_REASON_LEN];
	int ret;

	if (*in_fd < 0)
		return src;
	ret = shm_input_map(&s->input, in_fd, s->io.in_bytes, &src, why, sizeof(why));
	if (ret) {
		refuse(d, ret, "%s", why);
		return NULL;
	}
	return src;
}

/*
 * One RUN command, read field by field once (colocd could rewrite them
 * meanwhile); in_fd: its input's memfd (COLOC_SHM_RUN_INPUT_FD), else -1.
 */
static void run_command(struct shm_serve *s, __u32 seq, const struct coloc_shm_cmd *c,
			unsigned int flags, int *in_fd, struct coloc_shm_done *d)
{
	unsigned int slot = c->slot, first = c->first, last = c->last;
	unsigned int nr = (unsigned int)s->m->nr_layers, nr_blocks;
	unsigned int ends[COLOC_SHM_MAX_PLAN_BLOCKS], ncores[COLOC_SHM_MAX_PLAN_BLOCKS];
	int versions[COLOC_SHM_MAX_BLOCK_LAYERS];
	struct exec_cpuset cores;
	const char *src;
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
	if (first && first < s->progress[slot])
		return refuse(d, -EINVAL,
			      "the query in slot %u has computed layers [0, %u): a block from "
			      "layer %u would read activations no longer kept",
			      slot, s->progress[slot], first);
	if (flags & ~(unsigned int)(COLOC_SHM_RUN_SHARED | COLOC_SHM_RUN_INPUT_FD))
		return refuse(d, -EINVAL, "unknown flags 0x%x in the command", flags);
	if (first && (flags & COLOC_SHM_RUN_INPUT_FD))
		return refuse(d, -EINVAL,
			      "an input with a block from layer %u: only a query's "
			      "first block takes one",
			      first);
	if (!take_plan(c, first, last, ends, ncores, &nr_blocks, d) ||
	    !take_versions(s, c, first, last, versions, d) || !take_cores(s, c, &cores, d))
		return;
	for (unsigned int i = 0; i < nr_blocks; i++)
		if (ncores[i] < 1 || ncores[i] > (unsigned int)cores.nr)
			return refuse(d, -EINVAL, "block %u of the plan wants %u of its %d cores", i,
				      ncores[i], cores.nr);
	if (!first) {
		src = input_of(s, slot, in_fd, d);
		if (!src)
			return;
		if (!slot_query(s, slot))
			return refuse(d, -ENOMEM, "out of memory for the activations of slot %u",
				      slot);
		stage_inputs(s, slot, src);
	}
	ret = run_plan(s, seq, slot, first, ends, ncores, nr_blocks, versions, &cores,
		       flags & COLOC_SHM_RUN_SHARED ? EXEC_TEAM_SHARED : EXEC_TEAM_PINNED, d);
	if (!ret && d->last == nr)
		ret = copy_outputs(s, slot);
	if (ret || d->last == nr)
		s->q[slot] = NULL; /* its arena back to the lane */
	if (ret) {
		s->progress[slot] = 0;
		d->status = COLOC_SHM_DONE_FAILED;
		d->error = ret;
		d->last = last;
		d->nr_blocks = 0;
		snprintf(d->reason, sizeof(d->reason), "running layers [%u, %u) failed: %s", first,
			 last,
			 ret == -ERANGE ? "an input read as token ids holds a value that is not a "
					  "whole number in [0, vocab) of its embedding" :
					  strerror(-ret));
		return;
	}
	if (!first || d->last > s->progress[slot])
		s->progress[slot] = d->last;
}

/* A RUN command, with the memfd colocd sent for it taken off the socket first, if any. */
static void run_received(struct shm_serve *s, __u32 seq, const struct coloc_shm_cmd *c,
			 struct coloc_shm_done *d)
{
	unsigned int flags = c->flags;
	char why[COLOC_SHM_REASON_LEN];
	int in_fd = -1, ret = 0;

	if (flags & COLOC_SHM_RUN_INPUT_FD)
		ret = shm_input_recv(&s->input, seq, &in_fd, why, sizeof(why));
	if (ret)
		return refuse(d, ret, "%s", why);
	run_command(s, seq, c, flags, &in_fd, d);
	if (in_fd >= 0)
		close(in_fd);
}

__u32 shm_serve_command(struct shm_serve *s, __u32 seq)
{
	struct coloc_shm_cmd *c = &s->shm->cmd;
	struct coloc_shm_done *d = &s->shm->done;
	__u32 op;

	d->started_ns = coloc_now_ns();
	__atomic_store_n(&d->started_seq, seq, __ATOMIC_RELEASE);
	op = c->op;
	d->status = COLOC_SHM_DONE_OK;
	d->error = 0;
	d->reason[0] = '\0';
	d->block_ns = d->switch_ns = 0;
	d->slot = d->first = d->last = d->nr_blocks = d->reserved = 0;
	d->query_id = c->query_id;
	if (op == COLOC_SHM_OP_RUN)
		run_received(s, seq, c, d);
	else if (op != COLOC_SHM_OP_NOP && op != COLOC_SHM_OP_EXIT)
		refuse(d, -EINVAL, "unknown command %u", op);
	d->ended_ns = coloc_now_ns();
	__atomic_store_n(&d->seq, seq, __ATOMIC_RELEASE);
	return op;
}

static int ring(int done_fd)
{
	uint64_t one = 1;

	return write(done_fd, &one, sizeof(one)) < 0 ? -errno : 0;
}

int shm_serve_loop(struct shm_serve *s)
{
	struct coloc_shm_cmd *c = &s->shm->cmd;
	__u32 seen = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE), op;
	int ret;

	__atomic_store_n(&s->shm->hdr.state, COLOC_SHM_READY, __ATOMIC_RELEASE);
	ret = ring(s->done_fd);
	while (!ret) {
		__u32 seq = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);

		if (seq == seen) {
			/* the team (if any) sleeps with the caller, and wakes with it */
			exec_team_wait_ready(&c->seq, seen, &s->shm->ready);
			continue;
		}
		seen = seq;
		op = shm_serve_command(s, seq);
		ret = ring(s->done_fd);
		if (!ret && op == COLOC_SHM_OP_EXIT)
			return 0;
	}
	return ret;
}

void shm_serve_fail(struct coloc_shm *shm, int done_fd, int code, const char *reason)
{
	struct coloc_shm_header *h = &shm->hdr;

	snprintf(h->reason, sizeof(h->reason), "%s", reason);
	h->error = code;
	__atomic_store_n(&h->state, COLOC_SHM_FAILED, __ATOMIC_RELEASE);
	ring(done_fd);
}

void shm_serve_release(struct shm_serve *s)
{
	for (int i = 0; i < COLOC_SHM_NR_SLOTS; i++) {
		exec_query_free(s->pool[i]);
		s->pool[i] = NULL;
		s->q[i] = NULL;
	}
	model_io_layout_free(&s->io);
	free(s->staged);
	s->staged = NULL;
	shm_input_release(&s->input);
	if (s->shm)
		munmap(s->shm, s->shm_bytes);
	s->shm = NULL;
}
