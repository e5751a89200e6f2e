// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* A client address's key for the per-address bounds (client_key.h): IPv4, or IPv6's /64. */
#include <string.h>
#include <netinet/in.h>
#include "client_key.h"

struct gw_client_key gw_client_key_of(const struct sockaddr *a)
{
	struct gw_client_key k;

	memset(&k, 0, sizeof(k));
	if (a && a->sa_family == AF_INET) {
		k.b[0] = 4;
		memcpy(k.b + 1, &((const struct sockaddr_in *)a)->sin_addr, 4);
	} else if (a && a->sa_family == AF_INET6) {
		const struct in6_addr *s6 = &((const struct sockaddr_in6 *)a)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(s6)) { /* ::ffff:a.b.c.d is a.b.c.d */
			k.b[0] = 4;
			memcpy(k.b + 1, s6->s6_addr + 12, 4);
		} else {
			k.b[0] = 6;
			memcpy(k.b + 1, s6->s6_addr, 8);
		}
	}
	return k;
}

bool gw_client_key_eq(const struct gw_client_key *a, const struct gw_client_key *b)
{
	return !memcmp(a->b, b->b, GW_CLIENT_KEY_LEN);
}

uint32_t gw_client_key_bucket(const struct gw_client_key *k, uint32_t salt, uint32_t nr_buckets)
{
	uint32_t h = salt ^ 2166136261u;

	for (int i = 0; i < GW_CLIENT_KEY_LEN; i++)
		h = (h ^ k->b[i]) * 16777619u;
	return (h ^ h >> 15) % nr_buckets;
}
