/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A submit's files copied off colocd's event loop: submit_file_seal()
 * (submit_files.h) runs for each file, and profile_key_compute() over the
 * copies (the profile cache key, profile_key.h), on a thread that owns only its
 * duplicates of the client's descriptors and the copies it makes; the loop
 * is told through a pipe it polls, and calls back there. One submit is
 * copied at a time: the memory the copies hold at once stays one submit's
 * (COLOC_MAX_SUBMIT_BYTES), as when the loop copied them itself, while the
 * other tenants are served and ping is answered meanwhile. The others wait
 * in turn by user: the next copy is the oldest of the user whose last copy
 * started longest ago, so one user's queue of large submits delays another
 * user's by one copy at most. A copy not done within its deadline (a read
 * that a FUSE or network file's server never answers) is given up on: its
 * submit is answered -ETIMEDOUT, the next copy starts on a new thread, and
 * the stuck thread stops when its read returns, before its next chunk
 * (SUBMIT_FILE_CHUNK_BYTES), freeing what it copied (submit_stalled.h
 * bounds how many there are).
 */
#ifndef COLOC_DAEMON_SUBMIT_COPY_H
#define COLOC_DAEMON_SUBMIT_COPY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "coloc/protocol.h"
#include "error.h"
#include "loop.h"
#include "profile_key.h"

#define SUBMIT_COPY_MAX_FILES (2 + COLOC_MAX_REQUEST_FDS)
#define SUBMIT_COPY_WHAT_LEN 320
#define SUBMIT_COPY_LOCATION_LEN 256 /* an ONNX external data location, with its NUL */
#define SUBMIT_COPY_DEFAULT_TIMEOUT_MS 30000

/*
 * What a submit's files are, for the profile key: file 0 the model, file 1
 * the weights when weights, then one external data file per location, in
 * the order of fds.
 */
struct submit_copy_roles {
	bool weights;
	int nr_external;
	const char (*locations)[SUBMIT_COPY_LOCATION_LEN];
};

struct submit_copier;

/*
 * A finished copy, on the loop: ret 0 with sealed[i] the sealed copy of
 * the i-th file (the callee duplicates what it keeps: every fd of sealed[]
 * is closed after it returns) and key the profile key of them all; else -errno
 * with err naming the file at fault (-ETIMEDOUT: not done by its deadline;
 * -ECANCELED: colocd is stopping, from submit_copier_free; the callee only
 * frees ctx then).
 */
typedef void (*submit_copy_done_fn)(void *ctx, int ret, const int *sealed, int nr,
				    const struct profile_key *key, const struct coloc_err *err);

/*
 * One per colocd, on loop l, each copy given timeout_ms from its start
 * (0: SUBMIT_COPY_DEFAULT_TIMEOUT_MS): 0 or -errno.
 */
int submit_copier_new(struct loop *l, unsigned int timeout_ms, struct submit_copier **out);
/*
 * Every copy not finished is stopped (the running one given up on: its
 * thread stops before its next chunk and ends on its own) and its done
 * called with -ECANCELED. NULL is fine.
 */
void submit_copier_free(struct submit_copier *q);
/*
 * Queues the copy of the nr files of fds (the client's descriptors,
 * duplicated here: the caller keeps its own), what[i] naming each in
 * errors ("the model", ...), roles what each is (nr files in all), for the user uid (whose
 * turn it waits for), their sizes in all at most budget (and
 * COLOC_MAX_SUBMIT_BYTES): a file past it is refused before its copy.
 * done is called once, on the loop, never from within
 * this call. 0, or -errno with
 * err filled (done is then never called): -EAGAIN while uid, or all
 * users, have as many stalled copies as submit_stalled.h allows.
 */
int submit_copier_add(struct submit_copier *q, uid_t uid, uint64_t budget, const int *fds,
		      const char (*what)[SUBMIT_COPY_WHAT_LEN], int nr,
		      const struct submit_copy_roles *roles, submit_copy_done_fn done, void *ctx,
		      struct coloc_err *err);

#endif /* COLOC_DAEMON_SUBMIT_COPY_H */
