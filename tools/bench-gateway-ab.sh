#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Two coloc-gateway builds side by side in one run, as root: one private
# colocd serving MobileNet-V2 twice (tenants mnA and mnB, qos 200 ms, one
# executor each), gateway A (the old build) in front of mnA and gateway B
# (the new one) in front of mnB, both as the coloc user; then replicas of
# coloc-bench-gateway against each in turn (the order flipped every
# replica), under chrt -f 5. docs/measurements/gateway.md has runs.
#
#   tools/bench-gateway-ab.sh OLD_GATEWAY NEW_GATEWAY DOOR [REPLICAS [QUERIES]]
#
# DOOR: http, grpc or grpc-raw (coloc-bench-gateway's --http, --grpc or
# --grpc-raw), or A's and B's apart, as DOOR_A:DOOR_B (grpc:grpc-raw with
# the same gateway twice: what gRPC's C core as a client adds).
#
# Prints coloc-bench-gateway's line per replica, prefixed with A or B and
# numbered from 0; at the end, per column, A's and B's medians and B / A of
# each replica's two runs (median, range), and any line a gateway printed
# at exit about how its waits for colocd went (branch gwspin's
# --colocd-spin-us); with
# THREADS=1 also, per replica, the runs (times put on a CPU) per query of
# each gateway thread that ran, as name:tid=runs(of which preempted), from
# /proc/PID/task/TID/schedstat and status. A_ARGS and B_ARGS: more options for
# gateway A or B (e.g. B_ARGS="--threads 2" with the same build twice);
# A_CHRT and B_CHRT: gateway A or B run under chrt with these (e.g. B_CHRT="-f 4":
# its threads real-time, woken ahead of the load); A_BENCH and B_BENCH: the
# coloc-bench-gateway that drives A or B (two builds of the client side by
# side, with the same gateway twice); BENCH_ARGS: more options
# for coloc-bench-gateway (e.g. --direct-memfd:
# the direct path it compares against sends its input in a memfd).
set -euo pipefail

OLD=$(realpath "$1") NEW=$(realpath "$2") DOOR=$3 REPLICAS=${4:-6} QUERIES=${5:-30}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
BIN=${COLOC_BIN:-$ROOT/bin}
W=$(mktemp -d /tmp/gwab.XXXXXX)
PIN=/sys/fs/bpf/coloc-gwab-$$
SOCK=$W/colocd.sock
PIDS=()

# tid name runs involuntary-switches, one line per thread of $1
thread_runs() {
	local task n

	for task in /proc/"$1"/task/*; do
		read -r _ _ n <"$task/schedstat"
		echo "${task##*/} $(tr ' ' _ <"$task/comm") $n $(awk '/^nonvoluntary_ctxt_switches/ { print $2 }' "$task/status")"
	done
}

cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	# how a gateway's waits for colocd went, if it says so at exit
	for t in A B; do
		if [ -f "$W/gw$t.log" ]; then
			sed -n "s/^coloc-gateway: answer waits/# $t: answer waits/p" "$W/gw$t.log"
		fi
	done
	rm -rf "$W"
}
trap cleanup EXIT

declare -A DOORS
DOORS[A]=${DOOR%%:*} DOORS[B]=${DOOR##*:}
for d in "${DOORS[@]}"; do
	case $d in http | grpc | grpc-raw) ;; *) echo "door: http, grpc or grpc-raw" >&2; exit 2 ;; esac
done
for t in A B; do
	mkdir -p "$W/repo$t/mn$t/1"
	cp "$ROOT/models/mobilenet_v2.model" "$W/repo$t/mn$t/1/model.model"
	echo '{"qos_ms": 200}' >"$W/repo$t/mn$t/config.json"
done
chmod -R a+rX "$W"
"$BIN/colocd" --socket "$SOCK" --pin-dir "$PIN" \
	--cache-dir "${COLOC_CACHE_DIR:-/var/cache/coloc/profiles}" >"$W/colocd.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do "$BIN/colocctl" --socket "$SOCK" ping >/dev/null 2>&1 && break; sleep 0.1; done

declare -A GW_PID PORT
PORT[A]=18100 PORT[B]=18200
for t in A B; do
	gw=$OLD
	[ $t = B ] && gw=$NEW
	prio=${A_CHRT:-}
	[ $t = B ] && prio=${B_CHRT:-}
	# shellcheck disable=SC2086 # A_CHRT/B_CHRT: chrt's policy and priority, split
	${prio:+chrt $prio} setpriv --reuid=coloc --regid=coloc --init-groups -- "$gw" --socket "$SOCK" \
		--model-repository "$W/repo$t" --http 127.0.0.1:${PORT[$t]} \
		--grpc 127.0.0.1:$((PORT[$t] + 1)) --metrics 127.0.0.1:$((PORT[$t] + 2)) \
		$([ $t = A ] && echo "${A_ARGS:-}" || echo "${B_ARGS:-}") >"$W/gw$t.log" 2>&1 &
	GW_PID[$t]=$!
	PIDS+=($!)
done
for t in A B; do
	for _ in $(seq 600); do
		curl -sf "http://127.0.0.1:${PORT[$t]}/v2/health/ready" >/dev/null && break
		sleep 0.5
	done
	curl -sf "http://127.0.0.1:${PORT[$t]}/v2/health/ready" >/dev/null ||
		{ cat "$W/gw$t.log" >&2; exit 1; }
done
echo "# $(date -u +%FT%TZ) door $DOOR, $REPLICAS replicas x $QUERIES queries each way; load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$REPLICAS"); do
	order="A B"
	[ $((r % 2)) = 0 ] && order="B A"
	for t in $order; do
		addr=127.0.0.1:${PORT[$t]}
		[ "${DOORS[$t]}" != http ] && addr=127.0.0.1:$((PORT[$t] + 1))
		[ "${THREADS:-0}" = 1 ] && thread_runs "${GW_PID[$t]}" >"$W/runs0"
		bench=${A_BENCH:-$BIN/coloc-bench-gateway}
		[ "$t" = B ] && bench=${B_BENCH:-$BIN/coloc-bench-gateway}
		chrt -f 5 "$bench" --socket "$SOCK" "--${DOORS[$t]}" "$addr" \
			--model "mn$t" --queries "$QUERIES" --replicas 1 \
			--gateway-pid "${GW_PID[$t]}" ${BENCH_ARGS:-} |
			awk -v t=$t -v r=$((r - 1)) 'NR == 2 { sub(/^ *[0-9]+/, sprintf("%7d", r)); print t, $0 }' |
			tee -a "$W/lines"
		if [ "${THREADS:-0}" = 1 ]; then
			thread_runs "${GW_PID[$t]}" >"$W/runs1"
			# both ways' queries: the gateway saw QUERIES of them
			awk -v t=$t -v q="$QUERIES" 'NR == FNR { r0[$1] = $3; i0[$1] = $4; next }
				{ d = ($3 - r0[$1]) / q; if (d >= 0.05) printf " %s:%s=%.2f(%.2f)", $2, $1, d, ($4 - i0[$1]) / q }
				BEGIN { printf "%s threads:", t } END { print "" }' "$W/runs0" "$W/runs1"
		fi
	done
done
echo "# load $(cut -d' ' -f1-3 /proc/loadavg)"
# per column: A's and B's medians (ranges), and B / A of each replica's two runs (median, range)
awk 'function med(a, n,   i, j, t) {
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	function show(name, col,   r, k, n, x, y, q, mx, my, mq) {
		n = 0
		for (r in v)
			if (split(r, k, SUBSEP) && k[1] == "A" && k[2] == col && (("B", col, k[3]) in v)) {
				n++; x[n] = v[r]; y[n] = v["B", col, k[3]]
				q[n] = x[n] != 0 ? y[n] / x[n] : 0
			}
		if (!n)
			return
		mx = med(x, n); my = med(y, n); mq = med(q, n)
		printf "# %-22s A %8.1f (%.1f-%.1f)  B %8.1f (%.1f-%.1f)  B/A %.2f (%.2f-%.2f), %d pairs\n",
			name, mx, x[1], x[n], my, y[1], y[n], mq, q[1], q[n], n
	}
	{ for (c = 3; c <= NF; c++) v[$1, c, $2] = $c }
	END {
		show("added p50 us", 7); show("added p95 us", 8); show("door p50 us", 4)
		show("socket p50 us", 3); show("gateway CPU us/query", 9); show("thread runs/query", 10)
	}' "$W/lines"
