// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target: a weights file (exec_weights_open and
 * exec_weights_read_layer, models/WEIGHTS.md) checked against a small model
 * with every kind of parameter the format holds: conv weights, bias and
 * batch norm, deconv, fc, embedding table, layer norm, a binary op's
 * constant. The bytes reach the reader as a file (a memfd opened by path).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "executor.h"
#include "fuzz.h"
#include "model.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Small enough that a seed file is a few KiB. */
static const char fuzz_weights_model[] =
	"model fuzz_weights\n"
	"seed 7\n"
	"macs 1256\n"
	"params 131\n"
	"input image shape=1x2x4x4\n"
	"conv c1 out=3 k=3 pad=1 bias bn act=relu\n"
	"deconv d1 out=2 k=2 stride=2 bias\n"
	"mul scale in=d1 const=1x2x1x1\n"
	"pool gp kind=global_avg\n"
	"reshape flat shape=1x2\n"
	"fc f1 out=4 bias\n"
	"input ids shape=1x3\n"
	"embed emb in=ids vocab=5 dim=4\n"
	"layer_norm ln in=emb\n"
	"end\n";

static struct model *model;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct coloc_err err = { 0 };

	(void)argc;
	(void)argv;
	model = model_parse("fuzz_weights.model", fuzz_weights_model, strlen(fuzz_weights_model),
			    &err);
	if (!model) {
		fprintf(stderr, "fuzz_weights: the built-in model is refused: %s\n",
			coloc_err_str(&err));
		abort();
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct coloc_err err = { 0 };
	struct exec_weights_file *wf;
	char path[64];
	int fd = fuzz_memfd(data, size, path, sizeof(path));

	wf = exec_weights_open(model, path, &err);
	if (!wf) {
		fuzz_check_refusal("weights", err.code, &err);
		close(fd);
		return 0;
	}
	for (int li = 0; li < model->nr_layers; li++) {
		struct exec_layer_params p;
		int ret;

		coloc_err_clear(&err);
		ret = exec_weights_read_layer(wf, li, &p, &err);
		if (ret) {
			fprintf(stderr, "fuzz_weights: layer %d of an opened file fails: %s\n",
				li, coloc_err_str(&err));
			abort();
		}
		exec_layer_params_free(&p);
	}
	exec_weights_close(wf);
	close(fd);
	return 0;
}
