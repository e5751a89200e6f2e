// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The queue's part of coloc-sim --capacity's bound: a tenant's queries,
 * Poisson, each at least s ms on one of its L lanes, through an M/D/L queue
 * in arrival order that gives up a query as soon as it could no longer end
 * within QoS (it uses no lane). Estimated on one fixed stream of arrivals,
 * so a figure is the same from run to run and the share within falls as
 * the rate grows. docs/design/capacity-bound.md says why no schedule of
 * the simulator's waits less.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "sim.h"

#define QUEUE_SEED 0x636f6c6f63717565ull
#define QUEUE_WARMUP (SIM_QUEUE_SAMPLES / 16) /* arrivals before the counted ones */

double *sim_queue_stream(void)
{
	double *gap = malloc(SIM_QUEUE_SAMPLES * sizeof(*gap));
	struct coloc_rng rng;

	if (!gap)
		return NULL;
	coloc_rng_seed(&rng, QUEUE_SEED);
	for (long n = 0; n < SIM_QUEUE_SAMPLES; n++)
		gap[n] = coloc_rng_exp(&rng);
	return gap;
}

/* The waits, in service times, rho arriving a service time, of those within wait. */
static void queue_run(const double *gap, int lanes, double rho, double wait,
		      struct sim_queue_waits *w)
{
	double free_at[SIM_MAX_EXECUTORS] = { 0 }, now = 0,
	       counted = SIM_QUEUE_SAMPLES - QUEUE_WARMUP;
	long within = 0;
	int lane = 0;

	memset(w, 0, sizeof(*w));
	/* starts in arrival order and one service time each: lanes free in the order taken */
	for (long n = 0; n < SIM_QUEUE_SAMPLES; n++) {
		double start;

		now += gap[n] / rho;
		start = fmax(now, free_at[lane]);
		if (start - now > wait)
			continue;
		free_at[lane] = start + 1;
		lane = (lane + 1) % lanes;
		if (n < QUEUE_WARMUP)
			continue;
		within++;
		w->share[wait > 0 ? (int)fmin((start - now) / wait * SIM_QUEUE_BINS,
					      SIM_QUEUE_BINS - 1) :
				    0] += 1 / counted;
	}
	w->within = within / counted;
}

int sim_queue_waits(const double *gap, double qps, double service_ms, double qos_ms, int lanes,
		    struct sim_queue_waits *w)
{
	if (!(service_ms > 0) || !(qos_ms >= service_ms) || lanes < 1 ||
	    lanes > SIM_MAX_EXECUTORS || !(qps > 0))
		return -EINVAL;
	queue_run(gap, lanes, qps * service_ms * 1e-3, (qos_ms - service_ms) / service_ms, w);
	return 0;
}
