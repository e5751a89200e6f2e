/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The state colocd's parts share: configuration, the machine's topology (the
 * one socket numbering), the sensor, the rolling view, uncore bandwidth and
 * the tenant table. One instance per daemon, passed explicitly (tests build
 * their own).
 */
#ifndef COLOC_DAEMON_COLOCD_H
#define COLOC_DAEMON_COLOCD_H

#include <stdbool.h>
#include <linux/types.h>
#include "coloc/protocol.h"
#include "error.h"
#include "loop.h"
#include "sensor.h"
#include "tenants.h"
#include "topology.h"
#include "uncore.h"
#include "view.h"

struct colocd_config {
	const char *pin_dir;
	const char *socket_path;
	unsigned int sample_hz;
	unsigned int window_ms;
	unsigned int span_ms; /* the rolling view's span */
	unsigned int conn_timeout_ms; /* idle or slow connections are closed after it */
	bool verbose;
};

struct colocd_uncore_rate {
	__u64 last_read, last_write; /* cumulative bytes at last_ns */
	__u64 last_ns; /* 0 until the socket's counters were read once */
	double read_gbps, write_gbps;
};

struct colocd {
	struct colocd_config cfg;
	struct loop *loop;
	struct loop_source *ringbuf_src, *drain_src, *tick_src;
	struct topology *topo;
	struct sensor *sensor;
	struct view *view;
	struct uncore *uncore;
	struct tenant_table tenants;
	struct colocd_uncore_rate *uncore_rate; /* one per topology socket */
	char signals_line[512];
};

/*
 * Reads the topology, loads and attaches the sensor, pins, discovers uncore,
 * writes the signals line, and registers its sources on loop: the sensor's
 * ring buffer, its drain timer and the one-second tick (uncore rates). 0 or
 * a negative errno with err saying why.
 */
int colocd_start(struct colocd *d, const struct colocd_config *cfg, struct loop *loop,
		 struct coloc_err *err);
/* Forgets the tenants, removes its sources, detaches and unpins. */
void colocd_stop(struct colocd *d);

/*
 * Handles one request line (without its '\n'); returns a malloc'd response
 * line ending in '\n'. Never fails to answer: errors are responses.
 */
char *control_handle(struct colocd *d, const char *line, size_t len, __u64 now_ns);
/* The error response for a line over COLOC_MAX_REQUEST bytes (malloc'd). */
char *control_oversize_response(void);

#endif /* COLOC_DAEMON_COLOCD_H */
