/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Hand-built latency tables for the simulator's tests, small enough that
 * each test works out its completion times by hand: one layer on one core,
 * two layers on one or two cores, one layer on one, two or four cores, one
 * layer with two versions and levels.
 */
#ifndef COLOC_TESTS_SIM_HAND_TABLES_H
#define COLOC_TESTS_SIM_HAND_TABLES_H

#include <stdint.h>
#include "policy.h"

#define MS 1000000ULL

/* One layer of 10 ms on 1 core. */
static const int one_core[] = { 1 };
static const uint64_t one_layer_ns[] = { 10 * MS };
static const struct policy_costs one_layer = {
	.nr_layers = 1,
	.nr_versions = 1,
	.nr_core_counts = 1,
	.nr_levels = 1,
	.core_counts = one_core,
	.latency_ns = one_layer_ns,
};

/* Two layers: 3 + 7 ms on 1 core, 2 + 4 ms on 2 cores ([layer][ci]). */
static const int one_two_cores[] = { 1, 2 };
static const uint64_t two_layer_ns[] = { 3 * MS, 2 * MS, 7 * MS, 4 * MS };
static const struct policy_costs two_layers = {
	.nr_layers = 2,
	.nr_versions = 1,
	.nr_core_counts = 2,
	.nr_levels = 1,
	.core_counts = one_two_cores,
	.latency_ns = two_layer_ns,
};

/* One layer of 8, 5 and 3 ms on 1, 2 and 4 cores (8, 10 and 12 core-ms). */
static const int counts_124[] = { 1, 2, 4 };
static const uint64_t steps_ns[] = { 8 * MS, 5 * MS, 3 * MS };
static const struct policy_costs steps = {
	.nr_layers = 1,
	.nr_versions = 1,
	.nr_core_counts = 3,
	.nr_levels = 1,
	.core_counts = counts_124,
	.latency_ns = steps_ns,
};

/* One layer, two versions, two levels (alone, slowdown 2.0): v0 10 -> 20 ms, v1 12 -> 15 ms. */
static const double two_levels[] = { 1.0, 2.0 };
static const uint64_t leveled_ns[] = { 10 * MS, 20 * MS, 12 * MS, 15 * MS };
static const struct policy_costs leveled = {
	.nr_layers = 1,
	.nr_versions = 2,
	.nr_core_counts = 1,
	.nr_levels = 2,
	.core_counts = one_core,
	.level_slowdown = two_levels,
	.latency_ns = leveled_ns,
};

#endif /* COLOC_TESTS_SIM_HAND_TABLES_H */
