// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the model parser (executor/model_parse.c, model_shape.c): every
 * committed models/NAME.model loads and its computed MACs and parameters are
 * within 2% of the published figures it declares; shapes and counts of
 * chosen layers match hand computations; malformed files are refused with
 * the right line and reason, among them every prefix of every committed
 * model file (a file cut at any byte) and declared figures beyond the
 * tolerance. The mutation fuzzer is model_mutation_test.c.
 */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "model.h"

static const char *const model_names[] = {
	"resnet50",    "googlenet",	"efficientnet_b0", "mobilenet_v2",
	"tiny_yolov2", "ssd_mobilenet", "bert_base",	   "bert_large",
};

static struct model *parse_text(const char *text, struct coloc_err *err)
{
	coloc_err_clear(err);
	return model_parse("t.model", text, strlen(text), err);
}

static const struct model_layer *find_layer(const struct model *m, const char *name)
{
	int i;

	for (i = 0; i < m->nr_layers; i++)
		if (!strcmp(m->layers[i].name, name))
			return &m->layers[i];
	return NULL;
}

static bool shape_is(const struct model_shape *s, int ndims, const int64_t *dims)
{
	int i;

	if (s->ndims != ndims)
		return false;
	for (i = 0; i < ndims; i++)
		if (s->dims[i] != dims[i])
			return false;
	return true;
}

#define ASSERT_SHAPE(m, name, ...)                                                       \
	do {                                                                             \
		const int64_t want_[] = { __VA_ARGS__ };                                 \
		const struct model_layer *l_ = find_layer(m, name);                      \
		ASSERT_NE(NULL, l_) TH_LOG("no layer '%s'", name);                       \
		ASSERT_TRUE(shape_is(&l_->out, ARRAY_SIZE(want_), want_)) \
		TH_LOG("layer '%s' has an unexpected shape", name);                      \
	} while (0)

/* The text, as it is, must be refused with "t.model:LINE: ..." containing want. */
#define ASSERT_REJECTS_AS_IS(text, line, want)                               \
	do {                                                                 \
		char where_[32];                                             \
		struct model *m_ = parse_text(text, &self->err);             \
		ASSERT_EQ(NULL, m_);                                         \
		ASSERT_EQ(-EINVAL, self->err.code);                          \
		snprintf(where_, sizeof(where_), "t.model:%d: ", line);      \
		ASSERT_EQ(0, strncmp(self->err.msg, where_, strlen(where_))) \
		TH_LOG("want '%s...', got '%s'", where_, self->err.msg);     \
		ASSERT_NE(NULL, strstr(self->err.msg, want))                 \
		TH_LOG("want '%s' in '%s'", want, self->err.msg);            \
	} while (0)

/* The same with the closing line every whole file ends with. */
#define ASSERT_REJECTS(text, line, want) ASSERT_REJECTS_AS_IS(text END, line, want)

/* A header whose declared figures only matter in texts refused before the check */
#define HEADER "model t\nseed 1\nmacs 1\nparams 1\n"
#define END "end\n"

FIXTURE(model)
{
	char root[PATH_MAX];
	struct coloc_err err;
};

FIXTURE_SETUP(model)
{
	const char *root = getenv("COLOC_ROOT");

	snprintf(self->root, sizeof(self->root), "%s", root && *root ? root : ".");
	coloc_err_clear(&self->err);
}

FIXTURE_TEARDOWN(model)
{
}

static struct model *load_named(const char *root, const char *name, struct coloc_err *err)
{
	char path[PATH_MAX + 64];

	coloc_err_clear(err);
	snprintf(path, sizeof(path), "%s/models/%s.model", root, name);
	return model_load(path, err);
}

TEST_F(model, load__every_model_file_is_within_2_percent_of_its_published_figures)
{
	char pattern[PATH_MAX + 32];
	glob_t g;
	size_t i;

	snprintf(pattern, sizeof(pattern), "%s/models/*.model", self->root);
	if (glob(pattern, 0, NULL, &g))
		SKIP(return, "no models in %.200s/models (set COLOC_ROOT to the repository)",
			   self->root);
	ASSERT_GE(g.gl_pathc, ARRAY_SIZE(model_names));
	for (i = 0; i < g.gl_pathc; i++) {
		struct model *m = model_load(g.gl_pathv[i], &self->err);
		double dm, dp;

		ASSERT_NE(NULL, m) TH_LOG("%s", self->err.msg);
		/* as the format measures it: declared against computed */
		dm = (double)m->declared_macs / (double)m->macs - 1;
		dp = (double)m->declared_params / (double)m->params - 1;
		TH_LOG("%-16s %4d layers  MACs %12llu (declared %+.2f%%)  params %10llu (declared %+.2f%%)",
		       m->name, m->nr_layers, (unsigned long long)m->macs, 100 * dm,
		       (unsigned long long)m->params, 100 * dp);
		EXPECT_TRUE(fabs(dm) <= 0.02);
		EXPECT_TRUE(fabs(dp) <= 0.02);
		model_free(m);
	}
	globfree(&g);
	for (i = 0; i < ARRAY_SIZE(model_names); i++) {
		struct model *m = load_named(self->root, model_names[i], &self->err);

		ASSERT_NE(NULL, m) TH_LOG("%s", self->err.msg);
		ASSERT_STREQ(model_names[i], m->name);
		model_free(m);
	}
}

TEST_F(model, load__resnet50_has_the_published_shapes)
{
	struct model *m = load_named(self->root, "resnet50", &self->err);
	const struct model_layer *l;

	if (!m && strstr(self->err.msg, "cannot open"))
		SKIP(return, "%s (set COLOC_ROOT to the repository)", self->err.msg);
	ASSERT_NE(NULL, m) TH_LOG("%s", self->err.msg);
	/* input, conv1, pool1, 16 bottlenecks x (3 convs + add), 4 projections, pool, flatten, fc */
	ASSERT_EQ(1 + 2 + 16 * 4 + 4 + 3, m->nr_layers);
	ASSERT_SHAPE(m, "conv1", 1, 64, 112, 112);
	ASSERT_SHAPE(m, "pool1", 1, 64, 56, 56);
	ASSERT_SHAPE(m, "s3b1_b", 1, 128, 28, 28);
	ASSERT_SHAPE(m, "s5b3_c", 1, 2048, 7, 7);
	ASSERT_SHAPE(m, "fc", 1, 1000);
	l = find_layer(m, "conv1");
	ASSERT_EQ(112ULL * 112 * 64 * 3 * 7 * 7, l->macs);
	ASSERT_EQ(64ULL * 3 * 7 * 7 + 2 * 64, l->params);
	l = find_layer(m, "s2b2");
	ASSERT_EQ(MODEL_OP_ADD, l->op);
	ASSERT_STREQ("s2b1", m->layers[l->inputs[1]].name);
	ASSERT_EQ(MODEL_ACT_RELU, l->act);
	/* torchvision's exact count */
	ASSERT_EQ(25557032ULL, m->params);
	model_free(m);
}

TEST_F(model, load__bert_base_has_the_published_shapes)
{
	struct model *m = load_named(self->root, "bert_base", &self->err);
	const struct model_layer *l;

	if (!m && strstr(self->err.msg, "cannot open"))
		SKIP(return, "%s (set COLOC_ROOT to the repository)", self->err.msg);
	ASSERT_NE(NULL, m) TH_LOG("%s", self->err.msg);
	/* 3 inputs, 3 embeddings, 2 adds, layer norm; 12 x 21 layers; slice, reshape, pooler */
	ASSERT_EQ(9 + 12 * 21 + 3, m->nr_layers);
	ASSERT_SHAPE(m, "l12_out", 1, 128, 768);
	ASSERT_SHAPE(m, "l1_q_heads", 1, 12, 128, 64);
	ASSERT_SHAPE(m, "l1_scores", 1, 12, 128, 128);
	ASSERT_SHAPE(m, "l7_ffn_up", 1, 128, 3072);
	ASSERT_SHAPE(m, "pooler", 1, 768);
	l = find_layer(m, "l1_scores");
	ASSERT_TRUE(l->matmul.transpose_b);
	ASSERT_EQ(0.125f, l->matmul.alpha);
	ASSERT_EQ(12ULL * 128 * 128 * 64, l->macs);
	/* embeddings (30522+512+2)*768 + LN, 12 layers of 7,087,872, pooler */
	ASSERT_EQ((30522ULL + 512 + 2) * 768 + 2 * 768 + 12ULL * 7087872 + 768 * 768 + 768,
		  m->params);
	ASSERT_EQ(12ULL * (12ULL * 128 * 768 * 768 + 2ULL * 128 * 128 * 768) + 768 * 768, m->macs);
	model_free(m);
}

TEST_F(model, load__other_models_have_the_published_shapes)
{
	const struct model_layer *l;
	struct model *m;

	m = load_named(self->root, "googlenet", &self->err);
	if (!m && strstr(self->err.msg, "cannot open"))
		SKIP(return, "%s (set COLOC_ROOT to the repository)", self->err.msg);
	ASSERT_NE(NULL, m) TH_LOG("%s", self->err.msg);
	ASSERT_SHAPE(m, "pool1", 1, 64, 56, 56); /* Caffe's ceil mode: 112 -> 56 */
	ASSERT_SHAPE(m, "i3a", 1, 256, 28, 28);
	ASSERT_SHAPE(m, "i4e", 1, 832, 14, 14);
	ASSERT_SHAPE(m, "i5b", 1, 1024, 7, 7);
	l = find_layer(m, "pool1");
	ASSERT_EQ(0, l->pool.pad_t);
	ASSERT_EQ(1, l->pool.pad_b);
	model_free(m);

	m = load_named(self->root, "tiny_yolov2", &self->err);
	ASSERT_NE(NULL, m) TH_LOG("%s", self->err.msg);
	ASSERT_SHAPE(m, "pool6", 1, 512, 13, 13);
	ASSERT_SHAPE(m, "predict", 1, 125, 13, 13);
	/* darknet reports 6.97 BFLOPs = 2 x MACs */
	ASSERT_EQ(697, (int)(2.0 * (double)m->macs / 1e7 + 0.5));
	model_free(m);

	m = load_named(self->root, "efficientnet_b0", &self->err);
	ASSERT_NE(NULL, m) TH_LOG("%s", self->err.msg);
	ASSERT_SHAPE(m, "s2_1_dw", 1, 96, 56, 56);
	l = find_layer(m, "s2_1_dw"); /* SAME, stride 2, k3 on 112: pad 0 before, 1 after */
	ASSERT_EQ(0, l->conv.pad_t);
	ASSERT_EQ(1, l->conv.pad_b);
	ASSERT_EQ(96, l->conv.groups);
	ASSERT_SHAPE(m, "s6_4", 1, 192, 7, 7);
	ASSERT_SHAPE(m, "classifier", 1, 1000);
	model_free(m);

	m = load_named(self->root, "ssd_mobilenet", &self->err);
	ASSERT_NE(NULL, m) TH_LOG("%s", self->err.msg);
	ASSERT_SHAPE(m, "conv4", 1, 256, 38, 38);
	ASSERT_SHAPE(m, "conv11", 1, 512, 19, 19);
	ASSERT_SHAPE(m, "extra3", 1, 256, 2, 2);
	ASSERT_SHAPE(m, "class0", 1, 3 * 91, 19, 19);
	ASSERT_SHAPE(m, "box5", 1, 6 * 4, 1, 1);
	model_free(m);

	m = load_named(self->root, "mobilenet_v2", &self->err);
	ASSERT_NE(NULL, m) TH_LOG("%s", self->err.msg);
	ASSERT_SHAPE(m, "b6_3", 1, 160, 7, 7);
	ASSERT_SHAPE(m, "head", 1, 1280, 7, 7);
	model_free(m);

	m = load_named(self->root, "bert_large", &self->err);
	ASSERT_NE(NULL, m) TH_LOG("%s", self->err.msg);
	ASSERT_SHAPE(m, "l24_out", 1, 128, 1024);
	ASSERT_SHAPE(m, "l24_scores", 1, 16, 128, 128);
	ASSERT_EQ(335141888ULL, m->params);
	model_free(m);
}

TEST_F(model, parse__infers_conv_and_pool_shapes)
{
	/*
	 * 1x8x10x9 -> conv k3x2 stride 2x1 dil 2 pads t1 l0 b2 r1 groups 2; the
	 * declared figures are the conv's, worked out below.
	 */
	const char *text = "model t\nseed 1\nmacs 5760\nparams 162\n"
			   "input x shape=1x8x10x9\n"
			   "conv c out=6 k=3x2 stride=2x1 dil=2 pad=1,0,2,1 groups=2 bias bn "
			   "act=leaky_relu slope=0.1\n"
			   "pool p kind=avg k=3 stride=2 pad=same\n"
			   "pool g kind=global_avg\n" END;
	const struct model_layer *c, *p;
	struct model *m = parse_text(text, &self->err);

	ASSERT_NE(NULL, m) TH_LOG("%s", self->err.msg);
	c = &m->layers[1];
	/* H: (10 + 1 + 2 - (2*(3-1)+1)) / 2 + 1 = 5; W: (9 + 0 + 1 - 3) / 1 + 1 = 8 */
	ASSERT_SHAPE(m, "c", 1, 6, 5, 8);
	ASSERT_EQ(1ULL * 6 * 5 * 8 * (8 / 2) * 3 * 2, c->macs);
	ASSERT_EQ(6ULL * 4 * 3 * 2 + 6 + 2 * 6, c->params);
	ASSERT_EQ(MODEL_ACT_LEAKY_RELU, c->act);
	ASSERT_EQ(0.1f, c->act_alpha);
	ASSERT_EQ(2, c->conv.dil_h);
	ASSERT_EQ(1, c->conv.stride_w);
	/* SAME on 5x8, k3 s2: out 3x4; H total pad (3-1)*2+3-5 = 2 -> 1,1; W: 3*2+3-8 = 1 -> 0,1 */
	ASSERT_SHAPE(m, "p", 1, 6, 3, 4);
	p = &m->layers[2];
	ASSERT_EQ(1, p->pool.pad_t);
	ASSERT_EQ(1, p->pool.pad_b);
	ASSERT_EQ(0, p->pool.pad_l);
	ASSERT_EQ(1, p->pool.pad_r);
	ASSERT_SHAPE(m, "g", 1, 6, 1, 1);
	ASSERT_EQ(MODEL_POOL_GLOBAL_AVG, m->layers[3].pool.kind);
	ASSERT_EQ(3, m->layers[3].pool.kh);
	ASSERT_EQ(m->layers[1].macs, m->macs);
	model_free(m);
}

TEST_F(model, parse__infers_sequence_op_shapes)
{
	/*
	 * MACs: s 2*3*5*5*4 + ctx 2*3*5*4*5 + f 2*3*2*8*7 = 1872; params: e 1200,
	 * ln 16, f 63.
	 */
	const char *text = "model t\nseed 1\nmacs 1872\nparams 1279\n"
			   "input ids shape=2x5\n"
			   "embed e vocab=100 dim=12\n"
			   "reshape r shape=2x5x3x-1\n"
			   "transpose t perm=0,2,1,3\n"
			   "matmul s in=t,t transpose_b alpha=0.5\n"
			   "softmax sm\n"
			   "matmul ctx in=sm,t\n"
			   "concat cat in=ctx,t axis=-1\n"
			   "slice first axis=2 start=1 len=2\n"
			   "layer_norm ln eps=1e-12\n"
			   "fc f out=7 bias act=gelu\n"
			   "mul se in=f,f\n"
			   "act a act=tanh\n" END;
	struct model *m = parse_text(text, &self->err);

	ASSERT_NE(NULL, m) TH_LOG("%s", self->err.msg);
	ASSERT_SHAPE(m, "e", 2, 5, 12);
	ASSERT_EQ(1200ULL, m->layers[1].params);
	ASSERT_SHAPE(m, "r", 2, 5, 3, 4);
	ASSERT_SHAPE(m, "t", 2, 3, 5, 4);
	ASSERT_SHAPE(m, "s", 2, 3, 5, 5);
	ASSERT_EQ(2ULL * 3 * 5 * 5 * 4, m->layers[4].macs);
	ASSERT_EQ(3, m->layers[5].axis); /* -1 normalised */
	ASSERT_SHAPE(m, "ctx", 2, 3, 5, 4);
	ASSERT_SHAPE(m, "cat", 2, 3, 5, 8);
	ASSERT_SHAPE(m, "first", 2, 3, 2, 8);
	ASSERT_EQ(16ULL, m->layers[9].params);
	ASSERT_SHAPE(m, "f", 2, 3, 2, 7);
	ASSERT_EQ(2ULL * 3 * 2 * 8 * 7, m->layers[10].macs);
	ASSERT_EQ(8ULL * 7 + 7, m->layers[10].params);
	ASSERT_EQ(MODEL_ACT_TANH, m->layers[12].act);
	model_free(m);
}

TEST_F(model, parse__expands_repeat_templates)
{
	const char *text = HEADER "input x shape=1x4x8x8\n"
				  "conv b0 out=4 k=1\n"
				  "repeat i 1..3 {\n"
				  "  repeat j 0..1 {\n"
				  "    conv b{i}_{j} out=4 k=3 pad=1 act=relu\n"
				  "  }\n"
				  "  add b{i} in=b{i}_1,b{i-1}\n"
				  "}\n"
				  "conv last in=b{3}\n" END;
	struct model *m;
	int i;

	/* b{3} outside a repeat: no such variable */
	m = parse_text(text, &self->err);
	ASSERT_EQ(NULL, m);
	ASSERT_NE(NULL, strstr(self->err.msg, "t.model:13: '3' is not a repeat variable"))
	TH_LOG("%s", self->err.msg);

	/* MACs: b0 8*8*4*4, 6 convs of 8*8*4*4*9; params: b0 16, 6 x 144 */
	text = "model t\nseed 1\nmacs 56320\nparams 880\n"
	       "input x shape=1x4x8x8\n"
	       "conv b0 out=4 k=1\n"
	       "repeat i 1..3 {\n"
	       "  repeat j 0..1 {\n"
	       "    conv b{i}_{j} out=4 k=3 pad=1 act=relu\n"
	       "  }\n"
	       "  add b{i} in=b{i}_1,b{i-1}\n"
	       "}\n" END;
	m = parse_text(text, &self->err);
	ASSERT_NE(NULL, m) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(2 + 3 * 3, m->nr_layers);
	for (i = 1; i <= 3; i++) {
		const struct model_layer *a = &m->layers[2 + 3 * (i - 1) + 2];
		char want[16];

		snprintf(want, sizeof(want), "b%d", i);
		ASSERT_STREQ(want, a->name);
		snprintf(want, sizeof(want), "b%d_1", i);
		ASSERT_STREQ(want, m->layers[a->inputs[0]].name);
		snprintf(want, sizeof(want), "b%d", i - 1);
		ASSERT_STREQ(want, m->layers[a->inputs[1]].name);
		/* b{i}_0 reads the previous statement's layer: b{i-1} */
		ASSERT_EQ(a->inputs[1], m->layers[2 + 3 * (i - 1)].inputs[0]);
		ASSERT_EQ(9, m->layers[2 + 3 * (i - 1)].line);
	}
	ASSERT_EQ(3ULL * 2 * (8 * 8 * 4 * 4 * 9) + 8 * 8 * 4 * 4, m->macs);
	model_free(m);
}

TEST_F(model, parse__rejects_unknown_op)
{
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\nconvv c out=4 k=3\n", 6,
		       "unknown op 'convv'");
}

TEST_F(model, parse__rejects_bad_and_huge_numbers)
{
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\nconv c out=12x k=3\n", 6,
		       "out=12x is not an integer");
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\nconv c out=99999999999999999999 k=3\n", 6,
		       "out of range");
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\nconv c out=0 k=3\n", 6,
		       "out=0 is out of range [1, 16777216]");
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\nconv c out=4 k=3 stride=-2\n", 6,
		       "stride=-2 is out of range");
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\nlayer_norm n eps=nan\n", 6,
		       "eps=nan is not a number");
	ASSERT_REJECTS("model t\nseed 1\nmacs 1e300\nparams 1\n", 3, "out of range");
	ASSERT_REJECTS("model t\nseed 4294967296\n", 2, "seed '4294967296'");
	ASSERT_REJECTS(HEADER "input x shape=100000x100000x100000\n", 5, "more than");
	ASSERT_REJECTS(HEADER "input x shape=1x65536x65536\nfc f out=16777216\n", 6,
		       "more than 4294967296 elements");
}

TEST_F(model, parse__rejects_unknown_and_forward_references)
{
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\nconv c in=nope out=4 k=3\n", 6,
		       "unknown input 'nope'");
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\nconv a in=b out=4 k=3\nconv b out=4 k=3\n", 6,
		       "input 'b' is defined later, at line 7");
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\nconv a in=a out=4 k=3\n", 6,
		       "unknown input 'a'");
	ASSERT_REJECTS(HEADER "conv a out=4 k=3\n", 5, "has no input");
}

TEST_F(model, parse__rejects_shape_mismatches)
{
	ASSERT_REJECTS(HEADER "input x shape=1x8x4x4\ninput y shape=1x4x4x4\nadd s in=x,y\n", 7,
		       "shape [1,4,4,4] of 'y' cannot be broadcast to shape [1,8,4,4] of 'x'");
	ASSERT_REJECTS(HEADER "input x shape=1x6x8x8\nconv c out=4 k=3 groups=4\n", 6,
		       "input channels 6 are not divisible by groups=4");
	ASSERT_REJECTS(HEADER "input x shape=1x3x4x4\nconv c out=4 k=7\n", 6,
		       "larger than the padded input");
	ASSERT_REJECTS(HEADER "input x shape=2x3x4\ninput y shape=2x5x4\nmatmul m in=x,y\n", 7,
		       "inner dimensions 4 and 5");
	ASSERT_REJECTS(HEADER "input x shape=2x3\nreshape r shape=7\n", 6,
		       "holds 7 elements but the input [2,3] holds 6");
	ASSERT_REJECTS(HEADER "input x shape=2x3x4\ntranspose t perm=0,1,1\n", 6,
		       "not a permutation");
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\ninput y shape=1x3x8x7\nconcat c in=x,y\n", 7,
		       "cannot concatenate");
}

TEST_F(model, parse__rejects_bad_attributes)
{
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\nconv c k=3\n", 6, "missing attribute 'out='");
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\nconv c out=4 k=3 colour=red\n", 6,
		       "unknown attribute 'colour'");
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\nconv c out=4 k=3 k=5\n", 6,
		       "attribute 'k' given twice");
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\nconv c out=4 k=3 bias=1\n", 6,
		       "'bias' is a flag");
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\nconv c out=4 k=3 act=mish\n", 6,
		       "unknown activation 'mish'");
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\npool p kind=max k=3 act=relu\n", 6,
		       "takes no 'act='");
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\nconv c out=4 k=3 act=leaky_relu\n", 6,
		       "missing attribute 'slope='");
}

TEST_F(model, parse__rejects_duplicate_and_bad_names)
{
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\nconv c out=4 k=1\nconv c out=4 k=1\n", 7,
		       "duplicate layer name 'c' (first defined at line 6)");
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\nrepeat i 0..1 {\nconv c out=3 k=1\n}\n", 7,
		       "duplicate layer name 'c' (first defined at line 7) (in repeat i=1)");
	ASSERT_REJECTS(HEADER "input 9x shape=1\n", 5, "bad name '9x'");
	ASSERT_REJECTS(
		HEADER
		"input x123456789012345678901234567890123456789012345678901234567890abcdefghij "
		"shape=1\n",
		5, "longer than 63 characters");
}

TEST_F(model, parse__rejects_missing_header_and_empty_files)
{
	ASSERT_REJECTS("", 1, "empty or truncated file: no statements");
	ASSERT_REJECTS("\n# only a comment\n\n", 4, "empty or truncated file: no statements");
	ASSERT_REJECTS("input x shape=1x3\n", 1, "missing header");
	ASSERT_REJECTS("model t\nseed 1\ninput x shape=1x3\n", 3, "missing header");
	ASSERT_REJECTS("model t\nseed 1\nmacs 5\n", 4, "'seed', 'macs' and 'params' are required");
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\n", 6, "at least one input and one layer");
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\n}\n", 6, "without a matching 'repeat'");
	ASSERT_REJECTS(HEADER "input x shape=1x3x8x8\nconv c out=4 k=3\nmacs 5\n", 7,
		       "must come before the first layer");
}

TEST_F(model, parse__requires_end_as_the_last_line_and_a_final_newline)
{
	const char *body = "model t\nseed 1\nmacs 0\nparams 0\ninput x shape=1x3x8x8\nact a "
			   "act=relu\n";
	char text[256];

	/* cut between lines: no 'end'; the error is on the last line there is */
	ASSERT_REJECTS_AS_IS(HEADER "input x shape=1x3x8x8\nact a act=relu\n", 6,
			     "the file ends after this line without the closing 'end' line: it "
			     "is truncated");
	ASSERT_REJECTS_AS_IS("", 1, "empty or truncated file");
	/* cut inside a line, the closing one included */
	ASSERT_REJECTS_AS_IS(HEADER "input x shape=1x3x8x8\nconv c out=", 6,
			     "the file ends inside this line, without a newline: it is truncated");
	ASSERT_REJECTS_AS_IS(HEADER "input x shape=1x3x8x8\nact a act=relu\nend", 7,
			     "ends inside this line");
	ASSERT_REJECTS_AS_IS(HEADER "input x shape=1x3x8x8\nact a act=relu\ne", 7,
			     "ends inside this line");
	/* 'end' is last: nothing after it, or a cut after it would go unnoticed */
	ASSERT_REJECTS_AS_IS(HEADER "input x shape=1x3x8x8\nact a act=relu\nend\n\n", 8,
			     "text after 'end' (line 7)");
	ASSERT_REJECTS_AS_IS(HEADER "input x shape=1x3x8x8\nend\nact a act=relu\nend\n", 7,
			     "text after 'end' (line 6)");
	ASSERT_REJECTS_AS_IS(HEADER "input x shape=1x3x8x8\nact a act=relu\nend # done\n# x\n", 8,
			     "text after 'end' (line 7)");
	ASSERT_REJECTS_AS_IS(HEADER "input x shape=1x3x8x8\nact a act=relu\nend now\n", 7,
			     "'end' must stand alone");
	ASSERT_REJECTS_AS_IS(HEADER "input x shape=1x3x8x8\nrepeat i 1..2 {\nact a{i} act=relu\n"
				    "end\n",
			     8, "'end' inside the repeat block of line 6 (missing '}')");

	/* the same body, whole: loads (a comment on the 'end' line is fine) */
	snprintf(text, sizeof(text), "%s%s", body, "end # done\n");
	{
		struct model *m = parse_text(text, &self->err);

		ASSERT_NE(NULL, m) TH_LOG("%s", self->err.msg);
		ASSERT_EQ(2, m->nr_layers);
		model_free(m);
	}
}

/*
 * conv c: 4 outputs of 8x8, each 3 input channels x 3x3: 4*64*27 = 6912
 * MACs; 4*27 weights + 4 biases = 112 parameters. 2% of them: 138.24 and
 * 2.24.
 */
#define DECLARED(macs, params)                                \
	"model t\nseed 1\nmacs " macs "\nparams " params "\n" \
	"input x shape=1x3x8x8\nconv c out=4 k=3 pad=1 bias\npool p kind=max k=2\n" END

TEST_F(model, parse__checks_declared_macs_and_params_within_2_percent)
{
	static const char *const accepted[][2] = {
		{ "6912", "112" }, { "6.912K", "112" }, { "7050", "114" },
		{ "6774", "110" }, { "7K", "111" },
	};
	struct model *m;
	size_t i;

	ASSERT_EQ(2, MODEL_DECLARED_TOLERANCE_PCT);
	for (i = 0; i < ARRAY_SIZE(accepted); i++) {
		char text[256];

		snprintf(text, sizeof(text), DECLARED("%s", "%s"), accepted[i][0], accepted[i][1]);
		m = parse_text(text, &self->err);
		ASSERT_NE(NULL, m)
		TH_LOG("macs %s params %s: %s", accepted[i][0], accepted[i][1], self->err.msg);
		ASSERT_EQ(6912ULL, m->macs);
		ASSERT_EQ(112ULL, m->params);
		model_free(m);
	}
	ASSERT_REJECTS_AS_IS(DECLARED("7051", "112"), 3,
			     "declared macs 7051, but the layers add up to 6912 (+2.0%, more "
			     "than the 2% allowed)");
	ASSERT_REJECTS_AS_IS(DECLARED("6773", "112"), 3,
			     "declared macs 6773, but the layers add up to 6912 (-2.0%");
	ASSERT_REJECTS_AS_IS(DECLARED("6912", "115"), 4,
			     "declared params 115, but the layers add up to 112 (+2.7%");
	ASSERT_REJECTS_AS_IS(DECLARED("6912", "109"), 4,
			     "declared params 109, but the layers add up to 112 (-2.7%");
	ASSERT_REJECTS_AS_IS(DECLARED("1M", "112"), 3,
			     "declared macs 1000000, but the layers add up to 6912");
	/* a model without MACs or parameters declares 0 */
	m = parse_text("model t\nseed 1\nmacs 0\nparams 0\ninput x shape=1x3x8x8\n"
		       "pool p kind=global_avg\n" END,
		       &self->err);
	ASSERT_NE(NULL, m) TH_LOG("%s", self->err.msg);
	model_free(m);
	ASSERT_REJECTS_AS_IS("model t\nseed 1\nmacs 1\nparams 0\ninput x shape=1x3x8x8\n"
			     "pool p kind=global_avg\n" END,
			     3, "declared macs 1, but the layers have none");
}

/* Reads models/NAME.model (len bytes, then a NUL); NULL if it is not there. */
static char *read_model_file(const char *root, const char *name, size_t *len)
{
	char path[PATH_MAX + 64];
	char *buf = NULL;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/models/%s.model", root, name);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) > 0 && !fseek(f, 0, SEEK_SET)) {
		buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		if (buf)
			buf[n] = '\0'; /* for strstr; not part of the text */
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

TEST_F(model, parse__refuses_every_model_file_cut_at_any_byte)
{
	size_t i, k, len = 0, cuts = 0;

	for (i = 0; i < ARRAY_SIZE(model_names); i++) {
		char *text = read_model_file(self->root, model_names[i], &len);
		char name[64], where[96];
		struct model *m;
		int line = 1;

		if (!text)
			SKIP(return, "no models/%s.model in %.200s (set COLOC_ROOT)",
				   model_names[i], self->root);
		snprintf(name, sizeof(name), "%s.model", model_names[i]);
		m = model_parse(name, text, len, &self->err);
		ASSERT_NE(NULL, m) TH_LOG("%s", self->err.msg);
		model_free(m);
		/* line: 1 + the newlines before byte k */
		for (k = 0; k < len; k++, cuts++) {
			coloc_err_clear(&self->err);
			m = model_parse(name, text, k, &self->err);
			ASSERT_EQ(NULL, m) TH_LOG("%s cut at byte %zu loads", name, k);
			/* a cut inside a line is on it; one right after a newline, on the line before */
			snprintf(where, sizeof(where), "%s:%d: ", name,
				 k && text[k - 1] == '\n' ? line - 1 : line);
			ASSERT_EQ(0, strncmp(self->err.msg, where, strlen(where)))
			TH_LOG("cut at byte %zu: want '%s...', got '%s'", k, where, self->err.msg);
			ASSERT_NE(NULL, strstr(self->err.msg, "truncated"))
			TH_LOG("cut at byte %zu: %s", k, self->err.msg);
			if (text[k] == '\n')
				line++;
		}
		free(text);
	}
	TH_LOG("%zu cuts of %zu files refused", cuts, ARRAY_SIZE(model_names));
}

/* What `head -c 1500 models/mobilenet_v2.model >cut.model` gives: refused, naming file and line. */
TEST_F(model, load__names_the_file_and_line_of_a_cut_file)
{
	size_t len = 0, newlines = 0, i;
	char *text = read_model_file(self->root, "mobilenet_v2", &len);
	char path[] = "/tmp/coloc-cut-XXXXXX", where[64];
	struct model *m;
	FILE *f;
	int fd;

	if (!text)
		SKIP(return, "no models/mobilenet_v2.model in %.200s (set COLOC_ROOT)", self->root);
	ASSERT_LT(1500, len);
	ASSERT_NE('\n', text[1499]); /* a cut in the middle of a line */
	for (i = 0; i < 1500; i++)
		newlines += text[i] == '\n';
	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	f = fdopen(fd, "wb");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(1500, fwrite(text, 1, 1500, f));
	ASSERT_EQ(0, fclose(f));
	m = model_load(path, &self->err);
	unlink(path);
	free(text);
	ASSERT_EQ(NULL, m);
	ASSERT_EQ(-EINVAL, self->err.code);
	snprintf(where, sizeof(where), "%s:%zu: the file ends inside this line", path,
		 newlines + 1);
	ASSERT_EQ(0, strncmp(self->err.msg, where, strlen(where)))
	TH_LOG("want '%s...', got '%s'", where, self->err.msg);
}

/* MobileNetV2 declaring 900M MACs, three times the paper's 300M: refused on that line. */
TEST_F(model, load__refuses_mobilenet_v2_declaring_900M_macs)
{
	size_t len = 0;
	char *text = read_model_file(self->root, "mobilenet_v2", &len);
	char *decl, want[160];
	struct model *m;

	if (!text)
		SKIP(return, "no models/mobilenet_v2.model in %.200s (set COLOC_ROOT)", self->root);
	m = model_parse("mobilenet_v2.model", text, len, &self->err);
	ASSERT_NE(NULL, m) TH_LOG("%s", self->err.msg);
	/* the paper's Table 4: 300M multiply-adds */
	ASSERT_LT(fabs((double)m->macs / 300e6 - 1), 0.02);
	decl = strstr(text, "\nmacs 300M\n");
	ASSERT_NE(NULL, decl);
	decl[6] = '9';
	snprintf(want, sizeof(want),
		 "mobilenet_v2.model:13: declared macs 900000000, but the layers add up to %llu "
		 "(+%.1f%%, more than the 2%% allowed)",
		 (unsigned long long)m->macs, 100 * (900e6 / (double)m->macs - 1));
	model_free(m);
	coloc_err_clear(&self->err);
	m = model_parse("mobilenet_v2.model", text, len, &self->err);
	free(text);
	ASSERT_EQ(NULL, m);
	ASSERT_STREQ(want, self->err.msg);
}

TEST_F(model, parse__rejects_binary_garbage_and_long_lines)
{
	static const char garbage[] = "model t\n\x7f"
				      "ELF\x02\x01\x01\0\0\0";
	char *line;
	struct model *m;

	m = model_parse("t.model", garbage, sizeof(garbage) - 1, &self->err);
	ASSERT_EQ(NULL, m);
	ASSERT_NE(NULL, strstr(self->err.msg, "t.model:2: binary data (byte 0x7f at column 1)"))
	TH_LOG("%s", self->err.msg);

	line = malloc(2000);
	ASSERT_NE(NULL, line);
	memset(line, 'a', 1999);
	line[1999] = '\0';
	memcpy(line, "model t\n#", 9);
	m = parse_text(line, &self->err);
	free(line);
	ASSERT_EQ(NULL, m);
	ASSERT_NE(NULL, strstr(self->err.msg, "t.model:2: line is longer than 1024 characters"))
	TH_LOG("%s", self->err.msg);
}

TEST_F(model, parse__bounds_deep_and_huge_repetition)
{
	ASSERT_REJECTS(HEADER "input x shape=1\nrepeat i 0..100000000 {\n}\n", 6,
		       "at most 10000 iterations");
	ASSERT_REJECTS(HEADER "input x shape=1\nrepeat a 1..2 {\nrepeat b 1..2 {\nrepeat c 1..2 {\n"
			      "repeat d 1..2 {\nrepeat e 1..2 {\n}\n}\n}\n}\n}\n",
		       10, "nested deeper than 4");
	/* 10^4 x 10^4 x 10^4 empty iterations: refused by the expansion bound, quickly */
	ASSERT_REJECTS(HEADER "input x shape=1\nrepeat a 1..10000 {\nrepeat b 1..10000 {\n"
			      "repeat c 1..10000 {\n}\n}\n}\n",
		       8, "expand to more than 1048576 statements");
	ASSERT_REJECTS(HEADER "input x shape=1\nrepeat a 1..10000 {\nrepeat b 1..10 {\n"
			      "act y{a}_{b} act=relu\n}\n}\n",
		       8, "more than 65536 layers");
	ASSERT_REJECTS(HEADER "input x shape=1\nrepeat i 1..2 {\nrepeat i 1..2 {\n}\n}\n", 7,
		       "already in use");
}

TEST_F(model, load__reports_missing_files)
{
	struct model *m = model_load("/nonexistent/x.model", &self->err);

	ASSERT_EQ(NULL, m);
	ASSERT_NE(NULL, strstr(self->err.msg, "/nonexistent/x.model: cannot open"));
	ASSERT_EQ(-ENOENT, self->err.code);
	/* no error to fill: still no crash */
	ASSERT_EQ(NULL, model_parse("t", "bogus", 5, NULL));
}

TEST_F(model, names__ops_and_activations_are_distinct)
{
	int i, j;

	for (i = 0; i < MODEL_OP_COUNT; i++) {
		ASSERT_STRNE("?", model_op_name(i));
		for (j = 0; j < i; j++)
			ASSERT_STRNE(model_op_name(i), model_op_name(j));
	}
	ASSERT_STREQ("?", model_op_name(MODEL_OP_COUNT));
	ASSERT_STREQ("gelu", model_act_name(MODEL_ACT_GELU));
	ASSERT_STREQ("?", model_act_name(99));
	ASSERT_EQ(2 * 3 * 4, model_shape_elems(&(struct model_shape){ 3, { 2, 3, 4 } }));
}

TEST_HARNESS_MAIN
