// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The gateway's pool of input memfds (memfd_pool.h): a free list under a
 * mutex, best fit first. Sizes are rounded up to 64 KiB so that a model's
 * inputs, whatever their header, reuse the same few memfds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>
#include "memfd_pool.h"

#define MEMFD_ROUND (64u << 10)

struct gw_memfd_pool {
	pthread_mutex_t lock;
	struct gw_memfd *free;
	int nr_free, max_kept;
	size_t kept_bytes; /* the free ones' */
};

struct gw_memfd_pool *gw_memfd_pool_create(int max_kept)
{
	struct gw_memfd_pool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	p->max_kept = max_kept;
	return p;
}

void gw_memfd_free(struct gw_memfd *m)
{
	if (!m)
		return;
	munmap(m->map, m->cap);
	close(m->fd);
	free(m);
}

void gw_memfd_pool_destroy(struct gw_memfd_pool *p)
{
	if (!p)
		return;
	while (p->free) {
		struct gw_memfd *m = p->free;

		p->free = m->next;
		gw_memfd_free(m);
	}
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static struct gw_memfd *memfd_make(size_t bytes)
{
	struct gw_memfd *m = calloc(1, sizeof(*m));
	int saved;

	if (!m)
		return NULL;
	m->cap = (bytes + MEMFD_ROUND - 1) / MEMFD_ROUND * MEMFD_ROUND;
	if (!m->cap)
		m->cap = MEMFD_ROUND;
	m->fd = memfd_create("coloc-gateway-input", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (m->fd < 0)
		goto fail_free;
	if (ftruncate(m->fd, (off_t)m->cap) ||
	    fcntl(m->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
		goto fail_close;
	m->map = mmap(NULL, m->cap, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
	if (m->map == MAP_FAILED)
		goto fail_close;
	return m;
fail_close:
	saved = errno;
	close(m->fd);
	errno = saved;
fail_free:
	saved = errno;
	free(m);
	errno = saved;
	return NULL;
}

struct gw_memfd *gw_memfd_get(struct gw_memfd_pool *p, size_t bytes)
{
	struct gw_memfd **best = NULL;

	pthread_mutex_lock(&p->lock);
	for (struct gw_memfd **pp = &p->free; *pp; pp = &(*pp)->next)
		if ((*pp)->cap >= bytes && (!best || (*pp)->cap < (*best)->cap))
			best = pp;
	if (best) {
		struct gw_memfd *m = *best;

		*best = m->next;
		p->nr_free--;
		p->kept_bytes -= m->cap;
		pthread_mutex_unlock(&p->lock);
		m->next = NULL;
		return m;
	}
	pthread_mutex_unlock(&p->lock);
	return memfd_make(bytes);
}

void gw_memfd_put(struct gw_memfd_pool *p, struct gw_memfd *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&p->lock);
	if (p->nr_free < p->max_kept && m->cap <= GW_MEMFD_KEPT_ONE &&
	    p->kept_bytes + m->cap <= GW_MEMFD_KEPT_BYTES) {
		m->next = p->free;
		p->free = m;
		p->nr_free++;
		p->kept_bytes += m->cap;
		m = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	if (m)
		gw_memfd_free(m);
}
