// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target: coloc-gateway's request parsers, the bytes a network
 * client chooses. The first byte picks one: 'j' a KServe v2 JSON infer body
 * (gw_infer_parse without the binary extension), 'b' the binary tensor data
 * extension (the next two bytes the JSON part's length, taken modulo what is
 * left), 'g' a gRPC ModelInferRequest (protobuf-c's unpack, then
 * gw_infer_from_proto and, when accepted, the response packed back). All
 * against a model of one input [1,2,3] and two outputs [2] and [1,3]. An
 * accepted request must fill the model's 24 input bytes and ask for 1-2
 * known outputs once each; a refusal must be 400 with a reason.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "infer_proto.h"
#include "infer_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_gateway_model(struct gw_model_config *cfg)
{
	static const struct gw_tensor in = { "x", 3, { 1, 2, 3 }, 6 };
	static const struct gw_tensor a = { "a", 1, { 2 }, 2 }, b = { "b", 2, { 1, 3 }, 3 };

	memset(cfg, 0, sizeof(*cfg));
	strcpy(cfg->name, "small");
	strcpy(cfg->version, "3");
	cfg->nr_inputs = 1;
	cfg->inputs[0] = in;
	cfg->nr_outputs = 2;
	cfg->outputs[0] = a;
	cfg->outputs[1] = b;
}

static void fuzz_gateway_check(int r, const struct gw_infer_request *req, const char *why)
{
	if (r && (r != 400 || !why[0])) {
		fprintf(stderr, "fuzz_gateway: refused with %d and no reason\n", r);
		abort();
	}
	if (r)
		return;
	if (req->input_bytes != 24 || req->nr_outputs < 1 || req->nr_outputs > 2 ||
	    (req->nr_outputs == 2 && req->outputs[0] == req->outputs[1])) {
		fprintf(stderr, "fuzz_gateway: accepted a request the model cannot take\n");
		abort();
	}
	for (int k = 0; k < req->nr_outputs; k++)
		if (req->outputs[k] < 0 || req->outputs[k] > 1)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gw_model_config cfg;
	struct gw_infer_request req;
	char why[512] = "";
	int r;

	if (size < 1)
		return 0;
	fuzz_gateway_model(&cfg);
	if (data[0] == 'j' || data[0] == 'b') {
		const char *body = (const char *)data + 1;
		size_t len = size - 1, header = (size_t)-1;

		if (data[0] == 'b') {
			if (len < 2)
				return 0;
			header = ((size_t)(uint8_t)body[0] << 8 | (uint8_t)body[1]);
			body += 2;
			len -= 2;
			header = len ? header % (len + 1) : 0;
		}
		r = gw_infer_parse(&cfg, body, len, header, &req, why, sizeof(why));
		fuzz_gateway_check(r, &req, why);
		if (!r) {
			float out[5] = { 1, 2, 3, 4, 5 };
			char *resp;
			size_t rlen, hlen;

			if (gw_infer_response(&cfg, &req, out, 1000, 500, &resp, &rlen, &hlen))
				abort();
			free(resp);
		}
		gw_infer_request_free(&req);
	} else if (data[0] == 'g') {
		Inference__ModelInferRequest *msg = gw_infer_proto_unpack(data + 1, size - 1);

		if (!msg)
			return 0;
		r = gw_infer_from_proto(&cfg, msg, &req, why, sizeof(why));
		fuzz_gateway_check(r, &req, why);
		if (!r) {
			float out[5] = { 1, 2, 3, 4, 5 };
			uint8_t *buf;
			size_t len;
			Inference__ModelInferResponse *back;

			if (gw_infer_proto_response(&cfg, &req, out, 1000, 500, 0, &buf, &len) ||
			    len > gw_infer_proto_answer_bytes(&cfg, &req))
				abort();
			back = inference__model_infer_response__unpack(NULL, len, buf);
			if (!back || back->n_outputs != (size_t)req.nr_outputs)
				abort();
			inference__model_infer_response__free_unpacked(back, NULL);
			free(buf);
		}
		gw_infer_request_free(&req);
		gw_infer_proto_free(msg);
	}
	return 0;
}
