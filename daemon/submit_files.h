/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The files of a submit (the model, its weights, ONNX external data) as
 * colocd takes them: descriptors the client opened with its own
 * permissions (protocol.h), never a path. Each is checked (its mount's
 * type first, submit_mount.h, then fstat and fstatfs) before any byte is
 * read (a regular file, not empty, at most
 * COLOC_MAX_SUBMIT_FILE_BYTES, open for reading, on no filesystem whose
 * reads a user can hold up or whose files are not data: FUSE, NFS, SMB,
 * 9p and the other network filesystems, proc, sysfs and the like) and copied once, in the kernel (sendfile), into a memfd
 * sealed against any change: what the executor parses and what the
 * profile cache key hashes are the same bytes, whatever the client does
 * to its file afterwards. See docs/security-submit.md.
 */
#ifndef COLOC_DAEMON_SUBMIT_FILES_H
#define COLOC_DAEMON_SUBMIT_FILES_H

#include <stdint.h>
#include "error.h"

/*
 * A sealed copy of fd's file into *out (close-on-exec). what names it in
 * errors ("the model", "external data file 'w.bin'"); *budget is the bytes
 * the submit may still copy, lowered by the file's size; a file past it is
 * refused by its st_size before a byte is read (-EDQUOT). 0, or -errno with
 * err saying what is wrong with the file. fd is left open.
 */
int submit_file_seal(int fd, const char *what, uint64_t *budget, int *out, struct coloc_err *err);

/* What submit_file_seal_until copies between two looks at its cancel flag. */
#define SUBMIT_FILE_CHUNK_BYTES (1u << 20)

/*
 * submit_file_seal, stopped between two chunks once *cancel (read
 * atomically) is non-zero: -ECANCELED, and the part copied is freed.
 */
int submit_file_seal_until(int fd, const char *what, const int *cancel, uint64_t *budget, int *out,
			   struct coloc_err *err);

/*
 * The name of the filesystem of statfs f_type when submit refuses it
 * ("NFS", "FUSE", "proc", ...), or NULL when it takes its files.
 */
const char *submit_file_refused_fs(unsigned long f_type);

/* Whether fd is a memfd sealed as submit_file_seal leaves it (write, grow, shrink, seal). */
int submit_file_check_sealed(int fd);

#endif /* COLOC_DAEMON_SUBMIT_FILES_H */
