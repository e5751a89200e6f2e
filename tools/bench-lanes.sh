#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Lanes against processes, side by side in one run (docs/measurements/lanes.md):
# for each layout (colocd --executor-lanes, a tenant's executors as lanes of
# one process; and colocd's default, a process each), the resident memory of
# a ResNet-50 tenant with 1 and with 2 executors after 4 s of queries at 5/s
# (VmRSS and RssAnon summed over its distinct pids), then MobileNet-V2 with 2
# executors driven by coloc-load at RATE queries/s for SECONDS (p50, p95,
# within QoS, colocd's compute part, and from colocd's block log each
# block's executor time and its team switch, p50 / p90 us, and how many
# blocks' switches took over 100 us: with lanes, the turns). As root;
# POLICY=NAME for colocd's --policy (default: colocd's); BASE_EXECUTOR=PATH
# adds a third layout, lanes served by that coloc-executor (e.g. a copy of
# an earlier build's), run side by side in each replica; MEMORY= (empty)
# skips the memory part; COLOCD_ARGS='...' more colocd options (e.g.
# '--late serve', so that a loaded machine's late queries are served and
# counted rather than dropped).
#   tools/bench-lanes.sh [RATE [SECONDS [REPLICAS]]]
set -euo pipefail
RATE=${1:-150}
SECONDS_RUN=${2:-15}
REPLICAS=${3:-1}
# shellcheck source=tools/colocd-lib.sh
. "$(dirname "$0")/colocd-lib.sh"
colocd_lib_init bench-lanes

# KiB of a status field summed over the tenant's distinct pids
tenant_kib() { # tenant field
	local pids sum=0 p
	pids=$(ctl status "$1" --json | grep -o '"pids":\[[0-9,]*\]' | grep -o '[0-9]\+' | sort -u)
	for p in $pids; do
		sum=$((sum + $(awk -v f="$2:" '$1 == f { print $2 }' "/proc/$p/status")))
	done
	echo "$sum"
}

# p50 / p90 of a block log column over tenant mnv2's blocks
block_pct() { # log column
	awk -F'\t' -v c="$2" 'NR > 1 && $2 == "mnv2" { print $c }' "$1" | sort -n |
		awk '{ v[NR] = $1 } END { if (NR) printf "%d / %d", v[int(NR * 0.5) + 1], v[int(NR * 0.9) + 1]; else printf "none" }'
}

run_layout() { # name [colocd options...]
	local name=$1 json n log=$WORK/blocks-$1.tsv
	shift
	# shellcheck disable=SC2086 # COLOCD_ARGS: words for colocd
	start_colocd "${POLICY:-}" --block-log "$log" ${COLOCD_ARGS:-} "$@"
	for n in ${MEMORY-1 2}; do
		submit_tenant "r50x$n" resnet50 2000 quiet "$n"
		wait_ready "r50x$n"
		"$BIN/coloc-load" --socket "$SOCK" --tenant "r50x$n:5" --duration 4 >/dev/null
		echo "$name rn50x$n VmRSS_KiB $(tenant_kib "r50x$n" VmRSS)" \
			"RssAnon_KiB $(tenant_kib "r50x$n" RssAnon)"
		ctl remove "r50x$n" >/dev/null
	done
	submit_tenant mnv2 mobilenet_v2 20 quiet 2
	wait_ready mnv2
	json=$("$BIN/coloc-load" --socket "$SOCK" --tenant "mnv2:$RATE" --duration "$SECONDS_RUN" \
		--warmup 2 --json)
	echo "$name mnv2x2 rate $RATE $(echo "$json" | grep -o '"\(p50_ms\|p95_ms\|p99_ms\|within_qos\|achieved_rate\)":[0-9.e+-]*' | head -n 5 | tr '\n' ' ')" \
		"compute $(echo "$json" | grep -o '"compute":{[^}]*}')"
	echo "$name mnv2x2 blocks $(awk 'NR > 1 && $2 == "mnv2"' "$log" | wc -l)" \
		"measured_us $(block_pct "$log" 11) switch_us $(block_pct "$log" 13)" \
		"switches_over_100us $(awk -F'\t' 'NR > 1 && $2 == "mnv2" && $13 > 100' "$log" | wc -l)"
	stop_colocd
}

uptime
for r in $(seq "$REPLICAS"); do
	echo "replica $r"
	run_layout lanes --executor-lanes
	[ -z "${BASE_EXECUTOR:-}" ] || run_layout lanes-base --executor-lanes --executor "$BASE_EXECUTOR"
	run_layout processes
done
