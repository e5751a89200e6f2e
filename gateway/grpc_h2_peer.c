// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The own gRPC server's client addresses (grpc_h2.h): one record per
 * address with a connection open, in a salted hash table under the
 * server's lock, holding what that address may take of the server's
 * shared bounds (connections, calls waiting for their message, health
 * calls, message bytes). docs/design/gateway-grpc.md, "Bounds".
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <netinet/in.h>
#include "grpc_h2.h"

#define H2S_PEER_BUCKETS 1024u

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
	return true; /* another family (none accepted here): one record for all */
}

/* The address's bucket: FNV-1a over its bytes, from a salt the clients cannot know. */
static uint32_t peer_bucket(const struct h2_server *srv, const struct sockaddr_storage *a)
{
	const uint8_t *p = NULL;
	size_t n = 0;
	uint32_t h = srv->peer_salt ^ 2166136261u;

	if (a->ss_family == AF_INET) {
		p = (const uint8_t *)&((const struct sockaddr_in *)a)->sin_addr;
		n = 4;
	} else if (a->ss_family == AF_INET6) {
		p = (const uint8_t *)&((const struct sockaddr_in6 *)a)->sin6_addr;
		n = 16;
	}
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return (h ^ h >> 15) % H2S_PEER_BUCKETS;
}

int h2s_peers_init(struct h2_server *srv)
{
	if (getrandom(&srv->peer_salt, sizeof(srv->peer_salt), GRND_NONBLOCK) !=
	    sizeof(srv->peer_salt))
		srv->peer_salt = (uint32_t)((uintptr_t)srv >> 4) * 0x85ebca6bu;
	srv->peers = calloc(H2S_PEER_BUCKETS, sizeof(*srv->peers));
	return srv->peers ? 0 : -1;
}

void h2s_peers_free(struct h2_server *srv)
{
	for (uint32_t i = 0; srv->peers && i < H2S_PEER_BUCKETS; i++) {
		while (srv->peers[i]) {
			struct h2s_peer *p = srv->peers[i];

			srv->peers[i] = p->next;
			free(p);
		}
	}
	free(srv->peers);
	srv->peers = NULL;
}

struct h2s_peer *h2s_peer_get(struct h2_server *srv, const struct sockaddr_storage *addr)
{
	uint32_t b = peer_bucket(srv, addr);
	struct h2s_peer *p;

	for (p = srv->peers[b]; p; p = p->next)
		if (same_addr(&p->addr, addr))
			break;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return NULL;
		p->addr = *addr;
		p->next = srv->peers[b];
		srv->peers[b] = p;
	}
	p->refs++;
	return p;
}

void h2s_peer_put(struct h2_server *srv, struct h2s_peer *p)
{
	struct h2s_peer **at;

	if (!p || --p->refs)
		return;
	for (at = &srv->peers[peer_bucket(srv, &p->addr)]; *at != p; at = &(*at)->next)
		;
	*at = p->next;
	free(p);
}

bool h2s_take(atomic_int *n, int max)
{
	if (atomic_fetch_add(n, 1) < max)
		return true;
	atomic_fetch_sub(n, 1);
	return false;
}
