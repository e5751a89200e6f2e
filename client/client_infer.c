// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Infer (include/coloc/client.h, protocol.h's framing): a query's line and
 * its input in one send, or the line with a sealed memfd of the input on
 * it; the answer line (colocd's plain form read without json-c,
 * infer_line.h; anything else with json-c) and the output bytes after it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include "coloc/protocol.h"
#include "client_internal.h"
#include "infer_line.h"

/*
 * Asks the kernel for a send buffer that holds an input of len bytes and its
 * line, so that the send returns once the bytes are copied instead of waiting
 * on colocd's reads a quarter of the default 208 KiB at a time (a wake-up of
 * each side per round, docs/measurements/serving-latency.md). The kernel
 * caps it at net.core.wmem_max; failing is harmless (the send just waits).
 */
static void client_size_sndbuf(struct coloc_client *c, size_t len)
{
	/* room for the skbs' overhead beside the bytes: the kernel counts both */
	size_t want = len + len / 4 + COLOC_MAX_REQUEST;
	int v = want > INT_MAX / 2 ? INT_MAX / 2 : (int)want;

	if (len <= c->sndbuf_for)
		return;
	c->sndbuf_for = len;
	setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
}

/* An infer's line, ending in '\n' (malloc'd; NULL out of memory). */
static char *client_infer_line(struct coloc_client *c, const char *tenant, uint64_t tag, size_t len,
			       bool memfd, size_t offset)
{
	struct json_object *req = json_object_new_object();
	char *line;

	json_object_object_add(req, "cmd", json_object_new_string("infer"));
	json_object_object_add(req, "tenant", json_object_new_string(tenant));
	json_object_object_add(req, "tag", json_object_new_int64((int64_t)tag));
	json_object_object_add(req, "input_bytes", json_object_new_int64((int64_t)len));
	if (memfd)
		json_object_object_add(req, "input", json_object_new_string("memfd"));
	if (offset)
		json_object_object_add(req, "input_offset", json_object_new_int64((int64_t)offset));
	if (asprintf(&line, "%s\n", json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN)) <
	    0)
		line = NULL;
	json_object_put(req);
	if (!line)
		client_fail(&c->error, -ENOMEM, "out of memory");
	return line;
}

/*
 * The infer's line into fast (cap bytes) when it can be written without
 * json-c (infer_line.h), else malloc'd into *slow (freed by the caller);
 * its bytes, or NULL out of memory.
 */
static const char *client_infer_line_in(struct coloc_client *c, char *fast, size_t cap, char **slow,
					const char *tenant, uint64_t tag, size_t len, bool memfd,
					size_t offset)
{
	*slow = NULL;
	if (coloc_infer_line_write(fast, cap, tenant, tag, len, memfd, offset))
		return fast;
	*slow = client_infer_line(c, tenant, tag, len, memfd, offset);
	return *slow;
}

int coloc_client_infer_send(struct coloc_client *c, const char *tenant, uint64_t tag,
			    const void *input, size_t len)
{
	char fast[256], *slow;
	const char *line =
		client_infer_line_in(c, fast, sizeof(fast), &slow, tenant, tag, len, false, 0);
	struct iovec iov[2];
	int r;

	if (!line)
		return -ENOMEM;
	client_size_sndbuf(c, len);
	iov[0] = (struct iovec){ (void *)line, strlen(line) };
	iov[1] = (struct iovec){ (void *)input, len };
	/* one sendmsg: colocd wakes once, for the line and its input */
	r = client_send_iov_fds(c, iov, 2, NULL, 0);
	free(slow);
	return r;
}

static const struct {
	const char *name;
	enum coloc_infer_status status;
} client_statuses[] = {
	{ "ok", COLOC_INFER_OK },
	{ "rejected", COLOC_INFER_REJECTED },
	{ "dropped", COLOC_INFER_DROPPED },
	{ "failed", COLOC_INFER_FAILED },
};

/* "parts_ns":{"queued":N,...} into res->parts_ns; a part missing or not a count reads 0. */
static void client_parts(struct json_object *o, struct coloc_infer_result *res)
{
	static const char *const names[COLOC_NR_PARTS] = COLOC_PART_NAMES;
	struct json_object *parts, *v;

	memset(res->parts_ns, 0, sizeof(res->parts_ns));
	if (!json_object_object_get_ex(o, "parts_ns", &parts) ||
	    !json_object_is_type(parts, json_type_object))
		return;
	for (int p = 0; p < COLOC_NR_PARTS; p++)
		if (json_object_object_get_ex(parts, names[p], &v) &&
		    json_object_is_type(v, json_type_int) && json_object_get_int64(v) > 0)
			res->parts_ns[p] = (uint64_t)json_object_get_int64(v);
}

/* A non-negative integer member of o; 0 when missing or not one. */
static uint64_t client_count(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < 0)
		return 0;
	return (uint64_t)json_object_get_int64(v);
}

/* The answer line at the buffer's start into res; its output's size in *out_bytes. */
static int client_parse_answer(struct coloc_client *c, const char *line, size_t len,
			       struct coloc_infer_result *res, size_t *out_bytes)
{
	struct json_tokener *tok;
	struct json_object *o, *v;
	const char *status = NULL;

	/* colocd's own plain form without json-c; anything else read by json-c below */
	if (coloc_answer_line_read(line, len, res, out_bytes))
		return 0;
	tok = json_tokener_new();
	o = tok ? json_tokener_parse_ex(tok, line, (int)len) : NULL;
	json_tokener_free(tok);
	memset(res, 0, sizeof(*res));
	*out_bytes = 0;
	if (!o)
		return client_fail(&c->error, -EPROTO, "colocd's answer is not JSON: %.200s", line);
	if (json_object_object_get_ex(o, "error", &v))
		snprintf(res->error, sizeof(res->error), "%s", json_object_get_string(v));
	if (!json_object_object_get_ex(o, "tag", &v)) {
		/* not an infer's answer: the request itself was refused */
		client_fail(&c->error, -EPROTO, "%s", res->error[0] ? res->error : line);
		json_object_put(o);
		return -EPROTO;
	}
	res->tag = (uint64_t)json_object_get_int64(v);
	if (json_object_object_get_ex(o, "status", &v))
		status = json_object_get_string(v);
	res->status = COLOC_INFER_REJECTED;
	for (size_t i = 0; status && i < sizeof(client_statuses) / sizeof(client_statuses[0]); i++)
		if (!strcmp(status, client_statuses[i].name))
			res->status = client_statuses[i].status;
	if (json_object_object_get_ex(o, "latency_ns", &v))
		res->latency_ns = (uint64_t)json_object_get_int64(v);
	if (json_object_object_get_ex(o, "exec_ns", &v))
		res->exec_ns = (uint64_t)json_object_get_int64(v);
	res->receive_ns = client_count(o, "receive_ns");
	res->first_byte_at_ns = client_count(o, "first_byte_at_ns");
	res->answered_at_ns = client_count(o, "answered_at_ns");
	res->woke_at_ns = client_count(o, "woke_at_ns");
	client_parts(o, res);
	if (res->status == COLOC_INFER_OK && json_object_object_get_ex(o, "output_bytes", &v)) {
		int64_t n = json_object_get_int64(v);

		/* past this, the bytes after the line cannot be framed: the connection is lost */
		if (!json_object_is_type(v, json_type_int) || n < 0 ||
		    (uint64_t)n > COLOC_MAX_PAYLOAD) {
			client_fail(&c->error, -EPROTO,
				    "colocd's answer has output_bytes %.32s, not 0 to %u",
				    json_object_get_string(v), COLOC_MAX_PAYLOAD);
			json_object_put(o);
			return -EPROTO;
		}
		*out_bytes = (size_t)n;
	}
	json_object_put(o);
	return 0;
}

int coloc_client_infer_recv(struct coloc_client *c, struct coloc_infer_result *res, void *output,
			    size_t out_cap, int timeout_ms)
{
	size_t line_len, out_bytes;
	char *nl;
	int r = client_wait_for(c, 0, timeout_ms);

	if (r <= 0)
		return r;
	nl = client_line_end(c);
	*nl = '\0';
	line_len = (size_t)(nl - c->buf);
	r = client_parse_answer(c, c->buf, line_len, res, &out_bytes);
	if (r) {
		client_consume(c, line_len + 1);
		return r;
	}
	*nl = '\n';
	/* the output follows its line: wait for all of it, also with timeout 0 */
	r = client_wait_for(c, out_bytes, c->io_timeout_ms ? c->io_timeout_ms : -1);
	if (r < 0)
		return r;
	if (!r)
		return client_fail(&c->error, -ETIMEDOUT,
				   "colocd sent %zu of an answer's %zu output bytes in %d ms",
				   c->len - line_len - 1, out_bytes, c->io_timeout_ms);
	client_consume(c, line_len + 1);
	if (out_bytes > out_cap) {
		client_consume(c, out_bytes);
		return client_fail(&c->error, -EMSGSIZE,
				   "the output (%zu bytes) is over the buffer (%zu)", out_bytes,
				   out_cap);
	}
	if (out_bytes)
		memcpy(output, c->buf, out_bytes);
	res->output_bytes = out_bytes;
	client_consume(c, out_bytes);
	return 1;
}

int coloc_client_infer_send_memfd(struct coloc_client *c, const char *tenant, uint64_t tag,
				  int memfd, size_t offset, size_t len)
{
	char fast[256], *slow;
	const char *line =
		client_infer_line_in(c, fast, sizeof(fast), &slow, tenant, tag, len, true, offset);
	struct iovec iov;
	int r;

	if (!line)
		return -ENOMEM;
	iov = (struct iovec){ (void *)line, strlen(line) };
	/* the descriptor rides on the line's bytes: colocd reads no input after it */
	r = client_send_iov_fds(c, &iov, 1, &memfd, 1);
	free(slow);
	return r;
}

void coloc_client_use_memfd(struct coloc_client *c, int on)
{
	c->use_memfd = on;
}

void client_input_memfd_drop(struct coloc_client *c)
{
	if (c->input_fd < 0)
		return;
	munmap(c->input_map, c->input_cap ? c->input_cap : 1);
	close(c->input_fd);
	c->input_fd = -1;
}

/* The connection's input memfd, holding len bytes at least: made or remade as needed. */
static int client_input_memfd(struct coloc_client *c, size_t len)
{
	int fd;

	if (c->input_fd >= 0 && c->input_cap >= len)
		return 0;
	client_input_memfd_drop(c);
	fd = coloc_client_input_memfd(len, &c->input_map);
	if (fd < 0)
		return client_fail(&c->error, fd, "cannot make the input's memfd: %s",
				   strerror(-fd));
	c->input_fd = fd;
	c->input_cap = len;
	return 0;
}

int coloc_client_infer(struct coloc_client *c, const char *tenant, const void *input, size_t len,
		       void *output, size_t out_cap, struct coloc_infer_result *res)
{
	int r;

	if (c->use_memfd) {
		r = client_input_memfd(c, len);
		if (!r) {
			memcpy(c->input_map, input, len);
			r = coloc_client_infer_send_memfd(c, tenant, 0, c->input_fd, 0, len);
		}
	} else {
		r = coloc_client_infer_send(c, tenant, 0, input, len);
	}

	if (r)
		return r;
	r = coloc_client_infer_recv(c, res, output, out_cap, -1);
	if (r == 1 && res->status != COLOC_INFER_OK)
		client_fail(&c->error, 0, "%s", res->error);
	return r == 1 ? 0 : r;
}
