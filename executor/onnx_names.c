// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The ONNX importer's names: every value of the graph and every coloc
 * layer made so far, found by name (open addressing over FNV-1a), the
 * layer names made unique and safe for coloc's model text, and a node's
 * outputs bound to the layer or constant that computes them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

struct onnx_value *onnx_value_find(struct onnx_ctx *c, const char *name)
{
	uint32_t mask = (uint32_t)c->hash_cap - 1;

	for (uint32_t h = name_hash(name) & mask;; h = (h + 1) & mask) {
		int i = c->hash[h];

		if (i < 0)
			return NULL;
		if (!strcmp(c->vals[i].name, name))
			return &c->vals[i];
	}
}

int onnx_value_add(struct onnx_ctx *c, const char *name, struct onnx_value **out)
{
	uint32_t mask = (uint32_t)c->hash_cap - 1, h;

	if (onnx_value_find(c, name))
		return coloc_err_set(c->err, -EINVAL,
				     "%s: the name '%.64s' is given to two values (initializers, "
				     "graph inputs or node outputs); an ONNX graph names each once",
				     c->file, name);
	if (c->nr_vals >= c->cap_vals)
		return coloc_err_set(c->err, -E2BIG, "%s: more than %d values in the graph",
				     c->file, c->cap_vals);
	for (h = name_hash(name) & mask; c->hash[h] >= 0; h = (h + 1) & mask)
		;
	c->hash[h] = c->nr_vals;
	*out = &c->vals[c->nr_vals++];
	memset(*out, 0, sizeof(**out));
	(*out)->name = name;
	(*out)->layer = -1;
	return 0;
}

struct onnx_value *onnx_input(struct onnx_ctx *c, const Onnx__NodeProto *n, size_t i)
{
	if (i >= n->n_input || !n->input[i][0])
		return NULL;
	return onnx_value_find(c, n->input[i]);
}

/* Letters, digits, '_', '.', '-'; a letter or '_' first; unique; at most 63 chars. */
int onnx_layer_add(struct onnx_ctx *c, enum model_op op, const char *name, struct onnx_layer **out)
{
	char base[MODEL_NAME_LEN - 8], cand[MODEL_NAME_LEN];
	size_t len = strlen(name), from = len > sizeof(base) - 2 ? len - (sizeof(base) - 2) : 0;
	size_t o = 0;
	struct onnx_layer *l;

	if (c->nr_layers >= MODEL_MAX_LAYERS)
		return onnx_refuse(c, -E2BIG, "the model needs more than %d coloc layers",
				   MODEL_MAX_LAYERS);
	if (c->nr_layers >= c->cap_layers) {
		int cap = c->cap_layers ? 2 * c->cap_layers : 64;
		void *p = realloc(c->layers, (size_t)cap * sizeof(*c->layers));

		if (!p)
			return coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
		c->layers = p;
		c->cap_layers = cap;
	}
	/* keep the tail of long names: PyTorch's "/layer4/layer4.2/conv3/Conv" ends specific */
	for (size_t i = from; i < len; i++) {
		char ch = name[i];
		bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			  (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-';

		if (o == 0 && !((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_'))
			base[o++] = '_';
		base[o++] = ok ? ch : '_';
	}
	if (!o)
		base[o++] = 'L';
	base[o] = 0;
	snprintf(cand, sizeof(cand), "%s", base);
	for (int k = 2;; k++) {
		uint32_t mask = ONNX_LAYER_HASH_CAP - 1, h = name_hash(cand) & mask;
		bool taken = false;

		for (; c->layer_hash[h] >= 0; h = (h + 1) & mask)
			if (!strcmp(c->layers[c->layer_hash[h]].l.name, cand)) {
				taken = true;
				break;
			}
		if (!taken) {
			c->layer_hash[h] = c->nr_layers;
			break;
		}
		/* a suffix that is new most of the time, so many equal names stay linear */
		snprintf(cand, sizeof(cand), "%s_%d", base, c->nr_layers + k);
	}
	l = &c->layers[c->nr_layers++];
	memset(l, 0, sizeof(*l));
	snprintf(l->l.name, sizeof(l->l.name), "%s", cand);
	l->l.op = op;
	if (c->node && c->node->op_type)
		snprintf(l->origin, sizeof(l->origin), "%.40s '%.80s'", c->node->op_type,
			 c->node->name ? c->node->name : "");
	*out = l;
	return 0;
}

static int output_value(struct onnx_ctx *c, const Onnx__NodeProto *n, size_t i,
			struct onnx_value **out)
{
	struct onnx_value *v;

	if (i >= n->n_output || !n->output[i][0])
		return 0;
	v = onnx_value_find(c, n->output[i]);
	if (!v || v->defined)
		return onnx_refuse(c, -EINVAL, "output '%.64s' is produced twice", n->output[i]);
	*out = v;
	return 1;
}

int onnx_output_layer(struct onnx_ctx *c, const Onnx__NodeProto *n, size_t i, int layer)
{
	struct onnx_value *v = NULL;
	int ret = output_value(c, n, i, &v);

	if (ret <= 0)
		return ret;
	v->defined = true;
	v->layer = layer;
	v->shape = c->layers[layer].l.out;
	c->layers[layer].uses += v->uses;
	return 0;
}

int onnx_output_const(struct onnx_ctx *c, const Onnx__NodeProto *n, size_t i,
		      const struct model_shape *s, double *data, bool is_int)
{
	struct onnx_value *v = NULL;
	int ret = output_value(c, n, i, &v);

	if (ret <= 0) {
		free(data);
		return ret;
	}
	v->defined = true;
	v->shape = *s;
	v->data = data;
	v->is_int = is_int;
	return 0;
}
