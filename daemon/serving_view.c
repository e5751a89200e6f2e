// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What colocctl status and top print, read from the serving core: per
 * tenant its state, QoS, queue and statistics; per core the block that
 * holds it and its versions, or, on cores shared by the policy (os), how
 * many blocks run there at once.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "sandbox.h"
#include "serving_internal.h"
#include "mono_clock.h"

static const char *const state_names[] = {
	[SERVING_TENANT_STARTING] = "starting", [SERVING_TENANT_READY] = "ready",
	[SERVING_TENANT_DRAINING] = "draining", [SERVING_TENANT_FAILED] = "failed",
	[SERVING_TENANT_REMOVED] = "removed",
};

static const char *const status_names[] = {
	[SERVING_QUERY_OK] = "ok",
	[SERVING_QUERY_DROPPED] = "dropped",
	[SERVING_QUERY_FAILED] = "failed",
};

const char *serving_state_name(enum serving_tenant_state s)
{
	return (unsigned int)s < sizeof(state_names) / sizeof(*state_names) ? state_names[s] : "?";
}

const char *serving_status_name(enum serving_status s)
{
	return (unsigned int)s < sizeof(status_names) / sizeof(*status_names) ? status_names[s] :
										"?";
}

int serving_tenant_info(const struct serving *s, const char *name, struct serving_tenant_info *info)
{
	const struct sv_tenant *t = sv_find_tenant(s, name);

	if (!t)
		return -ENOENT;
	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "%s", t->name);
	info->state = t->state;
	info->owner = t->owner;
	snprintf(info->reason, sizeof(info->reason), "%s", t->reason);
	snprintf(info->note, sizeof(info->note), "%s", t->table.note);
	info->executors = t->nr_exec;
	for (int x = 0; x < t->nr_exec; x++)
		info->pids[x] = t->ex[x].ep ? execproc_pid(t->ex[x].ep) : 0;
	info->pid = info->pids[0];
	info->moved = t->moved;
	info->inputs_mapped = t->inputs_mapped;
	info->early_rings = t->early_rings;
	info->clamped_times = t->clamped_times;
	info->overruns = t->overruns;
	/* the same for all of them: one spawn code, one kernel */
	if (t->ex[0].ep)
		snprintf(info->isolation, sizeof(info->isolation), "%s%s%s",
			 execproc_isolation(t->ex[0].ep), t->sandboxed ? "; " : "",
			 t->sandboxed ? sandbox_tenant_describe(s->sandbox, t->name) : "");
	info->qos_ns = t->qos_ns;
	info->solo_ns = t->solo_ns;
	info->in_bytes = t->in_bytes;
	info->out_bytes = t->out_bytes;
	for (const struct sv_query *q = t->head; q; q = q->next) {
		if (q->in_flight)
			info->in_flight++;
		else
			info->queued++;
	}
	serving_stats_summarise(&t->stats, coloc_now_ns(), &info->stats);
	snprintf(info->last_drop, sizeof(info->last_drop), "%s", t->stats.last_drop);
	snprintf(info->last_reject, sizeof(info->last_reject), "%s", t->stats.last_reject);
	snprintf(info->last_failure, sizeof(info->last_failure), "%s", t->stats.last_failure);
	return 0;
}

size_t serving_tenant_in_bytes(const struct serving *s, const char *name)
{
	const struct sv_tenant *t = sv_find_tenant(s, name);

	return t ? t->in_bytes : 0;
}

int serving_tenant_names(const struct serving *s, const char **names, int max)
{
	const struct sv_tenant *live[SV_MAX_TENANTS];
	int n = 0;

	/* the live tenants sorted by admission order, not every order ever given */
	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		const struct sv_tenant *t = &s->tenants[i];
		int j;

		if (!t->used)
			continue;
		for (j = n++; j > 0 && live[j - 1]->order > t->order; j--)
			live[j] = live[j - 1];
		live[j] = t;
	}
	for (int i = 0; i < n && i < max; i++)
		names[i] = live[i]->name;
	return n;
}

/* The block of t that holds cpu, or NULL. */
static const struct sv_exec *block_on(const struct sv_tenant *t, int cpu)
{
	for (int x = 0; x < t->nr_exec; x++)
		if (t->ex[x].busy && policy_cpuset_test(&t->ex[x].blk.cores, cpu))
			return &t->ex[x];
	return NULL;
}

int serving_cores(const struct serving *s, struct serving_core_info *cores, int max)
{
	int n;

	for (n = 0; n < s->nr_cpus; n++) {
		int cpu = s->cpus[n], owner = s->owner[cpu];
		const struct sv_tenant *t = owner >= 0 ? &s->tenants[owner] : NULL;
		const struct sv_exec *x = t ? block_on(t, cpu) : NULL;

		if (n >= max)
			continue;
		cores[n] = (struct serving_core_info){ .cpu = cpu };
		if (s->core_sig[cpu].live & POLICY_SIG_SLOWDOWN)
			cores[n].slowdown = sv_core_level(s, cpu, coloc_now_ns());
		if (s->entry->shares_cores) {
			cores[n].shared = true;
			for (int i = 0; i < SV_MAX_TENANTS; i++)
				for (int e = 0; s->tenants[i].used && e < s->tenants[i].nr_exec;
				     e++)
					cores[n].nr_blocks +=
						s->tenants[i].ex[e].busy &&
						policy_cpuset_test(&s->tenants[i].ex[e].blk.cores,
								   cpu);
			cores[n].busy = cores[n].nr_blocks > 0;
			continue;
		}
		if (!x)
			continue;
		cores[n].nr_blocks = 1;
		cores[n].busy = true;
		cores[n].tenant = t->name;
		cores[n].query_id = x->blk.query_id;
		cores[n].first_layer = x->blk.first_layer;
		cores[n].last_layer = x->plan[x->plan_nr - 1].last; /* the plan's */
		cores[n].versions = x->blk.versions;
	}
	return n;
}

uint64_t serving_policy_errors(const struct serving *s, const char **last)
{
	if (last)
		*last = s->policy_error;
	return s->policy_errors;
}
