// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * One layer of a model file: its attributes are checked against what the op
 * accepts, its inputs are resolved by name to earlier layers, and its output
 * shape, MACs and learned parameters are computed. The executor trusts these
 * shapes, so everything a kernel would choke on (channels not divisible by
 * groups, a kernel larger than its padded input, shapes that cannot be
 * broadcast, sizes that overflow) is refused here with the file and line.
 *
 * Counting conventions (models/README.md): MACs are multiply-accumulates of
 * conv, fc and matmul only; parameters are learned ones, with batch norm as
 * 2 per channel (gamma, beta; the running mean and variance are statistics,
 * not parameters), as in torchvision's and Keras' trainable counts.
 *
 * This file looks up a layer's op and inputs and runs its rule; the rules
 * are in model_shape_ops.c, the reading of attributes in model_shape_attr.c.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_shape.h"
#include "util.h"
#include "window.h"

static const char *const shape_act_names[] = {
	[MODEL_ACT_NONE] = "none",
	[MODEL_ACT_RELU] = "relu",
	[MODEL_ACT_RELU6] = "relu6",
	[MODEL_ACT_LEAKY_RELU] = "leaky_relu",
	[MODEL_ACT_SIGMOID] = "sigmoid",
	[MODEL_ACT_SWISH] = "swish",
	[MODEL_ACT_GELU] = "gelu",
	[MODEL_ACT_TANH] = "tanh",
	[MODEL_ACT_HARD_SIGMOID] = "hard_sigmoid",
	[MODEL_ACT_CLIP] = "clip",
	[MODEL_ACT_HARD_SWISH] = "hard_swish",
};

int model_parse_int(const char *s, int64_t *v)
{
	long long x;
	char *end;

	if (!((*s >= '0' && *s <= '9') || (*s == '-' && s[1] >= '0' && s[1] <= '9')))
		return -EINVAL;
	errno = 0;
	x = strtoll(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	*v = x;
	return 0;
}

/* Layer names: letters, digits, '_', '.', '-'; starting with a letter or '_'. */
int model_check_name(struct model_ctx *c, const char *name)
{
	size_t n = strlen(name);

	if (n >= MODEL_NAME_LEN)
		return model_fail(c, "name '%.40s...' is longer than %d characters", name,
				  MODEL_NAME_LEN - 1);
	if (!n ||
	    !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') ||
	      name[0] == '_') ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != n)
		return model_fail(c,
				  "bad name '%s': use letters, digits, '_', '.', '-', starting "
				  "with a letter or '_'",
				  name);
	return 0;
}

static uint32_t shape_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* Returns the layer index of name, or -1. */
static int shape_lookup(const struct model_ctx *c, const char *name)
{
	uint32_t mask, i;

	if (!c->nr_slots)
		return -1;
	mask = (uint32_t)c->nr_slots - 1;
	for (i = shape_hash(name) & mask; c->name_slots[i]; i = (i + 1) & mask)
		if (!strcmp(c->m->layers[c->name_slots[i] - 1].name, name))
			return c->name_slots[i] - 1;
	return -1;
}

static int shape_insert(struct model_ctx *c, int idx)
{
	uint32_t mask, i;
	int k;

	if (2 * (c->m->nr_layers + 1) > c->nr_slots) {
		int nr = c->nr_slots ? 2 * c->nr_slots : 256;
		int *slots = calloc((size_t)nr, sizeof(int));

		if (!slots)
			return -ENOMEM;
		free(c->name_slots);
		c->name_slots = slots;
		c->nr_slots = nr;
		for (k = 0; k < idx; k++) {
			mask = (uint32_t)nr - 1;
			for (i = shape_hash(c->m->layers[k].name) & mask; slots[i];
			     i = (i + 1) & mask)
				;
			slots[i] = k + 1;
		}
	}
	mask = (uint32_t)c->nr_slots - 1;
	for (i = shape_hash(c->m->layers[idx].name) & mask; c->name_slots[i]; i = (i + 1) & mask)
		;
	c->name_slots[i] = idx + 1;
	return 0;
}

const char *model_op_name(enum model_op op)
{
	if ((unsigned int)op >= MODEL_OP_COUNT)
		return "?";
	return shape_ops[op].name;
}

const char *model_act_name(enum model_act act)
{
	if ((unsigned int)act >= ARRAY_SIZE(shape_act_names))
		return "?";
	return shape_act_names[act];
}

int64_t model_shape_elems(const struct model_shape *s)
{
	int64_t n = 1;
	int i;

	for (i = 0; i < s->ndims; i++)
		n *= s->dims[i];
	return n;
}

static int shape_activation(struct shape_layer *il, bool allowed)
{
	struct model_layer *l = il->l;
	const char *s;
	size_t i;
	int err;

	s = shape_value(il, "act", false, &err);
	if (!s)
		return err;
	if (!allowed)
		return shape_fail(il, "takes no 'act=' (add a separate act layer)");
	for (i = 1; i < ARRAY_SIZE(shape_act_names); i++)
		if (!strcmp(s, shape_act_names[i]))
			break;
	if (i == ARRAY_SIZE(shape_act_names))
		return shape_fail(il,
				  "unknown activation '%s' (relu, relu6, leaky_relu, sigmoid, "
				  "swish, gelu, tanh, hard_sigmoid, hard_swish, clip)",
				  s);
	l->act = (enum model_act)i;
	if (l->act == MODEL_ACT_LEAKY_RELU)
		return shape_float(il, "slope", true, 0, 1, 0, &l->act_alpha);
	if (l->act == MODEL_ACT_HARD_SIGMOID)
		/* ONNX HardSigmoid's defaults */
		return shape_float(il, "slope", false, -1e6, 1e6, 0.2, &l->act_alpha) ?:
			       shape_float(il, "offset", false, -1e6, 1e6, 0.5, &l->act_beta);
	if (l->act == MODEL_ACT_CLIP) {
		if (shape_float(il, "min", true, -1e30, 1e30, 0, &l->act_alpha) ||
		    shape_float(il, "max", true, -1e30, 1e30, 0, &l->act_beta))
			return -EINVAL;
		if (l->act_alpha > l->act_beta)
			return shape_fail(il, "clip min=%g is above max=%g", l->act_alpha,
					  l->act_beta);
	}
	return 0;
}

/* in=a,b,...: names of earlier layers; absent: the previous layer. */
static int shape_inputs(struct shape_layer *il, const struct shape_op *op)
{
	struct model_ctx *c = il->c;
	struct model_layer *l = il->l;
	char buf[MODEL_PARSE_MAX_LINE + 1];
	char *name, *next;
	const char *s;
	int err, idx;

	s = shape_value(il, "in", false, &err);
	if (err)
		return err;
	if (!s) {
		if (op->min_inputs == 0)
			return 0;
		if (op->min_inputs > 1)
			return shape_fail(il, "needs in= with %d%s inputs", op->min_inputs,
					  op->max_inputs > op->min_inputs ? " or more" : "");
		if (c->m->nr_layers == 1)
			return shape_fail(il, "has no input: no layer comes before it");
		l->inputs[l->nr_inputs++] = c->m->nr_layers - 2;
		return 0;
	}
	if (op->max_inputs == 0)
		return shape_fail(il, "an input layer takes no 'in='");
	snprintf(buf, sizeof(buf), "%s", s);
	for (name = buf;; name = next + 1) {
		next = strchr(name, ',');
		if (next)
			*next = '\0';
		if (l->nr_inputs == op->max_inputs)
			return shape_fail(il, "takes at most %d input%s", op->max_inputs,
					  op->max_inputs > 1 ? "s" : "");
		if (!*name)
			return shape_fail(il, "empty name in in=%s", s);
		idx = shape_lookup(c, name);
		if (idx < 0) {
			int later = c->later_definition ? c->later_definition(c, name) : 0;

			if (later)
				return shape_fail(
					il,
					"input '%s' is defined later, at line %d (a layer "
					"may only read layers defined before it)",
					name, later);
			return shape_fail(il, "unknown input '%s'", name);
		}
		l->inputs[l->nr_inputs++] = idx;
		if (!next)
			break;
	}
	if (l->nr_inputs < op->min_inputs)
		return shape_fail(il, "needs %d%s inputs, got %d", op->min_inputs,
				  op->max_inputs > op->min_inputs ? " or more" : "", l->nr_inputs);
	return 0;
}

static int shape_layer_run(struct shape_layer *il, const struct shape_op *op, char **tok, int n)
{
	struct model_layer *l = il->l;
	int i, j, err;

	for (i = 2; i < n; i++) {
		struct shape_attr *a = &il->attrs[il->nr_attrs];
		const char *eq = strchr(tok[i], '=');

		a->key = tok[i];
		a->key_len = eq ? (size_t)(eq - tok[i]) : strlen(tok[i]);
		a->val = eq ? eq + 1 : NULL;
		a->used = false;
		if (!a->key_len)
			return shape_fail(il, "attribute '%s' has no name", tok[i]);
		for (j = 0; j < il->nr_attrs; j++)
			if (il->attrs[j].key_len == a->key_len &&
			    !memcmp(il->attrs[j].key, a->key, a->key_len))
				return shape_fail(il, "attribute '%.*s' given twice",
						  (int)a->key_len, a->key);
		il->nr_attrs++;
	}
	err = shape_inputs(il, op);
	if (err)
		return err;
	for (i = 0; i < l->nr_inputs; i++)
		il->in[i] = &il->c->m->layers[l->inputs[i]].out;
	err = shape_activation(il, op->fused_act);
	if (!err)
		err = op->rule(il);
	if (err)
		return err;
	for (i = 0; i < il->nr_attrs; i++) {
		if (!il->attrs[i].used)
			return shape_fail(il,
					  "unknown attribute '%.*s' (see models/README.md for "
					  "what %s accepts)",
					  (int)il->attrs[i].key_len, il->attrs[i].key, op->name);
	}
	return 0;
}

int model_add_layer(struct model_ctx *c, char **tok, int nr_toks)
{
	struct model *m = c->m;
	const struct shape_op *op = NULL;
	struct shape_layer il = { .c = c };
	struct model_layer *l;
	int i, err, prev;

	for (i = 0; i < MODEL_OP_COUNT; i++)
		if (!strcmp(tok[0], shape_ops[i].name))
			op = &shape_ops[i];
	if (!op)
		return model_fail(c,
				  "unknown op '%.64s' (input, conv, fc, matmul, pool, act, add, "
				  "mul, sub, div, max, min, concat, layer_norm, softmax, lrn, "
				  "reshape, transpose, embed, slice, resize, deconv, reduce, pad)",
				  tok[0]);
	if (nr_toks < 2)
		return model_fail(c, "'%s' needs a layer name: %s NAME [attributes]", tok[0],
				  tok[0]);
	if (model_check_name(c, tok[1]))
		return -EINVAL;
	prev = shape_lookup(c, tok[1]);
	if (prev >= 0)
		return model_fail(c, "duplicate layer name '%s' (first defined at line %d)", tok[1],
				  m->layers[prev].line);
	if (m->nr_layers == MODEL_MAX_LAYERS)
		return model_fail(c, "more than %d layers", MODEL_MAX_LAYERS);
	if (m->nr_layers == c->cap_layers) {
		int cap = c->cap_layers ? 2 * c->cap_layers : 64;
		struct model_layer *a = realloc(m->layers, (size_t)cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		m->layers = a;
		c->cap_layers = cap;
	}
	l = &m->layers[m->nr_layers++];
	memset(l, 0, sizeof(*l));
	strcpy(l->name, tok[1]);
	l->op = (enum model_op)(op - shape_ops);
	l->line = c->line;
	il.l = l;
	il.attrs = calloc((size_t)nr_toks, sizeof(*il.attrs));
	if (!il.attrs)
		return -ENOMEM;
	err = shape_layer_run(&il, op, tok, nr_toks);
	free(il.attrs);
	if (err)
		return err;
	return shape_insert(c, m->nr_layers - 1);
}

int model_finish(struct model_ctx *c)
{
	struct model *m = c->m;
	int i;

	m->macs = m->params = 0;
	for (i = 0; i < m->nr_layers; i++) {
		if (__builtin_add_overflow(m->macs, m->layers[i].macs, &m->macs) ||
		    __builtin_add_overflow(m->params, m->layers[i].params, &m->params)) {
			c->line = m->layers[i].line;
			return model_fail(c, "the model's MAC or parameter count overflows");
		}
	}
	return 0;
}

void model_ctx_release(struct model_ctx *c)
{
	free(c->name_slots);
	c->name_slots = NULL;
	c->nr_slots = 0;
}

void model_free(struct model *m)
{
	if (!m)
		return;
	free(m->layers);
	free(m);
}
