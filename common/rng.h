/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The one PRNG of coloc's tools: xoshiro256** seeded through splitmix64. */
#ifndef COLOC_COMMON_RNG_H
#define COLOC_COMMON_RNG_H

#include <stdint.h>

struct coloc_rng {
	uint64_t s[4];
};

void coloc_rng_seed(struct coloc_rng *r, uint64_t seed);
uint64_t coloc_rng_next(struct coloc_rng *r);
/* Uniform in (0, 1]: never 0, so -log() is finite. */
double coloc_rng_uniform(struct coloc_rng *r);
/* Exponential with mean 1. */
double coloc_rng_exp(struct coloc_rng *r);

#endif /* COLOC_COMMON_RNG_H */
