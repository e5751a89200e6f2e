// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-load's answers: each one read from a connection is matched to its
 * query by its tag and counted by outcome; an OK answer in the measured
 * window adds one sample to each of its tenant's series (its latency here,
 * colocd's, the send, the hop and its parts, colocd's parts).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "load.h"
#include "mono_clock.h"

/* Indexed by enum coloc_infer_status: what each answer counts as. */
static const enum load_outcome outcome_of_status[] = {
	[COLOC_INFER_OK] = LOAD_OK,
	[COLOC_INFER_REJECTED] = LOAD_REJECTED,
	[COLOC_INFER_DROPPED] = LOAD_DROPPED,
	[COLOC_INFER_FAILED] = LOAD_FAILED,
};

const char *const load_outcome_name[LOAD_NR_OUTCOMES] = {
	[LOAD_OK] = "completed",
	[LOAD_REJECTED] = "rejected",
	[LOAD_DROPPED] = "dropped",
	[LOAD_FAILED] = "failed",
};

/*
 * The hop's parts, from colocd's stamps on the same CLOCK_MONOTONIC: "in",
 * the send's start until colocd's first read of the request; "receive",
 * that read until the input was complete; "out", colocd's answer until it
 * was read and parsed here. Two of them again up to the waiter's wake-up:
 * "in_woke", the send's start until colocd's loop woke (0 when colocd does
 * not say), and "out_woke", colocd's answer until this process's wait
 * returned (the rest of in and out is work: each side's own).
 */
const char *const load_hop_part_names[LOAD_NR_HOP_PARTS] = { "in", "receive", "out", "in_woke",
							     "out_woke" };

static uint64_t since(uint64_t from, uint64_t to)
{
	return from && to > from ? to - from : 0;
}

static uint64_t less(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static int grow_u64(uint64_t **v, size_t cap)
{
	uint64_t *a = realloc(*v, cap * sizeof(*a));

	if (!a)
		return -ENOMEM;
	*v = a;
	return 0;
}

static int lat_push(struct load_tenant *t, const struct load_query *q, uint64_t lat,
		    const struct coloc_infer_result *res, uint64_t woke_ns)
{
	if (t->nr_lat == t->cap_lat) {
		size_t cap = t->cap_lat ? t->cap_lat * 2 : 1024;

		if (grow_u64(&t->lat_ns, cap) || grow_u64(&t->colocd_ns, cap) ||
		    grow_u64(&t->send_ns, cap) || grow_u64(&t->hop_ns, cap) ||
		    grow_u64(&t->unqueued_ns, cap) || grow_u64(&t->colocd_unqueued_ns, cap) ||
		    grow_u64(&t->overhead_ns, cap))
			return -ENOMEM;
		for (int p = 0; p < COLOC_NR_PARTS; p++)
			if (grow_u64(&t->parts_ns[p], cap))
				return -ENOMEM;
		for (int p = 0; p < LOAD_NR_HOP_PARTS; p++)
			if (grow_u64(&t->hop_parts_ns[p], cap))
				return -ENOMEM;
		t->cap_lat = cap;
	}
	t->lat_ns[t->nr_lat] = lat;
	t->colocd_ns[t->nr_lat] = res->latency_ns;
	t->send_ns[t->nr_lat] = q->sent_ns - q->send_ns;
	t->hop_ns[t->nr_lat] = lat > res->latency_ns ? lat - res->latency_ns : 0;
	t->unqueued_ns[t->nr_lat] = less(lat, res->parts_ns[COLOC_PART_QUEUED]);
	t->colocd_unqueued_ns[t->nr_lat] = less(res->latency_ns, res->parts_ns[COLOC_PART_QUEUED]);
	t->overhead_ns[t->nr_lat] =
		less(t->unqueued_ns[t->nr_lat], res->parts_ns[COLOC_PART_COMPUTE]);
	for (int p = 0; p < COLOC_NR_PARTS; p++)
		t->parts_ns[p][t->nr_lat] = res->parts_ns[p];
	t->hop_parts_ns[0][t->nr_lat] = since(q->send_ns, res->first_byte_at_ns);
	t->hop_parts_ns[1][t->nr_lat] = res->receive_ns;
	t->hop_parts_ns[2][t->nr_lat] = since(res->answered_at_ns, q->send_ns + lat);
	t->hop_parts_ns[3][t->nr_lat] = since(q->send_ns, res->woke_at_ns);
	t->hop_parts_ns[4][t->nr_lat] =
		since(res->answered_at_ns, woke_ns ? woke_ns : q->send_ns + lat);
	t->nr_lat++;
	return 0;
}

static const char *const part_names[COLOC_NR_PARTS] = COLOC_PART_NAMES;

void load_samples_header(FILE *f)
{
	fprintf(f, "tenant\tarrival_ms\tsend_ms\tlatency_ms\tcolocd_ms\thop_ms");
	for (int p = 0; p < COLOC_NR_PARTS; p++)
		fprintf(f, "\t%s_ms", part_names[p]);
	for (int p = 0; p < LOAD_NR_HOP_PARTS; p++)
		fprintf(f, "\thop_%s_ms", load_hop_part_names[p]);
	fprintf(f, "\n");
}

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

/* The sample just pushed as one line of --samples' file; times from the run's start. */
static void samples_write(const struct load_tenant *t, const struct load_query *q)
{
	size_t i = t->nr_lat - 1;

	fprintf(load_samples, "%s\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f", t->name,
		ms(less(q->arrival_ns, load_start_ns)), ms(less(q->send_ns, load_start_ns)),
		ms(t->lat_ns[i]), ms(t->colocd_ns[i]), ms(t->hop_ns[i]));
	for (int p = 0; p < COLOC_NR_PARTS; p++)
		fprintf(load_samples, "\t%.6f", ms(t->parts_ns[p][i]));
	for (int p = 0; p < LOAD_NR_HOP_PARTS; p++)
		fprintf(load_samples, "\t%.6f", ms(t->hop_parts_ns[p][i]));
	fprintf(load_samples, "\n");
}

static void load_account(const struct coloc_infer_result *res, uint64_t recv_ns, uint64_t woke_ns)
{
	struct load_query *q;
	struct load_tenant *t;
	enum load_outcome o;

	if (res->tag >= load_nr_queries || load_queries[res->tag].answered)
		return;
	q = &load_queries[res->tag];
	q->answered = true;
	t = &load_tenants[q->tenant];
	t->conns[q->conn].outstanding--;
	if (!q->measured)
		return;
	o = (unsigned int)res->status < sizeof(outcome_of_status) / sizeof(outcome_of_status[0]) ?
		    outcome_of_status[res->status] :
		    LOAD_FAILED;
	if (!t->outcome[o]++ && o != LOAD_OK)
		snprintf(t->first_reason[o], LOAD_REASON_LEN, "%s",
			 res->error[0] ? res->error : "(no reason given)");
	if (o != LOAD_OK)
		return;
	if ((double)(recv_ns - q->send_ns) <= t->qos_ms * 1e6)
		t->within_qos++;
	if (lat_push(t, q, recv_ns - q->send_ns, res, woke_ns))
		t->outcome[LOAD_OK]--;
	else if (load_samples)
		samples_write(t, q);
}

/* Takes every answer the connection holds; 0, or -errno when it is lost. */
int load_drain_conn(struct load_tenant *t, struct load_conn *lc, void *out, size_t out_cap,
		    uint64_t woke_ns)
{
	struct coloc_infer_result res;

	for (;;) {
		int r = coloc_route_recv(lc->r, &res, out, out_cap);

		if (r == 0)
			return 0;
		if (r < 0 && r != -EMSGSIZE) {
			fprintf(stderr, "coloc-load: tenant %s's connection: %s\n", t->name,
				coloc_route_error(lc->r));
			return r;
		}
		load_account(&res, coloc_now_ns(), woke_ns);
	}
}
