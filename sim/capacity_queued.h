/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The ceiling with a queue (coloc-sim --capacity --search): the best fixed
 * split of the cores into servers (a model's, or all tenants'), each query
 * whole on the server that ends it first, under the same arrivals and the
 * same QoS-QPS search as the policies' runs. A schedule anyone could run,
 * beside --capacity's fluid bound (sim/capacity.c), which no queue reaches.
 * docs/measurements/simulator.md, "coloc against a ceiling with a queue".
 */
#ifndef COLOC_SIM_CAPACITY_QUEUED_H
#define COLOC_SIM_CAPACITY_QUEUED_H

#include "sim.h"

#define SIM_MAX_SERVERS 8 /* a group's: as many as its tenants' lanes together */

/*
 * Servers of counts of the tenants' tables: group g has nr[g] of them, of
 * cores[g][i] cores each, and tenant t's queries go to group[t]'s.
 */
struct sim_servers {
	int nr[POLICY_MAX_TENANTS];
	int cores[POLICY_MAX_TENANTS][SIM_MAX_SERVERS];
	int group[POLICY_MAX_TENANTS];
	int lanes; /* a tenant's queries in service at once, at most (0: no bound) */
	/* tenant t draws the arrivals of tenant t + stream_shift[t] of the seed (0: its own) */
	int stream_shift[POLICY_MAX_TENANTS];
};

/*
 * sim_run() with p->servers: each group's tenants' arrivals (p's rates,
 * seed, warm-up and duration) first come first served on the group's
 * servers, a query on its tenant's first free lane and to the server that
 * ends it first then (the smaller on a tie),
 * in its table's whole-model time alone there (sim_capacity_model_ms());
 * no interference, no serving cost. Fills r's counts, percentiles and busy
 * fraction. -EINVAL for a server of a count a table lacks.
 */
int sim_servers_run(const struct sim_params *p, struct sim_result *r, struct coloc_err *err);

struct sim_capacity_queued {
	struct sim_servers split; /* the best split found; every nr 0 when none meets QoS */
	int nr_groups;
	double qos_qps; /* the search on it: search.qos_qps */
	struct sim_search_result search;
	int candidates; /* server sets searched, all tenants */
	int points; /* runs made, the split's search included */
	double wall_s;
};

/*
 * The best split of cores among base's tenants into groups' servers.
 * Tenants of one model (the same name, QoS and share: its copies) share a
 * group's servers (a tenant alone could not be given a server of its own
 * on heavy mixes: two ResNet-50, two Tiny-YOLOv2 and two GoogLeNet need 80
 * of 64 cores); pooled, every tenant is in one group, any query on any
 * server. A tenant runs at most lanes queries at once (a later one waits
 * for its lane, as in colocd); a group has at most lanes a tenant servers
 * (and SIM_MAX_SERVERS), of counts every tenant of it has and one meets
 * its QoS on. Each group's
 * every set is searched alone (sim_search_qos_qps on its tenants' arrivals
 * in the mix), the split is the highest total load at which every group's
 * cheapest passing set fits the cores together, and that split is searched
 * as a whole. -EINVAL on a bad argument.
 */
int sim_capacity_queued(const struct sim_params *base, int cores, int lanes, bool pooled,
			double start_qps, double tol, struct sim_capacity_queued *q,
			struct coloc_err *err);

#endif /* COLOC_SIM_CAPACITY_QUEUED_H */
