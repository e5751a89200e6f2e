// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A live query's arena (executor/exec_arena.c: outputs share bytes by
 * liveness) gives the model's outputs byte for byte as a query that keeps
 * every layer's output, run as blocks cut anywhere and run again on the
 * same input; and it refuses what it no longer holds: a block that does
 * not start where the last one ended, and an output some later layer
 * reads. On models with residual adds fused in place (ResNet-50), branches
 * and concatenations (GoogLeNet), several outputs (SSD) and depthwise
 * stages (MobileNet-V2).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kselftest_harness.h"
#include "executor.h"
#include "model.h"

FIXTURE(exec_arena)
{
	struct model *m;
	struct exec_model *em;
	struct exec_cpuset core;
};

FIXTURE_SETUP(exec_arena)
{
	self->m = NULL;
	self->em = NULL;
	self->core.nr = 0;
	for (int c = 0; c < EXEC_MAX_CPUS && !self->core.nr; c++)
		if (exec_cpu_online(c))
			self->core.cpus[self->core.nr++] = c;
}

FIXTURE_TEARDOWN(exec_arena)
{
	exec_model_free(self->em);
	model_free(self->m);
}

static int load(struct __test_metadata *_metadata, FIXTURE_DATA(exec_arena) * self,
		const char *file)
{
	const char *root = getenv("COLOC_ROOT");
	struct exec_options o = { .cpus = self->core };
	struct coloc_err err = { 0 };
	char path[4096];

	snprintf(path, sizeof(path), "%s/models/%s", root ? root : ".", file);
	self->m = model_load(path, &err);
	if (!self->m) {
		TH_LOG("%s: %s", file, coloc_err_str(&err));
		return -1;
	}
	self->em = exec_model_load(self->m, &o, &err);
	if (!self->em) {
		TH_LOG("%s: %s", file, coloc_err_str(&err));
		return -1;
	}
	return 0;
}

/* Every model output of q, packed as model_io_layout says; NULL on failure. */
static char *outputs_of(const struct exec_query *q, const struct model_io_layout *io)
{
	char *out = malloc(io->out_bytes ? io->out_bytes : 1);

	for (int i = 0; out && i < io->nr_outputs; i++) {
		const struct model_io_tensor *t = &io->outputs[i];

		if (exec_query_read_output(q, t->layer, (float *)(out + t->offset),
					   t->bytes / sizeof(float))) {
			free(out);
			out = NULL;
		}
	}
	return out;
}

/* A layer some later layer reads, and no input: a live query lets it go. */
static int read_inside(const struct model *m)
{
	for (int k = m->nr_layers - 1; k > 0; k--)
		for (int j = 0; j < m->layers[k].nr_inputs; j++) {
			int li = m->layers[k].inputs[j];

			if (m->layers[li].op != MODEL_OP_INPUT && li < m->nr_layers / 2)
				return li;
		}
	return -1;
}

static void same_outputs(struct __test_metadata *_metadata, FIXTURE_DATA(exec_arena) * self,
			 const char *file)
{
	struct model_io_layout io;
	struct coloc_err err = { 0 };
	struct exec_query *full, *live;
	char *want, *got;
	int n, cut1, cut2, inside;

	ASSERT_EQ(0, load(_metadata, self, file));
	n = self->m->nr_layers;
	cut1 = n / 3;
	cut2 = 2 * n / 3 + 1;
	ASSERT_EQ(0, model_io_layout(self->m, &io, &err)) TH_LOG("%s", coloc_err_str(&err));
	full = exec_query_new(self->em);
	live = exec_query_new_live(self->em, NULL);
	ASSERT_NE(NULL, full);
	ASSERT_NE(NULL, live);
	exec_query_fill_inputs(full, self->m, 5);
	exec_query_fill_inputs(live, self->m, 5);
	ASSERT_EQ(0, exec_run_block(self->em, full, 0, n, NULL, &self->core, NULL));
	want = outputs_of(full, &io);
	ASSERT_NE(NULL, want);

	/* cut into three blocks, then again as one on the input it still holds */
	for (int run = 0; run < 2; run++) {
		if (run == 0) {
			ASSERT_EQ(0,
				  exec_run_block(self->em, live, 0, cut1, NULL, &self->core, NULL));
			ASSERT_EQ(0, exec_run_block(self->em, live, cut1, cut2, NULL, &self->core,
						    NULL));
			ASSERT_EQ(0,
				  exec_run_block(self->em, live, cut2, n, NULL, &self->core, NULL));
		} else {
			ASSERT_EQ(0, exec_run_block(self->em, live, 0, n, NULL, &self->core, NULL));
		}
		got = outputs_of(live, &io);
		ASSERT_NE(NULL, got);
		EXPECT_EQ(0, memcmp(want, got, io.out_bytes))
		TH_LOG("%s: run %d: a live query's outputs differ from a full query's", file, run);
		free(got);
	}

	/* what it no longer holds */
	EXPECT_EQ(-ENODATA, exec_run_block(self->em, live, cut1, cut2, NULL, &self->core, NULL));
	inside = read_inside(self->m);
	ASSERT_LE(0, inside);
	{
		size_t elems = (size_t)model_shape_elems(&self->m->layers[inside].out);
		float *buf = malloc(elems * sizeof(float));

		ASSERT_NE(NULL, buf);
		EXPECT_EQ(-ENODATA, exec_query_read_output(live, inside, buf, elems));
		EXPECT_EQ(0, exec_query_read_output(full, inside, buf, elems));
		free(buf);
	}
	free(want);
	model_io_layout_free(&io);
	exec_query_free(full);
	exec_query_free(live);
}

TEST_F(exec_arena, query_new_live__resnet50_fused_adds_same_outputs)
{
	same_outputs(_metadata, self, "resnet50.model");
}

TEST_F(exec_arena, query_new_live__googlenet_branches_same_outputs)
{
	same_outputs(_metadata, self, "googlenet.model");
}

TEST_F(exec_arena, query_new_live__ssd_several_outputs_same_outputs)
{
	same_outputs(_metadata, self, "ssd_mobilenet.model");
}

TEST_F(exec_arena, query_new_live__mobilenet_v2_same_outputs)
{
	same_outputs(_metadata, self, "mobilenet_v2.model");
}

TEST_HARNESS_MAIN
