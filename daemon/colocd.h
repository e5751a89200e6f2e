/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The state colocd's parts share: configuration, the machine's topology (the
 * one socket numbering), the sensor, the rolling view, uncore bandwidth and
 * the tenant table. One instance per daemon, passed explicitly (tests build
 * their own). lifecycle.c starts and stops it; the control protocol
 * (control.h) and the --state file (serving_state.h) work on it, and it
 * calls neither (docs/design/daemon-structure.md).
 */
#ifndef COLOC_DAEMON_COLOCD_H
#define COLOC_DAEMON_COLOCD_H

#include <limits.h>
#include <stdio.h>
#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>
#include "coloc/protocol.h"
#include "error.h"
#include "level_source.h"
#include "loop.h"
#include "sensor.h"
#include "server.h"
#include "sandbox.h"
#include "serving.h"
#include "serving_state.h"
#include "tenants.h"
#include "topology.h"
#include "uncore.h"
#include "view.h"

struct state_writer;

struct colocd_config {
	const char *pin_dir;
	const char *socket_path;
	unsigned int sample_hz;
	unsigned int window_ms;
	unsigned int span_ms; /* the rolling view's span */
	unsigned int conn_timeout_ms; /* idle or slow connections are closed after it */
	unsigned int submit_timeout_ms; /* a submit's files copied within it; 0: the default */
	bool verbose;
	/* the serving core (serving.h); NULL: its defaults, the executor beside colocd */
	const char *policy;
	bool late_serve; /* --late serve: a query that cannot meet its deadline runs late */
	bool no_plan_ahead; /* --no-plan-ahead: one block per command (serving_config) */
	bool executor_lanes; /* --executor-lanes (serving_config) */
	const char *executor;
	const char *cache_dir;
	const char *state_path; /* admitted tenants survive a restart in it; NULL: none */
	const char *block_log; /* one line per finished block into it; NULL: none */
	struct sandbox_config sandbox; /* the executors' uids, cgroups, what may be missing */
	/*
	 * What one non-root uid may hold (docs/security-owners.md); 0 in a
	 * config built by hand: no per-uid limit. colocd's options set them.
	 */
	int max_tenants_per_uid; /* serving tenants, and attributed ones apart */
	int max_executors_per_uid; /* over its serving tenants */
	int max_queued_per_uid; /* queries queued or running over its tenants */
	int max_input_mib_per_uid; /* queued inputs colocd holds for its tenants, MiB */
	int max_submit_mib_per_uid; /* its tenants' submitted files, MiB */
	unsigned long long max_submit_mib; /* all tenants' submitted files, root's included, MiB */
};

/*
 * colocd's defaults. Of the fixed tables whose last quarter is root's (the
 * tenant slots and places, the queries queued), a fifth of the members'
 * part, so that four members at their quota leave a fifth its own
 * (docs/security-owners.md, "Quotas"); of the rest, a quarter.
 */
#define COLOCD_DEFAULT_TENANTS_PER_UID (TENANTS_MEMBERS_PART / 5)
#define COLOCD_DEFAULT_EXECUTORS_PER_UID 16
#define COLOCD_DEFAULT_QUEUED_PER_UID \
	((SERVING_DEFAULT_QUEUE_TOTAL - SERVING_ROOT_SHARE(SERVING_DEFAULT_QUEUE_TOTAL)) / 5)
#define COLOCD_DEFAULT_INPUT_MIB_PER_UID 1024
#define COLOCD_DEFAULT_SUBMIT_MIB_PER_UID 4096

/* A remove request waiting for its tenant to drain. */
struct colocd_waiter {
	bool used;
	char name[SERVING_NAME_LEN];
	struct server *server;
	__u64 conn;
};

/* An executor fd the serving core asked to be watched: a loop source of its own. */
struct colocd_exec_fd {
	int fd;
	struct loop_source *src;
	struct colocd_exec_fd *next;
};
#define COLOCD_MAX_WAITERS 64

struct colocd_uncore_rate {
	__u64 last_read, last_write; /* cumulative bytes at last_ns */
	__u64 last_ns; /* 0 until the socket's counters were read once */
	double read_gbps, write_gbps;
};

struct colocd {
	struct colocd_config cfg;
	struct profile_machine machine; /* as the profile cache names it; ISA from the executor */
	FILE *block_log;
	__u64 block_log_t0; /* CLOCK_MONOTONIC ns at colocd's start: the log's time 0 */
	struct loop *loop;
	struct loop_source *ringbuf_src, *drain_src, *tick_src;
	struct topology *topo;
	struct sensor *sensor;
	struct view *view;
	struct uncore *uncore;
	struct tenant_table tenants;
	struct colocd_uncore_rate *uncore_rate; /* one per topology socket */
	char signals_line[1024];
	struct level_source level; /* where the per-core level comes from */
	struct sandbox *sandbox;
	struct serving *serving;
	struct loop_source *serving_timer, *serving_prepare;
	__u64 serving_ticked_ns; /* CLOCK_MONOTONIC of the last serving_tick() */
	struct colocd_exec_fd *exec_fds; /* as many as the executors have */
	struct submit_copier *copier; /* submits' files copied off the loop; NULL before the first */
	struct colocd_spec *specs; /* COLOC_MAX_TENANTS of them */
	struct state_writer *state_writer; /* --state's I/O off the loop; NULL without --state */
	int nr_specs;
	struct colocd_waiter waiters[COLOCD_MAX_WAITERS];
	bool draining; /* shutting down: no new tenants or queries */
	bool cpuset_warned; /* a cpuset write failed (said once) */
};

/*
 * Reads the topology, loads and attaches the sensor, pins, discovers uncore,
 * writes the signals line, and registers its sources on loop: the sensor's
 * ring buffer, its drain timer and the one-second tick (uncore rates). 0 or
 * a negative errno with err saying why.
 */
int colocd_start(struct colocd *d, const struct colocd_config *cfg, struct loop *loop,
		 struct coloc_err *err);
/*
 * Stops the executors (their queries fail), forgets the tenants, removes
 * its sources, detaches and unpins.
 */
void colocd_stop(struct colocd *d);

/* Queries queued or running over all tenants: 0 once drained. */
int colocd_serving_busy(const struct colocd *d);
/*
 * Answers {"ok":true} on the server's connection conn once the serving
 * tenant name is gone (a remove waiting for its drain). -ENOSPC when
 * COLOCD_MAX_WAITERS removes wait already.
 */
int colocd_await_removal(struct colocd *d, const char *name, struct server *server, __u64 conn);

/* The sensor's window still open at now_ns (the BPF side numbers windows the same way). */
static inline __u64 colocd_now_window(const struct colocd *d, __u64 now_ns)
{
	return now_ns / ((__u64)d->cfg.window_ms * 1000000ull);
}

#endif /* COLOC_DAEMON_COLOCD_H */
