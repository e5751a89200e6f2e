/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Where colocd's per-core interference level comes from (issue 8). With a
 * live PMU that counts LLC references and misses, and a level model
 * calibrated on this machine (executor/include/profile/level_model.h, written by
 * coloc-calibrate-level into the profile cache), each CPU window record of
 * the sensor gives the core's LLC and DRAM signals and, through the model,
 * its level. Otherwise the serving core keeps measuring the level from the
 * slowdown of finished blocks against their profiled latency. The choice is
 * made once at start and said in colocd's start line.
 */
#ifndef COLOC_DAEMON_LEVEL_SOURCE_H
#define COLOC_DAEMON_LEVEL_SOURCE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "level_model.h"
#include "pmu.h"
#include "policy.h"
#include "profile.h"

struct level_source {
	bool pmu_model; /* the level comes from the model; else from block slowdowns */
	bool pmu_signals; /* records carry LLC counters: the policy signal gets them */
	struct level_model model; /* when pmu_model */
	char path[PATH_MAX]; /* the model file looked for */
	char why[COLOC_ERR_MSG_MAX]; /* when !pmu_model: why not, for the start line */
};

/*
 * The decision alone: pmu is what pmu_detect() found, machine this
 * machine's profile_machine_hash(), path the model file looked for,
 * load_ret and load_err what level_model_load() returned for it (loaded
 * valid when load_ret is 0). The model is used only when the PMU is
 * present, counts LLC references and misses and every counter the model's
 * terms need, and the file loaded and was fitted on this machine.
 */
void level_source_decide(struct level_source *ls, const struct pmu_info *pmu, uint64_t machine,
			 const char *path, int load_ret, const struct coloc_err *load_err,
			 const struct level_model *loaded);

/*
 * Looks for the model of machine (this one, as profile_machine_detect_isa
 * names it) in the profile cache cache_dir (NULL: $COLOC_CACHE_DIR or the
 * default) and decides. 0, or -errno when the model's file cannot be
 * named (then the block slowdown is used and why says so).
 */
int level_source_open(struct level_source *ls, const struct pmu_info *pmu, const char *cache_dir,
		      const struct profile_machine *machine);

/*
 * "level: PMU model FILE (R² 0.93)", or "level: measured block slowdown
 * (no PMU)" / "(WHY)".
 */
void level_source_describe(const struct level_source *ls, char *buf, size_t len);

/*
 * A CPU window's record into its core's policy signal: the LLC fields
 * (POLICY_SIG_LLC: miss ratio, misses per second of the window) and
 * DRAM bandwidth per running time (POLICY_SIG_DRAM) where the record has
 * them live, and with a model the level (POLICY_SIG_SLOWDOWN |
 * POLICY_SIG_LEVEL_PMU). sig is cleared first. Returns the live bits set
 * (0: nothing to say, e.g. the core was idle all window).
 */
unsigned int level_source_window_signal(const struct level_source *ls,
					const struct coloc_cpu_window *w,
					struct policy_signal *sig);

#endif /* COLOC_DAEMON_LEVEL_SOURCE_H */
