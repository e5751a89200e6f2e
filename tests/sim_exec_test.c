// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the simulator's executor model: its factor, dispatch and core
 * count, the small blocks' extra time (quantile function and mean), warm-up
 * by idle time (one copy of the weights for lanes, one per executor process),
 * the machine's slow spells (one factor at one moment; the
 * process's correlation and its fit), a collapsed block not slowed by
 * sharing, and the fit on hand-made block logs.
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

/* ---- the executor model (sim/README.md, "The executor model") ------------------------- */

/* One layer of 0.5 ms on 1 core: a block below SIM_EXEC_MIN_ALONE_US. */
static const uint64_t short_layer_ns[] = { 500000 };
static const struct policy_costs short_layer = {
	.nr_layers = 1,
	.nr_versions = 1,
	.nr_core_counts = 1,
	.nr_levels = 1,
	.core_counts = one_core,
	.latency_ns = short_layer_ns,
};

/*
 * fcfs, no spread, no warm-up term. One core, the 10 ms layer at factor
 * 1.5 and 200 us of dispatch: queries at 0 and 0 end at 15.2 and 30.4 ms.
 * Two cores, the two-layer model (6 ms on 2 cores) with factor 2.0 and
 * 100 us at 2 cores: one block, 12.1 ms. With only the 1-core row fitted,
 * the 2-core block takes that row: 6 x 1.5 + 0.2 = 9.2 ms. The 0.5 ms
 * layer is a small block: 0.5 x 2 + 0.1 (its extra) + 0.05 (its dispatch)
 * = 1.15 ms; the 5 ms dispatch of long blocks is not charged.
 */
TEST_F(sim, run__exec_model_factor_dispatch_and_core_count)
{
	static const double both[] = { 0, 0 }, one[] = { 0 };
	static const int who[] = { 0, 0 };
	struct sim_exec_timing em = { .collapse_x = 1 };
	struct sim_tenant t = { .costs = &one_layer, .qos_ns = 100 * MS, .share = 1, .exec = &em };
	struct mem_trace mt;
	struct sim_params p;

	em.factor[1] = 1.5;
	em.dispatch_ns[1] = 200000;
	mem_trace_init(&mt, 2, both, who);
	p = small_params(policy_find("fcfs"), 1, 1, &t, 1, &mt.trace, self->w);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(15200000, record_of(self->w, 0)->end_ns);
	ASSERT_EQ(30400000, record_of(self->w, 1)->end_ns);

	self->w->nr_q = self->w->nr_b = 0;
	t.costs = &two_layers;
	mem_trace_init(&mt, 1, one, who);
	p = small_params(policy_find("fcfs"), 2, 2, &t, 1, &mt.trace, self->w);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(2, self->w->b[0].nr_cores);
	ASSERT_EQ(9200000, record_of(self->w, 0)->end_ns);
	em.factor[2] = 2.0;
	em.dispatch_ns[2] = 100000;
	self->w->nr_q = self->w->nr_b = 0;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(12100000, record_of(self->w, 0)->end_ns);

	self->w->nr_q = self->w->nr_b = 0;
	em = (struct sim_exec_timing){ .collapse_x = 1 };
	em.factor[1] = 2.0;
	em.dispatch_ns[1] = 5 * MS;
	em.small_n[1] = 20;
	for (int q = 0; q < SIM_EXEC_SMALL_Q; q++)
		em.small_extra_ns[1][q] = 100000;
	em.small_dispatch_ns[1] = 50000;
	t.costs = &short_layer;
	p = small_params(policy_find("fcfs"), 1, 1, &t, 1, &mt.trace, self->w);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(1150000, record_of(self->w, 0)->end_ns);
	/* an extra of -1 ms would leave nothing: the floor, 1.2 x 0.5 ms, + 50 us */
	for (int q = 0; q < SIM_EXEC_SMALL_Q; q++)
		em.small_extra_ns[1][q] = -1000000;
	em.small_floor[1] = 1.2;
	self->w->nr_q = self->w->nr_b = 0;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(650000, record_of(self->w, 0)->end_ns);
	em.small_extra_ns[1][3] = -2000000; /* falls: not a quantile function */
	ASSERT_EQ(-EINVAL, sim_run(&p, &self->r, &self->err));
	em.small_extra_ns[1][3] = -1000000;
	em.collapse_x = 0.5;
	ASSERT_EQ(-EINVAL, sim_run(&p, &self->r, &self->err));
}

/* The quantile function of a small block's extra, linear between its points, and its mean. */
TEST(sim_exec__small_extra_quantile_function_and_mean)
{
	double q[SIM_EXEC_SMALL_Q];

	/* 0 up to p 0.9, 1000 from p 0.95: the mean is 0.05 x 500 + 0.05 x 1000 */
	for (int i = 0; i < SIM_EXEC_SMALL_Q; i++)
		q[i] = sim_exec_small_p[i] <= 0.9 ? 0 : 1000;
	ASSERT_EQ(0, sim_exec_small_extra(q, 0));
	ASSERT_EQ(0, sim_exec_small_extra(q, 0.9));
	ASSERT_LT(fabs(sim_exec_small_extra(q, 0.925) - 500), 1e-9);
	ASSERT_EQ(1000, sim_exec_small_extra(q, 0.95));
	ASSERT_EQ(1000, sim_exec_small_extra(q, 1));
	ASSERT_EQ(0, sim_exec_small_extra(q, -1));
	ASSERT_EQ(1000, sim_exec_small_extra(q, 2));
	ASSERT_LT(fabs(sim_exec_small_mean(q) - 75), 1e-9);
	/* a uniform extra from 0 to 1000: linear everywhere, the mean 500 */
	for (int i = 0; i < SIM_EXEC_SMALL_Q; i++)
		q[i] = 1000 * sim_exec_small_p[i];
	ASSERT_LT(fabs(sim_exec_small_extra(q, 0.33) - 330), 1e-9);
	ASSERT_LT(fabs(sim_exec_small_mean(q) - 500), 1e-9);
}

/*
 * Small blocks are drawn from their extra's quantile function: 4000
 * queries of the 0.5 ms layer, 10 ms apart (none waits), factor 2, no
 * dispatch, the extra 0 up to p 0.9 and 1 ms from p 0.95. A query takes 1 ms
 * plus its extra: more than 1.5 ms with probability 0.075 (u > 0.925), the
 * mean extra 75 us; a fixed extra (the mean) would give none above 1.5 ms.
 */
TEST_F(sim, run__small_blocks_draw_their_extra)
{
	enum { N = 4000 };
	static uint64_t at[N];
	static int who[N];
	struct sim_exec_timing em = { .collapse_x = 1 };
	struct sim_tenant t = {
		.costs = &short_layer, .qos_ns = 100 * MS, .share = 1, .exec = &em
	};
	struct sim_trace trace = { .time_ns = at, .tenant = who, .nr = N };
	struct sim_params p;
	double sum = 0;
	int slow = 0;

	for (int i = 0; i < N; i++)
		at[i] = (uint64_t)i * 10 * MS;
	em.factor[1] = 2.0;
	em.small_n[1] = 20;
	for (int i = 0; i < SIM_EXEC_SMALL_Q; i++)
		em.small_extra_ns[1][i] = sim_exec_small_p[i] <= 0.9 ? 0 : 1000000;
	p = small_params(policy_find("fcfs"), 1, 1, &t, 1, &trace, self->w);
	p.duration_ns = (uint64_t)N * 10 * MS;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(N, self->w->nr_q);
	for (int i = 0; i < N; i++) {
		double took = (double)(self->w->q[i].end_ns - self->w->q[i].arrival_ns);

		ASSERT_LE(1000000, took);
		ASSERT_GE(2000000, took);
		slow += took > 1500000;
		sum += took - 1000000;
	}
	/* 0.075 +- 4 standard errors (0.0042 each) */
	ASSERT_LT(fabs((double)slow / N - 0.075), 0.017) TH_LOG("%d of %d above 1.5 ms", slow, N);
	ASSERT_LT(fabs(sum / N - 75000), 15000) TH_LOG("mean extra %.0f ns", sum / N);
}

/*
 * The warm-up term: factor 1, cold 1.0 (a cold block takes twice the
 * table), warm-up 10 ms. q0 at 0 (the tenant never ran: cold) takes 20 ms;
 * q1 at 20 ms, right as q0 ends, is warm: 10 ms, ends at 30; q2 at 40 ms,
 * after 10 ms idle, takes 10 x (1 + 1 - exp(-1)) = 16.321 ms: ends at
 * 56.321 ms.
 */
TEST_F(sim, run__exec_model_warm_up_by_idle_time)
{
	static const double at[] = { 0, 20, 40 };
	static const int who[] = { 0, 0, 0 };
	struct sim_exec_timing em = { .collapse_x = 1, .warm_ns = 10 * MS };
	struct sim_tenant t = { .costs = &one_layer, .qos_ns = 100 * MS, .share = 1, .exec = &em };
	struct mem_trace mt;
	struct sim_params p;
	double q2;

	em.factor[1] = 1.0;
	em.cold[1] = 1.0;
	mem_trace_init(&mt, 3, at, who);
	p = small_params(policy_find("fcfs"), 1, 1, &t, 1, &mt.trace, self->w);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(20 * MS, record_of(self->w, 0)->end_ns);
	ASSERT_EQ(30 * MS, record_of(self->w, 1)->end_ns);
	q2 = 40e6 + 10e6 * (2.0 - exp(-1.0));
	ASSERT_GE(1.0, fabs((double)record_of(self->w, 2)->end_ns - q2));
}

/*
 * Lanes share one copy of the weights, executor processes each have their
 * own (docs/design/lanes.md). The warm-up test's model (factor 1, cold 1.0,
 * warm-up 10 ms), static on 2 cores with LLC domains of one (no
 * interference), one tenant on 2 executors: q0 at 0 on executor 0, cold,
 * ends at 20 ms; q1 at 21 takes executor 0 again (colocd's first with the
 * fewest slots), 1 ms idle: 10 x (2 - exp(-0.1)) ms; q2 at 22 finds
 * executor 0 busy and goes to executor 1, which never ran. As lanes its
 * weights are the ones q0 warmed 2 ms before: 10 x (2 - exp(-0.2)) ms, ends
 * at 33.813 ms; as a process of its own they are cold: 20 ms, ends at 42.
 */
TEST_F(sim, run__lanes_share_the_weights_warmth_executors_do_not)
{
	static const double at[] = { 0, 21, 22 };
	static const int who[] = { 0, 0, 0 };
	struct sim_exec_timing em = { .collapse_x = 1, .warm_ns = 10 * MS };
	struct sim_tenant t = { .costs = &one_layer, .qos_ns = 100 * MS, .share = 1, .exec = &em };
	struct mem_trace mt;
	struct sim_params p;
	double q1 = 21e6 + 10e6 * (2.0 - exp(-0.1));

	em.factor[1] = 1.0;
	em.cold[1] = 1.0;
	mem_trace_init(&mt, 3, at, who);
	for (int lanes = 0; lanes < 2; lanes++) {
		self->w->nr_q = self->w->nr_b = 0;
		p = small_params(policy_find("static"), 2, 1, &t, 1, &mt.trace, self->w);
		p.executors = 2;
		p.lanes = lanes;
		ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
		ASSERT_EQ(3, self->w->nr_q);
		ASSERT_EQ(20 * MS, record_of(self->w, 0)->end_ns);
		ASSERT_GE(1.0, fabs((double)record_of(self->w, 1)->end_ns - q1));
		ASSERT_GE(1.0, fabs((double)record_of(self->w, 2)->end_ns -
				    (lanes ? 22e6 + 10e6 * (2.0 - exp(-0.2)) : 42e6)))
		TH_LOG("%s: q2 ends at %llu ns", lanes ? "lanes" : "processes",
		       (unsigned long long)record_of(self->w, 2)->end_ns);
	}
}

/*
 * The machine's slow spells: static, two tenants on a core each (LLC
 * domains of one: no interference), a 10 ms layer each at factor 1 with a
 * spread of sigma 0.5, both queries at 0. With rho 1 the spread is all the
 * machine's: both blocks start at one moment and take the same time, not
 * the table's. With rho 0 each draws its own: two different times.
 */
TEST_F(sim, run__speed_spells_give_blocks_at_one_moment_one_factor)
{
	static const double both[] = { 0, 0 };
	static const int who[] = { 0, 1 };
	struct sim_exec_timing em = { .collapse_x = 1 };
	struct sim_tenant t[2] = {
		{ .costs = &one_layer, .qos_ns = 1000 * MS, .share = 1, .exec = &em },
		{ .costs = &one_layer, .qos_ns = 1000 * MS, .share = 1, .exec = &em },
	};
	struct mem_trace mt;
	struct sim_params p;
	uint64_t end0;

	em.factor[1] = 1.0;
	em.sigma[1] = 0.5;
	mem_trace_init(&mt, 2, both, who);
	p = small_params(policy_find("static"), 2, 1, t, 2, &mt.trace, self->w);
	p.speed_rho = 1;
	p.speed_tau_ns = 1000 * MS;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(2, self->r.tenant[0].completed + self->r.tenant[1].completed);
	end0 = record_of(self->w, 0)->end_ns;
	ASSERT_EQ(end0, record_of(self->w, 1)->end_ns);
	ASSERT_NE(10 * MS, end0);

	self->w->nr_q = self->w->nr_b = 0;
	p.speed_rho = 0;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_NE(record_of(self->w, 0)->end_ns, record_of(self->w, 1)->end_ns);
}

/* A standard normal from a 64-bit LCG (Knuth's MMIX constants), apart from coloc_rng. */
static double lcg_normal(uint64_t *x)
{
	double u[2];

	for (int i = 0; i < 2; i++) {
		*x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
		u[i] = ((double)(*x >> 11) + 1) / 9007199254740993.0;
	}
	return sqrt(-2 * log(u[0])) * cos(2 * M_PI * u[1]);
}

/*
 * The spells' process: unit variance, and an autocorrelation of
 * exp(-lag / tau) (tau 200 ms: 0.905 at 20 ms, 0.368 at 200 ms), over
 * 2000 s sampled every 10 ms. The fit: two tenants' blocks alternating
 * every 10 ms, z = sqrt(0.3) c + sqrt(0.7) n, c an AR(1) of 300 ms drawn
 * here (not by speed.c), n each block's own: rho 0.3 and tau 300 ms come
 * back; with no common part, rho about 0.
 */
TEST(sim_speed__process_correlates_as_exp_and_fit_recovers_rho_and_tau)
{
	enum { N = 200000, M = 60000 };
	static double z[N];
	static struct sim_speed_sample smp[M];
	struct sim_speed sp;
	struct sim_speed_acc acc = { 0 };
	struct sim_speed_fit fit;
	double sum = 0, sum2 = 0, lag2 = 0, lag20 = 0, var, c = 0, keep = exp(-10.0 / 300);
	uint64_t x = 12345;

	sim_speed_init(&sp, 7, 0.5, 200 * MS);
	for (int i = 0; i < N; i++) {
		z[i] = sim_speed_z(&sp, (uint64_t)i * 10 * MS);
		sum += z[i];
		sum2 += z[i] * z[i];
	}
	var = sum2 / N - (sum / N) * (sum / N);
	for (int i = 0; i + 20 < N; i++) {
		lag2 += z[i] * z[i + 2];
		lag20 += z[i] * z[i + 20];
	}
	ASSERT_GT(0.05, fabs(var - 1)) TH_LOG("variance %.3f", var);
	ASSERT_GT(0.03, fabs(lag2 / (N - 20) / var - exp(-0.1)));
	ASSERT_GT(0.05, fabs(lag20 / (N - 20) / var - exp(-1.0)))
	TH_LOG("lag 200 ms %.3f", lag20 / (N - 20) / var);
	sim_speed_init(&sp, 7, 0, 200 * MS);
	ASSERT_EQ(0, sim_speed_z(&sp, 5000 * MS));

	for (int i = 0; i < M; i++) {
		c = c * keep + sqrt(1 - keep * keep) * lcg_normal(&x);
		smp[i] = (struct sim_speed_sample){ .mid_ms = 10.0 * i,
						    .tenant = i % 2,
						    .z = sqrt(0.3) * c +
							 sqrt(0.7) * lcg_normal(&x) };
	}
	sim_speed_acc_add(&acc, smp, M);
	sim_speed_acc_solve(&acc, &fit);
	ASSERT_LT(1000, fit.pairs);
	ASSERT_GT(0.05, fabs(fit.rho - 0.3)) TH_LOG("rho %.3f", fit.rho);
	ASSERT_LE(200, fit.tau_ms) TH_LOG("tau %.0f ms", fit.tau_ms);
	ASSERT_GE(500, fit.tau_ms) TH_LOG("tau %.0f ms", fit.tau_ms);
	ASSERT_GT(0.1, fabs(fit.corr[0] - 0.3)) TH_LOG("corr under 50 ms %.3f", fit.corr[0]);

	memset(&acc, 0, sizeof(acc));
	for (int i = 0; i < M; i++)
		smp[i].z = lcg_normal(&x);
	sim_speed_acc_add(&acc, smp, M);
	sim_speed_acc_solve(&acc, &fit);
	ASSERT_GT(0.03, fit.rho) TH_LOG("rho %.3f", fit.rho);
}

/*
 * Shared cores (os), one core, two 10 ms queries at 0, factor 1. Tenant 0
 * always collapses (p 1, x 3): 30 ms, not slowed by tenant 1. Tenant 1
 * never does: it shares the core with tenant 0 all along, at half speed,
 * and ends at 20 ms; tenant 0 still ends at 30. With a penalty of 1.5
 * tenant 1 runs at 1 / (2 x 1.5) and ends at 30 ms too; alone, one query
 * of tenant 1 is not penalised (10 ms). Under fcfs (cores not shared)
 * nothing collapses: 10 and 20 ms.
 */
TEST_F(sim, run__exec_model_collapsed_block_is_not_slowed_by_sharing)
{
	static const double both[] = { 0, 0 }, one[] = { 0 };
	static const int who[] = { 0, 1 }, second[] = { 1 };
	struct sim_exec_timing collapses = { .collapse_p = 1, .collapse_x = 3 },
			       stays = { .collapse_x = 1 };
	struct sim_tenant t[2] = {
		{ .costs = &one_layer, .qos_ns = 100 * MS, .share = 1, .exec = &collapses },
		{ .costs = &one_layer, .qos_ns = 100 * MS, .share = 1, .exec = &stays },
	};
	struct mem_trace mt;
	struct sim_params p;

	collapses.factor[1] = stays.factor[1] = 1.0;
	mem_trace_init(&mt, 2, both, who);
	p = small_params(policy_find("os"), 1, 1, t, 2, &mt.trace, self->w);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(30 * MS, record_of(self->w, 0)->end_ns);
	ASSERT_EQ(20 * MS, record_of(self->w, 1)->end_ns);

	self->w->nr_q = self->w->nr_b = 0;
	p.shared_penalty = 1.5;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(30 * MS, record_of(self->w, 0)->end_ns);
	ASSERT_EQ(30 * MS, record_of(self->w, 1)->end_ns);

	self->w->nr_q = self->w->nr_b = 0;
	mem_trace_init(&mt, 1, one, second);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(10 * MS, record_of(self->w, 0)->end_ns);

	self->w->nr_q = self->w->nr_b = 0;
	mem_trace_init(&mt, 2, both, who);
	p = small_params(policy_find("fcfs"), 1, 1, t, 2, &mt.trace, self->w);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(10 * MS, record_of(self->w, 0)->end_ns);
	ASSERT_EQ(20 * MS, record_of(self->w, 1)->end_ns);
}

static void write_block(FILE *f, double end_ms, const char *tenant, int cores, double alone_us,
			double measured_us, double round_trip_us)
{
	fprintf(f, "%.3f\t%s\t1\t0\t1\t%d\t0\t1.000\t%.1f\t%.1f\t%.1f\t%.1f\t1.0\t1\n", end_ms,
		tenant, cores, alone_us, alone_us, measured_us, round_trip_us);
}

/*
 * Block logs made by hand for this test only (never a measurement), a
 * second apart so that every block is cold and none overlaps another.
 * temporal (cores of its own): 21 blocks of m on 2 cores, 2 ms in the
 * table, measured 1.4 (x10), 1.5, 1.6 (x10) times that, round trip 100 us
 * more; plus 20 small ones (0.5 ms table, 1.2 ms measured, 30 us more):
 * factor = the median 1.5; no warm-up term (every block is as cold);
 * dispatch 100 us; the upper quantiles of ratio / factor are all 1.6 / 1.5,
 * so sigma = log(1.6 / 1.5) x sum(z) / sum(z^2) over z = 0.6745, 1.2816,
 * 1.6449, 2.3263; 20 small blocks of 0.5 ms in the table, measured 0.8 to
 * 1.75 ms by 50 us (30 us more): extra 50-1000 us, mean 525, the
 * nearest-rank p50 (10th) 500; floor 0.8 / 0.5; dispatch 30 us. os (cores shared): 20 blocks of m alone, 12 at 1.5 x the table
 * (as pinned) and 8 at 4.5 (3 x pinned): collapse p 8 / 20, x 3; nothing
 * overlapped, so no penalty is fitted. One run's log: the os run against
 * the temporal run's rows; the temporal run alone; a run not logged.
 */
TEST_F(sim, exec_fit__factor_spread_dispatch_and_collapse_on_hand_made_logs)
{
	char dir[] = "/tmp/coloc-sim-exec-XXXXXX", path[256];
	static const double z[] = { 0.6745, 1.2816, 1.6449, 2.3263 };
	struct sim_exec_fit fit;
	struct sim_exec_timing em;
	double sz = 0, szz = 0, t = 0;
	FILE *f;

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/blocks-light-temporal.tsv", dir);
	f = fopen(path, "w");
	ASSERT_NE(NULL, f);
	fputs("end_ms\ttenant\tquery\tfirst\tlast\tcores\tcorunners\tlevel\talone_us\t"
	      "predicted_us\tmeasured_us\tround_trip_us\tswitch_us\tok\n",
	      f);
	for (int i = 0; i < 21; i++) {
		double r = i < 10 ? 1.4 : i == 10 ? 1.5 : 1.6;

		write_block(f, t += 1000, "m", 2, 2000, 2000 * r, 2000 * r + 100);
	}
	for (int i = 0; i < 20; i++)
		write_block(f, t += 1000, "m", 2, 500, 800 + 50 * i, 830 + 50 * i);
	fclose(f);
	snprintf(path, sizeof(path), "%s/blocks-light-os.tsv", dir);
	f = fopen(path, "w");
	ASSERT_NE(NULL, f);
	fputs("end_ms\ttenant\tquery\tfirst\tlast\tcores\tcorunners\tlevel\talone_us\t"
	      "predicted_us\tmeasured_us\tround_trip_us\tswitch_us\tok\n",
	      f);
	for (int i = 0; i < 20; i++)
		write_block(f, t += 1000, "m", 2, 2000, i < 12 ? 3000 : 9000, 9100);
	fclose(f);

	ASSERT_EQ(0, sim_exec_fit_dir(dir, &fit, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(2, fit.nr_files);
	ASSERT_EQ(61, fit.nr_blocks);
	ASSERT_EQ(1, fit.nr_rows);
	ASSERT_STREQ("m", fit.row[0].model);
	ASSERT_EQ(2, fit.row[0].cores);
	ASSERT_EQ(21, fit.row[0].n);
	ASSERT_GE(1e-9, fabs(fit.row[0].factor - 1.5));
	ASSERT_GE(1e-9, fabs(fit.row[0].cold));
	ASSERT_GE(1e-6, fabs(fit.row[0].dispatch_us - 100));
	for (int i = 0; i < 4; i++) {
		sz += z[i];
		szz += z[i] * z[i];
	}
	ASSERT_GE(1e-9, fabs(fit.row[0].sigma - log(1.6 / 1.5) * sz / szz));
	ASSERT_EQ(20, fit.row[0].n_small);
	ASSERT_GE(1e-6, fabs(fit.row[0].small_extra_us - 525));
	ASSERT_GE(1e-6, fabs(fit.row[0].small_q_us[0] - 50));
	ASSERT_GE(1e-6, fabs(sim_exec_small_extra(fit.row[0].small_q_us, 0.5) - 500));
	ASSERT_GE(1e-6, fabs(sim_exec_small_extra(fit.row[0].small_q_us, 1) - 1000));
	ASSERT_GE(1e-9, fabs(fit.row[0].small_floor - 1.6));
	ASSERT_GE(1e-6, fabs(fit.row[0].small_dispatch_us - 30));
	ASSERT_EQ(1, fit.nr_shared);
	ASSERT_EQ(20, fit.shared[0].n_alone);
	ASSERT_EQ(0, fit.shared[0].n_overlapped);
	ASSERT_GE(1e-9, fabs(fit.shared[0].collapse_p - 0.4));
	ASSERT_GE(1e-9, fabs(fit.shared[0].collapse_x - 3.0));
	ASSERT_EQ(0, fit.penalty);
	/* one tenant: no pairs of different tenants, no spells fitted */
	ASSERT_EQ(0, fit.speed.pairs);
	ASSERT_EQ(0, fit.speed.rho);

	ASSERT_EQ(0, sim_exec_timing_from_fit(&fit, "m", &em, &self->err));
	ASSERT_EQ(1.5, em.factor[2]);
	ASSERT_EQ(0, em.factor[1]);
	ASSERT_EQ(100000, em.dispatch_ns[2]);
	ASSERT_EQ(20, em.small_n[2]);
	ASSERT_GE(1e-6, fabs(sim_exec_small_extra(em.small_extra_ns[2], 0.5) - 500000));
	ASSERT_GE(1e-9, fabs(em.small_floor[2] - 1.6));
	ASSERT_EQ(30000, em.small_dispatch_ns[2]);
	ASSERT_EQ(0.4, em.collapse_p);
	ASSERT_EQ(-ENOENT, sim_exec_timing_from_fit(&fit, "other", &em, &self->err));
	sim_exec_fit_free(&fit);

	/* one run's log: the os run's collapse against the temporal run's rows; none for heavy */
	ASSERT_EQ(0, sim_exec_fit_log(dir, "light", "os", &fit, &self->err))
	TH_LOG("%s", self->err.msg);
	ASSERT_EQ(2, fit.nr_files);
	ASSERT_EQ(1, fit.nr_shared);
	ASSERT_GE(1e-9, fabs(fit.shared[0].collapse_p - 0.4));
	sim_exec_fit_free(&fit);
	ASSERT_EQ(0, sim_exec_fit_log(dir, "light", "temporal", &fit, &self->err))
	TH_LOG("%s", self->err.msg);
	ASSERT_EQ(1, fit.nr_files);
	ASSERT_EQ(0, fit.nr_shared);
	ASSERT_GE(1e-9, fabs(fit.row[0].factor - 1.5));
	sim_exec_fit_free(&fit);
	ASSERT_EQ(-ENOENT, sim_exec_fit_log(dir, "heavy", "temporal", &fit, &self->err));

	unlink(path);
	snprintf(path, sizeof(path), "%s/blocks-light-temporal.tsv", dir);
	unlink(path);
	ASSERT_EQ(-ENOENT, sim_exec_fit_dir(dir, &fit, &self->err));
	rmdir(dir);
}

/*
 * A plan-ahead command's blocks (colocd runs a query's following blocks in
 * one command while it holds no other query) are logged together, each
 * with the command's round trip. Hand-made: 10 queries of 3 blocks in one
 * command each (layers [0, 1), [1, 2), [2, 3) on 2 cores, 2 ms in the
 * table, measured 3 ms, the command's round trip 9.3 ms), then 10 queries
 * of one block each (3 ms, 3.1 ms): every block's dispatch is 100 us, the
 * command's 300 us left shared by its three. Counted per block as
 * round trip - measured, the commands' blocks were 6.3 ms each and the
 * fitted dispatch 4.75 ms.
 */
TEST_F(sim, exec_fit__a_commands_round_trip_is_shared_by_its_blocks)
{
	char dir[] = "/tmp/coloc-sim-exec-XXXXXX", path[256];
	struct sim_exec_fit fit;
	double t = 0;
	FILE *f;

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/blocks-light-coloc.tsv", dir);
	f = fopen(path, "w");
	ASSERT_NE(NULL, f);
	fputs("end_ms\ttenant\tquery\tfirst\tlast\tcores\tcorunners\tlevel\talone_us\t"
	      "predicted_us\tmeasured_us\tround_trip_us\tswitch_us\tok\n",
	      f);
	for (int q = 1; q <= 20; q++) {
		t += 1000;
		for (int l = 0; l < (q <= 10 ? 3 : 1); l++)
			fprintf(f,
				"%.3f\tm\t%d\t%d\t%d\t2\t0\t1.000\t2000.0\t2000.0\t3000.0\t%.1f\t1.0\t1\n",
				t + 0.001 * l, q, l, l + 1, q <= 10 ? 9300.0 : 3100.0);
	}
	fclose(f);
	ASSERT_EQ(0, sim_exec_fit_dir(dir, &fit, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(40, fit.nr_blocks);
	ASSERT_EQ(1, fit.nr_rows);
	ASSERT_GE(1e-9, fabs(fit.row[0].factor - 1.5));
	ASSERT_GE(1e-6, fabs(fit.row[0].dispatch_us - 100))
	TH_LOG("dispatch %.1f us", fit.row[0].dispatch_us);
	sim_exec_fit_free(&fit);
	unlink(path);
	rmdir(dir);
}

TEST_HARNESS_MAIN
