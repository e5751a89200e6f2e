// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The C core server's bounds (grpc_core_bounds.h), worked out and logged
 * at its start.
 */
#include <stdio.h>
#include "grpc_core_bounds.h"
#include "infer_request.h"

/* a message's time before the rate floor counts, as on the own server and HTTP */
#define CORE_RATE_GRACE_MS 1000ull

struct gw_grpc_core_bounds gw_grpc_core_bounds_of(const struct gw_grpc_opts *opts,
						  struct gw_models *ms)
{
	size_t widest = gw_models_repo_max(ms, gw_infer_body_max);
	uint64_t read_ms = (uint64_t)opts->read_timeout_ms;
	const char *by = "--max-body-bytes";
	struct gw_grpc_core_bounds b;

	/* the other methods' messages, and a small model added later, still fit */
	if (widest < GW_JSON_MARGIN_BYTES)
		widest = GW_JSON_MARGIN_BYTES;
	b.message_max = opts->max_message;
	if (widest < b.message_max) {
		b.message_max = widest;
		by = "what the widest model in the repository at start can need; a model "
		     "added later that needs more is refused until a restart";
	}
	if (opts->min_rate &&
	    CORE_RATE_GRACE_MS + b.message_max * 1000ull / opts->min_rate < read_ms)
		read_ms = CORE_RATE_GRACE_MS + b.message_max * 1000ull / opts->min_rate;
	b.read_ns = read_ms * 1000000ull;
	fprintf(stderr,
		"coloc-gateway: gRPC's C core: a request message is held to %zu bytes (%s) "
		"and must be whole within %llu ms of its call (--grpc-read-timeout-ms, or that "
		"many bytes at --http-min-rate-bytes); it cannot honour --grpc-max-conns %d, "
		"--grpc-max-conns-per-ip %d or --grpc-max-buffer-bytes %zu, nor weigh the rate "
		"floor as a message's bytes come (docs/gateway.md, \"gRPC's C core\")\n",
		b.message_max, by, (unsigned long long)read_ms, opts->max_conns,
		opts->max_conns_per_ip, opts->max_buffer_bytes);
	return b;
}
