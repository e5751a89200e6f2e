/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * An infer's input handed over in a client's memfd (protocol.h, "input":
 * "memfd"), treated as hostile: only a memfd sealed against shrinking
 * (F_SEAL_SHRINK: the bytes colocd reads cannot vanish under it, so no
 * SIGBUS and no short read) and at least as large as the input is taken,
 * and its bytes are only ever read with pread, which waits on no other
 * process (swapped-out pages excepted) and never maps the client's pages
 * into colocd. docs/design/infer-memfd.md says why.
 */
#ifndef COLOC_DAEMON_INPUT_MEMFD_H
#define COLOC_DAEMON_INPUT_MEMFD_H

#include <stdbool.h>
#include <stddef.h>
#include "error.h"

/*
 * 0 when fd is a memfd, open for reading, sealed against shrinking, with
 * at least offset + bytes bytes; else -errno with err saying what it is
 * instead (a FIFO, a directory, a file that is not a memfd, an unsealed
 * memfd, one too small). The seals are read before the size, so the size
 * checked is one the file can no longer go below.
 */
int input_memfd_check(int fd, size_t offset, size_t bytes, struct coloc_err *err);
/*
 * Whether a checked memfd holds exactly bytes bytes from offset 0 and is
 * sealed against every change (F_SEAL_SHRINK, GROW, WRITE and SEAL): its
 * descriptor may then go to the tenant's executor, which maps it instead
 * of colocd reading it (execproc.h's input_memfd): all it can read there
 * is the input, as it would in the slot, and nobody can change it.
 */
bool input_memfd_frozen(int fd, size_t offset, size_t bytes);
/*
 * Copies bytes bytes of a checked memfd from offset on into dst (one pread
 * after another until all are in). 0, or -errno with the bytes not read
 * set to zero (never a previous query's); a hole reads as zeros.
 */
int input_memfd_read(int fd, size_t offset, void *dst, size_t bytes);

#endif /* COLOC_DAEMON_INPUT_MEMFD_H */
