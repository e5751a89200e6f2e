// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Running queries block by block. A query owns its activations (one arena
 * with every layer's output, kept so a query can stop after any block and
 * resume later, plus one arena for a layer's temporaries); the model owns
 * everything else, built at load. exec_run_block binds buffers to the
 * prebuilt primitives and executes them on the caller's OpenMP team, sized
 * and pinned to the block's cores: team thread i runs on cores->cpus[i],
 * the caller being thread 0 (or, on cores shared with other processes,
 * anywhere on them: exec_run_block_placed). Pinning is redone only when
 * the core set differs from the previous block's, and costs a
 * sched_getaffinity per pool thread and a sched_setaffinity per thread
 * whose core changes, made by the caller (stats->switch_ns). A query's
 * inputs staged for its next block are copied there by the block's team,
 * once placed (stats->input_ns). Where the team is pinned is a property of
 * the calling OS thread (its OpenMP pool), so it is remembered per thread,
 * whichever model ran last. A block runs on its
 * query's lane (exec_lane.c): only one thread may drive a lane at a time,
 * since the memory objects bound per step, the streams and the scratchpads
 * are the lane's; several lanes of one model run blocks at the same time,
 * taking turns at the process's OpenMP threads (exec_team_turns.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "exec_internal.h"
#include "mono_clock.h"

int exec_slot_for_cores(const struct exec_model *em, int nr_cores)
{
	int slot = 0;

	for (int s = 0; s < em->nr_slots; s++)
		if (em->slot_cores[s] <= nr_cores)
			slot = s;
	return slot;
}

void *exec_buf_ptr(const struct exec_query *q, int tid, const struct exec_buf *b)
{
	switch (b->kind) {
	case EXEC_BUF_OUT:
		return (char *)q->outs + q->offsets[b->index] + b->offset;
	case EXEC_BUF_TMP:
		return (char *)q->tmp + b->offset;
	case EXEC_BUF_SCRATCHPAD:
		return q->lane->scratchpads[tid];
	default:
		return NULL;
	}
}

/* ---- model queries ------------------------------------------------------------ */

const struct model *exec_model_graph(const struct exec_model *em)
{
	return em->graph;
}

int exec_layer_nr_versions(const struct exec_model *em, int layer)
{
	if (!em || layer < 0 || layer >= em->graph->nr_layers)
		return -EINVAL;
	return em->layers[layer].nr_versions;
}

const char *exec_layer_version_name(const struct exec_model *em, int layer, int v)
{
	if (!em || layer < 0 || layer >= em->graph->nr_layers || v < 0 ||
	    v >= em->layers[layer].nr_versions)
		return NULL;
	return em->layers[layer].version_names[v];
}

int exec_layer_version_index(const struct exec_model *em, int layer, const char *name)
{
	for (int v = 0; v < exec_layer_nr_versions(em, layer); v++)
		if (!strcmp(em->layers[layer].version_names[v], name))
			return v;
	return -1;
}

const char *exec_layer_impl(const struct exec_model *em, int layer, int v, int nr_cores)
{
	if (!em || layer < 0 || layer >= em->graph->nr_layers || v < 0 ||
	    v >= em->layers[layer].nr_versions || nr_cores < 1)
		return NULL;
	return em->layers[layer].plans[v][exec_slot_for_cores(em, nr_cores)].impl;
}

size_t exec_model_resident_bytes(const struct exec_model *em)
{
	return em->resident_bytes;
}

uint64_t exec_model_nr_primitives(const struct exec_model *em)
{
	return em->nr_primitives;
}

int exec_model_core_counts(const struct exec_model *em, int *counts, int max)
{
	for (int s = 0; s < em->nr_slots && s < max; s++)
		counts[s] = em->slot_cores[s];
	return em->nr_slots;
}

/* ---- queries ------------------------------------------------------------------- */

static struct exec_query *query_new(struct exec_lane *lane, bool live)
{
	struct exec_model *em = lane->em;
	struct exec_query *q = calloc(1, sizeof(*q));
	size_t outs = live ? em->live_bytes : em->out_bytes;

	if (!q)
		return NULL;
	q->em = em;
	q->lane = lane;
	q->live = live;
	q->offsets = live ? em->live_offsets : em->out_offsets;
	if (posix_memalign(&q->outs, 64, outs ? outs : 64) ||
	    posix_memalign(&q->tmp, 64, em->tmp_bytes ? em->tmp_bytes : 64)) {
		exec_query_free(q);
		return NULL;
	}
	exec_query_reset(q);
	return q;
}

struct exec_query *exec_query_new(struct exec_model *em)
{
	return query_new(&em->own_lane, false);
}

struct exec_query *exec_lane_query_new(struct exec_lane *lane)
{
	return query_new(lane, false);
}

struct exec_query *exec_query_new_live(struct exec_model *em, struct exec_lane *lane)
{
	if (lane && lane->em != em)
		return NULL;
	return query_new(lane ? lane : &em->own_lane, true);
}

void exec_query_free(struct exec_query *q)
{
	if (!q)
		return;
	free(q->outs);
	free(q->tmp);
	free(q);
}

/*
 * Every layer overwrites its whole output when it runs, so only the inputs
 * need clearing: a full memset would stream the query's whole arena (tens of
 * MB) through the cache on every query.
 */
void exec_query_reset(struct exec_query *q)
{
	const struct model *m = q->em->graph;

	q->next_layer = 0;
	for (int li = 0; li < m->nr_layers; li++)
		if (m->layers[li].op == MODEL_OP_INPUT)
			memset(exec_query_input(q, li), 0,
			       (size_t)model_shape_elems(&m->layers[li].out) * sizeof(float));
}

float *exec_query_input(struct exec_query *q, int layer)
{
	if (!q || layer < 0 || layer >= q->em->graph->nr_layers ||
	    q->em->graph->layers[layer].op != MODEL_OP_INPUT)
		return NULL;
	return exec_buf_ptr(q, 0, &(struct exec_buf){ .kind = EXEC_BUF_OUT, .index = layer });
}

void exec_query_stage_inputs(struct exec_query *q, const struct exec_input_copy *copies, int nr)
{
	q->staged = copies;
	q->nr_staged = nr;
}

/* ---- running -------------------------------------------------------------------- */

/*
 * Team thread i onto cores->cpus[i]; the caller is thread 0. Every thread
 * of the pool is placed, not just the block's: a pool thread left out of
 * the new team may keep spinning (GOMP_SPINCOUNT) on its old core for up to
 * milliseconds, and were that core now in the block's set, the caller's
 * migration onto it and the block itself would wait for the spinner's time
 * slice to end. So leftover threads move to the model's cores outside the
 * block's set.
 *
 * The caller moves the pool's threads itself, by thread id, and only those
 * whose core changes. Doing it from inside a parallel region, as before,
 * woke every sleeping pool thread and waited at a barrier until each had
 * run on its old core and then on its new one: on a loaded machine each of
 * those waits is a scheduling delay of the busy core (measured: the p99 of
 * a switch was that wait). A sleeping thread's mask changes without waking
 * it. The thread ids are learnt in one parallel region the first time (and
 * again whenever a known thread has gone, see below), where each thread
 * pins itself.
 *
 * Whether a thread already sits on its core is read back from the kernel
 * (sched_getaffinity), not remembered: colocd narrows a tenant's cpuset to
 * the cores its blocks hold, so a spare core outside it is refused (the
 * thread then goes to the block's cores instead), and the kernel rewrites
 * the masks as the cpuset shrinks and grows. A remembered core went stale
 * there, and a 2-core block ran its team of 2 on one core for as long as
 * the stale entry lasted (docs/measurements/executor.md, 2026-12-06).
 *
 * Afterwards, above 2 cores, the caller's own mask is widened to the whole set: libgomp ends
 * pool threads left out of a smaller team (oneDNN opens smaller teams for
 * small shapes) and creates new ones when a team grows again, and a new
 * thread inherits its creator's mask. So a thread created while the block
 * runs can only run on the block's cores, and a known thread id that no
 * longer names a thread of this process (tgkill's check) sends pinning back
 * through the parallel region. On 1 and 2 cores no team ever shrinks (a
 * team of one never touches the pool), so no thread is created on the
 * query path there.
 *
 * On shared cores (EXEC_TEAM_SHARED, colocd's os policy: other tenants'
 * blocks run on the same cores at the same time) every pool thread and the
 * caller get the whole set as their mask instead, and the kernel places and
 * migrates them as it does an unmodified oneDNN program's threads.
 */
static __thread struct {
	int nr, pool;
	int team; /* threads of the last block's team (exec_team_last_size) */
	bool lean; /* since exec_team_release: a pool of the block's team only */
	bool shared; /* the team may run anywhere on cpus (EXEC_TEAM_SHARED) */
	int cpus[EXEC_MAX_CPUS];
	pid_t tids[EXEC_MAX_CPUS]; /* pool thread t's id; 0: not known */
} team_pinned;

/* team_cpu of a thread allowed on every core of a shared block's set */
#define TEAM_ANY_CPU -1

/* Where a block's team goes: its cores, the team size, the model's other cores. */
struct team_plan {
	const struct exec_cpuset *cores;
	int n;
	int spare[EXEC_MAX_CPUS], nr_spare;
	bool shared;
};

static int set_mask(pid_t tid, const int *cpus, int n)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	for (int i = 0; i < n; i++)
		CPU_SET(cpus[i], &set);
	return sched_setaffinity(tid, sizeof(set), &set) ? -errno : 0;
}

/*
 * The CPU pool thread t goes to: its block core, else a spare core of the
 * model; on shared cores, any of the block's (the kernel places it).
 */
static int team_cpu(const struct team_plan *p, int t)
{
	if (p->shared)
		return TEAM_ANY_CPU;
	if (t < p->n)
		return p->cores->cpus[t];
	return p->nr_spare ? p->spare[(t - p->n) % p->nr_spare] : p->cores->cpus[t % p->n];
}

/*
 * Whether thread tid (0: the caller) may run on cpu and nowhere else, as the
 * kernel has it now (a shared set may have changed: never).
 */
static bool team_placed(pid_t tid, int cpu)
{
	cpu_set_t set;

	if (cpu == TEAM_ANY_CPU || sched_getaffinity(tid, sizeof(set), &set))
		return false;
	return CPU_COUNT(&set) == 1 && CPU_ISSET(cpu, &set);
}

/*
 * A spare core may be outside this process's cpuset (colocd narrows a
 * tenant's cgroup to the cores its blocks hold): then the block's cores.
 */
static int place(pid_t tid, const struct team_plan *p, int cpu)
{
	int ret = cpu == TEAM_ANY_CPU ? set_mask(tid, p->cores->cpus, p->cores->nr) :
					set_mask(tid, &cpu, 1);
	bool spare = cpu != TEAM_ANY_CPU;

	for (int i = 0; i < p->n && spare; i++)
		spare = p->cores->cpus[i] != cpu;
	if (ret == -EINVAL && spare)
		ret = set_mask(tid, p->cores->cpus, p->cores->nr);
	return ret;
}

int exec_team_last_size(void)
{
	return team_pinned.team;
}

/*
 * The pool's threads exit (libgomp's omp_pause_resource_all joins them) and
 * their ids are forgotten (a new thread may reuse one): the next block on
 * more than one core makes its team anew, as large as the block's.
 */
int exec_team_release(void)
{
	int ret = team_pinned.pool > 1 || team_pinned.team > 1 ?
			  omp_pause_resource_all(omp_pause_soft) :
			  0;

	memset(&team_pinned, 0, sizeof(team_pinned));
	team_pinned.lean = true;
	return ret ? -EBUSY : 0;
}

/* Pool threads 1.. by id, from the caller; -ESRCH when one is gone. */
static int pin_by_tid(const struct team_plan *p, int total)
{
	pid_t pid = getpid();

	for (int t = 1; t < total; t++) {
		int cpu = team_cpu(p, t), ret;

		/* a known id that names no thread of this process (any more): not ours to ask */
		if (!team_pinned.tids[t] || syscall(SYS_tgkill, pid, team_pinned.tids[t], 0))
			return -ESRCH;
		if (team_placed(team_pinned.tids[t], cpu))
			continue;
		ret = place(team_pinned.tids[t], p, cpu);
		if (ret)
			return ret;
	}
	return 0;
}

/* Each pool thread pins itself (where its core changes) and says who it is. */
static int pin_in_region(const struct team_plan *p, int total)
{
	/* team_pinned is thread-local: the pool threads write the caller's */
	pid_t *tids = team_pinned.tids;
	int ret = 0;

#pragma omp parallel num_threads(total) reduction(min : ret)
	{
		int t = omp_get_thread_num(), cpu = team_cpu(p, t);
		pid_t tid = (pid_t)syscall(SYS_gettid);

		if (omp_get_num_threads() != total)
			ret = -EAGAIN;
		else if (t == 0 || team_placed(0, cpu))
			ret = 0; /* the caller pins itself after the pool */
		else
			ret = place(0, p, cpu);
		if (t > 0)
			tids[t] = ret ? 0 : tid;
	}
	return ret;
}

static int pin_team(struct exec_model *em, const struct exec_cpuset *cores, int n, bool shared)
{
	struct team_plan p = { .cores = cores, .n = n, .shared = shared };
	int total = team_pinned.lean ? n : em->max_threads, ret = 0;

	if (team_pinned.nr == cores->nr && team_pinned.pool == total &&
	    team_pinned.shared == shared &&
	    !memcmp(team_pinned.cpus, cores->cpus, sizeof(int) * (size_t)cores->nr))
		return 0;
	for (int i = 0; i < em->cpus.nr; i++) {
		bool used = false;

		for (int j = 0; j < cores->nr && !used; j++)
			used = cores->cpus[j] == em->cpus.cpus[i];
		if (!used)
			p.spare[p.nr_spare++] = em->cpus.cpus[i];
	}
	/* team_pinned is per calling thread: the thread ids are this caller's pool. */
	if (team_pinned.pool != total)
		memset(team_pinned.tids, 0, sizeof(team_pinned.tids));
	team_pinned.nr = 0;
	team_pinned.pool = total;
	/* the pool first, so no spinner of it holds the core the caller goes to */
	if (total > 1) {
		ret = pin_by_tid(&p, total);
		if (ret == -ESRCH)
			ret = pin_in_region(&p, total);
	}
	/*
	 * Then the caller onto its core, and there it stays on 1 and 2 cores,
	 * where no team shrinks. A caller allowed on the whole set drifts onto
	 * its pool thread's core: woken by colocd, the kernel puts it on the
	 * waker's CPU, and the two then take turns on one core with a futex
	 * hand-off per layer (measured in colocd on 2 vCPUs: MobileNet-V2
	 * blocks of 7-15 ms instead of 2.6 ms). Above 2 cores the mask is
	 * widened, for the threads libgomp creates when a team grows back.
	 */
	if (!ret && !shared && (cores->nr <= 2 || sched_getcpu() != cores->cpus[0]))
		ret = set_mask(0, &cores->cpus[0], 1);
	if (!ret && (cores->nr > 2 || shared))
		ret = set_mask(0, cores->cpus, cores->nr);
	if (ret)
		return ret;
	team_pinned.nr = cores->nr;
	team_pinned.shared = shared;
	memcpy(team_pinned.cpus, cores->cpus, sizeof(int) * (size_t)cores->nr);
	return 0;
}

/* Where team thread i of n starts its share of total bytes: on a page boundary. */
static size_t share_start(size_t total, int i, int n)
{
	return i >= n ? total : (total / (size_t)n * (size_t)i) & ~(size_t)4095;
}

/* Bytes [lo, hi) of the copies laid end to end. */
static void copy_range(const struct exec_input_copy *c, int nr, size_t lo, size_t hi)
{
	size_t at = 0;

	for (int k = 0; k < nr && at < hi; at += c[k].bytes, k++) {
		size_t from = lo > at ? lo - at : 0,
		       to = hi - at < c[k].bytes ? hi - at : c[k].bytes;

		if (from < to)
			memcpy((char *)c[k].dst + from, (const char *)c[k].src + from, to - from);
	}
}

/*
 * The staged inputs copied by the block's team of n, each thread a share:
 * a pool thread that spun out in libgomp's dock during a copy on the caller
 * alone would have to be woken by the first layer (docs/design/serving-path.md).
 */
static void copy_staged_on_team(const struct exec_input_copy *c, int nr, int n)
{
	size_t total = 0;

	for (int k = 0; k < nr; k++)
		total += c[k].bytes;
#pragma omp parallel num_threads(n)
	{
		int t = omp_get_thread_num(), nt = omp_get_num_threads();

		copy_range(c, nr, share_start(total, t, nt), share_start(total, t + 1, nt));
	}
}

/* The step's primitive with its arguments bound to q, on the lane's memory objects. */
static int run_one(struct exec_query *q, struct exec_step *s, int tid)
{
	const struct exec_lane *lane = q->lane;
	dnnl_exec_arg_t args[EXEC_MAX_ARGS];

	for (int a = 0; a < s->nr_args; a++) {
		args[a] = s->args[a];
		if (s->bufs[a].kind == EXEC_BUF_FIXED)
			continue;
		if (lane->mems)
			args[a].memory = lane->mems[s->bufs[a].mem];
		if (dnnl_memory_set_data_handle(args[a].memory, exec_buf_ptr(q, tid, &s->bufs[a])))
			return -EINVAL;
	}
	return dnnl_primitive_execute(s->prim, lane->streams[tid], s->nr_args, args) ? -EIO : 0;
}

static int run_embed(struct exec_query *q, const struct exec_step *s)
{
	const float *ids = exec_buf_ptr(q, 0, &s->ids);
	float *dst = exec_buf_ptr(q, 0, &s->dst);

	for (int64_t i = 0; i < s->nr_ids; i++) {
		int64_t id;

		/* NaN, infinities, fractions and out-of-range ids are refused before any cast */
		if (!(ids[i] >= 0.0f && ids[i] < (float)s->vocab) || ids[i] != floorf(ids[i]))
			return -ERANGE;
		id = (int64_t)ids[i];
		memcpy(dst + i * s->dim, s->table + id * s->dim, (size_t)s->dim * sizeof(float));
	}
	return 0;
}

static int run_group(struct exec_query *q, struct exec_step *g, int n)
{
	int ret = 0;

#pragma omp parallel num_threads(n) reduction(min : ret)
	{
		int t = omp_get_thread_num(), nt = omp_get_num_threads();

		for (int i = t; i < g->nr_items; i += nt) {
			int r = run_one(q, &g->items[i], t);

			if (r < ret)
				ret = r;
		}
		/* Each thread waits for its own stream before the team joins. */
		if (dnnl_stream_wait(q->lane->streams[t]) && ret == 0)
			ret = -EIO;
	}
	return ret;
}

static int run_plan(struct exec_query *q, struct exec_plan *p, int n)
{
	for (int i = 0; i < p->nr_steps; i++) {
		struct exec_step *s = &p->steps[i];
		int ret;

		if (s->embed)
			ret = run_embed(q, s);
		else if (s->col2im)
			ret = exec_col2im_run(q, s->col2im, n);
		else if (s->swish_elems)
			ret = exec_swish_run(q, s, n);
		else if (s->items)
			ret = run_group(q, s, n);
		else
			ret = run_one(q, s, 0);
		if (ret)
			return ret;
	}
	return 0;
}

int exec_run_block(struct exec_model *em, struct exec_query *q, int first, int last,
		   const int *versions, const struct exec_cpuset *cores,
		   struct exec_block_stats *stats)
{
	return exec_run_block_placed(em, q, first, last, versions, cores, EXEC_TEAM_PINNED, stats);
}

int exec_run_block_placed(struct exec_model *em, struct exec_query *q, int first, int last,
			  const int *versions, const struct exec_cpuset *cores,
			  enum exec_team_placement placement, struct exec_block_stats *stats)
{
	uint64_t t0 = coloc_now_ns(), t1, t2;
	const struct exec_input_copy *staged;
	int slot, n, ret, nr_staged;

	if (!em || !q || q->em != em || !cores || first < 0 || last > em->graph->nr_layers ||
	    first >= last || cores->nr < 1 || cores->nr > EXEC_MAX_CPUS ||
	    (placement != EXEC_TEAM_PINNED && placement != EXEC_TEAM_SHARED))
		return -EINVAL;
	/* taken whatever comes of the block: the caller's copies live until it starts */
	staged = q->staged;
	nr_staged = q->nr_staged;
	q->staged = NULL;
	q->nr_staged = 0;
	for (int i = 0; i < cores->nr; i++) {
		bool allowed = false;

		for (int j = 0; j < em->cpus.nr && !allowed; j++)
			allowed = em->cpus.cpus[j] == cores->cpus[i];
		if (!allowed)
			return -EINVAL;
	}
	if (versions)
		for (int li = first; li < last; li++)
			if (versions[li - first] < 0 ||
			    versions[li - first] >= em->layers[li].nr_versions)
				return -EINVAL;
	/* a live query's earlier outputs are gone once read: blocks follow each other */
	if (q->live && first && first != q->next_layer)
		return -ENODATA;
	/* one block at a time per lane: its memory objects hold one query's handles */
	if (atomic_exchange(&q->lane->running, true))
		return -EBUSY;
	slot = exec_slot_for_cores(em, cores->nr);
	n = em->slot_cores[slot];
	/* beside other lanes: their teams' threads and this one's fit the CPUs */
	exec_team_turns_claim(n);
	ret = pin_team(em, cores, n, placement == EXEC_TEAM_SHARED);
	if (ret) {
		atomic_store(&q->lane->running, false);
		return ret;
	}
	t1 = coloc_now_ns();
	team_pinned.team = n;
	omp_set_num_threads(n);
	t2 = t1;
	if (nr_staged) {
		copy_staged_on_team(staged, nr_staged, n);
		t2 = coloc_now_ns();
	}
	for (int li = first; li < last && !ret; li++) {
		int v = versions ? versions[li - first] : 0;

		ret = run_plan(q, &em->layers[li].plans[v][slot], n);
	}
	if (!ret && dnnl_stream_wait(q->lane->streams[0]))
		ret = -EIO;
	q->next_layer = ret ? 0 : last;
	if (stats) {
		stats->switch_ns = t1 - t0;
		stats->input_ns = t2 - t1;
		stats->latency_ns = coloc_now_ns() - t0;
	}
	atomic_store(&q->lane->running, false);
	return ret;
}
