// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The KServe v2 infer answer (infer_request.h's "Out"), written straight
 * into one buffer whose size, gw_infer_answer_bytes(), is known before the
 * query is sent, so the HTTP side charges it to the client's budget
 * (review s18 HIGH 2; docs/design/gateway-json.md). json-c escapes the few
 * strings; the "data" arrays are "%.9g" per value (9 significant digits
 * round-trip an fp32), the very text json-c wrote from one object a value.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "infer_request.h"

/* The longest "%.9g" of an fp32 ("-1.17549435e-38") and its comma. */
#define ANSWER_VALUE_BYTES 16
/* "-9223372036854775808" and a comma. */
#define ANSWER_INT_BYTES 21
/* A string json-c escapes (\u00XX for a control byte) and its quotes. */
#define ANSWER_STRING_BYTES(s) (6 * strlen(s) + 2)
/* The fixed text around the strings and numbers: an answer's, an output's. */
#define ANSWER_FIXED_BYTES 256
#define ANSWER_OUTPUT_FIXED_BYTES 96

struct answer {
	char *p;
	size_t len;
};

static void answer_put(struct answer *a, const char *s)
{
	size_t n = strlen(s);

	memcpy(a->p + a->len, s, n);
	a->len += n;
}

static void answer_int(struct answer *a, int64_t v)
{
	a->len += (size_t)sprintf(a->p + a->len, "%" PRId64, v);
}

static int answer_string(struct answer *a, const char *s)
{
	struct json_object *o = json_object_new_string(s);
	const char *text;
	size_t n;

	if (!o)
		return -ENOMEM;
	text = json_object_to_json_string_length(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
	if (text) {
		memcpy(a->p + a->len, text, n);
		a->len += n;
	}
	json_object_put(o);
	return text ? 0 : -ENOMEM;
}

static void answer_floats(struct answer *a, const float *v, uint64_t n)
{
	char *p = a->p + a->len;

	*p++ = '[';
	for (uint64_t i = 0; i < n; i++) {
		if (i)
			*p++ = ',';
		p += sprintf(p, "%.9g", (double)v[i]);
	}
	*p++ = ']';
	a->len = (size_t)(p - a->p);
}

size_t gw_infer_answer_bytes(const struct gw_model_config *cfg,
			     const struct gw_infer_request *req)
{
	size_t n = ANSWER_FIXED_BYTES + ANSWER_STRING_BYTES(cfg->name) +
		   ANSWER_STRING_BYTES(cfg->version) + 2 * ANSWER_INT_BYTES;

	if (req->has_id)
		n += ANSWER_STRING_BYTES(req->id);
	for (int k = 0; k < req->nr_outputs; k++) {
		const struct gw_tensor *t = &cfg->outputs[req->outputs[k]];

		n += ANSWER_OUTPUT_FIXED_BYTES + ANSWER_STRING_BYTES(t->name) +
		     (size_t)t->nr_dims * ANSWER_INT_BYTES;
		n += req->binary[k] ? ANSWER_INT_BYTES + t->elems * 4 :
				      t->elems * ANSWER_VALUE_BYTES;
	}
	return n;
}

static int answer_output(struct answer *a, const struct gw_tensor *t, bool binary,
			 const float *v)
{
	int r;

	answer_put(a, "{\"name\":");
	r = answer_string(a, t->name);
	if (r)
		return r;
	answer_put(a, ",\"datatype\":\"FP32\",\"shape\":[");
	for (int i = 0; i < t->nr_dims; i++) {
		if (i)
			answer_put(a, ",");
		answer_int(a, t->dims[i]);
	}
	if (binary) {
		answer_put(a, "],\"parameters\":{\"binary_data_size\":");
		answer_int(a, (int64_t)t->elems * 4);
		answer_put(a, "}}");
	} else {
		answer_put(a, "],\"data\":");
		answer_floats(a, v, t->elems);
		answer_put(a, "}");
	}
	return 0;
}

int gw_infer_response(const struct gw_model_config *cfg, const struct gw_infer_request *req,
		      const float *outputs, uint64_t latency_ns, uint64_t exec_ns, char **body,
		      size_t *len, size_t *header_len)
{
	uint64_t offsets[GW_REPO_MAX_TENSORS], off = 0;
	struct answer a = { .p = malloc(gw_infer_answer_bytes(cfg, req)) };
	int r;

	if (!a.p)
		return -ENOMEM;
	for (int i = 0; i < cfg->nr_outputs; i++) {
		offsets[i] = off;
		off += cfg->outputs[i].elems;
	}
	answer_put(&a, "{\"model_name\":");
	r = answer_string(&a, cfg->name);
	answer_put(&a, ",\"model_version\":");
	r = r ?: answer_string(&a, cfg->version);
	if (req->has_id) {
		answer_put(&a, ",\"id\":");
		r = r ?: answer_string(&a, req->id);
	}
	answer_put(&a, ",\"parameters\":{\"coloc_latency_us\":");
	answer_int(&a, (int64_t)(latency_ns / 1000));
	answer_put(&a, ",\"coloc_exec_us\":");
	answer_int(&a, (int64_t)(exec_ns / 1000));
	answer_put(&a, "},\"outputs\":[");
	for (int k = 0; k < req->nr_outputs && !r; k++) {
		if (k)
			answer_put(&a, ",");
		r = answer_output(&a, &cfg->outputs[req->outputs[k]], req->binary[k],
				  outputs + offsets[req->outputs[k]]);
	}
	answer_put(&a, "]}");
	if (r) {
		free(a.p);
		return r;
	}
	*header_len = a.len;
	for (int k = 0; k < req->nr_outputs; k++) {
		const struct gw_tensor *t = &cfg->outputs[req->outputs[k]];

		if (!req->binary[k])
			continue;
		memcpy(a.p + a.len, outputs + offsets[req->outputs[k]], t->elems * 4);
		a.len += t->elems * 4;
	}
	*len = a.len;
	*body = a.p;
	return 0;
}
