/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Latency profiles: VELTAIR's per-layer tables of latency by kernel version
 * and core count, measured alone and under a co-located stressor at several
 * levels, written by coloc-profile and read by the scheduler.
 *
 * A profile is a dense table lat[layer][version][cores][level] in
 * nanoseconds, where level index 0 is "alone" (the stressor running but
 * touching no memory) and index k > 0 is the stress level levels[k] (a
 * coloc-stress duty cycle, 1..100). Each cell is a median with a 95 %
 * confidence interval (order statistics) in two tables of the same shape. A
 * cell of 0 is "not measured yet", which is what a partial (interrupted)
 * profile holds. Per layer it also keeps the slowdown ratio at each level, the
 * summary the interference model consumes, and per core count and level the
 * bandwidth the stressor achieved meanwhile (the stress's measured signal).
 *
 * The file format is text, one record per line, documented with an example
 * in models/PROFILE.md. The reader is strict (every field checked, every
 * error reported as "FILE:LINE: what is wrong") because profiles come from
 * caches and other machines and it is fuzzed. Profiles are cached under a
 * name keyed by the model's profile key (SHA-256 of the model, its weights
 * and external data: profile_key.h) and the machine id, so a profile is
 * never reused across other bytes or a different machine.
 */
#ifndef COLOC_PROFILE_H
#define COLOC_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "coloc/limits.h"
#include "error.h"
#include "profile_key.h"

#define PROFILE_FORMAT_VERSION 9
/*
 * the oldest format still read: 6 has no cold start (profile_conditions.nr_cold 0),
 * 7 one 'cold' record (a ramp of one point); 6 to 8 are keyed by the model
 * file's FNV-1a (model_key_old): read, never found for a model (profile_table.c)
 */
#define PROFILE_OLDEST_FORMAT 6
#define PROFILE_NAME_LEN 64 /* model and layer names, as MODEL_NAME_LEN */
#define PROFILE_VERSION_NAME_LEN 48 /* as EXEC_VERSION_NAME_LEN */
#define PROFILE_MAX_VERSIONS 6 /* as EXEC_MAX_VERSIONS */
#define PROFILE_MAX_CORES COLOC_MAX_CPUS
#define PROFILE_MAX_LEVELS 9 /* level 0 (alone) and up to 8 stress levels */
#define PROFILE_MAX_LAYERS 100000
/* a cold start above this is a disturbed measurement, not the model (1.0-1.3 measured) */
#define PROFILE_MAX_COLD_RATIO 4.0
/* 'cold' records of a profile: the gaps of its cold ramp */
#define PROFILE_MAX_COLD_POINTS 4
/* a cold gap longer than this is no gap between queries (coloc-profile's longest is 1 s) */
#define PROFILE_MAX_COLD_GAP_NS 10000000000ULL
#define PROFILE_CPU_MODEL_LEN 128
#define PROFILE_ISA_LEN 32
#define PROFILE_DEFAULT_CACHE_DIR "/var/cache/coloc/profiles"

enum profile_stress_kind {
	PROFILE_STRESS_LLC,
	PROFILE_STRESS_MEMBW,
};

/* What identifies a machine for the cache: profiles from another machine do not apply. */
struct profile_machine {
	char cpu_model[PROFILE_CPU_MODEL_LEN]; /* "model name" of /proc/cpuinfo */
	int nr_cores; /* online CPUs */
	uint64_t llc_bytes; /* largest data cache hwloc reports, 0 if none */
	/*
	 * The ISA oneDNN dispatches to ("avx2", "avx512_core"...): the same CPU
	 * with the ISA capped (ONEDNN_MAX_CPU_ISA) runs other kernels.
	 */
	char isa[PROFILE_ISA_LEN];
};

/* One point of the cold ramp: after gap_ns idle, ratio x hot (median of pairs, spread). */
struct profile_cold_point {
	uint64_t gap_ns;
	double ratio; /* (0, PROFILE_MAX_COLD_RATIO] */
	double spread;
	int pairs;
};

/*
 * How busy the machine was while a profile was measured: the whole model
 * timed on all profiled cores (version 0 everywhere, the same live query
 * as the cells) before each core count and at the end, those runs' median
 * and spread ((p90 - p10) / median: wide when other work took the cores),
 * the 1-minute load average at the end and the share of CPU time stolen
 * by the hypervisor meanwhile. A later quick run of the whole model that
 * differs from solo_ns by more than the spread says the profile is stale.
 * docs/design/profile-freshness.md.
 *
 * The cold start as a ramp over idle time (format 8; format 7 has one
 * point): rounds of whole-model runs, one back to back after the run
 * before (hot, as the cells are timed), then one after each gap_ns of
 * cold[] idle, shortest first (cold, as a query served at some load
 * starts). A point's ratio is the median of its runs' cold / hot ratios
 * over the rounds and its spread their (p90 - p10) / median: a ratio
 * within a round survives the machine's drift, which a single figure does
 * not. The last point is the long gap, what a query served alone at low
 * load starts from. nr_cold 0: not measured (a format-6 profile).
 * docs/design/profile-cold-start.md.
 */
struct profile_conditions {
	bool known; /* false in a profile still being measured */
	uint64_t solo_ns;
	double spread;
	double loadavg;
	double steal; /* 0..1 */
	int nr_cold; /* 0: unknown */
	struct profile_cold_point cold[PROFILE_MAX_COLD_POINTS]; /* gap_ns strictly increasing */
};

/* The long-gap ratio of c's ramp (its last point's), 0 when unknown. */
static inline double profile_cold_ratio(const struct profile_conditions *c)
{
	return c->nr_cold > 0 ? c->cold[c->nr_cold - 1].ratio : 0;
}

/* Spread above which a profile was measured on a busy machine (coloc-profile refuses it). */
#define PROFILE_BUSY_SPREAD 0.5

struct profile_layer {
	char name[PROFILE_NAME_LEN];
	int nr_versions;
	char version_names[PROFILE_MAX_VERSIONS][PROFILE_VERSION_NAME_LEN];
	/* latency at level k / alone, geometric mean over versions and core counts; 0: unknown */
	double slowdown[PROFILE_MAX_LEVELS];
};

struct profile {
	char model_name[PROFILE_NAME_LEN];
	struct profile_key model_key; /* profile_key.h; zero when model_key_old */
	bool model_key_old; /* format 6-8: keyed by the model file's FNV-1a 64 only */
	struct profile_machine machine;
	char onednn_version[32]; /* "2.6.3" */
	char date[32]; /* UTC, "2026-11-29T23:59:00Z" */
	enum profile_stress_kind stress_kind;
	int iters; /* timed runs per cell; the cell is their median */
	int nr_cores; /* core counts profiled: 1..nr_cores */
	int nr_levels; /* including level 0 */
	int levels[PROFILE_MAX_LEVELS]; /* levels[0] == 0, then strictly increasing, <= 100 */
	int nr_layers;
	struct profile_layer *layers;
	uint64_t *latency_ns; /* the table of medians; use profile_latency_cell() */
	uint64_t *ci_lo_ns, *ci_hi_ns; /* the medians' 95 % CI, same shape as latency_ns */
	size_t *layer_offset; /* index of each layer's first cell in latency_ns */
	double *stress_gbps; /* [cores - 1][level]; negative: not measured (always at level 0) */
	struct profile_conditions conditions;
};

/*
 * An empty profile (every cell unmeasured) for nr_layers layers with
 * nr_versions[i] versions each, core counts 1..nr_cores and the given stress
 * levels (levels[0] must be 0). Returns NULL with a message in err on bad
 * dimensions or no memory.
 */
struct profile *profile_new(int nr_layers, const int *nr_versions, int nr_cores, int nr_levels,
			    const int *levels, struct coloc_err *err);
void profile_free(struct profile *p);

/* The cell of (layer, version, cores, level index), or NULL when out of range. */
uint64_t *profile_latency_cell(struct profile *p, int layer, int version, int cores, int level_idx);
const uint64_t *profile_latency_cell_const(const struct profile *p, int layer, int version,
					   int cores, int level_idx);
/* The same cell of ci_lo_ns and ci_hi_ns (both NULL when out of range). */
void profile_ci_cells(struct profile *p, int layer, int version, int cores, int level_idx,
		      uint64_t **lo, uint64_t **hi);
/* Cells still 0; a profile is complete when this is 0. */
size_t profile_nr_missing(const struct profile *p);
/* Recomputes every layer's slowdown[] from the table (see struct profile_layer). */
void profile_update_slowdown(struct profile *p);

/*
 * The median of v[0..n) (sorted in place) and a confidence interval for it
 * from order statistics: the narrowest [v(j), v(n+1-j)] whose binomial
 * coverage is at least 95 %. Below 6 runs no such interval exists and
 * [min, max] is returned (coverage 1 - 2^(1-n)). n must be >= 1.
 */
void profile_median_ci(uint64_t *v, int n, uint64_t *median, uint64_t *lo, uint64_t *hi);

/*
 * What a profile must show to be trusted: interference never speeds a layer
 * up and never less as the level rises. Checked per (layer, version, core
 * count) row, on the rows the slowdown summary uses (see struct
 * profile_layer), with each cell's CI: a row fails at level k when its CI
 * lies wholly below the alone CI (a slowdown < 1) or wholly below the CI at
 * the level before (falling with the level). Complete rows only.
 */
struct profile_check {
	int nr_rows; /* rows checked */
	int nr_pass; /* rows failing at no level */
	int below_one[PROFILE_MAX_LEVELS]; /* per level index: rows with a slowdown < 1 */
	int falling[PROFILE_MAX_LEVELS]; /* per level index >= 2: rows below the level before */
	/* per level index: geometric mean over the rows of the median ratio to alone */
	double mean_slowdown[PROFILE_MAX_LEVELS];
};
void profile_check(const struct profile *p, struct profile_check *out);

/*
 * Latency of a layer at a stress level in [0, 100]: linear interpolation
 * between the two measured levels around it (0 is alone), the highest
 * measured level beyond it. Returns 0, -EINVAL for arguments outside the
 * profile, or -ENOENT when a needed cell is not measured.
 */
int profile_lookup(const struct profile *p, int layer, int version, int cores, double level,
		   uint64_t *latency_ns);

/* Writes atomically (a temporary file renamed over path). Returns 0 or -errno, message in err. */
int profile_save(const struct profile *p, const char *path, struct coloc_err *err);
/*
 * Returns NULL with "FILE:LINE: what is wrong" in err, which quotes no
 * text of the file (names a record, a value's position, a range); a file
 * bigger than its header's profile_max_bytes() is refused having read its
 * header only.
 */
struct profile *profile_load(const char *path, struct coloc_err *err);
/* The same from an open descriptor (read from its offset, left open); path names it in messages. */
struct profile *profile_load_fd(int fd, const char *path, struct coloc_err *err);
/* The same from memory; name is used in messages. */
struct profile *profile_parse(const char *name, const char *text, size_t len,
			      struct coloc_err *err);
/*
 * The most bytes a profile of nr_layers layers, nr_cores core counts and
 * nr_levels levels can hold as coloc-profile writes it: every layer with
 * PROFILE_MAX_VERSIONS versions, each cell's three records at their widest
 * numbers (docs/security-submit.md, "The cached profile colocd reads").
 */
size_t profile_max_bytes(int nr_layers, int nr_cores, int nr_levels);

/*
 * True when two profiles measure the same thing: same model hash, machine,
 * stress kind, levels, core counts, layers and versions. Iterations, date
 * and the measurements themselves may differ.
 */
bool profile_same_setup(const struct profile *a, const struct profile *b);

/*
 * The median and spread ((p90 - p10) / median, nearest rank) of n >= 1
 * whole-model latencies (sorts v), as struct profile_conditions keeps them.
 */
void profile_solo_summary(uint64_t *v, int n, uint64_t *median, double *spread);
/* The same for n >= 1 ratios (cold / hot pairs), sorting v. */
void profile_ratio_summary(double *v, int n, double *median, double *spread);
/*
 * Whether a fresh whole-model latency now_ns (with its own spread) says
 * profile p is stale: the larger of it and p's solo_ns is more than 1 +
 * the larger of the two spreads times the smaller, and more than 1 +
 * PROFILE_STALE_FLOOR (a drift that small is not worth minutes of
 * profiling). False when p has no conditions.
 */
#define PROFILE_STALE_FLOOR 0.05
bool profile_is_stale(const struct profile *p, uint64_t now_ns, double now_spread);

/* FNV-1a 64, the machine's hash in cache file names (not the model's key: profile_key.h). */
uint64_t profile_fnv1a64(const void *data, size_t len, uint64_t hash);
#define PROFILE_FNV1A64_INIT 0xcbf29ce484222325ULL

/*
 * Fills m from /proc/cpuinfo, sysconf and hwloc, with isa as the ISA
 * (profile_machine.c, no oneDNN: colocd asks coloc-executor --print-isa;
 * the tools take oneDNN's with profile_machine_detect, profile_host.h).
 * Returns 0 or -errno.
 */
int profile_machine_detect_isa(struct profile_machine *m, const char *isa);
bool profile_machine_equal(const struct profile_machine *a, const struct profile_machine *b);
/* FNV-1a 64 of the machine's identity, for cache file names. */
uint64_t profile_machine_hash(const struct profile_machine *m);

/* The cache directory: override if set, else $COLOC_CACHE_DIR if set, else the default. */
const char *profile_cache_dir(const char *override);
/*
 * Make the cache directory before writing into it: its parents as needed
 * (0755), itself 0700, since a profile names a model's layers, ops and
 * timings and its key confirms the model's bytes. An existing one is left
 * as it is (it may be a shared folder such as /tmp). Returns 0, 1 when an
 * existing one is open to group or others, or -errno (-ENOTDIR).
 */
int profile_cache_dir_make(const char *dir);
/*
 * DIR/MODEL-KEY-MACHINEHASH.profile, the cache file for this model's bytes
 * on this machine (KEY 64 hex digits, MACHINEHASH 16). Returns 0 or
 * -ENAMETOOLONG.
 */
int profile_cache_path(const char *dir, const char *model_name, const struct profile_key *key,
		       const struct profile_machine *m, char *buf, size_t len);
/*
 * How many files of the key before 2026-12-06 (DIR/MODEL-FNVHASH-MACHINEHASH.profile,
 * 16 hex digits each) dir holds for model_name on this machine: profiles
 * that are no longer found, named in the message that none is.
 */
int profile_cache_old_keyed(const char *dir, const char *model_name,
			    const struct profile_machine *m);

const char *profile_stress_kind_name(enum profile_stress_kind kind);

#endif /* COLOC_PROFILE_H */
