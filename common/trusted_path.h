/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The one rule root's tools (coloc-profile, coloc-run, coloc-import) apply
 * to each file of a model they open by a path someone gave them: the file
 * is this process's own (file_own_check()), its directory is root's or the
 * euid's and writable by no group or other, and so is every directory above
 * it up to "/" but that one above may be a sticky directory others write
 * (/tmp: no one else can rename or remove our entry in it). Then no other
 * user can have written the file, or put another in its place.
 * docs/security-submit.md, "One rule".
 */
#ifndef COLOC_COMMON_TRUSTED_PATH_H
#define COLOC_COMMON_TRUSTED_PATH_H

#include <stddef.h>

/* What follows a refusal, in every tool's message. */
#define TRUSTED_PATH_ADVICE                                                         \
	"as root, only files no other user can write or swap are read or written: " \
	"copy them below directories only root may write (--allow-foreign-owner "   \
	"goes on anyway)"

/*
 * fd, opened from path (relative to at_fd, or AT_FDCWD), checked as above;
 * path is looked at only to find the directory that holds fd's file (the
 * file must be the entry there). 0, or -errno with why a phrase naming
 * what failed ("is owned by uid 1001, not 0", "lies in /tmp, which others
 * may write (mode 1777)").
 */
int trusted_path_check(int at_fd, const char *path, int fd, char *why, size_t len);
/* The directories' part alone, from dir_fd (a directory) up to "/". */
int trusted_dir_check(int dir_fd, char *why, size_t len);

#endif /* COLOC_COMMON_TRUSTED_PATH_H */
