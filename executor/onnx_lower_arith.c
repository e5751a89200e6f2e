// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Lowering of the arithmetic ops: activations (fused as the act= of the conv,
 * deconv, fc or binary layer computing their input when it has no other
 * reader), elementwise binaries (a constant Add after MatMul/Gemm or a conv
 * becomes its bias, a constant Mul its scale; other constants become the
 * constant of a binary layer), MatMul and Gemm, Pow, Log, Where and the
 * comparisons (which coloc folds only on constants).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_lower.h"

static int const_binary(struct onnx_ctx *c, const Onnx__NodeProto *n, enum model_op op,
			struct onnx_value *x, struct onnx_value *k, bool const_first);

static bool broadcasts_onto(const struct model_shape *b, const struct model_shape *a);

/*
 * Clip with a bound computed at run time (openWakeWord's melspectrogram
 * floors its dB at max - 80, the max a ReduceMax of the same input): a max
 * of x and the computed min, or a min of x and the computed max, when the
 * other bound is absent or the infinity on its side (a constant); the
 * bound, a scalar by ONNX's definition, broadcasts onto x.
 */
static int clip_by_layer(struct onnx_ctx *c, const Onnx__NodeProto *n, struct onnx_value *x,
			 struct onnx_value *a, struct onnx_value *b)
{
	struct onnx_value *bound = a && a->layer >= 0 ? a : b, *other = bound == a ? b : a,
			  *ins[2] = { x, bound };
	struct onnx_layer *l;
	double open = bound == a ? INFINITY : -INFINITY;

	if (other && (!other->data || onnx_elems(&other->shape) != 1 || other->data[0] != open))
		return onnx_refuse(c, -EOPNOTSUPP,
				   "Clip with a computed bound and another bound (coloc lowers a "
				   "computed min or max alone to a max or min layer)");
	if (onnx_elems(&bound->shape) != 1 || !broadcasts_onto(&bound->shape, &x->shape))
		return onnx_refuse(c, -EOPNOTSUPP,
				   "a computed Clip bound must be one value that broadcasts "
				   "onto the input");
	return onnx_new_layer(c, n, bound == a ? MODEL_OP_MAX : MODEL_OP_MIN, ins, 2, &x->shape,
			      &l);
}

int onnx_lower_act(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = onnx_data_input(c, n, 0);
	enum model_act act;
	float alpha = 0, beta = 0;
	struct onnx_layer *l;
	int ret = 0;

	if (!x)
		return onnx_refuse(c, -EOPNOTSUPP, "the input is not computed by a layer");
	if (!strcmp(n->op_type, "Relu")) {
		act = MODEL_ACT_RELU;
	} else if (!strcmp(n->op_type, "Sigmoid")) {
		act = MODEL_ACT_SIGMOID;
	} else if (!strcmp(n->op_type, "Tanh")) {
		act = MODEL_ACT_TANH;
	} else if (!strcmp(n->op_type, "HardSwish")) {
		act = MODEL_ACT_HARD_SWISH;
	} else if (!strcmp(n->op_type, "HardSigmoid")) {
		act = MODEL_ACT_HARD_SIGMOID;
		ret = onnx_attr_float(c, n, "alpha", 0.2f, &alpha);
		if (!ret)
			ret = onnx_attr_float(c, n, "beta", 0.5f, &beta);
	} else if (!strcmp(n->op_type, "LeakyRelu")) {
		act = MODEL_ACT_LEAKY_RELU;
		ret = onnx_attr_float(c, n, "alpha", 0.01f, &alpha);
		if (!ret && !(alpha > 0 && alpha <= 1))
			return onnx_refuse(c, -EOPNOTSUPP, "alpha %g (coloc's slope is in (0, 1])",
					   alpha);
	} else {
		float lo = -INFINITY, hi = INFINITY;
		struct onnx_value *a = onnx_input(c, n, 1), *b = onnx_input(c, n, 2);

		if (c->opset >= 11 && ((a && a->layer >= 0) || (b && b->layer >= 0)))
			return clip_by_layer(c, n, x, a, b);
		if (c->opset < 11) {
			ret = onnx_attr_float(c, n, "min", -INFINITY, &lo);
			if (!ret)
				ret = onnx_attr_float(c, n, "max", INFINITY, &hi);
		} else if ((a && (!a->data || onnx_elems(&a->shape) != 1)) ||
			   (b && (!b->data || onnx_elems(&b->shape) != 1))) {
			return onnx_refuse(c, -EOPNOTSUPP, "Clip bounds must be constant scalars");
		} else {
			lo = a ? (float)a->data[0] : lo;
			hi = b ? (float)b->data[0] : hi;
		}
		if (ret)
			return ret;
		if (lo == 0 && hi == 6) {
			act = MODEL_ACT_RELU6;
		} else if (lo == 0 && isinf(hi) && hi > 0) {
			act = MODEL_ACT_RELU;
		} else if (isinf(lo) || isinf(hi)) {
			/* one open bound: a max or min with the other (both open: nothing) */
			double bound = isinf(hi) ? lo : hi;
			struct onnx_value k = { .data = &bound };

			if (isinf(lo) && isinf(hi))
				return onnx_alias(c, n, x);
			return const_binary(c, n, isinf(hi) ? MODEL_OP_MAX : MODEL_OP_MIN, x, &k,
					    false);
		} else if (lo <= hi && fabsf(lo) <= 1e30f && fabsf(hi) <= 1e30f) {
			act = MODEL_ACT_CLIP;
			alpha = lo;
			beta = hi;
		} else {
			return onnx_refuse(c, -EOPNOTSUPP,
					   "Clip's min is above its max, or a bound is beyond "
					   "+-1e30");
		}
	}
	if (ret)
		return ret;
	l = onnx_layer_of(c, x);
	if (onnx_fusible(c, x) && l->l.act == MODEL_ACT_NONE && onnx_takes_act(l->l.op)) {
		l->l.act = act;
		l->l.act_alpha = alpha;
		l->l.act_beta = beta;
		snprintf(l->origin + strlen(l->origin), sizeof(l->origin) - strlen(l->origin),
			 " + %.16s", n->op_type);
		return onnx_alias(c, n, x);
	}
	ret = onnx_new_layer(c, n, MODEL_OP_ACT, &x, 1, &x->shape, &l);
	if (!ret) {
		l->l.act = act;
		l->l.act_alpha = alpha;
		l->l.act_beta = beta;
	}
	return ret;
}

/* Whether b broadcasts numpy-style onto exactly a's shape. */
static bool broadcasts_onto(const struct model_shape *b, const struct model_shape *a)
{
	if (b->ndims > a->ndims)
		return false;
	for (int i = 0; i < b->ndims; i++) {
		int64_t db = b->dims[b->ndims - 1 - i], da = a->dims[a->ndims - 1 - i];

		if (db != da && db != 1)
			return false;
	}
	return true;
}

/* The one dim of s that is not 1, counted from the end (0 = last); -1 if none or several. */
static int single_dim_from_end(const struct model_shape *s)
{
	int at = -1;

	for (int i = 0; i < s->ndims; i++)
		if (s->dims[i] != 1) {
			if (at >= 0)
				return -1;
			at = s->ndims - 1 - i;
		}
	return at;
}

/*
 * Add of a constant: the bias of the fc or conv before it, if it fits
 * exactly; 1 if it does not (the caller then makes a layer of it).
 */
static int fuse_bias(struct onnx_ctx *c, const Onnx__NodeProto *n, struct onnx_value *x,
		     struct onnx_value *k, double sign)
{
	struct onnx_layer *l = onnx_layer_of(c, x);
	int64_t nb = 0;
	int at = single_dim_from_end(&k->shape);

	if (onnx_fusible(c, x) && l->l.act == MODEL_ACT_NONE && k->shape.ndims <= x->shape.ndims) {
		if (l->l.op == MODEL_OP_FC && at == 0)
			nb = l->l.fc.out_features;
		else if ((l->l.op == MODEL_OP_CONV || l->l.op == MODEL_OP_DECONV) &&
			 at == x->shape.ndims - 2 && k->shape.ndims >= x->shape.ndims - 1)
			nb = l->l.conv.out_channels;
	}
	if (!nb || onnx_elems(&k->shape) != nb)
		return 1;
	if (!l->t[1]) {
		l->t[1] = calloc((size_t)nb, sizeof(float));
		if (!l->t[1])
			return coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
		l->nt[1] = nb;
	}
	for (int64_t i = 0; i < nb; i++)
		l->t[1][i] = (float)(l->t[1][i] + sign * k->data[i]);
	if (l->l.op == MODEL_OP_FC)
		l->l.fc.bias = true;
	else
		l->l.conv.bias = true;
	snprintf(l->origin + strlen(l->origin), sizeof(l->origin) - strlen(l->origin), " + %.8s",
		 n->op_type);
	return onnx_alias(c, n, x);
}

/*
 * Mul or Div by a constant scalar, or by one constant per output channel:
 * folded into the weights and bias of the fc or conv before it (or into a
 * matmul's alpha for a scalar), where it is exact up to rounding; 1 if it
 * does not fit (the caller then makes a layer of it).
 */
static int fuse_scale(struct onnx_ctx *c, const Onnx__NodeProto *n, struct onnx_value *x,
		      struct onnx_value *k, bool divide)
{
	struct onnx_layer *l = onnx_layer_of(c, x);
	int64_t nk = onnx_elems(&k->shape), nout = 0, per;
	int at = single_dim_from_end(&k->shape);
	bool ok = onnx_fusible(c, x) && l->l.act == MODEL_ACT_NONE &&
		  k->shape.ndims <= x->shape.ndims;

	if (ok && l->l.op == MODEL_OP_FC && (nk == 1 || at == 0))
		nout = l->l.fc.out_features;
	else if (ok && l->l.op == MODEL_OP_CONV &&
		 (nk == 1 || (at == x->shape.ndims - 2 && k->shape.ndims >= x->shape.ndims - 1)))
		nout = l->l.conv.out_channels;
	else if (ok && l->l.op == MODEL_OP_MATMUL && nk == 1)
		nout = 1;
	if (!nout || (nk != 1 && nk != nout))
		return 1;
	for (int64_t i = 0; i < nk; i++)
		if (divide && k->data[i] == 0)
			return onnx_refuse(c, -EINVAL, "division by a constant 0");
	if (l->l.op == MODEL_OP_MATMUL) {
		l->l.matmul.alpha = (float)(divide ? l->l.matmul.alpha / k->data[0] :
						     l->l.matmul.alpha * k->data[0]);
	} else {
		/* fc weights are [K][N] (channel fastest), conv weights [OC][...] */
		per = l->nt[0] / nout;
		for (int64_t i = 0; i < l->nt[0]; i++) {
			int64_t ch = l->l.op == MODEL_OP_FC ? i % nout : i / per;
			double f = k->data[nk == 1 ? 0 : ch];

			l->t[0][i] = (float)(divide ? l->t[0][i] / f : l->t[0][i] * f);
		}
		for (int64_t i = 0; l->t[1] && i < nout; i++) {
			double f = k->data[nk == 1 ? 0 : i];

			l->t[1][i] = (float)(divide ? l->t[1][i] / f : l->t[1][i] * f);
		}
	}
	snprintf(l->origin + strlen(l->origin), sizeof(l->origin) - strlen(l->origin), " + %.8s",
		 n->op_type);
	return onnx_alias(c, n, x);
}

/* x op k with k constant (k op x when const_first): a binary layer holding k. */
static int const_binary(struct onnx_ctx *c, const Onnx__NodeProto *n, enum model_op op,
			struct onnx_value *x, struct onnx_value *k, bool const_first)
{
	struct onnx_layer *l;
	struct model_shape ks = k->shape;
	int ret;

	if (const_first && op == MODEL_OP_DIV)
		return onnx_refuse(c, -EOPNOTSUPP,
				   "Div of a constant by a computed tensor (coloc's div "
				   "divides a tensor by a constant or by another tensor)");
	if (!broadcasts_onto(&k->shape, &x->shape))
		return onnx_refuse(c, -EOPNOTSUPP,
				   "the constant does not broadcast onto the computed "
				   "input's shape (coloc's result has the shape of its first "
				   "input)");
	if (!ks.ndims) {
		ks.ndims = 1;
		ks.dims[0] = 1;
	}
	ret = onnx_new_layer(c, n, op, &x, 1, &x->shape, &l);
	if (ret)
		return ret;
	l->l.binary = (struct model_binary){ .has_const = true,
					     .const_first = const_first,
					     .cshape = ks };
	l->nt[0] = onnx_elems(&ks);
	l->t[0] = onnx_to_floats(c, k->data, l->nt[0], 1.0);
	return l->t[0] ? 0 : -ENOMEM;
}

static const struct {
	const char *type;
	enum model_op op;
	bool commutes;
} binary_ops[] = {
	{ "Add", MODEL_OP_ADD, true },	{ "Mul", MODEL_OP_MUL, true },
	{ "Sub", MODEL_OP_SUB, false }, { "Div", MODEL_OP_DIV, false },
	{ "Max", MODEL_OP_MAX, true },	{ "Min", MODEL_OP_MIN, true },
};

/*
 * x - 0, x * 1 (either side) and x / 1 are x itself, bit for bit, when the
 * constant broadcasts onto x (so the shape stays x's): melspectrogram's
 * Sub of 0 makes no layer. x - (-0) and x + 0 are not (-0 + 0 is +0).
 */
static bool identity_const(const char *op, const struct onnx_value *x, const struct onnx_value *k,
			   bool k_second)
{
	int64_t nk = onnx_elems(&k->shape);
	double id;

	if (!strcmp(op, "Mul") || (!strcmp(op, "Div") && k_second))
		id = 1.0;
	else if (!strcmp(op, "Sub") && k_second)
		id = 0.0;
	else
		return false;
	if (!broadcasts_onto(&k->shape, &x->shape))
		return false;
	for (int64_t i = 0; i < nk; i++)
		if (k->data[i] != id || signbit(k->data[i]))
			return false;
	return true;
}

/*
 * Add, Mul, Sub, Div, Max, Min. A constant operand folds into the layer
 * before it where it can (a bias or a scale), else becomes the constant of
 * a binary layer; two computed operands make a binary layer, the one that
 * broadcasts second (swapped only for the ops that commute).
 */
int onnx_lower_binary(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *a = onnx_input(c, n, 0), *b = onnx_input(c, n, 1), *ins[2];
	struct onnx_layer *l;
	size_t t = 0;
	int ret = 1;

	while (strcmp(binary_ops[t].type, n->op_type))
		t++;
	if (n->n_input == 1 && a && a->layer >= 0)
		return onnx_alias(c, n, a); /* Max or Min of one tensor */
	if (!a || !b || n->n_input != 2)
		return onnx_refuse(c, -EOPNOTSUPP, "two inputs expected");
	if (a->data && b->data)
		return onnx_refuse(c, -EOPNOTSUPP, "%s of two constants is not folded", n->op_type);
	if (a->data || b->data) {
		struct onnx_value *x = a->data ? b : a, *k = a->data ? a : b;

		if (identity_const(n->op_type, x, k, k == b))
			return onnx_alias(c, n, x);
		if (!strcmp(n->op_type, "Add") || (!strcmp(n->op_type, "Sub") && k == b))
			ret = fuse_bias(c, n, x, k, k == b && n->op_type[0] == 'S' ? -1.0 : 1.0);
		else if (!strcmp(n->op_type, "Mul") || (!strcmp(n->op_type, "Div") && k == b))
			ret = fuse_scale(c, n, x, k, n->op_type[0] == 'D');
		if (ret != 1)
			return ret;
		return const_binary(c, n, binary_ops[t].op, x, k,
				    k == a && !binary_ops[t].commutes);
	}
	ins[0] = a;
	ins[1] = b;
	if (!broadcasts_onto(&b->shape, &a->shape)) {
		if (!broadcasts_onto(&a->shape, &b->shape) || !binary_ops[t].commutes)
			return onnx_refuse(c, -EOPNOTSUPP,
					   "the second input does not broadcast onto the "
					   "first's shape (coloc broadcasts the second input only, "
					   "and swaps them only for Add, Mul, Max, Min)");
		ins[0] = b;
		ins[1] = a;
	}
	return onnx_new_layer(c, n, binary_ops[t].op, ins, 2, &ins[0]->shape, &l);
}

/* An fc from weights [K][N] (already transposed and scaled) and an optional bias. */
static int make_fc(struct onnx_ctx *c, const Onnx__NodeProto *n, struct onnx_value *x, float *w,
		   int64_t k, int64_t nn, float *bias)
{
	struct model_shape out = x->shape;
	struct onnx_layer *l;
	int ret;

	out.dims[out.ndims - 1] = nn;
	ret = onnx_new_layer(c, n, MODEL_OP_FC, &x, 1, &out, &l);
	if (ret) {
		free(w);
		free(bias);
		return ret;
	}
	l->l.fc.out_features = nn;
	l->l.fc.bias = bias != NULL;
	l->t[0] = w;
	l->nt[0] = k * nn;
	l->t[1] = bias;
	l->nt[1] = bias ? nn : 0;
	return 0;
}

int onnx_lower_matmul(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *a = onnx_data_input(c, n, 0), *b = onnx_input(c, n, 1);
	struct model_shape out;
	struct onnx_layer *l;
	int r;

	if (!a || !b)
		return onnx_refuse(c, -EOPNOTSUPP, "the first input must be computed by a layer");
	r = a->shape.ndims;
	if (b->data) {
		float *w;

		if (b->shape.ndims != 2 || r < 2 || a->shape.dims[r - 1] != b->shape.dims[0])
			return onnx_refuse(c, -EOPNOTSUPP,
					   "a constant right operand must be [K, N] "
					   "with K the last dim of a left operand of rank >= 2");
		w = onnx_to_floats(c, b->data, onnx_elems(&b->shape), 1.0);
		return w ? make_fc(c, n, a, w, b->shape.dims[0], b->shape.dims[1], NULL) : -ENOMEM;
	}
	if (b->shape.ndims != r || r < 2 || a->shape.dims[r - 1] != b->shape.dims[r - 2] ||
	    memcmp(a->shape.dims, b->shape.dims, (size_t)(r - 2) * sizeof(int64_t)))
		return onnx_refuse(c, -EOPNOTSUPP,
				   "coloc's matmul needs both operands of the same "
				   "rank >= 2, equal batch dims and matching K");
	out = a->shape;
	out.dims[r - 1] = b->shape.dims[r - 1];
	return onnx_new_layer(c, n, MODEL_OP_MATMUL, (struct onnx_value *[]){ a, b }, 2, &out, &l) ?:
		       (l->l.matmul.alpha = 1.0f, 0);
}

int onnx_lower_gemm(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *a = onnx_data_input(c, n, 0), *b = onnx_const_input(c, n, 1),
			  *bc = onnx_const_input(c, n, 2);
	int64_t ta, tb, k, nn;
	float alpha, beta, *w, *bias = NULL;
	int ret = onnx_attr_int(c, n, "transA", 0, &ta);

	if (!ret)
		ret = onnx_attr_int(c, n, "transB", 0, &tb);
	if (!ret)
		ret = onnx_attr_float(c, n, "alpha", 1.0f, &alpha);
	if (!ret)
		ret = onnx_attr_float(c, n, "beta", 1.0f, &beta);
	if (ret)
		return ret;
	if (!a || !b || ta || a->shape.ndims != 2 || b->shape.ndims != 2 ||
	    (onnx_input(c, n, 2) && !bc))
		return onnx_refuse(c, -EOPNOTSUPP,
				   "Gemm is supported as x[M, K] @ constant B (transB "
				   "allowed, not transA) + constant C");
	k = b->shape.dims[tb ? 1 : 0];
	nn = b->shape.dims[tb ? 0 : 1];
	if (a->shape.dims[1] != k)
		return onnx_refuse(c, -EINVAL, "K of A and B differ");
	if (bc && (onnx_elems(&bc->shape) != nn || single_dim_from_end(&bc->shape) > 0))
		return onnx_refuse(c, -EOPNOTSUPP, "C must be [N] or [1, N]");
	w = malloc((size_t)(k * nn > 0 ? k * nn : 1) * sizeof(float));
	if (!w)
		return coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
	for (int64_t i = 0; i < k; i++)
		for (int64_t j = 0; j < nn; j++)
			w[i * nn + j] = (float)(alpha * b->data[tb ? j * k + i : i * nn + j]);
	if (bc) {
		bias = onnx_to_floats(c, bc->data, nn, beta);
		if (!bias) {
			free(w);
			return -ENOMEM;
		}
	}
	return make_fc(c, n, a, w, k, nn, bias);
}

/*
 * Pow of a computed tensor by a constant scalar exponent: 2 (a power
 * spectrum's |X|^2, a variance) is the mul of x by itself, 1 is x. Other
 * exponents have no coloc layer (Pow 2 inside a decomposed LayerNorm is
 * matched as that pattern before it gets here).
 */
int onnx_lower_pow(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = onnx_data_input(c, n, 0), *e = onnx_const_input(c, n, 1),
			  *ins[2] = { x, x };
	struct onnx_layer *l;

	if (!x || !e || onnx_elems(&e->shape) != 1 || e->shape.ndims > x->shape.ndims)
		return onnx_refuse(c, -EOPNOTSUPP,
				   "Pow needs a computed base and a constant scalar exponent "
				   "of at most its rank");
	if (e->data[0] == 1)
		return onnx_alias(c, n, x);
	if (e->data[0] != 2)
		return onnx_refuse(c, -EOPNOTSUPP,
				   "the exponent is neither 1 nor 2 (coloc lowers Pow by 2, a "
				   "mul of x by itself, and by 1)");
	return onnx_new_layer(c, n, MODEL_OP_MUL, ins, 2, &x->shape, &l);
}

int onnx_lower_log(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = onnx_data_input(c, n, 0);
	struct onnx_layer *l;

	if (!x)
		return onnx_refuse(c, -EOPNOTSUPP, "the input is not computed by a layer");
	return onnx_new_layer(c, n, MODEL_OP_LOG, &x, 1, &x->shape, &l);
}

/* A binary layer of layer in (shape s) and the constant k [ks]; last: the node's output. */
static int where_layer(struct onnx_ctx *c, const Onnx__NodeProto *n, enum model_op op, int in,
		       const struct model_shape *s, const double *k, const struct model_shape *ks,
		       bool last)
{
	struct onnx_layer *l;
	int ret = onnx_layer_add(c, op, onnx_node_label(n), &l);

	if (ret)
		return ret;
	l->l.nr_inputs = 1;
	l->l.inputs[0] = in;
	l->l.out = *s;
	l->l.binary = (struct model_binary){ .has_const = true, .cshape = *ks };
	l->uses = !last;
	l->nt[0] = onnx_elems(ks);
	l->t[0] = onnx_to_floats(c, k, l->nt[0], 1.0);
	if (!l->t[0])
		return -ENOMEM;
	return last ? onnx_output_layer(c, n, 0, c->nr_layers - 1) : 0;
}

/*
 * Where(cond, a, b) with a constant cond, one of a and b computed (t) and
 * the other a constant k: t * m + z with the constants m (1 where t is
 * taken, else 0) and z (k where it is taken, else 0): a mul and an add of
 * constants, each left out when it changes nothing. Exact for finite t (an
 * infinite or NaN t times 0 is NaN); the result has t's shape, so m and z
 * must broadcast onto it.
 */
int onnx_lower_where(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *cond = onnx_const_input(c, n, 0), *a = onnx_input(c, n, 1),
			  *b = onnx_input(c, n, 2), *t, *k;
	struct model_shape ms;
	bool mul = false, add = false;
	double *m, *z;
	int ret, in;

	if (!cond || !a || !b || (a->layer >= 0) == (b->layer >= 0))
		return onnx_refuse(c, -EOPNOTSUPP,
				   "Where needs a constant condition (folded from constants "
				   "or shapes), one computed operand and one constant");
	t = a->layer >= 0 ? a : b;
	k = a->layer >= 0 ? b : a;
	ret = onnx_where_split(c, cond, k, k == a, &ms, &m, &z);
	if (ret)
		return ret;
	if (!broadcasts_onto(&ms, &t->shape)) {
		free(m);
		free(z);
		return onnx_refuse(c, -EOPNOTSUPP,
				   "the condition and constant do not broadcast onto the "
				   "computed operand's shape (coloc's result has its shape)");
	}
	for (int64_t i = 0; i < onnx_elems(&ms); i++) {
		mul = mul || m[i] != 1;
		add = add || z[i] != 0;
	}
	if (!ms.ndims) {
		ms.ndims = 1;
		ms.dims[0] = 1;
	}
	in = t->layer;
	ret = 0;
	if (mul) {
		ret = where_layer(c, n, MODEL_OP_MUL, in, &t->shape, m, &ms, !add);
		in = c->nr_layers - 1;
	}
	if (!ret && add)
		ret = where_layer(c, n, MODEL_OP_ADD, in, &t->shape, z, &ms, true);
	free(m);
	free(z);
	if (ret || mul || add)
		return ret;
	return onnx_alias(c, n, t);
}

/* Comparisons and logic: folded at load when every input is constant. */
int onnx_lower_logic(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	(void)n;
	return onnx_refuse(c, -EOPNOTSUPP,
			   "a comparison or logic op of run-time values (coloc folds these "
			   "only when every input is a constant or derived from shapes, "
			   "e.g. a mask built from the input's shape)");
}
