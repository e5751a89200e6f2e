/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The profile cache key: SHA-256 over every byte a tenant's compute depends
 * on, so that a profile measured on some bytes is never taken for others.
 * colocd computes it over the sealed copies of a submit's files
 * (daemon/submit_copy.c), the tools over the files they parse
 * (model_open.h); both call profile_key_compute() on the same framing:
 *
 *   "coloc-profile-key 1\n", then parts, each
 *   TAG (1 byte) | NAME length (8 bytes, little-endian) | NAME |
 *   DATA length (8 bytes, little-endian) | DATA
 *
 * in this order: 'M' the model file (NAME empty); 'W' the weights file,
 * only when one is given (NAME empty); 'E' each external data file, NAME
 * its ONNX location, by strcmp order of location; 'O' the ONNX import
 * options, only when given (DATA "batch=N;" then each "NAME=VALUE;" by
 * name). Every length is stated before its bytes, so moving bytes from
 * one file to another, or renaming a location, changes the key.
 * docs/security-submit.md ("The profile key").
 */
#ifndef COLOC_PROFILE_KEY_H
#define COLOC_PROFILE_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "error.h"

#define PROFILE_KEY_BYTES 32
#define PROFILE_KEY_HEX_LEN (2 * PROFILE_KEY_BYTES)
/* the first bytes hashed: a new framing gets a new number */
#define PROFILE_KEY_DOMAIN "coloc-profile-key 1\n"

struct profile_key {
	unsigned char b[PROFILE_KEY_BYTES];
};

/* An external data file: its ONNX location and an open descriptor. */
struct profile_key_external {
	const char *location;
	int fd;
};

struct profile_key_input {
	const void *model; /* the model file's bytes, or NULL: read from model_fd */
	size_t model_len;
	int model_fd;
	int weights_fd; /* -1: no weights file */
	const struct profile_key_external *external;
	int nr_external;
	const char *options; /* NULL or "": none */
	/*
	 * NULL, or read (atomically) before each chunk of a file read by
	 * descriptor: once nonzero the key is given up on (-ECANCELED), as a
	 * copy past its deadline is (daemon/submit_copy.h)
	 */
	const int *cancel;
};

/*
 * The key of in's files into *out. Files given by descriptor are read with
 * pread from offset 0 (the offset is not moved) to their fstat size; one
 * that ends sooner or goes on past it changed while read (-EIO). A
 * location given twice is refused (-EINVAL); one set in->cancel stops it
 * (-ECANCELED). 0 or -errno, err saying which file.
 */
int profile_key_compute(const struct profile_key_input *in, struct profile_key *out,
			struct coloc_err *err);

/* The key as 64 lowercase hex digits and a NUL. */
void profile_key_hex(const struct profile_key *k, char out[PROFILE_KEY_HEX_LEN + 1]);
/* Parses 64 lowercase hex digits (nothing else); 0 or -EINVAL. */
int profile_key_parse_hex(const char *s, struct profile_key *k);
bool profile_key_equal(const struct profile_key *a, const struct profile_key *b);

#endif /* COLOC_PROFILE_KEY_H */
