/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * How many infer bodies the HTTP side parses at once: libmicrohttpd runs a
 * thread per connection, so without a gate every body that completes
 * parses at the same moment (review s17 HIGH 1). GW_PARSES_PER_CPU per
 * online CPU, at most GW_PARSES_MAX (docs/gateway.md's memory sum counts
 * them); a request waits its turn until its deadline. Process-wide,
 * thread-safe.
 */
#ifndef COLOC_GATEWAY_PARSE_GATE_H
#define COLOC_GATEWAY_PARSE_GATE_H

#include <stdint.h>

#define GW_PARSES_PER_CPU 2
#define GW_PARSES_MAX 16

/* Waits for a turn until deadline_ns (coloc_now_ns()'s clock): 0, or -ETIMEDOUT. */
int gw_parse_gate_enter(uint64_t deadline_ns);
/* Gives the turn back. */
void gw_parse_gate_leave(void);

#endif /* COLOC_GATEWAY_PARSE_GATE_H */
