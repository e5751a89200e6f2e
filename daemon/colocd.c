// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd: the coloc daemon. Parses its flags, refuses to run as anyone but
 * root, takes the control socket (one daemon per socket), loads the
 * interference sensor and pins its maps, then serves until SIGINT/SIGTERM,
 * when it detaches, unpins and removes the socket before exiting 0.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "colocd.h"
#include "server.h"
#include "cli.h"

static struct colocd_config config = {
	.pin_dir = COLOC_DEFAULT_PIN_DIR,
	.socket_path = COLOC_DEFAULT_SOCKET,
	.sample_hz = 0, /* the scheduler tick */
	.window_ms = 10,
	.span_ms = 1000,
	.verbose = false,
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: colocd [OPTION]...\n"
		"The coloc daemon: samples per-core and per-tenant interference signals with eBPF\n"
		"and serves them on a control socket (see colocctl). Runs as root.\n"
		"\n"
		"  --pin-dir DIR     where the BPF maps are pinned for bpftool (default %s)\n"
		"  --socket PATH     control socket (default %s)\n"
		"  --sample-hz N     sample on a cpu-clock timer at N Hz per CPU, 1-100000, instead\n"
		"                    of the scheduler tick (default: the tick, which adds no\n"
		"                    interrupt; a %d Hz timer where the tick cannot be traced)\n"
		"  --window-ms N     length of a record window in ms, 1-1000 (default %u)\n"
		"  --span-ms N       span of the rolling view in ms, at most 126 windows (default %u)\n"
		"  -v, --verbose     print libbpf's messages\n"
		"  -h, --help        this help\n"
		"  -V, --version     print the version and exit\n"
		"\n"
		"Inspect while it runs:  bpftool map dump pinned %s/cpu_live\n"
		"                        colocctl signals\n",
		COLOC_DEFAULT_PIN_DIR, COLOC_DEFAULT_SOCKET, SENSOR_FALLBACK_HZ, config.window_ms,
		config.span_ms, COLOC_DEFAULT_PIN_DIR);
}

static int parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pin-dir", required_argument, NULL, 'p' },
		{ "socket", required_argument, NULL, 's' },
		{ "sample-hz", required_argument, NULL, 'z' },
		{ "window-ms", required_argument, NULL, 'w' },
		{ "span-ms", required_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{},
	};
	bool span_given = false;
	int opt;
	long v;

	while ((opt = getopt_long(argc, argv, "vhV", opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			config.pin_dir = optarg;
			break;
		case 's':
			config.socket_path = optarg;
			break;
		case 'z':
			if (cli_parse_flag("colocd", "--sample-hz", optarg, 1, 100000, &v))
				return 2;
			config.sample_hz = (unsigned int)v;
			break;
		case 'w':
			if (cli_parse_flag("colocd", "--window-ms", optarg, 1, 1000, &v))
				return 2;
			config.window_ms = (unsigned int)v;
			break;
		case 'S':
			if (cli_parse_flag("colocd", "--span-ms", optarg, 1, 10000, &v))
				return 2;
			config.span_ms = (unsigned int)v;
			span_given = true;
			break;
		case 'v':
			config.verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 1;
		case 'V':
			cli_print_version("colocd");
			return 1;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "colocd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	/* a window needs a couple of periodic samples, or idle-looking gaps appear */
	if (config.sample_hz && (unsigned long)config.sample_hz * config.window_ms < 2000) {
		fprintf(stderr,
			"colocd: --sample-hz %u gives fewer than 2 samples per %u ms window; "
			"raise it to at least %u or lengthen --window-ms\n",
			config.sample_hz, config.window_ms,
			(2000 + config.window_ms - 1) / config.window_ms);
		return 2;
	}
	if (!config.sample_hz && config.window_ms < SENSOR_TICK_MIN_WINDOW_MS) {
		fprintf(stderr,
			"colocd: --window-ms %u is shorter than the scheduler tick may be; use at "
			"least %d, or sample on a timer with --sample-hz\n",
			config.window_ms, SENSOR_TICK_MIN_WINDOW_MS);
		return 2;
	}
	if (config.span_ms < config.window_ms) {
		fprintf(stderr, "colocd: --span-ms %u is shorter than one %u ms window\n",
			config.span_ms, config.window_ms);
		return 2;
	}
	if (!span_given && config.span_ms / config.window_ms > VIEW_RING - 2)
		config.span_ms = (VIEW_RING - 2) * config.window_ms;
	if (config.span_ms / config.window_ms > VIEW_RING - 2) {
		fprintf(stderr,
			"colocd: --span-ms %u covers more than the %d windows kept; at most %u ms "
			"with %u ms windows\n",
			config.span_ms, VIEW_RING - 2, (VIEW_RING - 2) * config.window_ms,
			config.window_ms);
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct coloc_err cerr = { 0 };
	struct server *server = NULL;
	struct colocd *d;
	int err;

	err = parse_args(argc, argv);
	if (err)
		return err == 1 ? 0 : err;
	if (geteuid() != 0) {
		fprintf(stderr, "colocd: must run as root (it loads BPF programs and pins maps)\n");
		return 1;
	}
	/* line-buffered so a supervisor or a pipe sees each message as it happens */
	setvbuf(stdout, NULL, _IOLBF, 0);

	d = calloc(1, sizeof(*d));
	if (!d)
		return 1;
	err = server_open(&server, config.socket_path, &cerr);
	if (err) {
		fprintf(stderr, "colocd: %s\n", coloc_err_str(&cerr));
		goto cleanup;
	}
	err = colocd_start(d, &config, &cerr);
	if (err) {
		fprintf(stderr, "colocd: %s\n", coloc_err_str(&cerr));
		goto cleanup;
	}
	printf("colocd: %s\n", d->signals_line);
	sensor_print_pin_notes(d->sensor);
	printf("colocd: watching %d CPUs, sampling on %s, %u ms windows; maps pinned in %s; "
	       "socket %s\n",
	       sensor_nr_cpus(d->sensor), sensor_trigger_desc(d->sensor), config.window_ms,
	       config.pin_dir, config.socket_path);
	err = server_run(server, d, &cerr);
	if (err)
		fprintf(stderr, "colocd: %s\n", coloc_err_str(&cerr));
	else
		fprintf(stderr, "colocd: %s, shutting down\n",
			strsignal(server_stop_signal(server)));
cleanup:
	colocd_stop(d);
	server_close(server);
	free(d);
	return err ? 1 : 0;
}
