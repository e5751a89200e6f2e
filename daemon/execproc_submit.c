// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The commands colocd sends an executor (execproc.h): a block or a plan of
 * blocks checked and written into the shared command, a NOP or an EXIT,
 * each rung on the futex doorbell, the doorbell rung early for the next
 * one, and the yield asked of a plan running.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "execproc_internal.h"
#include "mono_clock.h"

/* The command's seq is colocd's own count: the executor can rewrite the shared one. */
static void ring(struct execproc *ep, __u32 op)
{
	struct coloc_shm_cmd *c = &ep->shm->cmd;

	ep->outstanding = true;
	ep->yield_asked = false;
	ep->op = op;
	ep->submit_ns = coloc_now_ns();
	ep->seq++;
	__atomic_store_n(&c->seq, ep->seq, __ATOMIC_RELEASE);
	/*
	 * shared (not FUTEX_PRIVATE): the waiters are another process, its
	 * command thread and its OpenMP team (exec_team_wait), all woken at once
	 */
	syscall(SYS_futex, &c->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

int execproc_can_submit(const struct execproc *ep, struct coloc_err *err)
{
	if (ep->dead || ep->given_up)
		return coloc_err_set(err, ep->dead_err, "%s", ep->dead_msg);
	if (!ep->ready)
		return coloc_err_set(err, -EBUSY, "tenant %s: its executor is still loading",
				     ep->tenant);
	if (ep->outstanding)
		return coloc_err_set(err, -EBUSY,
				     "tenant %s: its executor is still running the previous block",
				     ep->tenant);
	return 0;
}

/* b's plan (or its one block) into ep->plan_last; -EINVAL if its blocks do not cut [first, last). */
static int take_plan(struct execproc *ep, const struct execproc_block *b, struct coloc_err *err)
{
	unsigned int prev = b->first;

	if (!b->nr_blocks || !b->block_last) {
		ep->plan_last[0] = b->last;
		ep->plan_cores[0] = (unsigned int)b->nr_cpus;
		ep->plan_nr = 1;
		return 0;
	}
	if (b->nr_blocks < 0 || b->nr_blocks > COLOC_SHM_MAX_PLAN_BLOCKS)
		return coloc_err_set(err, -EINVAL, "a plan of %d blocks (1..%d)", b->nr_blocks,
				     COLOC_SHM_MAX_PLAN_BLOCKS);
	for (int i = 0; i < b->nr_blocks; i++) {
		if (b->block_last[i] <= prev || b->block_last[i] > b->last ||
		    (i == b->nr_blocks - 1 && b->block_last[i] != b->last))
			return coloc_err_set(err, -EINVAL,
					     "block %d of the plan ends at layer %u: its blocks "
					     "must follow each other from %u to %u",
					     i, b->block_last[i], b->first, b->last);
		ep->plan_last[i] = prev = b->block_last[i];
		ep->plan_cores[i] = b->block_cores ? (unsigned int)b->block_cores[i] :
						     (unsigned int)b->nr_cpus;
		if (ep->plan_cores[i] < 1 || ep->plan_cores[i] > (unsigned int)b->nr_cpus)
			return coloc_err_set(err, -EINVAL,
					     "block %d of the plan wants %u of its %d cores", i,
					     ep->plan_cores[i], b->nr_cpus);
	}
	ep->plan_nr = (unsigned int)b->nr_blocks;
	return 0;
}

int execproc_submit_block(struct execproc *ep, const struct execproc_block *b,
			  struct coloc_err *err)
{
	struct coloc_shm_cmd *c = &ep->shm->cmd;
	int ret = execproc_can_submit(ep, err);

	if (ret)
		return ret;
	if (b->slot >= COLOC_SHM_NR_SLOTS)
		return coloc_err_set(err, -EINVAL, "query slot %u out of range (0..%d)", b->slot,
				     COLOC_SHM_NR_SLOTS - 1);
	if (b->last > b->first && b->last - b->first > COLOC_SHM_MAX_BLOCK_LAYERS)
		return coloc_err_set(err, -EINVAL,
				     "a block of %u layers is longer than one command carries (%d)",
				     b->last - b->first, COLOC_SHM_MAX_BLOCK_LAYERS);
	if (b->nr_cpus < 0 || (b->nr_cpus && !b->cpus))
		return coloc_err_set(err, -EINVAL, "bad core list");
	ret = take_plan(ep, b, err);
	if (ret)
		return ret;
	memset(c->cpus, 0, sizeof(c->cpus));
	for (int i = 0; i < b->nr_cpus; i++) {
		if (b->cpus[i] < 0 || b->cpus[i] >= COLOC_MAX_CPUS)
			return coloc_err_set(err, -EINVAL, "cpu %d out of range (0..%d)",
					     b->cpus[i], COLOC_MAX_CPUS - 1);
		c->cpus[b->cpus[i] / 64] |= 1ull << (b->cpus[i] % 64);
	}
	for (unsigned int i = 0; b->last > b->first && i < b->last - b->first; i++) {
		int v = b->versions ? b->versions[i] : 0;

		if (v < 0 || v > 255)
			return coloc_err_set(err, -EINVAL, "version %d of layer %u out of range", v,
					     b->first + i);
		c->versions[i] = (__u8)v;
	}
	c->op = COLOC_SHM_OP_RUN;
	c->slot = b->slot;
	c->first = b->first;
	c->last = b->last;
	c->query_id = b->query_id;
	c->flags = b->shared ? COLOC_SHM_RUN_SHARED : 0;
	if (b->input_memfd) {
		if (b->first || ep->input_sock < 0)
			return coloc_err_set(err, -EINVAL,
					     "an input memfd goes with a query's first block only");
		ret = execproc_send_input(ep, *b->input_memfd, err);
		if (ret)
			return ret;
		c->flags |= COLOC_SHM_RUN_INPUT_FD;
	}
	c->nr_blocks = ep->plan_nr;
	memcpy(c->block_last, ep->plan_last, ep->plan_nr * sizeof(*c->block_last));
	memcpy(c->block_cores, ep->plan_cores, ep->plan_nr * sizeof(*c->block_cores));
	ep->last = *b;
	ep->last.block_last = NULL; /* the caller's: ours is plan_last */
	ring(ep, COLOC_SHM_OP_RUN);
	return 0;
}

void execproc_ring_bare(struct execproc *ep, __u32 op)
{
	ep->shm->cmd.op = op;
	ep->last = (struct execproc_block){ 0 };
	ep->plan_nr = 0;
	ring(ep, op);
}

int execproc_submit_nop(struct execproc *ep, struct coloc_err *err)
{
	int ret = execproc_can_submit(ep, err);

	if (ret)
		return ret;
	execproc_ring_bare(ep, COLOC_SHM_OP_NOP);
	return 0;
}

bool execproc_ring_early(struct execproc *ep, const int *cpus, int nr)
{
	struct coloc_shm_ready *r = &ep->shm->ready;
	struct coloc_err err = { 0 };
	__u32 bits = 0;

	if (nr <= 0 || execproc_can_submit(ep, &err) || ep->early_seq == ep->seq + 1)
		return false;
	memset(r->cpus, 0, sizeof(r->cpus));
	for (int i = 0; i < nr; i++) {
		if (cpus[i] < 0 || cpus[i] >= COLOC_MAX_CPUS)
			return false;
		r->cpus[cpus[i] / 64] |= 1ull << (cpus[i] % 64);
		bits |= 1u << (cpus[i] % 32);
	}
	ep->early_seq = ep->seq + 1;
	__atomic_store_n(&r->seq, ep->early_seq, __ATOMIC_RELEASE);
	/* only the threads waiting with one of these bits: no other core wakes */
	syscall(SYS_futex, &ep->shm->cmd.seq, FUTEX_WAKE_BITSET, INT_MAX, NULL, NULL, bits);
	return true;
}

bool execproc_yield(struct execproc *ep)
{
	if (!ep->outstanding || ep->op != COLOC_SHM_OP_RUN || ep->plan_nr < 2 || ep->yield_asked)
		return false;
	ep->yield_asked = true;
	/* no wake: the executor is running, and reads it at its next boundary */
	__atomic_store_n(&ep->shm->yield.seq, ep->seq, __ATOMIC_RELEASE);
	return true;
}
