// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The checks colocd makes on an executor's model summary
 * (shm_summary_check.h) before it looks up a profile or builds a policy
 * table from it, and on the kernel versions it reports at ready before
 * they are compared with that profile. Messages say which check failed
 * and never repeat what the summary holds: its values come from a user's
 * file.
 */
#include <stdio.h>
#include <string.h>
#include "shm_summary_check.h"

static bool name_ok(const char *n, size_t cap)
{
	size_t len = strnlen(n, cap);

	if (!len || len == cap || n[0] == '.')
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = n[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

bool shm_summary_check(const struct coloc_shm_summary *s, uint64_t in_cap, uint64_t out_cap,
		       char *why, size_t len)
{
	uint64_t sum = 0;

	if (!name_ok(s->model_name, sizeof(s->model_name))) {
		snprintf(why, len,
			 "described its model with a name that is not 1 to %d of "
			 "[A-Za-z0-9_.-] (not starting with '.')",
			 COLOC_SHM_NAME_LEN - 1);
		return false;
	}
	if (!s->nr_layers || s->nr_layers > COLOC_SHM_MAX_LAYERS) {
		snprintf(why, len, "described its model with a layer count out of 1 to %d",
			 COLOC_SHM_MAX_LAYERS);
		return false;
	}
	if (!s->nr_inputs || !s->nr_outputs || s->nr_inputs > s->nr_layers ||
	    s->nr_outputs > s->nr_layers || s->reserved) {
		snprintf(why, len,
			 "described its model with input or output layer counts out of 1 to its "
			 "layers");
		return false;
	}
	if (!s->in_bytes || !s->out_bytes || s->in_bytes > in_cap || s->out_bytes > out_cap) {
		snprintf(why, len,
			 "described one query of its model as larger than a slot of the shared "
			 "memory (%llu bytes in, %llu out), or empty",
			 (unsigned long long)in_cap, (unsigned long long)out_cap);
		return false;
	}
	for (__u32 l = 0; l < s->nr_layers; l++) {
		if (s->layer_macs[l] > UINT64_MAX - sum) {
			snprintf(why, len,
				 "described its model with layer costs whose sum overflows");
			return false;
		}
		sum += s->layer_macs[l];
	}
	return true;
}

bool shm_summary_same(const struct coloc_shm_summary *a, const struct coloc_shm_summary *b)
{
	return !strncmp(a->model_name, b->model_name, sizeof(a->model_name)) &&
	       a->nr_layers == b->nr_layers && a->nr_inputs == b->nr_inputs &&
	       a->nr_outputs == b->nr_outputs && a->in_bytes == b->in_bytes &&
	       a->out_bytes == b->out_bytes && a->nr_layers <= COLOC_SHM_MAX_LAYERS &&
	       !memcmp(a->layer_macs, b->layer_macs, a->nr_layers * sizeof(a->layer_macs[0]));
}

bool shm_versions_check(const struct coloc_shm_versions *v, __u32 nr_layers, char *why, size_t len)
{
	if (!v->nr_names || v->nr_names > COLOC_SHM_MAX_VERSION_NAMES || v->reserved ||
	    nr_layers > COLOC_SHM_MAX_LAYERS) {
		snprintf(why, len,
			 "reported its kernel versions with a count of names out of 1 to %d",
			 COLOC_SHM_MAX_VERSION_NAMES);
		return false;
	}
	for (__u32 i = 0; i < v->nr_names; i++)
		if (!name_ok(v->names[i], sizeof(v->names[i]))) {
			snprintf(why, len,
				 "reported a kernel version name that is not 1 to %d of "
				 "[A-Za-z0-9_.-] (not starting with '.')",
				 COLOC_SHM_VERSION_NAME_LEN - 1);
			return false;
		}
	for (__u32 l = 0; l < nr_layers; l++) {
		const __u8 *at = v->layer[l];
		int nr = 0;

		while (nr < COLOC_SHM_MAX_LAYER_VERSIONS && at[nr] && at[nr] <= v->nr_names)
			nr++;
		for (int i = nr; i < COLOC_SHM_MAX_LAYER_VERSIONS; i++)
			if (at[i])
				nr = -1;
		if (nr < 1) {
			snprintf(why, len,
				 "reported a layer's kernel versions as none, more than %d, "
				 "one outside its names or a gap in the list",
				 COLOC_SHM_MAX_LAYER_VERSIONS);
			return false;
		}
	}
	return true;
}
