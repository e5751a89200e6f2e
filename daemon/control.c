// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The control protocol's request handler (include/coloc/protocol.h):
 * control_serve takes one JSON request (its line parsed in strict mode by
 * server.c as it framed it, an infer's input bytes read with it),
 * control_handle finds its "cmd" in control_cmds[] and calls the command,
 * which calls the module that owns the state and returns one JSON line,
 * always valid UTF-8. Below the dispatch, infer: one query of a serving
 * tenant, its input the raw bytes after the line (read by server.c into a
 * buffer the query then owns) or a memfd that rides on the line
 * (SCM_RIGHTS, checked by input_memfd.c and read straight into the query's
 * slot, docs/design/infer-memfd.md), answered when the query completes,
 * its outputs as raw bytes after the line. The other commands are in
 * control_tenants.c (attributed processes, signals, ping),
 * control_serving.c (list, status, restart, remove) and control_submit.c.
 *
 * No I/O here (server.c moves the bytes, serving_state.c writes --state),
 * so the socket and tests drive the same handler; no state either: an
 * answer owed later rides in its callback's context or waits in the
 * daemon core (colocd_await_removal). Every request carries the caller's
 * uid, and the module that owns a tenant says whether the caller may act
 * on it (serving_authorize, tenants.c; docs/security-owners.md).
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <json-c/json.h>
#include "control.h"
#include "control_internal.h"
#include "input_memfd.h"
#include "loop.h"
#include "policy.h"
#include "utf8.h"
#include "util.h"
#include "version.h"
#include "mono_clock.h"

char *control_finish(struct json_object *resp)
{
	const char *text = json_object_to_json_string_ext(resp, JSON_C_TO_STRING_PLAIN);
	size_t len = strlen(text);
	char *line = malloc(len + 2);

	if (line) {
		memcpy(line, text, len);
		line[len] = '\n';
		line[len + 1] = '\0';
	}
	json_object_put(resp);
	return line;
}

char *control_error(const char *fmt, ...)
{
	struct json_object *resp = json_object_new_object();
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* file names and cut messages may hold any bytes; the response may not */
	utf8_sanitize(msg);
	json_object_object_add(resp, "ok", json_object_new_boolean(0));
	json_object_object_add(resp, "error", json_object_new_string(msg));
	return control_finish(resp);
}

struct json_object *control_ok(void)
{
	struct json_object *resp = json_object_new_object();

	json_object_object_add(resp, "ok", json_object_new_boolean(1));
	return resp;
}

void control_add_double(struct json_object *o, const char *key, double v)
{
	json_object_object_add(o, key, json_object_new_double(v));
}

const char *control_str(struct json_object *req, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(req, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

bool control_uint(struct json_object *req, const char *key, uint64_t *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(req, key, &v) || !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < 0)
		return false;
	*out = (uint64_t)json_object_get_int64(v);
	return true;
}

struct json_object *control_reason(const char *r)
{
	char buf[512];

	if (!r[0])
		return NULL;
	snprintf(buf, sizeof(buf), "%.500s", r);
	utf8_sanitize(buf);
	return json_object_new_string(buf);
}

/* ---- the dispatch ----------------------------------------------------------- */

/* A command and its handler: a new command is one entry. */
struct control_cmd {
	const char *name;
	char *(*handle)(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns);
	/* instead, for commands that may answer later or read a payload */
	char *(*handle_conn)(struct colocd *d, struct json_object *req, uid_t uid,
			     struct server_req *sreq);
	enum control_names names; /* what its "name" means, made a key before it runs */
};

static const struct control_cmd control_cmds[] = {
	{ "ping", control_cmd_ping, NULL, CONTROL_NAMES_NONE },
	{ "signals", control_cmd_signals, NULL, CONTROL_NAMES_NONE },
	{ "tenants", control_cmd_tenants, NULL, CONTROL_NAMES_NONE },
	{ "tenant-add", control_tenant_add, NULL, CONTROL_NAMES_ATTRIBUTED_OR_NEW },
	{ "tenant-remove", control_cmd_tenant_remove, NULL, CONTROL_NAMES_ATTRIBUTED },
	{ "submit", NULL, control_cmd_submit, CONTROL_NAMES_SERVING_NEW },
	{ "list", control_cmd_list, NULL, CONTROL_NAMES_NONE },
	{ "status", control_cmd_status, NULL, CONTROL_NAMES_SERVING },
	{ "restart", control_cmd_restart, NULL, CONTROL_NAMES_SERVING },
	{ "remove", NULL, control_cmd_remove, CONTROL_NAMES_SERVING },
	{ "infer", NULL, control_cmd_infer, CONTROL_NAMES_SERVING },
};

static char *control_infer_error(uint64_t tag, const char *status, const char *why);

/* The command's tenant name made a key; NULL, or the refusal (infer's with its tag). */
static char *control_name_key(struct colocd *d, const struct control_cmd *c,
			      struct json_object *req, uid_t uid)
{
	bool infer = c->handle_conn == control_cmd_infer;
	struct coloc_err err = { 0 };
	uint64_t tag = 0;

	if (!control_resolve_name(d, req, infer ? "tenant" : "name", c->names, uid, &err))
		return NULL;
	if (!infer)
		return control_error("%s", coloc_err_str(&err));
	control_uint(req, "tag", &tag);
	return control_infer_error(tag, "rejected", coloc_err_str(&err));
}

#define CONTROL_CMD_LIST                                                                   \
	"one of ping, signals, tenants, tenant-add, tenant-remove, submit, list, status, " \
	"remove, restart, infer"

char *control_handle(struct colocd *d, struct server_req *sreq, uid_t uid, const char *line,
		     size_t len, __u64 now_ns)
{
	struct json_object *req, *jcmd;
	const char *cmd;
	char *resp = NULL, why[COLOC_ERR_MSG_MAX];

	/* the server parsed the line as it framed it; a line from elsewhere is parsed here */
	req = sreq && sreq->request ? json_object_get(sreq->request) :
				      server_parse_request(line, len, why, sizeof(why));
	if (!req)
		return control_error("%s", why);
	if (!json_object_object_get_ex(req, "cmd", &jcmd) ||
	    !json_object_is_type(jcmd, json_type_string))
		resp = control_error("missing \"cmd\": " CONTROL_CMD_LIST);
	if (resp) {
		json_object_put(req);
		return resp;
	}
	cmd = json_object_get_string(jcmd);
	/* the pids are read in colocd's pid namespace: in the peer's they would name others */
	if (sreq && sreq->other_pidns && json_object_object_get_ex(req, "pids", NULL)) {
		json_object_put(req);
		return control_error(
			"this connection comes from a pid namespace other than "
			"colocd's, where the \"pids\" a request names would be other "
			"processes: name them from colocd's pid namespace (the host's), "
			"or name a \"cgroup\" instead");
	}
	for (size_t i = 0; i < ARRAY_SIZE(control_cmds) && !resp; i++)
		if (!strcmp(cmd, control_cmds[i].name)) {
			resp = control_name_key(d, &control_cmds[i], req, uid);
			if (resp)
				break;
			if (control_cmds[i].handle_conn)
				resp = control_cmds[i].handle_conn(d, req, uid, sreq);
			else
				resp = control_cmds[i].handle(d, req, uid, now_ns);
			/* an answer owed: the server knows from sreq */
			if (!resp && sreq && sreq->deferred) {
				json_object_put(req);
				return NULL;
			}
			if (!resp)
				resp = control_error("out of memory");
		}
	/* cut to 64 bytes; control_error drops a character the cut split */
	if (!resp)
		resp = control_error("unknown cmd '%.64s': " CONTROL_CMD_LIST, cmd);
	json_object_put(req);
	return resp;
}

char *control_serve(void *ctx, struct server_req *req, const char *line, size_t len)
{
	if (!line)
		return control_error("request larger than %d bytes; closing the connection",
				     COLOC_MAX_REQUEST);
	return control_handle(ctx, req, req->uid, line, len, coloc_now_ns());
}

/* ---- infer ------------------------------------------------------------------ */

/* An accepted infer, until its completion is sent. */
struct control_infer {
	struct server *server;
	__u64 conn;
	uint64_t tag;
	uid_t uid; /* who sent it */
	/*
	 * CLOCK_MONOTONIC: the request's first byte read, its input complete,
	 * and the loop's wake-up before that read (0: not known)
	 */
	uint64_t first_byte_ns, received_ns, woke_ns;
};

static char *control_infer_error(uint64_t tag, const char *status, const char *why)
{
	struct json_object *resp = json_object_new_object();

	json_object_object_add(resp, "ok", json_object_new_boolean(0));
	json_object_object_add(resp, "tag", json_object_new_int64((int64_t)tag));
	json_object_object_add(resp, "status", json_object_new_string(status));
	json_object_object_add(resp, "error", control_reason(why));
	return control_finish(resp);
}

/* {"queued":N,"dispatch":N,...}: where a query's latency went (serving_stats.h) */
static struct json_object *control_parts_ns_json(const struct serving_breakdown *b)
{
	struct json_object *o = json_object_new_object();

	for (int p = 0; p < SERVING_NR_PARTS; p++)
		json_object_object_add(o, serving_part_names[p],
				       json_object_new_int64((int64_t)b->ns[p]));
	return o;
}

static void control_infer_done(void *ctx, const struct serving_completion *c)
{
	struct control_infer *inf = ctx;
	struct json_object *resp = json_object_new_object();
	bool ok = c->status == SERVING_QUERY_OK;
	char *line;

	json_object_object_add(resp, "ok", json_object_new_boolean(ok));
	json_object_object_add(resp, "tag", json_object_new_int64((int64_t)inf->tag));
	json_object_object_add(resp, "status",
			       json_object_new_string(serving_status_name(c->status)));
	json_object_object_add(resp, "latency_ns", json_object_new_int64((int64_t)c->latency_ns));
	json_object_object_add(resp, "exec_ns", json_object_new_int64((int64_t)c->exec_ns));
	json_object_object_add(resp, "parts_ns", control_parts_ns_json(&c->parts));
	json_object_object_add(
		resp, "receive_ns",
		json_object_new_int64((int64_t)(inf->received_ns - inf->first_byte_ns)));
	json_object_object_add(resp, "first_byte_at_ns",
			       json_object_new_int64((int64_t)inf->first_byte_ns));
	json_object_object_add(resp, "woke_at_ns", json_object_new_int64((int64_t)inf->woke_ns));
	json_object_object_add(resp, "answered_at_ns",
			       json_object_new_int64((int64_t)coloc_now_ns()));
	if (ok)
		json_object_object_add(resp, "output_bytes",
				       json_object_new_int64((int64_t)c->output_bytes));
	else
		json_object_object_add(resp, "error", control_reason(c->reason));
	line = control_finish(resp);
	/* a client gone meanwhile: -ENOTCONN, nothing to do */
	if (line)
		server_send(inf->server, inf->conn, line, ok ? c->output : NULL,
			    ok ? c->output_bytes : 0);
	free(line);
	free(inf);
}

/* An infer whose input came after its line, read by the server with it: queue the query. */
static char *control_infer_payload(struct colocd *d, struct server_req *sreq,
				   struct control_infer *inf)
{
	struct coloc_err err = { 0 };
	const char *tenant = (const char *)(inf + 1);
	char *resp;
	int ret;

	if (d->draining) {
		resp = control_infer_error(inf->tag, "rejected", "colocd is shutting down");
		free(inf);
		return resp;
	}
	inf->received_ns = coloc_now_ns();
	/* asked once the bytes are in: the tenant may have changed hands since the line came */
	ret = serving_authorize(d->serving, tenant, inf->uid, &err);
	/* the server's buffer becomes the query's: no copy */
	if (!ret)
		ret = serving_submit_take(d->serving, tenant, &sreq->payload, sreq->payload_bytes,
					  control_infer_done, inf, NULL, &err);
	if (ret) {
		resp = control_infer_error(inf->tag, "rejected", coloc_err_str(&err));
		free(inf);
		return resp;
	}
	server_req_defer(sreq);
	return NULL;
}

/*
 * An infer whose input is in the memfd on its line: nothing follows the
 * line, so every refusal leaves the connection in step.
 */
static char *control_infer_memfd(struct colocd *d, struct server_req *sreq,
				 struct control_infer *inf, size_t offset, size_t bytes)
{
	const char *tenant = (const char *)(inf + 1);
	struct coloc_err err = { 0 };
	int ret;

	inf->received_ns = coloc_now_ns();
	if (sreq->nr_fds != 1)
		ret = coloc_err_set(&err, -EINVAL,
				    "\"input\":\"memfd\" takes exactly one descriptor with the "
				    "line, %d came",
				    sreq->nr_fds);
	else if (d->draining)
		ret = coloc_err_set(&err, -ESHUTDOWN, "colocd is shutting down");
	else
		ret = serving_authorize(d->serving, tenant, inf->uid, &err);
	if (!ret)
		ret = input_memfd_check(sreq->fds[0], offset, bytes, &err);
	if (!ret)
		ret = serving_submit_fd(d->serving, tenant, &sreq->fds[0], offset, bytes,
					control_infer_done, inf, NULL, &err);
	if (ret) {
		char *resp = control_infer_error(inf->tag, "rejected", coloc_err_str(&err));

		free(inf);
		return resp;
	}
	server_req_defer(sreq);
	return NULL;
}

char *control_payload_check(void *ctx, const struct server_req *sreq, size_t bytes)
{
	struct colocd *d = ctx;
	const char *tenant;
	struct coloc_err err = { 0 };
	uint64_t tag = 0;
	int ret;

	/* the server frames only lines with a string tenant and a whole tag */
	control_uint(sreq->request, "tag", &tag);
	ret = control_resolve_name(d, sreq->request, "tenant", CONTROL_NAMES_SERVING, sreq->uid,
				   &err);
	tenant = control_str(sreq->request, "tenant");
	if (!ret && d->draining)
		ret = coloc_err_set(&err, -ESHUTDOWN, "colocd is shutting down");
	else if (!ret)
		ret = serving_authorize(d->serving, tenant, sreq->uid, &err);
	if (!ret) {
		size_t want = serving_tenant_in_bytes(d->serving, tenant);

		if (!want) /* not described yet: no size to hold its bytes to */
			ret = coloc_err_set(&err, -EAGAIN,
					    "tenant %s is being admitted: its executor has not "
					    "described its model yet",
					    tenant);
		else if (want != bytes)
			ret = coloc_err_set(&err, -EINVAL,
					    "tenant %s: the input is %zu bytes, its model takes %zu",
					    tenant, bytes, want);
	}
	/* the owner's queued inputs are bounded before colocd takes room for more */
	if (!ret)
		ret = serving_input_room(d->serving, tenant, bytes, &err);
	if (!ret)
		return NULL;
	return control_infer_error(tag, "rejected", coloc_err_str(&err));
}

char *control_cmd_infer(struct colocd *d, struct json_object *req, uid_t uid,
			struct server_req *sreq)
{
	const char *tenant = control_str(req, "tenant");
	const char *input = control_str(req, "input");
	struct json_object *v;
	uint64_t tag, bytes, offset = 0;
	struct control_infer *inf;

	if (!sreq)
		return control_error("infer needs a connection to colocd's socket");
	if (!control_uint(req, "tag", &tag) || !control_uint(req, "input_bytes", &bytes) ||
	    !tenant) {
		/* the payload cannot be skipped without its size: the stream is lost */
		sreq->close_after = true;
		return control_error("infer needs \"tenant\" (a string), \"tag\" and "
				     "\"input_bytes\" (non-negative integers); closing the "
				     "connection, the bytes after the line cannot be skipped");
	}
	/* bytes follow unless the input is in a memfd: an "input" not understood loses the stream */
	if (json_object_object_get_ex(req, "input", &v) && (!input || strcmp(input, "memfd"))) {
		sreq->close_after = true;
		return control_infer_error(tag, "rejected",
					   "\"input\" is \"memfd\" or absent (the bytes follow the "
					   "line); closing the connection");
	}
	/* no bytes follow a memfd's line: a bad offset leaves the stream in step */
	if (input && json_object_object_get_ex(req, "input_offset", &v) &&
	    (!control_uint(req, "input_offset", &offset) || offset > COLOC_MAX_PAYLOAD_OFFSET))
		return control_infer_error(tag, "rejected",
					   "\"input_offset\" must be a whole number of at most "
					   "COLOC_MAX_PAYLOAD_OFFSET");
	if (bytes > COLOC_MAX_PAYLOAD && input)
		return control_infer_error(tag, "rejected", "input_bytes is over COLOC_MAX_PAYLOAD");
	if (bytes > COLOC_MAX_PAYLOAD) {
		sreq->close_after = true;
		return control_infer_error(tag, "rejected",
					   "input_bytes is over COLOC_MAX_PAYLOAD; closing the "
					   "connection");
	}
	/*
	 * Every line with bytes after it that got this far was framed by the
	 * server (server_request_payload_bytes), which read them with it.
	 */
	if (!input && (!sreq->payload || sreq->payload_bytes != bytes)) {
		sreq->close_after = true;
		return control_infer_error(tag, "rejected",
					   "the input bytes did not come with the line; closing "
					   "the connection");
	}
	/* the tenant's name rides behind the record */
	inf = malloc(sizeof(*inf) + strlen(tenant) + 1);
	if (!inf)
		return NULL;
	inf->server = sreq->server;
	inf->conn = sreq->conn;
	inf->tag = tag;
	inf->uid = uid;
	inf->first_byte_ns = sreq->first_byte_ns;
	/* this turn's wake-up, if the request's first byte came in this turn */
	inf->woke_ns = d->loop ? loop_woke_ns(d->loop) : 0;
	if (inf->woke_ns > inf->first_byte_ns)
		inf->woke_ns = 0;
	strcpy((char *)(inf + 1), tenant);
	if (input)
		return control_infer_memfd(d, sreq, inf, (size_t)offset, (size_t)bytes);
	return control_infer_payload(d, sreq, inf);
}
