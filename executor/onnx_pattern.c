// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Multi-node patterns of the ONNX importer, matched at their first node
 * before it is folded or lowered: the erf form of GELU as PyTorch exports
 * it (opsets before 20 have no Gelu op),
 *
 *   y = Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5)
 *
 * (Div by sqrt 2 or Mul by 1/sqrt 2; the operands of Add and Mul in either
 * order; the 0.5 applied last or to the Add's result) becomes one coloc
 * gelu: the act= of the fc/conv/add/mul computing x when nothing else
 * reads x, else a standalone act layer. Every intermediate value must have
 * exactly one reader, so nothing outside the pattern sees it.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* The node after `from` that reads name (intermediates have one reader). */
static long next_reader(struct onnx_ctx *c, const char *name, size_t from)
{
	for (size_t j = from + 1; j < c->g->n_node; j++)
		for (size_t k = 0; k < c->g->node[j]->n_input; k++)
			if (!strcmp(c->g->node[j]->input[k], name))
				return (long)j;
	return -1;
}

/*
 * A scalar constant, from a value already folded or, for the constants a
 * pattern reads further on, straight from the Constant node that makes it.
 */
static bool const_scalar(struct onnx_ctx *c, const char *name, double *v)
{
	struct onnx_value *val = onnx_value_find(c, name);

	if (!val)
		return false;
	if (val->defined)
		return val->data && onnx_elems(&val->shape) == 1 && ((*v = val->data[0]), true);
	for (size_t j = 0; j < c->g->n_node; j++) {
		const Onnx__NodeProto *n = c->g->node[j];
		const Onnx__AttributeProto *a;
		struct model_shape s;
		bool is_int, ok;
		double *d;

		if (n->n_output != 1 || strcmp(n->output[0], name))
			continue;
		a = n->op_type && !strcmp(n->op_type, "Constant") ? onnx_attr(n, "value") : NULL;
		if (!a || !a->t || a->t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
			return false;
		/* decoding only to look: errors here mean "no match", the node reports them later */
		if (onnx_tensor_decode(c, a->t, &s, &d, &is_int)) {
			coloc_err_clear(c->err);
			return false;
		}
		ok = onnx_elems(&s) == 1;
		if (ok)
			*v = d[0];
		free(d);
		return ok;
	}
	return false;
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

int onnx_pattern(struct onnx_ctx *c, size_t i, bool *skip)
{
	long nodes[5];
	const Onnx__NodeProto *last;
	struct onnx_value *x;
	struct onnx_layer *l;
	int ret;

	if (!match_gelu(c, i, nodes))
		return 0;
	x = onnx_input(c, c->g->node[i], 0);
	if (!x || x->layer < 0)
		return 0;
	last = c->g->node[nodes[4]];
	c->node = last;
	l = &c->layers[x->layer];
	/* x is read twice inside the pattern: the Div and one Mul */
	if (l->uses == 2 && l->l.act == MODEL_ACT_NONE &&
	    (l->l.op == MODEL_OP_CONV || l->l.op == MODEL_OP_FC || l->l.op == MODEL_OP_ADD ||
	     l->l.op == MODEL_OP_MUL)) {
		l->l.act = MODEL_ACT_GELU;
		snprintf(l->origin + strlen(l->origin), sizeof(l->origin) - strlen(l->origin),
			 " + GELU (Div, Erf, Add, Mul, Mul)");
		ret = onnx_output_layer(c, last, 0, x->layer);
	} else {
		ret = onnx_layer_add(c, MODEL_OP_ACT,
				     last->name && last->name[0] ? last->name : last->output[0],
				     &l);
		if (!ret) {
			l->l.nr_inputs = 1;
			l->l.inputs[0] = x->layer;
			l->l.out = x->shape;
			l->l.act = MODEL_ACT_GELU;
			snprintf(l->origin, sizeof(l->origin), "GELU (Div, Erf, Add, Mul, Mul)");
			ret = onnx_output_layer(c, last, 0, c->nr_layers - 1);
		}
	}
	if (ret)
		return ret;
	/* the second read of x; the driver counts the first, node i's */
	c->layers[x->layer].uses--;
	for (int k = 1; k < 5; k++)
		skip[nodes[k]] = true;
	return 1;
}
