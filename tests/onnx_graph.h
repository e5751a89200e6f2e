/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Building ONNX graphs in the onnx_*_test.c files with protobuf-c: nodes,
 * attributes, initializers and value infos allocated in an arena freed by
 * arena_free(), packed into an ONNX file image, imported, and run through
 * the oneDNN executor against the plain-C reference. Static inline: each
 * test file is one program and takes what it uses; include it after
 * kselftest_harness.h (run_compare asserts).
 */
#ifndef COLOC_TESTS_ONNX_GRAPH_H
#define COLOC_TESTS_ONNX_GRAPH_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "executor.h"
#include "onnx.pb-c.h"
#include "onnx_import.h"
#include "reference.h"

#define TOL 1e-4f /* relative to max |ref|, as the other executor tests */
#define ARENA_MAX 4096

/* ---- building ONNX graphs with protobuf-c ---------------------------------- */

static void *arena[ARENA_MAX];

static int arena_nr;

static inline void *mem(size_t n)
{
	void *p = calloc(1, n);

	if (p && arena_nr < ARENA_MAX)
		arena[arena_nr++] = p;
	return p;
}

static inline void arena_free(void)
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

static inline float rnd(void)
{
	rnd_state = rnd_state * 1664525u + 1013904223u;
	return (float)(rnd_state >> 8) / 16777216.0f * 2.0f - 1.0f;
}

static inline float *rnd_fill(int64_t n, float lo, float hi)
{
	float *f = mem((size_t)n * sizeof(float));

	for (int64_t i = 0; i < n; i++)
		f[i] = lo + (rnd() + 1.0f) * 0.5f * (hi - lo);
	return f;
}

static inline void init_f(struct gb *g, const char *name, int nd, const int64_t *dims,
			  const float *v)
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

static inline void init_i64(struct gb *g, const char *name, int nd, const int64_t *dims, int64_t n,
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
static inline Onnx__ValueInfoProto *vinfo(const char *name, int nd, const int64_t *dims,
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
static inline const char *const *names(const char *const *l)
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
static inline Onnx__NodeProto *node(struct gb *g, const char *op, const char *name,
				    const char *const *ins, const char *const *outs)
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

static inline Onnx__AttributeProto *attr(Onnx__NodeProto *n, const char *name,
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

static inline void attr_int(Onnx__NodeProto *n, const char *name, int64_t v)
{
	Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);

	a->has_i = 1;
	a->i = v;
}

static inline void attr_float(Onnx__NodeProto *n, const char *name, float v)
{
	Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);

	a->has_f = 1;
	a->f = v;
}

static inline void attr_ints(Onnx__NodeProto *n, const char *name, int nr, const int64_t *v)
{
	Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);

	a->n_ints = (size_t)nr;
	a->ints = mem((size_t)nr * sizeof(int64_t));
	memcpy(a->ints, v, (size_t)nr * sizeof(int64_t));
}

static inline void attr_str(Onnx__NodeProto *n, const char *name, const char *v)
{
	Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);

	a->has_s = 1;
	a->s.data = (uint8_t *)v;
	a->s.len = strlen(v);
}

/* Packs the graph into an ONNX file image (malloc'ed, in the arena). */
static inline uint8_t *pack(struct gb *g, size_t *len)
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

static inline int import(struct gb *g, struct onnx_import *im, struct coloc_err *err)
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
static inline void run_compare_output(struct __test_metadata *_metadata, struct onnx_import *im,
				      int which, const float *input, const float *want, int64_t n)
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

static inline void run_compare(struct __test_metadata *_metadata, struct onnx_import *im,
			       const float *input, const float *want, int64_t n)
{
	run_compare_output(_metadata, im, 0, input, want, n);
}

static inline int count_ops(const struct model *m, enum model_op op)
{
	int k = 0;

	for (int i = 0; i < m->nr_layers; i++)
		k += m->layers[i].op == op;
	return k;
}

/* ---- the graphs ------------------------------------------------------------ */

static const int64_t X_DIMS[4] = { 1, 3, 8, 8 }, W_DIMS[4] = { 4, 3, 3, 3 }, C4[1] = { 4 };

/* x[1,3,8,8] -> Conv(4, 3x3, pad 1, bias) -> BatchNormalization(eps 1e-3) -> Relu */
static inline void conv_bn_relu(struct gb *g, float **w, float **b, float **bn)
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

/* A Constant node made in the graph, placed where the caller adds it. */
static inline void const_node(struct gb *g, const char *out, float v)
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

/* ---- .onnx at every entry point (model_open.h) ------------------------------ */

/* Writes g packed to DIR/NAME; the path goes to path. */
static inline int write_onnx(struct gb *g, const char *dir, const char *name, char *path,
			     size_t len)
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

/*
 * Moves initializer 'name' of g into an external data file: its floats at
 * offset 16 of DIR/file (after 16 bytes of padding), the TensorProto
 * pointing there with location loc (what the model says, which may
 * differ from file), offset 16 and length len_bytes (-1: no length entry).
 */
static inline void externalize(struct gb *g, const char *name, const char *dir, const char *file,
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

#endif /* COLOC_TESTS_ONNX_GRAPH_H */
