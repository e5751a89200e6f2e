// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocctl top: the machine, the tenants and the cores in one frame, redrawn
 * every interval on a terminal (q or Ctrl-C quits), or printed frame after
 * frame when piped.
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include "ctl.h"

/* One frame of top: the machine, the tenants, the cores. */
static void ctl_print_top(struct json_object *status, struct json_object *signals,
			  const char *signals_error)
{
	struct json_object *arr;
	char when[32];
	time_t now = time(NULL);
	size_t n;

	strftime(when, sizeof(when), "%H:%M:%S", localtime(&now));
	printf("colocctl top  %s  every %u ms  (q or Ctrl-C quits)\n", when, ctl_opts.interval_ms);
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
	long left = (long)ctl_opts.interval_ms;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (left > 0 && !ctl_interrupted) {
		struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
		char ch;

		if (poll(&p, keys ? 1 : 0, (int)left) == 1) {
			if (read(STDIN_FILENO, &ch, 1) != 1 || ch == 'q' || ch == 'Q')
				return true;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		left = (long)ctl_opts.interval_ms -
		       ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
	}
	return ctl_interrupted;
}

/*
 * colocctl top: status and signals every interval, through the client
 * library. On a terminal it redraws in place and reads single keys (the
 * terminal is put back as it was on the way out); piped, it prints one
 * frame after another, so a script or a test can read them.
 */
int ctl_top(void)
{
	struct sigaction sa = { .sa_handler = ctl_on_interrupt }; /* no SA_RESTART: poll returns */
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
	while (!ctl_interrupted) {
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
		if (ctl_opts.frames && ++frames >= ctl_opts.frames) {
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
