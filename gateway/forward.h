/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Forwarding queries to colocd: a pool of connections, each owned by one
 * thread that sends queries as they come (coloc_client_infer_send, many in
 * flight on one connection) and matches colocd's answers to them by tag
 * (coloc_client_infer_recv). The HTTP side hands over a job and is called
 * back once, from the pool's thread, when the job is done: answered by
 * colocd, timed out, or failed with the connection.
 *
 * A caller that may block can run a job on its own thread instead
 * (gw_fwd_run): it borrows an idle connection, sends, and reads colocd's
 * answer itself, so a query costs no hand-off between threads; with no
 * connection idle it is told so and submits as above.
 *
 * A submitted job goes to a connection nobody borrowed (the least loaded);
 * with every connection borrowed it waits, first come first served, for
 * the first one given back.
 *
 * Bounds: at most max_jobs jobs waiting or in flight in the whole pool; one
 * more is refused at once (-EAGAIN: the caller answers 503). A job not
 * answered by its deadline completes with -ETIMEDOUT; colocd's late answer
 * is then read and thrown away. Sending a query, and reading an answer's
 * output once its line came, may take io_timeout_ms at most: past it the
 * job completes with -ETIMEDOUT and that connection is closed (its other
 * jobs complete alike). A lost connection fails its jobs with -EPIPE and is
 * made again for the next ones. A query is sent again (on a fresh
 * connection) only when not one byte of it left: colocd runs it at most
 * once.
 */
#ifndef COLOC_GATEWAY_FORWARD_H
#define COLOC_GATEWAY_FORWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "coloc/client.h"
#include "error.h"
#include "memfd_pool.h"
#include "timeline.h"

struct gw_job {
	/* set by the caller, untouched by the pool until done() */
	const char *tenant;
	const void *input;
	size_t input_bytes;
	/*
	 * Or, instead of input, a memfd of the caller's (gw_fwd_memfd_get)
	 * holding the input from input_offset on: passed to colocd as is.
	 * NULL: the pool copies input into a memfd of its own (or sends it on
	 * the socket with gw_fwd_set_socket_copy).
	 */
	struct gw_memfd *input_memfd;
	size_t input_offset;
	void *output;
	size_t output_cap;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC */
	void (*done)(struct gw_job *job); /* from a pool thread; the job is the caller's again */
	void *arg;
	struct gw_tl *tl; /* its timeline's stamps (timeline.h), or NULL */
	/* set by the pool before done() */
	int result; /* 0: colocd answered (res.status says how), or -errno */
	struct coloc_infer_result res;
	char why[256]; /* when result < 0 */
	/* the pool's */
	uint64_t tag;
	struct gw_memfd *own_memfd; /* the input copied for colocd, until done */
	bool input_lent; /* its input's memfd was sent and colocd has not answered */
	struct gw_job *next;
};

struct gw_fwd;

/*
 * nr_conns connections to colocd at socket_path (made lazily), each send
 * and output read bounded by io_timeout_ms (0: none); 0 or -errno.
 */
int gw_fwd_create(const char *socket_path, int nr_conns, int max_jobs, int io_timeout_ms,
		  struct gw_fwd **out, struct coloc_err *err);
/* Hands job over: 0 (done() will be called), -EAGAIN (full), -ESHUTDOWN. */
int gw_fwd_submit(struct gw_fwd *fw, struct gw_job *job);
/*
 * Runs job on the calling thread, blocking until colocd answers, the job's
 * deadline, or gw_fwd_stop: 0 with job->result (and res) set as for done(),
 * which is not called; -EBUSY when no connection is idle (submit it
 * instead), -EAGAIN (full), -ESHUTDOWN.
 */
int gw_fwd_run(struct gw_fwd *fw, struct gw_job *job);
/* Jobs waiting or in flight now. */
int gw_fwd_pending(struct gw_fwd *fw);
/*
 * Stops the threads; jobs still held complete with -ECANCELED, and later
 * submits get -ESHUTDOWN. Destroy stops, then frees.
 */
void gw_fwd_stop(struct gw_fwd *fw);
void gw_fwd_destroy(struct gw_fwd *fw);

/*
 * Inputs go to colocd in memfds (protocol.h, "input":"memfd") unless
 * socket_copy is set (coloc-gateway --colocd-socket-copy): then their bytes
 * go on the socket, as before memfds. Set before the first job.
 */
void gw_fwd_set_socket_copy(struct gw_fwd *fw, bool socket_copy);
/*
 * At most pipeline (1 to COLOC_MAX_INFLIGHT, the default) queries whose
 * answers colocd owes on one connection: more wait in that connection's
 * queue until answers come. colocd reads no more requests of a connection
 * owed COLOC_MAX_INFLIGHT answers, so beyond it a healthy colocd would
 * stall the send into --colocd-timeout-ms. 0, or -EINVAL. Set before the
 * first job.
 */
int gw_fwd_set_pipeline(struct gw_fwd *fw, int pipeline);
/*
 * A memfd of the pool's (memfd_pool.h) of bytes bytes at least, for a
 * caller to receive an input into and hand over as job->input_memfd;
 * NULL when inputs go on the socket or none could be made (then use
 * job->input). Give it back with gw_fwd_memfd_put once the job it went
 * with (or NULL, if none) is done: it is freed, not reused, when colocd was
 * sent it and did not answer.
 */
struct gw_memfd *gw_fwd_memfd_get(struct gw_fwd *fw, size_t bytes);
void gw_fwd_memfd_put(struct gw_fwd *fw, struct gw_memfd *m, const struct gw_job *job);

/*
 * How a finished job ended, for each front door to put in its own terms
 * (HTTP status, gRPC code): answered with outputs; past its deadline (the
 * gateway's or, dropped, colocd's); colocd unreachable; the gateway
 * stopping; colocd refused it (admission); the executor or anything else
 * failed.
 */
enum gw_outcome { GW_OK, GW_TIMEOUT, GW_UNREACHABLE, GW_STOPPING, GW_REJECTED, GW_FAILED };
enum gw_outcome gw_job_outcome(const struct gw_job *job);
/*
 * What a network client is told of job, finished not GW_OK (forward_why.c):
 * a fixed text for its outcome ("colocd unavailable", "overloaded",
 * "model not loaded", ...) and a request id, into out; colocd's words and
 * the gateway's reason go to stderr with that id.
 */
void gw_job_client_why(const struct gw_job *job, char *out, size_t len);

#endif /* COLOC_GATEWAY_FORWARD_H */
