// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The gRPC front door's entry points (grpc_server.h): the server chosen by
 * gw_grpc_opts.server started, and the methods' answers (grpc_call.h)
 * packed and handed to it.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "grpc_server_impl.h"

int gw_grpc_start(const struct gw_grpc_opts *opts, struct gw_models *ms, struct gw_fwd *fw,
		  struct gw_grpc **out, struct coloc_err *err)
{
	if (opts->server == GW_GRPC_SERVER_CORE)
		return gw_grpc_core_start(opts, ms, fw, out, err);
	return gw_grpc_h2_start(opts, ms, fw, out, err);
}

int gw_grpc_port(struct gw_grpc *g)
{
	return g->ops->port(g);
}

void gw_grpc_quiesce(struct gw_grpc *g)
{
	if (g)
		g->ops->quiesce(g);
}

void gw_grpc_stop(struct gw_grpc *g)
{
	if (g)
		g->ops->stop(g);
}

void gw_grpc_reply_packed(struct gw_grpc_call *c, uint8_t *buf, size_t len)
{
	c->g->ops->answer(c, GW_GRPC_OK, "", buf, len);
}

void gw_grpc_reply(struct gw_grpc_call *c, const ProtobufCMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(GW_GRPC_HEADROOM + len);

	if (!buf) {
		gw_grpc_fail(c, GW_GRPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	protobuf_c_message_pack(m, buf + GW_GRPC_HEADROOM);
	gw_grpc_reply_packed(c, buf, len);
}

void gw_grpc_fail(struct gw_grpc_call *c, enum gw_grpc_status code, const char *fmt, ...)
{
	char why[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	c->g->ops->answer(c, code, why, NULL, 0);
}

bool gw_grpc_block_begin(struct gw_grpc *g)
{
	if (atomic_fetch_add(&g->blocked, 1) + 1 < g->opts.threads)
		return true;
	atomic_fetch_sub(&g->blocked, 1);
	return false;
}

void gw_grpc_block_end(struct gw_grpc *g)
{
	atomic_fetch_sub(&g->blocked, 1);
}

int gw_grpc_answer_take(struct gw_grpc_call *c, size_t bytes)
{
	return gw_http_budget_take(c->g->opts.answers, (struct sockaddr *)&c->client, bytes);
}

void gw_grpc_answer_give(struct gw_grpc_call *c, size_t bytes)
{
	gw_http_budget_give(c->g->opts.answers, (struct sockaddr *)&c->client, bytes);
}

bool gw_grpc_model_control(const struct gw_grpc *g)
{
	return g->opts.model_control;
}

const struct gw_grpc_method *gw_grpc_method_find(const char *path, size_t n)
{
	for (size_t i = 0; i < gw_grpc_nr_methods; i++)
		if (strlen(gw_grpc_methods[i].path) == n &&
		    !memcmp(gw_grpc_methods[i].path, path, n))
			return &gw_grpc_methods[i];
	return NULL;
}

bool gw_grpc_is_health(const char *path, size_t n)
{
	static const char *const health[] = { "/inference.GRPCInferenceService/ServerLive",
					      "/inference.GRPCInferenceService/ServerReady",
					      "/inference.GRPCInferenceService/ModelReady" };

	for (size_t i = 0; i < sizeof(health) / sizeof(*health); i++)
		if (strlen(health[i]) == n && !memcmp(health[i], path, n))
			return true;
	return false;
}
