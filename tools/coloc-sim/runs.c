// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-sim's cells (a policy with its executors, as bench-qos names it)
 * and what it runs for each on a tenant set: one run at a load, or the
 * QoS-QPS search once per seed, its median and the crossing of every load
 * point; the results kept for the summary and the fidelity check.
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
#include "coloc_sim.h"

/* What every (mix, policy) searched found, for the summary and the fidelity check. */
struct sim_qps_table simcli_found;
/*
 * Every load point bench-qos measured (points.tsv beside --measured), and
 * what the searches found by the crossing of theirs (sim_crossing_qps);
 * nr 0: none
 */
struct sim_loads_table simcli_measured_loads;
struct sim_qps_table simcli_found_crossing;
/* bench-qos's QoS and served solo latency of each mix's tenants (--qos-from); nr 0: none */
struct sim_served simcli_served;
/* the executor model fitted on --exec-from's block logs; nr_rows 0: none */
struct sim_exec_fit simcli_exec_fit;
struct sim_parts_file simcli_parts;

struct cell simcli_cells[MAX_CELLS];
int simcli_nr_cells;

/* The run's core time as cores (sim_account over the counted window), each part's mean. */
static void print_run_account(const struct sim_params *p, const struct sim_result *r)
{
	const struct sim_account *a = &r->account;
	double w = (double)(p->duration_ns - p->warmup_ns);
	double idle = a->idle_runnable_ns + a->idle_lane_ns + a->idle_empty_ns;
	double held = a->work_ns + a->knee_ns + a->cost_ns + a->contention_ns;

	/* none for a run on fixed servers (--capacity --search's, capacity_queued.c) */
	if (w <= 0 || idle + held <= 0)
		return;
	printf("  cores, mean: held %.2f = work %.2f + knee %.2f + costs %.2f + contention %.2f\n"
	       "  cores, mean: idle %.2f = %.2f while the policy left a query waiting (%.2f such"
	       " queries, mean over the window) + %.2f while queries waited behind their"
	       " tenant's own + %.2f with none waiting\n",
	       held / w, a->work_ns / w, a->knee_ns / w, a->cost_ns / w, a->contention_ns / w,
	       idle / w, a->idle_runnable_ns / w, a->runnable_ns / w, a->idle_lane_ns / w,
	       a->idle_empty_ns / w);
}

/* Where the time went: each tenant's blocks, cores and waits, and the cores' busy share. */
static void print_run_usage(const struct sim_params *p, const struct tenant_arg *ta,
			    const struct sim_result *r)
{
	double window_s = (double)(p->duration_ns - p->warmup_ns) * 1e-9;

	printf("  %-20s %9s %9s %10s %11s %12s\n", "tenant", "blocks/q", "cores/blk",
	       "exec busy", "wait ms", "core-ms/q");
	for (int t = 0; t < p->nr_tenants; t++) {
		const struct sim_tenant_result *tr = &r->tenant[t];
		double n = tr->started ? (double)tr->started : 1;

		printf("  %-20s %9.2f %9.2f %9.1f%% %11.3f %12.2f\n", ta[t].table.name,
		       (double)tr->blocks / n,
		       tr->blocks ? (double)tr->block_cores / (double)tr->blocks : 0,
		       window_s > 0 ? 100 * (double)tr->block_ns * 1e-9 / window_s /
					      (p->executors > 1 ? p->executors : 1) :
				      0,
		       (double)tr->wait_ns * 1e-6 / n, tr->core_ns * 1e-6 / n);
	}
	printf("  cores held by blocks: %.1f %% of %d cores x the counted window\n",
	       100 * r->busy_fraction, p->machine.nr_cores);
	print_run_account(p, r);
}

static void print_run_text(const struct sim_params *p, const struct tenant_arg *ta,
			   const struct sim_result *r)
{
	printf("  %-20s %7s %6s %8s %8s %7s %8s %8s %7s %7s %7s\n", "tenant", "QoS ms", "share",
	       "arrived", "done", "within", "dropped", "unserved", "p50 ms", "p95 ms", "p99 ms");
	for (int t = 0; t < p->nr_tenants; t++) {
		const struct sim_tenant_result *tr = &r->tenant[t];

		printf("  %-20s %7.1f %6.2f %8llu %8llu %6.1f%% %8llu %8llu %7.2f %7.2f %7.2f\n",
		       ta[t].table.name, ta[t].qos_ms, ta[t].share, (unsigned long long)tr->arrived,
		       (unsigned long long)tr->completed, 100 * tr->fraction_within,
		       (unsigned long long)tr->dropped, (unsigned long long)tr->unserved,
		       tr->p50_ms, tr->p95_ms, tr->p99_ms);
	}
	print_run_usage(p, ta, r);
	printf("  policy_decide: %llu calls, p50 %.2f us, p99 %.2f us (wall time here, noisy)\n",
	       (unsigned long long)r->decide_calls, r->decide_p50_us, r->decide_p99_us);
	printf("  simulated %.2f s in %.2f s of wall time (%llu events)\n",
	       (double)r->end_ns * 1e-9, r->wall_s, (unsigned long long)r->events);
}

static void print_run_json(const struct sim_params *p, const struct tenant_arg *ta,
			   const struct sim_result *r)
{
	printf("{\"events\": %llu, \"simulated_s\": %.6f, \"wall_s\": %.3f, "
	       "\"decide\": {\"calls\": %llu, \"p50_us\": %.3f, \"p99_us\": %.3f}, \"tenants\": [",
	       (unsigned long long)r->events, (double)r->end_ns * 1e-9, r->wall_s,
	       (unsigned long long)r->decide_calls, r->decide_p50_us, r->decide_p99_us);
	for (int t = 0; t < p->nr_tenants; t++) {
		const struct sim_tenant_result *tr = &r->tenant[t];

		printf("%s{\"model\": \"%s\", \"qos_ms\": %g, \"share\": %g, \"arrived\": %llu, "
		       "\"completed\": %llu, \"within\": %llu, \"dropped\": %llu, \"unserved\": %llu, "
		       "\"fraction_within\": %.6f, \"p50_ms\": %.4f, \"p95_ms\": %.4f, "
		       "\"p99_ms\": %.4f}",
		       t ? ", " : "", ta[t].table.name, ta[t].qos_ms, ta[t].share,
		       (unsigned long long)tr->arrived, (unsigned long long)tr->completed,
		       (unsigned long long)tr->within, (unsigned long long)tr->dropped,
		       (unsigned long long)tr->unserved, tr->fraction_within, tr->p50_ms,
		       tr->p95_ms, tr->p99_ms);
	}
	printf("]}");
}

int simcli_median_index(const double *qps, int nr)
{
	int order[64];

	for (int i = 0; i < nr; i++) {
		int k = i;

		/* insertion by QoS-QPS, stable: a tie keeps the lower seed first */
		for (; k > 0 && qps[order[k - 1]] > qps[i]; k--)
			order[k] = order[k - 1];
		order[k] = i;
	}
	return order[(nr - 1) / 2];
}

/*
 * A cell bench-qos measured in N searches, by the crossing of every load
 * point as the measurement is taken: the seeds' searches in groups of N
 * (seeds 1..N, N+1..2N, ...), each group's points pooled, the median of
 * the groups into found_crossing (their least and most its range). Nothing
 * for a cell not measured, or fewer seeds than N. 0 or -ENOMEM.
 */
static int add_crossing(const struct sim_search_result *s, int nr, const char *mix,
			const char *name, struct coloc_err *err)
{
	const struct sim_cell_loads *mc = sim_loads_find(&simcli_measured_loads, mix, name);
	int group = mc && mc->searches > 0 ? mc->searches : 0, groups = group ? nr / group : 0;
	struct sim_load_point *pts;
	double q[64];
	int ret = 0;

	if (!groups)
		return 0;
	pts = malloc((size_t)group * SIM_SEARCH_MAX_LOADS * sizeof(*pts));
	if (!pts)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	for (int g = 0; g < groups && !ret; g++) {
		int n = 0;

		for (int i = g * group; i < (g + 1) * group; i++)
			for (int k = 0; k < s[i].nr_loads; k++)
				pts[n++] = s[i].load[k];
		ret = sim_crossing_qps(pts, n, SIM_QOS_FRACTION, &q[g], err);
	}
	free(pts);
	if (!ret) /* the median sorts q: its ends are the range */
		ret = sim_qps_table_add(&simcli_found_crossing, mix, name,
					sim_median_double(q, groups), 0, err);
	if (!ret) {
		simcli_found_crossing.cell[simcli_found_crossing.nr - 1].qps_lo = q[0];
		simcli_found_crossing.cell[simcli_found_crossing.nr - 1].qps_hi = q[groups - 1];
	}
	return ret;
}

/*
 * One cell (name: POLICY, or POLICY@N) on one tenant set: a run at opts.qps,
 * or the search once per seed; 0 or 1 (failure, printed).
 */
int simcli_run_policy(struct sim_params *p, const struct tenant_arg *ta, const char *mix,
		      const char *name, bool first)
{
	int nr = simcli_opts.search ? (int)simcli_opts.seeds : 1, m, points = 0;
	struct sim_search_result *s = calloc((size_t)nr, sizeof(*s)), *med;
	struct coloc_err err = { 0 };
	double wall = 0, lo = 0, hi = 0, solo_ms[POLICY_MAX_TENANTS], seed_qps[64];
	struct sim_bq_search like = { 0 };
	int ret = 0;

	if (simcli_opts.like) {
		like = *simcli_opts.like;
		if (simcli_opts.confirm >= 0)
			like.confirm = (int)simcli_opts.confirm;
	}

	/* bench-qos's saturation: from the latency served alone where known */
	for (int t = 0; t < p->nr_tenants; t++)
		solo_ms[t] = ta[t].served_solo_ms ?:
						    (double)policy_costs_solo_ns(p->tenants[t].costs,
										 p->machine.nr_cores) *
					     1e-6;

	if (!s) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	for (int i = 0; i < nr && !ret; i++) {
		p->seed = (uint64_t)simcli_opts.seed + (uint64_t)i;
		if (simcli_opts.search && simcli_opts.like)
			ret = sim_search_bench_qos(p, &like, solo_ms, SIM_QOS_FRACTION, &s[i],
						   &err);
		else if (simcli_opts.search)
			ret = sim_search_qos_qps(p, SIM_QOS_FRACTION, simcli_opts.start_qps,
						 simcli_opts.tol, &s[i], &err);
		else
			ret = sim_run(p, &s[i].at_best, &err);
		points += s[i].points;
		wall += simcli_opts.search ? s[i].wall_s : s[i].at_best.wall_s;
		lo = i ? fmin(lo, s[i].qos_qps) : s[i].qos_qps;
		hi = i ? fmax(hi, s[i].qos_qps) : s[i].qos_qps;
	}
	p->seed = (uint64_t)simcli_opts.seed;
	if (ret) {
		fprintf(stderr, PROG ": policy %s: %s\n", name, coloc_err_str(&err));
		free(s);
		return 1;
	}
	for (int i = 0; i < nr; i++)
		seed_qps[i] = s[i].qos_qps;
	m = simcli_median_index(seed_qps, nr);
	med = &s[m];
	if (simcli_opts.search && add_crossing(s, nr, mix, name, &err)) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		free(s);
		return 1;
	}
	if (simcli_opts.search &&
	    sim_qps_table_add(&simcli_found, mix, name, med->qos_qps, 0, &err)) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		free(s);
		return 1;
	}
	if (simcli_opts.search) {
		simcli_found.cell[simcli_found.nr - 1].qps_lo = lo;
		simcli_found.cell[simcli_found.nr - 1].qps_hi = hi;
	}
	if (simcli_opts.json) {
		printf("%s{\"policy\": \"%s\", ", first ? "" : ",\n", name);
		if (simcli_opts.search) {
			printf("\"qos_qps\": %.2f, \"fail_qps\": %.2f, \"median_seed\": %ld, "
			       "\"qos_qps_per_seed\": [",
			       med->qos_qps, med->fail_qps, simcli_opts.seed + m);
			for (int i = 0; i < nr; i++)
				printf("%s%.2f", i ? ", " : "", s[i].qos_qps);
			printf("], \"points\": %d, \"search_wall_s\": %.3f, ", points, wall);
		} else if (!p->trace) {
			printf("\"qps\": %.3f, ", p->qps);
		}
		printf("\"run\": ");
		print_run_json(p, ta,
			       simcli_opts.search && !med->qos_qps ? &med->at_fail : &med->at_best);
		printf("}");
	} else if (simcli_opts.search && simcli_opts.brief) {
		printf("  %-18s QoS-QPS %8.1f", name, med->qos_qps);
		if (nr > 1)
			printf("  (median of %d seeds; %.1f .. %.1f)", nr, lo, hi);
		printf("  %d runs, %.1f s\n", points, wall);
	} else if (simcli_opts.search && !med->qos_qps) {
		printf("policy %s: no load meets QoS (fails at every load down to %.2f QPS), %d "
		       "runs in %.2f s of wall time; seed %ld at %.1f QPS:\n",
		       name, med->fail_qps, points, wall, simcli_opts.seed + m, med->at_fail_qps);
		print_run_text(p, ta, &med->at_fail);
	} else if (simcli_opts.search) {
		printf("policy %s: QoS-QPS %.1f", name, med->qos_qps);
		if (nr > 1)
			printf(" (median of %d seeds; %.1f .. %.1f)", nr, lo, hi);
		printf(", fails at %.1f; %d runs in %.2f s of wall time; seed %ld at %.1f QPS:\n",
		       med->fail_qps, points, wall, simcli_opts.seed + m, med->qos_qps);
		print_run_text(p, ta, &med->at_best);
	} else {
		printf("policy %s:\n", name);
		print_run_text(p, ta, &med->at_best);
	}
	free(s);
	return 0;
}

/* Adds the cell of name (POLICY or POLICY@N) unless it is there; 0, or -1 (printed). */
static int add_cell(const char *name)
{
	struct coloc_err err = { 0 };
	const struct policy_entry *e;
	int executors;

	if (sim_cell_parse(name, &e, &executors, &err)) {
		fprintf(stderr, PROG ": %s; known: all", coloc_err_str(&err));
		for (int i = 0; policy_entry_at(i); i++)
			fprintf(stderr, " %s", policy_entry_at(i)->name);
		fprintf(stderr, ", each also as POLICY@N\n");
		return -1;
	}
	for (int i = 0; i < simcli_nr_cells; i++)
		if (!strcmp(simcli_cells[i].name, name))
			return 0;
	if (simcli_nr_cells == MAX_CELLS || strlen(name) >= sizeof(simcli_cells[0].name)) {
		fprintf(stderr, PROG ": more than %d policies, or a name too long: %s\n", MAX_CELLS,
			name);
		return -1;
	}
	simcli_cells[simcli_nr_cells] =
		(struct cell){ .entry = e, .executors = executors ?: (int)simcli_opts.executors };
	snprintf(simcli_cells[simcli_nr_cells].name, sizeof(simcli_cells[0].name), "%s", name);
	simcli_nr_cells++;
	return 0;
}

/*
 * The cells to run: --policy's (all: every policy of the table), then, with
 * --measured, every POLICY@N cell measured of a policy among them, so that a
 * bench-qos run is simulated with the executors it served each cell with.
 * 0, or -1 (printed).
 */
int simcli_build_cells(void)
{
	char buf[512], *save = NULL;
	struct coloc_err err = { 0 };
	struct sim_qps_table m;
	int nr_listed, ret = 0;

	snprintf(buf, sizeof(buf), "%s", simcli_opts.policy);
	for (char *n = strtok_r(buf, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
		if (strcmp(n, "all")) {
			if (add_cell(n))
				return -1;
			continue;
		}
		for (int i = 0; policy_entry_at(i); i++)
			if (add_cell(policy_entry_at(i)->name))
				return -1;
	}
	/* a file that is missing or does not load is the check's to report */
	if (!simcli_opts.measured || access(simcli_opts.measured, F_OK) ||
	    sim_qps_table_load_tsv(simcli_opts.measured, &m, &err))
		return 0;
	nr_listed = simcli_nr_cells;
	for (int i = 0; i < m.nr && !ret; i++) {
		const struct policy_entry *e;
		int executors;

		/* a replica (CELL:TAG) is compared with its cell, not simulated */
		if (!strchr(m.cell[i].policy, '@') || strchr(m.cell[i].policy, ':') ||
		    sim_cell_parse(m.cell[i].policy, &e, &executors, &err))
			continue;
		for (int c = 0; c < nr_listed && !ret; c++)
			if (simcli_cells[c].entry == e)
				ret = add_cell(m.cell[i].policy);
	}
	sim_qps_table_free(&m);
	return ret;
}
