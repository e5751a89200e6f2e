#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Two builds' serving paths side by side in one run, as root: a model
# served alone by build A's colocd, executors and coloc-load, then by B's,
# the order flipped every replica. Each side, each replica: a fresh colocd
# (policy temporal unless POLICY=), the model at 10 % of its profiled rate
# (Poisson, tools/colocd-lib.sh's served_solo), then at fixed arrivals
# (FIXED_QPS a second: no query waits behind another). One line per side
# and replica in OUT/runs.tsv (p50s in ms: served, and of the fixed run its
# latency, its overhead (latency less queued and compute), colocd's parts
# and the hop's parts), then the medians over the replicas with their
# min-max. docs/measurements/serving-latency.md has runs; issue 27.
#
#   tools/bench-serving-ab.sh A_BIN B_BIN [MODEL [REPLICAS]]
#
# A_BIN, B_BIN: bin/ folders of two builds (copied first, so that a build
# meanwhile changes nothing). Defaults: main's and this tree's bin/,
# mobilenet_v2, 3 replicas of 20 s + 15 s a side (~5 minutes).
set -euo pipefail

A_BIN=$(realpath "${1:-/work/main/bin}")
B_BIN=$(realpath "${2:-$(dirname "${BASH_SOURCE[0]}")/../bin}")
MODEL=${3:-mobilenet_v2} REPLICAS=${4:-3}
POLICY=${POLICY:-temporal} SECS=${SECS:-20} FIXED_SECS=${FIXED_SECS:-15} FIXED_QPS=${FIXED_QPS:-5}
OUT=${OUT:-/tmp/bench-serving-ab}
# shellcheck source=tools/colocd-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/colocd-lib.sh"
colocd_lib_init bench-serving-ab
mkdir -p "$OUT"
rm -rf "$OUT/bin-A" "$OUT/bin-B"
cp -a "$A_BIN" "$OUT/bin-A"
cp -a "$B_BIN" "$OUT/bin-B"

COLS="served_p50 served_p95 fixed_p50 overhead_p50 queued dispatch compute copy notice hop in receive out in_woke out_woke"
# a fixed run's report: its p50s in COLS's order from fixed_p50 on ("-" where it has none)
fixed_cols() {
	jq -r '.tenants[0] | [.p50_ms, .overhead_p50_ms, .colocd_parts.queued.p50_ms,
		.colocd_parts.dispatch.p50_ms, .colocd_parts.compute.p50_ms,
		.colocd_parts.copy.p50_ms, .colocd_parts.notice.p50_ms, .hop_p50_ms,
		.hop_parts.in.p50_ms, .hop_parts.receive.p50_ms, .hop_parts.out.p50_ms,
		.hop_parts.in_woke.p50_ms, .hop_parts.out_woke.p50_ms] |
		map(if . == null then "-" else tostring end) | join("\t")' "$1"
}

printf 'side\treplica\t%s\tload\n' "${COLS// /\\t}" | sed 's/\\t/\t/g' >"$OUT/runs.tsv"
for rep in $(seq "$REPLICAS"); do
	if [ $((rep % 2)) = 1 ]; then sides="A B"; else sides="B A"; fi
	for side in $sides; do
		BIN=$OUT/bin-$side
		start_colocd "$POLICY" || exit 1
		probe_solo m "$MODEL"
		served_solo m "$MODEL" "$SECS" 150 || exit 1
		submit_tenant f "$MODEL" 60000 quiet
		wait_ready f || exit 1
		"$BIN/coloc-load" --socket "$SOCK" --tenant "f:$FIXED_QPS" --arrivals fixed \
			--duration "$FIXED_SECS" --warmup 1 --seed "$rep" --json >"$OUT/$side-$rep-fixed.json"
		ctl remove f >/dev/null
		stop_colocd
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$side" "$rep" "$SERVED_MS" "$SERVED_P95_MS" \
			"$(fixed_cols "$OUT/$side-$rep-fixed.json")" "$(cut -d' ' -f1 /proc/loadavg)" \
			| tee -a "$OUT/runs.tsv"
	done
done

# medians [min-max] over the replicas, per side and column
echo "medians over $REPLICAS replicas [min-max], ms ($MODEL, $POLICY, $(date -u +%FT%TZ)):"
for side in A B; do
	awk -F'\t' -v side="$side" 'NR == 1 { for (i = 3; i < NF; i++) name[i] = $i; next }
		$1 == side { n++; for (i = 3; i < NF; i++) v[i, n] = $i }
		END {
			printf "%s", side
			for (i = 3; i < NF; i++) {
				m = 0
				for (k = 1; k <= n; k++) {
					if (v[i, k] == "-") continue
					for (j = ++m; j > 1 && x[j - 1] > v[i, k] + 0; j--) x[j] = x[j - 1]
					x[j] = v[i, k] + 0
				}
				if (!m) { printf "  %s -", name[i]; continue }
				printf "  %s %.3f [%.3f-%.3f]", name[i], (m % 2 ? x[(m + 1) / 2] : (x[m / 2] + x[m / 2 + 1]) / 2), x[1], x[m]
			}
			printf "\n"
		}' "$OUT/runs.tsv"
done
