// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The HTTP front door's answers queued on a request's connection
 * (http_impl.h): a body of JSON, an empty one, or a refusal with
 * {"error":"..."}; a 503 says Retry-After: 1, a connection's last request
 * Connection: close.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "http_impl.h"

static enum MHD_Result http_send(struct MHD_Connection *conn, unsigned int status, char *body,
				 size_t len, const char *type)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, body ? body : (char *)"",
								    body ? MHD_RESPMEM_MUST_FREE :
									   MHD_RESPMEM_PERSISTENT);
	enum MHD_Result r;

	if (!resp) {
		free(body);
		return MHD_NO;
	}
	if (type)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (http_last_request)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	r = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return r;
}

enum MHD_Result http_error(struct MHD_Connection *conn, unsigned int status, const char *fmt, ...)
{
	char why[768];
	va_list ap;
	char *body;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	body = gw_error_json(why);
	return http_send(conn, status, body, body ? strlen(body) : 0, "application/json");
}

enum MHD_Result http_json(struct MHD_Connection *conn, unsigned int status, struct json_object *o)
{
	char *body = strdup(json_object_to_json_string_ext(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));

	json_object_put(o);
	return http_send(conn, status, body, body ? strlen(body) : 0, "application/json");
}

enum MHD_Result http_empty(struct MHD_Connection *conn, unsigned int status)
{
	return http_send(conn, status, NULL, 0, NULL);
}
