// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The gRPC infer messages (infer_proto.h): protobuf-c unpacks the bytes
 * (bounded by the gRPC message limit before they get here), all but the
 * raw_input_contents, within a byte budget (a message's length in
 * allocations, a few times over), which a walk over the top-level fields finds and
 * leaves where they lie (protobuf-c would copy each, ~600 KB for an image);
 * then each field is checked with the HTTP side's rules (infer_request.h's
 * lookups and shape check) before a byte is used; a model's only input is
 * forwarded from where it lies, several are copied into the flat input.
 * The response is built on the stack, pointing into the outputs, and
 * packed once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "infer_proto.h"

/* ModelInferRequest's raw_input_contents: field 7, length-delimited (wire type 2) */
#define PROTO_RAW_KEY ((7u << 3) | 2u)
#define PROTO_MAX_RAW 1024 /* entries; a model has at most GW_REPO_MAX_TENSORS inputs */

/* A varint at *p (before end) into *v, *p past it; false if cut off or over 10 bytes. */
static bool proto_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned int shift = 0; shift < 70 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

/* The end of the field whose key was read (p: after it), its value at *val; NULL if malformed. */
static const uint8_t *proto_field_end(const uint8_t *p, const uint8_t *end, uint64_t key,
				      const uint8_t **val)
{
	uint64_t n;

	switch (key & 7) {
	case 0:
		return proto_varint(&p, end, &n) ? p : NULL;
	case 1:
		return end - p >= 8 ? p + 8 : NULL;
	case 2:
		if (!proto_varint(&p, end, &n) || n > (uint64_t)(end - p))
			return NULL;
		*val = p;
		return p + n;
	case 5:
		return end - p >= 4 ? p + 4 : NULL;
	default:
		return NULL; /* groups (deprecated, not in this proto3 message) or no type */
	}
}

/*
 * Walks the message's top-level fields: its raw_input_contents located in
 * raw (up to max; *nr_raw counts them all), every other field copied to
 * rest (when not NULL) at *rest_len. False if the wire format is broken.
 */
static bool proto_split(const uint8_t *buf, size_t len, ProtobufCBinaryData *raw, size_t max,
			size_t *nr_raw, uint8_t *rest, size_t *rest_len)
{
	const uint8_t *p = buf, *end = buf + len;

	*nr_raw = 0;
	*rest_len = 0;
	while (p < end) {
		const uint8_t *field = p, *val = NULL, *next;
		uint64_t key;

		if (!proto_varint(&p, end, &key))
			return false;
		next = proto_field_end(p, end, key, &val);
		if (!next)
			return false;
		if (key == PROTO_RAW_KEY) {
			if (*nr_raw < max)
				raw[*nr_raw] = (ProtobufCBinaryData){ (size_t)(next - val),
								      (uint8_t *)val };
			(*nr_raw)++;
		} else {
			if (rest)
				memcpy(rest + *rest_len, field, (size_t)(next - field));
			*rest_len += (size_t)(next - field);
		}
		p = next;
	}
	return true;
}

/* Each allocation of a budgeted unpack, after a header with its size. */
union pb_header {
	size_t size;
	max_align_t align;
};

struct pb_budget {
	ProtobufCAllocator a;
	size_t left;
	bool over;
};

static void *pb_alloc(void *data, size_t size)
{
	struct pb_budget *b = data;
	union pb_header *h;

	if (size > b->left || b->left - size < sizeof(*h)) {
		b->over = true;
		return NULL;
	}
	h = malloc(sizeof(*h) + size);
	if (!h)
		return NULL;
	b->left -= sizeof(*h) + size;
	h->size = size;
	return h + 1;
}

static void pb_release(void *data, void *p)
{
	(void)data;
	if (p)
		free((union pb_header *)p - 1);
}

/* What frees a budgeted message (its alloc is never called). */
static ProtobufCAllocator pb_freer = { .free = pb_release };

ProtobufCMessage *gw_pb_unpack(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len)
{
	struct pb_budget b = { .a = { .alloc = pb_alloc, .free = pb_release },
			       .left = GW_PB_BUDGET(len) };
	ProtobufCMessage *m;

	b.a.allocator_data = &b;
	m = protobuf_c_message_unpack(d, &b.a, len, buf);
	if (!m)
		errno = b.over ? E2BIG : EINVAL;
	return m;
}

void gw_pb_free(ProtobufCMessage *m)
{
	if (m)
		protobuf_c_message_free_unpacked(m, &pb_freer);
}

Inference__ModelInferRequest *gw_infer_proto_unpack(const uint8_t *buf, size_t len)
{
	ProtobufCBinaryData *raw;
	Inference__ModelInferRequest *msg;
	size_t nr_raw, rest_len;
	uint8_t *rest;

	errno = EINVAL;
	if (!proto_split(buf, len, NULL, 0, &nr_raw, NULL, &rest_len))
		return NULL;
	if (!nr_raw)
		return (Inference__ModelInferRequest *)gw_pb_unpack(
			&inference__model_infer_request__descriptor, buf, len);
	if (nr_raw > PROTO_MAX_RAW)
		return NULL;
	raw = calloc(nr_raw, sizeof(*raw));
	rest = malloc(rest_len ? rest_len : 1);
	if (!raw || !rest || !proto_split(buf, len, raw, nr_raw, &nr_raw, rest, &rest_len)) {
		free(raw);
		free(rest);
		errno = raw && rest ? EINVAL : ENOMEM;
		return NULL;
	}
	msg = (Inference__ModelInferRequest *)gw_pb_unpack(
		&inference__model_infer_request__descriptor, rest, rest_len);
	free(rest);
	if (!msg || msg->n_raw_input_contents) {
		int e = msg ? EINVAL : errno;

		/* a raw_input_contents of another wire type: not a ModelInferRequest */
		gw_pb_free(msg ? &msg->base : NULL);
		free(raw);
		errno = e;
		return NULL;
	}
	msg->n_raw_input_contents = nr_raw;
	msg->raw_input_contents = raw;
	return msg;
}

void gw_infer_proto_free(Inference__ModelInferRequest *msg)
{
	if (!msg)
		return;
	free(msg->raw_input_contents);
	msg->raw_input_contents = NULL;
	msg->n_raw_input_contents = 0;
	gw_pb_free(&msg->base);
}

/* Whether c holds values of a type other than FP32. */
static bool proto_other_contents(const Inference__InferTensorContents *c)
{
	return c && (c->n_bool_contents || c->n_int_contents || c->n_int64_contents ||
		     c->n_uint_contents || c->n_uint64_contents || c->n_fp64_contents ||
		     c->n_bytes_contents);
}

/* An input's bytes: a model's only input used where it lies, else copied to its place. */
static int proto_take(const struct gw_model_config *cfg, struct gw_infer_request *req,
		      uint64_t offset, const void *bytes, size_t len, char *why, size_t why_len)
{
	if (cfg->nr_inputs == 1) {
		req->input = bytes;
		return 0;
	}
	if (!gw_infer_input_buf(req))
		return gw_infer_refuse(why, why_len, "out of memory");
	memcpy(req->input_buf + offset, bytes, len);
	return 0;
}

/* Input k of msg into req->input at its tensor's place. */
static int proto_one_input(const struct gw_model_config *cfg,
			   const Inference__ModelInferRequest *msg, size_t k,
			   struct gw_infer_request *req, bool *seen, char *why, size_t why_len)
{
	const Inference__ModelInferRequest__InferInputTensor *in = msg->inputs[k];
	const Inference__InferTensorContents *c = in->contents;
	const struct gw_tensor *t;
	uint64_t offset = 0;
	int i, r;

	i = gw_infer_input_index(cfg, in->name, &offset);
	if (i < 0)
		return gw_infer_refuse(why, why_len, "model %s has no input named '%.64s'",
				       cfg->name, in->name);
	t = &cfg->inputs[i];
	if (seen[i])
		return gw_infer_refuse(why, why_len, "input %s given twice", t->name);
	seen[i] = true;
	if (strcmp(in->datatype, "FP32"))
		return gw_infer_refuse(why, why_len, "input %s: the datatype must be \"FP32\"",
				       t->name);
	r = gw_infer_check_shape(t, in->shape, in->n_shape, why, why_len);
	if (r)
		return r;
	if (proto_other_contents(c))
		return gw_infer_refuse(why, why_len, "input %s: FP32 values go in fp32_contents",
				       t->name);
	if (msg->n_raw_input_contents) {
		const ProtobufCBinaryData *raw = &msg->raw_input_contents[k];

		if (c && c->n_fp32_contents)
			return gw_infer_refuse(
				why, why_len,
				"input %s: contents and raw_input_contents both given", t->name);
		if (raw->len != t->elems * 4)
			return gw_infer_refuse(
				why, why_len,
				"input %s: its raw_input_contents must be %llu bytes (its "
				"shape in FP32), not %zu",
				t->name, (unsigned long long)t->elems * 4, raw->len);
		return proto_take(cfg, req, offset, raw->data, raw->len, why, why_len);
	}
	if (!c || c->n_fp32_contents != t->elems)
		return gw_infer_refuse(
			why, why_len,
			"input %s: contents.fp32_contents must hold exactly %llu values "
			"(or use raw_input_contents)",
			t->name, (unsigned long long)t->elems);
	return proto_take(cfg, req, offset, c->fp32_contents, t->elems * 4, why, why_len);
}

static int proto_outputs(const struct gw_model_config *cfg, const Inference__ModelInferRequest *msg,
			 bool raw, struct gw_infer_request *req, char *why, size_t why_len)
{
	if (!msg->n_outputs) {
		req->nr_outputs = cfg->nr_outputs;
		for (int i = 0; i < cfg->nr_outputs; i++) {
			req->outputs[i] = i;
			req->binary[i] = raw;
		}
		return 0;
	}
	if (msg->n_outputs > (size_t)cfg->nr_outputs)
		return gw_infer_refuse(why, why_len, "more outputs asked than model %s has (%d)",
				       cfg->name, cfg->nr_outputs);
	for (size_t k = 0; k < msg->n_outputs; k++) {
		int i = gw_infer_output_index(cfg, msg->outputs[k]->name);

		if (i < 0)
			return gw_infer_refuse(why, why_len, "model %s has no output named '%.64s'",
					       cfg->name, msg->outputs[k]->name);
		for (size_t j = 0; j < k; j++)
			if (req->outputs[j] == i)
				return gw_infer_refuse(why, why_len, "output %s asked twice",
						       cfg->outputs[i].name);
		req->outputs[k] = i;
		req->binary[k] = raw;
	}
	req->nr_outputs = (int)msg->n_outputs;
	return 0;
}

int gw_infer_from_proto(const struct gw_model_config *cfg, const Inference__ModelInferRequest *msg,
			struct gw_infer_request *req, char *why, size_t why_len)
{
	bool seen[GW_REPO_MAX_TENSORS] = { false };
	uint64_t elems = 0;
	int r;

	memset(req, 0, sizeof(*req));
	if (strlen(msg->id) >= sizeof(req->id))
		return gw_infer_refuse(why, why_len, "the id must be at most %d bytes",
				       GW_ID_MAX - 1);
	snprintf(req->id, sizeof(req->id), "%s", msg->id);
	req->has_id = msg->id[0] != '\0';
	if (msg->n_inputs != (size_t)cfg->nr_inputs)
		return gw_infer_refuse(why, why_len, "inputs must list the model's %d input(s)",
				       cfg->nr_inputs);
	if (msg->n_raw_input_contents && msg->n_raw_input_contents != msg->n_inputs)
		return gw_infer_refuse(
			why, why_len,
			"raw_input_contents must have one entry per input (%zu), not %zu",
			msg->n_inputs, msg->n_raw_input_contents);
	for (int i = 0; i < cfg->nr_inputs; i++)
		elems += cfg->inputs[i].elems;
	req->input_bytes = (size_t)elems * 4;
	for (size_t k = 0; k < msg->n_inputs; k++) {
		r = proto_one_input(cfg, msg, k, req, seen, why, why_len);
		if (r)
			return r;
	}
	return proto_outputs(cfg, msg, msg->n_raw_input_contents > 0, req, why, why_len);
}

#define PROTO_PARAMS 2

/* A ModelInferResponse built on the stack, pointing into the outputs. */
struct proto_answer {
	Inference__ModelInferResponse resp;
	Inference__ModelInferResponse__ParametersEntry entries[PROTO_PARAMS], *pe[PROTO_PARAMS];
	Inference__InferParameter values[PROTO_PARAMS];
	Inference__ModelInferResponse__InferOutputTensor tensors[GW_REPO_MAX_TENSORS];
	Inference__ModelInferResponse__InferOutputTensor *tp[GW_REPO_MAX_TENSORS];
	Inference__InferTensorContents contents[GW_REPO_MAX_TENSORS];
	ProtobufCBinaryData raw[GW_REPO_MAX_TENSORS];
};

/*
 * The answer to req in a; outputs NULL for its size alone (protobuf-c
 * sizes fp32 and bytes fields by their counts, never reading the values).
 */
static void proto_answer_build(struct proto_answer *a, const struct gw_model_config *cfg,
			       const struct gw_infer_request *req, const float *outputs,
			       uint64_t latency_ns, uint64_t exec_ns)
{
	static const char *const keys[PROTO_PARAMS] = { "coloc_latency_us", "coloc_exec_us" };
	const uint64_t vals[PROTO_PARAMS] = { latency_ns / 1000, exec_ns / 1000 };
	uint64_t offsets[GW_REPO_MAX_TENSORS], off = 0;
	size_t nr_raw = 0;

	for (int i = 0; i < cfg->nr_outputs; i++) {
		offsets[i] = off;
		off += cfg->outputs[i].elems;
	}
	inference__model_infer_response__init(&a->resp);
	a->resp.model_name = (char *)cfg->name;
	a->resp.model_version = (char *)cfg->version;
	a->resp.id = (char *)req->id;
	for (int i = 0; i < PROTO_PARAMS; i++) {
		inference__model_infer_response__parameters_entry__init(&a->entries[i]);
		inference__infer_parameter__init(&a->values[i]);
		a->values[i].parameter_choice_case =
			INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM;
		a->values[i].int64_param = (int64_t)vals[i];
		a->entries[i].key = (char *)keys[i];
		a->entries[i].value = &a->values[i];
		a->pe[i] = &a->entries[i];
	}
	a->resp.n_parameters = PROTO_PARAMS;
	a->resp.parameters = a->pe;
	for (int k = 0; k < req->nr_outputs; k++) {
		const struct gw_tensor *t = &cfg->outputs[req->outputs[k]];
		const float *v = outputs ? outputs + offsets[req->outputs[k]] : NULL;

		inference__model_infer_response__infer_output_tensor__init(&a->tensors[k]);
		a->tensors[k].name = (char *)t->name;
		a->tensors[k].datatype = (char *)"FP32";
		a->tensors[k].n_shape = (size_t)t->nr_dims;
		a->tensors[k].shape = (int64_t *)t->dims;
		if (req->binary[k]) {
			a->raw[nr_raw].len = t->elems * 4;
			a->raw[nr_raw++].data = (uint8_t *)v;
		} else {
			inference__infer_tensor_contents__init(&a->contents[k]);
			a->contents[k].n_fp32_contents = t->elems;
			a->contents[k].fp32_contents = (float *)v;
			a->tensors[k].contents = &a->contents[k];
		}
		a->tp[k] = &a->tensors[k];
	}
	a->resp.n_outputs = (size_t)req->nr_outputs;
	a->resp.outputs = a->tp;
	a->resp.n_raw_output_contents = nr_raw;
	a->resp.raw_output_contents = a->raw;
}

size_t gw_infer_proto_answer_bytes(const struct gw_model_config *cfg,
				   const struct gw_infer_request *req)
{
	struct proto_answer a;

	/* the longest latencies the answer can carry: their varints at their longest */
	proto_answer_build(&a, cfg, req, NULL, UINT64_MAX, UINT64_MAX);
	return inference__model_infer_response__get_packed_size(&a.resp);
}

int gw_infer_proto_response(const struct gw_model_config *cfg, const struct gw_infer_request *req,
			    const float *outputs, uint64_t latency_ns, uint64_t exec_ns,
			    size_t headroom, uint8_t **buf, size_t *len)
{
	struct proto_answer a;

	proto_answer_build(&a, cfg, req, outputs, latency_ns, exec_ns);
	*len = inference__model_infer_response__get_packed_size(&a.resp);
	*buf = malloc(headroom + *len);
	if (!*buf)
		return -ENOMEM;
	inference__model_infer_response__pack(&a.resp, *buf + headroom);
	return 0;
}
