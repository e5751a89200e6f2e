/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A KServe v2 JSON infer body with its tensors' "data" arrays read without
 * json-c (docs/design/gateway-json.md): json-c builds one object per value
 * (~37x the text), so the arrays are cut out of the text it sees, each
 * replaced by its index, and their numbers are later read straight into the
 * tensor's buffer. No I/O, no allocation beyond json-c's skeleton.
 */
#ifndef COLOC_GATEWAY_JSON_DATA_H
#define COLOC_GATEWAY_JSON_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>
#include "repository.h"

struct gw_json_data {
	const char *json;
	uint64_t values, max_values; /* containers and commas json-c was given, and may be */
	int nr;
	struct {
		size_t start, end; /* the array's '[' and one past its ']' in json */
		bool used;
	} span[GW_REPO_MAX_TENSORS];
};

/*
 * Parses json (len bytes) as one JSON object, each "data": [...] member's
 * array (numbers and nested arrays only, at most GW_REPO_MAX_TENSORS of
 * them) handed to json-c as its index into d, and no more than max_values
 * containers and commas besides (what json-c allocates for). The object,
 * or NULL with the reason in why (d->values > max_values: too many).
 */
struct json_object *gw_json_data_parse(const char *json, size_t len, uint64_t max_values,
				       struct gw_json_data *d, char *why, size_t why_len);

/*
 * The numbers of the array a "data" member of the parsed object holds
 * (its index, from gw_json_data_parse) into out as fp32: exactly n of
 * them, nested at most levels deep, each finite as an fp32; each array
 * is read once. 0, or -1 with the reason (after "input NAME: ") in why.
 */
int gw_json_data_floats(struct gw_json_data *d, struct json_object *member, float *out, uint64_t n,
			int levels, char *why, size_t why_len);

#endif /* COLOC_GATEWAY_JSON_DATA_H */
