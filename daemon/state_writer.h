/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * --state written off colocd's loop: a thread of its own takes what the
 * loop hands it (a tenant's files to keep or drop, the file's newest text)
 * and does the I/O, fsync and rename included (serving_state.c's
 * functions), so a slow disk stalls no tenant. Texts coalesce: only the
 * newest one waiting is written. Freeing it writes what is still waiting,
 * so the state at exit is on disk (docs/design/state-writer.md).
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
 * Queues the removal of the tenant's copies, and cancels its keeps not
 * started yet (their descriptors closed here); 0 or -ENOMEM.
 */
int state_writer_drop_files(struct state_writer *w, const char *name, int nr_external);
/*
 * Hands over the file's new text (malloc'd: the writer frees it). It
 * replaces a text not written yet, and is written after the files queued
 * before it. Never waits for the disk.
 */
void state_writer_post(struct state_writer *w, char *text);
/*
 * Writes what is still queued (the newest text last; once more if its last
 * write failed), stops the thread, frees w. Waits for the disk 10 s at
 * most: past that it says so and leaves the thread to the process's exit.
 * NULL is a no-op.
 */
void state_writer_free(struct state_writer *w);

#endif /* COLOC_DAEMON_STATE_WRITER_H */
