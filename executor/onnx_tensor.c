// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A TensorProto (an initializer or a Constant's value) decoded into
 * doubles: its type and dims checked, its element count against the
 * limits before anything is allocated, its bytes from the message or from
 * an external data file (onnx_external.c), and no NaN let through.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "huge_alloc.h"
#include "onnx_internal.h"

static int elem_size(int32_t type, bool *is_int)
{
	*is_int = true;
	switch (type) {
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
		*is_int = false;
		return 4;
	case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
		*is_int = false;
		return 8;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
		return 8;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
		return 4;
	case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
	case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
		return 1;
	default:
		return 0;
	}
}

static double raw_elem(const uint8_t *p, int32_t type)
{
	float f;
	double d;
	int64_t i64;
	int32_t i32;

	/* x86 and every target coloc builds for are little-endian, as raw_data is */
	switch (type) {
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
		memcpy(&f, p, 4);
		return f;
	case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
		memcpy(&d, p, 8);
		return d;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
		memcpy(&i64, p, 8);
		return (double)i64;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
		memcpy(&i32, p, 4);
		return i32;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
		return (int8_t)*p;
	default:
		return *p;
	}
}

/* Whether t holds exactly n values (checked before anything is allocated for them). */
static bool count_matches(const Onnx__TensorProto *t, int64_t n, int es)
{
	if (t->has_raw_data)
		return t->raw_data.len == (size_t)n * (size_t)es;
	switch (t->data_type) {
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
		return t->n_float_data == (size_t)n;
	case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
		return t->n_double_data == (size_t)n;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
		return t->n_int64_data == (size_t)n;
	default:
		return t->n_int32_data == (size_t)n;
	}
}

int64_t onnx_tensor_elems(const Onnx__TensorProto *t, int64_t cap)
{
	int64_t n = 1;

	for (size_t i = 0; i < t->n_dims; i++) {
		if (t->dims[i] < 0)
			return -1;
		if (!t->dims[i])
			n = 0;
	}
	for (size_t i = 0; i < t->n_dims && n; i++)
		n = n > cap / t->dims[i] ? cap : n * t->dims[i];
	return n < cap ? n : cap;
}

/* A TensorProto (initializer or Constant's value) into doubles. */
int onnx_tensor_decode(struct onnx_ctx *c, const Onnx__TensorProto *t, struct model_shape *s,
		       double **data, bool *is_int)
{
	const char *name = t->name ? t->name : "(unnamed)";
	int es = elem_size(t->data_type, is_int);
	uint8_t *ext = NULL;
	int64_t n;
	double *d;

	if (!es)
		return onnx_refuse(c, -EOPNOTSUPP,
				   "tensor '%.64s' has data type %d; supported: float, double, "
				   "int64, int32, int8, uint8, bool",
				   name, (int)t->data_type);
	if (t->n_dims > ONNX_MAX_RANK)
		return onnx_refuse(c, -EOPNOTSUPP, "tensor '%.64s' has rank %zu, more than %d",
				   name, t->n_dims, ONNX_MAX_RANK);
	s->ndims = (int)t->n_dims;
	for (size_t i = 0; i < t->n_dims; i++) {
		if (t->dims[i] < 0 || t->dims[i] > (1ll << 32))
			return onnx_refuse(c, -EINVAL, "tensor '%.64s' has dim %lld", name,
					   (long long)t->dims[i]);
		s->dims[i] = t->dims[i];
	}
	n = onnx_tensor_elems(t, ONNX_MAX_CONST_ELEMS + 1);
	if (n > ONNX_MAX_CONST_ELEMS)
		return onnx_refuse(c, -E2BIG, "tensor '%.64s' has more than %lld elements", name,
				   ONNX_MAX_CONST_ELEMS);
	if (c->decoded_bytes + (uint64_t)(n ? n : 1) * sizeof(double) > ONNX_MAX_DECODED_BYTES)
		return onnx_refuse(c, -E2BIG,
				   "tensor '%.64s': the model's constants decode to more than %llu "
				   "MiB",
				   name, ONNX_MAX_DECODED_BYTES >> 20);
	c->decoded_bytes += (uint64_t)(n ? n : 1) * sizeof(double);
	if (t->has_data_location &&
	    t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
		int ret = onnx_external_bytes(c, t, name, (size_t)n * (size_t)es, &ext);

		if (ret)
			return ret;
	} else if (!count_matches(t, n, es)) {
		return onnx_refuse(c, -EINVAL,
				   "tensor '%.64s' holds a different number of values than "
				   "its %lld elements",
				   name, (long long)n);
	}
	d = huge_alloc((size_t)n * sizeof(double));
	if (!d) {
		free(ext);
		return coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
	}
	if (ext || t->has_raw_data) {
		/* onnx_external_bytes() read exactly n x es bytes */
		const uint8_t *raw = ext ? ext : t->raw_data.data;

		if (!ext && t->raw_data.len != (size_t)n * (size_t)es)
			goto bad_count;
		for (int64_t i = 0; i < n; i++)
			d[i] = raw_elem(raw + i * es, t->data_type);
		free(ext);
	} else if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
		if (t->n_float_data != (size_t)n)
			goto bad_count;
		for (int64_t i = 0; i < n; i++)
			d[i] = t->float_data[i];
	} else if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE) {
		if (t->n_double_data != (size_t)n)
			goto bad_count;
		memcpy(d, t->double_data, (size_t)n * sizeof(double));
	} else if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) {
		if (t->n_int64_data != (size_t)n)
			goto bad_count;
		for (int64_t i = 0; i < n; i++)
			d[i] = (double)t->int64_data[i];
	} else {
		if (t->n_int32_data != (size_t)n)
			goto bad_count;
		for (int64_t i = 0; i < n; i++)
			d[i] = t->int32_data[i];
	}
	/* an infinity is legitimate (an open Clip bound); one that reaches a weight is refused */
	for (int64_t i = 0; i < n; i++)
		if (isnan(d[i])) {
			free(d);
			return onnx_refuse(c, -EINVAL, "tensor '%.64s' element %lld is NaN", name,
					   (long long)i);
		}
	*data = d;
	c->decoded_elems += n;
	return 0;
bad_count:
	free(d);
	return onnx_refuse(c, -EINVAL,
			   "tensor '%.64s' holds a different number of values than "
			   "its %lld elements",
			   name, (long long)n);
}
