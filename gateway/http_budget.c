// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The HTTP body budget (http_budget.h): a total under a mutex and, per
 * client address holding bytes (client_key.h: IPv6 by its /64), a record
 * in a salted hash table (freed when it holds none), so a client cannot
 * choose addresses that share one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/random.h>
#include "client_key.h"
#include "http_budget.h"

#define BUDGET_BUCKETS 1024u

struct budget_addr {
	struct budget_addr *next;
	struct gw_client_key key;
	size_t held;
};

struct gw_http_budget {
	pthread_mutex_t lock;
	size_t total, share, held;
	uint32_t salt;
	struct budget_addr *buckets[BUDGET_BUCKETS];
};

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
static struct budget_addr *budget_find(struct gw_http_budget *b, const struct gw_client_key *key,
				       bool create, struct budget_addr ***at)
{
	struct budget_addr **pp = &b->buckets[gw_client_key_bucket(key, b->salt, BUDGET_BUCKETS)];

	for (; *pp; pp = &(*pp)->next)
		if (gw_client_key_eq(&(*pp)->key, key))
			break;
	if (!*pp && create) {
		*pp = calloc(1, sizeof(**pp));
		if (*pp)
			(*pp)->key = *key;
	}
	*at = pp;
	return *pp;
}

int gw_http_budget_take(struct gw_http_budget *b, const struct sockaddr *addr, size_t bytes)
{
	struct budget_addr *r, **at;
	struct gw_client_key key = gw_client_key_of(addr);
	int ret = 0;

	if (bytes > b->share)
		return -E2BIG;
	pthread_mutex_lock(&b->lock);
	r = budget_find(b, &key, true, &at);
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
	struct gw_client_key key = gw_client_key_of(addr);

	if (!bytes)
		return;
	pthread_mutex_lock(&b->lock);
	r = budget_find(b, &key, false, &at);
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
