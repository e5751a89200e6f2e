// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The simulator's own PRNG, so a seed gives the same arrivals on every
 * machine and libc: xoshiro256** (Blackman and Vigna), its state filled
 * from the seed by splitmix64 as its authors recommend.
 */
#include <math.h>
#include "sim.h"

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

void sim_rng_seed(struct sim_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

uint64_t sim_rng_next(struct sim_rng *r)
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

double sim_rng_uniform(struct sim_rng *r)
{
	/* the top 53 bits, shifted into (0, 1] */
	return ((sim_rng_next(r) >> 11) + 1) * 0x1.0p-53;
}

double sim_rng_exp(struct sim_rng *r)
{
	return -log(sim_rng_uniform(r));
}
