/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What coloc-load's files share: its options and tenants, the queries sent,
 * and the functions of each part: colocd's status and the connections
 * (status.c), the arrivals and the run loop (arrivals.c), the answers and
 * what each one adds to a tenant's samples (answers.c), the summary and its
 * text and JSON reports (report.c); tools/coloc-load.c parses the command
 * line and runs them in order.
 */
#ifndef COLOC_TOOLS_COLOC_LOAD_LOAD_H
#define COLOC_TOOLS_COLOC_LOAD_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "rng.h"
#include "coloc/client.h"
#include "coloc/infer_route.h"
#include "coloc/protocol.h"

#define LOAD_MAX_TENANTS 16
#define LOAD_MAX_CONNS 64
#define LOAD_MAX_QPS 100000.0
#define LOAD_REASON_LEN 256
#define LOAD_NR_HOP_PARTS 5
#define NS_PER_S 1000000000ull

struct load_opts {
	const char *socket_path;
	const char *grpc; /* HOST:PORT of coloc-gateway's gRPC API, or */
	bool grpc_core; /* --grpc-client core: gRPC's C core, not the raw HTTP/2 client */
	const char *url; /* http://HOST:PORT of its HTTP API, or neither: colocd's socket */
	long gateway_pid;
	const char *tenant_spec;
	long duration_s;
	long warmup_s;
	long seed;
	long conns_per_tenant;
	long drain_s;
	bool fixed_arrivals; /* --arrivals fixed: every 1/QPS exactly, no queueing of its own */
	const char *samples_path; /* --samples: one line per answered query */
	bool json;
	bool socket_copy; /* --socket-copy: inputs on the socket, not in a memfd */
};
/* defined in tools/coloc-load.c, set by its option parsing */
extern struct load_opts load_opts;

enum load_outcome { LOAD_OK, LOAD_REJECTED, LOAD_DROPPED, LOAD_FAILED, LOAD_NR_OUTCOMES };
extern const char *const load_outcome_name[LOAD_NR_OUTCOMES];

struct load_conn {
	struct coloc_route *r; /* colocd's socket, or the gateway (coloc/infer_route.h) */
	int outstanding;
};

struct load_tenant {
	char name[64];
	double qps;
	/* from colocd's status */
	double qos_ms;
	size_t in_bytes, out_bytes;
	/* arrivals */
	struct coloc_rng rng;
	uint64_t next_ns; /* the next arrival, absolute CLOCK_MONOTONIC */
	float *input;
	int input_fd; /* a frozen memfd holding input, for colocd's socket; -1 with --socket-copy */
	struct load_conn conns[LOAD_MAX_CONNS];
	int next_conn;
	/* what happened to the queries sent in the measured window */
	uint64_t sent, sent_total, outcome[LOAD_NR_OUTCOMES], within_qos, outstanding;
	char first_reason[LOAD_NR_OUTCOMES][LOAD_REASON_LEN];
	uint64_t *lat_ns, *colocd_ns; /* of OK answers */
	uint64_t *send_ns, *hop_ns; /* their send, and their latency less colocd's */
	uint64_t *unqueued_ns; /* their latency less the wait behind other queries */
	uint64_t *colocd_unqueued_ns; /* colocd's latency less that wait */
	uint64_t *overhead_ns; /* their latency less that wait and less the compute */
	uint64_t *parts_ns[COLOC_NR_PARTS]; /* their colocd latency part by part */
	uint64_t *hop_parts_ns[LOAD_NR_HOP_PARTS]; /* their hop's parts (load_hop_part_names) */
	size_t nr_lat, cap_lat;
	uint64_t max_slip_ns; /* how late a send started after its arrival time */
};

/* One query sent: its tag indexes this table. */
struct load_query {
	uint64_t arrival_ns; /* its arrival time, planned */
	uint64_t send_ns, sent_ns; /* the send began, and returned */
	uint16_t tenant, conn;
	bool measured, answered;
};

/* set by main() before the run */
extern enum coloc_route_kind load_route;
extern const char *load_route_where;
extern struct load_tenant load_tenants[LOAD_MAX_TENANTS];
extern int load_nr_tenants;
/* every query sent, indexed by its tag (arrivals.c) */
extern struct load_query *load_queries;
extern size_t load_nr_queries;
/* the run's start (arrival times count from it), and --samples' file or NULL */
extern uint64_t load_start_ns;
extern FILE *load_samples;
/* the hop's parts, in the order of struct load_tenant's hop_parts_ns */
extern const char *const load_hop_part_names[LOAD_NR_HOP_PARTS];

struct load_cpu {
	double user_s, sys_s, wall_s, share, us_per_query;
	double gateway_s, gateway_us_per_query; /* with --gateway-pid */
};

/* report.c: how the inputs travel ("memfd", "socket", "http", "grpc"), as the reports say */
const char *load_input_path(void);
/* status.c: each tenant's QoS and sizes from colocd; 0, or prints why and returns 1 */
int load_read_status(struct coloc_client *c);
/* status.c: seeds, inputs and connections of every tenant; 0, or prints why and returns 1 */
int load_prepare(void);

/*
 * arrivals.c: the run: arrivals until end_ns (those before measure_ns are
 * warm-up), then answers until none is outstanding or the drain ends (drain_s
 * after end_ns, or after the last send if it returned later); out
 * holds one answer's output (out_cap bytes). 0 or -errno.
 */
int load_run(uint64_t start_ns, uint64_t measure_ns, uint64_t end_ns, void *out, size_t out_cap);

/* answers.c: the header line of --samples' file */
void load_samples_header(FILE *f);
/*
 * answers.c: takes every answer the connection holds; 0, or -errno when it
 * is lost. woke_ns: when the wait that found them returned (0: no wait)
 */
int load_drain_conn(struct load_tenant *t, struct load_conn *lc, void *out, size_t out_cap,
		    uint64_t woke_ns);

/* report.c: the CPU time (user + system, all threads) of process pid so far, in s; -1 if unknown */
double load_process_cpu_s(long pid);
/* report.c: the results, as one JSON object or as text */
void load_print_json(const struct load_cpu *cpu);
void load_print_text(const struct load_cpu *cpu);

#endif
