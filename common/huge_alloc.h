/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Buffers of many megabytes that are filled once and read whole (a model's
 * file, its decoded constants), backed by transparent huge pages where the
 * kernel offers them on request (THP "madvise" mode): a 440 MB model then
 * faults in 2 MiB at a time instead of 4 KiB (docs/measurements/ci.md).
 * Freed with free(); the memory is the allocator's (ASan sees it).
 */
#ifndef COLOC_COMMON_HUGE_ALLOC_H
#define COLOC_COMMON_HUGE_ALLOC_H

#include <stddef.h>

/* From this size on huge_alloc() asks for huge pages; below, it is malloc(). */
#define HUGE_ALLOC_MIN_BYTES (2u << 20)

/*
 * bytes (at least 1) of uninitialised memory, or NULL: at or above
 * HUGE_ALLOC_MIN_BYTES aligned to 2 MiB, and its whole 2 MiB pages advised
 * MADV_HUGEPAGE before anything touches them (the tail past the last whole
 * one, and all of it where the kernel refuses the advice, is ordinary
 * memory). Exactly bytes long: ASan reports an access past the end.
 */
void *huge_alloc(size_t bytes);

#endif /* COLOC_COMMON_HUGE_ALLOC_H */
