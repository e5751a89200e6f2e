/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What colocctl's files share: its options, the link to colocd
 * (connect.c), the tables it prints (print.c), top (top.c) and the
 * commands on tenants (tenant.c); tools/colocctl.c parses the command line
 * and dispatches.
 */
#ifndef COLOC_TOOLS_COLOCCTL_CTL_H
#define COLOC_TOOLS_COLOCCTL_CTL_H

#include <signal.h>
#include <stdbool.h>
#include <json-c/json.h>
#include "coloc/client.h"
#include "coloc/protocol.h"

struct ctl_opts {
	const char *socket_path;
	bool json;
	bool watch;
	unsigned int interval_ms;
	unsigned int count; /* 0: until interrupted */
	unsigned int frames; /* top: 0: until q or Ctrl-C */
};
/* defined in tools/colocctl.c, set by its option parsing (and --json, --socket after a command) */
extern struct ctl_opts ctl_opts;
/* set by ctl_on_interrupt() (SIGINT, SIGTERM in top) */
extern volatile sig_atomic_t ctl_interrupted;
void ctl_on_interrupt(int sig);

/* A connection to colocd at ctl_opts.socket_path, or NULL with what to do about it. */
struct coloc_client *ctl_connect(void);
/* Sends one request and returns the parsed response, or NULL with a message. */
struct json_object *ctl_request(struct coloc_client *c, struct json_object *req);
/* Whether colocd said ok; prints its error if not. */
bool ctl_ok(struct json_object *resp);
/* A new request {"cmd": cmd}. */
struct json_object *ctl_cmd(const char *cmd);
/*
 * Sends req (and frees it), prints the response with print (raw JSON with
 * --json or no print), every interval with --watch; returns the exit code.
 */
int ctl_run(struct json_object *req, void (*print)(struct json_object *));

/* A field of a response: whether it is there; a string or dflt; a number or 0. */
bool ctl_get_double(struct json_object *o, const char *key, double *v);
const char *ctl_json_str(struct json_object *o, const char *key, const char *dflt);
/*
 * Tenant t of a list or status as the caller names it: its own as NAME,
 * another uid's (root sees them in full) as UID:NAME (into buf).
 */
#define CTL_TENANT_NAME_LEN 80
const char *ctl_tenant_name(struct json_object *t, char *buf, size_t len);
double ctl_json_num(struct json_object *o, const char *key);

/* The tables, one per response (print.c). */
void ctl_print_signals(struct json_object *resp);
void ctl_print_tenants(struct json_object *resp);
void ctl_print_signals_and_tenants(struct json_object *resp);
void ctl_print_tenant_added(struct json_object *resp);
void ctl_print_done(struct json_object *resp);
void ctl_print_tenant_header(void);
void ctl_print_tenant_line(struct json_object *t);
void ctl_print_reasons(struct json_object *t);
void ctl_print_submitted(struct json_object *resp);
void ctl_print_list(struct json_object *resp);
/* Per core: whose block runs there, its layers and versions (and how busy, with signals). */
void ctl_print_cores(struct json_object *status, struct json_object *signals);
void ctl_print_status(struct json_object *resp);
/* The machine in one line, or why its signals are unavailable. */
void ctl_print_machine(struct json_object *signals, const char *error);

/* colocctl top (top.c); returns the exit code. */
int ctl_top(void);

/* The commands on tenants (tenant.c): argv after the command word; return the exit code. */
int ctl_tenant(int argc, char **argv);
int ctl_submit(int argc, char **argv);
int ctl_infer(int argc, char **argv);
/* list, status [NAME], remove NAME, restart NAME: min..max names, printed with print. */
int ctl_named(const char *cmd, int argc, char **argv, int min, int max,
	      void (*print)(struct json_object *));

#endif /* COLOC_TOOLS_COLOCCTL_CTL_H */
