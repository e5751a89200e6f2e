// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The memfds an infer's input goes to colocd in (include/coloc/client.h):
 * one written through a mapping and reused, and one frozen once written,
 * which colocd hands to the tenant's executor to map instead of reading it
 * itself (docs/design/serving-path.md).
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

int coloc_client_input_memfd_frozen(const void *input, size_t len)
{
	int fd = memfd_create("coloc-input", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t done = 0;

	if (fd < 0)
		return -errno;
	while (done < len) {
		ssize_t n = pwrite(fd, (const char *)input + done, len - done, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int ret = n < 0 ? -errno : -EIO;

			close(fd);
			return ret;
		}
		done += (size_t)n;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	return fd;
}
