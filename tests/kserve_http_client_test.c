// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The KServe v2 HTTP client (client/kserve_http.c) against an endpoint that
 * lies in its model metadata: the input's name and shape come from the
 * endpoint, and coloc-load runs as root (bench-qos --via http), so they are
 * data in the request it sends, never a format, and a shape that is not a
 * few positive integers is refused with a message. The endpoint is a thread
 * on a loopback port that answers GET /v2/models/NAME with the case's JSON
 * and keeps the first infer request's JSON header.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "kselftest_harness.h"
#include "coloc/kserve.h"

struct fake_endpoint {
	int lfd, port;
	const char *metadata; /* the JSON answered to GET /v2/models/NAME */
	char infer_header[4096]; /* the first POST's JSON header, as sent */
	pthread_t thread;
};

/* One request's head and body from fd into buf (its head's end and length in *body, *blen). */
static int read_request(int fd, char *buf, size_t cap, size_t *used, size_t *body, size_t *blen)
{
	char *end, *cl;

	for (;;) {
		ssize_t n;

		buf[*used] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (end) {
			cl = strcasestr(buf, "Content-Length:");
			*body = (size_t)(end + 4 - buf);
			*blen = cl && cl < end ? strtoul(cl + 15, NULL, 10) : 0;
			if (*used >= *body + *blen || *body + *blen >= cap)
				return 0;
		}
		if (*used + 1 >= cap)
			return -1;
		n = read(fd, buf + *used, cap - 1 - *used);
		if (n <= 0)
			return -1;
		*used += (size_t)n;
	}
}

static void *serve(void *arg)
{
	struct fake_endpoint *f = arg;
	static char buf[1 << 21];
	size_t used = 0, body, blen;
	char head[128];
	int fd = accept(f->lfd, NULL, NULL);

	if (fd < 0)
		return NULL;
	if (!read_request(fd, buf, sizeof(buf), &used, &body, &blen)) {
		snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n",
			 strlen(f->metadata));
		if (write(fd, head, strlen(head)) < 0 ||
		    write(fd, f->metadata, strlen(f->metadata)) < 0)
			goto out;
		memmove(buf, buf + body + blen, used - body - blen);
		used -= body + blen;
		if (!read_request(fd, buf, sizeof(buf), &used, &body, &blen)) {
			char *hl = strcasestr(buf, "Inference-Header-Content-Length:");
			size_t n = hl ? strtoul(hl + 32, NULL, 10) : 0;

			if (n < sizeof(f->infer_header))
				memcpy(f->infer_header, buf + body, n);
		}
	}
out:
	close(fd);
	return NULL;
}

static int start_endpoint(struct fake_endpoint *f, const char *metadata)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);

	memset(f, 0, sizeof(*f));
	f->metadata = metadata;
	f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(f->lfd, 1) || getsockname(f->lfd, (struct sockaddr *)&a, &al))
		return -1;
	f->port = ntohs(a.sin_port);
	return pthread_create(&f->thread, NULL, serve, f) ? -1 : 0;
}

static void stop_endpoint(struct fake_endpoint *f)
{
	shutdown(f->lfd, SHUT_RDWR);
	pthread_join(f->thread, NULL);
	close(f->lfd);
}

/* kserve_http_infer_send of len zero bytes to the endpoint: its return; the client's error in err. */
static int send_one(struct fake_endpoint *f, size_t len, char *err, size_t err_cap)
{
	static char input[16 * 4];
	struct kserve_http *k = NULL;
	char url[64];
	int ret;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", f->port);
	ret = kserve_http_connect(url, &k);
	if (ret)
		return ret;
	ret = kserve_http_infer_send(k, "m", 7, input, len);
	snprintf(err, err_cap, "%s", kserve_http_error(k));
	kserve_http_close(k);
	return ret;
}

#define META(NAME, SHAPE)                                                              \
	"{\"name\":\"m\",\"inputs\":[{\"name\":" NAME ",\"datatype\":\"FP32\",\"shape\":" \
	SHAPE "}],\"outputs\":[{\"name\":\"o\",\"datatype\":\"FP32\",\"shape\":[2]}]}"

/* A name full of conversions is sent as the same characters (once it was snprintf's format). */
TEST(kserve_http__input_name_from_the_endpoint_is_data_not_a_format)
{
	struct fake_endpoint f;
	char err[256];

	ASSERT_EQ(0, start_endpoint(&f, META("\"LEAK %p %s %n%n%n\"", "[1,4]")));
	EXPECT_EQ(0, send_one(&f, 16, err, sizeof(err))) TH_LOG("%s", err);
	stop_endpoint(&f);
	EXPECT_NE(NULL, strstr(f.infer_header, "\"id\":\"7\"")) TH_LOG("%s", f.infer_header);
	EXPECT_NE(NULL, strstr(f.infer_header, "\"name\":\"LEAK %p %s %n%n%n\""))
	TH_LOG("%s", f.infer_header);
	EXPECT_NE(NULL, strstr(f.infer_header, "\"binary_data_size\":16}"))
	TH_LOG("%s", f.infer_header);
}

/* Shapes that are not 1 to 8 positive integers, and metadata of the wrong types: refused. */
TEST(kserve_http__bad_metadata_is_refused_with_a_message)
{
	static const char *const bad[] = {
		META("\"x\"", "[1,-4]"),
		META("\"x\"", "[1,\"4 %n\"]"),
		META("\"x\"", "[1,1,1,1,1,1,1,1,4]"),
		META("\"x\"", "[4294967296,4294967296]"),
		META("\"x\"", "[]"),
		META("\"x\"", "4"),
		META("17", "[1,4]"),
		"{\"inputs\":5,\"outputs\":[]}",
		"{\"inputs\":[{\"name\":\"x\",\"shape\":[4]}],\"outputs\":{\"shape\":[2]}}",
		"{\"inputs\":[{\"name\":\"x\",\"shape\":[4]}],\"outputs\":[{\"shape\":[0]}]}",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fake_endpoint f;
		char err[256] = "";
		int ret;

		ASSERT_EQ(0, start_endpoint(&f, bad[i]));
		ret = send_one(&f, 16, err, sizeof(err));
		stop_endpoint(&f);
		EXPECT_GT(0, ret) TH_LOG("case %zu: %s", i, bad[i]);
		EXPECT_NE(NULL, strstr(err, "GET /v2/models/m")) TH_LOG("case %zu: %s", i, err);
		EXPECT_EQ('\0', f.infer_header[0]) TH_LOG("case %zu sent %s", i, f.infer_header);
	}
}

TEST_HARNESS_MAIN
