/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Where a gRPC ModelInfer's time goes in the gateway, without a tracer:
 * with COLOC_GW_TIMELINE=FILE in its environment the gateway stamps each
 * stage of a query (coloc_now_ns(), colocd's own stamps beside them),
 * keeps the last GW_TL_KEEP queries in memory and writes them, and the
 * quartiles of each step, to FILE.PID at exit. Off (the default), a
 * stamp is one test of a flag. docs/measurements/gateway.md has what it
 * found.
 */
#ifndef COLOC_GATEWAY_TIMELINE_H
#define COLOC_GATEWAY_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "mono_clock.h"

enum gw_tl_stage {
	GW_TL_WAKE, /* the reading thread back from epoll_wait (the first wake of the query) */
	GW_TL_READ1, /* its first read returned */
	GW_TL_READ_END, /* its last read returned: the message whole */
	GW_TL_HANDLE, /* the method called */
	GW_TL_CHECKED, /* the request unpacked and checked */
	GW_TL_SENT, /* the query's line and memfd sent to colocd */
	GW_TL_COLOCD_IN, /* colocd's first read of it (colocd's clock: the same one) */
	GW_TL_COLOCD_OUT, /* colocd answering */
	GW_TL_READABLE, /* the gateway's poll saw the answer */
	GW_TL_RECEIVED, /* the answer parsed, its outputs copied */
	GW_TL_PACKED, /* the response message packed */
	GW_TL_WRITTEN, /* the answer handed to the socket (gw_grpc_reply returned) */
	GW_TL_NR
};

struct gw_tl {
	uint64_t t[GW_TL_NR];
	uint32_t wakes, reads; /* epoll wakes and reads of the message */
	uint32_t read1_bytes;
};

extern bool gw_tl_on;

/* A thread's wake for connection fd and its reads (grpc_h2_conn.c), taken over by gw_tl_begin. */
void gw_tl_wake(int fd);
void gw_tl_read(ssize_t r, uint64_t now);
/* tl starts with the reading stamps of this thread's connection, GW_TL_HANDLE now. */
void gw_tl_begin(struct gw_tl *tl);
/* tl kept for the file written at exit. */
void gw_tl_commit(const struct gw_tl *tl);

/* Stage s of tl now (tl may be NULL). */
static inline void gw_tl_stamp(struct gw_tl *tl, enum gw_tl_stage s)
{
	if (gw_tl_on && tl)
		tl->t[s] = coloc_now_ns();
}

#endif /* COLOC_GATEWAY_TIMELINE_H */
