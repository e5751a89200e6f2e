// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What coloc-sim prints after its runs: the QoS-QPS summary of every mix
 * and policy, the fidelity check against what bench-qos measured (and the
 * measurement against its own replicas), how our profiles scale onto
 * VELTAIR's cores (--scaling), and what the tables allow (--capacity).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"
#include "profile.h"
#include "capacity_queued.h"
#include "coloc_sim.h"

/* One table: a line per policy, a column per mix, QoS-QPS. */
void simcli_print_summary(const struct sim_mixes *mixes, bool all_mixes)
{
	printf("\nQoS-QPS (total queries/s with >= 95%% of every tenant's within QoS), %ld "
	       "cores:\n%-18s",
	       simcli_opts.cores, "policy");
	for (int m = 0; m < mixes->nr; m++)
		if (all_mixes || !strcmp(mixes->mix[m].name, simcli_opts.mix))
			printf(" %10s", mixes->mix[m].name);
	printf("\n");
	for (int i = 0; i < simcli_nr_cells; i++) {
		const char *name = simcli_cells[i].name;

		printf("%-18s", name);
		for (int m = 0; m < mixes->nr; m++) {
			const struct sim_qps_cell *c;

			if (!all_mixes && strcmp(mixes->mix[m].name, simcli_opts.mix))
				continue;
			c = sim_qps_table_find(&simcli_found, mixes->mix[m].name, name);
			printf(" %10.1f", c ? c->qps : 0.0);
		}
		printf("\n");
	}
}

/*
 * The measurement against itself, where bench-qos measured a cell twice
 * side by side (CELL and CELL:TAG, --policies): the same comparison as the
 * fidelity check's, the replica in the simulation's place. It is the most
 * any model could score against this run. 0, or 1 on an error (printed).
 */
static int print_replicas(const struct sim_qps_table *measured)
{
	struct sim_qps_table simcli_cells, replicas;
	struct coloc_err err = { 0 };
	struct sim_fidelity f;

	if (sim_qps_table_split_replicas(measured, &simcli_cells, &replicas, &err))
		goto fail;
	if (sim_fidelity_compare(&replicas, &simcli_cells, FIDELITY_TOLERANCE, &f, &err)) {
		sim_qps_table_free(&simcli_cells);
		sim_qps_table_free(&replicas);
		goto fail;
	}
	if (f.nr_rows) {
		printf("the measurement against itself (each cell measured twice side by side, "
		       "CELL and CELL:TAG; replica / cell, within +-%.0f%%):\n",
		       100 * FIDELITY_TOLERANCE);
		printf("%-10s %-18s %10s %15s %10s %15s %7s  %s\n", "mix", "cell", "measured",
		       "searches' range", "replica", "searches' range", "ratio", "within");
		for (int i = 0; i < f.nr_rows; i++) {
			const struct sim_fidelity_row *r = &f.row[i];

			printf("%-10s %-18s %10.1f %6.1f .. %5.1f %10.1f %6.1f .. %5.1f %7.2f  %s\n",
			       r->sim->mix, r->sim->policy, r->measured->qps, r->measured->qps_lo,
			       r->measured->qps_hi, r->sim->qps, r->sim->qps_lo, r->sim->qps_hi,
			       r->ratio, r->within ? "yes" : "NO");
		}
		printf("the measurement against itself: %d of %d cells within +-%.0f%%, %d of %d "
		       "mixes ranked the same (a model's ceiling on this run)\n",
		       f.nr_within, f.nr_compared, 100 * FIDELITY_TOLERANCE, f.nr_mixes_same,
		       f.nr_mixes);
	}
	sim_fidelity_free(&f);
	sim_qps_table_free(&simcli_cells);
	sim_qps_table_free(&replicas);
	return 0;
fail:
	fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
	return 1;
}

/*
 * One way of taking QoS-QPS: simulated against measured, cell by cell and
 * per mix, the verdict, then the measurement against itself where it has
 * replicas. 0, or 1 on an error (printed).
 */
static int print_check(const char *how, const char *explain, const struct sim_qps_table *sim,
		       const struct sim_qps_table *measured)
{
	struct coloc_err err = { 0 };
	struct sim_fidelity f;
	int ret;

	if (sim_fidelity_compare(sim, measured, FIDELITY_TOLERANCE, &f, &err)) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		return 1;
	}
	printf("\nfidelity check against %s, QoS-QPS %s (%s; simulated / measured, within "
	       "+-%.0f%%):\n",
	       simcli_opts.measured, how, explain, 100 * FIDELITY_TOLERANCE);
	printf("%-10s %-18s %10s %15s %10s %15s %7s  %-6s %-8s %s\n", "mix", "policy", "simulated",
	       "seeds' range", "measured", "searches' range", "ratio", "within", "in range",
	       "ranges meet");
	for (int i = 0; i < f.nr_rows; i++) {
		const struct sim_fidelity_row *r = &f.row[i];

		if (!r->measured) {
			printf("%-10s %-18s %10.1f %6.1f .. %5.1f %10s %15s %7s  not measured\n",
			       r->sim->mix, r->sim->policy, r->sim->qps, r->sim->qps_lo,
			       r->sim->qps_hi, "-", "-", "-");
			continue;
		}
		printf("%-10s %-18s %10.1f %6.1f .. %5.1f %10.1f %6.1f .. %5.1f %7.2f  %-6s %-8s "
		       "%s\n",
		       r->sim->mix, r->sim->policy, r->sim->qps, r->sim->qps_lo, r->sim->qps_hi,
		       r->measured->qps, r->measured->qps_lo, r->measured->qps_hi, r->ratio,
		       r->within ? "yes" : "NO", r->in_range ? "yes" : "no",
		       r->ranges_meet ? "yes" : "no");
	}
	for (int k = 0; k < f.nr_mixes; k++)
		printf("ranking of policies on mix %s: %s (%d of %d pairs ordered the other way)\n",
		       f.mix[k].mix,
		       f.mix[k].same_ranking ? "the same" :
		       f.mix[k].pairs	     ? "DIFFERENT" :
					       "not compared",
		       f.mix[k].discordant, f.mix[k].pairs);
	printf("measured inside the simulated seeds' range: %d of %d cells; the seeds' and the "
	       "measured searches' ranges meet: %d of %d (neither is the issue's bar)\n",
	       f.nr_in_range, f.nr_compared, f.nr_ranges_meet, f.nr_compared);
	printf("fidelity (%s): %d of %d compared cells within +-%.0f%%, %d of %d mixes ranked "
	       "the same: %s\n",
	       how, f.nr_within, f.nr_compared, 100 * FIDELITY_TOLERANCE, f.nr_mixes_same,
	       f.nr_mixes,
	       f.nr_compared && f.nr_within == f.nr_compared && f.nr_mixes_same == f.nr_mixes ?
		       "PASS" :
		       "FAIL (fix the model before quoting a many-core number)");
	ret = print_replicas(measured);
	sim_fidelity_free(&f);
	return ret;
}

/*
 * The fidelity check against make bench-qos's measurements: QoS-QPS as
 * bench-qos takes it (each search's highest pass, the median of a cell's
 * searches), then, with its points.tsv, by the crossing of every point of
 * a cell (sim_crossing_qps). 0, or 1 on a bad file (printed).
 */
int simcli_print_fidelity(void)
{
	struct sim_qps_table measured, crossing = { 0 };
	struct coloc_err err = { 0 };
	int ret;

	if (access(simcli_opts.measured, F_OK)) {
		printf("\nfidelity check: no measured results at %s yet; run `make bench-qos` on "
		       "this machine to measure them, then `make bench-sim` again.\n",
		       simcli_opts.measured);
		return 0;
	}
	if (sim_qps_table_load_tsv(simcli_opts.measured, &measured, &err)) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		return 1;
	}
	ret = print_check("by the search",
			  "each search's highest passing load, the median of a cell's searches",
			  &simcli_found, &measured);
	if (!ret && simcli_found_crossing.nr) {
		ret = sim_loads_crossing(&simcli_measured_loads, &measured, SIM_QOS_FRACTION,
					 &crossing, &err);
		if (ret)
			fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		else
			ret = print_check("by every point",
					  "a cell's searches pooled, the worst tenant's share "
					  "within QoS fitted non-increasing in load, where it "
					  "crosses 95 %; simulated: the seeds in groups as many as "
					  "the measured searches",
					  &simcli_found_crossing, &crossing);
		sim_qps_table_free(&crossing);
	}
	sim_qps_table_free(&measured);
	return ret ? 1 : 0;
}

/* --scaling: how our profiles become scaled:NAME tables, and how far off they are. */
int simcli_print_scaling(const struct sim_table_dirs *dirs)
{
	static const char *const model[2] = { "ResNet-50 (the time ratio fitted on it)",
					      "GoogLeNet" };
	struct coloc_err err = { 0 };
	struct sim_scaling s;

	if (sim_scaling_fit(dirs, &s, &err)) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		return 1;
	}
	printf("scaled:NAME: our profile's 1-core cells x g(k) of the layer's class / time ratio,\n"
	       "k = 8, 16, .. 64 (sim/README.md). g(k) = s + (1 - s - o) / k + o k, fitted\n"
	       "on VELTAIR's ResNet-50 and GoogLeNet layers (t(k) = a + b / k + c k each), in\n"
	       "classes by T1, the layer's time on one of VELTAIR's cores\n");
	printf("%-16s %7s %8s %9s %9s %9s %7s\n", "class (T1, us)", "layers", "s", "o", "g(8)",
	       "g(64)", "best k");
	for (int c = 0; c < SIM_SCALE_CLASSES; c++) {
		const struct sim_scale_class *k = &s.cls[c];
		double lo = c ? s.cls[c - 1].max_work_us : 0;
		double work = c ? lo : k->max_work_us / 2;
		int best_k = 1;
		char range[32];

		for (int n = 2; n <= 256; n++)
			if (sim_scaling_curve(&s, work, n) < sim_scaling_curve(&s, work, best_k))
				best_k = n;
		if (isinf(k->max_work_us))
			snprintf(range, sizeof(range), ">= %.0f", lo);
		else
			snprintf(range, sizeof(range), "%.0f-%.0f", lo, k->max_work_us);
		printf("%-16s %7d %8.4f %9.6f %9.4f %9.4f %7d%s\n", range, k->nr_layers, k->serial,
		       k->per_core, sim_scaling_curve(&s, work, 8), sim_scaling_curve(&s, work, 64),
		       best_k, k->nr_layers ? "" : "  (no layer: its neighbour's curve)");
	}
	printf("error on VELTAIR's own cells, each layer anchored at its 8-core cell: %.1f %%;\n"
	       "each model by the curves of the other alone: %.1f %%\n",
	       100 * s.fit_mape, 100 * s.cross_mape);
	printf("time ratio: our ResNet-50 on one core here over theirs on one of VELTAIR's: %.3f\n",
	       s.time_ratio);
	for (int i = 0; i < 2; i++) {
		printf("whole model scaled-ours / theirs - 1, %s, by the curves of both models:\n ",
		       model[i]);
		for (int ci = 0; ci < s.nr_counts[i]; ci++)
			printf(" %d:%+.0f%%", s.counts[i][ci], 100 * s.model_err[i][ci]);
		printf("\n  by the curves of the other model alone%s:\n ",
		       i ? " (GoogLeNet wholly held out)" : "");
		for (int ci = 0; ci < s.nr_counts[i]; ci++)
			printf(" %d:%+.0f%%", s.counts[i][ci], 100 * s.model_err_cross[i][ci]);
		printf("\n");
	}
	if (s.two_core_cells)
		printf("our 2-core cells / (g(2) x our 1-core cells): median %.2f over %d layers "
		       "(1.00: the curve holds at 2 cores here)\n",
		       s.two_core_ratio, s.two_core_cells);
	return 0;
}

/*
 * --capacity --search: the ceiling with a queue (sim_capacity_queued()),
 * searched once per seed as a policy is, its median beside the fluid
 * ceiling, and the median seed's split.
 */
static int print_capacity_queued(struct sim_params *p, const struct tenant_arg *ta, int nr,
				 bool pooled, double fluid_qps)
{
	int n = (int)simcli_opts.seeds, m, ret = 0, points = 0, sets = 0;
	struct sim_capacity_queued *q = calloc((size_t)n, sizeof(*q));
	struct coloc_err err = { 0 };
	double qps[64], wall = 0, lo = INFINITY, hi = 0;

	if (!q) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	for (int i = 0; i < n && !ret; i++) {
		p->seed = (uint64_t)simcli_opts.seed + (uint64_t)i;
		ret = sim_capacity_queued(p, (int)simcli_opts.cores, (int)simcli_opts.executors,
					  pooled, simcli_opts.start_qps, simcli_opts.tol, &q[i],
					  &err);
		qps[i] = q[i].qos_qps;
		lo = fmin(lo, qps[i]);
		hi = fmax(hi, qps[i]);
		points += q[i].points;
		sets += q[i].candidates;
		wall += q[i].wall_s;
	}
	p->seed = (uint64_t)simcli_opts.seed;
	if (ret) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		free(q);
		return 1;
	}
	m = simcli_median_index(qps, n);
	printf("ceiling with a queue, each query whole on fixed servers %s, %ld lane%s a tenant, "
	       "%s: QoS-QPS %.1f",
	       pooled ? "all tenants share" : "of its model's", simcli_opts.executors,
	       simcli_opts.executors > 1 ? "s" : "",
	       p->even_arrivals ? "even arrivals" : "Poisson arrivals", qps[m]);
	if (n > 1)
		printf(" (median of %d seeds; %.1f .. %.1f)", n, lo, hi);
	printf(", %.1f %% of the fluid ceiling; %d server sets, %d runs in %.1f s\n",
	       fluid_qps > 0 ? 100 * qps[m] / fluid_qps : 0, sets, points, wall);
	printf("  its servers, seed %ld:", simcli_opts.seed + m);
	for (int g = 0; g < q[m].nr_groups; g++) {
		int t = 0, copies = 0;

		for (int u = nr - 1; u >= 0; u--)
			if (q[m].split.group[u] == g) {
				t = u;
				copies++;
			}
		printf("%s %s x%d ", g ? "," : "", pooled ? "every tenant" : ta[t].table.name,
		       copies);
		for (int i = 0; i < q[m].split.nr[g]; i++)
			printf("%s%d", i ? "+" : "", q[m].split.cores[g][i]);
		if (!q[m].split.nr[g])
			printf("none");
	}
	printf(" cores\n");
	free(q);
	return 0;
}

/*
 * sim_capacity_bound()'s ceiling, over temporal's most and the plain one;
 * on one socket only (a block's cores on several are not bounded).
 */
static int print_capacity_bound(const struct sim_params *p, const struct tenant_arg *ta,
				const struct sim_capacity_tenant *t, int nr,
				const struct sim_capacity *c)
{
	double m = p->interference.socket_slowdown;
	struct coloc_err err = { 0 };
	struct sim_capacity_bound b;

	if (simcli_opts.sockets > 1) {
		printf("capacity ceiling: bounded on one socket only, not on %ld\n",
		       simcli_opts.sockets);
		return 0;
	}
	if (sim_capacity_bound(t, nr, (int)simcli_opts.cores, (int)simcli_opts.executors, m,
			       SIM_QOS_FRACTION, &b, &err)) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		return 1;
	}
	printf("%-24s %15s %15s %15s %15s\n", "tenant", "least ms", "ms at bound", "socket ms",
	       "by hindsight");
	for (int i = 0; i < nr; i++)
		printf("%-24s %15.3f %15.3f %15.4f %15.4f\n", ta[i].table.name, b.fastest_ms[i],
		       b.ms[i], b.socket_ms[i], b.hindsight_ms[i]);
	printf("capacity ceiling on %ld cores, an upper bound with the socket's slowdown (%.2f "
	       "at every core busy) at the occupancy a schedule picks, each layer at its "
	       "cheapest count, %.0f %% within QoS, each tenant's queries timed with hindsight "
	       "against the waits they make on its lanes: %.2fx (%.1f QPS, %.0f %% of the plain "
	       "ceiling; %.1f QPS with each queue at its fastest time, %.1f if no query "
	       "waited)\n",
	       simcli_opts.cores, fmax(m, 1), 100 * SIM_QOS_FRACTION, b.qps / c->temporal_qps,
	       b.qps, c->ceiling_qps > 0 ? 100 * b.qps / c->ceiling_qps : 0, b.queue_qps,
	       b.socket_qps);
	return 0;
}

/*
 * --capacity: sim_capacity()'s plain ceiling over temporal, with the
 * tenants' executors (--executors, or the lanes of --lanes: a lane runs one
 * block at a time as an executor does) and without that bound, and each
 * tenant's counts at it; then the ceiling with the socket, the bound; with
 * --search, the plain ceiling with a queue after it.
 */
int simcli_print_capacity(struct sim_params *p, const struct tenant_arg *ta, int nr)
{
	struct sim_capacity_tenant t[POLICY_MAX_TENANTS] = { 0 };
	struct coloc_err err = { 0 };
	struct sim_capacity c;

	for (int i = 0; i < nr; i++)
		t[i] = (struct sim_capacity_tenant){ .costs = &ta[i].table.costs,
						     .qos_ms = ta[i].qos_ms,
						     .share = ta[i].share };
	if (sim_capacity(t, nr, (int)simcli_opts.cores, (int)simcli_opts.executors, &c, &err)) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		return 1;
	}
	printf("%-24s %8s %9s %7s %22s %11s\n", "tenant", "QoS ms", "fastest k", "ms",
	       "at the ceiling: k (ms)", "share at k1");
	for (int i = 0; i < nr; i++) {
		const struct sim_capacity_pick *p = &c.pick[i];
		char at[64] = "none within QoS";

		if (p->k[0])
			snprintf(at, sizeof(at), "%d (%.2f) / %d (%.2f)", p->k[0], p->ms[0], p->k[1],
				 p->ms[1]);
		printf("%-24s %8.2f %9d %7.2f %22s %10.0f%%\n", ta[i].table.name, ta[i].qos_ms,
		       c.fast_k[i], c.fast_ms[i], at, 100 * p->frac);
	}
	if (!c.unbounded_qps) {
		printf("capacity: a tenant cannot meet its QoS alone on any core count\n");
		return 0;
	}
	printf("temporal's most: %.1f QPS (one query at a time, each at its fastest)\n",
	       c.temporal_qps);
	printf("without the executors' bound (a tenant's queries side by side, as many as "
	       "come): %.1f QPS, %.2fx\n",
	       c.unbounded_qps, c.unbounded_qps / c.temporal_qps);
	printf("plain ceiling on %ld cores, queries side by side at their cheapest core count "
	       "within QoS, %ld %s%s a tenant, over one at a time at the fastest: %.2fx "
	       "(%.1f QPS; no interference, no waiting)\n",
	       simcli_opts.cores, simcli_opts.executors, simcli_opts.lanes ? "lane" : "executor",
	       simcli_opts.executors > 1 ? "s" : "", c.ceiling_qps / c.temporal_qps, c.ceiling_qps);
	if (print_capacity_bound(p, ta, t, nr, &c))
		return 1;
	if (!simcli_opts.search)
		return 0;
	return print_capacity_queued(p, ta, nr, false, c.ceiling_qps) ?:
		       print_capacity_queued(p, ta, nr, true, c.ceiling_qps);
}
