// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A request line framed (server.h), as include/coloc/protocol.h's
 * "Framing" and "Binary frames" say: strict JSON, one object filling the
 * line, and the number of raw bytes that follow it. server.c frames each
 * line a connection reads with these; control.c parses a line that comes
 * without the server (colocd's --state specs, tests) with the same
 * server_parse_request.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>
#include "coloc/protocol.h"
#include "server.h"

/* True when some string in o, at any depth, holds a NUL (json-c keeps "\u0000"). */
static bool server_has_nul(struct json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_string:
		return strlen(json_object_get_string(o)) != (size_t)json_object_get_string_len(o);
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(o); i++)
			if (server_has_nul(json_object_array_get_idx(o, i)))
				return true;
		return false;
	case json_type_object: {
		json_object_object_foreach(o, key, val)
		{
			if (server_has_nul(val))
				return true;
			(void)key;
		}
		return false;
	}
	default:
		return false;
	}
}

/*
 * What json-c 0.16's strict mode still lets through, found on the raw line:
 * a 'name' in single quotes, NaN and Infinity, a number ending in '.', a
 * raw control character inside a string. NULL if none, else what it is,
 * with its offset in *at.
 */
static const char *server_loose_json(const char *line, size_t len, size_t *at)
{
	bool in_string = false;

	for (*at = 0; *at < len; (*at)++) {
		unsigned char c = (unsigned char)line[*at];

		if (in_string) {
			if (c == '\\')
				(*at)++;
			else if (c == '"')
				in_string = false;
			else if (c < 0x20)
				return "a raw control character in a string (write it as an escape)";
		} else if (c == '"') {
			in_string = true;
		} else if (c == '\'') {
			return "a single quote (strict JSON quotes with \")";
		} else if (c == 'N' || c == 'I') {
			return "NaN or Infinity (not JSON numbers)";
		} else if (c == '.' &&
			   (*at + 1 >= len || line[*at + 1] < '0' || line[*at + 1] > '9')) {
			return "a number ending in '.'";
		}
	}
	return NULL;
}

struct json_object *server_parse_request(const char *line, size_t len, char *why, size_t why_len)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *req;
	enum json_tokener_error jerr;
	const char *loose;
	size_t at;
	char none[1];

	if (!why) {
		why = none;
		why_len = sizeof(none);
	}
	if (!tok) {
		snprintf(why, why_len, "out of memory");
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	req = json_tokener_parse_ex(tok, line, (int)len);
	jerr = json_tokener_get_error(tok);
	loose = req && jerr == json_tokener_success ? server_loose_json(line, len, &at) : NULL;
	if (loose) {
		snprintf(why, why_len, "malformed request: %s at byte %zu", loose, at);
	} else if (!req || jerr != json_tokener_success || json_tokener_get_parse_end(tok) != len) {
		if (jerr == json_tokener_continue || jerr == json_tokener_success)
			snprintf(why, why_len, "malformed request: incomplete or trailing JSON");
		else
			snprintf(why, why_len,
				 "malformed request: %s at byte %d (strict JSON: no comments, "
				 "single quotes or trailing commas; UTF-8)",
				 json_tokener_error_desc(jerr), (int)json_tokener_get_parse_end(tok));
		loose = why;
	} else if (!json_object_is_type(req, json_type_object)) {
		snprintf(why, why_len, "a request must be a JSON object with a \"cmd\"");
		loose = why;
	} else if (server_has_nul(req)) {
		snprintf(why, why_len, "a string in the request holds a NUL character (\\u0000)");
		loose = why;
	}
	json_tokener_free(tok);
	if (loose) {
		json_object_put(req);
		return NULL;
	}
	return req;
}

/* A member of o of type type, or NULL. */
static struct json_object *server_member(struct json_object *o, const char *key,
					 enum json_type type)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, type) ? v : NULL;
}

long long server_request_payload_bytes(struct json_object *request)
{
	struct json_object *cmd = server_member(request, "cmd", json_type_string);
	struct json_object *tag = server_member(request, "tag", json_type_int);
	struct json_object *bytes = server_member(request, "input_bytes", json_type_int);

	if (!cmd || strcmp(json_object_get_string(cmd), "infer") ||
	    !server_member(request, "tenant", json_type_string) || !tag ||
	    json_object_get_int64(tag) < 0 || !bytes || json_object_get_int64(bytes) < 0 ||
	    (uint64_t)json_object_get_int64(bytes) > COLOC_MAX_PAYLOAD ||
	    json_object_object_get_ex(request, "input", NULL))
		return -1;
	return json_object_get_int64(bytes);
}
