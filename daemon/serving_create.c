// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The serving core's life (serving.h): serving_create reads its
 * configuration (limits, hooks, the CPUs it serves and their LLC and
 * socket, the policy, this machine as the profile cache names it);
 * serving_destroy refuses the tenants being admitted, fails every queued
 * query, stops every executor and waits for the retired ones. Kept out
 * of serving.c, which holds a query's way (docs/design/daemon-structure.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpulist.h"
#include "isa_probe.h"
#include "profile_table.h"
#include "serving_internal.h"
#include "topology.h"

static int served_cpus(struct serving *s, const char *list, struct coloc_err *err)
{
	cpu_set_t mask;
	size_t len = 0;

	if (list) {
		s->nr_cpus = cpulist_parse(list, 0, s->cpus, POLICY_MAX_CPUS, err);
		if (s->nr_cpus < 0)
			return s->nr_cpus;
	} else {
		if (sched_getaffinity(0, sizeof(mask), &mask))
			return coloc_err_set(err, -errno, "sched_getaffinity: %s", strerror(errno));
		s->nr_cpus = 0;
		for (int c = 0; c < CPU_SETSIZE && c < POLICY_MAX_CPUS; c++)
			if (CPU_ISSET(c, &mask))
				s->cpus[s->nr_cpus++] = c;
	}
	for (int i = 0; i < s->nr_cpus; i++) {
		int n = snprintf(s->cores + len, sizeof(s->cores) - len, "%s%d", i ? "," : "",
				 s->cpus[i]);

		if (n < 0 || (size_t)n >= sizeof(s->cores) - len)
			return coloc_err_set(err, -E2BIG, "too many CPUs to serve");
		len += (size_t)n;
	}
	return 0;
}

static void fill_topology(struct serving *s)
{
	struct topology *topo;

	if (topology_open(NULL, &topo, NULL))
		return;
	for (int i = 0; i < s->nr_cpus; i++) {
		int llc = topology_cpu_llc(topo, s->cpus[i]);
		int sock = topology_cpu_socket(topo, s->cpus[i]);

		s->pcfg.llc[s->cpus[i]] = llc > 0 ? llc : 0;
		s->pcfg.socket[s->cpus[i]] = sock > 0 ? sock : 0;
	}
	topology_close(topo);
}

/* This machine as profiles name it: the caller's, or with the ISA its executor binary gives. */
static int this_machine(struct serving *s, const struct serving_config *cfg, struct coloc_err *err)
{
	char isa[PROFILE_ISA_LEN];
	int ret;

	if (cfg->machine) {
		s->machine = *cfg->machine;
		return 0;
	}
	ret = isa_probe(s->executor, isa, sizeof(isa), err);
	if (!ret && (ret = profile_machine_detect_isa(&s->machine, isa)))
		coloc_err_set(err, ret, "cannot identify this machine for the profile cache: %s",
			      strerror(-ret));
	return ret;
}

int serving_create(const struct serving_config *cfg, struct serving **out, struct coloc_err *err)
{
	const char *name = cfg->policy ? cfg->policy : SERVING_DEFAULT_POLICY;
	struct serving *s = calloc(1, sizeof(*s));
	int ret;

	*out = NULL;
	if (!s)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	s->entry = policy_find(name);
	if (!s->entry) {
		ret = coloc_err_set(err, -EINVAL, "no policy '%s'", name);
		goto fail;
	}
	s->max_queue = cfg->max_queue > 0 ? cfg->max_queue : SERVING_DEFAULT_QUEUE;
	s->max_queue_total =
		cfg->max_queue_total > 0 ? cfg->max_queue_total : SERVING_DEFAULT_QUEUE_TOTAL;
	s->max_tenants_per_uid = cfg->max_tenants_per_uid > 0 ? cfg->max_tenants_per_uid : 0;
	s->max_executors_per_uid = cfg->max_executors_per_uid > 0 ? cfg->max_executors_per_uid : 0;
	s->max_queued_per_uid = cfg->max_queued_per_uid > 0 ? cfg->max_queued_per_uid : 0;
	s->max_input_bytes_per_uid = cfg->max_input_bytes_per_uid;
	s->max_submit_bytes_per_uid = cfg->max_submit_bytes_per_uid;
	s->max_submit_bytes = cfg->max_submit_bytes;
	s->watch = cfg->watch;
	s->tenant_changed = cfg->tenant_changed;
	s->core_changed = cfg->core_changed;
	s->tenant_cores = cfg->tenant_cores;
	s->cpu_times = cfg->cpu_times;
	s->sandbox = cfg->sandbox;
	s->block_done = cfg->block_done;
	s->ctx = cfg->ctx;
	ret = served_cpus(s, cfg->cores, err);
	if (ret)
		goto fail;
	for (int c = 0; c < POLICY_MAX_CPUS; c++)
		s->owner[c] = -1;
	for (int i = 0; i < s->nr_cpus; i++) {
		policy_cpuset_set(&s->pcfg.online, s->cpus[i]);
		policy_cpuset_set(&s->free, s->cpus[i]);
	}
	fill_topology(s);
	s->pcfg.late = cfg->late_serve ? POLICY_LATE_SERVE : POLICY_LATE_DROP;
	s->plan_ahead = !cfg->no_plan_ahead;
	s->executor_lanes = cfg->executor_lanes;
	s->executor = cfg->executor ? strdup(cfg->executor) : NULL;
	s->cache_dir = cfg->cache_dir ? strdup(cfg->cache_dir) : NULL;
	s->core_sig = calloc(POLICY_MAX_CPUS, sizeof(*s->core_sig));
	s->core_level = calloc(POLICY_MAX_CPUS, sizeof(*s->core_level));
	s->core_sig_now = calloc(POLICY_MAX_CPUS, sizeof(*s->core_sig_now));
	s->dom_sig_now = calloc(POLICY_MAX_CPUS, sizeof(*s->dom_sig_now));
	s->pqueries = calloc(s->max_queue_total, sizeof(*s->pqueries));
	if ((cfg->executor && !s->executor) || (cfg->cache_dir && !s->cache_dir) || !s->core_sig ||
	    !s->core_level || !s->core_sig_now || !s->dom_sig_now || !s->pqueries) {
		ret = coloc_err_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	s->policy = policy_create(s->entry, &s->pcfg, err);
	if (!s->policy) {
		ret = err && err->code ? err->code : -EINVAL;
		goto fail;
	}
	ret = this_machine(s, cfg, err);
	if (ret)
		goto fail;
	s->next_uid = 1;
	*out = s;
	return 0;
fail:
	serving_destroy(s);
	return ret;
}

void serving_destroy(struct serving *s)
{
	if (!s)
		return;
	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		struct sv_tenant *t = &s->tenants[i];

		if (!t->used)
			continue;
		if (!t->described) {
			sv_admit_refuse(s, t, -ESHUTDOWN, "colocd stopped serving");
			continue;
		}
		for (int x = 0; x < t->nr_exec; x++)
			sv_release_block_cores(s, t, &t->ex[x]);
		sv_close_executors(s, t, false);
		sv_fail_all_queries(s, t, "colocd stopped serving");
		sv_free_tenant(s, t);
	}
	/* shutting down: the one place that waits for the kernel to tear them down */
	while (s->retired)
		sv_free_retired(s, &s->retired);
	while (s->holds)
		serving_release(s, s->holds);
	policy_destroy(s->policy);
	free(s->pqueries);
	free(s->core_sig);
	free(s->core_level);
	free(s->core_sig_now);
	free(s->dom_sig_now);
	free(s->versions);
	free(s->plan_versions);
	free(s->executor);
	free(s->cache_dir);
	free(s);
}
