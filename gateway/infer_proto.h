/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The KServe v2 infer messages of the gRPC API (gateway/proto/
 * grpc_service.proto, compiled by protoc-c) into the same request the HTTP
 * side parses (infer_request.h), checked by the same rules, and the
 * outputs back into a ModelInferResponse. No I/O, so the unpacking can be
 * fed anything (tests, the fuzz target).
 *
 * In: each of the model's inputs exactly once, datatype "FP32", the
 * model's shape exactly, its values either all in raw_input_contents (one
 * entry per input, in the order of `inputs`, exactly shape x 4 bytes) or
 * each in its contents.fp32_contents (exactly shape values); any other
 * typed contents are refused. `outputs` as on HTTP (none: every output).
 *
 * Out: model_name, model_version, the request's id, parameters
 * coloc_latency_us and coloc_exec_us (as on HTTP), the outputs asked for,
 * their values in raw_output_contents, or in contents.fp32_contents when
 * the request gave its inputs typed (a client that sends typed values
 * reads typed ones).
 */
#ifndef COLOC_GATEWAY_INFER_PROTO_H
#define COLOC_GATEWAY_INFER_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include "grpc_service.pb-c.h"
#include "infer_request.h"

/*
 * Any request message of the service unpacked within a byte budget
 * (GW_PB_BUDGET of the message's length): protobuf-c allocates what its
 * fields declare, ~75 bytes for a 2-byte empty repeated message, so a
 * message of GBs' worth is refused here, not allocated. NULL with errno
 * EINVAL (not such a message) or E2BIG (over the budget). Free it with
 * gw_pb_free only.
 */
#define GW_PB_BUDGET(len) (4 * (size_t)(len) + ((size_t)1 << 20))
ProtobufCMessage *gw_pb_unpack(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len);
void gw_pb_free(ProtobufCMessage *m);

/*
 * The bytes as a ModelInferRequest (free with gw_infer_proto_free), or
 * NULL with errno as gw_pb_unpack's. Its raw_input_contents point into
 * buf, which must outlive it.
 */
Inference__ModelInferRequest *gw_infer_proto_unpack(const uint8_t *buf, size_t len);
void gw_infer_proto_free(Inference__ModelInferRequest *msg);

/*
 * Checks msg against model cfg and fills req (req->binary[k]: output k
 * raw). 0, or 400 with the reason in why; req->input may point into msg
 * (and its buffer), which must outlive its use; gw_infer_request_free()
 * frees what was allocated, in either case.
 */
int gw_infer_from_proto(const struct gw_model_config *cfg, const Inference__ModelInferRequest *msg,
			struct gw_infer_request *req, char *why, size_t why_len);

/*
 * The packed ModelInferResponse for outputs, its len bytes at *buf +
 * headroom (malloc'd, the headroom left for the caller's framing): 0 or
 * -ENOMEM.
 */
int gw_infer_proto_response(const struct gw_model_config *cfg, const struct gw_infer_request *req,
			    const float *outputs, uint64_t latency_ns, uint64_t exec_ns,
			    size_t headroom, uint8_t **buf, size_t *len);
/*
 * The most bytes gw_infer_proto_response's len can be for req, whatever
 * the outputs and latencies: known before the query is sent, so that its
 * answer is charged first (grpc_api.c).
 */
size_t gw_infer_proto_answer_bytes(const struct gw_model_config *cfg,
				   const struct gw_infer_request *req);

#endif /* COLOC_GATEWAY_INFER_PROTO_H */
