// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's serving core (daemon/serving.c) with real executor processes
 * running models/mobilenet_v2.model, driven as an event loop would: the
 * test polls the fds the module names and calls back in. A real profile is
 * made once, by bin/coloc-profile with one iteration, in a temporary cache.
 * Times (submit to output, SIGKILL to cores free) are printed, never
 * asserted: the machine is shared.
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
#include "executor.h"
#include "profile_host.h"
#include "reference.h"
#include "serving.h"
#include "testutil.h"

#define READY_MS 180000
#define DONE_MS 120000
#define QOS_NS 60000000000ull /* 60 s: nothing is dropped on a loaded machine */
#define MAX_Q 64
#define TOL 1e-3f

static char cache_dir[64]; /* made once, shared by the forked tests */

__attribute__((constructor)) static void make_cache_dir(void)
{
	tu_shared_tmpdir("serving-test", cache_dir, sizeof(cache_dir));
}

static void model_path(char *buf, size_t len, const char *name)
{
	const char *root = getenv("COLOC_ROOT");

	snprintf(buf, len, "%s/models/%s.model", root ? root : ".", name);
}

/* One query as the test sees it: its completion, and a copy of its output. */
struct qrec {
	bool done;
	enum serving_status status;
	char reason[256];
	uint64_t latency_ns, exec_ns;
	struct serving_breakdown parts;
	float *out;
	size_t out_bytes;
};

static void on_done(void *ctx, const struct serving_completion *c)
{
	struct qrec *r = ctx;

	r->done = true;
	r->status = c->status;
	snprintf(r->reason, sizeof(r->reason), "%s", c->reason);
	r->latency_ns = c->latency_ns;
	r->exec_ns = c->exec_ns;
	r->parts = c->parts;
	r->out_bytes = c->output_bytes;
	if (c->output) {
		r->out = malloc(c->output_bytes);
		if (r->out)
			memcpy(r->out, c->output, c->output_bytes);
	}
}

struct watched {
	int fds[16];
	int nr;
	int adds, removes;
	/* tenant_changed calls, as "name:state:pid[,pid...]" */
	char events[32][96];
	int nr_events;
};

static int on_watch(void *ctx, int fd, bool add)
{
	struct watched *w = ctx;

	if (add) {
		w->fds[w->nr++] = fd;
		w->adds++;
		return 0;
	}
	w->removes++;
	for (int i = 0; i < w->nr; i++)
		if (w->fds[i] == fd) {
			w->fds[i] = w->fds[--w->nr];
			break;
		}
	return 0;
}

static void on_tenant(void *ctx, const char *name, enum serving_tenant_state state,
		      const pid_t *pids, int nr_pids)
{
	struct watched *w = ctx;
	char *e;
	size_t len;

	if (w->nr_events >= 32)
		return;
	e = w->events[w->nr_events++];
	len = (size_t)snprintf(e, sizeof(w->events[0]), "%s:%s:", name, serving_state_name(state));
	for (int i = 0; i < nr_pids && len < sizeof(w->events[0]); i++)
		len += (size_t)snprintf(e + len, sizeof(w->events[0]) - len, "%s%d", i ? "," : "",
					(int)pids[i]);
	if (!nr_pids && len < sizeof(w->events[0]))
		snprintf(e + len, sizeof(w->events[0]) - len, "0");
}

FIXTURE(serving)
{
	struct serving *s;
	struct watched w;
	char model[512];
	size_t in_bytes;
	float *input;
	struct qrec q[MAX_Q];
	bool executor_lanes; /* serving_config's, for make_serving */
};

static int make_serving(FIXTURE_DATA(serving) * self, const char *policy, int max_queue,
			int max_total, const char *cache, struct coloc_err *err)
{
	char bin[512];
	struct serving_config cfg = { .executor = tu_bin("coloc-executor", bin, sizeof(bin)),
				      .cache_dir = cache,
				      .policy = policy,
				      .max_queue = max_queue,
				      .max_queue_total = max_total,
				      .executor_lanes = self->executor_lanes,
				      .watch = on_watch,
				      .tenant_changed = on_tenant,
				      .ctx = &self->w };

	serving_destroy(self->s);
	self->s = NULL;
	return serving_create(&cfg, &self->s, err);
}

FIXTURE_SETUP(serving)
{
	struct coloc_err err = { 0 };
	struct model *m;
	struct profile *p;
	char bin[512], cmd[2048], out[4096];

	model_path(self->model, sizeof(self->model), "mobilenet_v2");
	if (access(self->model, R_OK))
		SKIP(return, "%s not found (set COLOC_ROOT to the repo root)", self->model);
	ASSERT_NE(0, cache_dir[0]);
	m = model_load(self->model, &err);
	ASSERT_NE(NULL, m) TH_LOG("%s", coloc_err_str(&err));
	/* The first test makes the profile; the ones after find it in the cache. */
	p = profile_table_find(self->model, m, cache_dir, &err);
	if (!p) {
		ASSERT_EQ(-ENOENT, err.code) TH_LOG("%s", coloc_err_str(&err));
		snprintf(cmd, sizeof(cmd),
			 "%s '%s' -o '%s/mnv2.profile' --iters 1 --levels 50 --force "
			 "--cache-dir '%s'",
			 tu_bin("coloc-profile", bin, sizeof(bin)), self->model, cache_dir,
			 cache_dir);
		ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s: %s", cmd, out);
		coloc_err_clear(&err);
		p = profile_table_find(self->model, m, cache_dir, &err);
		ASSERT_NE(NULL, p) TH_LOG("%s", coloc_err_str(&err));
	}
	profile_free(p);
	model_free(m);
	ASSERT_EQ(0, make_serving(self, NULL, 0, 0, cache_dir, &err))
	TH_LOG("%s", coloc_err_str(&err));
}

FIXTURE_TEARDOWN(serving)
{
	serving_destroy(self->s);
	for (int i = 0; i < MAX_Q; i++)
		free(self->q[i].out);
	free(self->input);
}

/* Polls the module's fds as an event loop would, until cond(self) or timeout_ms. */
typedef bool (*cond_fn)(FIXTURE_DATA(serving) * self, void *arg);

static bool pump(FIXTURE_DATA(serving) * self, cond_fn cond, void *arg, int timeout_ms,
		 void (*each)(FIXTURE_DATA(serving) * self, void *arg))
{
	uint64_t end = tu_now_ns() + (uint64_t)timeout_ms * 1000000ull;

	while (!cond(self, arg)) {
		struct pollfd pfd[16];
		int fds[16], n = serving_fds(self->s, fds, 16), wait, left;

		if (tu_now_ns() >= end)
			return false;
		for (int i = 0; i < n; i++)
			pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
		wait = serving_next_timeout_ms(self->s);
		left = (int)((end - tu_now_ns()) / 1000000) + 1;
		if (wait < 0 || wait > left)
			wait = left;
		if (poll(pfd, n, wait) <= 0) {
			serving_tick(self->s);
			continue;
		}
		for (int i = 0; i < n; i++)
			if (pfd[i].revents)
				serving_handle_fd(self->s, pfd[i].fd);
		if (each)
			each(self, arg);
	}
	return true;
}

static bool nothing_watched(FIXTURE_DATA(serving) * self, void *arg)
{
	(void)arg;
	return self->w.nr == 0;
}

static bool tenant_in_state(FIXTURE_DATA(serving) * self, void *arg)
{
	const char **want = arg; /* name, state name */
	struct serving_tenant_info info;

	return !serving_tenant_info(self->s, want[0], &info) &&
	       !strcmp(serving_state_name(info.state), want[1]);
}

static bool tenant_gone(FIXTURE_DATA(serving) * self, void *arg)
{
	struct serving_tenant_info info;

	return serving_tenant_info(self->s, arg, &info) == -ENOENT;
}

/* arg: int[2], the first and one past the last query record to wait for */
static bool queries_done(FIXTURE_DATA(serving) * self, void *arg)
{
	const int *range = arg;

	for (int i = range[0]; i < range[1]; i++)
		if (!self->q[i].done)
			return false;
	return true;
}

static int admit_executors(FIXTURE_DATA(serving) * self, const char *name, uint64_t qos_ns,
			   int executors, struct coloc_err *err)
{
	struct serving_tenant_spec spec = { .name = name,
					    .model_name = self->model,
					    .model_fd = tu_sealed_copy(self->model),
					    .weights_fd = -1,
					    .qos_ns = qos_ns,
					    .executors = executors };
	int ret;

	if (spec.model_fd < 0)
		return coloc_err_set(err, spec.model_fd, "%s: %s", self->model,
				     strerror(-spec.model_fd));
	ret = serving_admit_wait(self->s, &spec, READY_MS, err);
	close(spec.model_fd);
	return ret;
}

static int admit(FIXTURE_DATA(serving) * self, const char *name, uint64_t qos_ns,
		 struct coloc_err *err)
{
	return admit_executors(self, name, qos_ns, 0, err);
}

static bool wait_ready(FIXTURE_DATA(serving) * self, const char *name)
{
	const char *want[2] = { name, "ready" };

	return pump(self, tenant_in_state, want, READY_MS, NULL);
}

/* A deterministic input of the right size (values in [-1, 1)). */
static void make_input(FIXTURE_DATA(serving) * self, const char *name)
{
	struct serving_tenant_info info;

	if (serving_tenant_info(self->s, name, &info))
		return;
	self->in_bytes = info.in_bytes;
	free(self->input);
	self->input = malloc(self->in_bytes);
	for (size_t i = 0; self->input && i < self->in_bytes / sizeof(float); i++)
		self->input[i] = (float)((i * 2654435761u) % 2000) / 1000.0f - 1.0f;
}

static int submit(FIXTURE_DATA(serving) * self, const char *name, int rec, struct coloc_err *err)
{
	return serving_submit(self->s, name, self->input, self->in_bytes, on_done, &self->q[rec],
			      NULL, err);
}

TEST_F(serving, submit__outputs_equal_in_process_run)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;
	size_t out_elems = 0;
	float *want, max_err, max_ref;
	int range[2] = { 0, 1 };

	ASSERT_EQ(0, admit(self, "mnv2", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, serving_tenant_info(self->s, "mnv2", &info));
	EXPECT_GT(info.pid, 0);
	EXPECT_EQ(3, self->w.nr); /* its doorbell, its pidfd and its output */
	ASSERT_TRUE(wait_ready(self, "mnv2"));
	make_input(self, "mnv2");
	want = tu_model_outputs(self->model, self->input, &out_elems);
	ASSERT_NE(NULL, want);

	/* one query alone: its latency is the submit -> output round trip */
	ASSERT_EQ(0, submit(self, "mnv2", 0, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	ASSERT_EQ(SERVING_QUERY_OK, self->q[0].status) TH_LOG("%s", self->q[0].reason);
	TH_LOG("one mobilenet_v2 query alone, submit -> output: %.3f ms, of which %.3f ms inside "
	       "the executor's block (profiled solo %.3f ms; loaded machine)",
	       self->q[0].latency_ns / 1e6, self->q[0].exec_ns / 1e6, info.solo_ns / 1e6);

	/* then 8 at once: more than the executor's 4 slots, so some wait for one */
	for (int i = 1; i < 9; i++)
		ASSERT_EQ(0, submit(self, "mnv2", i, &err)) TH_LOG("%s", coloc_err_str(&err));
	range[1] = 9;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	for (int i = 0; i < 9; i++) {
		ASSERT_EQ(SERVING_QUERY_OK, self->q[i].status) TH_LOG("%s", self->q[i].reason);
		ASSERT_EQ(out_elems * sizeof(float), self->q[i].out_bytes);
		ref_compare(self->q[i].out, want, (int64_t)out_elems, &max_err, &max_ref);
		EXPECT_LE(max_err, TOL * (1.0f + max_ref))
		TH_LOG("query %d: max |error| %g, max |value| %g", i, max_err, max_ref);
	}
	/* and one alone again, now that the executor has run every block once */
	ASSERT_EQ(0, submit(self, "mnv2", 9, &err)) TH_LOG("%s", coloc_err_str(&err));
	range[0] = 9;
	range[1] = 10;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	ASSERT_EQ(SERVING_QUERY_OK, self->q[9].status) TH_LOG("%s", self->q[9].reason);
	TH_LOG("the same after 9 queries: %.3f ms, of which %.3f ms inside the executor's block",
	       self->q[9].latency_ns / 1e6, self->q[9].exec_ns / 1e6);
	EXPECT_LE(self->q[9].exec_ns, self->q[9].latency_ns);
	EXPECT_GT(self->q[9].exec_ns, 0);
	ASSERT_EQ(0, serving_tenant_info(self->s, "mnv2", &info));
	EXPECT_EQ(10, info.stats.served);
	EXPECT_EQ(10, info.stats.offered);
	EXPECT_EQ(1.0, info.stats.within_qos);
	EXPECT_LE(info.stats.p50_ns, info.stats.p95_ns);
	EXPECT_LE(info.stats.p95_ns, info.stats.p99_ns);
	EXPECT_EQ(0, info.queued + info.in_flight);
	free(want);
}

TEST_F(serving, breakdown__parts_add_up_to_the_latency_compute_is_the_executors)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;
	int range[2] = { 0, 3 };

	ASSERT_EQ(0, admit(self, "mnv2", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(wait_ready(self, "mnv2"));
	make_input(self, "mnv2");
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, submit(self, "mnv2", i, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	for (int i = 0; i < 3; i++) {
		const struct qrec *q = &self->q[i];
		uint64_t sum = 0;

		ASSERT_EQ(SERVING_QUERY_OK, q->status) TH_LOG("%s", q->reason);
		for (int p = 0; p < SERVING_NR_PARTS; p++) {
			TH_LOG("query %d %s: %.3f ms", i, serving_part_names[p],
			       q->parts.ns[p] / 1e6);
			sum += q->parts.ns[p];
		}
		EXPECT_EQ(q->latency_ns, sum);
		/* the executor's own block times, which it measures inside its run */
		EXPECT_EQ(q->exec_ns, q->parts.ns[COLOC_PART_COMPUTE]);
		/* a doorbell and a completion each take a system call and a wake-up */
		EXPECT_GT(q->parts.ns[COLOC_PART_DISPATCH], 0);
		EXPECT_GT(q->parts.ns[COLOC_PART_NOTICE], 0);
	}
	ASSERT_EQ(0, serving_tenant_info(self->s, "mnv2", &info));
	for (int p = 0; p < SERVING_NR_PARTS; p++) {
		uint64_t v[3], lo = UINT64_MAX, hi = 0;

		for (int i = 0; i < 3; i++) {
			v[i] = self->q[i].parts.ns[p];
			lo = v[i] < lo ? v[i] : lo;
			hi = v[i] > hi ? v[i] : hi;
		}
		/* nearest rank of 3: the middle one, and the largest */
		EXPECT_EQ(serving_stats_percentile(v, 3, 50), info.stats.part_p50_ns[p]);
		EXPECT_EQ(hi, info.stats.part_p95_ns[p]);
		EXPECT_LE(lo, info.stats.part_p50_ns[p]);
	}
}

/* The solo latency as the profile says, computed here from the file's cells. */
static uint64_t profiled_solo_ns(const char *model_path, int nr_cpus)
{
	struct coloc_err err = { 0 };
	struct model *m = model_load(model_path, &err);
	struct profile *p = m ? profile_table_find(model_path, m, cache_dir, &err) : NULL;
	int cores = p ? (nr_cpus < p->nr_cores ? nr_cpus : p->nr_cores) : 0;
	uint64_t sum = 0;

	for (int l = 0; p && l < p->nr_layers; l++) {
		uint64_t best = UINT64_MAX;

		for (int v = 0; v < p->layers[l].nr_versions; v++) {
			uint64_t c = *profile_latency_cell_const(p, l, v, cores, 0);

			if (c && c < best)
				best = c;
		}
		sum += best;
	}
	profile_free(p);
	model_free(m);
	return sum;
}

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

TEST_F(serving, drop__query_past_its_deadline_dropped_with_reason)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;
	cpu_set_t mask;
	uint64_t solo_ns, t0, waited;
	int range[2] = { 0, 1 };

	sched_getaffinity(0, sizeof(mask), &mask);
	solo_ns = profiled_solo_ns(self->model, CPU_COUNT(&mask));
	ASSERT_GT(solo_ns, 0);
	/* the tightest QoS admitted; queries sent while the executor loads wait past it */
	ASSERT_EQ(0, admit(self, "late", solo_ns, &err)) TH_LOG("%s", coloc_err_str(&err));
	make_input(self, "late");
	t0 = tu_now_ns();
	ASSERT_EQ(0, submit(self, "late", 0, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(wait_ready(self, "late"));
	waited = tu_now_ns() - t0;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	if (waited <= solo_ns)
		SKIP(return, "the executor was ready in %.3f ms, within the QoS %.3f ms",
			   waited / 1e6, solo_ns / 1e6);
	EXPECT_EQ(SERVING_QUERY_DROPPED, self->q[0].status) TH_LOG("%s", self->q[0].reason);
	EXPECT_NE(NULL,
		  strstr(self->q[0].reason, policy_drop_reason_name(POLICY_DROP_DEADLINE_PASSED)))
	TH_LOG("%s", self->q[0].reason);
	ASSERT_EQ(0, serving_tenant_info(self->s, "late", &info));
	EXPECT_EQ(1, info.stats.dropped);
	EXPECT_EQ(0, info.stats.served);
	EXPECT_STREQ(self->q[0].reason, info.last_drop);
	EXPECT_EQ(0, info.queued + info.in_flight);
}

struct overlap {
	int both_busy; /* observations with both tenants holding cores */
	int bad; /* observations breaking a rule */
	char why[256];
};

/* Checks the core table after every event: each busy core has one tenant, per tenant one block. */
static void check_cores(FIXTURE_DATA(serving) * self, void *arg)
{
	struct overlap *o = arg;
	struct serving_core_info cores[POLICY_MAX_CPUS];
	int n = serving_cores(self->s, cores, POLICY_MAX_CPUS), busy_a = 0, busy_b = 0;
	uint64_t qa = 0, qb = 0;

	for (int i = 0; i < n; i++) {
		if (!cores[i].busy)
			continue;
		if (!strcmp(cores[i].tenant, "a")) {
			if (busy_a++ && cores[i].query_id != qa)
				snprintf(o->why, sizeof(o->why), "tenant a runs two blocks");
			qa = cores[i].query_id;
		} else {
			if (busy_b++ && cores[i].query_id != qb)
				snprintf(o->why, sizeof(o->why), "tenant b runs two blocks");
			qb = cores[i].query_id;
		}
		if (cores[i].last_layer <= cores[i].first_layer || !cores[i].versions)
			snprintf(o->why, sizeof(o->why), "core %d: empty block", cores[i].cpu);
	}
	if (o->why[0])
		o->bad++;
	if (busy_a && busy_b)
		o->both_busy++;
}

static bool served_and_checked(FIXTURE_DATA(serving) * self, void *arg)
{
	int range[2] = { 0, 12 };

	(void)arg;
	return queries_done(self, range);
}

TEST_F(serving, two_tenants__both_served_no_core_shared)
{
	struct coloc_err err = { 0 };
	struct overlap o = { 0 };
	struct serving_tenant_info a, b;
	const char *last;

	/* static splits the cores between the tenants, so their blocks run side by side */
	ASSERT_EQ(0, make_serving(self, "static", 0, 0, cache_dir, &err)) TH_LOG("%s", err.msg);
	ASSERT_EQ(0, admit(self, "a", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, admit(self, "b", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(wait_ready(self, "a"));
	ASSERT_TRUE(wait_ready(self, "b"));
	make_input(self, "a");
	for (int i = 0; i < 6; i++) {
		ASSERT_EQ(0, submit(self, "a", i, &err)) TH_LOG("%s", coloc_err_str(&err));
		ASSERT_EQ(0, submit(self, "b", 6 + i, &err)) TH_LOG("%s", coloc_err_str(&err));
	}
	ASSERT_TRUE(pump(self, served_and_checked, &o, DONE_MS, check_cores));
	EXPECT_EQ(0, o.bad) TH_LOG("%s", o.why);
	for (int i = 0; i < 12; i++) {
		EXPECT_EQ(SERVING_QUERY_OK, self->q[i].status)
		TH_LOG("%d: %s", i, self->q[i].reason);
	}
	/* both executors computed the same model on the same input */
	for (int i = 1; i < 12; i++) {
		float max_err, max_ref;

		ASSERT_EQ(self->q[0].out_bytes, self->q[i].out_bytes);
		ref_compare(self->q[i].out, self->q[0].out,
			    (int64_t)(self->q[0].out_bytes / sizeof(float)), &max_err, &max_ref);
		EXPECT_LE(max_err, TOL * (1.0f + max_ref)) TH_LOG("query %d", i);
	}
	ASSERT_EQ(0, serving_tenant_info(self->s, "a", &a));
	ASSERT_EQ(0, serving_tenant_info(self->s, "b", &b));
	EXPECT_EQ(6, a.stats.served);
	EXPECT_EQ(6, b.stats.served);
	TH_LOG("observations with both tenants' blocks running at once: %d", o.both_busy);
	/* policy_check_output accepted every round: no core in two decisions, none outside free */
	EXPECT_EQ(0, serving_policy_errors(self->s, &last)) TH_LOG("%s", last);
}

static bool tenant_busy(FIXTURE_DATA(serving) * self, void *arg)
{
	struct serving_core_info cores[POLICY_MAX_CPUS];
	int n = serving_cores(self->s, cores, POLICY_MAX_CPUS);

	for (int i = 0; i < n; i++)
		if (cores[i].busy && !strcmp(cores[i].tenant, arg))
			return true;
	return false;
}

/* arg: a pid_t; colocd reaps an executor it stopped or killed without waiting for it */
static bool process_reaped(FIXTURE_DATA(serving) * self, void *arg)
{
	(void)self;
	return kill(*(pid_t *)arg, 0) && errno == ESRCH;
}

static bool fds_watched_are(FIXTURE_DATA(serving) * self, void *arg)
{
	return self->w.nr == *(int *)arg;
}

static bool tenant_idle(FIXTURE_DATA(serving) * self, void *arg)
{
	return !tenant_busy(self, arg);
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
	t0 = tu_now_ns();
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_TRUE(pump(self, tenant_in_state, failed, DONE_MS, NULL));
	t1 = tu_now_ns();
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

TEST_F(serving, submit__queue_bounds_reject_the_excess_with_a_reason)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;
	int accepted = 0, rejected = 0, range[2] = { 0, 0 };

	ASSERT_EQ(0, make_serving(self, NULL, 8, 12, cache_dir, &err)) TH_LOG("%s", err.msg);
	ASSERT_EQ(0, admit(self, "a", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, admit(self, "b", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	/* while a is still starting: its queries wait, its queue fills */
	make_input(self, "a");
	for (int i = 0; i < 20; i++) {
		int ret = submit(self, "a", i, &err);

		if (!ret) {
			accepted++;
			continue;
		}
		rejected++;
		EXPECT_EQ(-EAGAIN, ret);
		EXPECT_NE(NULL, strstr(err.msg, "8 queries queued or running"))
		TH_LOG("%s", err.msg);
		coloc_err_clear(&err);
	}
	EXPECT_EQ(8, accepted);
	EXPECT_EQ(12, rejected);
	/* b has room of its own but the total (12) leaves it 4 */
	for (int i = 20; i < 30; i++) {
		int ret = submit(self, "b", i, &err);

		if (i < 24) {
			EXPECT_EQ(0, ret) TH_LOG("%s", coloc_err_str(&err));
			continue;
		}
		EXPECT_EQ(-EAGAIN, ret);
		EXPECT_NE(NULL, strstr(err.msg, "over all tenants")) TH_LOG("%s", err.msg);
		coloc_err_clear(&err);
	}
	ASSERT_EQ(0, serving_tenant_info(self->s, "a", &info));
	EXPECT_EQ(12, info.stats.rejected);
	EXPECT_EQ(20, info.stats.offered);
	EXPECT_NE(NULL, strstr(info.last_reject, "the most it may")) TH_LOG("%s", info.last_reject);
	/* nothing accepted is lost */
	range[1] = 8;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	range[0] = 20;
	range[1] = 24;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	for (int i = 0; i < 24; i++) {
		if (i >= 8 && i < 20)
			continue;
		EXPECT_EQ(SERVING_QUERY_OK, self->q[i].status)
		TH_LOG("%d: %s", i, self->q[i].reason);
	}
	for (int i = 8; i < 20; i++)
		EXPECT_FALSE(self->q[i].done);
}

/* Blocks of tenant `name` running now, and whether two of them are of different queries. */
static int blocks_of(FIXTURE_DATA(serving) * self, const char *name, bool *two_queries)
{
	struct serving_core_info cores[POLICY_MAX_CPUS];
	int n = serving_cores(self->s, cores, POLICY_MAX_CPUS), nr = 0;
	uint64_t first = 0;

	*two_queries = false;
	for (int i = 0; i < n; i++) {
		if (!cores[i].busy || strcmp(cores[i].tenant, name))
			continue;
		if (nr++ && cores[i].query_id != first)
			*two_queries = true;
		first = first ? first : cores[i].query_id;
	}
	return nr;
}

/*
 * model-wise gives each query one core (the fewest that meet a 60 s QoS):
 * with two executors a tenant's first two queries start at once, on a core
 * each; with one, the second waits for the first.
 */
TEST_F(serving, executors__two_run_two_queries_of_a_tenant_at_once)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;
	int range[2] = { 0, 6 };
	bool two;
	char want[96];

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs two CPUs to run two blocks at once");
	/* the two executors as two lanes of one process (docs/design/lanes.md) */
	self->executor_lanes = true;
	ASSERT_EQ(0, make_serving(self, "model-wise", 0, 0, cache_dir, &err))
	TH_LOG("%s", err.msg);
	ASSERT_EQ(0, admit_executors(self, "two", QOS_NS, 2, &err))
	TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, admit(self, "one", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, serving_tenant_info(self->s, "two", &info));
	EXPECT_EQ(2, info.executors);
	EXPECT_GT(info.pids[0], 0);
	/* two lanes of one process (docs/design/lanes.md) */
	EXPECT_EQ(info.pids[0], info.pids[1]);
	EXPECT_EQ(info.pid, info.pids[0]);
	/* a doorbell and a pidfd per lane, the process's log once; "one"'s three */
	EXPECT_EQ(8, self->w.nr);
	/* the attribution is told the process once */
	snprintf(want, sizeof(want), "two:starting:%d", (int)info.pids[0]);
	EXPECT_STREQ(want, self->w.events[0]);
	ASSERT_TRUE(wait_ready(self, "two"));
	ASSERT_TRUE(wait_ready(self, "one"));
	make_input(self, "two");

	ASSERT_EQ(0, submit(self, "one", 0, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, submit(self, "one", 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(1, blocks_of(self, "one", &two));
	range[1] = 2;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));

	ASSERT_EQ(0, submit(self, "two", 2, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, submit(self, "two", 3, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(2, blocks_of(self, "two", &two));
	EXPECT_TRUE(two);
	range[0] = 2;
	range[1] = 4;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	for (int i = 0; i < 4; i++) {
		EXPECT_EQ(SERVING_QUERY_OK, self->q[i].status)
		TH_LOG("%d: %s", i, self->q[i].reason);
	}
	ASSERT_EQ(0, serving_tenant_info(self->s, "two", &info));
	EXPECT_EQ(2, info.stats.served);
	EXPECT_EQ(0, serving_policy_errors(self->s, NULL));
}

/* Query k's own input: the shared one scaled by 1 + k / 8, so each output differs. */
static float *query_input(FIXTURE_DATA(serving) * self, int k)
{
	float *in = malloc(self->in_bytes);

	for (size_t i = 0; in && i < self->in_bytes / sizeof(float); i++)
		in[i] = self->input[i] * (1.0f + (float)k / 8);
	return in;
}

/* n queries' own inputs and their outputs computed in-process; false when out of memory. */
static bool own_inputs(FIXTURE_DATA(serving) * self, int n, float **in, float **want,
		       size_t *out_elems)
{
	for (int k = 0; k < n; k++) {
		in[k] = query_input(self, k);
		want[k] = in[k] ? tu_model_outputs(self->model, in[k], out_elems) : NULL;
		if (!want[k])
			return false;
	}
	return true;
}

/* Whether queries 0..n-1 were served with the outputs of their own inputs; why not into why. */
static bool own_outputs(FIXTURE_DATA(serving) * self, int n, float **want, size_t out_elems,
			char *why, size_t len)
{
	float max_err, max_ref;

	for (int k = 0; k < n; k++) {
		if (self->q[k].status != SERVING_QUERY_OK ||
		    self->q[k].out_bytes != out_elems * sizeof(float)) {
			snprintf(why, len, "query %d: status %d, %zu bytes: %s", k,
				 (int)self->q[k].status, self->q[k].out_bytes, self->q[k].reason);
			return false;
		}
		ref_compare(self->q[k].out, want[k], (int64_t)out_elems, &max_err, &max_ref);
		if (max_err > TOL * (1.0f + max_ref)) {
			snprintf(why, len, "query %d: max |error| %g, max |value| %g", k, max_err,
				 max_ref);
			return false;
		}
	}
	return true;
}

/*
 * Queries take slots on both executors in turn. With the first executor
 * stopped (SIGSTOP) inside its first block, the queries it holds and that
 * have not started move to the second one as it frees up: into a free slot,
 * or swapping inputs with a later query there. Every query gets the output
 * of its own input (computed here in-process), so a wrong copy would show.
 */
TEST_F(serving, executors__queries_move_off_a_stopped_executor_with_their_inputs)
{
	enum { N = 12 };
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;
	float *in[N] = { 0 }, *want[N] = { 0 };
	char why[160];
	int range[2] = { 0, 0 };
	size_t out_elems = 0;

	ASSERT_EQ(0, make_serving(self, "model-wise", 0, 0, cache_dir, &err))
	TH_LOG("%s", err.msg);
	ASSERT_EQ(0, admit_executors(self, "two", QOS_NS, 2, &err))
	TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(wait_ready(self, "two"));
	make_input(self, "two");
	ASSERT_TRUE(own_inputs(self, N, in, want, &out_elems));
	ASSERT_EQ(0, serving_tenant_info(self->s, "two", &info));
	/* stopped before its first block: the block is handed over but does not run */
	ASSERT_EQ(0, kill(info.pids[0], SIGSTOP));
	for (int k = 0; k < N; k++) {
		ASSERT_EQ(0, serving_submit(self->s, "two", in[k], self->in_bytes, on_done,
					    &self->q[k], NULL, &err))
		TH_LOG("%s", coloc_err_str(&err));
	}
	/*
	 * The second executor serves query 1, then query 2 (on the stopped one,
	 * not started) and 3; resumed well inside the hang limit (2 s at least).
	 */
	range[0] = 1;
	range[1] = 4;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	EXPECT_FALSE(self->q[0].done);
	ASSERT_EQ(0, kill(info.pids[0], SIGCONT));
	range[0] = 0;
	range[1] = N;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	ASSERT_TRUE(own_outputs(self, N, want, out_elems, why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_EQ(0, serving_tenant_info(self->s, "two", &info));
	EXPECT_GE(info.moved, 1);
	TH_LOG("queries moved to the running executor: %llu", (unsigned long long)info.moved);
	EXPECT_EQ(0, serving_policy_errors(self->s, NULL));
	for (int k = 0; k < N; k++) {
		free(in[k]);
		free(want[k]);
	}
}

/*
 * layer-wise runs each layer as a block of its own on one core, so with two
 * executors a tenant's queries interleave block by block: each waits between
 * its blocks on its own executor while the other runs, and queries that have
 * not started move to whichever is idle. Every query still gets its own
 * input's output, and no round breaks the policy's contract.
 */
TEST_F(serving, executors__queries_interleaved_block_by_block_keep_their_own_outputs)
{
	enum { N = 10 };
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;
	float *in[N] = { 0 }, *want[N] = { 0 };
	char why[160];
	int range[2] = { 0, N };
	size_t out_elems = 0;
	const char *last;

	ASSERT_EQ(0, make_serving(self, "layer-wise", 0, 0, cache_dir, &err))
	TH_LOG("%s", err.msg);
	ASSERT_EQ(0, admit_executors(self, "two", QOS_NS, 2, &err))
	TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(wait_ready(self, "two"));
	make_input(self, "two");
	ASSERT_TRUE(own_inputs(self, N, in, want, &out_elems));
	for (int k = 0; k < N; k++) {
		ASSERT_EQ(0, serving_submit(self->s, "two", in[k], self->in_bytes, on_done,
					    &self->q[k], NULL, &err))
		TH_LOG("%s", coloc_err_str(&err));
	}
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	ASSERT_TRUE(own_outputs(self, N, want, out_elems, why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_EQ(0, serving_tenant_info(self->s, "two", &info));
	EXPECT_EQ(N, info.stats.served);
	EXPECT_EQ(0, serving_policy_errors(self->s, &last)) TH_LOG("%s", last);
	for (int k = 0; k < N; k++) {
		free(in[k]);
		free(want[k]);
	}
}

TEST_F(serving, executors__one_killed_fails_the_tenant_and_stops_the_other)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info a;
	const char *failed[2] = { "a", "failed" };
	int range[2] = { 0, 4 };
	char want[96];
	pid_t pids[2];

	ASSERT_EQ(-EINVAL, admit_executors(self, "a", QOS_NS, SERVING_MAX_EXECUTORS + 1, &err));
	EXPECT_NE(NULL, strstr(err.msg, "executors")) TH_LOG("%s", err.msg);
	coloc_err_clear(&err);
	/* lanes of one process: a kill reaches both, as a failing executor failed both */
	self->executor_lanes = true;
	ASSERT_EQ(0, make_serving(self, "model-wise", 0, 0, cache_dir, &err))
	TH_LOG("%s", err.msg);
	ASSERT_EQ(0, admit_executors(self, "a", QOS_NS, 2, &err))
	TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, admit(self, "b", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(wait_ready(self, "a"));
	ASSERT_TRUE(wait_ready(self, "b"));
	make_input(self, "a");
	ASSERT_EQ(0, serving_tenant_info(self->s, "a", &a));
	pids[0] = a.pids[0];
	pids[1] = a.pids[1];
	ASSERT_EQ(0, kill(pids[1], SIGKILL));
	ASSERT_TRUE(pump(self, tenant_in_state, failed, DONE_MS, NULL));
	ASSERT_EQ(0, serving_tenant_info(self->s, "a", &a));
	EXPECT_NE(NULL, strstr(a.reason, "killed by signal 9")) TH_LOG("%s", a.reason);
	EXPECT_EQ(0, a.pids[0]);
	EXPECT_EQ(0, a.pids[1]);
	/* both reaped: the one killed and the one colocd stopped with it (not waited for) */
	EXPECT_TRUE(pump(self, process_reaped, &pids[0], DONE_MS, NULL));
	EXPECT_EQ(-1, kill(pids[0], 0));
	EXPECT_EQ(ESRCH, errno);
	EXPECT_EQ(-1, kill(pids[1], 0));
	EXPECT_EQ(ESRCH, errno);
	/* one process, its two lanes: killing it is killing both */
	EXPECT_EQ(pids[0], pids[1]);
	snprintf(want, sizeof(want), "a:failed:%d", (int)pids[0]);
	EXPECT_STREQ(want, self->w.events[self->w.nr_events - 1]);
	/* b's three fds only, once the lane stopped with the other is retired (on its own time) */
	EXPECT_TRUE(pump(self, fds_watched_are, &(int){ 3 }, DONE_MS, NULL))
	TH_LOG("%d fds watched", self->w.nr);
	/* b serves on */
	ASSERT_EQ(0, submit(self, "b", 0, &err)) TH_LOG("%s", coloc_err_str(&err));
	range[1] = 1;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	EXPECT_EQ(SERVING_QUERY_OK, self->q[0].status) TH_LOG("%s", self->q[0].reason);
	/* a restarts with two new executors and serves again */
	ASSERT_EQ(0, serving_restart(self->s, "a", &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(wait_ready(self, "a"));
	ASSERT_EQ(0, serving_tenant_info(self->s, "a", &a));
	EXPECT_GT(a.pids[0], 0);
	EXPECT_GT(a.pids[1], 0);
	for (int i = 1; i < 4; i++)
		ASSERT_EQ(0, submit(self, "a", i, &err)) TH_LOG("%s", coloc_err_str(&err));
	range[0] = 1;
	range[1] = 4;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	for (int i = 1; i < 4; i++) {
		EXPECT_EQ(SERVING_QUERY_OK, self->q[i].status)
		TH_LOG("%d: %s", i, self->q[i].reason);
	}
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
	t0 = tu_now_ns();
	ASSERT_EQ(0, submit(self, "mnv2", 0, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(tenant_busy(self, "mnv2"));
	ASSERT_TRUE(pump(self, tenant_in_state, failed, DONE_MS, NULL));
	TH_LOG("stopped executor declared hung after %.3f ms", (tu_now_ns() - t0) / 1e6);
	/* the limit is 50x the prediction + 2 s: never sooner than the slack */
	EXPECT_GE(tu_now_ns() - t0, SERVING_HANG_SLACK_NS / 2);
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

/*
 * Under fcfs, with one tenant, each query runs as one block on all cores,
 * predicted at the profiled solo latency on all cores (solo_ns; temporal
 * would pick the count its profile finds fastest), and its exec_ns is that block's
 * measured time: the prediction error colocd reports is recomputed here
 * from what each completion says.
 */
TEST_F(serving, block__prediction_error_matches_the_completions)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;
	double ape = 0, signed_err = 0;
	int range[2] = { 0, 5 };

	ASSERT_EQ(0, make_serving(self, "fcfs", 0, 0, cache_dir, &err)) TH_LOG("%s", err.msg);
	ASSERT_EQ(0, admit(self, "a", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(wait_ready(self, "a"));
	ASSERT_EQ(0, serving_tenant_info(self->s, "a", &info));
	EXPECT_EQ(0, info.stats.blocks);
	EXPECT_EQ(0.0, info.stats.prediction_mape);
	make_input(self, "a");
	for (int i = range[0]; i < range[1]; i++)
		ASSERT_EQ(0, submit(self, "a", i, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	ASSERT_EQ(0, serving_tenant_info(self->s, "a", &info));
	ASSERT_NE(0, info.solo_ns);
	for (int i = range[0]; i < range[1]; i++) {
		double e;

		ASSERT_EQ(SERVING_QUERY_OK, self->q[i].status) TH_LOG("%s", self->q[i].reason);
		ASSERT_NE(0, self->q[i].exec_ns);
		e = ((double)self->q[i].exec_ns - (double)info.solo_ns) /
		    (double)self->q[i].exec_ns;
		ape += e < 0 ? -e : e;
		signed_err += e;
	}
	EXPECT_EQ(range[1] - range[0], info.stats.blocks);
	EXPECT_LE(fabs(ape / (range[1] - range[0]) - info.stats.prediction_mape), 1e-9);
	EXPECT_LE(fabs(signed_err / (range[1] - range[0]) - info.stats.prediction_bias), 1e-9);
	TH_LOG("fcfs, mobilenet_v2 alone: MAPE %.1f%%, bias %+.1f%% over %llu blocks",
	       100 * info.stats.prediction_mape, 100 * info.stats.prediction_bias,
	       (unsigned long long)info.stats.blocks);
}

TEST(serving_stats__block_mape_and_bias_over_two_blocks)
{
	struct serving_stats st = { 0 };
	struct serving_stats_summary sum;

	/* 900 predicted, 1000 measured: +0.1; 1500 predicted, 1000 measured: -0.5 */
	serving_stats_block(&st, 900, 1000);
	serving_stats_block(&st, 1500, 1000);
	/* no prediction, or no measurement: nothing to compare, not counted */
	serving_stats_block(&st, 0, 1000);
	serving_stats_block(&st, 1000, 0);
	serving_stats_summarise(&st, 0, &sum);
	EXPECT_EQ(2, sum.blocks);
	EXPECT_LE(fabs((0.1 + 0.5) / 2 - sum.prediction_mape), 1e-12);
	EXPECT_LE(fabs((0.1 - 0.5) / 2 - sum.prediction_bias), 1e-12);
}

TEST(serving_stats__percentile_is_nearest_rank)
{
	uint64_t v[10] = { 10, 1, 9, 2, 8, 3, 7, 4, 6, 5 }, one[1] = { 42 };

	/* nearest rank: ceil(p/100 * n)-th smallest */
	EXPECT_EQ(5, serving_stats_percentile(v, 10, 50));
	EXPECT_EQ(10, serving_stats_percentile(v, 10, 95));
	EXPECT_EQ(10, serving_stats_percentile(v, 10, 99));
	EXPECT_EQ(1, serving_stats_percentile(v, 10, 1));
	EXPECT_EQ(42, serving_stats_percentile(one, 1, 50));
	EXPECT_EQ(0, serving_stats_percentile(v, 0, 50));
}

TEST(serving_stats__rates_count_the_last_window_only)
{
	struct serving_stats st = { 0 };
	struct serving_stats_summary sum;
	uint64_t now = 100 * SERVING_STATS_WINDOW_NS;

	/* 5 old arrivals, out of the window; 20 recent ones, 15 served, 12 in QoS */
	for (int i = 0; i < 5; i++)
		serving_stats_offered(&st, now - 2 * SERVING_STATS_WINDOW_NS);
	for (int i = 0; i < 20; i++)
		serving_stats_offered(&st, now - 1000);
	for (int i = 0; i < 15; i++)
		serving_stats_served(&st, now - 500, i < 12 ? 1000 : 3000, 2000, NULL);
	serving_stats_summarise(&st, now, &sum);
	EXPECT_EQ(25, sum.offered);
	EXPECT_EQ(20.0 / (SERVING_STATS_WINDOW_NS / 1e9), sum.offered_rate);
	EXPECT_EQ(15.0 / (SERVING_STATS_WINDOW_NS / 1e9), sum.served_rate);
	EXPECT_EQ(12.0 / 15.0, sum.within_qos);
	EXPECT_EQ(1000, sum.p50_ns);
	EXPECT_EQ(3000, sum.p95_ns);
}

/* A profile of model m with one version per layer, 2 core counts, alone and one stress level. */
static struct profile *hand_profile(const struct model *m, uint64_t alone, uint64_t stressed)
{
	int *versions = calloc(m->nr_layers, sizeof(*versions)), levels[2] = { 0, 50 };
	struct profile *p;

	for (int l = 0; versions && l < m->nr_layers; l++)
		versions[l] = 1;
	p = versions ? profile_new(m->nr_layers, versions, 2, 2, levels, NULL) : NULL;
	free(versions);
	for (int l = 0; p && l < m->nr_layers; l++)
		for (int c = 1; c <= 2; c++) {
			*profile_latency_cell(p, l, 0, c, 0) = alone;
			*profile_latency_cell(p, l, 0, c, 1) = stressed;
		}
	return p;
}

TEST(profile_table__build__clamps_a_slowdown_below_one_and_says_so)
{
	struct coloc_err err = { 0 };
	char path[512];
	struct model *m;
	struct profile *dip, *rise;
	struct policy_table t;

	model_path(path, sizeof(path), "mobilenet_v2");
	m = model_load(path, &err);
	ASSERT_NE(NULL, m) TH_LOG("%s", coloc_err_str(&err));
	dip = hand_profile(m, 1000, 900);
	rise = hand_profile(m, 1000, 1200);
	ASSERT_TRUE(dip && rise);

	ASSERT_EQ(0, profile_table_build(dip, m, &t, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(1.0, t.model.level_slowdown[1]);
	EXPECT_NE(NULL, strstr(t.note, "0.900")) TH_LOG("%s", t.note);
	EXPECT_NE(NULL, strstr(t.note, "clamped")) TH_LOG("%s", t.note);
	/* the cells stay as measured */
	EXPECT_EQ(900, policy_costs_cell(&t.model, 3, 0, 1, 1));
	EXPECT_EQ(2, t.model.core_counts[1]);
	EXPECT_EQ(m->layers[3].macs, t.model.layer_ops[3]);
	policy_table_free(&t);

	ASSERT_EQ(0, profile_table_build(rise, m, &t, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(1.2, t.model.level_slowdown[1]);
	EXPECT_STREQ("", t.note);
	/* solo on all (2) cores: every layer at 1000 ns */
	EXPECT_EQ((uint64_t)m->nr_layers * 1000, policy_costs_solo_ns(&t.model, 2));
	policy_table_free(&t);
	profile_free(dip);
	profile_free(rise);
	model_free(m);
}

/*
 * The level columns follow the versions the policy takes: two versions a
 * layer, the second 1 % faster alone but inside the first's CI (so not
 * taken), 1100 against 1200 ns stressed with its CI wholly below (taken).
 * The slowdown is 1100 / 1000 = 1.1, not the fastest cells' 1100 / 990.
 */
TEST(profile_table__build__level_columns_from_the_versions_the_policy_takes)
{
	struct coloc_err err = { 0 };
	char path[512];
	struct model *m;
	struct profile *p;
	struct policy_table t;
	int *versions, levels[2] = { 0, 50 };
	/* [version][level]: latency, CI low, CI high */
	static const uint64_t cell[2][2][3] = {
		{ { 1000, 950, 1050 }, { 1200, 1150, 1250 } },
		{ { 990, 940, 1040 }, { 1100, 1050, 1140 } },
	};

	model_path(path, sizeof(path), "mobilenet_v2");
	m = model_load(path, &err);
	ASSERT_NE(NULL, m) TH_LOG("%s", coloc_err_str(&err));
	versions = calloc(m->nr_layers, sizeof(*versions));
	ASSERT_NE(NULL, versions);
	for (int l = 0; l < m->nr_layers; l++)
		versions[l] = 2;
	p = profile_new(m->nr_layers, versions, 2, 2, levels, NULL);
	free(versions);
	ASSERT_NE(NULL, p);
	for (int l = 0; l < m->nr_layers; l++)
		for (int v = 0; v < 2; v++)
			for (int c = 1; c <= 2; c++)
				for (int k = 0; k < 2; k++) {
					uint64_t *at = profile_latency_cell(p, l, v, c, k);

					*at = cell[v][k][0];
					p->ci_lo_ns[at - p->latency_ns] = cell[v][k][1];
					p->ci_hi_ns[at - p->latency_ns] = cell[v][k][2];
				}
	ASSERT_EQ(0, profile_table_build(p, m, &t, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(1.1, t.model.level_slowdown[1]);
	EXPECT_STREQ("", t.note);
	policy_table_free(&t);
	profile_free(p);
	model_free(m);
}

TEST_HARNESS_MAIN
