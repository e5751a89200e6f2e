// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The methods of inference.GRPCInferenceService (grpc_server.h). Each only
 * translates: the request message in (protobuf-c), a call into the module
 * that owns the state (models.h for models and the repository, infer_proto.h
 * and forward.h for a query, the same as the HTTP side), the response
 * message or a status out. The per-model counters are the HTTP side's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "version.h"
#include "grpc_call.h"
#include "grpc_service.pb-c.h"
#include "infer_proto.h"
#include "timeline.h"

/* The request as msg's type, or NULL with the call failed. */
static void *api_unpack(struct gw_grpc_call *c, const ProtobufCMessageDescriptor *d,
			const uint8_t *msg, size_t len)
{
	ProtobufCMessage *m = gw_pb_unpack(d, msg, len);

	if (!m && errno == E2BIG)
		gw_grpc_fail(c, GW_GRPC_RESOURCE_EXHAUSTED,
			     "the %s would take more than %zu bytes unpacked", d->name,
			     GW_PB_BUDGET(len));
	else if (!m)
		gw_grpc_fail(c, GW_GRPC_INVALID_ARGUMENT, "the message is not a %s", d->name);
	return m;
}

/* Model name at version ("": the served one), read-locked; or NULL with the call failed. */
static struct gw_model *api_model(struct gw_grpc_call *c, const char *name, const char *version)
{
	struct gw_model *m = gw_models_get(c->ms, name);

	if (!m) {
		gw_grpc_fail(c, GW_GRPC_NOT_FOUND, "unknown model '%.64s'", name);
		return NULL;
	}
	if (version[0] && m->cfg.version[0] && strcmp(version, m->cfg.version)) {
		gw_grpc_fail(c, GW_GRPC_NOT_FOUND, "model %s has no version '%.32s' (it serves %s)",
			     m->cfg.name, version, m->cfg.version);
		gw_models_put(m);
		return NULL;
	}
	return m;
}

/* Fails the call when m is not READY (and puts m): true if it did. */
static bool api_not_ready(struct gw_grpc_call *c, struct gw_model *m)
{
	enum gw_model_state s = atomic_load(&m->state);

	if (s == GW_MODEL_READY)
		return false;
	gw_grpc_fail(c, GW_GRPC_UNAVAILABLE, "model %s is not ready (%s%s%s)", m->cfg.name,
		     gw_model_state_name(s), m->reason[0] ? ": " : "", m->reason);
	gw_models_put(m);
	return true;
}

/* ---- health and metadata -------------------------------------------------------------- */

static void api_server_live(struct gw_grpc_call *c, const uint8_t *msg, size_t len)
{
	Inference__ServerLiveResponse resp = INFERENCE__SERVER_LIVE_RESPONSE__INIT;
	ProtobufCMessage *rq = api_unpack(c, &inference__server_live_request__descriptor, msg, len);

	if (!rq)
		return;
	gw_pb_free(rq);
	resp.live = true;
	gw_grpc_reply(c, &resp.base);
}

static void api_server_ready(struct gw_grpc_call *c, const uint8_t *msg, size_t len)
{
	Inference__ServerReadyResponse resp = INFERENCE__SERVER_READY_RESPONSE__INIT;
	ProtobufCMessage *rq =
		api_unpack(c, &inference__server_ready_request__descriptor, msg, len);

	if (!rq)
		return;
	gw_pb_free(rq);
	resp.ready = gw_models_server_ready(c->ms);
	gw_grpc_reply(c, &resp.base);
}

static void api_model_ready(struct gw_grpc_call *c, const uint8_t *msg, size_t len)
{
	Inference__ModelReadyResponse resp = INFERENCE__MODEL_READY_RESPONSE__INIT;
	Inference__ModelReadyRequest *rq =
		api_unpack(c, &inference__model_ready_request__descriptor, msg, len);
	struct gw_model *m;

	if (!rq)
		return;
	m = api_model(c, rq->name, rq->version);
	gw_pb_free(&rq->base);
	if (!m)
		return;
	resp.ready = atomic_load(&m->state) == GW_MODEL_READY;
	gw_models_put(m);
	gw_grpc_reply(c, &resp.base);
}

static void api_server_metadata(struct gw_grpc_call *c, const uint8_t *msg, size_t len)
{
	Inference__ServerMetadataResponse resp = INFERENCE__SERVER_METADATA_RESPONSE__INIT;
	ProtobufCMessage *rq =
		api_unpack(c, &inference__server_metadata_request__descriptor, msg, len);
	char *extensions[] = { (char *)"model_repository" };

	if (!rq)
		return;
	gw_pb_free(rq);
	resp.name = (char *)"coloc-gateway";
	resp.version = (char *)COLOC_VERSION;
	resp.n_extensions = 1;
	resp.extensions = extensions;
	gw_grpc_reply(c, &resp.base);
}

static void api_tensors(Inference__ModelMetadataResponse__TensorMetadata *out,
			Inference__ModelMetadataResponse__TensorMetadata **ptrs,
			const struct gw_tensor *t, int n)
{
	for (int i = 0; i < n; i++) {
		inference__model_metadata_response__tensor_metadata__init(&out[i]);
		out[i].name = (char *)t[i].name;
		out[i].datatype = (char *)"FP32";
		out[i].n_shape = (size_t)t[i].nr_dims;
		out[i].shape = (int64_t *)t[i].dims;
		ptrs[i] = &out[i];
	}
}

static void api_model_metadata(struct gw_grpc_call *c, const uint8_t *msg, size_t len)
{
	Inference__ModelMetadataResponse resp = INFERENCE__MODEL_METADATA_RESPONSE__INIT;
	Inference__ModelMetadataResponse__TensorMetadata ins[GW_REPO_MAX_TENSORS],
		outs[GW_REPO_MAX_TENSORS], *in_ptrs[GW_REPO_MAX_TENSORS],
		*out_ptrs[GW_REPO_MAX_TENSORS];
	Inference__ModelMetadataRequest *rq =
		api_unpack(c, &inference__model_metadata_request__descriptor, msg, len);
	struct gw_model *m;
	char *versions[1];

	if (!rq)
		return;
	m = api_model(c, rq->name, rq->version);
	gw_pb_free(&rq->base);
	if (!m || api_not_ready(c, m))
		return;
	resp.name = m->cfg.name;
	versions[0] = m->cfg.version;
	resp.n_versions = 1;
	resp.versions = versions;
	resp.platform = (char *)"coloc";
	api_tensors(ins, in_ptrs, m->cfg.inputs, m->cfg.nr_inputs);
	api_tensors(outs, out_ptrs, m->cfg.outputs, m->cfg.nr_outputs);
	resp.n_inputs = (size_t)m->cfg.nr_inputs;
	resp.inputs = in_ptrs;
	resp.n_outputs = (size_t)m->cfg.nr_outputs;
	resp.outputs = out_ptrs;
	gw_grpc_reply(c, &resp.base); /* packed before the model is put */
	gw_models_put(m);
}

/* ---- infer ------------------------------------------------------------------------------ */

struct api_infer {
	struct gw_grpc_call *c;
	struct gw_model_config cfg; /* a copy: the model may be reloaded meanwhile */
	struct gw_model_stats *stats;
	Inference__ModelInferRequest *rq; /* kept: ir.input may point into it */
	struct gw_memfd *msg_memfd; /* the message's, taken over from the call */
	struct gw_infer_request ir;
	struct gw_job job;
	float *output;
	size_t charged; /* of its client address's share of answers (grpc_server.h) */
	struct gw_tl tl; /* COLOC_GW_TIMELINE's stamps */
};

/* bytes of a's charge given back */
static void api_infer_give(struct api_infer *a, size_t bytes)
{
	gw_grpc_answer_give(a->c, bytes);
	a->charged -= bytes;
}

/* The call is over: its answer sent, refused, or its stream gone. */
static void api_infer_free(void *p)
{
	struct api_infer *a = p;

	api_infer_give(a, a->charged);
	gw_infer_request_free(&a->ir);
	gw_infer_proto_free(a->rq);
	gw_fwd_memfd_put(a->c->fw, a->msg_memfd, &a->job);
	free(a->output);
	free(a);
}

/* The gRPC status for each way a job ends (forward.h). */
static const enum gw_grpc_status api_outcome_code[] = {
	[GW_OK] = GW_GRPC_OK,
	[GW_TIMEOUT] = GW_GRPC_DEADLINE_EXCEEDED,
	[GW_UNREACHABLE] = GW_GRPC_UNAVAILABLE,
	[GW_STOPPING] = GW_GRPC_UNAVAILABLE,
	[GW_REJECTED] = GW_GRPC_UNAVAILABLE,
	[GW_FAILED] = GW_GRPC_INTERNAL,
};

/* From the forwarding pool's thread. */
static void api_infer_done(struct gw_job *job)
{
	struct api_infer *a = job->arg;
	enum gw_outcome outcome = gw_job_outcome(job);
	struct gw_tl tl;
	uint8_t *buf;
	size_t len;
	char why[128];

	gw_model_stats_count(a->stats, job, a->c->t_start);
	if (outcome != GW_OK) {
		gw_job_client_why(job, why, sizeof(why));
		gw_grpc_fail(a->c, api_outcome_code[outcome], "%s", why);
		return;
	}
	if (job->res.output_bytes != job->output_cap) {
		gw_grpc_fail(a->c, GW_GRPC_INTERNAL,
			     "colocd returned %zu output bytes, the model has %zu",
			     job->res.output_bytes, job->output_cap);
		return;
	}
	if (gw_infer_proto_response(&a->cfg, &a->ir, a->output, job->res.latency_ns,
				    job->res.exec_ns, GW_GRPC_HEADROOM, &buf, &len)) {
		gw_grpc_fail(a->c, GW_GRPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	/* colocd's output is in the answer now: the answer alone stays, until it is sent */
	free(a->output);
	a->output = NULL;
	api_infer_give(a, a->job.output_cap);
	gw_tl_stamp(&a->tl, GW_TL_PACKED);
	if (!gw_tl_on) {
		gw_grpc_reply_packed(a->c, buf, len);
		return;
	}
	/* a (the call's) may be freed by the answer: the stamps are kept aside */
	tl = a->tl;
	tl.t[GW_TL_COLOCD_IN] = job->res.first_byte_at_ns;
	tl.t[GW_TL_COLOCD_OUT] = job->res.answered_at_ns;
	gw_grpc_reply_packed(a->c, buf, len);
	gw_tl_stamp(&tl, GW_TL_WRITTEN);
	gw_tl_commit(&tl);
}

/* Checks rq against the model and forwards it; the call is answered either way. */
static void api_infer_forward(struct gw_grpc_call *c, struct api_infer *a,
			      const Inference__ModelInferRequest *rq)
{
	char why[512];
	size_t answer;
	int r = gw_infer_from_proto(&a->cfg, rq, &a->ir, why, sizeof(why));

	if (r) {
		atomic_fetch_add(&a->stats->refused_bad_request, 1);
		gw_grpc_fail(c, GW_GRPC_INVALID_ARGUMENT, "%s", why);
		return;
	}
	if (a->ir.input_bytes != a->job.input_bytes) {
		gw_grpc_fail(c, GW_GRPC_INTERNAL,
			     "model %s: its inputs and colocd's sizes disagree", a->cfg.name);
		return;
	}
	gw_tl_stamp(&a->tl, GW_TL_CHECKED);
	/* colocd's output and its answer, held until the answer is sent: charged first */
	answer = a->job.output_cap + GW_GRPC_HEADROOM + gw_infer_proto_answer_bytes(&a->cfg, &a->ir);
	r = gw_grpc_answer_take(c, answer);
	if (r) {
		atomic_fetch_add(&a->stats->refused_full, 1);
		if (r == -E2BIG)
			gw_grpc_fail(c, GW_GRPC_RESOURCE_EXHAUSTED,
				     "this answer and colocd's output (%zu bytes) are over what one "
				     "client address may hold (its share of --http-max-buffer-bytes)",
				     answer);
		else
			gw_grpc_fail(c, GW_GRPC_RESOURCE_EXHAUSTED,
				     "the gateway holds as many answers as it may "
				     "(--http-max-buffer-bytes, or this address's share of it); "
				     "retry later");
		return;
	}
	a->charged = answer;
	a->output = malloc(a->job.output_cap ? a->job.output_cap : 1);
	if (!a->output) {
		gw_grpc_fail(c, GW_GRPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	a->job.tenant = a->cfg.tenant;
	a->job.input = a->ir.input;
	/* an input that lies in the message's memfd goes to colocd as it lies there */
	if (a->msg_memfd && (const char *)a->ir.input >= (const char *)a->msg_memfd->map &&
	    (const char *)a->ir.input + a->ir.input_bytes <=
		    (const char *)a->msg_memfd->map + a->msg_memfd->cap) {
		a->job.input_memfd = a->msg_memfd;
		a->job.input_offset =
			(size_t)((const char *)a->ir.input - (const char *)a->msg_memfd->map);
	}
	a->job.output = a->output;
	a->job.deadline_ns = c->deadline_ns;
	a->job.done = api_infer_done;
	a->job.arg = a;
	a->job.tl = gw_tl_on ? &a->tl : NULL;
	/* on this thread, no hand-off, when a connection is idle and a thread free */
	r = -EBUSY;
	if (gw_grpc_block_begin(c->g)) {
		r = gw_fwd_run(c->fw, &a->job);
		gw_grpc_block_end(c->g);
		if (!r) {
			api_infer_done(&a->job);
			return;
		}
	}
	if (r == -EBUSY)
		r = gw_fwd_submit(c->fw, &a->job);
	if (r == -EAGAIN) {
		atomic_fetch_add(&a->stats->refused_full, 1);
		gw_grpc_fail(c, GW_GRPC_RESOURCE_EXHAUSTED,
			     "the gateway's queue is full (%d queries waiting or in flight); retry "
			     "later",
			     gw_fwd_pending(c->fw));
	} else if (r) {
		gw_grpc_fail(c, GW_GRPC_UNAVAILABLE, "the gateway is stopping");
	}
}

static void api_model_infer(struct gw_grpc_call *c, const uint8_t *msg, size_t len)
{
	struct gw_tl tl = { 0 };
	Inference__ModelInferRequest *rq;
	struct api_infer *a;
	struct gw_model *m;

	gw_tl_begin(&tl);
	rq = gw_infer_proto_unpack(msg, len);
	if (!rq && errno == E2BIG) {
		gw_grpc_fail(c, GW_GRPC_RESOURCE_EXHAUSTED,
			     "the ModelInferRequest would take more than %zu bytes unpacked",
			     GW_PB_BUDGET(len));
		return;
	}
	if (!rq) {
		gw_grpc_fail(c, GW_GRPC_INVALID_ARGUMENT,
			     "the message is not a "
			     "ModelInferRequest");
		return;
	}
	m = api_model(c, rq->model_name, rq->model_version);
	if (!m)
		goto out;
	atomic_fetch_add(&m->stats.requests_grpc, 1);
	if (atomic_load(&m->state) != GW_MODEL_READY) {
		atomic_fetch_add(&m->stats.refused_not_ready, 1);
		api_not_ready(c, m);
		goto out;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		gw_models_put(m);
		gw_grpc_fail(c, GW_GRPC_RESOURCE_EXHAUSTED, "out of memory");
		goto out;
	}
	a->c = c;
	a->rq = rq;
	a->tl = tl;
	rq = NULL;
	a->cfg = m->cfg;
	a->stats = &m->stats;
	a->job.input_bytes = m->input_bytes;
	a->job.output_cap = m->output_bytes;
	gw_models_put(m);
	a->msg_memfd = c->msg_memfd;
	c->msg_memfd = NULL;
	c->ctx = a;
	c->ctx_free = api_infer_free;
	api_infer_forward(c, a, a->rq);
out:
	gw_infer_proto_free(rq);
}

/* ---- the repository extension ----------------------------------------------------------- */

static const char *api_json_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "";
}

static void api_repository_index(struct gw_grpc_call *c, const uint8_t *msg, size_t len)
{
	Inference__RepositoryIndexResponse resp = INFERENCE__REPOSITORY_INDEX_RESPONSE__INIT;
	Inference__RepositoryIndexResponse__ModelIndex items[GW_REPO_MAX_MODELS],
		*ptrs[GW_REPO_MAX_MODELS];
	Inference__RepositoryIndexRequest *rq =
		api_unpack(c, &inference__repository_index_request__descriptor, msg, len);
	struct json_object *index;
	size_t n;

	if (!rq)
		return;
	index = gw_models_index(c->ms);
	n = json_object_array_length(index);
	for (size_t i = 0; i < n && resp.n_models < GW_REPO_MAX_MODELS; i++) {
		struct json_object *o = json_object_array_get_idx(index, i);
		Inference__RepositoryIndexResponse__ModelIndex *it = &items[resp.n_models];

		if (rq->ready && strcmp(api_json_str(o, "state"), "READY"))
			continue;
		inference__repository_index_response__model_index__init(it);
		it->name = (char *)api_json_str(o, "name");
		it->version = (char *)api_json_str(o, "version");
		it->state = (char *)api_json_str(o, "state");
		it->reason = (char *)api_json_str(o, "reason");
		ptrs[resp.n_models++] = it;
	}
	resp.models = ptrs;
	gw_pb_free(&rq->base);
	gw_grpc_reply(c, &resp.base);
	json_object_put(index);
}

/* Load (or unload) the model named; blocks this thread while a load runs. */
static void api_repository_change(struct gw_grpc_call *c, const char *name, bool load)
{
	struct coloc_err err = { 0 };
	int r;

	if (!gw_grpc_model_control(c->g)) {
		gw_grpc_fail(c, GW_GRPC_PERMISSION_DENIED, "%s", GW_MODEL_CONTROL_OFF);
		return;
	}
	if (!gw_repo_name_ok(name)) {
		gw_grpc_fail(c, GW_GRPC_INVALID_ARGUMENT,
			     "model names are 1..63 of "
			     "[A-Za-z0-9_.-]");
		return;
	}
	r = load ? gw_models_load(c->ms, name, false, &err) : gw_models_unload(c->ms, name, &err);
	if (r)
		gw_grpc_fail(c,
			     r == -ENOENT ? GW_GRPC_NOT_FOUND :
			     r == -EBUSY  ? GW_GRPC_ABORTED :
					    GW_GRPC_INVALID_ARGUMENT,
			     "%s", coloc_err_str(&err));
	else if (load)
		gw_grpc_reply(c, &(Inference__RepositoryModelLoadResponse)
					  INFERENCE__REPOSITORY_MODEL_LOAD_RESPONSE__INIT.base);
	else
		gw_grpc_reply(c, &(Inference__RepositoryModelUnloadResponse)
					  INFERENCE__REPOSITORY_MODEL_UNLOAD_RESPONSE__INIT.base);
}

static void api_repository_load(struct gw_grpc_call *c, const uint8_t *msg, size_t len)
{
	Inference__RepositoryModelLoadRequest *rq =
		api_unpack(c, &inference__repository_model_load_request__descriptor, msg, len);

	if (!rq)
		return;
	api_repository_change(c, rq->model_name, true);
	gw_pb_free(&rq->base);
}

static void api_repository_unload(struct gw_grpc_call *c, const uint8_t *msg, size_t len)
{
	Inference__RepositoryModelUnloadRequest *rq =
		api_unpack(c, &inference__repository_model_unload_request__descriptor, msg, len);

	if (!rq)
		return;
	api_repository_change(c, rq->model_name, false);
	gw_pb_free(&rq->base);
}

#define API_METHOD(name, fn)                                       \
	{                                                          \
		"/inference.GRPCInferenceService/" name, fn, false \
	}

const struct gw_grpc_method gw_grpc_methods[] = {
	API_METHOD("ServerLive", api_server_live),
	API_METHOD("ServerReady", api_server_ready),
	API_METHOD("ModelReady", api_model_ready),
	API_METHOD("ServerMetadata", api_server_metadata),
	API_METHOD("ModelMetadata", api_model_metadata),
	/* a query's input goes to colocd in the memfd it was read into */
	{ "/inference.GRPCInferenceService/ModelInfer", api_model_infer, true },
	API_METHOD("RepositoryIndex", api_repository_index),
	API_METHOD("RepositoryModelLoad", api_repository_load),
	API_METHOD("RepositoryModelUnload", api_repository_unload),
};
const size_t gw_grpc_nr_methods = sizeof(gw_grpc_methods) / sizeof(*gw_grpc_methods);
