/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * ONNX models written by hand (onnx_by_hand.c), for submit_test.c's
 * external data cases: each is written to dir (its path in path), 0 or
 * -EIO.
 */
#ifndef COLOC_TESTS_ONNX_BY_HAND_H
#define COLOC_TESTS_ONNX_BY_HAND_H

#include <stddef.h>
#include <stdint.h>

/*
 * dir/gather.onnx: y = x + Gather(d, i), d a float [1], i an INT32 [1]
 * kept in external file loc. Folding the Gather reads i; any value but 0
 * is out of range.
 */
int onnx_by_hand_gather(const char *dir, const char *loc, char *path, size_t len);
/* dir/huge.onnx: y = Relu(x), and nr INT8 initializers of n elements each, all at offset 0 of loc. */
int onnx_by_hand_huge(const char *dir, const char *loc, int nr, int64_t n, char *path, size_t len);

#endif /* COLOC_TESTS_ONNX_BY_HAND_H */
