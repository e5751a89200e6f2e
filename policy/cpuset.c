// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Core sets for the policy: a fixed bitmap of POLICY_MAX_CPUS bits, so a
 * decision carries its cores by value and nothing is allocated to pass them.
 */
#include "policy.h"

#define WORDS (POLICY_MAX_CPUS / 64)

int policy_cpuset_count(const struct policy_cpuset *s)
{
	int n = 0;

	for (int i = 0; i < WORDS; i++)
		n += __builtin_popcountll(s->bits[i]);
	return n;
}

int policy_cpuset_next(const struct policy_cpuset *s, int cpu)
{
	if (cpu < 0)
		cpu = 0;
	for (int i = cpu / 64; i < WORDS; i++) {
		uint64_t w = s->bits[i];

		if (i == cpu / 64)
			w &= ~0ULL << (cpu % 64);
		if (w)
			return i * 64 + __builtin_ctzll(w);
	}
	return -1;
}

bool policy_cpuset_intersects(const struct policy_cpuset *a, const struct policy_cpuset *b)
{
	for (int i = 0; i < WORDS; i++)
		if (a->bits[i] & b->bits[i])
			return true;
	return false;
}

bool policy_cpuset_subset(const struct policy_cpuset *a, const struct policy_cpuset *b)
{
	for (int i = 0; i < WORDS; i++)
		if (a->bits[i] & ~b->bits[i])
			return false;
	return true;
}

void policy_cpuset_or(struct policy_cpuset *dst, const struct policy_cpuset *s)
{
	for (int i = 0; i < WORDS; i++)
		dst->bits[i] |= s->bits[i];
}

void policy_cpuset_and(struct policy_cpuset *dst, const struct policy_cpuset *s)
{
	for (int i = 0; i < WORDS; i++)
		dst->bits[i] &= s->bits[i];
}

void policy_cpuset_andnot(struct policy_cpuset *dst, const struct policy_cpuset *s)
{
	for (int i = 0; i < WORDS; i++)
		dst->bits[i] &= ~s->bits[i];
}
