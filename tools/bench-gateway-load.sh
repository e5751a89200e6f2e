#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Issue 28's measurement, as root: coloc-load of MobileNet-V2 through
# coloc-gateway's gRPC API against coloc-load on colocd's socket, side by
# side: one private colocd, one gateway (as the coloc user, GW_ARGS added)
# serving mobilenet_v2 as model mn (qos 200 ms, adopted by both doors),
# then RUNS pairs of coloc-load runs at RATE queries a second (fixed
# arrivals, 2 s of warm-up, DURATION s measured), socket and gRPC in turn,
# the order flipped every pair, under chrt -f 5. docs/measurements/gateway.md
# has runs.
#
#   tools/bench-gateway-load.sh [RUNS [RATE [DURATION]]]
#
# Prints per run: the door, p50 latency, colocd's p50, the hop's p50 (the
# latency less colocd's own, per query: what the door adds to colocd) and,
# for gRPC, the gateway's CPU per query; then per pair the gRPC hop's p50
# less the socket's, and the median of those. The gRPC runs use coloc-load's
# raw HTTP/2 client; GRPC_ARGS="--grpc-client core" puts gRPC's C core there
# instead, whose own cost is then in the hop (docs/measurements/gateway.md).
set -euo pipefail

RUNS=${1:-4} RATE=${2:-50} DURATION=${3:-10}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
BIN=${COLOC_BIN:-$ROOT/bin}
W=$(mktemp -d /tmp/gwload.XXXXXX)
PIN=/sys/fs/bpf/coloc-gwload-$$
SOCK=$W/colocd.sock
PIDS=()

cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$W"
}
trap cleanup EXIT

mkdir -p "$W/repo/mn/1"
cp "$ROOT/models/mobilenet_v2.model" "$W/repo/mn/1/model.model"
echo '{"qos_ms": 200}' >"$W/repo/mn/config.json"
chmod -R a+rX "$W"
"$BIN/colocd" --socket "$SOCK" --pin-dir "$PIN" \
	--cache-dir "${COLOC_CACHE_DIR:-/var/cache/coloc/profiles}" >"$W/colocd.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do "$BIN/colocctl" --socket "$SOCK" ping >/dev/null 2>&1 && break; sleep 0.1; done
PORT=$((18300 + $$ % 200 * 3))
# shellcheck disable=SC2086 # GW_ARGS: more options, split
setpriv --reuid=coloc --regid=coloc --init-groups -- "$BIN/coloc-gateway" --socket "$SOCK" \
	--model-repository "$W/repo" --http 127.0.0.1:$PORT --grpc 127.0.0.1:$((PORT + 1)) \
	--metrics 127.0.0.1:$((PORT + 2)) ${GW_ARGS:-} >"$W/gw.log" 2>&1 &
GW=$!
PIDS+=("$GW")
for _ in $(seq 600); do
	curl -sf "http://127.0.0.1:$PORT/v2/health/ready" >/dev/null && break
	sleep 0.5
done
curl -sf "http://127.0.0.1:$PORT/v2/health/ready" >/dev/null || { cat "$W/gw.log" >&2; exit 1; }

run() { # door
	local args=(--socket "$SOCK")

	# shellcheck disable=SC2206 # GRPC_ARGS: more options, split
	[ "$1" = grpc ] && args+=(--grpc "127.0.0.1:$((PORT + 1))" --gateway-pid "$GW" ${GRPC_ARGS:-})
	chrt -f 5 "$BIN/coloc-load" -t "mn:$RATE" -d "$DURATION" -w 2 --arrivals fixed -j \
		"${args[@]}" >"$W/$1.json"
	jq -r --arg door "$1" '.tenants[0] as $t |
		[$door, $t.p50_ms, $t.colocd_p50_ms, $t.hop_p50_ms,
		 (.gateway_cpu.us_per_query // "-")] | @tsv' "$W/$1.json"
}

echo "# $(date -u +%FT%TZ) $RUNS pairs x ${DURATION} s at $RATE/s; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# door p50_ms colocd_p50_ms hop_p50_ms gateway_us_per_query"
for r in $(seq "$RUNS"); do
	order="socket grpc"
	[ $((r % 2)) = 0 ] && order="grpc socket"
	for d in $order; do run "$d"; done >"$W/pair"
	cat "$W/pair"
	awk '$1 == "socket" { s = $4 } $1 == "grpc" { g = $4 }
		END { printf "added %.0f us\n", (g - s) * 1000 }' "$W/pair" | tee -a "$W/added"
done
sort -n -k2 "$W/added" | awk '{ v[NR] = $2 } END {
	printf "# gRPC hop less the socket hop, p50: median %s us of %d pairs (%s-%s)\n",
		NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, NR, v[1], v[NR] }'
echo "# load $(cut -d' ' -f1-3 /proc/loadavg)"
