/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Which interference counters this machine can count, and how to open them.
 *
 * pmu_detect() reads the CPU's vendor/family/model, picks the raw event
 * table for it (daemon/pmu_events.c), checks with perf_event_open() that a
 * core PMU answers at all and which events open, and probes the uncore for
 * memory bandwidth. colocd's sensor then opens one fd per available counter
 * per CPU with pmu_open_counter() and puts it in the BPF counters array.
 * Without a PMU only the software counters are available: nothing is faked.
 */
#ifndef COLOC_DAEMON_PMU_H
#define COLOC_DAEMON_PMU_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "coloc/sensor.h"

struct pmu_event {
	enum coloc_counter ctr;
	__u32 type; /* PERF_TYPE_RAW / PERF_TYPE_HARDWARE / PERF_TYPE_SOFTWARE */
	__u64 config;
	const char *name; /* vendor event name, e.g. "LONGEST_LAT_CACHE.MISS"; NULL: none */
	const char *source; /* where the code comes from: manual + section / perfmon json file */
};

struct pmu_info {
	bool present; /* a core PMU answered (HW cycles opened on cpu 0) */
	int open_errno; /* why not, when !present (ENOENT here) */
	char vendor[16]; /* "GenuineIntel" / "AuthenticAMD" / ... from /proc/cpuinfo */
	int family, model;
	const char *table; /* name of the table chosen, e.g. "intel-skylake", "amd-zen4" */
	struct pmu_event
		events[COLOC_NR_COUNTERS]; /* hardware ones from the table, software always */
	__u32 available_mask; /* bit ctr: this machine can count it */
	int membw_sockets; /* sockets with uncore memory bandwidth (uncore.h); 0: none */
};

/* 0 or -errno; never fails just because there is no PMU. */
int pmu_detect(struct pmu_info *info);

/* A counting perf fd (pid -1, on cpu, not inherited, enabled) or -errno. */
int pmu_open_counter(const struct pmu_info *info, enum coloc_counter ctr, int cpu);

/* "cycles", "instructions", "llc_refs", ...; "?" for a value out of range. */
const char *pmu_counter_name(enum coloc_counter ctr);

/* The one line colocd prints at start: which signals are live and which absent. */
void pmu_describe(const struct pmu_info *info, char *buf, size_t len);

/*
 * The hardware event table for any vendor/family/model: *events gets
 * COLOC_NR_COUNTERS entries indexed by counter (the software ones included),
 * *table its name. An entry with name == NULL has no event on that CPU.
 * Returns 0, or -EINVAL for a NULL vendor.
 */
int pmu_event_table_lookup(const char *vendor, int family, int model,
			   const struct pmu_event **events, const char **table);

/* Raw config of AMD core event PMCxEEE with a unit mask (event 11:8 go to config 35:32). */
__u64 pmu_amd_raw_config(unsigned int event, unsigned int umask);

/* Raw config of an Intel core event (event select 7:0, unit mask 15:8). */
__u64 pmu_intel_raw_config(unsigned int event, unsigned int umask);

/* Parses the first processor's vendor_id, cpu family and model from a /proc/cpuinfo text. */
int pmu_parse_cpuinfo(const char *text, char *vendor, size_t vendor_len, int *family, int *model);

#endif /* COLOC_DAEMON_PMU_H */
