// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Waiting on a condition (declared in testutil.h): a test waits for what
 * it needs to see, not for a time an idle machine needs, up to a deadline
 * on the monotonic clock far past either, so that a loaded machine makes
 * it slower, not wrong.
 */
#include <unistd.h>
#include "testutil.h"

bool tu_wait_for(bool (*done)(void *ctx), void *ctx, unsigned int timeout_ms, unsigned int poll_us)
{
	__u64 end = coloc_now_ns() + (__u64)timeout_ms * 1000000ull;

	for (;;) {
		if (done(ctx))
			return true;
		if (coloc_now_ns() >= end)
			return false;
		usleep(poll_us);
	}
}
