/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the policy_*_test.c files share: "tiny", a model table of 3 layers,
 * 3 versions, core counts 1, 2, 4 and two level columns whose answers are
 * worked out by hand below, and the fixture pol: 8 cores in two LLC
 * domains, three tenants, room for queries, decisions and drops, with a
 * round of a named policy run on it. Include it after kselftest_harness.h.
 */
#ifndef COLOC_TESTS_POLICY_FIXTURE_H
#define COLOC_TESTS_POLICY_FIXTURE_H

#include <stdint.h>
#include <string.h>
#include "policy.h"
#include "policy_impl.h"

/*
 * The hand-worked model: 3 layers, 3 versions, core counts 1, 2, 4 and two
 * level columns (alone, and a slowdown of 1.5). Latencies in µs, alone:
 *
 *            1 core   2 cores   4 cores
 *   layer 0  v0  900     500       300
 *            v1 1000     450       320
 *            v2  950     520       250
 *   layer 1  v0  400     210       130
 *            v1  380     220       140
 *            v2    -       -         -   (no such version)
 *   layer 2  v0  600     300       200
 *            v1  620     310       160
 *            v2  590     330       170
 *
 * Fastest alone: 1 core v0, v1, v2 = 900 + 380 + 590 = 1870 µs;
 * 2 cores v1, v0, v0 = 450 + 210 + 300 = 960 µs;
 * 4 cores v2, v0, v1 = 250 + 130 + 160 = 540 µs.
 * Under interference (column 1) layer 0 at 4 cores is v0 390, v1 400, v2 500:
 * the locality-heavy v2 loses its lead, v0 wins.
 */
static const int tiny_counts[] = { 1, 2, 4 };
static const double tiny_levels[] = { 1.0, 1.5 };
static const uint64_t tiny_alone_us[3][3][3] = {
	{ { 900, 500, 300 }, { 1000, 450, 320 }, { 950, 520, 250 } },
	{ { 400, 210, 130 }, { 380, 220, 140 }, { 0, 0, 0 } },
	{ { 600, 300, 200 }, { 620, 310, 160 }, { 590, 330, 170 } },
};
static const uint64_t tiny_l0_4c_stressed_us[3] = { 390, 400, 500 };
static uint64_t tiny_ns[3 * 3 * 3 * 2];

static const struct policy_costs tiny = {
	.nr_layers = 3,
	.nr_versions = 3,
	.nr_core_counts = 3,
	.nr_levels = 2,
	.core_counts = tiny_counts,
	.level_slowdown = tiny_levels,
	.latency_ns = tiny_ns,
};

static inline void fill_tiny(void)
{
	for (int l = 0; l < 3; l++)
		for (int v = 0; v < 3; v++)
			for (int ci = 0; ci < 3; ci++) {
				uint64_t *cell = &tiny_ns[((l * 3 + v) * 3 + ci) * 2];

				cell[0] = tiny_alone_us[l][v][ci] * 1000;
				cell[1] = cell[0] * 3 / 2;
			}
	for (int v = 0; v < 3; v++)
		tiny_ns[((0 * 3 + v) * 3 + 2) * 2 + 1] = tiny_l0_4c_stressed_us[v] * 1000;
}

#define MAX_Q 64

FIXTURE(pol)
{
	struct policy_config cfg;
	struct policy_tenant tenants[POLICY_MAX_TENANTS];
	struct policy_query queries[MAX_Q];
	struct policy_decision running[MAX_Q];
	struct policy_cpuset free;
	struct policy_input in;
	struct policy_decision decisions[8];
	uint8_t versions[64];
	struct policy_drop drops[8];
	struct policy_output out;
	struct coloc_err err;
};

FIXTURE_SETUP(pol)
{
	fill_tiny();
	memset(&self->cfg, 0, sizeof(self->cfg));
	for (int c = 0; c < 8; c++) {
		policy_cpuset_set(&self->cfg.online, c);
		self->cfg.llc[c] = c / 4;
	}
	self->cfg.late = POLICY_LATE_DROP;
	self->free = self->cfg.online;
	memset(self->tenants, 0, sizeof(self->tenants));
	self->in = (struct policy_input){
		.now_ns = 0,
		.tenants = self->tenants,
		.nr_tenants = 3,
		.queries = self->queries,
		.running = self->running,
		.free = &self->free,
	};
	self->out = (struct policy_output){
		.decisions = self->decisions,
		.max_decisions = 8,
		.versions = self->versions,
		.max_versions = 64,
		.drops = self->drops,
		.max_drops = 8,
	};
	memset(&self->err, 0, sizeof(self->err));
}

FIXTURE_TEARDOWN(pol)
{
}

static inline void add_query(struct policy_input *in, struct policy_query *qs, uint64_t id,
			     int tenant, uint64_t arrival_ns, uint64_t deadline_ns)
{
	qs[in->nr_queries++] = (struct policy_query){
		.id = id,
		.tenant = tenant,
		.arrival_ns = arrival_ns,
		.deadline_ns = deadline_ns,
	};
}

/* One round of the named policy on the fixture's input; the policy lives for this round. */
static inline int run_round(FIXTURE_DATA(pol) * self, const char *name)
{
	struct policy *p = policy_create(policy_find(name), &self->cfg, &self->err);
	int ret;

	if (!p)
		return -999;
	policy_output_reset(&self->out);
	ret = policy_decide(p, &self->in, &self->out, &self->err);
	policy_destroy(p);
	return ret;
}

/*
 * One round of the named policy on the fixture's input by a policy that saw
 * a block of tenant u end as the round starts: u's one query, arrived now,
 * decided on every online core and measured at its table time. u then
 * weighs in the others' block caps as a tenant served a moment ago does
 * (coloc_internal.h, COLOC_ACTIVE_QOS), with no query of its own.
 */
static inline int run_round_after_block_of(FIXTURE_DATA(pol) * self, const char *name, int u)
{
	struct policy *p = policy_create(policy_find(name), &self->cfg, &self->err);
	struct policy_query q = {
		.id = UINT64_MAX,
		.tenant = u,
		.arrival_ns = self->in.now_ns,
		.deadline_ns = self->in.now_ns + self->tenants[u].qos_ns,
	};
	struct policy_cpuset all = self->cfg.online;
	struct policy_input before = self->in;
	int ret;

	if (!p)
		return -999;
	before.queries = &q;
	before.nr_queries = 1;
	before.nr_running = 0;
	before.free = &all;
	policy_output_reset(&self->out);
	ret = policy_decide(p, &before, &self->out, &self->err);
	if (!ret && self->out.nr_decisions != 1)
		ret = -998;
	if (!ret) {
		struct policy_decision d = self->decisions[0];

		d.decided_ns = d.decided_ns >= d.alone_ns ? d.decided_ns - d.alone_ns : 0;
		policy_block_done(p, &d, d.alone_ns ? d.alone_ns : 1);
		policy_output_reset(&self->out);
		ret = policy_decide(p, &self->in, &self->out, &self->err);
	}
	policy_destroy(p);
	return ret;
}

static inline struct policy_cpuset cpus_of(const int *cpus, int n)
{
	struct policy_cpuset s;

	policy_cpuset_zero(&s);
	for (int i = 0; i < n; i++)
		policy_cpuset_set(&s, cpus[i]);
	return s;
}

#endif /* COLOC_TESTS_POLICY_FIXTURE_H */
