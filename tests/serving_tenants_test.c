// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A tenant's life in colocd's serving core (daemon/serving_tenant.c and
 * serving_admit.c), with real executor processes (tests/serving_fixture.h):
 * admission refused with a
 * reason (a QoS below the solo latency, no profile, a malformed model),
 * removal that drains the accepted queries, and failure (a SIGKILLed or a
 * hung executor) that frees the tenant's cores while the other keeps
 * serving, then a restart.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "kselftest_harness.h"
#include "serving_fixture.h"

TEST_F(serving, admit__qos_below_solo_latency_rejected_with_both_numbers)
{
	struct coloc_err err = { 0 };
	cpu_set_t mask;
	char qos[64], solo[64];
	uint64_t solo_ns;

	sched_getaffinity(0, sizeof(mask), &mask);
	solo_ns = profiled_solo_ns(self->model, CPU_COUNT(&mask));
	ASSERT_GT(solo_ns, 0);
	EXPECT_EQ(-ERANGE, admit(self, "tight", solo_ns / 2, &err));
	snprintf(qos, sizeof(qos), "QoS %.3f ms", solo_ns / 2 / 1e6);
	snprintf(solo, sizeof(solo), "latency %.3f ms", solo_ns / 1e6);
	EXPECT_NE(NULL, strstr(err.msg, qos)) TH_LOG("%s (want %s)", err.msg, qos);
	EXPECT_NE(NULL, strstr(err.msg, solo)) TH_LOG("%s (want %s)", err.msg, solo);
	/*
	 * colocd parses no model: an executor had to describe it first. It is
	 * killed with the refusal, the tenant is gone, and every fd it brought
	 * is unwatched once it is reaped.
	 */
	EXPECT_LT(0, self->w.adds);
	EXPECT_EQ(-ENOENT, serving_tenant_info(self->s, "tight", &(struct serving_tenant_info){}));
	EXPECT_TRUE(pump(self, nothing_watched, NULL, READY_MS, NULL));
	/* at the solo latency itself it is admitted */
	coloc_err_clear(&err);
	EXPECT_EQ(0, admit(self, "exact", solo_ns, &err)) TH_LOG("%s", coloc_err_str(&err));
}

TEST_F(serving, admit__missing_profile_names_the_coloc_profile_command)
{
	struct coloc_err err = { 0 };
	char empty[] = "/tmp/coloc-serving-empty-XXXXXX", want[1024];

	ASSERT_NE(NULL, mkdtemp(empty));
	ASSERT_EQ(0, make_serving(self, NULL, 0, 0, empty, &err)) TH_LOG("%s", err.msg);
	EXPECT_EQ(-ENOENT, admit(self, "mnv2", QOS_NS, &err));
	snprintf(want, sizeof(want), "coloc-profile %s -o mobilenet_v2.profile --cache-dir %s",
		 self->model, empty);
	EXPECT_NE(NULL, strstr(err.msg, want)) TH_LOG("%s (want %s)", err.msg, want);
	rmdir(empty);
}

TEST_F(serving, admit__malformed_model_gives_file_and_line)
{
	struct coloc_err err = { 0 };
	char path[] = "/tmp/coloc-serving-bad-XXXXXX", want[128];
	struct serving_tenant_spec spec = {
		.name = "bad", .model_name = path, .weights_fd = -1, .qos_ns = QOS_NS
	};
	int fd = mkstemp(path);

	ASSERT_GE(fd, 0);
	ASSERT_EQ(13, write(fd, "model broken\n", 13));
	close(fd);
	spec.model_fd = tu_sealed_copy(path);
	ASSERT_LE(0, spec.model_fd);
	EXPECT_GT(0, serving_admit_wait(self->s, &spec, READY_MS, &err));
	close(spec.model_fd);
	snprintf(want, sizeof(want), "%s:1: ", path);
	EXPECT_EQ(0, strncmp(err.msg, want, strlen(want))) TH_LOG("%s (want %s)", err.msg, want);
	EXPECT_EQ(-ENOENT, serving_tenant_info(self->s, "bad", &(struct serving_tenant_info){}));
	unlink(path);
}

TEST_F(serving, sigkill__tenant_fails_cores_freed_other_keeps_serving)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info a, b;
	const char *failed[2] = { "a", "failed" };
	int range[2] = { 0, 8 }, nr_failed = 0;
	uint64_t t0, t1;
	char want[96];
	pid_t pid;

	ASSERT_EQ(0, make_serving(self, "static", 0, 0, cache_dir, &err)) TH_LOG("%s", err.msg);
	ASSERT_EQ(0, admit(self, "a", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, admit(self, "b", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(wait_ready(self, "a"));
	ASSERT_TRUE(wait_ready(self, "b"));
	make_input(self, "a");
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(0, submit(self, "a", i, &err)) TH_LOG("%s", coloc_err_str(&err));
		ASSERT_EQ(0, submit(self, "b", 4 + i, &err)) TH_LOG("%s", coloc_err_str(&err));
	}
	ASSERT_TRUE(pump(self, tenant_busy, "a", DONE_MS, NULL));
	ASSERT_EQ(0, serving_tenant_info(self->s, "a", &a));
	pid = a.pid;
	ASSERT_GT(pid, 0);
	t0 = coloc_now_ns();
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_TRUE(pump(self, tenant_in_state, failed, DONE_MS, NULL));
	t1 = coloc_now_ns();
	EXPECT_TRUE(tenant_idle(self, "a"));
	TH_LOG("SIGKILL of a's executor -> its cores free: %.3f ms (loaded machine)",
	       (t1 - t0) / 1e6);
	ASSERT_EQ(0, serving_tenant_info(self->s, "a", &a));
	EXPECT_NE(NULL, strstr(a.reason, "killed by signal 9")) TH_LOG("%s", a.reason);
	EXPECT_EQ(0, a.pid);
	EXPECT_EQ(-1, kill(pid, 0)); /* reaped */
	EXPECT_EQ(ESRCH, errno);
	snprintf(want, sizeof(want), "a:failed:%d", (int)pid);
	EXPECT_STREQ(want, self->w.events[self->w.nr_events - 1]);
	/* the block in flight and the queries behind it fail with the reason */
	for (int i = 0; i < 4; i++) {
		if (self->q[i].done && self->q[i].status == SERVING_QUERY_OK)
			continue;
		nr_failed++;
		EXPECT_EQ(SERVING_QUERY_FAILED, self->q[i].status);
		EXPECT_NE(NULL, strstr(self->q[i].reason, "killed by signal 9"))
		TH_LOG("%s", self->q[i].reason);
	}
	EXPECT_LE(1, nr_failed);
	EXPECT_TRUE(queries_done(self, (int[2]){ 0, 4 }));
	EXPECT_EQ(-EAGAIN, submit(self, "a", 8, &err));
	EXPECT_NE(NULL, strstr(err.msg, "failed")) TH_LOG("%s", err.msg);

	/* b keeps serving: its queries complete, and a new one too */
	coloc_err_clear(&err);
	ASSERT_EQ(0, submit(self, "b", 9, &err)) TH_LOG("%s", coloc_err_str(&err));
	range[0] = 4;
	range[1] = 8;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	range[0] = 9;
	range[1] = 10;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	for (int i = 4; i < 10; i++) {
		if (i == 8)
			continue;
		EXPECT_EQ(SERVING_QUERY_OK, self->q[i].status)
		TH_LOG("%d: %s", i, self->q[i].reason);
	}
	ASSERT_EQ(0, serving_tenant_info(self->s, "b", &b));
	EXPECT_EQ(5, b.stats.served);

	/* a restarts and serves again */
	ASSERT_EQ(0, serving_restart(self->s, "a", &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(wait_ready(self, "a"));
	ASSERT_EQ(0, submit(self, "a", 10, &err)) TH_LOG("%s", coloc_err_str(&err));
	range[0] = 10;
	range[1] = 11;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	EXPECT_EQ(SERVING_QUERY_OK, self->q[10].status) TH_LOG("%s", self->q[10].reason);
}

TEST_F(serving, remove__drains_accepted_queries_then_stops_executor)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;
	char want[96];
	pid_t pid;

	ASSERT_EQ(0, admit(self, "mnv2", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(wait_ready(self, "mnv2"));
	make_input(self, "mnv2");
	ASSERT_EQ(0, serving_tenant_info(self->s, "mnv2", &info));
	pid = info.pid;
	for (int i = 0; i < 6; i++)
		ASSERT_EQ(0, submit(self, "mnv2", i, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, serving_remove(self->s, "mnv2", &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, serving_tenant_info(self->s, "mnv2", &info));
	EXPECT_STREQ("draining", serving_state_name(info.state));
	EXPECT_EQ(-EAGAIN, submit(self, "mnv2", 6, &err));
	EXPECT_NE(NULL, strstr(err.msg, "draining")) TH_LOG("%s", err.msg);
	ASSERT_TRUE(pump(self, tenant_gone, "mnv2", DONE_MS, NULL));
	for (int i = 0; i < 6; i++) {
		EXPECT_EQ(SERVING_QUERY_OK, self->q[i].status)
		TH_LOG("%d: %s", i, self->q[i].reason);
	}
	EXPECT_FALSE(self->q[6].done);
	/* asked to exit, then reaped once its pidfd says it is gone */
	EXPECT_TRUE(pump(self, process_reaped, &pid, DONE_MS, NULL));
	EXPECT_EQ(0, self->w.nr); /* every fd unwatched */
	EXPECT_EQ(-1, kill(pid, 0)); /* the executor is gone and reaped */
	EXPECT_EQ(ESRCH, errno);
	/* what the attribution module is told, each time with the executor's pid */
	ASSERT_EQ(4, self->w.nr_events);
	snprintf(want, sizeof(want), "mnv2:starting:%d", (int)pid);
	EXPECT_STREQ(want, self->w.events[0]);
	snprintf(want, sizeof(want), "mnv2:ready:%d", (int)pid);
	EXPECT_STREQ(want, self->w.events[1]);
	snprintf(want, sizeof(want), "mnv2:draining:%d", (int)pid);
	EXPECT_STREQ(want, self->w.events[2]);
	snprintf(want, sizeof(want), "mnv2:removed:%d", (int)pid);
	EXPECT_STREQ(want, self->w.events[3]);
	EXPECT_TRUE(tenant_idle(self, "mnv2"));
}

TEST_F(serving, hang__stopped_executor_killed_past_its_block_deadline)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;
	const char *failed[2] = { "mnv2", "failed" };
	uint64_t t0;
	pid_t pid;

	ASSERT_EQ(0, admit(self, "mnv2", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(wait_ready(self, "mnv2"));
	make_input(self, "mnv2");
	ASSERT_EQ(0, serving_tenant_info(self->s, "mnv2", &info));
	pid = info.pid;
	/* stopped before the submit: the block is handed over but never runs */
	ASSERT_EQ(0, kill(pid, SIGSTOP));
	t0 = coloc_now_ns();
	ASSERT_EQ(0, submit(self, "mnv2", 0, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(tenant_busy(self, "mnv2"));
	ASSERT_TRUE(pump(self, tenant_in_state, failed, DONE_MS, NULL));
	TH_LOG("stopped executor declared hung after %.3f ms", (coloc_now_ns() - t0) / 1e6);
	/* the limit is 50x the prediction + 2 s: never sooner than the slack */
	EXPECT_GE(coloc_now_ns() - t0, SERVING_HANG_SLACK_NS / 2);
	ASSERT_EQ(0, serving_tenant_info(self->s, "mnv2", &info));
	EXPECT_NE(NULL, strstr(info.reason, "hung")) TH_LOG("%s", info.reason);
	EXPECT_EQ(SERVING_QUERY_FAILED, self->q[0].status);
	EXPECT_NE(NULL, strstr(self->q[0].reason, "hung")) TH_LOG("%s", self->q[0].reason);
	EXPECT_TRUE(tenant_idle(self, "mnv2"));
	/* SIGKILL sent, the process reaped when its pidfd says so */
	EXPECT_TRUE(pump(self, process_reaped, &pid, DONE_MS, NULL));
	EXPECT_EQ(-1, kill(pid, 0)); /* killed and reaped */
	EXPECT_EQ(ESRCH, errno);
}

TEST_HARNESS_MAIN
