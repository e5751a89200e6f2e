// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kserve_tcp_connect() (kserve_tcp.h): HOST:PORT parsed, connected,
 * TCP_NODELAY.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include "cli.h"
#include "kserve_tcp.h"

int kserve_tcp_connect(const char *target, char *why, size_t len)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	const char *colon = strrchr(target, ':');
	char host[64];
	int fd, one = 1;
	long port;

	if (!colon || (size_t)(colon - target) >= sizeof(host) ||
	    cli_parse_long(colon + 1, 1, 65535, &port)) {
		snprintf(why, len, "%s is not HOST:PORT", target);
		return -EINVAL;
	}
	memcpy(host, target, (size_t)(colon - target));
	host[colon - target] = '\0';
	if (inet_pton(AF_INET, strcmp(host, "localhost") ? host : "127.0.0.1", &a.sin_addr) != 1) {
		snprintf(why, len, "%s is not an IPv4 address", host);
		return -EINVAL;
	}
	a.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		snprintf(why, len, "connect to %s: %s", target, strerror(e));
		return -e;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}
