// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Arrivals: Poisson streams, one per tenant with its own PRNG stream (so a
 * tenant's arrivals do not depend on the others', and the same seed at a
 * higher rate gives the same arrivals compressed in time), evenly spaced
 * ones at a phase that stream draws, or a trace file read into memory.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sim.h"

void sim_poisson_init(struct sim_poisson *p, uint64_t seed, int tenant, double rate_per_s,
		      bool even)
{
	/* a distinct, well-mixed stream per tenant: the golden-ratio step apart */
	coloc_rng_seed(&p->rng, seed + (uint64_t)(tenant + 1) * 0x9e3779b97f4a7c15ULL);
	p->rate_per_s = rate_per_s;
	p->even = even;
	/* even: the first arrival one gap earlier than a phase in [0, 1) gaps */
	p->next_s = even ? (coloc_rng_uniform(&p->rng) - 1) / rate_per_s : 0;
}

uint64_t sim_poisson_next(struct sim_poisson *p)
{
	p->next_s += (p->even ? 1.0 : coloc_rng_exp(&p->rng)) / p->rate_per_s;
	return (uint64_t)llround(p->next_s * 1e9);
}

void sim_trace_free(struct sim_trace *t)
{
	free(t->time_ns);
	free(t->tenant);
	*t = (struct sim_trace){ 0 };
}

int sim_trace_load(const char *path, int nr_tenants, struct sim_trace *t, struct coloc_err *err)
{
	FILE *f = fopen(path, "r");
	char line[256];
	int lineno = 0, cap = 0, ret = 0;

	*t = (struct sim_trace){ 0 };
	if (!f)
		return coloc_err_set(err, -errno, "trace %s: cannot open it: %m", path);
	while (fgets(line, sizeof(line), f)) {
		double us;
		int tenant, n = 0;

		lineno++;
		if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
			continue;
		if (sscanf(line, "%lf %d %n", &us, &tenant, &n) != 2 || line[n] != '\0' ||
		    !(us >= 0) || us > 1e15) {
			ret = coloc_err_set(err, -EINVAL,
					    "%s:%d: want 'TIME_US TENANT' (a time in µs >= 0, a "
					    "tenant index)",
					    path, lineno);
			break;
		}
		if (tenant < 0 || tenant >= nr_tenants) {
			ret = coloc_err_set(
				err, -EINVAL,
				"%s:%d: tenant %d; the command line gives tenants 0..%d", path,
				lineno, tenant, nr_tenants - 1);
			break;
		}
		if (t->nr == cap) {
			int ncap = cap ? cap * 2 : 1024;
			uint64_t *tn = realloc(t->time_ns, (size_t)ncap * sizeof(*tn));
			int *tt = tn ? realloc(t->tenant, (size_t)ncap * sizeof(*tt)) : NULL;

			if (tn)
				t->time_ns = tn;
			if (!tt) {
				ret = coloc_err_set(err, -ENOMEM, "trace %s: out of memory", path);
				break;
			}
			t->tenant = tt;
			cap = ncap;
		}
		t->time_ns[t->nr] = (uint64_t)llround(us * 1e3);
		t->tenant[t->nr] = tenant;
		if (t->nr && t->time_ns[t->nr] < t->time_ns[t->nr - 1]) {
			ret = coloc_err_set(err, -EINVAL,
					    "%s:%d: time goes back; arrivals must be in time order",
					    path, lineno);
			break;
		}
		t->nr++;
	}
	if (!ret && ferror(f))
		ret = coloc_err_set(err, -EIO, "trace %s: read error", path);
	fclose(f);
	if (ret)
		sim_trace_free(t);
	return ret;
}
