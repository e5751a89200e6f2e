/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Inside coloc-sim (tools/coloc-sim.c): its options (options.c, a table),
 * the tenants of a run (tenants.c), the cells it runs and their searches
 * (runs.c), the executor model and the block trace (fits.c) and what it
 * prints at the end (reports.c).
 */
#ifndef COLOC_TOOLS_COLOC_SIM_H
#define COLOC_TOOLS_COLOC_SIM_H

#include <stdbool.h>
#include <stdio.h>
#include "fidelity.h"
#include "parts.h"

#define PROG "coloc-sim"
#define TABLES_FROM_REPO "data/veltair"
#define MODELS_FROM_REPO "models"
#define MIXES_FROM_REPO "tools/qos-mixes.conf"
#define FIDELITY_TOLERANCE 0.15

/* The command line, defaults in options.c. */
struct simcli_opts {
	const char *policy;
	long cores, sockets, llc;
	double qps, duration_s, warmup_s, full_slowdown;
	double socket_slowdown; /* --socket-slowdown; full_slowdown's when not given */
	bool socket_given;
	long seed, seeds;
	long executors; /* --executors: each tenant's (policy_tenant.executors) */
	long lanes; /* --lanes: the executors as lanes of one process (0: processes) */
	bool search, json, late_serve, duration_given, brief, query_cost_in_blocks;
	bool even_arrivals; /* --arrivals even */
	const char *trace, *tables, *models, *profiles, *mixes, *mix, *measured, *qos_from;
	const char *exec_from; /* block logs to fit the executor model on; NULL: none */
	const char *parts; /* --parts: the serving path's parts file; NULL: none */
	bool penalty_given, exec_per_run, print_scaling, capacity;
	double speed_rho; /* --speed-rho; < 0: the fitted one (0 without --exec-from) */
	enum sim_level_source level_source; /* --level */
	const char *block_trace; /* --block-trace FILE: every block of a single run */
	double start_qps, tol;
	double block_cost_us, query_cost_us; /* query_cost_us < 0: from the served solo latency */
	double query_cost_sigma, shared_penalty, query_cost_warm_ms;
	const struct sim_bq_search *like; /* search as bench-qos does; NULL: coloc-sim's own */
	long confirm; /* --confirm K: like's walk, K x as long (0: none; -1: like's own) */
};
extern struct simcli_opts simcli_opts;

struct tenant_arg {
	char spec[256];
	double qos_ms; /* 0: qos_factor x the solo latency on the simulated cores */
	double qos_factor;
	double share; /* 0: inversely proportional to the QoS */
	double served_solo_ms; /* bench-qos's solo latency as served; 0: not known */
	double query_cost_ms;
	struct sim_exec_timing exec; /* from --exec-from */
	struct sim_parts parts; /* from --parts */
	struct policy_table table;
};

/* --tenant's, in order; a mix's replace them (simcli_mix_tenants) */
extern struct tenant_arg simcli_tenants[POLICY_MAX_TENANTS];
extern int simcli_nr_tenants;

/*
 * A policy as it is run: with its tenants' executors, under the name its
 * results go by (POLICY, with --executors; POLICY@N, with N, as bench-qos
 * names a cell).
 */
struct cell {
	const struct policy_entry *entry;
	int executors;
	char name[80];
};
#define MAX_CELLS 64
extern struct cell simcli_cells[MAX_CELLS];
extern int simcli_nr_cells;

/* What every (mix, policy) searched found, for the summary and the fidelity check. */
extern struct sim_qps_table simcli_found;
/*
 * Every load point bench-qos measured (points.tsv beside --measured), and
 * what the searches found by the crossing of theirs (sim_crossing_qps);
 * nr 0: none
 */
extern struct sim_loads_table simcli_measured_loads;
extern struct sim_qps_table simcli_found_crossing;
/* bench-qos's QoS and served solo latency of each mix's tenants (--qos-from); nr 0: none */
extern struct sim_served simcli_served;
/* the executor model fitted on --exec-from's block logs; nr_rows 0: none */
extern struct sim_exec_fit simcli_exec_fit;
/* --parts's rows; nr 0: none */
extern struct sim_parts_file simcli_parts;

/* options.c */
void simcli_usage(FILE *out);
/* Parses the command line into simcli_opts and simcli_tenants: -1 to go on, else the exit status. */
int simcli_parse(int argc, char **argv);
/* Refuses options that do not go together: 0, or 2 (printed). */
int simcli_check(void);

/* tenants.c */
const char *simcli_repo_path(const char *rel, char *buf, size_t len);
int simcli_load_tenants(struct tenant_arg *ta, int nr, const struct sim_table_dirs *dirs,
			struct sim_tenant *tenants);
int simcli_mix_tenants(const struct sim_mix *mix, struct tenant_arg *ta);

/* runs.c */
int simcli_build_cells(void);
/* Index of the median of nr seeds' QoS-QPS (the lower middle one when nr is even; nr <= 64). */
int simcli_median_index(const double *qps, int nr);
int simcli_run_policy(struct sim_params *p, const struct tenant_arg *ta, const char *mix,
		      const char *name, bool first);

/* fits.c */
/* --block-trace: where the blocks go, and whose they are */
struct simcli_block_trace {
	FILE *f;
	const struct sim_tenant *tenants;
};
void simcli_trace_block(void *ctx, const struct sim_block_record *b);
void simcli_print_exec_fit(void);
void simcli_set_speed(struct sim_params *p, const struct sim_speed_fit *fit);
int simcli_exec_per_run(const char *mix, const char *policy, struct tenant_arg *ta, int nr,
			struct sim_params *p);

/* reports.c */
void simcli_print_summary(const struct sim_mixes *mixes, bool all_mixes);
int simcli_print_fidelity(void);
int simcli_print_scaling(const struct sim_table_dirs *dirs);
int simcli_print_capacity(struct sim_params *p, const struct tenant_arg *ta, int nr);

#endif /* COLOC_TOOLS_COLOC_SIM_H */
