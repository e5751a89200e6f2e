// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The model parser (executor/model_parse.c) against a deterministic mutation
 * fuzzer: every cut of a seed text that uses each construct is refused as
 * truncated, and each of a few thousand random edits of it either parses to
 * a sane model or is refused naming the file (run it under SANITIZE=1 for
 * memory errors and UB). The committed model files are model_test.c's.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "model.h"

FIXTURE(model)
{
	struct coloc_err err;
};

FIXTURE_SETUP(model)
{
	coloc_err_clear(&self->err);
}

FIXTURE_TEARDOWN(model)
{
}

static uint64_t fuzz_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* One random edit: overwrite a byte, delete or duplicate a span, or insert a token. */
static size_t fuzz_mutate(char *buf, size_t len, size_t cap, uint64_t *rng)
{
	static const char *const tokens[] = {
		"repeat i 0..3 {\n",
		"}\n",
		"{i}",
		"{i-1}",
		"{j}",
		"-1",
		"0",
		"99999999999999999999",
		"x",
		",",
		"=",
		"\n",
		"in=",
		"dw",
		"pad=same",
		"1e308",
		"nan",
		"k=0x3",
		"\x01",
		"\xff",
		"act=gelu ",
		"conv ",
		"add ",
		"#",
		"shape=1x2x3x4x5x6",
		"axis=-9",
		"perm=1,0",
	};
	size_t pos = len ? fuzz_next(rng) % len : 0;
	size_t n;

	switch (fuzz_next(rng) % 4) {
	case 0:
		if (len)
			buf[pos] = (char)(fuzz_next(rng) % 3 ? 32 + fuzz_next(rng) % 95 :
							       fuzz_next(rng) % 256);
		return len;
	case 1:
		n = fuzz_next(rng) % 16;
		if (n > len - pos)
			n = len - pos;
		memmove(buf + pos, buf + pos + n, len - pos - n);
		return len - n;
	case 2:
		n = fuzz_next(rng) % 64;
		if (n > len - pos)
			n = len - pos;
		if (len + n > cap)
			return len;
		memmove(buf + pos + n, buf + pos, len - pos);
		return len + n;
	default: {
		const char *t = tokens[fuzz_next(rng) % (ARRAY_SIZE(tokens))];

		n = strlen(t);
		if (len + n > cap)
			return len;
		memmove(buf + pos + n, buf + pos, len - pos);
		memcpy(buf + pos, t, n);
		return len + n;
	}
	}
}

static bool fuzz_model_is_sane(const struct model *m)
{
	int i, j, d;

	if (m->nr_layers < 2 || m->nr_layers > MODEL_MAX_LAYERS)
		return false;
	for (i = 0; i < m->nr_layers; i++) {
		const struct model_layer *l = &m->layers[i];

		if (l->out.ndims < 1 || l->out.ndims > MODEL_MAX_DIMS)
			return false;
		for (d = 0; d < l->out.ndims; d++)
			if (l->out.dims[d] < 1)
				return false;
		for (j = 0; j < l->nr_inputs; j++)
			if (l->inputs[j] < 0 || l->inputs[j] >= i)
				return false;
	}
	return true;
}

TEST_F(model, parse__survives_random_mutations)
{
	/*
	 * MACs: c0 16*8*8*8*9 = 73728, 2 x c{i}_dw 16*8*8*9 = 9216, m 16*16*32 =
	 * 8192, f 16*16*10 = 2560; params: c0 16*8*9 + 2*16, 2 x (16*9 + 2*16),
	 * ln 2*16, f 16*10 + 10.
	 */
	static const char seed_text[] = "model fuzz\nseed 7\nmacs 102912\nparams 1738\n"
					"input x shape=1x8x16x16\n"
					"conv c0 out=16 k=3 stride=2 pad=same bn act=relu6\n"
					"repeat i 1..2 {\n"
					"\tconv c{i}_dw dw k=3 pad=1 bn act=swish\n"
					"\tpool c{i}_se kind=global_avg\n"
					"\tmul c{i}_x in=c{i}_dw,c{i}_se\n"
					"\tadd c{i} in=c{i}_x,c{i-1} act=relu\n"
					"}\n"
					"pool p kind=max k=3 stride=2 pad=0,0,1,1 ceil\n"
					"lrn n size=5\n"
					"concat cat in=p,n axis=1\n"
					"reshape r shape=1x32x-1\n"
					"transpose t perm=0,2,1\n"
					"matmul m in=t,t transpose_b alpha=0.125\n"
					"softmax s axis=-1\n"
					"layer_norm ln eps=1e-5\n"
					"fc f out=10 bias act=leaky_relu slope=0.2\n"
					"end\n";
	enum { ITERATIONS = 3000, CAP = 1 << 14 };
	char *buf = malloc(CAP);
	uint64_t rng = 0x9e3779b97f4a7c15ULL;
	int ok = 0, refused = 0, it, k;
	struct model *m;

	ASSERT_NE(NULL, buf);
	m = model_parse("fuzz.model", seed_text, sizeof(seed_text) - 1, &self->err);
	ASSERT_NE(NULL, m) TH_LOG("%s", self->err.msg);
	model_free(m);
	/* every cut of the seed, before any mutation */
	for (it = 0; it < (int)sizeof(seed_text) - 1; it++) {
		coloc_err_clear(&self->err);
		ASSERT_EQ(NULL, model_parse("fuzz.model", seed_text, (size_t)it, &self->err));
		ASSERT_EQ(0, strncmp(self->err.msg, "fuzz.model:", 11)) TH_LOG("%s", self->err.msg);
		ASSERT_NE(NULL, strstr(self->err.msg, "truncated")) TH_LOG("%s", self->err.msg);
	}
	for (it = 0; it < ITERATIONS; it++) {
		size_t len = sizeof(seed_text) - 1;
		int edits = 1 + (int)(fuzz_next(&rng) % 2);

		memcpy(buf, seed_text, len);
		for (k = 0; k < edits; k++)
			len = fuzz_mutate(buf, len, CAP, &rng);
		coloc_err_clear(&self->err);
		m = model_parse("fuzz.model", buf, len, &self->err);
		if (m) {
			ASSERT_TRUE(fuzz_model_is_sane(m));
			ok++;
			model_free(m);
		} else {
			ASSERT_EQ(0, strncmp(self->err.msg, "fuzz.model:", 11))
			TH_LOG("%s", self->err.msg);
			ASSERT_LT(11, strlen(self->err.msg));
			refused++;
		}
	}
	TH_LOG("%d mutants parsed, %d refused with a message", ok, refused);
	ASSERT_LT(0, ok);
	ASSERT_LT(0, refused);
	free(buf);
}

TEST_HARNESS_MAIN
