/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The HTTP side's connections at once from one client
 * (--http-max-conns-per-ip), a client keyed as client_key.h keys it: an
 * IPv4 address, an IPv6 address by its /64 (libmicrohttpd's own per-IP
 * limit counts each IPv6 address apart). libmicrohttpd's accept policy
 * refuses a connection past the limit (closed unanswered) and counts one
 * it lets in; the connection's close gives it back. The policy and the
 * STARTED notification run on libmicrohttpd's one listening thread, one
 * connection after the other. docs/gateway.md, "Bounds per client address".
 */
#ifndef COLOC_GATEWAY_HTTP_CONNS_H
#define COLOC_GATEWAY_HTTP_CONNS_H

#include <sys/socket.h>
#include <microhttpd.h>
#include "trusted_proxy.h"

struct gw_http_conns;

/*
 * At most max_per_client (> 0) connections per client, a trusted proxy's
 * (trusted_proxy.h; NULL: none) not counted: every client behind it comes
 * on them. NULL out of memory.
 */
struct gw_http_conns *gw_http_conns_create(int max_per_client,
					   const struct gw_trusted_proxies *trusted);
void gw_http_conns_destroy(struct gw_http_conns *c);
/* MHD_AcceptPolicyCallback, c as its argument: MHD_NO past addr's client's limit. */
enum MHD_Result gw_http_conns_accept(void *c, const struct sockaddr *addr, socklen_t len);
/* From MHD_OPTION_NOTIFY_CONNECTION: conn started or closed. */
void gw_http_conns_notify(struct gw_http_conns *c, struct MHD_Connection *conn,
			  enum MHD_ConnectionNotificationCode code);

#endif /* COLOC_GATEWAY_HTTP_CONNS_H */
