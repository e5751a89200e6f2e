// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-load's link to colocd: each tenant's QoS and tensor sizes from
 * colocd's status, then per tenant its arrival generator's seed, its input
 * and its connections (colocd's socket or the gateway).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "load.h"

/* Fills each tenant's QoS and tensor sizes from colocd's status; 0 or prints why and returns 1. */
int load_read_status(struct coloc_client *c)
{
	struct json_object *req = json_object_new_object(), *resp, *arr;
	int ret = 0;

	json_object_object_add(req, "cmd", json_object_new_string("status"));
	resp = coloc_client_call(c, req);
	json_object_put(req);
	if (!resp || !coloc_client_ok(c, resp) ||
	    !json_object_object_get_ex(resp, "tenants", &arr) ||
	    !json_object_is_type(arr, json_type_array)) {
		fprintf(stderr, "coloc-load: colocd's status failed: %s\n",
			coloc_client_error(c)[0] ? coloc_client_error(c) :
						   "no tenants in its answer");
		json_object_put(resp);
		return 1;
	}
	for (int i = 0; i < load_nr_tenants; i++) {
		struct load_tenant *t = &load_tenants[i];
		struct json_object *found = NULL, *v;
		const char *state = "";

		for (size_t k = 0; k < json_object_array_length(arr) && !found; k++) {
			struct json_object *o = json_object_array_get_idx(arr, k);

			if (json_object_object_get_ex(o, "name", &v) &&
			    !strcmp(json_object_get_string(v), t->name))
				found = o;
		}
		if (!found) {
			fprintf(stderr,
				"coloc-load: colocd has no tenant '%s' (colocctl list shows its "
				"tenants; colocctl submit adds one)\n",
				t->name);
			ret = 1;
			continue;
		}
		if (json_object_object_get_ex(found, "state", &v))
			state = json_object_get_string(v);
		if (strcmp(state, "ready")) {
			const char *reason =
				json_object_object_get_ex(found, "reason", &v) &&
						json_object_is_type(v, json_type_string) ?
					json_object_get_string(v) :
					"";

			fprintf(stderr,
				"coloc-load: tenant '%s' is %s, not ready%s%s (colocctl status %s)\n",
				t->name, state, reason[0] ? ": " : "", reason, t->name);
			ret = 1;
			continue;
		}
		if (json_object_object_get_ex(found, "qos_ms", &v))
			t->qos_ms = json_object_get_double(v);
		if (json_object_object_get_ex(found, "input_bytes", &v))
			t->in_bytes = (size_t)json_object_get_int64(v);
		if (json_object_object_get_ex(found, "output_bytes", &v))
			t->out_bytes = (size_t)json_object_get_int64(v);
	}
	json_object_put(resp);
	return ret;
}

/* Seeds, inputs and connections of every tenant; 0, or prints why and returns 1. */
int load_prepare(void)
{
	for (int i = 0; i < load_nr_tenants; i++) {
		struct load_tenant *t = &load_tenants[i];
		uint64_t sm = (uint64_t)load_opts.seed * 0x100000001b3ull + (uint64_t)i;
		struct coloc_rng fill;

		coloc_rng_seed(&t->rng, sm);
		/* the inputs come from a generator of their own: arrivals depend on the seed alone */
		coloc_rng_seed(&fill, ~sm);
		t->input = malloc(t->in_bytes ? t->in_bytes : 1);
		if (!t->input) {
			fprintf(stderr, "coloc-load: out of memory\n");
			return 1;
		}
		for (size_t k = 0; k < t->in_bytes / sizeof(float); k++)
			t->input[k] = (float)(coloc_rng_next(&fill) & 1);
		t->input_fd = -1;
		if (load_route == COLOC_ROUTE_SOCKET && !load_opts.socket_copy) {
			/*
			 * every query of the tenant shares it: its bytes never change,
			 * so it is frozen, and the executor maps it
			 */
			t->input_fd = coloc_client_input_memfd_frozen(t->input, t->in_bytes);
			if (t->input_fd < 0) {
				fprintf(stderr, "coloc-load: cannot make an input memfd: %s\n",
					strerror(-t->input_fd));
				return 1;
			}
		}
		for (int k = 0; k < load_opts.conns_per_tenant; k++) {
			int err = coloc_route_open(load_route, load_route_where, &t->conns[k].r);

			if (err) {
				fprintf(stderr, "coloc-load: connecting to %s at %s: %s\n",
					coloc_route_name(load_route), load_route_where, strerror(-err));
				return 1;
			}
		}
	}
	return 0;
}
