/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Prometheus metrics of the gateway and of colocd, on their own listener:
 * GET /metrics, text exposition format 0.0.4. Each scrape asks colocd for
 * "status" and "signals" (its own control connection) and prints:
 *
 *   per model, counted by the gateway (Triton's names, coloc_ prefix;
 *   labels model, version): coloc_inference_request_success,
 *   _request_failure, coloc_inference_count, coloc_inference_request_
 *   duration_us (arrival at the gateway to answer), _queue_duration_us
 *   (colocd's latency_ns - exec_ns), _compute_duration_us (exec_ns), all
 *   cumulative counters; coloc_model_ready; coloc_gateway_refusals_total
 *   {reason="queue_full"|"timeout"|"bad_request"|"not_ready"},
 *   coloc_gateway_requests_total{protocol="http"|"grpc"} (infer requests);
 *   per tenant, from colocd's status (label tenant): QoS target, solo
 *   latency, share within QoS, queries by outcome (served, dropped,
 *   rejected, failed), queued, in flight, rates, p50/p95/p99, executors,
 *   cores held now; colocd's policy errors;
 *   per CPU, from signals (label cpu): busy, context switches, migrations
 *   and page faults per second, and what only a PMU gives (ipc, llc_mpki,
 *   llc_miss_ratio, dram_gbps) where colocd reports it; per tenant its CPU
 *   busy and on-CPU time; the BPF sensor's sample, record and drop counts.
 *
 * coloc_colocd_up is 0 when colocd did not answer (then only the gateway's
 * own series follow).
 */
#ifndef COLOC_GATEWAY_METRICS_H
#define COLOC_GATEWAY_METRICS_H

#include <stdio.h>
#include <sys/socket.h>
#include "control.h"
#include "error.h"
#include "models.h"

struct gw_metrics;

int gw_metrics_start(const struct sockaddr_storage *addr, struct gw_models *ms, struct gw_ctl *ctl,
		     struct gw_metrics **out, struct coloc_err *err);
int gw_metrics_port(struct gw_metrics *mx);
void gw_metrics_stop(struct gw_metrics *mx);

/* One scrape's text into f (what GET /metrics answers). */
void gw_metrics_write(FILE *f, struct gw_models *ms, struct gw_ctl *ctl);

#endif /* COLOC_GATEWAY_METRICS_H */
