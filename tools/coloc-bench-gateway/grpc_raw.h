/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * coloc-bench-gateway's raw gRPC client (--grpc-raw): KServe v2 ModelInfer
 * over one HTTP/2 connection of its own (cleartext, prior knowledge), one
 * stream per query, no gRPC library, so that what it measures is the
 * server's cost and not a client library's. The model's input name and
 * shape come from ModelMetadata on the same connection, asked once; the
 * request is packed once with protobuf-c and sent again while the input's
 * bytes are the same. Answers map to struct coloc_infer_result as
 * coloc/kserve.h says.
 */
#ifndef COLOC_BENCH_GATEWAY_GRPC_RAW_H
#define COLOC_BENCH_GATEWAY_GRPC_RAW_H

#include <stddef.h>
#include "coloc/client.h"

struct grpc_raw;

/* A connection to HOST:PORT (IPv4), the preface and our SETTINGS sent: 0 or -errno. */
int grpc_raw_connect(const char *target, struct grpc_raw **out);
void grpc_raw_close(struct grpc_raw *g);
/* Why the last call failed. */
const char *grpc_raw_error(const struct grpc_raw *g);
/* One ModelInfer of model: 1 with res filled (its status says how it went) and
 * the outputs at output, or -errno when the connection failed. */
int grpc_raw_infer(struct grpc_raw *g, const char *model, const void *input, size_t len,
		   void *output, size_t out_cap, struct coloc_infer_result *res);

#endif /* COLOC_BENCH_GATEWAY_GRPC_RAW_H */
