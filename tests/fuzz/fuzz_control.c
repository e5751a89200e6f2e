// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target: colocd's control protocol handler (control_handle, the
 * JSON + UTF-8 + NUL checks and every command behind them) against a real
 * daemon core started once (the sensor loaded, not pinned; needs root, as
 * tests/control_test.c). Each input is one request line from an
 * unprivileged peer; every answer must be one line of strict JSON, valid
 * UTF-8, an object with a boolean "ok", whatever the request held. Its executor path names no file, so a submit
 * that got that far starts nothing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>
#include "colocd.h"
#include "control.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The requests come from an unprivileged peer (nobody), as an attacker's would. */
#define FUZZ_CONTROL_PEER_UID 65534

static struct colocd daemon_core;
static struct loop *loop;

static void fuzz_control_stop(void)
{
	colocd_stop(&daemon_core);
	loop_free(loop);
}

/*
 * The real executor, which colocd asks once for the machine's ISA
 * (--print-isa): $COLOC_BIN's, else bin/'s of the repository run.sh runs
 * in. A submit never reaches it: requests here carry no descriptors.
 */
static char executor_path[4096];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *bin = getenv("COLOC_BIN");
	struct colocd_config cfg = {
		.sample_hz = 1000,
		.window_ms = 10,
		.span_ms = 1000,
		.executor = executor_path,
		.cache_dir = "/nonexistent/profiles",
	};
	struct coloc_err err = { 0 };

	snprintf(executor_path, sizeof(executor_path), "%s/coloc-executor", bin ? bin : "bin");

	(void)argc;
	(void)argv;
	if (geteuid() != 0) {
		fprintf(stderr, "fuzz_control: needs root to load colocd's sensor\n");
		exit(1);
	}
	if (loop_new(&loop, &err) || colocd_start(&daemon_core, &cfg, loop, &err)) {
		fprintf(stderr, "fuzz_control: cannot start a daemon core: %s\n",
			coloc_err_str(&err));
		exit(1);
	}
	atexit(fuzz_control_stop);
	return 0;
}

/* One line, strict JSON, UTF-8, an object with a boolean "ok"; aborts if not. */
static void fuzz_control_check_answer(const char *resp)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o = NULL, *ok;
	size_t n = strlen(resp);

	if (!tok)
		abort();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	if (n && resp[n - 1] == '\n' && !memchr(resp, '\n', n - 1))
		o = json_tokener_parse_ex(tok, resp, (int)n - 1);
	if (!o || json_tokener_get_parse_end(tok) != n - 1 ||
	    !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "ok", &ok) || !json_object_is_type(ok, json_type_boolean)) {
		fprintf(stderr, "fuzz_control: not a valid answer line: '%s'\n", resp);
		abort();
	}
	json_object_put(o);
	json_tokener_free(tok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct timespec ts;
	char *resp;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	resp = control_handle(&daemon_core, NULL, FUZZ_CONTROL_PEER_UID, (const char *)data, size,
			      (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec);
	if (!resp) {
		fprintf(stderr, "fuzz_control: no answer without a connection\n");
		abort();
	}
	fuzz_control_check_answer(resp);
	free(resp);
	return 0;
}
