/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The C client of colocd's control socket (protocol.h): requests and
 * responses as JSON lines, and queries (infer) whose tensors travel as raw
 * bytes after their line, never as JSON. Link libcoloc_client.a and json-c.
 *
 * A client is one connection. Errors are negative errnos; the words behind
 * the last one are in coloc_client_error() (a refused request's "error", a
 * transport failure, a malformed answer).
 *
 * Queries, synchronously: coloc_client_infer() sends one and waits for it.
 * Asynchronously, for a load generator: coloc_client_infer_send() with a tag
 * of the caller's choosing, then coloc_client_infer_recv() as completions
 * come, in completion order, each with its tag; poll coloc_client_fd() for
 * POLLIN in between. colocd owes a connection at most COLOC_MAX_INFLIGHT
 * answers and reads no further requests beyond that; send keeps reading
 * answers into the client's buffer while it waits, so it never deadlocks.
 * Do not mix coloc_client_request() with infers in flight.
 *
 * Inputs and outputs are the model's tensors as raw little-endian fp32, in
 * the layout of include/coloc/shm.h: the inputs one after another in layer
 * order, the outputs likewise; their sizes are the tenant's "input_bytes"
 * and "output_bytes" in status.
 */
#ifndef COLOC_CLIENT_H
#define COLOC_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>
#include "protocol.h"

struct coloc_client;

/* 0 (a connection to socket_path; NULL: COLOC_DEFAULT_SOCKET) or -errno. */
int coloc_client_connect(const char *socket_path, struct coloc_client **out);
void coloc_client_close(struct coloc_client *c);
int coloc_client_fd(const struct coloc_client *c);
/* What the last failure was, in words; "" when none. */
const char *coloc_client_error(const struct coloc_client *c);
/*
 * Bounds each stall of a request's send (no byte taken for timeout_ms), and
 * each wait for the rest of an infer answer's output once its line came, to
 * timeout_ms (0, the default: no bound): past it the call fails with
 * -ETIMEDOUT, and the connection, left mid-message, is of no further use
 * (close it). For a caller that must not
 * wait for ever on a colocd that stopped reading or writing.
 */
void coloc_client_set_io_timeout(struct coloc_client *c, int timeout_ms);
/*
 * Bytes of the last request that left this end before its send returned:
 * all of it on success; after a failure, 0 means colocd cannot have it.
 */
size_t coloc_client_sent_bytes(const struct coloc_client *c);

/*
 * One request line (JSON, without '\n') -> its response line, malloc'd in
 * *response (without '\n'). 0, or -errno (transport).
 */
int coloc_client_request(struct coloc_client *c, const char *request, char **response);
/*
 * The same with json-c objects: the parsed response (put it when done), or
 * NULL on a transport failure or a response that is not JSON. An "ok":false
 * response is returned as is; coloc_client_ok() tells which.
 */
struct json_object *coloc_client_call(struct coloc_client *c, struct json_object *req);
/*
 * The same with descriptors riding on the request line (SCM_RIGHTS, at
 * most COLOC_MAX_REQUEST_FDS); they stay open here.
 */
int coloc_client_request_fds(struct coloc_client *c, const char *request, const int *fds,
			     int nr_fds, char **response);
struct json_object *coloc_client_call_fds(struct coloc_client *c, struct json_object *req,
					  const int *fds, int nr_fds);

struct coloc_submit {
	const char *name; /* the tenant */
	const char *model; /* the model file: a .model, or an .onnx */
	const char *weights; /* NULL: weights from the model's seed (never with ONNX) */
	double qos_ms;
	int executors; /* 0: one */
	bool allow_foreign_owner; /* as root: files others own or could swap, links still not */
};

/*
 * Submits a tenant: opens the model, the weights and, for an ONNX file,
 * every external data file it names (below its directory), all with the
 * caller's own permissions, and sends them to colocd as descriptors:
 * colocd opens no path. As root, each file is opened through no symbolic
 * link and, unless allow_foreign_owner, must pass root's tools' rule
 * (common/trusted_path.h: root's own file, of one name, in directories
 * only root may write), so no other user chooses what root hands over.
 * The parsed answer (coloc_client_ok() tells), or NULL with the reason in
 * coloc_client_error(): "cannot open ...", or a transport failure.
 */
struct json_object *coloc_client_submit(struct coloc_client *c, const struct coloc_submit *sub);

/*
 * Where coloc_client_submit_at() opens a submit's files: paths relative to
 * the directory dirfd, each resolved below it (openat2's RESOLVE_BENEATH)
 * without symbolic links, then fstat'ed a regular file; with links,
 * symbolic links are followed wherever they lead. An ONNX model's
 * external data files are always resolved below the model's own folder,
 * without links (with them: links that stay below it). sub's model and
 * weights are only the names colocd is told.
 */
struct coloc_submit_files {
	int dirfd;
	const char *model; /* relative to dirfd */
	const char *weights; /* relative to dirfd; NULL exactly when sub->weights is */
	bool links; /* symbolic links are followed (see above) */
};

struct json_object *coloc_client_submit_at(struct coloc_client *c, const struct coloc_submit *sub,
					   const struct coloc_submit_files *files);

/*
 * path, relative to dirfd, opened with flags (O_CLOEXEC and O_NOCTTY
 * added) by openat2: resolved below dirfd (no '..' out of it, no absolute
 * path), without symbolic links unless links; where openat2 is missing,
 * by coloc_open_beneath_walk() (no links at all). The descriptor, or
 * -errno: -EXDEV (leads outside dirfd), -ELOOP (a symbolic link).
 */
int coloc_open_beneath(int dirfd, const char *path, int flags, bool links);

/*
 * What coloc_open_beneath() does without links where openat2 is missing
 * (ENOSYS): path walked a component at a time with O_NOFOLLOW, '..' and
 * an absolute path refused (-EXDEV), a link at any component -ELOOP (the
 * last one opened O_PATH is the link itself, for the caller's fstat).
 */
int coloc_open_beneath_walk(int dirfd, const char *path, int flags);

/* Whether a response says "ok":true; if not, its "error" becomes coloc_client_error(). */
int coloc_client_ok(struct coloc_client *c, struct json_object *resp);

enum coloc_infer_status {
	COLOC_INFER_OK,
	COLOC_INFER_REJECTED, /* refused at once: queue full, unknown tenant, wrong size, ... */
	COLOC_INFER_DROPPED, /* accepted, then given up on (its deadline) */
	COLOC_INFER_FAILED, /* its executor failed */
};

struct coloc_infer_result {
	uint64_t tag;
	enum coloc_infer_status status;
	uint64_t latency_ns; /* in colocd, from arrival to completion */
	uint64_t exec_ns; /* of which the executor ran its blocks */
	/* the latency part by part (enum coloc_latency_part); 0 where colocd gave none */
	uint64_t parts_ns[COLOC_NR_PARTS];
	size_t output_bytes; /* written to the caller's buffer */
	char error[256]; /* why, when not OK */
	/* colocd's first read of the request until its input was complete (not in latency_ns) */
	uint64_t receive_ns;
	/* colocd's CLOCK_MONOTONIC at that first read and as it answered; 0 if not given */
	uint64_t first_byte_at_ns, answered_at_ns;
	/* and as its loop woke before that first read; 0 if not known */
	uint64_t woke_at_ns;
};

/*
 * One query, waited for: output gets the result (out_cap at least its
 * output_bytes). 0 when colocd answered (res->status says how it went), or
 * -errno: transport, -EMSGSIZE when out_cap is too small.
 */
int coloc_client_infer(struct coloc_client *c, const char *tenant, const void *input, size_t len,
		       void *output, size_t out_cap, struct coloc_infer_result *res);
/* Sends one query (line and input), reading answers meanwhile. 0 or -errno. */
int coloc_client_infer_send(struct coloc_client *c, const char *tenant, uint64_t tag,
			    const void *input, size_t len);
/*
 * The next completion, waiting up to timeout_ms (-1: for ever, 0: not at
 * all). 1 with res (and output) filled, 0 when none came in time, -errno
 * (-EPIPE: colocd closed the connection; -EMSGSIZE: its output was over
 * out_cap, res still filled and the stream kept in step).
 */
int coloc_client_infer_recv(struct coloc_client *c, struct coloc_infer_result *res, void *output,
			    size_t out_cap, int timeout_ms);

/*
 * Inputs in memory instead of on the socket (protocol.h, "input":"memfd"):
 * the input lies in a memfd sealed against shrinking, which goes to colocd
 * with the infer's line; colocd reads it straight into the query's slot.
 * docs/design/infer-memfd.md.
 *
 * A memfd of len bytes, sealed against shrinking and growing, mapped
 * writable at *map (len bytes; munmap it when done): write the input there.
 * Its descriptor, or -errno.
 */
int coloc_client_input_memfd(size_t len, void **map);
/*
 * A memfd holding the len bytes of input, sealed against every change
 * (shrinking, growing, writing, sealing): colocd sends it on to the
 * tenant's executor, which maps it and copies the input from there, in
 * place of colocd's read into the query's slot (docs/design/serving-path.md).
 * For an input sent many times (the executor keeps it mapped while in
 * use): the tenant's executor may keep any memfd it was sent, and with it
 * the memfd's pages, charged to this process's memory cgroup, after this
 * process closed it. Its descriptor, or -errno.
 */
int coloc_client_input_memfd_frozen(const void *input, size_t len);
/*
 * Sends one query whose input is the len bytes of memfd from offset on
 * (sealed with F_SEAL_SHRINK, at least offset + len bytes; it stays open
 * here). Those bytes must not change until the query's answer came: colocd
 * may read them until then. One memfd may serve many queries in flight
 * that share an input. 0 or -errno; a memfd colocd refuses is answered
 * "rejected" with why.
 */
int coloc_client_infer_send_memfd(struct coloc_client *c, const char *tenant, uint64_t tag,
				  int memfd, size_t offset, size_t len);
/*
 * on: coloc_client_infer() copies its input into a memfd of the
 * connection's (made once, remade for a larger input) and sends that;
 * off (the default): its bytes go on the socket.
 */
void coloc_client_use_memfd(struct coloc_client *c, int on);

#endif /* COLOC_CLIENT_H */
