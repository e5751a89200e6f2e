/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * SHA-256 (FIPS 180-4) in portable C, for the profile cache key
 * (executor/profile_key.c): no crypto library is a dependency, and the
 * kernel's AF_ALG is neither built into every kernel nor allowed by
 * colocd's unit (RestrictAddressFamilies=AF_UNIX). Checked against the
 * FIPS 180-2 test vectors (tests/profile_key_test.c).
 */
#ifndef COLOC_COMMON_SHA256_H
#define COLOC_COMMON_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_BYTES 32

struct sha256 {
	uint32_t h[8];
	uint64_t bytes; /* hashed so far */
	unsigned char block[64];
	size_t used; /* bytes of block filled */
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
/* The digest of everything updated since sha256_init; s must be initialised again to reuse. */
void sha256_final(struct sha256 *s, unsigned char out[SHA256_BYTES]);

#endif /* COLOC_COMMON_SHA256_H */
