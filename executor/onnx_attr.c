// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A node's attributes, read with their ONNX type checked: an integer, a
 * finite float, a bounded list of integers or a string, each with its
 * default when absent.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "onnx_internal.h"

const Onnx__AttributeProto *onnx_attr(const Onnx__NodeProto *n, const char *name)
{
	for (size_t i = 0; i < n->n_attribute; i++)
		if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
			return n->attribute[i];
	return NULL;
}

int onnx_attr_int(struct onnx_ctx *c, const Onnx__NodeProto *n, const char *name, int64_t def,
		  int64_t *v)
{
	const Onnx__AttributeProto *a = onnx_attr(n, name);

	*v = def;
	if (!a)
		return 0;
	if (!a->has_i || (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT))
		return onnx_refuse(c, -EINVAL, "attribute '%s' is not an integer", name);
	*v = a->i;
	return 0;
}

int onnx_attr_float(struct onnx_ctx *c, const Onnx__NodeProto *n, const char *name, float def,
		    float *v)
{
	const Onnx__AttributeProto *a = onnx_attr(n, name);

	*v = def;
	if (!a)
		return 0;
	if (!a->has_f || (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT))
		return onnx_refuse(c, -EINVAL, "attribute '%s' is not a float", name);
	if (!isfinite(a->f))
		return onnx_refuse(c, -EINVAL, "attribute '%s' is not finite", name);
	*v = a->f;
	return 0;
}

int onnx_attr_ints(struct onnx_ctx *c, const Onnx__NodeProto *n, const char *name, int64_t *v,
		   int max, int *nr)
{
	const Onnx__AttributeProto *a = onnx_attr(n, name);

	*nr = -1;
	if (!a)
		return 0;
	if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)
		return onnx_refuse(c, -EINVAL, "attribute '%s' is not a list of integers", name);
	if (a->n_ints > (size_t)max)
		return onnx_refuse(c, -EINVAL,
				   "attribute '%s' has %zu values, at most %d supported", name,
				   a->n_ints, max);
	if (a->n_ints)
		memcpy(v, a->ints, a->n_ints * sizeof(*v));
	*nr = (int)a->n_ints;
	return 0;
}

const char *onnx_attr_str(const Onnx__NodeProto *n, const char *name, char *buf, size_t len,
			  const char *def)
{
	const Onnx__AttributeProto *a = onnx_attr(n, name);
	size_t l;

	if (!a || !a->has_s)
		return def;
	l = a->s.len < len - 1 ? a->s.len : len - 1;
	memcpy(buf, a->s.data, l);
	buf[l] = 0;
	return buf;
}
