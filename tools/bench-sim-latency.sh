#!/usr/bin/env bash
# The simulator's fidelity on per-tenant latency (issue 27): one mix served
# by a real colocd at three fixed loads, each load measured by coloc-load
# in several replicas, next to coloc-sim at the same loads with the
# serving path's parts (coloc-sim --parts) fitted on each model served
# alone by the same colocd just before. Prints, per load and tenant, the
# measured p50 and p95 (median of the replicas and their range) beside the
# simulated (median of the seeds), and a verdict: "within" when the
# simulated value is no farther from the replicas' median than the
# farthest replica is. Not part of make check: it needs root (colocd) and
# a few minutes of a machine (sim/README.md, docs/measurements/simulator.md).
#
# Usage: tools/bench-sim-latency.sh [MIX | MODEL,MODEL...]   (default light,
# of tools/qos-mixes.conf)
# Environment: SIM_LAT_POLICY (coloc), SIM_LAT_LOADS (shares of saturation,
# "0.1 0.3 0.5"), SIM_LAT_REPLICAS (3), SIM_LAT_SECONDS (20 measured a
# point, after 2 of warm-up), SIM_LAT_SOLO_S (15: each model alone at 10 %
# for the parts), SIM_LAT_SOLO_ROUNDS (3: the alone runs, every model once a
# round; each part is the median over the rounds, so one slow spell of the
# VM does not set a model's parts), SIM_LAT_SEEDS (5), SIM_LAT_OUT (build/bench-sim-latency:
# parts.tsv, measured.tsv, simulated.tsv, table.txt), COLOC_CACHE_DIR,
# COLOC_BIN.
set -euo pipefail

# shellcheck source=tools/colocd-lib.sh
source "$(dirname "$0")/colocd-lib.sh"
colocd_lib_init bench-sim-latency

MIX=${1:-light}
POLICY=${SIM_LAT_POLICY:-coloc}
read -r -a LOADS <<<"${SIM_LAT_LOADS:-0.1 0.3 0.5}"
REPLICAS=${SIM_LAT_REPLICAS:-3}
SECONDS_A_POINT=${SIM_LAT_SECONDS:-20}
SOLO_S=${SIM_LAT_SOLO_S:-15}
SOLO_ROUNDS=${SIM_LAT_SOLO_ROUNDS:-3}
SEEDS=${SIM_LAT_SEEDS:-5}
OUT=${SIM_LAT_OUT:-$ROOT/build/bench-sim-latency}
WARMUP_S=2
CORES=$(nproc)
if [[ $MIX == *,* ]]; then
	IFS=, read -r -a MODELS <<<"$MIX"
else
	read -r -a MODELS <<<"$(awk -v m="$MIX" '$1 == m { $1 = ""; print }' "$ROOT/tools/qos-mixes.conf")"
fi
[ "${#MODELS[@]}" -gt 0 ] || { echo "bench-sim-latency: no mix '$MIX' in tools/qos-mixes.conf" >&2; exit 2; }
command -v jq >/dev/null || { echo "bench-sim-latency: needs jq" >&2; exit 1; }
mkdir -p "$OUT"

echo "bench-sim-latency: mix $MIX (${MODELS[*]}), policy $POLICY, $(nproc) CPUs: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)"
echo "  load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
for m in "${MODELS[@]}"; do make_profile "$m" >/dev/null; done
start_colocd "$POLICY"

# Each model alone at 10 % of its profile, SOLO_ROUNDS times in rounds: its
# parts (colocd's, p50 and p95 a query), each the median over the rounds;
# QoS 2 x its served p95 (bench-qos's rule, the rounds' median) and its
# service time as served: colocd's parts at their p50 less the waits
# (queued, decide).
median_of() { tr ' ' '\n' | sort -g | awk 'NF { v[++n] = $1 } END { print n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }'; }
parts_median() { # json objects of colocd_parts or hop, one a line, on stdin
	jq -s 'def med: sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;
		. as $r | [.[0] | keys[]] | map({key: ., value: {p50_ms: ([$r[][.].p50_ms] | med),
			p95_ms: ([$r[][.].p95_ms] | med)}}) | from_entries'
}
declare -A QOS PARTS_JSON HOP_JSON SERVICE RATE PROFILED P50S P95S PARTS_ROUNDS HOP_ROUNDS
for m in "${MODELS[@]}"; do
	probe_solo "$m" "$m"
	PROFILED[$m]=$SOLO_MS
done
for r in $(seq "$SOLO_ROUNDS"); do
	for m in "${MODELS[@]}"; do
		SOLO_MS=${PROFILED[$m]}
		served_solo "solo_$m" "$m" "$SOLO_S" 200
		P50S[$m]+=" $SERVED_MS"
		P95S[$m]+=" $SERVED_P95_MS"
		PARTS_ROUNDS[$m]+=$(jq -c '.tenants[0].colocd_parts' <<<"$SERVED_JSON")$'\n'
		HOP_ROUNDS[$m]+=$(jq -c '.tenants[0] | {hop: {p50_ms: .hop_p50_ms, p95_ms: .hop_p95_ms}}' <<<"$SERVED_JSON")$'\n'
		echo "  $m alone at 10 %, round $r: served p50 $SERVED_MS / p95 $SERVED_P95_MS ms"
	done
done
for m in "${MODELS[@]}"; do
	RATE[$m]=$(awk -v s="${PROFILED[$m]}" 'BEGIN { printf "%.2f", 100 / s }') # served_solo's
	p50=$(median_of <<<"${P50S[$m]}")
	p95=$(median_of <<<"${P95S[$m]}")
	QOS[$m]=$(qos_ms_of "$p95")
	PARTS_JSON[$m]=$(printf '%s' "${PARTS_ROUNDS[$m]}" | parts_median)
	HOP_JSON[$m]=$(printf '%s' "${HOP_ROUNDS[$m]}" | parts_median | jq -c '.hop')
	SERVICE[$m]=$(jq '[to_entries[] | select(.key != "queued" and .key != "decide") | .value.p50_ms] | add' <<<"${PARTS_JSON[$m]}")
	echo "  $m alone at 10 %: profiled ${PROFILED[$m]} ms, served p50 $p50 / p95 $p95 ms (medians of $SOLO_ROUNDS rounds; service ${SERVICE[$m]} ms) -> QoS ${QOS[$m]} ms"
done

# The mix: every tenant offers the same share of the machine as served
# (rates inversely proportional to the service time); saturation 1 /
# sum(share x service), the loads shares of it.
inv=0
for m in "${MODELS[@]}"; do inv=$(awk -v a="$inv" -v q="${SERVICE[$m]}" 'BEGIN { print a + 1 / q }'); done
declare -A SHARE
sat_inv=0
for m in "${MODELS[@]}"; do
	SHARE[$m]=$(awk -v q="${SERVICE[$m]}" -v i="$inv" 'BEGIN { printf "%.6f", (1 / q) / i }')
	sat_inv=$(awk -v a="$sat_inv" -v s="${SHARE[$m]}" -v l="${SERVICE[$m]}" 'BEGIN { print a + s * l / 1000 }')
	submit_tenant "$m" "$m" "${QOS[$m]}" quiet
	wait_ready "$m"
done
SAT=$(awk -v x="$sat_inv" 'BEGIN { printf "%.3f", 1 / x }')
echo "  saturation (as served alone, all tenants in their shares): $SAT QPS"

# The table time of a query as the policy runs the model alone, for the
# compute factor: coloc-sim alone at the same rate, without parts, its
# blocks' table times (--block-trace's alone_us) summed per query, median.
declare -A TABLE
for m in "${MODELS[@]}"; do
	"$BIN/coloc-sim" --tenant "$m:${QOS[$m]}" --policy "$POLICY" --cores "$CORES" --llc "$CORES" \
		--full-slowdown 1.0 --profile-dir "$CACHE" --qps "${RATE[$m]}" --duration 120 \
		--block-trace "$WORK/alone-$m.tsv" >/dev/null
	TABLE[$m]=$(awk -F'\t' '{ t[$3] += $7 } END { n = 0; for (q in t) v[++n] = t[q] / 1000
		for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { x = v[j]; v[j] = v[j - 1]; v[j - 1] = x }
		printf "%.4f", n ? v[int((n + 1) / 2)] : 0 }' "$WORK/alone-$m.tsv")
	echo "  $m alone, simulated without parts: a query's blocks take ${TABLE[$m]} ms in the table"
done

# The parts file: copy per MB of the model's input and output, compute over its table time.
{
	printf 'model\tpart\tp50_ms\tp95_ms\ttable_ms\n'
	for m in "${MODELS[@]}"; do
		bytes=$(ctl status "$m" --json | jq '[.. | objects | select(.name? == "'"$m"'" and .input_bytes?) | .input_bytes + .output_bytes][0]')
		for part in dispatch notice reply; do
			jq -r --arg m "$m" --arg p "$part" '.[$p] | [$m, $p, .p50_ms, .p95_ms, 0] | @tsv' <<<"${PARTS_JSON[$m]}"
		done
		jq -r --arg m "$m" --arg t "${TABLE[$m]}" '.compute | [$m, "compute", .p50_ms, .p95_ms, $t] | @tsv' <<<"${PARTS_JSON[$m]}"
		jq -r --arg m "$m" --argjson b "$bytes" '.copy | [$m, "copy", .p50_ms / ($b / 1e6), .p95_ms / ($b / 1e6), 0] | @tsv' <<<"${PARTS_JSON[$m]}"
		jq -r --arg m "$m" '[$m, "hop", .p50_ms, .p95_ms, 0] | @tsv' <<<"${HOP_JSON[$m]}"
	done
} >"$OUT/parts.tsv"

# Measured: every load of each replica in turn, so a slow spell of the machine falls on all loads.
printf 'load\tqps\treplica\ttenant\tsent\tcompleted\tp50_ms\tp95_ms\n' >"$OUT/measured.tsv"
for r in $(seq "$REPLICAS"); do
	for load in "${LOADS[@]}"; do
		qps=$(awk -v l="$load" -v s="$SAT" 'BEGIN { printf "%.3f", l * s }')
		list=
		for m in "${MODELS[@]}"; do
			list+=${list:+,}$m:$(awk -v q="$qps" -v s="${SHARE[$m]}" 'BEGIN { printf "%.3f", q * s }')
		done
		"$BIN/coloc-load" --socket "$SOCK" --tenant "$list" --duration "$SECONDS_A_POINT" \
			--warmup "$WARMUP_S" --seed "$r" --json >"$WORK/load.json"
		jq -r --arg l "$load" --arg q "$qps" --arg r "$r" '.tenants[] |
			[$l, $q, $r, .name, .sent, .completed, .p50_ms, .p95_ms] | @tsv' "$WORK/load.json" >>"$OUT/measured.tsv"
		echo "  measured load $load ($qps QPS), replica $r; load average $(cut -d' ' -f1 /proc/loadavg)"
	done
done

# Simulated: the same loads, tenants, QoS and shares, seeds 1..SEEDS, on this machine's cores.
printf 'load\tqps\tseed\ttenant\tcompleted\tp50_ms\tp95_ms\n' >"$OUT/simulated.tsv"
for load in "${LOADS[@]}"; do
	qps=$(awk -v l="$load" -v s="$SAT" 'BEGIN { printf "%.3f", l * s }')
	args=()
	for m in "${MODELS[@]}"; do args+=(--tenant "$m:${QOS[$m]}:${SHARE[$m]}"); done
	for s in $(seq "$SEEDS"); do
		"$BIN/coloc-sim" "${args[@]}" --policy "$POLICY" --cores "$CORES" --llc "$CORES" \
			--full-slowdown 1.0 --profile-dir "$CACHE" --parts "$OUT/parts.tsv" \
			--qps "$qps" --duration "$((SECONDS_A_POINT + WARMUP_S))" --warmup "$WARMUP_S" \
			--seed "$s" --json |
			jq -r --arg l "$load" --arg q "$qps" --arg s "$s" '.. | objects | select(.tenants?) |
				.tenants[] | [$l, $q, $s, .model, .completed, .p50_ms, .p95_ms] | @tsv' >>"$OUT/simulated.tsv"
	done
done

awk -F'\t' -v reps="$REPLICAS" '
function sort(a, n,    i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t } }
function median(a, n) { sort(a, n); return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
FNR == 1 { file++; next }
file == 1 { k = $1 SUBSEP $4; if (!(k in seen)) { seen[k] = 1; order[++nk] = k; ld[k] = $1; tn[k] = $4 }
	n = ++mn[k]; m50[k, n] = $7; m95[k, n] = $8 }
file == 2 { k = $1 SUBSEP $4; n = ++sn[k]; s50[k, n] = $6; s95[k, n] = $7 }
END {
	printf "%-5s %-16s %-26s %-8s %-8s %-26s %-8s %-8s\n", "load", "tenant",
		"measured p50 (range)", "sim p50", "", "measured p95 (range)", "sim p95", ""
	for (i = 1; i <= nk; i++) {
		k = order[i]
		for (st = 50; st <= 95; st += 45) {
			delete a; delete b; n = mn[k]; ns = sn[k]
			lo = 1e99; hi = -1
			for (j = 1; j <= n; j++) { a[j] = st == 50 ? m50[k, j] : m95[k, j]; lo = a[j] < lo ? a[j] : lo; hi = a[j] > hi ? a[j] : hi }
			med = median(a, n)
			for (j = 1; j <= ns; j++) b[j] = st == 50 ? s50[k, j] : s95[k, j]
			sim = median(b, ns)
			far = hi - med > med - lo ? hi - med : med - lo
			ok = (sim - med <= far && med - sim <= far)
			cells += 1; within += ok
			txt[st] = sprintf("%6.2f (%6.2f-%6.2f)", med, lo, hi)
			sv[st] = sim; vd[st] = ok ? "within" : "outside"
		}
		printf "%-5s %-16s %-26s %-8.2f %-8s %-26s %-8.2f %-8s\n", ld[k], tn[k], txt[50], sv[50], vd[50], txt[95], sv[95], vd[95]
	}
	printf "%d of %d within the replicas'"'"' spread (%d replicas measured, simulated: median of the seeds)\n", within, cells, reps
}' "$OUT/measured.tsv" "$OUT/simulated.tsv" | tee "$OUT/table.txt"
echo "  load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
stop_colocd
