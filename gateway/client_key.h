/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Who a client is, for the gateway's per-address bounds (http_budget.c,
 * grpc_h2_peer.c): an IPv4 address, an IPv4-mapped IPv6 one as that IPv4
 * address, and an IPv6 address by its /64, the prefix one subscriber or
 * host is usually given (a client with a /64 holds 2^64 addresses).
 * docs/gateway.md, "Bounds per client address".
 */
#ifndef COLOC_GATEWAY_CLIENT_KEY_H
#define COLOC_GATEWAY_CLIENT_KEY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#define GW_CLIENT_KEY_LEN 9 /* a tag (4, 6 or 0: another family), then 4 or 8 bytes */

struct gw_client_key {
	uint8_t b[GW_CLIENT_KEY_LEN];
};

/* a's key; NULL or another family: a key of its own kind, all zero. */
struct gw_client_key gw_client_key_of(const struct sockaddr *a);
bool gw_client_key_eq(const struct gw_client_key *a, const struct gw_client_key *b);
/* A bucket of nr_buckets for k: FNV-1a over its bytes from salt, which clients cannot know. */
uint32_t gw_client_key_bucket(const struct gw_client_key *k, uint32_t salt, uint32_t nr_buckets);

#endif /* COLOC_GATEWAY_CLIENT_KEY_H */
