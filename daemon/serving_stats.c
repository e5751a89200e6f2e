// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Per-tenant serving statistics: fixed rings of the most recent arrivals,
 * completions, latencies and their breakdowns (no allocation on the
 * serving path), percentiles
 * computed on demand from a sorted copy, and running sums of the policy's
 * block-latency prediction errors.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "serving_stats.h"

const char *const serving_part_names[SERVING_NR_PARTS] = COLOC_PART_NAMES;

void serving_stats_offered(struct serving_stats *s, uint64_t now_ns)
{
	s->arrivals[s->offered % SERVING_STATS_RING] = now_ns;
	s->offered++;
}

void serving_stats_served(struct serving_stats *s, uint64_t now_ns, uint64_t latency_ns,
			  uint64_t qos_ns, const struct serving_breakdown *parts)
{
	s->completions[s->served % SERVING_STATS_RING] = now_ns;
	s->latencies[s->served % SERVING_STATS_RING] = latency_ns;
	for (int p = 0; p < SERVING_NR_PARTS; p++)
		s->parts[p][s->served % SERVING_STATS_RING] = parts ? parts->ns[p] : 0;
	s->served++;
	if (latency_ns <= qos_ns)
		s->within_qos++;
}

void serving_stats_block(struct serving_stats *s, uint64_t predicted_ns, uint64_t measured_ns)
{
	double error;

	if (!predicted_ns || !measured_ns)
		return;
	error = ((double)measured_ns - (double)predicted_ns) / (double)measured_ns;
	s->blocks++;
	s->sum_error += error;
	s->sum_abs_error += fabs(error);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t serving_stats_percentile(uint64_t *v, int n, double pct)
{
	int rank;

	if (n <= 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_u64);
	rank = (int)ceil(pct / 100.0 * n);
	if (rank < 1)
		rank = 1;
	return v[(rank > n ? n : rank) - 1];
}

/* Events of a ring within the window ending at now, per second. */
static double rate(const uint64_t *ring, uint64_t count, uint64_t now_ns)
{
	uint64_t n = count < SERVING_STATS_RING ? count : SERVING_STATS_RING, in = 0;
	uint64_t since = now_ns > SERVING_STATS_WINDOW_NS ? now_ns - SERVING_STATS_WINDOW_NS : 0;

	for (uint64_t i = 0; i < n; i++)
		if (ring[i] > since)
			in++;
	return (double)in / (SERVING_STATS_WINDOW_NS / 1e9);
}

void serving_stats_summarise(const struct serving_stats *s, uint64_t now_ns,
			     struct serving_stats_summary *out)
{
	uint64_t sorted[SERVING_STATS_RING];
	int n = s->served < SERVING_STATS_RING ? (int)s->served : SERVING_STATS_RING;

	memset(out, 0, sizeof(*out));
	out->offered_rate = rate(s->arrivals, s->offered, now_ns);
	out->served_rate = rate(s->completions, s->served, now_ns);
	memcpy(sorted, s->latencies, n * sizeof(*sorted));
	out->p50_ns = serving_stats_percentile(sorted, n, 50);
	out->p95_ns = serving_stats_percentile(sorted, n, 95);
	out->p99_ns = serving_stats_percentile(sorted, n, 99);
	for (int p = 0; p < SERVING_NR_PARTS; p++) {
		memcpy(sorted, s->parts[p], n * sizeof(*sorted));
		out->part_p50_ns[p] = serving_stats_percentile(sorted, n, 50);
		out->part_p95_ns[p] = serving_stats_percentile(sorted, n, 95);
	}
	out->within_qos = s->served ? (double)s->within_qos / (double)s->served : 0;
	out->offered = s->offered;
	out->served = s->served;
	out->dropped = s->dropped;
	out->rejected = s->rejected;
	out->failed = s->failed;
	out->blocks = s->blocks;
	out->commands = s->commands;
	out->yields = s->yields;
	if (s->blocks) {
		out->prediction_mape = s->sum_abs_error / (double)s->blocks;
		out->prediction_bias = s->sum_error / (double)s->blocks;
	}
}
