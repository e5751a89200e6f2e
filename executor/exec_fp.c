// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Denormal floats flushed to zero (FTZ) and read as zero (DAZ) on every
 * thread that runs a block: without it a member's input of denormals made
 * MobileNet-V2's fp32 kernels take microcode assists through the network,
 * 4.5x its profile (docs/security-executor.md). The mode is per thread and
 * a new thread starts with its creator's, so libgomp's pool and a lane's
 * threads made after it inherit it.
 */
#include <pmmintrin.h>
#include <xmmintrin.h>
#include "exec_internal.h"

void exec_fp_flush_denormals(void)
{
	_MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
	_MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
}
