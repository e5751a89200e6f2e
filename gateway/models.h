/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The models the gateway serves: one entry per model of the repository,
 * its state, its settings (repository.h) and its request counters.
 *
 * Loading a model (at start, for every model of the repository, and on the
 * repository extension's load) reads its folder, submits it to colocd as a
 * tenant of the same name (replacing its uid's tenant of that name that is
 * there already, as after a gateway restart), waits until colocd says
 * "ready", checks the tensor shapes against colocd's input_bytes and
 * output_bytes, and runs one query of zeros through the forwarding pool (a
 * warm-up): only then is the model READY. Unloading removes the tenant
 * (colocd lets its accepted queries finish).
 *
 * The server is ready once the start-up loading is over and every model
 * that was not unloaded since is READY.
 *
 * Readers (the HTTP handlers) take a model with gw_models_get(), which holds
 * its settings still (a read lock) until gw_models_put(); a load or unload
 * of the same model waits for them.
 */
#ifndef COLOC_GATEWAY_MODELS_H
#define COLOC_GATEWAY_MODELS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include "control.h"
#include "forward.h"
#include "repository.h"

enum gw_model_state { GW_MODEL_UNAVAILABLE, GW_MODEL_LOADING, GW_MODEL_READY, GW_MODEL_FAILED };

/* Triton's per-model counters (cumulative; durations in µs). */
struct gw_model_stats {
	atomic_ullong success, failure, count;
	atomic_ullong request_us, queue_us, compute_us;
	/* the gateway's own refusals, by reason */
	atomic_ullong refused_full, refused_timeout, refused_bad_request, refused_not_ready;
	/* infer requests by front door, whatever their outcome */
	atomic_ullong requests_http, requests_grpc;
};

/*
 * Counts a forwarded job's answer in st (t_start: its arrival, coloc_now_ns):
 * success or failure, the durations, a timeout. Both front doors call it.
 */
void gw_model_stats_count(struct gw_model_stats *st, const struct gw_job *job, uint64_t t_start);

struct gw_model {
	pthread_rwlock_t lock; /* held for reading while a handler uses cfg */
	struct gw_model_config cfg; /* written under the write lock only */
	size_t input_bytes, output_bytes;
	_Atomic enum gw_model_state state;
	char reason[512]; /* why FAILED or UNAVAILABLE; under the write lock */
	bool present; /* a slot in use */
	struct gw_model_stats stats;
};

struct gw_models;

/* tenant_prefix: each model's tenant in colocd is named tenant_prefix + its name. */
int gw_models_create(const char *repo, bool repo_links, const char *tenant_prefix,
		     struct gw_ctl *ctl, struct gw_fwd *fw, int load_timeout_s,
		     struct gw_models **out, struct coloc_err *err);
/* Loads every model of the repository, one after another (the start-up load). */
void gw_models_load_all(struct gw_models *ms);
/*
 * Until gw_models_stop_watching: every second, each loaded model whose
 * tenant colocd no longer has (colocd restarted without --state) is made
 * LOADING (the server unready) and submitted again, until it is READY.
 */
void gw_models_watch(struct gw_models *ms);
void gw_models_stop_watching(struct gw_models *ms);
void gw_models_destroy(struct gw_models *ms);

/* The model named (read-locked; gw_models_put it), or NULL. */
struct gw_model *gw_models_get(struct gw_models *ms, const char *name);
void gw_models_put(struct gw_model *m);
/* The model whose tenant colocd names tenant (--tenant-prefix), as gw_models_get. */
struct gw_model *gw_models_get_tenant(struct gw_models *ms, const char *tenant);

/* Why the front doors refuse load and unload without --model-control. */
#define GW_MODEL_CONTROL_OFF                                                                \
	"loading and unloading models is off; start coloc-gateway with --model-control to " \
	"allow it (anyone who reaches the inference port could then change what is served)"

/*
 * Loads name from the repository (a READY model is left as it is): 0, or
 * -errno with err. One load or unload at a time: with wait false (the HTTP
 * API, whose threads must not queue behind a load of minutes), -EBUSY when
 * another is under way; unload never waits.
 */
int gw_models_load(struct gw_models *ms, const char *name, bool wait, struct coloc_err *err);
int gw_models_unload(struct gw_models *ms, const char *name, struct coloc_err *err);

bool gw_models_server_ready(struct gw_models *ms);

/* Calls fn for each model slot in use (not locked: counters and state only). */
void gw_models_each(struct gw_models *ms, void (*fn)(struct gw_model *m, void *arg), void *arg);

/*
 * The most need says a model of the repository asks for, over the configs
 * it holds now, loaded or not (a server whose bound is fixed at its start:
 * grpc_core.c); SIZE_MAX when one's inputs are left to colocd's sizes or
 * the repository cannot be read, 0 when it holds no model.
 */
size_t gw_models_repo_max(struct gw_models *ms, size_t (*need)(const struct gw_model_config *cfg));

/*
 * The repository index (KServe's repository extension): every model folder
 * and every loaded model, [{"name","version","state","reason"}].
 */
struct json_object *gw_models_index(struct gw_models *ms);

const char *gw_model_state_name(enum gw_model_state s);

#endif /* COLOC_GATEWAY_MODELS_H */
