// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The gateway's per-address bounds key a client by its IPv4 address or its
 * IPv6 /64 (gateway/client_key.c): two addresses of one /64 share the HTTP
 * body budget's share (http_budget.c), the HTTP connection count
 * (http_conns.c) and the own gRPC server's record of an address
 * (grpc_h2_peer.c), two /64s do not, and ::ffff:a.b.c.d is a.b.c.d. From
 * a trusted proxy (trusted_proxy.c) the client is X-Forwarded-For's
 * rightmost entry that is not a trusted proxy, and the proxy's
 * connections are not counted.
 * Addresses from the documentation ranges (RFC 3849, RFC 5737).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "kselftest_harness.h"
#include "client_key.h"
#include "grpc_h2.h"
#include "http_budget.h"
#include "http_conns.h"
#include "trusted_proxy.h"

/* s (IPv4 or IPv6, numeric) as a socket address of its family, port 1234 + n. */
static struct sockaddr_storage addr_of(const char *s, int n)
{
	struct sockaddr_storage ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET6, s, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)(1234 + n));
	} else if (inet_pton(AF_INET, s, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)(1234 + n));
	}
	return ss;
}

static bool same_key(const char *a, const char *b)
{
	struct sockaddr_storage x = addr_of(a, 0), y = addr_of(b, 1);
	struct gw_client_key kx = gw_client_key_of((struct sockaddr *)&x);
	struct gw_client_key ky = gw_client_key_of((struct sockaddr *)&y);

	return gw_client_key_eq(&kx, &ky);
}

TEST(client_key__ipv6_by_its_64_ipv4_mapped_as_ipv4)
{
	EXPECT_TRUE(same_key("2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:fffe"));
	EXPECT_FALSE(same_key("2001:db8:1:2::1", "2001:db8:1:3::1"));
	EXPECT_FALSE(same_key("2001:db8:1:2::1", "2001:db9:1:2::1"));
	EXPECT_TRUE(same_key("192.0.2.7", "192.0.2.7"));
	EXPECT_FALSE(same_key("192.0.2.7", "192.0.2.8"));
	EXPECT_TRUE(same_key("::ffff:192.0.2.7", "192.0.2.7"));
	EXPECT_FALSE(same_key("::ffff:192.0.2.7", "::ffff:192.0.2.8"));
	/* an IPv6 address whose /64 is all zero is not an IPv4 one */
	EXPECT_FALSE(same_key("::c000:207", "192.0.2.7"));
}

/* A budget of 64 bytes, 8 per address: what take answers for addr. */
static int take(struct gw_http_budget *b, const char *addr, size_t bytes)
{
	struct sockaddr_storage ss = addr_of(addr, rand() % 1000);

	return gw_http_budget_take(b, (struct sockaddr *)&ss, bytes);
}

TEST(http_budget__one_64_shares_a_share_two_do_not)
{
	struct gw_http_budget *b = gw_http_budget_create(64, 8);
	struct sockaddr_storage ss = addr_of("2001:db8:1:2::9", 0);

	ASSERT_NE(NULL, b);
	EXPECT_EQ(0, take(b, "2001:db8:1:2::1", 6));
	/* another address of the same /64: 2 bytes left of its share */
	EXPECT_EQ(-ENOSPC, take(b, "2001:db8:1:2:8000::1", 3));
	EXPECT_EQ(0, take(b, "2001:db8:1:2:8000::1", 2));
	/* the next /64 has a share of its own */
	EXPECT_EQ(0, take(b, "2001:db8:1:3::1", 8));
	/* given back by a third address of the first /64: its share is free again */
	gw_http_budget_give(b, (struct sockaddr *)&ss, 8);
	EXPECT_EQ(0, take(b, "2001:db8:1:2::2", 8));
	/* IPv4 and its IPv4-mapped IPv6 form: one share */
	EXPECT_EQ(0, take(b, "192.0.2.7", 5));
	EXPECT_EQ(-ENOSPC, take(b, "::ffff:192.0.2.7", 4));
	EXPECT_EQ(0, take(b, "192.0.2.8", 8));
	EXPECT_EQ(8u + 8 + 5 + 8, gw_http_budget_held(b));
	gw_http_budget_destroy(b);
}

/* The accept policy's answer for addr; one it lets in started when start. */
static enum MHD_Result conns_accept(struct gw_http_conns *c, const char *addr, bool start)
{
	struct sockaddr_storage ss = addr_of(addr, rand() % 1000);
	enum MHD_Result r = gw_http_conns_accept(c, (struct sockaddr *)&ss, sizeof(ss));

	if (r == MHD_YES && start)
		gw_http_conns_notify(c, NULL, MHD_CONNECTION_NOTIFY_STARTED);
	return r;
}

TEST(http_conns__a_64_is_one_client_and_one_never_started_is_given_back)
{
	struct gw_http_conns *c = gw_http_conns_create(2, NULL);

	ASSERT_NE(NULL, c);
	EXPECT_EQ(MHD_YES, conns_accept(c, "2001:db8:1:2::1", true));
	/* let in, then dropped by libmicrohttpd before it started (out of memory) */
	EXPECT_EQ(MHD_YES, conns_accept(c, "2001:db8:1:2::2", false));
	/* its count given back at this accept: the /64's second */
	EXPECT_EQ(MHD_YES, conns_accept(c, "2001:db8:1:2::3", true));
	EXPECT_EQ(MHD_NO, conns_accept(c, "2001:db8:1:2:8000::4", true));
	EXPECT_EQ(MHD_YES, conns_accept(c, "2001:db8:1:3::1", true));
	EXPECT_EQ(MHD_YES, conns_accept(c, "192.0.2.7", true));
	EXPECT_EQ(MHD_YES, conns_accept(c, "192.0.2.7", true));
	EXPECT_EQ(MHD_NO, conns_accept(c, "::ffff:192.0.2.7", true));
	EXPECT_EQ(MHD_YES, conns_accept(c, "192.0.2.8", true));
	gw_http_conns_destroy(c);
}

TEST(trusted_proxy__networks_match_by_prefix)
{
	struct gw_trusted_proxies tp = { 0 };
	struct sockaddr_storage a;
	const char *in[] = { "10.1.2.3", "::ffff:10.255.0.1", "192.0.2.7", "2001:db8:1:2::9" };
	const char *out[] = { "11.0.0.1", "192.0.2.8", "2001:db8:1:3::1", "::a01:203" };

	EXPECT_EQ(0, gw_trusted_proxies_add(&tp, "10.0.0.0/8"));
	EXPECT_EQ(0, gw_trusted_proxies_add(&tp, "192.0.2.7"));
	EXPECT_EQ(0, gw_trusted_proxies_add(&tp, "2001:db8:1:2::/64"));
	EXPECT_EQ(-EINVAL, gw_trusted_proxies_add(&tp, "10.0.0.0/33"));
	EXPECT_EQ(-EINVAL, gw_trusted_proxies_add(&tp, "10.0.0.0/"));
	EXPECT_EQ(-EINVAL, gw_trusted_proxies_add(&tp, "ingress"));
	EXPECT_EQ(3, tp.n);
	for (size_t i = 0; i < 4; i++) {
		a = addr_of(in[i], 0);
		EXPECT_TRUE(gw_trusted_proxies_has(&tp, (struct sockaddr *)&a)) TH_LOG("%s", in[i]);
		a = addr_of(out[i], 0);
		EXPECT_FALSE(gw_trusted_proxies_has(&tp, (struct sockaddr *)&a)) TH_LOG("%s", out[i]);
	}
	EXPECT_FALSE(gw_trusted_proxies_has(NULL, (struct sockaddr *)&a));
	while (tp.n < GW_TRUSTED_PROXIES_MAX)
		ASSERT_EQ(0, gw_trusted_proxies_add(&tp, "192.0.2.1"));
	EXPECT_EQ(-E2BIG, gw_trusted_proxies_add(&tp, "192.0.2.1"));
}

/* The key xff names through proxies tp, as text of the client's address; "" when none. */
static const char *xff_client(const struct gw_trusted_proxies *tp, const char *xff)
{
	static char text[INET6_ADDRSTRLEN];
	struct sockaddr_storage a;

	if (gw_trusted_proxies_client(tp, xff, &a))
		return "";
	if (a.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&a)->sin_addr, text, sizeof(text));
	else
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&a)->sin6_addr, text, sizeof(text));
	return text;
}

TEST(trusted_proxy__the_client_is_the_rightmost_untrusted_hop)
{
	struct gw_trusted_proxies tp = { 0 };

	ASSERT_EQ(0, gw_trusted_proxies_add(&tp, "10.0.0.0/8"));
	EXPECT_STREQ("192.0.2.7", xff_client(&tp, "192.0.2.7"));
	/* what the client wrote is left of what the proxies appended */
	EXPECT_STREQ("192.0.2.7", xff_client(&tp, "198.51.100.1, 192.0.2.7"));
	EXPECT_STREQ("192.0.2.7", xff_client(&tp, "198.51.100.1,192.0.2.7, 10.0.0.5"));
	EXPECT_STREQ("192.0.2.7", xff_client(&tp, " 192.0.2.7:4711 "));
	EXPECT_STREQ("2001:db8::7", xff_client(&tp, "[2001:db8::7]:4711"));
	EXPECT_STREQ("2001:db8::7", xff_client(&tp, "10.9.9.9, 2001:db8::7"));
	/* only proxies: the leftmost */
	EXPECT_STREQ("10.0.0.1", xff_client(&tp, "10.0.0.1, 10.0.0.2"));
	/* unreadable where the proxies wrote: none (the proxy's own address stands) */
	EXPECT_STREQ("", xff_client(&tp, "192.0.2.7, unknown"));
	EXPECT_STREQ("", xff_client(&tp, "192.0.2.7,"));
	EXPECT_STREQ("", xff_client(&tp, ""));
	/* unreadable left of the client: never read */
	EXPECT_STREQ("192.0.2.7", xff_client(&tp, "<script>, 192.0.2.7"));
}

TEST(http_conns__a_trusted_proxys_connections_are_not_counted)
{
	struct gw_trusted_proxies tp = { 0 };
	struct gw_http_conns *c;

	ASSERT_EQ(0, gw_trusted_proxies_add(&tp, "192.0.2.7"));
	c = gw_http_conns_create(1, &tp);
	ASSERT_NE(NULL, c);
	for (int i = 0; i < 4; i++)
		EXPECT_EQ(MHD_YES, conns_accept(c, "192.0.2.7", true));
	EXPECT_EQ(MHD_YES, conns_accept(c, "192.0.2.8", true));
	EXPECT_EQ(MHD_NO, conns_accept(c, "192.0.2.8", true));
	gw_http_conns_destroy(c);
}

TEST(grpc_peer__one_record_per_64)
{
	struct h2_server *srv = calloc(1, sizeof(*srv));
	struct sockaddr_storage a = addr_of("2001:db8:1:2::1", 0),
				b = addr_of("2001:db8:1:2::2", 1);
	struct sockaddr_storage c = addr_of("2001:db8:1:3::1", 2),
				d = addr_of("::ffff:192.0.2.7", 3);
	struct sockaddr_storage e = addr_of("192.0.2.7", 4);
	struct h2s_peer *pa, *pb, *pc, *pd, *pe;

	ASSERT_NE(NULL, srv);
	ASSERT_EQ(0, h2s_peers_init(srv));
	pa = h2s_peer_get(srv, &a);
	pb = h2s_peer_get(srv, &b);
	pc = h2s_peer_get(srv, &c);
	pd = h2s_peer_get(srv, &d);
	pe = h2s_peer_get(srv, &e);
	ASSERT_NE(NULL, pa);
	ASSERT_NE(NULL, pc);
	ASSERT_NE(NULL, pd);
	EXPECT_EQ(pa, pb);
	EXPECT_EQ(2, pa->refs);
	EXPECT_NE(pa, pc);
	EXPECT_EQ(1, pc->refs);
	EXPECT_EQ(pd, pe);
	EXPECT_NE(pa, pd);
	h2s_peer_put(srv, pb);
	EXPECT_EQ(1, pa->refs);
	h2s_peer_put(srv, pa);
	h2s_peer_put(srv, pc);
	h2s_peer_put(srv, pd);
	h2s_peer_put(srv, pe);
	h2s_peers_free(srv);
	free(srv);
}

TEST_HARNESS_MAIN
