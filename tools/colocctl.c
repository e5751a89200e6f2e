// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocctl: the operator's CLI for colocd. Speaks the JSON-lines protocol of
 * include/coloc/protocol.h over the control socket (json-c on both ends),
 * prints tables for people and raw JSON with --json for scripts.
 */
#include <errno.h>
#include <stddef.h>
#include <getopt.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <json-c/json.h>
#include "coloc/client.h"
#include "coloc/protocol.h"
#include "cli.h"

static struct {
	const char *socket_path;
	bool json;
	bool watch;
	unsigned int interval_ms;
	unsigned int count; /* 0: until interrupted */
	unsigned int frames; /* top: 0: until q or Ctrl-C */
} opts = {
	.socket_path = COLOC_DEFAULT_SOCKET,
	.interval_ms = 1000,
};

static volatile sig_atomic_t interrupted;
static bool interval_given;

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: colocctl [OPTION]... COMMAND [ARGS]\n"
		"Talk to colocd, the coloc daemon, over its control socket.\n"
		"\n"
		"Commands:\n"
		"  ping                          is colocd there? prints its version and pid\n"
		"  signals [--json] [--watch [--interval MS] [--count N]]\n"
		"                                live per-core, per-socket and per-tenant signals\n"
		"  tenants [--json]              tenants and what they have used\n"
		"  tenant add NAME [--pid PID]... [--cgroup DIR]\n"
		"                                attribute processes (all their threads) and/or\n"
		"                                a cgroup v2 directory to tenant NAME\n"
		"  tenant rm NAME                forget tenant NAME (also: tenant remove NAME)\n"
		"\n"
		"Serving (colocd runs one executor per tenant, or N with --executors N):\n"
		"  submit NAME MODEL --qos-ms X [--weights FILE] [--executors N] [--json]\n"
		"                                admit a model as tenant NAME with a latency\n"
		"                                target of X ms; its profile must be in colocd's\n"
		"                                cache (the error names the coloc-profile command);\n"
		"                                N executor processes (1 to 8, default 1) run\n"
		"                                up to N of its queries at once\n"
		"  list [--json]                 submitted tenants and their states\n"
		"  status [NAME] [--json]        per tenant: state, rates, p50/p95/p99, share\n"
		"                                within QoS, drops and rejections with reasons,\n"
		"                                the policy's block-latency prediction error\n"
		"                                (MAPE over the blocks run); per core: which\n"
		"                                tenant's layers run there\n"
		"  remove NAME                   stop taking queries, finish the queued ones,\n"
		"                                then stop the executor (answers once done)\n"
		"  restart NAME                  start a failed tenant's executor again\n"
		"  top [--interval MS] [--frames N]\n"
		"                                a live view, refreshed every MS (default 1000):\n"
		"                                the machine's signals, each tenant's state,\n"
		"                                rates, p50/p95/p99, share within QoS, drops and\n"
		"                                rejections, and which tenant's layers (with\n"
		"                                versions) each core runs now. q or Ctrl-C quits;\n"
		"                                piped, it prints one frame per interval\n"
		"  infer NAME [--input FILE] [--output FILE] [--json]\n"
		"                                one query: FILE holds the model's inputs as raw\n"
		"                                little-endian fp32, one after another (status\n"
		"                                shows input_bytes); random 0s and 1s (valid\n"
		"                                pixels and token ids) without it. The outputs, raw fp32 likewise, go\n"
		"                                to --output, else the first few are printed\n"
		"\n"
		"Options (before or after the command):\n"
		"  -s, --socket PATH   colocd's control socket (default %s)\n"
		"  -j, --json          print the daemon's JSON response as is\n"
		"  -w, --watch         with signals: repeat until Ctrl-C\n"
		"  -i, --interval MS   with --watch or top: time between updates, 10-3600000\n"
		"                      (default 1000)\n"
		"  -n, --count N       with --watch: stop after N updates\n"
		"      --frames N      with top: stop after N frames\n"
		"  -h, --help          this help\n"
		"  -V, --version       print the version and exit\n"
		"\n"
		"The socket admits root and members of group '%s'; join it with\n"
		"'usermod -aG %s USER' (as root), then log in again.\n"
		"\n"
		"Exit status: 0 done, 1 the daemon refused or is unreachable, 2 bad usage.\n",
		COLOC_DEFAULT_SOCKET, COLOC_GROUP, COLOC_GROUP);
}

/* Whether the calling process has gid among its groups (real, effective or supplementary). */
static bool ctl_in_group(gid_t gid)
{
	int n = getgroups(0, NULL);
	bool found = getgid() == gid || getegid() == gid;
	gid_t *groups;

	if (found || n <= 0)
		return found;
	groups = calloc((size_t)n, sizeof(*groups));
	if (!groups)
		return false;
	n = getgroups(n, groups);
	for (int i = 0; i < n && !found; i++)
		found = groups[i] == gid;
	free(groups);
	return found;
}

/* Turns a failed connect() into what the operator should do about it. */
static void ctl_explain_connect_error(int err)
{
	const char *path = opts.socket_path;
	struct group *grp;
	struct stat st;

	switch (err) {
	case ENOENT:
	case ECONNREFUSED:
		if (strcmp(path, COLOC_DEFAULT_SOCKET))
			fprintf(stderr,
				"colocctl: colocd is not running (%s %s); start it as root with "
				"'colocd --socket %s &'\n",
				err == ENOENT ? "no socket at" : "nothing listens on", path, path);
		else
			fprintf(stderr,
				"colocctl: colocd is not running (%s %s); start it as root with "
				"'systemctl start colocd' where it is installed, or 'colocd &'\n",
				err == ENOENT ? "no socket at" : "nothing listens on", path);
		return;
	case EACCES:
	case EPERM:
		grp = getgrnam(COLOC_GROUP);
		if (stat(path, &st))
			fprintf(stderr,
				"colocctl: permission denied on %s: a directory above it is closed "
				"to you (%s)\n",
				path, strerror(errno));
		else if (!grp)
			fprintf(stderr,
				"colocctl: permission denied on %s: only root may connect, because "
				"group '%s' does not exist; create it ('make deps' or "
				"'groupadd --system %s' as root) and restart colocd\n",
				path, COLOC_GROUP, COLOC_GROUP);
		else if (ctl_in_group(grp->gr_gid) && st.st_gid != grp->gr_gid)
			fprintf(stderr,
				"colocctl: permission denied on %s although you are in group '%s': "
				"the socket is not the group's, colocd was started before the "
				"group existed; restart it\n",
				path, COLOC_GROUP);
		else
			fprintf(stderr,
				"colocctl: permission denied on %s: colocd admits root and members of "
				"group '%s'; run as root, or join the group with "
				"'usermod -aG %s $USER' (as root) and log in again\n",
				path, COLOC_GROUP, COLOC_GROUP);
		return;
	default:
		fprintf(stderr, "colocctl: cannot reach colocd at %s: %s\n", path, strerror(err));
	}
}

static struct coloc_client *ctl_connect(void)
{
	struct coloc_client *c;
	struct stat st;
	int ret;

	if (!stat(opts.socket_path, &st) && !S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "colocctl: %s is not a socket (colocd's is %s by default)\n",
			opts.socket_path, COLOC_DEFAULT_SOCKET);
		return NULL;
	}
	ret = coloc_client_connect(opts.socket_path, &c);
	if (ret == -ENAMETOOLONG)
		fprintf(stderr, "colocctl: socket path too long: %s\n", opts.socket_path);
	else if (ret)
		ctl_explain_connect_error(-ret);
	return ret ? NULL : c;
}

/* Sends one request and returns the parsed response, or NULL with a message. */
static struct json_object *ctl_request(struct coloc_client *c, struct json_object *req)
{
	struct json_object *resp = coloc_client_call(c, req);

	if (!resp)
		fprintf(stderr, "colocctl: %s\n", coloc_client_error(c));
	return resp;
}

static bool ctl_ok(struct json_object *resp)
{
	struct json_object *ok, *err;

	if (json_object_object_get_ex(resp, "ok", &ok) && json_object_get_boolean(ok))
		return true;
	fprintf(stderr, "colocctl: colocd: %s\n",
		json_object_object_get_ex(resp, "error", &err) ? json_object_get_string(err) :
								 "request failed");
	return false;
}

static bool ctl_get_double(struct json_object *o, const char *key, double *v)
{
	struct json_object *j;

	if (!json_object_object_get_ex(o, key, &j))
		return false;
	*v = json_object_get_double(j);
	return true;
}

/* A column that prints "-" where the signal is not live on this machine. */
static void ctl_cell(struct json_object *o, const char *key, const char *fmt, double scale,
		     int width)
{
	double v;

	if (ctl_get_double(o, key, &v))
		printf(fmt, width, v * scale);
	else
		printf(" %*s", width, "-");
}

static void ctl_print_signals(struct json_object *resp)
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
		ctl_cell(c, "busy", " %*.1f", 100, 6);
		ctl_cell(c, "ctx_switches_per_s", " %*.0f", 1, 9);
		ctl_cell(c, "migrations_per_s", " %*.0f", 1, 8);
		ctl_cell(c, "page_faults_per_s", " %*.0f", 1, 9);
		ctl_cell(c, "ipc", " %*.2f", 1, 5);
		ctl_cell(c, "llc_mpki", " %*.2f", 1, 8);
		ctl_cell(c, "llc_miss_ratio", " %*.1f", 100, 6);
		ctl_cell(c, "dram_gbps", " %*.2f", 1, 9);
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
		ctl_cell(s, "busy", " %*.2f", 1, 10);
		ctl_cell(s, "dram_gbps", " %*.2f", 1, 10);
		ctl_cell(s, "uncore_read_gbps", " %*.2f", 1, 12);
		ctl_cell(s, "uncore_write_gbps", " %*.2f", 1, 12);
		printf("\n");
	}
}

static void ctl_print_tenants(struct json_object *resp)
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
		ctl_cell(t, "busy", " %*.2f", 1, 10);
		ctl_get_double(t, "on_cpu_ns", &on_cpu);
		printf(" %10.2f", on_cpu / 1e9);
		ctl_cell(t, "llc_misses_per_s", " %*.0f", 1, 12);
		ctl_cell(t, "dram_gbps", " %*.2f", 1, 10);
		printf("  %s\n", json_object_to_json_string_ext(pids, JSON_C_TO_STRING_PLAIN));
	}
}

static void ctl_print_tenant_added(struct json_object *resp)
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

static void ctl_print_done(struct json_object *resp)
{
	(void)resp;
	printf("done\n");
}

static void on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}

static int ctl_run(struct json_object *req, void (*print)(struct json_object *))
{
	unsigned int rounds = 0;
	struct coloc_client *fd = ctl_connect();
	int rc = 0;

	if (!fd) {
		json_object_put(req);
		return 1;
	}
	signal(SIGINT, on_interrupt);
	do {
		struct json_object *resp = ctl_request(fd, req);

		if (!resp || !ctl_ok(resp)) {
			json_object_put(resp);
			rc = 1;
			break;
		}
		if (opts.watch && !opts.json && isatty(STDOUT_FILENO))
			printf("\033[H\033[2J");
		if (opts.json || !print)
			printf("%s\n",
			       json_object_to_json_string_ext(resp, JSON_C_TO_STRING_PLAIN));
		else
			print(resp);
		fflush(stdout);
		json_object_put(resp);
		if (!opts.watch || (opts.count && ++rounds >= opts.count))
			break;
		if (!opts.json && !isatty(STDOUT_FILENO))
			printf("\n");
		struct timespec ts = { opts.interval_ms / 1000,
				       (opts.interval_ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	} while (!interrupted);
	coloc_client_close(fd);
	json_object_put(req);
	return rc;
}

static void ctl_print_signals_and_tenants(struct json_object *resp)
{
	ctl_print_signals(resp);
	ctl_print_tenants(resp);
}

static struct json_object *ctl_cmd(const char *cmd)
{
	struct json_object *req = json_object_new_object();

	json_object_object_add(req, "cmd", json_object_new_string(cmd));
	return req;
}

static int ctl_tenant_add(int argc, char **argv)
{
	struct json_object *req = ctl_cmd("tenant-add"), *pids = json_object_new_array();
	bool have_pid = false, have_cgroup = false;

	json_object_object_add(req, "name", json_object_new_string(argv[0]));
	for (int i = 1; i < argc; i++) {
		long pid;

		if (!strcmp(argv[i], "--pid") && i + 1 < argc) {
			if (cli_parse_flag("colocctl", "--pid", argv[++i], 1, 0x3fffffff, &pid))
				goto bad;
			json_object_array_add(pids, json_object_new_int64((int64_t)pid));
			have_pid = true;
		} else if (!strcmp(argv[i], "--cgroup") && i + 1 < argc && !have_cgroup) {
			json_object_object_add(req, "cgroup", json_object_new_string(argv[++i]));
			have_cgroup = true;
		} else {
			fprintf(stderr, "colocctl: tenant add: unexpected '%s'\n", argv[i]);
			goto bad;
		}
	}
	if (!have_pid && !have_cgroup) {
		fprintf(stderr, "colocctl: tenant add NAME needs --pid PID or --cgroup DIR\n");
		goto bad;
	}
	if (have_pid)
		json_object_object_add(req, "pids", pids);
	else
		json_object_put(pids);
	return ctl_run(req, ctl_print_tenant_added);
bad:
	json_object_put(pids);
	json_object_put(req);
	return 2;
}

static int ctl_tenant(int argc, char **argv)
{
	struct json_object *req;

	if (argc >= 2 && !strcmp(argv[0], "add"))
		return ctl_tenant_add(argc - 1, argv + 1);
	if (argc == 2 && (!strcmp(argv[0], "rm") || !strcmp(argv[0], "remove"))) {
		req = ctl_cmd("tenant-remove");
		json_object_object_add(req, "name", json_object_new_string(argv[1]));
		return ctl_run(req, ctl_print_done);
	}
	fprintf(stderr,
		"colocctl: usage: tenant add NAME [--pid PID]... [--cgroup DIR] | tenant rm NAME\n");
	return 2;
}

/* ---- submitted tenants and their queries ------------------------------------- */

/* The arguments of a tenant command: positional words and the flags it takes. */
struct ctl_args {
	const char *pos[3];
	int nr_pos;
	const char *qos_ms, *weights, *input, *output, *executors;
};

/* Splits argv (after the command) into words and flags; 0 or 2 (bad usage). */
static int ctl_parse_args(const char *cmd, int argc, char **argv, const char *allowed,
			  struct ctl_args *a)
{
	static const struct {
		const char *flag;
		char key;
		size_t off;
	} flags[] = {
		{ "--qos-ms", 'q', offsetof(struct ctl_args, qos_ms) },
		{ "--weights", 'w', offsetof(struct ctl_args, weights) },
		{ "--input", 'i', offsetof(struct ctl_args, input) },
		{ "--output", 'o', offsetof(struct ctl_args, output) },
		{ "--executors", 'e', offsetof(struct ctl_args, executors) },
	};

	memset(a, 0, sizeof(*a));
	for (int i = 0; i < argc; i++) {
		bool known = false;

		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j")) {
			opts.json = true;
			continue;
		}
		if ((!strcmp(argv[i], "--socket") || !strcmp(argv[i], "-s")) && i + 1 < argc) {
			opts.socket_path = argv[++i];
			continue;
		}
		for (size_t f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
			if (strcmp(argv[i], flags[f].flag) || !strchr(allowed, flags[f].key))
				continue;
			if (i + 1 >= argc) {
				fprintf(stderr, "colocctl: %s: %s wants a value\n", cmd, argv[i]);
				return 2;
			}
			*(const char **)((char *)a + flags[f].off) = argv[++i];
			known = true;
		}
		if (known)
			continue;
		if (argv[i][0] == '-' || a->nr_pos >= 3) {
			fprintf(stderr, "colocctl: %s: unexpected '%s' (see --help)\n", cmd,
				argv[i]);
			return 2;
		}
		a->pos[a->nr_pos++] = argv[i];
	}
	return 0;
}

static const char *ctl_json_str(struct json_object *o, const char *key, const char *dflt)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
		return dflt;
	return json_object_get_string(v);
}

static double ctl_json_num(struct json_object *o, const char *key)
{
	double v = 0;

	ctl_get_double(o, key, &v);
	return v;
}

static void ctl_print_tenant_line(struct json_object *t)
{
	double qos;

	/* another user's tenant: colocd shows its name, state and owner only */
	if (!ctl_get_double(t, "qos_ms", &qos)) {
		printf("%-16s %-9s (uid %.0f's)\n", ctl_json_str(t, "name", "?"),
		       ctl_json_str(t, "state", "?"), ctl_json_num(t, "owner"));
		return;
	}
	printf("%-16s %-9s %9.2f %9.2f %8.1f %8.1f %8.2f %8.2f %8.2f %7.1f%% %7.0f %5.0f %5.0f\n",
	       ctl_json_str(t, "name", "?"), ctl_json_str(t, "state", "?"),
	       ctl_json_num(t, "qos_ms"), ctl_json_num(t, "solo_ms"),
	       ctl_json_num(t, "offered_rate"), ctl_json_num(t, "served_rate"),
	       ctl_json_num(t, "p50_ms"), ctl_json_num(t, "p95_ms"), ctl_json_num(t, "p99_ms"),
	       100 * ctl_json_num(t, "within_qos"), ctl_json_num(t, "served"),
	       ctl_json_num(t, "dropped"), ctl_json_num(t, "rejected") + ctl_json_num(t, "failed"));
}

static void ctl_print_tenant_header(void)
{
	printf("%-16s %-9s %9s %9s %8s %8s %8s %8s %8s %8s %7s %5s %5s\n", "TENANT", "STATE",
	       "QOS(ms)", "SOLO(ms)", "OFFER/s", "SERVE/s", "P50(ms)", "P95(ms)", "P99(ms)",
	       "IN-QOS", "SERVED", "DROP", "REJ+F");
}

/* The reasons a tenant gives (why failed, the last drop, rejection, failure). */
static void ctl_print_reasons(struct json_object *t)
{
	static const char *const keys[] = { "reason", "note", "last_drop", "last_reject",
					    "last_failure" };

	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		const char *v = ctl_json_str(t, keys[k], NULL);

		if (v)
			printf("  %s %s: %s\n", ctl_json_str(t, "name", "?"), keys[k], v);
	}
}

static void ctl_print_submitted(struct json_object *resp)
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

static void ctl_print_list(struct json_object *resp)
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
		double qos;

		if (!ctl_get_double(t, "qos_ms", &qos)) {
			printf("%-16s %-9s (uid %.0f's)\n", ctl_json_str(t, "name", "?"),
			       ctl_json_str(t, "state", "?"), ctl_json_num(t, "owner"));
			continue;
		}
		printf("%-16s %-9s %9.2f %8.0f %4.0f\n", ctl_json_str(t, "name", "?"),
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
static void ctl_print_cores(struct json_object *status, struct json_object *signals)
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

static void ctl_print_status(struct json_object *resp)
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
static void ctl_print_machine(struct json_object *signals, const char *error)
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

/* One frame of top: the machine, the tenants, the cores. */
static void ctl_print_top(struct json_object *status, struct json_object *signals,
			  const char *signals_error)
{
	struct json_object *arr;
	char when[32];
	time_t now = time(NULL);
	size_t n;

	strftime(when, sizeof(when), "%H:%M:%S", localtime(&now));
	printf("colocctl top  %s  every %u ms  (q or Ctrl-C quits)\n", when, opts.interval_ms);
	ctl_print_machine(signals, signals_error);
	printf("\n");
	json_object_object_get_ex(status, "tenants", &arr);
	n = arr ? json_object_array_length(arr) : 0;
	ctl_print_tenant_header();
	if (!n)
		printf("(no tenants: 'colocctl submit NAME MODEL --qos-ms X')\n");
	for (size_t i = 0; i < n; i++)
		ctl_print_tenant_line(json_object_array_get_idx(arr, i));
	for (size_t i = 0; i < n; i++)
		ctl_print_reasons(json_object_array_get_idx(arr, i));
	ctl_print_cores(status, signals);
}

/*
 * Waits up to the interval for a key on a terminal: true if it was q (or
 * the interval ended in Ctrl-C), false when it is time for the next frame.
 */
static bool ctl_top_wait(bool keys)
{
	struct timespec t0, t;
	long left = (long)opts.interval_ms;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (left > 0 && !interrupted) {
		struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
		char ch;

		if (poll(&p, keys ? 1 : 0, (int)left) == 1) {
			if (read(STDIN_FILENO, &ch, 1) != 1 || ch == 'q' || ch == 'Q')
				return true;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		left = (long)opts.interval_ms -
		       ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
	}
	return interrupted;
}

/*
 * colocctl top: status and signals every interval, through the client
 * library. On a terminal it redraws in place and reads single keys (the
 * terminal is put back as it was on the way out); piped, it prints one
 * frame after another, so a script or a test can read them.
 */
static int ctl_top(void)
{
	struct sigaction sa = { .sa_handler = on_interrupt }; /* no SA_RESTART: poll returns */
	bool tty_out = isatty(STDOUT_FILENO), keys = tty_out && isatty(STDIN_FILENO);
	struct json_object *status_req = ctl_cmd("status"), *signals_req = ctl_cmd("signals");
	struct coloc_client *c = ctl_connect();
	struct termios saved, raw;
	unsigned int frames = 0;
	int rc = 0;

	if (!c) {
		json_object_put(status_req);
		json_object_put(signals_req);
		return 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (keys && !tcgetattr(STDIN_FILENO, &saved)) {
		raw = saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO); /* ISIG stays: Ctrl-C still interrupts */
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		keys = !tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	} else {
		keys = false;
	}
	while (!interrupted) {
		struct json_object *status = coloc_client_call(c, status_req);
		struct json_object *signals;
		char signals_error[256] = "";

		if (!status || !coloc_client_ok(c, status)) {
			fprintf(stderr, "colocctl: %s\n", coloc_client_error(c));
			json_object_put(status);
			rc = 1;
			break;
		}
		/* a daemon without sensing still serves: the frame says why there are no signals */
		signals = coloc_client_call(c, signals_req);
		if (!signals || !coloc_client_ok(c, signals)) {
			snprintf(signals_error, sizeof(signals_error), "%s", coloc_client_error(c));
			json_object_put(signals);
			signals = NULL;
		}
		if (tty_out)
			printf("\033[H\033[2J");
		ctl_print_top(status, signals, signals_error);
		json_object_put(status);
		json_object_put(signals);
		if (opts.frames && ++frames >= opts.frames) {
			fflush(stdout);
			break;
		}
		if (!tty_out)
			printf("\n");
		fflush(stdout);
		if (ctl_top_wait(keys))
			break;
	}
	if (keys)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	coloc_client_close(c);
	json_object_put(status_req);
	json_object_put(signals_req);
	return rc;
}

/*
 * The files go as descriptors this process opens, with the user's own
 * permissions (libcoloc_client): colocd opens no path.
 */
static int ctl_submit_files(const struct coloc_submit *sub)
{
	struct coloc_client *c = ctl_connect();
	struct json_object *resp;
	int rc = 0;

	if (!c)
		return 1;
	resp = coloc_client_submit(c, sub);
	if (!resp) {
		fprintf(stderr, "colocctl: %s\n", coloc_client_error(c));
		rc = 1;
	} else if (!ctl_ok(resp)) {
		rc = 1;
	} else if (opts.json) {
		printf("%s\n", json_object_to_json_string_ext(resp, JSON_C_TO_STRING_PLAIN));
	} else {
		ctl_print_submitted(resp);
	}
	json_object_put(resp);
	coloc_client_close(c);
	return rc;
}

static int ctl_submit(int argc, char **argv)
{
	struct ctl_args a;
	long executors = 0;
	double qos;
	char *end;

	if (ctl_parse_args("submit", argc, argv, "qwe", &a))
		return 2;
	if (a.nr_pos != 2 || !a.qos_ms) {
		fprintf(stderr, "colocctl: usage: submit NAME MODEL --qos-ms X [--weights FILE] "
				"[--executors N] [--json]\n");
		return 2;
	}
	if (a.executors) {
		errno = 0;
		executors = strtol(a.executors, &end, 10);
		if (errno || end == a.executors || *end || executors < 1 ||
		    executors > COLOC_MAX_EXECUTORS) {
			fprintf(stderr,
				"colocctl: --executors wants a whole number from 1 to %d, not "
				"'%s'\n",
				COLOC_MAX_EXECUTORS, a.executors);
			return 2;
		}
	}
	errno = 0;
	qos = strtod(a.qos_ms, &end);
	if (errno || end == a.qos_ms || *end || !(qos > 0 && qos <= 3600000)) {
		fprintf(stderr, "colocctl: --qos-ms wants a number of ms above 0, not '%s'\n",
			a.qos_ms);
		return 2;
	}
	return ctl_submit_files(&(struct coloc_submit){ .name = a.pos[0],
							.model = a.pos[1],
							.weights = a.weights,
							.qos_ms = qos,
							.executors = (int)executors });
}

/* list, status [NAME], remove NAME, restart NAME */
static int ctl_named(const char *cmd, int argc, char **argv, int min, int max,
		     void (*print)(struct json_object *))
{
	struct json_object *req;
	struct ctl_args a;

	if (ctl_parse_args(cmd, argc, argv, "", &a))
		return 2;
	if (a.nr_pos < min || a.nr_pos > max) {
		fprintf(stderr, "colocctl: usage: %s%s (see --help)\n", cmd,
			max ? (min ? " NAME" : " [NAME]") : "");
		return 2;
	}
	req = ctl_cmd(cmd);
	if (a.nr_pos)
		json_object_object_add(req, "name", json_object_new_string(a.pos[0]));
	return ctl_run(req, print);
}

/* The tenant's input and output sizes, from status. */
static int ctl_tenant_sizes(struct coloc_client *c, const char *name, size_t *in, size_t *out)
{
	struct json_object *req = ctl_cmd("status"), *resp, *arr;
	int rc = 1;

	json_object_object_add(req, "name", json_object_new_string(name));
	resp = ctl_request(c, req);
	json_object_put(req);
	if (resp && ctl_ok(resp) && json_object_object_get_ex(resp, "tenants", &arr) &&
	    json_object_array_length(arr) == 1) {
		struct json_object *t = json_object_array_get_idx(arr, 0);

		*in = (size_t)ctl_json_num(t, "input_bytes");
		*out = (size_t)ctl_json_num(t, "output_bytes");
		rc = 0;
	}
	json_object_put(resp);
	return rc;
}

/*
 * The input: FILE's bytes (exactly len of them), or random 0s and 1s: whole
 * numbers, so the same input is valid pixels and valid token ids (every
 * embedding has a vocabulary of at least 2) whatever the model.
 */
static void *ctl_read_input(const char *path, size_t len)
{
	float *buf = malloc(len ? len : 1);
	FILE *f;

	if (!buf)
		return NULL;
	if (!path) {
		srand((unsigned int)time(NULL) ^ (unsigned int)getpid());
		for (size_t i = 0; i < len / sizeof(float); i++)
			buf[i] = (float)(rand() & 1);
		return buf;
	}
	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "colocctl: %s: %s\n", path, strerror(errno));
		free(buf);
		return NULL;
	}
	if (fread(buf, 1, len, f) != len || fgetc(f) != EOF) {
		fprintf(stderr,
			"colocctl: %s must hold exactly %zu bytes (the model's inputs as raw "
			"little-endian fp32)\n",
			path, len);
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static int ctl_write_output(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	int rc = 0;

	if (!f || fwrite(buf, 1, len, f) != len)
		rc = 1;
	if (f && fclose(f))
		rc = 1;
	if (rc)
		fprintf(stderr, "colocctl: cannot write %s: %s\n", path, strerror(errno));
	return rc;
}

static void ctl_print_infer(const struct coloc_infer_result *r, const float *out, bool to_file)
{
	static const char *const names[] = { "ok", "rejected", "dropped", "failed" };

	if (opts.json) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "ok", json_object_new_boolean(r->status == 0));
		json_object_object_add(o, "status", json_object_new_string(names[r->status]));
		json_object_object_add(o, "latency_ns",
				       json_object_new_int64((int64_t)r->latency_ns));
		json_object_object_add(o, "exec_ns", json_object_new_int64((int64_t)r->exec_ns));
		json_object_object_add(o, "output_bytes",
				       json_object_new_int64((int64_t)r->output_bytes));
		if (r->error[0])
			json_object_object_add(o, "error", json_object_new_string(r->error));
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		json_object_put(o);
		return;
	}
	printf("%s: latency %.3f ms in colocd (executor %.3f ms), %zu output bytes\n",
	       names[r->status], r->latency_ns / 1e6, r->exec_ns / 1e6, r->output_bytes);
	if (!to_file && r->output_bytes) {
		size_t n = r->output_bytes / sizeof(float), show = n < 8 ? n : 8;

		printf("output[0..%zu):", show);
		for (size_t i = 0; i < show; i++)
			printf(" %g", out[i]);
		printf("%s\n", n > show ? " ..." : "");
	}
}

static int ctl_infer(int argc, char **argv)
{
	struct coloc_infer_result res;
	struct coloc_client *c;
	struct ctl_args a;
	size_t in_len, out_len;
	void *in = NULL, *out = NULL;
	int rc = 1, ret;

	if (ctl_parse_args("infer", argc, argv, "io", &a))
		return 2;
	if (a.nr_pos != 1) {
		fprintf(stderr, "colocctl: usage: infer NAME [--input FILE] [--output FILE]\n");
		return 2;
	}
	c = ctl_connect();
	if (!c)
		return 1;
	if (ctl_tenant_sizes(c, a.pos[0], &in_len, &out_len))
		goto out;
	in = ctl_read_input(a.input, in_len);
	out = malloc(out_len ? out_len : 1);
	if (!in || !out)
		goto out;
	ret = coloc_client_infer(c, a.pos[0], in, in_len, out, out_len, &res);
	if (ret) {
		fprintf(stderr, "colocctl: infer: %s\n", coloc_client_error(c));
		goto out;
	}
	if (res.status != COLOC_INFER_OK) {
		ctl_print_infer(&res, out, false);
		if (!opts.json)
			fprintf(stderr, "colocctl: colocd: %s\n", res.error);
		goto out;
	}
	if (a.output && ctl_write_output(a.output, out, res.output_bytes))
		goto out;
	ctl_print_infer(&res, out, a.output != NULL);
	rc = 0;
out:
	free(in);
	free(out);
	coloc_client_close(c);
	return rc;
}

/* The commands that parse their own arguments. */
static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} ctl_tenant_cmds[] = {
	{ "submit", ctl_submit },
	{ "infer", ctl_infer },
};

static int ctl_list(int argc, char **argv)
{
	return ctl_named("list", argc, argv, 0, 0, ctl_print_list);
}

static int ctl_status(int argc, char **argv)
{
	return ctl_named("status", argc, argv, 0, 1, ctl_print_status);
}

static int ctl_remove(int argc, char **argv)
{
	return ctl_named("remove", argc, argv, 1, 1, ctl_print_done);
}

static int ctl_restart(int argc, char **argv)
{
	return ctl_named("restart", argc, argv, 1, 1, ctl_print_done);
}

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} ctl_simple_cmds[] = {
	{ "list", ctl_list },
	{ "status", ctl_status },
	{ "remove", ctl_remove },
	{ "restart", ctl_restart },
};

/* Parses options up to the first non-option word; returns 0, or the exit code. */
static int parse_opts(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "watch", no_argument, NULL, 'w' },
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ "frames", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{},
	};
	long v;
	int opt;

	while ((opt = getopt_long(argc, argv, "+s:jwi:n:hV", long_opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			if (!optarg[0]) {
				fprintf(stderr, "colocctl: --socket wants a path\n");
				return 2;
			}
			opts.socket_path = optarg;
			break;
		case 'j':
			opts.json = true;
			break;
		case 'w':
			opts.watch = true;
			break;
		case 'i':
			if (cli_parse_flag("colocctl", "--interval", optarg, 10, 3600000, &v))
				return 2;
			opts.interval_ms = (unsigned int)v;
			interval_given = true;
			break;
		case 'n':
			if (cli_parse_flag("colocctl", "--count", optarg, 1, 1000000, &v))
				return 2;
			opts.count = (unsigned int)v;
			break;
		case 'F':
			if (cli_parse_flag("colocctl", "--frames", optarg, 1, 1000000, &v))
				return 2;
			opts.frames = (unsigned int)v;
			break;
		case 'h':
			usage(stdout);
			return 1;
		case 'V':
			cli_print_version("colocctl");
			return 1;
		default:
			usage(stderr);
			return 2;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd;
	int rc;

	rc = parse_opts(argc, argv);
	if (rc)
		return rc == 1 ? 0 : rc;
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	argc -= optind;
	argv += optind;
	cmd = argv[0];
	if (!strcmp(cmd, "tenant"))
		return ctl_tenant(argc - 1, argv + 1);
	for (size_t i = 0; i < sizeof(ctl_tenant_cmds) / sizeof(ctl_tenant_cmds[0]); i++)
		if (!strcmp(cmd, ctl_tenant_cmds[i].name))
			return ctl_tenant_cmds[i].run(argc - 1, argv + 1);
	for (size_t i = 0; i < sizeof(ctl_simple_cmds) / sizeof(ctl_simple_cmds[0]); i++)
		if (!strcmp(cmd, ctl_simple_cmds[i].name))
			return ctl_simple_cmds[i].run(argc - 1, argv + 1);
	/* options may also follow the command: "signals --json --watch" */
	optind = 0;
	rc = parse_opts(argc, argv);
	if (rc)
		return rc == 1 ? 0 : rc;
	if (optind != argc) {
		fprintf(stderr, "colocctl: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!strcmp(cmd, "top")) {
		if (opts.watch || opts.count || opts.json) {
			fprintf(stderr, "colocctl: top takes --interval and --frames, not --watch, "
					"--count or --json\n");
			return 2;
		}
		return ctl_top();
	}
	if (opts.frames) {
		fprintf(stderr, "colocctl: --frames goes with 'top' only\n");
		return 2;
	}
	if (opts.watch && strcmp(cmd, "signals")) {
		fprintf(stderr, "colocctl: --watch goes with 'signals' only\n");
		return 2;
	}
	if ((opts.count || interval_given) && !opts.watch) {
		fprintf(stderr, "colocctl: --count and --interval go with --watch\n");
		return 2;
	}
	if (!strcmp(cmd, "ping"))
		return ctl_run(ctl_cmd("ping"), NULL);
	if (!strcmp(cmd, "signals"))
		return ctl_run(ctl_cmd("signals"), ctl_print_signals_and_tenants);
	if (!strcmp(cmd, "tenants"))
		return ctl_run(ctl_cmd("tenants"), ctl_print_tenants);
	fprintf(stderr, "colocctl: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
