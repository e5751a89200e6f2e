// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * An executor's summary of the model it imported (shm_summary.h), the
 * only description of a model colocd gets: built from the imported
 * struct model (its input and output by model_io_layout), bounded to the
 * summary's fixed size, then published into the shared memory before the
 * doorbell rings; and the kernel versions built, by name, before READY.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "profile_versions.h"
#include "shm_summary.h"

int shm_summary_fill(const struct model *m, struct coloc_shm_summary *out, char *why, size_t len)
{
	struct model_io_layout io;
	struct coloc_err cerr = { 0 };
	int ret;

	memset(out, 0, sizeof(*out));
	if (m->nr_layers < 1 || m->nr_layers > COLOC_SHM_MAX_LAYERS) {
		snprintf(why, len, "the model has %d layers; an executor serves 1 to %d",
			 m->nr_layers, COLOC_SHM_MAX_LAYERS);
		return -E2BIG;
	}
	if (strlen(m->name) >= sizeof(out->model_name)) {
		snprintf(why, len, "the model's name is %zu bytes; colocd takes at most %zu",
			 strlen(m->name), sizeof(out->model_name) - 1);
		return -E2BIG;
	}
	ret = model_io_layout(m, &io, &cerr);
	if (ret) {
		snprintf(why, len, "%s", coloc_err_str(&cerr));
		return ret;
	}
	snprintf(out->model_name, sizeof(out->model_name), "%s", m->name);
	out->nr_layers = (__u32)m->nr_layers;
	for (int l = 0; l < m->nr_layers; l++)
		out->layer_macs[l] = m->layers[l].macs;
	out->nr_inputs = (__u32)io.nr_inputs;
	out->nr_outputs = (__u32)io.nr_outputs;
	out->in_bytes = io.in_bytes;
	out->out_bytes = io.out_bytes;
	model_io_layout_free(&io);
	return 0;
}

int shm_summary_publish(struct coloc_shm *shm, int done_fd)
{
	uint64_t one = 1;

	__atomic_store_n(&shm->hdr.described, 1, __ATOMIC_RELEASE);
	if (write(done_fd, &one, sizeof(one)) < 0)
		return -errno;
	return 0;
}

int shm_versions_fill(const struct exec_model *em, struct coloc_shm_versions *out, char *why,
		      size_t len)
{
	const struct model *m = exec_model_graph(em);
	char names[EXEC_MAX_VERSIONS][EXEC_VERSION_NAME_LEN];

	memset(out, 0, sizeof(*out));
	if (m->nr_layers > COLOC_SHM_MAX_LAYERS) {
		snprintf(why, len, "the model has %d layers; an executor reports at most %d",
			 m->nr_layers, COLOC_SHM_MAX_LAYERS);
		return -E2BIG;
	}
	for (int l = 0; l < m->nr_layers; l++) {
		int nr = exec_layer_nr_versions(em, l);

		for (int v = 0; v < nr; v++)
			snprintf(names[v], sizeof(names[v]), "%s",
				 exec_layer_version_name(em, l, v));
		if (profile_versions_put(out, l, nr, names)) {
			snprintf(why, len,
				 "the model's layers have more than %d kernel versions of "
				 "distinct names, or a layer more than %d",
				 COLOC_SHM_MAX_VERSION_NAMES, COLOC_SHM_MAX_LAYER_VERSIONS);
			return -E2BIG;
		}
	}
	return 0;
}
