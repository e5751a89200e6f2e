// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc's own latency profiles as a simulated tenant's table: the model
 * file is parsed, its profile looked up in the profile cache by the key
 * colocd computes (the model file's hash and this machine's identity) and
 * turned into a struct policy_table by profile_table_build(), the
 * conversion colocd itself uses (executor/profile_table.c). The simulator
 * so schedules on exactly the table colocd would on this machine. Also a
 * model's input and output bytes a query (model_io_layout), for the copy
 * part of the serving path (parts.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model_open.h"
#include "profile_host.h"
#include "parts.h"

int sim_table_load_profile(const char *model_path, const char *cache_dir, struct policy_table *t,
			   struct coloc_err *err)
{
	struct model_source src;
	struct profile *p;
	int ret;

	*t = (struct policy_table){ 0 };
	ret = model_open(model_path, NULL, &src, err);
	if (ret)
		return ret;
	model_source_drop_weights(&src);
	p = profile_table_find(model_path, src.model, cache_dir, err);
	if (!p) {
		model_source_close(&src);
		return err && err->code ? err->code : -ENOENT;
	}
	ret = profile_table_build(p, src.model, t, err);
	profile_free(p);
	model_source_close(&src);
	return ret;
}

int sim_model_io_bytes(const char *spec, const struct sim_table_dirs *dirs, uint64_t *in_bytes,
		       uint64_t *out_bytes, struct coloc_err *err)
{
	struct model_io_layout io;
	struct model_source src;
	char path[4096];
	int ret;

	*in_bytes = *out_bytes = 0;
	if (!strncmp(spec, "veltair:", 8) || !strncmp(spec, "scaled:", 7))
		return 0;
	if (!strchr(spec, '/') && !strstr(spec, ".model") && !strstr(spec, ".onnx")) {
		if (snprintf(path, sizeof(path), "%s/%s.model", dirs->models, spec) >=
		    (int)sizeof(path))
			return coloc_err_set(err, -ENAMETOOLONG, "model '%s': path too long", spec);
		spec = path;
	}
	ret = model_open(spec, NULL, &src, err);
	if (ret)
		return ret;
	model_source_drop_weights(&src);
	ret = model_io_layout(src.model, &io, err);
	if (!ret) {
		*in_bytes = io.in_bytes;
		*out_bytes = io.out_bytes;
		model_io_layout_free(&io);
	}
	model_source_close(&src);
	return ret;
}
