// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The ONNX importer's graph: unpacks the protobuf (bounded, every size
 * checked before use), registers every named value (initializers decoded
 * through onnx_tensor.c, graph inputs made coloc input layers with their
 * symbolic dims resolved from the options), counts and indexes each value's
 * readers, and frees it all at the end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "huge_alloc.h"
#include "onnx_internal.h"

/* protobuf-c's allocations: a large tensor's raw bytes on huge pages */
static void *pb_alloc(void *data, size_t size)
{
	(void)data;
	return huge_alloc(size);
}

static void pb_free(void *data, void *p)
{
	(void)data;
	free(p);
}

static ProtobufCAllocator pb_allocator = { .alloc = pb_alloc, .free = pb_free };

/* ---- graph inputs -------------------------------------------------------- */

static int input_dim(struct onnx_ctx *c, const char *input, int i,
		     const Onnx__TensorShapeProto__Dimension *d, int64_t *v)
{
	if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
		*v = d->dim_value;
	} else if (i == 0) {
		*v = c->opts && c->opts->batch > 0 ? c->opts->batch : 1;
	} else {
		const char *p =
			d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
					d->dim_param ?
				d->dim_param :
				"";
		bool found = false;

		for (int k = 0; c->opts && k < c->opts->nr_dims; k++)
			if (p[0] && !strcmp(c->opts->dims[k].name, p)) {
				*v = c->opts->dims[k].value;
				found = true;
			}
		if (!found && p[0])
			return coloc_err_set(c->err, -EINVAL,
					     "%s: input '%.64s' dim %d is the symbol '%.64s': give "
					     "its value with --dim %.64s=VALUE",
					     c->file, input, i, p, p);
		if (!found)
			return coloc_err_set(
				c->err, -EINVAL,
				"%s: input '%.64s' dim %d has no size and no name; only "
				"the batch (dim 0) may be unnamed",
				c->file, input, i);
	}
	if (*v < 1 || *v > (1 << 24))
		return coloc_err_set(c->err, -EINVAL, "%s: input '%.64s' dim %d is %lld (1..2^24)",
				     c->file, input, i, (long long)*v);
	return 0;
}

static int add_input(struct onnx_ctx *c, const Onnx__ValueInfoProto *vi)
{
	const Onnx__TypeProto__Tensor *tt;
	struct onnx_layer *l;
	struct onnx_value *v;
	int64_t n = 1;
	int ret;

	if (!vi->name || !vi->name[0])
		return coloc_err_set(c->err, -EINVAL, "%s: a graph input has no name", c->file);
	if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
	    !vi->type->tensor_type || !vi->type->tensor_type->shape)
		return coloc_err_set(c->err, -EOPNOTSUPP,
				     "%s: input '%.64s' is not a tensor with a known rank", c->file,
				     vi->name);
	tt = vi->type->tensor_type;
	if (tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
	    tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT64 &&
	    tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT32)
		return coloc_err_set(c->err, -EOPNOTSUPP,
				     "%s: input '%.64s' has element type %d; supported: float, and "
				     "int64/int32 token ids",
				     c->file, vi->name, (int)tt->elem_type);
	if (tt->shape->n_dim < 1 || tt->shape->n_dim > ONNX_MAX_RANK)
		return coloc_err_set(c->err, -EOPNOTSUPP, "%s: input '%.64s' has rank %zu (1..%d)",
				     c->file, vi->name, tt->shape->n_dim, ONNX_MAX_RANK);
	ret = onnx_layer_add(c, MODEL_OP_INPUT, vi->name, &l);
	if (ret)
		return ret;
	l->l.out.ndims = (int)tt->shape->n_dim;
	for (int i = 0; i < l->l.out.ndims; i++) {
		ret = input_dim(c, vi->name, i, tt->shape->dim[i], &l->l.out.dims[i]);
		if (ret)
			return ret;
		n *= l->l.out.dims[i];
		if (n > (1ll << 32))
			return coloc_err_set(c->err, -E2BIG,
					     "%s: input '%.64s' has more than 2^32 "
					     "elements",
					     c->file, vi->name);
	}
	snprintf(l->origin, sizeof(l->origin), "graph input '%.80s'", vi->name);
	if (tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && c->nr_layers <= 64)
		c->int_inputs |= 1ull << (c->nr_layers - 1);
	v = onnx_value_find(c, vi->name);
	v->defined = true;
	v->layer = c->nr_layers - 1;
	v->shape = l->l.out;
	l->uses = v->uses;
	return 0;
}

/* ---- opening ------------------------------------------------------------- */

static int find_opset(struct onnx_ctx *c)
{
	for (size_t i = 0; i < c->mp->n_opset_import; i++) {
		const Onnx__OperatorSetIdProto *o = c->mp->opset_import[i];

		if ((!o->domain || !o->domain[0] || !strcmp(o->domain, "ai.onnx")) &&
		    o->has_version)
			c->opset = o->version;
	}
	if (c->opset < 1)
		return coloc_err_set(c->err, -EINVAL,
				     "%s: the model imports no version of the default ONNX opset",
				     c->file);
	if (c->opset < 7 || c->opset > 18)
		return coloc_err_set(c->err, -EOPNOTSUPP,
				     "%s: opset %lld; the importer supports opsets 7 to 18",
				     c->file, (long long)c->opset);
	return 0;
}

/* For the patterns: which nodes read each value, in graph order. */
static int index_readers(struct onnx_ctx *c)
{
	const Onnx__GraphProto *g = c->g;
	int total = 0;

	for (int i = 0; i < c->nr_vals; i++) {
		c->vals[i].rd_off = total;
		total += c->vals[i].uses;
	}
	c->readers = malloc((size_t)(total ? total : 1) * sizeof(int));
	if (!c->readers)
		return coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
	for (size_t i = 0; i < g->n_node; i++)
		for (size_t k = 0; k < g->node[i]->n_input; k++) {
			struct onnx_value *v = onnx_input(c, g->node[i], k);

			/* a node reading a value twice is listed once */
			if (v &&
			    (!v->nr_readers || c->readers[v->rd_off + v->nr_readers - 1] != (int)i))
				c->readers[v->rd_off + v->nr_readers++] = (int)i;
		}
	return 0;
}

/* Every name the graph defines, then every read of each, before any lowering. */
static int register_values(struct onnx_ctx *c)
{
	const Onnx__GraphProto *g = c->g;
	struct onnx_value *v;
	size_t total = g->n_initializer + g->n_input;
	int ret;

	for (size_t i = 0; i < g->n_node; i++)
		total += g->node[i]->n_output;
	if (g->n_node > ONNX_MAX_NODES || total > ONNX_MAX_VALUES)
		return coloc_err_set(c->err, -E2BIG,
				     "%s: %zu nodes and %zu values; at most %d and %d", c->file,
				     g->n_node, total, ONNX_MAX_NODES, ONNX_MAX_VALUES);
	c->cap_vals = (int)total + 1;
	for (c->hash_cap = 16; c->hash_cap < 2 * c->cap_vals; c->hash_cap *= 2)
		;
	c->vals = calloc((size_t)c->cap_vals, sizeof(*c->vals));
	c->hash = malloc((size_t)c->hash_cap * sizeof(int));
	if (!c->vals || !c->hash)
		return coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
	memset(c->hash, 0xff, (size_t)c->hash_cap * sizeof(int));
	for (size_t i = 0; i < g->n_initializer; i++) {
		Onnx__TensorProto *t = g->initializer[i];

		if (!t->name || !t->name[0])
			return coloc_err_set(c->err, -EINVAL, "%s: initializer %zu has no name",
					     c->file, i);
		ret = onnx_value_add(c, t->name, &v);
		if (!ret)
			ret = onnx_tensor_decode(c, t, &v->shape, &v->data, &v->is_int);
		if (ret)
			return ret;
		v->defined = true;
		/* decoded: its bytes (the protobuf's copy of the weights) are not read again */
		if (t->has_raw_data) {
			pb_free(NULL, t->raw_data.data);
			t->raw_data.data = NULL;
			t->raw_data.len = 0;
			t->has_raw_data = 0;
		}
	}
	for (size_t i = 0; i < g->n_input; i++) {
		const char *name = g->input[i]->name;

		/* old exporters list initializers among the inputs too */
		if (!name || !name[0] || onnx_value_find(c, name))
			continue;
		ret = onnx_value_add(c, name, &v);
		if (ret)
			return ret;
	}
	for (size_t i = 0; i < g->n_node; i++)
		for (size_t o = 0; o < g->node[i]->n_output; o++)
			if (g->node[i]->output[o][0]) {
				ret = onnx_value_add(c, g->node[i]->output[o], &v);
				if (ret)
					return ret;
			}
	for (size_t i = 0; i < g->n_node; i++)
		for (size_t k = 0; k < g->node[i]->n_input; k++) {
			v = onnx_input(c, g->node[i], k);
			if (v)
				v->uses++;
		}
	ret = index_readers(c);
	if (ret)
		return ret;
	for (size_t i = 0; i < g->n_output; i++) {
		v = g->output[i]->name ? onnx_value_find(c, g->output[i]->name) : NULL;
		if (!v)
			return coloc_err_set(c->err, -EINVAL,
					     "%s: graph output '%.64s' is not "
					     "computed by any node",
					     c->file, g->output[i]->name ? g->output[i]->name : "");
		v->uses++;
	}
	return 0;
}

/*
 * The initializers' declared elements, decoded as doubles, against
 * ONNX_MAX_DECODED_BYTES, before any is read: a few KiB of protobuf can
 * declare hundreds of GiB over one sparse external file.
 */
static int check_declared_sizes(struct onnx_ctx *c)
{
	uint64_t total = 0;

	for (size_t i = 0; i < c->g->n_initializer; i++) {
		int64_t n = onnx_tensor_elems(c->g->initializer[i], ONNX_MAX_DECODED_BYTES);

		if (n < 0)
			n = ONNX_MAX_DECODED_BYTES;
		total += (uint64_t)n * sizeof(double);
		if (total > ONNX_MAX_DECODED_BYTES)
			return coloc_err_set(
				c->err, -E2BIG,
				"%s: its initializers decode to more than %llu MiB (at "
				"initializer %zu of %zu), the most coloc imports",
				c->file, ONNX_MAX_DECODED_BYTES >> 20, i + 1, c->g->n_initializer);
	}
	return 0;
}

int onnx_graph_open(struct onnx_ctx *c, const void *buf, size_t len)
{
	int ret;

	if (len > ONNX_MAX_FILE_BYTES)
		return coloc_err_set(c->err, -E2BIG,
				     "%s: %zu bytes; a model over 2 GiB must keep its tensors in "
				     "external data files",
				     c->file, len);
	ret = onnx_wire_check_nesting(&onnx__model_proto__descriptor, buf, len, ONNX_MAX_NESTING);
	if (ret == -ELOOP)
		return coloc_err_set(c->err, -ELOOP,
				     "%s: messages nested more than %d deep (graphs inside "
				     "attributes inside nodes, or types inside types); "
				     "refused before decoding",
				     c->file, ONNX_MAX_NESTING);
	c->mp = ret ? NULL : onnx__model_proto__unpack(&pb_allocator, len, buf);
	if (!c->mp)
		return coloc_err_set(c->err, -EINVAL,
				     "%s: not an ONNX model (the protobuf does not decode: "
				     "truncated or not a ModelProto)",
				     c->file);
	c->g = c->mp->graph;
	if (!c->g || !c->g->n_node)
		return coloc_err_set(c->err, -EINVAL, "%s: the model has no graph or no nodes",
				     c->file);
	if (!c->g->n_output)
		return coloc_err_set(c->err, -EINVAL, "%s: the graph has no outputs", c->file);
	ret = check_declared_sizes(c);
	if (!ret)
		ret = find_opset(c);
	if (!ret)
		ret = register_values(c);
	if (ret)
		return ret;
	c->layer_hash = malloc(ONNX_LAYER_HASH_CAP * sizeof(int));
	if (!c->layer_hash)
		return coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
	memset(c->layer_hash, 0xff, ONNX_LAYER_HASH_CAP * sizeof(int));
	for (size_t i = 0; i < c->g->n_input; i++) {
		struct onnx_value *v =
			c->g->input[i]->name ? onnx_value_find(c, c->g->input[i]->name) : NULL;

		if (v && !v->defined) {
			ret = add_input(c, c->g->input[i]);
			if (ret)
				return ret;
		}
	}
	return 0;
}

void onnx_graph_drop_constants(struct onnx_ctx *c)
{
	for (int i = 0; i < c->nr_vals; i++) {
		free(c->vals[i].data);
		c->vals[i].data = NULL;
	}
}

void onnx_graph_close(struct onnx_ctx *c)
{
	for (int i = 0; i < c->nr_vals; i++)
		free(c->vals[i].data);
	for (int i = 0; i < c->nr_layers; i++) {
		free(c->layers[i].t[0]);
		free(c->layers[i].t[1]);
	}
	free(c->vals);
	free(c->hash);
	free(c->readers);
	free(c->layers);
	free(c->layer_hash);
	if (c->mp)
		onnx__model_proto__free_unpacked(c->mp, &pb_allocator);
}
