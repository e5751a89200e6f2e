// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd serving tenants end to end: a real colocd process, real executors
 * running models/mobilenet_v2.model, and queries through the real socket
 * with libcoloc_client (include/coloc/client.h). A profile is made once, by
 * bin/coloc-profile with one iteration, in a temporary cache that colocd is
 * pointed at. Times (round trip, SIGKILL to cores free) are printed, never
 * asserted: the machine is shared.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <json-c/json.h>
#include <bpf/bpf.h>
#include "kselftest_harness.h"
#include "coloc/client.h"
#include "coloc/protocol.h"
#include "coloc/sensor.h"
#include "executor.h"
#include "reference.h"
#include "serving_stats.h"
#include "testutil.h"

#define READY_MS 180000
#define TOL 1e-3f
#define QOS_MS 60000 /* nothing is dropped on a loaded machine */

static char cache_dir[64]; /* made once, shared by the forked tests */

__attribute__((constructor)) static void make_cache_dir(void)
{
	tu_shared_tmpdir("wire-test", cache_dir, sizeof(cache_dir));
}

FIXTURE(wire)
{
	char dir[64], sock[128], pin[128], log[128], state[128];
	char model[PATH_MAX];
	pid_t colocd;
	struct coloc_client *c;
	float *input;
	size_t in_bytes, out_bytes;
};

static pid_t start_daemon(FIXTURE_DATA(wire) * self)
{
	const char *extra[] = { "--cache-dir", cache_dir, "--state", self->state, NULL };

	self->colocd = tu_start_colocd_with(self->sock, self->pin, self->log, extra);
	return self->colocd;
}

FIXTURE_SETUP(wire)
{
	const char *root = getenv("COLOC_ROOT");
	char out[4096], prof[PATH_MAX + 64];

	self->colocd = 0;
	self->c = NULL;
	self->input = NULL;
	if (geteuid() != 0)
		SKIP(return, "needs root to run colocd");
	snprintf(prof, sizeof(prof), "%s/models/mobilenet_v2.model", root ? root : ".");
	/* submit takes absolute paths only */
	if (!realpath(prof, self->model))
		SKIP(return, "%.900s not found (set COLOC_ROOT to the repo root)", prof);
	ASSERT_NE(0, cache_dir[0]);
	ASSERT_EQ(0, tu_mount_bpffs());
	/* the first test makes the profile; the ones after find it */
	ASSERT_EQ(0, tu_quick_profile(self->model, cache_dir, out, sizeof(out))) TH_LOG("%s", out);
	snprintf(self->dir, sizeof(self->dir), "/tmp/coloc-wire-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->sock, sizeof(self->sock), "%s/colocd.sock", self->dir);
	snprintf(self->log, sizeof(self->log), "%s/colocd.log", self->dir);
	snprintf(self->state, sizeof(self->state), "%s/state.json", self->dir);
	snprintf(self->pin, sizeof(self->pin), "/sys/fs/bpf/coloc-wire-test-%d", getpid());
	ASSERT_LT(0, start_daemon(self)) TH_LOG("colocd did not start");
	ASSERT_EQ(0, coloc_client_connect(self->sock, &self->c));
}

FIXTURE_TEARDOWN(wire)
{
	char cmd[256];

	coloc_client_close(self->c);
	if (self->colocd > 0)
		tu_stop_colocd(self->colocd);
	free(self->input);
	if (self->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
		if (system(cmd))
			TH_LOG("could not remove %s", self->dir);
	}
}

/* One request, built from a printf format: the parsed response (put it). */
static struct json_object *call(FIXTURE_DATA(wire) * self, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static struct json_object *call(FIXTURE_DATA(wire) * self, const char *fmt, ...)
{
	char line[4096], *resp = NULL;
	struct json_object *o;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (coloc_client_request(self->c, line, &resp))
		return NULL;
	o = json_tokener_parse(resp);
	free(resp);
	return o;
}

static bool is_ok(struct json_object *o)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, "ok", &v) && json_object_get_boolean(v);
}

static const char *str_of(struct json_object *o, const char *key)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "";
}

static double num_of(struct json_object *o, const char *key)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : -1;
}

/* The status object of tenant name (put it), or NULL. */
static struct json_object *tenant_status(FIXTURE_DATA(wire) * self, const char *name)
{
	struct json_object *resp = call(self, "{\"cmd\":\"status\",\"name\":\"%s\"}", name);
	struct json_object *arr, *t = NULL;

	if (is_ok(resp) && json_object_object_get_ex(resp, "tenants", &arr) &&
	    json_object_array_length(arr) == 1)
		t = json_object_get(json_object_array_get_idx(arr, 0));
	json_object_put(resp);
	return t;
}

static bool wait_state(FIXTURE_DATA(wire) * self, const char *name, const char *state)
{
	for (int waited = 0; waited < READY_MS; waited += 20) {
		struct json_object *t = tenant_status(self, name);
		bool there = t && !strcmp(str_of(t, "state"), state);

		json_object_put(t);
		if (there)
			return true;
		usleep(20000);
	}
	return false;
}

/*
 * Submits through libcoloc_client, which opens the files and hands them
 * over as descriptors; a file it cannot open reads as a refusal with its
 * words.
 */
static struct json_object *submit_executors(FIXTURE_DATA(wire) * self, const char *name,
					    const char *model, double qos_ms, int executors)
{
	struct coloc_submit sub = {
		.name = name, .model = model, .qos_ms = qos_ms, .executors = executors
	};
	struct json_object *r = coloc_client_submit(self->c, &sub);

	if (!r) {
		r = json_object_new_object();
		json_object_object_add(r, "ok", json_object_new_boolean(false));
		json_object_object_add(r, "error",
				       json_object_new_string(coloc_client_error(self->c)));
	}
	return r;
}

static struct json_object *submit(FIXTURE_DATA(wire) * self, const char *name, const char *model,
				  double qos_ms)
{
	return submit_executors(self, name, model, qos_ms, 0);
}

/*
 * Submits name with that many executors (0: the default, not said) and
 * waits until it is ready; its input of the right size is made.
 */
static bool submit_ready_executors(FIXTURE_DATA(wire) * self, const char *name, int executors)
{
	struct json_object *r =
		submit_executors(self, name, self->model, (double)QOS_MS, executors);
	struct json_object *t;
	bool ok = is_ok(r);

	json_object_put(r);
	if (!ok || !wait_state(self, name, "ready"))
		return false;
	t = tenant_status(self, name);
	self->in_bytes = (size_t)num_of(t, "input_bytes");
	self->out_bytes = (size_t)num_of(t, "output_bytes");
	json_object_put(t);
	if (!self->input) {
		self->input = malloc(self->in_bytes);
		for (size_t i = 0; self->input && i < self->in_bytes / sizeof(float); i++)
			self->input[i] = (float)((i * 2654435761u) % 2000) / 1000.0f - 1.0f;
	}
	return self->input != NULL;
}

static bool submit_ready(FIXTURE_DATA(wire) * self, const char *name)
{
	return submit_ready_executors(self, name, 0);
}

/* The executor's pid of tenant name, from status. */
static pid_t executor_pid(FIXTURE_DATA(wire) * self, const char *name)
{
	struct json_object *t = tenant_status(self, name);
	pid_t pid = (pid_t)num_of(t, "pid");

	json_object_put(t);
	return pid;
}

/* The attributed tenant id of name, from the tenants command; -1 if absent. */
static int attributed_id(FIXTURE_DATA(wire) * self, const char *name)
{
	struct json_object *r = call(self, "{\"cmd\":\"tenants\"}"), *arr, *t;
	int id = -1;

	if (r && json_object_object_get_ex(r, "tenants", &arr))
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			t = json_object_array_get_idx(arr, i);
			if (!strcmp(str_of(t, "name"), name))
				id = (int)num_of(t, "id");
		}
	json_object_put(r);
	return id;
}

/*
 * Stops the fixture's colocd and starts one with these options and the
 * cache instead, without --state: it starts with no tenant.
 */
static bool restart_with(FIXTURE_DATA(wire) * self, const char *const *more)
{
	const char *extra[12] = { "--cache-dir", cache_dir };
	int n = 2;

	for (int i = 0; more[i] && n < 11; i++)
		extra[n++] = more[i];
	extra[n] = NULL;
	coloc_client_close(self->c);
	self->c = NULL;
	if (self->colocd > 0 && tu_stop_colocd(self->colocd))
		return false;
	self->colocd = tu_start_colocd_with(self->sock, self->pin, self->log, extra);
	return self->colocd > 0 && !coloc_client_connect(self->sock, &self->c);
}

/* The solo latency colocd admits against, from the refusal of an impossible QoS. */
static double solo_ms_of(FIXTURE_DATA(wire) * self)
{
	struct json_object *r = submit(self, "probe", self->model, 0.001);
	const char *at = strstr(str_of(r, "error"), "solo latency ");
	double ms = at ? strtod(at + strlen("solo latency "), NULL) : -1;

	json_object_put(r);
	return ms;
}

/*
 * While the tenant's queries run, the pinned core_owner map shows its blocks
 * holding cores under its attributed id; once all are answered, every core
 * is free again.
 */
TEST_F_TIMEOUT(wire, core_owner__shows_the_tenant_while_its_blocks_run_then_free, 600)
{
	struct coloc_infer_result res;
	struct coloc_core_owner v;
	char path[256];
	int fd, id, nr = tu_nr_online_cpus(), owned = 0, answered = 0, free_after = 0;
	float *got;

	ASSERT_TRUE(submit_ready(self, "a"));
	id = attributed_id(self, "a");
	ASSERT_GE(id, 0);
	snprintf(path, sizeof(path), "%s/core_owner", self->pin);
	fd = bpf_obj_get(path);
	ASSERT_GE(fd, 0);
	got = malloc(self->out_bytes);
	ASSERT_NE(NULL, got);
	for (int i = 0; i < 200; i++)
		ASSERT_EQ(0, coloc_client_infer_send(self->c, "a", (uint64_t)i, self->input,
						     self->in_bytes));
	while (answered < 200) {
		for (__u32 cpu = 0; cpu < (__u32)nr; cpu++)
			if (!bpf_map_lookup_elem(fd, &cpu, &v) && v.state == COLOC_CORE_OWNED &&
			    v.tenant_id == (__u32)id)
				owned++;
		int r = coloc_client_infer_recv(self->c, &res, got, self->out_bytes, 0);

		ASSERT_GE(r, 0);
		answered += r;
		if (!r)
			usleep(200);
	}
	TH_LOG("core_owner showed tenant %d on a core %d times while 200 queries ran", id, owned);
	EXPECT_GT(owned, 0);
	for (__u32 cpu = 0; cpu < (__u32)nr; cpu++) {
		ASSERT_EQ(0, bpf_map_lookup_elem(fd, &cpu, &v));
		if (v.state == COLOC_CORE_FREE && v.tenant_id == COLOC_NO_TENANT)
			free_after++;
	}
	EXPECT_EQ(nr, free_after);
	free(got);
	close(fd);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

TEST_F_TIMEOUT(wire, submit_infer_status__two_tenants_outputs_equal_in_process_run, 600)
{
	struct coloc_infer_result res;
	struct json_object *t, *resp, *arr;
	size_t out_elems = 0;
	uint64_t rt[30], ex[30], over[30], parts;
	struct json_object *jparts;
	float *want, *got, max_err, max_ref;
	pid_t pa, pb;
	bool found = false;

	ASSERT_TRUE(submit_ready(self, "a"));
	ASSERT_TRUE(submit_ready(self, "b"));
	/* status says how the executor is kept apart (execproc_test checks the namespaces) */
	t = tenant_status(self, "a");
	EXPECT_NE(NULL, strstr(str_of(t, "isolation"), "pid namespace"));
	json_object_put(t);
	want = tu_model_outputs(self->model, self->input, &out_elems);
	ASSERT_NE(NULL, want);
	ASSERT_EQ(out_elems * sizeof(float), self->out_bytes);
	got = malloc(self->out_bytes);
	ASSERT_NE(NULL, got);
	for (int i = 0; i < 31; i++) {
		const char *name = i % 2 ? "b" : "a";
		uint64_t t0 = tu_now_ns();

		memset(got, 0, self->out_bytes);
		ASSERT_EQ(0, coloc_client_infer(self->c, name, self->input, self->in_bytes, got,
						self->out_bytes, &res))
		TH_LOG("%s", coloc_client_error(self->c));
		ASSERT_EQ(COLOC_INFER_OK, res.status) TH_LOG("%s", res.error);
		ASSERT_EQ(self->out_bytes, res.output_bytes);
		ref_compare(got, want, (int64_t)out_elems, &max_err, &max_ref);
		EXPECT_LE(max_err, TOL * (1.0f + max_ref))
		TH_LOG("query %d (%s): max |error| %g, max |value| %g", i, name, max_err, max_ref);
		EXPECT_LE(res.exec_ns, res.latency_ns);
		EXPECT_GT(res.exec_ns, 0);
		/* the answer's parts add up to its latency; compute is the executor's time */
		parts = 0;
		for (int p = 0; p < COLOC_NR_PARTS; p++)
			parts += res.parts_ns[p];
		EXPECT_EQ(res.latency_ns, parts);
		EXPECT_EQ(res.exec_ns, res.parts_ns[COLOC_PART_COMPUTE]);
		if (i) { /* the first warms the executor */
			rt[i - 1] = tu_now_ns() - t0;
			ex[i - 1] = res.exec_ns;
			over[i - 1] = rt[i - 1] - res.exec_ns;
		}
	}
	qsort(rt, 30, sizeof(rt[0]), cmp_u64);
	qsort(ex, 30, sizeof(ex[0]), cmp_u64);
	qsort(over, 30, sizeof(over[0]), cmp_u64);
	TH_LOG("mobilenet_v2 through the socket: client round trip p50 %.3f ms, the executor's "
	       "exec_ns p50 %.3f ms; per query, round trip minus exec_ns: p50 %.3f ms, max %.3f ms; "
	       "30 queries (loaded machine)",
	       rt[15] / 1e6, ex[15] / 1e6, over[15] / 1e6, over[29] / 1e6);

	/* status: both, 5 served each, percentiles in order, all within QoS */
	for (int i = 0; i < 2; i++) {
		t = tenant_status(self, i ? "b" : "a");
		ASSERT_NE(NULL, t);
		EXPECT_STREQ("ready", str_of(t, "state"));
		EXPECT_EQ(i ? 15 : 16, num_of(t, "served"));
		EXPECT_EQ(i ? 15 : 16, num_of(t, "offered"));
		EXPECT_EQ(1.0, num_of(t, "within_qos"));
		EXPECT_GT(num_of(t, "p50_ms"), 0);
		EXPECT_LE(num_of(t, "p50_ms"), num_of(t, "p95_ms"));
		EXPECT_LE(num_of(t, "p95_ms"), num_of(t, "p99_ms"));
		EXPECT_EQ(QOS_MS, num_of(t, "qos_ms"));
		/* each part of every query is at most its latency, so are their percentiles */
		ASSERT_TRUE(json_object_object_get_ex(t, "parts", &jparts));
		for (int p = 0; p < COLOC_NR_PARTS; p++) {
			static const char *const names[COLOC_NR_PARTS] = COLOC_PART_NAMES;
			struct json_object *part = NULL;

			ASSERT_TRUE(json_object_object_get_ex(jparts, names[p], &part))
			TH_LOG("%s", names[p]);
			EXPECT_LE(0, num_of(part, "p50_ms"));
			EXPECT_LE(num_of(part, "p50_ms"), num_of(part, "p95_ms"));
			EXPECT_LE(num_of(part, "p50_ms"), num_of(t, "p50_ms"));
			EXPECT_LE(num_of(part, "p95_ms"), num_of(t, "p95_ms"));
		}
		EXPECT_GT(num_of(json_object_object_get(jparts, "compute"), "p50_ms"), 0);
		json_object_put(t);
	}
	resp = call(self, "{\"cmd\":\"status\"}");
	ASSERT_TRUE(is_ok(resp));
	ASSERT_TRUE(json_object_object_get_ex(resp, "cores", &arr));
	EXPECT_EQ(tu_nr_online_cpus(), (int)json_object_array_length(arr));
	json_object_put(resp);

	/* each executor's process is its tenant's in the BPF maps */
	pa = executor_pid(self, "a");
	pb = executor_pid(self, "b");
	ASSERT_GT(pa, 0);
	ASSERT_GT(pb, 0);
	EXPECT_NE(pa, pb);
	resp = call(self, "{\"cmd\":\"tenants\"}");
	ASSERT_TRUE(is_ok(resp));
	ASSERT_TRUE(json_object_object_get_ex(resp, "tenants", &arr));
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *o = json_object_array_get_idx(arr, i), *pids;

		if (strcmp(str_of(o, "name"), "a"))
			continue;
		ASSERT_TRUE(json_object_object_get_ex(o, "pids", &pids));
		ASSERT_EQ(1, json_object_array_length(pids));
		EXPECT_EQ(pa, json_object_get_int(json_object_array_get_idx(pids, 0)));
		found = true;
	}
	EXPECT_TRUE(found);
	json_object_put(resp);
	free(want);
	free(got);
}

/*
 * Submitting tenant c with QoS 0.001 ms is refused, the error naming that
 * QoS and the solo latency that ready tenant of the same model shows.
 */
static void expect_impossible_qos_refused(struct __test_metadata *_metadata,
					  FIXTURE_DATA(wire) * self, const char *ready)
{
	struct json_object *t = tenant_status(self, ready), *r;
	char solo[32];

	snprintf(solo, sizeof(solo), "%.3f ms", num_of(t, "solo_ms"));
	json_object_put(t);
	r = submit(self, "c", self->model, 0.001);
	EXPECT_FALSE(is_ok(r));
	EXPECT_NE(NULL, strstr(str_of(r, "error"), "0.001 ms")) TH_LOG("%s", str_of(r, "error"));
	EXPECT_NE(NULL, strstr(str_of(r, "error"), solo))
	TH_LOG("%s (want %s)", str_of(r, "error"), solo);
	json_object_put(r);
}

TEST_F_TIMEOUT(wire, submit__refusals_say_why, 600)
{
	char bad[] = "/tmp/coloc-wire-bad-XXXXXX", want[128];
	struct json_object *r;
	int fd;

	ASSERT_TRUE(submit_ready(self, "a"));
	/* an impossible QoS: both numbers */
	expect_impossible_qos_refused(_metadata, self, "a");

	r = submit(self, "a", self->model, QOS_MS);
	EXPECT_FALSE(is_ok(r));
	EXPECT_NE(NULL, strstr(str_of(r, "error"), "exists")) TH_LOG("%s", str_of(r, "error"));
	json_object_put(r);

	r = submit(self, "d", "/nonexistent/x.model", QOS_MS);
	EXPECT_FALSE(is_ok(r));
	EXPECT_NE(NULL, strstr(str_of(r, "error"), "/nonexistent/x.model"))
	TH_LOG("%s", str_of(r, "error"));
	json_object_put(r);

	/* a path in the request and no descriptor: colocd opens no path a client names */
	r = call(self, "{\"cmd\":\"submit\",\"name\":\"d\",\"model\":\"%s\",\"qos_ms\":%d}",
		 self->model, QOS_MS);
	EXPECT_FALSE(is_ok(r));
	EXPECT_NE(NULL, strstr(str_of(r, "error"), "as descriptors sent with the request"))
	TH_LOG("%s", str_of(r, "error"));
	json_object_put(r);

	fd = mkstemp(bad);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(13, write(fd, "model broken\n", 13));
	close(fd);
	r = submit(self, "e", bad, QOS_MS);
	snprintf(want, sizeof(want), "%s:1: ", bad);
	EXPECT_FALSE(is_ok(r));
	EXPECT_EQ(0, strncmp(str_of(r, "error"), want, strlen(want)))
	TH_LOG("%s (want %s)", str_of(r, "error"), want);
	json_object_put(r);
	unlink(bad);

	r = call(self, "{\"cmd\":\"status\",\"name\":\"nobody\"}");
	EXPECT_FALSE(is_ok(r));
	json_object_put(r);
	r = call(self, "{\"cmd\":\"remove\",\"name\":\"nobody\"}");
	EXPECT_FALSE(is_ok(r));
	json_object_put(r);
	r = call(self, "{\"cmd\":\"restart\",\"name\":\"a\"}"); /* ready, not failed */
	EXPECT_FALSE(is_ok(r));
	json_object_put(r);
	/* only a and nothing else was admitted */
	r = call(self, "{\"cmd\":\"list\"}");
	ASSERT_TRUE(is_ok(r));
	EXPECT_EQ(1, json_object_array_length(json_object_object_get(r, "tenants")));
	json_object_put(r);
}

/*
 * --policy os: both tenants' queries run at the same time on the same
 * cores (status shows a core with two blocks on it while each tenant has
 * one in flight), no core is owned in the core_owner map meanwhile, the
 * executors' threads may run on every core, and every query is answered
 * with outputs equal to the in-process run.
 */
TEST_F_TIMEOUT(wire, os__two_tenants_run_at_once_on_the_same_cores_unpinned, 600)
{
	const char *os[] = { "--policy", "os", NULL };
	int nr = tu_nr_online_cpus(), answered = 0, polls = 0, both = 0, owned = 0;
	static char line[65536];
	struct coloc_infer_result res;
	size_t out_elems = 0;
	float *want, *got, max_err, max_ref;
	char path[256];
	int fd;

	ASSERT_TRUE(restart_with(self, os));
	ASSERT_TRUE(submit_ready(self, "a"));
	ASSERT_TRUE(submit_ready(self, "b"));
	want = tu_model_outputs(self->model, self->input, &out_elems);
	ASSERT_NE(NULL, want);
	got = malloc(self->out_bytes);
	ASSERT_NE(NULL, got);
	snprintf(path, sizeof(path), "%s/core_owner", self->pin);
	fd = bpf_obj_get(path);
	ASSERT_GE(fd, 0);
	for (int i = 0; i < 40; i++)
		ASSERT_EQ(0, coloc_client_infer_send(self->c, i % 2 ? "b" : "a", (uint64_t)i,
						     self->input, self->in_bytes));
	while (answered < 40) {
		struct json_object *resp, *arr, *cores;
		int in_flight = 0, two = 0, r;
		struct coloc_core_owner v;

		/* on a connection of its own: the answers of self->c are queued behind */
		ASSERT_LT(0, tu_request(self->sock, "{\"cmd\":\"status\"}\n", line, sizeof(line)));
		resp = json_tokener_parse(line);
		ASSERT_TRUE(is_ok(resp)) TH_LOG("%.200s", line);
		ASSERT_TRUE(json_object_object_get_ex(resp, "tenants", &arr));
		for (size_t i = 0; i < json_object_array_length(arr); i++)
			in_flight += num_of(json_object_array_get_idx(arr, i), "in_flight") >= 1;
		ASSERT_TRUE(json_object_object_get_ex(resp, "cores", &cores));
		ASSERT_EQ(nr, (int)json_object_array_length(cores));
		for (size_t i = 0; i < json_object_array_length(cores); i++) {
			struct json_object *c = json_object_array_get_idx(cores, i), *x;

			/* no core is claimed by one tenant */
			EXPECT_FALSE(json_object_object_get_ex(c, "tenant", &x));
			EXPECT_TRUE(json_object_object_get_ex(c, "shared", &x) &&
				    json_object_get_boolean(x));
			two += num_of(c, "blocks") == 2;
		}
		json_object_put(resp);
		polls++;
		both += in_flight == 2 && two > 0;
		for (__u32 cpu = 0; cpu < (__u32)nr; cpu++)
			owned += !bpf_map_lookup_elem(fd, &cpu, &v) && v.state != COLOC_CORE_FREE;
		do {
			memset(got, 0, self->out_bytes);
			r = coloc_client_infer_recv(self->c, &res, got, self->out_bytes, 1);
			ASSERT_GE(r, 0);
			if (r) {
				ASSERT_EQ(COLOC_INFER_OK, res.status) TH_LOG("%s", res.error);
				ref_compare(got, want, (int64_t)out_elems, &max_err, &max_ref);
				EXPECT_LE(max_err, TOL * (1.0f + max_ref));
			}
			answered += r;
		} while (r);
	}
	TH_LOG("os: in %d of %d status polls both tenants had a block in flight on a core "
	       "running two blocks",
	       both, polls);
	EXPECT_GT(both, 0);
	EXPECT_EQ(0, owned);
	/* the teams were left unpinned: every executor thread may run on every core */
	for (int t = 0; t < 2; t++) {
		pid_t pid = executor_pid(self, t ? "b" : "a");
		char task[64];
		struct dirent *de;
		DIR *dir;
		int threads = 0;

		snprintf(task, sizeof(task), "/proc/%d/task", pid);
		dir = opendir(task);
		ASSERT_NE(NULL, dir);
		while ((de = readdir(dir))) {
			cpu_set_t set;

			if (de->d_name[0] == '.' ||
			    sched_getaffinity(atoi(de->d_name), sizeof(set), &set))
				continue;
			threads++;
			EXPECT_EQ(nr, CPU_COUNT(&set)) TH_LOG("thread %s of %d", de->d_name, pid);
		}
		closedir(dir);
		EXPECT_GT(threads, 0);
	}
	close(fd);
	free(want);
	free(got);
}

/*
 * fcfs, a QoS 5% above the profiled solo latency, and a burst of queries
 * at once, doubled from 4 until the burst outlasts the QoS (the profile may
 * have been taken under another load than the run). --late serve answers
 * every one, ok, the last ones past the QoS; --late drop, given the same
 * burst, drops those whose wait leaves too little time, with the reason (at
 * the latest the first whose wait alone passes 5% of solo).
 */
TEST_F_TIMEOUT(wire, late__serve_runs_late_what_drop_drops, 600)
{
	static const char *const modes[2][5] = {
		{ "--policy", "fcfs", "--late", "serve", NULL },
		{ "--policy", "fcfs", "--late", "drop", NULL },
	};
	struct coloc_infer_result res;
	double solo_ms = 0, qos_ms = 0;
	float *got = NULL;
	int n = 4;

	for (int m = 0; m < 2; m++) {
		int ok = 0, dropped = 0, late = 0;
		struct json_object *r;

		ASSERT_TRUE(restart_with(self, modes[m]));
		solo_ms = solo_ms_of(self);
		ASSERT_GT(solo_ms, 0);
		qos_ms = solo_ms * 1.05;
		r = submit(self, "tight", self->model, qos_ms);
		ASSERT_TRUE(is_ok(r)) TH_LOG("%s", str_of(r, "error"));
		json_object_put(r);
		ASSERT_TRUE(wait_state(self, "tight", "ready"));
		if (!self->input) {
			struct json_object *t = tenant_status(self, "tight");

			self->in_bytes = (size_t)num_of(t, "input_bytes");
			self->out_bytes = (size_t)num_of(t, "output_bytes");
			json_object_put(t);
			self->input = calloc(self->in_bytes / sizeof(float), sizeof(float));
			ASSERT_NE(NULL, self->input);
		}
		got = realloc(got, self->out_bytes);
		ASSERT_NE(NULL, got);
		for (;;) {
			ok = dropped = late = 0;
			for (int i = 0; i < n; i++)
				ASSERT_EQ(0, coloc_client_infer_send(self->c, "tight", (uint64_t)i,
								     self->input, self->in_bytes));
			for (int i = 0; i < n; i++) {
				ASSERT_EQ(1, coloc_client_infer_recv(self->c, &res, got,
								     self->out_bytes, -1))
				TH_LOG("%s", coloc_client_error(self->c));
				ok += res.status == COLOC_INFER_OK;
				late += res.status == COLOC_INFER_OK &&
					res.latency_ns > qos_ms * 1e6;
				if (res.status == COLOC_INFER_DROPPED) {
					dropped++;
					EXPECT_NE(NULL, strstr(res.error, "deadline"))
					TH_LOG("%s", res.error);
				}
			}
			/* drop takes serve's burst as it is; serve doubles it up to 128 */
			if (m || late || n >= 128)
				break;
			n *= 2;
		}
		TH_LOG("--late %s, QoS %.3f ms (solo %.3f ms), %d queries at once: %d ok (%d of "
		       "them late), %d dropped",
		       modes[m][3], qos_ms, solo_ms, n, ok, late, dropped);
		if (m == 0) {
			EXPECT_EQ(n, ok);
			EXPECT_EQ(0, dropped);
			EXPECT_GE(late, 1);
		} else {
			EXPECT_GE(dropped, 1);
		}
	}
	free(got);
}

/*
 * The scheduler issue's end to end: under --policy coloc two tenants meet a
 * generous QoS on every query, while a third with an impossible QoS is
 * refused with its QoS and the solo latency it is below.
 */
TEST_F_TIMEOUT(wire, coloc__two_tenants_meet_a_generous_qos_an_impossible_one_is_refused, 600)
{
	const char *coloc[] = { "--policy", "coloc", NULL };
	struct coloc_infer_result res;
	struct json_object *r, *t;
	int answered = 0;
	float *got;

	ASSERT_TRUE(restart_with(self, coloc));
	ASSERT_TRUE(submit_ready(self, "a"));
	ASSERT_TRUE(submit_ready(self, "b"));
	got = malloc(self->out_bytes);
	ASSERT_NE(NULL, got);
	for (int i = 0; i < 20; i++)
		ASSERT_EQ(0, coloc_client_infer_send(self->c, i % 2 ? "b" : "a", (uint64_t)i,
						     self->input, self->in_bytes));
	while (answered < 20) {
		ASSERT_EQ(1, coloc_client_infer_recv(self->c, &res, got, self->out_bytes, -1))
		TH_LOG("%s", coloc_client_error(self->c));
		ASSERT_EQ(COLOC_INFER_OK, res.status) TH_LOG("%s", res.error);
		EXPECT_LE(res.latency_ns, (uint64_t)QOS_MS * 1000000);
		answered++;
	}
	for (int i = 0; i < 2; i++) {
		t = tenant_status(self, i ? "b" : "a");
		EXPECT_EQ(10, num_of(t, "served"));
		EXPECT_EQ(0, num_of(t, "dropped"));
		EXPECT_EQ(1.0, num_of(t, "within_qos"));
		json_object_put(t);
	}
	expect_impossible_qos_refused(_metadata, self, "a");
	r = call(self, "{\"cmd\":\"list\"}");
	ASSERT_TRUE(is_ok(r));
	EXPECT_EQ(2, json_object_array_length(json_object_object_get(r, "tenants")));
	json_object_put(r);
	free(got);
}

/* Sends n queries to tenant name one after another; how many were answered OK. */
static int infer_one_by_one(FIXTURE_DATA(wire) * self, const char *name, int n)
{
	struct coloc_infer_result res;
	float *got = malloc(self->out_bytes);
	int ok = 0;

	for (int i = 0; got && i < n; i++) {
		if (coloc_client_infer_send(self->c, name, (uint64_t)i, self->input,
					    self->in_bytes) ||
		    coloc_client_infer_recv(self->c, &res, got, self->out_bytes, -1) != 1)
			break;
		ok += res.status == COLOC_INFER_OK;
	}
	free(got);
	return ok;
}

/*
 * --block-log: one line per block, written as it finishes (so before its
 * query is answered). Each query's blocks chain its layers from 0 to the
 * model's end without a gap, every block ran, each names one version digit
 * per layer, and tenant a's lines are as many as the blocks its status
 * counts.
 */
TEST_F_TIMEOUT(wire, block_log__each_querys_blocks_chain_its_layers_one_line_each, 600)
{
	char path[192], line[1024], tenant[64], vers[512];
	const char *more[] = { "--policy", "coloc", "--block-log", path, NULL };
	unsigned long long ids[10];
	int next[10] = { 0 }, nr_ids = 0, lines = 0, end = -1;
	struct json_object *t;
	FILE *f;

	snprintf(path, sizeof(path), "%s/blocks.tsv", self->dir);
	ASSERT_TRUE(restart_with(self, more));
	ASSERT_TRUE(submit_ready(self, "a"));
	ASSERT_EQ(10, infer_one_by_one(self, "a", 10));
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(line, sizeof(line), f));
	EXPECT_EQ(0, strncmp(line, "end_ms\ttenant\tquery\tfirst\tlast\tcores", 36))
	TH_LOG("%s", line);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long query;
		int first, last, cores, corunners, ok, q;
		double end_ms, level, alone, predicted, measured;

		ASSERT_EQ(13, sscanf(line,
				     "%lf\t%63s\t%llu\t%d\t%d\t%d\t%d\t%lf\t%lf\t%lf\t%lf"
				     "\t%*f\t%*f\t%d\t%511s",
				     &end_ms, tenant, &query, &first, &last, &cores, &corunners,
				     &level, &alone, &predicted, &measured, &ok, vers))
		TH_LOG("%s", line);
		EXPECT_EQ(last - first, (int)strspn(vers, "0123456789")) TH_LOG("%s", line);
		EXPECT_EQ(last - first, (int)strlen(vers)) TH_LOG("%s", line);
		lines++;
		EXPECT_STREQ("a", tenant);
		for (q = 0; q < nr_ids && ids[q] != query; q++)
			;
		if (q == nr_ids) {
			ASSERT_GT(10, nr_ids) TH_LOG("more than 10 queries in the log");
			ids[nr_ids++] = query;
		}
		EXPECT_EQ(next[q], first) TH_LOG("query %llu: a block from %d", query, first);
		EXPECT_LT(first, last);
		next[q] = last;
		EXPECT_LE(1, cores);
		EXPECT_GE(get_nprocs(), cores);
		EXPECT_EQ(0, corunners) TH_LOG("tenant a is the only one");
		EXPECT_LT(0, alone);
		EXPECT_LT(0, predicted);
		EXPECT_LT(0, measured);
		EXPECT_EQ(1, ok);
	}
	fclose(f);
	EXPECT_EQ(10, nr_ids);
	for (int i = 0; i < nr_ids; i++) {
		if (end < 0)
			end = next[i];
		EXPECT_EQ(end, next[i]) TH_LOG("query %d's blocks end at layer %d", i, next[i]);
	}
	EXPECT_LT(0, end);
	t = tenant_status(self, "a");
	EXPECT_EQ(lines, num_of(t, "blocks"));
	json_object_put(t);
}

/* Each core's slowdown in status, or 0 where none was measured; the number of cores. */
static int core_levels(FIXTURE_DATA(wire) * self, double *level, int max)
{
	struct json_object *r = call(self, "{\"cmd\":\"status\"}"), *arr, *v;
	int n = 0;

	if (is_ok(r) && json_object_object_get_ex(r, "cores", &arr))
		for (n = 0; n < (int)json_object_array_length(arr) && n < max; n++) {
			struct json_object *c = json_object_array_get_idx(arr, (size_t)n);

			level[n] = json_object_object_get_ex(c, "slowdown", &v) && v ?
					   json_object_get_double(v) :
					   0;
		}
	json_object_put(r);
	return n;
}

TEST_F_TIMEOUT(wire, coloc__a_cores_level_is_measured_by_blocks_then_fades_to_alone_when_idle, 600)
{
	const char *coloc[] = { "--policy", "coloc", NULL };
	double before[COLOC_MAX_CPUS], after[COLOC_MAX_CPUS];
	int n, measured = 0;

	ASSERT_TRUE(restart_with(self, coloc));
	ASSERT_TRUE(submit_ready(self, "a"));
	n = core_levels(self, before, COLOC_MAX_CPUS);
	ASSERT_LT(0, n);
	for (int c = 0; c < n; c++) {
		EXPECT_EQ(0, before[c]) TH_LOG("cpu index %d has a level before any block", c);
	}
	ASSERT_EQ(10, infer_one_by_one(self, "a", 10));
	ASSERT_EQ(n, core_levels(self, before, COLOC_MAX_CPUS));
	/* two half-lives (500 ms each) with no block: at most a quarter of the excess is left */
	usleep(1000 * 1000);
	ASSERT_EQ(n, core_levels(self, after, COLOC_MAX_CPUS));
	for (int c = 0; c < n; c++) {
		if (!before[c])
			continue;
		measured++;
		EXPECT_LT(0, after[c]);
		EXPECT_LE(fabs(after[c] - 1.0), fabs(before[c] - 1.0) / 4 + 1e-9)
		TH_LOG("cpu index %d: level %.4f, then %.4f after 1 s idle", c, before[c],
		       after[c]);
		EXPECT_EQ(before[c] >= 1.0, after[c] >= 1.0);
	}
	EXPECT_LT(0, measured) TH_LOG("no core had a level after 10 queries");
}

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

TEST_F_TIMEOUT(wire, infer__storm_of_10000_bounded_excess_rejected_rest_served, 600)
{
	enum { N = 10000 };
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
	TH_LOG("10000 queries: %d served, %d rejected (last: %s)", ok, rejected, reason);
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
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(0, coloc_client_infer_send(bc, "b", (uint64_t)i, self->input,
						     self->in_bytes));
	/* a block of b's holds cores: kill its executor then */
	for (int waited = 0; waited < READY_MS && !cores_held_by(self, "b"); waited++)
		usleep(1000);
	pb = executor_pid(self, "b");
	ASSERT_GT(pb, 0);
	t0 = tu_now_ns();
	ASSERT_EQ(0, kill(pb, SIGKILL));
	while (cores_held_by(self, "b") && tu_now_ns() - t0 < 10000000000ull)
		;
	t1 = tu_now_ns();
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

/* Runs colocctl --socket SOCK ARGS; its output in out. Returns its exit status. */
static int colocctl(FIXTURE_DATA(wire) * self, const char *args, char *out, size_t len)
{
	char bin[512], cmd[3 * PATH_MAX + 1024];

	snprintf(cmd, sizeof(cmd), "%s --socket '%s' %s", tu_bin("colocctl", bin, sizeof(bin)),
		 self->sock, args);
	return tu_run(cmd, out, len);
}

TEST_F_TIMEOUT(wire, colocctl__submit_infer_files_status_remove, 600)
{
	char args[3 * PATH_MAX], out[8192], in_path[128], out_path[128];
	float *want, *got;
	size_t out_elems = 0, n;
	float max_err, max_ref;
	FILE *f;

	ASSERT_EQ(0, colocctl(self, "--help", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "submit NAME MODEL --qos-ms X"));
	EXPECT_NE(NULL, strstr(out, "infer NAME [--input FILE] [--output FILE]"));

	snprintf(args, sizeof(args), "submit c '%s' --qos-ms %d --executors 0", self->model,
		 QOS_MS);
	EXPECT_EQ(2, colocctl(self, args, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "--executors wants a whole number from 1 to 8, not '0'"))
	TH_LOG("%s", out);
	snprintf(args, sizeof(args), "submit c '%s' --qos-ms %d --executors 2", self->model,
		 QOS_MS);
	ASSERT_EQ(0, colocctl(self, args, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "tenant c admitted")) TH_LOG("%s", out);
	ASSERT_TRUE(wait_state(self, "c", "ready"));
	ASSERT_EQ(0, colocctl(self, "list", out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "EXEC")) TH_LOG("%s", out);
	{
		const char *c = strstr(out, "\nc ");
		int executors = 0;

		ASSERT_NE(NULL, c) TH_LOG("%s", out);
		/* TENANT STATE QOS(ms) PID EXEC */
		EXPECT_EQ(1, sscanf(c, "%*s %*s %*s %*s %d", &executors)) TH_LOG("%s", out);
		EXPECT_EQ(2, executors) TH_LOG("%s", out);
	}
	ASSERT_TRUE(submit_ready(self, "d")); /* the input size, from status */

	/* the input as a raw fp32 file, the output back as one */
	snprintf(in_path, sizeof(in_path), "%s/in.f32", self->dir);
	snprintf(out_path, sizeof(out_path), "%s/out.f32", self->dir);
	f = fopen(in_path, "wb");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(self->in_bytes, fwrite(self->input, 1, self->in_bytes, f));
	fclose(f);
	snprintf(args, sizeof(args), "infer c --input '%s' --output '%s'", in_path, out_path);
	ASSERT_EQ(0, colocctl(self, args, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "ok: latency")) TH_LOG("%s", out);
	want = tu_model_outputs(self->model, self->input, &out_elems);
	ASSERT_NE(NULL, want);
	got = malloc(out_elems * sizeof(float) + 1);
	ASSERT_NE(NULL, got);
	f = fopen(out_path, "rb");
	ASSERT_NE(NULL, f);
	n = fread(got, 1, out_elems * sizeof(float) + 1, f);
	fclose(f);
	ASSERT_EQ(out_elems * sizeof(float), n);
	ref_compare(got, want, (int64_t)out_elems, &max_err, &max_ref);
	EXPECT_LE(max_err, TOL * (1.0f + max_ref)) TH_LOG("max |error| %g", max_err);

	/* an input file of the wrong size is refused with the size wanted */
	f = fopen(in_path, "wb");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(12, fwrite(self->input, 1, 12, f));
	fclose(f);
	snprintf(args, sizeof(args), "infer c --input '%s'", in_path);
	EXPECT_EQ(1, colocctl(self, args, out, sizeof(out)));
	snprintf(args, sizeof(args), "exactly %zu bytes", self->in_bytes);
	EXPECT_NE(NULL, strstr(out, args)) TH_LOG("%s", out);
	/* random input, printed output */
	ASSERT_EQ(0, colocctl(self, "infer c", out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "output[0..8):")) TH_LOG("%s", out);

	ASSERT_EQ(0, colocctl(self, "status c", out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "P99(ms)")) TH_LOG("%s", out);
	ASSERT_EQ(0, colocctl(self, "list --json", out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"name\":\"c\"")) TH_LOG("%s", out);
	EXPECT_EQ(2, colocctl(self, "submit c", out, sizeof(out)));
	EXPECT_EQ(1, colocctl(self, "infer nobody", out, sizeof(out)));
	ASSERT_EQ(0, colocctl(self, "remove c", out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_EQ(1, colocctl(self, "status c", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "no tenant named 'c'")) TH_LOG("%s", out);
	free(want);
	free(got);
}

/*
 * The frame's row of tenant name, split into its numbers (QOS .. REJ+F);
 * whether it was there with state.
 */
static bool top_row(const char *frame, const char *name, const char *state, double *v)
{
	char prefix[64], st[32];
	const char *p = frame;

	snprintf(prefix, sizeof(prefix), "\n%s ", name);
	while ((p = strstr(p, prefix))) {
		if (sscanf(p + 1, "%*s %31s %lf %lf %lf %lf %lf %lf %lf %lf%% %lf %lf %lf", st,
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9],
			   &v[10]) == 12 &&
		    !strcmp(st, state))
			return true;
		p++;
	}
	return false;
}

/*
 * colocctl top, piped: --frames 2 prints exactly two frames, without
 * escape codes; each has the machine's signals line, the tenant's row
 * with its QoS and its served count as status reports them, and one row
 * per core that status lists.
 */
TEST_F_TIMEOUT(wire, colocctl__top_frames_show_tenant_and_cores, 600)
{
	static char out[65536];
	struct json_object *resp, *cores, *t;
	char *frames[3] = { 0 }, *p;
	double served;
	int nr = 0;
	size_t nr_cores;

	ASSERT_EQ(0, colocctl(self, "--help", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "top [--interval MS] [--frames N]"));
	EXPECT_EQ(2, colocctl(self, "top --frames 0", out, sizeof(out)));
	EXPECT_EQ(2, colocctl(self, "status --frames 2", out, sizeof(out)));
	ASSERT_TRUE(submit_ready(self, "t"));
	ASSERT_EQ(0, colocctl(self, "infer t", out, sizeof(out))) TH_LOG("%s", out);
	t = tenant_status(self, "t");
	served = num_of(t, "served");
	json_object_put(t);
	ASSERT_GE(served, 1);
	resp = call(self, "{\"cmd\":\"status\"}");
	ASSERT_TRUE(is_ok(resp));
	ASSERT_TRUE(json_object_object_get_ex(resp, "cores", &cores));
	nr_cores = json_object_array_length(cores);
	ASSERT_GT(nr_cores, 0);

	ASSERT_EQ(0, colocctl(self, "top --frames 2 --interval 100", out, sizeof(out)))
	TH_LOG("%s", out);
	EXPECT_EQ(NULL, strchr(out, '\033')); /* not a terminal: no clearing */
	for (p = out; (p = strstr(p, "colocctl top ")) && nr < 3; p++)
		frames[nr++] = p;
	ASSERT_EQ(2, nr) TH_LOG("%s", out);
	frames[1][-1] = '\0'; /* the first frame ends where the second starts */
	TH_LOG("first frame:\n%s", frames[0]);
	for (int f = 0; f < 2; f++) {
		const char *core_table = strstr(frames[f], "\n CPU  BUSY% LEVEL TENANT");
		double v[11];

		EXPECT_NE(NULL, strstr(frames[f], "\nmachine: ")) TH_LOG("%s", frames[f]);
		ASSERT_TRUE(top_row(frames[f], "t", "ready", v)) TH_LOG("%s", frames[f]);
		EXPECT_EQ(QOS_MS, v[0]);
		EXPECT_EQ(served, v[8]) TH_LOG("%s", frames[f]);
		ASSERT_NE(NULL, core_table) TH_LOG("%s", frames[f]);
		for (size_t i = 0; i < nr_cores; i++) {
			char row[16];

			snprintf(row, sizeof(row), "\n%4.0f ",
				 num_of(json_object_array_get_idx(cores, i), "cpu"));
			EXPECT_NE(NULL, strstr(core_table, row)) TH_LOG("no row%s", row);
		}
	}
	json_object_put(resp);
}

TEST_HARNESS_MAIN
