// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-sim's tenants: where the repository's tables, models and mixes
 * are, each tenant's table loaded with its QoS and rate share fixed, and a
 * mix's models as tenants.
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

/*
 * rel (a path from the repository's root) in the repository the binary was
 * built in, else from the cwd.
 */
const char *simcli_repo_path(const char *rel, char *buf, size_t len)
{
	/* from bin/ or from build/san/bin/ up to the repository */
	static const char *const ups[] = { "/..", "/../../.." };
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct stat st;

	if (n > 0) {
		const char *dir;

		exe[n] = '\0';
		dir = dirname(exe);
		for (size_t i = 0; i < sizeof(ups) / sizeof(ups[0]); i++) {
			snprintf(buf, len, "%s%s/%s", dir, ups[i], rel);
			if (!stat(buf, &st))
				return buf;
		}
	}
	return rel;
}

/* ta's parts from --parts, with its model's bytes; 0 or 1 (printed). */
static int load_parts(struct tenant_arg *ta, const struct sim_table_dirs *dirs,
		      struct sim_tenant *tenant, int t)
{
	double solo = (double)policy_costs_solo_ns(&ta->table.costs, (int)simcli_opts.cores);
	struct coloc_err err = { 0 };
	uint64_t in, out;

	if (sim_model_io_bytes(ta->spec, dirs, &in, &out, &err) ||
	    sim_parts_for_model(&simcli_parts, ta->table.name, solo * 1e-6, in, out, &ta->parts,
				&err)) {
		fprintf(stderr, PROG ": tenant %d: --parts %s: %s\n", t, simcli_opts.parts,
			coloc_err_str(&err));
		return 1;
	}
	tenant->parts = &ta->parts;
	return 0;
}

/*
 * Loads the tenants' tables and fixes each QoS (a factor of the solo
 * latency on the simulated cores, where given so) and rate share
 * (inversely proportional to the QoS, where not given). 0 or 1 (printed).
 */
int simcli_load_tenants(struct tenant_arg *ta, int nr, const struct sim_table_dirs *dirs,
			struct sim_tenant *tenants)
{
	struct coloc_err err = { 0 };

	for (int t = 0; t < nr; t++) {
		struct policy_table *tab = &ta[t].table;

		if (sim_table_load(ta[t].spec, dirs, tab, &err)) {
			fprintf(stderr, PROG ": tenant %d: %s\n", t, coloc_err_str(&err));
			return 1;
		}
		if (tab->note[0])
			fprintf(stderr, PROG ": tenant %d (%s): %s\n", t, tab->name, tab->note);
		if (!ta[t].qos_ms) {
			uint64_t solo = policy_costs_solo_ns(&tab->costs, (int)simcli_opts.cores);

			if (!solo) {
				fprintf(stderr,
					PROG ": tenant %d (%s): no profiled core count fits in %ld "
					     "cores, so no solo latency to scale the QoS from\n",
					t, tab->name, simcli_opts.cores);
				return 1;
			}
			ta[t].qos_ms = ta[t].qos_factor * (double)solo * 1e-6;
		}
		if (!ta[t].share)
			ta[t].share = 1.0 / ta[t].qos_ms;
		ta[t].query_cost_ms = simcli_opts.query_cost_us * 1e-3;
		if (simcli_opts.query_cost_us < 0) {
			double solo =
				(double)policy_costs_solo_ns(&tab->costs, (int)simcli_opts.cores);

			if (!ta[t].served_solo_ms) {
				fprintf(stderr,
					PROG
					": tenant %d (%s): --query-cost-us auto needs its solo "
					"latency as served (--mix with --qos-from FILE)\n",
					t, tab->name);
				return 1;
			}
			/* bench-qos's solo: one block (temporal) of the profiled latency */
			ta[t].query_cost_ms = fmax(0, ta[t].served_solo_ms - solo * 1e-6 -
							      simcli_opts.block_cost_us * 1e-3);
		}
		tenants[t] = (struct sim_tenant){
			.costs = &tab->costs,
			.name = tab->name,
			.qos_ns = (uint64_t)llround(ta[t].qos_ms * 1e6),
			.share = ta[t].share,
			.query_cost_ns = (uint64_t)llround(ta[t].query_cost_ms * 1e6),
		};
		if (simcli_exec_fit.nr_rows) {
			if (sim_exec_timing_from_fit(&simcli_exec_fit, tab->name, &ta[t].exec,
						     &err)) {
				fprintf(stderr, PROG ": tenant %d: %s\n", t, coloc_err_str(&err));
				return 1;
			}
			tenants[t].exec = &ta[t].exec;
		}
		if (simcli_parts.nr && load_parts(&ta[t], dirs, &tenants[t], t))
			return 1;
	}
	return 0;
}

/*
 * The tenants of a mix, rates inversely proportional to QoS. QoS: as
 * bench-qos gave it (--qos-from), else 2x solo on the simulated cores.
 * -1 when --qos-from lacks one of them (printed).
 */
int simcli_mix_tenants(const struct sim_mix *mix, struct tenant_arg *ta)
{
	for (int t = 0; t < mix->nr_models; t++) {
		const struct sim_served_tenant *st =
			sim_served_find(&simcli_served, mix->name, mix->model[t]);

		ta[t] = (struct tenant_arg){ .qos_factor = 2, .share = 0 };
		snprintf(ta[t].spec, sizeof(ta[t].spec), "%s", mix->model[t]);
		if (!simcli_served.nr)
			continue;
		if (!st) {
			fprintf(stderr,
				PROG ": %s has no line for tenant %s of mix %s: was it measured "
				     "with the same mixes file?\n",
				simcli_opts.qos_from, mix->model[t], mix->name);
			return -1;
		}
		ta[t].qos_ms = st->qos_ms;
		ta[t].served_solo_ms = st->solo_ms;
	}
	return mix->nr_models;
}
