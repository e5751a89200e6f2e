// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A tenant's cgroup is idle (cpu.idle 1, cgroup_cpu.c) while it has no
 * block in flight. Its executors' threads that run outside its blocks
 * then take only time the tenants running blocks leave, however many
 * there are. A tenant whose only blocks out are late (serving_overrun.c)
 * is late: not idle, at the lowest weight (cgroup_cpu.c). At idle it would
 * share the core with an idle hog's threads one thread against all of
 * them (an honest late block of a 6 ms model ran 1.5 s beside 32
 * spinners); at the default weight K late tenants of one member left the
 * tenant given their cores 1/(K+1) of them (review s16 HIGH 1); at the
 * lowest, K take ~K/1024 of it and still run ahead of idle hogs, and the
 * hang limit ends them. Busy is written before a block is sent, late as a
 * command goes late; idle only at the end of a
 * policy round that left the tenant holding nothing, so that a tenant
 * whose block ends and whose next one the same round sends stays busy:
 * a write per busy spell each way, none per block.
 */
#include <stdio.h>
#include "sandbox.h"
#include "serving_internal.h"

static void tell(struct serving *s, struct sv_tenant *t, bool busy, bool late)
{
	struct coloc_err err = { 0 };
	int ret;

	t->told_busy = busy;
	t->told_late = busy && late;
	if (!s->sandbox || !t->sandboxed)
		return;
	/* not idle before a weight is written: the kernel refuses one while idle */
	ret = sandbox_tenant_set_idle(s->sandbox, t->name, !busy, &err);
	if (ret >= 0 && busy)
		ret = sandbox_tenant_set_late(s->sandbox, t->name, late, &err);
	/* once per colocd: a cgroup that refuses one write refuses the next ones alike */
	if (ret < 0 && !s->idle_warned) {
		fprintf(stderr, "colocd: tenant %s: its cpu.idle does not follow its cores: %s\n",
			t->name, coloc_err_str(&err));
		s->idle_warned = true;
	}
}

void sv_tenant_hold(struct serving *s, struct sv_tenant *t, bool submitting)
{
	bool on_time = submitting, late = false;

	for (int i = 0; i < t->nr_exec; i++) {
		on_time |= t->ex[i].busy && !t->ex[i].late;
		late |= t->ex[i].busy && t->ex[i].late;
	}
	t->holds_cores = on_time || late;
	late = late && !on_time;
	if (t->holds_cores && (!t->told_busy || t->told_late != late))
		tell(s, t, true, late);
}

void sv_tenant_idle_flush(struct serving *s)
{
	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		struct sv_tenant *t = &s->tenants[i];

		if (t->used && t->told_busy && !t->holds_cores)
			tell(s, t, false, false);
	}
}
