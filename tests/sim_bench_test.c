// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of what the simulator reads and writes beside bench-qos: the mixes
 * file, the fidelity comparison on a hand-made results file, cell names,
 * the crossing of every load point, points files, replicas, the served
 * load per mix tenant, and the search of bench-qos's points.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "policy_impl.h"
#include "fidelity.h"
#include "profile.h"
#include "sim.h"
#include "testutil.h"
#include "sim_fixture.h"

/* ---- the mixes file and the fidelity check ------------------------------------------------- */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

TEST_F(sim, mixes_load__reads_mixes_and_names_a_bad_line)
{
	char path[] = "/tmp/coloc-sim-mixes-XXXXXX";
	struct sim_mixes *mx = calloc(1, sizeof(*mx));
	const struct sim_mix *m;
	int fd = mkstemp(path);

	ASSERT_NE(NULL, mx);
	ASSERT_LE(0, fd);
	close(fd);
	write_file(path, "# comment\nlight  a b\tc\n\nheavy d\n");
	ASSERT_EQ(0, sim_mixes_load(path, mx, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(2, mx->nr);
	m = sim_mixes_find(mx, "light");
	ASSERT_NE(NULL, m);
	ASSERT_EQ(3, m->nr_models);
	ASSERT_STREQ("c", m->model[2]);
	ASSERT_EQ(1, sim_mixes_find(mx, "heavy")->nr_models);
	ASSERT_EQ(NULL, sim_mixes_find(mx, "medium"));
	write_file(path, "light a\nempty\n");
	ASSERT_EQ(-EINVAL, sim_mixes_load(path, mx, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, ":2:"));
	write_file(path, "light a\nlight b\n");
	ASSERT_EQ(-EINVAL, sim_mixes_load(path, mx, &self->err));
	unlink(path);
	free(mx);
}

/*
 * A results.tsv made by hand for this test only (never a measurement):
 * columns in another order than bench-qos writes them, plus one it does not;
 * x's p99 is inf (queries unanswered) and z was not measured (NA: skipped).
 * Simulated: light a 100, b 50, c 30; heavy a 10, b 20.
 * Measured:  light a 90, b 60, c 20; heavy a 25, b 12 (and x, not simulated).
 * Ratios 100/90 = 1.111 (within 15 %), 50/60 = 0.833 (not), 30/20 = 1.5
 * (not), 10/25 = 0.4 (not), 20/12 = 1.667 (not). light ranks a > b > c
 * both ways (3 pairs, none discordant); heavy ranks b > a simulated and
 * a > b measured (1 pair, discordant).
 */
TEST_F(sim, fidelity_compare__ratios_tolerance_and_ranking_on_a_hand_made_file)
{
	char path[] = "/tmp/coloc-sim-results-XXXXXX";
	struct sim_qps_table sim = { 0 }, meas;
	struct sim_fidelity f;
	int fd = mkstemp(path);

	ASSERT_LE(0, fd);
	close(fd);
	write_file(path, "policy\tmix\tnote\tp99_over_solo\tqos_qps\n"
			 "a\tlight\t-\t1.1\t90\nb\tlight\t-\t1.2\t60\nc\tlight\t-\t1.3\t20\n"
			 "a\theavy\t-\t1.1\t25\nb\theavy\t-\t1.0\t12\nx\theavy\t-\tinf\t5\n"
			 "z\theavy\t-\tNA\tNA\n");
	ASSERT_EQ(0, sim_qps_table_load_tsv(path, &meas, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(6, meas.nr);
	ASSERT_EQ(60.0, sim_qps_table_find(&meas, "light", "b")->qps);
	ASSERT_EQ(1.2, sim_qps_table_find(&meas, "light", "b")->p99_over_solo);
	ASSERT_TRUE(isinf(sim_qps_table_find(&meas, "heavy", "x")->p99_over_solo));
	ASSERT_EQ(NULL, sim_qps_table_find(&meas, "heavy", "z"));
	ASSERT_EQ(0, sim_qps_table_add(&sim, "light", "a", 100, 0, &self->err));
	ASSERT_EQ(0, sim_qps_table_add(&sim, "light", "b", 50, 0, &self->err));
	ASSERT_EQ(0, sim_qps_table_add(&sim, "light", "c", 30, 0, &self->err));
	/* c over seeds: 15 .. 35, which holds the measured 20; every other cell one seed */
	sim.cell[2].qps_lo = 15;
	sim.cell[2].qps_hi = 35;
	ASSERT_EQ(0, sim_qps_table_add(&sim, "heavy", "a", 10, 0, &self->err));
	ASSERT_EQ(0, sim_qps_table_add(&sim, "heavy", "b", 20, 0, &self->err));
	ASSERT_EQ(0, sim_qps_table_add(&sim, "heavy", "y", 7, 0, &self->err));
	ASSERT_EQ(-EEXIST, sim_qps_table_add(&sim, "heavy", "y", 8, 0, &self->err));
	ASSERT_EQ(0, sim_fidelity_compare(&sim, &meas, 0.15, &f, &self->err));
	ASSERT_EQ(6, f.nr_rows);
	ASSERT_EQ(5, f.nr_compared);
	ASSERT_EQ(1, f.nr_within);
	ASSERT_EQ(1, f.nr_in_range);
	ASSERT_TRUE(f.row[2].in_range);
	ASSERT_FALSE(f.row[0].in_range);
	ASSERT_LT(fabs(f.row[0].ratio - 100.0 / 90), 1e-12);
	ASSERT_TRUE(f.row[0].within);
	ASSERT_LT(fabs(f.row[1].ratio - 50.0 / 60), 1e-12);
	ASSERT_FALSE(f.row[1].within);
	ASSERT_LT(fabs(f.row[4].ratio - 20.0 / 12), 1e-12);
	ASSERT_EQ(NULL, f.row[5].measured);
	ASSERT_EQ(2, f.nr_mixes);
	ASSERT_STREQ("light", f.mix[0].mix);
	ASSERT_EQ(3, f.mix[0].pairs);
	ASSERT_EQ(0, f.mix[0].discordant);
	ASSERT_TRUE(f.mix[0].same_ranking);
	ASSERT_EQ(1, f.mix[1].pairs);
	ASSERT_EQ(1, f.mix[1].discordant);
	ASSERT_FALSE(f.mix[1].same_ranking);
	ASSERT_EQ(1, f.nr_mixes_same);
	sim_fidelity_free(&f);
	sim_qps_table_free(&meas);
	/* a header without qos_qps is named (err keeps its first error: a fresh one) */
	self->err = (struct coloc_err){ 0 };
	write_file(path, "mix\tpolicy\tqps\tp99_over_solo\nlight\ta\t1\t1\n");
	ASSERT_EQ(-EINVAL, sim_qps_table_load_tsv(path, &meas, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "qos_qps"));
	/* a line that is not numbers is named */
	self->err = (struct coloc_err){ 0 };
	write_file(path, "mix\tpolicy\tqos_qps\tp99_over_solo\nlight\ta\tfast\t1\n");
	ASSERT_EQ(-EINVAL, sim_qps_table_load_tsv(path, &meas, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, ":2:"));
	/*
	 * bench-qos --repeats: each search's figure; the cell's range is theirs.
	 * light a: measured 85 .. 120 meets the simulated 100; light c: 36 .. 50
	 * misses the seeds' 15 .. 35
	 */
	write_file(path, "mix\tpolicy\tqos_qps\tp99_over_solo\tsearches\n"
			 "light\ta\t90\t1\t85,90,120\nlight\tc\t40\t1\t50,40,36\n");
	ASSERT_EQ(0, sim_qps_table_load_tsv(path, &meas, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(85.0, sim_qps_table_find(&meas, "light", "a")->qps_lo);
	ASSERT_EQ(120.0, sim_qps_table_find(&meas, "light", "a")->qps_hi);
	ASSERT_EQ(36.0, sim_qps_table_find(&meas, "light", "c")->qps_lo);
	ASSERT_EQ(0, sim_fidelity_compare(&sim, &meas, 0.15, &f, &self->err));
	ASSERT_EQ(2, f.nr_compared);
	ASSERT_TRUE(f.row[0].ranges_meet);
	ASSERT_FALSE(f.row[2].ranges_meet);
	ASSERT_EQ(1, f.nr_ranges_meet);
	sim_fidelity_free(&f);
	sim_qps_table_free(&meas);
	self->err = (struct coloc_err){ 0 };
	write_file(path, "mix\tpolicy\tqos_qps\tp99_over_solo\tsearches\nlight\ta\t9\t1\t9,x\n");
	ASSERT_EQ(-EINVAL, sim_qps_table_load_tsv(path, &meas, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "searches"));
	sim_qps_table_free(&sim);
	unlink(path);
}

/* bench-qos's cell names: POLICY, POLICY@N; what is not one is named. */
TEST_F(sim, cell_parse__policy_and_executors_as_bench_qos_names_them)
{
	static const char *const bad[] = { "coloc@", "coloc@0", "coloc@65",  "coloc@2x", "coloc@-1",
					   "coloc:", "coloc:B", "coloc:b:c", "coloc:b@2" };
	const struct policy_entry *e = NULL;
	int executors = -1;

	ASSERT_EQ(0, sim_cell_parse("model-wise", &e, &executors, &self->err));
	ASSERT_EQ(policy_find("model-wise"), e);
	ASSERT_EQ(0, executors);
	ASSERT_EQ(0, sim_cell_parse("coloc@2", &e, &executors, &self->err));
	ASSERT_EQ(policy_find("coloc"), e);
	ASSERT_EQ(2, executors);
	ASSERT_EQ(0, sim_cell_parse("coloc-noversions@64", &e, &executors, &self->err));
	ASSERT_EQ(policy_find("coloc-noversions"), e);
	ASSERT_EQ(64, executors);
	/* a replica, CELL:TAG: the cell's policy and executors */
	ASSERT_EQ(0, sim_cell_parse("temporal:b", &e, &executors, &self->err));
	ASSERT_EQ(policy_find("temporal"), e);
	ASSERT_EQ(0, executors);
	ASSERT_EQ(0, sim_cell_parse("coloc@3:r2", &e, &executors, &self->err));
	ASSERT_EQ(policy_find("coloc"), e);
	ASSERT_EQ(3, executors);
	ASSERT_EQ(-ENOENT, sim_cell_parse("nosuch@2", &e, &executors, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "'nosuch'")) TH_LOG("%s", self->err.msg);
	self->err = (struct coloc_err){ 0 };
	ASSERT_EQ(-ENOENT, sim_cell_parse("nosuch:b", &e, &executors, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "'nosuch'")) TH_LOG("%s", self->err.msg);
	self->err = (struct coloc_err){ 0 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		ASSERT_EQ(-EINVAL, sim_cell_parse(bad[i], &e, &executors, &self->err))
		TH_LOG("%s", bad[i]);
		ASSERT_NE(NULL, strstr(self->err.msg, "POLICY@N")) TH_LOG("%s", self->err.msg);
		self->err = (struct coloc_err){ 0 };
	}
}

/* A load point of two tenants: (counted, within) each. */
static struct sim_load_point two(double qps, int search, uint32_t n0, uint32_t w0, uint32_t n1,
				 uint32_t w1)
{
	return (struct sim_load_point){ .qps = qps,
					.search = search,
					.nr_tenants = 2,
					.counted = { n0, n1 },
					.within = { w0, w1 } };
}

/*
 * The crossing, worked by hand: the worst tenant's share per load, a
 * non-increasing fit in log load, interpolated where it crosses 95 %.
 */
TEST_F(sim, crossing__worst_tenant_fitted_non_increasing_and_interpolated)
{
	struct sim_load_point p[4];
	double q = -1;

	/* 10: 1.00, 20: 0.97 (tenant 1's 97 of 100), 40: 0.90: between 20 and 40, 2/7 of the way */
	p[0] = two(10, 1, 100, 100, 100, 100);
	p[1] = two(20, 1, 100, 99, 100, 97);
	p[2] = two(40, 1, 100, 90, 100, 95);
	ASSERT_EQ(0, sim_crossing_qps(p, 3, 0.95, &q, &self->err));
	ASSERT_LT(fabs(q - 20 * pow(2, 2.0 / 7)), 1e-9) TH_LOG("%f", q);
	/* any order: the points are sorted by load */
	p[3] = p[0];
	p[0] = p[2];
	p[2] = p[3];
	ASSERT_EQ(0, sim_crossing_qps(p, 3, 0.95, &q, &self->err));
	ASSERT_LT(fabs(q - 20 * pow(2, 2.0 / 7)), 1e-9);
	/*
	 * 10: 0.96 below 20: 0.98 violates the order: one step of both at their
	 * mean, 0.97 at log(sqrt(200)); then 40: 0.90
	 */
	p[0] = two(10, 1, 100, 96, 100, 100);
	p[1] = two(20, 1, 100, 98, 100, 100);
	p[2] = two(40, 1, 100, 90, 100, 100);
	ASSERT_EQ(0, sim_crossing_qps(p, 3, 0.95, &q, &self->err));
	ASSERT_LT(fabs(q - exp(log(sqrt(200)) + (log(40) - log(sqrt(200))) * 2 / 7)), 1e-9);
	/*
	 * the same load of two searches is one point: 19 of 20 and 20 of 20 are
	 * 39 of 40, 0.975; at 30 both searches' 0.90
	 */
	p[0] = two(20, 1, 20, 19, 20, 20);
	p[1] = two(20, 2, 20, 20, 20, 20);
	p[2] = two(30, 1, 20, 18, 20, 20);
	p[3] = two(30, 2, 20, 18, 20, 20);
	ASSERT_EQ(0, sim_crossing_qps(p, 4, 0.95, &q, &self->err));
	ASSERT_LT(fabs(q - exp(log(20) + log(1.5) * 0.025 / 0.075)), 1e-9);
	/* within QoS at every load: the highest; below at the lowest: 0; nothing: 0 */
	p[0] = two(10, 1, 100, 100, 100, 100);
	p[1] = two(20, 1, 100, 96, 100, 100);
	ASSERT_EQ(0, sim_crossing_qps(p, 2, 0.95, &q, &self->err));
	ASSERT_EQ(20.0, q);
	p[0] = two(10, 1, 100, 94, 100, 100);
	p[1] = two(20, 1, 100, 90, 100, 100);
	ASSERT_EQ(0, sim_crossing_qps(p, 2, 0.95, &q, &self->err));
	ASSERT_EQ(0.0, q);
	ASSERT_EQ(0, sim_crossing_qps(p, 0, 0.95, &q, &self->err));
	ASSERT_EQ(0.0, q);
	/* a tenant with nothing counted says nothing: the other decides */
	p[0] = two(10, 1, 100, 100, 0, 0);
	p[1] = two(20, 1, 100, 90, 0, 0);
	ASSERT_EQ(0, sim_crossing_qps(p, 2, 0.95, &q, &self->err));
	ASSERT_LT(fabs(q - 10 * sqrt(2)), 1e-9);
}

/*
 * bench-qos's points.tsv, made by hand for this test: rows of one point
 * summed per tenant (within_qos x sent), each (search, load) once, the
 * searches counted; the crossing over both searches and each alone.
 */
TEST_F(sim, loads__points_tsv_per_cell_and_its_crossing)
{
	char path[] = "/tmp/coloc-sim-loads-XXXXXX";
	struct sim_loads_table t;
	struct sim_qps_table c, only = { 0 };
	const struct sim_cell_loads *cell;
	int fd = mkstemp(path);

	ASSERT_GE(fd, 0);
	close(fd);
	write_file(path, "mix\tpolicy\tphase\ttotal_qps\tduration_s\ttenant\tqps\tsent\tcompleted"
			 "\twithin_qos\tp99_ms\tsolo_ms\tqos_ms\tpass\tsearch\texecutors\n"
			 "light\tcoloc\tmedium\t10\t8\ta\t5\t100\t100\t1\t1\t1\t2\t1\t1\t1\n"
			 "light\tcoloc\tmedium\t10\t8\tb\t5\t100\t100\t1\t1\t1\t2\t1\t1\t1\n"
			 "light\tcoloc\tgrow\t20\t8\ta\t10\t200\t200\t0.9\t1\t1\t2\t0\t1\t1\n"
			 "light\tcoloc\tgrow\t20\t8\tb\t10\t200\t200\t1\t1\t1\t2\t0\t1\t1\n"
			 "light\tcoloc\tmedium\t10\t8\ta\t5\t100\t100\t1\t1\t1\t2\t1\t2\t1\n"
			 "light\tcoloc\tmedium\t10\t8\tb\t5\t100\t100\t1\t1\t1\t2\t1\t2\t1\n"
			 "light\tcoloc\tgrow\t20\t8\ta\t10\t200\t200\t1\t1\t1\t2\t1\t2\t1\n"
			 "light\tcoloc\tgrow\t20\t8\tb\t10\t200\t200\t0.95\t1\t1\t2\t1\t2\t1\n"
			 "light\tstatic\tmedium\t10\t8\ta\t5\t100\t100\t0.5\t1\t1\t2\t0\t1\t1\n");
	ASSERT_EQ(0, sim_loads_load_tsv(path, &t, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(2, t.nr);
	cell = sim_loads_find(&t, "light", "coloc");
	ASSERT_NE(NULL, cell);
	ASSERT_EQ(2, cell->searches);
	ASSERT_EQ(2, cell->nr_tenants);
	ASSERT_EQ(4, cell->nr);
	ASSERT_EQ(20.0, cell->load[1].qps);
	ASSERT_EQ(1, cell->load[1].search);
	ASSERT_EQ(180u, cell->load[1].within[0]);
	ASSERT_EQ(200u, cell->load[1].within[1]);
	ASSERT_EQ(190u, cell->load[3].within[1]);
	ASSERT_EQ(NULL, sim_loads_find(&t, "heavy", "coloc"));
	/*
	 * pooled: 10 all within; 20: tenant a 380 of 400, b 390 of 400: 0.95,
	 * not below, so the highest load; search 1 alone crosses between 10
	 * and 20 at 1/2 of the way (1.0 to 0.9), search 2 never falls below
	 */
	ASSERT_EQ(0, sim_loads_crossing(&t, NULL, 0.95, &c, &self->err));
	ASSERT_EQ(2, c.nr);
	ASSERT_EQ(20.0, sim_qps_table_find(&c, "light", "coloc")->qps);
	ASSERT_LT(fabs(sim_qps_table_find(&c, "light", "coloc")->qps_lo - 10 * sqrt(2)), 1e-9);
	ASSERT_EQ(20.0, sim_qps_table_find(&c, "light", "coloc")->qps_hi);
	ASSERT_EQ(0.0, sim_qps_table_find(&c, "light", "static")->qps);
	sim_qps_table_free(&c);
	/* only the cells another table has */
	ASSERT_EQ(0, sim_qps_table_add(&only, "light", "static", 1, 0, &self->err));
	ASSERT_EQ(0, sim_loads_crossing(&t, &only, 0.95, &c, &self->err));
	ASSERT_EQ(1, c.nr);
	ASSERT_STREQ("static", c.cell[0].policy);
	sim_qps_table_free(&c);
	sim_qps_table_free(&only);
	sim_loads_free(&t);
	/* a run before --repeats: no search column, one search */
	write_file(path, "mix\tpolicy\ttotal_qps\ttenant\tsent\twithin_qos\n"
			 "light\tcoloc\t10\ta\t100\t1\n");
	ASSERT_EQ(0, sim_loads_load_tsv(path, &t, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(1, sim_loads_find(&t, "light", "coloc")->searches);
	ASSERT_EQ(1, sim_loads_find(&t, "light", "coloc")->load[0].search);
	sim_loads_free(&t);
	/* a row that is not numbers is named */
	write_file(path, "mix\tpolicy\ttotal_qps\ttenant\tsent\twithin_qos\tsearch\n"
			 "light\tcoloc\t10\ta\t100\t1.5\t1\n");
	ASSERT_EQ(-EINVAL, sim_loads_load_tsv(path, &t, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, ":2:")) TH_LOG("%s", self->err.msg);
	unlink(path);
}

/*
 * A cell measured twice (CELL, CELL:TAG) is split into two tables under one
 * name, which sim_fidelity_compare compares as it would a simulation; a
 * replica without its cell, and the cells without one, are left out.
 */
TEST_F(sim, split_replicas__cell_against_its_replica)
{
	struct sim_qps_table meas = { 0 }, cells, replicas;
	struct sim_fidelity f;

	ASSERT_EQ(0, sim_qps_table_add(&meas, "light", "coloc", 100, 2, &self->err));
	ASSERT_EQ(0, sim_qps_table_add(&meas, "light", "coloc:b", 80, 3, &self->err));
	ASSERT_EQ(0, sim_qps_table_add(&meas, "light", "temporal", 50, 2, &self->err));
	ASSERT_EQ(0, sim_qps_table_add(&meas, "light", "temporal:b", 55, 2, &self->err));
	ASSERT_EQ(0, sim_qps_table_add(&meas, "light", "static", 10, 2, &self->err));
	ASSERT_EQ(0, sim_qps_table_add(&meas, "heavy", "coloc:b", 9, 2, &self->err));
	meas.cell[1].qps_lo = 70;
	meas.cell[1].qps_hi = 90;
	ASSERT_EQ(0, sim_qps_table_split_replicas(&meas, &cells, &replicas, &self->err));
	ASSERT_EQ(2, cells.nr);
	ASSERT_EQ(2, replicas.nr);
	ASSERT_EQ(100.0, sim_qps_table_find(&cells, "light", "coloc")->qps);
	ASSERT_EQ(80.0, sim_qps_table_find(&replicas, "light", "coloc")->qps);
	ASSERT_EQ(70.0, sim_qps_table_find(&replicas, "light", "coloc")->qps_lo);
	ASSERT_EQ(90.0, sim_qps_table_find(&replicas, "light", "coloc")->qps_hi);
	ASSERT_EQ(55.0, sim_qps_table_find(&replicas, "light", "temporal")->qps);
	ASSERT_EQ(NULL, sim_qps_table_find(&replicas, "heavy", "coloc"));
	ASSERT_EQ(0, sim_fidelity_compare(&replicas, &cells, 0.15, &f, &self->err));
	ASSERT_EQ(2, f.nr_compared);
	/* 80 / 100 is out of +-15 %, 55 / 50 within; coloc above temporal both times */
	ASSERT_EQ(1, f.nr_within);
	ASSERT_FALSE(f.row[0].within);
	ASSERT_TRUE(f.row[1].within);
	ASSERT_EQ(1, f.nr_mixes_same);
	sim_fidelity_free(&f);
	sim_qps_table_free(&cells);
	sim_qps_table_free(&replicas);
	sim_qps_table_free(&meas);
}

/*
 * A points.tsv made by hand for this test only: bench-qos's columns in
 * another order, two load points of the same tenants (kept once), then a
 * file whose second point gives another QoS (an error, named).
 */
TEST_F(sim, served_load__qos_and_solo_per_mix_tenant_once)
{
	char path[] = "/tmp/coloc-sim-points-XXXXXX";
	struct sim_served sv;
	const struct sim_served_tenant *st;
	int fd = mkstemp(path);

	ASSERT_LE(0, fd);
	close(fd);
	write_file(path, "policy\tmix\ttenant\tqos_ms\tsolo_ms\tpass\n"
			 "os\tlight\tmobilenet_v2\t12\t5.941\t0\n"
			 "os\tlight\tssd_mobilenet\t37\t18.014\t0\n"
			 "coloc\tlight\tmobilenet_v2\t12\t5.941\t1\n"
			 "os\theavy\tresnet50\t91\t45.1\t1\n");
	ASSERT_EQ(0, sim_served_load_tsv(path, &sv, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(3, sv.nr);
	st = sim_served_find(&sv, "light", "mobilenet_v2");
	ASSERT_NE(NULL, st);
	ASSERT_EQ(12.0, st->qos_ms);
	ASSERT_EQ(5.941, st->solo_ms);
	ASSERT_EQ(91.0, sim_served_find(&sv, "heavy", "resnet50")->qos_ms);
	ASSERT_EQ(NULL, sim_served_find(&sv, "heavy", "mobilenet_v2"));
	sim_served_free(&sv);
	write_file(path, "mix\ttenant\tsolo_ms\tqos_ms\n"
			 "light\ta\t5\t10\nlight\ta\t5\t11\n");
	ASSERT_EQ(-EINVAL, sim_served_load_tsv(path, &sv, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, ":3"));
	self->err = (struct coloc_err){ 0 };
	write_file(path, "mix\ttenant\tsolo_ms\n");
	ASSERT_EQ(-EINVAL, sim_served_load_tsv(path, &sv, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "qos_ms"));
	unlink(path);
}

/*
 * The search as bench-qos --quick runs it: one tenant of the one-layer
 * model (10 ms) on one core, solo 10 ms, so saturation is 100 QPS and the
 * first point 30 QPS (durations 3 s: 15 queries take under 3 s at >= 5
 * QPS; warm-up 1 s).
 *  - QoS 100 s: everything passes, growing x 2: 30, 60, 120, 240; 480 is
 *    past 4 x saturation: QoS-QPS 240, 4 points, no failure.
 *  - QoS 2 s: at 120 QPS the queue grows by 20 queries/s, latencies reach
 *    ~0.8 s in 4 s (pass); at 240 by 140/s (~5.6 s: fail); the bisection's
 *    one point, sqrt(120 x 240) = 169.706 (rounded as the script prints
 *    it), grows it by ~70/s, 2 s after ~2.9 s, a quarter of the queries
 *    late: fail. Then the confirmation walk (--confirm 2, points 6 s): 120
 *    passes, up by 169.706 / 120 to 169.706, which fails, down to 120,
 *    confirmed already: QoS-QPS 120, 7 points.
 *  - QoS 5 ms (below the solo latency): 30 fails, then 15, 7.5, 3.75;
 *    1.875 is below saturation / 50: QoS-QPS 0, 4 points.
 */
TEST_F(sim, search_bench_qos__the_scripts_points_and_verdict)
{
	struct sim_tenant t = { .costs = &one_layer, .qos_ns = 100000 * MS, .share = 1 };
	struct sim_params p = small_params(policy_find("fcfs"), 1, 1, &t, 1, NULL, self->w);
	struct sim_search_result *s = calloc(1, sizeof(*s));
	static const double solo_ms[] = { 10 };

	ASSERT_NE(NULL, s);
	p.on_query = NULL;
	p.on_block = NULL;
	p.late = POLICY_LATE_SERVE;
	ASSERT_EQ(0, sim_search_bench_qos(&p, &sim_bq_quick, solo_ms, 0.95, s, &self->err))
	TH_LOG("%s", self->err.msg);
	ASSERT_EQ(240.0, s->qos_qps);
	ASSERT_EQ(0.0, s->fail_qps);
	ASSERT_EQ(4, s->points);
	/* every point is kept for the crossing, in the order run: the last is the pass at 240 */
	ASSERT_EQ(4, s->nr_loads);
	ASSERT_EQ(240.0, s->load[3].qps);
	ASSERT_EQ(1, s->load[3].nr_tenants);
	ASSERT_EQ(s->at_best.tenant[0].arrived, s->load[3].counted[0]);
	ASSERT_EQ(s->at_best.tenant[0].within, s->load[3].within[0]);
	t.qos_ns = 2000 * MS;
	ASSERT_EQ(0, sim_search_bench_qos(&p, &sim_bq_quick, solo_ms, 0.95, s, &self->err));
	ASSERT_EQ(120.0, s->qos_qps);
	ASSERT_EQ(169.706, s->fail_qps);
	ASSERT_EQ(7, s->points);
	ASSERT_FALSE(s->load[4].confirm);
	ASSERT_TRUE(s->load[5].confirm);
	ASSERT_EQ(120.0, s->load[5].qps);
	ASSERT_EQ(169.706, s->load[6].qps);
	ASSERT_EQ(s->at_best.tenant[0].arrived, s->load[2].counted[0]);
	t.qos_ns = 5 * MS;
	ASSERT_EQ(0, sim_search_bench_qos(&p, &sim_bq_quick, solo_ms, 0.95, s, &self->err));
	ASSERT_EQ(0.0, s->qos_qps);
	ASSERT_EQ(3.75, s->fail_qps);
	ASSERT_EQ(4, s->points);
	free(s);
}

TEST_HARNESS_MAIN
