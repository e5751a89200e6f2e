// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocctl: the operator's CLI for colocd. Speaks the JSON-lines protocol of
 * include/coloc/protocol.h over the control socket (json-c on both ends),
 * prints tables for people and raw JSON with --json for scripts. This file
 * parses the command line and dispatches; the commands live in
 * tools/colocctl/ (ctl.h lists them).
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "colocctl/ctl.h"
#include "cli.h"

struct ctl_opts ctl_opts = {
	.socket_path = COLOC_DEFAULT_SOCKET,
	.interval_ms = 1000,
};

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
		"  submit NAME MODEL --qos-ms X [--weights FILE] [--executors N]\n"
		"         [--allow-foreign-owner] [--json]\n"
		"                                admit a model as tenant NAME with a latency\n"
		"                                target of X ms; its profile must be in colocd's\n"
		"                                cache (the error names the coloc-profile command);\n"
		"                                N executor processes (1 to 8, default 1) run\n"
		"                                up to N of its queries at once; as root, each\n"
		"                                file is reached through no link and must be\n"
		"                                root's own in directories only root may write\n"
		"                                (copy a user's model first) unless\n"
		"                                --allow-foreign-owner\n"
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
		"                                to --output, else the first few are printed.\n"
		"                                The input reaches colocd in a sealed memfd\n"
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
		"A NAME is the caller's own tenant: each user's names are its own, and two\n"
		"users may each have a tenant 'mobilenet'. Root names another user's as\n"
		"UID:NAME (list shows them so); root's bare NAME is root's own tenant, else\n"
		"the only one of that name.\n"
		"\n"
		"The socket admits root and members of group '%s'; join it with\n"
		"'usermod -aG %s USER' (as root), then log in again.\n"
		"\n"
		"Exit status: 0 done, 1 the daemon refused or is unreachable, 2 bad usage.\n",
		COLOC_DEFAULT_SOCKET, COLOC_GROUP, COLOC_GROUP);
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
			ctl_opts.socket_path = optarg;
			break;
		case 'j':
			ctl_opts.json = true;
			break;
		case 'w':
			ctl_opts.watch = true;
			break;
		case 'i':
			if (cli_parse_flag("colocctl", "--interval", optarg, 10, 3600000, &v))
				return 2;
			ctl_opts.interval_ms = (unsigned int)v;
			interval_given = true;
			break;
		case 'n':
			if (cli_parse_flag("colocctl", "--count", optarg, 1, 1000000, &v))
				return 2;
			ctl_opts.count = (unsigned int)v;
			break;
		case 'F':
			if (cli_parse_flag("colocctl", "--frames", optarg, 1, 1000000, &v))
				return 2;
			ctl_opts.frames = (unsigned int)v;
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
		if (ctl_opts.watch || ctl_opts.count || ctl_opts.json) {
			fprintf(stderr, "colocctl: top takes --interval and --frames, not --watch, "
					"--count or --json\n");
			return 2;
		}
		return ctl_top();
	}
	if (ctl_opts.frames) {
		fprintf(stderr, "colocctl: --frames goes with 'top' only\n");
		return 2;
	}
	if (ctl_opts.watch && strcmp(cmd, "signals")) {
		fprintf(stderr, "colocctl: --watch goes with 'signals' only\n");
		return 2;
	}
	if ((ctl_opts.count || interval_given) && !ctl_opts.watch) {
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
