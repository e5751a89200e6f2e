// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The gateway's per-address bounds key a client by its IPv4 address or its
 * IPv6 /64 (gateway/client_key.c): two addresses of one /64 share the HTTP
 * body budget's share (http_budget.c), the HTTP connection count
 * (http_conns.c) and the own gRPC server's record of an address
 * (grpc_h2_peer.c), two /64s do not, and ::ffff:a.b.c.d is a.b.c.d.
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
	struct gw_http_conns *c = gw_http_conns_create(2);

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
