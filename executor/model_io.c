// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * One query's input and output as they cross every boundary (model.h's
 * model_io_layout): the input layers in layer order, then the layers no
 * later layer reads, in layer order, each dense fp32, packed one after
 * the other. The executor's shared-memory slots, its summary for colocd,
 * coloc-run's --input and --output and the tests all take it from here.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "model.h"

/* Appends layer l's output to *sum and to list (at *nr); -E2BIG if the bytes overflow. */
static int add_tensor(const struct model *m, int l, struct model_io_tensor *list, int *nr,
		      uint64_t *sum)
{
	int64_t elems = model_shape_elems(&m->layers[l].out);
	uint64_t bytes;

	if (elems < 0 || (uint64_t)elems > UINT64_MAX / sizeof(float))
		return -E2BIG;
	bytes = (uint64_t)elems * sizeof(float);
	if (*sum > UINT64_MAX - bytes)
		return -E2BIG;
	list[*nr] = (struct model_io_tensor){ .layer = l, .offset = *sum, .bytes = bytes };
	(*nr)++;
	*sum += bytes;
	return 0;
}

int model_io_layout(const struct model *m, struct model_io_layout *io, struct coloc_err *err)
{
	bool *read;
	int ret = 0;

	memset(io, 0, sizeof(*io));
	if (m->nr_layers < 1)
		return coloc_err_set(err, -EINVAL, "%s has no layers", m->name);
	read = calloc((size_t)m->nr_layers, sizeof(*read));
	io->inputs = calloc(2 * (size_t)m->nr_layers, sizeof(*io->inputs));
	if (!read || !io->inputs) {
		free(read);
		free(io->inputs);
		io->inputs = NULL;
		return coloc_err_set(err, -ENOMEM, "out of memory for %s's input and output layout",
				     m->name);
	}
	io->outputs = io->inputs + m->nr_layers;
	for (int l = 0; l < m->nr_layers; l++)
		for (int k = 0; k < m->layers[l].nr_inputs; k++)
			if (m->layers[l].inputs[k] >= 0 && m->layers[l].inputs[k] < l)
				read[m->layers[l].inputs[k]] = true;
	for (int l = 0; l < m->nr_layers && !ret; l++) {
		if (m->layers[l].op == MODEL_OP_INPUT)
			ret = add_tensor(m, l, io->inputs, &io->nr_inputs, &io->in_bytes);
		if (!ret && !read[l])
			ret = add_tensor(m, l, io->outputs, &io->nr_outputs, &io->out_bytes);
	}
	free(read);
	if (ret) {
		model_io_layout_free(io);
		return coloc_err_set(err, ret, "one query's input or output bytes of %s overflow",
				     m->name);
	}
	return 0;
}

void model_io_layout_free(struct model_io_layout *io)
{
	free(io->inputs);
	memset(io, 0, sizeof(*io));
}
