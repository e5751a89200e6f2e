// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * An executor's summary of the model it imported (shm_summary.h), the
 * only description of a model colocd gets: built from the imported
 * struct model, bounded to the summary's fixed size, then published into
 * the shared memory before the doorbell rings.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "shm_summary.h"

/* One query's bytes of layer l's output: dense fp32. */
static int layer_bytes(const struct model *m, int l, uint64_t *bytes)
{
	int64_t elems = model_shape_elems(&m->layers[l].out);

	if (elems < 0 || (uint64_t)elems > UINT64_MAX / sizeof(float))
		return -E2BIG;
	*bytes = (uint64_t)elems * sizeof(float);
	return 0;
}

static int add_bytes(__u64 *sum, uint64_t bytes)
{
	if (*sum > UINT64_MAX - bytes)
		return -E2BIG;
	*sum += bytes;
	return 0;
}

int shm_summary_fill(const struct model *m, struct coloc_shm_summary *out, char *why, size_t len)
{
	bool *read;
	int ret = 0;

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
	read = calloc((size_t)m->nr_layers, sizeof(*read));
	if (!read) {
		snprintf(why, len, "out of memory describing the model");
		return -ENOMEM;
	}
	for (int l = 0; l < m->nr_layers; l++)
		for (int k = 0; k < m->layers[l].nr_inputs; k++)
			if (m->layers[l].inputs[k] >= 0 && m->layers[l].inputs[k] < m->nr_layers)
				read[m->layers[l].inputs[k]] = true;
	snprintf(out->model_name, sizeof(out->model_name), "%s", m->name);
	out->nr_layers = (__u32)m->nr_layers;
	for (int l = 0; l < m->nr_layers && !ret; l++) {
		uint64_t bytes;

		out->layer_macs[l] = m->layers[l].macs;
		ret = layer_bytes(m, l, &bytes);
		if (!ret && m->layers[l].op == MODEL_OP_INPUT) {
			out->nr_inputs++;
			ret = add_bytes(&out->in_bytes, bytes);
		}
		if (!ret && !read[l]) {
			out->nr_outputs++;
			ret = add_bytes(&out->out_bytes, bytes);
		}
	}
	free(read);
	if (ret)
		snprintf(why, len, "one query's input or output bytes of the model overflow");
	return ret;
}

int shm_summary_publish(struct coloc_shm *shm, int done_fd)
{
	uint64_t one = 1;

	__atomic_store_n(&shm->hdr.described, 1, __ATOMIC_RELEASE);
	if (write(done_fd, &one, sizeof(one)) < 0)
		return -errno;
	return 0;
}
