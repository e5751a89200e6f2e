// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What every op's lowering checks with: size arithmetic that cannot
 * overflow, the bounds coloc's parser puts on a layer's shape, and the one
 * refusal message, naming the file, the node, its op, opset and input shapes.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "onnx_internal.h"

bool onnx_mul(int64_t *acc, int64_t x, int64_t limit)
{
	int64_t r;

	if (x < 0 || __builtin_mul_overflow(*acc, x, &r) || r > limit)
		return false;
	*acc = r;
	return true;
}

int64_t onnx_elems(const struct model_shape *s)
{
	int64_t n = 1;

	for (int i = 0; i < s->ndims; i++)
		if (!onnx_mul(&n, s->dims[i], INT64_MAX))
			return INT64_MAX;
	return n;
}

int onnx_shape_check(struct onnx_ctx *c, const struct model_shape *s, const char *what)
{
	int64_t n = 1;

	for (int i = 0; i < s->ndims; i++)
		if (s->dims[i] < 1 || s->dims[i] > ONNX_MAX_DIM)
			return onnx_refuse(c, -EOPNOTSUPP,
					   "%s: dim %d is outside the 1..%lld coloc allows", what,
					   i, ONNX_MAX_DIM);
	for (int i = 0; i < s->ndims; i++)
		if (!onnx_mul(&n, s->dims[i], ONNX_MAX_ELEMS))
			return onnx_refuse(c, -EOPNOTSUPP,
					   "%s: more than %lld elements, coloc's limit", what,
					   ONNX_MAX_ELEMS);
	return 0;
}

void onnx_shape_str(const struct model_shape *s, char *buf, size_t len)
{
	size_t o = 0;

	o += (size_t)snprintf(buf, len, "[");
	for (int i = 0; i < s->ndims && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? "," : "",
				      (long long)s->dims[i]);
	if (o < len)
		snprintf(buf + o, len - o, "]");
}

int onnx_refuse(struct onnx_ctx *c, int code, const char *fmt, ...)
{
	const Onnx__NodeProto *n = c->node;
	char why[256], ins[192] = "";
	size_t o = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (!n)
		return coloc_err_set(c->err, code, "%s: %s", c->file, why);
	for (size_t i = 0; i < n->n_input && o < sizeof(ins); i++) {
		struct onnx_value *v = onnx_input(c, n, i);
		char s[64] = "-";

		if (v && v->defined)
			onnx_shape_str(&v->shape, s, sizeof(s));
		o += (size_t)snprintf(ins + o, sizeof(ins) - o, "%s%s%s", i ? ", " : "", s,
				      v && v->data ? " const" : "");
	}
	return coloc_err_set(
		c->err, code, "%s: node '%.64s' (%.32s%s%.32s, opset %lld, inputs %s): %s", c->file,
		n->name && n->name[0] ? n->name : "(unnamed)", n->op_type,
		n->domain && n->domain[0] ? " in domain " : "", n->domain ? n->domain : "",
		(long long)c->opset, o ? ins : "none", why);
}
