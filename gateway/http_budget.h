/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The bytes of request bodies the HTTP side holds at once
 * (--http-max-buffer-bytes), in all and per client address: a body's bytes
 * are taken as they arrive (http_body.c), and given back when the request
 * ends. One address may hold an eighth of the budget, or one
 * --max-body-bytes body if that is larger (the gRPC side's rule,
 * docs/design/gateway-grpc.md). Thread-safe.
 * http_conns.c counts connections in one, a unit each.
 */
#ifndef COLOC_GATEWAY_HTTP_BUDGET_H
#define COLOC_GATEWAY_HTTP_BUDGET_H

#include <stddef.h>
#include <sys/socket.h>

struct gw_http_budget;

/* A budget of total bytes, share per address; NULL out of memory. */
struct gw_http_budget *gw_http_budget_create(size_t total, size_t share);
void gw_http_budget_destroy(struct gw_http_budget *b);
/*
 * Takes bytes for addr (NULL: an address of its own kind). 0; -E2BIG when
 * they can never fit (over the share); -ENOSPC when the budget or the
 * address's share is held by other bodies now.
 */
int gw_http_budget_take(struct gw_http_budget *b, const struct sockaddr *addr, size_t bytes);
/* Gives back bytes taken for addr. */
void gw_http_budget_give(struct gw_http_budget *b, const struct sockaddr *addr, size_t bytes);
/* Bytes held now, in all. */
size_t gw_http_budget_held(struct gw_http_budget *b);

#endif /* COLOC_GATEWAY_HTTP_BUDGET_H */
