// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The one PRNG of coloc's tools (the simulator's arrivals, coloc-load's
 * arrivals and inputs): xoshiro256** seeded by splitmix64, Vigna's
 * public-domain generators, so a seed gives the same stream on every machine
 * and libc (rand() and random() do not).
 */
#include <math.h>
#include "rng.h"

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void coloc_rng_seed(struct coloc_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

uint64_t coloc_rng_next(struct coloc_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double coloc_rng_uniform(struct coloc_rng *r)
{
	/* the top 53 bits, shifted into (0, 1] */
	return ((coloc_rng_next(r) >> 11) + 1) * 0x1.0p-53;
}

double coloc_rng_exp(struct coloc_rng *r)
{
	return -log(coloc_rng_uniform(r));
}
