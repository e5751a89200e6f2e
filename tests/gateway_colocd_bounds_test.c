// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-gateway's forwarding pool against a real colocd's bounds on the
 * answers it holds unsent (review s18 MEDIUM 1): colocd cuts a connection
 * past 64 MiB of unread answers on it or over its uid's connections, and
 * the gateway is one uid for all its clients. 64 clients at once of a
 * model with 4 MiB outputs (a 16x16 image resized to 512x512, 4 channels)
 * and a victim of another model meanwhile: the pool owes colocd at most
 * half of each bound (common/out_bounds.h), so colocd cuts nothing, no
 * query fails 502, and every answer is its own query's (each sends an
 * image of one value, which the resize and the max-pool keep). A real
 * colocd (tests/gateway_fixture.h), the gateway as `coloc`, raw HTTP from
 * 8 loopback addresses.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include "kselftest_harness.h"
#include "testutil.h"
#include "gateway_fixture.h"

#define CLIENTS 64
#define ROUNDS 3 /* queries of each client, one after another */
#define ADDRS 8 /* client addresses, 127.0.0.2 on: 8 clients each */
#define IN_FLOATS (4 * 16 * 16)
#define BIG_FLOATS (4 * 512 * 512) /* 4 MiB: a quarter of colocd's output slot */
#define SMALL_FLOATS (4 * 8 * 8)
#define IO_TIMEOUT_S 300

static char cache_dir[64];

__attribute__((constructor)) static void make_cache_dir(void)
{
	tu_shared_tmpdir("gateway-bounds-test", cache_dir, sizeof(cache_dir));
}

FIXTURE(bounds)
{
	struct gw_env env;
};

/* Model name in the repository: the layer that makes its output from the 1x4x16x16 input. */
static int write_model(const struct gw_env *e, const char *name, const char *layer,
		       const char *out_dims, char *why, size_t len)
{
	char path[PATH_MAX], cmd[3 * PATH_MAX], out[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/1", e->repo, name);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
	if (tu_run(cmd, out, sizeof(out)))
		return snprintf(why, len, "%.3000s", out), -1;
	snprintf(path, sizeof(path), "%s/%s/1/model.model", e->repo, name);
	f = fopen(path, "w");
	if (!f)
		return snprintf(why, len, "cannot write %.900s", path), -1;
	fprintf(f, "model %s\nseed 1\nmacs 0\nparams 0\ninput x shape=1x4x16x16\n%s\nend\n", name,
		layer);
	if (fclose(f))
		return snprintf(why, len, "cannot write %.900s", path), -1;
	/* its profile where colocd looks for it */
	snprintf(cmd, sizeof(cmd),
		 "%s '%s' -o '%s/%s.profile' --iters 1 --levels 50 --force --cache-dir '%s'",
		 tu_bin("coloc-profile", out, sizeof(out)), path, e->dir, name, cache_dir);
	if (tu_run(cmd, out, sizeof(out)))
		return snprintf(why, len, "coloc-profile %s: %.3000s", name, out), -1;
	snprintf(path, sizeof(path), "%s/%s/config.json", e->repo, name);
	f = fopen(path, "w");
	if (!f)
		return snprintf(why, len, "cannot write %.900s", path), -1;
	fprintf(f,
		"{\"qos_ms\": 60000, \"input\": [{\"name\": \"x\", \"data_type\": \"TYPE_FP32\", "
		"\"dims\": [1, 4, 16, 16]}], \"output\": [{\"name\": \"y\", \"data_type\": "
		"\"TYPE_FP32\", \"dims\": [%s]}]}\n",
		out_dims);
	return fclose(f) ? (snprintf(why, len, "cannot write %.900s", path), -1) : 0;
}

FIXTURE_SETUP(bounds)
{
	/* no query's deadline on a loaded machine under ASan: 192 outputs of 4 MiB take a while */
	const char *flags[] = { "--http-max-buffer-bytes", "1073741824", "--timeout-ms", "240000",
				"--http-request-timeout-ms", "240000", NULL };
	char why[4096], cmd[PATH_MAX];
	int ret = gw_env_start_colocd(&self->env, "gwbounds", cache_dir, 60000, why, sizeof(why));

	if (ret > 0)
		SKIP(return, "%.900s", why);
	ASSERT_EQ(0, ret) TH_LOG("%s", why);
	ASSERT_EQ(0, write_model(&self->env, "big", "resize r mode=nearest out=512x512",
				 "1, 4, 512, 512", why, sizeof(why)))
	TH_LOG("%s", why);
	ASSERT_EQ(0, write_model(&self->env, "small", "pool p kind=max k=2 stride=2", "1, 4, 8, 8",
				 why, sizeof(why)))
	TH_LOG("%s", why);
	snprintf(cmd, sizeof(cmd), "chmod -R a+rX '%s'", self->env.repo);
	ASSERT_EQ(0, system(cmd));
	ASSERT_TRUE(gw_env_start_gateway(&self->env, false, flags))
	gw_env_log_gateway(&self->env);
}

FIXTURE_TEARDOWN(bounds)
{
	if (gw_env_stop(&self->env))
		TH_LOG("could not remove %s", self->env.dir);
}

struct client {
	int port, id;
	const char *model;
	size_t out_floats;
	const atomic_bool *stop; /* NULL: ROUNDS queries; else until it is set */
	int ok, bad_gateway, other, wrong; /* answers: 200 and right, 502, another status, wrong */
	int odd_status; /* the last status neither 200 nor 502 (-1: no answer) */
};

/* A connection from 127.0.0.(2 + id % ADDRS) to the gateway, or -1. */
static int client_connect(const struct client *c)
{
	struct sockaddr_in me = { .sin_family = AF_INET }, to = me;
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	char addr[32];

	snprintf(addr, sizeof(addr), "127.0.0.%d", 2 + c->id % ADDRS);
	inet_pton(AF_INET, addr, &me.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
	to.sin_port = htons((uint16_t)c->port);
	if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
			setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
			bind(fd, (struct sockaddr *)&me, sizeof(me)) ||
			connect(fd, (struct sockaddr *)&to, sizeof(to)))) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * One binary infer of c's model whose input is all value, its answer read
 * to the end (Connection: close) into buf (cap bytes): the HTTP status, or
 * -1 (no answer); *len the bytes read.
 */
static int client_query(const struct client *c, float value, char *buf, size_t cap, size_t *len)
{
	float in[IN_FLOATS];
	char head[1024];
	int fd = client_connect(c), hlen, n;
	ssize_t got;

	*len = 0;
	if (fd < 0)
		return -1;
	for (int i = 0; i < IN_FLOATS; i++)
		in[i] = value;
	hlen = snprintf(head + 512, 512,
			"{\"inputs\":[{\"name\":\"x\",\"shape\":[1,4,16,16],\"datatype\":\"FP32\","
			"\"parameters\":{\"binary_data_size\":%zu}}],"
			"\"parameters\":{\"binary_data_output\":true}}",
			sizeof(in));
	n = snprintf(head, 512,
		     "POST /v2/models/%s/infer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
		     "Inference-Header-Content-Length: %d\r\nContent-Length: %zu\r\n\r\n",
		     c->model, hlen, (size_t)hlen + sizeof(in));
	if (send(fd, head, (size_t)n, MSG_NOSIGNAL) != n ||
	    send(fd, head + 512, (size_t)hlen, MSG_NOSIGNAL) != hlen ||
	    send(fd, in, sizeof(in), MSG_NOSIGNAL) != (ssize_t)sizeof(in)) {
		close(fd);
		return -1;
	}
	while (*len < cap && (got = recv(fd, buf + *len, cap - *len, 0)) > 0)
		*len += (size_t)got;
	close(fd);
	if (*len < 12 || strncmp(buf, "HTTP/1.1 ", 9))
		return -1;
	return atoi(buf + 9);
}

/* Whether an answer of len bytes holds out_floats outputs, every one value. */
static bool answer_is(const char *buf, size_t len, size_t out_floats, float value)
{
	const char *body = memmem(buf, len, "\r\n\r\n", 4);
	const char *hl = memmem(buf, len, "Inference-Header-Content-Length: ", 33);
	const char *out;
	float v;

	if (!body || !hl || hl > body)
		return false;
	body += 4;
	out = body + atol(hl + 33);
	if ((size_t)(buf + len - out) != out_floats * sizeof(float))
		return false;
	for (size_t i = 0; i < out_floats; i++) {
		memcpy(&v, out + i * sizeof(float), sizeof(v));
		if (v != value)
			return false;
	}
	return true;
}

static void *client_run(void *arg)
{
	struct client *c = arg;
	size_t cap = c->out_floats * sizeof(float) + 4096, len;
	char *buf = malloc(cap);

	for (int r = 0; buf && (c->stop ? !atomic_load(c->stop) : r < ROUNDS); r++) {
		/* a value of its own: an answer mixed up with another query's shows */
		float value = (float)(c->id * 1000 + r + 1) / 8.0f;
		int status = client_query(c, value, buf, cap, &len);

		if (status == 200 && answer_is(buf, len, c->out_floats, value))
			c->ok++;
		else if (status == 200)
			c->wrong++;
		else if (status == 502)
			c->bad_gateway++;
		else {
			c->other++;
			c->odd_status = status;
		}
	}
	free(buf);
	return NULL;
}

/*
 * 64 clients of "big" from 8 addresses, 3 queries each, all at once, and a
 * victim of "small" querying meanwhile: every answer 200 and its own query's
 * values, none 502, and colocd's log names no connection it cut for
 * unread answers. Before s18's fix the pool pipelined by count alone and
 * colocd cut its connections (review s18 MEDIUM 1: 6 cuts in 7 runs).
 */
TEST_F_TIMEOUT(bounds, pool__many_large_answers_stay_under_colocds_bounds, 900)
{
	static struct client clients[CLIENTS], victim;
	pthread_t threads[CLIENTS], vt;
	atomic_bool stop = false;
	int ok = 0, bad_gateway = 0, other = 0, wrong = 0;
	char *log;
	size_t len;

	victim = (struct client){ .port = self->env.http_port, .id = CLIENTS, .model = "small",
				  .out_floats = SMALL_FLOATS, .stop = &stop };
	ASSERT_EQ(0, pthread_create(&vt, NULL, client_run, &victim));
	for (int i = 0; i < CLIENTS; i++) {
		clients[i] = (struct client){ .port = self->env.http_port, .id = i, .model = "big",
					      .out_floats = BIG_FLOATS };
		ASSERT_EQ(0, pthread_create(&threads[i], NULL, client_run, &clients[i]));
	}
	for (int i = 0; i < CLIENTS; i++) {
		pthread_join(threads[i], NULL);
		ok += clients[i].ok;
		bad_gateway += clients[i].bad_gateway;
		other += clients[i].other;
		wrong += clients[i].wrong;
		if (clients[i].other)
			TH_LOG("client %d: status %d", i, clients[i].odd_status);
	}
	atomic_store(&stop, true);
	pthread_join(vt, NULL);
	TH_LOG("big: %d right, %d wrong, %d x 502, %d other; small: %d right, %d wrong, %d x 502, "
	       "%d other",
	       ok, wrong, bad_gateway, other, victim.ok, victim.wrong, victim.bad_gateway,
	       victim.other);
	EXPECT_EQ(CLIENTS * ROUNDS, ok);
	EXPECT_EQ(0, wrong);
	EXPECT_EQ(0, bad_gateway);
	EXPECT_EQ(0, other);
	EXPECT_LT(0, victim.ok);
	EXPECT_EQ(0, victim.wrong + victim.bad_gateway + victim.other);
	log = tu_read_file(self->env.log, &len);
	ASSERT_NE(NULL, log);
	EXPECT_EQ(NULL, strstr(log, "does not read its answers")) TH_LOG("%.2000s", log);
	free(log);
}

TEST_HARNESS_MAIN
