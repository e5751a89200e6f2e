// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Finds a model's latency profile in the cache and turns it into the
 * policy's table (struct policy_costs): the one conversion colocd and
 * coloc-sim both use, so the simulator schedules on exactly the table colocd
 * would. No oneDNN and no model parser here: the cache key's machine is
 * the caller's (its ISA from oneDNN in the tools, from coloc-executor
 * --print-isa in colocd), and colocd's layers come from the executor's
 * summary. Finding a profile by a model file's path, and the table from a
 * parsed model, are the tools' part (profile_of_model.c).
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "file_own.h"
#include "profile_table.h"

_Static_assert(PROFILE_MAX_COLD_POINTS <= POLICY_MAX_COLD_POINTS,
	       "a profile's cold ramp fits the policy's");

/* A model name fit for a file name in the cache: [A-Za-z0-9_.-], not starting with '.'. */
static bool cache_name_ok(const char *n)
{
	size_t len = strlen(n);

	if (!len || len > 128 || n[0] == '.')
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)n[i]) && n[i] != '_' && n[i] != '.' && n[i] != '-')
			return false;
	return true;
}

/*
 * The profile open as fd (at path), unless its header holds a key other
 * than key (or the old one).
 */
static struct profile *load_keyed(int fd, const char *path, const struct profile_key *key,
				  const char *shown, struct coloc_err *err)
{
	struct profile *p = profile_load_fd(fd, path, err);

	if (p && (p->model_key_old || !profile_key_equal(&p->model_key, key))) {
		coloc_err_set(err, -ESTALE,
			      "%s: %s; not used for %s: make it again with coloc-profile %s",
			      path,
			      p->model_key_old ? "a profile of the key before 2026-12-06 (the "
						 "model file's FNV-1a only)" :
						 "its model-key is of other bytes than its name's",
			      shown, shown);
		profile_free(p);
		return NULL;
	}
	return p;
}

struct profile *profile_table_find_keyed(const char *model_name, const struct profile_key *key,
					 const char *shown, const char *cache_dir,
					 const struct profile_machine *machine,
					 struct coloc_err *err)
{
	char path[4096], old[160] = "", why[96];
	const char *dir = profile_cache_dir(cache_dir);
	struct profile *p;
	int fd, nr_old;

	if (!cache_name_ok(model_name)) {
		coloc_err_set(err, -EINVAL,
			      "model name '%.64s' is not 1 to 128 of [A-Za-z0-9_.-] (not starting "
			      "with '.'): it names no profile in the cache",
			      model_name);
		return NULL;
	}

	if (profile_cache_path(dir, model_name, key, machine, path, sizeof(path))) {
		coloc_err_set(err, -ENAMETOOLONG, "profile cache path under %s is too long", dir);
		return NULL;
	}
	/*
	 * As root's tools open what they read: not through a link, not
	 * blocking on a FIFO, and only root's own file (or this user's), so
	 * that a cache directory others can write makes colocd read nothing
	 * of theirs, nor quote it in an error.
	 */
	fd = file_open_own_or_root(path, why, sizeof(why));
	if (fd >= 0) {
		p = load_keyed(fd, path, key, shown, err);
		close(fd);
		return p;
	}
	if (fd != -ENOENT) {
		coloc_err_set(err, fd,
			      "%s %s: not read (a cached profile is a regular file of root's, "
			      "writable by no group or other, of one name); make it again with "
			      "coloc-profile %s as root, into a cache directory only root may "
			      "write",
			      path, why, shown);
		return NULL;
	}
	nr_old = profile_cache_old_keyed(dir, model_name, machine);
	if (nr_old)
		snprintf(old, sizeof(old), " (%d of %s keyed by the model file alone, before "
			 "2026-12-06: not used)", nr_old, model_name);
	coloc_err_set(err, -ENOENT,
		      "no profile for this model: none of %s (%s) for this machine (%s, ISA %s) "
		      "in %s%s; make it with: coloc-profile %s -o %s.profile --cache-dir %s (as "
		      "root, of a copy in a directory of root's)",
		      model_name, shown, machine->cpu_model, machine->isa, dir, old, shown,
		      model_name, dir);
	return NULL;
}

/*
 * Sum over layers of the version the policy takes at core index ci and
 * level column k (policy_costs_fastest_version: a later version only when
 * its CI lies below the winner's, so one noisy cell does not pick it); 0 if
 * a layer has none.
 */
static uint64_t model_sum(const struct policy_costs *pm, int ci, int k)
{
	uint64_t sum = 0;

	for (int l = 0; l < pm->nr_layers; l++) {
		uint64_t ns = 0;

		if (policy_costs_fastest_version(pm, l, ci, k, &ns) < 0 || !ns)
			return 0;
		sum += ns;
	}
	return sum;
}

int profile_table_build_layers(const struct profile *p, const char *name, int nr_layers,
			       const uint64_t *layer_macs, struct policy_table *t,
			       struct coloc_err *err)
{
	struct policy_costs *pm = &t->costs;
	int nr_versions = 1, clamped = 0;
	double running = 1.0;
	uint64_t alone;
	size_t len;

	*t = (struct policy_table){ 0 };
	snprintf(t->name, sizeof(t->name), "%s", name);
	if (p->nr_layers != nr_layers)
		return coloc_err_set(err, -EINVAL,
				     "profile of %s has %d layers, the model %d; profile it again",
				     name, p->nr_layers, nr_layers);
	for (int l = 0; l < p->nr_layers; l++)
		if (p->layers[l].nr_versions > nr_versions)
			nr_versions = p->layers[l].nr_versions;
	len = (size_t)p->nr_layers * nr_versions * p->nr_cores * p->nr_levels;
	t->core_counts = calloc(p->nr_cores, sizeof(*t->core_counts));
	t->level_slowdown = calloc(p->nr_levels, sizeof(*t->level_slowdown));
	t->latency_ns = calloc(len, sizeof(*t->latency_ns));
	t->latency_lo_ns = calloc(len, sizeof(*t->latency_lo_ns));
	t->latency_hi_ns = calloc(len, sizeof(*t->latency_hi_ns));
	t->layer_ops = calloc(p->nr_layers, sizeof(*t->layer_ops));
	if (!t->core_counts || !t->level_slowdown || !t->latency_ns || !t->latency_lo_ns ||
	    !t->latency_hi_ns || !t->layer_ops) {
		policy_table_free(t);
		return coloc_err_set(err, -ENOMEM, "out of memory for the table of %s", name);
	}
	for (int c = 0; c < p->nr_cores; c++)
		t->core_counts[c] = c + 1;
	for (int l = 0; l < p->nr_layers; l++) {
		t->layer_ops[l] = layer_macs[l];
		for (int v = 0; v < p->layers[l].nr_versions; v++)
			for (int c = 0; c < p->nr_cores; c++)
				for (int k = 0; k < p->nr_levels; k++) {
					const uint64_t *cell =
						profile_latency_cell_const(p, l, v, c + 1, k);
					size_t at = (((size_t)l * nr_versions + v) * p->nr_cores +
						     c) * p->nr_levels +
						    k;

					t->latency_ns[at] = *cell;
					t->latency_lo_ns[at] = p->ci_lo_ns[cell - p->latency_ns];
					t->latency_hi_ns[at] = p->ci_hi_ns[cell - p->latency_ns];
				}
	}
	*pm = (struct policy_costs){ .nr_layers = p->nr_layers,
				     .nr_versions = nr_versions,
				     .nr_core_counts = p->nr_cores,
				     .nr_levels = p->nr_levels,
				     .core_counts = t->core_counts,
				     .level_slowdown = t->level_slowdown,
				     .latency_ns = t->latency_ns,
				     .latency_lo_ns = t->latency_lo_ns,
				     .latency_hi_ns = t->latency_hi_ns,
				     .layer_ops = t->layer_ops,
				     .nr_cold = p->conditions.nr_cold };
	for (int i = 0; i < p->conditions.nr_cold; i++)
		pm->cold[i] = (struct policy_cold_point){ .idle_ns = p->conditions.cold[i].gap_ns,
							  .ratio = p->conditions.cold[i].ratio };
	alone = model_sum(pm, p->nr_cores - 1, 0);
	t->level_slowdown[0] = 1.0;
	for (int k = 1; k < p->nr_levels; k++) {
		uint64_t at = model_sum(pm, p->nr_cores - 1, k);
		double s = alone && at ? (double)at / (double)alone : running;

		if (s < running) {
			if (!clamped)
				snprintf(t->note, sizeof(t->note),
					 "profile slowdown %.3f at stress level %d is below %.3f "
					 "before it: clamped to the running maximum",
					 s, p->levels[k], running);
			clamped++;
			s = running;
		}
		running = s;
		t->level_slowdown[k] = s;
	}
	if (clamped > 1) {
		size_t n = strlen(t->note);

		snprintf(t->note + n, sizeof(t->note) - n, " (%d level columns clamped)", clamped);
	}
	clamped = policy_costs_check(pm, err);
	if (clamped)
		policy_table_free(t);
	return clamped;
}
