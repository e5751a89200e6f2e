// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The HTTP body budget (http_budget.h): a total under a mutex and, per
 * client address holding bytes, a record in a salted hash table (freed
 * when it holds none), so a client cannot choose addresses that share one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <netinet/in.h>
#include "http_budget.h"

#define BUDGET_BUCKETS 1024u

struct budget_addr {
	struct budget_addr *next;
	uint8_t key[17]; /* family, then 4 or 16 bytes */
	size_t held;
};

struct gw_http_budget {
	pthread_mutex_t lock;
	size_t total, share, held;
	uint32_t salt;
	struct budget_addr *buckets[BUDGET_BUCKETS];
};

/* addr's key: its family's tag and its address bytes (the port left out). */
static void addr_key(const struct sockaddr *a, uint8_t key[17])
{
	memset(key, 0, 17);
	if (a && a->sa_family == AF_INET) {
		key[0] = 4;
		memcpy(key + 1, &((const struct sockaddr_in *)a)->sin_addr, 4);
	} else if (a && a->sa_family == AF_INET6) {
		key[0] = 6;
		memcpy(key + 1, &((const struct sockaddr_in6 *)a)->sin6_addr, 16);
	}
}

static uint32_t key_bucket(const struct gw_http_budget *b, const uint8_t key[17])
{
	uint32_t h = b->salt ^ 2166136261u;

	for (int i = 0; i < 17; i++)
		h = (h ^ key[i]) * 16777619u;
	return (h ^ h >> 15) % BUDGET_BUCKETS;
}

struct gw_http_budget *gw_http_budget_create(size_t total, size_t share)
{
	struct gw_http_budget *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	pthread_mutex_init(&b->lock, NULL);
	b->total = total;
	b->share = share < total ? share : total;
	if (getrandom(&b->salt, sizeof(b->salt), GRND_NONBLOCK) != sizeof(b->salt))
		b->salt = (uint32_t)((uintptr_t)b >> 4) * 0x85ebca6bu;
	return b;
}

void gw_http_budget_destroy(struct gw_http_budget *b)
{
	if (!b)
		return;
	for (uint32_t i = 0; i < BUDGET_BUCKETS; i++) {
		while (b->buckets[i]) {
			struct budget_addr *r = b->buckets[i];

			b->buckets[i] = r->next;
			free(r);
		}
	}
	pthread_mutex_destroy(&b->lock);
	free(b);
}

/* addr's record (made when create), its link in *at; NULL when none (or out of memory). */
static struct budget_addr *budget_find(struct gw_http_budget *b, const uint8_t key[17],
				       bool create, struct budget_addr ***at)
{
	struct budget_addr **pp = &b->buckets[key_bucket(b, key)];

	for (; *pp; pp = &(*pp)->next)
		if (!memcmp((*pp)->key, key, 17))
			break;
	if (!*pp && create) {
		*pp = calloc(1, sizeof(**pp));
		if (*pp)
			memcpy((*pp)->key, key, 17);
	}
	*at = pp;
	return *pp;
}

int gw_http_budget_take(struct gw_http_budget *b, const struct sockaddr *addr, size_t bytes)
{
	struct budget_addr *r, **at;
	uint8_t key[17];
	int ret = 0;

	if (bytes > b->share)
		return -E2BIG;
	addr_key(addr, key);
	pthread_mutex_lock(&b->lock);
	r = budget_find(b, key, true, &at);
	if (!r)
		ret = -ENOMEM;
	else if (bytes > b->total - b->held || bytes > b->share - r->held)
		ret = -ENOSPC;
	if (!ret) {
		r->held += bytes;
		b->held += bytes;
	} else if (r && !r->held) {
		*at = r->next;
		free(r);
	}
	pthread_mutex_unlock(&b->lock);
	return ret;
}

void gw_http_budget_give(struct gw_http_budget *b, const struct sockaddr *addr, size_t bytes)
{
	struct budget_addr *r, **at;
	uint8_t key[17];

	if (!bytes)
		return;
	addr_key(addr, key);
	pthread_mutex_lock(&b->lock);
	r = budget_find(b, key, false, &at);
	if (r) {
		r->held -= bytes < r->held ? bytes : r->held;
		if (!r->held) {
			*at = r->next;
			free(r);
		}
	}
	b->held -= bytes < b->held ? bytes : b->held;
	pthread_mutex_unlock(&b->lock);
}

size_t gw_http_budget_held(struct gw_http_budget *b)
{
	size_t n;

	pthread_mutex_lock(&b->lock);
	n = b->held;
	pthread_mutex_unlock(&b->lock);
	return n;
}
