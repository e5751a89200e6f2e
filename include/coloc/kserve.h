/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * KServe v2 clients of coloc-gateway for coloc's own tools (coloc-load,
 * coloc-bench-gateway), shaped like libcoloc_client's asynchronous infer
 * (coloc/client.h): queries sent with a tag, answers collected in any order
 * as struct coloc_infer_result, a descriptor to poll between the two. So a
 * tool drives colocd's socket or the gateway with the same code.
 *
 * gRPC (kserve_grpc_*): inference.GRPCInferenceService/ModelInfer on gRPC's
 * C core, many calls in flight on one channel; the model's input name and
 * shape come from ModelMetadata, asked once per model.
 *
 * gRPC raw (kserve_h2_*): the same calls on an HTTP/2 client of our own
 * (client/kserve_h2.c, on the gateway's HPACK and frames), no gRPC library:
 * one TCP connection, one stream a call, many in flight; what a tool
 * measures through it is the gateway's, not a client library's (gRPC's
 * C core as a client cost ~300-600 µs a query, docs/measurements/gateway.md).
 *
 * HTTP (kserve_http_*): POST /v2/models/NAME/infer with the binary tensor
 * data extension (binary outputs too) on one HTTP/1.1 keep-alive
 * connection, requests pipelined (sent without waiting, answered in
 * order); the metadata from GET /v2/models/NAME, asked once per model
 * (before any query is in flight on the connection).
 *
 * What an answer maps to: OK with outputs -> COLOC_INFER_OK, latency_ns and
 * exec_ns from the answer's coloc_latency_us / coloc_exec_us (colocd's own,
 * in µs); DEADLINE_EXCEEDED (HTTP 504) -> DROPPED; UNAVAILABLE,
 * RESOURCE_EXHAUSTED (HTTP 503) -> REJECTED; anything else -> FAILED, with
 * the status message (the HTTP error's text) in error.
 * parts_ns stay 0: the gateway does not pass them on.
 */
#ifndef COLOC_KSERVE_H
#define COLOC_KSERVE_H

#include <stddef.h>
#include <stdint.h>
#include "coloc/client.h"

struct kserve_grpc;

/* A channel to target (HOST:PORT); 0 or -errno (connecting is lazy: errors come later). */
int kserve_grpc_connect(const char *target, struct kserve_grpc **out);
void kserve_grpc_close(struct kserve_grpc *k);
/* Why the last call failed. */
const char *kserve_grpc_error(struct kserve_grpc *k);
/* Readable while an answer waits to be taken. */
int kserve_grpc_fd(struct kserve_grpc *k);

/* The model's input and output sizes from ModelMetadata (one FP32 input). 0 or -errno. */
int kserve_grpc_model(struct kserve_grpc *k, const char *model, size_t *in_bytes,
		      size_t *out_bytes);
/* Sends one ModelInfer of model (its metadata asked first if not yet). 0 or -errno. */
int kserve_grpc_infer_send(struct kserve_grpc *k, const char *model, uint64_t tag,
			   const void *input, size_t len);
/* As coloc_client_infer_recv: 1 with res (and output), 0 none in time, -errno. */
int kserve_grpc_infer_recv(struct kserve_grpc *k, struct coloc_infer_result *res, void *output,
			   size_t out_cap, int timeout_ms);
/*
 * One ModelInfer call's end into res and output, whatever client carried it:
 * its gRPC status (0 OK) and message, and when OK the packed
 * ModelInferResponse (colocd's latency from its parameters, the raw outputs
 * one after another). 1 with res->status saying how it went, or -EMSGSIZE
 * when the outputs pass out_cap.
 */
int kserve_grpc_answer(int grpc_status, const char *grpc_message, const uint8_t *msg, size_t len,
		       struct coloc_infer_result *res, void *output, size_t out_cap);

struct kserve_h2;

/* A connection to target (IPv4 HOST:PORT), preface and SETTINGS sent: 0 or -errno. */
int kserve_h2_connect(const char *target, struct kserve_h2 **out);
void kserve_h2_close(struct kserve_h2 *k);
const char *kserve_h2_error(struct kserve_h2 *k);
/* The TCP socket: readable when answer bytes have arrived. */
int kserve_h2_fd(struct kserve_h2 *k);
/* Sends one ModelInfer of model (its metadata asked first, waited for, if not yet). 0 or -errno. */
int kserve_h2_infer_send(struct kserve_h2 *k, const char *model, uint64_t tag, const void *input,
			 size_t len);
/* As coloc_client_infer_recv: 1 with res (and output), 0 none in time, -errno. */
int kserve_h2_infer_recv(struct kserve_h2 *k, struct coloc_infer_result *res, void *output,
			 size_t out_cap, int timeout_ms);
/* One query, waited for: 1 with res filled (its status says how it went), or -errno. */
int kserve_h2_infer(struct kserve_h2 *k, const char *model, const void *input, size_t len,
		    void *output, size_t out_cap, struct coloc_infer_result *res);

struct kserve_http;

/* A connection to url ("http://HOST:PORT", HOST an IPv4 address or localhost): 0 or -errno. */
int kserve_http_connect(const char *url, struct kserve_http **out);
void kserve_http_close(struct kserve_http *k);
const char *kserve_http_error(struct kserve_http *k);
/* Readable when answer bytes have arrived. */
int kserve_http_fd(struct kserve_http *k);
int kserve_http_infer_send(struct kserve_http *k, const char *model, uint64_t tag,
			   const void *input, size_t len);
int kserve_http_infer_recv(struct kserve_http *k, struct coloc_infer_result *res, void *output,
			   size_t out_cap, int timeout_ms);

#endif /* COLOC_KSERVE_H */
