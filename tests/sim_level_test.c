// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the level a simulated round sees (sim/level.c): with the
 * default source, colocd's own estimator (policy/level_estimate.h) fed
 * with the simulated blocks, compared with the same functions driven by
 * hand; with SIM_LEVEL_MODEL, the interference model's slowdown left in
 * place. Then whole runs of coloc: without interference every block runs
 * at its norm, so every decision is priced at level 1.0 exactly; with
 * co-runners slowing each other, the estimate finds a level above 1.0 on
 * the free cores, where the model's sensor of the running blocks reads 1.0.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "kselftest_harness.h"
#include "sim.h"
#include "sim_hand_tables.h"

FIXTURE(sim_level)
{
	struct sim_level l;
	struct policy_config cfg;
	struct policy_signal core[POLICY_MAX_CPUS], dom[POLICY_MAX_CPUS];
	struct coloc_err err;
};

FIXTURE_SETUP(sim_level)
{
	struct sim_machine m = { .nr_cores = 4, .nr_sockets = 1, .llc_size = 2 };

	memset(&self->err, 0, sizeof(self->err));
	ASSERT_EQ(0, sim_machine_config(&m, POLICY_LATE_DROP, &self->cfg, &self->err));
	for (int c = 0; c < POLICY_MAX_CPUS; c++)
		self->core[c] =
			(struct policy_signal){ .live = POLICY_SIG_BUSY | POLICY_SIG_SLOWDOWN,
						.slowdown = 1.0 };
	self->l.core = NULL;
}

FIXTURE_TEARDOWN(sim_level)
{
	sim_level_free(&self->l);
}

/*
 * Blocks of tenant 1 on cores 0 and 1 (alone at their table time, then one
 * beside another tenant's at 3x): the run's estimate moves cores 0 and 1
 * exactly as the estimator driven by hand does, cores 2 and 3 stay at
 * 1.0, and the round's signals carry each core's level and its domain's
 * mean.
 */
TEST_F(sim_level, block__the_estimators_own_update_on_the_blocks_cores_only)
{
	struct policy_decision d = { .tenant = 1, .alone_ns = 2 * MS };
	struct policy_level_tenant t = { 0 };
	struct policy_level_core c = { 0 };
	struct policy_level_evidence ev;
	double want;

	ASSERT_EQ(0, sim_level_init(&self->l, SIM_LEVEL_BLOCKS, 4, &self->err));
	policy_cpuset_set(&d.cores, 0);
	policy_cpuset_set(&d.cores, 1);
	d.nr_cores = 2;
	for (int i = 0; i < POLICY_LEVEL_MIN_ALONE; i++) {
		sim_level_block(&self->l, &d, 2 * MS, true, 10 * MS);
		ASSERT_FALSE(policy_level_tenant_block(&t, 2, 2 * MS, 2 * MS, true, &ev));
	}
	EXPECT_FALSE(self->l.core[0].live);
	sim_level_block(&self->l, &d, 6 * MS, false, 20 * MS);
	ASSERT_TRUE(policy_level_tenant_block(&t, 2, 2 * MS, 6 * MS, false, &ev));
	policy_level_core_block(&c, &ev, 20 * MS);

	EXPECT_EQ(t.alone[1].norm, self->l.tenant[1].alone[1].norm);
	EXPECT_EQ(0.0, self->l.tenant[0].alone[1].norm);
	for (int k = 0; k < 2; k++) {
		EXPECT_EQ(c.slowdown, self->l.core[k].slowdown);
		EXPECT_EQ(c.var, self->l.core[k].var);
	}
	EXPECT_FALSE(self->l.core[2].live);
	EXPECT_GT(c.slowdown, 1.0);

	/* a round 100 ms later: the level of cores 0-1 aged, 1.0 on 2-3 */
	sim_level_signals(&self->l, &self->cfg, 120 * MS, self->core, self->dom);
	want = policy_level_core_level(&c, 120 * MS);
	EXPECT_EQ(want, self->core[0].slowdown);
	EXPECT_EQ(want, self->core[1].slowdown);
	EXPECT_EQ(1.0, self->core[2].slowdown);
	EXPECT_EQ(1.0, self->core[3].slowdown);
	EXPECT_LT(fabs(self->dom[self->cfg.llc[0]].slowdown - want), 1e-12);
	EXPECT_EQ(1.0, self->dom[self->cfg.llc[2]].slowdown);
}

/* With the model as the source, blocks teach nothing and the signals are left as the run set them. */
TEST_F(sim_level, model_source__blocks_teach_nothing_and_signals_stay)
{
	struct policy_decision d = { .tenant = 0, .alone_ns = 2 * MS };

	ASSERT_EQ(0, sim_level_init(&self->l, SIM_LEVEL_MODEL, 4, &self->err));
	policy_cpuset_set(&d.cores, 3);
	self->core[3].slowdown = 1.7;
	sim_level_block(&self->l, &d, 6 * MS, false, 10 * MS);
	EXPECT_FALSE(self->l.core[3].live);
	EXPECT_EQ(0.0, self->l.tenant[0].alone[0].norm);
	sim_level_signals(&self->l, &self->cfg, 20 * MS, self->core, self->dom);
	EXPECT_EQ(1.7, self->core[3].slowdown);
}

/* A decision naming a tenant or a core beyond the run's is no evidence (and no write). */
TEST_F(sim_level, block__out_of_range_tenant_and_cores_are_ignored)
{
	struct policy_decision d = { .tenant = POLICY_MAX_TENANTS, .alone_ns = 2 * MS };

	ASSERT_EQ(0, sim_level_init(&self->l, SIM_LEVEL_BLOCKS, 4, &self->err));
	policy_cpuset_set(&d.cores, 1);
	sim_level_block(&self->l, &d, 6 * MS, false, 10 * MS);
	EXPECT_FALSE(self->l.core[1].live);
	d.tenant = 0;
	policy_cpuset_zero(&d.cores);
	policy_cpuset_set(&d.cores, 9);
	for (int i = 0; i < POLICY_LEVEL_MIN_ALONE; i++)
		sim_level_block(&self->l, &d, 2 * MS, true, 10 * MS);
	sim_level_block(&self->l, &d, 6 * MS, false, 10 * MS);
	EXPECT_GT(self->l.tenant[0].alone[0].norm, 0.0);
	for (int c = 0; c < 4; c++)
		EXPECT_FALSE(self->l.core[c].live);
}

/* ---- whole runs --------------------------------------------------------------------- */

struct levels_seen {
	int nr;
	double max;
};

static void watch_level(void *ctx, const struct sim_block_record *b)
{
	struct levels_seen *s = ctx;

	s->nr++;
	if (b->d->level > s->max)
		s->max = b->d->level;
}

/*
 * coloc with two tenants on two cores of one LLC domain, 60 QPS for 5 s:
 * the most a decision was priced at, and how many blocks ran.
 */
static int run_levels(const char *policy, enum sim_level_source source, double full_slowdown,
		      double socket_slowdown, int llc, struct levels_seen *seen,
		      struct coloc_err *err)
{
	static const struct sim_tenant t[2] = {
		{ .costs = &one_layer, .qos_ns = 200 * MS, .share = 1 },
		{ .costs = &one_layer, .qos_ns = 200 * MS, .share = 1 },
	};
	struct sim_params p = {
		.policy = policy_find(policy),
		.machine = { .nr_cores = 2, .nr_sockets = 1, .llc_size = llc },
		.late = POLICY_LATE_DROP,
		.tenants = t,
		.nr_tenants = 2,
		.qps = 60,
		.duration_ns = 5000 * MS,
		.seed = 3,
		.interference = { .full_slowdown = full_slowdown,
				  .socket_slowdown = socket_slowdown },
		.max_queued = SIM_DEFAULT_MAX_QUEUED,
		.level_source = source,
		.on_block = watch_level,
		.ctx = seen,
	};
	struct sim_result r;

	*seen = (struct levels_seen){ 0 };
	return sim_run(&p, &r, err);
}

/*
 * Without interference a block takes exactly its table time, so every
 * tenant's norm is 1.0, every block's evidence 1.0, and the estimate never
 * leaves 1.0: every decision is priced alone. With blocks slowing each
 * other 3x in a full domain, the estimate sees a level above 1.0 on the
 * free cores, where coloc looks, and never one above what the model gives.
 * The model's own slowdown is a sensor of the block running on a core: a
 * free core reads 1.0, so with it coloc priced every block alone (what the
 * simulator did before it ran colocd's estimator).
 */
TEST_F(sim_level, run__coloc_priced_alone_without_interference_above_with_it)
{
	struct levels_seen quiet, est, model;

	ASSERT_EQ(0, run_levels("coloc", SIM_LEVEL_BLOCKS, 1.0, 0, 2, &quiet, &self->err))
	TH_LOG("%s", self->err.msg);
	ASSERT_GT(quiet.nr, 100);
	EXPECT_EQ(1.0, quiet.max);
	ASSERT_EQ(0, run_levels("coloc", SIM_LEVEL_BLOCKS, 3.0, 0, 2, &est, &self->err))
	TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, run_levels("coloc", SIM_LEVEL_MODEL, 3.0, 0, 2, &model, &self->err))
	TH_LOG("%s", self->err.msg);
	TH_LOG("highest level priced: %.2f estimated from blocks, %.2f from the model", est.max,
	       model.max);
	EXPECT_GT(est.max, 1.0);
	EXPECT_LE(est.max, 3.0);
	ASSERT_GT(model.nr, 100);
	EXPECT_EQ(1.0, model.max);
}

/*
 * The same two cores in LLC domains of one core each: no domain is shared,
 * so without the socket's part (1.0) every decision is priced alone; with
 * a full-socket slowdown of 3.0 colocd's estimate sees the co-runner on the
 * socket's other core, a level above 1.0 and at most 3.0. coloc-shared:
 * coloc runs this table's queries alone there (10 ms on one core against
 * 10 x 3.0 / 2 = 15 ms of the socket's time beside another), so no block
 * has a co-runner (policy/coloc_alone.c).
 */
TEST_F(sim_level, run__the_estimate_sees_the_sockets_part_past_the_llc_domain)
{
	struct levels_seen quiet, est;

	ASSERT_EQ(0, run_levels("coloc-shared", SIM_LEVEL_BLOCKS, 3.0, 1.0, 1, &quiet, &self->err))
	TH_LOG("%s", self->err.msg);
	ASSERT_GT(quiet.nr, 100);
	EXPECT_EQ(1.0, quiet.max);
	ASSERT_EQ(0, run_levels("coloc-shared", SIM_LEVEL_BLOCKS, 3.0, 3.0, 1, &est, &self->err))
	TH_LOG("%s", self->err.msg);
	TH_LOG("highest level priced: %.2f, socket's part only", est.max);
	ASSERT_GT(est.nr, 100);
	EXPECT_GT(est.max, 1.0);
	EXPECT_LE(est.max, 3.0);
}

TEST_HARNESS_MAIN
