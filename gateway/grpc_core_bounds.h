/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the server on gRPC's C core (grpc_core.c) holds a call to, fixed
 * at its start: the core takes a message size limit once, as a channel
 * argument, and shows a message to no one before it is whole; so the own
 * server's model bound (weighed at each call) is weighed here over the
 * repository's models, and its rate floor (weighed as the bytes come)
 * becomes a deadline on the whole message. docs/gateway.md, "gRPC's C core".
 */
#ifndef COLOC_GATEWAY_GRPC_CORE_BOUNDS_H
#define COLOC_GATEWAY_GRPC_CORE_BOUNDS_H

#include <stddef.h>
#include <stdint.h>
#include "grpc_server.h"

struct gw_grpc_core_bounds {
	size_t message_max; /* the core's GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH */
	uint64_t read_ns; /* from a call's arrival to its whole message */
};

/*
 * The bounds for opts and the repository of ms as it is now, logged with
 * the options the core cannot honour.
 */
struct gw_grpc_core_bounds gw_grpc_core_bounds_of(const struct gw_grpc_opts *opts,
						  struct gw_models *ms);

#endif /* COLOC_GATEWAY_GRPC_CORE_BOUNDS_H */
