/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The executor's side of the shared-memory protocol (include/coloc/shm.h):
 * mapping and checking colocd's memfd, describing the loaded model in the
 * header, and serving commands one at a time: sleep on the doorbell with
 * the OpenMP team parked (exec_team_wait), take a command, run its block
 * (or its plan of blocks, block after block on the same cores until colocd's
 * yield word stops it at a boundary) on its cores, write the completion,
 * ring colocd's pipe. bin/coloc-executor
 * is this library behind argument parsing, the sandbox and the model's
 * import; tests drive it in-process.
 *
 * Every field colocd writes is read once and checked before use: a command
 * that names a slot, layers, versions, cores or flags this executor cannot
 * honour is refused (COLOC_SHM_DONE_REFUSED) and the executor keeps serving.
 */
#ifndef COLOC_SHM_SERVE_H
#define COLOC_SHM_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include "coloc/shm.h"
#include "executor.h"
#include "model.h"
#include "shm_input.h"

/*
 * One lane's serving state: its shared memory, the model, its queries'
 * arenas, where a slot's tensors go. A slot's query holds one of the
 * lane's arenas (live queries: exec_query_new_live) from its first block
 * to its last; the lane makes one more only when every one is held. Several
 * lanes of one process share the model (m, em) and each has its own
 * memory, doorbell and exec_lane.
 */
struct shm_serve {
	struct coloc_shm *shm; /* mapped by shm_serve_map */
	size_t shm_bytes;
	int done_fd; /* the write end of colocd's doorbell pipe */
	struct model *m; /* the caller's, as is em */
	struct exec_model *em;
	struct exec_lane *lane; /* the caller's; NULL: the model's own lane */
	struct exec_cpuset allowed; /* the cores a command may name */
	/*
	 * Take turns at OpenMP teams with the process's other lanes
	 * (exec_team_turns_join, on the doorbell cmd.seq, from
	 * shm_serve_prepare): set for a process of several lanes.
	 */
	bool team_turns;
	struct model_io_layout io;
	struct exec_input_copy *staged; /* [io.nr_inputs]: a query's input, for its first block */
	struct exec_query *pool[COLOC_SHM_NR_SLOTS]; /* the lane's arenas, made when needed */
	struct exec_query *q[COLOC_SHM_NR_SLOTS]; /* a slot's started query, one of pool */
	unsigned int progress[COLOC_SHM_NR_SLOTS]; /* layers [0, progress) computed */
	/* inputs in clients' memfds (shm_input.h); input.sock -1 from shm_serve_map */
	struct shm_input input;
};

/*
 * Maps the memfd fd into s->shm after checking that it is what colocd
 * promises: sealed against shrinking, and a header of this layout whose
 * slots fit; no input socket yet (s->input.sock -1: the caller sets it).
 * 0, or a negative errno with why saying what is wrong.
 */
int shm_serve_map(struct shm_serve *s, int fd, char *why, size_t len);

/*
 * The cores blocks may use: the CPU list text (e.g. "0-3"), or with NULL
 * every online CPU this process may run on. 0 or a negative errno.
 */
int shm_serve_allowed_cpus(const char *text, struct exec_cpuset *set, char *why, size_t len);

/*
 * With s->shm mapped and s->m, s->em, s->lane, s->allowed and s->done_fd
 * set: writes the model's description into the header (refused with -E2BIG
 * if a query does not fit a slot), makes the lane's first arena and warms
 * every kernel version up once in it, from the calling thread (which then
 * serves the lane: its OpenMP team is made here; with team_turns it joins
 * the process's lanes' turns first). A block from layer
 * first > 0 must start where the slot's query's last block ended.
 * 0 or a negative errno.
 */
int shm_serve_prepare(struct shm_serve *s, char *why, size_t len);

/*
 * Sets the header READY, rings colocd, then serves commands until an
 * EXIT command (returns 0) or until the doorbell pipe fails (-errno).
 */
int shm_serve_loop(struct shm_serve *s);

/*
 * Takes the command now in s->shm->cmd (sequence seq), runs it and writes
 * its completion (done.seq = seq last, release order), without ringing.
 * Returns the op it took (colocd may rewrite the command once done.seq is out).
 */
__u32 shm_serve_command(struct shm_serve *s, __u32 seq);

/* Gives up: the reason into the header, state FAILED, colocd rung (failing silently). */
void shm_serve_fail(struct coloc_shm *shm, int done_fd, int code, const char *reason);

/* Frees what shm_serve_prepare made and unmaps; the model and em stay the caller's. */
void shm_serve_release(struct shm_serve *s);

#endif /* COLOC_SHM_SERVE_H */
