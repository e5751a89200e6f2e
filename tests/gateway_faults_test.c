// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-gateway's forwarding (gateway/forward.h) against a colocd that
 * misbehaves: a fake colocd on a real Unix socket, run by the test
 * (gateway_fake_colocd.h), then, as each test asks, stops reading,
 * answers a line without its output, never answers, holds one tenant's
 * queries, closes a connection after an answer, or cuts one mid-input.
 * The gateway is the real binary, run as the `coloc` user
 * (tests/gateway_fixture.h), driven with curl.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "gateway_fake_colocd.h"
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
	EXPECT_TRUE(body_says(self, 1, "timed out (request "));
	EXPECT_TRUE(log_says(self, "timed out and closed"));
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
	EXPECT_TRUE(body_says(self, 1, "timed out (request "));
	EXPECT_TRUE(log_says(self, "timed out and closed"));
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
	EXPECT_TRUE(body_says(self, 1, "timed out (request "));
	EXPECT_TRUE(log_says(self, "did not answer in time"));
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
	EXPECT_TRUE(body_says(self, 2, "timed out (request "));
	EXPECT_TRUE(log_says(self, "timed out in the gateway's queue"));
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
	EXPECT_TRUE(body_says(self, 2, "colocd unavailable (request "));
	EXPECT_TRUE(log_says(self, "connection lost"));
	/* colocd saw the query's line once: the gateway did not send it again */
	usleep(200000);
	EXPECT_EQ(queries + 1, atomic_load(&self->fake.queries));
	atomic_store(&self->fake.mode, FAKE_ANSWER);
	EXPECT_EQ(200, infer(self, "fast", 3));
}

/*
 * Review s18 MEDIUM 1: the pool owes colocd's answers by bytes too, not
 * only by count. One connection, a model with 4 MiB outputs, colocd
 * answering none: the first query borrows the connection until its
 * --timeout-ms (2 s); 23 more arrive a second later and wait; once it is
 * given back they go pipelined, but only while colocd owes at most half
 * its uid share (64 MiB / 2 = 8 outputs, the one given up on counted); all
 * end 504, none 502. Before: all 23 were sent (96 MiB owed, past the
 * share: colocd cuts the connection and every query on it fails 502).
 */
TEST_F_TIMEOUT(fwd, pipeline__owed_output_bytes_stay_under_colocds_share, 120)
{
	const char *flags[] = { "--connections", "1", "--http-max-buffer-bytes", "8589934592",
				"--timeout-ms", "2000", NULL };
	pid_t q[24];
	int status, timed_out = 0, before, sent;
	char cmd[256];

	ASSERT_EQ(0, write_repo_model_out(self->env.repo, "wide", 4, WIDE_FLOATS));
	snprintf(cmd, sizeof(cmd), "chmod -R a+rX '%s'", self->env.repo);
	ASSERT_EQ(0, system(cmd));
	ASSERT_TRUE(start_gateway(self, flags));
	atomic_store(&self->fake.mode, FAKE_NO_ANSWER);
	before = atomic_load(&self->fake.queries); /* the gateway's own, at its start */
	q[0] = infer_bg(self, "wide", 0);
	ASSERT_LT(0, q[0]);
	ASSERT_TRUE(wait_count(&self->fake.queries, before + 1, CURL_MAX_S));
	usleep(1000000);
	for (int i = 1; i < 24; i++) {
		q[i] = infer_bg(self, "wide", i);
		ASSERT_LT(0, q[i]);
	}
	for (int i = 0; i < 24; i++)
		if (waitpid(q[i], &status, 0) == q[i] && infer_bg_status(self, i) == 504)
			timed_out++;
	sent = atomic_load(&self->fake.queries) - before;
	TH_LOG("%d of 24 queries reached colocd; %d answered 504", sent, timed_out);
	EXPECT_LE(sent, 8);
	EXPECT_LE(2, sent);
	EXPECT_EQ(24, timed_out);
}

/*
 * Review s21 LOW 2: colocd's words of a refused query stay in the
 * gateway's log: a client is told "model not loaded" for colocd's "no
 * tenant", "overloaded" for any other refusal, each with a request id
 * that the log names beside colocd's words. Before: colocd's text was the
 * answer's.
 */
TEST_F_TIMEOUT(fwd, answer__colocds_words_go_to_the_log_not_the_client, 120)
{
	static const struct {
		const char *colocd, *client;
	} cases[] = {
		{ "no tenant fast", "model not loaded" },
		{ "too many queries from uid 971; close some first", "overloaded" },
	};
	char path[256], line[512], *text, *id;
	size_t len;

	ASSERT_TRUE(start_gateway(self, NULL));
	atomic_store(&self->fake.mode, FAKE_REJECT);
	for (int i = 0; i < 2; i++) {
		self->fake.reject_why = cases[i].colocd;
		EXPECT_EQ(503, infer(self, "fast", i));
		EXPECT_TRUE(body_says(self, i, cases[i].client));
		EXPECT_TRUE(body_has(self, i, cases[i].colocd, true));
		snprintf(path, sizeof(path), "%s/out%d", self->env.dir, i);
		text = tu_read_file(path, &len);
		ASSERT_NE(NULL, text);
		id = strstr(text, "(request ");
		EXPECT_NE(NULL, id) TH_LOG("%s", text);
		if (id) {
			snprintf(line, sizeof(line), "request %llu to fast: %s",
				 strtoull(id + 9, NULL, 10), cases[i].colocd);
			EXPECT_TRUE(log_says(self, line));
		}
		free(text);
	}
	atomic_store(&self->fake.mode, FAKE_ANSWER);
	EXPECT_EQ(200, infer(self, "fast", 2));
}

TEST_HARNESS_MAIN
