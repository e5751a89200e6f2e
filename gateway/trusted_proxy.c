// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Trusted proxies and the client they name (trusted_proxy.h): networks
 * matched by prefix, X-Forwarded-For read from its right end, one entry
 * at a time, at most XFF_HOPS_MAX of them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "trusted_proxy.h"

#define XFF_HOPS_MAX 32
#define XFF_ENTRY_MAX 64 /* an address, bracketed, with a port */

int gw_trusted_proxies_add(struct gw_trusted_proxies *tp, const char *cidr)
{
	char text[XFF_ENTRY_MAX], *slash;
	int max_bits, bits;
	long v;

	if (tp->n == GW_TRUSTED_PROXIES_MAX)
		return -E2BIG;
	if (snprintf(text, sizeof(text), "%s", cidr) >= (int)sizeof(text))
		return -EINVAL;
	slash = strchr(text, '/');
	if (slash)
		*slash = '\0';
	if (inet_pton(AF_INET, text, tp->nets[tp->n].addr) == 1) {
		tp->nets[tp->n].family = AF_INET;
		max_bits = 32;
	} else if (inet_pton(AF_INET6, text, tp->nets[tp->n].addr) == 1) {
		tp->nets[tp->n].family = AF_INET6;
		max_bits = 128;
	} else {
		return -EINVAL;
	}
	bits = max_bits;
	if (slash) {
		char *end;

		errno = 0;
		v = strtol(slash + 1, &end, 10);
		if (errno || end == slash + 1 || *end || v < 0 || v > max_bits)
			return -EINVAL;
		bits = (int)v;
	}
	tp->nets[tp->n++].bits = bits;
	return 0;
}

/* Whether the first bits of a and b are equal. */
static bool prefix_eq(const uint8_t *a, const uint8_t *b, int bits)
{
	int whole = bits / 8, rest = bits % 8;
	uint8_t mask = (uint8_t)(0xff00u >> rest);

	return !memcmp(a, b, (size_t)whole) && (!rest || !((a[whole] ^ b[whole]) & mask));
}

bool gw_trusted_proxies_has(const struct gw_trusted_proxies *tp, const struct sockaddr *a)
{
	const uint8_t *ip;
	sa_family_t family;

	if (!tp || !tp->n || !a)
		return false;
	if (a->sa_family == AF_INET) {
		family = AF_INET;
		ip = (const uint8_t *)&((const struct sockaddr_in *)a)->sin_addr;
	} else if (a->sa_family == AF_INET6) {
		const struct in6_addr *s6 = &((const struct sockaddr_in6 *)a)->sin6_addr;
		bool mapped = IN6_IS_ADDR_V4MAPPED(s6);

		family = mapped ? AF_INET : AF_INET6;
		ip = s6->s6_addr + (mapped ? 12 : 0);
	} else {
		return false;
	}
	for (int i = 0; i < tp->n; i++)
		if (tp->nets[i].family == family && prefix_eq(ip, tp->nets[i].addr, tp->nets[i].bits))
			return true;
	return false;
}

/*
 * One X-Forwarded-For entry, len bytes at s (spaces around it allowed):
 * an IPv4 address with or without :port, an IPv6 one bare or in brackets
 * with or without :port. 0 with the address in *out, or -EINVAL.
 */
static int xff_entry(const char *s, size_t len, struct sockaddr_storage *out)
{
	char text[XFF_ENTRY_MAX], *p = text, *end;
	struct sockaddr_in *v4 = (struct sockaddr_in *)out;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;

	while (len && (*s == ' ' || *s == '\t'))
		s++, len--;
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	if (!len || len >= sizeof(text))
		return -EINVAL;
	memcpy(text, s, len);
	text[len] = '\0';
	if (*p == '[') {
		end = strchr(++p, ']');
		if (!end || (end[1] && end[1] != ':'))
			return -EINVAL;
		*end = '\0';
	} else if ((end = strchr(p, ':')) && !strchr(end + 1, ':')) {
		*end = '\0'; /* IPv4:port */
	}
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, p, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, p, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

int gw_trusted_proxies_client(const struct gw_trusted_proxies *tp, const char *xff,
			      struct sockaddr_storage *out)
{
	size_t end = strlen(xff);
	struct sockaddr_storage a;

	for (int hop = 0; hop < XFF_HOPS_MAX; hop++) {
		size_t start = end;

		while (start && xff[start - 1] != ',')
			start--;
		if (xff_entry(xff + start, end - start, &a))
			return -EINVAL;
		*out = a;
		if (!start || !gw_trusted_proxies_has(tp, (struct sockaddr *)&a))
			return 0;
		end = start - 1;
	}
	return 0;
}

void gw_trusted_proxies_xff_tail(char *out, size_t cap, const char *value, size_t len)
{
	if (len >= cap) {
		const char *tail = memchr(value + len - (cap - 1), ',', cap - 1);

		len = tail ? (size_t)(value + len - tail - 1) : 0;
		value = tail ? tail + 1 : value;
	}
	memcpy(out, value, len);
	out[len] = '\0';
}
