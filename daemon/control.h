/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * colocd's control protocol (include/coloc/protocol.h) as main() and the
 * tests drive it: one request line in, one answer line out, or an answer
 * owed through server.h. control.c dispatches the requests, control_submit.c
 * admits tenants. It calls into the daemon's parts (colocd.h, serving.h,
 * serving_state.h); none of them calls back into it.
 */
#ifndef COLOC_DAEMON_CONTROL_H
#define COLOC_DAEMON_CONTROL_H

#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>
#include "colocd.h"
#include "error.h"
#include "server.h"
#include "serving_state.h"

/*
 * Handles one request line (without its '\n') from uid (the peer's
 * SO_PEERCRED uid: what it may see and change, docs/security-owners.md);
 * returns a malloc'd response line ending in '\n', or NULL when req says
 * the answer comes later (a payload to read, a query to finish, a tenant to
 * drain). req is NULL without a connection (tests): then infer is refused
 * and remove answers at once. Errors are responses.
 */
char *control_handle(struct colocd *d, struct server_req *req, uid_t uid, const char *line,
		     size_t len, __u64 now_ns);
/*
 * Starts admitting a tenant (owned by spec->owner): what submit does.
 * -errno with err when serving_admit refuses at once. Otherwise 0, and
 * the admission's answer (serving.h) comes later: the tenant is then
 * recorded (for --state: its files are duplicated meanwhile) and the
 * client on sreq answered, its request deferred here (a state file that
 * could not be written leaves the tenant admitted, with a "warning");
 * sreq NULL (a tenant --state brings back): the outcome goes to the log.
 */
int control_submit_spec(struct colocd *d, const struct colocd_spec *spec,
			const struct colocd_files *files, struct server_req *sreq, uid_t uid,
			struct coloc_err *err);
/*
 * control_handle as server.h's request handler, ctx the struct colocd: the
 * peer's uid from req, the time now, and for a line over COLOC_MAX_REQUEST
 * bytes (line NULL) the error that ends the connection.
 */
char *control_serve(void *ctx, struct server_req *req, const char *line, size_t len);
/*
 * server_payload_fn for control_serve: an infer whose bytes follow its
 * line is refused on the line (the bytes dropped, never held) when colocd
 * is draining, the tenant is not there or not the uid's, or input_bytes is
 * not its model's input size.
 */
char *control_payload_check(void *ctx, const struct server_req *sreq, size_t bytes);

#endif /* COLOC_DAEMON_CONTROL_H */
