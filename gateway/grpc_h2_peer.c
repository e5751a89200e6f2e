// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The own gRPC server's client addresses (grpc_h2.h): one record per
 * address (client_key.h: IPv6 by its /64) with a connection or a call
 * open, in a
 * salted hash table under a lock of its own, holding what that address
 * may take of the server's shared bounds (connections, calls waiting for
 * their message, health calls, message bytes).
 * docs/design/gateway-grpc.md, "Bounds".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/random.h>
#include "grpc_h2.h"

#define H2S_PEER_BUCKETS 1024u

int h2s_peers_init(struct h2_server *srv)
{
	if (getrandom(&srv->peer_salt, sizeof(srv->peer_salt), GRND_NONBLOCK) !=
	    sizeof(srv->peer_salt))
		srv->peer_salt = (uint32_t)((uintptr_t)srv >> 4) * 0x85ebca6bu;
	srv->peers = calloc(H2S_PEER_BUCKETS, sizeof(*srv->peers));
	if (!srv->peers)
		return -1;
	pthread_mutex_init(&srv->peers_lock, NULL);
	return 0;
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
	if (srv->peers)
		pthread_mutex_destroy(&srv->peers_lock);
	free(srv->peers);
	srv->peers = NULL;
}

struct h2s_peer *h2s_peer_get(struct h2_server *srv, const struct sockaddr_storage *addr)
{
	struct gw_client_key key = gw_client_key_of((const struct sockaddr *)addr);
	uint32_t b = gw_client_key_bucket(&key, srv->peer_salt, H2S_PEER_BUCKETS);
	struct h2s_peer *p;

	pthread_mutex_lock(&srv->peers_lock);
	for (p = srv->peers[b]; p; p = p->next)
		if (gw_client_key_eq(&p->key, &key))
			break;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (p) {
			p->key = key;
			p->next = srv->peers[b];
			srv->peers[b] = p;
		}
	}
	if (p)
		p->refs++;
	pthread_mutex_unlock(&srv->peers_lock);
	return p;
}

void h2s_peer_hold(struct h2_server *srv, struct h2s_peer *p)
{
	pthread_mutex_lock(&srv->peers_lock);
	p->refs++;
	pthread_mutex_unlock(&srv->peers_lock);
}

void h2s_peer_put(struct h2_server *srv, struct h2s_peer *p)
{
	struct h2s_peer **at;

	if (!p)
		return;
	pthread_mutex_lock(&srv->peers_lock);
	if (!--p->refs) {
		for (at = &srv->peers[gw_client_key_bucket(&p->key, srv->peer_salt,
							   H2S_PEER_BUCKETS)];
		     *at != p; at = &(*at)->next)
			;
		*at = p->next;
		free(p);
	}
	pthread_mutex_unlock(&srv->peers_lock);
}

bool h2s_take(atomic_int *n, int max)
{
	if (atomic_fetch_add(n, 1) < max)
		return true;
	atomic_fetch_sub(n, 1);
	return false;
}
