// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Property tests over many random seeds: every policy of the table, driven
 * through arrivals and completions with its own core bookkeeping, never
 * grants a core twice or while busy (os, which shares cores by design,
 * instead never has two blocks of one tenant in flight), and with late
 * queries served every query finishes; and a coloc instance that kept its
 * reads decides as a new one would while tenants come and the level moves.
 */
#include <errno.h>
#include <math.h>
#include <string.h>
#include "kselftest_harness.h"
#include "policy.h"
#include "policy_impl.h"

/* ---- the property test ---------------------------------------------------- */

#define SIM_CORES 64
#define SIM_TENANTS 16
#define SIM_QUERIES 48
#define SIM_MODELS 4
#define SIM_LAYERS 6

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

struct sim_model {
	int counts[8];
	uint64_t ns[SIM_LAYERS * 3 * 8];
	struct policy_costs m;
};

/* A random table: core counts 1 and some larger ones, some versions missing at some counts. */
static void sim_model_init(struct sim_model *sm, uint64_t *seed)
{
	int nc = 1;

	sm->counts[0] = 1;
	for (int c = 2; c <= SIM_CORES && nc < 8; c++)
		if (rnd(seed) % 8 == 0)
			sm->counts[nc++] = c;
	for (int l = 0; l < SIM_LAYERS; l++)
		for (int v = 0; v < 3; v++)
			for (int ci = 0; ci < nc; ci++)
				sm->ns[(l * 3 + v) * nc + ci] =
					(v && rnd(seed) % 4 == 0) ? 0 : 1000 + rnd(seed) % 100000;
	sm->m = (struct policy_costs){
		.nr_layers = 1 + (int)(rnd(seed) % SIM_LAYERS),
		.nr_versions = 3,
		.nr_core_counts = nc,
		.nr_levels = 1,
		.core_counts = sm->counts,
		.latency_ns = sm->ns,
	};
}

struct sim_block {
	struct policy_decision d;
	uint8_t versions[SIM_LAYERS];
};

/*
 * One seed: a random machine (some CPUs offline), random tenants and
 * arrivals, completions in random order. The test keeps its own owner of
 * every core and checks each decision against it before applying it.
 */
static void sim_run(struct __test_metadata *_metadata, const struct policy_entry *e, uint64_t seed)
{
	struct sim_model models[SIM_MODELS];
	struct policy_tenant tenants[SIM_TENANTS] = { 0 };
	struct policy_query queries[SIM_QUERIES];
	struct sim_block blocks[SIM_QUERIES];
	struct policy_decision running[SIM_QUERIES];
	int owner[SIM_CORES]; /* query id holding the core, or -1 */
	struct policy_decision dec[8];
	uint8_t vers[8 * SIM_LAYERS];
	struct policy_drop drops[8];
	struct policy_output out = { dec, 8, 0, vers, 8 * SIM_LAYERS, 0, drops, 8, 0 };
	struct policy_config cfg = { .late = POLICY_LATE_SERVE };
	struct policy_cpuset free;
	struct policy_input in = {
		.tenants = tenants, .queries = queries, .running = running, .free = &free
	};
	struct coloc_err err = { 0 };
	int nr_online = 0, nr_blocks = 0, arrived = 0, finished = 0;
	struct policy *p;

	for (int m = 0; m < SIM_MODELS; m++)
		sim_model_init(&models[m], &seed);
	for (int c = 0; c < SIM_CORES; c++) {
		owner[c] = -1;
		if (rnd(&seed) % 5) {
			policy_cpuset_set(&cfg.online, c);
			cfg.llc[c] = c / 8;
			nr_online++;
		}
	}
	if (!nr_online) {
		policy_cpuset_set(&cfg.online, 0);
		nr_online = 1;
	}
	in.nr_tenants = 1 + (int)(rnd(&seed) % (nr_online < SIM_TENANTS ? nr_online : SIM_TENANTS));
	for (int t = 0; t < in.nr_tenants; t++)
		tenants[t] = (struct policy_tenant){ .costs = &models[rnd(&seed) % SIM_MODELS].m,
						     .qos_ns = 1000000,
						     .uid = (uint64_t)t };
	p = policy_create(e, &cfg, &err);
	ASSERT_NE(NULL, p) TH_LOG("%s", err.msg);

	for (int step = 0; finished < SIM_QUERIES; step++) {
		bool arrive = arrived < SIM_QUERIES && (nr_blocks == 0 || rnd(&seed) % 2);

		ASSERT_LT(step, 100000) TH_LOG("seed %llu: no progress", (unsigned long long)seed);
		in.now_ns += 1 + rnd(&seed) % 50000;
		if (arrive) {
			int t = (int)(rnd(&seed) % in.nr_tenants);

			queries[in.nr_queries++] = (struct policy_query){
				.id = (uint64_t)arrived++,
				.tenant = t,
				.arrival_ns = in.now_ns,
				.deadline_ns = in.now_ns + tenants[t].qos_ns,
			};
		} else {
			/* a random running block completes: its cores come back, the query advances */
			int b = (int)(rnd(&seed) % nr_blocks);
			struct policy_decision *d = &blocks[b].d;

			policy_block_done(p, d, d->alone_ns);
			for (int c = 0; c < SIM_CORES && !e->shares_cores; c++)
				if (policy_cpuset_test(&d->cores, c)) {
					ASSERT_EQ((int)d->query_id, owner[c]);
					owner[c] = -1;
				}
			for (int i = 0; i < in.nr_queries; i++) {
				if (queries[i].id != d->query_id)
					continue;
				queries[i].in_flight = false;
				queries[i].next_layer = d->last_layer;
				if (d->last_layer == tenants[d->tenant].costs->nr_layers) {
					queries[i] = queries[--in.nr_queries];
					finished++;
				}
				break;
			}
			blocks[b] = blocks[--nr_blocks];
		}
		for (int i = 0; i < nr_blocks; i++) {
			running[i] = blocks[i].d;
			running[i].versions = blocks[i].versions;
		}
		in.nr_running = nr_blocks;
		policy_cpuset_zero(&free);
		for (int c = 0; c < SIM_CORES; c++)
			if (policy_cpuset_test(&cfg.online, c) && (owner[c] < 0 || e->shares_cores))
				policy_cpuset_set(&free, c);

		policy_output_reset(&out);
		ASSERT_EQ(0, policy_decide(p, &in, &out, &err)) TH_LOG("%s", err.msg);
		ASSERT_EQ(0, out.nr_drops); /* late queries are served here */
		ASSERT_EQ(0, policy_check_output(e, &in, &out, &err)) TH_LOG("%s", err.msg);
		for (int i = 0; i < out.nr_decisions; i++) {
			const struct policy_decision *d = &dec[i];
			struct policy_query *q = NULL;
			int n = 0;

			for (int j = 0; j < in.nr_queries; j++)
				if (queries[j].id == d->query_id)
					q = &queries[j];
			ASSERT_NE(NULL, q);
			ASSERT_FALSE(q->in_flight);
			ASSERT_EQ(q->next_layer, d->first_layer);
			/* a policy sharing cores still runs one query at a time per tenant */
			for (int b = 0; b < nr_blocks && e->shares_cores; b++)
				ASSERT_NE(d->tenant, blocks[b].d.tenant)
			TH_LOG("seed %llu: tenant %d gets a second block in flight",
			       (unsigned long long)seed, d->tenant);
			for (int c = 0; c < POLICY_MAX_CPUS; c++) {
				if (!policy_cpuset_test(&d->cores, c))
					continue;
				ASSERT_LT(c, SIM_CORES);
				ASSERT_TRUE(policy_cpuset_test(&cfg.online, c));
				n++;
				if (e->shares_cores)
					continue;
				ASSERT_EQ(-1, owner[c])
				TH_LOG("seed %llu: core %d granted to query %llu while query %d "
				       "holds it",
				       (unsigned long long)seed, c, (unsigned long long)d->query_id,
				       owner[c]);
				owner[c] = (int)d->query_id;
			}
			ASSERT_EQ(n, d->nr_cores);
			q->in_flight = true;
			blocks[nr_blocks].d = *d;
			memcpy(blocks[nr_blocks].versions, d->versions,
			       (size_t)(d->last_layer - d->first_layer));
			blocks[nr_blocks].d.versions = blocks[nr_blocks].versions;
			nr_blocks++;
		}
		/* with arrivals over and nothing running, someone must have been served */
		ASSERT_FALSE(arrived == SIM_QUERIES && in.nr_queries && !nr_blocks)
		TH_LOG("seed %llu: %d queries queued, nothing runs", (unsigned long long)seed,
		       in.nr_queries);
	}
	policy_destroy(p);
}

TEST(every_policy__never_oversubscribes_a_core_and_serves_every_query)
{
	for (int i = 0; policy_entry_at(i); i++)
		for (uint64_t seed = 1; seed <= 300; seed++)
			sim_run(_metadata, policy_entry_at(i), seed * 0x9e3779b97f4a7c15ULL);
}

/*
 * coloc keeps each tenant's table reads by level position and reads rows
 * only as far as a round's comparisons look, so what it holds depends on
 * the rounds before. A random multi-level table (versions missing at some
 * counts, layer work given or not) and a live slowdown that moves, returns
 * and stays between rounds: each round one instance, which has just decided
 * the same queue at another level too, decides as one whose tenants are new
 * that round (a new uid: nothing read yet, as the policy.h contract says of
 * a reused slot). What either read before differs, so it must not matter.
 */
#define WARM_CORES 24
#define WARM_LAYERS 12
#define WARM_LEVELS 3

struct warm_model {
	int counts[WARM_CORES];
	double levels[WARM_LEVELS];
	uint64_t ns[WARM_LAYERS * 3 * WARM_CORES * WARM_LEVELS];
	uint64_t ops[WARM_LAYERS];
	struct policy_costs m;
};

static void warm_model_init(struct warm_model *wm, uint64_t *seed)
{
	int nc = 0, nl = 1 + (int)(rnd(seed) % WARM_LAYERS);

	for (int c = 1; c <= WARM_CORES; c++)
		if (c == 1 || rnd(seed) % 2)
			wm->counts[nc++] = c;
	wm->levels[0] = 1.0;
	for (int k = 1; k < WARM_LEVELS; k++)
		wm->levels[k] = wm->levels[k - 1] + 0.25 * (double)(1 + rnd(seed) % 4);
	for (int l = 0; l < nl; l++) {
		uint64_t work = 20000 + rnd(seed) % 400000;

		wm->ops[l] = work;
		for (int v = 0; v < 3; v++)
			for (int ci = 0; ci < nc; ci++) {
				/* version 0 always there, others not at some counts */
				bool gone = v && rnd(seed) % 4 == 0;
				uint64_t alone =
					work * (10 + (uint64_t)v) / 10 / (uint64_t)wm->counts[ci] +
					rnd(seed) % 5000 + 1;

				for (int k = 0; k < WARM_LEVELS; k++)
					wm->ns[((l * 3 + v) * nc + ci) * WARM_LEVELS + k] =
						gone ? 0 :
						       (uint64_t)((double)alone *
								  (1 + (wm->levels[k] - 1) *
									       (1 - 0.3 * v)));
			}
	}
	wm->m = (struct policy_costs){
		.nr_layers = nl,
		.nr_versions = 3,
		.nr_core_counts = nc,
		.nr_levels = WARM_LEVELS,
		.core_counts = wm->counts,
		.level_slowdown = wm->levels,
		.latency_ns = wm->ns,
		.layer_ops = rnd(seed) % 2 ? wm->ops : NULL,
	};
}

static void warm_run(struct __test_metadata *_metadata, uint64_t seed)
{
	static struct policy_signal sig[POLICY_MAX_CPUS];
	struct warm_model models[3];
	struct policy_tenant tenants[8] = { 0 }, renewed[8];
	struct policy_query queries[32];
	struct policy_decision dec[2][8];
	uint8_t vers[2][8 * WARM_LAYERS];
	struct policy_drop drops[2][32];
	struct policy_output out[2] = {
		{ dec[0], 8, 0, vers[0], 8 * WARM_LAYERS, 0, drops[0], 32, 0 },
		{ dec[1], 8, 0, vers[1], 8 * WARM_LAYERS, 0, drops[1], 32, 0 },
	};
	struct policy_config cfg = { .late = seed % 2 ? POLICY_LATE_SERVE : POLICY_LATE_DROP };
	struct policy_cpuset free;
	struct policy_input in = {
		.tenants = tenants, .queries = queries, .free = &free, .cores = sig
	};
	struct policy_input in_renewed;
	const struct policy_entry *e = policy_find("coloc");
	struct coloc_err err = { 0 };
	double slowdown = 1.0;
	struct policy *p[2];

	for (int i = 0; i < 3; i++)
		warm_model_init(&models[i], &seed);
	for (int c = 0; c < WARM_CORES; c++) {
		policy_cpuset_set(&cfg.online, c);
		cfg.llc[c] = c / 4;
	}
	in.nr_tenants = 1 + (int)(rnd(&seed) % 8);
	for (int t = 0; t < in.nr_tenants; t++) {
		const struct policy_costs *m = &models[rnd(&seed) % 3].m;

		tenants[t] = (struct policy_tenant){
			.costs = m,
			.uid = (uint64_t)t,
			.qos_ns = policy_costs_solo_ns(m, WARM_CORES) * (1 + rnd(&seed) % 6),
		};
	}
	for (int i = 0; i < 2; i++) {
		p[i] = policy_create(e, &cfg, &err);
		ASSERT_NE(NULL, p[i]) TH_LOG("%s", err.msg);
	}
	for (int round = 0; round < 20; round++) {
		for (int t = 0; t < in.nr_tenants; t++) {
			renewed[t] = tenants[t];
			renewed[t].uid = (uint64_t)(t + 8 * (round + 1));
		}
		double elsewhere = 1.0 + (double)(rnd(&seed) % 2000) / 1000;

		/* the level stays, moves, or comes back to 1.0 (alone) */
		if (rnd(&seed) % 3 == 0)
			slowdown = rnd(&seed) % 4 == 0 ? 1.0 :
							 1.0 + (double)(rnd(&seed) % 2000) / 1000;
		policy_cpuset_zero(&free);
		for (int c = 0; c < WARM_CORES; c++)
			if (rnd(&seed) % 4)
				policy_cpuset_set(&free, c);
		in.now_ns += rnd(&seed) % 1000000;
		in.nr_queries = 1 + (int)(rnd(&seed) % 32);
		for (int i = 0; i < in.nr_queries; i++) {
			int t = (int)(rnd(&seed) % in.nr_tenants);
			uint64_t arrival = in.now_ns - rnd(&seed) % 1000000;

			queries[i] = (struct policy_query){
				.id = (uint64_t)i,
				.tenant = t,
				.arrival_ns = arrival,
				.deadline_ns = arrival + tenants[t].qos_ns,
				.next_layer =
					(int)(rnd(&seed) % (uint64_t)tenants[t].costs->nr_layers),
			};
		}
		in_renewed = in;
		in_renewed.tenants = renewed;
		for (int c = 0; c < WARM_CORES; c++)
			sig[c] = (struct policy_signal){ .live = POLICY_SIG_SLOWDOWN,
							 .slowdown = elsewhere };
		policy_output_reset(&out[0]);
		ASSERT_EQ(0, policy_decide(p[0], &in, &out[0], &err)) TH_LOG("%s", err.msg);
		for (int c = 0; c < WARM_CORES; c++)
			sig[c] = (struct policy_signal){ .live = POLICY_SIG_SLOWDOWN,
							 .slowdown = slowdown };
		for (int i = 0; i < 2; i++) {
			policy_output_reset(&out[i]);
			ASSERT_EQ(0, policy_decide(p[i], i ? &in_renewed : &in, &out[i], &err))
			TH_LOG("%s", err.msg);
		}
		ASSERT_EQ(out[1].nr_decisions, out[0].nr_decisions)
		TH_LOG("seed %llu round %d", (unsigned long long)seed, round);
		ASSERT_EQ(out[1].nr_drops, out[0].nr_drops);
		for (int i = 0; i < out[0].nr_drops; i++) {
			ASSERT_EQ(drops[1][i].query_id, drops[0][i].query_id);
			ASSERT_EQ(drops[1][i].predicted_ns, drops[0][i].predicted_ns);
		}
		for (int i = 0; i < out[0].nr_decisions; i++) {
			const struct policy_decision *a = &dec[0][i], *b = &dec[1][i];

			ASSERT_EQ(b->query_id, a->query_id)
			TH_LOG("seed %llu round %d", (unsigned long long)seed, round);
			ASSERT_EQ(b->last_layer, a->last_layer);
			ASSERT_EQ(b->nr_cores, a->nr_cores);
			ASSERT_EQ(0, memcmp(&b->cores, &a->cores, sizeof(a->cores)));
			ASSERT_EQ(0, memcmp(b->versions, a->versions,
					    (size_t)(a->last_layer - a->first_layer)));
			ASSERT_EQ(b->alone_ns, a->alone_ns);
			ASSERT_EQ(b->predicted_ns, a->predicted_ns);
		}
	}
	policy_destroy(p[0]);
	policy_destroy(p[1]);
}

TEST(coloc_decide__an_instance_that_kept_its_reads_decides_as_one_with_new_tenants_while_the_level_moves)
{
	for (uint64_t seed = 1; seed <= 1000; seed++)
		warm_run(_metadata, seed * 0x9e3779b97f4a7c15ULL);
}

TEST_HARNESS_MAIN
