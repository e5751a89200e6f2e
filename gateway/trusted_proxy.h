/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The proxies whose word on a client's address the gateway takes
 * (--trusted-proxy CIDR, repeatable): from their addresses only, a
 * request's client for the per-address bounds is the one X-Forwarded-For
 * names, the rightmost entry that is not itself a trusted proxy (each
 * proxy appends the address it was reached from; what a client wrote is
 * further left, never read). docs/design/gateway-bodies.md.
 */
#ifndef COLOC_GATEWAY_TRUSTED_PROXY_H
#define COLOC_GATEWAY_TRUSTED_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define GW_TRUSTED_PROXIES_MAX 16

struct gw_trusted_proxies {
	int n;
	struct {
		sa_family_t family;
		uint8_t addr[16];
		int bits;
	} nets[GW_TRUSTED_PROXIES_MAX];
};

/* Adds cidr (ADDR or ADDR/BITS, IPv4 or IPv6): 0, -EINVAL (not one) or -E2BIG (too many). */
int gw_trusted_proxies_add(struct gw_trusted_proxies *tp, const char *cidr);
/* Whether a (IPv4-mapped IPv6 as IPv4) is in one of tp's networks; tp NULL or empty: no. */
bool gw_trusted_proxies_has(const struct gw_trusted_proxies *tp, const struct sockaddr *a);
/*
 * The client that xff (an X-Forwarded-For value) names for a request from
 * a trusted proxy, into *out: 0, or -EINVAL when its rightmost entries
 * cannot be read as addresses (the proxy's own address then stands).
 */
int gw_trusted_proxies_client(const struct gw_trusted_proxies *tp, const char *xff,
			      struct sockaddr_storage *out);

/*
 * An X-Forwarded-For value of len bytes into out (cap > 0 bytes, ended by a
 * NUL): whole, or when too long its end from an entry's start ("" if no
 * entry's end fits), the entries read from the right.
 */
void gw_trusted_proxies_xff_tail(char *out, size_t cap, const char *value, size_t len);

#endif /* COLOC_GATEWAY_TRUSTED_PROXY_H */
