// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-gateway's forwarding (gateway/forward.h) against a colocd that
 * misbehaves: a fake colocd on a real Unix socket, run by the test, speaks
 * just enough of protocol.h (submit, status, infer) to get models loaded,
 * then, as each test asks, stops reading, answers a line without its
 * output, never answers, holds one tenant's queries, closes a connection
 * after an answer, or cuts one mid-input. The gateway is the real binary,
 * run as the `coloc` user (tests/gateway_fixture.h), driven with curl.
 *
 * Tenants: "fast" and "slow" (4 floats in, 10 out; "fast" answers after
 * FAST_MS, "slow" is held while the test says so) and "big", whose input
 * is larger than the socket's largest send buffer, so that a colocd that
 * stops reading stalls the gateway's send.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <json-c/json.h>
#include "kselftest_harness.h"
#include "testutil.h"
#include "gateway_fixture.h"

#define OUT_FLOATS 10
#define FAST_MS 200
#define CURL_MAX_S 30 /* a hung request fails here, long before the harness's timeout */
#define NR_FAST 8

enum fake_mode {
	FAKE_ANSWER, /* read the query, answer it */
	FAKE_NO_READ, /* read nothing more */
	FAKE_NO_ANSWER, /* read the query, never answer */
	FAKE_NO_OUTPUT, /* read the query, answer its line but not its output */
	FAKE_CUT_INPUT, /* read the line and a little of the input, then close */
	FAKE_CLOSE_AFTER, /* answer, close that connection, go back to FAKE_ANSWER */
	FAKE_BATCH, /* read queries, answer them all once none came for BATCH_IDLE_MS (not
		     * while hold_slow; hold_after_batch: hold again after this batch) */
};

#define BATCH_IDLE_MS 200
#define BATCH_MAX 64

struct fake_colocd {
	int lfd;
	pthread_t acceptor;
	size_t big_bytes; /* "big"'s input */
	_Atomic int mode;
	atomic_bool hold_slow, quit;
	atomic_bool hold_after_batch; /* FAKE_BATCH: the next batch answered sets hold_slow */
	atomic_int accepted, closed, queries, slow_seen;
	atomic_int memfd_queries; /* of queries: those whose input came in a memfd */
	atomic_int unread; /* the most bytes seen waiting on a connection in FAKE_NO_READ */
	atomic_int most_owed; /* the most queries one connection had unanswered in FAKE_BATCH */
	atomic_bool keep_memfd; /* keep the next input memfd in kept_fd, as colocd would */
	atomic_int kept_fd;
};

/* Waits until fd is readable, polling f->quit and NO_READ; 1, or 0 to give up. */
static int fake_wait_readable(struct fake_colocd *f, int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	while (!atomic_load(&f->quit)) {
		if (atomic_load(&f->mode) == FAKE_NO_READ) {
			int n;

			/* what waits unread: a test sees a send stall */
			if (!ioctl(fd, FIONREAD, &n) && n > atomic_load(&f->unread))
				atomic_store(&f->unread, n);
			usleep(10000);
			continue;
		}
		if (poll(&pfd, 1, 50) > 0)
			return 1;
	}
	return 0;
}

/* read() that keeps a descriptor riding on the bytes when asked to (closes it otherwise). */
static ssize_t fake_recv(struct fake_colocd *f, int fd, char *buf, size_t len)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctl,
			      .msg_controllen = sizeof(ctl) };
	struct cmsghdr *c;
	ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);

	for (c = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c)) {
		int got;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		memcpy(&got, CMSG_DATA(c), sizeof(got));
		if (atomic_exchange(&f->keep_memfd, false))
			atomic_store(&f->kept_fd, got);
		else
			close(got);
	}
	return n;
}

/* Reads exactly len bytes (into buf, or thrown away when NULL): 0, or -1 (closed, quit). */
static int fake_read(struct fake_colocd *f, int fd, char *buf, size_t len)
{
	static char sink[1 << 16];

	while (len) {
		size_t want = buf ? len : (len < sizeof(sink) ? len : sizeof(sink));
		ssize_t n;

		if (!fake_wait_readable(f, fd))
			return -1;
		n = fake_recv(f, fd, buf ? buf : sink, want);
		if (n <= 0)
			return -1;
		if (buf)
			buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int fake_read_line(struct fake_colocd *f, int fd, char *line, size_t cap)
{
	for (size_t i = 0; i + 1 < cap; i++) {
		if (fake_read(f, fd, line + i, 1))
			return -1;
		if (line[i] == '\n') {
			line[i] = '\0';
			return 0;
		}
	}
	return -1;
}

static int fake_send(int fd, const void *buf, size_t len)
{
	return send(fd, buf, len, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

static const char *fake_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "";
}

static int64_t fake_int(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : -1;
}

/* A control request's answer: submit and remove are fine, status says ready. */
static int fake_control(struct fake_colocd *f, int fd, struct json_object *req)
{
	char ans[512];
	const char *name = fake_str(req, "name");

	if (strcmp(fake_str(req, "cmd"), "status"))
		return fake_send(fd, "{\"ok\":true}\n", 12);
	snprintf(ans, sizeof(ans),
		 "{\"ok\":true,\"tenants\":[{\"name\":\"%.64s\",\"state\":\"ready\","
		 "\"model\":\"m\",\"input_bytes\":%zu,\"output_bytes\":%zu}]}\n",
		 name, strcmp(name, "big") ? 4 * sizeof(float) : f->big_bytes,
		 OUT_FLOATS * sizeof(float));
	return fake_send(fd, ans, strlen(ans));
}

/* The answer to query tag: its line and OUT_FLOATS outputs. 0, or -1. */
static int fake_answer(int fd, long long tag)
{
	float out[OUT_FLOATS];
	char ans[256];

	snprintf(ans, sizeof(ans),
		 "{\"tag\":%lld,\"status\":\"ok\",\"output_bytes\":%zu,\"latency_ns\":1000,"
		 "\"exec_ns\":500}\n",
		 tag, sizeof(out));
	for (int i = 0; i < OUT_FLOATS; i++)
		out[i] = 0.5f * (float)i;
	return fake_send(fd, ans, strlen(ans)) || fake_send(fd, out, sizeof(out)) ? -1 : 0;
}

/* FAKE_BATCH: answers every query in tags[] once nothing came for BATCH_IDLE_MS; 0, or -1. */
static int fake_flush_batch(struct fake_colocd *f, int fd, long long *tags, int *nr)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	if (!*nr || atomic_load(&f->hold_slow) || poll(&pfd, 1, BATCH_IDLE_MS) != 0)
		return 0;
	/* held before the answers leave: the queries they make room for are held too */
	if (atomic_exchange(&f->hold_after_batch, false))
		atomic_store(&f->hold_slow, true);
	for (int i = 0; i < *nr; i++)
		if (fake_answer(fd, tags[i]))
			return -1;
	*nr = 0;
	return 0;
}

/* One query whose line is req: 0 to go on with the connection, -1 to close it. */
static int fake_infer(struct fake_colocd *f, int fd, struct json_object *req)
{
	float out[OUT_FLOATS];
	int64_t bytes = fake_int(req, "input_bytes");
	const char *tenant = fake_str(req, "tenant");
	int mode = atomic_load(&f->mode);
	char ans[256];

	if (bytes < 0)
		return -1;
	atomic_fetch_add(&f->queries, 1);
	/* a memfd rode on the line (read() dropped it): no bytes follow */
	if (!strcmp(fake_str(req, "input"), "memfd")) {
		atomic_fetch_add(&f->memfd_queries, 1);
		bytes = 0;
	}
	if (mode == FAKE_CUT_INPUT) {
		fake_read(f, fd, NULL, bytes < 4096 ? (size_t)bytes : 4096);
		return -1;
	}
	if (fake_read(f, fd, NULL, (size_t)bytes))
		return -1;
	if (mode == FAKE_NO_ANSWER)
		return 0;
	if (!strcmp(tenant, "slow")) {
		atomic_fetch_add(&f->slow_seen, 1);
		while (atomic_load(&f->hold_slow) && !atomic_load(&f->quit))
			usleep(10000);
	} else if (!strcmp(tenant, "fast")) {
		usleep(FAST_MS * 1000);
	}
	snprintf(ans, sizeof(ans),
		 "{\"tag\":%lld,\"status\":\"ok\",\"output_bytes\":%zu,\"latency_ns\":1000,"
		 "\"exec_ns\":500}\n",
		 (long long)fake_int(req, "tag"), sizeof(out));
	if (fake_send(fd, ans, strlen(ans)))
		return -1;
	if (mode == FAKE_NO_OUTPUT)
		return 0;
	for (int i = 0; i < OUT_FLOATS; i++)
		out[i] = 0.5f * (float)i;
	if (fake_send(fd, out, sizeof(out)))
		return -1;
	if (mode == FAKE_CLOSE_AFTER) {
		atomic_store(&f->mode, FAKE_ANSWER);
		return -1;
	}
	return 0;
}

struct fake_conn {
	struct fake_colocd *f;
	int fd;
};

static void *fake_serve(void *arg)
{
	struct fake_conn *fc = arg;
	struct fake_colocd *f = fc->f;
	char line[4096];

	long long batch[BATCH_MAX];
	int nr_batch = 0;

	for (;;) {
		struct json_object *req;
		int r = -1;

		if (atomic_load(&f->mode) == FAKE_BATCH) {
			if (fake_flush_batch(f, fc->fd, batch, &nr_batch))
				break;
			if (nr_batch) {
				struct pollfd pfd = { .fd = fc->fd, .events = POLLIN };

				if (poll(&pfd, 1, 10) == 0)
					continue; /* held, or not idle long enough yet */
			}
		}
		if (fake_read_line(f, fc->fd, line, sizeof(line)))
			break;
		req = json_tokener_parse(line);
		if (req && !strcmp(fake_str(req, "cmd"), "infer") &&
		    atomic_load(&f->mode) == FAKE_BATCH && nr_batch < BATCH_MAX &&
		    !strcmp(fake_str(req, "input"), "memfd")) {
			atomic_fetch_add(&f->queries, 1);
			batch[nr_batch++] = (long long)fake_int(req, "tag");
			if (nr_batch > atomic_load(&f->most_owed))
				atomic_store(&f->most_owed, nr_batch);
			r = 0;
		} else if (req && !strcmp(fake_str(req, "cmd"), "infer"))
			r = fake_infer(f, fc->fd, req);
		else if (req)
			r = fake_control(f, fc->fd, req);
		json_object_put(req);
		if (r)
			break;
	}
	close(fc->fd);
	atomic_fetch_add(&f->closed, 1);
	free(fc);
	return NULL;
}

static void *fake_accept(void *arg)
{
	struct fake_colocd *f = arg;
	struct pollfd pfd = { .fd = f->lfd, .events = POLLIN };

	while (!atomic_load(&f->quit)) {
		struct fake_conn *fc;
		pthread_t t;
		int fd;

		if (poll(&pfd, 1, 50) <= 0)
			continue;
		fd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
		fc = fd >= 0 ? malloc(sizeof(*fc)) : NULL;
		if (!fc) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		fc->f = f;
		fc->fd = fd;
		atomic_fetch_add(&f->accepted, 1);
		if (pthread_create(&t, NULL, fake_serve, fc)) {
			close(fd);
			free(fc);
			continue;
		}
		pthread_detach(t);
	}
	return NULL;
}

static int fake_start(struct fake_colocd *f, const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };

	if (strlen(path) >= sizeof(addr.sun_path))
		return -1;
	memcpy(addr.sun_path, path, strlen(path));
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    listen(f->lfd, 64) || chmod(path, 0666))
		return -1;
	return pthread_create(&f->acceptor, NULL, fake_accept, f) ? -1 : 0;
}

static void fake_stop(struct fake_colocd *f)
{
	atomic_store(&f->quit, true);
	atomic_store(&f->hold_slow, false);
	if (f->lfd >= 0) {
		pthread_join(f->acceptor, NULL);
		close(f->lfd);
	}
	f->lfd = -1;
}

/* Waits up to s seconds for *v to reach at least want; whether it did. */
static bool wait_count(atomic_int *v, int want, int s)
{
	for (int i = 0; i < s * 100; i++) {
		if (atomic_load(v) >= want)
			return true;
		usleep(10000);
	}
	return atomic_load(v) >= want;
}

/* ---- the gateway in front of the fake, and curl ----------------------------------------- */

FIXTURE(fwd)
{
	struct gw_env env;
	struct fake_colocd fake;
	char small[192], bighdr[64], big[192];
};

static int write_repo_model(const char *repo, const char *name, size_t in_floats)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "mkdir -p '%s/%s/1' && touch '%s/%s/1/model.model'", repo,
		 name, repo, name);
	if (system(path))
		return -1;
	snprintf(path, sizeof(path), "%s/%s/config.json", repo, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f,
		"{\"qos_ms\": 1000, \"input\": [{\"name\": \"x\", \"data_type\": \"TYPE_FP32\", "
		"\"dims\": [1, %zu]}], \"output\": [{\"name\": \"y\", \"data_type\": "
		"\"TYPE_FP32\", \"dims\": [1, %d]}]}\n",
		in_floats, OUT_FLOATS);
	return fclose(f);
}

/* The binary request for "big" (all zeros) in path; its header line in hdr. */
static int write_big_request(const char *path, size_t bytes, char *hdr, size_t hdr_len)
{
	FILE *f = fopen(path, "w");
	int hlen;

	if (!f)
		return -1;
	hlen = fprintf(f,
		       "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,%zu],\"datatype\":\"FP32\","
		       "\"parameters\":{\"binary_data_size\":%zu}}]}",
		       bytes / sizeof(float), bytes);
	if (hlen < 0 || ftruncate(fileno(f), hlen + (off_t)bytes)) {
		fclose(f);
		return -1;
	}
	snprintf(hdr, hdr_len, "Inference-Header-Content-Length: %d", hlen);
	return fclose(f) ? -1 : 0;
}

FIXTURE_SETUP(fwd)
{
	long wmem_max = 0;
	FILE *f;

	memset(&self->env, 0, sizeof(self->env));
	self->fake = (struct fake_colocd){ .lfd = -1, .kept_fd = -1 };
	if (geteuid() != 0)
		SKIP(return, "needs root to run the gateway as the coloc user");
	f = fopen("/proc/sys/net/core/wmem_max", "r");
	if (f && fscanf(f, "%ld", &wmem_max) != 1)
		wmem_max = 0;
	if (f)
		fclose(f);
	if (wmem_max <= 0)
		SKIP(return, "cannot read net.core.wmem_max");
	/* the kernel doubles a send buffer asked for: twice that is sure to fill it */
	self->fake.big_bytes = (size_t)wmem_max * 4;
	if (self->fake.big_bytes > 48u << 20)
		SKIP(return, "net.core.wmem_max %ld: a send that fills it is over the body limit",
			   wmem_max);
	snprintf(self->env.dir, sizeof(self->env.dir), "/tmp/coloc-gwfault-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->env.dir));
	ASSERT_EQ(0, chmod(self->env.dir, 0755));
	snprintf(self->env.sock, sizeof(self->env.sock), "%s/colocd.sock", self->env.dir);
	snprintf(self->env.gwlog, sizeof(self->env.gwlog), "%s/gateway.log", self->env.dir);
	snprintf(self->env.repo, sizeof(self->env.repo), "%s/repo", self->env.dir);
	ASSERT_EQ(0, write_repo_model(self->env.repo, "fast", 4));
	ASSERT_EQ(0, write_repo_model(self->env.repo, "slow", 4));
	ASSERT_EQ(0, write_repo_model(self->env.repo, "big", self->fake.big_bytes / sizeof(float)));
	{ /* the gateway runs as coloc */
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "chmod -R a+rX '%s'", self->env.repo);
		ASSERT_EQ(0, system(cmd));
	}
	snprintf(self->small, sizeof(self->small), "%s/small.json", self->env.dir);
	f = fopen(self->small, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "{\"id\":\"q\",\"inputs\":[{\"name\":\"x\",\"shape\":[1,4],"
		   "\"datatype\":\"FP32\",\"data\":[1,2,3,4]}]}");
	ASSERT_EQ(0, fclose(f));
	snprintf(self->big, sizeof(self->big), "%s/big.bin", self->env.dir);
	ASSERT_EQ(0, write_big_request(self->big, self->fake.big_bytes, self->bighdr,
				       sizeof(self->bighdr)));
	ASSERT_EQ(0, fake_start(&self->fake, self->env.sock));
}

FIXTURE_TEARDOWN(fwd)
{
	if (self->env.gateway > 0 && getenv("COLOC_TEST_VERBOSE"))
		gw_env_log_gateway(&self->env);
	tu_stop_child(&self->env.gateway);
	fake_stop(&self->fake);
	if (atomic_load(&self->fake.kept_fd) >= 0)
		close(atomic_load(&self->fake.kept_fd));
	gw_env_stop(&self->env);
}

/* Starts the gateway with these flags (NULL-terminated) before the fake colocd. */
static bool start_gateway(FIXTURE_DATA(fwd) * self, const char *const *extra)
{
	if (gw_env_start_gateway(&self->env, false, extra))
		return true;
	gw_env_log_gateway(&self->env);
	return false;
}

/* curl's command for an infer of model with body (a JSON file, or the big binary one). */
static void infer_cmd(FIXTURE_DATA(fwd) * self, const char *model, int n, char *cmd, size_t len)
{
	bool big = !strcmp(model, "big");

	snprintf(cmd, len,
		 "curl -s --max-time %d -X POST --data-binary '@%s' %s%s%s -o '%s/out%d' "
		 "-w '%%{http_code}' http://127.0.0.1:%d/v2/models/%s/infer",
		 CURL_MAX_S, big ? self->big : self->small, big ? "-H '" : "",
		 big ? self->bighdr : "", big ? "'" : "", self->env.dir, n, self->env.http_port,
		 model);
}

/* One infer, waited for: the HTTP status (0: none in CURL_MAX_S); the body in out<n>. */
static int infer(FIXTURE_DATA(fwd) * self, const char *model, int n)
{
	char cmd[1024], out[64];

	infer_cmd(self, model, n, cmd, sizeof(cmd));
	tu_run(cmd, out, sizeof(out));
	return atoi(out);
}

/* One infer in a child process, its status written to code<n>: the child's pid. */
static pid_t infer_bg(FIXTURE_DATA(fwd) * self, const char *model, int n)
{
	char cmd[1024], full[1200];
	pid_t pid;

	infer_cmd(self, model, n, cmd, sizeof(cmd));
	snprintf(full, sizeof(full), "%s > '%s/code%d'", cmd, self->env.dir, n);
	pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", full, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* The status infer_bg(n) wrote, once its child is waited for. */
static int infer_bg_status(FIXTURE_DATA(fwd) * self, int n)
{
	char path[256], *text;
	size_t len;
	int code;

	snprintf(path, sizeof(path), "%s/code%d", self->env.dir, n);
	text = tu_read_file(path, &len);
	code = text ? atoi(text) : -1;
	free(text);
	return code;
}

/* Whether out<n> holds words. */
static bool body_says(FIXTURE_DATA(fwd) * self, int n, const char *words)
{
	char path[256], *text;
	size_t len;
	bool found;

	snprintf(path, sizeof(path), "%s/out%d", self->env.dir, n);
	text = tu_read_file(path, &len);
	found = text && strstr(text, words);
	if (!found)
		fprintf(stderr, "# out%d: %.500s\n", n, text ? text : "(none)");
	free(text);
	return found;
}

static int http_get(FIXTURE_DATA(fwd) * self, const char *path)
{
	char cmd[512], out[64];

	snprintf(cmd, sizeof(cmd),
		 "curl -s --max-time %d -o /dev/null -w '%%{http_code}' http://127.0.0.1:%d%s",
		 CURL_MAX_S, self->env.http_port, path);
	tu_run(cmd, out, sizeof(out));
	return atoi(out);
}

/* The infer requests over HTTP for model the gateway's metrics count, or -1. */
static long http_requests(FIXTURE_DATA(fwd) * self, const char *model)
{
	char cmd[512], out[64];

	snprintf(cmd, sizeof(cmd),
		 "curl -s --max-time %d http://127.0.0.1:%d/metrics | sed -n "
		 "'s/^coloc_gateway_requests_total{model=\"%s\",.*protocol=\"http\"} //p'",
		 CURL_MAX_S, self->env.metrics_port, model);
	if (tu_run(cmd, out, sizeof(out)) || !out[0])
		return -1;
	return atol(out);
}

/* Waits up to s seconds until the gateway has had at least want requests for model. */
static bool wait_http_requests(FIXTURE_DATA(fwd) * self, const char *model, long want, int s)
{
	for (int i = 0; i < s * 10; i++) {
		if (http_requests(self, model) >= want)
			return true;
		usleep(100000);
	}
	return http_requests(self, model) >= want;
}

/* Inputs go in memfds by default, and on the socket with --colocd-socket-copy. */
TEST_F_TIMEOUT(fwd, input__in_a_memfd_by_default_on_the_socket_when_asked, 120)
{
	const char *copy[] = { "--colocd-socket-copy", NULL };
	int queries, memfds;

	ASSERT_TRUE(start_gateway(self, NULL));
	queries = atomic_load(&self->fake.queries);
	memfds = atomic_load(&self->fake.memfd_queries);
	EXPECT_EQ(200, infer(self, "fast", 1)); /* JSON: the pool's memfd */
	EXPECT_EQ(200, infer(self, "big", 2)); /* binary: the body's own memfd */
	EXPECT_EQ(queries + 2, atomic_load(&self->fake.queries));
	EXPECT_EQ(memfds + 2, atomic_load(&self->fake.memfd_queries));
	tu_stop_child(&self->env.gateway);
	ASSERT_TRUE(start_gateway(self, copy));
	queries = atomic_load(&self->fake.queries);
	memfds = atomic_load(&self->fake.memfd_queries);
	EXPECT_EQ(200, infer(self, "fast", 3));
	EXPECT_EQ(200, infer(self, "big", 4));
	EXPECT_EQ(queries + 2, atomic_load(&self->fake.queries));
	EXPECT_EQ(memfds, atomic_load(&self->fake.memfd_queries));
}

/* (the input on the socket: a colocd that stops reading stalls the send) */
TEST_F_TIMEOUT(fwd, send__colocd_not_reading_is_answered_504_and_its_connection_closed, 120)
{
	const char *flags[] = { "--connections",       "1",    "--timeout-ms",	       "120000",
				"--colocd-timeout-ms", "1000", "--colocd-socket-copy", NULL };
	int accepted, status;
	pid_t stuck;

	ASSERT_TRUE(start_gateway(self, flags));
	accepted = atomic_load(&self->fake.accepted);
	atomic_store(&self->fake.mode, FAKE_NO_READ);
	stuck = infer_bg(self, "big", 1);
	ASSERT_LT(0, stuck);
	/* meanwhile the gateway serves what needs no colocd */
	EXPECT_EQ(200, http_get(self, "/v2/models/big"));
	EXPECT_EQ(200, http_get(self, "/v2/health/live"));
	ASSERT_EQ(stuck, waitpid(stuck, &status, 0));
	/* the 504 came from --colocd-timeout-ms: curl gives up long before --timeout-ms */
	EXPECT_EQ(504, infer_bg_status(self, 1));
	EXPECT_TRUE(body_says(self, 1, "timed out and closed"));
	/* the stalled connection is closed: the fake, reading again, sees its end */
	atomic_store(&self->fake.mode, FAKE_ANSWER);
	EXPECT_TRUE(wait_count(&self->fake.closed, 1, CURL_MAX_S));
	EXPECT_EQ(200, infer(self, "fast", 2));
	EXPECT_TRUE(body_says(self, 2, "\"id\":\"q\""));
	EXPECT_LT(accepted, atomic_load(&self->fake.accepted));
}

TEST_F_TIMEOUT(fwd, receive__output_never_coming_is_answered_504_and_its_connection_closed, 120)
{
	const char *flags[] = {
		"--connections", "1", "--timeout-ms", "120000", "--colocd-timeout-ms", "1000", NULL
	};

	ASSERT_TRUE(start_gateway(self, flags));
	atomic_store(&self->fake.mode, FAKE_NO_OUTPUT);
	EXPECT_EQ(504, infer(self, "fast", 1));
	EXPECT_TRUE(body_says(self, 1, "timed out and closed"));
	EXPECT_TRUE(wait_count(&self->fake.closed, 1, CURL_MAX_S));
	atomic_store(&self->fake.mode, FAKE_ANSWER);
	EXPECT_EQ(200, infer(self, "fast", 2));
}

TEST_F_TIMEOUT(fwd, answer__colocd_silent_is_answered_504_at_the_timeout, 120)
{
	const char *flags[] = { "--connections", "1", "--timeout-ms", "2000", NULL };

	ASSERT_TRUE(start_gateway(self, flags));
	atomic_store(&self->fake.mode, FAKE_NO_ANSWER);
	EXPECT_EQ(504, infer(self, "fast", 1));
	EXPECT_TRUE(body_says(self, 1, "did not answer in time"));
	atomic_store(&self->fake.mode, FAKE_ANSWER);
	EXPECT_EQ(200, infer(self, "fast", 2));
}

/*
 * colocd keeps the input memfd of a query the gateway gave up on (it reads
 * it when the query gets a slot): the gateway must never put another
 * query's input in it. Fails where the gateway pools that memfd again.
 */
TEST_F_TIMEOUT(fwd, input__a_memfd_colocd_may_still_read_never_carries_another_input, 120)
{
	const char *flags[] = { "--connections", "1", "--timeout-ms", "2000", NULL };
	float before[4], after[4];
	char other[sizeof(self->small)];
	FILE *f;
	int fd;

	ASSERT_GT((int)sizeof(other), snprintf(other, sizeof(other), "%s/other.json", self->env.dir));
	f = fopen(other, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "{\"id\":\"q\",\"inputs\":[{\"name\":\"x\",\"shape\":[1,4],"
		   "\"datatype\":\"FP32\",\"data\":[5,6,7,8]}]}");
	ASSERT_EQ(0, fclose(f));
	ASSERT_TRUE(start_gateway(self, flags));
	atomic_store(&self->fake.keep_memfd, true);
	atomic_store(&self->fake.mode, FAKE_NO_ANSWER);
	EXPECT_EQ(504, infer(self, "fast", 1));
	fd = atomic_load(&self->fake.kept_fd);
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)sizeof(before), pread(fd, before, sizeof(before), 0));
	EXPECT_EQ(1.0f, before[0]);
	atomic_store(&self->fake.mode, FAKE_ANSWER);
	snprintf(self->small, sizeof(self->small), "%s", other);
	for (int i = 0; i < 3; i++)
		EXPECT_EQ(200, infer(self, "fast", 2 + i));
	ASSERT_EQ((ssize_t)sizeof(after), pread(fd, after, sizeof(after), 0));
	EXPECT_EQ(0, memcmp(before, after, sizeof(before)))
	TH_LOG("the kept memfd now holds %g %g %g %g", after[0], after[1], after[2], after[3]);
}

TEST_F_TIMEOUT(fwd, pick__no_query_waits_behind_a_borrowed_slow_one, 180)
{
	const char *flags[] = { "--connections", "2", "--timeout-ms", "120000", NULL };
	pid_t slow, fast[NR_FAST];
	int status, done = 0, seen;

	ASSERT_TRUE(start_gateway(self, flags));
	atomic_store(&self->fake.hold_slow, true);
	seen = atomic_load(&self->fake.slow_seen); /* the warm-up's */
	slow = infer_bg(self, "slow", 0);
	ASSERT_LT(0, slow);
	/* held on the connection it borrowed, both being idle */
	ASSERT_TRUE(wait_count(&self->fake.slow_seen, seen + 1, CURL_MAX_S));
	for (int i = 0; i < NR_FAST; i++) {
		fast[i] = infer_bg(self, "fast", i + 1);
		ASSERT_LT(0, fast[i]);
	}
	/* every fast query is answered while the slow one is still held */
	for (int i = 0; i < NR_FAST; i++)
		if (waitpid(fast[i], &status, 0) == fast[i] && infer_bg_status(self, i + 1) == 200)
			done++;
	EXPECT_EQ(NR_FAST, done);
	EXPECT_EQ(0, waitpid(slow, &status, WNOHANG));
	atomic_store(&self->fake.hold_slow, false);
	ASSERT_EQ(slow, waitpid(slow, &status, 0));
	EXPECT_EQ(200, infer_bg_status(self, 0));
}

/*
 * A query waiting for a connection (the only one borrowed by a send that
 * colocd stalls) ends at its own deadline, while the borrower is still
 * stuck, not when the connection is given back.
 */
TEST_F_TIMEOUT(fwd, wait__a_query_waiting_for_a_connection_expires_on_time, 120)
{
	const char *flags[] = { "--connections",       "1",	"--timeout-ms",		"1500",
				"--colocd-timeout-ms", "60000", "--colocd-socket-copy", NULL };
	pid_t stuck;
	int status;

	ASSERT_TRUE(start_gateway(self, flags));
	atomic_store(&self->fake.mode, FAKE_NO_READ);
	stuck = infer_bg(self, "big", 1);
	ASSERT_LT(0, stuck);
	/* the big send borrowed the one connection and stalls: the fake holds its bytes */
	ASSERT_TRUE(wait_count(&self->fake.unread, (int)(self->fake.big_bytes / 4), CURL_MAX_S));
	EXPECT_EQ(504, infer(self, "fast", 2));
	EXPECT_TRUE(body_says(self, 2, "timed out in the gateway's queue"));
	/* answered while the borrower's send is still stuck */
	EXPECT_EQ(0, waitpid(stuck, &status, WNOHANG));
	atomic_store(&self->fake.mode, FAKE_ANSWER);
	ASSERT_EQ(stuck, waitpid(stuck, &status, 0));
	EXPECT_EQ(200, infer(self, "fast", 3));
}

/*
 * --colocd-pipeline: a connection carries at most that many queries colocd
 * has not answered (colocd reads no more of a connection owed
 * COLOC_MAX_INFLIGHT); the rest wait in the gateway and all are answered.
 *
 * The first query borrows the one connection (gw_fwd_run), which carries
 * nothing else until it is answered: the pipeline can fill only after
 * that. So the fake answers it alone, once every query is in the gateway,
 * and holds the next batch: the connection fills to 3, and no more.
 */
TEST_F_TIMEOUT(fwd, pipeline__a_connection_carries_at_most_its_pipeline_of_queries, 120)
{
	const char *flags[] = { "--connections", "1", "--colocd-pipeline", "3", NULL };
	pid_t q[NR_FAST + 1];
	int status, answered = 0;

	ASSERT_TRUE(start_gateway(self, flags));
	atomic_store(&self->fake.hold_slow, true);
	atomic_store(&self->fake.mode, FAKE_BATCH);
	/* the first borrows the one connection and is held there */
	q[0] = infer_bg(self, "fast", 0);
	ASSERT_LT(0, q[0]);
	ASSERT_TRUE(wait_count(&self->fake.most_owed, 1, CURL_MAX_S));
	/* the others wait for it in the gateway, then go pipelined */
	for (int i = 1; i <= NR_FAST; i++) {
		q[i] = infer_bg(self, "fast", i);
		ASSERT_LT(0, q[i]);
	}
	ASSERT_TRUE(wait_http_requests(self, "fast", NR_FAST + 1, CURL_MAX_S));
	/* the first answered alone; the batch after it held */
	atomic_store(&self->fake.hold_after_batch, true);
	atomic_store(&self->fake.hold_slow, false);
	/* it did pipeline: the connection filled to its pipeline while 5 more waited */
	ASSERT_TRUE(wait_count(&self->fake.most_owed, 3, CURL_MAX_S));
	atomic_store(&self->fake.hold_slow, false);
	for (int i = 0; i <= NR_FAST; i++)
		if (waitpid(q[i], &status, 0) == q[i] && infer_bg_status(self, i) == 200)
			answered++;
	EXPECT_EQ(NR_FAST + 1, answered);
	EXPECT_LE(atomic_load(&self->fake.most_owed), 3);
}

TEST_F_TIMEOUT(fwd, retry__a_query_colocd_cannot_have_goes_again_on_a_fresh_connection, 120)
{
	const char *flags[] = { "--connections", "1", NULL };
	int accepted, queries;

	ASSERT_TRUE(start_gateway(self, flags));
	atomic_store(&self->fake.mode, FAKE_CLOSE_AFTER);
	EXPECT_EQ(200, infer(self, "fast", 1));
	ASSERT_TRUE(wait_count(&self->fake.closed, 1, CURL_MAX_S));
	accepted = atomic_load(&self->fake.accepted);
	queries = atomic_load(&self->fake.queries);
	/* the idle connection colocd closed takes not a byte: sent again, once */
	EXPECT_EQ(200, infer(self, "fast", 2));
	EXPECT_EQ(accepted + 1, atomic_load(&self->fake.accepted));
	EXPECT_EQ(queries + 1, atomic_load(&self->fake.queries));
}

TEST_F_TIMEOUT(fwd, retry__a_query_partly_sent_is_answered_not_sent_again, 120)
{
	const char *flags[] = { "--connections", "1", "--colocd-socket-copy", NULL };
	int queries;

	ASSERT_TRUE(start_gateway(self, flags));
	EXPECT_EQ(200, infer(self, "fast", 1));
	queries = atomic_load(&self->fake.queries);
	atomic_store(&self->fake.mode, FAKE_CUT_INPUT);
	EXPECT_EQ(502, infer(self, "big", 2));
	EXPECT_TRUE(body_says(self, 2, "connection lost"));
	/* colocd saw the query's line once: the gateway did not send it again */
	usleep(200000);
	EXPECT_EQ(queries + 1, atomic_load(&self->fake.queries));
	atomic_store(&self->fake.mode, FAKE_ANSWER);
	EXPECT_EQ(200, infer(self, "fast", 3));
}

TEST_HARNESS_MAIN
