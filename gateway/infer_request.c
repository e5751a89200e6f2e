// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * KServe v2 infer bodies (infer_request.h): the request's JSON and binary
 * parts into the model's flat fp32 input (a model's one input sent as
 * binary is used where it lies in the body, not copied), and the outputs
 * back into JSON and binary parts (infer_answer.c). JSON is read with
 * json-c but for the tensors' "data" arrays (json_data.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "infer_request.h"
#include "json_data.h"

int gw_infer_refuse(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return 400;
}

static struct json_object *infer_get(struct json_object *o, const char *key, json_type type)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, type) ? v : NULL;
}

static bool infer_flag(struct json_object *o, const char *key)
{
	struct json_object *params = infer_get(o, "parameters", json_type_object);
	struct json_object *v = params ? infer_get(params, key, json_type_boolean) : NULL;

	return v && json_object_get_boolean(v);
}

int gw_infer_check_shape(const struct gw_tensor *t, const int64_t *dims, size_t nr, char *why,
			 size_t why_len)
{
	bool same = nr == (size_t)t->nr_dims;
	char want[160] = "";
	size_t off = 0;

	for (size_t i = 0; same && i < nr; i++)
		same = dims[i] == t->dims[i];
	if (same)
		return 0;
	for (int i = 0; i < t->nr_dims && off < sizeof(want); i++)
		off += (size_t)snprintf(want + off, sizeof(want) - off, "%s%lld", i ? "," : "",
					(long long)t->dims[i]);
	return gw_infer_refuse(why, why_len, "input %s: the shape must be [%s]", t->name, want);
}

int gw_infer_input_index(const struct gw_model_config *cfg, const char *name, uint64_t *offset)
{
	uint64_t off = 0;

	for (int i = 0; i < cfg->nr_inputs; i++) {
		if (!strcmp(cfg->inputs[i].name, name)) {
			*offset = off;
			return i;
		}
		off += cfg->inputs[i].elems;
	}
	return -1;
}

int gw_infer_output_index(const struct gw_model_config *cfg, const char *name)
{
	for (int i = 0; i < cfg->nr_outputs; i++)
		if (!strcmp(cfg->outputs[i].name, name))
			return i;
	return -1;
}

/* The JSON "shape" against the tensor's (a non-integer or a deeper shape never matches). */
static int infer_check_json_shape(const struct gw_tensor *t, struct json_object *in, char *why,
				  size_t why_len)
{
	struct json_object *shape = infer_get(in, "shape", json_type_array);
	size_t nr = shape ? json_object_array_length(shape) : 0;
	int64_t dims[GW_REPO_MAX_DIMS];

	if (nr > GW_REPO_MAX_DIMS)
		nr = GW_REPO_MAX_DIMS + 1;
	for (size_t i = 0; i < nr && i < GW_REPO_MAX_DIMS; i++) {
		struct json_object *d = json_object_array_get_idx(shape, i);

		if (!json_object_is_type(d, json_type_int))
			return gw_infer_check_shape(t, dims, GW_REPO_MAX_DIMS + 1, why, why_len);
		dims[i] = json_object_get_int64(d);
	}
	return gw_infer_check_shape(t, dims, nr, why, why_len);
}

/* One of "inputs" into req->input at the tensor's place; binary bytes from *bin. */
static int infer_one_input(const struct gw_model_config *cfg, struct json_object *in,
			   struct gw_json_data *d, struct gw_infer_request *req, bool *seen,
			   const char **bin, size_t *bin_left, char *why, size_t why_len)
{
	struct json_object *name = infer_get(in, "name", json_type_string);
	struct json_object *type = infer_get(in, "datatype", json_type_string);
	struct json_object *params = infer_get(in, "parameters", json_type_object);
	struct json_object *size =
		params ? infer_get(params, "binary_data_size", json_type_int) : NULL;
	struct json_object *data;
	const struct gw_tensor *t = NULL;
	uint64_t offset = 0;
	char bad[160];
	int i, r;

	if (!name)
		return gw_infer_refuse(why, why_len, "each input needs a string \"name\"");
	i = gw_infer_input_index(cfg, json_object_get_string(name), &offset);
	if (i < 0)
		return gw_infer_refuse(why, why_len, "model %s has no input named '%.64s'",
				       cfg->name, json_object_get_string(name));
	t = &cfg->inputs[i];
	if (seen[i])
		return gw_infer_refuse(why, why_len, "input %s given twice", t->name);
	seen[i] = true;
	if (!type || strcmp(json_object_get_string(type), "FP32"))
		return gw_infer_refuse(why, why_len, "input %s: the datatype must be \"FP32\"",
				       t->name);
	r = infer_check_json_shape(t, in, why, why_len);
	if (r)
		return r;
	if (size) {
		int64_t bytes = json_object_get_int64(size);

		if (json_object_object_get_ex(in, "data", NULL))
			return gw_infer_refuse(why, why_len,
					       "input %s: both \"data\" and binary data", t->name);
		if (bytes < 0 || (uint64_t)bytes != t->elems * 4)
			return gw_infer_refuse(
				why, why_len,
				"input %s: binary_data_size must be %llu (its shape in "
				"FP32)",
				t->name, (unsigned long long)t->elems * 4);
		if ((uint64_t)bytes > *bin_left)
			return gw_infer_refuse(
				why, why_len,
				"input %s: binary_data_size %lld is past the body's end", t->name,
				(long long)bytes);
		if (cfg->nr_inputs == 1)
			req->input = *bin;
		else if (gw_infer_input_buf(req))
			memcpy(req->input_buf + offset, *bin, (size_t)bytes);
		else
			return gw_infer_refuse(why, why_len, "out of memory");
		*bin += bytes;
		*bin_left -= (size_t)bytes;
		return 0;
	}
	if (!json_object_object_get_ex(in, "data", &data))
		return gw_infer_refuse(why, why_len,
				       "input %s needs \"data\" (an array) or "
				       "parameters.binary_data_size",
				       t->name);
	if (!gw_infer_input_buf(req))
		return gw_infer_refuse(why, why_len, "out of memory");
	if (gw_json_data_floats(d, data, req->input_buf + offset, t->elems,
				t->nr_dims > 1 ? t->nr_dims : 1, bad, sizeof(bad)))
		return gw_infer_refuse(why, why_len, "input %s: %s", t->name, bad);
	return 0;
}

static int infer_outputs(const struct gw_model_config *cfg, struct json_object *o,
			 struct gw_infer_request *req, char *why, size_t why_len)
{
	struct json_object *outs = infer_get(o, "outputs", json_type_array);
	bool all_binary = infer_flag(o, "binary_data_output");
	size_t n = outs ? json_object_array_length(outs) : 0;

	if (json_object_object_get_ex(o, "outputs", NULL) && !outs)
		return gw_infer_refuse(why, why_len, "\"outputs\" must be an array");
	if (!n) {
		req->nr_outputs = cfg->nr_outputs;
		for (int i = 0; i < cfg->nr_outputs; i++) {
			req->outputs[i] = i;
			req->binary[i] = all_binary;
		}
		return 0;
	}
	if (n > (size_t)cfg->nr_outputs)
		return gw_infer_refuse(why, why_len, "more outputs asked than model %s has (%d)",
				       cfg->name, cfg->nr_outputs);
	for (size_t k = 0; k < n; k++) {
		struct json_object *out = json_object_array_get_idx(outs, k);
		struct json_object *name = infer_get(out, "name", json_type_string);
		int i;

		if (!name)
			return gw_infer_refuse(why, why_len, "each output needs a string \"name\"");
		i = gw_infer_output_index(cfg, json_object_get_string(name));
		if (i < 0)
			return gw_infer_refuse(why, why_len, "model %s has no output named '%.64s'",
					       cfg->name, json_object_get_string(name));
		for (size_t j = 0; j < k; j++)
			if (req->outputs[j] == i)
				return gw_infer_refuse(why, why_len, "output %s asked twice",
						       cfg->outputs[i].name);
		req->outputs[k] = i;
		req->binary[k] = all_binary || infer_flag(out, "binary_data");
	}
	req->nr_outputs = (int)n;
	return 0;
}

/*
 * The lists a row-major nested form of tensor t holds: the outer one, then
 * one per index of each dimension but the last (d0 + d0 d1 + ...).
 */
static uint64_t infer_nested_lists(const struct gw_tensor *t)
{
	uint64_t lists = 1, prefix = 1;

	for (int d = 0; d + 1 < t->nr_dims; d++) {
		prefix *= (uint64_t)t->dims[d];
		lists += prefix;
	}
	return lists;
}

/* The model's elems input values and their nested lists: the values a JSON part needs. */
static uint64_t infer_items(const struct gw_model_config *cfg, uint64_t elems)
{
	uint64_t items = elems;

	for (int i = 0; i < cfg->nr_inputs; i++)
		items += infer_nested_lists(&cfg->inputs[i]);
	return items;
}

/*
 * The JSON part's size against what the inputs' values can need, flat or
 * nested, before any of it is read: 0, or 413
 * with the reason. Every value but a container's first follows a ',', and
 * each container opens with '[' or '{', so their count bounds the values
 * and lists (one in a string counts too: over-counting only refuses
 * sooner).
 */
static int infer_check_json_size(const struct gw_model_config *cfg, uint64_t elems,
				 const char *json, size_t len, char *why, size_t why_len)
{
	uint64_t items = infer_items(cfg, elems), values = 0, max_values, max_bytes;

	max_values = items + GW_JSON_MARGIN_VALUES;
	max_bytes = items * GW_JSON_BYTES_PER_VALUE + GW_JSON_MARGIN_BYTES;

	if (len > max_bytes) {
		gw_infer_refuse(why, why_len,
				"the JSON part (%zu bytes) is longer than model %s's %llu input "
				"values can need (%llu bytes); send large inputs as binary data",
				len, cfg->name, (unsigned long long)elems,
				(unsigned long long)max_bytes);
		return 413;
	}
	for (size_t i = 0; i < len; i++)
		values += json[i] == ',' || json[i] == '[' || json[i] == '{';
	if (values > max_values) {
		gw_infer_refuse(why, why_len,
				"the JSON part holds more values (%llu) than model %s's %llu input "
				"values, their nested lists (%llu) and %d more",
				(unsigned long long)values, cfg->name, (unsigned long long)elems,
				(unsigned long long)(items - elems), GW_JSON_MARGIN_VALUES);
		return 413;
	}
	return 0;
}

int gw_infer_parse(const struct gw_model_config *cfg, const char *body, size_t len,
		   size_t header_len, struct gw_infer_request *req, char *why, size_t why_len)
{
	bool seen[GW_REPO_MAX_TENSORS] = { false };
	struct gw_json_data d;
	struct json_object *o = NULL, *inputs, *id;
	const char *bin;
	size_t bin_left, nr;
	uint64_t elems = 0;
	int r = 400;

	memset(req, 0, sizeof(*req));
	if (header_len == (size_t)-1)
		header_len = len;
	if (header_len > len)
		return gw_infer_refuse(
			why, why_len,
			"Inference-Header-Content-Length (%zu) is past the body (%zu "
			"bytes)",
			header_len, len);
	if (header_len > INT32_MAX)
		return gw_infer_refuse(why, why_len, "the JSON part is too long");
	for (int i = 0; i < cfg->nr_inputs; i++)
		elems += cfg->inputs[i].elems;
	req->input_bytes = (size_t)elems * 4;
	r = infer_check_json_size(cfg, elems, body, header_len, why, why_len);
	if (r)
		return r;
	r = 400;
	o = gw_json_data_parse(body, header_len, GW_JSON_MARGIN_VALUES, &d, why, why_len);
	if (!o)
		return d.values > GW_JSON_MARGIN_VALUES ? 413 : 400;
	if (!json_object_is_type(o, json_type_object)) {
		gw_infer_refuse(why, why_len, "the request is not one JSON object");
		goto out;
	}
	if (json_object_object_get_ex(o, "id", &id)) {
		if (!json_object_is_type(id, json_type_string) ||
		    (size_t)json_object_get_string_len(id) >= sizeof(req->id) ||
		    memchr(json_object_get_string(id), '\0',
			   (size_t)json_object_get_string_len(id))) {
			gw_infer_refuse(why, why_len, "\"id\" must be a string of at most %d bytes",
					GW_ID_MAX - 1);
			goto out;
		}
		snprintf(req->id, sizeof(req->id), "%s", json_object_get_string(id));
		req->has_id = true;
	}
	inputs = infer_get(o, "inputs", json_type_array);
	nr = inputs ? json_object_array_length(inputs) : 0;
	if (nr != (size_t)cfg->nr_inputs) {
		gw_infer_refuse(why, why_len, "\"inputs\" must list the model's %d input(s)",
				cfg->nr_inputs);
		goto out;
	}
	bin = body + header_len;
	bin_left = len - header_len;
	for (size_t i = 0; i < nr; i++) {
		r = infer_one_input(cfg, json_object_array_get_idx(inputs, i), &d, req, seen, &bin,
				    &bin_left, why, why_len);
		if (r)
			goto out;
	}
	r = 400;
	if (bin_left) {
		gw_infer_refuse(why, why_len, "%zu bytes after the inputs' binary data", bin_left);
		goto out;
	}
	r = infer_outputs(cfg, o, req, why, why_len);
out:
	json_object_put(o);
	return r;
}

size_t gw_infer_tensor_bound(const struct gw_model_config *cfg, size_t len, size_t header_len)
{
	uint64_t bytes = 0, json = header_len == (size_t)-1 ? len : header_len;

	for (int i = 0; i < cfg->nr_inputs; i++)
		bytes += cfg->inputs[i].elems * 4;
	if (cfg->nr_inputs == 1 && bytes > 2 * json + 2)
		bytes = 2 * json + 2;
	return (size_t)bytes;
}

size_t gw_infer_body_max(const struct gw_model_config *cfg)
{
	uint64_t elems = 0;

	for (int i = 0; i < cfg->nr_inputs; i++)
		elems += cfg->inputs[i].elems;
	return (size_t)(infer_items(cfg, elems) * GW_JSON_BYTES_PER_VALUE + GW_JSON_MARGIN_BYTES +
			elems * 4);
}

void gw_infer_request_free(struct gw_infer_request *req)
{
	free(req->input_buf);
	req->input_buf = NULL;
	req->input = NULL;
}

float *gw_infer_input_buf(struct gw_infer_request *req)
{
	if (!req->input_buf) {
		req->input_buf = malloc(req->input_bytes ? req->input_bytes : 1);
		req->input = req->input_buf;
	}
	return req->input_buf;
}

char *gw_error_json(const char *why)
{
	struct json_object *o = json_object_new_object();
	char *s;

	json_object_object_add(o, "error", json_object_new_string(why));
	s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							     JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return s;
}
