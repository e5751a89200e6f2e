/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * coloc-sim's fidelity check against make bench-qos (fidelity.c, loads.c):
 * reading bench-qos's TSVs (what it served, each cell's QoS-QPS and its
 * load points), the tables of simulated and measured cells, and the
 * comparison of the two. sim/README.md, "The fidelity check".
 */
#ifndef COLOC_SIM_FIDELITY_H
#define COLOC_SIM_FIDELITY_H

#include "sim.h"

/* One data row of a TSV: its fields f[n], and col[] the wanted columns' indexes in them. */
typedef int (*sim_tsv_row_fn)(void *ctx, char **f, int n, const int *col, const char *path,
			      int lineno, struct coloc_err *err);
#define SIM_TSV_MAX_COLS 12
/*
 * Reads a tab-separated file: a header that must name every column of
 * want[nr_want] (any order, others ignored; a name starting with '?' is
 * optional, its col[] -1 when missing), then each non-empty row through
 * row, which stops the read by returning an error.
 */
int sim_tsv_load(const char *path, const char *const *want, int nr_want, sim_tsv_row_fn row,
		 void *ctx, struct coloc_err *err);

/* What bench-qos used for one tenant of one mix (its points.tsv). */
struct sim_served_tenant {
	char mix[32];
	char tenant[64];
	double solo_ms; /* median latency of the model served alone by colocd (temporal) */
	double qos_ms; /* the QoS bench-qos gave it */
};

struct sim_served {
	struct sim_served_tenant *t;
	int nr, cap;
};

/*
 * make bench-qos's points.tsv: a header naming the tab-separated columns,
 * among them mix, tenant, solo_ms and qos_ms, then one line per tenant and
 * load point; each (mix, tenant) is kept once, and a second line that
 * disagrees on solo_ms or qos_ms is an error.
 */
int sim_served_load_tsv(const char *path, struct sim_served *s, struct coloc_err *err);

/*
 * A bench-qos cell's policy: POLICY, or POLICY@N for that policy with every
 * tenant on N executor processes (bench-qos --policies), either maybe with
 * a replica tag, ":TAG" (a-z, 0-9): the same cell measured again, side by
 * side. *entry, and *executors N (0 for a bare POLICY: as the run gives).
 * -ENOENT for an unknown policy, -EINVAL for a bad N or tag, both named.
 */
int sim_cell_parse(const char *name, const struct policy_entry **entry, int *executors,
		   struct coloc_err *err);
const struct sim_served_tenant *sim_served_find(const struct sim_served *s, const char *mix,
						const char *tenant);
void sim_served_free(struct sim_served *s);

/* QoS-QPS of one policy on one mix, simulated or measured. */
struct sim_qps_cell {
	char mix[32];
	char policy[32];
	double qps; /* the highest total QPS with >= 95 % of every tenant within QoS; 0: none */
	double p99_over_solo; /* p99 latency / solo latency at medium load; 0: unknown */
	/*
	 * simulated over several seeds, or measured by several searches (bench-qos
	 * --repeats): the lowest and highest; both qps for one
	 */
	double qps_lo, qps_hi;
};

struct sim_qps_table {
	struct sim_qps_cell *cell;
	int nr, cap;
};

/* Appends a cell; -EEXIST for a (mix, policy) given twice. */
int sim_qps_table_add(struct sim_qps_table *t, const char *mix, const char *policy, double qps,
		      double p99_over_solo, struct coloc_err *err);
const struct sim_qps_cell *sim_qps_table_find(const struct sim_qps_table *t, const char *mix,
					      const char *policy);
void sim_qps_table_free(struct sim_qps_table *t);
/*
 * make bench-qos's results.tsv: a header line naming the tab-separated
 * columns, among them mix, policy, qos_qps and p99_over_solo (in any order;
 * other columns are ignored) and maybe searches (each search's QoS-QPS,
 * comma-separated: the cell's qps_lo and qps_hi), then one line per mix and
 * policy.
 */
int sim_qps_table_load_tsv(const char *path, struct sim_qps_table *t, struct coloc_err *err);

struct sim_fidelity_row {
	const struct sim_qps_cell *sim;
	const struct sim_qps_cell *measured; /* NULL: not measured */
	double ratio; /* simulated / measured; 0 when not compared or measured 0 */
	bool within; /* |ratio - 1| <= tolerance (measured 0: simulated 0 too) */
	bool in_range; /* measured within the simulated [qps_lo, qps_hi] */
	/* the simulated seeds' range and the measured searches' range overlap */
	bool ranges_meet;
};

struct sim_fidelity_mix {
	char mix[32];
	int pairs; /* pairs of policies both simulated and measured */
	int discordant; /* pairs ordered strictly the other way by the measurement */
	bool same_ranking; /* pairs > 0 and none discordant */
};

struct sim_fidelity {
	struct sim_fidelity_row *row; /* one per simulated cell, in its order */
	int nr_rows, nr_compared, nr_within, nr_in_range, nr_ranges_meet;
	struct sim_fidelity_mix *mix; /* in order of first appearance */
	int nr_mixes, nr_mixes_same;
};

/*
 * The measurement against itself: for every measured replica CELL:TAG whose
 * CELL was measured too, CELL into *cells and the replica, under the name
 * CELL, into *replicas (searches' ranges kept), so that
 * sim_fidelity_compare(replicas, cells) compares them as it compares a
 * simulation. One replica per cell; both tables empty without any.
 */
int sim_qps_table_split_replicas(const struct sim_qps_table *measured, struct sim_qps_table *cells,
				 struct sim_qps_table *replicas, struct coloc_err *err);

/* Every simulated cell next to its measured one (tolerance: 0.15 for +-15 %). */
int sim_fidelity_compare(const struct sim_qps_table *sim, const struct sim_qps_table *measured,
			 double tolerance, struct sim_fidelity *f, struct coloc_err *err);
void sim_fidelity_free(struct sim_fidelity *f);

/* ---- every load point of a measured cell (loads.c) ------------------------------- */

/* The points bench-qos ran of one cell, each (search, load) once, tenants in first-seen order. */
struct sim_cell_loads {
	char mix[32];
	char policy[32];
	int searches; /* the highest search number among them */
	int nr_tenants;
	char tenant[POLICY_MAX_TENANTS][64];
	struct sim_load_point *load;
	int nr, cap;
};

struct sim_loads_table {
	struct sim_cell_loads *cell;
	int nr, cap;
};

/*
 * make bench-qos's points.tsv (columns mix, policy, total_qps, tenant,
 * sent, within_qos and maybe search, found by the header; without search,
 * one search) as load points per cell; a bad row is named.
 */
int sim_loads_load_tsv(const char *path, struct sim_loads_table *t, struct coloc_err *err);
const struct sim_cell_loads *sim_loads_find(const struct sim_loads_table *t, const char *mix,
					    const char *policy);
void sim_loads_free(struct sim_loads_table *t);
/*
 * Each cell's QoS-QPS by sim_crossing_qps over all its searches' points
 * into *out, qps_lo and qps_hi the least and most of its searches' alone;
 * only the cells of `only` where it is not NULL (e.g. the finished ones of
 * results.tsv).
 */
int sim_loads_crossing(const struct sim_loads_table *t, const struct sim_qps_table *only,
		       double fraction, struct sim_qps_table *out, struct coloc_err *err);

#endif /* COLOC_SIM_FIDELITY_H */
