// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Test helpers for sockets (declared in testutil.h): a connection to
 * colocd's control socket, a request and its answer line, descriptors sent
 * on a message, a TCP socket whose unsent bytes make its close linger, and
 * a free loopback port below the kernel's ephemeral range.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "mono_clock.h"
#include "scm_rights.h"
#include "testutil.h"

int tu_connect(const char *socket_path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", socket_path);
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

int tu_read_line(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got + 1 < len) {
		ssize_t n = recv(fd, buf + got, 1, 0);

		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		if (buf[got++] == '\n')
			break;
	}
	buf[got] = '\0';
	return (int)got;
}

int tu_request(const char *socket_path, const char *req, char *resp, size_t len)
{
	int fd = tu_connect(socket_path), n;

	if (fd < 0)
		return fd;
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req)) {
		close(fd);
		return -EIO;
	}
	n = tu_read_line(fd, resp, len);
	close(fd);
	return n;
}

int tu_send_fds(int fd, const void *data, size_t len, const int *fds, int nr_fds, int flags)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * TU_MAX_FDS)];
		struct cmsghdr align;
	} cbuf = { 0 };
	struct iovec iov = { (void *)data, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nr_fds < 0 || nr_fds > TU_MAX_FDS)
		return -EINVAL;
	if (nr_fds)
		scm_rights_attach(&msg, cbuf.buf, fds, nr_fds);
	/* colocd takes descriptors once it has admitted the connection (SO_PASSRIGHTS) */
	for (int ms = 0; ms < 5000; ms++) {
		ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL | flags);

		if (n >= 0 || errno != EPERM || !nr_fds)
			return n == (ssize_t)len ? 0 : -EIO;
		usleep(1000);
	}
	return -EPERM;
}

int tu_lingering_socket(int protocol, int linger_s, int *listener)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct linger lg = { .l_onoff = 1, .l_linger = linger_s };
	socklen_t len = sizeof(a);
	int rcv = 4096, t, queued = 0;
	static char junk[65536];

	*listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, protocol);
	if (*listener < 0 || setsockopt(*listener, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv)) ||
	    bind(*listener, (struct sockaddr *)&a, sizeof(a)) || listen(*listener, 1) ||
	    getsockname(*listener, (struct sockaddr *)&a, &len))
		return -1;
	t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, protocol);
	if (t < 0 || connect(t, (struct sockaddr *)&a, sizeof(a)) ||
	    setsockopt(t, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) || fcntl(t, F_SETFL, O_NONBLOCK))
		return -1;
	while (send(t, junk, sizeof(junk), MSG_NOSIGNAL) > 0)
		;
	if (ioctl(t, SIOCOUTQ, &queued) || !queued)
		return -1;
	return t;
}


int tu_request_fds(const char *socket_path, const char *req, const int *fds, int nr_fds,
		   char *resp, size_t len)
{
	int fd = tu_connect(socket_path), n;

	if (fd < 0)
		return fd;
	n = tu_send_fds(fd, req, strlen(req), fds, nr_fds, 0);
	if (n) {
		close(fd);
		return n;
	}
	n = tu_read_line(fd, resp, len);
	close(fd);
	return n;
}


/* Whether port is free on loopback now (a bind without SO_REUSEADDR succeeds). */
static bool port_free(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok = fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a));

	if (fd >= 0)
		close(fd);
	return ok;
}

int tu_free_port(void)
{
	static uint64_t r;
	int lo = 32768, hi = 60999;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	if (f) {
		if (fscanf(f, "%d %d", &lo, &hi) != 2 || lo < 11024)
			lo = 32768;
		fclose(f);
	}
	/*
	 * From 10000 up to the kernel's ephemeral range, which every outgoing
	 * connection (a client's, curl's) draws from: a port that bind(0)
	 * lent and this test released could be some connection's before the
	 * server binds it.
	 */
	if (!r)
		r = (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL ^ coloc_now_ns();
	for (int i = 0; i < 1000; i++) {
		int port;

		r = r * 6364136223846793005ULL + 1442695040888963407ULL;
		port = 10000 + (int)((r >> 33) % (uint64_t)(lo - 10000));
		if (port_free(port))
			return port;
	}
	return -1;
}

