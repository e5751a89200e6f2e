/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * How the command-line tools (coloc-profile, coloc-run, coloc-import, often
 * as root) open a model file and its ONNX external data by path without
 * acting on what someone else swaps in: the model's directory is opened
 * once, the model file once below it (its bytes are then read, hashed and
 * parsed from that one descriptor), and each external data file below that
 * directory through no symbolic link, without blocking, and only when it is
 * a regular file (docs/security-submit.md, "Root's tools on a member's files").
 */
#ifndef COLOC_MODEL_FILE_H
#define COLOC_MODEL_FILE_H

#include <stdbool.h>
#include <sys/stat.h>

#include "error.h"

struct model_file {
	int dir_fd; /* the directory the path names the model in (O_PATH) */
	int fd; /* the model file, opened once, read-only */
	struct stat dir_st, st;
};

/*
 * Opens path's directory and then path's last component below it (a FIFO,
 * device or directory refused with words that say what it is). As root no
 * symbolic link is followed anywhere on path (openat2 RESOLVE_NO_SYMLINKS,
 * or one component at a time): -ELOOP, the message asking for the real
 * path. 0, or a negative errno with the reason in err; close with
 * model_file_close(). With owner_rule the file must pass
 * trusted_path_check() (-EACCES, the message naming the file, what failed
 * and the opt-out).
 */
int model_file_open(const char *path, bool owner_rule, struct model_file *mf,
		    struct coloc_err *err);
/*
 * Opens path for writing (created 0644, truncated), as model_file_open()
 * opens a model: as root through no link; with owner_rule only in a
 * directory that passes trusted_dir_check() and only a file of the euid's
 * own of one name, checked before it is created or truncated. The fd, or
 * a negative errno with the reason in err.
 */
int model_file_create(const char *path, bool owner_rule, struct coloc_err *err);
void model_file_close(struct model_file *mf);

/*
 * Opens the external data file at loc (relative, no "..") below dir_fd for
 * reading: openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, or one component
 * at a time with O_NOFOLLOW where the kernel has no openat2; O_NONBLOCK, so
 * a FIFO does not hang the caller. The fd of a regular file, or a negative
 * errno with *what a phrase for the message ("is a symbolic link or lies
 * under one", "is a FIFO", ...).
 */
int model_external_open(int dir_fd, const char *loc, const char **what);
/* The same below the directory of the file name names (opened for this call only). */
int model_external_open_beside(const char *name, const char *loc, const char **what);
/* The same with the openat2 path skipped (the fallback, for its test). */
int model_external_open_nofollow(int dir_fd, const char *loc, const char **what);
/*
 * dir (O_PATH) from "/" or the working directory one component at a time
 * with O_NOFOLLOW, ".." allowed: root's way to a model's directory where
 * the kernel has no openat2 (model_file_open()). The fd, or -ELOOP for a
 * link on the way, or another negative errno.
 */
int model_dir_open_nofollow(const char *dir);

#endif /* COLOC_MODEL_FILE_H */
