// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A model file layer's attributes (key=value tokens after its name), read
 * and checked for the shape rules: integers, floats, "HxW" pairs, lists,
 * padding, each within the range the op accepts, with an error naming the
 * layer; and the output shape set within the sizes the executor accepts.
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

int shape_fail(struct shape_layer *il, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return model_fail(il->c, "%s '%s': %s", model_op_name(il->l->op), il->l->name, msg);
}

static int shape_parse_float(const char *s, double *v)
{
	char *end;

	if (!*s || strspn(s, "0123456789.eE+-") != strlen(s))
		return -EINVAL;
	errno = 0;
	*v = strtod(s, &end);
	if (errno == ERANGE || !isfinite(*v))
		return -ERANGE;
	return *end ? -EINVAL : 0;
}

void shape_format_shape(const struct model_shape *s, char *buf, size_t len)
{
	size_t n = 0;
	int i, k;

	buf[0] = '\0';
	for (i = 0; i < s->ndims && n < len; i++) {
		k = snprintf(buf + n, len - n, "%s%lld", i ? "," : "[", (long long)s->dims[i]);
		if (k < 0)
			return;
		n += (size_t)k;
	}
	if (n < len)
		snprintf(buf + n, len - n, "%s", s->ndims ? "]" : "[]");
}

struct shape_attr *shape_attr(struct shape_layer *il, const char *key)
{
	int i;

	for (i = 0; i < il->nr_attrs; i++) {
		if (strlen(key) == il->attrs[i].key_len &&
		    !memcmp(il->attrs[i].key, key, il->attrs[i].key_len)) {
			il->attrs[i].used = true;
			return &il->attrs[i];
		}
	}
	return NULL;
}

/* A valued attribute, or NULL when absent (an error when required). */
const char *shape_value(struct shape_layer *il, const char *key, bool required, int *err)
{
	struct shape_attr *a = shape_attr(il, key);

	*err = 0;
	if (!a) {
		if (required)
			*err = shape_fail(il, "missing attribute '%s='", key);
		return NULL;
	}
	if (!a->val || !*a->val) {
		*err = shape_fail(il, "attribute '%s' needs a value ('%s=...')", key, key);
		return NULL;
	}
	return a->val;
}

int shape_flag(struct shape_layer *il, const char *key, bool *on)
{
	struct shape_attr *a = shape_attr(il, key);

	*on = a != NULL;
	if (a && a->val)
		return shape_fail(il, "'%s' is a flag and takes no value", key);
	return 0;
}

static int shape_check_int(struct shape_layer *il, const char *key, const char *s, int64_t min,
			   int64_t max, int64_t *v)
{
	int r = model_parse_int(s, v);

	if (r == -ERANGE || (!r && (*v < min || *v > max)))
		return shape_fail(il, "%s=%s is out of range [%lld, %lld]", key, s, (long long)min,
				  (long long)max);
	if (r)
		return shape_fail(il, "%s=%s is not an integer", key, s);
	return 0;
}

int shape_int(struct shape_layer *il, const char *key, bool required, int64_t min, int64_t max,
	      int64_t def, int64_t *v)
{
	int err;
	const char *s = shape_value(il, key, required, &err);

	*v = def;
	if (!s)
		return err;
	return shape_check_int(il, key, s, min, max, v);
}

int shape_float(struct shape_layer *il, const char *key, bool required, double min, double max,
		double def, float *v)
{
	int err;
	const char *s = shape_value(il, key, required, &err);
	double d;
	int r;

	*v = (float)def;
	if (!s)
		return err;
	r = shape_parse_float(s, &d);
	if (r == -ERANGE || (!r && (d < min || d > max)))
		return shape_fail(il, "%s=%s is out of range [%g, %g]", key, s, min, max);
	if (r)
		return shape_fail(il, "%s=%s is not a number", key, s);
	*v = (float)d;
	return 0;
}

/* "3" (both) or "1x7" (height x width). */
int shape_pair(struct shape_layer *il, const char *key, bool required, int def, int *h, int *w)
{
	char buf[32];
	int64_t a, b;
	const char *s;
	char *x;
	int err;

	*h = *w = def;
	s = shape_value(il, key, required, &err);
	if (!s)
		return err;
	if (strlen(s) >= sizeof(buf))
		return shape_fail(il, "%s=%.20s... is too long", key, s);
	strcpy(buf, s);
	x = strchr(buf, 'x');
	if (x)
		*x = '\0';
	if (shape_check_int(il, key, buf, 1, MODEL_MAX_WINDOW, &a) ||
	    shape_check_int(il, key, x ? x + 1 : buf, 1, MODEL_MAX_WINDOW, &b))
		return -EINVAL;
	*h = (int)a;
	*w = (int)b;
	return 0;
}

/* Comma-separated integers into v[]; returns the count or a negative errno. */
int shape_int_list(struct shape_layer *il, const char *key, const char *s, char sep, int64_t min,
		   int64_t max, int64_t *v, int max_nr)
{
	char buf[64];
	char *tok, *next;
	int n = 0;

	if (strlen(s) >= sizeof(buf))
		return shape_fail(il, "%s=%.20s... is too long", key, s);
	strcpy(buf, s);
	for (tok = buf;; tok = next + 1) {
		next = strchr(tok, sep);
		if (next)
			*next = '\0';
		if (n == max_nr)
			return shape_fail(il, "%s=%s has more than %d values", key, s, max_nr);
		if (shape_check_int(il, key, tok, min, max, &v[n]))
			return -EINVAL;
		n++;
		if (!next)
			return n;
	}
}

/* "P", "PHxPW", "T,L,B,R" or "same" (the flag tells the caller to work it out). */
int shape_pad(struct shape_layer *il, int pad[4], bool *same)
{
	int64_t v[4];
	const char *s;
	int err, n;

	memset(pad, 0, 4 * sizeof(int));
	*same = false;
	s = shape_value(il, "pad", false, &err);
	if (!s)
		return err;
	if (!strcmp(s, "same")) {
		*same = true;
		return 0;
	}
	if (strchr(s, ',')) {
		n = shape_int_list(il, "pad", s, ',', 0, MODEL_MAX_WINDOW, v, 4);
		if (n < 0)
			return n;
		if (n != 4)
			return shape_fail(il, "pad=%s: give 1 value, HxW, or 4 values T,L,B,R", s);
		pad[0] = (int)v[0];
		pad[1] = (int)v[1];
		pad[2] = (int)v[2];
		pad[3] = (int)v[3];
		return 0;
	}
	n = shape_int_list(il, "pad", s, 'x', 0, MODEL_MAX_WINDOW, v, 2);
	if (n < 0)
		return n;
	pad[0] = pad[2] = (int)v[0];
	pad[1] = pad[3] = (int)v[n - 1];
	return 0;
}

/* TensorFlow's SAME: output = ceil(in / stride), the odd pixel of padding at the end. */
void shape_same_pad(int64_t in, int k_eff, int stride, int *before, int *after)
{
	int64_t total = window_same_pad_total(in, k_eff, stride);

	*before = (int)(total / 2);
	*after = (int)(total - total / 2);
}

int shape_set_out(struct shape_layer *il, int ndims, const int64_t *dims)
{
	struct model_shape *s = &il->l->out;
	int64_t elems = 1;
	char buf[128];
	int i;

	s->ndims = ndims;
	for (i = 0; i < ndims; i++)
		s->dims[i] = dims[i];
	for (i = 0; i < ndims; i++) {
		if (dims[i] < 1 || dims[i] > SHAPE_MAX_DIM) {
			shape_format_shape(s, buf, sizeof(buf));
			return shape_fail(il, "output shape %s has a dimension outside [1, %d]",
					  buf, SHAPE_MAX_DIM);
		}
		elems *= dims[i];
		if (elems > SHAPE_MAX_ELEMS) {
			shape_format_shape(s, buf, sizeof(buf));
			return shape_fail(il, "output shape %s has more than %lld elements", buf,
					  (long long)SHAPE_MAX_ELEMS);
		}
	}
	return 0;
}

int shape_need_ndims(struct shape_layer *il, int idx, int min, int max)
{
	char buf[128];

	if (il->in[idx]->ndims >= min && il->in[idx]->ndims <= max)
		return 0;
	shape_format_shape(il->in[idx], buf, sizeof(buf));
	if (min == max)
		return shape_fail(il, "input '%s' has shape %s; expected %d dimensions",
				  il->c->m->layers[il->l->inputs[idx]].name, buf, min);
	return shape_fail(il, "input '%s' has shape %s; expected %d to %d dimensions",
			  il->c->m->layers[il->l->inputs[idx]].name, buf, min, max);
}

/* macs/params as a product of factors, refusing overflow. */
int shape_product(struct shape_layer *il, uint64_t *out, int nr, ...)
{
	uint64_t acc = 1;
	va_list ap;
	int i;

	va_start(ap, nr);
	for (i = 0; i < nr; i++) {
		uint64_t f = va_arg(ap, uint64_t);

		if (__builtin_mul_overflow(acc, f, &acc)) {
			va_end(ap);
			return shape_fail(il,
					  "layer is too large (MAC or parameter count overflows)");
		}
	}
	va_end(ap);
	*out = acc;
	return 0;
}

int shape_normalize_axis(struct shape_layer *il, const char *key, int64_t axis, int ndims, int *out)
{
	if (axis < -ndims || axis >= ndims)
		return shape_fail(il, "%s=%lld is out of range for %d dimensions", key,
				  (long long)axis, ndims);
	*out = (int)(axis < 0 ? axis + ndims : axis);
	return 0;
}
