// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The KServe v2 HTTP client of coloc's tools (coloc/kserve.h): one HTTP/1.1
 * keep-alive connection, TCP_NODELAY, requests pipelined: each infer is
 * written whole (its JSON header, then the input's bytes with writev, no
 * copy) and its tag queued; answers come back in request order, so each
 * one read completes the oldest tag. Answers are small (the outputs, in
 * binary), so the blocking writes never wait on our own unread answers for
 * long. The model's input name and shape come from GET /v2/models/NAME.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <json-c/json.h>
#include "coloc/kserve.h"
#include "client_error.h"
#include "kserve_tcp.h"

#define KH_MAX_MODELS 16
#define KH_HEADER_MAX 1024
#define KH_ANSWER_MAX (64u << 20)
#define KH_MAX_DIMS 8

struct kh_model {
	char name[64];
	char header_mid[KH_HEADER_MAX]; /* the request's JSON between its id and its byte size */
	size_t in_bytes, out_bytes;
};

struct kserve_http {
	int fd;
	char host[64];
	char *buf; /* answers read, not yet taken */
	size_t len, cap;
	uint64_t *tags; /* in flight, oldest first, a ring */
	size_t head, nr, tags_cap;
	struct kh_model models[KH_MAX_MODELS];
	int nr_models;
	struct client_error error;
};

const char *kserve_http_error(struct kserve_http *k)
{
	return k->error.msg;
}

int kserve_http_fd(struct kserve_http *k)
{
	return k->fd;
}

int kserve_http_connect(const char *url, struct kserve_http **out)
{
	struct kserve_http *k;
	const char *colon;
	char why[256];
	int fd;

	*out = NULL;
	if (strncmp(url, "http://", 7))
		return -EINVAL;
	url += 7;
	colon = strrchr(url, ':');
	if (!colon || (size_t)(colon - url) >= sizeof(k->host))
		return -EINVAL;
	fd = kserve_tcp_connect(url, why, sizeof(why));
	if (fd < 0)
		return fd;
	k = calloc(1, sizeof(*k));
	if (!k) {
		close(fd);
		return -ENOMEM;
	}
	k->fd = fd;
	snprintf(k->host, sizeof(k->host), "%.*s", (int)(colon - url), url);
	*out = k;
	return 0;
}

void kserve_http_close(struct kserve_http *k)
{
	if (!k)
		return;
	if (k->fd >= 0)
		close(k->fd);
	free(k->buf);
	free(k->tags);
	free(k);
}

static int kh_write_all(struct kserve_http *k, struct iovec *iov, int n)
{
	while (n) {
		ssize_t w = writev(k->fd, iov, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return client_fail(&k->error, -EPIPE, "the gateway closed the connection");
		while (n && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/*
 * One whole answer at the start of buf, if there is one: its status, where
 * its body starts and its length, and its Inference-Header-Content-Length
 * (-1 when absent). 1 when complete, 0 when more bytes are needed, -1 when
 * it is not HTTP.
 */
static int kh_parse(const char *buf, size_t len, int *status, size_t *body, size_t *body_len,
		    long *header_len)
{
	const char *end = memmem(buf, len, "\r\n\r\n", 4), *line;
	long clen = -1;

	*header_len = -1;
	if (!end)
		return len > 65536 ? -1 : 0;
	if (sscanf(buf, "HTTP/1.%*d %d", status) != 1)
		return -1;
	for (line = memchr(buf, '\n', (size_t)(end - buf)); line && line < end;
	     line = memchr(line + 1, '\n', (size_t)(end - line))) {
		if (!strncasecmp(line + 1, "Content-Length:", 15))
			clen = strtol(line + 16, NULL, 10);
		else if (!strncasecmp(line + 1, "Inference-Header-Content-Length:", 32))
			*header_len = strtol(line + 33, NULL, 10);
	}
	if (clen < 0 || clen > (long)KH_ANSWER_MAX)
		return -1;
	*body = (size_t)(end + 4 - buf);
	*body_len = (size_t)clen;
	return *body + *body_len <= len ? 1 : 0;
}

/* Reads until one whole answer is in buf (waiting up to timeout_ms); 1, 0 or -errno. */
static int kh_fill(struct kserve_http *k, int timeout_ms, int *status, size_t *body,
		   size_t *body_len, long *header_len)
{
	for (;;) {
		struct pollfd pfd = { .fd = k->fd, .events = POLLIN };
		int r = kh_parse(k->buf ? k->buf : "", k->len, status, body, body_len, header_len);
		ssize_t n;

		if (r)
			return r < 0 ? client_fail(&k->error, -EPROTO,
						   "the gateway's answer is not HTTP") :
				       1;
		if (k->cap - k->len < 65536) {
			char *b = realloc(k->buf, k->cap ? k->cap * 2 : 1 << 20);

			if (!b)
				return client_fail(&k->error, -ENOMEM, "out of memory");
			k->buf = b;
			k->cap = k->cap ? k->cap * 2 : 1 << 20;
		}
		n = recv(k->fd, k->buf + k->len, k->cap - k->len, MSG_DONTWAIT);
		if (n > 0) {
			k->len += (size_t)n;
			continue;
		}
		if (n == 0)
			return client_fail(&k->error, -EPIPE, "the gateway closed the connection");
		if (errno != EAGAIN && errno != EINTR)
			return client_fail(&k->error, -errno, "reading from the gateway: %s",
					   strerror(errno));
		if (!timeout_ms || poll(&pfd, 1, timeout_ms) <= 0)
			return 0;
	}
}

static void kh_consume(struct kserve_http *k, size_t n)
{
	memmove(k->buf, k->buf + n, k->len - n);
	k->len -= n;
}

/*
 * The elements of a metadata shape: 1 to KH_MAX_DIMS dimensions, each a
 * positive integer, their product at most KH_ANSWER_MAX / 4; 0 when the
 * endpoint's shape is anything else (its text is never trusted further).
 */
static size_t kh_shape_elems(struct json_object *shape)
{
	size_t n, elems = 1;

	if (!json_object_is_type(shape, json_type_array))
		return 0;
	n = json_object_array_length(shape);
	if (n < 1 || n > KH_MAX_DIMS)
		return 0;
	for (size_t d = 0; d < n; d++) {
		struct json_object *dim = json_object_array_get_idx(shape, d);
		int64_t v = json_object_get_int64(dim);

		if (!json_object_is_type(dim, json_type_int) || v < 1 ||
		    (uint64_t)v > KH_ANSWER_MAX / 4 / elems)
			return 0;
		elems *= (size_t)v;
	}
	return elems;
}

/* GET /v2/models/NAME: the JSON header this model's requests start with. */
static struct kh_model *kh_model(struct kserve_http *k, const char *model)
{
	char req[256], *text;
	struct json_object *o = NULL, *ins, *in, *shape, *outs, *v;
	struct iovec iov;
	struct kh_model *m = NULL;
	size_t body, blen, elems, off;
	long hl;
	int status, n;

	for (int i = 0; i < k->nr_models; i++)
		if (!strcmp(k->models[i].name, model))
			return &k->models[i];
	if (k->nr || k->nr_models == KH_MAX_MODELS || strlen(model) >= sizeof(m->name)) {
		client_fail(&k->error, -EBUSY,
			    "model %s: its metadata is asked before any query is sent", model);
		return NULL;
	}
	n = snprintf(req, sizeof(req), "GET /v2/models/%s HTTP/1.1\r\nHost: %s\r\n\r\n", model,
		     k->host);
	iov = (struct iovec){ req, (size_t)n };
	if (kh_write_all(k, &iov, 1) || kh_fill(k, -1, &status, &body, &blen, &hl) != 1)
		return NULL;
	text = strndup(k->buf + body, blen);
	kh_consume(k, body + blen);
	o = text ? json_tokener_parse(text) : NULL;
	free(text);
	if (status != 200 || !json_object_object_get_ex(o, "inputs", &ins) ||
	    !json_object_is_type(ins, json_type_array) || json_object_array_length(ins) != 1 ||
	    !json_object_object_get_ex(json_object_array_get_idx(ins, 0), "shape", &shape) ||
	    !json_object_object_get_ex(o, "outputs", &outs) ||
	    !json_object_is_type(outs, json_type_array)) {
		client_fail(&k->error, -EIO,
			    "GET /v2/models/%s: HTTP %d, not one input coloc-load can send", model,
			    status);
		goto out;
	}
	m = &k->models[k->nr_models];
	in = json_object_array_get_idx(ins, 0);
	elems = kh_shape_elems(shape);
	if (!json_object_object_get_ex(in, "name", &v) || !json_object_is_type(v, json_type_string) ||
	    !elems) {
		client_fail(&k->error, -EPROTO,
			    "GET /v2/models/%s: the input needs a name and a shape of 1 to %d "
			    "positive dimensions",
			    model, KH_MAX_DIMS);
		m = NULL;
		goto out;
	}
	off = (size_t)snprintf(m->header_mid, sizeof(m->header_mid),
			       "\",\"inputs\":[{\"name\":%s,\"shape\":%s,\"datatype\":"
			       "\"FP32\",\"parameters\":{\"binary_data_size\":",
			       json_object_to_json_string(v), json_object_to_json_string(shape));
	m->in_bytes = elems * 4;
	m->out_bytes = 0;
	for (size_t i = 0; i < json_object_array_length(outs); i++) {
		size_t e = 0;

		if (json_object_object_get_ex(json_object_array_get_idx(outs, i), "shape", &shape))
			e = kh_shape_elems(shape);
		if (!e) {
			client_fail(&k->error, -EPROTO,
				    "GET /v2/models/%s: output %zu has no shape of 1 to %d "
				    "positive dimensions",
				    model, i, KH_MAX_DIMS);
			m = NULL;
			goto out;
		}
		m->out_bytes += e * 4;
	}
	if (off >= sizeof(m->header_mid)) {
		client_fail(&k->error, -E2BIG, "model %s: its input's name and shape are too long",
			    model);
		m = NULL;
		goto out;
	}
	snprintf(m->name, sizeof(m->name), "%s", model);
	k->nr_models++;
out:
	json_object_put(o);
	return m;
}

int kserve_http_infer_send(struct kserve_http *k, const char *model, uint64_t tag,
			   const void *input, size_t len)
{
	struct kh_model *m = kh_model(k, model);
	char json[KH_HEADER_MAX + 64], head[512];
	struct iovec iov[3];
	int jl, hl;

	if (!m)
		return -EIO;
	if (len != m->in_bytes)
		return client_fail(&k->error, -EINVAL, "model %s takes %zu input bytes, not %zu",
				   model, m->in_bytes, len);
	if (k->nr == k->tags_cap) {
		size_t cap = k->tags_cap ? k->tags_cap * 2 : 256;
		uint64_t *t = malloc(cap * sizeof(*t));

		if (!t)
			return client_fail(&k->error, -ENOMEM, "out of memory");
		for (size_t i = 0; i < k->nr; i++)
			t[i] = k->tags[(k->head + i) % k->tags_cap];
		free(k->tags);
		k->tags = t;
		k->tags_cap = cap;
		k->head = 0;
	}
	jl = snprintf(json, sizeof(json),
		      "{\"id\":\"%llu%s%zu}}],\"parameters\":{\"binary_data_output\":true}}",
		      (unsigned long long)tag, m->header_mid, len);
	hl = snprintf(head, sizeof(head),
		      "POST /v2/models/%s/infer HTTP/1.1\r\nHost: %s\r\n"
		      "Content-Type: application/octet-stream\r\n"
		      "Inference-Header-Content-Length: %d\r\nContent-Length: %zu\r\n\r\n",
		      model, k->host, jl, (size_t)jl + len);
	iov[0] = (struct iovec){ head, (size_t)hl };
	iov[1] = (struct iovec){ json, (size_t)jl };
	iov[2] = (struct iovec){ (void *)input, len };
	if (kh_write_all(k, iov, 3))
		return -EPIPE;
	k->tags[(k->head + k->nr++) % k->tags_cap] = tag;
	return 0;
}

static int64_t kh_param(struct json_object *o, const char *key)
{
	struct json_object *p, *v;

	return json_object_object_get_ex(o, "parameters", &p) &&
			       json_object_object_get_ex(p, key, &v) ?
		       json_object_get_int64(v) :
		       0;
}

int kserve_http_infer_recv(struct kserve_http *k, struct coloc_infer_result *res, void *output,
			   size_t out_cap, int timeout_ms)
{
	struct json_object *o, *v;
	size_t body, blen, jlen;
	char *text;
	long hl;
	int status, r;

	if (!k->nr)
		return 0;
	r = kh_fill(k, timeout_ms, &status, &body, &blen, &hl);
	if (r <= 0)
		return r;
	memset(res, 0, sizeof(*res));
	res->tag = k->tags[k->head];
	k->head = (k->head + 1) % k->tags_cap;
	k->nr--;
	jlen = hl >= 0 && (size_t)hl <= blen ? (size_t)hl : blen;
	text = strndup(k->buf + body, jlen);
	o = text ? json_tokener_parse(text) : NULL;
	free(text);
	if (status != 200) {
		res->status = status == 504 ? COLOC_INFER_DROPPED :
			      status == 503 ? COLOC_INFER_REJECTED :
					      COLOC_INFER_FAILED;
		snprintf(res->error, sizeof(res->error), "HTTP %d: %s", status,
			 json_object_object_get_ex(o, "error", &v) ? json_object_get_string(v) :
								     "");
	} else if (blen - jlen > out_cap) {
		r = client_fail(&k->error, -EMSGSIZE, "an answer was over %zu bytes", out_cap);
	} else {
		res->status = COLOC_INFER_OK;
		res->latency_ns = (uint64_t)kh_param(o, "coloc_latency_us") * 1000;
		res->exec_ns = (uint64_t)kh_param(o, "coloc_exec_us") * 1000;
		res->output_bytes = blen - jlen;
		memcpy(output, k->buf + body + jlen, res->output_bytes);
	}
	json_object_put(o);
	kh_consume(k, body + blen);
	return r;
}
