// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The routes of coloc/infer_route.h, one table entry each: colocd's
 * socket through libcoloc_client, the gateway through the KServe v2 gRPC
 * (raw HTTP/2, or gRPC's C core) and HTTP clients of client/kserve_*.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include "coloc/infer_route.h"
#include "coloc/kserve.h"

struct route_ops {
	const char *name;
	int (*open)(const char *where, void **h);
	void (*close)(void *h);
	int (*fd)(void *h);
	int (*send)(void *h, const char *tenant, uint64_t tag, const void *in, size_t len);
	int (*recv)(void *h, struct coloc_infer_result *res, void *out, size_t cap, int timeout_ms);
	const char *(*error)(void *h);
	/* the input in a memfd (colocd's socket only; NULL elsewhere) */
	int (*send_memfd)(void *h, const char *tenant, uint64_t tag, int memfd, size_t len);
};

struct coloc_route {
	const struct route_ops *ops;
	void *h;
};

/*
 * Each client's calls, typed for the table: a macro writes the six thin
 * wrappers of one client (PREFIX_connect, _close, _fd, _infer_send,
 * _infer_recv, _error), so a route is one line below.
 */
#define ROUTE_WRAPPERS(prefix, type)                                                               \
	static int prefix##_open_h(const char *where, void **h)                                    \
	{                                                                                          \
		return prefix##_connect(where, (type **)h);                                        \
	}                                                                                          \
	static void prefix##_close_h(void *h)                                                      \
	{                                                                                          \
		prefix##_close(h);                                                                 \
	}                                                                                          \
	static int prefix##_fd_h(void *h)                                                          \
	{                                                                                          \
		return prefix##_fd(h);                                                             \
	}                                                                                          \
	static int prefix##_send_h(void *h, const char *tenant, uint64_t tag, const void *in,      \
				   size_t len)                                                     \
	{                                                                                          \
		return prefix##_infer_send(h, tenant, tag, in, len);                               \
	}                                                                                          \
	static int prefix##_recv_h(void *h, struct coloc_infer_result *res, void *out, size_t cap, \
				   int timeout_ms)                                                 \
	{                                                                                          \
		return prefix##_infer_recv(h, res, out, cap, timeout_ms);                          \
	}                                                                                          \
	static const char *prefix##_error_h(void *h)                                               \
	{                                                                                          \
		return prefix##_error(h);                                                          \
	}

ROUTE_WRAPPERS(coloc_client, struct coloc_client)

static int coloc_client_send_memfd_h(void *h, const char *tenant, uint64_t tag, int memfd,
				     size_t len)
{
	return coloc_client_infer_send_memfd(h, tenant, tag, memfd, 0, len);
}
ROUTE_WRAPPERS(kserve_grpc, struct kserve_grpc)
ROUTE_WRAPPERS(kserve_h2, struct kserve_h2)
ROUTE_WRAPPERS(kserve_http, struct kserve_http)

#define ROUTE_ENTRY(name, prefix, send_memfd)                                            \
	{                                                                                \
		name, prefix##_open_h, prefix##_close_h, prefix##_fd_h, prefix##_send_h, \
			prefix##_recv_h, prefix##_error_h, send_memfd                    \
	}

static const struct route_ops route_table[] = {
	[COLOC_ROUTE_SOCKET] =
		ROUTE_ENTRY("colocd's socket", coloc_client, coloc_client_send_memfd_h),
	[COLOC_ROUTE_GRPC] = ROUTE_ENTRY("the gateway's gRPC API", kserve_h2, NULL),
	[COLOC_ROUTE_HTTP] = ROUTE_ENTRY("the gateway's HTTP API", kserve_http, NULL),
	[COLOC_ROUTE_GRPC_CORE] =
		ROUTE_ENTRY("the gateway's gRPC API (gRPC's C core)", kserve_grpc, NULL),
};

const char *coloc_route_name(enum coloc_route_kind kind)
{
	return route_table[kind].name;
}

int coloc_route_open(enum coloc_route_kind kind, const char *where, struct coloc_route **out)
{
	struct coloc_route *r = calloc(1, sizeof(*r));
	int err;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->ops = &route_table[kind];
	err = r->ops->open(where, &r->h);
	if (err) {
		free(r);
		return err;
	}
	*out = r;
	return 0;
}

void coloc_route_close(struct coloc_route *r)
{
	if (!r)
		return;
	r->ops->close(r->h);
	free(r);
}

int coloc_route_fd(struct coloc_route *r)
{
	return r->ops->fd(r->h);
}

int coloc_route_send(struct coloc_route *r, const char *tenant, uint64_t tag, const void *input,
		     size_t len)
{
	return r->ops->send(r->h, tenant, tag, input, len);
}

bool coloc_route_takes_memfd(const struct coloc_route *r)
{
	return r->ops->send_memfd != NULL;
}

int coloc_route_send_memfd(struct coloc_route *r, const char *tenant, uint64_t tag, int memfd,
			   size_t len)
{
	if (!r->ops->send_memfd)
		return -EOPNOTSUPP;
	return r->ops->send_memfd(r->h, tenant, tag, memfd, len);
}

int coloc_route_recv(struct coloc_route *r, struct coloc_infer_result *res, void *output,
		     size_t out_cap)
{
	return r->ops->recv(r->h, res, output, out_cap, 0);
}

const char *coloc_route_error(struct coloc_route *r)
{
	return r->ops->error(r->h);
}
