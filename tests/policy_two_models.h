/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Two models of one version at 1 and 2 cores for the policy tests (after
 * policy_fixture.h), every layer the same work, both cores 1.4x (small) and
 * 1.25x (large) faster than one, as MobileNet-V2 and EfficientNet-B0 on the
 * 2-vCPU VM:
 * small: 4 layers of 1.25 ms on 1 core, 0.9 ms on 2 (5 ms and 3.6 ms);
 * large: 4 layers of 2 ms on 1 core, 1.6 ms on 2 (8 ms and 6.4 ms).
 */
#ifndef COLOC_TESTS_POLICY_TWO_MODELS_H
#define COLOC_TESTS_POLICY_TWO_MODELS_H

#define MS 1000000ull

static const int two_counts[] = { 1, 2 };
static const uint64_t four_ops[] = { 1, 1, 1, 1 };
static const uint64_t small_ns[4 * 2] = { 1250000, 900000, 1250000, 900000,
					  1250000, 900000, 1250000, 900000 };
static const uint64_t large_ns[4 * 2] = { 2 * MS, 1600000, 2 * MS, 1600000,
					  2 * MS, 1600000, 2 * MS, 1600000 };
static const struct policy_costs small_model = {
	.nr_layers = 4,
	.nr_versions = 1,
	.nr_core_counts = 2,
	.nr_levels = 1,
	.core_counts = two_counts,
	.latency_ns = small_ns,
	.layer_ops = four_ops,
};
static const struct policy_costs large_model = {
	.nr_layers = 4,
	.nr_versions = 1,
	.nr_core_counts = 2,
	.nr_levels = 1,
	.core_counts = two_counts,
	.latency_ns = large_ns,
	.layer_ops = four_ops,
};

/* small (QoS 11 ms) as tenant 0 and other (QoS other_qos) as tenant 1 on 2 idle cores */
static inline void two_cores(FIXTURE_DATA(pol) * self, const struct policy_costs *other,
			     uint64_t other_qos)
{
	policy_cpuset_zero(&self->cfg.online);
	policy_cpuset_set(&self->cfg.online, 0);
	policy_cpuset_set(&self->cfg.online, 1);
	self->free = self->cfg.online;
	self->tenants[0] = (struct policy_tenant){ .costs = &small_model, .qos_ns = 11 * MS };
	self->tenants[1] = (struct policy_tenant){ .costs = other, .qos_ns = other_qos, .uid = 1 };
	self->in.nr_tenants = 2;
	self->in.nr_queries = 0;
	self->in.nr_running = 0;
}

#endif /* COLOC_TESTS_POLICY_TWO_MODELS_H */
