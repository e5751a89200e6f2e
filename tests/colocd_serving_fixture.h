/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the tests of colocd serving tenants end to end share
 * (colocd_serving_test.c, colocd_faults_test.c, colocctl_serving_test.c):
 * a real colocd started with a profile cache made once per test binary
 * (bin/coloc-profile, one iteration, models/mobilenet_v2.model), a client
 * connected to it, and requests answered as JSON: submit, wait for a
 * state, a tenant's status, its executor, a restart with other options.
 * Include it after kselftest_harness.h.
 */
#ifndef COLOC_TESTS_COLOCD_SERVING_FIXTURE_H
#define COLOC_TESTS_COLOCD_SERVING_FIXTURE_H

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

static inline pid_t start_daemon(FIXTURE_DATA(wire) * self)
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
	coloc_client_close(self->c);
	if (self->colocd > 0)
		tu_stop_colocd(self->colocd);
	free(self->input);
	if (self->dir[0]) {
		if (tu_remove_tree(self->dir))
			TH_LOG("could not remove %s", self->dir);
	}
}

/* One request, built from a printf format: the parsed response (put it). */
static inline struct json_object *call(FIXTURE_DATA(wire) * self, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static inline struct json_object *call(FIXTURE_DATA(wire) * self, const char *fmt, ...)
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

static inline bool is_ok(struct json_object *o)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, "ok", &v) && json_object_get_boolean(v);
}

static inline const char *str_of(struct json_object *o, const char *key)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "";
}

static inline double num_of(struct json_object *o, const char *key)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : -1;
}

/* The status object of tenant name (put it), or NULL. */
static inline struct json_object *tenant_status(FIXTURE_DATA(wire) * self, const char *name)
{
	struct json_object *resp = call(self, "{\"cmd\":\"status\",\"name\":\"%s\"}", name);
	struct json_object *arr, *t = NULL;

	if (is_ok(resp) && json_object_object_get_ex(resp, "tenants", &arr) &&
	    json_object_array_length(arr) == 1)
		t = json_object_get(json_object_array_get_idx(arr, 0));
	json_object_put(resp);
	return t;
}

static inline bool wait_state(FIXTURE_DATA(wire) * self, const char *name, const char *state)
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
static inline struct json_object *submit_executors(FIXTURE_DATA(wire) * self, const char *name,
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

static inline struct json_object *submit(FIXTURE_DATA(wire) * self, const char *name,
					 const char *model, double qos_ms)
{
	return submit_executors(self, name, model, qos_ms, 0);
}

/*
 * Submits name with that many executors (0: the default, not said) and
 * waits until it is ready; its input of the right size is made.
 */
static inline bool submit_ready_executors(FIXTURE_DATA(wire) * self, const char *name,
					  int executors)
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

static inline bool submit_ready(FIXTURE_DATA(wire) * self, const char *name)
{
	return submit_ready_executors(self, name, 0);
}

/* The executor's pid of tenant name, from status. */
static inline pid_t executor_pid(FIXTURE_DATA(wire) * self, const char *name)
{
	struct json_object *t = tenant_status(self, name);
	pid_t pid = (pid_t)num_of(t, "pid");

	json_object_put(t);
	return pid;
}

/* The attributed tenant id of name, from the tenants command; -1 if absent. */
static inline int attributed_id(FIXTURE_DATA(wire) * self, const char *name)
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
static inline bool restart_with(FIXTURE_DATA(wire) * self, const char *const *more)
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
static inline double solo_ms_of(FIXTURE_DATA(wire) * self)
{
	struct json_object *r = submit(self, "probe", self->model, 0.001);
	const char *at = strstr(str_of(r, "error"), "solo latency ");
	double ms = at ? strtod(at + strlen("solo latency "), NULL) : -1;

	json_object_put(r);
	return ms;
}

#endif /* COLOC_TESTS_COLOCD_SERVING_FIXTURE_H */
