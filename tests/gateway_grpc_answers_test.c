// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-gateway's gRPC answers against a client that lets none be sent
 * (review s18 HIGH 2, its gRPC half): ModelInfer calls of a model with 1 M
 * output values (4 MiB from colocd, 4 MiB of answer) from one address, on
 * a connection whose stream windows are 0 (tests/gateway/h2_answers.py),
 * are charged to that address's share of --http-max-buffer-bytes before
 * the query is sent, the share its HTTP answers take from: past it
 * RESOURCE_EXHAUSTED; at the bound of all unsent answers the address
 * holding the most loses its oldest, never a slow reader under its share,
 * and a dead connection's answers stop counting at once.
 * The real gateway (its own gRPC server) as the `coloc`
 * user before the fake colocd (gateway_fake_colocd.h).
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "gateway_fake_colocd.h"

#define PYTHON "/usr/bin/python3"
#define CALLS 32
#define SHARE_MIB 32 /* --http-max-buffer-bytes 256 MiB / 8 */
#define WIDE_ANSWER_MIB 4 /* "wide"'s answer, and colocd's output: 4 MiB and a little each */

/* The number after what at the start of one of log's lines; -1 if none. */
static long log_number(const char *log, const char *what)
{
	size_t n = strlen(what);

	for (const char *p = log; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, what, n))
			return atol(p + n);
	return -1;
}

/* h2_answers.py's log once it says "held", or NULL after 60 s (malloc'd). */
static char *wait_held(const char *path)
{
	for (int i = 0; i < 600; i++) {
		size_t len;
		char *text = tu_read_file(path, &len);

		if (text && (strstr(text, "held ") || strstr(text, "closed")))
			return text;
		free(text);
		usleep(100000);
	}
	return NULL;
}

/* An HTTP infer of "wide" from source: its status (0: none). */
static int http_wide_from(FIXTURE_DATA(fwd) * self, const char *source)
{
	char cmd[1024], out[64];

	snprintf(cmd, sizeof(cmd),
		 "curl -s --max-time %d --interface %s -X POST --data-binary '@%s' -o /dev/null "
		 "-w '%%{http_code}' http://127.0.0.1:%d/v2/models/wide/infer",
		 CURL_MAX_S, source, self->small, self->env.http_port);
	tu_run(cmd, out, sizeof(out));
	return atoi(out);
}

/*
 * 32 calls of "wide" from 127.0.0.2, none of whose answers can be sent:
 * three are in flight at once within the 32 MiB share (colocd's output and
 * the answer charged, 8 MiB a call), an answered one keeps its 4 MiB
 * answer charged until it is sent, so 3 to 7 are held and the others
 * refused RESOURCE_EXHAUSTED; the gateway's VmHWM grows by less than four
 * times the share (the answers, the pool's buffers for colocd's outputs,
 * and under ASan the freed outputs it keeps in quarantine: +92 MB there,
 * +34 MB plain). The share is the HTTP answers' too: an HTTP infer of "wide"
 * (20 MiB with its JSON) from 127.0.0.2 gets 503 meanwhile, one from
 * 127.0.0.1 its answer. Once the holder is gone a reading client gets the
 * whole answer. Before: gRPC answers were held to an eighth of
 * --grpc-max-buffer-bytes (126 MiB: 30 held), colocd's output beside each
 * in no budget.
 */
TEST_F_TIMEOUT(fwd, grpc_answers__unsent_answers_are_charged_to_the_address_share, 180)
{
	const char *root = getenv("COLOC_ROOT") ? getenv("COLOC_ROOT") : ".";
	const char *flags[] = { "--grpc-server",	  "own",     "--http-max-buffer-bytes",
				"268435456",		  "--max-body-bytes", "8388608",
				"--grpc-read-timeout-ms", "60000",   NULL };
	char script[PATH_MAX], port[16], log[256], calls[16], cmd[PATH_MAX + 128], out[256];
	const char *argv[] = { PYTHON, script, port, "127.0.0.2", "hold", "wide", calls, NULL };
	long hwm0, hwm, held, refused;
	char *text;
	pid_t pid;
	int status = 0;

	ASSERT_EQ(0, write_repo_model_out(self->env.repo, "wide", 4, WIDE_FLOATS));
	snprintf(cmd, sizeof(cmd), "chmod -R a+rX '%s'", self->env.repo);
	ASSERT_EQ(0, system(cmd));
	ASSERT_TRUE(gw_env_start_gateway(&self->env, true, flags));
	hwm0 = tu_proc_status_kb(self->env.gateway, "VmHWM");
	ASSERT_LT(0, hwm0);
	snprintf(script, sizeof(script), "%s/tests/gateway/h2_answers.py", root);
	snprintf(port, sizeof(port), "%d", self->env.grpc_port);
	snprintf(calls, sizeof(calls), "%d", CALLS);
	snprintf(log, sizeof(log), "%s/hold.log", self->env.dir);
	pid = tu_spawn_logged(argv, log);
	ASSERT_LT(0, pid);
	text = wait_held(log);
	ASSERT_NE(NULL, text);
	held = log_number(text, "held ");
	refused = log_number(text, "status 8 ");
	hwm = tu_proc_status_kb(self->env.gateway, "VmHWM");
	TH_LOG("%ld held, %ld refused; VmHWM %ld kB at start, %ld kB after", held, refused, hwm0,
	       hwm);
	EXPECT_LE(3, held) TH_LOG("%s", text);
	EXPECT_GE(SHARE_MIB / WIDE_ANSWER_MIB - 1, held) TH_LOG("%s", text);
	EXPECT_EQ(CALLS - held, refused) TH_LOG("%s", text);
	EXPECT_LT(hwm, hwm0 + 4 * (SHARE_MIB << 10));
	free(text);
	EXPECT_EQ(503, http_wide_from(self, "127.0.0.2"));
	EXPECT_EQ(200, http_wide_from(self, "127.0.0.1"));
	tu_stop_child(&pid);
	/* the share given back once the gateway saw the close */
	snprintf(cmd, sizeof(cmd), "timeout 60 " PYTHON " '%s' %d 127.0.0.2 read wide 2>&1", script,
		 self->env.grpc_port);
	for (int i = 0; i < 50 && status != 1; i++) {
		ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
		status = strstr(out, "status 0") ? 1 : 0;
		if (!status)
			usleep(100000);
	}
	EXPECT_EQ(1, status) TH_LOG("%s", out);
	EXPECT_LT((long)WIDE_FLOATS * 4, log_number(out, "message ")) TH_LOG("%s", out);
}

#define ROOM_ADDRS 8 /* 127.0.0.3..10, two held answers each: an eighth of --max-queue 16 */

/* A holder of n "fast" calls from source, its log at log; its pid, its log once "held" read. */
static pid_t hold_fast(FIXTURE_DATA(fwd) * self, const char *source, int n, const char *log,
		       char **text)
{
	const char *root = getenv("COLOC_ROOT") ? getenv("COLOC_ROOT") : ".";
	char script[PATH_MAX], port[16], calls[16];
	const char *argv[] = { PYTHON, script, port, source, "hold", "fast", calls, NULL };
	pid_t pid;

	snprintf(script, sizeof(script), "%s/tests/gateway/h2_answers.py", root);
	snprintf(port, sizeof(port), "%d", self->env.grpc_port);
	snprintf(calls, sizeof(calls), "%d", n);
	pid = tu_spawn_logged(argv, log);
	*text = pid > 0 ? wait_held(log) : NULL;
	return pid;
}

/*
 * At the bound of all unsent answers (--max-queue 16), the address
 * holding the most loses its oldest answer, not the connection with the
 * oldest one all of its own: 127.0.0.2 holds one answer (the oldest),
 * then 127.0.0.3..10 two each (an address's most, 16 / 8), whose last
 * needs room. 127.0.0.2's answer is kept; one of the others' is reset
 * ("later reset" in its holder's log). Before (s24): the oldest
 * connection's was reset, 127.0.0.2 lost its one answer.
 */
TEST_F_TIMEOUT(fwd, grpc_answers__room_is_made_by_the_address_holding_the_most, 180)
{
	const char *flags[] = { "--grpc-server",	  "own",   "--max-queue", "16",
				"--grpc-read-timeout-ms", "60000", NULL };
	pid_t first, others[ROOM_ADDRS];
	char log[256], source[32], *text;
	int reset = 0;
	size_t len;

	ASSERT_TRUE(gw_env_start_gateway(&self->env, true, flags));
	snprintf(log, sizeof(log), "%s/first.log", self->env.dir);
	first = hold_fast(self, "127.0.0.2", 1, log, &text);
	ASSERT_LT(0, first);
	ASSERT_NE(NULL, text);
	ASSERT_EQ(1, log_number(text, "held ")) TH_LOG("%s", text);
	free(text);
	for (int i = 0; i < ROOM_ADDRS; i++) {
		snprintf(log, sizeof(log), "%s/other%d.log", self->env.dir, i);
		snprintf(source, sizeof(source), "127.0.0.%d", 3 + i);
		others[i] = hold_fast(self, source, 2, log, &text);
		ASSERT_LT(0, others[i]);
		ASSERT_NE(NULL, text);
		free(text);
	}
	for (int i = 0; i < ROOM_ADDRS; i++) {
		snprintf(log, sizeof(log), "%s/other%d.log", self->env.dir, i);
		text = tu_read_file(log, &len);
		reset += text && strstr(text, "later reset");
		TH_LOG("127.0.0.%d: %s", 3 + i, text ? text : "(no log)");
		free(text);
		tu_stop_child(&others[i]);
	}
	snprintf(log, sizeof(log), "%s/first.log", self->env.dir);
	text = tu_read_file(log, &len);
	/* main: "later reset" */
	EXPECT_TRUE(text && !strstr(text, "later")) TH_LOG("%s", text);
	free(text);
	EXPECT_LE(1, reset);
	tu_stop_child(&first);
}

/*
 * The s25 attack report's MEDIUM 2: 127.0.0.3..10, two connections each
 * with 4 ServerMetadata calls whose answers can never go (windows of 0),
 * keep --max-queue 64's unsent answers full, each one reset renewed at
 * once; a slow reader from 127.0.0.2, each answer of its 8 calls let out 2
 * bytes every 30 ms (about 0.7 s), holds one answer, under any address's
 * share: all 8 are answered. Before: the connection with the oldest answer
 * lost its answers, and the attackers' were always younger (0 of 8).
 */
TEST_F_TIMEOUT(fwd, grpc_answers__a_slow_reader_keeps_its_answer_beside_addresses_over_their_share,
	       180)
{
	const char *root = getenv("COLOC_ROOT") ? getenv("COLOC_ROOT") : ".";
	const char *flags[] = { "--grpc-server", "own", "--max-queue", "64", NULL };
	char cmd[PATH_MAX + 128], out[8192];

	ASSERT_TRUE(gw_env_start_gateway(&self->env, true, flags));
	snprintf(cmd, sizeof(cmd),
		 "timeout 120 " PYTHON " '%s/tests/gateway/h2_slowvictim.py' %d 1 2 4 8 2 30 8 "
		 "ServerMetadata 2>&1",
		 root, self->env.grpc_port);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	TH_LOG("%s", out);
	/* main: "victim answered 0 of 8" */
	EXPECT_NE(NULL, strstr(out, "victim answered 8 of 8")) TH_LOG("%s", out);
}

#define DEAD_ADDRS 8 /* 127.0.0.3..10, 8 held answers each: --max-queue 64 in all */
#define DEAD_CALLS 6
#define DEAD_READ_RATE 150000 /* bytes a second a dead holder reads: its output keeps moving */
#define DEAD_CUT_SHORT 65536 /* of what a dead holder had left, at least this much never sent */

/*
 * From log's line "holder 127.0.0.<i>: closed, R bytes read after its death
 * of L left": R, and L in *left; -1 if the holder was not closed.
 */
static long dead_holder_read(const char *log, int i, long *left)
{
	char what[64];
	const char *line, *of;

	snprintf(what, sizeof(what), "holder 127.0.0.%d: closed, ", i);
	line = strstr(log, what);
	of = line ? strstr(line, " of ") : NULL;
	*left = of ? atol(of + 4) : -1;
	return line ? atol(line + strlen(what)) : -1;
}

/*
 * The s26 attack report's MEDIUM 2: 127.0.0.3..10 each hold 8 answers (an
 * address's share of --max-queue 64; the bound full) on a connection that
 * then dies (PUSH_PROMISE: a connection error) with its socket and 900 KiB
 * of output left to send, which its client reads at 150 kB/s
 * (h2_deadholders.py). The dead connections' answers stop counting at
 * once, so a slow reader from 127.0.0.2 (each answer let out 2 bytes every
 * 30 ms, about 0.7 s) beside a caller that asks for room every 20 ms gets
 * all 6 answers; and each dead connection is closed H2S_DEAD_GRACE_NS after
 * its death, however its client reads: what its output still held is never
 * sent. Before: the dead answers kept the bound full, room was made among
 * live connections only, so the slow reader's answer was reset each time
 * (0 of 6), and each dead connection lived until its client had read all
 * it had left.
 */
TEST_F_TIMEOUT(fwd, grpc_answers__a_dead_connections_answers_stop_counting_and_it_is_closed, 180)
{
	const char *root = getenv("COLOC_ROOT") ? getenv("COLOC_ROOT") : ".";
	const char *flags[] = { "--grpc-server",	  "own",   "--max-queue", "64",
				"--grpc-read-timeout-ms", "60000", NULL };
	char cmd[PATH_MAX + 128], out[8192], want[64];

	ASSERT_EQ(0, write_repo_model_out(self->env.repo, "wide", 4, WIDE_FLOATS));
	snprintf(cmd, sizeof(cmd), "chmod -R a+rX '%s'", self->env.repo);
	ASSERT_EQ(0, system(cmd));
	ASSERT_TRUE(gw_env_start_gateway(&self->env, true, flags));
	snprintf(cmd, sizeof(cmd),
		 "timeout 150 " PYTHON " '%s/tests/gateway/h2_deadholders.py' %d %d 8 %d %d 2>&1",
		 root, self->env.grpc_port, DEAD_ADDRS, DEAD_CALLS, DEAD_READ_RATE);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	TH_LOG("%s", out);
	snprintf(want, sizeof(want), "victim answered %d of %d", DEAD_CALLS, DEAD_CALLS);
	/* main: "victim answered 0 of 6" */
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("%s", out);
	for (int i = 3; i < 3 + DEAD_ADDRS; i++) {
		long left, read = dead_holder_read(out, i, &left);

		/* main: still open, or closed once all it had left was read */
		EXPECT_LE(0, read) TH_LOG("127.0.0.%d", i);
		EXPECT_GT(left - DEAD_CUT_SHORT, read) TH_LOG("127.0.0.%d", i);
	}
}

TEST_HARNESS_MAIN
