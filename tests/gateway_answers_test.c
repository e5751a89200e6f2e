// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-gateway's HTTP answers against a client that does not read them
 * (review s18 HIGH 2): the JSON answers of a model with 1 M output values
 * (4 MiB from colocd, ~15 MB of text), asked for from one address on
 * connections that never read, are charged to that address's share of
 * --http-max-buffer-bytes before the query is sent, so past the share the
 * gateway answers 503 and its VmHWM stays within the budget; a reading
 * client then gets the whole answer. The real gateway as the `coloc` user
 * before the fake colocd (gateway_fake_colocd.h), raw sockets from
 * 127.0.0.2.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "gateway_fake_colocd.h"
#include <arpa/inet.h>
#include <netinet/in.h>

#define CONNS 24
#define BUDGET_MIB 256 /* the Deployment's --http-max-buffer-bytes; a share of 32 MiB */

/* A connection from 127.0.0.2 with a 4 KiB receive buffer (answers stick in the gateway), or -1. */
static int connect_unread(int port)
{
	struct sockaddr_in me = { .sin_family = AF_INET }, to = me;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rcvbuf = 4096;

	to.sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, "127.0.0.2", &me.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
	if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) ||
			bind(fd, (struct sockaddr *)&me, sizeof(me)) ||
			connect(fd, (struct sockaddr *)&to, sizeof(to)))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Sends a JSON infer of "wide" on fd and reads its status line only: the status, or -1. */
static int infer_unread(int fd)
{
	const char *body = "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,4],\"datatype\":\"FP32\","
			   "\"data\":[1,2,3,4]}]}";
	char req[512], buf[64];
	int n = snprintf(req, sizeof(req),
			 "POST /v2/models/wide/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n"
			 "\r\n%s",
			 strlen(body), body);

	if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n ||
	    !gw_answered_within(fd, "\r\n", CURL_MAX_S * 1000, buf, sizeof(buf)))
		return -1;
	return !strncmp(buf, "HTTP/1.1 ", 9) ? atoi(buf + 9) : -1;
}

/*
 * 24 connections from one address each ask for a 1 M-value JSON answer
 * and read only its status line: one answer (~20 MB charged) fits the
 * address's 32 MiB share and is held, the others are refused with 503; the
 * gateway's VmHWM grows by less than the budget (256 MiB) and the
 * connections' buffers. Then, the connections closed, a reading client
 * gets the whole answer. Before: every answer was built and held (24 x
 * ~15 MB of text, and json-c's ~140 MB tree for each as it was built).
 */
TEST_F_TIMEOUT(fwd, http_answers__unread_answers_are_charged_to_the_share, 180)
{
	const char *flags[] = { "--http-max-buffer-bytes", "268435456", "--max-body-bytes",
				"8388608", "--http-request-timeout-ms", "120000", NULL };
	int fds[CONNS], ok = 0, refused = 0, status;
	long hwm0, hwm, bound;
	char path[256], *text;
	size_t len;

	ASSERT_EQ(0, write_repo_model_out(self->env.repo, "wide", 4, WIDE_FLOATS));
	snprintf(path, sizeof(path), "chmod -R a+rX '%s'", self->env.repo);
	ASSERT_EQ(0, system(path));
	ASSERT_TRUE(start_gateway(self, flags));
	ASSERT_EQ(200, http_get(self, "/v2/health/live"));
	hwm0 = tu_proc_status_kb(self->env.gateway, "VmHWM");
	ASSERT_LT(0, hwm0);
	for (int i = 0; i < CONNS; i++) {
		fds[i] = connect_unread(self->env.http_port);
		ASSERT_LE(0, fds[i]);
		status = infer_unread(fds[i]);
		ok += status == 200;
		refused += status == 503;
	}
	hwm = tu_proc_status_kb(self->env.gateway, "VmHWM");
	bound = hwm0 + (BUDGET_MIB << 10) + CONNS * 256;
	TH_LOG("%d answers held, %d refused; VmHWM %ld kB at start, %ld kB after, bound %ld kB",
	       ok, refused, hwm0, hwm, bound);
	EXPECT_EQ(1, ok);
	EXPECT_EQ(CONNS - 1, refused);
	EXPECT_LT(hwm, bound);
	for (int i = 0; i < CONNS; i++)
		close(fds[i]);
	/* the share given back once the gateway saw the closes */
	for (int i = 0; i < 50 && (status = infer(self, "wide", 1)) == 503; i++)
		usleep(100000);
	ASSERT_EQ(200, status);
	snprintf(path, sizeof(path), "%s/out1", self->env.dir);
	text = tu_read_file(path, &len);
	ASSERT_NE(NULL, text);
	EXPECT_LT((size_t)WIDE_FLOATS * 15, len);
	EXPECT_NE(NULL, strstr(text, "\"data\":[-1.17549435e-38,-2.3509887e-38,"));
	free(text);
}

TEST_HARNESS_MAIN
