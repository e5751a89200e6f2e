// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Listening addresses of the gateway (addr.h): numeric only, no name lookup. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "addr.h"
#include "cli.h"

int gw_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len, int any_port)
{
	const char *colon = strrchr(s, ':');
	char host[64];
	size_t hlen;
	long port;

	memset(ss, 0, sizeof(*ss));
	if (!colon || cli_parse_long(colon + 1, any_port ? 0 : 1, 65535, &port))
		return -EINVAL;
	hlen = (size_t)(colon - s);
	if (hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, hlen);
	host[hlen] = '\0';
	if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

		host[hlen - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1)
			return -EINVAL;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*a6);
		return 0;
	}
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;

	if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
		return -EINVAL;
	a4->sin_family = AF_INET;
	a4->sin_port = htons((uint16_t)port);
	*len = sizeof(*a4);
	return 0;
}
