/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The answers colocd holds unsent for a client, and past which it cuts the
 * client's connection (daemon/server.h's SERVER_OUT_MAX and
 * SERVER_OUT_UID_SHARE, daemon/server_out_budget.c): here so that a client
 * that pipelines, coloc-gateway's forwarding pool (gateway/forward.c),
 * stays under them from the same numbers.
 */
#ifndef COLOC_COMMON_OUT_BOUNDS_H
#define COLOC_COMMON_OUT_BOUNDS_H

/* Unsent answer bytes on one connection. */
#define COLOC_OUT_CONN_MAX (64ull << 20)
/* Unsent answer bytes over all of one uid's connections. */
#define COLOC_OUT_UID_SHARE (64ull << 20)

#endif /* COLOC_COMMON_OUT_BOUNDS_H */
