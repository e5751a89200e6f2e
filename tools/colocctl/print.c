// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocctl's tables for people: what colocd answers (signals, tenants,
 * submitted tenants, status and its cores) printed as aligned columns, "-"
 * where a signal is not live on this machine.
 */
#include <stdio.h>
#include <unistd.h>
#include "ctl.h"

bool ctl_get_double(struct json_object *o, const char *key, double *v)
{
	struct json_object *j;

	if (!json_object_object_get_ex(o, key, &j))
		return false;
	*v = json_object_get_double(j);
	return true;
}

const char *ctl_json_str(struct json_object *o, const char *key, const char *dflt)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
		return dflt;
	return json_object_get_string(v);
}

const char *ctl_tenant_name(struct json_object *t, char *buf, size_t len)
{
	double owner = -1;

	ctl_get_double(t, "owner", &owner);
	if (owner < 0 || owner == (double)getuid())
		return ctl_json_str(t, "name", "?");
	snprintf(buf, len, "%.0f:%s", owner, ctl_json_str(t, "name", "?"));
	return buf;
}

double ctl_json_num(struct json_object *o, const char *key)
{
	double v = 0;

	ctl_get_double(o, key, &v);
	return v;
}

/* A column that prints "-" where the signal is not live on this machine. */
static void ctl_cell(struct json_object *o, const char *key, int decimals, double scale,
		     int width)
{
	double v;

	if (ctl_get_double(o, key, &v))
		printf(" %*.*f", width, decimals, v * scale);
	else
		printf(" %*s", width, "-");
}

void ctl_print_signals(struct json_object *resp)
{
	struct json_object *arr, *j;
	size_t n;

	if (json_object_object_get_ex(resp, "signals", &j))
		printf("%s\n", json_object_get_string(j));
	if (json_object_object_get_ex(resp, "span_ms", &j))
		printf("rolling view over the last %d ms\n\n", json_object_get_int(j));

	printf("%4s %4s %6s %9s %8s %9s %5s %8s %6s %9s\n", "CPU", "SKT", "BUSY%", "CTXSW/s",
	       "MIGR/s", "PGFLT/s", "IPC", "LLC-MPKI", "MISS%", "DRAM-GB/s");
	json_object_object_get_ex(resp, "cpus", &arr);
	n = arr ? json_object_array_length(arr) : 0;
	for (size_t i = 0; i < n; i++) {
		struct json_object *c = json_object_array_get_idx(arr, i), *cpu, *skt;

		json_object_object_get_ex(c, "cpu", &cpu);
		json_object_object_get_ex(c, "socket", &skt);
		printf("%4d %4d", json_object_get_int(cpu), json_object_get_int(skt));
		ctl_cell(c, "busy", 1, 100, 6);
		ctl_cell(c, "ctx_switches_per_s", 0, 1, 9);
		ctl_cell(c, "migrations_per_s", 0, 1, 8);
		ctl_cell(c, "page_faults_per_s", 0, 1, 9);
		ctl_cell(c, "ipc", 2, 1, 5);
		ctl_cell(c, "llc_mpki", 2, 1, 8);
		ctl_cell(c, "llc_miss_ratio", 1, 100, 6);
		ctl_cell(c, "dram_gbps", 2, 1, 9);
		printf("\n");
	}

	json_object_object_get_ex(resp, "sockets", &arr);
	n = arr ? json_object_array_length(arr) : 0;
	printf("\n%6s %5s %10s %10s %12s %12s\n", "SOCKET", "CPUS", "BUSY(cpus)", "DRAM-GB/s",
	       "UNC-RD-GB/s", "UNC-WR-GB/s");
	for (size_t i = 0; i < n; i++) {
		struct json_object *s = json_object_array_get_idx(arr, i), *id, *cpus;

		json_object_object_get_ex(s, "socket", &id);
		json_object_object_get_ex(s, "cpus", &cpus);
		printf("%6d %5d", json_object_get_int(id), json_object_get_int(cpus));
		ctl_cell(s, "busy", 2, 1, 10);
		ctl_cell(s, "dram_gbps", 2, 1, 10);
		ctl_cell(s, "uncore_read_gbps", 2, 1, 12);
		ctl_cell(s, "uncore_write_gbps", 2, 1, 12);
		printf("\n");
	}
}

void ctl_print_tenants(struct json_object *resp)
{
	struct json_object *arr;
	size_t n;

	json_object_object_get_ex(resp, "tenants", &arr);
	n = arr ? json_object_array_length(arr) : 0;
	printf("\n%-16s %3s %10s %10s %12s %10s  %s\n", "TENANT", "ID", "BUSY(cpus)", "ON-CPU(s)",
	       "LLC-MISS/s", "DRAM-GB/s", "PIDS");
	if (!n)
		printf("(no tenants: 'colocctl tenant add NAME --pid PID')\n");
	for (size_t i = 0; i < n; i++) {
		struct json_object *t = json_object_array_get_idx(arr, i), *name, *id, *pids;
		double on_cpu = 0;

		json_object_object_get_ex(t, "name", &name);
		/* another user's tenant: colocd shows its name and owner only */
		if (!json_object_object_get_ex(t, "id", &id)) {
			double owner = -1;

			ctl_get_double(t, "owner", &owner);
			printf("%-16s %3s  (uid %.0f's)\n", json_object_get_string(name), "-",
			       owner);
			continue;
		}
		json_object_object_get_ex(t, "pids", &pids);
		printf("%-16s %3d", json_object_get_string(name), json_object_get_int(id));
		ctl_cell(t, "busy", 2, 1, 10);
		ctl_get_double(t, "on_cpu_ns", &on_cpu);
		printf(" %10.2f", on_cpu / 1e9);
		ctl_cell(t, "llc_misses_per_s", 0, 1, 12);
		ctl_cell(t, "dram_gbps", 2, 1, 10);
		printf("  %s\n", json_object_to_json_string_ext(pids, JSON_C_TO_STRING_PLAIN));
	}
}

void ctl_print_signals_and_tenants(struct json_object *resp)
{
	ctl_print_signals(resp);
	ctl_print_tenants(resp);
}

void ctl_print_tenant_added(struct json_object *resp)
{
	struct json_object *t, *name, *id, *pids, *cg;

	if (!json_object_object_get_ex(resp, "tenant", &t))
		return;
	json_object_object_get_ex(t, "name", &name);
	json_object_object_get_ex(t, "id", &id);
	json_object_object_get_ex(t, "pids", &pids);
	json_object_object_get_ex(t, "cgroup", &cg);
	printf("tenant %s (slot %d): pids %s%s%s\n", json_object_get_string(name),
	       json_object_get_int(id),
	       json_object_to_json_string_ext(pids, JSON_C_TO_STRING_PLAIN), cg ? ", cgroup " : "",
	       cg ? json_object_get_string(cg) : "");
}

void ctl_print_done(struct json_object *resp)
{
	(void)resp;
	printf("done\n");
}

void ctl_print_tenant_line(struct json_object *t)
{
	char name[CTL_TENANT_NAME_LEN];
	double qos;

	/* another user's tenant: colocd shows its name, state and owner only */
	if (!ctl_get_double(t, "qos_ms", &qos)) {
		printf("%-16s %-9s (uid %.0f's)\n", ctl_json_str(t, "name", "?"),
		       ctl_json_str(t, "state", "?"), ctl_json_num(t, "owner"));
		return;
	}
	printf("%-16s %-9s %9.2f %9.2f %8.1f %8.1f %8.2f %8.2f %8.2f %7.1f%% %7.0f %5.0f %5.0f\n",
	       ctl_tenant_name(t, name, sizeof(name)), ctl_json_str(t, "state", "?"),
	       ctl_json_num(t, "qos_ms"), ctl_json_num(t, "solo_ms"),
	       ctl_json_num(t, "offered_rate"), ctl_json_num(t, "served_rate"),
	       ctl_json_num(t, "p50_ms"), ctl_json_num(t, "p95_ms"), ctl_json_num(t, "p99_ms"),
	       100 * ctl_json_num(t, "within_qos"), ctl_json_num(t, "served"),
	       ctl_json_num(t, "dropped"), ctl_json_num(t, "rejected") + ctl_json_num(t, "failed"));
}

void ctl_print_tenant_header(void)
{
	printf("%-16s %-9s %9s %9s %8s %8s %8s %8s %8s %8s %7s %5s %5s\n", "TENANT", "STATE",
	       "QOS(ms)", "SOLO(ms)", "OFFER/s", "SERVE/s", "P50(ms)", "P95(ms)", "P99(ms)",
	       "IN-QOS", "SERVED", "DROP", "REJ+F");
}

/* The reasons a tenant gives (why failed, the last drop, rejection, failure). */
void ctl_print_reasons(struct json_object *t)
{
	static const char *const keys[] = { "reason", "note", "last_drop", "last_reject",
					    "last_failure" };

	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		const char *v = ctl_json_str(t, keys[k], NULL);

		if (v)
			printf("  %s %s: %s\n", ctl_json_str(t, "name", "?"), keys[k], v);
	}
}

void ctl_print_submitted(struct json_object *resp)
{
	struct json_object *t;

	if (!json_object_object_get_ex(resp, "tenant", &t))
		return;
	printf("tenant %s admitted (%s): QoS %.2f ms, profiled alone %.2f ms\n",
	       ctl_json_str(t, "name", "?"), ctl_json_str(t, "state", "?"),
	       ctl_json_num(t, "qos_ms"), ctl_json_num(t, "solo_ms"));
	ctl_print_reasons(t);
	if (ctl_json_str(resp, "warning", NULL))
		printf("warning: %s\n", ctl_json_str(resp, "warning", ""));
}

void ctl_print_list(struct json_object *resp)
{
	struct json_object *arr;
	size_t n;

	json_object_object_get_ex(resp, "tenants", &arr);
	n = arr ? json_object_array_length(arr) : 0;
	printf("%-16s %-9s %9s %8s %4s\n", "TENANT", "STATE", "QOS(ms)", "PID", "EXEC");
	if (!n)
		printf("(no tenants: 'colocctl submit NAME MODEL --qos-ms X')\n");
	for (size_t i = 0; i < n; i++) {
		struct json_object *t = json_object_array_get_idx(arr, i);
		char name[CTL_TENANT_NAME_LEN];
		double qos;

		if (!ctl_get_double(t, "qos_ms", &qos)) {
			printf("%-16s %-9s (uid %.0f's)\n", ctl_json_str(t, "name", "?"),
			       ctl_json_str(t, "state", "?"), ctl_json_num(t, "owner"));
			continue;
		}
		printf("%-16s %-9s %9.2f %8.0f %4.0f\n", ctl_tenant_name(t, name, sizeof(name)),
		       ctl_json_str(t, "state", "?"), ctl_json_num(t, "qos_ms"),
		       ctl_json_num(t, "pid"), ctl_json_num(t, "executors"));
	}
}

/* The busy share of one CPU in a signals response, or a negative value if not there. */
static double ctl_cpu_busy(struct json_object *signals, int cpu)
{
	struct json_object *arr;
	double busy;
	size_t n;

	if (!signals || !json_object_object_get_ex(signals, "cpus", &arr))
		return -1;
	n = json_object_array_length(arr);
	for (size_t i = 0; i < n; i++) {
		struct json_object *c = json_object_array_get_idx(arr, i);

		if ((int)ctl_json_num(c, "cpu") == cpu && ctl_get_double(c, "busy", &busy))
			return busy;
	}
	return -1;
}

/* Per core: whose block runs there now, its layers and versions (and how busy, with signals). */
void ctl_print_cores(struct json_object *status, struct json_object *signals)
{
	struct json_object *arr;
	size_t n;

	json_object_object_get_ex(status, "cores", &arr);
	n = arr ? json_object_array_length(arr) : 0;
	if (signals)
		printf("\n%4s %6s %5s %-16s %8s %9s  %s\n", "CPU", "BUSY%", "LEVEL", "TENANT",
		       "QUERY", "LAYERS", "VERSIONS");
	else
		printf("\n%4s %5s %-16s %8s %9s  %s\n", "CPU", "LEVEL", "TENANT", "QUERY", "LAYERS",
		       "VERSIONS");
	for (size_t i = 0; i < n; i++) {
		struct json_object *c = json_object_array_get_idx(arr, i), *v;
		int cpu = (int)ctl_json_num(c, "cpu");
		double busy = ctl_cpu_busy(signals, cpu), level;

		printf("%4d", cpu);
		if (signals && busy >= 0)
			printf(" %6.1f", 100 * busy);
		else if (signals)
			printf(" %6s", "-");
		/* the interference level the policy sees there, once a block ran there */
		if (ctl_get_double(c, "slowdown", &level))
			printf(" %5.2f", level);
		else
			printf(" %5s", "-");
		if (json_object_object_get_ex(c, "shared", &v) && json_object_get_boolean(v)) {
			printf(" (shared by the kernel: %.0f blocks on it)\n",
			       ctl_json_num(c, "blocks"));
			continue;
		}
		if (!json_object_object_get_ex(c, "tenant", &v)) {
			printf(" (free)\n");
			continue;
		}
		/* another user's block: whose the core is, not which query */
		if (!json_object_object_get_ex(c, "versions", &v)) {
			printf(" %-16s\n", ctl_json_str(c, "tenant", "?"));
			continue;
		}
		printf(" %-16s %8.0f %4.0f-%-4.0f  %s\n", ctl_json_str(c, "tenant", "?"),
		       ctl_json_num(c, "query"), ctl_json_num(c, "first_layer"),
		       ctl_json_num(c, "last_layer"),
		       json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
	}
}

/* How well the policy predicted the tenant's block latencies, once blocks have run. */
static void ctl_print_prediction(struct json_object *t)
{
	double blocks = ctl_json_num(t, "blocks"), mape, bias;

	/* both are null until a block has run */
	if (blocks < 1 || !ctl_get_double(t, "prediction_mape", &mape) ||
	    !ctl_get_double(t, "prediction_bias", &bias))
		return;
	printf("  %s prediction: MAPE %.1f%% over %.0f blocks, bias %+.1f%% "
	       "(mean of (measured - predicted) / measured)\n",
	       ctl_json_str(t, "name", "?"), 100 * mape, blocks, 100 * bias);
}

void ctl_print_status(struct json_object *resp)
{
	struct json_object *arr;
	size_t n;

	json_object_object_get_ex(resp, "tenants", &arr);
	n = arr ? json_object_array_length(arr) : 0;
	ctl_print_tenant_header();
	for (size_t i = 0; i < n; i++)
		ctl_print_tenant_line(json_object_array_get_idx(arr, i));
	for (size_t i = 0; i < n; i++) {
		ctl_print_prediction(json_object_array_get_idx(arr, i));
		ctl_print_reasons(json_object_array_get_idx(arr, i));
	}
	ctl_print_cores(resp, NULL);
}

/* The machine in one line: the signals colocd has, and the sockets' busy CPUs and DRAM. */
void ctl_print_machine(struct json_object *signals, const char *error)
{
	struct json_object *arr;
	double busy = 0, dram = 0, v;
	bool have_dram = false;
	int cpus = 0;
	size_t n;

	if (!signals) {
		printf("signals: unavailable (%s)\n", error);
		return;
	}
	printf("%s\n", ctl_json_str(signals, "signals", "signals: ?"));
	json_object_object_get_ex(signals, "sockets", &arr);
	n = arr ? json_object_array_length(arr) : 0;
	for (size_t i = 0; i < n; i++) {
		struct json_object *skt = json_object_array_get_idx(arr, i);

		busy += ctl_json_num(skt, "busy");
		cpus += (int)ctl_json_num(skt, "cpus");
		if (ctl_get_double(skt, "dram_gbps", &v)) {
			dram += v;
			have_dram = true;
		}
	}
	printf("machine: %.2f of %d cpus busy over the last %.0f ms", busy, cpus,
	       ctl_json_num(signals, "span_ms"));
	if (have_dram)
		printf(", DRAM %.2f GB/s", dram);
	printf("\n");
}
