// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Weights files: a model's raw parameters (struct exec_layer_params, before
 * batch-norm folding) stored instead of generated from its seed. The format
 * (models/WEIGHTS.md), all little-endian:
 *
 *	"COLOCWT1"                      8-byte magic
 *	u32 nr_layers                   layers of the model that have parameters
 *	per such layer, by increasing index:
 *		u32 layer                   its index in the model
 *		u32 nr_tensors              those of weights, bias, bn gamma, beta,
 *		                            mean, var that the layer has, in this order
 *		per tensor: u64 nr_elems, then nr_elems fp32 values
 *
 * The reader is strict and checks everything against the model before it
 * allocates: exec_weights_open() walks the whole file once (every header,
 * every value finite), so a bad file fails before oneDNN builds anything,
 * then exec_weights_read_layer() seeks to a layer and reads it through the
 * same checks. Memory is bounded by the model, never by the file.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "executor.h"

#define MAGIC "COLOCWT1"
#define MAGIC_LEN 8
#define MAX_TENSORS 6
#define CHUNK_ELEMS 16384

/* One tensor of a layer: its name, size from the model, and field in the params. */
struct tensor_desc {
	const char *name;
	size_t nr_elems;
	size_t ptr_off; /* offsetof the float * in struct exec_layer_params */
	size_t nr_off; /* offsetof its size_t count, or SIZE_MAX if none */
};

struct exec_weights_file {
	const struct model *m;
	char *path;
	FILE *f;
	uint64_t size; /* of the file */
	uint64_t off; /* where f is */
	uint64_t *layer_off; /* per layer: offset of its entry; 0 = no parameters */
	float *chunk;
};

static void put_desc(struct tensor_desc *t, int *n, const char *name, size_t nr_elems,
		     size_t ptr_off, size_t nr_off)
{
	t[*n] = (struct tensor_desc){ name, nr_elems, ptr_off, nr_off };
	(*n)++;
}

static bool mul_ok(uint64_t *acc, int64_t x)
{
	return x > 0 && !__builtin_mul_overflow(*acc, (uint64_t)x, acc) && *acc <= SIZE_MAX / 4;
}

/*
 * The tensors exec_layer_params_generate() fills for layer li, in file
 * order. Returns how many (0: no parameters) or -EINVAL for a layer whose
 * shapes make no sense; allocates nothing.
 */
static int layer_tensors(const struct model *m, int li, struct tensor_desc *t)
{
	const struct model_layer *l = &m->layers[li];
	const struct model_shape *in = NULL;
	uint64_t w = 1, d = 1;
	int n = 0;

	if (l->nr_inputs >= 1 && l->inputs[0] >= 0 && l->inputs[0] < li)
		in = &m->layers[l->inputs[0]].out;
	switch (l->op) {
	case MODEL_OP_CONV:
	case MODEL_OP_DECONV: /* [IC][OC/g][kh][kw]: as many as conv's [OC][IC/g][kh][kw] */
		if (!in || in->ndims != 4 || l->conv.groups <= 0 ||
		    !mul_ok(&d, l->conv.out_channels) || !mul_ok(&w, l->conv.out_channels) ||
		    !mul_ok(&w, in->dims[1] / l->conv.groups) || !mul_ok(&w, l->conv.kh) ||
		    !mul_ok(&w, l->conv.kw))
			return -EINVAL;
		put_desc(t, &n, "weights", w, offsetof(struct exec_layer_params, weights),
			 offsetof(struct exec_layer_params, nr_weights));
		if (l->conv.bias)
			put_desc(t, &n, "bias", d, offsetof(struct exec_layer_params, bias),
				 offsetof(struct exec_layer_params, nr_bias));
		if (l->conv.batch_norm) {
			put_desc(t, &n, "bn gamma", d, offsetof(struct exec_layer_params, bn_gamma),
				 SIZE_MAX);
			put_desc(t, &n, "bn beta", d, offsetof(struct exec_layer_params, bn_beta),
				 SIZE_MAX);
			put_desc(t, &n, "bn mean", d, offsetof(struct exec_layer_params, bn_mean),
				 SIZE_MAX);
			put_desc(t, &n, "bn var", d, offsetof(struct exec_layer_params, bn_var),
				 SIZE_MAX);
		}
		return n;
	case MODEL_OP_FC:
		if (!in || in->ndims < 1 || !mul_ok(&d, l->fc.out_features) ||
		    !mul_ok(&w, in->dims[in->ndims - 1]) || !mul_ok(&w, l->fc.out_features))
			return -EINVAL;
		put_desc(t, &n, "weights", w, offsetof(struct exec_layer_params, weights),
			 offsetof(struct exec_layer_params, nr_weights));
		if (l->fc.bias)
			put_desc(t, &n, "bias", d, offsetof(struct exec_layer_params, bias),
				 offsetof(struct exec_layer_params, nr_bias));
		return n;
	case MODEL_OP_LAYER_NORM:
		if (l->out.ndims < 1 || l->out.ndims > MODEL_MAX_DIMS ||
		    !mul_ok(&d, l->out.dims[l->out.ndims - 1]))
			return -EINVAL;
		put_desc(t, &n, "gamma", d, offsetof(struct exec_layer_params, weights),
			 offsetof(struct exec_layer_params, nr_weights));
		put_desc(t, &n, "beta", d, offsetof(struct exec_layer_params, bias),
			 offsetof(struct exec_layer_params, nr_bias));
		return n;
	case MODEL_OP_EMBED:
		if (!mul_ok(&w, l->embed.vocab) || !mul_ok(&w, l->embed.dim))
			return -EINVAL;
		put_desc(t, &n, "table", w, offsetof(struct exec_layer_params, weights),
			 offsetof(struct exec_layer_params, nr_weights));
		return n;
	default:
		if (!model_op_is_binary(l->op) || !l->binary.has_const)
			return 0;
		for (int i = 0; i < l->binary.cshape.ndims; i++)
			if (!mul_ok(&w, l->binary.cshape.dims[i]))
				return -EINVAL;
		put_desc(t, &n, "constant", w, offsetof(struct exec_layer_params, weights),
			 offsetof(struct exec_layer_params, nr_weights));
		return n;
	}
}

static float **tensor_ptr(struct exec_layer_params *p, const struct tensor_desc *t)
{
	return (float **)((char *)p + t->ptr_off);
}

static int bad(const struct exec_weights_file *wf, uint64_t off, struct coloc_err *err,
	       const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	coloc_err_set(err, -EINVAL, "%s: byte %llu: %s", wf->path, (unsigned long long)off, msg);
	return -EINVAL;
}

/* Reads n bytes at wf->off, or says which field the file ends in. */
static int read_bytes(struct exec_weights_file *wf, void *buf, size_t n, const char *what,
		      struct coloc_err *err)
{
	if (wf->off > wf->size || n > wf->size - wf->off)
		return bad(
			wf, wf->off, err, "truncated file: %s needs %zu bytes, %llu left", what, n,
			(unsigned long long)(wf->size - (wf->off < wf->size ? wf->off : wf->size)));
	if (fread(buf, 1, n, wf->f) != n)
		return bad(wf, wf->off, err, "cannot read %s: %s", what,
			   ferror(wf->f) ? strerror(errno) : "file shrank while reading");
	wf->off += n;
	return 0;
}

static uint64_t le_u64(const unsigned char *b, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

static int read_u32(struct exec_weights_file *wf, uint32_t *v, const char *what,
		    struct coloc_err *err)
{
	unsigned char b[4];
	int ret = read_bytes(wf, b, sizeof(b), what, err);

	*v = (uint32_t)le_u64(b, 4);
	return ret;
}

static int read_u64(struct exec_weights_file *wf, uint64_t *v, const char *what,
		    struct coloc_err *err)
{
	unsigned char b[8];
	int ret = read_bytes(wf, b, sizeof(b), what, err);

	*v = le_u64(b, 8);
	return ret;
}

static void floats_from_le(float *v, size_t n)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	for (size_t i = 0; i < n; i++) {
		uint32_t x;

		memcpy(&x, &v[i], 4);
		x = __builtin_bswap32(x);
		memcpy(&v[i], &x, 4);
	}
#else
	(void)v;
	(void)n;
#endif
}

/*
 * The n values of a tensor into dst (or, with dst NULL, through wf->chunk
 * to check them): each finite, batch-norm variances not negative.
 */
static int read_values(struct exec_weights_file *wf, const char *lname, int li,
		       const struct tensor_desc *t, float *dst, struct coloc_err *err)
{
	bool var = !strcmp(t->name, "bn var");
	char what[160];

	snprintf(what, sizeof(what), "layer %d '%s' %s", li, lname, t->name);
	for (size_t done = 0; done < t->nr_elems;) {
		size_t n = t->nr_elems - done;
		uint64_t start = wf->off;
		float *v = dst ? dst + done : wf->chunk;
		int ret;

		if (!dst && n > CHUNK_ELEMS)
			n = CHUNK_ELEMS;
		ret = read_bytes(wf, v, n * sizeof(float), what, err);
		if (ret)
			return ret;
		floats_from_le(v, n);
		for (size_t i = 0; i < n; i++) {
			if (!isfinite(v[i]))
				return bad(wf, start + i * 4, err, "%s[%zu] is %s", what, done + i,
					   isnan(v[i]) ? "NaN" : "infinite");
			if (var && v[i] < 0.0f)
				return bad(wf, start + i * 4, err,
					   "%s[%zu] is %g (a variance cannot be negative)", what,
					   done + i, (double)v[i]);
		}
		done += n;
	}
	return 0;
}

/*
 * One layer's entry at wf->off, checked against the model; with p, its
 * tensors are stored there (allocated at the model's sizes, checked first).
 * expect is the layer the entry must be.
 */
static int read_entry(struct exec_weights_file *wf, int expect, struct exec_layer_params *p,
		      struct coloc_err *err)
{
	const struct model *m = wf->m;
	const struct model_layer *l = &m->layers[expect];
	struct tensor_desc t[MAX_TENSORS];
	uint64_t at = wf->off;
	uint32_t idx, nr;
	int ret, n = layer_tensors(m, expect, t);

	if (n < 0)
		return bad(wf, at, err, "layer %d '%s': the model's shapes are invalid", expect,
			   l->name);
	ret = read_u32(wf, &idx, "layer index", err);
	if (ret)
		return ret;
	if (idx != (uint32_t)expect) {
		struct tensor_desc u[MAX_TENSORS];

		if (idx >= (uint32_t)m->nr_layers)
			return bad(wf, at, err,
				   "layer index %u out of range (model '%s' has %d layers); "
				   "expected layer %d '%s'",
				   idx, m->name, m->nr_layers, expect, l->name);
		if (layer_tensors(m, (int)idx, u) == 0)
			return bad(wf, at, err,
				   "layer %u '%s' (%s) has no parameters; expected layer %d '%s'",
				   idx, m->layers[idx].name, model_op_name(m->layers[idx].op),
				   expect, l->name);
		if (idx < (uint32_t)expect)
			return bad(wf, at, err,
				   "layer %u '%s' out of order (duplicate or not increasing); "
				   "expected layer %d '%s'",
				   idx, m->layers[idx].name, expect, l->name);
		return bad(wf, at, err, "layer %d '%s' is missing (found layer %u '%s')", expect,
			   l->name, idx, m->layers[idx].name);
	}
	at = wf->off;
	ret = read_u32(wf, &nr, "tensor count", err);
	if (ret)
		return ret;
	if (nr != (uint32_t)n)
		return bad(wf, at, err, "layer %d '%s' (%s): %u tensors, expected %d", expect,
			   l->name, model_op_name(l->op), nr, n);
	for (int i = 0; i < n; i++) {
		float *dst = NULL;
		uint64_t elems;

		at = wf->off;
		ret = read_u64(wf, &elems, "element count", err);
		if (ret)
			return ret;
		if (elems != t[i].nr_elems)
			return bad(wf, at, err,
				   "layer %d '%s' %s: %llu elements, expected %zu for the layer's "
				   "shape",
				   expect, l->name, t[i].name, (unsigned long long)elems,
				   t[i].nr_elems);
		if (p) {
			dst = malloc((elems ? elems : 1) * sizeof(float));
			if (!dst) {
				coloc_err_set(err, -ENOMEM, "%s: out of memory", wf->path);
				return -ENOMEM;
			}
			*tensor_ptr(p, &t[i]) = dst;
			if (t[i].nr_off != SIZE_MAX)
				*(size_t *)((char *)p + t[i].nr_off) = elems;
		}
		ret = read_values(wf, l->name, expect, &t[i], dst, err);
		if (ret)
			return ret;
	}
	if (p && l->op == MODEL_OP_CONV && l->conv.batch_norm)
		p->bn_eps = EXEC_BN_EPS;
	return 0;
}

void exec_weights_close(struct exec_weights_file *wf)
{
	if (!wf)
		return;
	if (wf->f)
		fclose(wf->f);
	free(wf->layer_off);
	free(wf->chunk);
	free(wf->path);
	free(wf);
}

struct exec_weights_file *exec_weights_open(const struct model *m, const char *path,
					    struct coloc_err *err)
{
	struct tensor_desc t[MAX_TENSORS];
	struct exec_weights_file *wf;
	char magic[MAGIC_LEN];
	uint32_t nr, want = 0;
	struct stat st;
	int li;

	if (!m || !path || m->nr_layers <= 0 || !m->layers) {
		coloc_err_set(err, -EINVAL, "%s: no model to check the weights against",
			      path ? path : "(null)");
		return NULL;
	}
	wf = calloc(1, sizeof(*wf));
	if (!wf || !(wf->path = strdup(path)) ||
	    !(wf->layer_off = calloc((size_t)m->nr_layers, sizeof(*wf->layer_off))) ||
	    !(wf->chunk = malloc(CHUNK_ELEMS * sizeof(float)))) {
		coloc_err_set(err, -ENOMEM, "%s: out of memory", path);
		goto fail;
	}
	wf->m = m;
	wf->f = fopen(path, "rb");
	if (!wf->f || fstat(fileno(wf->f), &st)) {
		coloc_err_set(err, -errno, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		coloc_err_set(err, -EINVAL, "%s: not a regular file", path);
		goto fail;
	}
	wf->size = (uint64_t)st.st_size;
	for (li = 0; li < m->nr_layers; li++) {
		int n = layer_tensors(m, li, t);

		if (n < 0) {
			coloc_err_set(err, -EINVAL,
				      "%s: layer %d '%s': the model's shapes are invalid", path, li,
				      m->layers[li].name);
			goto fail;
		}
		want += n > 0;
	}
	if (read_bytes(wf, magic, MAGIC_LEN, "magic", err))
		goto fail;
	if (memcmp(magic, MAGIC, MAGIC_LEN)) {
		bad(wf, 0, err, "bad magic (not a coloc weights file: expected \"%s\")", MAGIC);
		goto fail;
	}
	if (read_u32(wf, &nr, "layer count", err))
		goto fail;
	if (nr != want) {
		bad(wf, MAGIC_LEN, err, "%u layers with parameters, model '%s' has %u", nr, m->name,
		    want);
		goto fail;
	}
	for (li = 0; li < m->nr_layers; li++) {
		if (layer_tensors(m, li, t) == 0)
			continue;
		wf->layer_off[li] = wf->off;
		if (read_entry(wf, li, NULL, err))
			goto fail;
	}
	if (wf->off != wf->size) {
		bad(wf, wf->off, err, "%llu trailing bytes after the last layer",
		    (unsigned long long)(wf->size - wf->off));
		goto fail;
	}
	return wf;
fail:
	exec_weights_close(wf);
	return NULL;
}

int exec_weights_read_layer(struct exec_weights_file *wf, int layer, struct exec_layer_params *p,
			    struct coloc_err *err)
{
	int ret;

	memset(p, 0, sizeof(*p));
	if (!wf || layer < 0 || layer >= wf->m->nr_layers)
		return -EINVAL;
	if (!wf->layer_off[layer])
		return 0;
	if (fseeko(wf->f, (off_t)wf->layer_off[layer], SEEK_SET)) {
		ret = -errno;
		coloc_err_set(err, ret, "%s: cannot seek: %s", wf->path, strerror(errno));
		return ret;
	}
	wf->off = wf->layer_off[layer];
	ret = read_entry(wf, layer, p, err);
	if (ret)
		exec_layer_params_free(p);
	return ret;
}

static void put_le(unsigned char *b, uint64_t v, int n)
{
	for (int i = 0; i < n; i++, v >>= 8)
		b[i] = (unsigned char)v;
}

static int write_floats(FILE *f, const float *v, size_t n)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	for (size_t i = 0; i < n; i++) {
		uint32_t x;
		unsigned char b[4];

		memcpy(&x, &v[i], 4);
		put_le(b, x, 4);
		if (fwrite(b, 1, 4, f) != 4)
			return -EIO;
	}
	return 0;
#else
	return fwrite(v, sizeof(float), n, f) == n ? 0 : -EIO;
#endif
}

/* Layer li's entry with the generator's values, checked against the format's sizes. */
static int write_entry(FILE *f, const struct model *m, int li, const struct tensor_desc *t, int n,
		       char *why, size_t why_len)
{
	struct exec_layer_params p;
	unsigned char hdr[8];
	int ret = exec_layer_params_generate(m, li, &p);

	if (ret) {
		snprintf(why, why_len, "cannot generate layer %d's weights: %s", li,
			 strerror(-ret));
		return ret;
	}
	put_le(hdr, (uint32_t)li, 4);
	put_le(hdr + 4, (uint32_t)n, 4);
	ret = fwrite(hdr, 1, 8, f) == 8 ? 0 : -EIO;
	for (int i = 0; i < n && !ret; i++) {
		const float *v = *tensor_ptr(&p, &t[i]);
		size_t nr = t[i].nr_off == SIZE_MAX ? t[i].nr_elems :
						      *(size_t *)((char *)&p + t[i].nr_off);

		if (!v || nr != t[i].nr_elems) {
			snprintf(why, why_len, "layer %d %s: generated %zu values, expected %zu",
				 li, t[i].name, v ? nr : 0, t[i].nr_elems);
			ret = -EINVAL;
			break;
		}
		put_le(hdr, t[i].nr_elems, 8);
		ret = fwrite(hdr, 1, 8, f) == 8 ? 0 : -EIO;
		if (!ret)
			ret = write_floats(f, v, nr);
	}
	if (ret == -EIO)
		snprintf(why, why_len, "write error: %s", strerror(errno));
	exec_layer_params_free(&p);
	return ret;
}

int exec_weights_save(const struct model *m, const char *path, uint32_t seed, struct coloc_err *err)
{
	struct tensor_desc t[MAX_TENSORS];
	unsigned char hdr[4];
	struct model seeded;
	char why[320] = "";
	uint32_t nr = 0;
	int ret = 0;
	FILE *f;

	if (!m || !path || m->nr_layers <= 0 || !m->layers) {
		coloc_err_set(err, -EINVAL, "%s: no model to save weights for",
			      path ? path : "(null)");
		return -EINVAL;
	}
	for (int li = 0; li < m->nr_layers; li++) {
		int n = layer_tensors(m, li, t);

		if (n < 0) {
			coloc_err_set(err, -EINVAL,
				      "%s: layer %d '%s': the model's shapes are invalid", path, li,
				      m->layers[li].name);
			return -EINVAL;
		}
		nr += n > 0;
	}
	seeded = *m;
	seeded.seed = seed;
	f = fopen(path, "wb");
	if (!f) {
		ret = -errno;
		coloc_err_set(err, ret, "%s: %s", path, strerror(errno));
		return ret;
	}
	put_le(hdr, nr, 4);
	if (fwrite(MAGIC, 1, MAGIC_LEN, f) != MAGIC_LEN || fwrite(hdr, 1, 4, f) != 4) {
		ret = -EIO;
		snprintf(why, sizeof(why), "write error: %s", strerror(errno));
	}
	for (int li = 0; li < m->nr_layers && !ret; li++) {
		int n = layer_tensors(m, li, t);

		if (n > 0)
			ret = write_entry(f, &seeded, li, t, n, why, sizeof(why));
	}
	if (fclose(f) && !ret) {
		ret = -EIO;
		snprintf(why, sizeof(why), "write error: %s", strerror(errno));
	}
	if (ret) {
		coloc_err_set(err, ret, "%s: %s", path, why);
		remove(path);
	}
	return ret;
}
