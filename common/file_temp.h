/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A new file beside PATH that will be renamed over it: an unpredictable
 * name, created with O_EXCL (so never through a link someone planted).
 */
#ifndef COLOC_COMMON_FILE_TEMP_H
#define COLOC_COMMON_FILE_TEMP_H

#include <stddef.h>

/*
 * Creates PATH.tmp.PID.RANDOM for writing (mode 0666 less the umask, as
 * fopen would), its name in tmp: the descriptor, or -errno.
 */
int file_temp_beside(const char *path, char *tmp, size_t len);

#endif /* COLOC_COMMON_FILE_TEMP_H */
