// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd serving tenants through faults, end to end (the fixture of
 * colocd_serving_fixture.h): malformed frames, a client gone mid-query, a
 * storm of queries, an executor killed mid-block, a tenant removed while
 * queries run, SIGTERM with queries in flight, tenants restored from the
 * state file after a restart, and a state file whose write stalls. The
 * daemon keeps serving the others throughout.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/time.h>
#include "kselftest_harness.h"
#include "colocd_serving_fixture.h"

/* A raw connection, its frames written by hand. */
static int raw_send(int fd, const void *buf, size_t len)
{
	return send(fd, buf, len, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

TEST_F_TIMEOUT(wire, infer__bad_frames_answered_and_daemon_keeps_serving, 600)
{
	struct coloc_infer_result res;
	char line[4096], hdr[256];
	float *got;
	int fd;

	ASSERT_TRUE(submit_ready(self, "a"));
	got = malloc(self->out_bytes);
	ASSERT_NE(NULL, got);

	/* unknown tenant and a wrong size: rejected, the connection stays in step */
	ASSERT_EQ(0, coloc_client_infer(self->c, "nobody", self->input, self->in_bytes, got,
					self->out_bytes, &res));
	EXPECT_EQ(COLOC_INFER_REJECTED, res.status);
	EXPECT_NE(NULL, strstr(res.error, "no tenant")) TH_LOG("%s", res.error);
	ASSERT_EQ(0, coloc_client_infer(self->c, "a", self->input, 12, got, self->out_bytes, &res));
	EXPECT_EQ(COLOC_INFER_REJECTED, res.status);
	TH_LOG("wrong size: %s", res.error);
	ASSERT_EQ(0, coloc_client_infer(self->c, "a", self->input, self->in_bytes, got,
					self->out_bytes, &res));
	EXPECT_EQ(COLOC_INFER_OK, res.status) TH_LOG("%s", res.error);

	/* a header without its size: error, and the stream cannot go on */
	fd = tu_connect(self->sock);
	ASSERT_GE(fd, 0);
	snprintf(hdr, sizeof(hdr), "{\"cmd\":\"infer\",\"tenant\":\"a\",\"tag\":1}\n");
	ASSERT_EQ(0, raw_send(fd, hdr, strlen(hdr)));
	ASSERT_LT(0, tu_read_line(fd, line, sizeof(line)));
	EXPECT_NE(NULL, strstr(line, "input_bytes")) TH_LOG("%s", line);
	EXPECT_EQ(0, recv(fd, line, 1, 0)); /* closed */
	close(fd);

	/* oversized: refused before a byte of it is read, and closed */
	fd = tu_connect(self->sock);
	ASSERT_GE(fd, 0);
	snprintf(hdr, sizeof(hdr),
		 "{\"cmd\":\"infer\",\"tenant\":\"a\",\"tag\":7,"
		 "\"input_bytes\":%llu}\n",
		 (unsigned long long)COLOC_MAX_PAYLOAD + 1);
	ASSERT_EQ(0, raw_send(fd, hdr, strlen(hdr)));
	ASSERT_LT(0, tu_read_line(fd, line, sizeof(line)));
	EXPECT_NE(NULL, strstr(line, "\"tag\":7")) TH_LOG("%s", line);
	EXPECT_NE(NULL, strstr(line, "COLOC_MAX_PAYLOAD")) TH_LOG("%s", line);
	EXPECT_EQ(0, recv(fd, line, 1, 0));
	close(fd);

	/* truncated: half the input, then the client's end of the stream */
	fd = tu_connect(self->sock);
	ASSERT_GE(fd, 0);
	snprintf(hdr, sizeof(hdr),
		 "{\"cmd\":\"infer\",\"tenant\":\"a\",\"tag\":3,"
		 "\"input_bytes\":%zu}\n",
		 self->in_bytes);
	ASSERT_EQ(0, raw_send(fd, hdr, strlen(hdr)));
	ASSERT_EQ(0, raw_send(fd, self->input, self->in_bytes / 2));
	shutdown(fd, SHUT_WR);
	ASSERT_LT(0, tu_read_line(fd, line, sizeof(line)));
	EXPECT_NE(NULL, strstr(line, "truncated")) TH_LOG("%s", line);
	close(fd);

	/* malformed JSON: an error, and the same connection still answers */
	fd = tu_connect(self->sock);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, raw_send(fd, "{\"cmd\":\"infer\",\n", 16));
	ASSERT_LT(0, tu_read_line(fd, line, sizeof(line)));
	EXPECT_NE(NULL, strstr(line, "malformed")) TH_LOG("%s", line);
	ASSERT_EQ(0, raw_send(fd, "{\"cmd\":\"ping\"}\n", 15));
	ASSERT_LT(0, tu_read_line(fd, line, sizeof(line)));
	EXPECT_NE(NULL, strstr(line, "\"ok\":true")) TH_LOG("%s", line);
	close(fd);

	ASSERT_EQ(0, coloc_client_infer(self->c, "a", self->input, self->in_bytes, got,
					self->out_bytes, &res));
	EXPECT_EQ(COLOC_INFER_OK, res.status) TH_LOG("%s", res.error);
	free(got);
}

TEST_F_TIMEOUT(wire, infer__client_gone_mid_query_others_served, 600)
{
	struct coloc_client *gone;
	struct coloc_infer_result res;
	struct json_object *t;
	float *got = NULL;

	ASSERT_TRUE(submit_ready(self, "a"));
	ASSERT_EQ(0, coloc_client_connect(self->sock, &gone));
	for (int i = 0; i < 20; i++)
		ASSERT_EQ(0, coloc_client_infer_send(gone, "a", (uint64_t)i, self->input,
						     self->in_bytes));
	/* gone once colocd has taken all 20 in (what it has not read dies with the socket) */
	for (int waited = 0; waited < READY_MS; waited += 5) {
		t = tenant_status(self, "a");
		if (num_of(t, "offered") >= 20) {
			json_object_put(t);
			break;
		}
		json_object_put(t);
		usleep(5000);
	}
	coloc_client_close(gone);
	/* its 20 still run to the end (nobody to answer), and the next client is served */
	for (int waited = 0; waited < READY_MS; waited += 20) {
		t = tenant_status(self, "a");
		if (num_of(t, "served") + num_of(t, "rejected") >= 20) {
			json_object_put(t);
			break;
		}
		json_object_put(t);
		usleep(20000);
	}
	t = tenant_status(self, "a");
	EXPECT_EQ(20, num_of(t, "served") + num_of(t, "rejected"));
	EXPECT_EQ(0, num_of(t, "queued") + num_of(t, "in_flight"));
	json_object_put(t);
	got = malloc(self->out_bytes);
	ASSERT_NE(NULL, got);
	ASSERT_EQ(0, coloc_client_infer(self->c, "a", self->input, self->in_bytes, got,
					self->out_bytes, &res));
	EXPECT_EQ(COLOC_INFER_OK, res.status) TH_LOG("%s", res.error);
	free(got);
}

TEST_F_TIMEOUT(wire, infer__storm_of_3000_bounded_excess_rejected_rest_served, 600)
{
	enum { N = 3000 };
	struct coloc_infer_result res;
	int ok = 0, rejected = 0, other = 0, answered = 0, sent = 0;
	char reason[256] = "";
	bool *seen = calloc(N, sizeof(bool));
	float *got = malloc(65536);
	struct json_object *t;
	int dup = 0;

	ASSERT_NE(NULL, seen);
	ASSERT_NE(NULL, got);
	ASSERT_TRUE(submit_ready(self, "a"));
	ASSERT_LE(self->out_bytes, 65536);
	while (answered < N) {
		int r;

		if (sent < N) {
			ASSERT_EQ(0, coloc_client_infer_send(self->c, "a", (uint64_t)sent,
							     self->input, self->in_bytes))
			TH_LOG("%s", coloc_client_error(self->c));
			sent++;
		}
		r = coloc_client_infer_recv(self->c, &res, got, 65536, sent < N ? 0 : 120000);
		ASSERT_LE(0, r) TH_LOG("%s", coloc_client_error(self->c));
		if (r == 0) {
			ASSERT_LT(sent, N) TH_LOG("no answer in 120 s; %d of %d", answered, N);
			continue;
		}
		answered++;
		ASSERT_LT(res.tag, N);
		dup += seen[res.tag];
		seen[res.tag] = true;
		if (res.status == COLOC_INFER_OK)
			ok++;
		else if (res.status == COLOC_INFER_REJECTED) {
			rejected++;
			snprintf(reason, sizeof(reason), "%s", res.error);
		} else
			other++;
	}
	TH_LOG("%d queries: %d served, %d rejected (last: %s)", N, ok, rejected, reason);
	EXPECT_EQ(0, dup);
	EXPECT_EQ(0, other);
	EXPECT_EQ(N, ok + rejected);
	EXPECT_GT(rejected, 0);
	EXPECT_GT(ok, 0);
	EXPECT_NE(NULL, strstr(reason, "queue")) TH_LOG("%s", reason);
	t = tenant_status(self, "a");
	EXPECT_EQ(ok, num_of(t, "served"));
	EXPECT_EQ(rejected, num_of(t, "rejected"));
	json_object_put(t);
	ASSERT_EQ(0,
		  coloc_client_infer(self->c, "a", self->input, self->in_bytes, got, 65536, &res));
	EXPECT_EQ(COLOC_INFER_OK, res.status) TH_LOG("%s", res.error);
	free(seen);
	free(got);
}

/* Whether any core runs tenant name's block now. */
static bool cores_held_by(FIXTURE_DATA(wire) * self, const char *name)
{
	struct json_object *resp = call(self, "{\"cmd\":\"status\"}"), *arr;
	bool held = false;

	if (is_ok(resp) && json_object_object_get_ex(resp, "cores", &arr))
		for (size_t i = 0; i < json_object_array_length(arr); i++)
			held |= !strcmp(str_of(json_object_array_get_idx(arr, i), "tenant"), name);
	json_object_put(resp);
	return held;
}

/* Whether thread tid of pid is stopped, or gone (nothing left to stop). */
static bool thread_stopped(pid_t pid, pid_t tid, void *ctx)
{
	char state = tu_thread_state(pid, tid);

	(void)ctx;
	return state == '?' || state == 'T' || state == 't';
}

/* SIGSTOP to pid, then waits (10 s at most) until every thread of it has stopped. */
static bool stop_whole_process(pid_t pid)
{
	uint64_t t0 = coloc_now_ns();

	if (kill(pid, SIGSTOP))
		return false;
	while (coloc_now_ns() - t0 < 10000000000ull) {
		int nr, stopped = tu_count_threads(pid, thread_stopped, NULL, &nr);

		if (stopped >= 0 && stopped == nr)
			return true;
		usleep(1000);
	}
	return false;
}

TEST_F_TIMEOUT(wire, sigkill__executor_mid_block_fails_tenant_others_serve_restart_returns, 600)
{
	struct coloc_client *bc;
	struct coloc_infer_result res;
	struct json_object *t;
	int ok = 0, failed = 0;
	uint64_t t0, t1;
	float *got;
	pid_t pb;

	ASSERT_TRUE(submit_ready(self, "a"));
	ASSERT_TRUE(submit_ready(self, "b"));
	got = malloc(self->out_bytes);
	ASSERT_NE(NULL, got);
	ASSERT_EQ(0, coloc_client_connect(self->sock, &bc));
	/*
	 * A block of b's holds cores: stop its executor (every thread), and
	 * kill it once colocd still owes b queries the stopped process cannot
	 * answer; if b's queries were all served first, again.
	 */
	for (int attempt = 0;; attempt++) {
		int pending;

		ASSERT_LT(attempt, 20) TH_LOG("b's queries were always served before the stop");
		for (int i = 0; i < 8; i++)
			ASSERT_EQ(0, coloc_client_infer_send(bc, "b", (uint64_t)i, self->input,
							     self->in_bytes));
		for (int waited = 0; waited < 2000 && !cores_held_by(self, "b"); waited++)
			usleep(1000);
		pb = executor_pid(self, "b");
		ASSERT_GT(pb, 0);
		ASSERT_TRUE(stop_whole_process(pb));
		usleep(50000); /* a completion written before the stop is taken meanwhile */
		t = tenant_status(self, "b");
		pending = (int)num_of(t, "queued") + (int)num_of(t, "in_flight");
		json_object_put(t);
		if (pending >= 2)
			break;
		ASSERT_EQ(0, kill(pb, SIGCONT));
		for (int i = 0; i < 8; i++)
			ASSERT_EQ(1, coloc_client_infer_recv(bc, &res, got, self->out_bytes, 60000));
		TH_LOG("attempt %d: %d of b's queries pending at the stop; again", attempt, pending);
	}
	t0 = coloc_now_ns();
	ASSERT_EQ(0, kill(pb, SIGKILL));
	while (cores_held_by(self, "b") && coloc_now_ns() - t0 < 10000000000ull)
		;
	t1 = coloc_now_ns();
	TH_LOG("SIGKILL of b's executor -> its cores free in status: %.1f ms, as a status "
	       "poller sees it (loaded machine)",
	       (t1 - t0) / 1e6);
	EXPECT_FALSE(cores_held_by(self, "b"));
	for (int i = 0; i < 8; i++) {
		ASSERT_EQ(1, coloc_client_infer_recv(bc, &res, got, self->out_bytes, 60000));
		ok += res.status == COLOC_INFER_OK;
		if (res.status == COLOC_INFER_FAILED) {
			failed++;
			EXPECT_NE(NULL, strstr(res.error, "signal 9")) TH_LOG("%s", res.error);
		}
	}
	EXPECT_GT(failed, 0);
	EXPECT_EQ(8, ok + failed);
	coloc_client_close(bc);
	t = tenant_status(self, "b");
	EXPECT_STREQ("failed", str_of(t, "state"));
	EXPECT_NE(NULL, strstr(str_of(t, "reason"), "signal 9")) TH_LOG("%s", str_of(t, "reason"));
	json_object_put(t);

	/* a keeps serving */
	ASSERT_EQ(0, coloc_client_infer(self->c, "a", self->input, self->in_bytes, got,
					self->out_bytes, &res));
	EXPECT_EQ(COLOC_INFER_OK, res.status) TH_LOG("%s", res.error);
	/* b is refused while failed, then restarted */
	ASSERT_EQ(0, coloc_client_infer(self->c, "b", self->input, self->in_bytes, got,
					self->out_bytes, &res));
	EXPECT_EQ(COLOC_INFER_REJECTED, res.status);
	t = call(self, "{\"cmd\":\"restart\",\"name\":\"b\"}");
	EXPECT_TRUE(is_ok(t)) TH_LOG("%s", str_of(t, "error"));
	json_object_put(t);
	ASSERT_TRUE(wait_state(self, "b", "ready"));
	EXPECT_NE(pb, executor_pid(self, "b"));
	ASSERT_EQ(0, coloc_client_infer(self->c, "b", self->input, self->in_bytes, got,
					self->out_bytes, &res));
	EXPECT_EQ(COLOC_INFER_OK, res.status) TH_LOG("%s", res.error);
	free(got);
}

/*
 * Sends n queries to name on a connection of their own (status requests go
 * on self->c meanwhile), and waits until colocd holds all n (queued, in
 * flight or served). False when a send fails or they are not all held in
 * time.
 */
static bool send_held(FIXTURE_DATA(wire) * self, const char *name, int n, struct coloc_client **qc)
{
	if (coloc_client_connect(self->sock, qc))
		return false;
	for (int i = 0; i < n; i++)
		if (coloc_client_infer_send(*qc, name, (uint64_t)i, self->input, self->in_bytes))
			return false;
	for (int waited = 0; waited < READY_MS; waited += 5) {
		struct json_object *t = tenant_status(self, name);
		double held = num_of(t, "queued") + num_of(t, "in_flight") + num_of(t, "served");

		json_object_put(t);
		if (held >= n)
			return true;
		usleep(5000);
	}
	return false;
}

TEST_F_TIMEOUT(wire, remove__drains_then_answers_and_forgets_the_attribution, 600)
{
	struct coloc_infer_result res;
	struct json_object *r, *arr;
	float *got;
	int ok = 0;

	ASSERT_TRUE(submit_ready(self, "a"));
	got = malloc(self->out_bytes);
	ASSERT_NE(NULL, got);
	struct coloc_client *qc;

	/* the four are read before the remove: colocd holds them */
	ASSERT_TRUE(send_held(self, "a", 4, &qc));
	r = call(self, "{\"cmd\":\"remove\",\"name\":\"a\"}");
	EXPECT_TRUE(is_ok(r)) TH_LOG("%s", str_of(r, "error"));
	json_object_put(r);
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(1, coloc_client_infer_recv(qc, &res, got, self->out_bytes, 60000));
		ok += res.status == COLOC_INFER_OK;
	}
	EXPECT_EQ(4, ok);
	coloc_client_close(qc);
	/* answered once drained: gone from list and from the BPF tenants */
	r = call(self, "{\"cmd\":\"list\"}");
	EXPECT_EQ(0, json_object_array_length(json_object_object_get(r, "tenants")));
	json_object_put(r);
	r = call(self, "{\"cmd\":\"tenants\"}");
	ASSERT_TRUE(json_object_object_get_ex(r, "tenants", &arr));
	EXPECT_EQ(0, json_object_array_length(arr));
	json_object_put(r);
	free(got);
}

TEST_F_TIMEOUT(wire, sigterm__drains_in_flight_stops_executors_unpins_exits_0, 600)
{
	struct coloc_infer_result res;
	struct coloc_client *qc;
	struct stat st;
	float *got;
	pid_t pa;
	int ok = 0;

	ASSERT_TRUE(submit_ready(self, "a"));
	pa = executor_pid(self, "a");
	got = malloc(self->out_bytes);
	ASSERT_NE(NULL, got);
	ASSERT_TRUE(send_held(self, "a", 4, &qc));
	ASSERT_EQ(0, kill(self->colocd, SIGTERM));
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(1, coloc_client_infer_recv(qc, &res, got, self->out_bytes, 60000))
		TH_LOG("%s", coloc_client_error(qc));
		ok += res.status == COLOC_INFER_OK;
	}
	coloc_client_close(qc);
	TH_LOG("%d of 4 in flight at SIGTERM served", ok);
	EXPECT_EQ(4, ok);
	EXPECT_EQ(0, tu_stop_colocd(self->colocd));
	self->colocd = 0;
	EXPECT_NE(0, stat(self->pin, &st));
	EXPECT_NE(0, stat(self->sock, &st));
	/* the executor went with it (reaped by colocd, or by init once colocd is gone) */
	for (int waited = 0; waited < 5000 && !kill(pa, 0); waited += 10)
		usleep(10000);
	EXPECT_NE(0, kill(pa, 0));
	free(got);
}

TEST_F_TIMEOUT(wire, state__tenants_come_back_after_a_restart_and_a_bad_one_is_reported, 600)
{
	struct coloc_infer_result res;
	char log[8192];
	struct json_object *r;
	float *got;
	FILE *f;
	size_t n;

	/* a with two executors: they come back as two */
	ASSERT_TRUE(submit_ready_executors(self, "a", 2));
	ASSERT_TRUE(submit_ready(self, "b"));
	r = call(self, "{\"cmd\":\"remove\",\"name\":\"b\"}");
	EXPECT_TRUE(is_ok(r));
	json_object_put(r);
	r = submit(self, "c", self->model, QOS_MS);
	EXPECT_TRUE(is_ok(r));
	json_object_put(r);
	coloc_client_close(self->c);
	self->c = NULL;
	ASSERT_EQ(0, tu_stop_colocd(self->colocd));
	self->colocd = 0;

	/*
	 * colocd's own copy of c's model (it never reopens the client's path)
	 * goes away meanwhile: c cannot come back, a still does
	 */
	{
		char copy[PATH_MAX];

		snprintf(copy, sizeof(copy), "%s.files/c.model", self->state);
		ASSERT_EQ(0, unlink(copy));
	}
	ASSERT_LT(0, start_daemon(self));
	ASSERT_EQ(0, coloc_client_connect(self->sock, &self->c));
	ASSERT_TRUE(wait_state(self, "a", "ready"));
	r = call(self, "{\"cmd\":\"list\"}");
	EXPECT_EQ(1, json_object_array_length(json_object_object_get(r, "tenants")))
	TH_LOG("%s", json_object_to_json_string(r));
	json_object_put(r);
	r = tenant_status(self, "a");
	EXPECT_EQ(2, num_of(r, "executors")) TH_LOG("%s", json_object_to_json_string(r));
	EXPECT_EQ(2, json_object_array_length(json_object_object_get(r, "pids")));
	EXPECT_GT(json_object_get_int(
			  json_object_array_get_idx(json_object_object_get(r, "pids"), 1)),
		  0);
	json_object_put(r);
	f = fopen(self->log, "r");
	ASSERT_NE(NULL, f);
	n = fread(log, 1, sizeof(log) - 1, f);
	log[n] = '\0';
	fclose(f);
	EXPECT_NE(NULL, strstr(log, "tenant c from")) TH_LOG("%s", log);
	EXPECT_NE(NULL, strstr(log, "did not come back")) TH_LOG("%s", log);
	got = malloc(self->out_bytes);
	ASSERT_NE(NULL, got);
	ASSERT_EQ(0, coloc_client_infer(self->c, "a", self->input, self->in_bytes, got,
					self->out_bytes, &res));
	EXPECT_EQ(COLOC_INFER_OK, res.status) TH_LOG("%s", res.error);
	free(got);
}

/*
 * The whole of what the state file's FIFO gets, until its writer closes it
 * after writing; 0 when nothing came within 30 s.
 */
static size_t read_fifo(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	size_t len = 0;

	if (fd < 0)
		return 0;
	for (int waited_ms = 0; len < cap - 1 && waited_ms < 30000;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n = read(fd, buf + len, cap - 1 - len);

		if (n > 0) {
			len += (size_t)n;
			continue;
		}
		if (n == 0 && len)
			break; /* written, then closed */
		if (n < 0 && errno != EAGAIN)
			break;
		/* no writer yet (0) or nothing written yet (EAGAIN) */
		poll(&p, 1, 100);
		waited_ms += 100;
	}
	buf[len] = '\0';
	close(fd);
	return len;
}

/* Whether the state file names tenant name within 10 s (its writer is a thread). */
static bool state_names(const char *state, const char *name)
{
	char quoted[80];

	snprintf(quoted, sizeof(quoted), "\"%s\"", name);
	for (int i = 0; i < 200; i++) {
		size_t len;
		char *text = tu_read_file(state, &len);
		bool named = text && strstr(text, quoted);

		free(text);
		if (named)
			return true;
		usleep(50 * 1000);
	}
	return false;
}

/*
 * --state's write stalls (its temporary file is a FIFO nobody reads, as a
 * disk that does not answer): colocd answers the remove that rewrote it
 * and a ping meanwhile, and what it owed the file is on disk at exit.
 */
TEST_F_TIMEOUT(wire, state__a_stalled_write_stalls_no_one_and_the_last_state_is_written_at_exit,
	       600)
{
	struct timeval tv = { .tv_sec = 3 };
	char tmp[PATH_MAX], line[4096], text[8192], *written;
	size_t n;
	int fd;

	ASSERT_TRUE(submit_ready(self, "a"));
	/* the submit's own text written first (renamed: no temporary file left) */
	ASSERT_TRUE(state_names(self->state, "a"));
	snprintf(tmp, sizeof(tmp), "%s.tmp", self->state);
	ASSERT_EQ(0, mkfifo(tmp, 0600));
	fd = tu_connect(self->sock);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	snprintf(line, sizeof(line), "{\"cmd\":\"remove\",\"name\":\"a\"}\n");
	ASSERT_EQ(0, raw_send(fd, line, strlen(line)));
	ASSERT_LT(0, tu_read_line(fd, line, sizeof(line)))
	TH_LOG("no answer to the remove in 3 s: colocd waits for the state file");
	EXPECT_NE(NULL, strstr(line, "\"ok\":true")) TH_LOG("%s", line);
	snprintf(line, sizeof(line), "{\"cmd\":\"ping\"}\n");
	ASSERT_EQ(0, raw_send(fd, line, strlen(line)));
	ASSERT_LT(0, tu_read_line(fd, line, sizeof(line)))
	TH_LOG("no answer to a ping in 3 s: colocd waits for the state file");
	EXPECT_NE(NULL, strstr(line, "\"ok\":true")) TH_LOG("%s", line);
	close(fd);

	/* read, the write goes on: the text without a, which a FIFO cannot sync (it fails) */
	ASSERT_LT(0, read_fifo(tmp, text, sizeof(text)));
	EXPECT_NE(NULL, strstr(text, "\"tenants\"")) TH_LOG("%s", text);
	EXPECT_EQ(NULL, strstr(text, "\"a\"")) TH_LOG("%s", text);
	ASSERT_EQ(0, tu_stop_colocd(self->colocd));
	self->colocd = 0;
	/* the write that failed was made again at exit: a is gone from the file */
	written = tu_read_file(self->state, &n);
	ASSERT_NE(NULL, written);
	EXPECT_NE(NULL, strstr(written, "\"tenants\"")) TH_LOG("%s", written);
	EXPECT_EQ(NULL, strstr(written, "\"a\"")) TH_LOG("%s", written);
	free(written);
}

TEST_HARNESS_MAIN
