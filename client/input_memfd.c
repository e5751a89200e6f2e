// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The memfd an infer's input goes to colocd in (include/coloc/client.h):
 * sealed against shrinking and growing, written through a mapping and
 * reused.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include "coloc/client.h"

int coloc_client_input_memfd(size_t len, void **map)
{
	int fd = memfd_create("coloc-input", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	void *m;

	*map = NULL;
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)(len ? len : 1)) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	m = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	*map = m;
	return fd;
}
