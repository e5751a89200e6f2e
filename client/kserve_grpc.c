// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The KServe v2 gRPC client of coloc's tools (coloc/kserve.h). Each
 * ModelInfer is one batch of all six client ops on gRPC's C core; a thread
 * takes completions off the channel's completion queue and hands them to
 * the caller through a list and an eventfd in semaphore mode (readable
 * while the list holds an answer), so callers poll it as they poll
 * colocd's socket. The request message is packed with protobuf-c
 * (gateway/proto/grpc_service.proto) and kept: a load generator sends the
 * same input again and again, and packing 600 KB into fresh memory per
 * query cost more than the rest of the call (docs/measurements/gateway.md);
 * the input's bytes end the packed message (raw_input_contents is its last
 * field), so a send compares them and packs only when they differ. Calls
 * are told apart by their own state, so the request carries no id.
 * ModelMetadata is a blocking call on a queue of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include "coloc/kserve.h"
#include "grpc_service.pb-c.h"
#include "client_error.h"

#define KG_MAX_MODELS 16
#define KG_MAX_DIMS 8
#define KG_CALL_TIMEOUT_S 120
#define KG_MESSAGE_MAX (256 << 20)
#define KG_STREAM_WINDOW (8 << 20)
#define KG_METHOD(name) "/inference.GRPCInferenceService/" name

struct kg_model {
	char name[64], input[64];
	int64_t shape[KG_MAX_DIMS];
	size_t nr_dims, in_bytes, out_bytes;
	grpc_slice packed; /* the last request, when has_packed */
	bool has_packed;
};

struct kg_call {
	uint64_t tag;
	grpc_call *call;
	grpc_byte_buffer *request, *response;
	grpc_metadata_array initial, trailing;
	grpc_status_code status;
	grpc_slice details;
	struct kg_call *next, *prev;
};

struct kserve_grpc {
	grpc_channel *channel;
	grpc_completion_queue *cq;
	pthread_t thread;
	bool thread_started;
	int efd;
	pthread_mutex_t lock;
	struct kg_call *inflight; /* list, for close() to cancel */
	struct kg_call *done, **done_tail;
	int nr_inflight;
	struct kg_model models[KG_MAX_MODELS];
	int nr_models;
	struct client_error error;
};

const char *kserve_grpc_error(struct kserve_grpc *k)
{
	return k->error.msg;
}

int kserve_grpc_fd(struct kserve_grpc *k)
{
	return k->efd;
}

static void kg_call_free(struct kg_call *c)
{
	if (c->call)
		grpc_call_unref(c->call);
	if (c->request)
		grpc_byte_buffer_destroy(c->request);
	if (c->response)
		grpc_byte_buffer_destroy(c->response);
	grpc_metadata_array_destroy(&c->initial);
	grpc_metadata_array_destroy(&c->trailing);
	grpc_slice_unref(c->details);
	free(c);
}

static void *kg_thread(void *arg)
{
	struct kserve_grpc *k = arg;
	uint64_t one = 1;

	for (;;) {
		grpc_event ev =
			grpc_completion_queue_next(k->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
		struct kg_call *c = ev.tag;

		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			return NULL;
		if (ev.type != GRPC_OP_COMPLETE)
			continue;
		pthread_mutex_lock(&k->lock);
		if (c->prev)
			c->prev->next = c->next;
		else
			k->inflight = c->next;
		if (c->next)
			c->next->prev = c->prev;
		k->nr_inflight--;
		c->next = NULL;
		*k->done_tail = c;
		k->done_tail = &c->next;
		pthread_mutex_unlock(&k->lock);
		if (write(k->efd, &one, sizeof(one)) != sizeof(one))
			abort(); /* an eventfd write fails only on overflow of 2^64 */
	}
}

int kserve_grpc_connect(const char *target, struct kserve_grpc **out)
{
	struct kserve_grpc *k = calloc(1, sizeof(*k));
	grpc_arg args[] = {
		{ .type = GRPC_ARG_INTEGER,
		  .key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
		  .value.integer = KG_MESSAGE_MAX },
		/* a stream's window: a whole answer in one flight */
		{ .type = GRPC_ARG_INTEGER,
		  .key = (char *)GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES,
		  .value.integer = KG_STREAM_WINDOW },
	};
	grpc_channel_args cargs = { sizeof(args) / sizeof(*args), args };
	grpc_channel_credentials *creds;

	*out = NULL;
	if (!k)
		return -ENOMEM;
	grpc_init();
	pthread_mutex_init(&k->lock, NULL);
	k->done_tail = &k->done;
	k->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE);
	creds = grpc_insecure_credentials_create();
	k->channel = grpc_channel_create(target, creds, &cargs);
	grpc_channel_credentials_release(creds);
	k->cq = grpc_completion_queue_create_for_next(NULL);
	if (k->efd < 0 || !k->channel || !k->cq || pthread_create(&k->thread, NULL, kg_thread, k)) {
		kserve_grpc_close(k);
		return -ENOMEM;
	}
	k->thread_started = true;
	*out = k;
	return 0;
}

void kserve_grpc_close(struct kserve_grpc *k)
{
	if (!k)
		return;
	if (k->thread_started) {
		pthread_mutex_lock(&k->lock);
		for (struct kg_call *c = k->inflight; c; c = c->next)
			grpc_call_cancel(c->call, NULL);
		pthread_mutex_unlock(&k->lock);
		for (;;) {
			pthread_mutex_lock(&k->lock);
			int left = k->nr_inflight;

			pthread_mutex_unlock(&k->lock);
			if (!left)
				break;
			usleep(1000);
		}
		grpc_completion_queue_shutdown(k->cq);
		pthread_join(k->thread, NULL);
	}
	while (k->done) {
		struct kg_call *c = k->done;

		k->done = c->next;
		kg_call_free(c);
	}
	if (k->cq)
		grpc_completion_queue_destroy(k->cq);
	if (k->channel)
		grpc_channel_destroy(k->channel);
	for (int i = 0; i < k->nr_models; i++)
		if (k->models[i].has_packed)
			grpc_slice_unref(k->models[i].packed);
	if (k->efd >= 0)
		close(k->efd);
	pthread_mutex_destroy(&k->lock);
	free(k);
	grpc_shutdown();
}

/* The six ops of a unary call, started on cq with tag c. */
static grpc_call_error kg_start(struct kserve_grpc *k, grpc_completion_queue *cq, struct kg_call *c,
				const char *method)
{
	grpc_slice m = grpc_slice_from_static_string(method);
	gpr_timespec deadline =
		gpr_time_add(gpr_now(GPR_CLOCK_REALTIME),
			     gpr_time_from_seconds(KG_CALL_TIMEOUT_S, GPR_TIMESPAN));
	grpc_op ops[6];

	c->details = grpc_empty_slice();
	grpc_metadata_array_init(&c->initial);
	grpc_metadata_array_init(&c->trailing);
	c->call = grpc_channel_create_call(k->channel, NULL, GRPC_PROPAGATE_DEFAULTS, cq, m, NULL,
					   deadline, NULL);
	if (!c->call)
		return GRPC_CALL_ERROR;
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = c->request;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &c->initial;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &c->response;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &c->trailing;
	ops[5].data.recv_status_on_client.status = &c->status;
	ops[5].data.recv_status_on_client.status_details = &c->details;
	return grpc_call_start_batch(c->call, ops, 6, c, NULL);
}

static grpc_byte_buffer *kg_pack(const ProtobufCMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(len ? len : 1);
	grpc_byte_buffer *bb;
	grpc_slice s;

	if (!buf)
		return NULL;
	protobuf_c_message_pack(m, buf);
	s = grpc_slice_new(buf, len, free);
	bb = grpc_raw_byte_buffer_create(&s, 1);
	grpc_slice_unref(s);
	return bb;
}

/* The response's bytes, one slice (unref it). */
static grpc_slice kg_bytes(grpc_byte_buffer *bb)
{
	grpc_byte_buffer_reader r;
	grpc_slice s;

	if (!bb || !grpc_byte_buffer_reader_init(&r, bb))
		return grpc_empty_slice();
	s = grpc_byte_buffer_reader_readall(&r);
	grpc_byte_buffer_reader_destroy(&r);
	return s;
}

static uint64_t kg_sum_dims(const int64_t *d, size_t n)
{
	uint64_t e = 1;

	for (size_t i = 0; i < n; i++)
		e *= d[i] > 0 ? (uint64_t)d[i] : 0;
	return e;
}

/* Asks ModelMetadata for model (blocking) and remembers it. */
static struct kg_model *kg_model(struct kserve_grpc *k, const char *model)
{
	Inference__ModelMetadataRequest rq = INFERENCE__MODEL_METADATA_REQUEST__INIT;
	Inference__ModelMetadataResponse *resp;
	grpc_completion_queue *cq;
	struct kg_call c = { 0 };
	struct kg_model *m = NULL;
	grpc_slice bytes;

	for (int i = 0; i < k->nr_models; i++)
		if (!strcmp(k->models[i].name, model))
			return &k->models[i];
	if (k->nr_models == KG_MAX_MODELS || strlen(model) >= sizeof(m->name)) {
		client_fail(&k->error, -E2BIG, "too many models, or a name too long");
		return NULL;
	}
	rq.name = (char *)model;
	c.request = kg_pack(&rq.base);
	cq = grpc_completion_queue_create_for_pluck(NULL);
	if (!c.request || kg_start(k, cq, &c, KG_METHOD("ModelMetadata")) != GRPC_CALL_OK) {
		client_fail(&k->error, -EIO, "cannot start a ModelMetadata call");
		goto out;
	}
	grpc_completion_queue_pluck(cq, &c, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
	if (c.status != GRPC_STATUS_OK) {
		char *why = grpc_slice_to_c_string(c.details);

		client_fail(&k->error, -EIO, "ModelMetadata of %s: status %d: %s", model, c.status,
			    why);
		gpr_free(why);
		goto out;
	}
	bytes = kg_bytes(c.response);
	resp = inference__model_metadata_response__unpack(NULL, GRPC_SLICE_LENGTH(bytes),
							  GRPC_SLICE_START_PTR(bytes));
	grpc_slice_unref(bytes);
	if (!resp || resp->n_inputs != 1 || resp->inputs[0]->n_shape > KG_MAX_DIMS ||
	    strlen(resp->inputs[0]->name) >= sizeof(m->input)) {
		client_fail(&k->error, -EINVAL,
			    "ModelMetadata of %s: not one input coloc-load can send", model);
	} else {
		m = &k->models[k->nr_models++];
		snprintf(m->name, sizeof(m->name), "%s", model);
		snprintf(m->input, sizeof(m->input), "%s", resp->inputs[0]->name);
		m->nr_dims = resp->inputs[0]->n_shape;
		memcpy(m->shape, resp->inputs[0]->shape, m->nr_dims * sizeof(int64_t));
		m->in_bytes = kg_sum_dims(m->shape, m->nr_dims) * 4;
		for (size_t i = 0; i < resp->n_outputs; i++)
			m->out_bytes +=
				kg_sum_dims(resp->outputs[i]->shape, resp->outputs[i]->n_shape) * 4;
	}
	if (resp)
		inference__model_metadata_response__free_unpacked(resp, NULL);
out:
	if (c.call) {
		grpc_call_unref(c.call);
		c.call = NULL;
	}
	if (c.request)
		grpc_byte_buffer_destroy(c.request);
	if (c.response)
		grpc_byte_buffer_destroy(c.response);
	grpc_metadata_array_destroy(&c.initial);
	grpc_metadata_array_destroy(&c.trailing);
	grpc_slice_unref(c.details);
	grpc_completion_queue_shutdown(cq);
	while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL)
		       .type != GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(cq);
	return m;
}

int kserve_grpc_model(struct kserve_grpc *k, const char *model, size_t *in_bytes, size_t *out_bytes)
{
	struct kg_model *m = kg_model(k, model);

	if (!m)
		return -EIO;
	*in_bytes = m->in_bytes;
	*out_bytes = m->out_bytes;
	return 0;
}

/* m's request for input: the kept one when its input bytes are these, else packed anew. */
static int kg_request(struct kserve_grpc *k, struct kg_model *m, const void *input, size_t len)
{
	Inference__ModelInferRequest rq = INFERENCE__MODEL_INFER_REQUEST__INIT;
	Inference__ModelInferRequest__InferInputTensor
		in = INFERENCE__MODEL_INFER_REQUEST__INFER_INPUT_TENSOR__INIT,
		*ins[1] = { &in };
	ProtobufCBinaryData raw = { len, (uint8_t *)input };
	size_t plen;
	uint8_t *buf;

	if (m->has_packed && GRPC_SLICE_LENGTH(m->packed) >= len &&
	    !memcmp(GRPC_SLICE_END_PTR(m->packed) - len, input, len))
		return 0;
	rq.model_name = m->name;
	in.name = m->input;
	in.datatype = (char *)"FP32";
	in.n_shape = m->nr_dims;
	in.shape = m->shape;
	rq.n_inputs = 1;
	rq.inputs = ins;
	rq.n_raw_input_contents = 1;
	rq.raw_input_contents = &raw;
	plen = inference__model_infer_request__get_packed_size(&rq);
	buf = malloc(plen);
	if (!buf)
		return client_fail(&k->error, -ENOMEM, "out of memory");
	inference__model_infer_request__pack(&rq, buf);
	if (m->has_packed)
		grpc_slice_unref(m->packed);
	m->packed = grpc_slice_new(buf, plen, free);
	m->has_packed = true;
	return 0;
}

int kserve_grpc_infer_send(struct kserve_grpc *k, const char *model, uint64_t tag,
			   const void *input, size_t len)
{
	struct kg_model *m = kg_model(k, model);
	struct kg_call *c;

	if (!m)
		return -EIO;
	if (len != m->in_bytes)
		return client_fail(&k->error, -EINVAL, "model %s takes %zu input bytes, not %zu",
				   model, m->in_bytes, len);
	if (kg_request(k, m, input, len))
		return -ENOMEM;
	c = calloc(1, sizeof(*c));
	if (!c)
		return client_fail(&k->error, -ENOMEM, "out of memory");
	c->tag = tag;
	c->request = grpc_raw_byte_buffer_create(&m->packed, 1);
	pthread_mutex_lock(&k->lock);
	if (!c->request || kg_start(k, k->cq, c, KG_METHOD("ModelInfer")) != GRPC_CALL_OK) {
		pthread_mutex_unlock(&k->lock);
		kg_call_free(c);
		return client_fail(&k->error, -EIO, "cannot start a ModelInfer call");
	}
	c->next = k->inflight;
	if (k->inflight)
		k->inflight->prev = c;
	k->inflight = c;
	k->nr_inflight++;
	pthread_mutex_unlock(&k->lock);
	return 0;
}

static const struct {
	int code;
	enum coloc_infer_status status;
} kg_statuses[] = {
	{ GRPC_STATUS_DEADLINE_EXCEEDED, COLOC_INFER_DROPPED },
	{ GRPC_STATUS_UNAVAILABLE, COLOC_INFER_REJECTED },
	{ GRPC_STATUS_RESOURCE_EXHAUSTED, COLOC_INFER_REJECTED },
};

int kserve_grpc_answer(int grpc_status, const char *grpc_message, const uint8_t *msg, size_t len,
		       struct coloc_infer_result *res, void *output, size_t out_cap)
{
	Inference__ModelInferResponse *resp;
	int r = 1;

	if (grpc_status != GRPC_STATUS_OK) {
		res->status = COLOC_INFER_FAILED;
		for (size_t i = 0; i < sizeof(kg_statuses) / sizeof(*kg_statuses); i++)
			if (kg_statuses[i].code == grpc_status)
				res->status = kg_statuses[i].status;
		snprintf(res->error, sizeof(res->error), "gRPC status %d: %s", grpc_status,
			 grpc_message);
		return 1;
	}
	resp = inference__model_infer_response__unpack(NULL, len, msg);
	if (!resp) {
		res->status = COLOC_INFER_FAILED;
		snprintf(res->error, sizeof(res->error), "the answer is not a ModelInferResponse");
		return 1;
	}
	for (size_t i = 0; i < resp->n_parameters; i++) {
		const Inference__ModelInferResponse__ParametersEntry *p = resp->parameters[i];

		if (!p->value || p->value->parameter_choice_case !=
					 INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM)
			continue;
		if (!strcmp(p->key, "coloc_latency_us"))
			res->latency_ns = (uint64_t)p->value->int64_param * 1000;
		else if (!strcmp(p->key, "coloc_exec_us"))
			res->exec_ns = (uint64_t)p->value->int64_param * 1000;
	}
	for (size_t i = 0; i < resp->n_raw_output_contents; i++) {
		const ProtobufCBinaryData *o = &resp->raw_output_contents[i];

		if (res->output_bytes + o->len > out_cap) {
			r = -EMSGSIZE;
			break;
		}
		memcpy((char *)output + res->output_bytes, o->data, o->len);
		res->output_bytes += o->len;
	}
	res->status = COLOC_INFER_OK;
	inference__model_infer_response__free_unpacked(resp, NULL);
	return r;
}

/* The answer of call c into res and output. */
static int kg_answer(struct kg_call *c, struct coloc_infer_result *res, void *output,
		     size_t out_cap)
{
	char *why;
	grpc_slice bytes;
	int r;

	memset(res, 0, sizeof(*res));
	res->tag = c->tag;
	if (c->status != GRPC_STATUS_OK) {
		why = grpc_slice_to_c_string(c->details);
		r = kserve_grpc_answer(c->status, why, NULL, 0, res, output, out_cap);
		gpr_free(why);
		return r;
	}
	bytes = kg_bytes(c->response);
	r = kserve_grpc_answer(GRPC_STATUS_OK, NULL, GRPC_SLICE_START_PTR(bytes),
			       GRPC_SLICE_LENGTH(bytes), res, output, out_cap);
	grpc_slice_unref(bytes);
	return r;
}

int kserve_grpc_infer_recv(struct kserve_grpc *k, struct coloc_infer_result *res, void *output,
			   size_t out_cap, int timeout_ms)
{
	struct pollfd pfd = { .fd = k->efd, .events = POLLIN };
	struct kg_call *c;
	uint64_t v;
	int r;

	if (read(k->efd, &v, sizeof(v)) != sizeof(v)) {
		if (!timeout_ms || poll(&pfd, 1, timeout_ms) <= 0 ||
		    read(k->efd, &v, sizeof(v)) != sizeof(v))
			return 0;
	}
	pthread_mutex_lock(&k->lock);
	c = k->done;
	k->done = c->next;
	if (!k->done)
		k->done_tail = &k->done;
	pthread_mutex_unlock(&k->lock);
	r = kg_answer(c, res, output, out_cap);
	kg_call_free(c);
	if (r == -EMSGSIZE)
		client_fail(&k->error, r, "an answer was over %zu bytes", out_cap);
	return r;
}
