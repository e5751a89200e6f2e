// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What a network client is told of a query that did not end GW_OK
 * (forward.h): a fixed text for its kind and a request id. colocd's own
 * words (a quota, another gateway's use of the uid, a restart) and the
 * gateway's reason go to the gateway's log under the same id, at most
 * FWD_WHY_LOG_PER_S lines a second, so a flood of refusals cannot fill it.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include "forward.h"
#include "mono_clock.h"

#define FWD_WHY_LOG_PER_S 20

static const char *const fwd_client_text[] = {
	[GW_OK] = "answered",
	[GW_TIMEOUT] = "timed out",
	[GW_UNREACHABLE] = "colocd unavailable",
	[GW_STOPPING] = "the gateway is stopping",
	[GW_REJECTED] = "overloaded; retry later",
	[GW_FAILED] = "the query failed",
};

void gw_job_client_why(const struct gw_job *job, char *out, size_t len)
{
	static atomic_ullong last_id;
	static atomic_ullong log_second, logged;
	enum gw_outcome outcome = gw_job_outcome(job);
	const char *detail = job->result ? job->why : job->res.error;
	const char *text = fwd_client_text[outcome];
	unsigned long long id = atomic_fetch_add(&last_id, 1) + 1;
	unsigned long long second = coloc_now_ns() / 1000000000ull;

	/* colocd's "no tenant NAME": the model's tenant is gone (colocd restarted) */
	if (outcome == GW_REJECTED && !strncmp(detail, "no tenant ", 10))
		text = "model not loaded; retry later";
	snprintf(out, len, "%s (request %llu)", text, id);
	if (atomic_exchange(&log_second, second) != second)
		atomic_store(&logged, 0);
	if (atomic_fetch_add(&logged, 1) < FWD_WHY_LOG_PER_S)
		fprintf(stderr, "coloc-gateway: request %llu to %s: %s\n", id,
			job->tenant ? job->tenant : "?", detail);
}
