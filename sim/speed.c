// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The machine's speed: the part of a block's spread that every block on the
 * machine shares at a moment, and that lasts. On the 2-vCPU VM a block's
 * deviation from its usual time correlates with that of another tenant's
 * block running about when it did (0.3 within 50 ms, ~0.1 at 0.5-2 s,
 * nothing past 5 s), so slow blocks come in spells and queues build in
 * them; drawn independently per block, the simulator saw no spells and
 * served more than the machine did.
 *
 * The fit: a block's standardized log deviation z (its executor-model row's
 * residual over its sigma), and for pairs of blocks of different tenants in
 * one run, the correlation of z by the gap between their midpoints, in bins;
 * then rho(gap) = rho x exp(-gap / tau), least squares weighted by pairs,
 * over a grid of tau. Blocks of the same tenant are left out: a tenant's
 * blocks also share what is its own (its query, its cache), not the machine.
 *
 * The process: a unit-variance Ornstein-Uhlenbeck z(t) on a grid of
 * simulated time, tau / 20 apart, from its own PRNG stream: every policy run
 * with the same seed meets the same spells. A block that starts at t takes
 * its spread as sigma x (sqrt(rho) x z(t) + sqrt(1 - rho) x Z), Z its own:
 * the same lognormal as before for each block, but slow blocks together.
 */
#include <math.h>
#include <string.h>
#include "sim.h"

/* upper edges of the gap bins, ms */
static const double speed_bin_ms[SIM_SPEED_BINS] = { 50,   100,	 200,  350,  500,  750,
						     1000, 1500, 2000, 3000, 5000, 10000 };
static const double speed_tau_ms[] = { 50,   100,  150,	 200,  300,  500,  700,
				       1000, 1500, 2000, 3000, 5000, 10000 };
/* fewer pairs than this in all: no fit (rho 0) */
#define SPEED_MIN_PAIRS 1000
/* at most this many later blocks paired with each block */
#define SPEED_MAX_NEIGHBOURS 4000

void sim_speed_acc_add(struct sim_speed_acc *acc, const struct sim_speed_sample *s, int n)
{
	for (int i = 0; i < n; i++) {
		acc->n++;
		acc->sum += s[i].z;
		acc->sum2 += s[i].z * s[i].z;
		for (int j = i + 1, seen = 0; j < n && seen < SPEED_MAX_NEIGHBOURS; j++, seen++) {
			double gap = s[j].mid_ms - s[i].mid_ms;
			int b = 0;

			if (gap >= speed_bin_ms[SIM_SPEED_BINS - 1])
				break;
			if (s[j].tenant == s[i].tenant)
				continue;
			while (gap >= speed_bin_ms[b])
				b++;
			acc->pairs[b]++;
			acc->prod[b] += s[i].z * s[j].z;
			acc->gap[b] += gap;
		}
	}
}

void sim_speed_acc_solve(const struct sim_speed_acc *acc, struct sim_speed_fit *fit)
{
	double mu, var, corr[SIM_SPEED_BINS], gap[SIM_SPEED_BINS], best = -1;
	long pairs = 0;

	memset(fit, 0, sizeof(*fit));
	for (int b = 0; b < SIM_SPEED_BINS; b++)
		pairs += acc->pairs[b];
	fit->pairs = pairs;
	if (acc->n < 2 || pairs < SPEED_MIN_PAIRS)
		return;
	mu = acc->sum / (double)acc->n;
	var = acc->sum2 / (double)acc->n - mu * mu;
	if (!(var > 0))
		return;
	for (int b = 0; b < SIM_SPEED_BINS; b++) {
		if (!acc->pairs[b])
			continue;
		corr[b] = (acc->prod[b] / (double)acc->pairs[b] - mu * mu) / var;
		gap[b] = acc->gap[b] / (double)acc->pairs[b];
		fit->corr[b] = corr[b];
	}
	for (size_t t = 0; t < sizeof(speed_tau_ms) / sizeof(speed_tau_ms[0]); t++) {
		double num = 0, den = 0, rho, sse = 0, w = 0;

		for (int b = 0; b < SIM_SPEED_BINS; b++) {
			double e;

			if (!acc->pairs[b])
				continue;
			e = exp(-gap[b] / speed_tau_ms[t]);
			num += (double)acc->pairs[b] * e * corr[b];
			den += (double)acc->pairs[b] * e * e;
		}
		rho = den > 0 ? fmin(1, fmax(0, num / den)) : 0;
		for (int b = 0; b < SIM_SPEED_BINS; b++) {
			double d;

			if (!acc->pairs[b])
				continue;
			d = corr[b] - rho * exp(-gap[b] / speed_tau_ms[t]);
			sse += (double)acc->pairs[b] * d * d;
			w += (double)acc->pairs[b];
		}
		if (best < 0 || sse < best) {
			best = sse;
			fit->rho = rho;
			fit->tau_ms = speed_tau_ms[t];
			fit->rms_error = sqrt(sse / w);
		}
	}
}

double sim_speed_bin_ms(int b)
{
	return b >= 0 && b < SIM_SPEED_BINS ? speed_bin_ms[b] : NAN;
}

/* Standard normal from rng (Box-Muller; uniform() is in (0, 1], so the logarithm is finite). */
double sim_normal(struct coloc_rng *rng)
{
	double u1 = coloc_rng_uniform(rng), u2 = coloc_rng_uniform(rng);

	return sqrt(-2.0 * log(u1)) * cos(2 * 3.14159265358979323846 * u2);
}

void sim_speed_init(struct sim_speed *sp, uint64_t seed, double rho, uint64_t tau_ns)
{
	memset(sp, 0, sizeof(*sp));
	if (!(rho > 0) || !tau_ns)
		return;
	sp->rho = fmin(rho, 1);
	sp->step_ns = tau_ns / 20 ? tau_ns / 20 : 1;
	sp->keep = exp(-(double)sp->step_ns / (double)tau_ns);
	/* its own stream: seed's arrivals and costs draw from others */
	coloc_rng_seed(&sp->rng, seed ^ 0x5eedc0ffee5eedULL);
	sp->z = sim_normal(&sp->rng);
}

double sim_speed_z(struct sim_speed *sp, uint64_t now_ns)
{
	double fresh = sqrt(1 - sp->keep * sp->keep);

	if (!(sp->rho > 0))
		return 0;
	while (sp->t_ns + sp->step_ns <= now_ns) {
		sp->z = sp->z * sp->keep + fresh * sim_normal(&sp->rng);
		sp->t_ns += sp->step_ns;
	}
	return sp->z;
}
