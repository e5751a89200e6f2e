/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The state colocd's parts share: configuration, the sensor, the rolling
 * view, uncore bandwidth and the tenant table. One instance per daemon,
 * passed explicitly (tests build their own).
 */
#ifndef COLOC_DAEMON_COLOCD_H
#define COLOC_DAEMON_COLOCD_H

#include <stdbool.h>
#include <linux/types.h>
#include "coloc/protocol.h"
#include "sensor.h"
#include "tenants.h"
#include "uncore.h"
#include "view.h"

struct colocd_config {
	const char *pin_dir;
	const char *socket_path;
	unsigned int sample_hz;
	unsigned int window_ms;
	unsigned int span_ms; /* the rolling view's span */
	bool verbose;
};

struct colocd_uncore_rate {
	__u64 last_read, last_write; /* cumulative bytes at last_ns */
	__u64 last_ns;
	double read_gbps, write_gbps;
};

struct colocd {
	struct colocd_config cfg;
	struct sensor *sensor;
	struct view *view;
	struct uncore *uncore;
	struct tenant_table tenants;
	int cpu_socket[COLOC_MAX_CPUS];
	int nr_sockets;
	struct colocd_uncore_rate uncore_rate[8];
	char signals_line[512];
};

/* Loads and attaches the sensor, pins, discovers uncore; says why it failed in err. */
int colocd_start(struct colocd *d, const struct colocd_config *cfg, struct coloc_err *err);
void colocd_stop(struct colocd *d);
/* Once a second: forgets exited processes, refreshes uncore bandwidth rates. */
void colocd_tick(struct colocd *d, __u64 now_ns);

/*
 * Handles one request line (without its '\n'); returns a malloc'd response
 * line ending in '\n'. Never fails to answer: errors are responses.
 */
char *control_handle(struct colocd *d, const char *line, size_t len, __u64 now_ns);
/* The error response for a line over COLOC_MAX_REQUEST bytes. */
char *control_oversize_response(void);

#endif /* COLOC_DAEMON_COLOCD_H */
