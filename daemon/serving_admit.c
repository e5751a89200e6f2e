// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Admitting a tenant into the serving core (serving.h): the checks that
 * read no file (serving_admit_check: name, executors, QoS, a free place,
 * the owner's quotas), which colocd runs before it copies a client's
 * files; then the sealed files taken and keyed (profile_key.h), the
 * executors started.
 * colocd parses no model: the first executor to describe the model
 * (execproc_summary, a checked copy of shm.h's summary) gives what the
 * profile is found by, the table built from and the QoS checked against
 * (sv_admit_poll); once all are ready, each must have built the profile's
 * kernel versions (sv_admit_ready), and the admission is answered. A
 * refusal kills the executors and frees the place. Owners' authority over
 * their tenants is here too (serving_authorize).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <sys/stat.h>
#include "coloc/model_format.h"
#include "profile_table.h"
#include "profile_versions.h"
#include "sandbox.h"
#include "serving_internal.h"
#include "submit_files.h"
#include "tenants_key.h"
#include "mono_clock.h"

/* The executors spec asks for: 0 (unsaid) is one. */
static int spec_executors(const struct serving_tenant_spec *spec)
{
	return spec->executors > 0 ? spec->executors : 1;
}

/* A tenant key (tenants_key.h) whose name part is 1.. of [A-Za-z0-9_.-], not "." or "..". */
static bool name_valid(const char *key)
{
	const char *name = tenants_key_name(key);
	size_t n = strlen(name);

	if (!n || strlen(key) >= SERVING_NAME_LEN || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

/* out.versions holds a whole model of the largest tenant for each decision a round may take. */
static int grow_versions(struct serving *s, int nr_layers)
{
	int want = SV_MAX_TENANTS * SERVING_MAX_EXECUTORS * nr_layers;
	uint8_t *v;

	/* a plan's look-ahead round decides two blocks at most (serving_plan.c) */
	if (2 * nr_layers > s->max_plan_versions) {
		v = realloc(s->plan_versions, 2 * (size_t)nr_layers);
		if (!v)
			return -ENOMEM;
		s->plan_versions = v;
		s->max_plan_versions = 2 * nr_layers;
	}
	if (want <= s->max_versions)
		return 0;
	v = realloc(s->versions, (size_t)want);
	if (!v)
		return -ENOMEM;
	s->versions = v;
	s->max_versions = want;
	return 0;
}

/*
 * A duplicate of a sealed memfd of the submit (submit_files.h) into *out,
 * its size added to *bytes; 0 or -errno.
 */
static int take_sealed(int fd, const char *what, int *out, uint64_t *bytes, struct coloc_err *err)
{
	struct stat st;

	*out = -1;
	if (fd < 0 || submit_file_check_sealed(fd))
		return coloc_err_set(err, -EBADF, "%s is not a sealed copy of a submitted file",
				     what);
	if (fstat(fd, &st))
		return coloc_err_set(err, -errno, "%s: fstat: %s", what, strerror(errno));
	*bytes += (uint64_t)st.st_size;
	*out = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (*out < 0)
		return coloc_err_set(err, -errno, "%s: fcntl: %s", what, strerror(errno));
	return 0;
}

/* The bytes of submitted files the tenants hold (sv_tenant.submit_bytes): owner's, or all's. */
static uint64_t held_submit_bytes(const struct serving *s, bool all, uid_t owner)
{
	uint64_t held = 0;

	for (int i = 0; i < SV_MAX_TENANTS; i++)
		if (s->tenants[i].used && (all || s->tenants[i].owner == owner))
			held += s->tenants[i].submit_bytes;
	return held;
}

/* What all tenants may hold where owner's would be admitted: a member's leave root's share. */
static uint64_t all_submit_room(const struct serving *s, uid_t owner)
{
	uint64_t max = s->max_submit_bytes;

	return owner ? max - SERVING_SUBMIT_ROOT_SHARE(max) : max;
}

/*
 * A member's quota of submitted files: --max-submit-mib-per-uid's, at most
 * SERVING_SUBMIT_MEMBER_SHARE of what members may fill; 0: none.
 */
static uint64_t member_submit_quota(const struct serving *s)
{
	uint64_t quota = s->max_submit_bytes_per_uid;
	uint64_t share = SERVING_SUBMIT_MEMBER_SHARE(all_submit_room(s, 1));

	if (!s->max_submit_bytes)
		return quota;
	return quota && quota < share ? quota : share;
}

/* Where member_submit_quota's figure comes from, for a refusal's text. */
static const char *member_quota_why(const struct serving *s)
{
	if (member_submit_quota(s) == s->max_submit_bytes_per_uid)
		return " (colocd --max-submit-mib-per-uid)";
	return " (a fifth of what members may fill of colocd --max-submit-mib, "
	       "--max-submit-mib-per-uid lower)";
}

/* What owner's quota of submitted files leaves it; UINT64_MAX for root or without one. */
static uint64_t uid_submit_bytes_left(const struct serving *s, uid_t owner)
{
	uint64_t quota = member_submit_quota(s), held;

	if (!owner || !quota)
		return UINT64_MAX;
	held = held_submit_bytes(s, false, owner);
	return held < quota ? quota - held : 0;
}

/* What colocd's bound over all uids leaves owner; UINT64_MAX without one. */
static uint64_t all_submit_bytes_left(const struct serving *s, uid_t owner)
{
	uint64_t room = all_submit_room(s, owner), held;

	if (!s->max_submit_bytes)
		return UINT64_MAX;
	held = held_submit_bytes(s, true, 0);
	return held < room ? room - held : 0;
}

uint64_t serving_submit_bytes_left(const struct serving *s, uid_t owner)
{
	uint64_t uid_left = uid_submit_bytes_left(s, owner);
	uint64_t all_left = all_submit_bytes_left(s, owner);

	return uid_left < all_left ? uid_left : all_left;
}

/* t's files (t->submit_bytes, not yet counted) within its owner's quota and the bound over all. */
static int check_submit_quota(const struct serving *s, const struct sv_tenant *t,
			      struct coloc_err *err)
{
	if (t->submit_bytes > uid_submit_bytes_left(s, t->owner))
		return coloc_err_set(
			err, -EDQUOT,
			"tenant %s: its files (%.1f MiB) would take uid %u past its quota of "
			"%.1f MiB of submitted files (its tenants hold %.1f MiB; remove one)%s",
			t->name, (double)t->submit_bytes / (1 << 20), (unsigned int)t->owner,
			(double)member_submit_quota(s) / (1 << 20),
			(double)held_submit_bytes(s, false, t->owner) / (1 << 20),
			member_quota_why(s));
	if (t->submit_bytes > all_submit_bytes_left(s, t->owner))
		return coloc_err_set(
			err, -EDQUOT,
			"tenant %s: its files (%.1f MiB) would take the submitted files of all "
			"tenants (%.1f MiB now) past the %.1f MiB %s (remove a tenant, or colocd "
			"--max-submit-mib raises it)",
			t->name, (double)t->submit_bytes / (1 << 20),
			(double)held_submit_bytes(s, true, 0) / (1 << 20),
			(double)all_submit_room(s, t->owner) / (1 << 20),
			t->owner ? "members may fill (the rest of --max-submit-mib is root's)" :
				   "of --max-submit-mib");
	return 0;
}

/* The submitted files into t: duplicates of the sealed memfds; 0 or -errno. */
static int take_files(struct sv_tenant *t, const struct serving_tenant_spec *spec,
		      struct coloc_err *err)
{
	int ret;

	t->model_fd = t->weights_fd = -1;
	if (spec->nr_external < 0 || spec->nr_external > COLOC_MAX_REQUEST_FDS ||
	    (spec->nr_external && !spec->external))
		return coloc_err_set(err, -EINVAL, "tenant %s: %d external data files; at most %d",
				     spec->name, spec->nr_external, COLOC_MAX_REQUEST_FDS);
	t->model_name = strdup(spec->model_name);
	if (!t->model_name)
		return coloc_err_set(err, -ENOMEM, "out of memory admitting %s", spec->name);
	ret = take_sealed(spec->model_fd, "the model", &t->model_fd, &t->submit_bytes, err);
	if (!ret && spec->weights_fd >= 0)
		ret = take_sealed(spec->weights_fd, "the weights", &t->weights_fd, &t->submit_bytes,
				  err);
	for (int i = 0; i < spec->nr_external && !ret; i++) {
		struct execproc_file *f = &t->external[t->nr_external];

		ret = take_sealed(spec->external[i].fd, "an external data file", &f->fd,
				  &t->submit_bytes, err);
		if (ret)
			break;
		f->location = strdup(spec->external[i].location);
		if (!f->location) {
			close(f->fd);
			return coloc_err_set(err, -ENOMEM, "out of memory admitting %s",
					     spec->name);
		}
		t->nr_external++;
	}
	return ret;
}

/* t's profile key over its sealed files (profile_key.h), on the loop: a submit without a copy. */
static int key_files(struct sv_tenant *t, struct coloc_err *err)
{
	struct profile_key_external ext[COLOC_MAX_REQUEST_FDS];
	struct profile_key_input in = {
		.model_fd = t->model_fd,
		.weights_fd = t->weights_fd,
		.external = ext,
		.nr_external = t->nr_external,
	};

	for (int i = 0; i < t->nr_external; i++)
		ext[i] = (struct profile_key_external){ t->external[i].location, t->external[i].fd };
	return profile_key_compute(&in, &t->model_key, err);
}

/* What owner holds: tenants (submits being copied included), their executors, their queries. */
void sv_owner_usage(const struct serving *s, uid_t owner, int *tenants, int *executors, int *queued)
{
	*tenants = *executors = *queued = 0;
	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		const struct sv_tenant *t = &s->tenants[i];

		if (!t->used || t->owner != owner)
			continue;
		(*tenants)++;
		*executors += t->nr_exec;
		*queued += t->nr_queries;
	}
	for (const struct serving_hold *h = s->holds; h; h = h->next)
		if (h->owner == owner) {
			(*tenants)++;
			*executors += h->executors;
		}
}

int serving_hold(struct serving *s, const struct serving_tenant_spec *spec,
		 struct serving_hold **out, struct coloc_err *err)
{
	struct serving_hold *h;
	int ret = serving_admit_check(s, spec, err);

	*out = NULL;
	if (ret)
		return ret;
	h = calloc(1, sizeof(*h));
	if (!h)
		return coloc_err_set(err, -ENOMEM, "out of memory admitting %s", spec->name);
	h->owner = spec->owner;
	h->executors = spec_executors(spec);
	h->next = s->holds;
	if (s->holds)
		s->holds->prev = h;
	s->holds = h;
	*out = h;
	return 0;
}

void serving_release(struct serving *s, struct serving_hold *h)
{
	if (!h)
		return;
	if (h->prev)
		h->prev->next = h->next;
	else
		s->holds = h->next;
	if (h->next)
		h->next->prev = h->prev;
	free(h);
}

/* A new tenant of spec within its owner's quotas; root is held to the global limits only. */
static int check_admit_quota(const struct serving *s, const struct serving_tenant_spec *spec,
			     struct coloc_err *err)
{
	int tenants, executors, queued, want = spec_executors(spec);

	if (!spec->owner)
		return 0;
	sv_owner_usage(s, spec->owner, &tenants, &executors, &queued);
	if (s->max_tenants_per_uid && tenants >= s->max_tenants_per_uid)
		return coloc_err_set(
			err, -EDQUOT,
			"tenant %s: uid %u already has %d serving tenants (submits being "
			"copied included), its quota (colocd --max-tenants-per-uid "
			"raises it)",
			spec->name, (unsigned int)spec->owner, tenants);
	if (s->max_executors_per_uid && executors + want > s->max_executors_per_uid)
		return coloc_err_set(
			err, -EDQUOT,
			"tenant %s: %d more executors would take uid %u past its "
			"quota of %d (it has %d, submits being copied included; colocd "
			"--max-executors-per-uid raises it)",
			spec->name, want, (unsigned int)spec->owner, s->max_executors_per_uid,
			executors);
	if (!uid_submit_bytes_left(s, spec->owner))
		return coloc_err_set(
			err, -EDQUOT,
			"tenant %s: uid %u's tenants hold its quota of %.1f MiB of submitted "
			"files (remove one)%s",
			spec->name, (unsigned int)spec->owner,
			(double)member_submit_quota(s) / (1 << 20), member_quota_why(s));
	return 0;
}

int serving_authorize(const struct serving *s, const char *name, uid_t uid, struct coloc_err *err)
{
	const struct sv_tenant *t = sv_find_tenant(s, name);

	if (!t)
		return coloc_err_set(err, -ENOENT, "no tenant %s", name);
	if (uid && t->owner != uid)
		return coloc_err_set(err, -EPERM, "tenant %s belongs to another user", name);
	return 0;
}

int serving_tenants_named(const struct serving *s, const char *name, uid_t *owners, int max)
{
	int n = 0;

	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		const struct sv_tenant *t = &s->tenants[i];

		if (!t->used || strcmp(tenants_key_name(t->name), name))
			continue;
		if (n < max)
			owners[n] = tenants_key_owner(t->name);
		n++;
	}
	return n;
}

/* Places members' tenants hold, submits being copied included. */
static int members_places(const struct serving *s)
{
	int n = 0;

	for (int i = 0; i < SV_MAX_TENANTS; i++)
		n += s->tenants[i].used && s->tenants[i].owner;
	for (const struct serving_hold *h = s->holds; h; h = h->next)
		n += h->owner != 0;
	return n;
}

/* A free place among the tenants, or NULL. */
static struct sv_tenant *free_place(const struct serving *s)
{
	for (int i = 0; i < SV_MAX_TENANTS; i++)
		if (!s->tenants[i].used)
			return (struct sv_tenant *)&s->tenants[i];
	return NULL;
}

int serving_admit_check(const struct serving *s, const struct serving_tenant_spec *spec,
			struct coloc_err *err)
{
	int ret;

	if (!spec->name || !name_valid(spec->name))
		return coloc_err_set(err, -EINVAL,
				     "tenant name '%s' is not 1 to %d of letters, digits, '_', "
				     "'.' and '-'",
				     spec->name ? spec->name : "", SERVING_NAME_LEN - 1);
	if (sv_find_tenant(s, spec->name))
		return coloc_err_set(err, -EEXIST, "tenant %s exists; remove it first", spec->name);
	if (spec->executors < 0 || spec->executors > SERVING_MAX_EXECUTORS)
		return coloc_err_set(err, -EINVAL, "tenant %s: %d executors; 1 to %d", spec->name,
				     spec->executors, SERVING_MAX_EXECUTORS);
	if (!spec->qos_ns || spec->qos_ns > SERVING_MAX_QOS_NS)
		return coloc_err_set(err, -EINVAL,
				     "tenant %s: a QoS target above 0 and at most %llu s",
				     spec->name, SERVING_MAX_QOS_NS / 1000000000ull);
	ret = check_admit_quota(s, spec, err);
	if (ret)
		return ret;
	if (spec->owner && members_places(s) >= SV_MAX_TENANTS - SERVING_ROOT_SHARE(SV_MAX_TENANTS))
		return coloc_err_set(
			err, -ENOSPC,
			"tenant %s: members' tenants hold the %d places members may take, "
			"submits being copied included (the rest of colocd's %d are root's; "
			"remove one first)",
			spec->name, SV_MAX_TENANTS - SERVING_ROOT_SHARE(SV_MAX_TENANTS),
			SV_MAX_TENANTS);
	if (!free_place(s))
		return coloc_err_set(err, -ENOSPC, "%d tenants are served, the most colocd takes",
				     SV_MAX_TENANTS);
	return 0;
}

int serving_admit(struct serving *s, const struct serving_tenant_spec *spec, struct coloc_err *err)
{
	struct sv_tenant *t;
	int ret;

	ret = serving_admit_check(s, spec, err);
	if (ret)
		return ret;
	if (!spec->model_name || spec->model_fd < 0)
		return coloc_err_set(err, -EINVAL, "tenant %s: no model file", spec->name);
	if (spec->weights_fd >= 0 && model_path_is_onnx(spec->model_name))
		return coloc_err_set(
			err, -EINVAL,
			"tenant %s: %s is an ONNX model, whose weights are in the file; "
			"drop the weights file",
			spec->name, spec->model_name);
	t = free_place(s);
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", spec->name);
	t->owner = spec->owner;
	t->qos_ns = spec->qos_ns;
	t->nr_exec = spec_executors(spec);
	t->admitted = spec->admitted;
	t->admitted_ctx = spec->admitted_ctx;
	ret = take_files(t, spec, err);
	if (!ret)
		ret = check_submit_quota(s, t, err);
	if (!ret && spec->model_keyed)
		t->model_key = spec->model_key;
	else if (!ret)
		ret = key_files(t, err);
	if (ret)
		goto fail;
	if (s->sandbox) {
		ret = sandbox_tenant_open(s->sandbox, t->name, t->owner, err);
		if (ret)
			goto fail;
		t->sandboxed = true;
	}
	t->used = true;
	t->order = s->next_order++;
	ret = sv_start_executors(s, t, err);
	if (ret)
		goto fail;
	return 0;
fail:
	t->admitted = NULL;
	sv_free_tenant(s, t);
	return ret;
}

/* The model's files as a coloc-profile command names them, in messages. */
static void profile_shown(const struct sv_tenant *t, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", t->model_name, t->weights_fd >= 0 ? " --weights WEIGHTS" : "");
}

/*
 * The table and the buffers of a tenant whose model sum describes, from
 * its profile p (freed): 0, or -errno with err saying why it is refused.
 */
static int admit_described(struct serving *s, struct sv_tenant *t,
			   const struct coloc_shm_summary *sum, struct profile *p,
			   struct coloc_err *err)
{
	uint64_t *macs;
	int ret;

	t->summary = malloc(sizeof(*t->summary));
	t->versions = malloc(sizeof(*t->versions));
	if (!t->summary || !t->versions) {
		profile_free(p);
		return coloc_err_set(err, -ENOMEM, "out of memory admitting %s", t->name);
	}
	memcpy(t->summary, sum, sizeof(*sum));
	t->nr_layers = (int)sum->nr_layers;
	t->in_bytes = sum->in_bytes;
	t->out_bytes = sum->out_bytes;
	macs = malloc((size_t)t->nr_layers * sizeof(*macs));
	if (!macs) {
		profile_free(p);
		return coloc_err_set(err, -ENOMEM, "out of memory admitting %s", t->name);
	}
	for (int l = 0; l < t->nr_layers; l++)
		macs[l] = sum->layer_macs[l];
	ret = profile_table_build_layers(p, sum->model_name, t->nr_layers, macs, &t->table, err);
	if (!ret && profile_versions_of(p, t->versions))
		ret = coloc_err_set(err, -E2BIG,
				    "the profile of %s has more kernel versions of distinct names "
				    "than an executor reports (%d)",
				    sum->model_name, COLOC_SHM_MAX_VERSION_NAMES);
	profile_free(p);
	free(macs);
	if (ret)
		return ret;
	t->solo_ns = policy_costs_served_solo_ns(&t->table.costs, s->nr_cpus);
	if (!t->solo_ns || t->qos_ns < t->solo_ns)
		return coloc_err_set(err, -ERANGE,
				     "tenant %s: QoS %.3f ms is below model %s's profiled solo "
				     "latency %.3f ms on all %d served cores",
				     t->name, t->qos_ns / 1e6, sum->model_name, t->solo_ns / 1e6,
				     s->nr_cpus);
	ret = grow_versions(s, t->nr_layers);
	for (int i = 0; i < t->nr_exec && !ret; i++) {
		t->ex[i].blk_versions = calloc((size_t)t->nr_layers, 1);
		t->ex[i].plan = calloc(COLOC_SHM_MAX_PLAN_BLOCKS, sizeof(*t->ex[i].plan));
		if (!t->ex[i].blk_versions || !t->ex[i].plan)
			ret = -ENOMEM;
	}
	t->scratch = t->nr_exec > 1 ? malloc(t->in_bytes ? t->in_bytes : 1) : NULL;
	if (ret || (t->nr_exec > 1 && !t->scratch))
		return coloc_err_set(err, -ENOMEM, "out of memory admitting %s", t->name);
	return 0;
}

/* Ends t's admission: the callback told (ret 0: admitted), t gone when refused. */
static void admission_ends(struct serving *s, struct sv_tenant *t, int ret,
			   const struct coloc_err *err)
{
	void (*admitted)(void *, const char *, int, const struct coloc_err *) = t->admitted;
	void *ctx = t->admitted_ctx;
	char name[SERVING_NAME_LEN];

	snprintf(name, sizeof(name), "%s", t->name);
	t->admitted = NULL;
	if (ret)
		sv_drop_tenant(s, t);
	else
		t->described = true;
	if (admitted)
		admitted(ctx, name, ret, err);
}

void sv_admit_refuse(struct serving *s, struct sv_tenant *t, int ret, const char *why)
{
	struct coloc_err err = { 0 };

	coloc_err_set(&err, ret < 0 ? ret : -EINVAL, "%s", why);
	admission_ends(s, t, err.code, &err);
}

bool sv_admit_poll(struct serving *s, struct sv_tenant *t)
{
	char shown[PATH_MAX + 32];
	struct coloc_err err = { 0 };
	int ret;

	if (t->summary || t->profile_load)
		return true;
	for (int i = 0; i < t->nr_exec; i++) {
		const struct coloc_shm_summary *sum =
			t->ex[i].ep ? execproc_summary(t->ex[i].ep) : NULL;

		if (!sum)
			continue;
		profile_shown(t, shown, sizeof(shown));
		ret = sv_profile_load_start(s, t, sum, shown, &err);
		if (ret)
			admission_ends(s, t, ret, &err);
		return !ret;
	}
	return true;
}

bool sv_admit_profile_loaded(struct serving *s, struct sv_tenant *t)
{
	const struct coloc_shm_summary *sum = NULL;
	struct coloc_err err = { 0 };
	struct profile *p;
	int ret;

	if (!sv_profile_load_take(t->profile_load, &p, &sum, &err))
		return false;
	ret = p ? admit_described(s, t, sum, p, &err) : err.code;
	sv_profile_load_end(s, t);
	if (ret)
		admission_ends(s, t, ret, &err);
	return !ret;
}

/* A name of a version list in a message: quoted, or "no version" past the list's end. */
static void version_shown(const char *name, char *buf, size_t len)
{
	if (name[0])
		snprintf(buf, len, "'%s'", name);
	else
		snprintf(buf, len, "no version");
}

bool sv_admit_ready(struct serving *s, struct sv_tenant *t)
{
	char shown[PATH_MAX + 32], want[PROFILE_VERSION_NAME_LEN + 2];
	char got[PROFILE_VERSION_NAME_LEN + 2];
	struct profile_versions_diff d;
	struct coloc_err err = { 0 };

	for (int i = 0; i < t->nr_exec; i++) {
		if (profile_versions_same(t->versions, execproc_versions(t->ex[i].ep), t->nr_layers,
					  &d))
			continue;
		profile_shown(t, shown, sizeof(shown));
		version_shown(d.want, want, sizeof(want));
		version_shown(d.got, got, sizeof(got));
		coloc_err_set(&err, -ESTALE,
			      "tenant %s: the profile of model %s is of other kernel versions "
			      "than its executor built (layer %d's version %d is %s in the "
			      "profile, %s here: a profile made before coloc's versions changed, "
			      "or with another ISA or oneDNN); not served on it: measure it again "
			      "with coloc-profile %s -o %s.profile --cache-dir %s",
			      t->name, t->summary->model_name, d.layer, d.version, want, got, shown,
			      t->summary->model_name, profile_cache_dir(s->cache_dir));
		if (t->described) /* restarted */
			sv_fail_tenant(s, t, coloc_err_str(&err));
		else
			admission_ends(s, t, err.code, &err);
		return false;
	}
	t->state = SERVING_TENANT_READY;
	sv_notify_running(s, t, t->state);
	if (!t->described)
		admission_ends(s, t, 0, NULL);
	return true;
}

/* Executors' fds and retired ones' that serving_admit_wait polls at most. */
#define SV_WAIT_FDS (4 * SV_MAX_TENANTS * SERVING_MAX_EXECUTORS)

/* Answers serving_admit_wait's admission. */
static void admit_wait_done(void *ctx, const char *name, int ret, const struct coloc_err *err)
{
	struct coloc_err *out = ctx;

	(void)name;
	if (err)
		*out = *err;
	out->code = ret;
	out->msg[sizeof(out->msg) - 1] = '\0';
	if (!ret)
		out->code = 1;
}

int serving_admit_wait(struct serving *s, const struct serving_tenant_spec *spec, int timeout_ms,
		       struct coloc_err *err)
{
	struct serving_tenant_spec sp = *spec;
	struct coloc_err res = { 0 };
	uint64_t end = coloc_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	int ret;

	sp.admitted = admit_wait_done;
	sp.admitted_ctx = &res;
	ret = serving_admit(s, &sp, err);
	if (ret)
		return ret;
	while (!res.code) {
		struct pollfd pfd[SV_WAIT_FDS];
		int fds[SV_WAIT_FDS], n, wait = serving_next_timeout_ms(s);
		uint64_t now = coloc_now_ns();

		if (now >= end) {
			serving_remove(s, spec->name, NULL);
			return coloc_err_set(err, -ETIMEDOUT,
					     "tenant %s: not admitted within %d ms", spec->name,
					     timeout_ms);
		}
		n = serving_fds(s, fds, (int)(sizeof(fds) / sizeof(fds[0])));
		for (int i = 0; i < n; i++)
			pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
		if (wait < 0 || (uint64_t)wait > (end - now) / 1000000 + 1)
			wait = (int)((end - now) / 1000000 + 1);
		if (poll(pfd, (nfds_t)n, wait) > 0) {
			for (int i = 0; i < n; i++)
				if (pfd[i].revents)
					serving_handle_fd(s, pfd[i].fd);
		}
		serving_tick(s);
	}
	if (res.code == 1)
		return 0;
	if (err)
		*err = res;
	return res.code;
}
