// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the level signals the policy reads: a domain's rates summed and
 * levels averaged over its live cores, and the level beyond noise (what
 * the mean exceeds two standard errors by), where a tenant's own noise is
 * no level and a lasting slowdown is.
 */
#include <errno.h>
#include <math.h>
#include <string.h>
#include "kselftest_harness.h"
#include "policy.h"
#include "policy_impl.h"

/*
 * Domain signals from core signals, by hand: domain 0 (cores 0-3) has busy
 * on cores 0 and 1 (mean 0.75), a slowdown on core 0 only (1.2), LLC and
 * DRAM on core 2; domain 1 (cores 4-6 online, 7 offline) a slowdown on
 * core 5 and DRAM on 5 and 6 (summed: 4.0); offline core 7's 100 GB/s and
 * the fields no core has stay out.
 */
TEST(policy_domain_signals__sums_rates_and_averages_levels_over_live_cores)
{
	struct policy_config cfg = { 0 };
	static struct policy_signal cores[POLICY_MAX_CPUS], domains[POLICY_MAX_CPUS];

	for (int c = 0; c < 8; c++) {
		cfg.llc[c] = c / 4;
		if (c != 7)
			policy_cpuset_set(&cfg.online, c);
	}
	cores[0] = (struct policy_signal){ .live = POLICY_SIG_BUSY | POLICY_SIG_SLOWDOWN,
					   .busy = 0.5,
					   .slowdown = 1.2 };
	cores[1] = (struct policy_signal){ .live = POLICY_SIG_BUSY, .busy = 1.0, .slowdown = 9 };
	cores[2] = (struct policy_signal){ .live = POLICY_SIG_LLC | POLICY_SIG_DRAM,
					   .llc_miss_ratio = 0.2,
					   .llc_misses_per_s = 1e6,
					   .dram_gbps = 2.0 };
	cores[5] = (struct policy_signal){ .live = POLICY_SIG_SLOWDOWN | POLICY_SIG_DRAM,
					   .slowdown = 1.4,
					   .dram_gbps = 3.0 };
	cores[6] = (struct policy_signal){ .live = POLICY_SIG_DRAM, .dram_gbps = 1.0 };
	cores[7] = (struct policy_signal){ .live = POLICY_SIG_DRAM, .dram_gbps = 100.0 };
	domains[1].live = POLICY_SIG_LLC; /* stale: must be overwritten */
	policy_domain_signals(&cfg, cores, domains);
	EXPECT_EQ(POLICY_SIG_BUSY | POLICY_SIG_SLOWDOWN | POLICY_SIG_LLC | POLICY_SIG_DRAM,
		  domains[0].live);
	EXPECT_EQ(0.75, domains[0].busy);
	EXPECT_EQ(1.2, domains[0].slowdown);
	EXPECT_EQ(0.2, domains[0].llc_miss_ratio);
	EXPECT_EQ(1e6, domains[0].llc_misses_per_s);
	EXPECT_EQ(2.0, domains[0].dram_gbps);
	EXPECT_EQ(POLICY_SIG_SLOWDOWN | POLICY_SIG_DRAM, domains[1].live);
	EXPECT_EQ(1.4, domains[1].slowdown);
	EXPECT_EQ(4.0, domains[1].dram_gbps);
}

/*
 * The measured level beyond its noise: with weight 0.3 the EWMA's standard
 * error is sqrt(var x 3 / 17), so var = 0.17 / 3 gives 0.1 and the level is
 * the mean less 0.2. One block at 3x from the prior (mean 1.6, var 1.2) is
 * no level; ten blocks at 1.5x are (mean 1.486, var 0.0098: 1.40); blocks
 * at 0.5x and 1.5x in turn are noise (mean 1.086, var 0.34).
 */
TEST(policy_level_beyond_noise__is_what_the_mean_exceeds_two_standard_errors_by)
{
	double mean = 1.0, var = 0;

	EXPECT_EQ(1.5, policy_level_beyond_noise(1.5, 0, 0, 0.3));
	EXPECT_GT(1e-12, fabs(1.3 - policy_level_beyond_noise(1.5, 0.17 / 3, 0, 0.3)));
	EXPECT_EQ(1.0, policy_level_beyond_noise(1.15, 0.17 / 3, 0, 0.3));
	EXPECT_EQ(1.0, policy_level_beyond_noise(0.9, 0, 0, 0.3));
	EXPECT_EQ(1.0, policy_level_beyond_noise(1.6, 1.2, 0, 0.3));
	for (int i = 0; i < 10; i++) {
		var = 0.7 * var + 0.3 * (1.5 - mean) * (1.5 - mean);
		mean = 0.7 * mean + 0.3 * 1.5;
	}
	EXPECT_GT(1e-4, fabs(1.4027 - policy_level_beyond_noise(mean, var, 0, 0.3)));
	mean = 1.0;
	var = 0;
	for (int i = 0; i < 10; i++) {
		double r = i % 2 ? 1.5 : 0.5;

		var = 0.7 * var + 0.3 * (r - mean) * (r - mean);
		mean = 0.7 * mean + 0.3 * r;
	}
	EXPECT_EQ(1.0, policy_level_beyond_noise(mean, var, 0, 0.3));
}

/* An EWMA (weight 0.3) from the prior 1.0 over n blocks at slowdown r. */
static void ewma_blocks(double r, int n, double *mean, double *var)
{
	*mean = 1.0;
	*var = 0;
	for (int i = 0; i < n; i++) {
		*var = 0.7 * *var + 0.3 * (r - *mean) * (r - *mean);
		*mean = 0.7 * *mean + 0.3 * r;
	}
}

/*
 * Both sides of the test against the tenants' own noise (floor_var). Two
 * blocks at 3x in a row (mean 2.02, var 1.428) pass the core's own test
 * (standard error sqrt(1.428 x 3 / 17) = 0.502: level 1.016), but not
 * against a tenant whose blocks alone spread with var 2.0 (0.594: 0.83,
 * so 1.0). Ten blocks at 3x (mean 2.9435, var 0.157) are a level against
 * that floor too (2.9435 - 1.188 = 1.755); ten at 1.5x on a quiet tenant
 * (floor 0.01, just above the core's var 0.0098: 1.4859 - 2 x
 * sqrt(0.01 x 3 / 17) = 1.4019) stay a level.
 */
TEST(policy_level_beyond_noise__a_tenants_own_noise_is_no_level_a_lasting_slowdown_is)
{
	double mean, var;

	ewma_blocks(3.0, 2, &mean, &var);
	EXPECT_GT(1e-9, fabs(1.428 - var));
	EXPECT_GT(1e-6, fabs(1.016008 - policy_level_beyond_noise(mean, var, 0, 0.3)));
	EXPECT_EQ(1.0, policy_level_beyond_noise(mean, var, 2.0, 0.3));
	ewma_blocks(3.0, 10, &mean, &var);
	EXPECT_GT(1e-6, fabs(1.755328 - policy_level_beyond_noise(mean, var, 2.0, 0.3)));
	ewma_blocks(1.5, 10, &mean, &var);
	EXPECT_GT(1e-6, fabs(1.401859 - policy_level_beyond_noise(mean, var, 0.01, 0.3)));
}

TEST_HARNESS_MAIN
