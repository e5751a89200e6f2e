// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Reading a model's latency table (struct policy_costs): which profiled core
 * count fits a grant, where a measured slowdown falls among the level
 * columns, the latency between two columns, the fastest version, the cold
 * ramp (docs/design/profile-cold-start.md). Every
 * policy prices its blocks with these, so the daemon, the simulator and the
 * tests read the table the same way.
 */
#include <errno.h>
#include "policy.h"

int policy_costs_check(const struct policy_costs *m, struct coloc_err *err)
{
	if (!m || !m->latency_ns || !m->core_counts)
		return coloc_err_set(err, -EINVAL, "model table: no latency table or core counts");
	if (m->nr_layers < 1)
		return coloc_err_set(err, -EINVAL,
				     "model table: %d layers; a model has at least one",
				     m->nr_layers);
	if (!m->latency_lo_ns != !m->latency_hi_ns)
		return coloc_err_set(err, -EINVAL,
				     "model table: confidence intervals need both bounds");
	if (m->nr_versions < 1 || m->nr_versions > POLICY_MAX_VERSIONS)
		return coloc_err_set(err, -EINVAL,
				     "model table: %d versions per layer; the policy takes 1 to %d",
				     m->nr_versions, POLICY_MAX_VERSIONS);
	if (m->nr_core_counts < 1 || m->nr_core_counts > POLICY_MAX_CORE_COUNTS)
		return coloc_err_set(err, -EINVAL,
				     "model table: %d core counts; the policy takes 1 to %d",
				     m->nr_core_counts, POLICY_MAX_CORE_COUNTS);
	if (m->nr_levels < 1 || m->nr_levels > POLICY_MAX_LEVELS)
		return coloc_err_set(
			err, -EINVAL,
			"model table: %d interference levels; the policy takes 1 to %d",
			m->nr_levels, POLICY_MAX_LEVELS);
	for (int i = 0; i < m->nr_core_counts; i++) {
		int c = m->core_counts[i];

		if (c < 1 || c > POLICY_MAX_CPUS || (i && c <= m->core_counts[i - 1]))
			return coloc_err_set(
				err, -EINVAL,
				"model table: core count %d (entry %d) is not in 1..%d "
				"and above the one before",
				c, i, POLICY_MAX_CPUS);
	}
	if (m->nr_levels > 1) {
		if (!m->level_slowdown || m->level_slowdown[0] != 1.0)
			return coloc_err_set(err, -EINVAL,
					     "model table: %d levels need level_slowdown[] "
					     "starting at 1.0 (alone)",
					     m->nr_levels);
		for (int k = 1; k < m->nr_levels; k++)
			if (!(m->level_slowdown[k] >= m->level_slowdown[k - 1]))
				return coloc_err_set(
					err, -EINVAL,
					"model table: slowdown %.3f at level column %d "
					"is below %.3f at the column before; the "
					"columns must not decrease",
					m->level_slowdown[k], k, m->level_slowdown[k - 1]);
	}
	if (m->nr_cold < 0 || m->nr_cold > POLICY_MAX_COLD_POINTS)
		return coloc_err_set(err, -EINVAL,
				     "model table: %d cold points; the policy takes 0 to %d",
				     m->nr_cold, POLICY_MAX_COLD_POINTS);
	for (int i = 0; i < m->nr_cold; i++)
		if (!m->cold[i].idle_ns || (i && m->cold[i].idle_ns <= m->cold[i - 1].idle_ns) ||
		    !(m->cold[i].ratio > 0 && m->cold[i].ratio <= 4.0))
			return coloc_err_set(
				err, -EINVAL,
				"model table: cold point %d (%.3f x after %llu ns) needs "
				"a ratio in (0, 4] and an idle time above 0 and above "
				"the point before",
				i, m->cold[i].ratio, (unsigned long long)m->cold[i].idle_ns);
	for (int l = 0; l < m->nr_layers; l++)
		for (int ci = 0; ci < m->nr_core_counts; ci++) {
			bool any = false;

			for (int v = 0; v < m->nr_versions && !any; v++)
				any = policy_costs_cell(m, l, v, ci, 0) != 0;
			if (!any)
				return coloc_err_set(
					err, -EINVAL,
					"model table: layer %d has no version measured "
					"alone at %d cores; complete the profile",
					l, m->core_counts[ci]);
		}
	return 0;
}

int policy_costs_core_index(const struct policy_costs *m, int nr_cores)
{
	int lo = 0, hi = m->nr_core_counts - 1, found = -1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (m->core_counts[mid] <= nr_cores) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
}

double policy_costs_level_pos(const struct policy_costs *m, double slowdown)
{
	const double *ls = m->level_slowdown;

	if (!ls || m->nr_levels < 2 || !(slowdown > ls[0]))
		return 0;
	for (int k = 0; k + 1 < m->nr_levels; k++) {
		/* slowdown >= ls[k] here: the loop moved past every lower column */
		if (slowdown < ls[k + 1])
			return k + (slowdown - ls[k]) / (ls[k + 1] - ls[k]);
	}
	return m->nr_levels - 1;
}

/*
 * The latency at level_pos of the cell whose level columns start at cell:
 * policy_costs_latency() without the index arithmetic, for callers that walk
 * a layer's versions.
 */
static inline uint64_t latency_at(const uint64_t *cell, int nr_levels, double level_pos)
{
	int k = (int)level_pos;
	double frac = level_pos - k;
	uint64_t a, b;

	if (k >= nr_levels - 1)
		return cell[nr_levels - 1];
	a = cell[k];
	if (!a || frac <= 0)
		return a;
	b = cell[k + 1];
	if (!b)
		return 0;
	/* both cells are positive, so rounding half up is llround() without its libm call */
	return (uint64_t)((double)a + ((double)b - (double)a) * frac + 0.5);
}

uint64_t policy_costs_latency(const struct policy_costs *m, int layer, int version, int ci,
			      double level_pos)
{
	return latency_at(
		&m->latency_ns[(((size_t)layer * m->nr_versions + version) * m->nr_core_counts +
				ci) *
			       m->nr_levels],
		m->nr_levels, level_pos);
}

/*
 * The lead rule over a layer's versions at (layer, ci), whose version 0
 * cells start at latency index at0: lead is tried first, then the others in
 * order; a version takes over only when its median is lower and, where the
 * table has intervals, its interval lies wholly below the winner's so far.
 */
static int lead_rule(const struct policy_costs *m, size_t at0, int lead, double level_pos,
		     uint64_t *latency_ns)
{
	/* version v's columns are v strides past version 0's */
	size_t stride = (size_t)m->nr_core_counts * m->nr_levels;
	bool ci_known = m->latency_lo_ns && m->latency_hi_ns;
	uint64_t best_ns = 0, best_lo = 0;
	int best = -1;

	for (int i = 0; i < m->nr_versions; i++) {
		int v = i == 0 ? lead : i <= lead ? i - 1 : i;
		size_t at = at0 + (size_t)v * stride;
		const uint64_t *cell = &m->latency_ns[at];
		/* alone is the common case (every simple policy): read the cell directly */
		uint64_t ns = level_pos <= 0 ? cell[0] : latency_at(cell, m->nr_levels, level_pos);

		if (!ns || (best >= 0 && ns >= best_ns))
			continue;
		if (ci_known && best >= 0) {
			uint64_t hi = latency_at(&m->latency_hi_ns[at], m->nr_levels, level_pos);

			if (!hi || hi >= best_lo)
				continue;
		}
		best = v;
		best_ns = ns;
		if (ci_known)
			best_lo = latency_at(&m->latency_lo_ns[at], m->nr_levels, level_pos);
	}
	if (latency_ns)
		*latency_ns = best_ns;
	return best;
}

int policy_costs_fastest_version(const struct policy_costs *m, int layer, int ci, double level_pos,
				 uint64_t *latency_ns)
{
	size_t at0 = ((size_t)layer * m->nr_versions * m->nr_core_counts + ci) * m->nr_levels;
	int lead = lead_rule(m, at0, 0, 0, latency_ns);

	/*
	 * At a level the fastest alone keeps the lead: noisy stressed columns
	 * (intervals 5-9x wide on a 2-vCPU VM) must not hand it back to
	 * version 0 when no interval says version 0 is faster
	 * (docs/design/level-estimate.md, "Versions at a level").
	 */
	if (level_pos <= 0 || lead < 0)
		return lead;
	return lead_rule(m, at0, lead, level_pos, latency_ns);
}

uint64_t policy_costs_alone_ns(const struct policy_costs *m, int first, int last, int ci)
{
	uint64_t total = 0;

	for (int l = first; l < last; l++) {
		uint64_t ns;

		if (policy_costs_fastest_version(m, l, ci, 0, &ns) < 0)
			return 0;
		total += ns;
	}
	return total;
}

uint64_t policy_costs_solo_ns(const struct policy_costs *m, int nr_cores)
{
	int ci = policy_costs_core_index(m, nr_cores);

	return ci < 0 ? 0 : policy_costs_alone_ns(m, 0, m->nr_layers, ci);
}

/* A point's ratio as priced: 1 to 4 (a table not from a profile is held to the parser's bound). */
static double cold_point_ratio(const struct policy_cold_point *pt)
{
	if (!(pt->ratio > 1))
		return 1.0;
	return pt->ratio < 4.0 ? pt->ratio : 4.0;
}

static int cold_points(const struct policy_costs *m)
{
	if (m->nr_cold <= 0)
		return 0;
	return m->nr_cold < POLICY_MAX_COLD_POINTS ? m->nr_cold : POLICY_MAX_COLD_POINTS;
}

double policy_costs_cold_scale(const struct policy_costs *m)
{
	int n = cold_points(m);

	return n ? cold_point_ratio(&m->cold[n - 1]) : 1.0;
}

double policy_costs_cold_scale_at(const struct policy_costs *m, uint64_t idle_ns)
{
	uint64_t x0 = 0;
	double y0 = 1.0;
	int n = cold_points(m);

	for (int i = 0; i < n; i++) {
		uint64_t x1 = m->cold[i].idle_ns;
		double y1 = cold_point_ratio(&m->cold[i]);

		if (idle_ns <= x1) {
			if (x1 <= x0) /* not increasing (a table not from a profile): a step */
				return y1;
			return y0 + (y1 - y0) * (double)(idle_ns - x0) / (double)(x1 - x0);
		}
		if (x1 > x0)
			x0 = x1;
		y0 = y1;
	}
	return y0;
}

uint64_t policy_scale_ns(uint64_t ns, double scale)
{
	double x = (double)ns * scale;

	return x >= 0x1p64 ? UINT64_MAX : (uint64_t)x;
}

uint64_t policy_costs_served_solo_ns(const struct policy_costs *m, int nr_cores)
{
	return policy_scale_ns(policy_costs_solo_ns(m, nr_cores), policy_costs_cold_scale(m));
}

/* Whether cpu runs a block of in->running (the shared cores of `os`). */
static bool core_running(const struct policy_input *in, int cpu)
{
	for (int i = 0; i < in->nr_running; i++)
		if (policy_cpuset_test(&in->running[i].cores, cpu))
			return true;
	return false;
}

double policy_costs_cold_scale_on(const struct policy_costs *m, const struct policy_input *in,
				  const struct policy_cpuset *cores)
{
	uint64_t idle = UINT64_MAX;
	int c = policy_cpuset_next(cores, 0);

	if (!cold_points(m) || !in->core_idle_since_ns || c < 0)
		return 1.0;
	for (; c >= 0; c = policy_cpuset_next(cores, c + 1)) {
		uint64_t since = in->core_idle_since_ns[c];

		if (core_running(in, c) || (since && in->now_ns < since))
			return 1.0;
		if (since && in->now_ns - since < idle)
			idle = in->now_ns - since;
	}
	return policy_costs_cold_scale_at(m, idle);
}

void policy_costs_start_cold(const struct policy_costs *m, const struct policy_input *in,
			     struct policy_decision *d)
{
	double scale = policy_costs_cold_scale_on(m, in, &d->cores);

	d->cold_scale = 1.0;
	if (!(scale > 1.0))
		return;
	d->cold = true;
	d->cold_scale = scale;
	d->alone_ns = policy_scale_ns(d->alone_ns, scale);
	d->predicted_ns = policy_scale_ns(d->predicted_ns, scale);
}
