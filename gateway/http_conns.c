// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The HTTP connections per client (http_conns.h), counted in an
 * http_budget.h of one unit a connection: its salted table keyed by
 * client_key.h and its lock. libmicrohttpd can drop a connection its
 * policy let in before it starts (out of memory), without a CLOSED
 * notification: that count is given back at the next accept.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "http_budget.h"
#include "http_conns.h"

struct gw_http_conns {
	struct gw_http_budget *count;
	const struct gw_trusted_proxies *trusted; /* not counted: they carry every client */
	/* the listening thread's: the last connection let in, until it starts */
	bool unstarted;
	struct sockaddr_storage unstarted_addr;
};

struct gw_http_conns *gw_http_conns_create(int max_per_client,
					   const struct gw_trusted_proxies *trusted)
{
	struct gw_http_conns *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->trusted = trusted;
	c->count = gw_http_budget_create(SIZE_MAX, (size_t)max_per_client);
	if (!c->count) {
		free(c);
		return NULL;
	}
	return c;
}

void gw_http_conns_destroy(struct gw_http_conns *c)
{
	if (!c)
		return;
	gw_http_budget_destroy(c->count);
	free(c);
}

enum MHD_Result gw_http_conns_accept(void *arg, const struct sockaddr *addr, socklen_t len)
{
	struct gw_http_conns *c = arg;

	if (c->unstarted)
		gw_http_budget_give(c->count, (struct sockaddr *)&c->unstarted_addr, 1);
	c->unstarted = false;
	if (gw_trusted_proxies_has(c->trusted, addr))
		return MHD_YES;
	c->unstarted = len <= sizeof(c->unstarted_addr) && !gw_http_budget_take(c->count, addr, 1);
	if (!c->unstarted)
		return MHD_NO;
	memcpy(&c->unstarted_addr, addr, len);
	return MHD_YES;
}

void gw_http_conns_notify(struct gw_http_conns *c, struct MHD_Connection *conn,
			  enum MHD_ConnectionNotificationCode code)
{
	const union MHD_ConnectionInfo *ci;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		c->unstarted = false;
		return;
	}
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (!gw_trusted_proxies_has(c->trusted, ci ? ci->client_addr : NULL))
		gw_http_budget_give(c->count, ci ? ci->client_addr : NULL, 1);
}
