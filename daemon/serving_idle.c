// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A tenant's cgroup is idle (cpu.idle 1, cgroup_cpu.c) while it has no
 * block in flight. Its executors' threads that run outside its blocks
 * then take only time the tenants running blocks leave, however many
 * there are. A late block (serving_overrun.c) keeps its tenant busy: at
 * idle it would share the core with an idle hog's threads one thread
 * against all of them (an honest late block of a 6 ms model ran 1.5 s
 * beside 32 spinners); busy, its group gets its weight's share beside
 * the tenant given its cores, and the hang limit still ends it. Busy is written before a block is sent; idle only at the end of a
 * policy round that left the tenant holding nothing, so that a tenant
 * whose block ends and whose next one the same round sends stays busy:
 * a write per busy spell each way, none per block.
 */
#include <stdio.h>
#include "sandbox.h"
#include "serving_internal.h"

static void tell(struct serving *s, struct sv_tenant *t, bool busy)
{
	struct coloc_err err = { 0 };

	t->told_busy = busy;
	if (!s->sandbox || !t->sandboxed)
		return;
	/* once per colocd: a cgroup that refuses one write refuses the next ones alike */
	if (sandbox_tenant_set_idle(s->sandbox, t->name, !busy, &err) < 0 && !s->idle_warned) {
		fprintf(stderr, "colocd: tenant %s: its cpu.idle does not follow its cores: %s\n",
			t->name, coloc_err_str(&err));
		s->idle_warned = true;
	}
}

void sv_tenant_hold(struct serving *s, struct sv_tenant *t, bool submitting)
{
	bool holds = submitting;

	for (int i = 0; i < t->nr_exec && !holds; i++)
		holds = t->ex[i].busy;
	t->holds_cores = holds;
	if (holds && !t->told_busy)
		tell(s, t, true);
}

void sv_tenant_idle_flush(struct serving *s)
{
	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		struct sv_tenant *t = &s->tenants[i];

		if (t->used && t->told_busy && !t->holds_cores)
			tell(s, t, false);
	}
}
