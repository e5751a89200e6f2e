/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Memfds the gateway hands colocd a query's input in (protocol.h,
 * "input":"memfd"), kept mapped and reused: a memfd's pages are faulted in
 * once, not once per query. Each is sealed against shrinking and growing
 * at its size, so colocd may read it; a query's memfd goes back to the
 * pool once colocd has answered its query, and is freed instead when it
 * was sent and not answered (timed out, connection lost): colocd may still
 * read it, and must never find another query's input there.
 * Thread-safe. docs/design/gateway-forwarding.md.
 */
#ifndef COLOC_GATEWAY_MEMFD_POOL_H
#define COLOC_GATEWAY_MEMFD_POOL_H

#include <stddef.h>

struct gw_memfd {
	int fd;
	char *map; /* cap bytes, read-write */
	size_t cap;
	struct gw_memfd *next; /* the pool's */
};

struct gw_memfd_pool;

/*
 * The most bytes of memfds a pool keeps between uses, and the largest one
 * kept (the rest are freed, their memory given back when the connections
 * that held them close): a tensor is hundreds of KB.
 */
#define GW_MEMFD_KEPT_BYTES (64ul << 20)
#define GW_MEMFD_KEPT_ONE (8ul << 20)

/* A pool keeping at most max_kept memfds between uses; NULL out of memory. */
struct gw_memfd_pool *gw_memfd_pool_create(int max_kept);
void gw_memfd_pool_destroy(struct gw_memfd_pool *p);
/* A memfd of bytes bytes at least, from the pool or made; NULL on failure (errno). */
struct gw_memfd *gw_memfd_get(struct gw_memfd_pool *p, size_t bytes);
/*
 * Gives m back (NULL is fine); past max_kept or GW_MEMFD_KEPT_BYTES, or
 * larger than GW_MEMFD_KEPT_ONE, it is freed.
 */
void gw_memfd_put(struct gw_memfd_pool *p, struct gw_memfd *m);
/* Unmaps and closes m (NULL is fine), never to be reused: colocd's copy, if any, lives on. */
void gw_memfd_free(struct gw_memfd *m);

#endif /* COLOC_GATEWAY_MEMFD_POOL_H */
