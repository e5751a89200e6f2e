// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Weights files (executor/exec_weights_file.c, format in models/WEIGHTS.md):
 * saving a model's seeded weights and loading them back gives bit-identical
 * outputs (a small model with every op that has parameters, and
 * mobilenet_v2 from models/); a file written with another seed changes the
 * outputs, which then match the plain-C reference run with that seed's
 * parameters; every kind of malformed file is refused with a message naming
 * the file, the byte offset and the fault; and a few hundred random
 * mutations of a valid file never crash the reader (run under SANITIZE=1).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "executor.h"
#include "reference.h"

#define TOL 1e-4f /* see tests/ops_fixture.h */

/* Every op with parameters: conv with bn, with bias and bn, depthwise with bias; fc; layer norm. */
static const char conv_text[] = "model wt_conv\n"
				"seed 42\n"
				"macs 124608\n"
				"params 1152\n"
				"input image shape=1x3x12x12\n"
				"conv c1 out=8 k=3 pad=1 bn act=relu\n"
				"conv c2 out=8 k=3 pad=1 bias bn\n"
				"conv c3 dw k=3 pad=1 bias act=relu\n"
				"pool gap kind=global_avg\n"
				"reshape flat shape=1x8\n"
				"fc f1 out=16 bias act=relu\n"
				"layer_norm ln\n"
				"fc f2 out=4\n"
				"end\n";

static const char embed_text[] = "model wt_embed\n"
				 "seed 7\n"
				 "macs 96\n"
				 "params 123\n"
				 "input ids shape=1x4\n"
				 "embed e vocab=10 dim=8\n"
				 "layer_norm ln\n"
				 "fc f out=3 bias\n"
				 "end\n";

static struct model *parse(const char *text, size_t len)
{
	struct coloc_err err = { 0 };
	struct model *m = model_parse("test", text, len, &err);

	if (!m)
		fprintf(stderr, "parse: %s\n", coloc_err_str(&err));
	return m;
}

static int read_whole(const char *path, unsigned char **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long n;

	if (!f)
		return -errno;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	*buf = malloc((size_t)n + 1);
	*len = fread(*buf, 1, (size_t)n, f);
	fclose(f);
	return *len == (size_t)n ? 0 : -EIO;
}

static int write_whole(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	size_t n;

	if (!f)
		return -errno;
	n = fwrite(buf, 1, len, f);
	return fclose(f) || n != len ? -EIO : 0;
}

/* Loads m (weights from path, or generated with path NULL), runs it on one core; the last output. */
static float *run_model(struct __test_metadata *_metadata, const struct model *m, const char *path,
			float ***inputs)
{
	struct exec_options opts = { .cpus = { .nr = 1, .cpus = { 0 } }, .weights_path = path };
	int last = m->nr_layers - 1;
	int64_t n = model_shape_elems(&m->layers[last].out);
	float *out = malloc((size_t)n * sizeof(float));
	struct exec_model *em;
	struct exec_query *q;
	struct coloc_err err = { 0 };

	em = exec_model_load(m, &opts, &err);
	EXPECT_NE(NULL, em) TH_LOG("load: %s", err.msg);
	if (!em) {
		free(out);
		return NULL;
	}
	q = exec_query_new(em);
	EXPECT_NE(NULL, q);
	exec_query_fill_inputs(q, m, 1234);
	EXPECT_EQ(0, exec_run_block(em, q, 0, m->nr_layers, NULL, &opts.cpus, NULL));
	EXPECT_EQ(0, exec_query_read_output(q, last, out, (size_t)n));
	if (inputs) {
		*inputs = calloc((size_t)m->nr_layers, sizeof(float *));
		for (int li = 0; li < m->nr_layers; li++) {
			int64_t e = model_shape_elems(&m->layers[li].out);

			if (m->layers[li].op != MODEL_OP_INPUT)
				continue;
			(*inputs)[li] = malloc((size_t)e * sizeof(float));
			memcpy((*inputs)[li], exec_query_input(q, li), (size_t)e * sizeof(float));
		}
	}
	exec_query_free(q);
	exec_model_free(em);
	return out;
}

/* The reference's last output of m from the given inputs (m's seed picks the parameters). */
static float *reference_last(struct __test_metadata *_metadata, const struct model *m,
			     float **inputs)
{
	float **ref = calloc((size_t)m->nr_layers, sizeof(float *)), *out;
	int last = m->nr_layers - 1;

	for (int li = 0; li < m->nr_layers; li++) {
		const float *ins[MODEL_MAX_INPUTS];

		if (m->layers[li].op == MODEL_OP_INPUT) {
			ref[li] = inputs[li];
			inputs[li] = NULL;
			continue;
		}
		ref[li] = malloc((size_t)model_shape_elems(&m->layers[li].out) * sizeof(float));
		for (int j = 0; j < m->layers[li].nr_inputs; j++)
			ins[j] = ref[m->layers[li].inputs[j]];
		EXPECT_EQ(0, ref_layer(m, li, ins, ref[li]));
	}
	out = ref[last];
	for (int li = 0; li < last; li++)
		free(ref[li]);
	free(ref);
	return out;
}

static void free_inputs(const struct model *m, float **inputs)
{
	for (int li = 0; li < m->nr_layers; li++)
		free(inputs[li]);
	free(inputs);
}

FIXTURE(weights)
{
	struct model *m;
	char dir[64];
	char path[128]; /* the valid file, m's own seed */
	char bad[128]; /* where each test writes its broken copy */
	unsigned char *buf;
	size_t len;
	struct coloc_err err;
};

FIXTURE_SETUP(weights)
{
	strcpy(self->dir, "/tmp/coloc-weights-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->path, sizeof(self->path), "%s/good.wt", self->dir);
	snprintf(self->bad, sizeof(self->bad), "%s/bad.wt", self->dir);
	self->m = parse(conv_text, sizeof(conv_text) - 1);
	ASSERT_NE(NULL, self->m);
	ASSERT_EQ(0, exec_weights_save(self->m, self->path, self->m->seed, &self->err))
	TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, read_whole(self->path, &self->buf, &self->len));
}

FIXTURE_TEARDOWN(weights)
{
	unlink(self->path);
	unlink(self->bad);
	rmdir(self->dir);
	free(self->buf);
	model_free(self->m);
}

static uint32_t get_u32(const unsigned char *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t get_u64(const unsigned char *b)
{
	return get_u32(b) | (uint64_t)get_u32(b + 4) << 32;
}

static void put_u32(unsigned char *b, uint32_t v)
{
	for (int i = 0; i < 4; i++, v >>= 8)
		b[i] = (unsigned char)v;
}

static void put_u64(unsigned char *b, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		b[i] = (unsigned char)v;
}

/* Offsets of the entries of a valid file, walked independently of the reader. */
static int entry_offsets(const unsigned char *b, size_t len, size_t *offs, int max)
{
	uint32_t nr = get_u32(b + 8);
	size_t at = 12;

	for (uint32_t e = 0; e < nr && (int)e < max; e++) {
		uint32_t nt = get_u32(b + at + 4);

		offs[e] = at;
		at += 8;
		for (uint32_t t = 0; t < nt; t++)
			at += 8 + 4 * get_u64(b + at);
	}
	offs[nr] = at;
	return at == len ? (int)nr : -1;
}

/* Writes b to self->bad, opens it; expects refusal with "BAD: byte OFF: ...what...". */
static void expect_refused(struct __test_metadata *_metadata, FIXTURE_DATA(weights) * self,
			   const unsigned char *b, size_t len, long long off, const char *what)
{
	struct exec_weights_file *wf;
	char prefix[256];

	ASSERT_EQ(0, write_whole(self->bad, b, len));
	coloc_err_clear(&self->err);
	wf = exec_weights_open(self->m, self->bad, &self->err);
	EXPECT_EQ(NULL, wf);
	exec_weights_close(wf);
	if (off >= 0)
		snprintf(prefix, sizeof(prefix), "%s: byte %lld: ", self->bad, off);
	else
		snprintf(prefix, sizeof(prefix), "%s: ", self->bad);
	EXPECT_EQ(0, strncmp(self->err.msg, prefix, strlen(prefix)))
	TH_LOG("want prefix '%s', got '%s'", prefix, self->err.msg);
	EXPECT_NE(NULL, strstr(self->err.msg, what))
	TH_LOG("want '%s' in '%s'", what, self->err.msg);
}

TEST_F(weights, save__round_trip_is_bit_identical)
{
	struct exec_weights_file *wf;
	float *gen, *file;
	int64_t n = model_shape_elems(&self->m->layers[self->m->nr_layers - 1].out);

	/* The file holds exactly what the generator gives, layer by layer. */
	wf = exec_weights_open(self->m, self->path, &self->err);
	ASSERT_NE(NULL, wf) TH_LOG("%s", self->err.msg);
	for (int li = 0; li < self->m->nr_layers; li++) {
		struct exec_layer_params a, b;

		ASSERT_EQ(0, exec_layer_params_generate(self->m, li, &a));
		ASSERT_EQ(0, exec_weights_read_layer(wf, li, &b, &self->err))
		TH_LOG("%s", self->err.msg);
		EXPECT_EQ(a.nr_weights, b.nr_weights);
		EXPECT_EQ(a.nr_bias, b.nr_bias);
		EXPECT_EQ(a.weights == NULL, b.weights == NULL);
		if (a.weights && b.weights && a.nr_weights == b.nr_weights)
			EXPECT_EQ(0, memcmp(a.weights, b.weights, a.nr_weights * sizeof(float)));
		if (a.bias && b.bias && a.nr_bias == b.nr_bias)
			EXPECT_EQ(0, memcmp(a.bias, b.bias, a.nr_bias * sizeof(float)));
		EXPECT_EQ(a.bn_gamma == NULL, b.bn_gamma == NULL);
		if (a.bn_gamma && b.bn_gamma) {
			size_t oc = (size_t)self->m->layers[li].conv.out_channels * sizeof(float);

			EXPECT_EQ(0, memcmp(a.bn_gamma, b.bn_gamma, oc));
			EXPECT_EQ(0, memcmp(a.bn_beta, b.bn_beta, oc));
			EXPECT_EQ(0, memcmp(a.bn_mean, b.bn_mean, oc));
			EXPECT_EQ(0, memcmp(a.bn_var, b.bn_var, oc));
			EXPECT_EQ(a.bn_eps, b.bn_eps);
		}
		exec_layer_params_free(&a);
		exec_layer_params_free(&b);
	}
	exec_weights_close(wf);

	gen = run_model(_metadata, self->m, NULL, NULL);
	file = run_model(_metadata, self->m, self->path, NULL);
	ASSERT_NE(NULL, gen);
	ASSERT_NE(NULL, file);
	EXPECT_EQ(0, memcmp(gen, file, (size_t)n * sizeof(float)));
	free(gen);
	free(file);
}

TEST_F(weights, save__embed_model_round_trip_is_bit_identical)
{
	struct model *m = parse(embed_text, sizeof(embed_text) - 1);
	float *gen, *file;

	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, exec_weights_save(m, self->bad, m->seed, &self->err))
	TH_LOG("%s", self->err.msg);
	gen = run_model(_metadata, m, NULL, NULL);
	file = run_model(_metadata, m, self->bad, NULL);
	ASSERT_NE(NULL, gen);
	ASSERT_NE(NULL, file);
	EXPECT_EQ(0, memcmp(gen, file, 3 * sizeof(float)));
	free(gen);
	free(file);
	model_free(m);
}

/* Another seed's file: different outputs, and they match the reference with that seed. */
TEST_F(weights, load__other_seed_matches_reference_with_file_params)
{
	struct model other = *self->m;
	int last = self->m->nr_layers - 1;
	int64_t n = model_shape_elems(&self->m->layers[last].out);
	float *gen, *file, *ref, **inputs = NULL, max_err, max_ref;
	bool differ = false;

	other.seed = self->m->seed + 1000;
	ASSERT_EQ(0, exec_weights_save(self->m, self->bad, other.seed, &self->err))
	TH_LOG("%s", self->err.msg);
	gen = run_model(_metadata, self->m, NULL, NULL);
	file = run_model(_metadata, self->m, self->bad, &inputs);
	ASSERT_NE(NULL, gen);
	ASSERT_NE(NULL, file);
	for (int64_t i = 0; i < n; i++)
		differ |= fabsf(gen[i] - file[i]) > 1e-3f;
	EXPECT_TRUE(differ);
	/* other shares the layers; only its seed differs, so ref_layer uses the file's values. */
	ref = reference_last(_metadata, &other, inputs);
	ref_compare(file, ref, n, &max_err, &max_ref);
	EXPECT_LE(max_err, TOL * (1.0f + max_ref))
	TH_LOG("max err %g, max |ref| %g", max_err, max_ref);
	ref_compare(gen, ref, n, &max_err, &max_ref);
	EXPECT_GT(max_err, TOL * (1.0f + max_ref));
	free_inputs(self->m, inputs);
	free(ref);
	free(gen);
	free(file);
}

TEST(weights_file__mobilenet_v2_round_trip_is_bit_identical)
{
	const char *root = getenv("COLOC_ROOT");
	char path[512], wt[64];
	struct coloc_err model_err = { 0 };
	struct coloc_err werr = { 0 };
	float *gen, *file;
	struct model *m;
	int fd;

	snprintf(path, sizeof(path), "%s/models/mobilenet_v2.model", root ? root : ".");
	if (access(path, R_OK))
		SKIP(return, "%s not found (set COLOC_ROOT to the repo root)", path);
	m = model_load(path, &model_err);
	ASSERT_NE(NULL, m) TH_LOG("%s", coloc_err_str(&model_err));
	strcpy(wt, "/tmp/coloc-mbv2-XXXXXX");
	fd = mkstemp(wt);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, exec_weights_save(m, wt, m->seed, &werr)) TH_LOG("%s", werr.msg);
	gen = run_model(_metadata, m, NULL, NULL);
	file = run_model(_metadata, m, wt, NULL);
	unlink(wt);
	ASSERT_NE(NULL, gen);
	ASSERT_NE(NULL, file);
	EXPECT_EQ(0, memcmp(gen, file,
			    (size_t)model_shape_elems(&m->layers[m->nr_layers - 1].out) *
				    sizeof(float)));
	free(gen);
	free(file);
	model_free(m);
}

TEST_F(weights, open__refuses_bad_magic_and_truncation)
{
	unsigned char *b = malloc(self->len + 64);
	size_t offs[16];
	int nr = entry_offsets(self->buf, self->len, offs, 15);

	ASSERT_EQ(6, nr); /* c1, c2, c3, f1, ln, f2 */
	memcpy(b, self->buf, self->len);
	b[3] ^= 0x20;
	expect_refused(_metadata, self, b, self->len, 0, "bad magic");
	memcpy(b, self->buf, self->len);
	expect_refused(_metadata, self, b, 0, 0, "truncated file: magic");
	expect_refused(_metadata, self, b, 5, 0, "truncated file: magic");
	expect_refused(_metadata, self, b, 10, 8, "truncated file: layer count");
	expect_refused(_metadata, self, b, offs[1] + 2, (long long)offs[1],
		       "truncated file: layer index");
	expect_refused(_metadata, self, b, offs[1] + 6, (long long)offs[1] + 4,
		       "truncated file: tensor count");
	expect_refused(_metadata, self, b, offs[1] + 12, (long long)offs[1] + 8,
		       "truncated file: element count");
	/* One byte short: f2 (layer 8) has one tensor, 4 x 16 weights, at the end. */
	expect_refused(_metadata, self, b, self->len - 1, (long long)self->len - 256,
		       "truncated file: layer 8 'f2' weights needs 256 bytes, 255 left");
	free(b);
}

TEST_F(weights, open__refuses_wrong_layers)
{
	unsigned char *b = malloc(2 * self->len);
	size_t offs[16], len;

	ASSERT_EQ(6, entry_offsets(self->buf, self->len, offs, 15));
	/* The count: one more, one fewer than the model's 6 layers with parameters. */
	memcpy(b, self->buf, self->len);
	put_u32(b + 8, 7);
	expect_refused(_metadata, self, b, self->len, 8, "7 layers with parameters, model");
	put_u32(b + 8, 5);
	expect_refused(_metadata, self, b, self->len, 8, "5 layers with parameters, model");
	put_u32(b + 8, 0xffffffffu);
	expect_refused(_metadata, self, b, self->len, 8, "4294967295 layers with parameters");
	/* First entry (layer 1, c1) relabelled. */
	memcpy(b, self->buf, self->len);
	put_u32(b + offs[0], 0);
	expect_refused(_metadata, self, b, self->len, (long long)offs[0],
		       "layer 0 'image' (input) has no parameters; expected layer 1 'c1'");
	put_u32(b + offs[0], 9);
	expect_refused(_metadata, self, b, self->len, (long long)offs[0],
		       "layer index 9 out of range");
	put_u32(b + offs[0], 2);
	expect_refused(_metadata, self, b, self->len, (long long)offs[0],
		       "layer 1 'c1' is missing (found layer 2 'c2')");
	/* Second entry says c1 again: a duplicate. */
	memcpy(b, self->buf, self->len);
	put_u32(b + offs[1], 1);
	expect_refused(_metadata, self, b, self->len, (long long)offs[1],
		       "layer 1 'c1' out of order");
	/* c2 (the second entry) left out, count kept, then also with the count fixed. */
	len = offs[1];
	memcpy(b, self->buf, len);
	memcpy(b + len, self->buf + offs[2], self->len - offs[2]);
	len += self->len - offs[2];
	expect_refused(_metadata, self, b, len, (long long)offs[1],
		       "layer 2 'c2' is missing (found layer 3 'c3')");
	put_u32(b + 8, 5);
	expect_refused(_metadata, self, b, len, 8,
		       "5 layers with parameters, model 'wt_conv' has 6");
	/* An extra entry: the last one (f2: 4 + 4 + 8 + 16 x 4 x 4 bytes) twice, count kept or raised. */
	memcpy(b, self->buf, self->len);
	memcpy(b + self->len, self->buf + offs[5], self->len - offs[5]);
	len = self->len + (self->len - offs[5]);
	expect_refused(_metadata, self, b, len, (long long)self->len,
		       "272 trailing bytes after the last layer");
	put_u32(b + 8, 7);
	expect_refused(_metadata, self, b, len, 8, "7 layers with parameters");
	/* One trailing byte. */
	memcpy(b, self->buf, self->len);
	b[self->len] = 0;
	expect_refused(_metadata, self, b, self->len + 1, (long long)self->len, "1 trailing bytes");
	free(b);
}

TEST_F(weights, open__refuses_wrong_tensors_and_values)
{
	unsigned char *b = malloc(self->len);
	size_t offs[16], c2_var, c2_gamma;
	float nan = NAN, inf = -INFINITY, neg = -0.5f;

	ASSERT_EQ(6, entry_offsets(self->buf, self->len, offs, 15));
	/* c1 has weights + 4 bn tensors; c2 weights, bias, 4 bn; f2 only weights. */
	ASSERT_EQ(5, get_u32(self->buf + offs[0] + 4));
	ASSERT_EQ(6, get_u32(self->buf + offs[1] + 4));
	ASSERT_EQ(216, get_u64(self->buf + offs[0] + 8)); /* 8 x 3 x 3 x 3 */
	memcpy(b, self->buf, self->len);
	put_u32(b + offs[0] + 4, 4);
	expect_refused(_metadata, self, b, self->len, (long long)offs[0] + 4,
		       "layer 1 'c1' (conv): 4 tensors, expected 5");
	memcpy(b, self->buf, self->len);
	put_u32(b + offs[5] + 4, 2);
	expect_refused(_metadata, self, b, self->len, (long long)offs[5] + 4,
		       "layer 8 'f2' (fc): 2 tensors, expected 1");
	memcpy(b, self->buf, self->len);
	put_u64(b + offs[0] + 8, 217);
	expect_refused(_metadata, self, b, self->len, (long long)offs[0] + 8,
		       "layer 1 'c1' weights: 217 elements, expected 216");
	/* A count that would ask for exabytes is refused before any allocation. */
	put_u64(b + offs[0] + 8, 1ull << 60);
	expect_refused(_metadata, self, b, self->len, (long long)offs[0] + 8,
		       "1152921504606846976 elements, expected 216");
	/* c2: weights 8x8x3x3 = 576 at +16, then bias, gamma, beta, mean, var of 8 each. */
	c2_gamma = offs[1] + 8 + (8 + 576 * 4) + (8 + 32) + 8;
	c2_var = c2_gamma + 3 * (32 + 8);
	ASSERT_EQ(8, get_u64(self->buf + c2_var - 8));
	memcpy(b, self->buf, self->len);
	memcpy(b + c2_gamma + 4 * 3, &nan, 4);
	expect_refused(_metadata, self, b, self->len, (long long)c2_gamma + 12,
		       "layer 2 'c2' bn gamma[3] is NaN");
	memcpy(b, self->buf, self->len);
	memcpy(b + offs[0] + 16, &inf, 4);
	expect_refused(_metadata, self, b, self->len, (long long)offs[0] + 16,
		       "layer 1 'c1' weights[0] is infinite");
	memcpy(b, self->buf, self->len);
	memcpy(b + c2_var + 4 * 7, &neg, 4);
	expect_refused(_metadata, self, b, self->len, (long long)c2_var + 28,
		       "layer 2 'c2' bn var[7] is -0.5");
	free(b);
}

TEST_F(weights, open__names_missing_file_and_load_passes_errors_on)
{
	struct exec_options opts = { .cpus = { .nr = 1, .cpus = { 0 } } };
	unsigned char *b = malloc(self->len);

	snprintf(self->bad, sizeof(self->bad), "%s/none.wt", self->dir);
	EXPECT_EQ(NULL, exec_weights_open(self->m, self->bad, &self->err));
	EXPECT_NE(NULL, strstr(self->err.msg, "none.wt: No such file or directory"))
	TH_LOG("%s", self->err.msg);
	opts.weights_path = self->bad;
	coloc_err_clear(&self->err);
	EXPECT_EQ(NULL, exec_model_load(self->m, &opts, &self->err));
	EXPECT_NE(NULL, strstr(self->err.msg, "none.wt: No such file or directory"))
	TH_LOG("%s", self->err.msg);
	/* A malformed file through both loaders: the reader's message, unchanged. */
	snprintf(self->bad, sizeof(self->bad), "%s/bad.wt", self->dir);
	memcpy(b, self->buf, self->len);
	ASSERT_EQ(0, write_whole(self->bad, b, self->len - 4));
	coloc_err_clear(&self->err);
	EXPECT_EQ(NULL, exec_model_load(self->m, &opts, &self->err));
	EXPECT_NE(NULL, strstr(self->err.msg, "bad.wt: byte ")) TH_LOG("%s", self->err.msg);
	EXPECT_NE(NULL, strstr(self->err.msg, "truncated file")) TH_LOG("%s", self->err.msg);
	coloc_err_clear(&self->err);
	EXPECT_EQ(NULL, exec_model_load_default(self->m, &opts, &self->err));
	EXPECT_NE(NULL, strstr(self->err.msg, "truncated file")) TH_LOG("%s", self->err.msg);
	/* A file for another model: the embed model's weights. */
	{
		struct model *e = parse(embed_text, sizeof(embed_text) - 1);

		ASSERT_NE(NULL, e);
		coloc_err_clear(&self->err);
		ASSERT_EQ(0, exec_weights_save(e, self->bad, e->seed, &self->err));
		EXPECT_EQ(NULL, exec_weights_open(self->m, self->bad, &self->err));
		EXPECT_NE(NULL, strstr(self->err.msg, "byte 8: 3 layers with parameters, model "
						      "'wt_conv' has 6"))
		TH_LOG("%s", self->err.msg);
		model_free(e);
	}
	free(b);
}

static uint32_t next(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/*
 * A few hundred random mutations of the valid file (bytes flipped, mostly in
 * the headers; truncations; bytes appended): the reader either refuses with a
 * message naming the file or reads every layer; it never crashes (and under
 * SANITIZE=1 never touches memory it should not).
 */
TEST_F(weights, open__survives_mutated_files)
{
	unsigned char *b = malloc(self->len + 16);
	uint32_t x = 2463534242u;
	size_t offs[16];
	int refused = 0, accepted = 0;

	ASSERT_EQ(6, entry_offsets(self->buf, self->len, offs, 15));
	for (int iter = 0; iter < 400; iter++) {
		struct exec_weights_file *wf;
		size_t len = self->len;
		int kind;

		memcpy(b, self->buf, self->len);
		kind = (int)(next(&x) % 4);
		if (kind == 0) {
			len = next(&x) % self->len;
		} else if (kind == 3) {
			len += 1 + next(&x) % 16;
			for (size_t i = self->len; i < len; i++)
				b[i] = (unsigned char)next(&x);
		} else {
			int flips = 1 + (int)(next(&x) % 4);

			for (int f = 0; f < flips; f++) {
				/* Headers half the time: an entry's first 16 bytes. */
				size_t at = next(&x) % self->len;

				if (kind == 1)
					at = offs[at % 6] + next(&x) % 16;

				b[at] ^= (unsigned char)(1u << (next(&x) % 8));
			}
		}
		ASSERT_EQ(0, write_whole(self->bad, b, len));
		coloc_err_clear(&self->err);
		wf = exec_weights_open(self->m, self->bad, &self->err);
		if (!wf) {
			refused++;
			EXPECT_EQ(0, strncmp(self->err.msg, self->bad, strlen(self->bad)))
			TH_LOG("iteration %d: '%s'", iter, self->err.msg);
			continue;
		}
		accepted++;
		for (int li = 0; li < self->m->nr_layers; li++) {
			struct exec_layer_params p;

			EXPECT_EQ(0, exec_weights_read_layer(wf, li, &p, &self->err));
			exec_layer_params_free(&p);
		}
		exec_weights_close(wf);
	}
	TH_LOG("%d refused, %d accepted (a flipped bit in a value can stay finite)", refused,
	       accepted);
	EXPECT_GT(refused, 200);
	free(b);
}

TEST_HARNESS_MAIN
