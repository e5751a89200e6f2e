// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-sim: runs a policy of the policy table (the same code colocd runs)
 * on a simulated machine of many cores, with tenants on VELTAIR's published
 * latency tables or on coloc's own profiles of this machine (converted as
 * colocd converts them), Poisson or traced arrivals and the interference
 * model of sim/ (sim/README.md says what it assumes and where it comes
 * from). One run at a given load, or the QoS-QPS search (the highest load
 * at which 95 % of every tenant's queries meet QoS), for tenants given one
 * by one or for the mixes `make bench-qos` measures; then, optionally, the
 * fidelity check against what bench-qos measured. Prints per-tenant results
 * and what policy_decide() cost in the simulator's own calls. This file is
 * the program's course; its parts are in tools/coloc-sim/ (coloc_sim.h).
 */
#define _GNU_SOURCE
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "coloc-sim/coloc_sim.h"

/* --mix's mixes (all, or the one named): 0, or the exit status (printed). */
static int load_mixes(struct sim_mixes *mixes, bool *all_mixes)
{
	char buf[PATH_MAX + 64];
	struct coloc_err err = { 0 };

	*all_mixes = simcli_opts.mix && !strcmp(simcli_opts.mix, "all");
	if (simcli_opts.mix) {
		if (sim_mixes_load(simcli_opts.mixes ?:
					   simcli_repo_path(MIXES_FROM_REPO, buf, sizeof(buf)),
				   mixes, &err)) {
			fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
			return 1;
		}
		if (!*all_mixes && !sim_mixes_find(mixes, simcli_opts.mix)) {
			fprintf(stderr, PROG ": no mix named '%s'; known: all", simcli_opts.mix);
			for (int m = 0; m < mixes->nr; m++)
				fprintf(stderr, " %s", mixes->mix[m].name);
			fprintf(stderr, "\n");
			return 2;
		}
	}
	return 0;
}

/*
 * What the run compares with or is fitted on: bench-qos's load points and
 * QoS beside --measured, --qos-from's, --exec-from's executor model. 0, or
 * the exit status (printed).
 */
static int load_measured(void)
{
	/* with --mix, simcli_opts.qos_from may name it */
	static char points_buf[PATH_MAX + 64];
	char measured_dir[PATH_MAX];
	struct coloc_err err = { 0 };

	if (simcli_opts.measured) {
		/*
		 * bench-qos writes points.tsv beside results.tsv: with --mix the
		 * QoS it gave, and every load point for the check by their crossing
		 */
		snprintf(measured_dir, sizeof(measured_dir), "%s", simcli_opts.measured);
		snprintf(points_buf, sizeof(points_buf), "%s/points.tsv", dirname(measured_dir));
		if (!access(points_buf, F_OK)) {
			if (simcli_opts.mix && !simcli_opts.qos_from)
				simcli_opts.qos_from = points_buf;
			if (sim_loads_load_tsv(points_buf, &simcli_measured_loads, &err)) {
				fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
				return 1;
			}
		}
	}
	if (simcli_opts.qos_from &&
	    sim_served_load_tsv(simcli_opts.qos_from, &simcli_served, &err)) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		return 1;
	}
	if (simcli_opts.query_cost_us < 0 && !simcli_served.nr) {
		fprintf(stderr, PROG ": --query-cost-us auto: no served solo latencies (give "
				     "--qos-from bench-qos's points.tsv, or --measured with it "
				     "beside)\n");
		return 1;
	}
	if (simcli_opts.parts && sim_parts_file_load(simcli_opts.parts, &simcli_parts, &err)) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		return 1;
	}
	if (simcli_opts.exec_from) {
		if (sim_exec_fit_dir(simcli_opts.exec_from, &simcli_exec_fit, &err)) {
			fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
			return 1;
		}
		if (!simcli_opts.penalty_given && simcli_exec_fit.penalty)
			simcli_opts.shared_penalty = simcli_exec_fit.penalty;
		if (!simcli_opts.json)
			simcli_print_exec_fit();
	}
	return 0;
}

/* How the header line names the arrivals (and a search). */
static const char *arrivals_said(void)
{
	if (simcli_opts.trace)
		return "traced arrivals";
	if (simcli_opts.search)
		return simcli_opts.even_arrivals ? "QoS-QPS search, even arrivals" :
						   "QoS-QPS search";
	return simcli_opts.even_arrivals ? "even arrivals" : "Poisson arrivals";
}

/* The run's parameters from the options (tenants, trace: where they will be). 0, or 2 (printed). */
static int make_params(struct sim_params *p, struct sim_tenant *tenants,
		       const struct sim_trace *trace)
{
	struct policy_config machine_cfg;
	struct coloc_err err = { 0 };

	*p = (struct sim_params){
		.machine = { .nr_cores = (int)simcli_opts.cores,
			     .nr_sockets = (int)simcli_opts.sockets,
			     .llc_size = (int)simcli_opts.llc },
		.late = simcli_opts.late_serve ? POLICY_LATE_SERVE : POLICY_LATE_DROP,
		.tenants = tenants,
		.qps = simcli_opts.qps,
		.trace = simcli_opts.trace ? trace : NULL,
		.even_arrivals = simcli_opts.even_arrivals,
		.duration_ns = (uint64_t)llround(simcli_opts.duration_s * 1e9),
		.seed = (uint64_t)simcli_opts.seed,
		.interference = { .full_slowdown = simcli_opts.full_slowdown,
				  .socket_slowdown = simcli_opts.socket_given ?
							     simcli_opts.socket_slowdown :
							     simcli_opts.full_slowdown },
		.block_cost_ns = (uint64_t)llround(simcli_opts.block_cost_us * 1e3),
		.query_cost_sigma = simcli_opts.query_cost_sigma,
		.query_cost_in_blocks = simcli_opts.query_cost_in_blocks,
		.query_cost_warm_ns = (uint64_t)llround(simcli_opts.query_cost_warm_ms * 1e6),
		.shared_penalty = simcli_opts.shared_penalty,
		.executors = (int)simcli_opts.executors,
		.lanes = simcli_opts.lanes > 0,
		.level_source = simcli_opts.level_source,
		.max_queued = SIM_DEFAULT_MAX_QUEUED,
	};
	simcli_set_speed(p, &simcli_exec_fit.speed);
	/* a trace without --duration runs to its last arrival */
	if (simcli_opts.trace && trace->nr && !simcli_opts.duration_given)
		p->duration_ns = trace->time_ns[trace->nr - 1] + 1;
	/* Poisson runs start empty, so their start is not counted; a trace is counted whole */
	p->warmup_ns = simcli_opts.trace ? 0 : p->duration_ns / 10;
	if (simcli_opts.warmup_s >= 0)
		p->warmup_ns = (uint64_t)llround(simcli_opts.warmup_s * 1e9);
	if (sim_machine_config(&p->machine, p->late, &machine_cfg, &err)) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		return 2;
	}
	return 0;
}

/* What the runs below are, in a line or two (JSON: its opening). */
static void print_header(const struct sim_params *p)
{
	if (simcli_opts.capacity)
		printf(PROG
		       ": %ld cores, what the tables allow (each layer in its fastest version, alone)\n",
		       simcli_opts.cores);
	else if (simcli_opts.json)
		printf("{\"cores\": %ld, \"sockets\": %ld, \"llc\": %ld, \"seed\": %ld, "
		       "\"duration_s\": %g, \"warmup_s\": %g, \"full_slowdown\": %g, "
		       "\"socket_slowdown\": %g, \"results\": [\n",
		       simcli_opts.cores, simcli_opts.sockets, simcli_opts.llc, simcli_opts.seed,
		       (double)p->duration_ns * 1e-9, (double)p->warmup_ns * 1e-9,
		       simcli_opts.full_slowdown, p->interference.socket_slowdown);
	else
		printf(PROG
		       ": %ld cores (%ld socket%s, LLC domains of %ld), %s, %.1f s per run "
		       "(warm-up %.1f s), seed %ld; full-domain slowdown %.2f, full-socket %.2f; "
		       "block cost %.0f us, query cost spread %.2f, time-sharing penalty %.2f\n",
		       simcli_opts.cores, simcli_opts.sockets, simcli_opts.sockets > 1 ? "s" : "",
		       simcli_opts.llc, arrivals_said(), (double)p->duration_ns * 1e-9,
		       (double)p->warmup_ns * 1e-9, simcli_opts.seed, simcli_opts.full_slowdown,
		       p->interference.socket_slowdown, simcli_opts.block_cost_us,
		       simcli_opts.query_cost_sigma, simcli_opts.shared_penalty);
	if (simcli_opts.lanes && !simcli_opts.json)
		printf("%ld lane%s a tenant: one executor process, one copy of the weights, blocks "
		       "of up to %ld of its queries at once (colocd --executor-lanes, colocctl "
		       "submit --executors %ld)\n",
		       simcli_opts.lanes, simcli_opts.lanes > 1 ? "s" : "", simcli_opts.lanes,
		       simcli_opts.lanes);
	else if (simcli_opts.executors > 1 && !simcli_opts.json)
		printf("%ld executors a tenant: blocks of up to %ld of its queries at once (colocctl "
		       "submit --executors %ld)\n",
		       simcli_opts.executors, simcli_opts.executors, simcli_opts.executors);
	if (simcli_served.nr && !simcli_opts.json)
		printf("QoS of each mix's tenants as bench-qos gave it: %s\n",
		       simcli_opts.qos_from);
	if (simcli_opts.like && !simcli_opts.json)
		printf("searched as bench-qos%s does: its loads and point durations (%.0f..%.0f s "
		       "after %.0f s of warm-up), not the run length above\n",
		       simcli_opts.like == &sim_bq_quick ? " --quick" : "", simcli_opts.like->min_s,
		       simcli_opts.like->max_s, simcli_opts.like->warmup_s);
	if (!simcli_opts.search && !simcli_opts.trace && !simcli_opts.json && !simcli_opts.capacity)
		printf("load: %.1f QPS in total\n", simcli_opts.qps);
}

/* --block-trace: the file and its header, p's observer writing to it. 0, or 1 (printed). */
static int open_block_trace(struct simcli_block_trace *bt, struct sim_params *p,
			    const struct sim_tenant *tenants)
{
	if (simcli_opts.block_trace) {
		bt->f = fopen(simcli_opts.block_trace, "w");
		if (!bt->f) {
			fprintf(stderr, PROG ": cannot write %s: %m\n", simcli_opts.block_trace);
			return 1;
		}
		bt->tenants = tenants;
		fputs("end_ms\ttenant\tquery\tfirst\tlast\tcores\talone_us\tround_trip_us\n",
		      bt->f);
		p->on_block = simcli_trace_block;
		p->ctx = bt;
	}
	return 0;
}

/*
 * Every tenant set (--tenant's, or each mix) under every cell: 0, or 1
 * (printed). With --capacity, what the first set's tables allow instead.
 */
static int run_sets(struct sim_params *p, const struct sim_mixes *mixes, bool all_mixes,
		    const struct sim_table_dirs *dirs, struct sim_tenant *tenants)
{
	struct tenant_arg *ta = simcli_tenants;
	int nr_tenants = simcli_nr_tenants, nr_sets = simcli_opts.mix ? mixes->nr : 1, nr_run = 0;
	int rc = 0;

	for (int set = 0; set < nr_sets && !rc; set++) {
		const char *set_name = "tenants";

		if (simcli_opts.mix) {
			if (!all_mixes && strcmp(mixes->mix[set].name, simcli_opts.mix))
				continue;
			set_name = mixes->mix[set].name;
			nr_tenants = simcli_mix_tenants(&mixes->mix[set], ta);
			if (nr_tenants < 0) {
				rc = 1;
				break;
			}
		}
		p->nr_tenants = nr_tenants;
		if (simcli_load_tenants(ta, nr_tenants, dirs, tenants)) {
			rc = 1;
		} else if (simcli_opts.capacity) {
			rc = simcli_print_capacity(p, ta, nr_tenants);
			for (int t = 0; t < nr_tenants; t++)
				policy_table_free(&ta[t].table);
			return rc;
		} else if (!simcli_opts.json) {
			printf("== %s:", set_name);
			for (int t = 0; t < nr_tenants; t++)
				if (simcli_exec_fit.nr_rows)
					printf(" %s (QoS %.2f ms, share %.3f)", ta[t].table.name,
					       ta[t].qos_ms, ta[t].share);
				else
					printf(" %s (QoS %.2f ms, share %.3f, query cost %.2f ms)",
					       ta[t].table.name, ta[t].qos_ms, ta[t].share,
					       ta[t].query_cost_ms);
			printf("\n");
		}
		for (int c = 0; !rc && c < simcli_nr_cells; c++) {
			p->policy = simcli_cells[c].entry;
			p->executors = simcli_cells[c].executors;
			if (simcli_opts.exec_per_run &&
			    simcli_exec_per_run(set_name, simcli_cells[c].name, ta, nr_tenants,
						p)) {
				rc = 1;
				break;
			}
			rc |= simcli_run_policy(p, ta, set_name, simcli_cells[c].name, !nr_run++);
		}
		for (int t = 0; t < nr_tenants; t++)
			policy_table_free(&ta[t].table);
	}
	if (simcli_opts.json)
		printf("\n]}\n");
	if (!rc && simcli_opts.mix && simcli_opts.search)
		simcli_print_summary(mixes, all_mixes);
	if (!rc && simcli_opts.measured)
		rc = simcli_print_fidelity();
	return rc;
}

int main(int argc, char **argv)
{
	static struct sim_mixes mixes;
	struct sim_tenant tenants[POLICY_MAX_TENANTS];
	struct sim_trace trace = { 0 };
	struct sim_params p;
	struct simcli_block_trace bt = { 0 };
	struct sim_table_dirs dirs = { 0 };
	struct coloc_err err = { 0 };
	char tables_buf[PATH_MAX + 64], models_buf[PATH_MAX + 64];
	bool all_mixes = false;
	int rc = simcli_parse(argc, argv);

	if (rc >= 0)
		return rc;
	if (simcli_build_cells())
		return 2;
	dirs.veltair = simcli_opts.tables ?:
			       simcli_repo_path(TABLES_FROM_REPO, tables_buf, sizeof(tables_buf));
	dirs.models = simcli_opts.models ?:
			      simcli_repo_path(MODELS_FROM_REPO, models_buf, sizeof(models_buf));
	dirs.profiles = simcli_opts.profiles;
	if (simcli_opts.print_scaling)
		return simcli_print_scaling(&dirs);
	rc = simcli_check() ?: load_mixes(&mixes, &all_mixes) ?: load_measured();
	if (rc)
		return rc;
	if (simcli_opts.trace &&
	    sim_trace_load(simcli_opts.trace, simcli_nr_tenants, &trace, &err)) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		rc = 1;
	}
	rc = rc ?: make_params(&p, tenants, &trace);
	if (!rc) {
		print_header(&p);
		rc = open_block_trace(&bt, &p, tenants) ?:
			     run_sets(&p, &mixes, all_mixes, &dirs, tenants);
	}
	if (bt.f && fclose(bt.f) && !rc) {
		fprintf(stderr, PROG ": writing %s: %m\n", simcli_opts.block_trace);
		rc = 1;
	}
	sim_trace_free(&trace);
	sim_qps_table_free(&simcli_found);
	sim_qps_table_free(&simcli_found_crossing);
	sim_loads_free(&simcli_measured_loads);
	sim_served_free(&simcli_served);
	sim_exec_fit_free(&simcli_exec_fit);
	sim_parts_file_free(&simcli_parts);
	return rc;
}
