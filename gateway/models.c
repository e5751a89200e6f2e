// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The served models (models.h): a fixed table of slots, never freed while
 * the gateway runs (handlers hold pointers into it), loads and unloads one
 * at a time under load_lock, each slot's settings under its rwlock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>
#include "models.h"
#include "mono_clock.h"

#define MODELS_POLL_US 50000
#define MODELS_WATCH_MS 1000 /* how often the watcher asks colocd for each ready model's tenant */

struct gw_models {
	struct gw_repo repo;
	char tenant_prefix[GW_NAME_MAX];
	struct gw_ctl *ctl;
	struct gw_fwd *fw;
	int load_timeout_s;
	pthread_mutex_t load_lock; /* one load or unload at a time */
	pthread_mutex_t table_lock; /* slots' present and unloaded flags */
	atomic_bool startup_done;
	bool unloaded[GW_REPO_MAX_MODELS]; /* explicitly: not counted for server readiness */
	/* colocd lost its tenant: submitted again (written under load_lock) */
	atomic_bool lost[GW_REPO_MAX_MODELS];
	pthread_mutex_t watch_lock;
	pthread_cond_t watch_cond;
	bool stopping; /* under watch_lock */
	struct gw_model slots[GW_REPO_MAX_MODELS];
};

static const char *const state_names[] = {
	[GW_MODEL_UNAVAILABLE] = "UNAVAILABLE",
	[GW_MODEL_LOADING] = "LOADING",
	[GW_MODEL_READY] = "READY",
	[GW_MODEL_FAILED] = "UNAVAILABLE",
};

const char *gw_model_state_name(enum gw_model_state s)
{
	return (unsigned int)s < sizeof(state_names) / sizeof(*state_names) ? state_names[s] : "?";
}

int gw_models_create(const char *repo, bool repo_links, const char *tenant_prefix,
		     struct gw_ctl *ctl, struct gw_fwd *fw, int load_timeout_s,
		     struct gw_models **out, struct coloc_err *err)
{
	struct gw_models *ms = calloc(1, sizeof(*ms));
	int r;

	*out = NULL;
	if (!ms)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	if ((size_t)snprintf(ms->tenant_prefix, sizeof(ms->tenant_prefix), "%s", tenant_prefix) >=
	    sizeof(ms->tenant_prefix)) {
		free(ms);
		return coloc_err_set(err, -ENAMETOOLONG, "--tenant-prefix %.80s is too long",
				     tenant_prefix);
	}
	r = gw_repo_init(&ms->repo, repo, repo_links, err);
	if (r) {
		free(ms);
		return r;
	}
	ms->ctl = ctl;
	ms->fw = fw;
	ms->load_timeout_s = load_timeout_s;
	pthread_mutex_init(&ms->load_lock, NULL);
	pthread_mutex_init(&ms->table_lock, NULL);
	pthread_mutex_init(&ms->watch_lock, NULL);
	pthread_cond_init(&ms->watch_cond, NULL);
	for (int i = 0; i < GW_REPO_MAX_MODELS; i++)
		pthread_rwlock_init(&ms->slots[i].lock, NULL);
	*out = ms;
	return 0;
}

void gw_models_destroy(struct gw_models *ms)
{
	if (!ms)
		return;
	for (int i = 0; i < GW_REPO_MAX_MODELS; i++)
		pthread_rwlock_destroy(&ms->slots[i].lock);
	pthread_mutex_destroy(&ms->load_lock);
	pthread_mutex_destroy(&ms->table_lock);
	pthread_mutex_destroy(&ms->watch_lock);
	pthread_cond_destroy(&ms->watch_cond);
	free(ms);
}

/* The slot of name; with create, a new one when there is none. */
static struct gw_model *models_slot(struct gw_models *ms, const char *name, bool create)
{
	struct gw_model *found = NULL, *free_slot = NULL;

	pthread_mutex_lock(&ms->table_lock);
	for (int i = 0; i < GW_REPO_MAX_MODELS; i++) {
		struct gw_model *m = &ms->slots[i];

		if (m->present && !strcmp(m->cfg.name, name)) {
			found = m;
			break;
		}
		if (!m->present && !free_slot)
			free_slot = m;
	}
	if (!found && create && free_slot) {
		pthread_rwlock_wrlock(&free_slot->lock);
		memset(&free_slot->cfg, 0, sizeof(free_slot->cfg));
		snprintf(free_slot->cfg.name, sizeof(free_slot->cfg.name), "%s", name);
		free_slot->reason[0] = '\0';
		atomic_store(&free_slot->state, GW_MODEL_UNAVAILABLE);
		free_slot->present = true;
		pthread_rwlock_unlock(&free_slot->lock);
		found = free_slot;
	}
	if (found && create)
		ms->unloaded[found - ms->slots] = false;
	pthread_mutex_unlock(&ms->table_lock);
	return found;
}

struct gw_model *gw_models_get(struct gw_models *ms, const char *name)
{
	struct gw_model *m = models_slot(ms, name, false);

	if (m)
		pthread_rwlock_rdlock(&m->lock);
	return m;
}

struct gw_model *gw_models_get_tenant(struct gw_models *ms, const char *tenant)
{
	size_t n = strlen(ms->tenant_prefix);

	return strncmp(tenant, ms->tenant_prefix, n) ? NULL : gw_models_get(ms, tenant + n);
}

void gw_models_put(struct gw_model *m)
{
	if (m)
		pthread_rwlock_unlock(&m->lock);
}

static void models_set_state(struct gw_model *m, enum gw_model_state s, const char *reason)
{
	pthread_rwlock_wrlock(&m->lock);
	atomic_store(&m->state, s);
	snprintf(m->reason, sizeof(m->reason), "%s", reason ? reason : "");
	pthread_rwlock_unlock(&m->lock);
}

static double models_num(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : -1;
}

static const char *models_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string) ?
		       json_object_get_string(v) :
		       "";
}

/*
 * colocd's name for model name: the prefix and name, or -ENAMETOOLONG.
 * colocd scopes names by uid: a member's name is its own tenant, but
 * root's bare name may mean another uid's, so a gateway run as root says
 * "0:", root's own (docs/design/tenant-names.md).
 */
static int models_tenant(const struct gw_models *ms, const char *name, char *tenant,
			 struct coloc_err *err)
{
	const char *own = getuid() ? "" : "0:";

	if ((size_t)snprintf(tenant, GW_NAME_MAX, "%s%s%s", own, ms->tenant_prefix, name) >=
	    GW_NAME_MAX)
		return coloc_err_set(err, -ENAMETOOLONG,
				     "tenant name %s%s%s is too long (at most %d bytes with "
				     "--tenant-prefix)",
				     own, ms->tenant_prefix, name, GW_NAME_MAX - 1);
	return 0;
}

static int models_submit_once(struct gw_models *ms, const struct gw_model_config *cfg,
			      struct coloc_err *err)
{
	int rfd = gw_repo_open(&ms->repo, err);
	int r = rfd < 0 ? rfd : gw_ctl_submit(ms->ctl, rfd, ms->repo.follow_links, cfg, err);

	if (rfd >= 0)
		close(rfd);
	return r;
}

/* Waits until colocd has no tenant name (a removed one drains its queries first). */
static int models_wait_gone(struct gw_models *ms, const char *name, struct coloc_err *err)
{
	uint64_t end = coloc_now_ns() + (uint64_t)ms->load_timeout_s * 1000000000ull;
	struct json_object *t;

	while ((t = gw_ctl_tenant(ms->ctl, name, err))) {
		json_object_put(t);
		if (coloc_now_ns() > end)
			return coloc_err_set(err, -ETIMEDOUT, "tenant %s not removed after %d s",
					     name, ms->load_timeout_s);
		usleep(MODELS_POLL_US);
	}
	if (err->code != -ENOENT)
		return err->code;
	coloc_err_clear(err);
	return 0;
}

/*
 * Removes colocd's tenant name when it is this gateway's uid's; another
 * uid's is an error naming that uid.
 */
static int models_remove_own(struct gw_models *ms, const char *name, struct coloc_err *err)
{
	struct json_object *t = gw_ctl_tenant(ms->ctl, name, err);
	double owner = t ? models_num(t, "owner") : -1;
	int r;

	json_object_put(t);
	if (!t && err->code != -ENOENT)
		return err->code;
	if (!t) {
		coloc_err_clear(err);
		return 0; /* gone meanwhile */
	}
	if (owner != (double)getuid())
		return coloc_err_set(err, -EEXIST,
				     "tenant %s exists and belongs to uid %.0f, not this gateway's "
				     "uid %u: its owner or root must remove it, or this gateway "
				     "must name its tenants otherwise (--tenant-prefix)",
				     name, owner, (unsigned int)getuid());
	r = gw_ctl_remove(ms->ctl, name, err);
	if (r && !(r == -EINVAL && strstr(err->msg, "no tenant")))
		return r;
	coloc_err_clear(err);
	return models_wait_gone(ms, name, err);
}

/*
 * Submits cfg. A tenant of that name already there is never adopted:
 * colocd's status shows the model path its submitter said, not the bytes
 * it runs, so one of this uid's is removed and cfg submitted in its place.
 */
static int models_submit(struct gw_models *ms, const struct gw_model_config *cfg,
			 struct coloc_err *err)
{
	int r = models_submit_once(ms, cfg, err);

	if (r != -EINVAL || !strstr(err->msg, "exists"))
		return r;
	coloc_err_clear(err);
	r = models_remove_own(ms, cfg->tenant, err);
	return r ? r : models_submit_once(ms, cfg, err);
}

/* Waits until colocd says the tenant is ready; its sizes. */
static int models_wait_ready(struct gw_models *ms, const char *name, uint64_t *in, uint64_t *out,
			     struct coloc_err *err)
{
	uint64_t end = coloc_now_ns() + (uint64_t)ms->load_timeout_s * 1000000000ull;

	for (;;) {
		struct json_object *t = gw_ctl_tenant(ms->ctl, name, err);
		const char *state;

		if (!t)
			return err->code;
		state = models_str(t, "state");
		if (!strcmp(state, "ready")) {
			*in = (uint64_t)models_num(t, "input_bytes");
			*out = (uint64_t)models_num(t, "output_bytes");
			json_object_put(t);
			return 0;
		}
		if (strcmp(state, "starting")) {
			coloc_err_set(err, -EIO, "colocd's tenant %s is %s: %.300s", name, state,
				      models_str(t, "reason"));
			json_object_put(t);
			return -EIO;
		}
		json_object_put(t);
		if (coloc_now_ns() > end)
			return coloc_err_set(err, -ETIMEDOUT, "tenant %s not ready after %d s",
					     name, ms->load_timeout_s);
		usleep(MODELS_POLL_US);
	}
}

struct models_waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
};

static void models_warmup_done(struct gw_job *job)
{
	struct models_waiter *w = job->arg;

	pthread_mutex_lock(&w->lock);
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* One query of zeros, waited for: the model's first query is not a client's. */
static int models_warmup(struct gw_models *ms, const struct gw_model_config *cfg, size_t in,
			 size_t out, struct coloc_err *err)
{
	struct models_waiter w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
	struct gw_job job = { 0 };
	void *input = calloc(1, in ? in : 1), *output = malloc(out ? out : 1);
	int r = -ENOMEM;

	if (!input || !output) {
		coloc_err_set(err, r, "out of memory");
		goto out;
	}
	job.tenant = cfg->tenant;
	job.input = input;
	job.input_bytes = in;
	job.output = output;
	job.output_cap = out;
	job.deadline_ns = coloc_now_ns() + (uint64_t)ms->load_timeout_s * 1000000000ull;
	job.done = models_warmup_done;
	job.arg = &w;
	r = gw_fwd_submit(ms->fw, &job);
	if (r) {
		coloc_err_set(err, r, "warm-up query of %s not sent: %s", cfg->name, strerror(-r));
		goto out;
	}
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	r = job.result;
	if (r)
		coloc_err_set(err, r, "warm-up query of %s: %s", cfg->name, job.why);
	else if (job.res.status != COLOC_INFER_OK)
		r = coloc_err_set(err, -EIO, "warm-up query of %s: %s", cfg->name, job.res.error);
out:
	free(input);
	free(output);
	return r;
}

/*
 * A failed load logged with the repository's path, and err's message then
 * without it, for a client: the repository's files by their names in it
 * (NAME/1/model.onnx), also where the client library or colocd quoted the
 * path colocd is told.
 */
static void models_failed(struct gw_models *ms, const char *name, struct coloc_err *err)
{
	char prefix[PATH_MAX + 1];
	size_t n = strlen(ms->repo.path);
	char *p, *from;

	if (!err)
		return;
	fprintf(stderr, "coloc-gateway: model %s not loaded (repository %s): %s\n", name,
		ms->repo.path, coloc_err_str(err));
	while (n > 1 && ms->repo.path[n - 1] == '/')
		n--;
	if (!n || n >= PATH_MAX)
		return;
	/* the repository's path as a folder, where a path starts: "/models" leaves "/modelsX" */
	memcpy(prefix, ms->repo.path, n);
	n += prefix[n - 1] != '/';
	prefix[n - 1] = '/';
	prefix[n] = '\0';
	for (from = err->msg; (p = strstr(from, prefix));) {
		if (p != err->msg && !strchr(" '\"(=:", p[-1])) {
			from = p + 1;
			continue;
		}
		memmove(p, p + n, strlen(p + n) + 1);
		from = p;
	}
}

static int models_load_locked(struct gw_models *ms, const char *name, struct coloc_err *err)
{
	struct gw_model_config *cfg = malloc(sizeof(*cfg));
	uint64_t in = 0, out = 0;
	struct gw_model *m;
	int r;

	if (!cfg)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	r = gw_repo_read_model(&ms->repo, name, cfg, err);
	if (!r)
		r = models_tenant(ms, name, cfg->tenant, err);
	if (r)
		goto out;
	m = models_slot(ms, name, true);
	if (!m) {
		r = coloc_err_set(err, -E2BIG, "more than %d models", GW_REPO_MAX_MODELS);
		goto out;
	}
	if (atomic_load(&m->state) == GW_MODEL_READY)
		goto out;
	models_set_state(m, GW_MODEL_LOADING, NULL);
	r = models_submit(ms, cfg, err);
	if (!r)
		r = models_wait_ready(ms, cfg->tenant, &in, &out, err);
	if (!r)
		r = gw_repo_check_sizes(cfg, in, out, err);
	if (!r)
		r = models_warmup(ms, cfg, (size_t)in, (size_t)out, err);
	if (r) {
		models_failed(ms, name, err);
		models_set_state(m, GW_MODEL_FAILED, coloc_err_str(err));
		goto out_logged;
	}
	pthread_rwlock_wrlock(&m->lock);
	m->cfg = *cfg;
	m->input_bytes = (size_t)in;
	m->output_bytes = (size_t)out;
	m->reason[0] = '\0';
	atomic_store(&m->state, GW_MODEL_READY);
	pthread_rwlock_unlock(&m->lock);
out:
	if (r)
		models_failed(ms, name, err);
out_logged:
	free(cfg);
	return r;
}

int gw_models_load(struct gw_models *ms, const char *name, bool wait, struct coloc_err *err)
{
	int r;

	if (!wait && pthread_mutex_trylock(&ms->load_lock))
		return coloc_err_set(
			err, -EBUSY,
			"another model is loading or unloading; retry when it is done");
	if (wait)
		pthread_mutex_lock(&ms->load_lock);
	r = models_load_locked(ms, name, err);
	pthread_mutex_unlock(&ms->load_lock);
	return r;
}

int gw_models_unload(struct gw_models *ms, const char *name, struct coloc_err *err)
{
	char tenant[GW_NAME_MAX];
	struct gw_model *m;
	int r;

	if (models_tenant(ms, name, tenant, err))
		return err->code;
	if (pthread_mutex_trylock(&ms->load_lock))
		return coloc_err_set(
			err, -EBUSY,
			"another model is loading or unloading; retry when it is done");
	m = models_slot(ms, name, false);
	if (!m) {
		pthread_mutex_unlock(&ms->load_lock);
		return coloc_err_set(err, -ENOENT, "no model %s is loaded", name);
	}
	models_set_state(m, GW_MODEL_UNAVAILABLE, "unloaded");
	r = gw_ctl_remove(ms->ctl, tenant, err);
	if (r == -EINVAL && strstr(err->msg, "no tenant named")) {
		coloc_err_clear(err);
		r = 0;
	}
	pthread_mutex_lock(&ms->table_lock);
	ms->unloaded[m - ms->slots] = true;
	pthread_mutex_unlock(&ms->table_lock);
	ms->lost[m - ms->slots] = false;
	pthread_mutex_unlock(&ms->load_lock);
	return r;
}

void gw_models_load_all(struct gw_models *ms)
{
	char(*names)[GW_NAME_MAX] = calloc(GW_REPO_MAX_MODELS, GW_NAME_MAX);
	struct coloc_err err = { 0 };
	int n = names ? gw_repo_list(&ms->repo, names, GW_REPO_MAX_MODELS, &err) : -ENOMEM;

	if (n < 0)
		fprintf(stderr, "coloc-gateway: %s\n", coloc_err_str(&err));
	for (int i = 0; i < n; i++) {
		coloc_err_clear(&err);
		/* a failure is logged by the load */
		if (!gw_models_load(ms, names[i], true, &err))
			fprintf(stderr, "coloc-gateway: model %s ready\n", names[i]);
	}
	free(names);
	atomic_store(&ms->startup_done, true);
}

/*
 * Whether colocd says it has no tenant of this uid's for m, which is READY
 * here: colocd answers a name with the caller's own tenant only, and one of
 * another owner is never taken for the model's (logged, and lost).
 */
static bool models_tenant_lost(struct gw_models *ms, struct gw_model *m)
{
	struct coloc_err err = { 0 };
	char tenant[GW_NAME_MAX];
	struct json_object *t;
	double owner;

	pthread_rwlock_rdlock(&m->lock);
	snprintf(tenant, sizeof(tenant), "%s", m->cfg.tenant);
	pthread_rwlock_unlock(&m->lock);
	t = gw_ctl_tenant(ms->ctl, tenant, &err);
	owner = t ? models_num(t, "owner") : -1;
	json_object_put(t);
	if (t && owner != (double)getuid())
		fprintf(stderr, "coloc-gateway: colocd's tenant %s is uid %.0f's, not this "
				"gateway's: not the model's\n", tenant, owner);
	return t ? owner != (double)getuid() : err.code == -ENOENT;
}

/* Whether slot i holds a model that counts: present and not unloaded. */
static bool models_counted(struct gw_models *ms, int i)
{
	bool counted;

	pthread_mutex_lock(&ms->table_lock);
	counted = ms->slots[i].present && !ms->unloaded[i];
	pthread_mutex_unlock(&ms->table_lock);
	return counted;
}

/*
 * Slot i's look: a READY model whose tenant colocd lost (colocd restarted
 * without --state) is LOADING again, the server unready, until submitted
 * anew; a failed resubmission is tried again next time. colocd is asked
 * before load_lock is taken (a load through the API is not made to wait),
 * and again under it (an unload and load may have come between).
 */
static void models_watch_one(struct gw_models *ms, int i)
{
	struct gw_model *m = &ms->slots[i];
	bool ready = atomic_load(&m->state) == GW_MODEL_READY;
	struct coloc_err err = { 0 };
	char name[GW_NAME_MAX];

	if (!models_counted(ms, i) || (ready ? !models_tenant_lost(ms, m) : !ms->lost[i]))
		return;
	pthread_mutex_lock(&ms->load_lock);
	if (!models_counted(ms, i) || (!ms->lost[i] && !models_tenant_lost(ms, m)))
		goto out;
	pthread_rwlock_rdlock(&m->lock);
	snprintf(name, sizeof(name), "%s", m->cfg.name);
	pthread_rwlock_unlock(&m->lock);
	if (!ms->lost[i]) {
		fprintf(stderr, "coloc-gateway: colocd has no tenant for model %s (restarted?): "
				"submitting it again\n", name);
		models_set_state(m, GW_MODEL_LOADING, "colocd lost its tenant");
		ms->lost[i] = true;
	}
	if (!models_load_locked(ms, name, &err)) {
		ms->lost[i] = false;
		fprintf(stderr, "coloc-gateway: model %s ready\n", name);
	}
out:
	pthread_mutex_unlock(&ms->load_lock);
}

void gw_models_watch(struct gw_models *ms)
{
	pthread_mutex_lock(&ms->watch_lock);
	while (!ms->stopping) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += MODELS_WATCH_MS % 1000 * 1000000L;
		until.tv_sec += MODELS_WATCH_MS / 1000 + until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		if (!pthread_cond_timedwait(&ms->watch_cond, &ms->watch_lock, &until) ||
		    ms->stopping)
			continue;
		pthread_mutex_unlock(&ms->watch_lock);
		for (int i = 0; i < GW_REPO_MAX_MODELS; i++)
			models_watch_one(ms, i);
		pthread_mutex_lock(&ms->watch_lock);
	}
	pthread_mutex_unlock(&ms->watch_lock);
}

void gw_models_stop_watching(struct gw_models *ms)
{
	pthread_mutex_lock(&ms->watch_lock);
	ms->stopping = true;
	pthread_cond_signal(&ms->watch_cond);
	pthread_mutex_unlock(&ms->watch_lock);
}

bool gw_models_server_ready(struct gw_models *ms)
{
	bool ready = atomic_load(&ms->startup_done);

	pthread_mutex_lock(&ms->table_lock);
	for (int i = 0; ready && i < GW_REPO_MAX_MODELS; i++)
		if (ms->slots[i].present && !ms->unloaded[i] &&
		    atomic_load(&ms->slots[i].state) != GW_MODEL_READY)
			ready = false;
	pthread_mutex_unlock(&ms->table_lock);
	return ready;
}

void gw_models_each(struct gw_models *ms, void (*fn)(struct gw_model *m, void *arg), void *arg)
{
	for (int i = 0; i < GW_REPO_MAX_MODELS; i++)
		if (ms->slots[i].present)
			fn(&ms->slots[i], arg);
}

size_t gw_models_repo_max(struct gw_models *ms, size_t (*need)(const struct gw_model_config *cfg))
{
	char(*names)[GW_NAME_MAX] = calloc(GW_REPO_MAX_MODELS, GW_NAME_MAX);
	struct gw_model_config *cfg = malloc(sizeof(*cfg));
	struct coloc_err err = { 0 };
	int n = names && cfg ? gw_repo_list(&ms->repo, names, GW_REPO_MAX_MODELS, &err) : -1;
	size_t most = n < 0 ? SIZE_MAX : 0;

	for (int i = 0; i < n && most < SIZE_MAX; i++) {
		coloc_err_clear(&err);
		/* a folder that cannot be read now is refused at its load, as at the start */
		if (gw_repo_read_model(&ms->repo, names[i], cfg, &err))
			continue;
		if (!cfg->nr_inputs)
			most = SIZE_MAX;
		else if (need(cfg) > most)
			most = need(cfg);
	}
	free(cfg);
	free(names);
	return most;
}

struct json_object *gw_models_index(struct gw_models *ms)
{
	char(*names)[GW_NAME_MAX] = calloc(GW_REPO_MAX_MODELS, GW_NAME_MAX);
	struct json_object *arr = json_object_new_array();
	int n = names ? gw_repo_list(&ms->repo, names, GW_REPO_MAX_MODELS, NULL) : 0;

	for (int i = 0; i < n; i++) {
		struct json_object *o = json_object_new_object();
		struct gw_model *m = gw_models_get(ms, names[i]);

		json_object_object_add(o, "name", json_object_new_string(names[i]));
		if (m) {
			if (m->cfg.version[0])
				json_object_object_add(o, "version",
						       json_object_new_string(m->cfg.version));
			json_object_object_add(
				o, "state", json_object_new_string(gw_model_state_name(m->state)));
			json_object_object_add(o, "reason", json_object_new_string(m->reason));
		} else {
			json_object_object_add(o, "state", json_object_new_string("UNAVAILABLE"));
			json_object_object_add(o, "reason", json_object_new_string("not loaded"));
		}
		gw_models_put(m);
		json_object_array_add(arr, o);
	}
	free(names);
	return arr;
}

void gw_model_stats_count(struct gw_model_stats *st, const struct gw_job *job, uint64_t t_start)
{
	atomic_fetch_add(&st->request_us, (coloc_now_ns() - t_start) / 1000);
	if (gw_job_outcome(job) != GW_OK) {
		atomic_fetch_add(&st->failure, 1);
		if (job->result == -ETIMEDOUT)
			atomic_fetch_add(&st->refused_timeout, 1);
		return;
	}
	atomic_fetch_add(&st->success, 1);
	atomic_fetch_add(&st->count, 1);
	atomic_fetch_add(&st->compute_us, job->res.exec_ns / 1000);
	atomic_fetch_add(&st->queue_us, job->res.latency_ns > job->res.exec_ns ?
						(job->res.latency_ns - job->res.exec_ns) / 1000 :
						0);
}
