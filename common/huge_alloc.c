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
	size_t len;
	void *p;

	if (bytes < huge)
		return malloc(bytes ? bytes : 1);
	if (bytes > SIZE_MAX - huge)
		return NULL;
	len = (bytes + huge - 1) / huge * huge;
	p = aligned_alloc(huge, len);
	if (p)
		(void)madvise(p, len, MADV_HUGEPAGE);
	return p;
}
