// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's level source (level_source.h): the start-time choice between the
 * PMU level model and the measured block slowdown, and the mapping of one
 * CPU window record to that core's policy signal. The choice and the
 * mapping are pure functions of their arguments, so tests drive them with
 * any PMU description; only level_source_open() reads the machine and the
 * cache.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "level_source.h"
#include "profile.h"

/* The counter each model term is computed from, beside LLC references for the ratio. */
static const enum coloc_counter level_term_counter[LEVEL_NR_TERMS] = {
	[LEVEL_TERM_LLC_MISS_RATIO] = COLOC_CTR_LLC_MISSES,
	[LEVEL_TERM_LLC_REFS_PER_US] = COLOC_CTR_LLC_REFS,
	[LEVEL_TERM_DRAM_GBPS] = COLOC_CTR_DRAM_FILLS,
};

#define LEVEL_LLC_MASK ((1u << COLOC_CTR_LLC_REFS) | (1u << COLOC_CTR_LLC_MISSES))

void level_source_decide(struct level_source *ls, const struct pmu_info *pmu, uint64_t machine,
			 const char *path, int load_ret, const struct coloc_err *load_err,
			 const struct level_model *loaded)
{
	memset(ls, 0, sizeof(*ls));
	snprintf(ls->path, sizeof(ls->path), "%s", path);
	ls->pmu_signals = pmu->present && (pmu->available_mask & LEVEL_LLC_MASK) == LEVEL_LLC_MASK;
	if (!pmu->present) {
		snprintf(ls->why, sizeof(ls->why), "no PMU");
		return;
	}
	if (!ls->pmu_signals) {
		snprintf(ls->why, sizeof(ls->why), "the PMU counts no LLC references and misses");
		return;
	}
	if (load_ret == -ENOENT) {
		snprintf(ls->why, sizeof(ls->why),
			 "no level model %s: make one with coloc-calibrate-level", path);
		return;
	}
	if (load_ret) {
		snprintf(ls->why, sizeof(ls->why), "level model unusable: %s",
			 coloc_err_str(load_err));
		return;
	}
	if (loaded->machine != machine) {
		snprintf(ls->why, sizeof(ls->why),
			 "level model %s was fitted on another machine (%016llx, this is %016llx)",
			 path, (unsigned long long)loaded->machine, (unsigned long long)machine);
		return;
	}
	for (int t = 0; t < LEVEL_NR_TERMS; t++) {
		if ((loaded->terms & (1u << t)) &&
		    !(pmu->available_mask & (1u << level_term_counter[t]))) {
			snprintf(ls->why, sizeof(ls->why),
				 "level model %s needs %s, which this PMU does not count", path,
				 pmu_counter_name(level_term_counter[t]));
			return;
		}
	}
	ls->pmu_model = true;
	ls->model = *loaded;
}

int level_source_open(struct level_source *ls, const struct pmu_info *pmu, const char *cache_dir,
		      const struct profile_machine *machine)
{
	struct level_model m = { 0 };
	struct coloc_err err = { 0 };
	char path[PATH_MAX];
	uint64_t hash;
	int ret;

	/* without a PMU no model could be used: the file is not even looked for */
	if (!pmu->present) {
		level_source_decide(ls, pmu, 0, "", -ENOENT, &err, &m);
		return 0;
	}
	hash = profile_machine_hash(machine);
	ret = level_model_cache_path(profile_cache_dir(cache_dir), hash, path, sizeof(path));
	if (ret) {
		memset(ls, 0, sizeof(*ls));
		snprintf(ls->why, sizeof(ls->why), "cannot name this machine's level model: %s",
			 strerror(-ret));
		return ret;
	}
	ret = level_model_load(path, &m, &err);
	level_source_decide(ls, pmu, hash, path, ret, &err, &m);
	return 0;
}

void level_source_describe(const struct level_source *ls, char *buf, size_t len)
{
	if (ls->pmu_model)
		snprintf(buf, len, "level: PMU model %s (R² %.2f)", ls->path, ls->model.r2);
	else
		snprintf(buf, len, "level: measured block slowdown (%s)", ls->why);
}

unsigned int level_source_window_signal(const struct level_source *ls,
					const struct coloc_cpu_window *w, struct policy_signal *sig)
{
	double x[LEVEL_NR_TERMS];
	unsigned int terms;

	memset(sig, 0, sizeof(*sig));
	if (!ls->pmu_signals || w->type != COLOC_REC_CPU_WINDOW || !w->task_clock_ns)
		return 0;
	terms = level_signals_from_counters(&w->counters, w->live_mask, w->task_clock_ns, x);
	if (terms & (1u << LEVEL_TERM_LLC_MISS_RATIO) && w->window_ns) {
		sig->llc_miss_ratio = x[LEVEL_TERM_LLC_MISS_RATIO];
		sig->llc_misses_per_s = (double)w->counters.llc_misses * 1e9 / (double)w->window_ns;
		sig->live |= POLICY_SIG_LLC;
	}
	if (terms & (1u << LEVEL_TERM_DRAM_GBPS)) {
		sig->dram_gbps = x[LEVEL_TERM_DRAM_GBPS];
		sig->live |= POLICY_SIG_DRAM;
	}
	if (ls->pmu_model && !level_model_eval(&ls->model, x, terms, &sig->slowdown))
		sig->live |= POLICY_SIG_SLOWDOWN | POLICY_SIG_LEVEL_PMU;
	return sig->live;
}
