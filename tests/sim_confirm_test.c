// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-sim's confirmation walk (sim/confirm_walk.c) against bench-qos's
 * own, tools/bench-qos-confirm.awk: the simulated search's points, as
 * points.tsv gives them to the awk, after every one of the walk's points
 * and at its end, get the same next load and the same QoS-QPS.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kselftest_harness.h"
#include "sim.h"
#include "sim_fixture.h"

/* What the awk says on the first nr points: "run LOAD" or "done QPS", in out. */
static int awk_says(const struct sim_search_result *s, int nr, char *out, size_t len)
{
	const char *root = getenv("COLOC_ROOT");
	char cmd[4096], in[] = "/tmp/sim_confirm_test.XXXXXX";
	int fd = mkstemp(in);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (!f)
		return -1;
	for (int i = 0; i < nr; i++)
		for (int g = 0; g < s->load[i].nr_tenants; g++)
			fprintf(f, "%s %.3f t%d %u %.9f\n",
				s->load[i].confirm ? "confirm" : "bisect", s->load[i].qps, g,
				s->load[i].counted[g],
				s->load[i].counted[g] ?
					(double)s->load[i].within[g] / s->load[i].counted[g] :
					0);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "awk -v walk=3 -f %s/tools/bench-qos-confirm.awk %s",
		 root ? root : ".", in);
	f = popen(cmd, "r");
	if (!f || !fgets(out, (int)len, f)) {
		if (f)
			pclose(f);
		unlink(in);
		return -1;
	}
	out[strcspn(out, "\n")] = 0;
	unlink(in);
	return pclose(f);
}

/*
 * Two tenants of the one-layer model (10 ms) on one core under fcfs, QoS
 * 25 to 60 ms: the bisection's loads sit where a point's verdict turns on
 * a few queries, so the walk steps up and down. At each of its points the
 * awk, given the points before, names that load; given all, the verdict.
 */
TEST(sim_confirm__the_walk_is_the_scripts)
{
	struct sim_tenant t[2] = {
		{ .costs = &one_layer, .share = 1 },
		{ .costs = &one_layer, .share = 2 },
	};
	struct sim_params p = small_params(policy_find("fcfs"), 1, 1, t, 2, NULL, NULL);
	struct sim_search_result *s = calloc(1, sizeof(*s));
	static const double solo_ms[] = { 10, 10 };
	struct coloc_err err = { 0 };
	int walks = 0;

	ASSERT_NE(NULL, s);
	p.on_query = NULL;
	p.on_block = NULL;
	for (int qos = 25; qos <= 60; qos += 5)
		for (uint64_t seed = 1; seed <= 3; seed++) {
			char said[64], want[64];

			t[0].qos_ns = t[1].qos_ns = (uint64_t)qos * MS;
			p.seed = seed;
			ASSERT_EQ(0,
				  sim_search_bench_qos(&p, &sim_bq_quick, solo_ms, 0.95, s, &err));
			for (int k = 0; k < s->nr_loads; k++) {
				if (!s->load[k].confirm)
					continue;
				walks++;
				ASSERT_EQ(0, awk_says(s, k, said, sizeof(said)));
				snprintf(want, sizeof(want), "run %.3f", s->load[k].qps);
				ASSERT_STREQ(want, said);
			}
			ASSERT_EQ(0, awk_says(s, s->nr_loads, said, sizeof(said)));
			snprintf(want, sizeof(want), "done %.3f", s->qos_qps);
			ASSERT_STREQ(want, said);
			TH_LOG("QoS %d ms, seed %llu: %d points, QoS-QPS %.3f", qos,
			       (unsigned long long)seed, s->points, s->qos_qps);
		}
	TH_LOG("%d walk points, each named by the awk", walks);
	ASSERT_GT(walks, 24);
	free(s);
}

TEST_HARNESS_MAIN
