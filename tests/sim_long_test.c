// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Long runs of the simulator: random runs of every policy with an
 * independent check that no core ever runs two blocks at once and that
 * every query is accounted for, the QoS-QPS search (deterministic per seed,
 * none found when QoS is below the solo latency), and a speed sanity run
 * (printed, not asserted).
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

/* ---- long random runs --------------------------------------------------------------------- */

static int cmp_start(const void *a, const void *b)
{
	const struct block_rec *x = a, *y = b;

	return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

/*
 * Every policy (and the os rule), random mixes and loads over many seeds,
 * late queries dropped or served. sim_run itself refuses a round that fails
 * policy_check_output; here, independently, the blocks recorded are sorted
 * by start and no core may start a block before its previous one ended
 * (unless the policy shares cores), and every counted arrival is
 * completed, dropped or left unserved.
 */
TEST_F_TIMEOUT(sim, run__random_runs_never_oversubscribe_a_core, 600)
{
	char dir[4096];
	struct policy_table tab[2];
	struct coloc_rng rng;
	static uint64_t busy_until[POLICY_MAX_CPUS];
	const struct policy_entry *pols[64];
	int runs = 0, nr_pols = 0;

	/* every policy of the table, os (cores shared) among them */
	for (int i = 0; policy_entry_at(i) && nr_pols < 64; i++)
		pols[nr_pols++] = policy_entry_at(i);

	veltair_dir(dir, sizeof(dir));
	ASSERT_EQ(0, sim_table_load("veltair:resnet50", &(struct sim_table_dirs){ .veltair = dir },
				    &tab[0], &self->err));
	ASSERT_EQ(0, sim_table_load("veltair:googlenet", &(struct sim_table_dirs){ .veltair = dir },
				    &tab[1], &self->err));
	coloc_rng_seed(&rng, 2026);
	for (int seed = 0; seed < 12; seed++) {
		struct sim_tenant t[8];
		int nr_t = 1 + (int)(coloc_rng_next(&rng) % 8);
		int cores = 8 * (1 + (int)(coloc_rng_next(&rng) % 8));

		for (int i = 0; i < nr_t; i++)
			t[i] = (struct sim_tenant){
				.costs = &tab[coloc_rng_next(&rng) % 2].costs,
				.qos_ns = (5 + coloc_rng_next(&rng) % 30) * MS,
				.share = 1 + (double)(coloc_rng_next(&rng) % 4),
			};
		for (int i = 0; i < nr_pols; i++) {
			const struct policy_entry *pol = pols[i];
			struct sim_params p = small_params(pol, cores, 4, t, nr_t, NULL, self->w);

			p.qps = 20 + (double)(coloc_rng_next(&rng) % 400);
			p.duration_ns = 3000 * MS;
			p.seed = (uint64_t)seed;
			p.late = coloc_rng_next(&rng) % 2 ? POLICY_LATE_SERVE : POLICY_LATE_DROP;
			p.on_query = NULL;
			self->w->nr_b = 0;
			ASSERT_EQ(0, sim_run(&p, &self->r, &self->err))
			TH_LOG("%s: %s", pol->name, self->err.msg);
			ASSERT_FALSE(self->w->overflow);
			qsort(self->w->b, (size_t)self->w->nr_b, sizeof(*self->w->b), cmp_start);
			memset(busy_until, 0, sizeof(busy_until));
			for (int b = 0; b < self->w->nr_b; b++) {
				const struct block_rec *br = &self->w->b[b];

				ASSERT_EQ(br->nr_cores, policy_cpuset_count(&br->cores));
				/* a policy that shares cores may: the kernel time-shares them */
				if (pol->shares_cores)
					continue;
				for (int c = policy_cpuset_next(&br->cores, 0); c >= 0;
				     c = policy_cpuset_next(&br->cores, c + 1)) {
					ASSERT_LT(c, cores);
					ASSERT_LE(busy_until[c], br->start_ns);
					busy_until[c] = br->end_ns;
				}
			}
			for (int k = 0; k < nr_t; k++) {
				const struct sim_tenant_result *tr = &self->r.tenant[k];

				ASSERT_EQ(tr->arrived, tr->completed + tr->dropped + tr->unserved);
				ASSERT_LE(tr->within, tr->completed);
			}
			runs++;
		}
	}
	TH_LOG("%d runs, no core oversubscribed", runs);
	policy_table_free(&tab[0]);
	policy_table_free(&tab[1]);
}

/* The search twice with one seed: the same answer, and a bracket that passes below, fails above. */
TEST_F_TIMEOUT(sim, search_qos_qps__deterministic_per_seed, 600)
{
	char dir[4096];
	struct policy_table rn;
	struct sim_tenant t;
	struct sim_search_result *a = calloc(2, sizeof(*a));
	struct sim_params p;

	ASSERT_NE(NULL, a);
	veltair_dir(dir, sizeof(dir));
	ASSERT_EQ(0, sim_table_load("veltair:resnet50", &(struct sim_table_dirs){ .veltair = dir },
				    &rn, &self->err));
	t = (struct sim_tenant){ .costs = &rn.costs, .qos_ns = 15 * MS, .share = 1 };
	p = small_params(policy_find("temporal"), 64, 4, &t, 1, NULL, self->w);
	p.on_query = NULL;
	p.on_block = NULL;
	p.duration_ns = 5000 * MS;
	p.seed = 5;
	ASSERT_EQ(0, sim_search_qos_qps(&p, SIM_QOS_FRACTION, 16, 0.01, &a[0], &self->err));
	ASSERT_EQ(0, sim_search_qos_qps(&p, SIM_QOS_FRACTION, 16, 0.01, &a[1], &self->err));
	ASSERT_EQ(a[0].qos_qps, a[1].qos_qps);
	ASSERT_EQ(a[0].points, a[1].points);
	ASSERT_LT(a[0].qos_qps, a[0].fail_qps);
	ASSERT_LE(a[0].fail_qps - a[0].qos_qps, 0.01 * a[0].fail_qps);
	ASSERT_GE(a[0].at_best.tenant[0].fraction_within, SIM_QOS_FRACTION);
	/* one query at a time at 4.3 ms each: the machine saturates at 1 / 4.3 ms = 233 QPS */
	ASSERT_GT(a[0].qos_qps, 0);
	ASSERT_LT(a[0].qos_qps, 1000.0 / 4.3);
	TH_LOG("temporal, ResNet-50 alone, 64 cores: QoS-QPS %.1f in %d runs", a[0].qos_qps,
	       a[0].points);
	free(a);
	policy_table_free(&rn);
}

/*
 * A QoS of 3 ms, below ResNet-50's fastest whole model alone (4.3 ms at 56
 * cores): no load passes, however low, and the run kept to show it is the
 * first one, where no query was answered within its QoS: each is served
 * late (4.3 ms, before its deadline plus its QoS, 6 ms) unless it waited
 * behind another past that, and then dropped.
 */
TEST_F_TIMEOUT(sim, search_qos_qps__none_when_qos_is_below_the_solo_latency, 600)
{
	char dir[4096];
	struct policy_table rn;
	struct sim_tenant t;
	struct sim_search_result *s = calloc(1, sizeof(*s));
	struct sim_params p;

	ASSERT_NE(NULL, s);
	veltair_dir(dir, sizeof(dir));
	ASSERT_EQ(0, sim_table_load("veltair:resnet50", &(struct sim_table_dirs){ .veltair = dir },
				    &rn, &self->err));
	t = (struct sim_tenant){ .costs = &rn.costs, .qos_ns = 3 * MS, .share = 1 };
	p = small_params(policy_find("temporal"), 64, 4, &t, 1, NULL, self->w);
	p.on_query = NULL;
	p.on_block = NULL;
	p.duration_ns = 5000 * MS;
	p.warmup_ns = 500 * MS;
	ASSERT_EQ(0, sim_search_qos_qps(&p, SIM_QOS_FRACTION, 16, 0.01, s, &self->err));
	ASSERT_EQ(0, s->qos_qps);
	ASSERT_EQ(16, s->at_fail_qps);
	ASSERT_LT(0, s->at_fail.tenant[0].arrived);
	ASSERT_EQ(0, s->at_fail.tenant[0].within);
	ASSERT_LT(s->at_fail.tenant[0].dropped, s->at_fail.tenant[0].completed);
	ASSERT_EQ(s->at_fail.tenant[0].arrived, s->at_fail.tenant[0].completed +
							s->at_fail.tenant[0].dropped +
							s->at_fail.tenant[0].unserved);
	free(s);
	policy_table_free(&rn);
}

/* One minute of simulated load on 64 cores with 8 tenants, per policy: printed, not asserted. */
TEST_F_TIMEOUT(sim, run__speed_one_minute_64_cores_8_tenants, 600)
{
	char dir[4096];
	struct policy_table tab[2];
	struct sim_tenant t[8];

	veltair_dir(dir, sizeof(dir));
	ASSERT_EQ(0, sim_table_load("veltair:resnet50", &(struct sim_table_dirs){ .veltair = dir },
				    &tab[0], &self->err));
	ASSERT_EQ(0, sim_table_load("veltair:googlenet", &(struct sim_table_dirs){ .veltair = dir },
				    &tab[1], &self->err));
	for (int i = 0; i < 8; i++)
		t[i] = (struct sim_tenant){ .costs = &tab[i % 2].costs,
					    .qos_ns = 15 * MS,
					    .share = 1 };
	for (int i = 0; policy_entry_at(i); i++) {
		struct sim_params p = small_params(policy_entry_at(i), 64, 4, t, 8, NULL, self->w);

		p.qps = 400;
		p.duration_ns = 60000 * MS;
		p.on_query = NULL;
		p.on_block = NULL;
		ASSERT_EQ(0, sim_run(&p, &self->r, &self->err));
		TH_LOG("%s: 60 s simulated at 400 QPS in %.3f s wall (%llu events, decide p50 "
		       "%.2f us p99 %.2f us; loaded machine)",
		       policy_entry_at(i)->name, self->r.wall_s, (unsigned long long)self->r.events,
		       self->r.decide_p50_us, self->r.decide_p99_us);
	}
	policy_table_free(&tab[0]);
	policy_table_free(&tab[1]);
}

TEST_HARNESS_MAIN
