// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * huge_alloc(): large buffers on transparent huge pages where the kernel
 * gives them (huge_alloc.h).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "huge_alloc.h"

void *huge_alloc(size_t bytes)
{
	const size_t huge = HUGE_ALLOC_MIN_BYTES;
	void *p;

	if (bytes < huge)
		return malloc(bytes ? bytes : 1);
	if (bytes > PTRDIFF_MAX) /* as malloc refuses it, without ASan's abort on the way */
		return NULL;
	/* the exact size, so that ASan still sees a byte past the end */
	if (posix_memalign(&p, huge, bytes))
		return NULL;
	(void)madvise(p, bytes / huge * huge, MADV_HUGEPAGE);
	return p;
}
