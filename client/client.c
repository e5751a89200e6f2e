// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libcoloc_client (include/coloc/client.h): one connection to colocd, its
 * requests (a JSON line, descriptors riding on it) and their answer lines.
 * The bytes both ways: client_io.c; submit, whose files go as descriptors
 * opened here: client_submit.c; infer, framed as protocol.h says, its input
 * in the request or in a memfd: client_infer.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "coloc/protocol.h"
#include "client_internal.h"

int coloc_client_connect(const char *socket_path, struct coloc_client **out)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct coloc_client *c;
	const char *path = socket_path ? socket_path : COLOC_DEFAULT_SOCKET;

	*out = NULL;
	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	memcpy(addr.sun_path, path, strlen(path));
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->input_fd = -1;
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&addr, sizeof(addr))) {
		int err = -errno;

		if (c->fd >= 0)
			close(c->fd);
		free(c);
		return err;
	}
	*out = c;
	return 0;
}

void coloc_client_close(struct coloc_client *c)
{
	if (!c)
		return;
	close(c->fd);
	client_input_memfd_drop(c);
	free(c->buf);
	free(c);
}

int coloc_client_fd(const struct coloc_client *c)
{
	return c->fd;
}

const char *coloc_client_error(const struct coloc_client *c)
{
	return c->error.msg;
}

void coloc_client_set_io_timeout(struct coloc_client *c, int timeout_ms)
{
	c->io_timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
}

size_t coloc_client_sent_bytes(const struct coloc_client *c)
{
	return c->sent;
}

int coloc_client_request_fds(struct coloc_client *c, const char *request, const int *fds,
			     int nr_fds, char **response)
{
	size_t len = strlen(request), line_len;
	struct iovec iov;
	char *line, *nl;
	int r;

	*response = NULL;
	if (nr_fds < 0 || nr_fds > COLOC_MAX_REQUEST_FDS)
		return client_fail(&c->error, -EINVAL,
				   "%d descriptors; a request carries at most %d", nr_fds,
				   COLOC_MAX_REQUEST_FDS);
	/* one send: the descriptors must come with the line's bytes */
	line = malloc(len + 2);
	if (!line)
		return client_fail(&c->error, -ENOMEM, "out of memory");
	memcpy(line, request, len);
	line[len] = '\n';
	line[len + 1] = '\0';
	iov = (struct iovec){ line, len + 1 };
	r = client_send_iov_fds(c, &iov, 1, fds, nr_fds);
	free(line);
	/* a refusal (permission, limits) may have been sent before the request was read */
	if (r && r != -EPIPE && r != -ECONNRESET)
		return r;
	r = client_wait_for(c, 0, -1);
	if (r < 0)
		return r;
	nl = client_line_end(c);
	line_len = (size_t)(nl - c->buf);
	*response = malloc(line_len + 1);
	if (!*response)
		return client_fail(&c->error, -ENOMEM, "out of memory");
	memcpy(*response, c->buf, line_len);
	(*response)[line_len] = '\0';
	client_consume(c, line_len + 1);
	return 0;
}

int coloc_client_request(struct coloc_client *c, const char *request, char **response)
{
	return coloc_client_request_fds(c, request, NULL, 0, response);
}

struct json_object *coloc_client_call_fds(struct coloc_client *c, struct json_object *req,
					  const int *fds, int nr_fds)
{
	char *resp = NULL;
	struct json_object *o;

	if (coloc_client_request_fds(c, json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN),
				     fds, nr_fds, &resp))
		return NULL;
	o = json_tokener_parse(resp);
	if (!o)
		client_fail(&c->error, -EPROTO, "colocd's answer is not JSON: %.200s", resp);
	free(resp);
	return o;
}

struct json_object *coloc_client_call(struct coloc_client *c, struct json_object *req)
{
	return coloc_client_call_fds(c, req, NULL, 0);
}

int coloc_client_ok(struct coloc_client *c, struct json_object *resp)
{
	struct json_object *v;

	if (json_object_object_get_ex(resp, "ok", &v) && json_object_get_boolean(v))
		return 1;
	if (json_object_object_get_ex(resp, "error", &v))
		client_fail(&c->error, 0, "%s", json_object_get_string(v));
	else
		client_fail(&c->error, 0, "colocd refused the request without saying why");
	return 0;
}
