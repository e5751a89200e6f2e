/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The shared memory between colocd and one lane of a tenant's executor
 * process (bin/coloc-executor). colocd creates it (a memfd whose size is
 * sealed), and the executor gets it as an inherited file descriptor; no
 * other process maps it, so one tenant's tensors are invisible to the
 * others. A process serving several lanes (docs/design/lanes.md) gets one
 * such memory and one doorbell pipe per lane, each served by a thread of
 * its own over the process's one copy of the model exactly as below; the
 * lanes share the process's fate (a failure is every lane's: each header
 * says FAILED) and an EXIT command on any lane ends them all.
 *
 * Layout, all little-endian and naturally aligned (offsets from the start):
 *
 *   0                      struct coloc_shm_header   who, sizes, state
 *   64-aligned             struct coloc_shm_cmd      colocd -> executor
 *   64-aligned             struct coloc_shm_done     executor -> colocd
 *   64-aligned             struct coloc_shm_yield    colocd -> executor, mid-command
 *   64-aligned             struct coloc_shm_summary  executor -> colocd, once
 *   data_offset (page)     COLOC_SHM_NR_SLOTS query slots, each
 *                            slot_in_capacity bytes of input, then
 *                            slot_out_capacity bytes of output
 *
 * One command is in flight at a time per lane: a lane runs one block at a
 * time (its cores are the block's). A RUN command may carry a plan of several
 * of the policy's blocks on the same cores (colocd's plan ahead,
 * docs/design/serving-path.md): the executor runs them one after the
 * other without a round trip, and at each boundary between two of them
 * reads the yield word; colocd sets it when an event may change the plan
 * (a query arrives, a tenant comes or goes), and the executor then
 * completes at that boundary, done.last saying where. Queries in flight are up to
 * COLOC_SHM_NR_SLOTS: a query lives in a slot from its first block to its
 * last, its intermediate activations staying inside the executor between
 * blocks; only its input and its output cross this memory.
 *
 * Doorbells (sequence numbers, never busy-waiting):
 * - colocd -> executor: colocd writes the command, then stores cmd.seq + 1
 *   with release order and FUTEX_WAKEs cmd.seq. The idle executor sleeps in
 *   FUTEX_WAIT on cmd.seq (no spinning, so an idle executor holds no core).
 * - colocd -> executor, early (struct coloc_shm_ready): as a query comes to
 *   an idle machine, before its round, colocd may say that the next
 *   command is near and on which cores, so that the threads there wake
 *   while colocd decides; they spin on cmd.seq, bounded, then sleep again.
 * - executor -> colocd: the executor writes the completion, stores
 *   done.seq = cmd.seq with release order, then writes to the write end of
 *   a pipe inherited from colocd (any bytes: colocd only drains them). A
 *   pipe rather than a futex on this side because colocd's waiter is its
 *   event loop, which must also watch the executor's pidfd and its sockets,
 *   and a futex cannot be polled; a pipe rather than an eventfd because
 *   its two ends are two open files: colocd holds only the read end (its
 *   O_NONBLOCK out of the executor's reach), the executor only the write
 *   end. The pipe is also written once when header.described turns 1 and
 *   once when the header's state leaves COLOC_SHM_STARTING.
 *
 * colocd trusts none of what the executor writes (docs/security-executor.md):
 * it keeps its own copy of the layout and of cmd.seq, takes a completion
 * only for the command outstanding, checks each field against the command,
 * bounds the reported times by its own round trip, and gives up an executor
 * that completes a command never sent, stops a plan anywhere but at one of
 * its block boundaries, rewrites a completion or the header
 * after ready, writes a status out of range or a reason without its NUL,
 * or describes its model with a summary, or its kernel versions with a
 * list, that fails colocd's checks.
 */
#ifndef COLOC_SHM_H
#define COLOC_SHM_H

#include <linux/types.h>
#include "coloc/limits.h"

#define COLOC_SHM_MAGIC 0x314d48534f4c4f43ull /* "COLOSHM1" in memory */
/*
 * 2: cmd.flags; 3: done.started_ns, done.ended_ns; 4: header.described, the
 * summary; 5: plans of blocks (cmd.nr_blocks, cmd.block_last, done.nr_blocks,
 * done.blocks_ns, the yield word); 6: the versions built; 7:
 * COLOC_SHM_RUN_INPUT_FD and the input socket
 */
/* 8: struct coloc_shm_ready, the team's FUTEX_WAIT_BITSET */
#define COLOC_SHM_LAYOUT_VERSION 8
#define COLOC_SHM_NR_SLOTS 4
/* Longest block one command can carry (a block of a longer model is split). */
#define COLOC_SHM_MAX_BLOCK_LAYERS 4096
/* Most of the policy's blocks one RUN command can carry (a longer plan takes several). */
#define COLOC_SHM_MAX_PLAN_BLOCKS 256
#define COLOC_SHM_CPU_WORDS (COLOC_MAX_CPUS / 64)
#define COLOC_SHM_REASON_LEN 192
#define COLOC_SHM_NAME_LEN 64
/* Most layers a model may have: its summary holds each one's MACs. */
#define COLOC_SHM_MAX_LAYERS 8192
/* Most kernel versions a layer has (the executor's EXEC_MAX_VERSIONS). */
#define COLOC_SHM_MAX_LAYER_VERSIONS 6
/* Most distinct version names one model's layers have, and their length with the NUL. */
#define COLOC_SHM_MAX_VERSION_NAMES 64
#define COLOC_SHM_VERSION_NAME_LEN 48
/*
 * The OpenMP spin count (GOMP_SPINCOUNT) of the clean environment colocd
 * starts an executor in, and the one coloc-profile measures under, so that
 * a profile's layers wait between their parallel regions as a served
 * block's do (docs/design/serving-path.md).
 */
#define COLOC_EXECUTOR_GOMP_SPINCOUNT "3000"

/* header.state, written by the executor only. */
enum coloc_shm_state {
	COLOC_SHM_STARTING = 0, /* loading the model, not serving yet */
	COLOC_SHM_READY = 1, /* serving commands; the model fields are valid */
	COLOC_SHM_FAILED = 2, /* gave up (header.error, header.reason say why) and exits */
};

/* cmd.op */
enum coloc_shm_op {
	COLOC_SHM_OP_RUN = 1, /* run layers [first, last) of the query in slot */
	COLOC_SHM_OP_NOP = 2, /* complete at once: the bare round trip (benchmarks, probes) */
	COLOC_SHM_OP_EXIT = 3, /* complete, then exit 0 (the process: every lane ends) */
};

/* cmd.flags of a RUN command */
enum coloc_shm_run_flags {
	/*
	 * The block's cores are shared with other tenants' blocks (colocd's
	 * os policy): every team thread may run on any of them and the kernel
	 * places the threads, as it does for an unmodified oneDNN program,
	 * instead of team thread i alone on the i-th core.
	 */
	COLOC_SHM_RUN_SHARED = 1u << 0,
	/*
	 * A query's first block only: its input is not in the slot but in a
	 * client's memfd, whose descriptor colocd sent on the lane's input
	 * socket before ringing (struct coloc_shm_input_msg, the command's seq
	 * in it). colocd sends only a memfd sealed against every change
	 * (F_SEAL_SHRINK, GROW, WRITE and SEAL) that holds exactly the input
	 * from offset 0: the executor sees the bytes it would have found in
	 * the slot, and they can never change (docs/design/serving-path.md).
	 */
	COLOC_SHM_RUN_INPUT_FD = 1u << 1,
};

/* done.status */
enum coloc_shm_status {
	COLOC_SHM_DONE_OK = 0,
	COLOC_SHM_DONE_REFUSED = 1, /* malformed command, nothing ran; the executor keeps serving */
	COLOC_SHM_DONE_FAILED = 2, /* the block failed while running; the slot's query is void */
};

struct coloc_shm_header {
	/* written by colocd before the executor starts, constant afterwards */
	__u64 magic; /* COLOC_SHM_MAGIC */
	__u32 layout_version; /* COLOC_SHM_LAYOUT_VERSION */
	__u32 nr_slots; /* COLOC_SHM_NR_SLOTS */
	__u64 total_bytes; /* size of the whole mapping (the memfd's sealed size) */
	__u64 data_offset; /* where slot 0's input starts; page aligned */
	__u64 slot_in_capacity; /* bytes reserved for one slot's input (page multiple) */
	__u64 slot_out_capacity; /* bytes reserved for one slot's output (page multiple) */
	char tenant[COLOC_SHM_NAME_LEN]; /* NUL-terminated, for messages */

	/* written by the executor, before it sets state (release order) */
	__s32 executor_pid; /* its tgid, as getpid() returns it */
	__u32 state; /* enum coloc_shm_state */
	/*
	 * 1 once the summary below is written (stored with release order after
	 * it, then the doorbell rung); never changed again. Written while
	 * STARTING, right after the model's import, before its kernels are
	 * built: colocd admits the tenant from it (docs/security-submit.md).
	 */
	__u32 described;
	__u32 reserved0;
	__u32 nr_layers; /* of the loaded model */
	__u32 nr_inputs; /* input layers */
	__u32 nr_outputs; /* layers no later layer reads */
	__u32 reserved;
	/*
	 * One query's input: the model's input layers, in layer order, each
	 * dense fp32 in logical order (embedding inputs: token ids as floats).
	 * Its output: the same for the layers no later layer reads (the
	 * model's results, e.g. SSD's box and class heads), in layer order.
	 */
	__u64 in_bytes;
	__u64 out_bytes;
	__s32 error; /* negative errno when state is COLOC_SHM_FAILED */
	char reason[COLOC_SHM_REASON_LEN]; /* why, NUL-terminated */
};

struct coloc_shm_cmd {
	/*
	 * The doorbell and futex word: colocd writes every other field, then
	 * stores seq + 1 (release). The executor takes a command when seq
	 * differs from the last one it completed.
	 */
	__u32 seq;
	__u32 op; /* enum coloc_shm_op */
	__u32 slot; /* query slot, < nr_slots */
	/*
	 * Layers [first, last). first == 0 starts the slot's query: the
	 * executor reads its input from the slot. Otherwise first must be
	 * where the same query's last block ended (else the command is
	 * refused: the executor keeps a layer's output only while a later
	 * layer reads it). last == nr_layers ends it: the executor writes
	 * its output into the slot before completing.
	 */
	__u32 first;
	__u32 last;
	__u32 query_id; /* colocd's id for the query, echoed in the completion */
	__u32 flags; /* enum coloc_shm_run_flags; unknown bits are refused */
	/*
	 * RUN: the blocks [first, last) is cut into, 1 .. COLOC_SHM_MAX_PLAN_BLOCKS:
	 * block i is [i ? block_last[i - 1] : first, block_last[i]), each
	 * non-empty, and block_last[nr_blocks - 1] == last (else refused).
	 * Block i runs on the first block_cores[i] of cpus (1 .. all of them,
	 * in increasing CPU order; the plan holds them all). The executor runs
	 * the blocks in order; before each but the first it reads the yield word.
	 */
	__u32 nr_blocks;
	__u32 block_last[COLOC_SHM_MAX_PLAN_BLOCKS];
	__u32 block_cores[COLOC_SHM_MAX_PLAN_BLOCKS];
	/*
	 * The command's cores as a bitmap (bit c of word c / 64: OS CPU id c),
	 * a plan's all its blocks'. Team thread i runs on the i-th set bit, in
	 * increasing CPU order
	 * (without COLOC_SHM_RUN_SHARED). Every core must be one the executor
	 * was started with.
	 */
	__u64 cpus[COLOC_SHM_CPU_WORDS];
	/* versions[i]: kernel version of layer first + i (< the layer's count) */
	__u8 versions[COLOC_SHM_MAX_BLOCK_LAYERS];
} __attribute__((aligned(64)));

struct coloc_shm_done {
	/* the seq of the command being run, stored (release) when it is taken */
	__u32 started_seq;
	/* the seq of the command completed, stored (release) after the fields below */
	__u32 seq;
	__u32 status; /* enum coloc_shm_status */
	__s32 error; /* 0, or the negative errno of a refusal or failure */
	/*
	 * Echoed from the command; but for an OK RUN, last is where it
	 * stopped: the end of its nr_blocks-th block (all of them, or fewer
	 * when colocd set the yield word), so [first, last) is what ran.
	 */
	__u32 slot, first, last, query_id;
	__u32 nr_blocks; /* OK RUN: the command's blocks run, 1 .. its nr_blocks; else 0 */
	__u32 reserved; /* 0 */
	__u64 block_ns; /* wall time of the blocks inside the executor (0 if nothing ran) */
	__u64 switch_ns; /* of which re-pinning its threads to a new core set */
	/*
	 * CLOCK_MONOTONIC when the executor took the command (after reading
	 * cmd.seq) and when it finished it (before storing seq): colocd splits
	 * its round trip into dispatch, the executor's work and the
	 * completion's way back with them, each clamped into the round trip.
	 */
	__u64 started_ns, ended_ns;
	char reason[COLOC_SHM_REASON_LEN]; /* why it was refused or failed, NUL-terminated */
	/* [nr_blocks]: each block's wall time; they add up to block_ns */
	__u64 blocks_ns[COLOC_SHM_MAX_PLAN_BLOCKS];
} __attribute__((aligned(64)));

/*
 * colocd asks a RUN command in flight to stop at its next block boundary:
 * it stores the command's seq here (release). The executor reads it
 * (acquire) before each block of the command but the first and completes
 * early when it equals the seq it is running; any other value (an older
 * command's) is ignored, so colocd never clears it. Written by colocd only.
 */
struct coloc_shm_yield {
	__u32 seq;
} __attribute__((aligned(64)));

/*
 * The doorbell rung early (docs/design/serving-path.md, "The doorbell rung
 * early"): a query that arrives while nothing else is queued or running
 * will surely start at once, so colocd wakes the team threads on the
 * cores it expects the query's first block to hold before it decides the
 * block, and the 50-70 us wake-up of a halted vCPU overlaps its round
 * instead of following it. colocd writes cpus, then stores seq (release):
 * the seq the next command will carry; then it FUTEX_WAKE_BITSETs cmd.seq
 * with bit (c % 32) of each core c in cpus. Every thread waiting for a
 * command waits with FUTEX_WAIT_BITSET, bit (c % 32) of the core c it is
 * pinned to (the command's own FUTEX_WAKE matches any bit). A thread that
 * wakes while cmd.seq is still the one it waits past, seq is that one + 1
 * and its core is in cpus spins on cmd.seq for at most
 * COLOC_SHM_READY_SPIN_NS, once, then sleeps again; any other thread (a
 * bit shared by two cores, a stale seq) sleeps again at once. colocd
 * leaves out the core it runs on: a thread spinning there would take the
 * core from colocd's round. Written by colocd only.
 */
struct coloc_shm_ready {
	__u32 seq;
	__u32 reserved; /* 0 */
	__u64 cpus[COLOC_SHM_CPU_WORDS];
} __attribute__((aligned(64)));

/* The longest a thread woken early spins on the doorbell before it sleeps again. */
#define COLOC_SHM_READY_SPIN_NS 300000

/*
 * On a lane's input socket (a SOCK_SEQPACKET pair, colocd's end and the
 * executor's), one message per RUN command with COLOC_SHM_RUN_INPUT_FD,
 * sent before its doorbell: this payload and the memfd as SCM_RIGHTS. A
 * message whose seq is not the command's (one left by a command refused
 * before it was read) is dropped.
 */
struct coloc_shm_input_msg {
	__u32 seq; /* the command's */
	__u32 reserved; /* 0 */
	__u64 bytes; /* the input's, from offset 0: the header's in_bytes */
};

/*
 * The model as the executor imported it, written once before
 * header.described: all that colocd needs to admit the tenant (the
 * profile's cache name, the layers' costs for its table, the slots' sizes),
 * so that colocd never parses a model itself. Untrusted: colocd copies it
 * once and checks every field (counts in range, sums without overflow,
 * sizes within the slots, the name fit for a cache file name); a tenant's
 * later executors must describe the same model. The header's nr_layers,
 * nr_inputs, nr_outputs, in_bytes and out_bytes, written at READY, must
 * equal these.
 */
struct coloc_shm_summary {
	char model_name[COLOC_SHM_NAME_LEN]; /* NUL-terminated, [A-Za-z0-9_.-], not "." first */
	__u32 nr_layers; /* 1 .. COLOC_SHM_MAX_LAYERS */
	__u32 nr_inputs, nr_outputs; /* as the header's */
	__u32 reserved; /* 0 */
	__u64 in_bytes, out_bytes; /* one query's, as the header's */
	__u64 layer_macs[COLOC_SHM_MAX_LAYERS]; /* [nr_layers]: each layer's multiply-adds */
} __attribute__((aligned(64)));

/*
 * The kernel versions the executor built, by name, written once its
 * kernels are built and before header.state becomes READY (whose release
 * store covers it). Layer l's versions, in the order cmd.versions counts
 * them, are names[layer[l][v] - 1] for v before the first 0: at least
 * one, at most COLOC_SHM_MAX_LAYER_VERSIONS. colocd's profile of the
 * model prices each layer's versions by their position; it applies only
 * where these are its names in its order, and colocd refuses the tenant
 * otherwise (docs/design/profile-freshness.md). Untrusted as the summary:
 * colocd copies it once at ready and checks it (names NUL-terminated, 1
 * to COLOC_SHM_VERSION_NAME_LEN - 1 of [A-Za-z0-9_.-] not starting with
 * '.'; every index of the summary's nr_layers rows within nr_names).
 */
struct coloc_shm_versions {
	__u32 nr_names; /* 1 .. COLOC_SHM_MAX_VERSION_NAMES */
	__u32 reserved; /* 0 */
	char names[COLOC_SHM_MAX_VERSION_NAMES][COLOC_SHM_VERSION_NAME_LEN];
	__u8 layer[COLOC_SHM_MAX_LAYERS][COLOC_SHM_MAX_LAYER_VERSIONS];
} __attribute__((aligned(64)));

struct coloc_shm {
	struct coloc_shm_header hdr;
	struct coloc_shm_cmd cmd __attribute__((aligned(64)));
	struct coloc_shm_done done __attribute__((aligned(64)));
	struct coloc_shm_yield yield;
	struct coloc_shm_ready ready;
	struct coloc_shm_summary summary;
	struct coloc_shm_versions versions;
};

#endif /* COLOC_SHM_H */
