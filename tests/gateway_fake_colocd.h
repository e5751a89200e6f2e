/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A fake colocd for the gateway's tests against a colocd that misbehaves
 * (gateway_faults_test.c) and against hostile clients and answers
 * (gateway_hostile_test.c): a real Unix socket served by the test's
 * threads, speaking just enough of protocol.h (submit, status, infer) to
 * get models loaded, then misbehaving as a test asks (enum fake_mode); and
 * the fixture that starts the real gateway, as the `coloc` user, in front
 * of it, with curl to drive it. Include after kselftest_harness.h.
 *
 * Tenants: "fast" and "slow" (4 floats in, 10 out; "fast" answers after
 * FAST_MS, "slow" is held while the test says so) and "big", whose input
 * is larger than the socket's largest send buffer, so that a colocd that
 * stops reading stalls the gateway's send; "mn", when a test writes it into
 * the repository, takes MobileNet-V2's input (MN_FLOATS).
 */
#ifndef COLOC_TESTS_GATEWAY_FAKE_COLOCD_H
#define COLOC_TESTS_GATEWAY_FAKE_COLOCD_H

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
#include "testutil.h"
#include "gateway_fixture.h"

#define OUT_FLOATS 10
#define FAST_MS 200
#define CURL_MAX_S 30 /* a hung request fails here, long before the harness's timeout */
#define NR_FAST 8
#define MN_FLOATS (3 * 224 * 224)
#define WIDE_FLOATS (1u << 20) /* model "wide"'s output, a segmentation's 4 MiB */

enum fake_mode {
	FAKE_ANSWER, /* read the query, answer it */
	FAKE_NO_READ, /* read nothing more */
	FAKE_NO_ANSWER, /* read the query, never answer */
	FAKE_NO_OUTPUT, /* read the query, answer its line but not its output */
	FAKE_CUT_INPUT, /* read the line and a little of the input, then close */
	FAKE_CLOSE_AFTER, /* answer, close that connection, go back to FAKE_ANSWER */
	FAKE_BAD_ANSWER, /* read the query, answer bad_line (its tag in %lld); then, when
			  * endless, bytes without a newline until the gateway stops reading */
	FAKE_BATCH, /* read queries, answer them all once none came for BATCH_IDLE_MS (not
		     * while hold_slow; hold_after_batch: hold again after this batch) */
	FAKE_REJECT, /* read the query, refuse it with reject_why */
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
	atomic_long memfd_offset; /* the last such query's input_offset */
	atomic_int unread; /* the most bytes seen waiting on a connection in FAKE_NO_READ */
	atomic_int most_owed; /* the most queries one connection had unanswered in FAKE_BATCH */
	const char *bad_line; /* FAKE_BAD_ANSWER's line, a format with one %lld: the tag */
	const char *reject_why; /* FAKE_REJECT's error (no quote, no backslash) */
	atomic_bool endless;
	atomic_long endless_sent; /* bytes of the endless line the gateway took */
	atomic_bool keep_memfd; /* keep the next input memfd in kept_fd, as colocd would */
	atomic_int kept_fd;
	/* a tenant there before the gateway, of taken_owner and said to run taken_model */
	const char *taken, *taken_model;
	int taken_owner;
	atomic_int taken_state; /* FAKE_TAKEN_*: its submits are "exists" while it is there */
	atomic_int removes; /* of taken */
};

enum { FAKE_TAKEN_NONE, FAKE_TAKEN_THERE, FAKE_TAKEN_REMOVED };

/* Waits until fd is readable, polling f->quit and NO_READ; 1, or 0 to give up. */
static inline int fake_wait_readable(struct fake_colocd *f, int fd)
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
static inline ssize_t fake_recv(struct fake_colocd *f, int fd, char *buf, size_t len)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctl, .msg_controllen = sizeof(ctl)
	};
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
static inline int fake_read(struct fake_colocd *f, int fd, char *buf, size_t len)
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

static inline int fake_read_line(struct fake_colocd *f, int fd, char *line, size_t cap)
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

static inline int fake_send(int fd, const void *buf, size_t len)
{
	return send(fd, buf, len, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

static inline const char *fake_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "";
}

static inline int64_t fake_int(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : -1;
}

/* A tenant name without the "UID:" a gateway run as root puts before it. */
static inline const char *fake_unqualified(const char *tenant)
{
	const char *colon = strchr(tenant, ':');

	return colon ? colon + 1 : tenant;
}

/* The model a tenant name stands for: its part after a --tenant-prefix's last '.'. */
static inline const char *fake_model(const char *tenant)
{
	const char *dot = strrchr(fake_unqualified(tenant), '.');

	return dot ? dot + 1 : fake_unqualified(tenant);
}

/* The uid of the peer on fd: as colocd, the owner of the tenants it makes. */
static inline int fake_peer_uid(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ? -1 : (int)cred.uid;
}

/* The output bytes of the model named name: "wide"'s WIDE_FLOATS, any other's OUT_FLOATS. */
static inline size_t fake_out_bytes(const char *name)
{
	return (strcmp(name, "wide") ? OUT_FLOATS : WIDE_FLOATS) * sizeof(float);
}

/*
 * A control request's answer: submit and remove are fine, status says ready
 * (a status of no tenant, as coloc-load asks, is "fast"'s); but taken's
 * submit is "exists" until it is removed, and its status then "no tenant".
 */
static inline int fake_control(struct fake_colocd *f, int fd, struct json_object *req)
{
	char ans[1024];
	const char *name = fake_str(req, "name")[0] ? fake_unqualified(fake_str(req, "name")) : "fast";
	const char *cmd = fake_str(req, "cmd"), *model = fake_model(name);
	size_t in = !strcmp(model, "big") ? f->big_bytes :
		    !strcmp(model, "mn")  ? MN_FLOATS * sizeof(float) :
					    4 * sizeof(float);
	bool taken = f->taken && !strcmp(name, f->taken);
	int state = taken ? atomic_load(&f->taken_state) : FAKE_TAKEN_NONE;

	if (state == FAKE_TAKEN_THERE && !strcmp(cmd, "submit"))
		snprintf(ans, sizeof(ans),
			 "{\"ok\":false,\"error\":\"tenant %.64s exists; remove it first\"}\n",
			 name);
	else if (state == FAKE_TAKEN_REMOVED && !strcmp(cmd, "status"))
		snprintf(ans, sizeof(ans), "{\"ok\":false,\"error\":\"no tenant named '%.64s'\"}\n",
			 name);
	else if (strcmp(cmd, "status"))
		snprintf(ans, sizeof(ans), "{\"ok\":true}\n");
	else
		snprintf(ans, sizeof(ans),
			 "{\"ok\":true,\"tenants\":[{\"name\":\"%.64s\",\"state\":\"ready\","
			 "\"owner\":%d,\"model\":\"%.600s\",\"input_bytes\":%zu,"
			 "\"output_bytes\":%zu}]}\n",
			 name, state == FAKE_TAKEN_THERE ? f->taken_owner : fake_peer_uid(fd),
			 state == FAKE_TAKEN_THERE ? f->taken_model : "m", in, fake_out_bytes(model));
	if (taken && !strcmp(cmd, "remove")) {
		atomic_fetch_add(&f->removes, 1);
		atomic_store(&f->taken_state, FAKE_TAKEN_REMOVED);
	}
	if (taken && !strcmp(cmd, "submit") && state != FAKE_TAKEN_THERE)
		atomic_store(&f->taken_state, FAKE_TAKEN_NONE);
	return fake_send(fd, ans, strlen(ans));
}

/* The answer to query tag: its line and OUT_FLOATS outputs. 0, or -1. */
static inline int fake_answer(int fd, long long tag)
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
static inline int fake_flush_batch(struct fake_colocd *f, int fd, long long *tags, int *nr)
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

/*
 * Runs tests/gateway/grpc_hostile.py (Debian's python3 and grpcio) against
 * the gRPC port with args; its exit status, its output in out.
 */
static inline int gw_grpc_hostile(int port, const char *args, char *out, size_t len)
{
	const char *root = getenv("COLOC_ROOT") ? getenv("COLOC_ROOT") : ".";
	char cmd[1024];

	snprintf(cmd, sizeof(cmd),
		 "timeout 300 /usr/bin/python3 '%s/tests/gateway/grpc_hostile.py' 127.0.0.1:%d %s "
		 "2>&1",
		 root, port, args);
	return tu_run(cmd, out, len);
}

/* What fd received within ms into buf (NUL-terminated); whether it was then closed (EOF or reset). */
static inline bool gw_closed_within(int fd, int ms, char *buf, size_t len)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t got = 0;

	buf[0] = '\0';
	while (poll(&p, 1, ms) > 0) {
		ssize_t n = recv(fd, buf + got, len - 1 - got, MSG_DONTWAIT);

		if (n <= 0)
			return n == 0 || errno == ECONNRESET;
		got += (size_t)n;
		buf[got] = '\0';
		if (got == len - 1)
			got = 0;
	}
	return false;
}

/*
 * Reads fd until what it sent holds needle (true), or it closes or ms pass
 * (false); what it sent in buf.
 */
static inline bool gw_answered_within(int fd, const char *needle, int ms, char *buf, size_t len)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	long long end = (long long)coloc_now_ns() + ms * 1000000LL;
	size_t got = 0;

	buf[0] = '\0';
	while (!strstr(buf, needle) && got + 1 < len) {
		long long left = (end - (long long)coloc_now_ns()) / 1000000;
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return false;
		n = recv(fd, buf + got, len - 1 - got, MSG_DONTWAIT);
		if (n <= 0)
			return false;
		got += (size_t)n;
		buf[got] = '\0';
	}
	return strstr(buf, needle);
}

/*
 * FAKE_BAD_ANSWER: bad_line for query tag, then the endless line if asked,
 * or else nothing more until the gateway closes the connection; -1.
 */
static inline int fake_bad_answer(struct fake_colocd *f, int fd, long long tag)
{
	static const char junk[1 << 16] = { [0 ...(1 << 16) - 1] = 'x' };
	char ans[512];

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral" /* the tests' own literals */
	snprintf(ans, sizeof(ans), f->bad_line, tag);
#pragma GCC diagnostic pop
	if (fake_send(fd, ans, strlen(ans)))
		return -1;
	while (!atomic_load(&f->endless) && !atomic_load(&f->quit)) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		char sink[4096];

		if (poll(&pfd, 1, 50) > 0 && recv(fd, sink, sizeof(sink), 0) <= 0)
			return -1;
	}
	while (atomic_load(&f->endless) && !atomic_load(&f->quit)) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		ssize_t n;

		if (poll(&pfd, 1, 50) <= 0)
			continue;
		if (pfd.revents & (POLLERR | POLLHUP))
			break;
		n = send(fd, junk, sizeof(junk), MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN)
			break;
		if (n > 0)
			atomic_fetch_add(&f->endless_sent, n);
	}
	return -1;
}

/* One query whose line is req: 0 to go on with the connection, -1 to close it. */
static inline int fake_infer(struct fake_colocd *f, int fd, struct json_object *req)
{
	float out[OUT_FLOATS];
	int64_t bytes = fake_int(req, "input_bytes");
	const char *tenant = fake_model(fake_str(req, "tenant"));
	int mode = atomic_load(&f->mode);
	char ans[256];

	if (bytes < 0)
		return -1;
	atomic_fetch_add(&f->queries, 1);
	/* a memfd rode on the line (read() dropped it): no bytes follow */
	if (!strcmp(fake_str(req, "input"), "memfd")) {
		atomic_fetch_add(&f->memfd_queries, 1);
		atomic_store(&f->memfd_offset, (long)fake_int(req, "input_offset"));
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
	if (mode == FAKE_BAD_ANSWER)
		return fake_bad_answer(f, fd, (long long)fake_int(req, "tag"));
	if (mode == FAKE_REJECT) {
		snprintf(ans, sizeof(ans), "{\"tag\":%lld,\"status\":\"rejected\",\"error\":\"%s\"}\n",
			 (long long)fake_int(req, "tag"), f->reject_why);
		return fake_send(fd, ans, strlen(ans));
	}
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
		 (long long)fake_int(req, "tag"), fake_out_bytes(tenant));
	if (fake_send(fd, ans, strlen(ans)))
		return -1;
	if (mode == FAKE_NO_OUTPUT)
		return 0;
	for (int i = 0; i < OUT_FLOATS; i++)
		out[i] = 0.5f * (float)i;
	if (!strcmp(tenant, "wide")) {
		static float wide[WIDE_FLOATS];

		for (size_t i = 0; i < WIDE_FLOATS; i++)
			wide[i] = -1.17549435e-38f * (float)(i % 7 + 1);
		if (fake_send(fd, wide, sizeof(wide)))
			return -1;
	} else if (fake_send(fd, out, sizeof(out))) {
		return -1;
	}
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

static inline void *fake_serve(void *arg)
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

static inline void *fake_accept(void *arg)
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

static inline int fake_start(struct fake_colocd *f, const char *path)
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

static inline void fake_stop(struct fake_colocd *f)
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
static inline bool wait_count(atomic_int *v, int want, int s)
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

static inline int write_repo_model_out(const char *repo, const char *name, size_t in_floats,
					size_t out_floats)
{
	char path[640];
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
		"\"TYPE_FP32\", \"dims\": [1, %zu]}]}\n",
		in_floats, out_floats);
	return fclose(f);
}

static inline int write_repo_model(const char *repo, const char *name, size_t in_floats)
{
	return write_repo_model_out(repo, name, in_floats, OUT_FLOATS);
}

/* The binary request for "big" (all zeros) in path; its header line in hdr. */
static inline int write_big_request(const char *path, size_t bytes, char *hdr, size_t hdr_len)
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
static inline bool start_gateway(FIXTURE_DATA(fwd) * self, const char *const *extra)
{
	if (gw_env_start_gateway(&self->env, false, extra))
		return true;
	gw_env_log_gateway(&self->env);
	return false;
}

/* curl's command for an infer of model with body (a JSON file, or the big binary one). */
static inline void infer_cmd(FIXTURE_DATA(fwd) * self, const char *model, int n, char *cmd,
			     size_t len)
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
static inline int infer(FIXTURE_DATA(fwd) * self, const char *model, int n)
{
	char cmd[1024], out[64];

	infer_cmd(self, model, n, cmd, sizeof(cmd));
	tu_run(cmd, out, sizeof(out));
	return atoi(out);
}

/* One infer in a child process, its status written to code<n>: the child's pid. */
static inline pid_t infer_bg(FIXTURE_DATA(fwd) * self, const char *model, int n)
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
static inline int infer_bg_status(FIXTURE_DATA(fwd) * self, int n)
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

/* Whether out<n> holds needle (or, with absent, does not); what it holds printed when not. */
static inline bool body_has(FIXTURE_DATA(fwd) * self, int n, const char *needle, bool absent)
{
	char path[256], *text;
	size_t len;
	bool found;

	snprintf(path, sizeof(path), "%s/out%d", self->env.dir, n);
	text = tu_read_file(path, &len);
	found = text && strstr(text, needle);
	if (found == absent)
		fprintf(stderr, "# out%d: %.600s\n", n, text ? text : "(none)");
	free(text);
	return found != absent;
}

/* Whether the gateway's log holds words. */
static inline bool log_says(FIXTURE_DATA(fwd) * self, const char *words)
{
	size_t len;
	char *log = tu_read_file(self->env.gwlog, &len);
	bool found = log && strstr(log, words);

	if (!found)
		fprintf(stderr, "# no '%s' in the gateway's log: %.600s\n", words, log ? log : "");
	free(log);
	return found;
}

/* Whether out<n> holds words. */
static inline bool body_says(FIXTURE_DATA(fwd) * self, int n, const char *words)
{
	return body_has(self, n, words, false);
}

static inline int http_get(FIXTURE_DATA(fwd) * self, const char *path)
{
	char cmd[512], out[64];

	snprintf(cmd, sizeof(cmd),
		 "curl -s --max-time %d -o /dev/null -w '%%{http_code}' http://127.0.0.1:%d%s",
		 CURL_MAX_S, self->env.http_port, path);
	tu_run(cmd, out, sizeof(out));
	return atoi(out);
}

/* curl's POST of an empty body to path; the HTTP status, the answer in out<n>. */
static inline int post_empty(FIXTURE_DATA(fwd) * self, const char *path, int n)
{
	char cmd[1024], out[64];

	snprintf(cmd, sizeof(cmd),
		 "curl -s --max-time %d -X POST -d '' -o '%s/out%d' -w '%%{http_code}' "
		 "http://127.0.0.1:%d%s",
		 CURL_MAX_S * 4, self->env.dir, n, self->env.http_port, path);
	tu_run(cmd, out, sizeof(out));
	return atoi(out);
}

/* The infer requests for model through protocol ("http", "grpc") the gateway counts, or -1. */
static inline long gw_requests(FIXTURE_DATA(fwd) * self, const char *model, const char *protocol)
{
	char cmd[512], out[64];

	snprintf(cmd, sizeof(cmd),
		 "curl -s --max-time %d http://127.0.0.1:%d/metrics | sed -n "
		 "'s/^coloc_gateway_requests_total{model=\"%s\",.*protocol=\"%s\"} //p'",
		 CURL_MAX_S, self->env.metrics_port, model, protocol);
	if (tu_run(cmd, out, sizeof(out)) || !out[0])
		return -1;
	return atol(out);
}

/* Waits up to s seconds until the gateway has had at least want requests for model. */
static inline bool wait_http_requests(FIXTURE_DATA(fwd) * self, const char *model, long want, int s)
{
	for (int i = 0; i < s * 10; i++) {
		if (gw_requests(self, model, "http") >= want)
			return true;
		usleep(100000);
	}
	return gw_requests(self, model, "http") >= want;
}

#endif /* COLOC_TESTS_GATEWAY_FAKE_COLOCD_H */
