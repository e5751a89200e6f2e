// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the simulator's tables and inputs: the interference model at
 * exactly 1.0 alone and on level columns, seeded arrival streams, the
 * block trace at table times, determinism per seed, --lanes as --executors
 * to the policy, VELTAIR's tables
 * against cells read off the CSV by hand, traces, the scaling of curves
 * and tables, and coloc's own profile loaded as colocd converts it.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "policy_impl.h"
#include "profile.h"
#include "sim.h"
#include "testutil.h"
#include "sim_fixture.h"

/* ---- the interference model ----------------------------------------------------------- */

TEST(sim_interference__exactly_one_alone_and_table_cells_under_pressure)
{
	struct sim_interference im = { .full_slowdown = 1.6 };
	static const uint8_t v0[] = { 0 }, v1[] = { 1 };

	ASSERT_EQ(1.0, sim_interference_slowdown(&im, &one_layer, 0, 1, v0, 0, 0, 0));
	ASSERT_EQ(1.0, sim_interference_slowdown(&im, &two_layers, 0, 2, v0, 1, 0, 0));
	ASSERT_EQ(1.0, sim_interference_slowdown(&im, &leveled, 0, 1, v0, 0, 0, 0));
	ASSERT_EQ(1.0, sim_interference_slowdown(&im, &leveled, 0, 1, v1, 0, 0, 0));
	/* without levels: linear to full_slowdown; beyond a full domain it stays there */
	ASSERT_LT(fabs(sim_interference_slowdown(&im, &one_layer, 0, 1, v0, 0, 0.25, 0) - 1.15),
		  1e-12);
	ASSERT_LT(fabs(sim_interference_slowdown(&im, &one_layer, 0, 1, v0, 0, 3, 0) - 1.6), 1e-12);
	/*
	 * with levels (the model's slowdown 1.0 and 2.0): a full domain is
	 * level 1.6, column position 0.6, where v0 reads 10 + 0.6 x 10 = 16 ms
	 * (1.6x) and v1 12 + 0.6 x 3 = 13.8 ms (1.15x); half a domain is level
	 * 1.3, position 0.3: 13 ms (1.3x) and 12.9 ms (1.075x)
	 */
	ASSERT_LT(fabs(sim_interference_slowdown(&im, &leveled, 0, 1, v0, 0, 1, 0) - 1.6), 1e-12);
	ASSERT_LT(fabs(sim_interference_slowdown(&im, &leveled, 0, 1, v1, 0, 1, 0) - 1.15), 1e-12);
	ASSERT_LT(fabs(sim_interference_slowdown(&im, &leveled, 0, 1, v0, 0, 0.5, 0) - 1.3), 1e-12);
	ASSERT_LT(fabs(sim_interference_slowdown(&im, &leveled, 0, 1, v1, 0, 0.5, 0) - 1.075),
		  1e-12);
	/*
	 * beyond the last column: F = 3 is level 3, past the model's 2.0, so
	 * the last cells scaled by 3 / 2: v0 20 x 1.5 = 30 ms (3x), v1 15 x
	 * 1.5 = 22.5 ms (1.875x)
	 */
	im.full_slowdown = 3.0;
	ASSERT_LT(fabs(sim_interference_slowdown(&im, &leveled, 0, 1, v0, 0, 1, 0) - 3.0), 1e-12);
	ASSERT_LT(fabs(sim_interference_slowdown(&im, &leveled, 0, 1, v1, 0, 1, 0) - 1.875), 1e-12);
	/*
	 * the socket's part adds to the domain's: a full socket at 1.3 is
	 * +0.3, half of it +0.15, on top of half a domain at 1.6 (+0.3); past
	 * a full socket it stays there; alone it is still exactly 1.0
	 */
	im.full_slowdown = 1.6;
	im.socket_slowdown = 1.3;
	ASSERT_LT(fabs(sim_interference_slowdown(&im, &one_layer, 0, 1, v0, 0, 0, 1) - 1.3), 1e-12);
	ASSERT_LT(fabs(sim_interference_slowdown(&im, &one_layer, 0, 1, v0, 0, 0.5, 0.5) - 1.45),
		  1e-12);
	ASSERT_LT(fabs(sim_interference_slowdown(&im, &one_layer, 0, 1, v0, 0, 0, 2) - 1.3), 1e-12);
	ASSERT_EQ(1.0, sim_interference_slowdown(&im, &one_layer, 0, 1, v0, 0, 0, 0));
	ASSERT_EQ(1.0, sim_interference_slowdown(&im, &leveled, 0, 1, v1, 0, 0, 0));
	/* with level columns the socket's level 1.3 is position 0.3: v1 1.075x as above */
	ASSERT_LT(fabs(sim_interference_slowdown(&im, &leveled, 0, 1, v1, 0, 0, 1) - 1.075), 1e-12);
	im.socket_slowdown = 0;
	/* no interference (full_slowdown 1): 1.0 everywhere */
	im.full_slowdown = 1.0;
	ASSERT_EQ(1.0, sim_interference_slowdown(&im, &leveled, 0, 1, v0, 0, 1, 0));
	ASSERT_EQ(1.0, sim_interference_slowdown(&im, &one_layer, 0, 1, v0, 0, 1, 0));
}

/* ---- arrivals and determinism ----------------------------------------------------------- */

TEST(sim_poisson__seeded_streams_repeat_and_differ_with_the_seed)
{
	struct sim_poisson a, b, c;
	int same_ab = 0, same_ac = 0, n = 20000;
	uint64_t last = 0;

	sim_poisson_init(&a, 42, 0, 1000, false);
	sim_poisson_init(&b, 42, 0, 1000, false);
	sim_poisson_init(&c, 43, 0, 1000, false);
	for (int i = 0; i < n; i++) {
		uint64_t ta = sim_poisson_next(&a), tb = sim_poisson_next(&b),
			 tc = sim_poisson_next(&c);

		same_ab += ta == tb;
		same_ac += ta == tc;
		ASSERT_LE(last, ta);
		last = ta;
	}
	ASSERT_EQ(n, same_ab);
	ASSERT_EQ(0, same_ac);
	/* n arrivals at 1000/s take about n ms: within 3 % (the sd is 1/sqrt(n) = 0.7 %) */
	ASSERT_LT(fabs((double)last * 1e-6 / n - 1.0), 0.03);
}

/* --arrivals even: exactly 1 / rate apart, the first within one gap at a phase the seed draws. */
TEST(sim_poisson__even_arrivals_are_one_gap_apart_from_a_seeded_phase)
{
	struct sim_poisson a, b;
	uint64_t first_a, first_b, prev, t;

	sim_poisson_init(&a, 42, 0, 1000, true);
	sim_poisson_init(&b, 43, 0, 1000, true);
	first_a = sim_poisson_next(&a);
	first_b = sim_poisson_next(&b);
	ASSERT_LE(first_a, 1000000ULL);
	ASSERT_LE(first_b, 1000000ULL);
	ASSERT_NE(first_a, first_b);
	prev = first_a;
	for (int i = 1; i < 10000; i++) {
		t = sim_poisson_next(&a);
		/* 1 ms apart, to the rounding of each time to a ns */
		ASSERT_LE(t - prev, 1000001ULL);
		ASSERT_GE(t - prev, 999999ULL);
		prev = t;
	}
}

/*
 * coloc-sim --block-trace: fcfs serves one query at a time on all 64 cores,
 * so every block is alone (no pressure) and its time from start to end is
 * exactly its table time (alone_us = round_trip_us), one whole model each,
 * in arrival order (query ids increasing, ends increasing). --search with a
 * trace of blocks is bad usage (exit 2).
 */
TEST_F(sim, coloc_sim__block_trace_has_every_block_at_its_table_time)
{
	char dir[512], bin[512], path[] = "/tmp/coloc-sim-blocks-XXXXXX", cmd[2048], out[4096];
	char line[512], tenant[64];
	double end, alone, rt, last_end = -1;
	long long query, last_query = -1;
	int first, last, cores, rows = 0, fd;
	FILE *f;

	veltair_dir(dir, sizeof(dir));
	tu_bin("coloc-sim", bin, sizeof(bin));
	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "%s --tables %s --tenant veltair:resnet50:1000 --policy fcfs --qps 20 "
		 "--duration 2 --cores 64 --llc 4 --block-trace %s",
		 bin, dir, path);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(line, sizeof(line), f));
	ASSERT_STREQ("end_ms\ttenant\tquery\tfirst\tlast\tcores\talone_us\tround_trip_us\n", line);
	while (fgets(line, sizeof(line), f)) {
		ASSERT_EQ(8, sscanf(line, "%lf\t%63s\t%lld\t%d\t%d\t%d\t%lf\t%lf", &end, tenant,
				    &query, &first, &last, &cores, &alone, &rt))
		TH_LOG("%s", line);
		ASSERT_EQ(0, first);
		ASSERT_LT(0, last);
		ASSERT_LT(0, cores);
		ASSERT_LT(0, alone);
		ASSERT_GE(0.1, fabs(rt - alone)) TH_LOG("%s", line);
		ASSERT_LT(last_query, query);
		ASSERT_LT(last_end, end);
		last_query = query;
		last_end = end;
		rows++;
	}
	fclose(f);
	/* 20/s for 2 s: about 40 queries, each a block */
	ASSERT_LT(20, rows);
	snprintf(cmd, sizeof(cmd),
		 "%s --tables %s --tenant veltair:resnet50:1000 --search --block-trace %s", bin,
		 dir, path);
	ASSERT_EQ(2, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	unlink(path);
}

static bool same_counts(const struct sim_result *a, const struct sim_result *b)
{
	for (int t = 0; t < a->nr_tenants; t++) {
		const struct sim_tenant_result *x = &a->tenant[t], *y = &b->tenant[t];

		if (x->arrived != y->arrived || x->completed != y->completed ||
		    x->within != y->within || x->dropped != y->dropped ||
		    x->unserved != y->unserved || x->p50_ms != y->p50_ms || x->p99_ms != y->p99_ms)
			return false;
	}
	return a->events == b->events && a->end_ns == b->end_ns &&
	       a->decide_calls == b->decide_calls;
}

TEST_F(sim, run__same_seed_same_result_other_seed_other_arrivals)
{
	char dir[4096];
	struct policy_table rn, gn;
	struct sim_tenant t[2];
	struct sim_result r2, r3;
	struct sim_params p;

	veltair_dir(dir, sizeof(dir));
	ASSERT_EQ(0, sim_table_load("veltair:resnet50", &(struct sim_table_dirs){ .veltair = dir },
				    &rn, &self->err));
	ASSERT_EQ(0, sim_table_load("veltair:googlenet", &(struct sim_table_dirs){ .veltair = dir },
				    &gn, &self->err));
	t[0] = (struct sim_tenant){ .costs = &rn.costs, .qos_ns = 15 * MS, .share = 1 };
	t[1] = (struct sim_tenant){ .costs = &gn.costs, .qos_ns = 15 * MS, .share = 2 };
	for (int i = 0; policy_entry_at(i); i++) {
		p = small_params(policy_entry_at(i), 64, 4, t, 2, NULL, self->w);
		p.qps = 300;
		p.duration_ns = 5000 * MS;
		p.seed = 11;
		p.on_query = NULL;
		p.on_block = NULL;
		ASSERT_EQ(0, sim_run(&p, &self->r, &self->err));
		ASSERT_EQ(0, sim_run(&p, &r2, &self->err));
		ASSERT_TRUE(same_counts(&self->r, &r2));
		p.seed = 12;
		ASSERT_EQ(0, sim_run(&p, &r3, &self->err));
		ASSERT_FALSE(same_counts(&self->r, &r3));
		TH_LOG("%s: %llu events, identical for seed 11 twice", policy_entry_at(i)->name,
		       (unsigned long long)self->r.events);
	}
	policy_table_free(&rn);
	policy_table_free(&gn);
}

/* ---- VELTAIR's tables --------------------------------------------------------------------- */

/*
 * Cells read off the CSV by hand: ResNet50.prof.csv line 1 is
 * 515,266,184,145,118,109,96,188 and line 20 622,...,164;
 * GoogLeNet.prof.csv line 5 is 186,95,71,53,54,42,37 (7 core counts, up to
 * 56). Layer MACs from the shapes: ResNet-50's first layer
 * 224-224-3-64-7-7-3-3-2-2-1 gives 112 x 112 outputs x 64 x 3 x 7 x 7 =
 * 118013952; GoogLeNet's first 7-7-832-128-1-1 gives 7 x 7 x 128 x 832 =
 * 5218304. The README gives the whole models' sums: ResNet-50 22.4 ms at 8
 * cores and 4.3 ms at 56, GoogLeNet 1.9 ms at 56.
 */
TEST_F(sim, table_load_veltair__reproduces_the_csv_cells)
{
	char dir[4096];
	struct policy_table rn, gn;

	veltair_dir(dir, sizeof(dir));
	ASSERT_EQ(0, sim_table_load("veltair:resnet50", &(struct sim_table_dirs){ .veltair = dir },
				    &rn, &self->err));
	ASSERT_EQ(0, sim_table_load("veltair:GOOGLENET", &(struct sim_table_dirs){ .veltair = dir },
				    &gn, &self->err));
	ASSERT_STREQ("veltair:ResNet50", rn.name);
	ASSERT_EQ(53, rn.costs.nr_layers);
	ASSERT_EQ(8, rn.costs.nr_core_counts);
	ASSERT_EQ(1, rn.costs.nr_versions);
	ASSERT_EQ(1, rn.costs.nr_levels);
	for (int ci = 0; ci < 8; ci++)
		ASSERT_EQ(8 * (ci + 1), rn.costs.core_counts[ci]);
	ASSERT_EQ(515000, policy_costs_cell(&rn.costs, 0, 0, 0, 0));
	ASSERT_EQ(266000, policy_costs_cell(&rn.costs, 0, 0, 1, 0));
	ASSERT_EQ(188000, policy_costs_cell(&rn.costs, 0, 0, 7, 0));
	ASSERT_EQ(622000, policy_costs_cell(&rn.costs, 19, 0, 0, 0));
	ASSERT_EQ(164000, policy_costs_cell(&rn.costs, 19, 0, 7, 0));
	ASSERT_EQ(118013952ULL, rn.costs.layer_ops[0]);
	ASSERT_LT(fabs((double)policy_costs_solo_ns(&rn.costs, 8) / 1e6 - 22.4), 0.05);
	ASSERT_LT(fabs((double)policy_costs_solo_ns(&rn.costs, 56) / 1e6 - 4.3), 0.05);

	ASSERT_EQ(57, gn.costs.nr_layers);
	ASSERT_EQ(7, gn.costs.nr_core_counts);
	ASSERT_EQ(56, gn.costs.core_counts[6]);
	ASSERT_EQ(186000, policy_costs_cell(&gn.costs, 4, 0, 0, 0));
	ASSERT_EQ(37000, policy_costs_cell(&gn.costs, 4, 0, 6, 0));
	ASSERT_EQ(5218304ULL, gn.costs.layer_ops[0]);
	/* 64 cores fit only the 56-core column */
	ASSERT_EQ(policy_costs_solo_ns(&gn.costs, 56), policy_costs_solo_ns(&gn.costs, 64));
	ASSERT_LT(fabs((double)policy_costs_solo_ns(&gn.costs, 56) / 1e6 - 1.9), 0.05);
	policy_table_free(&rn);
	policy_table_free(&gn);

	ASSERT_EQ(-ENOENT,
		  sim_table_load("veltair:alexnet", &(struct sim_table_dirs){ .veltair = dir }, &rn,
				 &self->err));
	ASSERT_EQ(-EINVAL,
		  sim_table_load("onnx:resnet50", &(struct sim_table_dirs){ .veltair = dir }, &rn,
				 &self->err));
}

TEST_F(sim, trace_load__reads_arrivals_and_names_a_bad_line)
{
	char path[] = "/tmp/coloc-sim-trace-XXXXXX";
	struct sim_trace tr;
	int fd = mkstemp(path);
	FILE *f;

	ASSERT_LE(0, fd);
	f = fdopen(fd, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "# time_us tenant\n0 0\n1500.5 1\n\n2000 0\n");
	fclose(f);
	ASSERT_EQ(0, sim_trace_load(path, 2, &tr, &self->err));
	ASSERT_EQ(3, tr.nr);
	ASSERT_EQ(0, tr.time_ns[0]);
	ASSERT_EQ(1500500, tr.time_ns[1]);
	ASSERT_EQ(1, tr.tenant[1]);
	ASSERT_EQ(2000000, tr.time_ns[2]);
	sim_trace_free(&tr);
	/* only one tenant: line 3 names tenant 1 */
	ASSERT_EQ(-EINVAL, sim_trace_load(path, 1, &tr, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, ":3:"));
	unlink(path);
}

/* ---- our tables scaled to many cores ------------------------------------------------- */

/*
 * Hand-made tables whose every cell is a + b / k + c k exactly, so that the
 * fit has nothing to smooth: layer A (a 0, b 2 ms, c 400 ns: T1 2000.4 us,
 * the 1024-4096 us class) and layer B (a 5 us, b 100 us, c 200 ns: T1 105.2
 * us, the 64-256 us class), the same two in both of "VELTAIR's" models. Ours
 * take 3 x T1 on one core (time ratio 3) and T1 x g(2) on two. Then each
 * class's curve is its layer's (s = a / T1, o = c / T1), ours scaled to k
 * cores is a + b / k + c k again (B on 8 cores: 5000 + 12500 + 1600 = 19100
 * ns), every error is 0, and an empty class borrows its nearest neighbour's
 * curve (past 16384 us: A's, two classes down).
 */
static const double scale_abc[2][3] = { { 0, 2e6, 400 }, { 5e3, 1e5, 200 } };

static double scale_exact(int layer, int k)
{
	return scale_abc[layer][0] + scale_abc[layer][1] / k + scale_abc[layer][2] * k;
}

TEST(sim_scaling__recovers_exact_curves_and_scales_ours_back_onto_them)
{
	static int theirs_counts[8], ours_counts[2] = { 1, 2 };
	static uint64_t theirs_ns[2][8], ours_ns[4];
	struct policy_table theirs[2], ours[2], scaled;
	struct coloc_err err = { 0 };
	struct sim_scaling s;

	for (int ci = 0; ci < 8; ci++) {
		theirs_counts[ci] = 8 * (ci + 1);
		for (int l = 0; l < 2; l++)
			theirs_ns[l][ci] = (uint64_t)llround(scale_exact(l, theirs_counts[ci]));
	}
	for (int l = 0; l < 2; l++) {
		double t1 = scale_exact(l, 1);

		ours_ns[2 * l] = (uint64_t)llround(3 * t1);
		/* g(2) x the 1-core cell / 3: what the curve says two cores take */
		ours_ns[2 * l + 1] = (uint64_t)llround(scale_exact(l, 2) * 3);
	}
	for (int i = 0; i < 2; i++) {
		theirs[i] = (struct policy_table){
			.name = "theirs",
			.costs = { .nr_layers = 2,
				   .nr_versions = 1,
				   .nr_core_counts = 8,
				   .nr_levels = 1,
				   .core_counts = theirs_counts },
		};
		ours[i] = (struct policy_table){
			.name = "ours",
			.costs = { .nr_layers = 2,
				   .nr_versions = 1,
				   .nr_core_counts = 2,
				   .nr_levels = 1,
				   .core_counts = ours_counts,
				   .latency_ns = ours_ns },
			.core_counts = ours_counts,
			.latency_ns = ours_ns,
		};
	}
	/* [layer][ci] is the policy_costs layout for one version and one level */
	theirs[0].costs.latency_ns = theirs_ns[0];
	theirs[1].costs.latency_ns = theirs_ns[0];
	theirs[0].core_counts = theirs[1].core_counts = theirs_counts;
	ASSERT_EQ(0, sim_scaling_fit_tables(theirs, ours, &s, &err)) TH_LOG("%s", err.msg);

	ASSERT_LT(fabs(s.time_ratio - 3.0), 1e-3);
	for (int l = 0; l < 2; l++) {
		double t1 = scale_exact(l, 1) / 1e3;

		for (int k = 1; k <= 64; k *= 2) {
			ASSERT_LT(fabs(sim_scaling_curve(&s, t1, k) -
				       scale_exact(l, k) / scale_exact(l, 1)),
				  1e-4)
			TH_LOG("layer %d, %d cores", l, k);
		}
	}
	ASSERT_EQ(2, s.cls[3].nr_layers); /* A, once from each model */
	ASSERT_EQ(2, s.cls[1].nr_layers); /* B */
	ASSERT_EQ(0, s.cls[5].nr_layers);
	ASSERT_EQ(sim_scaling_curve(&s, 2000.4, 8), sim_scaling_curve(&s, 20000, 8));
	ASSERT_LT(s.fit_mape, 1e-4);
	ASSERT_LT(s.cross_mape, 1e-4);
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(8, s.nr_counts[i]);
		for (int ci = 0; ci < 8; ci++)
			ASSERT_LT(fabs(s.model_err[i][ci]), 1e-4);
	}
	ASSERT_EQ(4, s.two_core_cells);
	ASSERT_LT(fabs(s.two_core_ratio - 1.0), 1e-4);

	ASSERT_EQ(0, sim_table_scale(&ours[0], &s, &scaled, &err)) TH_LOG("%s", err.msg);
	ASSERT_EQ(8, scaled.costs.nr_core_counts);
	ASSERT_EQ(64, scaled.costs.core_counts[7]);
	ASSERT_LE(labs((long)policy_costs_cell(&scaled.costs, 1, 0, 0, 0) - 19100), 2);
	for (int l = 0; l < 2; l++)
		for (int ci = 0; ci < 8; ci++)
			ASSERT_LE(labs((long)policy_costs_cell(&scaled.costs, l, 0, ci, 0) -
				       (long)theirs_ns[l][ci]),
				  2);
	policy_table_free(&scaled);

	/* a table with no 1-core column cannot be scaled */
	ASSERT_EQ(-EINVAL, sim_table_scale(&theirs[0], &s, &scaled, &err));
	ASSERT_NE(NULL, strstr(err.msg, "1-core"));
}

/*
 * The layout of a scaled table, by hand: every class's curve 1 / k (s = o =
 * 0) and a time ratio of 2, so a cell on k cores is its 1-core cell / k / 2.
 * One layer, two versions, two level columns (1.0 and 1.5, kept), CIs:
 * version 0 alone 8000 ns on one core -> 500 on 8 cores; at level 1 12000
 * -> 375 on 16; version 1 alone 6000 -> 46.875, 47 on 64; version 1 at
 * level 1 unmeasured (0) stays 0; the CI cells scale alike.
 */
TEST(sim_table_scale__every_version_level_and_interval_cell_in_its_place)
{
	static const int counts[] = { 1, 2 };
	static const double levels[] = { 1.0, 1.5 };
	/* [version][core count][level] */
	static const uint64_t ns[] = { 8000, 12000, 4100, 6000, 6000, 0, 3100, 0 };
	static const uint64_t lo[] = { 7000, 11000, 4000, 5900, 5000, 0, 3000, 0 };
	static const uint64_t hi[] = { 9000, 13000, 4200, 6100, 7000, 0, 3200, 0 };
	struct policy_table ours = {
		.name = "ours",
		.costs = { .nr_layers = 1,
			   .nr_versions = 2,
			   .nr_core_counts = 2,
			   .nr_levels = 2,
			   .core_counts = counts,
			   .level_slowdown = levels,
			   .latency_ns = ns,
			   .latency_lo_ns = lo,
			   .latency_hi_ns = hi },
		.core_counts = (int *)counts,
		.level_slowdown = (double *)levels,
		.latency_ns = (uint64_t *)ns,
		.latency_lo_ns = (uint64_t *)lo,
		.latency_hi_ns = (uint64_t *)hi,
	};
	struct sim_scaling s = { .time_ratio = 2 };
	struct coloc_err err = { 0 };
	struct policy_table out;
	const struct policy_costs *m = &out.costs;

	for (int c = 0; c < SIM_SCALE_CLASSES; c++)
		s.cls[c].max_work_us = c == SIM_SCALE_CLASSES - 1 ? INFINITY : 64 << (2 * c);
	ASSERT_EQ(0, sim_table_scale(&ours, &s, &out, &err)) TH_LOG("%s", err.msg);
	ASSERT_EQ(2, m->nr_versions);
	ASSERT_EQ(2, m->nr_levels);
	ASSERT_EQ(8, m->nr_core_counts);
	ASSERT_EQ(1.5, m->level_slowdown[1]);
	ASSERT_EQ(500, (long)policy_costs_cell(m, 0, 0, 0, 0));
	ASSERT_EQ(375, (long)policy_costs_cell(m, 0, 0, 1, 1));
	ASSERT_EQ(47, (long)policy_costs_cell(m, 0, 1, 7, 0));
	ASSERT_EQ(0, (long)policy_costs_cell(m, 0, 1, 3, 1));
	/* the intervals: version 0 alone on 8 cores 7000 / 16 and 9000 / 16 */
	ASSERT_EQ(438, (long)m->latency_lo_ns[0]);
	ASSERT_EQ(563, (long)m->latency_hi_ns[0]);
	policy_table_free(&out);
}

/* ---- coloc's own profiles ------------------------------------------------------------------ */

/*
 * mobilenet_v2 profiled quickly into a private cache, then loaded by name
 * as coloc-sim loads a mix's model: the table's cells are the profile
 * file's own (read back with the parser), core counts 1..N, and the solo
 * latency on all cores is the sum over layers of the fastest version there,
 * summed here from the file.
 */
TEST_F_TIMEOUT(sim, table_load_profile__the_cells_colocd_would_use, 600)
{
	const char *root = getenv("COLOC_ROOT");
	char cache[64], models[4096], prof[4200], out[4096];
	struct sim_table_dirs dirs;
	struct policy_table t;
	struct profile *p;
	uint64_t solo = 0;

	snprintf(models, sizeof(models), "%s/models", root ? root : ".");
	snprintf(prof, sizeof(prof), "%s/mobilenet_v2.model", models);
	if (access(prof, R_OK))
		SKIP(return, "%.900s not found (set COLOC_ROOT to the repo root)", prof);
	tu_shared_tmpdir("sim-test", cache, sizeof(cache));
	ASSERT_NE(0, cache[0]);
	ASSERT_EQ(0, tu_quick_profile(prof, cache, out, sizeof(out))) TH_LOG("%s", out);
	dirs = (struct sim_table_dirs){ .models = models, .profiles = cache };
	ASSERT_EQ(0, sim_table_load("mobilenet_v2", &dirs, &t, &self->err))
	TH_LOG("%s", self->err.msg);
	snprintf(prof, sizeof(prof), "%s/quick.profile", cache);
	p = profile_load(prof, &self->err);
	ASSERT_NE(NULL, p) TH_LOG("%s", self->err.msg);
	ASSERT_STREQ("mobilenet_v2", t.name);
	ASSERT_EQ(p->nr_layers, t.costs.nr_layers);
	ASSERT_EQ(p->nr_cores, t.costs.nr_core_counts);
	ASSERT_EQ(p->nr_levels, t.costs.nr_levels);
	ASSERT_EQ(1.0, t.costs.level_slowdown[0]);
	for (int c = 0; c < p->nr_cores; c++)
		ASSERT_EQ(c + 1, t.costs.core_counts[c]);
	for (int l = 0; l < p->nr_layers; l++) {
		uint64_t best = 0;

		for (int v = 0; v < p->layers[l].nr_versions; v++) {
			for (int c = 1; c <= p->nr_cores; c++)
				for (int k = 0; k < p->nr_levels; k++)
					ASSERT_EQ(*profile_latency_cell_const(p, l, v, c, k),
						  policy_costs_cell(&t.costs, l, v, c - 1, k));
			if (!best || *profile_latency_cell_const(p, l, v, p->nr_cores, 0) < best)
				best = *profile_latency_cell_const(p, l, v, p->nr_cores, 0);
		}
		solo += best;
	}
	ASSERT_EQ(solo, policy_costs_solo_ns(&t.costs, p->nr_cores));
	profile_free(p);
	policy_table_free(&t);
	/* a model with no profile in that cache: the command that makes one */
	ASSERT_EQ(-ENOENT, sim_table_load("resnet50", &dirs, &t, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "coloc-profile"));
}

/* The lines of out that name tenant, in order, into rows (what a run table says of it). */
static void tenant_rows(const char *out, const char *tenant, char *rows, size_t len)
{
	size_t n = 0;

	rows[0] = 0;
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		size_t ll = strchr(l, '\n') ? (size_t)(strchr(l, '\n') - l) + 1 : strlen(l);
		const char *t = strstr(l, tenant);

		if (t && t < l + ll && n + ll < len) {
			memcpy(rows + n, l, ll);
			n += ll;
			rows[n] = 0;
		}
	}
}

/*
 * coloc-sim --lanes N: to the policy the same as --executors N, wherever it
 * stands on the line (the cells of --policy, parsed before it, take it):
 * two ResNet-50 tenants at 15 ms on 64 cores, 150 QPS for 2 s, give the
 * same rows with --lanes 2 as with --executors 2, and other rows with one
 * lane (a tenant's queries wait for each other); --capacity says lanes and
 * bounds by them as by executors; both options together are bad usage.
 */
TEST(sim_cli__lanes_run_as_executors_for_the_policy)
{
	static const char *const opt[] = { "--lanes 2", "--executors 2", "--lanes 1" };
	char dir[512], bin[512], cmd[2048], out[16384], rows[3][4096], cap[2][16384];

	veltair_dir(dir, sizeof(dir));
	tu_bin("coloc-sim", bin, sizeof(bin));
	for (int i = 0; i < 3; i++) {
		snprintf(cmd, sizeof(cmd),
			 "%s --tables %s --policy coloc --tenant veltair:resnet50:15 "
			 "--tenant veltair:resnet50:15 --qps 150 --duration 2 --cores 64 %s",
			 bin, dir, opt[i]);
		ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
		tenant_rows(out, "veltair:ResNet50", rows[i], sizeof(rows[i]));
		ASSERT_NE(NULL, strstr(rows[i], "%")) TH_LOG("%s", out);
	}
	ASSERT_STREQ(rows[0], rows[1]);
	ASSERT_STRNE(rows[0], rows[2]);
	for (int i = 0; i < 2; i++) {
		snprintf(cmd, sizeof(cmd),
			 "%s --tables %s --capacity --tenant veltair:resnet50:15 "
			 "--tenant veltair:resnet50:15 --cores 64 %s",
			 bin, dir, opt[i]);
		ASSERT_EQ(0, tu_run(cmd, cap[i], sizeof(cap[i]))) TH_LOG("%s", cap[i]);
	}
	ASSERT_NE(NULL, strstr(cap[0], "2 lanes a tenant, over")) TH_LOG("%s", cap[0]);
	ASSERT_STREQ(strstr(cap[0], "over one at a time"), strstr(cap[1], "over one at a time"));
	snprintf(cmd, sizeof(cmd),
		 "%s --tables %s --tenant veltair:resnet50:15 --qps 10 --lanes 2 --executors 2",
		 bin, dir);
	ASSERT_EQ(2, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
}

/*
 * coloc-sim's full-socket slowdown is --full-slowdown's unless given: the
 * 2-core check's --full-slowdown 1.0 runs without the socket's part (its
 * header says full-socket 1.00, its rows are those of --socket-slowdown 1),
 * the default runs as --socket-slowdown 1.6, and at 64 cores the socket's
 * part moves two ResNet-50 tenants' rows (their blocks share the socket).
 */
TEST(sim_cli__socket_slowdown_is_the_full_slowdown_unless_given)
{
	static const char *const opt[] = { "", "--socket-slowdown 1.6", "--socket-slowdown 1",
					   "--full-slowdown 1.0",
					   "--full-slowdown 1.0 --socket-slowdown 1" };
	char dir[512], bin[512], cmd[2048], out[5][16384], rows[5][4096];

	veltair_dir(dir, sizeof(dir));
	tu_bin("coloc-sim", bin, sizeof(bin));
	for (int i = 0; i < 5; i++) {
		snprintf(cmd, sizeof(cmd),
			 "%s --tables %s --policy coloc --tenant veltair:resnet50:15 "
			 "--tenant veltair:resnet50:15 --qps 150 --duration 2 --cores 64 %s",
			 bin, dir, opt[i]);
		ASSERT_EQ(0, tu_run(cmd, out[i], sizeof(out[i]))) TH_LOG("%s", out[i]);
		tenant_rows(out[i], "veltair:ResNet50", rows[i], sizeof(rows[i]));
		ASSERT_NE(NULL, strstr(rows[i], "%")) TH_LOG("%s", out[i]);
	}
	ASSERT_NE(NULL, strstr(out[0], "full-domain slowdown 1.60, full-socket 1.60"))
	TH_LOG("%s", out[0]);
	ASSERT_NE(NULL, strstr(out[3], "full-domain slowdown 1.00, full-socket 1.00"))
	TH_LOG("%s", out[3]);
	ASSERT_STREQ(rows[0], rows[1]);
	ASSERT_STRNE(rows[0], rows[2]);
	ASSERT_STREQ(rows[3], rows[4]);
}

TEST_HARNESS_MAIN
