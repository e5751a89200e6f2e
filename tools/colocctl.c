// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocctl: the operator's CLI for colocd. Speaks the JSON-lines protocol of
 * include/coloc/protocol.h over the control socket (json-c on both ends),
 * prints tables for people and raw JSON with --json for scripts.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <json-c/json.h>
#include "coloc/protocol.h"
#include "cli.h"

static struct {
	const char *socket_path;
	bool json;
	bool watch;
	unsigned int interval_ms;
	unsigned int count; /* 0: until interrupted */
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
		"Options (before or after the command):\n"
		"  -s, --socket PATH   colocd's control socket (default %s)\n"
		"  -j, --json          print the daemon's JSON response as is\n"
		"  -w, --watch         with signals: repeat until Ctrl-C\n"
		"  -i, --interval MS   with --watch: time between updates, 10-3600000 (default 1000)\n"
		"  -n, --count N       with --watch: stop after N updates\n"
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

static int ctl_connect(void)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	if (strlen(opts.socket_path) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "colocctl: socket path too long: %s\n", opts.socket_path);
		return -1;
	}
	strcpy(addr.sun_path, opts.socket_path);
	if (!stat(opts.socket_path, &st) && !S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "colocctl: %s is not a socket (colocd's is %s by default)\n",
			opts.socket_path, COLOC_DEFAULT_SOCKET);
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fprintf(stderr, "colocctl: cannot create a socket: %s\n", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		ctl_explain_connect_error(errno);
		close(fd);
		return -1;
	}
	return fd;
}

/* Sends one request line and returns the parsed response, or NULL with a message. */
static struct json_object *ctl_request(int fd, struct json_object *req)
{
	const char *text = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	size_t len = strlen(text), cap = 65536, got = 0;
	struct json_object *resp;
	char *buf;

	buf = malloc(cap);
	if (!buf)
		return NULL;
	/* on a failed send, still read: the daemon may have said why (e.g. denied) */
	if (send(fd, text, len, MSG_NOSIGNAL) != (ssize_t)len ||
	    send(fd, "\n", 1, MSG_NOSIGNAL) != 1) {
		int err = errno;
		ssize_t n = recv(fd, buf, cap - 1, MSG_DONTWAIT);

		buf[n > 0 ? n : 0] = '\0';
		resp = n > 0 ? json_tokener_parse(buf) : NULL;
		free(buf);
		if (!resp)
			fprintf(stderr, "colocctl: sending to colocd failed: %s\n", strerror(err));
		return resp;
	}
	for (;;) {
		ssize_t n;

		if (got + 1 >= cap) {
			char *bigger = realloc(buf, cap * 2);

			if (!bigger) {
				free(buf);
				return NULL;
			}
			buf = bigger;
			cap *= 2;
		}
		n = recv(fd, buf + got, cap - got - 1, 0);
		if (n <= 0) {
			fprintf(stderr, "colocctl: colocd closed the connection%s%s\n",
				n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
			free(buf);
			return NULL;
		}
		got += (size_t)n;
		if (memchr(buf + got - n, '\n', (size_t)n))
			break;
	}
	buf[got] = '\0';
	resp = json_tokener_parse(buf);
	free(buf);
	if (!resp)
		fprintf(stderr, "colocctl: colocd sent something that is not JSON\n");
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
		json_object_object_get_ex(t, "id", &id);
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
	int fd = ctl_connect(), rc = 0;

	if (fd < 0) {
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
	close(fd);
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

/* Parses options up to the first non-option word; returns 0, or the exit code. */
static int parse_opts(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "watch", no_argument, NULL, 'w' },
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
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
	/* options may also follow the command: "signals --json --watch" */
	optind = 0;
	rc = parse_opts(argc, argv);
	if (rc)
		return rc == 1 ? 0 : rc;
	if (optind != argc) {
		fprintf(stderr, "colocctl: unexpected argument '%s'\n", argv[optind]);
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
