// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the serving path's parts in the executor model (sim/parts.c):
 * a part's fit on its p50 and p95 and its draws, the parts file and its
 * units, a model's input and output bytes, and whole runs whose block and
 * query times are worked out by hand from the parts: dispatch, notice and
 * copy hold the block's cores, compute scales its table time, reply and
 * hop add to the query's latency only; parts of nothing change nothing.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "sim_fixture.h"
#include "parts.h"

#define Z95 1.6448536269514722

/* A parts file of the given body under a temporary name; the name into path. */
static int write_parts(char *path, size_t len, const char *body)
{
	FILE *f;
	int fd;

	snprintf(path, len, "/tmp/coloc-sim-parts-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -1;
	}
	fputs(body, f);
	return fclose(f);
}

/* qsort's order of doubles */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

TEST(sim_part_fit__median_is_the_p50_and_the_spread_puts_the_p95_there)
{
	struct coloc_err err = { 0 };
	struct sim_part part;
	struct coloc_rng rng;

	ASSERT_EQ(0, sim_part_fit(2.0, 2.0 * exp(0.5 * Z95), &part, &err));
	EXPECT_EQ(2.0, part.median);
	EXPECT_LT(fabs(part.sigma - 0.5), 1e-12);
	ASSERT_EQ(0, sim_part_fit(3.0, 3.0, &part, &err));
	EXPECT_EQ(0.0, part.sigma);
	coloc_rng_seed(&rng, 1);
	EXPECT_EQ(3.0, sim_part_draw(&part, &rng));
	ASSERT_EQ(0, sim_part_fit(0, 0.4, &part, &err));
	EXPECT_EQ(0.0, part.median);
	EXPECT_EQ(0.0, sim_part_draw(&part, &rng));
	EXPECT_EQ(-EINVAL, sim_part_fit(1.0, 0.5, &part, &err));
	EXPECT_EQ(-EINVAL, sim_part_fit(-1.0, 0.5, &part, &err));
	EXPECT_EQ(-EINVAL, sim_part_fit(1.0, INFINITY, &part, &err));
}

/*
 * 20000 draws of a part fitted on p50 0.11 and p95 0.76 (the dispatch
 * measured on the quiet Zen 5): their median and 95th percentile within
 * 3 % of those (the sampling error of either is under 1.5 %).
 */
TEST(sim_part_draw__reproduces_the_fitted_p50_and_p95)
{
	enum { N = 20000 };
	static double v[N];
	struct coloc_err err = { 0 };
	struct sim_part part;
	struct coloc_rng rng;

	ASSERT_EQ(0, sim_part_fit(0.11, 0.76, &part, &err));
	coloc_rng_seed(&rng, 7);
	for (int i = 0; i < N; i++)
		v[i] = sim_part_draw(&part, &rng);
	qsort(v, N, sizeof(v[0]), cmp_double);
	EXPECT_LT(fabs(v[N / 2] / 0.11 - 1), 0.03) TH_LOG("p50 %.4f", v[N / 2]);
	EXPECT_LT(fabs(v[N * 95 / 100] / 0.76 - 1), 0.03) TH_LOG("p95 %.4f", v[N * 95 / 100]);
}

/*
 * A parts file in its units: dispatch 0.1 / 0.5 ms -> 1e5 ns median;
 * copy 2 ms per MB -> 2 ns a byte; compute 4 / 5 ms of a model whose
 * table says 5 ms alone -> a factor of 0.8 at the median and 1.0 at the
 * p95; the other model's rows are not taken; a model without rows is
 * -ENOENT; columns in any order, others ignored.
 */
TEST(sim_parts_file__rows_in_their_units_for_the_model_named)
{
	char path[64];
	struct sim_parts_file f;
	struct sim_parts p;
	struct coloc_err err = { 0 };

	ASSERT_EQ(0, write_parts(path, sizeof(path),
				 "p95_ms\tpart\tnote\tmodel\tp50_ms\n"
				 "0.5\tdispatch\tx\tm\t0.1\n"
				 "2\tcopy\tx\tm\t2\n"
				 "5\tcompute\tx\tm\t4\n"
				 "9\thop\tx\tother\t1\n"));
	ASSERT_EQ(0, sim_parts_file_load(path, &f, &err)) TH_LOG("%s", err.msg);
	unlink(path);
	ASSERT_EQ(4, f.nr);
	ASSERT_EQ(0, sim_parts_for_model(&f, "m", 5.0, 100, 10, &p, &err)) TH_LOG("%s", err.msg);
	EXPECT_EQ((1u << SIM_PART_DISPATCH) | (1u << SIM_PART_COPY) | (1u << SIM_PART_COMPUTE),
		  p.given);
	EXPECT_LT(fabs(p.part[SIM_PART_DISPATCH].median - 1e5), 1e-6);
	EXPECT_LT(fabs(p.part[SIM_PART_DISPATCH].sigma - log(5.0) / Z95), 1e-12);
	EXPECT_EQ(2.0, p.part[SIM_PART_COPY].median);
	EXPECT_EQ(0.0, p.part[SIM_PART_COPY].sigma);
	EXPECT_LT(fabs(p.part[SIM_PART_COMPUTE].median - 0.8), 1e-12);
	EXPECT_LT(fabs(p.part[SIM_PART_COMPUTE].sigma - log(1.25) / Z95), 1e-12);
	EXPECT_EQ(0.0, p.part[SIM_PART_HOP].median);
	EXPECT_EQ(100u, p.in_bytes);
	EXPECT_EQ(10u, p.out_bytes);
	EXPECT_EQ(-ENOENT, sim_parts_for_model(&f, "nobody", 5.0, 0, 0, &p, &err));
	EXPECT_EQ(-EINVAL, sim_parts_for_model(&f, "m", 0, 0, 0, &p, &err));
	sim_parts_file_free(&f);
	EXPECT_EQ(0, f.nr);
}

/*
 * compute over the table time the measurement ran, where the file gives
 * it (table_ms): 6 / 9 ms of blocks whose table says 2 ms -> a factor of
 * 3 at the median, the model's solo latency (5 ms) not used; a row with
 * table_ms 0 falls back on the solo latency (4 / 5 -> 0.8).
 */
TEST(sim_parts_file__compute_over_the_table_time_it_ran)
{
	char path[64];
	struct sim_parts_file f;
	struct sim_parts p;
	struct coloc_err err = { 0 };

	ASSERT_EQ(0, write_parts(path, sizeof(path),
				 "model\tpart\tp50_ms\tp95_ms\ttable_ms\n"
				 "k\tcompute\t6\t9\t2\n"
				 "k\thop\t1\t2\t0\n"
				 "m\tcompute\t4\t5\t0\n"));
	ASSERT_EQ(0, sim_parts_file_load(path, &f, &err)) TH_LOG("%s", err.msg);
	unlink(path);
	ASSERT_EQ(0, sim_parts_for_model(&f, "k", 5.0, 0, 0, &p, &err)) TH_LOG("%s", err.msg);
	EXPECT_LT(fabs(p.part[SIM_PART_COMPUTE].median - 3.0), 1e-12);
	EXPECT_LT(fabs(p.part[SIM_PART_COMPUTE].sigma - log(1.5) / Z95), 1e-12);
	EXPECT_LT(fabs(p.part[SIM_PART_HOP].median - 1e6), 1e-6);
	ASSERT_EQ(0, sim_parts_for_model(&f, "m", 5.0, 0, 0, &p, &err)) TH_LOG("%s", err.msg);
	EXPECT_LT(fabs(p.part[SIM_PART_COMPUTE].median - 0.8), 1e-12);
	sim_parts_file_free(&f);
}

/* Bad rows are refused, named by line: an unknown part, p95 below p50, a row given twice. */
TEST(sim_parts_file__bad_rows_are_refused_by_line)
{
	static const struct {
		const char *body;
		int code;
		const char *says;
	} bad[] = {
		{ "model\tpart\tp50_ms\tp95_ms\nm\tqueued\t1\t2\n", -EINVAL, ":2: unknown part" },
		{ "model\tpart\tp50_ms\tp95_ms\nm\thop\t1\t2\nm\tnotice\t2\t1\n", -EINVAL, ":3:" },
		{ "model\tpart\tp50_ms\tp95_ms\nm\thop\t1\t2\nm\thop\t1\t2\n", -EEXIST, ":3:" },
		{ "model\tpart\tp50_ms\nm\thop\t1\n", -EINVAL, "p95_ms" },
		{ "model\tpart\tp50_ms\tp95_ms\ttable_ms\nm\tcompute\t1\t2\t-1\n", -EINVAL, ":2:" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char path[64];
		struct sim_parts_file f;
		struct coloc_err err = { 0 };

		ASSERT_EQ(0, write_parts(path, sizeof(path), bad[i].body));
		EXPECT_EQ(bad[i].code, sim_parts_file_load(path, &f, &err)) TH_LOG("case %zu", i);
		unlink(path);
		EXPECT_NE(NULL, strstr(err.msg, bad[i].says)) TH_LOG("case %zu: %s", i, err.msg);
		EXPECT_EQ(0, f.nr);
	}
}

/*
 * MobileNet-V2's query: one 1x3x224x224 fp32 input (602112 bytes) and
 * 1000 fp32 class scores (4000 bytes); VELTAIR's tables have no model
 * file, so no bytes.
 */
TEST(sim_model_io_bytes__mobilenet_v2_and_a_veltair_table)
{
	const char *root = getenv("COLOC_ROOT");
	char models[4096];
	struct sim_table_dirs dirs = { .models = models };
	struct coloc_err err = { 0 };
	uint64_t in = 1, out = 1;

	snprintf(models, sizeof(models), "%s/models", root ? root : ".");
	ASSERT_EQ(0, sim_model_io_bytes("mobilenet_v2", &dirs, &in, &out, &err))
	TH_LOG("%s", err.msg);
	EXPECT_EQ(3u * 224 * 224 * 4, in);
	EXPECT_EQ(1000u * 4, out);
	ASSERT_EQ(0, sim_model_io_bytes("veltair:resnet50", &dirs, &in, &out, &err));
	EXPECT_EQ(0u, in);
	EXPECT_EQ(0u, out);
}

/* Parts without spread (p50 = p95), in ns (copy in ns a byte, compute a factor). */
static struct sim_parts fixed_parts(double dispatch, double notice, double copy, double compute,
				    double reply, double hop, uint64_t in, uint64_t out)
{
	const double v[SIM_NR_PARTS] = { dispatch, notice, copy, compute, reply, hop };
	struct sim_parts p = { .in_bytes = in, .out_bytes = out };

	for (int i = 0; i < SIM_NR_PARTS; i++) {
		p.part[i].median = v[i];
		p.given |= 1u << i;
	}
	return p;
}

/*
 * layer-wise, one core, the two-layer model (3 + 7 ms), one query at 0:
 * dispatch 0.5 ms, notice 0.25 ms a block, copy 1 ns a byte of 1e6 input
 * bytes (1 ms, first block) and 2e5 output bytes (0.2 ms, last block),
 * compute x 0.5, reply 0.1 and hop 0.4 ms a query. Block 0 holds the core
 * 1.5 + 0.5 + 0.25 + 1 = 3.25 ms, block 1 3.5 + 0.75 + 0.2 = 4.45 ms, to
 * 7.7 ms; the query is answered at 7.7 + 0.5 = 8.2 ms.
 * fcfs, the one-layer model (10 ms), the same parts and compute x 1,
 * arrivals at 0 and 5 ms: q0 holds the core to 10 + 0.75 + 1.2 = 11.95 ms,
 * answered at 12.45; q1 runs 11.95..23.9, answered at 24.4 (19.4 ms).
 */
TEST_F(sim, run__parts_hold_the_cores_per_block_and_add_per_query)
{
	static const double one[] = { 0 }, two[] = { 0, 5 };
	static const int who[] = { 0, 0 };
	struct sim_parts parts =
		fixed_parts(0.5 * MS, 0.25 * MS, 1.0, 0.5, 0.1 * MS, 0.4 * MS, 1000000, 200000);
	struct sim_tenant t = {
		.costs = &two_layers, .qos_ns = 100 * MS, .share = 1, .parts = &parts
	};
	struct mem_trace mt;
	struct sim_params p;

	mem_trace_init(&mt, 1, one, who);
	p = small_params(policy_find("layer-wise"), 1, 1, &t, 1, &mt.trace, self->w);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(2, self->w->nr_b);
	ASSERT_EQ(0, self->w->b[0].start_ns);
	ASSERT_EQ(3 * MS + MS / 4, self->w->b[0].end_ns);
	ASSERT_EQ(3 * MS + MS / 4, self->w->b[1].start_ns);
	ASSERT_EQ(7 * MS + 7 * MS / 10, self->w->b[1].end_ns);
	ASSERT_EQ(8 * MS + MS / 5, record_of(self->w, 0)->end_ns);
	ASSERT_LT(fabs(self->r.tenant[0].p50_ms - 8.2), 1e-9);

	self->w->nr_q = 0;
	self->w->nr_b = 0;
	parts.part[SIM_PART_COMPUTE].median = 1.0;
	t.costs = &one_layer;
	mem_trace_init(&mt, 2, two, who);
	p = small_params(policy_find("fcfs"), 1, 1, &t, 1, &mt.trace, self->w);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(2, self->w->nr_b);
	ASSERT_EQ(11 * MS + 95 * MS / 100, self->w->b[0].end_ns);
	ASSERT_EQ(11 * MS + 95 * MS / 100, self->w->b[1].start_ns);
	ASSERT_EQ(23 * MS + 9 * MS / 10, self->w->b[1].end_ns);
	ASSERT_EQ(12 * MS + 45 * MS / 100, record_of(self->w, 0)->end_ns);
	ASSERT_EQ(24 * MS + 4 * MS / 10, record_of(self->w, 1)->end_ns);
	ASSERT_LT(fabs(self->r.tenant[0].p99_ms - 19.4), 1e-9);
}

/*
 * The parts' spread at the run's level, and determinism: one core, the
 * one-layer model (10 ms), 1 query/s for 1000 s (a queue almost never
 * forms), hop fitted on p50 5 ms and p95 10 ms: the latencies' median is
 * 10 + 5 = 15 ms and their 95th percentile 20 ms, within the sampling
 * error of ~900 queries; the same seed gives the same latencies, another
 * seed others. Parts of nothing (every median 0) leave a run exactly as
 * it is without parts, even one that draws query costs of its own.
 */
TEST_F(sim, run__parts_spread_is_deterministic_and_nothing_changes_nothing)
{
	struct sim_parts parts = fixed_parts(0, 0, 0, 1.0, 0, 5 * MS, 0, 0);
	struct sim_tenant t = {
		.costs = &one_layer, .qos_ns = 1000 * MS, .share = 1, .parts = &parts
	};
	struct sim_params p = small_params(policy_find("fcfs"), 1, 1, &t, 1, NULL, self->w);
	struct sim_result again, bare;

	ASSERT_EQ(0, sim_part_fit(5 * MS, 10 * MS, &parts.part[SIM_PART_HOP], &self->err));
	p.on_query = NULL;
	p.on_block = NULL;
	p.qps = 1;
	p.duration_ns = 1000000 * MS;
	p.warmup_ns = 0;
	p.seed = 3;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_LT(800, self->r.tenant[0].completed);
	EXPECT_LT(fabs(self->r.tenant[0].p50_ms - 15.0), 0.5)
	TH_LOG("p50 %.3f ms", self->r.tenant[0].p50_ms);
	EXPECT_LT(fabs(self->r.tenant[0].p95_ms - 20.0), 1.5)
	TH_LOG("p95 %.3f ms", self->r.tenant[0].p95_ms);
	ASSERT_EQ(0, sim_run(&p, &again, &self->err));
	EXPECT_EQ(self->r.tenant[0].p50_ms, again.tenant[0].p50_ms);
	EXPECT_EQ(self->r.tenant[0].p95_ms, again.tenant[0].p95_ms);
	p.seed = 4;
	ASSERT_EQ(0, sim_run(&p, &again, &self->err));
	EXPECT_NE(self->r.tenant[0].p95_ms, again.tenant[0].p95_ms);

	parts = fixed_parts(0, 0, 0, 1.0, 0, 0, 1000, 1000);
	parts.given &= ~(1u << SIM_PART_COMPUTE);
	parts.part[SIM_PART_COMPUTE].median = 0;
	t.query_cost_ns = 3 * MS;
	p.query_cost_sigma = 0.5;
	p.qps = 50;
	p.duration_ns = 20000 * MS;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	t.parts = NULL;
	ASSERT_EQ(0, sim_run(&p, &bare, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_LT(500, bare.tenant[0].completed);
	EXPECT_EQ(bare.tenant[0].completed, self->r.tenant[0].completed);
	EXPECT_EQ(bare.tenant[0].dropped, self->r.tenant[0].dropped);
	EXPECT_EQ(bare.tenant[0].p50_ms, self->r.tenant[0].p50_ms);
	EXPECT_EQ(bare.tenant[0].p99_ms, self->r.tenant[0].p99_ms);
}

TEST_HARNESS_MAIN
