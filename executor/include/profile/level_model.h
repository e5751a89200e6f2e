/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The interference level from PMU signals (issue 8, "Interference level
 * and versions"): on a machine with a PMU the level of a core, VELTAIR's
 * slowdown (latency now / alone, 1.0 = none), is predicted by a linear model
 *
 *   level = c0 + c1 * llc_miss_ratio + c2 * llc_refs_per_us + c3 * dram_gbps
 *
 * fitted by ordinary least squares to calibration points taken under
 * coloc-stress (coloc-profile --calibrate-level). A signal that does not
 * vary across the points, or that the others already explain (a singular
 * design), is left out of the fit and the model says which terms it uses.
 * The model is saved as a small text file keyed by the machine's identity
 * (the hash the profile cache uses), documented in models/PROFILE.md, and
 * read back by colocd with a strict parser ("FILE:LINE: what is wrong").
 * Without a PMU none of this runs: colocd keeps the measured block slowdown.
 */
#ifndef COLOC_LEVEL_MODEL_H
#define COLOC_LEVEL_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "coloc/sensor.h"
#include "error.h"

#define LEVEL_MODEL_FORMAT_VERSION 1
#define LEVEL_MODEL_MIN_POINTS 3 /* fewer cannot fit even one term with a residual */
#define LEVEL_MODEL_NOTE_LEN 192

/* The model's signals, in the order of the coefficients c1..c3. */
enum level_term {
	LEVEL_TERM_LLC_MISS_RATIO, /* LLC misses / LLC references, 0..1 */
	LEVEL_TERM_LLC_REFS_PER_US, /* LLC references per microsecond of the window */
	LEVEL_TERM_DRAM_GBPS, /* DRAM bandwidth, GB/s (1e9 bytes) */
	LEVEL_NR_TERMS,
};

#define LEVEL_TERMS_ALL ((1u << LEVEL_NR_TERMS) - 1)

/* One observation: the signals in a window and, for calibration, the level measured. */
struct level_point {
	double x[LEVEL_NR_TERMS]; /* indexed by enum level_term */
	double level; /* measured slowdown (calibration only) */
};

struct level_model {
	unsigned int terms; /* bit t: term t is in the model */
	double c0;
	double coef[LEVEL_NR_TERMS]; /* 0 for a term not in the model */
	int nr_points; /* points it was fitted on */
	double r2; /* coefficient of determination on those points */
	double rms; /* root mean square residual, in slowdown units */
	uint64_t machine; /* profile_machine_hash() of the machine it was fitted on */
};

/* "llc_miss_ratio", "llc_refs_per_us", "dram_gbps"; "?" out of range. */
const char *level_term_name(enum level_term t);

/*
 * Fits m (all fields but machine) to pts[0..n). Terms whose signal does not
 * vary across the points are left out; if the remaining design is singular
 * the subset with one term fewer (then two) with the smallest residual is
 * used. note (may be NULL) gets which terms were used and why any were left
 * out. 0, or -EINVAL with err saying why: fewer than LEVEL_MODEL_MIN_POINTS
 * points, a non-finite value, or no term left to fit.
 */
int level_model_fit(const struct level_point *pts, int n, struct level_model *m, char *note,
		    size_t note_len, struct coloc_err *err);

/*
 * The level the model predicts for the signals x, whose live terms are the
 * bits of live (enum level_term): never below 1.0 (interference does not
 * speed a core up). 0, or -ENODATA when a term the model uses is not live.
 */
int level_model_eval(const struct level_model *m, const double x[LEVEL_NR_TERMS], unsigned int live,
		     double *level);

/*
 * The model's signals from counter deltas (a sensor record's, or a
 * calibration run's summed over its cores) whose live bits are live_mask
 * (bit n: counter n, as a record's): x[] gets each term that can be
 * computed, and the return value has its bit. References and DRAM
 * bandwidth are per busy_ns of running time (a window's task clock; a
 * calibration run's wall time times its cores), so that a core busy half a
 * window reads as the same pressure as calibration, which keeps its cores
 * busy. The miss ratio needs references > 0; the rates need busy_ns > 0.
 */
unsigned int level_signals_from_counters(const struct coloc_counters *c, unsigned int live_mask,
					 uint64_t busy_ns, double x[LEVEL_NR_TERMS]);

/* "llc_miss_ratio llc_refs_per_us" (the terms in use, space separated). */
void level_model_terms_str(unsigned int terms, char *buf, size_t len);

/* Writes atomically (a temporary file renamed over path). 0 or -errno, message in err. */
int level_model_save(const struct level_model *m, const char *path, struct coloc_err *err);
/* 0, or -errno with "FILE:LINE: what is wrong" (or why it cannot be read) in err. */
int level_model_load(const char *path, struct level_model *m, struct coloc_err *err);
/* The same from memory; name is used in messages. */
int level_model_parse(const char *name, const char *text, size_t len, struct level_model *m,
		      struct coloc_err *err);

/* DIR/level-MACHINEHASH.model, the cache file for this machine. 0 or -ENAMETOOLONG. */
int level_model_cache_path(const char *dir, uint64_t machine, char *buf, size_t len);

#endif /* COLOC_LEVEL_MODEL_H */
