/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The clock every part of coloc times with: CLOCK_MONOTONIC in
 * nanoseconds, the clock BPF's bpf_ktime_get_ns() reads too, so that
 * times taken here and in bpf/ compare.
 */
#ifndef COLOC_COMMON_MONO_CLOCK_H
#define COLOC_COMMON_MONO_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t coloc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif /* COLOC_COMMON_MONO_CLOCK_H */
