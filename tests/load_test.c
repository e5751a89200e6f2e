// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * bin/coloc-load against a real colocd serving a real mobilenet_v2 tenant
 * (its profile made once by bin/coloc-profile with one iteration, in a
 * temporary cache colocd is pointed at, as colocd_serving_test does). What
 * coloc-load reports is checked against colocd's own count in status and
 * against the Poisson distribution its arrivals should follow; latencies and
 * CPU shares are printed by the tool, never asserted: the machine is shared.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <json-c/json.h>
#include "kselftest_harness.h"
#include "testutil.h"

#define READY_MS 180000
#define QOS_MS 60000 /* nothing is dropped on a loaded machine */
#define RATE_QPS 20
#define DURATION_S 6
#define LOAD_XSTR(x) #x
#define LOAD_STR(x) LOAD_XSTR(x)

static char cache_dir[64]; /* made once, shared by the forked tests */

__attribute__((constructor)) static void make_cache_dir(void)
{
	tu_shared_tmpdir("load-test", cache_dir, sizeof(cache_dir));
}

/* Runs bin/coloc-load with args (NULL-terminated); its exit status, output in c. */
static int run_load(const char *const *args, struct tu_child *c)
{
	char bin[512];

	if (tu_child_start(tu_bin("coloc-load", bin, sizeof(bin)), args, c))
		return -1;
	if (tu_child_finish(c) < 0 || !WIFEXITED(c->status))
		return -1;
	return WEXITSTATUS(c->status);
}

TEST(usage__bad_flags_exit_2_with_a_message)
{
	static const char *const bad[][8] = {
		{ NULL },
		{ "--tenant", "a:5", NULL },
		{ "--duration", "3", NULL },
		{ "--tenant", "a:5", "--duration", "0", NULL },
		{ "--tenant", "a:5", "--duration", "3x", NULL },
		{ "--tenant", "a", "--duration", "3", NULL },
		{ "--tenant", "a:-1", "--duration", "3", NULL },
		{ "--tenant", "a:0", "--duration", "3", NULL },
		{ "--tenant", ":5", "--duration", "3", NULL },
		{ "--tenant", "a:5,a:6", "--duration", "3", NULL },
		{ "--tenant", "a:5", "--duration", "3", "--seed", "-4", NULL },
		{ "--tenant", "a:5", "--duration", "3", "--connections-per-tenant", "0", NULL },
		{ "--tenant", "a:5", "--duration", "3", "extra", NULL },
		{ "--tenant", "a:5", "--duration", "3", "--arrivals", "uniform", NULL },
		{ "--no-such-flag", NULL },
	};
	struct tu_child c;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(2, run_load(bad[i], &c)) TH_LOG("case %zu: %s", i, c.output);
		EXPECT_NE(NULL, strstr(c.output, "coloc-load")) TH_LOG("case %zu", i);
	}
}

TEST(help_version__exit_0)
{
	const char *help[] = { "--help", NULL }, *version[] = { "--version", NULL };
	struct tu_child c;

	ASSERT_EQ(0, run_load(help, &c));
	EXPECT_NE(NULL, strstr(c.output, "--tenant NAME:QPS"));
	ASSERT_EQ(0, run_load(version, &c));
	EXPECT_NE(NULL, strstr(c.output, "coloc-load (coloc) "));
}

FIXTURE(load)
{
	char dir[64], sock[128], pin[128], log[128];
	char model[PATH_MAX];
	pid_t colocd;
};

/* colocd's status of tenant name (put it), or NULL. */
static struct json_object *tenant_status(FIXTURE_DATA(load) * self, const char *name)
{
	char req[256], resp[65536];
	struct json_object *o, *arr, *t = NULL;

	snprintf(req, sizeof(req), "{\"cmd\":\"status\",\"name\":\"%s\"}\n", name);
	if (tu_request(self->sock, req, resp, sizeof(resp)) <= 0)
		return NULL;
	o = json_tokener_parse(resp);
	if (o && json_object_object_get_ex(o, "tenants", &arr) &&
	    json_object_array_length(arr) == 1)
		t = json_object_get(json_object_array_get_idx(arr, 0));
	json_object_put(o);
	return t;
}

static double num_of(struct json_object *o, const char *key)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : -1;
}

static const char *str_of(struct json_object *o, const char *key)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, key, &v) && json_object_get_string(v) ?
		       json_object_get_string(v) :
		       "";
}

FIXTURE_SETUP(load)
{
	const char *root = getenv("COLOC_ROOT");
	const char *extra[] = { "--cache-dir", cache_dir, NULL };
	char cmd[3 * PATH_MAX + 1024], out[4096], prof[PATH_MAX + 64];
	int waited, model_fd;

	self->colocd = 0;
	if (geteuid() != 0)
		SKIP(return, "needs root to run colocd");
	snprintf(prof, sizeof(prof), "%s/models/mobilenet_v2.model", root ? root : ".");
	if (!realpath(prof, self->model))
		SKIP(return, "%.900s not found (set COLOC_ROOT to the repo root)", prof);
	ASSERT_NE(0, cache_dir[0]);
	ASSERT_EQ(0, tu_mount_bpffs());
	/* the first test makes the profile; the ones after find it */
	ASSERT_EQ(0, tu_quick_profile(self->model, cache_dir, out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_EQ(0, tu_make_tmpdir("load", self->dir, sizeof(self->dir)));
	snprintf(self->sock, sizeof(self->sock), "%s/colocd.sock", self->dir);
	snprintf(self->log, sizeof(self->log), "%s/colocd.log", self->dir);
	snprintf(self->pin, sizeof(self->pin), "/sys/fs/bpf/coloc-load-test-%d", getpid());
	self->colocd = tu_start_colocd_with(self->sock, self->pin, self->log, extra);
	ASSERT_LT(0, self->colocd) TH_LOG("colocd did not start");
	snprintf(cmd, sizeof(cmd),
		 "{\"cmd\":\"submit\",\"name\":\"mnv2\",\"model\":\"%s\",\"qos_ms\":%d}\n",
		 self->model, QOS_MS);
	model_fd = open(self->model, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, model_fd);
	ASSERT_LT(0, tu_request_fds(self->sock, cmd, &model_fd, 1, out, sizeof(out)));
	close(model_fd);
	ASSERT_NE(NULL, strstr(out, "\"ok\":true")) TH_LOG("submit: %s", out);
	for (waited = 0; waited < READY_MS; waited += 20) {
		struct json_object *t = tenant_status(self, "mnv2");
		bool ready = !strcmp(str_of(t, "state"), "ready");

		json_object_put(t);
		if (ready)
			break;
		usleep(20000);
	}
	ASSERT_LT(waited, READY_MS) TH_LOG("mnv2 never became ready");
}

FIXTURE_TEARDOWN(load)
{
	if (self->colocd > 0)
		tu_stop_colocd(self->colocd);
	if (self->dir[0]) {
		if (tu_remove_tree(self->dir))
			TH_LOG("could not remove %s", self->dir);
	}
}

/*
 * With a fixed seed the arrival count is fixed; it must be a plausible draw
 * of Poisson(rate * duration): within 5 standard deviations (sqrt of the
 * mean), which a correct generator misses with probability below 1e-6.
 * Everything sent is answered (QoS of a minute), and colocd, counting on its
 * side, served exactly what coloc-load saw complete.
 */
TEST_F_TIMEOUT(load, run__completions_equal_colocd_served_arrivals_poisson, 300)
{
	const char *args[] = { "--socket",   self->sock,
			       "--tenant",   "mnv2:" LOAD_STR(RATE_QPS),
			       "--duration", LOAD_STR(DURATION_S),
			       "--seed",     "7",
			       "--drain",    "120",
			       "--json",     NULL };
	struct json_object *o, *arr, *t, *st;
	double mean = RATE_QPS * DURATION_S, sent, completed;
	struct tu_child c;

	ASSERT_EQ(0, run_load(args, &c)) TH_LOG("%s", c.output);
	o = json_tokener_parse(c.output);
	ASSERT_NE(NULL, o) TH_LOG("not JSON: %s", c.output);
	ASSERT_TRUE(json_object_object_get_ex(o, "tenants", &arr));
	ASSERT_EQ(1, json_object_array_length(arr));
	t = json_object_array_get_idx(arr, 0);
	EXPECT_STREQ("mnv2", str_of(t, "name"));
	EXPECT_EQ(QOS_MS, num_of(t, "qos_ms"));
	sent = num_of(t, "sent");
	completed = num_of(t, "completed");
	EXPECT_LE(fabs(sent - mean), 5 * sqrt(mean)) TH_LOG("%.0f arrivals, mean %.0f", sent, mean);
	EXPECT_EQ(sent, completed);
	EXPECT_EQ(0, num_of(t, "outstanding"));
	EXPECT_EQ(0, num_of(t, "dropped") + num_of(t, "failed") + num_of(t, "rejected"));
	/* offered_rate is sent over the window, rounded to 1/1000 */
	EXPECT_LE(fabs(num_of(t, "offered_rate") - sent / DURATION_S), 1e-3);
	/*
	 * The client's parts are each query's share of its own latency, so
	 * each percentile is at most the latency's; the send of an input and
	 * the hop around colocd's own latency take time.
	 */
	EXPECT_LT(0, num_of(t, "send_p50_ms"));
	EXPECT_LT(0, num_of(t, "hop_p50_ms"));
	EXPECT_LE(num_of(t, "send_p95_ms"), num_of(t, "p95_ms"));
	EXPECT_LE(num_of(t, "hop_p95_ms"), num_of(t, "p95_ms"));
	EXPECT_LE(num_of(t, "unqueued_p95_ms"), num_of(t, "p95_ms"));
	EXPECT_LE(num_of(t, "colocd_p50_ms"), num_of(t, "p50_ms"));
	st = tenant_status(self, "mnv2");
	ASSERT_NE(NULL, st);
	EXPECT_EQ(completed, num_of(st, "served"));
	EXPECT_EQ(sent, num_of(st, "offered"));
	TH_LOG("%.0f sent, %.0f completed; colocd served %.0f; coloc-load CPU: %s", sent, completed,
	       num_of(st, "served"), strstr(c.output, "\"load_cpu\"") ?: "?");
	json_object_put(st);
	json_object_put(o);
}

/* The arrival times come from the seed alone: two runs with one seed send as many queries. */
TEST_F_TIMEOUT(load, run__same_seed_same_arrivals, 300)
{
	const char *args[] = { "--socket",   self->sock, "--tenant", "mnv2:" LOAD_STR(RATE_QPS),
			       "--duration", "2",	 "--seed",   "11",
			       "--drain",    "120",	 "--json",   NULL };
	double sent[2];
	struct json_object *st;

	for (int run = 0; run < 2; run++) {
		struct json_object *o, *arr;
		struct tu_child c;

		ASSERT_EQ(0, run_load(args, &c)) TH_LOG("%s", c.output);
		o = json_tokener_parse(c.output);
		ASSERT_NE(NULL, o) TH_LOG("not JSON: %s", c.output);
		ASSERT_TRUE(json_object_object_get_ex(o, "tenants", &arr));
		sent[run] = num_of(json_object_array_get_idx(arr, 0), "sent");
		json_object_put(o);
	}
	EXPECT_LT(0, sent[0]);
	EXPECT_EQ(sent[0], sent[1]);
	st = tenant_status(self, "mnv2");
	EXPECT_EQ(sent[0] + sent[1], num_of(st, "offered"));
	json_object_put(st);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of n sorted values, as coloc-load's report takes it. */
static double nearest_rank(const double *v, size_t n, double p)
{
	size_t rank = (size_t)ceil(p / 100.0 * (double)n);

	return v[rank ? rank - 1 : 0];
}

struct load_sample {
	double arrival, latency, colocd, hop, parts_sum, queued, compute;
	double hop_in, hop_out, in_woke, out_woke;
};

/* The lines of a --samples file after its header; how many, or -1 if one is malformed. */
static int read_samples(const char *path, struct load_sample *v, int cap)
{
	char line[1024];
	FILE *f = fopen(path, "r");
	int n = 0;

	if (!f || !fgets(line, sizeof(line), f) || strncmp(line, "tenant\tarrival_ms", 17)) {
		if (f)
			fclose(f);
		return -1;
	}
	while (n < cap && fgets(line, sizeof(line), f)) {
		double send, part[7], hp[5];
		struct load_sample *s = &v[n];

		if (sscanf(line,
			   "mnv2\t%lf\t%lf\t%lf\t%lf\t%lf\t%lf\t%lf\t%lf\t%lf\t%lf\t%lf\t%lf\t%lf\t"
			   "%lf\t%lf\t%lf\t%lf",
			   &s->arrival, &send, &s->latency, &s->colocd, &s->hop, &part[0], &part[1],
			   &part[2], &part[3], &part[4], &part[5], &part[6], &hp[0], &hp[1], &hp[2],
			   &hp[3], &hp[4]) != 17) {
			fclose(f);
			return -1;
		}
		s->parts_sum = 0;
		for (int p = 0; p < 7; p++)
			s->parts_sum += part[p];
		s->queued = part[0];
		s->compute = part[2];
		s->hop_in = hp[0];
		s->hop_out = hp[2];
		s->in_woke = hp[3];
		s->out_woke = hp[4];
		n++;
	}
	fclose(f);
	return n;
}

/*
 * --arrivals fixed sends exactly rate x duration queries, their planned
 * arrivals exactly 1/rate apart (the --samples file says so, in ns
 * precision); the samples add up (latency = colocd's + hop, colocd's = its
 * parts), each wake-up is within its part of the hop (colocd's loop woke
 * before its first read, coloc-load's wait returned before its parse) and
 * colocd says when it woke for most queries (one line a turn), and the
 * report's "beyond queueing" percentiles are those of the samples,
 * recomputed here.
 */
TEST_F_TIMEOUT(load, arrivals_fixed__exact_spacing_samples_match_report, 300)
{
	char samples[192];
	const char *args[] = { "--socket",   self->sock, "--tenant", "mnv2:" LOAD_STR(RATE_QPS),
			       "--duration", "3",	 "--arrivals", "fixed",
			       "--samples",  samples,	 "--drain",  "120",
			       "--json",     NULL };
	static struct load_sample v[4 * RATE_QPS];
	double unq[4 * RATE_QPS], cunq[4 * RATE_QPS], over[4 * RATE_QPS], arrivals[4 * RATE_QPS];
	struct json_object *o, *arr, *t;
	struct tu_child c;
	int n, woke_known = 0;

	snprintf(samples, sizeof(samples), "%s/samples.tsv", self->dir);
	ASSERT_EQ(0, run_load(args, &c)) TH_LOG("%s", c.output);
	o = json_tokener_parse(c.output);
	ASSERT_NE(NULL, o) TH_LOG("not JSON: %s", c.output);
	EXPECT_STREQ("fixed", str_of(o, "arrivals"));
	ASSERT_TRUE(json_object_object_get_ex(o, "tenants", &arr));
	t = json_object_array_get_idx(arr, 0);
	EXPECT_EQ(3 * RATE_QPS, num_of(t, "sent"));
	EXPECT_EQ(3 * RATE_QPS, num_of(t, "completed"));
	n = read_samples(samples, v, 4 * RATE_QPS);
	ASSERT_EQ(3 * RATE_QPS, n);
	for (int i = 0; i < n; i++) {
		arrivals[i] = v[i].arrival;
		EXPECT_LE(fabs(v[i].latency - v[i].colocd - v[i].hop), 2e-6);
		EXPECT_LE(fabs(v[i].colocd - v[i].parts_sum), 1e-5);
		EXPECT_LE(v[i].in_woke, v[i].hop_in + 2e-6);
		EXPECT_LE(v[i].out_woke, v[i].hop_out + 2e-6);
		woke_known += v[i].in_woke > 0;
		unq[i] = v[i].latency - v[i].queued;
		cunq[i] = v[i].colocd - v[i].queued;
		over[i] = unq[i] - v[i].compute;
	}
	EXPECT_LE(n / 2, woke_known);
	qsort(arrivals, (size_t)n, sizeof(double), cmp_double);
	EXPECT_EQ(0, arrivals[0]);
	for (int i = 1; i < n; i++) {
		double gap = arrivals[i] - arrivals[i - 1];

		EXPECT_LE(fabs(gap - 1000.0 / RATE_QPS), 2e-6)
		TH_LOG("arrivals %d and %d %.6f ms apart", i - 1, i, gap);
	}
	qsort(unq, (size_t)n, sizeof(double), cmp_double);
	qsort(cunq, (size_t)n, sizeof(double), cmp_double);
	qsort(over, (size_t)n, sizeof(double), cmp_double);
	/* the report rounds to 1/1000 ms, the samples to 1e-6 ms */
	EXPECT_LE(fabs(num_of(t, "unqueued_p95_ms") - nearest_rank(unq, (size_t)n, 95)), 6e-4);
	EXPECT_LE(fabs(num_of(t, "colocd_unqueued_p95_ms") - nearest_rank(cunq, (size_t)n, 95)),
		  6e-4);
	EXPECT_LE(fabs(num_of(t, "overhead_p95_ms") - nearest_rank(over, (size_t)n, 95)), 6e-4);
	EXPECT_LE(fabs(num_of(t, "overhead_p50_ms") - nearest_rank(over, (size_t)n, 50)), 6e-4);
	TH_LOG("served p95 %.3f ms, less queued %.3f, colocd's less queued %.3f, overhead %.3f",
	       num_of(t, "p95_ms"), num_of(t, "unqueued_p95_ms"),
	       num_of(t, "colocd_unqueued_p95_ms"), num_of(t, "overhead_p95_ms"));
	json_object_put(o);
}

TEST_F_TIMEOUT(load, unknown_tenant__named_exit_1, 300)
{
	const char *args[] = { "--socket",   self->sock, "--tenant", "mnv2:1,ghost:1",
			       "--duration", "1",	 NULL };
	struct json_object *st;
	struct tu_child c;

	EXPECT_EQ(1, run_load(args, &c)) TH_LOG("%s", c.output);
	EXPECT_NE(NULL, strstr(c.output, "no tenant 'ghost'")) TH_LOG("%s", c.output);
	/* nothing was sent to the known one either */
	st = tenant_status(self, "mnv2");
	EXPECT_EQ(0, num_of(st, "offered"));
	json_object_put(st);
}

TEST_HARNESS_MAIN
