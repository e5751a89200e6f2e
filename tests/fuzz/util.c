// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Helpers of the libFuzzer targets (fuzz.h): the refusal check and the
 * memfd that stands in for a file.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "fuzz.h"

void fuzz_check_refusal(const char *target, int ret, const struct coloc_err *err)
{
	if (ret < 0 && err->code == ret && err->msg[0] &&
	    memchr(err->msg, 0, sizeof(err->msg)))
		return;
	fprintf(stderr, "%s: a refusal without its reason: ret %d, err code %d, message '%.*s'\n",
		target, ret, err->code, (int)sizeof(err->msg), err->msg);
	abort();
}

int fuzz_memfd(const uint8_t *data, size_t size, char *path, size_t path_len)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	size_t done = 0;

	if (fd < 0) {
		perror("memfd_create");
		abort();
	}
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);

		if (n <= 0) {
			perror("write to memfd");
			abort();
		}
		done += (size_t)n;
	}
	snprintf(path, path_len, "/proc/self/fd/%d", fd);
	return fd;
}
