/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The whole-request deadline of the gateway's HTTP connections: a request
 * must arrive whole (headers and body) within timeout_ms of its
 * connection's opening, or of the end of the previous answer on it, and
 * its answer be made and sent within the time it may take to make
 * (the infer's --timeout-ms) plus timeout_ms of its arrival. A
 * reaper thread, asleep until the earliest deadline, shuts a late
 * connection's socket down, and libmicrohttpd closes it. libmicrohttpd's
 * own timeout is of idleness, which a client sending a byte a second never
 * meets (docs/gateway.md, "Limits"); nor does a request trickled within
 * the deadline, which the rate floor cuts (docs/design/gateway-bodies.md).
 */
#ifndef COLOC_GATEWAY_HTTP_DEADLINE_H
#define COLOC_GATEWAY_HTTP_DEADLINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <microhttpd.h>
#include "error.h"

struct gw_http_deadline;

/*
 * The reaper, started; min_rate (bytes a second, 0: none): a request
 * under way whose bytes since its first are behind min_rate a second
 * after the first second is answered 408 and its connection closed
 * (slowloris headers and trickled bodies alike). 0, or -errno with err.
 */
int gw_http_deadline_start(int timeout_ms, uint64_t min_rate, struct gw_http_deadline **out,
			   struct coloc_err *err);
/* Stops the reaper (after libmicrohttpd stopped: no connection is left). */
void gw_http_deadline_stop(struct gw_http_deadline *dl);

/* From MHD_OPTION_NOTIFY_CONNECTION (http.c's callback): a connection tracked. */
void gw_http_deadline_notify(void *dl, struct MHD_Connection *conn, void **socket_context,
			     enum MHD_ConnectionNotificationCode code);
/*
 * conn's request has its first line (libmicrohttpd's URI log, before the
 * header lines): its rate is watched from now on, even when all its bytes
 * came before the previous answer on conn (pipelined), counted from that
 * answer (or its first byte, on a connection's first). A pipelined request
 * stalled inside that first line is not seen (docs/design/gateway-bodies.md).
 */
void gw_http_deadline_begun(struct MHD_Connection *conn);
/*
 * conn's request arrived whole: its answer must be sent within answer_ns
 * plus the timeout (a client that does not read it is cut). The requests
 * that arrived on conn so far, this one counted (0: conn is not tracked).
 */
unsigned long gw_http_deadline_received(struct MHD_Connection *conn, uint64_t answer_ns);
/* conn's answer was sent: the deadline of its next request starts now. */
void gw_http_deadline_answered(struct MHD_Connection *conn);
/*
 * The connection whose deadline comes first cut now, as at its deadline,
 * so that a listener at its connection limit takes a new one (metrics.c):
 * the one that has waited longest for a whole request, or for its answer
 * to be taken, whichever began first. Whether there was one.
 */
bool gw_http_deadline_cut_soonest(struct gw_http_deadline *dl);
/* Connections cut at their deadline so far. */
unsigned long gw_http_deadline_cut(struct gw_http_deadline *dl);

#endif /* COLOC_GATEWAY_HTTP_DEADLINE_H */
