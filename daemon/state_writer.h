/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * --state written off colocd's loop: a thread of its own takes what the
 * loop hands it (a tenant's files to keep or drop, the newest specs) and
 * does the I/O, fsync and rename included (serving_state.c's functions),
 * so a slow disk stalls no tenant. Posts coalesce: only the newest specs
 * waiting are written. A drop and a post never fail (nothing they do
 * allocates). Freeing it writes what is still waiting, so the state at
 * exit is on disk (docs/design/state-writer.md).
 */
#ifndef COLOC_DAEMON_STATE_WRITER_H
#define COLOC_DAEMON_STATE_WRITER_H

#include "serving_state.h"

struct state_writer;

/* A writer for the state file path (copied), its thread started; 0 or -errno. */
int state_writer_new(const char *path, struct state_writer **out);
/*
 * Queues a copy of the tenant's files (sealed memfds: duplicated here, so
 * the caller keeps its own) into path.files/; 0 or -errno (nothing queued).
 */
int state_writer_keep_files(struct state_writer *w, const char *name,
			    const struct colocd_files *files, int nr_external);
/*
 * Reserves what one drop_files will need: call it once per tenant recorded,
 * before recording it; 0 or -ENOMEM.
 */
int state_writer_reserve_drop(struct state_writer *w);
/*
 * Queues the removal of the tenant's copies (with a reservation's memory:
 * nothing allocated), and cancels its keeps not started yet (their
 * descriptors closed here).
 */
void state_writer_drop_files(struct state_writer *w, const char *name, int nr_external);
/*
 * Hands over the specs the file must hold (at most COLOC_MAX_TENANTS,
 * copied into the writer's own table). They replace specs not written yet,
 * and are written after the files queued before them. Never waits for the
 * disk, never allocates.
 */
void state_writer_post(struct state_writer *w, const struct colocd_spec *specs, int nr);
/*
 * Writes what is still queued (the newest text last; once more if its last
 * write failed), stops the thread, frees w. Waits for the disk 10 s at
 * most: past that it says so and leaves the thread to the process's exit.
 * NULL is a no-op.
 */
void state_writer_free(struct state_writer *w);

#endif /* COLOC_DAEMON_STATE_WRITER_H */
