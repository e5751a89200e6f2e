#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# What a JSON infer of MobileNet-V2 (150,528 values) costs the gateway's
# parser, two builds side by side in one run: gw_infer_parse() of revision
# OLD (git) against the worktree's, each linked into the same small driver
# (no server: the parse is all that the change touched), run in turn, the
# order flipped every replica. Per replica and body: CPU and wall time per
# parse, and the process's peak RSS. docs/measurements/gateway.md has runs.
#
#   tools/bench-gateway-json.sh OLD [REPLICAS [PARSES]]
#
# Bodies: "zeros" ("data":[0,0,...], the most values per byte) and
# "floats" (each value with 9 significant digits, as a client writes an
# fp32 that must round-trip).
set -euo pipefail

OLD=$1 REPLICAS=${2:-5} PARSES=${3:-40}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
W=$(mktemp -d /tmp/gwjson-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT

cat >"$W/driver.c" <<'C'
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include "infer_request.h"

static double now_us(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	int parses = atoi(argv[1]), n = 3 * 224 * 224;
	struct gw_model_config cfg = { .name = "mn", .version = "1", .nr_inputs = 1, .nr_outputs = 1 };
	struct gw_tensor in = { .name = "x", .nr_dims = 4, .dims = { 1, 3, 224, 224 }, .elems = n };
	struct gw_tensor out = { .name = "y", .nr_dims = 2, .dims = { 1, 1000 }, .elems = 1000 };
	char *body = malloc((size_t)n * 20 + 256), why[512];
	size_t len;
	double cpu, wall;
	struct rusage ru;

	cfg.inputs[0] = in;
	cfg.outputs[0] = out;
	srand(1);
	len = (size_t)sprintf(body, "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,3,224,224],"
				    "\"datatype\":\"FP32\",\"data\":[");
	for (int i = 0; i < n; i++)
		len += (size_t)(strcmp(argv[2], "zeros") ?
			sprintf(body + len, "%s%.9g", i ? "," : "", rand() / (double)RAND_MAX - 0.5) :
			sprintf(body + len, "%s0", i ? "," : ""));
	len += (size_t)sprintf(body + len, "]}]}");
	cpu = now_us(CLOCK_PROCESS_CPUTIME_ID);
	wall = now_us(CLOCK_MONOTONIC);
	for (int i = 0; i < parses; i++) {
		struct gw_infer_request req;

		if (gw_infer_parse(&cfg, body, len, (size_t)-1, &req, why, sizeof(why))) {
			fprintf(stderr, "%s\n", why);
			return 1;
		}
		gw_infer_request_free(&req);
	}
	cpu = (now_us(CLOCK_PROCESS_CPUTIME_ID) - cpu) / parses;
	wall = (now_us(CLOCK_MONOTONIC) - wall) / parses;
	getrusage(RUSAGE_SELF, &ru);
	printf("%s body=%zu cpu_us=%.0f wall_us=%.0f maxrss_kb=%ld\n", argv[2], len, cpu, wall,
	       ru.ru_maxrss);
	return 0;
}
C
mkdir -p "$W/old"
git -C "$ROOT" show "$OLD:gateway/infer_request.c" >"$W/old/infer_request.c"
git -C "$ROOT" show "$OLD:gateway/infer_request.h" >"$W/old/infer_request.h"
CC=(gcc -O2 -g -std=gnu11 -I"$ROOT/gateway" -I"$ROOT/include" -I"$ROOT/common")
"${CC[@]}" -I"$W/old" -o "$W/A" "$W/driver.c" "$W/old/infer_request.c" $(pkg-config --cflags --libs json-c)
srcs=("$ROOT/gateway/infer_request.c")
[ -f "$ROOT/gateway/json_data.c" ] && srcs+=("$ROOT/gateway/json_data.c")
"${CC[@]}" -o "$W/B" "$W/driver.c" "${srcs[@]}" $(pkg-config --cflags --libs json-c) -lm

echo "# A: $OLD, B: the worktree ($(git -C "$ROOT" rev-parse --short HEAD)); $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 0 $((REPLICAS - 1))); do
	for body in zeros floats; do
		if [ $((r % 2)) = 0 ]; then order="A B"; else order="B A"; fi
		for g in $order; do
			echo "$g $r $("$W/$g" "$PARSES" "$body")"
		done
	done
done
