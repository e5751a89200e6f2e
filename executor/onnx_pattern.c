// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Multi-node patterns of the ONNX importer, matched at their first node
 * before it is folded or lowered. The erf form of GELU as PyTorch exports
 * it (opsets before 20 have no Gelu op),
 *
 *   y = Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5)
 *
 * (Div by sqrt 2 or Mul by 1/sqrt 2; the operands of Add and Mul in either
 * order; the 0.5 applied last or to the Add's result) becomes one coloc
 * gelu: the act= of the fc/conv/add/mul computing x when nothing else
 * reads x, else a standalone act layer. And LayerNormalization over the
 * last axis as exporters before opset 17 spell it (ReduceMean, Sub, Pow 2,
 * ReduceMean, Add eps, Sqrt, Div, then optionally Mul gamma and Add beta)
 * becomes one layer_norm. Every intermediate value must have exactly its
 * readers inside the pattern, so nothing outside the pattern sees it.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* The first node after `from` that reads name, from the reader index. */
static long next_reader(struct onnx_ctx *c, const char *name, size_t from)
{
	struct onnx_value *v = onnx_value_find(c, name);

	for (int k = 0; v && k < v->nr_readers; k++)
		if (c->readers[v->rd_off + k] > (long)from)
			return c->readers[v->rd_off + k];
	return -1;
}

/* Whether the tensor t declares at most max_elems values (by its dims alone). */
static bool dims_at_most(const Onnx__TensorProto *t, int64_t max_elems)
{
	int64_t n = onnx_tensor_elems(t, max_elems < INT64_MAX ? max_elems + 1 : max_elems);

	return n >= 0 && n <= max_elems;
}

/*
 * A float constant of at most max_elems values (a copy the caller frees),
 * from a value already folded or, for the constants a pattern reads
 * further on, straight from the Constant node that makes it.
 */
static bool const_tensor_at_most(struct onnx_ctx *c, const char *name, int64_t max_elems,
				 struct model_shape *s, double **data)
{
	struct onnx_value *val = onnx_value_find(c, name);

	if (!val)
		return false;
	if (val->defined) {
		int64_t n = onnx_elems(&val->shape);

		if (!val->data || n > max_elems)
			return false;
		*data = malloc((size_t)(n ? n : 1) * sizeof(double));
		if (!*data)
			return false;
		memcpy(*data, val->data, (size_t)n * sizeof(double));
		*s = val->shape;
		return true;
	}
	for (size_t j = 0; j < c->g->n_node; j++) {
		const Onnx__NodeProto *n = c->g->node[j];
		const Onnx__AttributeProto *a;
		bool is_int;

		if (n->n_output != 1 || strcmp(n->output[0], name))
			continue;
		a = n->op_type && !strcmp(n->op_type, "Constant") ? onnx_attr(n, "value") : NULL;
		if (!a || !a->t ||
		    (a->t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
		     a->t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT64) ||
		    !dims_at_most(a->t, max_elems))
			return false;
		/* decoding only to look: errors here mean "no match", the node reports them later */
		if (onnx_tensor_decode(c, a->t, s, data, &is_int)) {
			coloc_err_clear(c->err);
			return false;
		}
		return true;
	}
	return false;
}

static bool const_tensor(struct onnx_ctx *c, const char *name, struct model_shape *s, double **data)
{
	return const_tensor_at_most(c, name, INT64_MAX, s, data);
}

/* A constant of one value: a larger one is refused before it is copied or decoded. */
static bool const_scalar(struct onnx_ctx *c, const char *name, double *v)
{
	struct model_shape s;
	double *d;
	bool ok;

	if (!const_tensor_at_most(c, name, 1, &s, &d))
		return false;
	ok = onnx_elems(&s) == 1;
	if (ok)
		*v = d[0];
	free(d);
	return ok;
}

/* A single-output node of this op whose other input (of two) is name. */
static const char *other_input(const Onnx__NodeProto *n, const char *op, const char *name)
{
	if (!n->op_type || strcmp(n->op_type, op) || n->n_input != 2 || n->n_output != 1)
		return NULL;
	if (!strcmp(n->input[0], name))
		return n->input[1];
	if (!strcmp(n->input[1], name))
		return n->input[0];
	return NULL;
}

static bool only_reader(struct onnx_ctx *c, const char *name)
{
	struct onnx_value *v = onnx_value_find(c, name);

	return v && v->uses == 1;
}

/* The node reading name (its only reader), with op and the other input; -1 if none. */
static long step(struct onnx_ctx *c, const char *name, size_t from, const char *op,
		 const char **other)
{
	long j;

	if (!only_reader(c, name))
		return -1;
	j = next_reader(c, name, from);
	if (j < 0)
		return -1;
	*other = other_input(c->g->node[j], op, name);
	return *other ? j : -1;
}

static bool near(double v, double want)
{
	return fabs(v - want) <= 1e-4 * fabs(want);
}

/* Matches GELU at node i; fills the five node indices, the last first. */
static bool match_gelu(struct onnx_ctx *c, size_t i, long *nodes)
{
	const Onnx__NodeProto *n = c->g->node[i];
	const char *x, *o, *out;
	double k;
	long j;

	if (n->n_input != 2 || n->n_output != 1 || !n->op_type)
		return false;
	x = n->input[0];
	if (!const_scalar(c, n->input[1], &k) ||
	    !((!strcmp(n->op_type, "Div") && near(k, M_SQRT2)) ||
	      (!strcmp(n->op_type, "Mul") && near(k, M_SQRT1_2))))
		return false;
	if (!only_reader(c, n->output[0]) || (j = next_reader(c, n->output[0], i)) < 0 ||
	    strcmp(c->g->node[j]->op_type ? c->g->node[j]->op_type : "", "Erf") ||
	    c->g->node[j]->n_input != 1 || c->g->node[j]->n_output != 1)
		return false;
	nodes[1] = j;
	out = c->g->node[j]->output[0];
	if ((j = step(c, out, (size_t)j, "Add", &o)) < 0 || !const_scalar(c, o, &k) || !near(k, 1))
		return false;
	nodes[2] = j;
	out = c->g->node[j]->output[0];
	if ((j = step(c, out, (size_t)j, "Mul", &o)) < 0)
		return false;
	nodes[3] = j;
	if (!strcmp(o, x)) {
		/* x * (1 + erf) then * 0.5 */
		out = c->g->node[j]->output[0];
		j = step(c, out, (size_t)j, "Mul", &o);
		if (j < 0 || !const_scalar(c, o, &k) || !near(k, 0.5))
			return false;
	} else {
		/* (1 + erf) * 0.5 then * x */
		if (!const_scalar(c, o, &k) || !near(k, 0.5))
			return false;
		out = c->g->node[j]->output[0];
		j = step(c, out, (size_t)j, "Mul", &o);
		if (j < 0 || strcmp(o, x))
			return false;
	}
	nodes[4] = j;
	nodes[0] = (long)i;
	return true;
}

/*
 * Lowers a matched activation pattern that reads x (twice: node i's read,
 * which the driver counts, and one more inside the pattern) and ends at
 * node `last`: the act= of the layer computing x when the pattern holds its
 * only reads, else a standalone act layer.
 */
static int lower_pattern_act(struct onnx_ctx *c, struct onnx_value *x, const Onnx__NodeProto *last,
			     enum model_act act, const char *what)
{
	struct onnx_layer *l = &c->layers[x->layer];
	int ret;

	c->node = last;
	if (l->uses == 2 && !l->read && l->l.act == MODEL_ACT_NONE && onnx_takes_act(l->l.op)) {
		l->l.act = act;
		snprintf(l->origin + strlen(l->origin), sizeof(l->origin) - strlen(l->origin),
			 " + %s", what);
		ret = onnx_output_layer(c, last, 0, x->layer);
	} else {
		ret = onnx_layer_add(c, MODEL_OP_ACT,
				     last->name && last->name[0] ? last->name : last->output[0],
				     &l);
		if (!ret) {
			l->l.nr_inputs = 1;
			l->l.inputs[0] = x->layer;
			l->l.out = x->shape;
			l->l.act = act;
			snprintf(l->origin, sizeof(l->origin), "%s", what);
			ret = onnx_output_layer(c, last, 0, c->nr_layers - 1);
		}
	}
	if (ret)
		return ret;
	/* the second read of x; the driver counts the first, node i's */
	c->layers[x->layer].uses--;
	return 1;
}

static int try_gelu(struct onnx_ctx *c, size_t i, bool *skip)
{
	long nodes[5];
	struct onnx_value *x;
	int ret;

	if (!match_gelu(c, i, nodes))
		return 0;
	x = onnx_input(c, c->g->node[i], 0);
	if (!x || x->layer < 0)
		return 0;
	ret = lower_pattern_act(c, x, c->g->node[nodes[4]], MODEL_ACT_GELU,
				"GELU (Div, Erf, Add, Mul, Mul)");
	for (int k = 1; ret == 1 && k < 5; k++)
		skip[nodes[k]] = true;
	return ret;
}

/* Clip's bounds: attributes before opset 11, constant inputs from it on. */
static bool clip_bounds(struct onnx_ctx *c, const Onnx__NodeProto *n, double *lo, double *hi)
{
	const Onnx__AttributeProto *a;

	*lo = -INFINITY;
	*hi = INFINITY;
	if (c->opset < 11) {
		a = onnx_attr(n, "min");
		if (a)
			*lo = a->f;
		a = onnx_attr(n, "max");
		if (a)
			*hi = a->f;
		return true;
	}
	return (n->n_input < 2 || !n->input[1][0] || const_scalar(c, n->input[1], lo)) &&
	       (n->n_input < 3 || !n->input[2][0] || const_scalar(c, n->input[2], hi));
}

/*
 * HardSwish as exporters without the op (PaddlePaddle's before opset 14)
 * spell it: Div(Mul(x, Clip(Add(x, 3), 0, 6)), 6), the operands of Add and
 * Mul in either order, the Div possibly a Mul by 1/6.
 */
static int try_hard_swish(struct onnx_ctx *c, size_t i, bool *skip)
{
	const Onnx__NodeProto *n = c->g->node[i];
	struct onnx_value *x;
	const char *xn, *o, *out;
	double k, lo, hi;
	long nodes[4], j;

	if (!n->op_type || strcmp(n->op_type, "Add") || n->n_input != 2 || n->n_output != 1)
		return 0;
	xn = const_scalar(c, n->input[1], &k) ? n->input[0] : n->input[1];
	if (!const_scalar(c, xn == n->input[0] ? n->input[1] : n->input[0], &k) || k != 3)
		return 0;
	out = n->output[0];
	if (!only_reader(c, out) || (j = next_reader(c, out, i)) < 0 ||
	    strcmp(c->g->node[j]->op_type ? c->g->node[j]->op_type : "", "Clip") ||
	    c->g->node[j]->n_output != 1 || strcmp(c->g->node[j]->input[0], out) ||
	    !clip_bounds(c, c->g->node[j], &lo, &hi) || lo != 0 || hi != 6)
		return 0;
	nodes[1] = j;
	out = c->g->node[j]->output[0];
	if ((j = step(c, out, (size_t)j, "Mul", &o)) < 0 || strcmp(o, xn))
		return 0;
	nodes[2] = j;
	out = c->g->node[j]->output[0];
	if ((j = step(c, out, (size_t)j, "Div", &o)) >= 0) {
		if (strcmp(c->g->node[j]->input[1], o) || !const_scalar(c, o, &k) || k != 6)
			return 0;
	} else if ((j = step(c, out, (size_t)nodes[2], "Mul", &o)) < 0 || !const_scalar(c, o, &k) ||
		   !near(k, 1.0 / 6)) {
		return 0;
	}
	nodes[3] = j;
	x = onnx_value_find(c, xn);
	if (!x || x->layer < 0)
		return 0;
	/* node i reads x through its input 0 or 1: the driver counts that read */
	j = lower_pattern_act(c, x, c->g->node[nodes[3]], MODEL_ACT_HARD_SWISH,
			      "HardSwish (Add, Clip, Mul, Div)");
	for (int m = 1; j == 1 && m < 4; m++)
		skip[nodes[m]] = true;
	return (int)j;
}

/*
 * A gate of x by a function of itself, Mul(x, Sigmoid(x)) (swish, SiLU) or
 * Mul(x, HardSigmoid(x) with alpha 1/6 and beta 1/2) (hard swish), matched
 * at the Sigmoid.
 */
static int try_self_gate(struct onnx_ctx *c, size_t i, bool *skip)
{
	const Onnx__NodeProto *n = c->g->node[i];
	const Onnx__AttributeProto *a, *b;
	struct onnx_value *x;
	enum model_act act;
	const char *o;
	long j;

	if (!n->op_type || n->n_input != 1 || n->n_output != 1)
		return 0;
	if (!strcmp(n->op_type, "Sigmoid")) {
		act = MODEL_ACT_SWISH;
	} else if (!strcmp(n->op_type, "HardSigmoid")) {
		a = onnx_attr(n, "alpha");
		b = onnx_attr(n, "beta");
		if (!a || !b || !near(a->f, 1.0 / 6) || b->f != 0.5f)
			return 0;
		act = MODEL_ACT_HARD_SWISH;
	} else {
		return 0;
	}
	if ((j = step(c, n->output[0], i, "Mul", &o)) < 0 || strcmp(o, n->input[0]))
		return 0;
	x = onnx_input(c, n, 0);
	if (!x || x->layer < 0)
		return 0;
	j = lower_pattern_act(c, x, c->g->node[j], act,
			      act == MODEL_ACT_SWISH ? "swish (Sigmoid, Mul)" :
						       "HardSwish (HardSigmoid, Mul)");
	if (j == 1)
		skip[next_reader(c, n->output[0], i)] = true;
	return (int)j;
}

/* ReduceMean of in over its last axis (of rank dims), keepdims. */
static bool reduce_last(struct onnx_ctx *c, long j, const char *in, int rank)
{
	const Onnx__NodeProto *n = c->g->node[j];
	const Onnx__AttributeProto *a;
	struct model_shape s;
	double *d;
	int64_t ax;

	if (!n->op_type || strcmp(n->op_type, "ReduceMean") || n->n_output != 1 || n->n_input < 1 ||
	    strcmp(n->input[0], in))
		return false;
	a = onnx_attr(n, "keepdims");
	if (a && a->i != 1)
		return false;
	a = onnx_attr(n, "axes");
	if (a) {
		if (a->n_ints != 1)
			return false;
		ax = a->ints[0];
	} else {
		/* opset 18: the axes are input 1 */
		if (n->n_input < 2 || !const_tensor(c, n->input[1], &s, &d))
			return false;
		ax = onnx_elems(&s) == 1 ? onnx_i64(d[0]) : rank;
		free(d);
	}
	return ax == -1 || ax == rank - 1;
}

/* The two readers of name after node from. */
static bool two_readers(struct onnx_ctx *c, const char *name, size_t from, long *r)
{
	struct onnx_value *v = onnx_value_find(c, name);

	if (!v || v->uses != 2)
		return false;
	r[0] = next_reader(c, name, from);
	r[1] = r[0] < 0 ? -1 : next_reader(c, name, (size_t)r[0]);
	return r[1] >= 0;
}

struct ln_match {
	long nodes[9];
	int nr;
	double eps;
	double *gamma, *beta; /* NULL: 1 and 0 */
};

/*
 * LayerNormalization as exporters before opset 17 spell it:
 *   d = Sub(x, ReduceMean(x)); y = Div(d, Sqrt(Add(ReduceMean(Pow(d, 2)), eps)))
 *   [* gamma] [+ beta]
 */
static bool match_layer_norm(struct onnx_ctx *c, size_t i, int rank, int64_t dim,
			     struct ln_match *m)
{
	const Onnx__NodeProto *n = c->g->node[i];
	const char *x = n->n_input ? n->input[0] : "", *d, *o, *out;
	long j, r[2], pw, dv;
	struct model_shape s;
	double k;

	if (!reduce_last(c, (long)i, x, rank) || !only_reader(c, n->output[0]))
		return false;
	j = next_reader(c, n->output[0], i);
	if (j < 0 || strcmp(c->g->node[j]->op_type ? c->g->node[j]->op_type : "", "Sub") ||
	    c->g->node[j]->n_input != 2 || strcmp(c->g->node[j]->input[0], x) ||
	    strcmp(c->g->node[j]->input[1], n->output[0]) || c->g->node[j]->n_output != 1)
		return false;
	m->nodes[0] = (long)i;
	m->nodes[1] = j;
	d = c->g->node[j]->output[0];
	if (!two_readers(c, d, (size_t)j, r))
		return false;
	pw = other_input(c->g->node[r[0]], "Pow", d) ? r[0] : r[1];
	dv = pw == r[0] ? r[1] : r[0];
	if (!other_input(c->g->node[pw], "Pow", d) || strcmp(c->g->node[pw]->input[0], d) ||
	    !const_scalar(c, c->g->node[pw]->input[1], &k) || k != 2)
		return false;
	m->nodes[2] = pw;
	out = c->g->node[pw]->output[0];
	if (!only_reader(c, out) || (j = next_reader(c, out, (size_t)pw)) < 0 ||
	    !reduce_last(c, j, out, rank))
		return false;
	m->nodes[3] = j;
	out = c->g->node[j]->output[0];
	if ((j = step(c, out, (size_t)j, "Add", &o)) < 0 || !const_scalar(c, o, &m->eps) ||
	    !(m->eps >= 1e-30 && m->eps <= 1))
		return false;
	m->nodes[4] = j;
	out = c->g->node[j]->output[0];
	if (!only_reader(c, out) || (j = next_reader(c, out, (size_t)j)) < 0 ||
	    strcmp(c->g->node[j]->op_type ? c->g->node[j]->op_type : "", "Sqrt") ||
	    c->g->node[j]->n_input != 1 || c->g->node[j]->n_output != 1)
		return false;
	m->nodes[5] = j;
	out = c->g->node[j]->output[0];
	if (!only_reader(c, out) || next_reader(c, out, (size_t)j) != dv ||
	    !other_input(c->g->node[dv], "Div", out) || strcmp(c->g->node[dv]->input[0], d))
		return false;
	m->nodes[6] = dv;
	m->nr = 7;
	/* the affine part, when there is one: Mul by gamma [D], then Add of beta [D] */
	out = c->g->node[dv]->output[0];
	if ((j = step(c, out, (size_t)dv, "Mul", &o)) >= 0 && const_tensor(c, o, &s, &m->gamma)) {
		if (onnx_elems(&s) != dim || s.ndims > 1 + (s.ndims > 0 && s.dims[0] == 1)) {
			free(m->gamma);
			m->gamma = NULL;
			return true;
		}
		m->nodes[m->nr++] = j;
		out = c->g->node[j]->output[0];
		if ((j = step(c, out, (size_t)j, "Add", &o)) >= 0 &&
		    const_tensor(c, o, &s, &m->beta)) {
			if (onnx_elems(&s) != dim ||
			    s.ndims > 1 + (s.ndims > 0 && s.dims[0] == 1)) {
				free(m->beta);
				m->beta = NULL;
				return true;
			}
			m->nodes[m->nr++] = j;
		}
	}
	return true;
}

static int try_layer_norm(struct onnx_ctx *c, size_t i, bool *skip)
{
	const Onnx__NodeProto *last;
	struct ln_match m = { .gamma = NULL };
	struct onnx_value *x = onnx_input(c, c->g->node[i], 0);
	struct onnx_layer *l;
	int64_t dim;
	int ret;

	if (!x || x->layer < 0 || x->shape.ndims < 1)
		return 0;
	dim = x->shape.dims[x->shape.ndims - 1];
	if (!match_layer_norm(c, i, x->shape.ndims, dim, &m)) {
		free(m.gamma);
		free(m.beta);
		return 0;
	}
	last = c->g->node[m.nodes[m.nr - 1]];
	c->node = last;
	ret = onnx_layer_add(c, MODEL_OP_LAYER_NORM,
			     last->name && last->name[0] ? last->name : last->output[0], &l);
	if (!ret) {
		l->l.nr_inputs = 1;
		l->l.inputs[0] = x->layer;
		l->l.out = x->shape;
		l->l.eps = (float)m.eps;
		snprintf(l->origin, sizeof(l->origin),
			 "LayerNorm (ReduceMean, Sub, Pow, ReduceMean, "
			 "Add, Sqrt, Div%s)",
			 m.nr == 9 ? ", Mul, Add" :
			 m.nr == 8 ? ", Mul" :
				     "");
		l->nt[0] = l->nt[1] = dim;
		l->t[0] = malloc((size_t)dim * sizeof(float));
		l->t[1] = malloc((size_t)dim * sizeof(float));
		if (!l->t[0] || !l->t[1])
			ret = coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
		for (int64_t k = 0; !ret && k < dim; k++) {
			l->t[0][k] = m.gamma ? (float)m.gamma[k] : 1.0f;
			l->t[1][k] = m.beta ? (float)m.beta[k] : 0.0f;
		}
	}
	if (!ret)
		ret = onnx_output_layer(c, last, 0, c->nr_layers - 1);
	free(m.gamma);
	free(m.beta);
	if (ret)
		return ret;
	/* the second read of x (the Sub); the driver counts the first, node i's */
	c->layers[x->layer].uses--;
	for (int k = 1; k < m.nr; k++)
		skip[m.nodes[k]] = true;
	return 1;
}

int onnx_pattern(struct onnx_ctx *c, size_t i, bool *skip)
{
	static int (*const patterns[])(struct onnx_ctx * c, size_t i, bool *skip) = {
		try_gelu,
		try_hard_swish,
		try_self_gate,
		try_layer_norm,
	};
	const Onnx__NodeProto *n = c->g->node[i];
	struct onnx_value *x = n->n_input ? onnx_input(c, n, 0) : NULL;
	int ret = 0;

	/* a computed scalar goes node by node: the patterns' layers are of its shape */
	if (x && x->layer >= 0 && !x->shape.ndims)
		return 0;
	for (size_t k = 0; !ret && k < sizeof(patterns) / sizeof(patterns[0]); k++)
		ret = patterns[k](c, i, skip);
	return ret;
}
