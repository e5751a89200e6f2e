// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The gateway's infer requests without a server: gRPC's ModelInferRequest
 * unpacked with its raw_input_contents left in the message's buffer
 * (gateway/infer_proto.c), and a model's one input forwarded from where it
 * lies on both doors, several inputs copied into one flat input. The
 * reference is protobuf-c's own unpacking of the same bytes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "kselftest_harness.h"
#include "infer_proto.h"
#include "infer_request.h"

/* A model of n inputs "x0".. of [1,3] each, one output "y" of [2]. */
static void model_of(struct gw_model_config *cfg, int n)
{
	memset(cfg, 0, sizeof(*cfg));
	strcpy(cfg->name, "m");
	strcpy(cfg->version, "1");
	cfg->nr_inputs = n;
	for (int i = 0; i < n; i++) {
		snprintf(cfg->inputs[i].name, sizeof(cfg->inputs[i].name), "x%d", i);
		cfg->inputs[i].nr_dims = 2;
		cfg->inputs[i].dims[0] = 1;
		cfg->inputs[i].dims[1] = 3;
		cfg->inputs[i].elems = 3;
	}
	cfg->nr_outputs = 1;
	strcpy(cfg->outputs[0].name, "y");
	cfg->outputs[0].nr_dims = 1;
	cfg->outputs[0].dims[0] = 2;
	cfg->outputs[0].elems = 2;
}

/* A packed ModelInferRequest for cfg, input i holding vals[3i..3i+3) raw; malloc'd. */
static uint8_t *pack_request(const struct gw_model_config *cfg, const float *vals, size_t *len)
{
	Inference__ModelInferRequest rq = INFERENCE__MODEL_INFER_REQUEST__INIT;
	Inference__ModelInferRequest__InferInputTensor ins[4], *ptrs[4];
	ProtobufCBinaryData raw[4];
	int64_t shape[2] = { 1, 3 };
	uint8_t *buf;

	for (int i = 0; i < cfg->nr_inputs; i++) {
		inference__model_infer_request__infer_input_tensor__init(&ins[i]);
		ins[i].name = (char *)cfg->inputs[i].name;
		ins[i].datatype = (char *)"FP32";
		ins[i].n_shape = 2;
		ins[i].shape = shape;
		ptrs[i] = &ins[i];
		raw[i].data = (uint8_t *)(vals + 3 * i);
		raw[i].len = 12;
	}
	rq.model_name = (char *)cfg->name;
	rq.id = (char *)"req-7";
	rq.n_inputs = (size_t)cfg->nr_inputs;
	rq.inputs = ptrs;
	rq.n_raw_input_contents = (size_t)cfg->nr_inputs;
	rq.raw_input_contents = raw;
	*len = inference__model_infer_request__get_packed_size(&rq);
	buf = malloc(*len);
	if (buf)
		inference__model_infer_request__pack(&rq, buf);
	return buf;
}

TEST(infer_proto_unpack__raw_contents_stay_in_the_buffer_and_equal_protobuf_c)
{
	static const float vals[6] = { 1.5f, -2.0f, 0.25f, 3e-7f, 1e9f, -0.0f };
	Inference__ModelInferRequest *ours, *ref;
	struct gw_model_config cfg;
	size_t len;
	uint8_t *buf;

	model_of(&cfg, 2);
	buf = pack_request(&cfg, vals, &len);
	ASSERT_NE(NULL, buf);
	ours = gw_infer_proto_unpack(buf, len);
	ref = inference__model_infer_request__unpack(NULL, len, buf);
	ASSERT_NE(NULL, ours);
	ASSERT_NE(NULL, ref);
	EXPECT_STREQ(ref->model_name, ours->model_name);
	EXPECT_STREQ(ref->id, ours->id);
	ASSERT_EQ(ref->n_inputs, ours->n_inputs);
	EXPECT_STREQ(ref->inputs[1]->name, ours->inputs[1]->name);
	ASSERT_EQ(2, ours->n_raw_input_contents);
	for (size_t i = 0; i < 2; i++) {
		ASSERT_EQ(ref->raw_input_contents[i].len, ours->raw_input_contents[i].len);
		EXPECT_EQ(0, memcmp(ref->raw_input_contents[i].data,
				    ours->raw_input_contents[i].data, 12));
		/* in the message's own bytes, not a copy */
		EXPECT_TRUE(ours->raw_input_contents[i].data >= buf &&
			    ours->raw_input_contents[i].data + 12 <= buf + len);
	}
	inference__model_infer_request__free_unpacked(ref, NULL);
	gw_infer_proto_free(ours);
	free(buf);
}

/* Cut-off or malformed wire bytes, and a raw_input_contents of the wrong wire type, are refused. */
TEST(infer_proto_unpack__broken_wire_format_is_refused)
{
	static const float vals[3] = { 1, 2, 3 };
	struct gw_model_config cfg;
	size_t len;
	uint8_t *buf, bad[16];

	model_of(&cfg, 1);
	buf = pack_request(&cfg, vals, &len);
	ASSERT_NE(NULL, buf);
	/* every strict prefix that cuts a field: the raw one is last, so cutting it fails */
	EXPECT_EQ(NULL, gw_infer_proto_unpack(buf, len - 1));
	EXPECT_EQ(NULL, gw_infer_proto_unpack(buf, len - 12));
	free(buf);
	/* field 7 as a varint (wire type 0): not bytes */
	bad[0] = (7 << 3) | 0;
	bad[1] = 5;
	EXPECT_EQ(NULL, gw_infer_proto_unpack(bad, 2));
	/* a length past the end */
	bad[0] = (7 << 3) | 2;
	bad[1] = 100;
	EXPECT_EQ(NULL, gw_infer_proto_unpack(bad, 4));
	/* a varint key of eleven bytes */
	memset(bad, 0xff, 11);
	bad[11] = 0;
	EXPECT_EQ(NULL, gw_infer_proto_unpack(bad, 12));
	/* a group (wire type 3) */
	bad[0] = (7 << 3) | 3;
	EXPECT_EQ(NULL, gw_infer_proto_unpack(bad, 1));
}

/*
 * Messages of 2-byte fields that protobuf-c would unpack into ~40x their
 * size (empty repeated inputs, unknown fields; with and without a raw
 * input beside them) are refused with E2BIG within GW_PB_BUDGET.
 */
TEST(infer_proto_unpack__amplifying_messages_are_refused_within_the_budget)
{
	static const uint8_t patterns[][3] = { { 0x2a, 0x00 }, { 0xf8, 0x07, 0x00 } };
	static const size_t pattern_len[] = { 2, 3 };
	const size_t bytes = 4u << 20;

	for (size_t k = 0; k < 2; k++) {
		uint8_t *buf = malloc(bytes + 8);
		size_t len = 0;

		ASSERT_NE(NULL, buf);
		while (len + pattern_len[k] <= bytes) {
			memcpy(buf + len, patterns[k], pattern_len[k]);
			len += pattern_len[k];
		}
		errno = 0;
		EXPECT_EQ(NULL, gw_infer_proto_unpack(buf, len));
		EXPECT_EQ(E2BIG, errno);
		/* a raw input first: the rest is unpacked within the same budget */
		buf[len] = 0x3a;
		buf[len + 1] = 4;
		memset(buf + len + 2, 0, 4);
		errno = 0;
		EXPECT_EQ(NULL, gw_infer_proto_unpack(buf, len + 6));
		EXPECT_EQ(E2BIG, errno);
		/* any message of the service alike */
		errno = 0;
		EXPECT_EQ(NULL,
			  gw_pb_unpack(&inference__server_live_request__descriptor, buf, len));
		EXPECT_EQ(E2BIG, errno);
		free(buf);
	}
	/* a short one of the same fields is within the budget: unpacked, freed */
	{
		uint8_t few[64];
		Inference__ModelInferRequest *m;

		for (size_t i = 0; i < sizeof(few); i += 2) {
			few[i] = 0x2a;
			few[i + 1] = 0;
		}
		m = gw_infer_proto_unpack(few, sizeof(few));
		ASSERT_NE(NULL, m);
		EXPECT_EQ(32, m->n_inputs);
		gw_infer_proto_free(m);
	}
}

TEST(infer_from_proto__one_input_is_used_in_place_several_are_copied_flat)
{
	static const float vals[6] = { 1, 2, 3, 4, 5, 6 };
	Inference__ModelInferRequest *msg;
	struct gw_infer_request req;
	struct gw_model_config cfg;
	char why[256];
	size_t len;
	uint8_t *buf;

	model_of(&cfg, 1);
	buf = pack_request(&cfg, vals, &len);
	ASSERT_NE(NULL, buf);
	msg = gw_infer_proto_unpack(buf, len);
	ASSERT_NE(NULL, msg);
	ASSERT_EQ(0, gw_infer_from_proto(&cfg, msg, &req, why, sizeof(why))) TH_LOG("%s", why);
	EXPECT_EQ(12, req.input_bytes);
	EXPECT_EQ(NULL, req.input_buf);
	EXPECT_TRUE((const uint8_t *)req.input >= buf &&
		    (const uint8_t *)req.input + 12 <= buf + len);
	EXPECT_EQ(0, memcmp(vals, req.input, 12));
	EXPECT_STREQ("req-7", req.id);
	gw_infer_request_free(&req);
	gw_infer_proto_free(msg);
	free(buf);

	model_of(&cfg, 2);
	buf = pack_request(&cfg, vals, &len);
	ASSERT_NE(NULL, buf);
	msg = gw_infer_proto_unpack(buf, len);
	ASSERT_NE(NULL, msg);
	ASSERT_EQ(0, gw_infer_from_proto(&cfg, msg, &req, why, sizeof(why))) TH_LOG("%s", why);
	EXPECT_EQ(24, req.input_bytes);
	ASSERT_NE(NULL, req.input_buf);
	EXPECT_EQ((const void *)req.input_buf, req.input);
	EXPECT_EQ(0, memcmp(vals, req.input, 24));
	gw_infer_request_free(&req);
	gw_infer_proto_free(msg);
	free(buf);
}

TEST(infer_parse__one_binary_input_is_used_in_place_several_are_copied_flat)
{
	static const float vals[6] = { 1, 2, 3, 4, 5, 6 };
	struct gw_infer_request req;
	struct gw_model_config cfg;
	char why[256], body[1024];
	int n;

	model_of(&cfg, 1);
	n = snprintf(body, sizeof(body),
		     "{\"inputs\":[{\"name\":\"x0\",\"shape\":[1,3],\"datatype\":\"FP32\","
		     "\"parameters\":{\"binary_data_size\":12}}]}");
	memcpy(body + n, vals, 12);
	ASSERT_EQ(0, gw_infer_parse(&cfg, body, (size_t)n + 12, (size_t)n, &req, why, sizeof(why)))
	TH_LOG("%s", why);
	EXPECT_EQ(body + n, (const char *)req.input);
	EXPECT_EQ(NULL, req.input_buf);
	gw_infer_request_free(&req);

	model_of(&cfg, 2);
	n = snprintf(body, sizeof(body),
		     "{\"inputs\":[{\"name\":\"x1\",\"shape\":[1,3],\"datatype\":\"FP32\","
		     "\"parameters\":{\"binary_data_size\":12}},{\"name\":\"x0\",\"shape\":[1,3],"
		     "\"datatype\":\"FP32\",\"data\":[1,2,3]}]}");
	memcpy(body + n, vals + 3, 12);
	ASSERT_EQ(0, gw_infer_parse(&cfg, body, (size_t)n + 12, (size_t)n, &req, why, sizeof(why)))
	TH_LOG("%s", why);
	ASSERT_NE(NULL, req.input_buf);
	EXPECT_EQ(0, memcmp(vals, req.input, 24));
	gw_infer_request_free(&req);
}

/*
 * The answer's packed length never exceeds gw_infer_proto_answer_bytes,
 * which the gRPC side charges before the query is sent: outputs raw and
 * typed, an id of GW_ID_MAX - 1 bytes, latencies small and at their
 * longest (the bound's own case: equal); the message lies after the
 * headroom asked for and protobuf-c unpacks it to the outputs given.
 */
TEST(infer_proto_response__within_the_bound_charged_before_the_query)
{
	static float out[1002];
	const uint64_t lat[][2] = { { 0, 0 }, { 1500, 900 }, { UINT64_MAX, UINT64_MAX } };
	struct gw_infer_request req = { .nr_outputs = 2, .outputs = { 1, 0 } };
	struct gw_model_config cfg;

	for (int i = 0; i < 1002; i++)
		out[i] = (float)i * 0.25f;
	model_of(&cfg, 1);
	cfg.nr_outputs = 2;
	strcpy(cfg.outputs[1].name, "z");
	cfg.outputs[1].nr_dims = 2;
	cfg.outputs[1].dims[0] = 1;
	cfg.outputs[1].dims[1] = 1000;
	cfg.outputs[1].elems = 1000;
	memset(req.id, 'i', GW_ID_MAX - 1);
	req.has_id = true;
	for (int b = 0; b < 4; b++) {
		req.binary[0] = b & 1;
		req.binary[1] = b & 2;
		for (size_t l = 0; l < sizeof(lat) / sizeof(*lat); l++) {
			size_t bound = gw_infer_proto_answer_bytes(&cfg, &req), len;
			Inference__ModelInferResponse *back;
			uint8_t *buf;
			const void *z;

			ASSERT_EQ(0, gw_infer_proto_response(&cfg, &req, out, lat[l][0], lat[l][1], 5,
							     &buf, &len));
			EXPECT_LE(len, bound);
			if (lat[l][0] == UINT64_MAX)
				EXPECT_EQ(len, bound);
			back = inference__model_infer_response__unpack(NULL, len, buf + 5);
			ASSERT_NE(NULL, back);
			ASSERT_EQ(2u, back->n_outputs);
			EXPECT_STREQ("z", back->outputs[0]->name);
			z = req.binary[0] ? (const void *)back->raw_output_contents[0].data :
					    (const void *)back->outputs[0]->contents->fp32_contents;
			EXPECT_EQ(0, memcmp(out + 2, z, 1000 * sizeof(float)));
			inference__model_infer_response__free_unpacked(back, NULL);
			free(buf);
		}
	}
}

TEST_HARNESS_MAIN
