/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The KServe v2 (Open Inference Protocol) infer body, in and out, with the
 * binary tensor data extension; no I/O, so the parsers can be fed anything
 * (tests, a fuzz target).
 *
 * In: a JSON object {"id":S?,"parameters":{"binary_data_output":bool}?,
 * "inputs":[{"name":S,"shape":[N..],"datatype":"FP32","data":[...]? |
 * "parameters":{"binary_data_size":N}}], "outputs":[{"name":S,
 * "parameters":{"binary_data":bool}?}]?}. Each of the model's inputs must
 * come exactly once, FP32, with the model's shape exactly; its values as a
 * (flat or nested to at most its rank, row-major) array of numbers, or as
 * binary_data_size raw little-endian bytes after the JSON when the HTTP
 * request carried Inference-Header-Content-Length (the JSON's length; the binary inputs
 * follow in the order the JSON names them, and must use all the bytes).
 * Without "outputs" every output is returned, binary if
 * "binary_data_output" is true.
 *
 * Out: {"model_name":S,"model_version":S,"id":S (when the request had
 * one),"parameters":{"coloc_latency_us":N,"coloc_exec_us":N} (colocd's
 * latency_ns and exec_ns of the query: arrival in colocd to completion,
 * and the executor's share),"outputs":[{"name":S,"datatype":"FP32",
 * "shape":[N..],"data":[...] | "parameters":{"binary_data_size":N}}]},
 * binary outputs after it.
 *
 * Every length is checked before it is used: the JSON's length against the
 * body, each binary size against what is left, each count against the
 * model's shape, before anything is written.
 */
#ifndef COLOC_GATEWAY_INFER_REQUEST_H
#define COLOC_GATEWAY_INFER_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "repository.h"

#define GW_ID_MAX 256 /* bytes of a request id, with its NUL */
#define GW_JSON_MAX_DEPTH 32
/*
 * What a JSON part may hold beyond the model's input values (docs/gateway.md):
 * containers and commas counted as values before a byte is read, and bytes
 * of text per value, besides the margin; json-c, which reads all but the
 * "data" arrays (json_data.h) at ~100 B to ~1 KB a value, is given at most
 * GW_JSON_MARGIN_VALUES.
 */
#define GW_JSON_MARGIN_VALUES 1024
#define GW_JSON_BYTES_PER_VALUE 64
#define GW_JSON_MARGIN_BYTES (64u << 10)

struct gw_infer_request {
	char id[GW_ID_MAX];
	bool has_id;
	/*
	 * The model's inputs one after another (shm.h's layout): input_buf, or,
	 * when the model has one input and the request gave it as raw bytes,
	 * those bytes where they lie in the request (no copy).
	 */
	const void *input;
	float *input_buf; /* malloc'd when needed */
	size_t input_bytes;
	int nr_outputs; /* requested, in the order asked */
	int outputs[GW_REPO_MAX_TENSORS]; /* index into the model's outputs */
	bool binary[GW_REPO_MAX_TENSORS];
};

/*
 * Parses body (len bytes; the first header_len of them JSON, or all of it
 * when header_len is (size_t)-1: no binary extension) for model cfg. 0, or
 * an HTTP status (400; 413 for a JSON part longer, or holding more values,
 * than the model's inputs can need, refused before it is parsed) with the
 * reason in why. req->input may point into
 * body, which must outlive its use; gw_infer_request_free() frees what
 * was allocated, in either case.
 */
int gw_infer_parse(const struct gw_model_config *cfg, const char *body, size_t len,
		   size_t header_len, struct gw_infer_request *req, char *why, size_t why_len);
void gw_infer_request_free(struct gw_infer_request *req);
/*
 * The most bytes gw_infer_parse() allocates for the tensors of a body of
 * len bytes (header_len as there): every input's unless the model's one
 * input may lie in the body as binary data; then no more than its JSON
 * part can hold values (4 bytes for at least 2 of text each).
 */
size_t gw_infer_tensor_bound(const struct gw_model_config *cfg, size_t len, size_t header_len);
/*
 * The most bytes an infer body for cfg can be without gw_infer_parse()
 * refusing it by its size: the JSON part's bound, then every input's
 * values as binary data (a body's Content-Length is held to it).
 */
size_t gw_infer_body_max(const struct gw_model_config *cfg);

/* req->input_buf (req->input_bytes of it), allocated on first use; NULL on no memory. */
float *gw_infer_input_buf(struct gw_infer_request *req);

/*
 * What both front doors check alike (the gRPC side is infer_proto.h): the
 * input named name (its index, and its offset in floats in the model's
 * flat input) or -1; the output named name or -1; whether dims (nr of them)
 * are tensor t's shape exactly: 0, or 400 with the reason in why.
 */
int gw_infer_input_index(const struct gw_model_config *cfg, const char *name, uint64_t *offset);
int gw_infer_output_index(const struct gw_model_config *cfg, const char *name);
int gw_infer_check_shape(const struct gw_tensor *t, const int64_t *dims, size_t nr, char *why,
			 size_t why_len);

/*
 * The most bytes gw_infer_response() allocates for req's answer: 16 a JSON
 * value, 4 a binary one, the strings escaped at their longest.
 */
size_t gw_infer_answer_bytes(const struct gw_model_config *cfg,
			     const struct gw_infer_request *req);
/*
 * The response body for outputs (the model's outputs, one after another):
 * malloc'd in *body, *len bytes, of which *header_len are the JSON (== *len
 * when no output is binary). 0 or -ENOMEM.
 */
int gw_infer_response(const struct gw_model_config *cfg, const struct gw_infer_request *req,
		      const float *outputs, uint64_t latency_ns, uint64_t exec_ns, char **body,
		      size_t *len, size_t *header_len);

/* {"error":"why"}, malloc'd; NULL on no memory. */
char *gw_error_json(const char *why);
/* A request refused by the parsers: fmt's text into why, and 400 (bad request). */
int gw_infer_refuse(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* COLOC_GATEWAY_INFER_REQUEST_H */
