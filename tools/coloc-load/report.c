// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-load's report: per tenant, the percentiles of each series its
 * answers gave (answers.c), as text or as one JSON object, and the CPU time
 * coloc-load (and the gateway, with --gateway-pid) spent.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>
#include "load.h"
#include "proc_stat.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of a sorted array, in ms; 0 when empty. */
static double pct_ms(const uint64_t *v, size_t n, double p)
{
	size_t rank;

	if (!n)
		return 0;
	rank = (size_t)ceil(p / 100.0 * (double)n);
	return (double)v[rank ? rank - 1 : 0] / 1e6;
}

struct load_summary {
	double offered, achieved, within;
	double p50, p95, p99, max, c50, c95, c99, cmax;
	double send50, send95, hop50, hop95, unq50, unq95;
	double cunq50, cunq95, over50, over95; /* colocd's less queued; less queued and compute */
	double part50[COLOC_NR_PARTS], part95[COLOC_NR_PARTS]; /* each part's own */
	double hpart50[LOAD_NR_HOP_PARTS], hpart95[LOAD_NR_HOP_PARTS];
};

static const char *const part_names[COLOC_NR_PARTS] = COLOC_PART_NAMES;

static void summarize(struct load_tenant *t, struct load_summary *s)
{
	double window = (double)load_opts.duration_s;

	qsort(t->lat_ns, t->nr_lat, sizeof(uint64_t), cmp_u64);
	qsort(t->colocd_ns, t->nr_lat, sizeof(uint64_t), cmp_u64);
	qsort(t->send_ns, t->nr_lat, sizeof(uint64_t), cmp_u64);
	qsort(t->hop_ns, t->nr_lat, sizeof(uint64_t), cmp_u64);
	qsort(t->unqueued_ns, t->nr_lat, sizeof(uint64_t), cmp_u64);
	qsort(t->colocd_unqueued_ns, t->nr_lat, sizeof(uint64_t), cmp_u64);
	qsort(t->overhead_ns, t->nr_lat, sizeof(uint64_t), cmp_u64);
	t->outstanding = t->sent - t->outcome[LOAD_OK] - t->outcome[LOAD_REJECTED] -
			 t->outcome[LOAD_DROPPED] - t->outcome[LOAD_FAILED];
	*s = (struct load_summary){
		.offered = (double)t->sent / window,
		.achieved = (double)t->outcome[LOAD_OK] / window,
		.within = t->sent ? (double)t->within_qos / (double)t->sent : 0,
		.p50 = pct_ms(t->lat_ns, t->nr_lat, 50),
		.p95 = pct_ms(t->lat_ns, t->nr_lat, 95),
		.p99 = pct_ms(t->lat_ns, t->nr_lat, 99),
		.max = pct_ms(t->lat_ns, t->nr_lat, 100),
		.c50 = pct_ms(t->colocd_ns, t->nr_lat, 50),
		.c95 = pct_ms(t->colocd_ns, t->nr_lat, 95),
		.c99 = pct_ms(t->colocd_ns, t->nr_lat, 99),
		.cmax = pct_ms(t->colocd_ns, t->nr_lat, 100),
		.send50 = pct_ms(t->send_ns, t->nr_lat, 50),
		.send95 = pct_ms(t->send_ns, t->nr_lat, 95),
		.hop50 = pct_ms(t->hop_ns, t->nr_lat, 50),
		.hop95 = pct_ms(t->hop_ns, t->nr_lat, 95),
		.unq50 = pct_ms(t->unqueued_ns, t->nr_lat, 50),
		.unq95 = pct_ms(t->unqueued_ns, t->nr_lat, 95),
		.cunq50 = pct_ms(t->colocd_unqueued_ns, t->nr_lat, 50),
		.cunq95 = pct_ms(t->colocd_unqueued_ns, t->nr_lat, 95),
		.over50 = pct_ms(t->overhead_ns, t->nr_lat, 50),
		.over95 = pct_ms(t->overhead_ns, t->nr_lat, 95),
	};
	for (int p = 0; p < COLOC_NR_PARTS; p++) {
		qsort(t->parts_ns[p], t->nr_lat, sizeof(uint64_t), cmp_u64);
		s->part50[p] = pct_ms(t->parts_ns[p], t->nr_lat, 50);
		s->part95[p] = pct_ms(t->parts_ns[p], t->nr_lat, 95);
	}
	for (int p = 0; p < LOAD_NR_HOP_PARTS; p++) {
		qsort(t->hop_parts_ns[p], t->nr_lat, sizeof(uint64_t), cmp_u64);
		s->hpart50[p] = pct_ms(t->hop_parts_ns[p], t->nr_lat, 50);
		s->hpart95[p] = pct_ms(t->hop_parts_ns[p], t->nr_lat, 95);
	}
}

/* The CPU time (user + system, all threads) of process pid so far, in s; -1 if unknown. */
double load_process_cpu_s(long pid)
{
	char path[64];
	unsigned long long ns;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	return proc_stat_cpu_ns(path, &ns) ? -1 : (double)ns / 1e9;
}

static void add_num(struct json_object *o, const char *key, double v)
{
	json_object_object_add(o, key, json_object_new_double(round(v * 1000.0) / 1000.0));
}

static void add_u64(struct json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_int64((int64_t)v));
}

/* {"queued":{"p50_ms":F,"p95_ms":F},...}: colocd's latency part by part */
/* {"NAME":{"p50_ms":F,"p95_ms":F},...} of n parts */
static struct json_object *parts_json(const char *const *names, const double *p50,
				      const double *p95, int n)
{
	struct json_object *o = json_object_new_object();

	for (int p = 0; p < n; p++) {
		struct json_object *part = json_object_new_object();

		add_num(part, "p50_ms", p50[p]);
		add_num(part, "p95_ms", p95[p]);
		json_object_object_add(o, names[p], part);
	}
	return o;
}

void load_print_json(const struct load_cpu *cpu)
{
	struct json_object *o = json_object_new_object(), *arr = json_object_new_array();
	struct json_object *jc = json_object_new_object();

	add_u64(o, "duration_s", (uint64_t)load_opts.duration_s);
	add_u64(o, "warmup_s", (uint64_t)load_opts.warmup_s);
	add_u64(o, "seed", (uint64_t)load_opts.seed);
	add_u64(o, "connections_per_tenant", (uint64_t)load_opts.conns_per_tenant);
	json_object_object_add(o, "arrivals",
			       json_object_new_string(load_opts.fixed_arrivals ? "fixed" : "poisson"));
	json_object_object_add(o, "input", json_object_new_string(load_input_path()));
	for (int i = 0; i < load_nr_tenants; i++) {
		struct load_tenant *t = &load_tenants[i];
		struct json_object *jt = json_object_new_object();
		struct load_summary s;

		summarize(t, &s);
		json_object_object_add(jt, "name", json_object_new_string(t->name));
		add_num(jt, "qps", t->qps);
		add_num(jt, "qos_ms", t->qos_ms);
		add_u64(jt, "sent", t->sent);
		add_u64(jt, "sent_with_warmup", t->sent_total);
		add_num(jt, "offered_rate", s.offered);
		add_num(jt, "achieved_rate", s.achieved);
		for (int k = 0; k < LOAD_NR_OUTCOMES; k++)
			add_u64(jt, load_outcome_name[k], t->outcome[k]);
		add_u64(jt, "outstanding", t->outstanding);
		add_num(jt, "within_qos", s.within);
		add_num(jt, "p50_ms", s.p50);
		add_num(jt, "p95_ms", s.p95);
		add_num(jt, "p99_ms", s.p99);
		add_num(jt, "max_ms", s.max);
		add_num(jt, "colocd_p50_ms", s.c50);
		add_num(jt, "colocd_p95_ms", s.c95);
		add_num(jt, "colocd_p99_ms", s.c99);
		add_num(jt, "colocd_max_ms", s.cmax);
		add_num(jt, "send_p50_ms", s.send50);
		add_num(jt, "send_p95_ms", s.send95);
		add_num(jt, "hop_p50_ms", s.hop50);
		add_num(jt, "hop_p95_ms", s.hop95);
		add_num(jt, "unqueued_p50_ms", s.unq50);
		add_num(jt, "unqueued_p95_ms", s.unq95);
		add_num(jt, "colocd_unqueued_p50_ms", s.cunq50);
		add_num(jt, "colocd_unqueued_p95_ms", s.cunq95);
		add_num(jt, "overhead_p50_ms", s.over50);
		add_num(jt, "overhead_p95_ms", s.over95);
		add_num(jt, "max_send_slip_ms", (double)t->max_slip_ns / 1e6);
		json_object_object_add(jt, "colocd_parts",
				       parts_json(part_names, s.part50, s.part95, COLOC_NR_PARTS));
		json_object_object_add(
			jt, "hop_parts",
			parts_json(load_hop_part_names, s.hpart50, s.hpart95, LOAD_NR_HOP_PARTS));
		for (int k = LOAD_REJECTED; k < LOAD_NR_OUTCOMES; k++) {
			char key[32];

			snprintf(key, sizeof(key), "first_%s_reason", load_outcome_name[k]);
			json_object_object_add(jt, key,
					       t->first_reason[k][0] ?
						       json_object_new_string(t->first_reason[k]) :
						       NULL);
		}
		json_object_array_add(arr, jt);
	}
	json_object_object_add(o, "tenants", arr);
	add_num(jc, "user_s", cpu->user_s);
	add_num(jc, "sys_s", cpu->sys_s);
	add_num(jc, "wall_s", cpu->wall_s);
	json_object_object_add(jc, "share_of_one_cpu",
			       json_object_new_double(round(cpu->share * 1e5) / 1e5));
	add_num(jc, "us_per_query", cpu->us_per_query);
	json_object_object_add(o, "load_cpu", jc);
	if (load_opts.gateway_pid) {
		struct json_object *jg = json_object_new_object();

		add_num(jg, "cpu_s", cpu->gateway_s);
		add_num(jg, "us_per_query", cpu->gateway_us_per_query);
		json_object_object_add(o, "gateway_cpu", jg);
	}
	/* json-c's default %.17g prints 0.1 as 0.10000000000000001 */
	json_c_set_serialization_double_format("%.10g", JSON_C_OPTION_THREAD);
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
}

/* How the inputs travel: "memfd" (colocd's socket by default), "socket" (--socket-copy), "http"/"grpc". */
const char *load_input_path(void)
{
	if (load_route == COLOC_ROUTE_GRPC || load_route == COLOC_ROUTE_GRPC_CORE)
		return "grpc";
	if (load_route == COLOC_ROUTE_HTTP)
		return "http";
	return load_opts.socket_copy ? "socket" : "memfd";
}

void load_print_text(const struct load_cpu *cpu)
{
	printf("coloc-load: %ld s measured (after %ld s warm-up), %s arrivals, seed %ld, %ld "
	       "connection%s per tenant, inputs %s\n",
	       load_opts.duration_s, load_opts.warmup_s,
	       load_opts.fixed_arrivals ? "fixed" : "Poisson", load_opts.seed,
	       load_opts.conns_per_tenant, load_opts.conns_per_tenant == 1 ? "" : "s",
	       load_input_path());
	printf("%-16s %8s %8s %9s %8s %8s %8s %8s %8s %8s %7s %7s %7s %7s %7s\n", "tenant",
	       "offer/s", "done/s", "completed", "p50 ms", "p95 ms", "p99 ms", "max ms", "cd p50",
	       "cd p99", "in QoS", "dropped", "failed", "reject", "outst");
	for (int i = 0; i < load_nr_tenants; i++) {
		struct load_tenant *t = &load_tenants[i];
		struct load_summary s;

		summarize(t, &s);
		printf("%-16s %8.2f %8.2f %9llu %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %6.1f%% %7llu "
		       "%7llu %7llu %7llu\n",
		       t->name, s.offered, s.achieved, (unsigned long long)t->outcome[LOAD_OK],
		       s.p50, s.p95, s.p99, s.max, s.c50, s.c99, 100.0 * s.within,
		       (unsigned long long)t->outcome[LOAD_DROPPED],
		       (unsigned long long)t->outcome[LOAD_FAILED],
		       (unsigned long long)t->outcome[LOAD_REJECTED],
		       (unsigned long long)t->outstanding);
		/* the gateway does not pass colocd's parts on */
		if (load_route == COLOC_ROUTE_SOCKET) {
			printf("  %s in colocd, p50 / p95 ms:", t->name);
			for (int p = 0; p < COLOC_NR_PARTS; p++)
				printf(" %s %.3f / %.3f", part_names[p], s.part50[p], s.part95[p]);
			printf("\n  %s's hop, p50 / p95 ms: send %.3f / %.3f", t->name, s.send50,
			       s.send95);
			for (int p = 0; p < LOAD_NR_HOP_PARTS; p++)
				printf(" %s %.3f / %.3f", load_hop_part_names[p], s.hpart50[p],
				       s.hpart95[p]);
			printf("\n  %s beyond queueing, p50 / p95 ms: served %.3f / %.3f, less queued "
			       "%.3f / %.3f, colocd's less queued %.3f / %.3f, that less compute "
			       "(dispatch, copy, notice, decide, reply and the hop) %.3f / %.3f\n",
			       t->name, s.p50, s.p95, s.unq50, s.unq95, s.cunq50, s.cunq95,
			       s.over50, s.over95);
		}
		for (int k = LOAD_REJECTED; k < LOAD_NR_OUTCOMES; k++)
			if (t->first_reason[k][0])
				printf("  %s: first %s: %s\n", t->name, load_outcome_name[k],
				       t->first_reason[k]);
	}
	printf("(QoS: ");
	for (int i = 0; i < load_nr_tenants; i++)
		printf("%s%s %.1f ms", i ? ", " : "", load_tenants[i].name, load_tenants[i].qos_ms);
	printf("; 'cd' columns are colocd's own latency_ns; in QoS counts misses of every kind)\n");
	printf("coloc-load's own CPU: %.3f s user + %.3f s sys over %.1f s = %.2f%% of one CPU, "
	       "%.1f us per query\n",
	       cpu->user_s, cpu->sys_s, cpu->wall_s, 100.0 * cpu->share, cpu->us_per_query);
	if (load_opts.gateway_pid)
		printf("the gateway's CPU (pid %ld): %.3f s, %.1f us per query\n", load_opts.gateway_pid,
		       cpu->gateway_s, cpu->gateway_us_per_query);
}
