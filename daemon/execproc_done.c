// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * An executor's completion of the command outstanding (execproc.h): copied
 * once, checked against the command it answers, and its times bounded by
 * colocd's own round trip into the caller's result.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include "execproc_internal.h"
#include "mono_clock.h"

/*
 * Where a completion of the RUN outstanding must say it stopped: the end
 * of its nr_blocks-th block when OK (UINT_MAX, which no last equals, for
 * a count the plan does not have), the command's last otherwise.
 */
static unsigned int run_last(const struct execproc *ep, const struct coloc_shm_done *d)
{
	if (d->status != COLOC_SHM_DONE_OK)
		return d->nr_blocks ? UINT_MAX : ep->last.last;
	if (d->nr_blocks < 1 || d->nr_blocks > ep->plan_nr)
		return UINT_MAX;
	return ep->plan_last[d->nr_blocks - 1];
}

/* A completion that fits the command it answers; false with why filled if not. */
static bool completion_valid(const struct execproc *ep, const struct coloc_shm_done *d, char *why,
			     size_t len)
{
	const struct execproc_block *b = &ep->last;

	if (d->status > COLOC_SHM_DONE_FAILED)
		snprintf(why, len, "completed command %u with status %u, which is none", d->seq,
			 d->status);
	else if (d->error > 0 || d->error < -4095 || (d->status == COLOC_SHM_DONE_OK && d->error))
		snprintf(why, len, "completed command %u with status %u and error %d", d->seq,
			 d->status, d->error);
	else if (!memchr(d->reason, '\0', sizeof(d->reason)))
		snprintf(why, len,
			 "left the reason of completion %u without its end (no NUL in %d "
			 "bytes)",
			 d->seq, COLOC_SHM_REASON_LEN);
	else if (ep->op == COLOC_SHM_OP_RUN && (d->slot != b->slot || d->first != b->first ||
						d->query_id != b->query_id))
		snprintf(why, len,
			 "completed slot %u, layers from %u, query %u; the command was slot %u, "
			 "layers [%u, %u), query %u",
			 d->slot, d->first, d->query_id, b->slot, b->first, b->last, b->query_id);
	else if (ep->op == COLOC_SHM_OP_RUN && d->last != run_last(ep, d))
		snprintf(why, len,
			 "completed layers [%u, %u) in %u blocks (status %u), not where its plan "
			 "of %u blocks [%u, %u) can end",
			 d->first, d->last, d->nr_blocks, d->status, ep->plan_nr, b->first,
			 b->last);
	else
		return true;
	return false;
}

/*
 * The executor's times, bounded by colocd's own round trip (submit to
 * completion seen), which the block ran inside of: an honest report is
 * never changed.
 */
static unsigned long long clamp_ns(unsigned long long t, unsigned long long lo,
				   unsigned long long hi)
{
	return t < lo ? lo : t > hi ? hi : t;
}

/* The executor's stamps, whatever they say, cut [submit, seen] in three ordered parts. */
static void split_round_trip(struct execproc_result *res, unsigned long long submit,
			     unsigned long long seen, unsigned long long started,
			     unsigned long long ended)
{
	started = clamp_ns(started, submit, seen);
	ended = clamp_ns(ended, started, seen);
	res->dispatch_ns = started - submit;
	res->run_ns = ended - started;
	res->notice_ns = seen - ended;
}

/*
 * Each block's time: the executor's where they are all non-zero and add up
 * to block_ns as taken, else block_ns shared evenly (clamped).
 */
static void fill_blocks(const struct execproc *ep, const struct coloc_shm_done *d,
			struct execproc_result *res)
{
	unsigned long long sum = 0;
	bool honest = true;

	res->nr_blocks = ep->op == COLOC_SHM_OP_RUN && d->status == COLOC_SHM_DONE_OK ?
				 d->nr_blocks :
				 0;
	for (unsigned int i = 0; i < res->nr_blocks; i++) {
		res->blocks_ns[i] = d->blocks_ns[i];
		honest &= d->blocks_ns[i] > 0 && d->blocks_ns[i] <= res->block_ns - sum;
		sum += honest ? d->blocks_ns[i] : 0;
	}
	if (honest && sum == res->block_ns)
		return;
	for (unsigned int i = 0; i < res->nr_blocks; i++)
		res->blocks_ns[i] = res->block_ns / res->nr_blocks +
				    (i < res->block_ns % res->nr_blocks);
	res->clamped |= res->nr_blocks > 0;
}

static void fill_result(struct execproc *ep, const struct coloc_shm_done *d,
			struct execproc_result *res)
{
	unsigned long long seen = coloc_now_ns(), rtt = seen - ep->submit_ns;

	res->round_trip_ns = rtt;
	split_round_trip(res, ep->submit_ns, seen, d->started_ns, d->ended_ns);
	res->status = d->status;
	res->error = d->error;
	res->slot = d->slot;
	res->first = d->first;
	res->last = d->last;
	res->query_id = d->query_id;
	res->block_ns = d->block_ns;
	res->switch_ns = d->switch_ns;
	res->clamped = false;
	if (res->block_ns > rtt || (d->status == COLOC_SHM_DONE_OK && !res->block_ns)) {
		res->block_ns = rtt;
		res->clamped = true;
	}
	if (res->switch_ns > res->block_ns) {
		res->switch_ns = res->block_ns;
		res->clamped = true;
	}
	fill_blocks(ep, d, res);
	snprintf(res->reason, sizeof(res->reason), "%s", d->reason);
	execproc_printable(res->reason);
}

/*
 * 1 when the outstanding command has completed (res filled), 0 when it has
 * not yet, or -EPROTO for a completion colocd cannot take: of a command
 * never sent, malformed, or rewritten after colocd took it.
 */
int execproc_take_completion(struct execproc *ep, struct execproc_result *res,
			     struct coloc_err *err)
{
	struct coloc_shm_done *sd = &ep->shm->done, d;
	__u32 seq = __atomic_load_n(&sd->seq, __ATOMIC_ACQUIRE);
	__u32 started = __atomic_load_n(&sd->started_seq, __ATOMIC_ACQUIRE);
	char why[COLOC_ERR_MSG_MAX / 4];

	if (!ep->outstanding) {
		if (seq != ep->seq || started != ep->seq)
			return execproc_give_up(ep, err,
						"wrote completion %u (started %u) with no command "
						"outstanding (the last sent is %u)",
						seq, started, ep->seq);
		memcpy(&d, sd, sizeof(d));
		if (memcmp(&d, &ep->taken, sizeof(d)))
			return execproc_give_up(ep, err,
						"rewrote its completion of command %u after it "
						"was taken",
						ep->seq);
		return 0;
	}
	if (started != ep->seq && started != ep->seq - 1)
		return execproc_give_up(ep, err,
					"started command %u, never sent (the last sent is %u)",
					started, ep->seq);
	if (seq == ep->seq - 1)
		return 0;
	if (seq != ep->seq)
		return execproc_give_up(ep, err,
					"completed command %u, never sent (the last sent is %u)",
					seq, ep->seq);
	memcpy(&d, sd, sizeof(d));
	d.seq = seq;
	if (!completion_valid(ep, &d, why, sizeof(why)))
		return execproc_give_up(ep, err, "%s", why);
	/* the snapshot is of the shared bytes, seq included, as the idle check reads them */
	memcpy(&ep->taken, &d, sizeof(d));
	ep->outstanding = false;
	if (res)
		fill_result(ep, &d, res);
	return 1;
}
