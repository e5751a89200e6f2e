// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libcoloc_client (include/coloc/client.h): one connection to colocd, a
 * read buffer that holds whatever arrived (answer lines and the raw output
 * bytes that follow infer answers), the infer framing of protocol.h, and
 * submit, whose files go as descriptors opened here (SCM_RIGHTS), as does
 * an infer's input memfd.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include "coloc/client.h"
#include "coloc/protocol.h"
#include "infer_line.h"
#include "onnx_scan.h"

/*
 * The longest answer line taken from colocd (its answers to 64 tenants'
 * status are far shorter): past it, with no newline, the connection is
 * broken, not a buffer grown without end. colocd holds 4 MiB of answers.
 */
#define CLIENT_MAX_ANSWER_LINE (4u << 20)
/* how long descriptors are offered to a connection colocd has not admitted yet */
#define CLIENT_ADMIT_MS 5000

struct coloc_client {
	int fd;
	size_t sndbuf_for; /* the largest infer input the socket's send buffer was sized for */
	int io_timeout_ms; /* 0: sends and outputs wait for ever */
	bool use_memfd; /* coloc_client_infer's input through input_fd */
	int input_fd; /* the connection's input memfd (-1 until needed), input_map its pages */
	void *input_map;
	size_t input_cap;
	size_t sent; /* bytes of the last send that left */
	char *buf; /* bytes received, not yet taken */
	size_t len, cap;
	char error[512];
};

static int client_fail(struct coloc_client *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int client_fail(struct coloc_client *c, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->error, sizeof(c->error), fmt, ap);
	va_end(ap);
	return err;
}

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
	if (c->input_fd >= 0) {
		munmap(c->input_map, c->input_cap ? c->input_cap : 1);
		close(c->input_fd);
	}
	free(c->buf);
	free(c);
}

int coloc_client_fd(const struct coloc_client *c)
{
	return c->fd;
}

const char *coloc_client_error(const struct coloc_client *c)
{
	return c->error;
}

void coloc_client_set_io_timeout(struct coloc_client *c, int timeout_ms)
{
	c->io_timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
}

size_t coloc_client_sent_bytes(const struct coloc_client *c)
{
	return c->sent;
}

/* The end of the first line in the buffer, or NULL. */
static char *client_line_end(struct coloc_client *c)
{
	return c->len ? memchr(c->buf, '\n', c->len) : NULL;
}

/* Reads what is there into the buffer, waiting up to timeout_ms; bytes read, 0, or -errno. */
static int client_fill(struct coloc_client *c, int timeout_ms)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	ssize_t n;
	int r;

	if (c->cap - c->len < 65536) {
		size_t cap = c->cap ? c->cap * 2 : 262144;
		char *b;

		/* as client_wait_for says, also while a send reads what comes meanwhile */
		if (c->len > CLIENT_MAX_ANSWER_LINE && !client_line_end(c))
			return client_fail(c, -EPROTO,
					   "colocd sent %zu bytes of an answer line without its end "
					   "(at most %u)",
					   c->len, CLIENT_MAX_ANSWER_LINE);
		b = realloc(c->buf, cap);

		if (!b)
			return client_fail(c, -ENOMEM, "out of memory");
		c->buf = b;
		c->cap = cap;
	}
	/* not waiting: what recv finds is all there is, no poll needed */
	r = timeout_ms ? poll(&pfd, 1, timeout_ms) : 1;
	if (r < 0)
		return errno == EINTR ? 0 : client_fail(c, -errno, "poll: %s", strerror(errno));
	if (!r)
		return 0;
	n = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ?
			       0 :
			       client_fail(c, -errno, "reading from colocd: %s", strerror(errno));
	if (!n)
		return client_fail(c, -EPIPE, "colocd closed the connection");
	c->len += (size_t)n;
	return (int)n;
}

static uint64_t client_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Sends all of the nr_iov buffers in iov (advanced as they go), reading
 * answers meanwhile so that neither side waits on the other; fds (nr_fds of
 * them, may be 0) ride on the first bytes sent. Each round first tries the
 * send and waits only when the socket is full: a line and its input
 * usually go in one sendmsg, and colocd wakes once for both.
 */
static int client_send_iov_fds(struct coloc_client *c, struct iovec *iov, int nr_iov,
			       const int *fds, int nr_fds)
{
	uint64_t end = c->io_timeout_ms ? client_now_ms() + (uint64_t)c->io_timeout_ms : 0;
	uint64_t admit_until = 0;
	bool wait = false;

	c->sent = 0;
	for (;;) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLOUT | POLLIN };
		union {
			char buf[CMSG_SPACE(sizeof(int) * COLOC_MAX_REQUEST_FDS)];
			struct cmsghdr align;
		} cbuf;
		struct msghdr msg;
		ssize_t n;

		while (nr_iov && !iov->iov_len) {
			iov++;
			nr_iov--;
		}
		if (!nr_iov)
			return 0;
		msg = (struct msghdr){ .msg_iov = iov, .msg_iovlen = (size_t)nr_iov };
		if (wait) {
			uint64_t now = end ? client_now_ms() : 0;
			int r;

			if (end && now >= end)
				return client_fail(c, -ETIMEDOUT,
						   "colocd took no more of the request for %d ms",
						   c->io_timeout_ms);
			r = poll(&pfd, 1, end ? (int)(end - now) : -1);
			if (r < 0) {
				if (errno == EINTR)
					continue;
				return client_fail(c, -errno, "poll: %s", strerror(errno));
			}
			if (!r)
				continue;
			if (pfd.revents & POLLIN) {
				int r = client_fill(c, 0);

				if (r < 0)
					return r;
			}
			if (!(pfd.revents & (POLLOUT | POLLERR | POLLHUP)))
				continue;
		}
		if (nr_fds) {
			struct cmsghdr *cm;

			memset(&cbuf, 0, sizeof(cbuf));
			msg.msg_control = cbuf.buf;
			msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nr_fds);
			cm = CMSG_FIRSTHDR(&msg);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nr_fds);
			memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nr_fds);
		}
		n = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		wait = true; /* coming round again: the socket took less than all */
		if (n < 0 && errno == EPERM && nr_fds) {
			int r;

			/*
			 * colocd takes descriptors once it has admitted the
			 * connection (SO_PASSRIGHTS): again in a millisecond; a
			 * refusal comes as a line, then the connection ends.
			 */
			if (!admit_until)
				admit_until = client_now_ms() + CLIENT_ADMIT_MS;
			if (client_now_ms() >= admit_until)
				return client_fail(c, -EPERM, "colocd did not take the descriptors");
			r = client_fill(c, 1);
			if (r < 0)
				return r;
			wait = false;
			continue;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			if (errno == EPIPE && client_line_end(c))
				return client_fail(c, -EPIPE, "colocd refused: %.*s",
						   (int)(client_line_end(c) - c->buf), c->buf);
			return client_fail(c, -errno, "sending to colocd: %s", strerror(errno));
		}
		nr_fds = 0;
		c->sent += (size_t)n;
		/* the timeout bounds a stall, not the whole send: progress restarts it */
		if (end && n > 0)
			end = client_now_ms() + (uint64_t)c->io_timeout_ms;
		for (size_t left = (size_t)n; left;) {
			size_t k = left < iov->iov_len ? left : iov->iov_len;

			iov->iov_base = (char *)iov->iov_base + k;
			iov->iov_len -= k;
			left -= k;
			if (!iov->iov_len && left) {
				iov++;
				nr_iov--;
			}
		}
	}
}

static int client_send_all_fds(struct coloc_client *c, const void *buf, size_t len, const int *fds,
			       int nr_fds)
{
	struct iovec iov = { (void *)buf, len };

	return client_send_iov_fds(c, &iov, 1, fds, nr_fds);
}

static void client_consume(struct coloc_client *c, size_t n)
{
	c->len -= n;
	memmove(c->buf, c->buf + n, c->len);
}

/* Waits until the buffer holds a line and need more bytes after it: 1, 0 (time up), -errno. */
static int client_wait_for(struct coloc_client *c, size_t need_after_line, int timeout_ms)
{
	uint64_t end = timeout_ms > 0 ? client_now_ms() + (uint64_t)timeout_ms : 0;

	for (;;) {
		char *nl = client_line_end(c);
		int r, wait = timeout_ms;

		if (nl && (size_t)(nl + 1 - c->buf) + need_after_line <= c->len)
			return 1;
		if (!nl && c->len > CLIENT_MAX_ANSWER_LINE)
			return client_fail(
				c, -EPROTO,
				"colocd sent %zu bytes of an answer line without its end "
				"(at most %u)",
				c->len, CLIENT_MAX_ANSWER_LINE);
		if (timeout_ms > 0) {
			uint64_t now = client_now_ms();

			if (now >= end)
				return 0;
			wait = (int)(end - now);
		}
		r = client_fill(c, wait);
		if (r < 0)
			return r;
		if (!r && timeout_ms == 0)
			return 0;
	}
}

int coloc_client_request_fds(struct coloc_client *c, const char *request, const int *fds,
			     int nr_fds, char **response)
{
	size_t len = strlen(request), line_len;
	char *line, *nl;
	int r;

	*response = NULL;
	if (nr_fds < 0 || nr_fds > COLOC_MAX_REQUEST_FDS)
		return client_fail(c, -EINVAL, "%d descriptors; a request carries at most %d",
				   nr_fds, COLOC_MAX_REQUEST_FDS);
	/* one send: the descriptors must come with the line's bytes */
	line = malloc(len + 2);
	if (!line)
		return client_fail(c, -ENOMEM, "out of memory");
	memcpy(line, request, len);
	line[len] = '\n';
	line[len + 1] = '\0';
	r = client_send_all_fds(c, line, len + 1, fds, nr_fds);
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
		return client_fail(c, -ENOMEM, "out of memory");
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
		client_fail(c, -EPROTO, "colocd's answer is not JSON: %.200s", resp);
	free(resp);
	return o;
}

struct json_object *coloc_client_call(struct coloc_client *c, struct json_object *req)
{
	return coloc_client_call_fds(c, req, NULL, 0);
}

/*
 * path opened for colocd, with the caller's own permissions (relative to
 * dirfd when it is not AT_FDCWD): never blocking on a FIFO, no
 * controlling tty. fd or -errno with the reason.
 */
static int client_open_file(struct coloc_client *c, int dirfd, const char *path, const char *what)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return client_fail(c, -errno, "cannot open %s %s: %s", what, path, strerror(errno));
	return fd;
}

/*
 * An ONNX model's external data file loc checked by colocd's rule before
 * it is opened (relative, no '..' component: colocd refuses the rest, but
 * only after the files were opened and handed over). 0 or -EINVAL.
 */
static int client_check_location(struct coloc_client *c, const char *loc)
{
	bool ok = loc[0] && loc[0] != '/';

	for (const char *p = loc; ok && *p;) {
		size_t k = strcspn(p, "/");

		ok = !(k == 2 && p[0] == '.' && p[1] == '.');
		p += k;
		p += *p == '/';
	}
	if (!ok)
		return client_fail(c, -EINVAL,
				   "external data file '%.200s' is not a relative path below the "
				   "model's directory (no '..')",
				   loc);
	return 0;
}

/*
 * An ONNX model's external data locations (a regular file only: colocd
 * refuses the rest), read with pread, never mapped: a file truncated
 * while it is read is this model's error, not a SIGBUS.
 */
static int client_locations(struct coloc_client *c, int fd, const char *path,
			    char (*locs)[ONNX_SCAN_LOCATION_LEN], int max)
{
	struct stat st;
	int n;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !st.st_size)
		return 0;
	n = onnx_scan_locations_fd(fd, (uint64_t)st.st_size, locs, max);
	if (n == -E2BIG)
		return client_fail(c, n,
				   "%s keeps its tensors in more than %d external data files, the "
				   "most a submit carries; save it with all tensors in one file",
				   path, max);
	if (n == -ENODATA)
		return client_fail(c, -EIO,
				   "%s became shorter while it was read (%lld bytes before): "
				   "written or truncated during the submit; submit it again",
				   path, (long long)st.st_size);
	if (n == -ENOMEM)
		return client_fail(c, n, "out of memory");
	if (n < 0 && n != -EINVAL)
		return client_fail(c, n, "cannot read %s: %s", path, strerror(-n));
	if (n < 0)
		return client_fail(c, n, "%s is not an ONNX model (its protobuf does not parse)",
				   path);
	return n;
}

/* Why coloc_open_beneath() refused path, in words (err < 0). */
static int client_beneath_fail(struct coloc_client *c, int err, const char *what, const char *path)
{
	const char *why = err == -ELOOP  ? "a symbolic link, not followed here" :
			  err == -EXDEV  ? "it leads outside its folder" :
					   strerror(-err);

	return client_fail(c, err, "cannot open %s %s: %s", what, path, why);
}

/*
 * One of a submit's files for colocd: by path (at NULL; relative to dirfd
 * when that is not AT_FDCWD), or by at's rules (below dirfd without
 * links; with links, wherever they lead unless beneath) and then a regular
 * file. fd, or -errno with the reason.
 */
static int client_open_sub(struct coloc_client *c, const struct coloc_submit_files *at, int dirfd,
			   const char *path, const char *what, bool beneath)
{
	struct stat st;
	int fd;

	if (!at)
		return client_open_file(c, dirfd, path, what);
	if (at->links && !beneath) {
		fd = openat(dirfd, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			fd = -errno;
	} else {
		fd = coloc_open_beneath(dirfd, path, O_RDONLY | O_NONBLOCK, at->links);
	}
	if (fd < 0)
		return client_beneath_fail(c, fd, what, path);
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return client_fail(c, -EINVAL, "cannot open %s %s: not a regular file", what,
				   path);
	}
	return fd;
}

/* The folder an ONNX model's external data are below (O_PATH), or -errno with the reason. */
static int client_model_dir(struct coloc_client *c, const struct coloc_submit_files *at,
			    const char *model)
{
	char *dir = strdup(model), *slash;
	int fd;

	if (!dir)
		return client_fail(c, -ENOMEM, "out of memory");
	slash = strrchr(dir, '/');
	if (slash)
		slash[1] = '\0';
	if (at && !at->links)
		fd = coloc_open_beneath(at->dirfd, slash ? dir : ".", O_PATH | O_DIRECTORY, false);
	else if ((fd = openat(at ? at->dirfd : AT_FDCWD, slash ? dir : ".",
			      O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		fd = -errno;
	free(dir);
	if (fd < 0)
		return client_fail(c, fd, "cannot open the directory of %s: %s", model,
				   strerror(-fd));
	return fd;
}

/* coloc_client_submit (at NULL: by path) and coloc_client_submit_at. */
static struct json_object *client_submit(struct coloc_client *c, const struct coloc_submit *sub,
					 const struct coloc_submit_files *at)
{
	char(*locs)[ONNX_SCAN_LOCATION_LEN] = NULL;
	struct json_object *req = NULL, *resp = NULL, *ext;
	int fds[COLOC_MAX_REQUEST_FDS], nr = 0, n = 0, dirfd = -1, r;
	const char *model = at ? at->model : sub->model;
	const char *weights = at ? at->weights : sub->weights;
	int top = at ? at->dirfd : AT_FDCWD;
	size_t plen = strlen(model);

	if (!weights != !sub->weights) {
		client_fail(c, -EINVAL, "weights named for colocd but not where to open them");
		return NULL;
	}
	r = client_open_sub(c, at, top, model, "model", false);
	if (r < 0)
		return NULL;
	fds[nr++] = r;
	if (weights) {
		r = client_open_sub(c, at, top, weights, "weights file", false);
		if (r < 0)
			goto out;
		fds[nr++] = r;
	}
	if (plen > 5 && !strcmp(model + plen - 5, ".onnx")) {
		locs = calloc(COLOC_MAX_REQUEST_FDS, sizeof(*locs));
		if (!locs) {
			client_fail(c, -ENOMEM, "out of memory");
			goto out;
		}
		n = client_locations(c, fds[0], model, locs, COLOC_MAX_REQUEST_FDS - nr);
		if (n < 0)
			goto out;
		dirfd = n ? client_model_dir(c, at, model) : -1;
		if (n && dirfd < 0)
			goto out;
	}
	for (int i = 0; i < n; i++) {
		r = client_check_location(c, locs[i]);
		if (!r)
			r = client_open_sub(c, at, dirfd, locs[i], "external data file", true);
		if (r < 0)
			goto out;
		fds[nr++] = r;
	}
	req = json_object_new_object();
	json_object_object_add(req, "cmd", json_object_new_string("submit"));
	json_object_object_add(req, "name", json_object_new_string(sub->name));
	json_object_object_add(req, "model", json_object_new_string(sub->model));
	if (sub->weights)
		json_object_object_add(req, "weights", json_object_new_string(sub->weights));
	if (n) {
		ext = json_object_new_array();
		for (int i = 0; i < n; i++)
			json_object_array_add(ext, json_object_new_string(locs[i]));
		json_object_object_add(req, "external", ext);
	}
	json_object_object_add(req, "qos_ms", json_object_new_double(sub->qos_ms));
	if (sub->executors > 0)
		json_object_object_add(req, "executors", json_object_new_int(sub->executors));
	resp = coloc_client_call_fds(c, req, fds, nr);
out:
	json_object_put(req);
	for (int i = 0; i < nr; i++)
		close(fds[i]);
	if (dirfd >= 0)
		close(dirfd);
	free(locs);
	return resp;
}

struct json_object *coloc_client_submit(struct coloc_client *c, const struct coloc_submit *sub)
{
	return client_submit(c, sub, NULL);
}

struct json_object *coloc_client_submit_at(struct coloc_client *c, const struct coloc_submit *sub,
					   const struct coloc_submit_files *files)
{
	return client_submit(c, sub, files);
}

int coloc_client_ok(struct coloc_client *c, struct json_object *resp)
{
	struct json_object *v;

	if (json_object_object_get_ex(resp, "ok", &v) && json_object_get_boolean(v))
		return 1;
	if (json_object_object_get_ex(resp, "error", &v))
		client_fail(c, 0, "%s", json_object_get_string(v));
	else
		client_fail(c, 0, "colocd refused the request without saying why");
	return 0;
}

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
		client_fail(c, -ENOMEM, "out of memory");
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
		return client_fail(c, -EPROTO, "colocd's answer is not JSON: %.200s", line);
	if (json_object_object_get_ex(o, "error", &v))
		snprintf(res->error, sizeof(res->error), "%s", json_object_get_string(v));
	if (!json_object_object_get_ex(o, "tag", &v)) {
		/* not an infer's answer: the request itself was refused */
		client_fail(c, -EPROTO, "%s", res->error[0] ? res->error : line);
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
	client_parts(o, res);
	if (res->status == COLOC_INFER_OK && json_object_object_get_ex(o, "output_bytes", &v)) {
		int64_t n = json_object_get_int64(v);

		/* past this, the bytes after the line cannot be framed: the connection is lost */
		if (!json_object_is_type(v, json_type_int) || n < 0 ||
		    (uint64_t)n > COLOC_MAX_PAYLOAD) {
			client_fail(c, -EPROTO,
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
		return client_fail(c, -ETIMEDOUT,
				   "colocd sent %zu of an answer's %zu output bytes in %d ms",
				   c->len - line_len - 1, out_bytes, c->io_timeout_ms);
	client_consume(c, line_len + 1);
	if (out_bytes > out_cap) {
		client_consume(c, out_bytes);
		return client_fail(c, -EMSGSIZE, "the output (%zu bytes) is over the buffer (%zu)",
				   out_bytes, out_cap);
	}
	if (out_bytes)
		memcpy(output, c->buf, out_bytes);
	res->output_bytes = out_bytes;
	client_consume(c, out_bytes);
	return 1;
}

int coloc_client_input_memfd(size_t len, void **map)
{
	int fd = memfd_create("coloc-input", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	void *m;

	*map = NULL;
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)(len ? len : 1)) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	m = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	*map = m;
	return fd;
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

/* The connection's input memfd, holding len bytes at least: made or remade as needed. */
static int client_input_memfd(struct coloc_client *c, size_t len)
{
	int fd;

	if (c->input_fd >= 0 && c->input_cap >= len)
		return 0;
	if (c->input_fd >= 0) {
		munmap(c->input_map, c->input_cap ? c->input_cap : 1);
		close(c->input_fd);
		c->input_fd = -1;
	}
	fd = coloc_client_input_memfd(len, &c->input_map);
	if (fd < 0)
		return client_fail(c, fd, "cannot make the input's memfd: %s", strerror(-fd));
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
		client_fail(c, 0, "%s", res->error);
	return r == 1 ? 0 : r;
}
