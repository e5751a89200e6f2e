#!/usr/bin/env bash
# coloc's demo ('make demo' as root): several tenants share this machine under
# colocd. It starts colocd, measures two DNN inference services alone
# (MobileNet-V2 and ResNet-50, batch 1, real oneDNN kernels via coloc-run),
# then runs them side by side with an LLC-thrashing aggressor, each process
# attributed to a tenant, shows colocd's live per-core and per-tenant signals,
# and prints each service's latency shared vs alone. colocd is stopped with
# SIGTERM and must leave no pin or socket behind.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${COLOC_BIN:-$ROOT/bin}
WORK=$(mktemp -d /tmp/coloc-demo.XXXXXX)
SOCK=$WORK/colocd.sock
PIN=/sys/fs/bpf/coloc-demo-$$
CPUS=($(seq 0 $(($(nproc) - 1))))
FIRST=${CPUS[0]}
LAST=${CPUS[-1]}
COLOCD=
tenants=()

# Idle OpenMP workers sleep instead of spinning on a core another tenant needs.
export OMP_WAIT_POLICY=passive

cleanup() {
	for p in "${tenants[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${tenants[@]}"; do wait "$p" 2>/dev/null || true; done
	if [ -n "$COLOCD" ]; then
		kill -TERM "$COLOCD" 2>/dev/null || true
		wait "$COLOCD" 2>/dev/null || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

if [ "$(id -u)" -ne 0 ]; then
	echo "demo: colocd loads BPF programs: run 'make demo' as root (or 'sudo make demo')" >&2
	exit 1
fi

ctl() { "$BIN/colocctl" --socket "$SOCK" "$@"; }

# The "total" line coloc-run prints: median latency of the model's queries.
latency_ms() {
	sed -nE 's/^total .*: ([0-9.]+) ms \(median.*/\1/p' "$1"
}

echo "== starting colocd"
"$BIN/colocd" --socket "$SOCK" --pin-dir "$PIN" >"$WORK/colocd.log" 2>&1 &
COLOCD=$!
for _ in $(seq 100); do
	ctl ping >/dev/null 2>&1 && break
	sleep 0.1
done
if ! ctl ping >/dev/null 2>&1; then
	cat "$WORK/colocd.log" >&2
	exit 1
fi
cat "$WORK/colocd.log"

echo
echo "== alone: each service on its own core, nothing else running"
"$BIN/coloc-run" "$ROOT/models/mobilenet_v2.model" --cores "$FIRST" --iters 100 >"$WORK/mnv2-alone.out"
"$BIN/coloc-run" "$ROOT/models/resnet50.model" --cores "$LAST" --iters 20 >"$WORK/rn50-alone.out"
printf '  mobilenet_v2 on CPU %s: %s ms per query\n' "$FIRST" "$(latency_ms "$WORK/mnv2-alone.out")"
printf '  resnet50     on CPU %s: %s ms per query\n' "$LAST" "$(latency_ms "$WORK/rn50-alone.out")"

echo
echo "== shared: both services plus an LLC aggressor on CPU $LAST, each a colocd tenant"
start_tenant() { # name output command...
	local name=$1 out=$2
	shift 2
	"$@" >"$out" 2>&1 &
	tenants+=($!)
	if ctl tenant add "$name" --pid "$!" >/dev/null; then
		echo "  tenant $name: pid $!"
	else
		echo "  tenant $name: pid $! ended before it could be attributed" >&2
	fi
}
start_tenant mobilenet_v2 "$WORK/mnv2-shared.out" \
	"$BIN/coloc-run" "$ROOT/models/mobilenet_v2.model" --cores "$FIRST" --iters 300
start_tenant resnet50 "$WORK/rn50-shared.out" \
	"$BIN/coloc-run" "$ROOT/models/resnet50.model" --cores "$LAST" --iters 40
start_tenant llc_aggressor "$WORK/stress.out" \
	"$BIN/coloc-stress" --cores "$LAST" --kind llc --level 60 --duration 6

echo
echo "== colocd's live view (colocctl signals), once a second"
sleep 1
ctl signals --watch --interval 1000 --count 3

echo
echo "== waiting for the services to finish their queries"
for p in "${tenants[@]}"; do wait "$p" || echo "demo: tenant pid $p exited with status $?" >&2; done
tenants=()
ctl tenants

echo
echo "== results: latency per query, shared vs alone"
printf '  %-14s %10s %10s %8s\n' service "alone ms" "shared ms" ratio
for pair in "mobilenet_v2 mnv2" "resnet50 rn50"; do
	set -- $pair
	alone=$(latency_ms "$WORK/$2-alone.out")
	shared=$(latency_ms "$WORK/$2-shared.out")
	ratio=$(awk -v a="$alone" -v s="$shared" 'BEGIN { if (a > 0) printf "%.2f", s / a; else print "-" }')
	printf '  %-14s %10s %10s %8s\n' "$1" "$alone" "$shared" "$ratio"
done
echo "  llc_aggressor: $(grep -i total "$WORK/stress.out" | tail -n 1)"
echo "  (no scheduler yet: each tenant keeps the cores it was given; the roadmap's"
echo "   scheduler will move layer blocks and kernel versions to protect QoS)"

echo
echo "== stopping colocd (SIGTERM)"
kill -TERM "$COLOCD"
wait "$COLOCD" && echo "colocd exited 0"
COLOCD=
if [ -e "$PIN" ] || [ -e "$SOCK" ]; then
	echo "demo: colocd left $PIN or $SOCK behind" >&2
	exit 1
fi
echo "pins and socket removed; demo done"
