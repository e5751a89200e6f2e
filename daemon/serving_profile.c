// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A described tenant's cached profile, found, read and parsed off colocd's
 * loop: the largest profile the cache may legally hold takes the parser
 * half a second, and a member who submits that model would hold every
 * tenant's queries that long (docs/security-submit.md, "The cached
 * profile colocd reads"). The loop queues the load when the first
 * executor describes the model and goes on; SV_PROFILE_PARSERS threads,
 * started as loads come and living on, take the loads in turns by the
 * tenants' owners (uid_turns.h: root's first, then one per member uid), so
 * the parses' memory is that many profiles' at most and one member's many
 * loads hold another uid's for a parse, not for all of them. A thread
 * tells the loop through the load's eventfd, and the admission resumes
 * (sv_admit_profile_loaded). The load is shared by the queue and the
 * tenant, each holding a reference: a tenant dropped meanwhile lets go of
 * its own, and a load no tenant holds is freed unparsed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include "profile_table.h"
#include "serving_internal.h"
#include "uid_turns.h"

struct sv_profile_load {
	struct uid_turns_item turn; /* in the parsers' queue, by the tenant's owner */
	int refs; /* the queue's (then its thread's) and the tenant's */
	bool done; /* profile and err are the thread's result */
	int efd; /* written once done */
	struct coloc_shm_summary sum; /* the description the profile is looked up by */
	struct profile_key key;
	char shown[PATH_MAX + 32];
	char *cache_dir; /* NULL: the default */
	struct profile_machine machine;
	struct profile *profile;
	struct coloc_err err;
};

static void load_unref(struct sv_profile_load *l)
{
	if (__atomic_sub_fetch(&l->refs, 1, __ATOMIC_ACQ_REL))
		return;
	profile_free(l->profile);
	close(l->efd);
	free(l->cache_dir);
	free(l);
}

/* The loads waiting for a parser, in turns by uid, and the parsers started: all serving cores'. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t queued;
	struct uid_turns waiting;
	int threads;
} parsers = { .lock = PTHREAD_MUTEX_INITIALIZER, .queued = PTHREAD_COND_INITIALIZER };

/* l parsed and its tenant told, unless no tenant holds it any more. */
static void parse(struct sv_profile_load *l)
{
	uint64_t one = 1;

	if (__atomic_load_n(&l->refs, __ATOMIC_ACQUIRE) > 1)
		l->profile = profile_table_find_keyed(l->sum.model_name, &l->key, l->shown,
						      l->cache_dir, &l->machine, &l->err);
	__atomic_store_n(&l->done, true, __ATOMIC_RELEASE);
	while (write(l->efd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
	load_unref(l);
}

static void *parser_thread(void *arg)
{
	(void)arg;
	setpriority(PRIO_PROCESS, (id_t)gettid(), SV_PROFILE_LOAD_NICE);
	for (;;) {
		struct uid_turns_item *turn;
		struct sv_profile_load *l;

		pthread_mutex_lock(&parsers.lock);
		while (!(turn = uid_turns_pop(&parsers.waiting)))
			pthread_cond_wait(&parsers.queued, &parsers.lock);
		pthread_mutex_unlock(&parsers.lock);
		l = (struct sv_profile_load *)((char *)turn -
					       offsetof(struct sv_profile_load, turn));
		parse(l);
	}
	return NULL;
}

/* l queued as owner's, a parser started while fewer than SV_PROFILE_PARSERS run; 0 or -errno. */
static int queue_load(struct sv_profile_load *l, uid_t owner)
{
	pthread_attr_t attr;
	pthread_t th;
	int ret = 0;

	pthread_mutex_lock(&parsers.lock);
	if (parsers.threads < SV_PROFILE_PARSERS) {
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		ret = -pthread_create(&th, &attr, parser_thread, NULL);
		pthread_attr_destroy(&attr);
		parsers.threads += !ret;
	}
	if (parsers.threads) {
		ret = 0;
		uid_turns_push(&parsers.waiting, &l->turn, owner);
		pthread_cond_signal(&parsers.queued);
	}
	pthread_mutex_unlock(&parsers.lock);
	return ret;
}

int sv_profile_load_start(struct serving *s, struct sv_tenant *t,
			  const struct coloc_shm_summary *sum, const char *shown,
			  struct coloc_err *err)
{
	/* the summary is 64-byte aligned (shm.h), more than calloc promises */
	struct sv_profile_load *l = aligned_alloc(_Alignof(struct sv_profile_load), sizeof(*l));
	int ret;

	if (!l)
		return coloc_err_set(err, -ENOMEM, "out of memory admitting %s", t->name);
	memset(l, 0, sizeof(*l));
	l->refs = 2;
	l->sum = *sum;
	l->key = t->model_key;
	snprintf(l->shown, sizeof(l->shown), "%s", shown);
	l->machine = s->machine;
	l->cache_dir = s->cache_dir ? strdup(s->cache_dir) : NULL;
	l->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ret = l->efd < 0 ? -errno : (s->cache_dir && !l->cache_dir) ? -ENOMEM : 0;
	if (!ret && s->watch)
		ret = s->watch(s->ctx, l->efd, true);
	if (ret) {
		if (l->efd >= 0)
			close(l->efd);
		free(l->cache_dir);
		free(l);
		return coloc_err_set(err, ret, "tenant %s: cannot look its profile up: %s", t->name,
				     strerror(-ret));
	}
	ret = queue_load(l, t->owner);
	t->profile_load = l;
	if (ret) {
		l->refs = 1;
		sv_profile_load_end(s, t);
		return coloc_err_set(err, ret, "tenant %s: cannot start its profile's lookup: %s",
				     t->name, strerror(-ret));
	}
	return 0;
}

int sv_profile_load_fd(const struct sv_profile_load *l)
{
	return l->efd;
}

bool sv_profile_load_take(struct sv_profile_load *l, struct profile **p,
			  const struct coloc_shm_summary **sum, struct coloc_err *err)
{
	if (!__atomic_load_n(&l->done, __ATOMIC_ACQUIRE))
		return false;
	*sum = &l->sum;
	*err = l->err;
	*p = l->profile;
	l->profile = NULL;
	if (!*p && !err->code)
		coloc_err_set(err, -ENOENT, "no profile for %s", l->sum.model_name);
	return true;
}

void sv_profile_load_end(struct serving *s, struct sv_tenant *t)
{
	struct sv_profile_load *l = t->profile_load;

	if (!l)
		return;
	if (s->watch)
		s->watch(s->ctx, l->efd, false);
	t->profile_load = NULL;
	load_unref(l);
}
