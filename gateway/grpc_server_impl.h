/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the two gRPC servers (grpc_h2.c, our own; grpc_core.c, gRPC's C
 * core) share with grpc_server.c, which picks one (gw_grpc_opts.server)
 * and answers the methods' calls through it.
 */
#ifndef COLOC_GATEWAY_GRPC_SERVER_IMPL_H
#define COLOC_GATEWAY_GRPC_SERVER_IMPL_H

#include <stdatomic.h>
#include "grpc_call.h"

struct gw_grpc_ops {
	int (*port)(struct gw_grpc *g);
	void (*quiesce)(struct gw_grpc *g);
	void (*stop)(struct gw_grpc *g);
	/*
	 * Answers c once: code, why ("" for OK), the len bytes at msg +
	 * GW_GRPC_HEADROOM (msg malloc'd, taken over; NULL: none).
	 */
	void (*answer)(struct gw_grpc_call *c, enum gw_grpc_status code, const char *why,
		       uint8_t *msg, size_t len);
};

/* The first member of each server's own struct. */
struct gw_grpc {
	const struct gw_grpc_ops *ops;
	struct gw_grpc_opts opts;
	struct gw_models *ms;
	struct gw_fwd *fw;
	atomic_int blocked; /* threads waiting in a query of their own (gw_grpc_block_begin) */
};

int gw_grpc_core_start(const struct gw_grpc_opts *opts, struct gw_models *ms, struct gw_fwd *fw,
		       struct gw_grpc **out, struct coloc_err *err);
int gw_grpc_h2_start(const struct gw_grpc_opts *opts, struct gw_models *ms, struct gw_fwd *fw,
		     struct gw_grpc **out, struct coloc_err *err);

#endif /* COLOC_GATEWAY_GRPC_SERVER_IMPL_H */
