// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The ONNX importer (executor/onnx_import.h): small ONNX graphs are built
 * here with protobuf-c (Conv+BatchNormalization+Relu, a residual Add,
 * MatMul+Add, Gemm, a Shape -> Gather -> Unsqueeze -> Concat -> Reshape
 * subgraph), packed to bytes and imported. Each lowered model must parse
 * with the fusions done and hand-computed MACs and parameters, and - the
 * real check - run through the oneDNN executor with the imported weights
 * file to the output the plain-C reference (tests/reference.c) computes
 * straight from the ONNX initializers, batch norm applied unfolded. An
 * unsupported op, a missing symbolic dim and a broken file are refused with
 * the documented words; truncations at every byte and random mutations of
 * a file never crash the importer (run under SANITIZE=1).
 *
 * The entry points take an .onnx file directly (executor/model_open.h):
 * coloc-run and coloc-profile run it, its outputs equal those of the
 * coloc-import'ed .model and .weights bit for bit, colocd's serving core
 * admits it with its profile and serves it, and an unsupported op is
 * refused by each with the importer's words.
 */
#define _GNU_SOURCE
#include <errno.h>
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
#include "testutil.h"

#define TOL 1e-4f /* relative to max |ref|, as the other executor tests */
#define ARENA_MAX 4096

/* ---- building ONNX graphs with protobuf-c ---------------------------------- */

static void *arena[ARENA_MAX];
static int arena_nr;

static void *mem(size_t n)
{
	void *p = calloc(1, n);

	if (p && arena_nr < ARENA_MAX)
		arena[arena_nr++] = p;
	return p;
}

static void arena_free(void)
{
	while (arena_nr)
		free(arena[--arena_nr]);
}

struct gb {
	Onnx__NodeProto *nodes[64];
	Onnx__TensorProto *inits[64];
	Onnx__ValueInfoProto *ins[4], *outs[4];
	int nr_nodes, nr_inits, nr_ins, nr_outs;
	int64_t opset;
};

static uint32_t rnd_state = 12345;

static float rnd(void)
{
	rnd_state = rnd_state * 1664525u + 1013904223u;
	return (float)(rnd_state >> 8) / 16777216.0f * 2.0f - 1.0f;
}

static float *rnd_fill(int64_t n, float lo, float hi)
{
	float *f = mem((size_t)n * sizeof(float));

	for (int64_t i = 0; i < n; i++)
		f[i] = lo + (rnd() + 1.0f) * 0.5f * (hi - lo);
	return f;
}

static void init_f(struct gb *g, const char *name, int nd, const int64_t *dims, const float *v)
{
	Onnx__TensorProto *t = mem(sizeof(*t));
	int64_t n = 1;

	onnx__tensor_proto__init(t);
	t->name = (char *)name;
	t->n_dims = (size_t)nd;
	t->dims = (int64_t *)dims;
	for (int i = 0; i < nd; i++)
		n *= dims[i];
	t->has_data_type = 1;
	t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	t->n_float_data = (size_t)n;
	t->float_data = (float *)v;
	g->inits[g->nr_inits++] = t;
}

static void init_i64(struct gb *g, const char *name, int nd, const int64_t *dims, int64_t n,
		     const int64_t *v)
{
	Onnx__TensorProto *t = mem(sizeof(*t));

	onnx__tensor_proto__init(t);
	t->name = (char *)name;
	t->n_dims = (size_t)nd;
	t->dims = (int64_t *)dims;
	t->has_data_type = 1;
	t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
	t->n_int64_data = (size_t)n;
	t->int64_data = (int64_t *)v;
	g->inits[g->nr_inits++] = t;
}

static int32_t vinfo_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT; /* of the next vinfo() */

/* A tensor value info; dim_names[i] non-NULL makes dim i symbolic. */
static Onnx__ValueInfoProto *vinfo(const char *name, int nd, const int64_t *dims,
				   const char *const *dim_names)
{
	Onnx__ValueInfoProto *v = mem(sizeof(*v));
	Onnx__TypeProto *t = mem(sizeof(*t));
	Onnx__TypeProto__Tensor *tt = mem(sizeof(*tt));
	Onnx__TensorShapeProto *s = mem(sizeof(*s));

	onnx__value_info_proto__init(v);
	onnx__type_proto__init(t);
	onnx__type_proto__tensor__init(tt);
	onnx__tensor_shape_proto__init(s);
	s->n_dim = (size_t)nd;
	s->dim = mem((size_t)nd * sizeof(*s->dim));
	for (int i = 0; i < nd; i++) {
		Onnx__TensorShapeProto__Dimension *d = mem(sizeof(*d));

		onnx__tensor_shape_proto__dimension__init(d);
		if (dim_names && dim_names[i]) {
			d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			d->dim_param = (char *)dim_names[i];
		} else {
			d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			d->dim_value = dims[i];
		}
		s->dim[i] = d;
	}
	tt->has_elem_type = 1;
	tt->elem_type = vinfo_type;
	vinfo_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	tt->shape = s;
	t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	t->tensor_type = tt;
	v->name = (char *)name;
	v->type = t;
	return v;
}

/* A NULL-terminated name list copied into the arena (it outlives the caller's literals). */
static const char *const *names(const char *const *l)
{
	size_t n = 0;
	const char **c;

	while (l[n])
		n++;
	c = mem((n + 1) * sizeof(*c));
	memcpy(c, l, n * sizeof(*c));
	return c;
}

#define NAMES(...) names((const char *const[]){ __VA_ARGS__, NULL })

/* A node; ins and outs are NULL-terminated lists of names. */
static Onnx__NodeProto *node(struct gb *g, const char *op, const char *name, const char *const *ins,
			     const char *const *outs)
{
	Onnx__NodeProto *n = mem(sizeof(*n));

	onnx__node_proto__init(n);
	n->op_type = (char *)op;
	n->name = (char *)name;
	while (ins[n->n_input])
		n->n_input++;
	while (outs[n->n_output])
		n->n_output++;
	n->input = (char **)ins;
	n->output = (char **)outs;
	n->attribute = mem(8 * sizeof(*n->attribute));
	g->nodes[g->nr_nodes++] = n;
	return n;
}

static Onnx__AttributeProto *attr(Onnx__NodeProto *n, const char *name,
				  Onnx__AttributeProto__AttributeType type)
{
	Onnx__AttributeProto *a = mem(sizeof(*a));

	onnx__attribute_proto__init(a);
	a->name = (char *)name;
	a->has_type = 1;
	a->type = type;
	n->attribute[n->n_attribute++] = a;
	return a;
}

static void attr_int(Onnx__NodeProto *n, const char *name, int64_t v)
{
	Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);

	a->has_i = 1;
	a->i = v;
}

static void attr_float(Onnx__NodeProto *n, const char *name, float v)
{
	Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);

	a->has_f = 1;
	a->f = v;
}

static void attr_ints(Onnx__NodeProto *n, const char *name, int nr, const int64_t *v)
{
	Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);

	a->n_ints = (size_t)nr;
	a->ints = mem((size_t)nr * sizeof(int64_t));
	memcpy(a->ints, v, (size_t)nr * sizeof(int64_t));
}

static void attr_str(Onnx__NodeProto *n, const char *name, const char *v)
{
	Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);

	a->has_s = 1;
	a->s.data = (uint8_t *)v;
	a->s.len = strlen(v);
}

/* Packs the graph into an ONNX file image (malloc'ed, in the arena). */
static uint8_t *pack(struct gb *g, size_t *len)
{
	Onnx__ModelProto m;
	Onnx__GraphProto gr;
	Onnx__OperatorSetIdProto op, *ops[1] = { &op };
	uint8_t *buf;

	onnx__model_proto__init(&m);
	onnx__graph_proto__init(&gr);
	onnx__operator_set_id_proto__init(&op);
	op.domain = "";
	op.has_version = 1;
	op.version = g->opset ? g->opset : 13;
	gr.name = "test_graph";
	gr.n_node = (size_t)g->nr_nodes;
	gr.node = g->nodes;
	gr.n_initializer = (size_t)g->nr_inits;
	gr.initializer = g->inits;
	gr.n_input = (size_t)g->nr_ins;
	gr.input = g->ins;
	gr.n_output = (size_t)g->nr_outs;
	gr.output = g->outs;
	m.has_ir_version = 1;
	m.ir_version = 8;
	m.producer_name = "onnx_test";
	m.n_opset_import = 1;
	m.opset_import = ops;
	m.graph = &gr;
	*len = onnx__model_proto__get_packed_size(&m);
	buf = mem(*len);
	onnx__model_proto__pack(&m, buf);
	return buf;
}

/* ---- running an import ------------------------------------------------------ */

static int import(struct gb *g, struct onnx_import *im, struct coloc_err *err)
{
	struct onnx_import_opts o = { .batch = 1 };
	size_t len;
	uint8_t *buf = pack(g, &len);

	return onnx_import_buffer("t.onnx", buf, len, &o, im, err);
}

/*
 * Runs the imported model with its imported weights on one core, the
 * input given, and compares graph output 0 with want.
 */
static void run_compare_output(struct __test_metadata *_metadata, struct onnx_import *im, int which,
			       const float *input, const float *want, int64_t n)
{
	struct exec_options opts = { .cpus = { .nr = 1, .cpus = { 0 } } };
	struct exec_cpuset one = { .nr = 1, .cpus = { 0 } };
	char path[] = "/tmp/coloc-onnx-wt-XXXXXX";
	struct coloc_err err = { 0 };
	int64_t in_n = model_shape_elems(&im->model->layers[0].out);
	struct exec_model *em;
	struct exec_query *q;
	float *got, max_err, max_ref;
	int fd = mkstemp(path);
	int out = im->outputs[which];

	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)im->weights_len, write(fd, im->weights, im->weights_len));
	close(fd);
	opts.weights_path = path;
	em = exec_model_load(im->model, &opts, &err);
	unlink(path);
	ASSERT_NE(NULL, em) TH_LOG("load: %s\n%s", coloc_err_str(&err), im->text);
	q = exec_query_new(em);
	ASSERT_NE(NULL, q);
	memcpy(exec_query_input(q, 0), input, (size_t)in_n * sizeof(float));
	ASSERT_EQ(0, exec_run_block(em, q, 0, im->model->nr_layers, NULL, &one, NULL));
	ASSERT_EQ(n, model_shape_elems(&im->model->layers[out].out));
	got = malloc((size_t)n * sizeof(float));
	ASSERT_EQ(0, exec_query_read_output(q, out, got, (size_t)n));
	ref_compare(got, want, n, &max_err, &max_ref);
	EXPECT_GT(max_ref, 0.0f);
	EXPECT_LE(max_err, TOL * max_ref) TH_LOG("max err %g, max |ref| %g", max_err, max_ref);
	free(got);
	exec_query_free(q);
	exec_model_free(em);
}

static void run_compare(struct __test_metadata *_metadata, struct onnx_import *im,
			const float *input, const float *want, int64_t n)
{
	run_compare_output(_metadata, im, 0, input, want, n);
}

static int count_ops(const struct model *m, enum model_op op)
{
	int k = 0;

	for (int i = 0; i < m->nr_layers; i++)
		k += m->layers[i].op == op;
	return k;
}

/* ---- the graphs ------------------------------------------------------------ */

static const int64_t X_DIMS[4] = { 1, 3, 8, 8 }, W_DIMS[4] = { 4, 3, 3, 3 }, C4[1] = { 4 };

/* x[1,3,8,8] -> Conv(4, 3x3, pad 1, bias) -> BatchNormalization(eps 1e-3) -> Relu */
static void conv_bn_relu(struct gb *g, float **w, float **b, float **bn)
{
	Onnx__NodeProto *n;

	*w = rnd_fill(108, -0.5f, 0.5f);
	*b = rnd_fill(4, -0.5f, 0.5f);
	*bn = rnd_fill(16, 0.1f, 1.5f); /* gamma, beta, mean, var: var > 0 */
	init_f(g, "W", 4, W_DIMS, *w);
	init_f(g, "B", 1, C4, *b);
	init_f(g, "gamma", 1, C4, *bn);
	init_f(g, "beta", 1, C4, *bn + 4);
	init_f(g, "mean", 1, C4, *bn + 8);
	init_f(g, "var", 1, C4, *bn + 12);
	g->ins[g->nr_ins++] = vinfo("x", 4, X_DIMS, NULL);
	n = node(g, "Conv", "/stem/conv/Conv", NAMES("x", "W", "B"), NAMES("c"));
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	attr_ints(n, "kernel_shape", 2, (const int64_t[]){ 3, 3 });
	n = node(g, "BatchNormalization", "bn", NAMES("c", "gamma", "beta", "mean", "var"),
		 NAMES("n"));
	attr_float(n, "epsilon", 1e-3f);
	node(g, "Relu", "relu", NAMES("n"), NAMES("y"));
	g->outs[g->nr_outs++] = vinfo("y", 4, (const int64_t[]){ 1, 4, 8, 8 }, NULL);
}

static const struct model_conv CONV3 = { .out_channels = 4,
					 .kh = 3,
					 .kw = 3,
					 .stride_h = 1,
					 .stride_w = 1,
					 .pad_t = 1,
					 .pad_l = 1,
					 .pad_b = 1,
					 .pad_r = 1,
					 .dil_h = 1,
					 .dil_w = 1,
					 .groups = 1 };

TEST(onnx_import__conv_bn_relu_fuses_and_matches_reference)
{
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	int64_t od[4] = { 1, 4, 8, 8 };
	float *w, *b, *bn, *x = rnd_fill(192, -1, 1), *want = mem(256 * sizeof(float));

	conv_bn_relu(&g, &w, &b, &bn);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	/* one conv layer: batch norm folded into it, relu fused */
	ASSERT_EQ(2, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_CONV, im.model->layers[1].op);
	EXPECT_EQ(MODEL_ACT_RELU, im.model->layers[1].act);
	EXPECT_TRUE(im.model->layers[1].conv.bias);
	/* 8x8 outputs x 4 channels x 3x3x3; 4x27 weights + 4 biases */
	EXPECT_EQ(6912u, im.model->macs);
	EXPECT_EQ(112u, im.model->params);
	EXPECT_EQ(1, im.outputs[0]);
	ref_conv(x, X_DIMS, w, b, &CONV3, od, want);
	ref_batch_norm(want, 1, 4, 64, bn, bn + 4, bn + 8, bn + 12, 1e-3f);
	ref_act(want, 256, MODEL_ACT_RELU, 0, 0);
	run_compare(_metadata, &im, x, want, 256);
	onnx_import_free(&im);
	arena_free();
}

/* x -> Conv a -> Relu -> Conv b -> Add(b, x) -> Relu: the add takes the relu. */
TEST(onnx_import__residual_add_matches_reference)
{
	static const int64_t xd[4] = { 1, 3, 6, 6 }, wd[4] = { 3, 3, 3, 3 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	struct model_conv cv = CONV3;
	struct model_shape s = { .ndims = 4, .dims = { 1, 3, 6, 6 } };
	float *w1 = rnd_fill(81, -0.4f, 0.4f), *w2 = rnd_fill(81, -0.4f, 0.4f);
	float *x = rnd_fill(108, -1, 1), *a = mem(108 * 4), *c = mem(108 * 4), *want = mem(108 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "W1", 4, wd, w1);
	init_f(&g, "W2", 4, wd, w2);
	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	n = node(&g, "Conv", "a", NAMES("x", "W1"), NAMES("a"));
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	node(&g, "Relu", "ra", NAMES("a"), NAMES("ar"));
	n = node(&g, "Conv", "b", NAMES("ar", "W2"), NAMES("b"));
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	node(&g, "Add", "skip", NAMES("b", "x"), NAMES("s"));
	node(&g, "Relu", "rs", NAMES("s"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, xd, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(4, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_ADD, im.model->layers[3].op);
	EXPECT_EQ(MODEL_ACT_RELU, im.model->layers[3].act);
	EXPECT_EQ(MODEL_ACT_RELU, im.model->layers[1].act);
	EXPECT_EQ(2u * 36 * 3 * 27, im.model->macs);
	EXPECT_EQ(2u * 81, im.model->params);
	cv.out_channels = 3;
	ref_conv(x, xd, w1, NULL, &cv, xd, a);
	ref_act(a, 108, MODEL_ACT_RELU, 0, 0);
	ref_conv(a, xd, w2, NULL, &cv, xd, c);
	ref_binary(MODEL_OP_ADD, c, &s, x, &s, want);
	ref_act(want, 108, MODEL_ACT_RELU, 0, 0);
	run_compare(_metadata, &im, x, want, 108);
	onnx_import_free(&im);
	arena_free();
}

/*
 * auto_pad=SAME_LOWER with dilation 2 and stride 2 on 8x8: output 4x4, total
 * padding (4-1)*2 + (3-1)*2 + 1 - 8 = 3, the odd pixel at the top/left, so
 * pads t=2, l=2, b=1, r=1 (worked out here by hand, not by the importer).
 */
TEST(onnx_import__dilated_same_lower_conv_matches_reference)
{
	static const int64_t xd[4] = { 1, 2, 8, 8 }, wd[4] = { 3, 2, 3, 3 }, od[4] = { 1, 3, 4, 4 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	struct model_conv cv = { .out_channels = 3,
				 .kh = 3,
				 .kw = 3,
				 .stride_h = 2,
				 .stride_w = 2,
				 .pad_t = 2,
				 .pad_l = 2,
				 .pad_b = 1,
				 .pad_r = 1,
				 .dil_h = 2,
				 .dil_w = 2,
				 .groups = 1 };
	float *w = rnd_fill(54, -1, 1), *x = rnd_fill(128, -1, 1), *want = mem(48 * 4);
	Onnx__NodeProto *n;
	Onnx__AttributeProto *a;

	init_f(&g, "W", 4, wd, w);
	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	n = node(&g, "Conv", "dil", NAMES("x", "W"), NAMES("y"));
	attr_ints(n, "strides", 2, (const int64_t[]){ 2, 2 });
	attr_ints(n, "dilations", 2, (const int64_t[]){ 2, 2 });
	a = attr(n, "auto_pad", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
	a->has_s = 1;
	a->s.data = (uint8_t *)"SAME_LOWER";
	a->s.len = 10;
	g.outs[g.nr_outs++] = vinfo("y", 4, od, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(2, im.model->nr_layers);
	EXPECT_EQ(2, im.model->layers[1].conv.pad_t);
	EXPECT_EQ(1, im.model->layers[1].conv.pad_b);
	EXPECT_EQ(2, im.model->layers[1].conv.dil_h);
	EXPECT_EQ(16u * 3 * 18, im.model->macs);
	ref_conv(x, xd, w, NULL, &cv, od, want);
	run_compare(_metadata, &im, x, want, 48);
	onnx_import_free(&im);
	arena_free();
}

/* x[1,5,8] -> MatMul(W[8,6]) -> Add(b[6]) -> Relu: one fc with bias and relu. */
TEST(onnx_import__matmul_add_becomes_fc)
{
	static const int64_t xd[3] = { 1, 5, 8 }, wd[2] = { 8, 6 }, bd[1] = { 6 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *w = rnd_fill(48, -1, 1), *b = rnd_fill(6, -1, 1), *x = rnd_fill(40, -1, 1);
	float *want = mem(30 * 4);

	init_f(&g, "W", 2, wd, w);
	init_f(&g, "b", 1, bd, b);
	g.ins[g.nr_ins++] = vinfo("x", 3, xd, NULL);
	node(&g, "MatMul", "mm", NAMES("x", "W"), NAMES("m"));
	node(&g, "Add", "bias", NAMES("m", "b"), NAMES("a"));
	node(&g, "Relu", "r", NAMES("a"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 3, (const int64_t[]){ 1, 5, 6 }, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(2, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_FC, im.model->layers[1].op);
	EXPECT_TRUE(im.model->layers[1].fc.bias);
	EXPECT_EQ(MODEL_ACT_RELU, im.model->layers[1].act);
	EXPECT_EQ(5u * 8 * 6, im.model->macs);
	EXPECT_EQ(8u * 6 + 6, im.model->params);
	ref_fc(x, w, b, 5, 8, 6, want);
	ref_act(want, 30, MODEL_ACT_RELU, 0, 0);
	run_compare(_metadata, &im, x, want, 30);
	onnx_import_free(&im);
	arena_free();
}

/* Gemm(transB=1, alpha, beta) with C: fc weights are alpha * B^T, bias beta * C. */
TEST(onnx_import__gemm_trans_b_matches_reference)
{
	static const int64_t xd[2] = { 2, 4 }, bd[2] = { 3, 4 }, cd[1] = { 3 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *bw = rnd_fill(12, -1, 1), *cb = rnd_fill(3, -1, 1), *x = rnd_fill(8, -1, 1);
	float *want = mem(6 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "B", 2, bd, bw);
	init_f(&g, "C", 1, cd, cb);
	g.ins[g.nr_ins++] = vinfo("x", 2, xd, NULL);
	n = node(&g, "Gemm", "gemm", NAMES("x", "B", "C"), NAMES("y"));
	attr_int(n, "transB", 1);
	attr_float(n, "alpha", 0.5f);
	attr_float(n, "beta", 2.0f);
	g.outs[g.nr_outs++] = vinfo("y", 2, (const int64_t[]){ 2, 3 }, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	/* straight from the definition: y = 0.5 * x @ B^T + 2 * C */
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++) {
			double acc = 0;

			for (int k = 0; k < 4; k++)
				acc += x[i * 4 + k] * bw[j * 4 + k];
			want[i * 3 + j] = (float)(0.5 * acc + 2.0 * cb[j]);
		}
	run_compare(_metadata, &im, x, want, 6);
	onnx_import_free(&im);
	arena_free();
}

/*
 * y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])) @ W: the
 * shape subgraph folds away, leaving input, reshape [1, 36] and fc.
 */
TEST(onnx_import__shape_subgraph_folds_away)
{
	static const int64_t xd[4] = { 1, 4, 3, 3 }, wd[2] = { 36, 3 }, one[1] = { 1 };
	static const int64_t zero = 0, minus1 = -1;
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *w = rnd_fill(108, -1, 1), *x = rnd_fill(36, -1, 1), *want = mem(3 * 4);

	init_f(&g, "W", 2, wd, w);
	init_i64(&g, "idx0", 0, NULL, 1, &zero);
	init_i64(&g, "axes0", 1, one, 1, &zero);
	init_i64(&g, "rest", 1, one, 1, &minus1);
	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	node(&g, "Shape", "shape", NAMES("x"), NAMES("s"));
	node(&g, "Gather", "batch", NAMES("s", "idx0"), NAMES("n"));
	node(&g, "Unsqueeze", "unsq", NAMES("n", "axes0"), NAMES("n1"));
	attr_int(node(&g, "Concat", "target", NAMES("n1", "rest"), NAMES("t")), "axis", 0);
	node(&g, "Reshape", "flat", NAMES("x", "t"), NAMES("f"));
	node(&g, "MatMul", "head", NAMES("f", "W"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 2, (const int64_t[]){ 1, 3 }, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(3, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_RESHAPE, im.model->layers[1].op);
	EXPECT_EQ(2, im.model->layers[1].out.ndims);
	EXPECT_EQ(36, im.model->layers[1].out.dims[1]);
	EXPECT_EQ(MODEL_OP_FC, im.model->layers[2].op);
	EXPECT_EQ(0, count_ops(im.model, MODEL_OP_CONCAT));
	ref_fc(x, w, NULL, 1, 36, 3, want);
	run_compare(_metadata, &im, x, want, 3);
	onnx_import_free(&im);
	arena_free();
}

/*
 * x -> [depthwise Conv (stride 2, asymmetric pads) + Clip(0, 6) | MaxPool
 * ceil_mode | AveragePool] -> Concat -> squeeze-excite (GlobalAveragePool,
 * Sigmoid, Mul with the operands swapped) + LeakyRelu -> Flatten -> Gemm
 * -> Softmax; both the logits and the probabilities are graph outputs.
 */
TEST(onnx_import__image_ops_match_reference)
{
	static const int64_t xd[4] = { 1, 4, 8, 8 }, wd[4] = { 4, 1, 3, 3 }, bd[2] = { 192, 5 },
			     cd[1] = { 5 }, od[4] = { 1, 4, 4, 4 }, catd[4] = { 1, 12, 4, 4 },
			     gd[4] = { 1, 12, 1, 1 };
	static const float zero = 0, six = 6;
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	struct model_conv cv = { .out_channels = 4,
				 .kh = 3,
				 .kw = 3,
				 .stride_h = 2,
				 .stride_w = 2,
				 .pad_t = 1,
				 .pad_l = 1,
				 .dil_h = 1,
				 .dil_w = 1,
				 .groups = 4 };
	struct model_pool mp = {
		.kind = MODEL_POOL_MAX, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2
	};
	struct model_pool ap = {
		.kind = MODEL_POOL_AVG, .kh = 2, .kw = 2, .stride_h = 2, .stride_w = 2
	};
	struct model_pool gp = { .kind = MODEL_POOL_GLOBAL_AVG };
	struct model_shape cs = { .ndims = 4, .dims = { 1, 12, 4, 4 } };
	struct model_shape ss = { .ndims = 4, .dims = { 1, 12, 1, 1 } };
	struct model_shape ls = { .ndims = 2, .dims = { 1, 5 } };
	float *w = rnd_fill(36, -3, 3), *bb = rnd_fill(960, -0.2f, 0.2f), *cc = rnd_fill(5, -1, 1);
	float *x = rnd_fill(256, -2, 2), *br[3], *cat = mem(192 * 4), *gap = mem(12 * 4);
	float *mul = mem(192 * 4), *logits = mem(5 * 4), *prob = mem(5 * 4);
	const float *ins[3];
	const struct model_shape *shp[3];
	struct model_shape os = { .ndims = 4, .dims = { 1, 4, 4, 4 } };
	Onnx__NodeProto *n;

	init_f(&g, "Wd", 4, wd, w);
	init_f(&g, "zero", 0, NULL, &zero);
	init_f(&g, "six", 0, NULL, &six);
	init_f(&g, "Wf", 2, bd, bb);
	init_f(&g, "bf", 1, cd, cc);
	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	n = node(&g, "Conv", "dw", NAMES("x", "Wd"), NAMES("a0"));
	attr_int(n, "group", 4);
	attr_ints(n, "strides", 2, (const int64_t[]){ 2, 2 });
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 0, 0 });
	node(&g, "Clip", "relu6", NAMES("a0", "zero", "six"), NAMES("a"));
	n = node(&g, "MaxPool", "maxpool", NAMES("x"), NAMES("b"));
	attr_ints(n, "kernel_shape", 2, (const int64_t[]){ 3, 3 });
	attr_ints(n, "strides", 2, (const int64_t[]){ 2, 2 });
	attr_int(n, "ceil_mode", 1);
	n = node(&g, "AveragePool", "avgpool", NAMES("x"), NAMES("c"));
	attr_ints(n, "kernel_shape", 2, (const int64_t[]){ 2, 2 });
	attr_ints(n, "strides", 2, (const int64_t[]){ 2, 2 });
	attr_int(node(&g, "Concat", "cat", NAMES("a", "b", "c"), NAMES("cat")), "axis", 1);
	node(&g, "GlobalAveragePool", "se_pool", NAMES("cat"), NAMES("gap"));
	node(&g, "Sigmoid", "se_gate", NAMES("gap"), NAMES("gate"));
	node(&g, "Mul", "se_mul", NAMES("gate", "cat"), NAMES("m"));
	attr_float(node(&g, "LeakyRelu", "leaky", NAMES("m"), NAMES("l")), "alpha", 0.2f);
	node(&g, "Flatten", "flat", NAMES("l"), NAMES("f"));
	node(&g, "Gemm", "head", NAMES("f", "Wf", "bf"), NAMES("logits"));
	node(&g, "Softmax", "softmax", NAMES("logits"), NAMES("prob"));
	g.outs[g.nr_outs++] = vinfo("prob", 2, ls.dims, NULL);
	g.outs[g.nr_outs++] = vinfo("logits", 2, ls.dims, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	/* input, dw, maxpool, avgpool, cat, gap, gate, mul, flatten, fc, softmax */
	ASSERT_EQ(11, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_ACT_RELU6, im.model->layers[1].act);
	EXPECT_EQ(MODEL_OP_MUL, im.model->layers[7].op);
	EXPECT_EQ(MODEL_ACT_LEAKY_RELU, im.model->layers[7].act);
	EXPECT_EQ(4, im.model->layers[2].out.dims[2]); /* ceil_mode: 3 without it */
	EXPECT_EQ(2, im.nr_outputs);
	/* dw: 64 outputs x 9; fc: 192 x 5 */
	EXPECT_EQ(64u * 9 + 192 * 5, im.model->macs);
	EXPECT_EQ(36u + 192 * 5 + 5, im.model->params);
	for (int i = 0; i < 3; i++)
		br[i] = mem(64 * 4);
	ref_conv(x, xd, w, NULL, &cv, od, br[0]);
	ref_act(br[0], 64, MODEL_ACT_RELU6, 0, 0);
	ref_pool(x, xd, &mp, od, br[1]);
	ref_pool(x, xd, &ap, od, br[2]);
	for (int i = 0; i < 3; i++) {
		ins[i] = br[i];
		shp[i] = &os;
	}
	ref_concat(ins, shp, 3, 1, cat);
	ref_pool(cat, catd, &gp, gd, gap);
	ref_act(gap, 12, MODEL_ACT_SIGMOID, 0, 0);
	ref_binary(MODEL_OP_MUL, cat, &cs, gap, &ss, mul);
	ref_act(mul, 192, MODEL_ACT_LEAKY_RELU, 0.2f, 0);
	ref_fc(mul, bb, cc, 1, 192, 5, logits);
	ref_softmax(logits, &ls, 1, prob);
	run_compare_output(_metadata, &im, 0, x, prob, 5);
	run_compare_output(_metadata, &im, 1, x, logits, 5);
	onnx_import_free(&im);
	arena_free();
}

/*
 * A one-head attention block at opset 17: int64 token ids -> Gather
 * (embedding) -> LayerNormalization -> q (MatMul + Add, the constant
 * first), k (MatMul) -> Transpose -> MatMul -> Div by sqrt 8 (the matmul's
 * alpha) -> Softmax -> MatMul with the normalised embeddings -> residual
 * Add -> Slice of token 0 -> Squeeze -> MatMul, Mul by a constant per
 * channel (folded into the weights), Add, Tanh (the pooler).
 */
TEST(onnx_import__attention_block_matches_reference)
{
	static const int64_t idd[2] = { 1, 6 }, td[2] = { 10, 8 }, d8[1] = { 8 }, w88[2] = { 8, 8 },
			     w84[2] = { 8, 4 }, d4[1] = { 4 }, one[1] = { 1 };
	static const int64_t s0 = 0, e1 = 1, ax1 = 1;
	static const float sqrt8 = 2.82842712f;
	struct gb g = { .opset = 17 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	struct model_shape ss = { .ndims = 3, .dims = { 1, 6, 6 } };
	float ids[6] = { 3, 0, 9, 5, 5, 1 };
	float *table = rnd_fill(80, -1, 1), *gam = rnd_fill(8, 0.5f, 1.5f),
	      *bet = rnd_fill(8, -1, 1);
	float *wq = rnd_fill(64, -0.5f, 0.5f), *bq = rnd_fill(8, -1, 1),
	      *wk = rnd_fill(64, -0.5f, 0.5f);
	float *wp = rnd_fill(32, -0.5f, 0.5f), *bp = rnd_fill(4, -1, 1), *sc = rnd_fill(4, -2, 2);
	float *e = mem(48 * 4), *ln = mem(48 * 4), *q = mem(48 * 4), *k = mem(48 * 4);
	float *s = mem(36 * 4), *p = mem(36 * 4), *o = mem(48 * 4), *y = mem(4 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "table", 2, td, table);
	init_f(&g, "gamma", 1, d8, gam);
	init_f(&g, "beta", 1, d8, bet);
	init_f(&g, "Wq", 2, w88, wq);
	init_f(&g, "bq", 1, d8, bq);
	init_f(&g, "Wk", 2, w88, wk);
	init_f(&g, "Wp", 2, w84, wp);
	init_f(&g, "bp", 1, d4, bp);
	init_f(&g, "sc", 1, d4, sc);
	init_f(&g, "sqrt8", 0, NULL, &sqrt8);
	init_i64(&g, "s0", 1, one, 1, &s0);
	init_i64(&g, "e1", 1, one, 1, &e1);
	init_i64(&g, "ax1", 1, one, 1, &ax1);
	vinfo_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
	g.ins[g.nr_ins++] = vinfo("ids", 2, idd, NULL);
	node(&g, "Gather", "embed", NAMES("table", "ids"), NAMES("e"));
	n = node(&g, "LayerNormalization", "ln", NAMES("e", "gamma", "beta"), NAMES("ln"));
	attr_float(n, "epsilon", 1e-6f);
	node(&g, "MatMul", "q_mm", NAMES("ln", "Wq"), NAMES("q0"));
	node(&g, "Add", "q_bias", NAMES("bq", "q0"), NAMES("q"));
	node(&g, "MatMul", "k_mm", NAMES("ln", "Wk"), NAMES("k"));
	attr_ints(node(&g, "Transpose", "kt", NAMES("k"), NAMES("kt")), "perm", 3,
		  (const int64_t[]){ 0, 2, 1 });
	node(&g, "MatMul", "scores", NAMES("q", "kt"), NAMES("sraw"));
	node(&g, "Div", "scale", NAMES("sraw", "sqrt8"), NAMES("s"));
	node(&g, "Softmax", "probs", NAMES("s"), NAMES("p"));
	node(&g, "MatMul", "context", NAMES("p", "ln"), NAMES("o"));
	node(&g, "Add", "residual", NAMES("o", "ln"), NAMES("r"));
	node(&g, "Slice", "cls", NAMES("r", "s0", "e1", "ax1"), NAMES("c"));
	node(&g, "Squeeze", "cls_sq", NAMES("c", "ax1"), NAMES("c1"));
	node(&g, "MatMul", "pool_mm", NAMES("c1", "Wp"), NAMES("y00"));
	node(&g, "Mul", "pool_scale", NAMES("sc", "y00"), NAMES("y0"));
	node(&g, "Add", "pool_bias", NAMES("y0", "bp"), NAMES("y1"));
	node(&g, "Tanh", "pool_tanh", NAMES("y1"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 2, (const int64_t[]){ 1, 4 }, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(MODEL_OP_EMBED, im.model->layers[1].op);
	EXPECT_EQ(2, count_ops(im.model, MODEL_OP_MATMUL));
	EXPECT_EQ(3, count_ops(im.model, MODEL_OP_FC));
	EXPECT_EQ(1, count_ops(im.model, MODEL_OP_SLICE));
	EXPECT_EQ(0, count_ops(im.model, MODEL_OP_MUL));
	EXPECT_EQ(MODEL_ACT_TANH, im.model->layers[im.model->nr_layers - 1].act);
	/* the int64 token ids are input layer 0 */
	EXPECT_EQ(1u, im.int_inputs);
	/* fc q, k: 6x8x8 each; scores 6x6x8; context 6x8x6; pooler 8x4 */
	EXPECT_EQ(2u * 384 + 288 + 288 + 32, im.model->macs) TH_LOG("%s", im.text);
	/* table 80, layer norm 16, q 72, k 64, pooler 36 */
	EXPECT_EQ(80u + 16 + 72 + 64 + 36, im.model->params);
	ref_embed(ids, 6, table, 8, e);
	ref_layer_norm(e, 6, 8, gam, bet, 1e-6f, ln);
	ref_fc(ln, wq, bq, 6, 8, 8, q);
	ref_fc(ln, wk, NULL, 6, 8, 8, k);
	ref_matmul(q, k, 1, 1, 6, 8, 6, 1, 1.0f / sqrt8, s);
	ref_softmax(s, &ss, 2, p);
	ref_matmul(p, ln, 1, 1, 6, 6, 8, 0, 1.0f, o);
	for (int i = 0; i < 8; i++)
		o[i] += ln[i]; /* the residual of token 0, all the slice keeps */
	ref_fc(o, wp, NULL, 1, 8, 4, y);
	for (int i = 0; i < 4; i++)
		y[i] = y[i] * sc[i] + bp[i];
	ref_act(y, 4, MODEL_ACT_TANH, 0, 0);
	run_compare(_metadata, &im, ids, y, 4);
	onnx_import_free(&im);
	arena_free();
}

/* A Constant node made in the graph, placed where the caller adds it. */
static void const_node(struct gb *g, const char *out, float v)
{
	Onnx__NodeProto *n =
		node(g, "Constant", out, NAMES(NULL), names((const char *const[]){ out, NULL }));
	Onnx__AttributeProto *a = attr(n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
	Onnx__TensorProto *t = mem(sizeof(*t));
	float *f = mem(sizeof(float));

	*f = v;
	onnx__tensor_proto__init(t);
	t->has_data_type = 1;
	t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	t->n_float_data = 1;
	t->float_data = f;
	a->t = t;
}

/*
 * GELU as PyTorch exports it (x * (1 + erf(x / sqrt 2)) * 0.5, its
 * constants from Constant nodes placed between the pattern's nodes) after
 * MatMul + Add becomes the fc's act=gelu; the other operand order, on a
 * graph input, becomes a standalone gelu layer.
 */
TEST(onnx_import__gelu_pattern_fuses)
{
	static const int64_t xd[3] = { 1, 3, 8 }, wd[2] = { 8, 6 }, bd[1] = { 6 };
	static const float sqrt2 = 1.41421356f;
	struct gb g = { 0 }, g2 = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *w = rnd_fill(48, -1, 1), *b = rnd_fill(6, -1, 1), *x = rnd_fill(24, -2, 2);
	float *want = mem(24 * 4);

	init_f(&g, "W", 2, wd, w);
	init_f(&g, "b", 1, bd, b);
	init_f(&g, "sqrt2", 0, NULL, &sqrt2);
	g.ins[g.nr_ins++] = vinfo("x", 3, xd, NULL);
	node(&g, "MatMul", "fc1", NAMES("x", "W"), NAMES("m"));
	node(&g, "Add", "fc1_bias", NAMES("m", "b"), NAMES("h"));
	node(&g, "Div", "gelu_div", NAMES("h", "sqrt2"), NAMES("d"));
	node(&g, "Erf", "gelu_erf", NAMES("d"), NAMES("e"));
	const_node(&g, "one", 1.0f);
	node(&g, "Add", "gelu_add", NAMES("one", "e"), NAMES("a"));
	node(&g, "Mul", "gelu_mul", NAMES("h", "a"), NAMES("p"));
	const_node(&g, "half", 0.5f);
	node(&g, "Mul", "gelu_half", NAMES("p", "half"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 3, (const int64_t[]){ 1, 3, 6 }, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(2, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_FC, im.model->layers[1].op);
	EXPECT_EQ(MODEL_ACT_GELU, im.model->layers[1].act);
	ref_fc(x, w, b, 3, 8, 6, want);
	ref_act(want, 18, MODEL_ACT_GELU, 0, 0);
	run_compare(_metadata, &im, x, want, 18);
	onnx_import_free(&im);

	/* (1 + erf(x * (1 / sqrt 2))) * 0.5 * x on the graph input: a gelu layer */
	{
		static const float rsqrt2 = 0.70710678f, one = 1.0f, half = 0.5f;

		init_f(&g2, "r", 0, NULL, &rsqrt2);
		init_f(&g2, "one", 0, NULL, &one);
		init_f(&g2, "half", 0, NULL, &half);
	}
	g2.ins[g2.nr_ins++] = vinfo("x", 3, xd, NULL);
	node(&g2, "Mul", "s", NAMES("x", "r"), NAMES("d"));
	node(&g2, "Erf", "erf", NAMES("d"), NAMES("e"));
	node(&g2, "Add", "add", NAMES("e", "one"), NAMES("a"));
	node(&g2, "Mul", "half", NAMES("half", "a"), NAMES("p"));
	node(&g2, "Mul", "gelu", NAMES("x", "p"), NAMES("y"));
	g2.outs[g2.nr_outs++] = vinfo("y", 3, xd, NULL);
	ASSERT_EQ(0, import(&g2, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(2, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_ACT, im.model->layers[1].op);
	EXPECT_EQ(MODEL_ACT_GELU, im.model->layers[1].act);
	memcpy(want, x, 24 * sizeof(float));
	ref_act(want, 24, MODEL_ACT_GELU, 0, 0);
	run_compare(_metadata, &im, x, want, 24);
	onnx_import_free(&im);
	arena_free();
}

/*
 * MobileNetV3 as PaddlePaddle exports it at opset 9: a Conv + hard swish
 * spelt Add 3, Clip(0, 6) (attributes), Mul x, Div 6; a 1x1 Conv +
 * HardSigmoid gating it by Mul. Both activations fuse into their convs.
 */
TEST(onnx_import__hard_swish_pattern_and_hard_sigmoid_fuse)
{
	static const int64_t wd[4] = { 4, 3, 3, 3 }, w2d[4] = { 4, 4, 1, 1 },
			     od[4] = { 1, 4, 8, 8 };
	static const float three = 3.0f, six = 6.0f;
	struct gb g = { .opset = 9 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	struct model_conv c1 = CONV3;
	struct model_shape s = { .ndims = 4, .dims = { 1, 4, 8, 8 } };
	float *w1 = rnd_fill(108, -1, 1), *w2 = rnd_fill(16, -1, 1), *b2 = rnd_fill(4, -1, 1);
	float *x = rnd_fill(192, -2, 2), *h = mem(256 * 4), *gt = mem(256 * 4),
	      *want = mem(256 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "W1", 4, wd, w1);
	init_f(&g, "W2", 4, w2d, w2);
	init_f(&g, "B2", 1, C4, b2);
	init_f(&g, "three", 0, NULL, &three);
	init_f(&g, "six", 0, NULL, &six);
	g.ins[g.nr_ins++] = vinfo("x", 4, X_DIMS, NULL);
	n = node(&g, "Conv", "c1", NAMES("x", "W1"), NAMES("c"));
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	node(&g, "Add", "hs_add", NAMES("c", "three"), NAMES("a"));
	n = node(&g, "Clip", "hs_clip", NAMES("a"), NAMES("r"));
	attr_float(n, "min", 0.0f);
	attr_float(n, "max", 6.0f);
	node(&g, "Mul", "hs_mul", NAMES("c", "r"), NAMES("m"));
	node(&g, "Div", "hs_div", NAMES("m", "six"), NAMES("h"));
	node(&g, "Conv", "c2", NAMES("h", "W2", "B2"), NAMES("e"));
	n = node(&g, "HardSigmoid", "gate", NAMES("e"), NAMES("gs"));
	attr_float(n, "alpha", 0.2f);
	attr_float(n, "beta", 0.5f);
	node(&g, "Mul", "se", NAMES("h", "gs"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, od, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(4, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_ACT_HARD_SWISH, im.model->layers[1].act);
	EXPECT_EQ(MODEL_ACT_HARD_SIGMOID, im.model->layers[2].act);
	EXPECT_EQ(0.2f, im.model->layers[2].act_alpha);
	EXPECT_EQ(0.5f, im.model->layers[2].act_beta);
	EXPECT_EQ(MODEL_OP_MUL, im.model->layers[3].op);
	ref_conv(x, X_DIMS, w1, NULL, &c1, od, h);
	ref_act(h, 256, MODEL_ACT_HARD_SWISH, 0, 0);
	c1 = (struct model_conv){ .out_channels = 4,
				  .kh = 1,
				  .kw = 1,
				  .stride_h = 1,
				  .stride_w = 1,
				  .dil_h = 1,
				  .dil_w = 1,
				  .groups = 1 };
	ref_conv(h, od, w2, b2, &c1, od, gt);
	ref_act(gt, 256, MODEL_ACT_HARD_SIGMOID, 0.2f, 0.5f);
	ref_binary(MODEL_OP_MUL, h, &s, gt, &s, want);
	run_compare(_metadata, &im, x, want, 256);
	onnx_import_free(&im);
	arena_free();
}

/*
 * x * Sigmoid(x) after a Conv becomes its act=swish (efficientnet's
 * export); x * HardSigmoid(x, 1/6, 1/2) on a graph input, and a HardSwish
 * node, become standalone hard_swish layers.
 */
TEST(onnx_import__self_gates_become_swish_and_hard_swish)
{
	static const int64_t od[4] = { 1, 4, 8, 8 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *w = rnd_fill(108, -1, 1), *x = rnd_fill(192, -4, 4), *want = mem(256 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "W", 4, W_DIMS, w);
	g.ins[g.nr_ins++] = vinfo("x", 4, X_DIMS, NULL);
	n = node(&g, "Conv", "c", NAMES("x", "W"), NAMES("c"));
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	node(&g, "Sigmoid", "sig", NAMES("c"), NAMES("s"));
	node(&g, "Mul", "swish", NAMES("s", "c"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, od, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(2, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_ACT_SWISH, im.model->layers[1].act);
	ref_conv(x, X_DIMS, w, NULL, &CONV3, od, want);
	ref_act(want, 256, MODEL_ACT_SWISH, 0, 0);
	run_compare(_metadata, &im, x, want, 256);
	onnx_import_free(&im);

	g = (struct gb){ 0 };
	g.ins[g.nr_ins++] = vinfo("x", 4, X_DIMS, NULL);
	n = node(&g, "HardSigmoid", "hsig", NAMES("x"), NAMES("s"));
	attr_float(n, "alpha", 1.0f / 6);
	attr_float(n, "beta", 0.5f);
	node(&g, "Mul", "gate", NAMES("x", "s"), NAMES("h"));
	node(&g, "HardSwish", "hsw", NAMES("h"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, X_DIMS, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(3, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_ACT, im.model->layers[1].op);
	EXPECT_EQ(MODEL_ACT_HARD_SWISH, im.model->layers[1].act);
	EXPECT_EQ(MODEL_ACT_HARD_SWISH, im.model->layers[2].act);
	memcpy(want, x, 192 * sizeof(float));
	ref_act(want, 192, MODEL_ACT_HARD_SWISH, 0, 0);
	ref_act(want, 192, MODEL_ACT_HARD_SWISH, 0, 0);
	run_compare(_metadata, &im, x, want, 192);
	onnx_import_free(&im);
	arena_free();
}

/*
 * Constant operands that fold into no layer become binary layers holding
 * them: an input normalised by Sub of a mean [3, 1, 1] and Div by a std
 * [1, 3, 1, 1], a Conv then Max with a scalar (embedding_model's leaky
 * clamp), Sub from a constant (1 - x), and Sub of two computed tensors
 * (one through Min with a constant). Div of a constant by a tensor is
 * refused.
 */
TEST(onnx_import__constant_operands_become_binary_layers)
{
	static const int64_t c3[3] = { 3, 1, 1 }, c13[4] = { 1, 3, 1, 1 }, od[4] = { 1, 4, 8, 8 };
	static const float lo = 0.1f, one = 1.0f, cap = 0.3f;
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	struct model_shape xs = { .ndims = 4, .dims = { 1, 3, 8, 8 } };
	struct model_shape ms = { .ndims = 3, .dims = { 3, 1, 1 } };
	struct model_shape ss = { .ndims = 4, .dims = { 1, 3, 1, 1 } };
	struct model_shape os = { .ndims = 4, .dims = { 1, 4, 8, 8 } };
	struct model_shape ks = { .ndims = 1, .dims = { 1 } };
	float *w = rnd_fill(108, -1, 1), *mean = rnd_fill(3, -0.5f, 0.5f);
	float *sd = rnd_fill(3, 0.5f, 2.0f), *x = rnd_fill(192, -2, 2);
	float *t0 = mem(192 * 4), *t1 = mem(192 * 4), *cv = mem(256 * 4), *mx = mem(256 * 4);
	float *r = mem(256 * 4), *mn = mem(256 * 4), *want = mem(256 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "W", 4, W_DIMS, w);
	init_f(&g, "mean", 3, c3, mean);
	init_f(&g, "std", 4, c13, sd);
	init_f(&g, "lo", 0, NULL, &lo);
	init_f(&g, "one", 0, NULL, &one);
	init_f(&g, "cap", 0, NULL, &cap);
	g.ins[g.nr_ins++] = vinfo("x", 4, X_DIMS, NULL);
	node(&g, "Sub", "center", NAMES("x", "mean"), NAMES("a"));
	node(&g, "Div", "scale", NAMES("a", "std"), NAMES("b"));
	n = node(&g, "Conv", "c", NAMES("b", "W"), NAMES("c"));
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	node(&g, "Max", "clamp", NAMES("c", "lo"), NAMES("m"));
	node(&g, "Sub", "flip", NAMES("one", "m"), NAMES("f"));
	node(&g, "Min", "cap", NAMES("f", "cap"), NAMES("k"));
	node(&g, "Sub", "rest", NAMES("f", "k"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, od, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(8, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_SUB, im.model->layers[1].op);
	EXPECT_TRUE(im.model->layers[1].binary.has_const);
	EXPECT_EQ(MODEL_OP_DIV, im.model->layers[2].op);
	EXPECT_EQ(MODEL_OP_MAX, im.model->layers[4].op);
	EXPECT_TRUE(im.model->layers[5].binary.const_first);
	EXPECT_EQ(MODEL_OP_MIN, im.model->layers[6].op);
	EXPECT_EQ(MODEL_OP_SUB, im.model->layers[7].op);
	EXPECT_FALSE(im.model->layers[7].binary.has_const);
	/* conv 4x27 weights + mean 3 + std 3 + the three scalars */
	EXPECT_EQ(108u + 3 + 3 + 3, im.model->params);
	ref_binary(MODEL_OP_SUB, x, &xs, mean, &ms, t0);
	ref_binary(MODEL_OP_DIV, t0, &xs, sd, &ss, t1);
	ref_conv(t1, X_DIMS, w, NULL, &CONV3, od, cv);
	ref_binary(MODEL_OP_MAX, cv, &os, &lo, &ks, mx);
	for (int i = 0; i < 256; i++)
		r[i] = 1.0f - mx[i];
	ref_binary(MODEL_OP_MIN, r, &os, &cap, &ks, mn);
	ref_binary(MODEL_OP_SUB, r, &os, mn, &os, want);
	run_compare(_metadata, &im, x, want, 256);
	onnx_import_free(&im);
	arena_free();

	g = (struct gb){ 0 };
	init_f(&g, "one", 0, NULL, &one);
	g.ins[g.nr_ins++] = vinfo("x", 4, X_DIMS, NULL);
	node(&g, "Div", "recip", NAMES("one", "x"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, X_DIMS, NULL);
	EXPECT_EQ(-EOPNOTSUPP, import(&g, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "node 'recip' (Div, opset 13"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "Div of a constant by a computed tensor"));
	arena_free();
}

/*
 * Resize as PaddlePaddle's FPN writes it (opset 11, nearest, asymmetric,
 * floor, scales [1, 1, 2, 2] with an empty roi), then linear (half_pixel)
 * to sizes 8x12; bicubic is refused naming the node.
 */
TEST(onnx_import__resize_nearest_and_linear_match_reference)
{
	static const int64_t xd[4] = { 1, 2, 3, 4 }, d4[1] = { 4 }, md[4] = { 1, 2, 6, 8 },
			     od[4] = { 1, 2, 8, 12 };
	static const float scales[4] = { 1, 1, 2, 2 };
	static const int64_t sizes[4] = { 1, 2, 8, 12 };
	struct gb g = { .opset = 11 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *x = rnd_fill(24, -1, 1), *mid = mem(96 * 4), *want = mem(192 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "scales", 1, d4, scales);
	init_i64(&g, "sizes", 1, d4, 4, sizes);
	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	n = node(&g, "Resize", "up2", NAMES("x", "", "scales"), NAMES("m"));
	attr_str(n, "mode", "nearest");
	attr_str(n, "coordinate_transformation_mode", "asymmetric");
	attr_str(n, "nearest_mode", "floor");
	n = node(&g, "Resize", "bilinear", NAMES("m", "", "", "sizes"), NAMES("y"));
	attr_str(n, "mode", "linear");
	g.outs[g.nr_outs++] = vinfo("y", 4, od, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(3, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_RESIZE, im.model->layers[1].op);
	EXPECT_FALSE(im.model->layers[1].resize.linear);
	EXPECT_TRUE(im.model->layers[2].resize.linear);
	/* nearest by 2 by hand: output (h, w) is input (h / 2, w / 2) */
	for (int c = 0; c < 2; c++)
		for (int h = 0; h < 6; h++)
			for (int w = 0; w < 8; w++)
				mid[(c * 6 + h) * 8 + w] = x[(c * 3 + h / 2) * 4 + w / 2];
	ref_resize(mid, md, true, od, want);
	run_compare(_metadata, &im, x, want, 192);
	onnx_import_free(&im);
	arena_free();

	g = (struct gb){ .opset = 13 };
	init_f(&g, "scales", 1, d4, scales);
	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	n = node(&g, "Resize", "cubic", NAMES("x", "", "scales"), NAMES("y"));
	attr_str(n, "mode", "cubic");
	g.outs[g.nr_outs++] = vinfo("y", 4, md, NULL);
	EXPECT_EQ(-EOPNOTSUPP, import(&g, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "node 'cubic' (Resize, opset 13, inputs "
						    "[1,2,3,4], -, [4] const): mode 'cubic'"))
	TH_LOG("%s", coloc_err_str(&err));
	arena_free();
}

/*
 * PaddleOCR's DB head: ConvTranspose (2x2 stride 2) + Add of a bias
 * [1, C, 1, 1] + BatchNormalization fold into one deconv; a grouped,
 * padded ConvTranspose with its bias, after which a Relu reads it; a
 * BatchNormalization after that Relu becomes a scale and a shift.
 */
TEST(onnx_import__conv_transpose_and_batch_norms_match_reference)
{
	static const int64_t xd[4] = { 1, 4, 3, 5 }, w1d[4] = { 4, 6, 2, 2 },
			     bd[4] = { 1, 6, 1, 1 }, w2d[4] = { 6, 2, 3, 3 }, c6[1] = { 6 },
			     m1[4] = { 1, 6, 6, 10 }, od[4] = { 1, 6, 11, 19 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	struct model_conv d1 = { .out_channels = 6,
				 .kh = 2,
				 .kw = 2,
				 .stride_h = 2,
				 .stride_w = 2,
				 .dil_h = 1,
				 .dil_w = 1,
				 .groups = 1 };
	struct model_conv d2 = { .out_channels = 6,
				 .kh = 3,
				 .kw = 3,
				 .stride_h = 2,
				 .stride_w = 2,
				 .pad_t = 1,
				 .pad_l = 1,
				 .pad_b = 1,
				 .pad_r = 1,
				 .dil_h = 1,
				 .dil_w = 1,
				 .groups = 3,
				 .bias = true };
	float *w1 = rnd_fill(96, -1, 1), *b1 = rnd_fill(6, -1, 1), *bn1 = rnd_fill(24, 0.2f, 1.5f);
	float *w2 = rnd_fill(108, -1, 1), *b2 = rnd_fill(6, -1, 1), *bn2 = rnd_fill(24, 0.2f, 1.5f);
	float *x = rnd_fill(60, -1, 1), *a = mem(360 * 4), *want = mem(1254 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "W1", 4, w1d, w1);
	init_f(&g, "B1", 4, bd, b1);
	init_f(&g, "W2", 4, w2d, w2);
	init_f(&g, "B2", 1, c6, b2);
	init_f(&g, "g1", 1, c6, bn1);
	init_f(&g, "be1", 1, c6, bn1 + 6);
	init_f(&g, "m1", 1, c6, bn1 + 12);
	init_f(&g, "v1", 1, c6, bn1 + 18);
	init_f(&g, "g2", 1, c6, bn2);
	init_f(&g, "be2", 1, c6, bn2 + 6);
	init_f(&g, "m2", 1, c6, bn2 + 12);
	init_f(&g, "v2", 1, c6, bn2 + 18);
	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	n = node(&g, "ConvTranspose", "up", NAMES("x", "W1"), NAMES("u"));
	attr_ints(n, "strides", 2, (const int64_t[]){ 2, 2 });
	node(&g, "Add", "up_bias", NAMES("u", "B1"), NAMES("ub"));
	n = node(&g, "BatchNormalization", "bn1", NAMES("ub", "g1", "be1", "m1", "v1"),
		 NAMES("n1"));
	attr_float(n, "epsilon", 1e-3f);
	n = node(&g, "ConvTranspose", "up2", NAMES("n1", "W2", "B2"), NAMES("u2"));
	attr_ints(n, "strides", 2, (const int64_t[]){ 2, 2 });
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	attr_int(n, "group", 3);
	node(&g, "Relu", "r", NAMES("u2"), NAMES("r"));
	node(&g, "BatchNormalization", "bn2", NAMES("r", "g2", "be2", "m2", "v2"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, od, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(5, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_DECONV, im.model->layers[1].op);
	EXPECT_TRUE(im.model->layers[1].conv.bias);
	EXPECT_EQ(MODEL_OP_DECONV, im.model->layers[2].op);
	EXPECT_EQ(MODEL_ACT_RELU, im.model->layers[2].act);
	EXPECT_EQ(MODEL_OP_MUL, im.model->layers[3].op);
	EXPECT_EQ(MODEL_OP_ADD, im.model->layers[4].op);
	/* 60 inputs x 6 x 2x2 scattered; 360 x 2 x 3x3 */
	EXPECT_EQ(60u * 24 + 360 * 18, im.model->macs);
	/* 96 + 6 (bias) + 108 + 6, then 6 scales and 6 shifts */
	EXPECT_EQ(96u + 6 + 108 + 6 + 12, im.model->params);
	ref_deconv(x, xd, w1, b1, &d1, m1, a);
	ref_batch_norm(a, 1, 6, 60, bn1, bn1 + 6, bn1 + 12, bn1 + 18, 1e-3f);
	ref_deconv(a, m1, w2, b2, &d2, od, want);
	ref_act(want, 1254, MODEL_ACT_RELU, 0, 0);
	ref_batch_norm(want, 1, 6, 209, bn2, bn2 + 6, bn2 + 12, bn2 + 18, 1e-5f);
	run_compare(_metadata, &im, x, want, 1254);
	onnx_import_free(&im);
	arena_free();
}

/* ---- 1-D windows, checked against direct 1-D loops (not ref_conv) ------- */

struct win1d {
	int k, s, d, pl, pr, g;
};

/* y[OC, OW] = conv of x[C, W] with w[OC, C/g, K] and b[OC] (or none). */
static void conv1d(const float *x, int ch, int iw, const float *w, const float *b, int oc,
		   const struct win1d *p, int ow, float *y)
{
	int cg = ch / p->g;

	for (int o = 0; o < oc; o++)
		for (int j = 0; j < ow; j++) {
			double acc = b ? b[o] : 0;

			for (int ic = 0; ic < cg; ic++)
				for (int t = 0; t < p->k; t++) {
					int i = j * p->s - p->pl + t * p->d;

					if (i >= 0 && i < iw)
						acc += (double)w[(o * cg + ic) * p->k + t] *
						       x[((o / (oc / p->g)) * cg + ic) * iw + i];
				}
			y[o * ow + j] = (float)acc;
		}
}

/* y[OCg * g, OW] = transposed conv of x[C, W] with w[C, OCg, K] (scatter). */
static void deconv1d(const float *x, int ch, int iw, const float *w, int ocg, const struct win1d *p,
		     int ow, float *y)
{
	memset(y, 0, (size_t)ocg * p->g * ow * sizeof(float));
	for (int ic = 0; ic < ch; ic++)
		for (int i = 0; i < iw; i++)
			for (int o = 0; o < ocg; o++)
				for (int t = 0; t < p->k; t++) {
					int j = i * p->s - p->pl + t * p->d;

					if (j >= 0 && j < ow)
						y[((ic / (ch / p->g)) * ocg + o) * ow + j] +=
							x[ic * iw + i] *
							w[(ic * ocg + o) * p->k + t];
				}
}

/* Max or average (padding excluded) over each window of x[C, W]. */
static void pool1d(bool max, const float *x, int ch, int iw, const struct win1d *p, int ow,
		   float *y)
{
	for (int c = 0; c < ch; c++)
		for (int j = 0; j < ow; j++) {
			double acc = max ? -INFINITY : 0;
			int cnt = 0;

			for (int t = 0; t < p->k; t++) {
				int i = j * p->s - p->pl + t;

				if (i < 0 || i >= iw)
					continue;
				acc = max ? fmax(acc, x[c * iw + i]) : acc + x[c * iw + i];
				cnt++;
			}
			y[c * ow + j] = (float)(max ? acc : acc / cnt);
		}
}

/*
 * x[1,4,20] -> Conv(W[6,2,3], B, group 2, dilation 2, stride 2, pads [2,1])
 * -> BatchNormalization -> Relu (both folded into the conv through its
 * view) -> MaxPool(3, stride 2, pads [1,1]) -> ConvTranspose(W[6,3,4],
 * stride 2, pads [1,2]) -> Add([3,1], its bias through the view) ->
 * AveragePool(2): each a 2-D layer on [N, C, 1, W]
 * between two reshape views; a second output, GlobalAveragePool of the
 * relu, is [1,6,1]. Shapes by hand: (20+3-5)/2+1 = 10, (10+2-3)/2+1 = 5,
 * (5-1)*2-3+4 = 9, 9-2+1 = 8.
 */
TEST(onnx_import__1d_windows_match_reference)
{
	static const int64_t xd[3] = { 1, 4, 20 }, w1d[3] = { 6, 2, 3 }, c6[1] = { 6 },
			     w2d[3] = { 6, 3, 4 }, od[3] = { 1, 3, 8 }, gd[3] = { 1, 6, 1 };
	static const struct win1d cv = { .k = 3, .s = 2, .d = 2, .pl = 2, .pr = 1, .g = 2 },
				  mp = { .k = 3, .s = 2, .d = 1, .pl = 1, .pr = 1, .g = 1 },
				  dc = { .k = 4, .s = 2, .d = 1, .pl = 1, .pr = 2, .g = 1 },
				  ap = { .k = 2, .s = 1, .d = 1, .g = 1 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *w1 = rnd_fill(36, -1, 1), *b1 = rnd_fill(6, -1, 1), *w2 = rnd_fill(72, -1, 1);
	float *bn = rnd_fill(24, 0.2f, 1.5f), *b2 = rnd_fill(3, -1, 1);
	float *x = rnd_fill(80, -1, 1), *a = mem(60 * 4), *m = mem(30 * 4), *u = mem(27 * 4);
	float *want = mem(24 * 4), *gap = mem(6 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "W1", 3, w1d, w1);
	init_f(&g, "B1", 1, c6, b1);
	init_f(&g, "W2", 3, w2d, w2);
	init_f(&g, "B2", 2, (const int64_t[]){ 3, 1 }, b2);
	init_f(&g, "gamma", 1, c6, bn);
	init_f(&g, "beta", 1, c6, bn + 6);
	init_f(&g, "mean", 1, c6, bn + 12);
	init_f(&g, "var", 1, c6, bn + 18);
	g.ins[g.nr_ins++] = vinfo("x", 3, xd, NULL);
	n = node(&g, "Conv", "c", NAMES("x", "W1", "B1"), NAMES("c0"));
	attr_int(n, "group", 2);
	attr_ints(n, "kernel_shape", 1, (const int64_t[]){ 3 });
	attr_ints(n, "strides", 1, (const int64_t[]){ 2 });
	attr_ints(n, "dilations", 1, (const int64_t[]){ 2 });
	attr_ints(n, "pads", 2, (const int64_t[]){ 2, 1 });
	node(&g, "BatchNormalization", "bn", NAMES("c0", "gamma", "beta", "mean", "var"),
	     NAMES("c"));
	node(&g, "Relu", "r", NAMES("c"), NAMES("r"));
	n = node(&g, "MaxPool", "mp", NAMES("r"), NAMES("m"));
	attr_ints(n, "kernel_shape", 1, (const int64_t[]){ 3 });
	attr_ints(n, "strides", 1, (const int64_t[]){ 2 });
	attr_ints(n, "pads", 2, (const int64_t[]){ 1, 1 });
	n = node(&g, "ConvTranspose", "up", NAMES("m", "W2"), NAMES("u"));
	attr_ints(n, "strides", 1, (const int64_t[]){ 2 });
	attr_ints(n, "pads", 2, (const int64_t[]){ 1, 2 });
	node(&g, "Add", "up_bias", NAMES("u", "B2"), NAMES("ub"));
	n = node(&g, "AveragePool", "ap", NAMES("ub"), NAMES("y"));
	attr_ints(n, "kernel_shape", 1, (const int64_t[]){ 2 });
	node(&g, "GlobalAveragePool", "gap", NAMES("r"), NAMES("gap"));
	g.outs[g.nr_outs++] = vinfo("y", 3, od, NULL);
	g.outs[g.nr_outs++] = vinfo("gap", 3, gd, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(1, count_ops(im.model, MODEL_OP_CONV)) TH_LOG("%s", im.text);
	EXPECT_EQ(0, count_ops(im.model, MODEL_OP_ACT));
	EXPECT_EQ(0, count_ops(im.model, MODEL_OP_MUL));
	EXPECT_EQ(0, count_ops(im.model, MODEL_OP_ADD));
	EXPECT_EQ(MODEL_OP_CONV, im.model->layers[2].op);
	EXPECT_EQ(MODEL_ACT_RELU, im.model->layers[2].act);
	EXPECT_EQ(1, count_ops(im.model, MODEL_OP_DECONV));
	EXPECT_EQ(3, count_ops(im.model, MODEL_OP_POOL));
	/* a view in and a view out around each of the 5 window layers */
	EXPECT_EQ(10, count_ops(im.model, MODEL_OP_RESHAPE));
	ASSERT_EQ(3, im.model->layers[im.outputs[0]].out.ndims);
	EXPECT_EQ(8, im.model->layers[im.outputs[0]].out.dims[2]);
	conv1d(x, 4, 20, w1, b1, 6, &cv, 10, a);
	ref_batch_norm(a, 1, 6, 10, bn, bn + 6, bn + 12, bn + 18, 1e-5f);
	ref_act(a, 60, MODEL_ACT_RELU, 0, 0);
	for (int o = 0; o < 6; o++) {
		double s = 0;

		for (int j = 0; j < 10; j++)
			s += a[o * 10 + j];
		gap[o] = (float)(s / 10);
	}
	pool1d(true, a, 6, 10, &mp, 5, m);
	deconv1d(m, 6, 5, w2, 3, &dc, 9, u);
	for (int i = 0; i < 27; i++)
		u[i] += b2[i / 9];
	pool1d(false, u, 3, 9, &ap, 8, want);
	run_compare_output(_metadata, &im, 0, x, want, 24);
	run_compare_output(_metadata, &im, 1, x, gap, 6);
	onnx_import_free(&im);
	arena_free();
}

/*
 * A log-mel spectrogram as openWakeWord's melspectrogram.onnx writes it,
 * small: an STFT as two 1-D convs with 300-wide kernels (over the 256 the
 * format took before), stride 100, on x [1, 1700] unsqueezed; each [1, 5,
 * 15] result unsqueezed and transposed to [1, 1, 15, 5]; Pow 2 of each (a
 * mul of x by itself), Add, MatMul by a mel bank [5, 3], Clip(1e-10, inf),
 * Log, Mul 10, Div ln 10, Sub 0 (x itself: no layer), then the floor:
 * ReduceMax over every axis
 * without keepdims (a rank-0 value: a reduce and a reshape to [1]), Sub 3,
 * Cast to float (an alias) and Clip(db, that scalar, inf), a max layer of
 * two inputs. The scalar is a second graph output. Checked against direct
 * loops (conv1d() above, then the formulas).
 */
TEST(onnx_import__log_mel_chain_matches_reference)
{
	static const int64_t xd[2] = { 1, 1700 }, wd[3] = { 5, 1, 300 }, md[2] = { 5, 3 },
			     od[4] = { 1, 1, 15, 3 }, one[1] = { 1 }, ax1[1] = { 1 };
	static const struct win1d stft = { .k = 300, .s = 100, .d = 1, .g = 1 };
	static const float two = 2, floor_ = 1e-10f, inf = INFINITY, ten = 10, ln10 = 2.302585093f,
			   range = 3, zero = 0;
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *wr = rnd_fill(1500, -0.1f, 0.1f), *wi = rnd_fill(1500, -0.1f, 0.1f);
	float *mel = rnd_fill(15, 0, 1), *x = rnd_fill(1700, -1, 1);
	float *re = mem(75 * 4), *im_ = mem(75 * 4), *pw = mem(75 * 4), *mb = mem(45 * 4);
	float *want = mem(45 * 4), top = -INFINITY;
	const struct model_layer *last;
	Onnx__NodeProto *n;
	int clipped = 0;

	init_f(&g, "W_re", 3, wd, wr);
	init_f(&g, "W_im", 3, wd, wi);
	init_f(&g, "mel", 2, md, mel);
	init_f(&g, "two", 0, NULL, &two);
	init_f(&g, "floor", 0, NULL, &floor_);
	init_f(&g, "inf", 0, NULL, &inf);
	init_f(&g, "ten", 0, NULL, &ten);
	init_f(&g, "ln10", 0, NULL, &ln10);
	init_f(&g, "range", 0, NULL, &range);
	init_f(&g, "zero", 0, NULL, &zero);
	init_i64(&g, "ax1", 1, one, 1, ax1);
	g.ins[g.nr_ins++] = vinfo("x", 2, xd, NULL);
	node(&g, "Unsqueeze", "u", NAMES("x", "ax1"), NAMES("x3"));
	n = node(&g, "Conv", "re", NAMES("x3", "W_re"), NAMES("re"));
	attr_ints(n, "strides", 1, (const int64_t[]){ 100 });
	n = node(&g, "Conv", "im", NAMES("x3", "W_im"), NAMES("im"));
	attr_ints(n, "strides", 1, (const int64_t[]){ 100 });
	node(&g, "Unsqueeze", "ure", NAMES("re", "ax1"), NAMES("re4"));
	node(&g, "Unsqueeze", "uim", NAMES("im", "ax1"), NAMES("im4"));
	attr_ints(node(&g, "Transpose", "tre", NAMES("re4"), NAMES("ret")), "perm", 4,
		  (const int64_t[]){ 0, 1, 3, 2 });
	attr_ints(node(&g, "Transpose", "tim", NAMES("im4"), NAMES("imt")), "perm", 4,
		  (const int64_t[]){ 0, 1, 3, 2 });
	node(&g, "Pow", "sq_re", NAMES("ret", "two"), NAMES("p_re"));
	node(&g, "Pow", "sq_im", NAMES("imt", "two"), NAMES("p_im"));
	node(&g, "Add", "power", NAMES("p_re", "p_im"), NAMES("p"));
	node(&g, "MatMul", "bank", NAMES("p", "mel"), NAMES("m"));
	node(&g, "Clip", "clamp", NAMES("m", "floor", "inf"), NAMES("mc"));
	node(&g, "Log", "log", NAMES("mc"), NAMES("l"));
	node(&g, "Mul", "x10", NAMES("l", "ten"), NAMES("l10"));
	node(&g, "Div", "db", NAMES("l10", "ln10"), NAMES("db0"));
	node(&g, "Sub", "minus0", NAMES("db0", "zero"), NAMES("db"));
	attr_int(node(&g, "ReduceMax", "top", NAMES("db"), NAMES("top")), "keepdims", 0);
	node(&g, "Sub", "low", NAMES("top", "range"), NAMES("low"));
	attr_int(node(&g, "Cast", "cast", NAMES("low"), NAMES("lowf")), "to",
		 ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
	node(&g, "Clip", "floor_db", NAMES("db", "lowf", "inf"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, od, NULL);
	g.outs[g.nr_outs++] = vinfo("top", 0, NULL, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	TH_LOG("%s", im.text);
	ASSERT_EQ(24, im.model->nr_layers);
	EXPECT_EQ(2, count_ops(im.model, MODEL_OP_CONV));
	EXPECT_EQ(300, im.model->layers[3].conv.kw);
	EXPECT_EQ(100, im.model->layers[3].conv.stride_w);
	EXPECT_EQ(1, count_ops(im.model, MODEL_OP_LOG));
	EXPECT_EQ(1, count_ops(im.model, MODEL_OP_FC));
	/* the squares, then Mul 10 */
	EXPECT_EQ(3, count_ops(im.model, MODEL_OP_MUL));
	for (int i = 0; i < im.model->nr_layers; i++)
		if (im.model->layers[i].op == MODEL_OP_MUL && !im.model->layers[i].binary.has_const)
			EXPECT_EQ(im.model->layers[i].inputs[0], im.model->layers[i].inputs[1]);
	/* Clip by 1e-10 (a constant) and by the computed floor (a second input) */
	EXPECT_EQ(2, count_ops(im.model, MODEL_OP_MAX));
	last = &im.model->layers[im.outputs[0]];
	EXPECT_EQ(MODEL_OP_MAX, last->op);
	EXPECT_EQ(2, last->nr_inputs);
	ASSERT_EQ(2, im.nr_outputs);
	EXPECT_EQ(1, im.model->layers[im.outputs[1]].out.ndims);
	EXPECT_EQ(1, im.model->layers[im.outputs[1]].out.dims[0]);
	/*
	 * params: the two STFT kernels, the bank and the constants of the four
	 * binary layers (1e-10, 10, ln 10, 3); MACs: the convs and the fc
	 */
	EXPECT_EQ(2u * 1500 + 15 + 4, im.model->params);
	EXPECT_EQ(2u * 5 * 15 * 300 + 15 * 5 * 3, im.model->macs);

	conv1d(x, 1, 1700, wr, NULL, 5, &stft, 15, re);
	conv1d(x, 1, 1700, wi, NULL, 5, &stft, 15, im_);
	for (int o = 0; o < 5; o++)
		for (int t = 0; t < 15; t++)
			pw[t * 5 + o] =
				re[o * 15 + t] * re[o * 15 + t] + im_[o * 15 + t] * im_[o * 15 + t];
	ref_fc(pw, mel, NULL, 15, 5, 3, mb);
	for (int i = 0; i < 45; i++) {
		mb[i] = 10.0f * logf(fmaxf(mb[i], floor_)) / ln10;
		top = fmaxf(top, mb[i]);
	}
	for (int i = 0; i < 45; i++) {
		want[i] = fmaxf(mb[i], top - range);
		clipped += mb[i] < top - range;
	}
	/* the floor is exercised: some bands lie more than 3 dB under the top */
	EXPECT_GT(clipped, 0);
	EXPECT_LT(clipped, 45);
	run_compare_output(_metadata, &im, 0, x, want, 45);
	run_compare_output(_metadata, &im, 1, x, &top, 1);
	onnx_import_free(&im);
	arena_free();
}

/*
 * A computed scalar keeps rank 0 where ONNX shapes matter: ReduceMean over
 * every axis without keepdims, Unsqueeze'd on axes 0 and 1, is [1, 1] (not
 * [1, 1, 1]); Clip(x, none, mean) is a min layer of two inputs; Pow by 1
 * is x itself; the [1, 1] then adds onto [1, 4, 3]. By hand: y = min(x,
 * mean) + mean.
 */
TEST(onnx_import__scalar_clip_bound_and_pow_one)
{
	static const int64_t xd[3] = { 1, 4, 3 }, axes[2] = { 0, 1 }, two_d[1] = { 2 };
	static const float one = 1;
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *x = rnd_fill(12, -1, 1), *want = mem(12 * 4);
	const struct model_layer *u = NULL;
	double mean = 0;

	init_f(&g, "one", 0, NULL, &one);
	init_i64(&g, "axes", 1, two_d, 2, axes);
	g.ins[g.nr_ins++] = vinfo("x", 3, xd, NULL);
	attr_int(node(&g, "ReduceMean", "mean", NAMES("x"), NAMES("s")), "keepdims", 0);
	node(&g, "Unsqueeze", "u", NAMES("s", "axes"), NAMES("s2"));
	node(&g, "Clip", "cap", NAMES("x", "", "s"), NAMES("c"));
	node(&g, "Pow", "same", NAMES("c", "one"), NAMES("p"));
	node(&g, "Add", "shift", NAMES("p", "s2"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 3, xd, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	TH_LOG("%s", im.text);
	/* input, reduce, reshape [1], reshape [1, 1], min, add */
	ASSERT_EQ(6, im.model->nr_layers);
	for (int i = 0; i < im.model->nr_layers; i++)
		if (im.model->layers[i].op == MODEL_OP_RESHAPE)
			u = &im.model->layers[i];
	ASSERT_NE(NULL, u);
	EXPECT_EQ(2, u->out.ndims);
	EXPECT_EQ(MODEL_OP_MIN, im.model->layers[4].op);
	EXPECT_EQ(2, im.model->layers[4].nr_inputs);
	EXPECT_EQ(MODEL_OP_ADD, im.model->layers[5].op);
	for (int i = 0; i < 12; i++)
		mean += x[i];
	mean /= 12;
	for (int i = 0; i < 12; i++)
		want[i] = fminf(x[i], (float)mean) + (float)mean;
	run_compare(_metadata, &im, x, want, 12);
	onnx_import_free(&im);
	arena_free();
}

/*
 * What stays refused around the log-mel lowering: Pow by another exponent,
 * a Clip with a computed bound and a finite other one, and a computed
 * scalar into an op that is not elementwise.
 */
TEST(onnx_import__pow_clip_and_scalar_limits_are_refused)
{
	static const int64_t xd[2] = { 1, 4 };
	static const float three = 3, one = 1;
	static const struct {
		const char *op, *in1, *in2, *words;
		bool on_scalar;
	} refused[] = {
		{ "Pow", "three", NULL,
		  "node 'n' (Pow, opset 13, inputs [1,4], [] const): the exponent is neither 1 "
		  "nor 2", false },
		{ "Clip", "s", "one", "Clip with a computed bound and another bound", false },
		{ "Softmax", NULL, NULL, "input 0 is a computed scalar (rank 0)", true },
	};

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		struct gb g = { 0 };
		struct onnx_import im;
		struct coloc_err err = { 0 };
		const char *x = refused[i].on_scalar ? "s" : "x";

		init_f(&g, "three", 0, NULL, &three);
		init_f(&g, "one", 0, NULL, &one);
		g.ins[g.nr_ins++] = vinfo("x", 2, xd, NULL);
		attr_int(node(&g, "ReduceMax", "top", NAMES("x"), NAMES("s")), "keepdims", 0);
		node(&g, refused[i].op, "n",
		     refused[i].in2 ? NAMES(x, refused[i].in1, refused[i].in2) :
		     refused[i].in1 ? NAMES(x, refused[i].in1) :
				      NAMES(x),
		     NAMES("y"));
		g.outs[g.nr_outs++] = vinfo("y", 2, xd, NULL);
		EXPECT_EQ(-EOPNOTSUPP, import(&g, &im, &err));
		EXPECT_NE(NULL, strstr(coloc_err_str(&err), refused[i].words))
		TH_LOG("%s", coloc_err_str(&err));
		arena_free();
	}
}

/*
 * The window limit moved from 256 to 4096 (MODEL_MAX_WINDOW), not away: a
 * 1-D conv with a 4097-wide kernel is refused naming the node and the limit.
 */
TEST(onnx_import__kernel_over_the_window_limit_is_refused)
{
	static const int64_t xd[3] = { 1, 1, 5000 }, wd[3] = { 1, 1, MODEL_MAX_WINDOW + 1 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };

	init_f(&g, "W", 3, wd, rnd_fill(MODEL_MAX_WINDOW + 1, -1, 1));
	g.ins[g.nr_ins++] = vinfo("x", 3, xd, NULL);
	node(&g, "Conv", "wide", NAMES("x", "W"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 3, (const int64_t[]){ 1, 1, 904 }, NULL);
	EXPECT_EQ(-EOPNOTSUPP, import(&g, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "node 'wide' (Conv, opset 13, inputs "
						    "[1,1,5000], [1,1,4097] const): kernel "
						    "larger than 4096"))
	TH_LOG("%s", coloc_err_str(&err));
	arena_free();
}

/* A 1-D ConvTranspose with output_padding is refused, not run without it. */
TEST(onnx_import__1d_conv_transpose_output_padding_is_refused)
{
	static const int64_t xd[3] = { 1, 2, 5 }, wd[3] = { 2, 2, 3 }, od[3] = { 1, 2, 12 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	Onnx__NodeProto *n;

	init_f(&g, "W", 3, wd, rnd_fill(12, -1, 1));
	g.ins[g.nr_ins++] = vinfo("x", 3, xd, NULL);
	n = node(&g, "ConvTranspose", "up", NAMES("x", "W"), NAMES("y"));
	attr_ints(n, "strides", 1, (const int64_t[]){ 2 });
	attr_ints(n, "output_padding", 1, (const int64_t[]){ 1 });
	g.outs[g.nr_outs++] = vinfo("y", 3, od, NULL);
	EXPECT_EQ(-EOPNOTSUPP, import(&g, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "node 'up' (ConvTranspose, opset"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "output_padding"))
	TH_LOG("%s", coloc_err_str(&err));
	arena_free();
}

/*
 * A mask chain built from constants and the input's shape folds away: pos
 * = Range(0, Shape(x)[2], 1) = [0, 1, 2, 3], w = Shape(x)[2] - 1 = 3, and
 * by hand
 *   Less(pos, w) = 1110, Not(Equal(pos, 2)) = 1101, And = 1100,
 *   Or(that, GreaterOrEqual(pos, 3) = 0001) = 1101,
 *   Xor(Greater(pos, 0) = 0111, LessOrEqual(pos, 1) = 1100) = 1011,
 *   And(1101, 1011) = 1001 = m;
 * Where(m, 0.5, -2) = [0.5, -2, -2, 0.5]; m through Cast float -> int64 ->
 * bool picks that or 3: [0.5, 3, 3, 0.5], Expand'ed to Shape(x) and added
 * to x. Only the input and one add of a constant remain.
 */
TEST(onnx_import__comparison_and_logic_chains_fold_away)
{
	static const int64_t xd[3] = { 1, 3, 4 }, one[1] = { 1 };
	static const int64_t k0 = 0, k1 = 1, k2 = 2, k3 = 3;
	static const float bias[4] = { 0.5f, 3, 3, 0.5f };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *x = rnd_fill(12, -1, 1), *want = mem(12 * 4);

	init_i64(&g, "k0", 1, one, 1, &k0);
	init_i64(&g, "k1", 1, one, 1, &k1);
	init_i64(&g, "k2", 0, NULL, 1, &k2);
	init_i64(&g, "k3", 1, one, 1, &k3);
	const_node(&g, "half", 0.5f);
	const_node(&g, "minus2", -2.0f);
	const_node(&g, "three", 3.0f);
	g.ins[g.nr_ins++] = vinfo("x", 3, xd, NULL);
	node(&g, "Shape", "shape", NAMES("x"), NAMES("s"));
	node(&g, "Gather", "width", NAMES("s", "k2"), NAMES("w0"));
	node(&g, "Range", "positions", NAMES("k0", "w0", "k1"), NAMES("pos"));
	node(&g, "Sub", "wm1", NAMES("w0", "k1"), NAMES("w"));
	node(&g, "Less", "lt", NAMES("pos", "w"), NAMES("lt"));
	node(&g, "Equal", "eq", NAMES("pos", "k2"), NAMES("eq"));
	node(&g, "Not", "ne", NAMES("eq"), NAMES("ne"));
	node(&g, "And", "a1", NAMES("lt", "ne"), NAMES("a1"));
	node(&g, "GreaterOrEqual", "ge", NAMES("pos", "k3"), NAMES("ge"));
	node(&g, "Or", "o1", NAMES("a1", "ge"), NAMES("o1"));
	node(&g, "Greater", "gt", NAMES("pos", "k0"), NAMES("gt"));
	node(&g, "LessOrEqual", "le", NAMES("pos", "k1"), NAMES("le"));
	node(&g, "Xor", "xo", NAMES("gt", "le"), NAMES("xo"));
	node(&g, "And", "m", NAMES("o1", "xo"), NAMES("m"));
	node(&g, "Where", "sel", NAMES("m", "half", "minus2"), NAMES("sel"));
	attr_int(node(&g, "Cast", "cf", NAMES("m"), NAMES("mf")), "to",
		 ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
	attr_int(node(&g, "Cast", "ci", NAMES("mf"), NAMES("mi")), "to",
		 ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
	attr_int(node(&g, "Cast", "cb", NAMES("mi"), NAMES("mb")), "to",
		 ONNX__TENSOR_PROTO__DATA_TYPE__BOOL);
	node(&g, "Where", "bias", NAMES("mb", "sel", "three"), NAMES("b"));
	node(&g, "Expand", "expand", NAMES("b", "s"), NAMES("bx"));
	node(&g, "Add", "add", NAMES("x", "bx"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 3, xd, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(2, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_ADD, im.model->layers[1].op);
	EXPECT_TRUE(im.model->layers[1].binary.has_const);
	for (int i = 0; i < 12; i++)
		want[i] = x[i] + bias[i % 4];
	run_compare(_metadata, &im, x, want, 12);
	onnx_import_free(&im);
	arena_free();
}

/*
 * On run-time values: a Cast to float is an alias (a BERT mask's Cast of
 * its input), a comparison or a Cast to int64 is refused with the node,
 * opset and input shapes.
 */
TEST(onnx_import__run_time_casts_and_comparisons)
{
	static const int64_t xd[2] = { 1, 4 }, one[1] = { 1 };
	static const float zero = 0;
	static const struct {
		const char *op;
		int64_t to;
		const char *words;
	} refused[] = {
		{ "Greater", 0, "node 'n' (Greater, opset 13, inputs [1,4], [1] const)" },
		{ "Cast", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, "Cast of a run-time tensor" },
	};
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *x = rnd_fill(4, -1, 1), *want = mem(4 * 4);

	g.ins[g.nr_ins++] = vinfo("x", 2, xd, NULL);
	attr_int(node(&g, "Cast", "cast", NAMES("x"), NAMES("xf")), "to",
		 ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
	node(&g, "Relu", "relu", NAMES("xf"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 2, xd, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(2, im.model->nr_layers) TH_LOG("%s", im.text);
	memcpy(want, x, 4 * sizeof(float));
	ref_act(want, 4, MODEL_ACT_RELU, 0, 0);
	run_compare(_metadata, &im, x, want, 4);
	onnx_import_free(&im);
	arena_free();
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		struct gb r = { 0 };
		Onnx__NodeProto *n;

		err = (struct coloc_err){ 0 };
		init_f(&r, "zero", 1, one, &zero);
		r.ins[r.nr_ins++] = vinfo("x", 2, xd, NULL);
		n = node(&r, refused[i].op, "n", refused[i].to ? NAMES("x") : NAMES("x", "zero"),
			 NAMES("y"));
		if (refused[i].to)
			attr_int(n, "to", refused[i].to);
		r.outs[r.nr_outs++] = vinfo("y", 2, xd, NULL);
		EXPECT_EQ(-EOPNOTSUPP, import(&r, &im, &err));
		EXPECT_NE(NULL, strstr(coloc_err_str(&err), refused[i].words))
		TH_LOG("%s", coloc_err_str(&err));
		arena_free();
	}
}

/*
 * Where with a constant condition (folded: cols <= rows, a lower-triangular
 * [3,4] causal mask) and one computed operand: a mul and an add of
 * constants. y = Where(mask, relu(x), -1e4), then Where(cols == 3, 0.5, y)
 * with the constant first; by hand, element (i, j): 0.5 if j = 3, else
 * relu(x) if j <= i, else -1e4. A Where whose condition is all true is an
 * alias, and one whose condition is computed is refused.
 */
TEST(onnx_import__where_of_a_constant_condition_is_mul_and_add)
{
	static const int64_t xd[3] = { 1, 3, 4 }, cd[2] = { 1, 4 }, rd[2] = { 3, 1 },
			     one[1] = { 1 };
	static const int64_t cols[4] = { 0, 1, 2, 3 }, rows[3] = { 0, 1, 2 }, k3 = 3, k9 = 9;
	static const float neg = -1e4f, half = 0.5f;
	struct gb g = { 0 }, r = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *x = rnd_fill(12, -1, 1), *want = mem(12 * 4);

	init_i64(&g, "cols", 2, cd, 4, cols);
	init_i64(&g, "rows", 2, rd, 3, rows);
	init_i64(&g, "k3", 1, one, 1, &k3);
	init_i64(&g, "k9", 1, one, 1, &k9);
	init_f(&g, "neg", 0, NULL, &neg);
	init_f(&g, "half", 0, NULL, &half);
	g.ins[g.nr_ins++] = vinfo("x", 3, xd, NULL);
	node(&g, "Relu", "relu", NAMES("x"), NAMES("r"));
	node(&g, "LessOrEqual", "causal", NAMES("cols", "rows"), NAMES("mask"));
	node(&g, "Where", "masked", NAMES("mask", "r", "neg"), NAMES("y1"));
	node(&g, "Equal", "last", NAMES("cols", "k3"), NAMES("is_last"));
	node(&g, "Where", "pin", NAMES("is_last", "half", "y1"), NAMES("y2"));
	node(&g, "Less", "all", NAMES("cols", "k9"), NAMES("every"));
	node(&g, "Where", "keep", NAMES("every", "y2", "neg"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 3, xd, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(6, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_ACT, im.model->layers[1].op);
	EXPECT_EQ(MODEL_OP_MUL, im.model->layers[2].op);
	EXPECT_EQ(MODEL_OP_ADD, im.model->layers[3].op);
	EXPECT_EQ(MODEL_OP_MUL, im.model->layers[4].op);
	EXPECT_EQ(MODEL_OP_ADD, im.model->layers[5].op);
	EXPECT_EQ(5, im.outputs[0]);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 4; j++)
			want[i * 4 + j] = j == 3 ? 0.5f : j <= i ? fmaxf(x[i * 4 + j], 0) : -1e4f;
	run_compare(_metadata, &im, x, want, 12);
	onnx_import_free(&im);

	r.ins[r.nr_ins++] = vinfo("x", 3, xd, NULL);
	init_f(&r, "neg", 0, NULL, &neg);
	node(&r, "Relu", "relu", NAMES("x"), NAMES("r"));
	node(&r, "Where", "w", NAMES("x", "r", "neg"), NAMES("y"));
	r.outs[r.nr_outs++] = vinfo("y", 3, xd, NULL);
	EXPECT_EQ(-EOPNOTSUPP, import(&r, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "node 'w' (Where, opset 13, inputs [1,3,4], "
						    "[1,3,4], [] const): Where needs a constant "
						    "condition"))
	TH_LOG("%s", coloc_err_str(&err));
	arena_free();
}

/*
 * Clip at opset 13: (-1, 1) after a Conv is its act=clip; (0.5, +inf) with
 * the infinity an initializer (melspectrogram's) is a max with 0.5; only
 * an upper bound 2 (the min input left empty) is a min with 2.
 */
TEST(onnx_import__clip_bounds_become_clip_max_min)
{
	static const int64_t od[4] = { 1, 4, 8, 8 };
	static const float m1 = -1.0f, p1 = 1.0f, half = 0.5f, inf = INFINITY, two = 2.0f;
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	struct model_shape os = { .ndims = 4, .dims = { 1, 4, 8, 8 } };
	struct model_shape ks = { .ndims = 1, .dims = { 1 } };
	float *w = rnd_fill(108, -1, 1), *x = rnd_fill(192, -2, 2), *a = mem(256 * 4);
	float *want = mem(256 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "W", 4, W_DIMS, w);
	init_f(&g, "m1", 0, NULL, &m1);
	init_f(&g, "p1", 0, NULL, &p1);
	init_f(&g, "half", 0, NULL, &half);
	init_f(&g, "inf", 0, NULL, &inf);
	init_f(&g, "two", 0, NULL, &two);
	g.ins[g.nr_ins++] = vinfo("x", 4, X_DIMS, NULL);
	n = node(&g, "Conv", "c", NAMES("x", "W"), NAMES("c"));
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	node(&g, "Clip", "unit", NAMES("c", "m1", "p1"), NAMES("u"));
	node(&g, "Clip", "floor", NAMES("u", "half", "inf"), NAMES("f"));
	node(&g, "Clip", "cap", NAMES("f", "", "two"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, od, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(4, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_ACT_CLIP, im.model->layers[1].act);
	EXPECT_EQ(-1.0f, im.model->layers[1].act_alpha);
	EXPECT_EQ(1.0f, im.model->layers[1].act_beta);
	EXPECT_EQ(MODEL_OP_MAX, im.model->layers[2].op);
	EXPECT_EQ(MODEL_OP_MIN, im.model->layers[3].op);
	ref_conv(x, X_DIMS, w, NULL, &CONV3, od, a);
	ref_act(a, 256, MODEL_ACT_CLIP, -1, 1);
	ref_binary(MODEL_OP_MAX, a, &os, &half, &ks, want);
	ref_binary(MODEL_OP_MIN, want, &os, &two, &ks, a);
	run_compare(_metadata, &im, x, a, 256);
	onnx_import_free(&im);
	arena_free();
}

/*
 * Split of the channels into 1, 2 and 3 (opset 13: sizes as input 1),
 * concatenated back in another order; ReduceMax over H, W kept, then
 * ReduceMean over the channels with keepdims 0 (a reduce and a reshape).
 */
TEST(onnx_import__split_and_reductions_match_reference)
{
	static const int64_t xd[4] = { 1, 6, 3, 4 }, sd[1] = { 3 }, sizes[3] = { 1, 2, 3 },
			     od[3] = { 1, 1, 1 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *x = rnd_fill(72, -2, 2), *cat = mem(72 * 4), *mx = mem(6 * 4), want[1];
	struct model_shape cs = { .ndims = 4, .dims = { 1, 6, 3, 4 } };
	struct model_shape ms = { .ndims = 4, .dims = { 1, 6, 1, 1 } };
	struct model_reduce hw = { .kind = MODEL_REDUCE_MAX, .axes = 0xc };
	/* the channels and the last axis (of size 1), as -1 names it */
	struct model_reduce ch = { .kind = MODEL_REDUCE_MEAN, .axes = 0xa };
	Onnx__NodeProto *n;

	init_i64(&g, "sizes", 1, sd, 3, sizes);
	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	n = node(&g, "Split", "split", NAMES("x", "sizes"), NAMES("a", "b", "c"));
	attr_int(n, "axis", 1);
	n = node(&g, "Concat", "cat", NAMES("c", "a", "b"), NAMES("k"));
	attr_int(n, "axis", 1);
	n = node(&g, "ReduceMax", "rmax", NAMES("k"), NAMES("m"));
	attr_ints(n, "axes", 2, (const int64_t[]){ 2, 3 });
	n = node(&g, "ReduceMean", "rmean", NAMES("m"), NAMES("y"));
	attr_ints(n, "axes", 2, (const int64_t[]){ 1, -1 });
	attr_int(n, "keepdims", 0);
	g.outs[g.nr_outs++] = vinfo("y", 3, od, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(8, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(3, count_ops(im.model, MODEL_OP_SLICE));
	EXPECT_EQ(2, count_ops(im.model, MODEL_OP_REDUCE));
	EXPECT_EQ(MODEL_OP_RESHAPE, im.model->layers[7].op);
	/* channels 3..5, then 0, then 1..2 */
	memcpy(cat, x + 36, 36 * sizeof(float));
	memcpy(cat + 36, x, 36 * sizeof(float));
	memcpy(cat + 48, x + 12, 24 * sizeof(float));
	ref_reduce(cat, &cs, &hw, mx);
	ref_reduce(mx, &ms, &ch, want);
	run_compare(_metadata, &im, x, want, 1);
	onnx_import_free(&im);
	arena_free();
}

/*
 * A conv read by a Relu layer, then by an Add of a constant: the constant
 * must not fold into the conv's bias (the relu layer reads the conv's
 * output without it); it becomes an add layer of its own.
 */
TEST(onnx_import__no_fusion_into_a_layer_already_read)
{
	static const int64_t od[4] = { 1, 4, 8, 8 }, bd[4] = { 1, 4, 1, 1 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	struct model_shape os = { .ndims = 4, .dims = { 1, 4, 8, 8 } };
	struct model_shape bs = { .ndims = 4, .dims = { 1, 4, 1, 1 } };
	float *w = rnd_fill(108, -1, 1), *b = rnd_fill(4, 2, 5), *x = rnd_fill(192, -1, 1);
	float *cv = mem(256 * 4), *r = mem(256 * 4), *a = mem(256 * 4), *want = mem(256 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "W", 4, W_DIMS, w);
	init_f(&g, "B", 4, bd, b);
	g.ins[g.nr_ins++] = vinfo("x", 4, X_DIMS, NULL);
	n = node(&g, "Conv", "c", NAMES("x", "W"), NAMES("c"));
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	node(&g, "Relu", "r", NAMES("c"), NAMES("r"));
	node(&g, "Add", "shift", NAMES("c", "B"), NAMES("a"));
	node(&g, "Add", "sum", NAMES("r", "a"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, od, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(5, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_FALSE(im.model->layers[1].conv.bias);
	EXPECT_TRUE(im.model->layers[3].binary.has_const);
	ref_conv(x, X_DIMS, w, NULL, &CONV3, od, cv);
	memcpy(r, cv, 256 * sizeof(float));
	ref_act(r, 256, MODEL_ACT_RELU, 0, 0);
	ref_binary(MODEL_OP_ADD, cv, &os, b, &bs, a);
	ref_binary(MODEL_OP_ADD, r, &os, a, &os, want);
	run_compare(_metadata, &im, x, want, 256);
	onnx_import_free(&im);
	arena_free();
}

/* Pad at opset 13: a border of 0.5 (pads and value as inputs) around a conv's H and W. */
TEST(onnx_import__pad_matches_reference)
{
	static const int64_t od[4] = { 1, 4, 9, 11 }, pd[1] = { 8 },
			     pads[8] = { 0, 0, 0, 1, 0, 0, 1, 2 };
	static const float half = 0.5f;
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	struct model_shape cs = { .ndims = 4, .dims = { 1, 4, 8, 8 } };
	struct model_pad p = { .begin = { 0, 0, 0, 1 }, .end = { 0, 0, 1, 2 }, .value = 0.5f };
	float *w = rnd_fill(108, -1, 1), *x = rnd_fill(192, -1, 1), *cv = mem(256 * 4);
	float *want = mem(396 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "W", 4, W_DIMS, w);
	init_i64(&g, "pads", 1, pd, 8, pads);
	init_f(&g, "half", 0, NULL, &half);
	g.ins[g.nr_ins++] = vinfo("x", 4, X_DIMS, NULL);
	n = node(&g, "Conv", "c", NAMES("x", "W"), NAMES("c"));
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	node(&g, "Pad", "border", NAMES("c", "pads", "half"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, od, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(3, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_PAD, im.model->layers[2].op);
	ref_conv(x, X_DIMS, w, NULL, &CONV3, cs.dims, cv);
	ref_pad(cv, &cs, &p, want);
	run_compare(_metadata, &im, x, want, 396);
	onnx_import_free(&im);
	arena_free();
}

/*
 * LayerNormalization as exporters before opset 17 write it (ReduceMean,
 * Sub, Pow 2, ReduceMean, Add eps from a Constant node, Sqrt, Div, Mul
 * gamma, Add beta) becomes one layer_norm; without gamma and beta too.
 */
TEST(onnx_import__layer_norm_pattern_fuses)
{
	static const int64_t xd[3] = { 1, 3, 8 }, wd[2] = { 8, 8 }, d8[1] = { 8 };
	static const float two = 2.0f;
	struct gb g = { 0 }, g2 = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *w = rnd_fill(64, -1, 1), *gam = rnd_fill(8, 0.5f, 1.5f), *bet = rnd_fill(8, -1, 1);
	float *x = rnd_fill(24, -2, 2), *h = mem(24 * 4), *want = mem(24 * 4);
	float *ones = mem(8 * 4), *zeros = mem(8 * 4);

	init_f(&g, "W", 2, wd, w);
	init_f(&g, "gamma", 1, d8, gam);
	init_f(&g, "beta", 1, d8, bet);
	init_f(&g, "two", 0, NULL, &two);
	g.ins[g.nr_ins++] = vinfo("x", 3, xd, NULL);
	node(&g, "MatMul", "fc", NAMES("x", "W"), NAMES("h"));
	attr_ints(node(&g, "ReduceMean", "mean", NAMES("h"), NAMES("m")), "axes", 1,
		  (const int64_t[]){ -1 });
	node(&g, "Sub", "center", NAMES("h", "m"), NAMES("d"));
	node(&g, "Pow", "square", NAMES("d", "two"), NAMES("p"));
	attr_ints(node(&g, "ReduceMean", "var", NAMES("p"), NAMES("v")), "axes", 1,
		  (const int64_t[]){ 2 });
	const_node(&g, "eps", 1e-5f);
	node(&g, "Add", "var_eps", NAMES("v", "eps"), NAMES("ve"));
	node(&g, "Sqrt", "std", NAMES("ve"), NAMES("sd"));
	node(&g, "Div", "norm", NAMES("d", "sd"), NAMES("nm"));
	node(&g, "Mul", "scale", NAMES("gamma", "nm"), NAMES("sc"));
	node(&g, "Add", "shift", NAMES("sc", "beta"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 3, (const int64_t[]){ 1, 3, 8 }, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(3, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_LAYER_NORM, im.model->layers[2].op);
	EXPECT_EQ(8u * 8 + 16, im.model->params);
	ref_fc(x, w, NULL, 3, 8, 8, h);
	ref_layer_norm(h, 3, 8, gam, bet, 1e-5f, want);
	run_compare(_metadata, &im, x, want, 24);
	onnx_import_free(&im);

	init_f(&g2, "two", 0, NULL, &two);
	init_f(&g2, "eps", 0, NULL, (const float[]){ 1e-3f });
	g2.ins[g2.nr_ins++] = vinfo("x", 3, xd, NULL);
	attr_ints(node(&g2, "ReduceMean", "mean", NAMES("x"), NAMES("m")), "axes", 1,
		  (const int64_t[]){ -1 });
	node(&g2, "Sub", "center", NAMES("x", "m"), NAMES("d"));
	node(&g2, "Pow", "square", NAMES("d", "two"), NAMES("p"));
	attr_ints(node(&g2, "ReduceMean", "var", NAMES("p"), NAMES("v")), "axes", 1,
		  (const int64_t[]){ -1 });
	node(&g2, "Add", "var_eps", NAMES("eps", "v"), NAMES("ve"));
	node(&g2, "Sqrt", "std", NAMES("ve"), NAMES("sd"));
	node(&g2, "Div", "norm", NAMES("d", "sd"), NAMES("y"));
	g2.outs[g2.nr_outs++] = vinfo("y", 3, xd, NULL);
	ASSERT_EQ(0, import(&g2, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(2, im.model->nr_layers) TH_LOG("%s", im.text);
	for (int i = 0; i < 8; i++)
		ones[i] = 1.0f;
	ref_layer_norm(x, 3, 8, ones, zeros, 1e-3f, want);
	run_compare(_metadata, &im, x, want, 24);
	onnx_import_free(&im);
	arena_free();
}

/* An Erf whose result another node also reads is not a GELU: refused, naming the Erf. */
TEST(onnx_import__gelu_lookalike_is_refused)
{
	static const int64_t xd[2] = { 1, 4 };
	static const float sqrt2 = 1.41421356f, one = 1.0f, half = 0.5f;
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };

	init_f(&g, "sqrt2", 0, NULL, &sqrt2);
	init_f(&g, "one", 0, NULL, &one);
	init_f(&g, "half", 0, NULL, &half);
	g.ins[g.nr_ins++] = vinfo("x", 2, xd, NULL);
	node(&g, "Div", "div", NAMES("x", "sqrt2"), NAMES("d"));
	node(&g, "Erf", "erf", NAMES("d"), NAMES("e"));
	node(&g, "Add", "add", NAMES("e", "one"), NAMES("a"));
	node(&g, "Mul", "mul", NAMES("x", "a"), NAMES("p"));
	node(&g, "Mul", "half", NAMES("p", "half"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 2, xd, NULL);
	g.outs[g.nr_outs++] = vinfo("e", 2, xd, NULL);
	EXPECT_EQ(-EOPNOTSUPP, import(&g, &im, &err));
	/* the Div by a constant is a div layer; the Erf outside the pattern is refused */
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "node 'erf' (Erf, opset 13"))
	TH_LOG("%s", coloc_err_str(&err));
	arena_free();
}

/* coloc-import writes a model that loads and a weights file that fits it. */
TEST(coloc_import__writes_model_and_weights)
{
	char dir[] = "/tmp/coloc-onnx-XXXXXX", bin[512], cmd[2048], out[4096];
	struct coloc_err err = { 0 };
	struct exec_weights_file *wf;
	struct gb g = { 0 };
	struct model *m;
	float *w, *b, *bn;
	uint8_t *buf;
	size_t len;
	FILE *f;

	ASSERT_NE(NULL, mkdtemp(dir));
	tu_bin("coloc-import", bin, sizeof(bin));
	conv_bn_relu(&g, &w, &b, &bn);
	buf = pack(&g, &len);
	snprintf(cmd, sizeof(cmd), "%s/m.onnx", dir);
	f = fopen(cmd, "wb");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(len, fwrite(buf, 1, len, f));
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s %s/m.onnx -o %s/m.model -w %s/m.weights", bin, dir, dir,
		 dir);
	EXPECT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "%s/m.model", dir);
	m = model_load(cmd, &err);
	ASSERT_NE(NULL, m) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(2, m->nr_layers);
	snprintf(cmd, sizeof(cmd), "%s/m.weights", dir);
	coloc_err_clear(&err);
	wf = exec_weights_open(m, cmd, &err);
	EXPECT_NE(NULL, wf) TH_LOG("%s", coloc_err_str(&err));
	if (wf)
		exec_weights_close(wf);
	model_free(m);
	/* the default names: MODEL with .model and .weights for .onnx */
	snprintf(cmd, sizeof(cmd), "%s %s/m.onnx && test -s %s/m.model && test -s %s/m.weights",
		 bin, dir, dir, dir);
	EXPECT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "%s %s/m.onnx --dim seq", bin, dir);
	EXPECT_EQ(2, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "%s %s/nothere.onnx", bin, dir);
	EXPECT_EQ(1, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "nothere.onnx: No such file or directory"));
	snprintf(cmd, sizeof(cmd), "%s --help", bin);
	EXPECT_EQ(0, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "--dim NAME=VALUE"));
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	tu_run(cmd, NULL, 0);
	arena_free();
}

TEST(onnx_import__unsupported_op_is_named)
{
	static const int64_t xd[2] = { 1, 4 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	const char *msg;

	g.ins[g.nr_ins++] = vinfo("x", 2, xd, NULL);
	node(&g, "Erf", "/encoder/gelu/Erf", NAMES("x"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 2, xd, NULL);
	EXPECT_EQ(-EOPNOTSUPP, import(&g, &im, &err));
	msg = coloc_err_str(&err);
	TH_LOG("%s", msg);
	EXPECT_NE(NULL, strstr(msg, "node '/encoder/gelu/Erf' (Erf, opset 13, inputs [1,4])"));
	EXPECT_NE(NULL, strstr(msg, "unsupported op"));
	EXPECT_EQ(NULL, im.model);
	arena_free();
}

/* A BatchNormalization in training mode (batch statistics) is refused. */
TEST(onnx_import__batch_norm_in_training_mode_is_refused)
{
	static const int64_t xd[4] = { 1, 4, 2, 2 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *p = rnd_fill(16, 0.5f, 1);
	Onnx__NodeProto *n;

	init_f(&g, "gamma", 1, C4, p);
	init_f(&g, "beta", 1, C4, p + 4);
	init_f(&g, "mean", 1, C4, p + 8);
	init_f(&g, "var", 1, C4, p + 12);
	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	n = node(&g, "BatchNormalization", "bn", NAMES("x", "gamma", "beta", "mean", "var"),
		 NAMES("y"));
	attr_int(n, "training_mode", 1);
	g.outs[g.nr_outs++] = vinfo("y", 4, xd, NULL);
	EXPECT_EQ(-EOPNOTSUPP, import(&g, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "node 'bn' (BatchNormalization, opset 13"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "training_mode=1"));
	arena_free();
}

/* x[batch, seq, 8]: the batch comes from --batch, seq must be given. */
TEST(onnx_import__symbolic_dims_need_values)
{
	static const int64_t xd[3] = { 0, 0, 8 }, wd[2] = { 8, 2 };
	static const char *const dn[3] = { "batch", "seq", NULL };
	struct onnx_import_opts o = { .batch = 3 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *w = rnd_fill(16, -1, 1);
	uint8_t *buf;
	size_t len;

	init_f(&g, "W", 2, wd, w);
	g.ins[g.nr_ins++] = vinfo("x", 3, xd, dn);
	node(&g, "MatMul", "mm", NAMES("x", "W"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 3, xd, dn);
	buf = pack(&g, &len);
	EXPECT_EQ(-EINVAL, onnx_import_buffer("t.onnx", buf, len, &o, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "dim 1 is the symbol 'seq': give its value "
						    "with --dim seq=VALUE"))
	TH_LOG("%s", coloc_err_str(&err));
	coloc_err_clear(&err);
	EXPECT_EQ(-EINVAL, onnx_dim_parse(&o, "seq", &err));
	ASSERT_EQ(0, onnx_dim_parse(&o, "seq=7", &err));
	ASSERT_EQ(0, onnx_import_buffer("t.onnx", buf, len, &o, &im, &err))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(3, im.model->layers[0].out.dims[0]);
	EXPECT_EQ(7, im.model->layers[0].out.dims[1]);
	EXPECT_EQ(3u * 7 * 8 * 2, im.model->macs);
	onnx_import_free(&im);
	arena_free();
}

/* Node names go into comments: a newline in one must not inject a statement. */
TEST(onnx_import__names_cannot_inject_statements)
{
	static const int64_t xd[2] = { 1, 4 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };

	g.ins[g.nr_ins++] = vinfo("x", 2, xd, NULL);
	node(&g, "Sigmoid", "s\ninput evil shape=1x2\n", NAMES("x"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 2, xd, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(2, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(NULL, strstr(im.text, "\ninput evil"));
	EXPECT_EQ(MODEL_OP_ACT, im.model->layers[1].op);
	onnx_import_free(&im);
	arena_free();
}

/* Nodes sharing one name get distinct layer names; a fold that overflows float is refused. */
TEST(onnx_import__same_names_and_overflowing_folds)
{
	static const int64_t xd[2] = { 1, 4 }, wd[2] = { 4, 4 };
	static const float tiny = 1e-40f;
	struct gb g = { 0 }, g2 = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *w = rnd_fill(16, 1, 2);

	g.ins[g.nr_ins++] = vinfo("x", 2, xd, NULL);
	node(&g, "Sigmoid", "same", NAMES("x"), NAMES("a"));
	node(&g, "Tanh", "same", NAMES("a"), NAMES("b"));
	node(&g, "Sigmoid", "same", NAMES("b"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 2, xd, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(4, im.model->nr_layers);
	EXPECT_STRNE(im.model->layers[1].name, im.model->layers[2].name);
	EXPECT_STRNE(im.model->layers[2].name, im.model->layers[3].name);
	EXPECT_STREQ("same", im.model->layers[1].name);
	onnx_import_free(&im);

	init_f(&g2, "W", 2, wd, w);
	init_f(&g2, "tiny", 0, NULL, &tiny);
	g2.ins[g2.nr_ins++] = vinfo("x", 2, xd, NULL);
	node(&g2, "MatMul", "mm", NAMES("x", "W"), NAMES("m"));
	node(&g2, "Div", "blowup", NAMES("m", "tiny"), NAMES("y"));
	g2.outs[g2.nr_outs++] = vinfo("y", 2, xd, NULL);
	EXPECT_EQ(-ERANGE, import(&g2, &im, &err));
	EXPECT_NE(NULL,
		  strstr(coloc_err_str(&err), "layer 'mm' (from MatMul 'mm' + Div): parameter 0 "
					      "is not finite after folding"))
	TH_LOG("%s", coloc_err_str(&err));
	arena_free();
}

static int write_onnx(struct gb *g, const char *dir, const char *name, char *path, size_t len);

/*
 * Moves initializer 'name' of g into an external data file: its floats at
 * offset 16 of DIR/file (after 16 bytes of padding), the TensorProto
 * pointing there with location loc (what the model says, which may
 * differ from file), offset 16 and length len_bytes (-1: no length entry).
 */
static void externalize(struct gb *g, const char *name, const char *dir, const char *file,
			const char *loc, long long len_bytes)
{
	static const char pad[16] = "coloc-ext-pad..";
	Onnx__StringStringEntryProto **e = mem(3 * sizeof(*e));
	Onnx__TensorProto *t = NULL;
	char path[512], *len_str = mem(32);
	FILE *f;

	for (int i = 0; i < g->nr_inits; i++)
		if (!strcmp(g->inits[i]->name, name))
			t = g->inits[i];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "wb");
	if (f) {
		fwrite(pad, 1, sizeof(pad), f);
		fwrite(t->float_data, sizeof(float), t->n_float_data, f);
		fclose(f);
	}
	snprintf(len_str, 32, "%lld", len_bytes);
	for (int i = 0; i < 3; i++) {
		e[i] = mem(sizeof(**e));
		onnx__string_string_entry_proto__init(e[i]);
	}
	e[0]->key = "location";
	e[0]->value = (char *)loc;
	e[1]->key = "offset";
	e[1]->value = "16";
	e[2]->key = "length";
	e[2]->value = len_str;
	t->n_external_data = len_bytes < 0 ? 2 : 3;
	t->external_data = e;
	t->has_data_location = 1;
	t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	t->n_float_data = 0;
	t->float_data = NULL;
}

/*
 * Tensors in external data files (what onnx.save_model writes for models
 * over 2 GiB): read from a file beside the model at their offset, with or
 * without a length; a location outside the model's directory, a missing
 * file, a wrong length and a file too short are refused naming the tensor.
 */
TEST(onnx_import__external_data_is_read_beside_the_model)
{
	static const struct {
		const char *loc;
		long long len;
		const char *words;
	} bad[] = {
		{ "../w.bin", 432, "external data location '../w.bin' is not a path below" },
		{ "/etc/passwd", 432, "external data location '/etc/passwd' is not a path below" },
		{ "sub/../../w.bin", 432, "is not a path below the model's directory" },
		{ "none.bin", 432, "tensor 'W': external data file" },
		{ "w.bin", 436, "external data length 436, but its shape and type take 432" },
		{ "short.bin", 432, "has no 432 bytes at offset 16" },
	};
	char dir[] = "/tmp/coloc-onnx-ext-XXXXXX", path[512], cmd[600];
	int64_t od[4] = { 1, 4, 8, 8 };
	float *w, *b, *bn, *x = rnd_fill(192, -1, 1), *want = mem(256 * sizeof(float));
	struct coloc_err err = { 0 };
	struct onnx_import im;
	struct gb g = { 0 };
	FILE *f;

	ASSERT_NE(NULL, mkdtemp(dir));
	conv_bn_relu(&g, &w, &b, &bn);
	ref_conv(x, X_DIMS, w, b, &CONV3, od, want);
	ref_batch_norm(want, 1, 4, 64, bn, bn + 4, bn + 8, bn + 12, 1e-3f);
	ref_act(want, 256, MODEL_ACT_RELU, 0, 0);
	/* W with a length, B without one, in files of their own */
	externalize(&g, "W", dir, "w.bin", "w.bin", 432);
	externalize(&g, "B", dir, "b.bin", "b.bin", -1);
	ASSERT_EQ(0, write_onnx(&g, dir, "m.onnx", path, sizeof(path)));
	ASSERT_EQ(0, onnx_import_file(path, NULL, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	run_compare(_metadata, &im, x, want, 256);
	onnx_import_free(&im);

	/* a file too short for the tensor: 100 bytes */
	snprintf(path, sizeof(path), "%s/short.bin", dir);
	f = fopen(path, "wb");
	ASSERT_NE(NULL, f);
	fwrite(w, 1, 100, f);
	fclose(f);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		Onnx__TensorProto *t = g.inits[0];

		ASSERT_STREQ("W", t->name);
		t->external_data[0]->value = (char *)bad[i].loc;
		snprintf(t->external_data[2]->value, 32, "%lld", bad[i].len);
		ASSERT_EQ(0, write_onnx(&g, dir, "m.onnx", path, sizeof(path)));
		memset(&err, 0, sizeof(err));
		EXPECT_GT(0, onnx_import_file(path, NULL, &im, &err)) TH_LOG("case %zu", i);
		EXPECT_NE(NULL, strstr(coloc_err_str(&err), bad[i].words))
		TH_LOG("case %zu: %s", i, coloc_err_str(&err));
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	EXPECT_EQ(0, system(cmd));
	arena_free();
}

TEST(onnx_import__not_onnx_is_refused)
{
	static const char junk[] = "model x\nend\n";
	struct onnx_import im;
	struct coloc_err err = { 0 };

	EXPECT_EQ(-EINVAL,
		  onnx_import_buffer("junk.onnx", junk, sizeof(junk) - 1, NULL, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "junk.onnx: not an ONNX model"))
	TH_LOG("%s", coloc_err_str(&err));
}

/* ---- inputs found by the libFuzzer targets (tests/fuzz/, docs/fuzzing.md) ---- */

/*
 * A Resize to sizes [1, 2, 2^40, 2^40]: its element count overflowed int64
 * in onnx_elems() while counting MACs (undefined behaviour), before the
 * parser's range checks. Now the layer's shape is checked when it is made,
 * and the message gives the dim's position, not the size read from the file.
 */
TEST(onnx_import__resize_to_huge_sizes_is_refused_before_counting)
{
	static const int64_t xd[4] = { 1, 2, 4, 4 }, szd[1] = { 4 };
	static const int64_t sizes[4] = { 1, 2, 1ll << 40, 1ll << 40 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };

	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	init_i64(&g, "sizes", 1, szd, 4, sizes);
	node(&g, "Resize", "up", NAMES("x", "", "", "sizes"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, xd, NULL);
	EXPECT_EQ(-EOPNOTSUPP, import(&g, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err),
			       "node 'up' (Resize, opset 13, inputs [1,2,4,4], -, -, [4] const): "
			       "the result: dim 2 is outside the 1..16777216 coloc "
			       "allows"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(NULL, strstr(coloc_err_str(&err), "1099511627776"));
	arena_free();
}

/* Appends field's key (wire type 2) and the length of the len bytes at *pos, writing backwards. */
static void wrap_field(uint8_t *buf, size_t *pos, size_t cap, unsigned field)
{
	uint8_t tmp[16];
	size_t len = cap - *pos, n = 0;

	tmp[n++] = (uint8_t)(field << 3 | 2);
	do {
		tmp[n++] = (uint8_t)((len & 0x7f) | (len > 0x7f ? 0x80 : 0));
		len >>= 7;
	} while (len);
	*pos -= n;
	memcpy(buf + *pos, tmp, n);
}

/*
 * A ModelProto whose graph holds a node whose attribute holds a graph...
 * reps times: 3 x reps + 1 messages deep, encoded by hand (protobuf-c's
 * packer would recurse as deep). Returns the file's start in buf.
 */
static const uint8_t *nested_model(uint8_t *buf, size_t cap, int reps, size_t *len)
{
	size_t pos = cap;

	for (int i = 0; i < reps; i++) {
		wrap_field(buf, &pos, cap, 6); /* AttributeProto.g */
		wrap_field(buf, &pos, cap, 5); /* NodeProto.attribute */
		wrap_field(buf, &pos, cap, 1); /* GraphProto.node */
	}
	wrap_field(buf, &pos, cap, 7); /* ModelProto.graph */
	*len = cap - pos;
	return buf + pos;
}

/*
 * protobuf-c has no nesting limit and recurses once per level: 3001 levels
 * in 16 KiB are refused before it decodes anything; 61 levels are not
 * (decoded, the graph is then refused for what it lacks: outputs).
 */
TEST(onnx_import__deep_nesting_is_refused_before_decoding)
{
	static uint8_t buf[64 << 10];
	struct onnx_import im;
	struct coloc_err err = { 0 };
	const uint8_t *m;
	size_t len;

	m = nested_model(buf, sizeof(buf), 1000, &len);
	ASSERT_GT(16 << 10, len);
	EXPECT_EQ(-ELOOP, onnx_import_buffer("deep.onnx", m, len, NULL, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "deep.onnx: messages nested more than 64 deep"))
	TH_LOG("%s", coloc_err_str(&err));

	coloc_err_clear(&err);
	m = nested_model(buf, sizeof(buf), 20, &len);
	EXPECT_EQ(-EINVAL, onnx_import_buffer("deep.onnx", m, len, NULL, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "deep.onnx: the graph has no outputs"))
	TH_LOG("%s", coloc_err_str(&err));
}

/*
 * A Range of 2^28 elements from three scalars: 2 GiB of doubles from a
 * few bytes, a 35 s input for the fuzzer. Folding now makes at most twice
 * the elements of the file's tensors, or 2^20 when that is less.
 */
TEST(onnx_import__folding_is_bounded_by_the_file)
{
	static const int64_t xd[2] = { 1, 4 }, zero = 0, big = 1ll << 28, one = 1;
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };

	g.ins[g.nr_ins++] = vinfo("x", 2, xd, NULL);
	init_i64(&g, "zero", 0, NULL, 1, &zero);
	init_i64(&g, "big", 0, NULL, 1, &big);
	init_i64(&g, "one", 0, NULL, 1, &one);
	node(&g, "Range", "r", NAMES("zero", "big", "one"), NAMES("ids"));
	node(&g, "Relu", "act", NAMES("x"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 2, xd, NULL);
	EXPECT_EQ(-E2BIG, import(&g, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err),
			       "node 'r' (Range, opset 13, inputs [] const, [] const, [] const): "
			       "folding would make constants of more than 1048576 elements"))
	TH_LOG("%s", coloc_err_str(&err));
	arena_free();
}

/*
 * A security review found "index 1953460082 is out of range 0..0": the
 * error echoed a constant's data. Messages name the position instead.
 */
TEST(onnx_import__gather_index_error_names_the_position_not_the_value)
{
	static const int64_t xd[2] = { 1, 4 }, dd[1] = { 3 }, id[1] = { 2 };
	static const float data[3] = { 1, 2, 3 };
	static const int64_t idx[2] = { 1, 1953460082 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };

	g.ins[g.nr_ins++] = vinfo("x", 2, xd, NULL);
	init_f(&g, "data", 1, dd, data);
	init_i64(&g, "idx", 1, id, 2, idx);
	node(&g, "Gather", "pick", NAMES("data", "idx"), NAMES("k"));
	node(&g, "Relu", "act", NAMES("x"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 2, xd, NULL);
	EXPECT_EQ(-EINVAL, import(&g, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err),
			       "node 'pick' (Gather, opset 13, inputs [3] const, [2] const): "
			       "indices element 1 is out of range for axis 0 of the data"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(NULL, strstr(coloc_err_str(&err), "1953460082"));
	arena_free();
}

/*
 * Values the fuzzer turned into undefined behaviour: an ints attribute
 * with no values (memcpy from NULL), and a Reshape target whose product
 * overflowed int64 before its bound was checked. Each is refused.
 */
TEST(onnx_import__empty_ints_and_huge_reshape_are_refused)
{
	static const int64_t xd[4] = { 1, 1, 4, 4 }, sd[1] = { 2 };
	static const int64_t target[2] = { 1ll << 32, 1ll << 32 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	Onnx__NodeProto *n;

	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	n = node(&g, "MaxPool", "pool", NAMES("x"), NAMES("y"));
	attr_ints(n, "kernel_shape", 2, (const int64_t[]){ 2, 2 });
	attr(n, "pads", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
	g.outs[g.nr_outs++] = vinfo("y", 4, xd, NULL);
	EXPECT_EQ(-EINVAL, import(&g, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "pads has 0 values, expected 4"))
	TH_LOG("%s", coloc_err_str(&err));
	arena_free();

	memset(&g, 0, sizeof(g));
	coloc_err_clear(&err);
	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	init_i64(&g, "target", 1, sd, 2, target);
	node(&g, "Reshape", "flat", NAMES("x", "target"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, xd, NULL);
	EXPECT_EQ(-EINVAL, import(&g, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "the target shape is too large"))
	TH_LOG("%s", coloc_err_str(&err));
	arena_free();
}

/*
 * For the fuzz loop: opset 17, token ids -> embedding -> LayerNormalization
 * -> a folded Shape/Gather/Unsqueeze/Concat/Reshape -> MatMul -> GELU with
 * a Constant node -> Slice -> Transpose -> Softmax.
 */
static void fuzz_graph(struct gb *g)
{
	static const int64_t idd[2] = { 1, 4 }, td[2] = { 6, 4 }, d4[1] = { 4 }, w44[2] = { 4, 4 },
			     one[1] = { 1 }, three[1] = { 3 };
	static const int64_t zero = 0, minus1 = -1, shp3[3] = { 1, 4, 4 }, s1 = 1, e3 = 3;
	static const float sqrt2 = 1.41421356f, half = 0.5f;
	float *t = rnd_fill(24, -1, 1), *gam = rnd_fill(4, 0.5f, 1), *w = rnd_fill(16, -1, 1);

	g->opset = 17;
	init_f(g, "table", 2, td, t);
	init_f(g, "gamma", 1, d4, gam);
	init_f(g, "W", 2, w44, w);
	init_f(g, "sqrt2", 0, NULL, &sqrt2);
	init_f(g, "half", 0, NULL, &half);
	init_i64(g, "zero", 0, NULL, 1, &zero);
	init_i64(g, "axes0", 1, one, 1, &zero);
	init_i64(g, "rest", 1, one, 1, &minus1);
	init_i64(g, "shp3", 1, three, 3, shp3);
	init_i64(g, "s1", 1, one, 1, &s1);
	init_i64(g, "e3", 1, one, 1, &e3);
	vinfo_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
	g->ins[g->nr_ins++] = vinfo("ids", 2, idd, NULL);
	node(g, "Gather", "embed", NAMES("table", "ids"), NAMES("e"));
	node(g, "LayerNormalization", "ln", NAMES("e", "gamma"), NAMES("ln"));
	node(g, "Shape", "shape", NAMES("ln"), NAMES("sh"));
	node(g, "Gather", "n", NAMES("sh", "zero"), NAMES("n"));
	node(g, "Unsqueeze", "n1", NAMES("n", "axes0"), NAMES("n1"));
	attr_int(node(g, "Concat", "tgt", NAMES("n1", "rest"), NAMES("tgt")), "axis", 0);
	node(g, "Reshape", "flat", NAMES("ln", "tgt"), NAMES("f"));
	node(g, "Reshape", "back", NAMES("f", "shp3"), NAMES("b"));
	node(g, "MatMul", "mm", NAMES("b", "W"), NAMES("m"));
	node(g, "Div", "div", NAMES("m", "sqrt2"), NAMES("d"));
	node(g, "Erf", "erf", NAMES("d"), NAMES("er"));
	const_node(g, "one", 1.0f);
	node(g, "Add", "add", NAMES("er", "one"), NAMES("a"));
	node(g, "Mul", "mul", NAMES("m", "a"), NAMES("p"));
	node(g, "Mul", "mulh", NAMES("p", "half"), NAMES("gl"));
	node(g, "Slice", "sl", NAMES("gl", "s1", "e3", "s1"), NAMES("sl"));
	attr_ints(node(g, "Transpose", "tr", NAMES("sl"), NAMES("tr")), "perm", 3,
		  (const int64_t[]){ 0, 2, 1 });
	node(g, "Softmax", "sm", NAMES("tr"), NAMES("y"));
	g->outs[g->nr_outs++] = vinfo("y", 3, (const int64_t[]){ 1, 4, 2 }, NULL);
}

/*
 * 1-D windows and a folded mask: x[1,2,9] -> Conv 1-D -> MaxPool 1-D ->
 * ConvTranspose 1-D, plus Range(0, Shape[2], 1) < 3 through Not, And, Cast,
 * Where and Expand to the result's shape, added to it ([1,2,8]).
 */
static void fuzz_graph_1d(struct gb *g)
{
	static const int64_t xd[3] = { 1, 2, 9 }, wd[3] = { 2, 2, 2 }, one[1] = { 1 };
	static const int64_t k0 = 0, k1 = 1, k2 = 2, k3 = 3;
	static const float lo = -1, hi = 2;
	Onnx__NodeProto *n;

	init_f(g, "W", 3, wd, rnd_fill(8, -1, 1));
	init_f(g, "W2", 3, wd, rnd_fill(8, -1, 1));
	init_i64(g, "k0", 0, NULL, 1, &k0);
	init_i64(g, "k1", 0, NULL, 1, &k1);
	init_i64(g, "k2", 0, NULL, 1, &k2);
	init_i64(g, "k3", 1, one, 1, &k3);
	init_f(g, "lo", 0, NULL, &lo);
	init_f(g, "hi", 0, NULL, &hi);
	g->ins[g->nr_ins++] = vinfo("x", 3, xd, NULL);
	n = node(g, "Conv", "c", NAMES("x", "W"), NAMES("c"));
	attr_ints(n, "pads", 2, (const int64_t[]){ 1, 0 });
	attr_ints(n, "dilations", 1, (const int64_t[]){ 2 });
	n = node(g, "MaxPool", "p", NAMES("c"), NAMES("p"));
	attr_ints(n, "kernel_shape", 1, (const int64_t[]){ 2 });
	attr_ints(n, "strides", 1, (const int64_t[]){ 2 });
	n = node(g, "ConvTranspose", "u", NAMES("p", "W2"), NAMES("u"));
	attr_ints(n, "strides", 1, (const int64_t[]){ 2 });
	node(g, "Shape", "s", NAMES("u"), NAMES("s"));
	node(g, "Gather", "w", NAMES("s", "k2"), NAMES("w"));
	node(g, "Range", "r", NAMES("k0", "w", "k1"), NAMES("r"));
	node(g, "Less", "lt", NAMES("r", "k3"), NAMES("lt"));
	node(g, "Not", "nt", NAMES("lt"), NAMES("nt"));
	node(g, "And", "an", NAMES("lt", "nt"), NAMES("an"));
	node(g, "Or", "or", NAMES("an", "lt"), NAMES("m"));
	attr_int(node(g, "Cast", "cb", NAMES("m"), NAMES("mb")), "to",
		 ONNX__TENSOR_PROTO__DATA_TYPE__BOOL);
	node(g, "Where", "wh", NAMES("mb", "lo", "hi"), NAMES("q"));
	node(g, "Expand", "ex", NAMES("q", "s"), NAMES("qx"));
	node(g, "Add", "add", NAMES("u", "qx"), NAMES("y"));
	g->outs[g->nr_outs++] = vinfo("y", 3, (const int64_t[]){ 1, 2, 8 }, NULL);
}

/* Imports buf cut at every byte and with `mutations` random byte changes; counts both outcomes. */
static void fuzz(struct __test_metadata *_metadata, const uint8_t *buf, size_t len, int mutations,
		 int *ok, int *refused)
{
	uint8_t *copy = malloc(len);
	struct onnx_import im;

	ASSERT_NE(NULL, copy);
	for (size_t cut = 0; cut < len + (size_t)mutations; cut++) {
		struct coloc_err err = { 0 };
		size_t n = cut < len ? cut : len;

		memcpy(copy, buf, n);
		if (cut >= len) {
			int flips = 1 + (int)((rnd() + 1) * 2);

			for (int k = 0; k < flips; k++)
				copy[(size_t)((rnd() + 1) * 0.5f * (float)(len - 1))] =
					(uint8_t)((rnd() + 1) * 127.9f);
		}
		if (onnx_import_buffer("fuzz.onnx", copy, n, NULL, &im, &err)) {
			EXPECT_NE(0, err.msg[0]);
			(*refused)++;
		} else {
			onnx_import_free(&im);
			(*ok)++;
		}
	}
	free(copy);
}

/*
 * Every truncation of three valid files, and random byte mutations, are
 * imported or refused with a message: never a crash (ASan/UBSan under
 * SANITIZE=1).
 */
TEST(onnx_import__fuzz_truncations_and_mutations)
{
	struct gb g = { 0 }, g2 = { 0 }, g3 = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *w, *b, *bn;
	uint8_t *buf;
	size_t len;
	int ok = 0, refused = 0;

	conv_bn_relu(&g, &w, &b, &bn);
	buf = pack(&g, &len);
	fuzz(_metadata, buf, len, 3000, &ok, &refused);
	TH_LOG("conv+bn+relu, %zu bytes: %d imported, %d refused", len, ok, refused);
	EXPECT_GT(refused, 0);
	fuzz_graph(&g2);
	/* the unfuzzed graph imports: the loop starts from a valid file */
	ASSERT_EQ(0, import(&g2, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(MODEL_ACT_GELU, im.model->layers[im.model->nr_layers - 4].act)
	TH_LOG("%s", im.text);
	onnx_import_free(&im);
	buf = pack(&g2, &len);
	ok = refused = 0;
	fuzz(_metadata, buf, len, 3000, &ok, &refused);
	TH_LOG("attention-like, %zu bytes: %d imported, %d refused", len, ok, refused);
	EXPECT_GT(refused, 0);
	fuzz_graph_1d(&g3);
	ASSERT_EQ(0, import(&g3, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(MODEL_OP_ADD, im.model->layers[im.model->nr_layers - 1].op) TH_LOG("%s", im.text);
	onnx_import_free(&im);
	buf = pack(&g3, &len);
	ok = refused = 0;
	fuzz(_metadata, buf, len, 3000, &ok, &refused);
	TH_LOG("1-D windows and a mask, %zu bytes: %d imported, %d refused", len, ok, refused);
	EXPECT_GT(refused, 0);
	arena_free();
}

/* ---- .onnx at every entry point (model_open.h) ------------------------------ */

/* Writes g packed to DIR/NAME; the path goes to path. */
static int write_onnx(struct gb *g, const char *dir, const char *name, char *path, size_t len)
{
	size_t n;
	uint8_t *buf = pack(g, &n);
	FILE *f;
	int ok;

	snprintf(path, len, "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		return -errno;
	ok = fwrite(buf, 1, n, f) == n;
	return !fclose(f) && ok ? 0 : -EIO;
}

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
	char dir[] = "/tmp/coloc-onnx-open-XXXXXX", onnx[256], bad[256], bin[512], cmd[2048];
	char out[8192], path[300];
	struct coloc_err err = { 0 };
	struct model_source direct, files;
	struct gb g = { 0 }, u = { 0 };
	float *w, *b, *bn, *input, *a, *c, max_err, max_ref;
	int64_t na = 0, nc = 0;

	ASSERT_NE(NULL, mkdtemp(dir));
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
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	tu_run(cmd, NULL, 0);
	arena_free();
}

TEST(model_open__hash_keys_onnx_bytes_and_import_options)
{
	char dir[] = "/tmp/coloc-onnx-hash-XXXXXX", onnx[256];
	struct onnx_import_opts one = { .batch = 1 }, two = { .batch = 2 }, d1 = { .batch = 1 },
				d2 = { .batch = 1 };
	struct coloc_err err = { 0 };
	uint64_t h_file, h_none, h_one, h_two, h_d1, h_d2;
	struct gb g = { 0 };
	float *w, *b, *bn;

	ASSERT_NE(NULL, mkdtemp(dir));
	conv_bn_relu(&g, &w, &b, &bn);
	ASSERT_EQ(0, write_onnx(&g, dir, "m.onnx", onnx, sizeof(onnx)));
	ASSERT_EQ(0, onnx_dim_parse(&d1, "seq=8", &err));
	ASSERT_EQ(0, onnx_dim_parse(&d1, "heads=2", &err));
	ASSERT_EQ(0, onnx_dim_parse(&d2, "heads=2", &err));
	ASSERT_EQ(0, onnx_dim_parse(&d2, "seq=8", &err));
	ASSERT_EQ(0, profile_hash_file(onnx, &h_file));
	ASSERT_EQ(0, model_open_hash(onnx, NULL, &h_none));
	ASSERT_EQ(0, model_open_hash(onnx, &one, &h_one));
	ASSERT_EQ(0, model_open_hash(onnx, &two, &h_two));
	ASSERT_EQ(0, model_open_hash(onnx, &d1, &h_d1));
	ASSERT_EQ(0, model_open_hash(onnx, &d2, &h_d2));
	/* the defaults keep the hash of the file's bytes, as coloc-profile always keyed */
	EXPECT_EQ(h_file, h_none);
	EXPECT_EQ(h_file, h_one);
	EXPECT_NE(h_file, h_two);
	EXPECT_NE(h_file, h_d1);
	EXPECT_EQ(h_d1, h_d2); /* the order of --dim does not matter */
	EXPECT_EQ(-ENOENT, model_open_hash("/nonexistent/m.onnx", NULL, &h_none));
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
	uint64_t end = tu_now_ns() + (uint64_t)timeout_ms * 1000000ull;

	for (;;) {
		struct serving_tenant_info info;
		struct pollfd pfd[16];
		int fds[16], n, wait;

		if (flag && *flag)
			return true;
		if (ready_tenant && !serving_tenant_info(s, ready_tenant, &info) &&
		    !strcmp(serving_state_name(info.state), "ready"))
			return true;
		if (tu_now_ns() >= end)
			return false;
		n = serving_fds(s, fds, 16);
		for (int i = 0; i < n; i++)
			pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
		wait = serving_next_timeout_ms(s);
		if (wait < 0 || wait > 100)
			wait = 100;
		if (poll(pfd, n, wait) <= 0) {
			serving_tick(s);
			continue;
		}
		for (int i = 0; i < n; i++)
			if (pfd[i].revents)
				serving_handle_fd(s, pfd[i].fd);
	}
}

TEST(serving__admits_and_serves_an_onnx_tenant)
{
	char dir[] = "/tmp/coloc-onnx-serve-XXXXXX", onnx[256], bad[256], bin[512], cmd[2048];
	char out[8192];
	struct coloc_err err = { 0 };
	struct serving_config cfg = { .executor = tu_bin("coloc-executor", bin, sizeof(bin)) };
	struct serving_tenant_spec spec = { .name = "conv", .weights_fd = -1,
					    .qos_ns = 60000000000ull };
	struct model_source src;
	struct serving *s = NULL;
	struct served r = { 0 };
	struct gb g = { 0 }, u = { 0 };
	float *w, *b, *bn, *input, *want, max_err, max_ref;
	int64_t n = 0;

	ASSERT_NE(NULL, mkdtemp(dir));
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
	snprintf(cmd, sizeof(cmd), "%s %s -o %s/m.profile --iters 1 --levels 50 --cache-dir %s",
		 tu_bin("coloc-profile", bin, sizeof(bin)), onnx, dir, dir);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s: %s", cmd, out);
	snprintf(cmd, sizeof(cmd), "test -s %s/m.profile", dir);
	EXPECT_EQ(0, tu_run(cmd, NULL, 0));
	snprintf(cmd, sizeof(cmd), "%s %s -o %s/erf.profile --iters 1 --levels 50 --cache-dir %s",
		 bin, bad, dir, dir);
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
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	tu_run(cmd, NULL, 0);
	arena_free();
}

TEST_HARNESS_MAIN
