#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Fits one parameter of coloc-sim's serving-cost model to what make
# bench-qos measured: for every load point of one policy in bench-qos's
# points.tsv, coloc-sim runs that mix at that total load with bench-qos's
# QoS, the block cost, the per-model query cost from the served solo
# latency (--query-cost-us auto) and FIXED (the parameters already fitted),
# once per value of FLAG on a grid. The score is the binomial
# log-likelihood of the measured counts within QoS (sent x within_qos of
# sent) under the simulated fraction; also printed, the mean absolute
# difference of the fractions (the fit error). The policies not fitted are
# left for the fidelity check to judge.
#
# Usage: sim/fit-serving.sh POLICY FLAG "VALUES" [POINTS_TSV] [FIXED...]
#   sim/fit-serving.sh temporal --query-cost-sigma "0 0.2 0.4 0.6 0.8"
#   sim/fit-serving.sh os --shared-penalty "1 1.5 2 2.5 3" \
#       build/bench-qos/points.tsv --query-cost-sigma 0.6
# Environment: BLOCK_US (default 71), DURATION (simulated s, default 120).
set -euo pipefail

[ $# -ge 3 ] || { sed -n '3,19p' "$0" >&2; exit 2; }
policy=$1 flag=$2 values=$3
points=${4:-build/bench-qos/points.tsv}
shift $(($# < 4 ? $# : 4))
block_us=${BLOCK_US:-71}
sim=${SIM:-bin/coloc-sim}
duration=${DURATION:-120}

[ -r "$points" ] || { echo "fit-serving: no $points; run make bench-qos first" >&2; exit 1; }
[ -x "$sim" ] || { echo "fit-serving: no $sim; run make first" >&2; exit 1; }

# mix, total load of each measured point of the policy, once
mapfile -t loads < <(awk -F'\t' -v p="$policy" '
	NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$c["policy"] == p && !seen[$c["mix"] " " $c["total_qps"]]++ { print $c["mix"], $c["total_qps"] }
	' "$points")
[ "${#loads[@]}" -gt 0 ] || { echo "fit-serving: no points of policy $policy in $points" >&2; exit 1; }

printf '%-8s %12s %10s %8s\n' value loglik mean_abs points
best='' best_ll=''
for v in $values; do
	sim_out=$(mktemp)
	for ml in "${loads[@]}"; do
		read -r mix qps <<<"$ml"
		"$sim" --mix "$mix" --policy "$policy" --qps "$qps" --cores "$(nproc)" \
			--llc "$(nproc)" --duration "$duration" --full-slowdown 1.0 \
			--qos-from "$points" --block-cost-us "$block_us" --query-cost-us auto \
			"$@" "$flag" "$v" 2>/dev/null |
			awk -v mix="$mix" -v qps="$qps" '
				/^  tenant / { t = 1; next }
				/^  policy_decide/ { t = 0 }
				t { w = $6; sub("%", "", w); print mix, qps, $1, w / 100 }'
	done >"$sim_out"
	read -r ll mad n < <(awk -F'\t' -v p="$policy" -v simf="$sim_out" '
		BEGIN { while ((getline l < simf) > 0) { split(l, f, " "); frac[f[1] " " f[2] " " f[3]] = f[4] } }
		NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$c["policy"] == p {
			k = $c["mix"] " " $c["total_qps"] " " $c["tenant"]
			if (!(k in frac)) next
			q = frac[k]; q = q < 0.001 ? 0.001 : (q > 0.999 ? 0.999 : q)
			hit = $c["sent"] * $c["within_qos"]
			ll += hit * log(q) + ($c["sent"] - hit) * log(1 - q); n++
			d = frac[k] - $c["within_qos"]; mad += d < 0 ? -d : d
		}
		END { printf "%.3f %.3f %d\n", ll, n ? mad / n : 0, n }' "$points")
	rm -f "$sim_out"
	printf '%-8s %12s %10s %8s\n' "$v" "$ll" "$mad" "$n"
	if [ -z "$best" ] || awk -v a="$ll" -v b="$best_ll" 'BEGIN { exit !(a > b) }'; then
		best=$v best_ll=$ll
	fi
done
echo "best $flag: $best (log-likelihood $best_ll; policy $policy, block cost $block_us us${*:+, $*})"
