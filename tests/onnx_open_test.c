// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The entry points take an .onnx file directly (executor/model_open.h):
 * coloc-run and coloc-profile run it, its outputs equal those of the
 * coloc-import'ed .model and .weights bit for bit, its hash keys the bytes
 * and the import options, colocd's serving core admits it with its profile
 * and serves it, and an unsupported op is refused by each with the
 * importer's words.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "executor.h"
#include "model_open.h"
#include "onnx.pb-c.h"
#include "onnx_import.h"
#include "profile.h"
#include "reference.h"
#include "serving.h"
#include "serving_util.h"
#include "testutil.h"
#include "onnx_graph.h"

/* x[1,4] -> Erf: an op the importer does not lower. */
static void unsupported_graph(struct gb *g)
{
	static const int64_t xd[2] = { 1, 4 };

	g->ins[g->nr_ins++] = vinfo("x", 2, xd, NULL);
	node(g, "Erf", "/encoder/gelu/Erf", NAMES("x"), NAMES("y"));
	g->outs[g->nr_outs++] = vinfo("y", 2, xd, NULL);
}

#define UNSUPPORTED_WORDS "node '/encoder/gelu/Erf' (Erf, opset 13, inputs [1,4])"

/*
 * Loads src's model with weights (src's own for an .onnx) on CPU 0, runs
 * input through it and returns the last layer's output (malloc'd, *n floats).
 */
static float *run_on_cpu0(struct model_source *src, const char *weights, const float *input,
			  int64_t *n, struct coloc_err *err)
{
	struct exec_options o = { .cpus = { .nr = 1, .cpus = { 0 } } };
	struct model *m = src->model;
	struct exec_model *em;
	struct exec_query *q = NULL;
	float *out = NULL;
	int last = m->nr_layers - 1;

	o.weights_path = src->onnx ? src->weights_path : weights;
	em = exec_model_load(m, &o, err);
	if (em)
		q = exec_query_new(em);
	if (!q)
		goto done;
	memcpy(exec_query_input(q, 0), input,
	       (size_t)model_shape_elems(&m->layers[0].out) * sizeof(float));
	*n = model_shape_elems(&m->layers[last].out);
	out = malloc((size_t)*n * sizeof(float));
	if (out && (exec_run_block(em, q, 0, m->nr_layers, NULL, &o.cpus, NULL) ||
		    exec_query_read_output(q, last, out, (size_t)*n))) {
		free(out);
		out = NULL;
	}
done:
	if (q)
		exec_query_free(q);
	if (em)
		exec_model_free(em);
	return out;
}

TEST(model_open__onnx_runs_like_its_imported_files_in_coloc_run)
{
	char dir[64], onnx[256], bad[256], bin[512], cmd[2048];
	char out[8192], path[300];
	struct coloc_err err = { 0 };
	struct model_source direct, files;
	struct gb g = { 0 }, u = { 0 };
	float *w, *b, *bn, *input, *a, *c, max_err, max_ref;
	int64_t na = 0, nc = 0;

	ASSERT_EQ(0, tu_make_tmpdir("onnx-open", dir, sizeof(dir)));
	conv_bn_relu(&g, &w, &b, &bn);
	ASSERT_EQ(0, write_onnx(&g, dir, "m.onnx", onnx, sizeof(onnx)));
	unsupported_graph(&u);
	ASSERT_EQ(0, write_onnx(&u, dir, "erf.onnx", bad, sizeof(bad)));

	/* coloc-run takes the .onnx as it is */
	tu_bin("coloc-run", bin, sizeof(bin));
	snprintf(cmd, sizeof(cmd), "%s %s --cores 0 --iters 2", bin, onnx);
	EXPECT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "(median of 2)")) TH_LOG("%s", out);
	/* --batch and --dim are an .onnx's: a .model refuses them */
	snprintf(cmd, sizeof(cmd), "%s %s/m.model --batch 2", bin, dir);
	EXPECT_EQ(2, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "apply to an .onnx MODEL only")) TH_LOG("%s", out);
	/* the weights are the file's: another weights file is refused */
	snprintf(cmd, sizeof(cmd), "%s %s --weights %s/x.weights", bin, onnx, dir);
	EXPECT_EQ(2, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "weights are its initializers")) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "%s %s --cores 0 --iters 2", bin, bad);
	EXPECT_EQ(1, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, UNSUPPORTED_WORDS)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "unsupported op")) TH_LOG("%s", out);

	/* in memory and through coloc-import's files: the same output, bit for bit */
	snprintf(cmd, sizeof(cmd), "%s %s", tu_bin("coloc-import", bin, sizeof(bin)), onnx);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_EQ(0, model_open(onnx, NULL, &direct, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_TRUE(direct.onnx);
	snprintf(path, sizeof(path), "%s/m.model", dir);
	ASSERT_EQ(0, model_open(path, NULL, &files, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_FALSE(files.onnx);
	EXPECT_EQ(direct.model->nr_layers, files.model->nr_layers);
	input = rnd_fill(3 * 8 * 8, -1.0f, 1.0f);
	a = run_on_cpu0(&direct, NULL, input, &na, &err);
	ASSERT_NE(NULL, a) TH_LOG("%s", coloc_err_str(&err));
	snprintf(path, sizeof(path), "%s/m.weights", dir);
	c = run_on_cpu0(&files, path, input, &nc, &err);
	ASSERT_NE(NULL, c) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(4 * 8 * 8, na);
	ASSERT_EQ(na, nc);
	EXPECT_EQ(0, memcmp(a, c, (size_t)na * sizeof(float)));
	/* and not by chance: the Relu leaves positive values */
	ref_compare(a, c, na, &max_err, &max_ref);
	EXPECT_GT(max_ref, 0.0f);
	free(a);
	free(c);
	model_source_close(&direct);
	model_source_close(&files);

	/* a .model takes no import options; an unsupported op keeps its words */
	snprintf(path, sizeof(path), "%s/m.model", dir);
	EXPECT_EQ(-EINVAL,
		  model_open(path, &(struct onnx_import_opts){ .batch = 4 }, &files, &err));
	coloc_err_clear(&err);
	EXPECT_EQ(-EOPNOTSUPP, model_open(bad, NULL, &files, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), UNSUPPORTED_WORDS)) TH_LOG("%s", err.msg);
	tu_remove_tree(dir);
	arena_free();
}

TEST(model_open__key_covers_onnx_bytes_and_import_options)
{
	char dir[64], onnx[256];
	struct onnx_import_opts one = { .batch = 1 }, two = { .batch = 2 }, d1 = { .batch = 1 },
				d2 = { .batch = 1 };
	struct coloc_err err = { 0 };
	struct profile_key k_file, k_none, k_one, k_two, k_d1, k_d2;
	struct profile_key_input in = { .weights_fd = -1 };
	struct gb g = { 0 };
	float *w, *b, *bn;

	ASSERT_EQ(0, tu_make_tmpdir("onnx-hash", dir, sizeof(dir)));
	conv_bn_relu(&g, &w, &b, &bn);
	ASSERT_EQ(0, write_onnx(&g, dir, "m.onnx", onnx, sizeof(onnx)));
	ASSERT_EQ(0, onnx_dim_parse(&d1, "seq=8", &err));
	ASSERT_EQ(0, onnx_dim_parse(&d1, "heads=2", &err));
	ASSERT_EQ(0, onnx_dim_parse(&d2, "heads=2", &err));
	ASSERT_EQ(0, onnx_dim_parse(&d2, "seq=8", &err));
	in.model_fd = open(onnx, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, in.model_fd);
	ASSERT_EQ(0, profile_key_compute(&in, &k_file, &err)) TH_LOG("%s", err.msg);
	close(in.model_fd);
	ASSERT_EQ(0, model_open_key(onnx, NULL, NULL, &k_none, &err)) TH_LOG("%s", err.msg);
	ASSERT_EQ(0, model_open_key(onnx, NULL, &one, &k_one, &err));
	ASSERT_EQ(0, model_open_key(onnx, NULL, &two, &k_two, &err));
	ASSERT_EQ(0, model_open_key(onnx, NULL, &d1, &k_d1, &err));
	ASSERT_EQ(0, model_open_key(onnx, NULL, &d2, &k_d2, &err));
	/* the defaults key the file's bytes alone, as colocd keys a submit of it */
	EXPECT_TRUE(profile_key_equal(&k_file, &k_none));
	EXPECT_TRUE(profile_key_equal(&k_file, &k_one));
	EXPECT_FALSE(profile_key_equal(&k_file, &k_two));
	EXPECT_FALSE(profile_key_equal(&k_file, &k_d1));
	EXPECT_TRUE(profile_key_equal(&k_d1, &k_d2)); /* the order of --dim does not matter */
	EXPECT_EQ(-ENOENT, model_open_key("/nonexistent/m.onnx", NULL, NULL, &k_none, &err));
	unlink(onnx);
	rmdir(dir);
	arena_free();
}

/* ---- the serving core admits and serves an .onnx tenant -------------------- */

struct served {
	bool done;
	enum serving_status status;
	char reason[256];
	float out[4 * 8 * 8];
	size_t out_bytes;
};

static void served_done(void *ctx, const struct serving_completion *c)
{
	struct served *r = ctx;

	r->done = true;
	r->status = c->status;
	snprintf(r->reason, sizeof(r->reason), "%s", c->reason);
	r->out_bytes = c->output_bytes;
	if (c->output && c->output_bytes <= sizeof(r->out))
		memcpy(r->out, c->output, c->output_bytes);
}

/* Polls s's fds as colocd's loop does until *flag or until timeout_ms. */
static bool pump_until(struct serving *s, const bool *flag, const char *ready_tenant,
		       int timeout_ms)
{
	uint64_t end = coloc_now_ns() + (uint64_t)timeout_ms * 1000000ull;

	for (;;) {
		struct serving_tenant_info info;

		if (flag && *flag)
			return true;
		if (ready_tenant && !serving_tenant_info(s, ready_tenant, &info) &&
		    !strcmp(serving_state_name(info.state), "ready"))
			return true;
		if (coloc_now_ns() >= end)
			return false;
		tu_serving_turn(s, 100);
	}
}

TEST(serving__admits_and_serves_an_onnx_tenant)
{
	char dir[64], onnx[256], bad[256], bin[512], cmd[2048];
	char out[8192];
	struct coloc_err err = { 0 };
	struct serving_config cfg = { .executor = tu_bin("coloc-executor", bin, sizeof(bin)) };
	struct serving_tenant_spec spec = { .name = "conv",
					    .weights_fd = -1,
					    .qos_ns = 60000000000ull };
	struct model_source src;
	struct serving *s = NULL;
	struct served r = { 0 };
	struct gb g = { 0 }, u = { 0 };
	float *w, *b, *bn, *input, *want, max_err, max_ref;
	int64_t n = 0;

	if (geteuid() != 0)
		SKIP(return, "needs root: the executor that imports the model runs in namespaces "
			     "of its own (make check runs it)");
	ASSERT_EQ(0, tu_make_tmpdir("onnx-serve", dir, sizeof(dir)));
	conv_bn_relu(&g, &w, &b, &bn);
	ASSERT_EQ(0, write_onnx(&g, dir, "m.onnx", onnx, sizeof(onnx)));
	unsupported_graph(&u);
	ASSERT_EQ(0, write_onnx(&u, dir, "erf.onnx", bad, sizeof(bad)));
	cfg.cache_dir = dir;
	ASSERT_EQ(0, serving_create(&cfg, &s, &err)) TH_LOG("%s", coloc_err_str(&err));
	spec.model_name = onnx;
	spec.model_fd = tu_sealed_copy(onnx);
	ASSERT_LE(0, spec.model_fd);
	/* no profile yet: the message names the coloc-profile command for the .onnx */
	EXPECT_EQ(-ENOENT, serving_admit_wait(s, &spec, 180000, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "coloc-profile")) TH_LOG("%s", err.msg);
	coloc_err_clear(&err);
	snprintf(cmd, sizeof(cmd),
		 "%s %s -o %s/m.profile --iters 1 --levels 50 --force --cache-dir %s",
		 tu_bin("coloc-profile", bin, sizeof(bin)), onnx, dir, dir);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s: %s", cmd, out);
	snprintf(cmd, sizeof(cmd), "test -s %s/m.profile", dir);
	EXPECT_EQ(0, tu_run(cmd, NULL, 0));
	snprintf(cmd, sizeof(cmd),
		 "%s %s -o %s/erf.profile --iters 1 --levels 50 --force --cache-dir %s", bin, bad,
		 dir, dir);
	EXPECT_EQ(1, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, UNSUPPORTED_WORDS)) TH_LOG("%s", out);

	/* a weights file with an .onnx, and an unsupported op, are refused */
	spec.weights_fd = spec.model_fd;
	EXPECT_EQ(-EINVAL, serving_admit_wait(s, &spec, 180000, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "weights are in the file"))
	TH_LOG("%s", err.msg);
	coloc_err_clear(&err);
	spec.weights_fd = -1;
	spec.model_name = bad;
	close(spec.model_fd);
	spec.model_fd = tu_sealed_copy(bad);
	ASSERT_LE(0, spec.model_fd);
	EXPECT_EQ(-EOPNOTSUPP, serving_admit_wait(s, &spec, 180000, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), UNSUPPORTED_WORDS)) TH_LOG("%s", err.msg);
	coloc_err_clear(&err);

	spec.model_name = onnx;
	close(spec.model_fd);
	spec.model_fd = tu_sealed_copy(onnx);
	ASSERT_LE(0, spec.model_fd);
	ASSERT_EQ(0, serving_admit_wait(s, &spec, 180000, &err)) TH_LOG("%s", coloc_err_str(&err));
	close(spec.model_fd);
	ASSERT_TRUE(pump_until(s, NULL, "conv", 180000));
	input = rnd_fill(3 * 8 * 8, -1.0f, 1.0f);
	ASSERT_EQ(0, serving_submit(s, "conv", input, 3 * 8 * 8 * sizeof(float), served_done, &r,
				    NULL, &err))
	TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(pump_until(s, &r.done, NULL, 120000));
	ASSERT_EQ(SERVING_QUERY_OK, r.status) TH_LOG("%s", r.reason);
	ASSERT_EQ(sizeof(r.out), r.out_bytes);

	/* the in-process run of the same file (within TOL: the executor may use other cores) */
	ASSERT_EQ(0, model_open(onnx, NULL, &src, &err)) TH_LOG("%s", coloc_err_str(&err));
	want = run_on_cpu0(&src, NULL, input, &n, &err);
	ASSERT_NE(NULL, want) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(4 * 8 * 8, n);
	ref_compare(r.out, want, n, &max_err, &max_ref);
	EXPECT_GT(max_ref, 0.0f);
	EXPECT_LE(max_err, TOL * max_ref) TH_LOG("max err %g, max |ref| %g", max_err, max_ref);
	free(want);
	model_source_close(&src);
	serving_destroy(s);
	tu_remove_tree(dir);
	arena_free();
}

TEST_HARNESS_MAIN
