// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-sim's executor model and block trace: the model fitted on
 * bench-qos's block logs printed, applied to a run (its slow spells, each
 * run's own log with --exec-per-run), and every block of a run written as
 * colocd's block log has it (--block-trace).
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

/* One block as colocd's block log has it (the columns the simulation knows). */
void simcli_trace_block(void *ctx, const struct sim_block_record *b)
{
	const struct simcli_block_trace *bt = ctx;
	const struct policy_decision *d = b->d;
	const struct policy_costs *m = bt->tenants[d->tenant].costs;
	int ci = policy_costs_core_index(m, d->nr_cores);
	uint64_t alone = 0;

	for (int l = d->first_layer; l < d->last_layer; l++)
		alone += policy_costs_cell(m, l, d->versions[l - d->first_layer], ci, 0);
	fprintf(bt->f, "%.3f\t%s\t%llu\t%d\t%d\t%d\t%.1f\t%.1f\n", (double)b->end_ns * 1e-6,
		bt->tenants[d->tenant].name, (unsigned long long)d->query_id, d->first_layer,
		d->last_layer, d->nr_cores, (double)alone * 1e-3,
		(double)(b->end_ns - b->start_ns) * 1e-3);
}

/* The machine's slow spells as fitted (speed.c), with the correlations they were fitted on. */
static void print_speed_fit(void)
{
	const struct sim_speed_fit *f = &simcli_exec_fit.speed;

	printf("  the machine's slow spells: rho %.3f, tau %.0f ms (rms error %.3f over %ld pairs of "
	       "blocks of different tenants)%s\n",
	       f->rho, f->tau_ms, f->rms_error, f->pairs,
	       simcli_opts.speed_rho >= 0 ? "; --speed-rho given instead" : "");
	if (!f->pairs)
		return;
	printf("    correlation by gap (ms, up to):");
	for (int b = 0; b < SIM_SPEED_BINS; b++)
		printf(" %.0f: %.2f", sim_speed_bin_ms(b), f->corr[b]);
	printf("\n");
}

/* The executor model as fitted, with its fit error (sim/README.md, "The executor model"). */
void simcli_print_exec_fit(void)
{
	printf("executor model fitted on %d block logs (%ld blocks) of %s:\n",
	       simcli_exec_fit.nr_files, simcli_exec_fit.nr_blocks, simcli_opts.exec_from);
	printf("  warm-up time %.0f ms for every model (it explains %.1f %% of the squared log "
	       "error of measured / table)\n",
	       simcli_exec_fit.warm_ms, 100 * simcli_exec_fit.warm_gain);
	printf("  %-16s %5s %6s %6s %5s %5s %8s   left over q95 (fit) q99 (fit)\n", "model",
	       "cores", "blocks", "factor", "cold", "sigma", "dispatch");
	for (int i = 0; i < simcli_exec_fit.nr_rows; i++) {
		const struct sim_exec_row *r = &simcli_exec_fit.row[i];

		printf("  %-16s %5d %6d %6.3f %5.3f %5.3f %5.0f us   %5.3f (%5.3f)  %5.3f (%5.3f)\n",
		       r->model, r->cores, r->n, r->factor, r->cold, r->sigma, r->dispatch_us,
		       r->q95, r->q95_fit, r->q99, r->q99_fit);
	}
	printf("  blocks under %.0f us in the table: measured - table x factor (us; drawn from "
	       "these quantiles), least measured / table, dispatch\n",
	       SIM_EXEC_MIN_ALONE_US);
	printf("  %-16s %5s %6s %6s %6s %6s %6s %6s %6s %6s %8s\n", "model", "cores", "blocks",
	       "mean", "(fit)", "p50", "p90", "p99", "max", "floor", "dispatch");
	for (int i = 0; i < simcli_exec_fit.nr_rows; i++) {
		const struct sim_exec_row *r = &simcli_exec_fit.row[i];

		if (r->n_small)
			printf("  %-16s %5d %6d %6.0f %6.0f %6.0f %6.0f %6.0f %6.0f %6.2f %5.0f us%s\n",
			       r->model, r->cores, r->n_small, r->small_extra_us,
			       sim_exec_small_mean(r->small_q_us),
			       sim_exec_small_extra(r->small_q_us, 0.5),
			       sim_exec_small_extra(r->small_q_us, 0.9),
			       sim_exec_small_extra(r->small_q_us, 0.99),
			       sim_exec_small_extra(r->small_q_us, 1), r->small_floor,
			       r->small_dispatch_us,
			       r->small_floor > 0 ? "" : " (too few: the long blocks' model)");
	}
	print_speed_fit();
	if (!simcli_exec_fit.nr_shared)
		return;
	printf("  on shared cores (alone there: no other block overlapped):\n");
	printf("  %-16s %6s %9s %10s %10s %10s %9s\n", "model", "alone", "collapsed", "collapse_p",
	       "collapse_x", "overlapped", "q-err");
	for (int i = 0; i < simcli_exec_fit.nr_shared; i++) {
		const struct sim_exec_shared_row *r = &simcli_exec_fit.shared[i];

		printf("  %-16s %6d %9d %10.3f %10.3f %10d %9.3f\n", r->model, r->n_alone,
		       r->n_collapsed, r->collapse_p, r->collapse_x, r->n_overlapped, r->fit_error);
	}
	printf("  time-sharing penalty %.2f (rms log error of the overlapped blocks' quartiles "
	       "and p90: %.3f)%s\n",
	       simcli_exec_fit.penalty, simcli_exec_fit.penalty_error,
	       simcli_opts.penalty_given ? "; --shared-penalty given instead" : "");
}

/* The machine's slow spells: as fitted, or --speed-rho's share at the fitted time (1 s if none). */
void simcli_set_speed(struct sim_params *p, const struct sim_speed_fit *fit)
{
	double tau_ms = fit->tau_ms > 0 ? fit->tau_ms : 1000;

	p->speed_rho = simcli_opts.speed_rho >= 0 ? simcli_opts.speed_rho : fit->rho;
	p->speed_tau_ns = (uint64_t)llround(tau_ms * 1e6);
}

/*
 * --exec-per-run: each tenant's executor model from the run's own log
 * (mix, policy), the core counts and collapse it lacks from all the logs;
 * a run not logged keeps the model of all the logs. The time-sharing
 * penalty likewise, unless --shared-penalty was given.
 */
int simcli_exec_per_run(const char *mix, const char *policy, struct tenant_arg *ta, int nr,
			struct sim_params *p)
{
	struct coloc_err err = { 0 };
	struct sim_exec_fit run;
	int ret = sim_exec_fit_log(simcli_opts.exec_from, mix, policy, &run, &err);

	if (ret && ret != -ENOENT) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		return 1;
	}
	if (!simcli_opts.penalty_given)
		p->shared_penalty = !ret && run.penalty ? run.penalty : simcli_exec_fit.penalty;
	simcli_set_speed(p, !ret && run.speed.rho > 0 ? &run.speed : &simcli_exec_fit.speed);
	for (int t = 0; t < nr; t++) {
		struct sim_exec_timing own;

		if (sim_exec_timing_from_fit(&simcli_exec_fit, ta[t].table.name, &ta[t].exec,
					     &err)) {
			fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
			sim_exec_fit_free(&run);
			return 1;
		}
		if (ret || sim_exec_timing_from_fit(&run, ta[t].table.name, &own, &err))
			continue;
		for (int k = 1; k <= SIM_EXEC_MAX_CORES; k++) {
			if (!own.factor[k])
				continue;
			ta[t].exec.factor[k] = own.factor[k];
			ta[t].exec.sigma[k] = own.sigma[k];
			ta[t].exec.cold[k] = own.cold[k];
			ta[t].exec.dispatch_ns[k] = own.dispatch_ns[k];
			ta[t].exec.small_n[k] = own.small_n[k];
			memcpy(ta[t].exec.small_extra_ns[k], own.small_extra_ns[k],
			       sizeof(own.small_extra_ns[k]));
			ta[t].exec.small_floor[k] = own.small_floor[k];
			ta[t].exec.small_dispatch_ns[k] = own.small_dispatch_ns[k];
		}
		ta[t].exec.warm_ns = own.warm_ns;
		for (int i = 0; i < run.nr_shared; i++)
			if (!strcmp(run.shared[i].model, ta[t].table.name)) {
				ta[t].exec.collapse_p = own.collapse_p;
				ta[t].exec.collapse_x = own.collapse_x;
			}
	}
	if (!ret)
		sim_exec_fit_free(&run);
	return 0;
}
