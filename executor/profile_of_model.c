// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The tools' way to a model's profile (profile_host.h): by the model
 * file's path, keyed here (model_open_key), on this machine as oneDNN names its ISA, and
 * the policy's table from the parsed model's layers. colocd does not use
 * it: it keys its sealed copies and asks its executor binary for the ISA,
 * so that it links neither oneDNN nor the model parser.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "model_open.h"
#include "profile_host.h"

struct profile *profile_table_find(const char *model_path, const struct model *m,
				   const char *cache_dir, struct coloc_err *err)
{
	struct profile_machine machine;
	struct profile_key key;
	int ret = model_open_key(model_path, NULL, NULL, &key, err);

	if (ret)
		return NULL;
	ret = profile_machine_detect(&machine);
	if (ret) {
		coloc_err_set(err, ret, "cannot identify this machine for the profile cache: %s",
			      strerror(-ret));
		return NULL;
	}
	return profile_table_find_keyed(m->name, &key, model_path, cache_dir, &machine, err);
}

int profile_table_build(const struct profile *p, const struct model *m, struct policy_table *t,
			struct coloc_err *err)
{
	uint64_t *macs = calloc((size_t)(m->nr_layers > 0 ? m->nr_layers : 1), sizeof(*macs));
	int ret;

	if (!macs)
		return coloc_err_set(err, -ENOMEM, "out of memory for the table of %s", m->name);
	for (int l = 0; l < m->nr_layers; l++)
		macs[l] = m->layers[l].macs;
	ret = profile_table_build_layers(p, m->name, m->nr_layers, macs, t, err);
	free(macs);
	return ret;
}
