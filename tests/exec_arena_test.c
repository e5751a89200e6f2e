// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A live query's arena (executor/exec_arena.c: outputs share bytes by
 * liveness) gives the model's outputs byte for byte as a query that keeps
 * every layer's output, run as blocks cut anywhere and run again on the
 * same input; and it refuses what it no longer holds: a block that does
 * not start where the last one ended, and an output some later layer
 * reads. On models with residual adds fused in place (ResNet-50), branches
 * and concatenations (GoogLeNet), several outputs (SSD) and depthwise
 * stages (MobileNet-V2); on MobileNet-V2 and ResNet-50 with every kernel
 * version on 1 and 2 cores. The packing (exec_arena_pack) places every
 * buffer where a greedy written here from its definition does, on the real
 * models and on random lives, and plans 65,536 buffers (a chain, and all
 * alive at once) in time that grows at most as n log n against 4,096.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kselftest_harness.h"
#include "executor.h"
#include "model.h"

FIXTURE(exec_arena)
{
	struct model *m;
	struct exec_model *em;
	struct exec_cpuset core;
};

FIXTURE_SETUP(exec_arena)
{
	self->m = NULL;
	self->em = NULL;
	self->core.nr = 0;
	/* up to two cores: the model is loaded for both, each test picks its count */
	for (int c = 0; c < EXEC_MAX_CPUS && self->core.nr < 2; c++)
		if (exec_cpu_online(c))
			self->core.cpus[self->core.nr++] = c;
}

FIXTURE_TEARDOWN(exec_arena)
{
	exec_model_free(self->em);
	model_free(self->m);
}

static int load(struct __test_metadata *_metadata, FIXTURE_DATA(exec_arena) * self,
		const char *file)
{
	const char *root = getenv("COLOC_ROOT");
	struct exec_options o = { .cpus = self->core };
	struct coloc_err err = { 0 };
	char path[4096];

	snprintf(path, sizeof(path), "%s/models/%s", root ? root : ".", file);
	self->m = model_load(path, &err);
	if (!self->m) {
		TH_LOG("%s: %s", file, coloc_err_str(&err));
		return -1;
	}
	self->em = exec_model_load(self->m, &o, &err);
	if (!self->em) {
		TH_LOG("%s: %s", file, coloc_err_str(&err));
		return -1;
	}
	return 0;
}

/* Every model output of q, packed as model_io_layout says; NULL on failure. */
static char *outputs_of(const struct exec_query *q, const struct model_io_layout *io)
{
	char *out = malloc(io->out_bytes ? io->out_bytes : 1);

	for (int i = 0; out && i < io->nr_outputs; i++) {
		const struct model_io_tensor *t = &io->outputs[i];

		if (exec_query_read_output(q, t->layer, (float *)(out + t->offset),
					   t->bytes / sizeof(float))) {
			free(out);
			out = NULL;
		}
	}
	return out;
}

/* A layer some later layer reads, and no input: a live query lets it go. */
static int read_inside(const struct model *m)
{
	for (int k = m->nr_layers - 1; k > 0; k--)
		for (int j = 0; j < m->layers[k].nr_inputs; j++) {
			int li = m->layers[k].inputs[j];

			if (m->layers[li].op != MODEL_OP_INPUT && li < m->nr_layers / 2)
				return li;
		}
	return -1;
}

/* Version `pick` of every layer that has it, else its last, for layers [first, last). */
static int *versions_of(const struct exec_model *em, int pick, int first, int last)
{
	int *v = calloc((size_t)(last - first), sizeof(*v));

	for (int li = first; v && li < last; li++) {
		int nv = exec_layer_nr_versions(em, li);

		v[li - first] = pick < nv ? pick : nv - 1;
	}
	return v;
}

static int run_versions(FIXTURE_DATA(exec_arena) * self, struct exec_query *q, int first, int last,
			int pick, const struct exec_cpuset *cores)
{
	int *v = versions_of(self->em, pick, first, last), ret;

	if (!v)
		return -ENOMEM;
	ret = exec_run_block(self->em, q, first, last, v, cores, NULL);
	free(v);
	return ret;
}

/*
 * The live query's outputs against a full query's, both run with version
 * `pick` on the first nr_cores cores: the model as three blocks, then again
 * as one block on the input it still holds.
 */
static void same_outputs_as(struct __test_metadata *_metadata, FIXTURE_DATA(exec_arena) * self,
			    int pick, int nr_cores)
{
	struct exec_cpuset cores = self->core;
	struct model_io_layout io;
	struct coloc_err err = { 0 };
	struct exec_query *full = exec_query_new(self->em),
			  *live = exec_query_new_live(self->em, NULL);
	int n = self->m->nr_layers, cut1 = n / 3, cut2 = 2 * n / 3 + 1;
	char *want, *got;

	cores.nr = nr_cores;
	ASSERT_EQ(0, model_io_layout(self->m, &io, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_NE(NULL, full);
	ASSERT_NE(NULL, live);
	exec_query_fill_inputs(full, self->m, 7);
	exec_query_fill_inputs(live, self->m, 7);
	ASSERT_EQ(0, run_versions(self, full, 0, n, pick, &cores));
	want = outputs_of(full, &io);
	ASSERT_NE(NULL, want);
	for (int run = 0; run < 2; run++) {
		if (run == 0) {
			ASSERT_EQ(0, run_versions(self, live, 0, cut1, pick, &cores));
			ASSERT_EQ(0, run_versions(self, live, cut1, cut2, pick, &cores));
			ASSERT_EQ(0, run_versions(self, live, cut2, n, pick, &cores));
		} else {
			ASSERT_EQ(0, run_versions(self, live, 0, n, pick, &cores));
		}
		got = outputs_of(live, &io);
		ASSERT_NE(NULL, got);
		EXPECT_EQ(0, memcmp(want, got, io.out_bytes))
		TH_LOG("version %d on %d cores, run %d: a live query's outputs differ from a full query's",
		       pick, nr_cores, run);
		free(got);
	}
	free(want);
	model_io_layout_free(&io);
	exec_query_free(full);
	exec_query_free(live);
}

/* Every version index any layer has, on 1 core and (where there are two) on 2. */
static void every_version(struct __test_metadata *_metadata, FIXTURE_DATA(exec_arena) * self,
			  const char *file)
{
	int max_versions = 1;

	ASSERT_EQ(0, load(_metadata, self, file));
	for (int li = 0; li < self->m->nr_layers; li++)
		if (exec_layer_nr_versions(self->em, li) > max_versions)
			max_versions = exec_layer_nr_versions(self->em, li);
	ASSERT_LT(1, max_versions) TH_LOG("%s: no layer has a second version", file);
	for (int cores = 1; cores <= self->core.nr; cores++)
		for (int pick = 0; pick < max_versions; pick++)
			same_outputs_as(_metadata, self, pick, cores);
	if (self->core.nr < 2)
		TH_LOG("one online CPU: 2 cores not covered");
}

static void same_outputs(struct __test_metadata *_metadata, FIXTURE_DATA(exec_arena) * self,
			 const char *file)
{
	struct model_io_layout io;
	struct coloc_err err = { 0 };
	struct exec_query *full, *live;
	char *want, *got;
	int n, cut1, cut2, inside;

	ASSERT_EQ(0, load(_metadata, self, file));
	self->core.nr = 1;
	n = self->m->nr_layers;
	cut1 = n / 3;
	cut2 = 2 * n / 3 + 1;
	ASSERT_EQ(0, model_io_layout(self->m, &io, &err)) TH_LOG("%s", coloc_err_str(&err));
	full = exec_query_new(self->em);
	live = exec_query_new_live(self->em, NULL);
	ASSERT_NE(NULL, full);
	ASSERT_NE(NULL, live);
	exec_query_fill_inputs(full, self->m, 5);
	exec_query_fill_inputs(live, self->m, 5);
	ASSERT_EQ(0, exec_run_block(self->em, full, 0, n, NULL, &self->core, NULL));
	want = outputs_of(full, &io);
	ASSERT_NE(NULL, want);

	/* cut into three blocks, then again as one on the input it still holds */
	for (int run = 0; run < 2; run++) {
		if (run == 0) {
			ASSERT_EQ(0,
				  exec_run_block(self->em, live, 0, cut1, NULL, &self->core, NULL));
			ASSERT_EQ(0, exec_run_block(self->em, live, cut1, cut2, NULL, &self->core,
						    NULL));
			ASSERT_EQ(0,
				  exec_run_block(self->em, live, cut2, n, NULL, &self->core, NULL));
		} else {
			ASSERT_EQ(0, exec_run_block(self->em, live, 0, n, NULL, &self->core, NULL));
		}
		got = outputs_of(live, &io);
		ASSERT_NE(NULL, got);
		EXPECT_EQ(0, memcmp(want, got, io.out_bytes))
		TH_LOG("%s: run %d: a live query's outputs differ from a full query's", file, run);
		free(got);
	}

	/* what it no longer holds */
	EXPECT_EQ(-ENODATA, exec_run_block(self->em, live, cut1, cut2, NULL, &self->core, NULL));
	inside = read_inside(self->m);
	ASSERT_LE(0, inside);
	{
		size_t elems = (size_t)model_shape_elems(&self->m->layers[inside].out);
		float *buf = malloc(elems * sizeof(float));

		ASSERT_NE(NULL, buf);
		EXPECT_EQ(-ENODATA, exec_query_read_output(live, inside, buf, elems));
		EXPECT_EQ(0, exec_query_read_output(full, inside, buf, elems));
		free(buf);
	}
	free(want);
	model_io_layout_free(&io);
	exec_query_free(full);
	exec_query_free(live);
}

TEST_F(exec_arena, query_new_live__resnet50_fused_adds_same_outputs)
{
	same_outputs(_metadata, self, "resnet50.model");
}

TEST_F(exec_arena, query_new_live__googlenet_branches_same_outputs)
{
	same_outputs(_metadata, self, "googlenet.model");
}

TEST_F(exec_arena, query_new_live__ssd_several_outputs_same_outputs)
{
	same_outputs(_metadata, self, "ssd_mobilenet.model");
}

TEST_F(exec_arena, query_new_live__mobilenet_v2_same_outputs)
{
	same_outputs(_metadata, self, "mobilenet_v2.model");
}

TEST_F_TIMEOUT(exec_arena, query_new_live__mobilenet_v2_every_version_1_2_cores, 300)
{
	every_version(_metadata, self, "mobilenet_v2.model");
}

TEST_F_TIMEOUT(exec_arena, query_new_live__resnet50_every_version_1_2_cores, 300)
{
	every_version(_metadata, self, "resnet50.model");
}

/*
 * The packing from its definition: largest first (ties: lower index), each
 * at the lowest offset where no placed buffer alive at the same time
 * overlaps it, found by trying 0 and the end of every such buffer. O(n^3).
 */
static size_t reference_pack(const struct exec_live_buf *b, int n, size_t *off)
{
	bool *placed = calloc((size_t)n, sizeof(*placed));
	size_t total = 0;

	memset(off, 0, (size_t)n * sizeof(*off));
	for (int done = 0; placed && done < n; done++) {
		int x = -1;
		size_t best = SIZE_MAX;

		for (int i = 0; i < n; i++)
			if (!placed[i] && (x < 0 || b[i].bytes > b[x].bytes))
				x = i;
		for (int c = -1; c < n; c++) {
			size_t at = c < 0 ? 0 : off[c] + b[c].bytes;
			bool clear = c < 0 || placed[c];

			for (int j = 0; j < n && clear; j++)
				clear = !placed[j] || b[j].lo > b[x].hi || b[x].lo > b[j].hi ||
					off[j] >= at + b[x].bytes || at >= off[j] + b[j].bytes;
			if (clear && at < best)
				best = at;
		}
		off[x] = best;
		placed[x] = true;
		if (best + b[x].bytes > total)
			total = best + b[x].bytes;
	}
	free(placed);
	return total;
}

/* No two buffers alive at the same time share a byte. */
static bool disjoint(const struct exec_live_buf *b, int n, const size_t *off)
{
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (b[i].lo <= b[j].hi && b[j].lo <= b[i].hi &&
			    off[i] < off[j] + b[j].bytes && off[j] < off[i] + b[i].bytes)
				return false;
	return true;
}

static void packs_as_reference(struct __test_metadata *_metadata, FIXTURE_DATA(exec_arena) * self,
			       const char *file)
{
	int nr, n;
	struct exec_live_buf *b;
	size_t *off, *want;

	ASSERT_EQ(0, load(_metadata, self, file));
	nr = self->m->nr_layers;
	b = calloc((size_t)nr, sizeof(*b));
	off = calloc((size_t)nr, sizeof(*off));
	want = calloc((size_t)nr, sizeof(*want));
	ASSERT_TRUE(b && off && want);
	n = exec_arena_bufs(self->em, b, off);
	ASSERT_LT(1, n);
	reference_pack(b, n, want);
	for (int i = 0; i < n; i++) {
		if (want[i] != off[i])
			TH_LOG("%s: buffer %d of %d at %zu, the greedy's at %zu", file, i, n,
			       off[i], want[i]);
		ASSERT_EQ(want[i], off[i]);
	}
	ASSERT_TRUE(disjoint(b, n, off));
	free(b);
	free(off);
	free(want);
}

TEST_F_TIMEOUT(exec_arena, arena_pack__as_the_greedy_on_real_models, 300)
{
	static const char *const files[] = { "mobilenet_v2.model",    "resnet50.model",
					     "googlenet.model",	      "ssd_mobilenet.model",
					     "efficientnet_b0.model", "tiny_yolov2.model" };

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		packs_as_reference(_metadata, self, files[i]);
		exec_model_free(self->em);
		model_free(self->m);
		self->em = NULL;
		self->m = NULL;
	}
}

TEST(arena_pack__as_the_greedy_on_random_lives)
{
	enum { N = 300 };
	struct exec_live_buf b[N];
	size_t off[N], want[N], total;
	uint32_t x = 12345;

	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < N; i++) {
			int span;

			x = x * 1103515245u + 12345u;
			b[i].lo = (int)(x >> 8) % N;
			x = x * 1103515245u + 12345u;
			span = 1 + (int)(x >> 8) % (2 << round);
			b[i].hi = b[i].lo + span > N ? N : b[i].lo + span;
			x = x * 1103515245u + 12345u;
			/* few sizes, so ties between sizes are common */
			b[i].bytes = 64u * (1u + (x >> 8) % 8u);
		}
		total = (size_t)exec_arena_pack(b, N, off);
		ASSERT_EQ(reference_pack(b, N, want), total) TH_LOG("round %d", round);
		for (int i = 0; i < N; i++) {
			if (want[i] != off[i])
				TH_LOG("round %d buffer %d", round, i);
			ASSERT_EQ(want[i], off[i]);
		}
	}
}

static double pack_seconds(const struct exec_live_buf *b, int n, size_t *off)
{
	double best = 1e9;

	for (int rep = 0; rep < 3; rep++) {
		struct timespec t0, t1;
		double s;

		/* this thread's CPU time: other work on the machine does not count */
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
		if (exec_arena_pack(b, n, off) < 0)
			return -1;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
		s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		if (s < best)
			best = s;
	}
	return best;
}

/* Lives of a chain (each buffer read by the next) or of buffers all alive to the end. */
static void hostile_lives(struct exec_live_buf *b, int n, bool all_alive)
{
	for (int i = 0; i < n; i++)
		b[i] = (struct exec_live_buf){ .lo = i,
					       .hi = all_alive ? n : i + 1,
					       .bytes = 64u * (1u + (unsigned int)(i % 5)) };
}

/*
 * 65,536 buffers take at most 64 x the CPU time of 4,096 (16 x the
 * buffers: n log n is 21 x, the quadratic planning it replaced 256 x), both
 * timed in this run; and the plan keeps buffers alive together apart.
 */
static void scales(struct __test_metadata *_metadata, bool all_alive)
{
	enum { SMALL = 4096, BIG = 65536 };
	struct exec_live_buf *b = calloc(BIG, sizeof(*b));
	size_t *off = calloc(BIG, sizeof(*off));
	double small, big;

	ASSERT_TRUE(b && off);
	hostile_lives(b, SMALL, all_alive);
	small = pack_seconds(b, SMALL, off);
	hostile_lives(b, BIG, all_alive);
	big = pack_seconds(b, BIG, off);
	ASSERT_TRUE(small > 0);
	EXPECT_TRUE(big < 64 * small) TH_LOG("4096 buffers %.6f s, 65536 %.6f s", small, big);
	for (int i = 0; i + 1 < BIG && !all_alive; i++)
		ASSERT_TRUE(off[i] >= off[i + 1] + b[i + 1].bytes ||
			    off[i + 1] >= off[i] + b[i].bytes);
	for (int i = 0; i + 1 < BIG && all_alive; i++)
		ASSERT_LE(off[i] + b[i].bytes, off[i + 1]);
	free(b);
	free(off);
}

TEST(arena_pack__65536_chain_in_n_log_n_time)
{
	scales(_metadata, false);
}

TEST(arena_pack__65536_alive_at_once_in_n_log_n_time)
{
	scales(_metadata, true);
}

TEST_HARNESS_MAIN
