/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * One tenant's serving statistics: offered and served rates over a sliding
 * window, latency percentiles over the most recent queries, the share
 * served within QoS, where served queries' time went (serving_breakdown),
 * drops and rejections with the last reason, and how well the policy
 * predicted each block's latency before it ran.
 */
#ifndef COLOC_DAEMON_SERVING_STATS_H
#define COLOC_DAEMON_SERVING_STATS_H

#include <stdint.h>
#include "coloc/protocol.h"

#define SERVING_STATS_RING 1024 /* latencies and arrival times kept */
#define SERVING_STATS_WINDOW_NS 10000000000ull /* rates are over the last 10 s */
#define SERVING_REASON_LEN 192

/* serving_part_names[p]: enum coloc_latency_part's names (protocol.h) */
#define SERVING_NR_PARTS COLOC_NR_PARTS
extern const char *const serving_part_names[SERVING_NR_PARTS];

/* A served query's latency part by part (enum coloc_latency_part, protocol.h). */
struct serving_breakdown {
	uint64_t ns[SERVING_NR_PARTS];
};

struct serving_stats {
	uint64_t arrivals[SERVING_STATS_RING]; /* ring of arrival times, offered queries */
	uint64_t completions[SERVING_STATS_RING]; /* ring of completion times, served queries */
	uint64_t latencies[SERVING_STATS_RING]; /* ring of latencies, served queries */
	uint64_t parts[SERVING_NR_PARTS][SERVING_STATS_RING]; /* their breakdowns, part by part */
	uint64_t offered, served, within_qos, dropped, rejected, failed;
	/* blocks measured, and the sums of |measured - predicted| / measured and of the signed ratio */
	uint64_t blocks;
	uint64_t commands; /* RUN commands that ran them: blocks / commands per plan, plan ahead */
	uint64_t yields; /* of which stopped early, at a boundary, by an event (plan ahead) */
	double sum_abs_error, sum_error;
	char last_drop[SERVING_REASON_LEN];
	char last_reject[SERVING_REASON_LEN];
	char last_failure[SERVING_REASON_LEN];
};

/* What serving_tenant_info() reports (rates in queries/s, latencies in ns). */
struct serving_stats_summary {
	double offered_rate, served_rate;
	uint64_t p50_ns, p95_ns, p99_ns; /* over the last SERVING_STATS_RING served; 0: none */
	/* each part's own percentiles over the same queries (they need not add up) */
	uint64_t part_p50_ns[SERVING_NR_PARTS], part_p95_ns[SERVING_NR_PARTS];
	double within_qos; /* fraction of all served within QoS; 0 when none served */
	uint64_t offered, served, dropped, rejected, failed;
	uint64_t blocks; /* blocks measured with a prediction */
	uint64_t commands; /* RUN commands completed: fewer than blocks where plans ran ahead */
	uint64_t yields; /* commands whose plan an event stopped at a block boundary */
	/*
	 * Over those blocks, each predicted before it ran: the mean of
	 * |measured - predicted| / measured (MAPE, as a fraction) and of
	 * (measured - predicted) / measured (> 0: the policy predicts too
	 * little). 0 when no block.
	 */
	double prediction_mape, prediction_bias;
};

void serving_stats_offered(struct serving_stats *s, uint64_t now_ns);
void serving_stats_served(struct serving_stats *s, uint64_t now_ns, uint64_t latency_ns,
			  uint64_t qos_ns, const struct serving_breakdown *parts);
/* A block predicted to take predicted_ns took measured_ns; ignored when either is 0. */
void serving_stats_block(struct serving_stats *s, uint64_t predicted_ns, uint64_t measured_ns);
void serving_stats_summarise(const struct serving_stats *s, uint64_t now_ns,
			     struct serving_stats_summary *out);
/* The nearest-rank percentile (0 < pct <= 100) of n values; sorts v in place. 0 when n is 0. */
uint64_t serving_stats_percentile(uint64_t *v, int n, double pct);

#endif /* COLOC_DAEMON_SERVING_STATS_H */
