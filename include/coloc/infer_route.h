/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * One way for a tool to send queries and collect answers, whichever door
 * it goes through: colocd's socket (coloc/client.h), or coloc-gateway's
 * KServe v2 gRPC or HTTP API (coloc/kserve.h). All three have the same
 * asynchronous shape (send with a tag; answers as struct
 * coloc_infer_result, in any order; a descriptor readable when one may be
 * there), so coloc-load's loop does not know which it drives.
 */
#ifndef COLOC_INFER_ROUTE_H
#define COLOC_INFER_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "coloc/client.h"

/* COLOC_ROUTE_GRPC: the raw HTTP/2 client (kserve_h2); _GRPC_CORE: gRPC's C core (kserve_grpc) */
enum coloc_route_kind {
	COLOC_ROUTE_SOCKET,
	COLOC_ROUTE_GRPC,
	COLOC_ROUTE_HTTP,
	COLOC_ROUTE_GRPC_CORE
};

struct coloc_route;

/*
 * Connects: where is colocd's socket path, the gateway's gRPC HOST:PORT, or
 * its http://HOST:PORT. 0 or -errno.
 */
int coloc_route_open(enum coloc_route_kind kind, const char *where, struct coloc_route **out);
void coloc_route_close(struct coloc_route *r);
int coloc_route_fd(struct coloc_route *r);
int coloc_route_send(struct coloc_route *r, const char *tenant, uint64_t tag, const void *input,
		     size_t len);
/*
 * Whether the route takes an input in a memfd (colocd's socket does,
 * coloc_client_infer_send_memfd), and the send that does; -EOPNOTSUPP on a
 * route that does not.
 */
bool coloc_route_takes_memfd(const struct coloc_route *r);
int coloc_route_send_memfd(struct coloc_route *r, const char *tenant, uint64_t tag, int memfd,
			   size_t len);
/* Without waiting: 1 with res (and output), 0 none now, -errno (-EMSGSIZE: res still filled). */
int coloc_route_recv(struct coloc_route *r, struct coloc_infer_result *res, void *output,
		     size_t out_cap);
const char *coloc_route_error(struct coloc_route *r);
/* "colocd's socket", "the gateway's gRPC API", "the gateway's HTTP API". */
const char *coloc_route_name(enum coloc_route_kind kind);

#endif /* COLOC_INFER_ROUTE_H */
