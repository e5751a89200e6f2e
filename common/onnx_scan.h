/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The external data locations an ONNX file names, found by a scan of its
 * protobuf wire format (no schema, no allocation): the client opens those
 * files itself, with its user's permissions, and hands them to colocd.
 */
#ifndef COLOC_CLIENT_ONNX_SCAN_H
#define COLOC_CLIENT_ONNX_SCAN_H

#include <stddef.h>
#include <stdint.h>

#define ONNX_SCAN_LOCATION_LEN 256

/*
 * Every distinct "location" of a tensor's external_data in the model in
 * buf (initializers, sparse initializers, Constant and other node
 * attributes, subgraphs), in order of first appearance, into locs (at most
 * max). Returns how many, -E2BIG when more than max, -EINVAL when buf is
 * not a protobuf ModelProto (or a location is ONNX_SCAN_LOCATION_LEN bytes
 * or longer).
 */
int onnx_scan_locations(const void *buf, size_t len, char (*locs)[ONNX_SCAN_LOCATION_LEN], int max);

/*
 * The same over the first size bytes of the file fd, read with pread
 * through a bounded window (the file is never mapped): also -ENODATA when
 * the file ends before size (truncated while read), -ENOMEM, or pread's
 * -errno.
 */
int onnx_scan_locations_fd(int fd, uint64_t size, char (*locs)[ONNX_SCAN_LOCATION_LEN], int max);

#endif /* COLOC_CLIENT_ONNX_SCAN_H */
