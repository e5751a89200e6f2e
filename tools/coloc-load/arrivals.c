// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-load's arrivals and its run loop: each tenant's next arrival is an
 * exponential gap after the last (a seeded generator of its own), or with
 * --arrivals fixed exactly 1/QPS after it, which leaves no query waiting
 * behind another of its tenant when QPS is below its service rate; a query is
 * sent when its time comes, on the tenant's connection with the fewest
 * outstanding, and between arrivals the loop sleeps in ppoll() until the
 * next one or an answer. The drain runs from the later of the last arrival
 * and the return of the last send: a send may wait long for the
 * connection to take it (the raw gRPC client at the server's stream
 * limit), and the queries it left in flight get the whole drain too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "load.h"
#include "mono_clock.h"

struct load_query *load_queries;
size_t load_nr_queries;
static size_t load_cap_queries;

uint64_t load_start_ns;
static uint64_t last_sent_ns; /* when the run's last send returned */

/* The gap to a tenant's next arrival: exponential (Poisson arrivals), or 1/QPS with --arrivals fixed. */
static uint64_t gap_ns(struct load_tenant *t)
{
	if (load_opts.fixed_arrivals)
		return (uint64_t)(1e9 / t->qps);
	return (uint64_t)(coloc_rng_exp(&t->rng) / t->qps * 1e9);
}

/*
 * A tenant's first arrival: one gap after the start, or with fixed arrivals
 * the start itself, tenant i of n shifted by i/n of its interval so that
 * tenants at one rate do not all arrive at once.
 */
static uint64_t first_arrival_ns(struct load_tenant *t, int i)
{
	if (load_opts.fixed_arrivals)
		return load_start_ns + gap_ns(t) / (uint64_t)load_nr_tenants * (uint64_t)i;
	return load_start_ns + gap_ns(t);
}

static int load_send(struct load_tenant *t, int ti, uint64_t arrival_ns, bool measured)
{
	struct load_conn *best = &t->conns[0];
	uint64_t sent_ns;
	int err, ci = 0;

	for (int k = 1; k < load_opts.conns_per_tenant; k++)
		if (t->conns[k].outstanding < best->outstanding) {
			best = &t->conns[k];
			ci = k;
		}
	if (load_nr_queries == load_cap_queries) {
		size_t cap = load_cap_queries ? load_cap_queries * 2 : 4096;
		struct load_query *q = realloc(load_queries, cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		load_queries = q;
		load_cap_queries = cap;
	}
	sent_ns = coloc_now_ns();
	if (sent_ns > arrival_ns && sent_ns - arrival_ns > t->max_slip_ns)
		t->max_slip_ns = sent_ns - arrival_ns;
	load_queries[load_nr_queries] = (struct load_query){
		.arrival_ns = arrival_ns,
		.send_ns = sent_ns,
		.tenant = (uint16_t)ti,
		.conn = (uint16_t)ci,
		.measured = measured,
	};
	if (t->input_fd >= 0)
		err = coloc_route_send_memfd(best->r, t->name, load_nr_queries, t->input_fd,
					     t->in_bytes);
	else
		err = coloc_route_send(best->r, t->name, load_nr_queries, t->input, t->in_bytes);
	load_queries[load_nr_queries].sent_ns = last_sent_ns = coloc_now_ns();
	if (err) {
		fprintf(stderr, "coloc-load: sending a query of %s: %s\n", t->name,
			coloc_route_error(best->r));
		return err;
	}
	load_nr_queries++;
	best->outstanding++;
	t->sent_total++;
	if (measured)
		t->sent++;
	return 0;
}

static uint64_t total_outstanding(void)
{
	uint64_t n = 0;

	for (int i = 0; i < load_nr_tenants; i++)
		for (int k = 0; k < load_opts.conns_per_tenant; k++)
			n += (uint64_t)load_tenants[i].conns[k].outstanding;
	return n;
}

/*
 * The run: arrivals until end_ns (those before measure_ns are warm-up), then
 * answers until none is outstanding or the drain ends. 0 or -errno.
 */
int load_run(uint64_t start_ns, uint64_t measure_ns, uint64_t end_ns, void *out,
		    size_t out_cap)
{
	struct pollfd pfds[LOAD_MAX_TENANTS * LOAD_MAX_CONNS];
	int nfds = load_nr_tenants * (int)load_opts.conns_per_tenant;

	load_start_ns = start_ns;

	for (int i = 0; i < load_nr_tenants; i++) {
		load_tenants[i].next_ns = first_arrival_ns(&load_tenants[i], i);
		for (int k = 0; k < load_opts.conns_per_tenant; k++)
			pfds[i * load_opts.conns_per_tenant + k] =
				(struct pollfd){ .fd = coloc_route_fd(load_tenants[i].conns[k].r),
						 .events = POLLIN };
	}
	for (;;) {
		uint64_t now = coloc_now_ns(), next = UINT64_MAX, wait, woke;
		struct timespec ts;
		int r;

		for (int i = 0; i < load_nr_tenants; i++) {
			struct load_tenant *t = &load_tenants[i];

			/* every arrival whose time has come is sent now, late ones included */
			while (t->next_ns < end_ns && t->next_ns <= now) {
				int err = load_send(t, i, t->next_ns, t->next_ns >= measure_ns);

				if (err)
					return err;
				/* send may have read answers into the client's buffer */
				for (int k = 0; k < load_opts.conns_per_tenant; k++) {
					err = load_drain_conn(t, &t->conns[k], out, out_cap, 0);
					if (err)
						return err;
				}
				t->next_ns += gap_ns(t);
				now = coloc_now_ns();
			}
			if (t->next_ns < end_ns && t->next_ns < next)
				next = t->next_ns;
		}
		if (next == UINT64_MAX) {
			uint64_t drain_end = (last_sent_ns > end_ns ? last_sent_ns : end_ns) +
					     (uint64_t)load_opts.drain_s * NS_PER_S;

			if (!total_outstanding() || now >= drain_end)
				return 0;
			next = drain_end;
		}
		/* sending for a later tenant may have taken now past an earlier one's next */
		now = coloc_now_ns();
		wait = next > now ? next - now : 0;
		ts.tv_sec = (time_t)(wait / NS_PER_S);
		ts.tv_nsec = (long)(wait % NS_PER_S);
		r = ppoll(pfds, (nfds_t)nfds, &ts, NULL);
		woke = coloc_now_ns();
		if (r < 0 && errno != EINTR)
			return -errno;
		for (int f = 0; r > 0 && f < nfds; f++) {
			struct load_tenant *t = &load_tenants[f / load_opts.conns_per_tenant];
			int err;

			if (!pfds[f].revents)
				continue;
			err = load_drain_conn(t, &t->conns[f % load_opts.conns_per_tenant], out,
					      out_cap, woke);
			if (err)
				return err;
		}
	}
}
