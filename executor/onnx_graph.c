// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The ONNX importer's graph: unpacks the protobuf (bounded, every size
 * checked before use), registers every named value (initializers decoded
 * into constants, graph inputs into coloc input layers with their symbolic
 * dims resolved from the options), counts each value's readers, and holds
 * the helpers the other onnx_*.c files share: value and layer lookup,
 * attributes, and the one error format naming the node.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "huge_alloc.h"
#include "model_file.h"
#include "onnx_internal.h"
#include "trusted_path.h"

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

#define LAYER_HASH_CAP (2 * MODEL_MAX_LAYERS)

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

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
		uint32_t mask = LAYER_HASH_CAP - 1, h = name_hash(cand) & mask;
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

/* ---- initializers -------------------------------------------------------- */

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

/*
 * Whether a relative path stays below its directory: no leading '/', no
 * ".." component (ONNX Runtime's rule for external data locations).
 */
static bool path_stays_below(const char *p)
{
	if (!*p || *p == '/')
		return false;
	for (const char *s = p; *s;) {
		size_t n = strcspn(s, "/");

		if (n == 2 && s[0] == '.' && s[1] == '.')
			return false;
		s += n;
		s += *s == '/';
	}
	return true;
}

/*
 * The external data file at loc below the model's directory: the one the
 * caller opened (opts->dir_fd) or the name's, opened for this file only.
 */
static int external_open(const struct onnx_ctx *c, const char *loc, const char **what)
{
	if (c->opts && c->opts->has_dir_fd)
		return model_external_open(c->opts->dir_fd, loc, what);
	return model_external_open_beside(c->file, loc, what);
}

/*
 * The bytes of a tensor kept in an external data file (ONNX's
 * data_location EXTERNAL: "location", a path relative to the model file's
 * directory, "offset" and "length" in bytes), want bytes of them, into a
 * new buffer at *out. 0 or a negative errno with the tensor named.
 */
static int external_bytes(struct onnx_ctx *c, const Onnx__TensorProto *t, const char *name,
			  size_t want, uint8_t **out)
{
	const char *loc = NULL, *slash = strrchr(c->file, '/');
	long long off = 0, len = -1;
	const char *what = NULL;
	char path[PATH_MAX], why[PATH_MAX + 96];
	struct stat st;
	size_t got = 0;
	bool own = true;
	uint8_t *buf;
	int fd, ret;

	for (size_t i = 0; i < t->n_external_data; i++) {
		const Onnx__StringStringEntryProto *e = t->external_data[i];
		char *end;

		if (!e->key || !e->value)
			continue;
		if (!strcmp(e->key, "location")) {
			loc = e->value;
		} else if (!strcmp(e->key, "offset") || !strcmp(e->key, "length")) {
			long long v;

			errno = 0;
			v = strtoll(e->value, &end, 10);
			if (errno || end == e->value || *end || v < 0)
				return onnx_refuse(c, -EINVAL,
						   "tensor '%.64s': external data %s '%.32s' is "
						   "not a byte count",
						   name, e->key, e->value);
			*(!strcmp(e->key, "offset") ? &off : &len) = v;
		}
	}
	if (!loc)
		return onnx_refuse(c, -EINVAL,
				   "tensor '%.64s' is in external data with no location", name);
	if (!path_stays_below(loc))
		return onnx_refuse(c, -EPERM,
				   "tensor '%.64s': external data location '%.128s' is not a "
				   "path below the model's directory",
				   name, loc);
	if (len >= 0 && (unsigned long long)len != want)
		return onnx_refuse(c, -EINVAL,
				   "tensor '%.64s': external data length %lld, but its shape "
				   "and type take %zu bytes",
				   name, len, want);
	if (c->opts && c->opts->external) {
		fd = -1;
		for (int i = 0; i < c->opts->nr_external && fd < 0; i++)
			if (!strcmp(c->opts->external[i].location, loc))
				fd = c->opts->external[i].fd;
		if (fd < 0)
			return onnx_refuse(c, -ENOENT,
					   "tensor '%.64s': external data file '%.128s' was not "
					   "handed over with the model",
					   name, loc);
		snprintf(path, sizeof(path), "'%.128s'", loc);
		own = false;
	} else {
		if ((size_t)snprintf(path, sizeof(path), "%.*s%s",
				     slash ? (int)(slash - c->file + 1) : 0, c->file,
				     loc) >= sizeof(path))
			return onnx_refuse(c, -ENAMETOOLONG,
					   "tensor '%.64s': external data path too long", name);
		fd = external_open(c, loc, &what);
		if (fd < 0)
			return onnx_refuse(c, fd, "tensor '%.64s': external data file %.256s %s",
					   name, path, what ? what : strerror(-fd));
		if (c->opts && c->opts->owner_rule &&
		    trusted_path_check(AT_FDCWD, path, fd, why, sizeof(why))) {
			close(fd);
			return coloc_err_set(c->err, -EACCES,
					     "%s: tensor '%.64s': external data file %.256s %s: %s",
					     c->file, name, path, why, TRUSTED_PATH_ADVICE);
		}
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (unsigned long long)off + want > (unsigned long long)st.st_size) {
		if (own)
			close(fd);
		return onnx_refuse(c, -EINVAL,
				   "tensor '%.64s': external data file %.256s has no %zu bytes at "
				   "offset %lld",
				   name, path, want, off);
	}
	buf = huge_alloc(want);
	if (!buf) {
		if (own)
			close(fd);
		return coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
	}
	while (got < want) {
		ssize_t n = pread(fd, buf + got, want - got, (off_t)off + (off_t)got);

		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			if (own)
			close(fd);
			free(buf);
			return onnx_refuse(c, ret, "tensor '%.64s': reading %.256s failed", name,
					   path);
		}
		got += (size_t)n;
	}
	if (own)
		close(fd);
	*out = buf;
	return 0;
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
	if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
		int ret = external_bytes(c, t, name, (size_t)n * (size_t)es, &ext);

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
		/* external_bytes() read exactly n x es bytes */
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
			return coloc_err_set(c->err, -E2BIG,
					     "%s: its initializers decode to more than %llu MiB (at "
					     "initializer %zu of %zu), the most coloc imports",
					     c->file, ONNX_MAX_DECODED_BYTES >> 20, i + 1,
					     c->g->n_initializer);
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
	c->layer_hash = malloc(LAYER_HASH_CAP * sizeof(int));
	if (!c->layer_hash)
		return coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
	memset(c->layer_hash, 0xff, LAYER_HASH_CAP * sizeof(int));
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
