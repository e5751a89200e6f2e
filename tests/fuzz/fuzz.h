/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the libFuzzer targets in tests/fuzz/ share: the check every refusal
 * passes (a negative errno and a message saying why) and a way to hand a
 * reader that takes a path the fuzzer's bytes without a file on disk.
 */
#ifndef COLOC_TESTS_FUZZ_H
#define COLOC_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include "error.h"

/* A parser's refusal: ret < 0, err holds the same code and a message; aborts if not. */
void fuzz_check_refusal(const char *target, int ret, const struct coloc_err *err);

/*
 * The bytes in a memfd, opened again by path: *path is "/proc/self/fd/N".
 * Returns the fd (close it after use); aborts on failure.
 */
int fuzz_memfd(const uint8_t *data, size_t size, char *path, size_t path_len);

#endif /* COLOC_TESTS_FUZZ_H */
