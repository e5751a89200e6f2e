#!/usr/bin/env bash
# make bench-sim's many-core part (issue 9): the policies on simulated
# machines of 64, 128 and 256 cores (LLC domains of 4, VELTAIR's Threadripper
# 3990X), on the mixes of tools/qos-mixes.conf as VELTAIR would have run
# them: each model with VELTAIR's QoS target (MLPerf server: ResNet-50 and
# GoogLeNet 15 ms, EfficientNet, MobileNet-V2 and Tiny-YOLOv2 10 ms, SSD 100
# ms, BERT-Large 130 ms), raised to 2 x the model's fastest alone (bench-qos's
# rule) where that is more (Tiny-YOLOv2 scaled), each tenant's rate inversely
# proportional to it (VELTAIR's Mix rule), COPIES tenants of each model per 64
# cores.
# ResNet-50 and GoogLeNet run on VELTAIR's own tables (veltair:NAME), the
# other models on our profiles scaled to VELTAIR's machine (scaled:NAME;
# coloc-sim --scaling prints how and how far off). Prints, per core count:
#   - QoS-QPS of every policy (at 64 cores the median over SEEDS searches,
#     one search at 128 and 256 to keep the run short) and coloc's
#     ratio to the best baseline next to VELTAIR's published gain and to the
#     ceiling over temporal (coloc-sim --capacity's bound with the socket:
#     each layer at its cheapest count and occupancy under the interference
#     model, each tenant's queries timed with hindsight against the waits
#     they make on its lanes, against one at a time at the fastest), that ceiling
#     over the best baseline (the most coloc / best baseline one core count
#     a model allows; per-layer counts can pass it), and coloc / temporal
#     as a share of the ceiling, and coloc over the ceiling's own QPS (the
#     share credits coloc with temporal's waiting);
#   - the ablations (64 cores): coloc with one mechanism switched off at a
#     time, as a ratio to coloc;
#   - the same (64 cores) with LANES lanes a tenant (coloc-sim --lanes:
#     colocd --executor-lanes with colocctl submit --executors LANES, one
#     process and one copy of the weights a tenant), so that a tenant runs
#     that many of its queries at once; the tables above run one, colocd's
#     default for a tenant submitted without --executors, whatever the
#     cores, and then a tenant's queries wait for each other (sim/README.md:
#     where coloc's 64-core QPS goes);
# then policy_decide()'s cost at 64 and 256 cores with 16 and 64 tenants,
# and (64 cores) a plot per mix: the worst tenant's fraction within QoS
# against the offered load, one line per policy (build/bench-sim/*.png).
# Every number rests on sim/README.md's assumptions (interference: VELTAIR's
# 1.6 full-domain and full-socket slowdowns). Environment: COLOC_BIN (bin/), SEEDS (3),
# DURATION (simulated seconds per load point, 10), COPIES (2), CORES ("64 128
# 256"; the plots, the lanes table and the decision cost need 64 among
# them), LANES (lanes a tenant in that table, 2; 1 leaves it out; EXECUTORS,
# its name before, is read when LANES is not set).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd -P)
BIN=${COLOC_BIN:-$ROOT/bin}
SIM=$BIN/coloc-sim
CONF=$ROOT/tools/qos-mixes.conf
OUT=$ROOT/build/bench-sim
SEEDS=${SEEDS:-3}
DURATION=${DURATION:-10}
COPIES=${COPIES:-2}
LANES=${LANES:-${EXECUTORS:-2}}
CORES=${CORES:-64 128 256}
BASELINES="os static temporal model-wise layer-wise"
MAIN_POLICIES=$(tr ' ' , <<<"$BASELINES coloc")
ABLATIONS="coloc-noversions coloc-noblocks coloc-fixedthres coloc-noprediction coloc-fcfs coloc-nocap coloc-noknee
	coloc-shared coloc-timeshares"
# VELTAIR's QPS-under-QoS gain over its best baseline, as the paper (ASPLOS'22) reports it
declare -A PUBLISHED=([light]=1.71 [medium]=1.62 [heavy]=1.44 [mix]=1.68)

mkdir -p "$OUT"
# shellcheck source=tools/bench-sim-mixes.sh
. "$ROOT/tools/bench-sim-mixes.sh"

# search KEY FILE MIX CORES COPIES SEEDS POLICIES [coloc-sim args...]: QoS-QPS
# searches of POLICIES on MIX, coloc-sim's output in FILE.txt (.err), each
# policy's figure into QPS[KEY.policy]
search() {
	local key=$1 file=$2 mix=$3 cores=$4 copies=$5 seeds=$6 policies=$7 p v
	shift 7
	# shellcheck disable=SC2046 # tenants() prints separate arguments
	"$SIM" --policy "$policies" --search --seeds "$seeds" --cores "$cores" --llc 4 \
		--duration "$DURATION" --brief "$@" $(tenants "$mix" "$copies" "$cores") \
		>"$file.txt" 2>"$file.err" || {
		sed 's/^/  /' "$file.err" >&2
		echo "bench-sim: coloc-sim${*:+ $*} failed on $mix at $cores cores" >&2
		exit 1
	}
	while read -r p v; do QPS[$key.$p]=$v; done < <(awk '$2 == "QoS-QPS" { print $1, $3 }' "$file.txt")
}

# best KEY: the best baseline's QPS[KEY.*] and its name (0 - when none passes)
best() {
	local key=$1 p v best=0 best_name=-

	for p in $BASELINES; do
		v=${QPS[$key.$p]:-NA}
		if awk -v v="$v" -v b="$best" 'BEGIN { exit !(v + 0 > b) }'; then
			best=$v best_name=$p
		fi
	done
	echo "$best $best_name"
}

# row KEY MIX: MIX, the baselines' and coloc's QPS[KEY.*] and coloc / the best
# baseline, the line left open for the caller's columns
row() {
	local key=$1 p b

	printf '%-8s' "$2"
	for p in $BASELINES coloc; do printf ' %11s' "${QPS[$key.$p]:-NA}"; done
	read -r -a b < <(best "$key")
	printf ' %18s' "$(awk -v c="${QPS[$key.coloc]:-0}" -v b="${b[0]}" -v n="${b[1]}" \
		'BEGIN { if (b > 0) printf "%.2fx %s", c / b, n; else print "n/a" }')"
}

# ceiling MIX CORES COPIES LANES: coloc-sim --capacity's ratio over temporal and
# its QPS, on one line
ceiling() {
	# shellcheck disable=SC2046
	"$SIM" --capacity --cores "$2" --lanes "$4" $(tenants "$1" "$3" "$2") 2>/dev/null |
		sed -n 's/^capacity ceiling.*: \([0-9.]*x\) (\([0-9.]*\) QPS.*/\1 \2/p'
}

# of_ceiling_qps KEY CEILING_KEY: coloc over the ceiling's own QPS, which has
# no queue (the share above credits coloc with temporal's waiting)
of_ceiling_qps() {
	awk -v c="${CEILING_QPS[$2]:-}" -v q="${QPS[$1.coloc]:-0}" \
		'BEGIN { if (c > 0) printf "%.0f %%", 100 * q / c; else print "n/a" }'
}

# share_of_ceiling KEY CEILING_KEY: coloc / temporal over the ceiling (a ratio over temporal)
share_of_ceiling() {
	awk -v c="${CEILING[$2]:-}" -v q="${QPS[$1.coloc]:-0}" -v t="${QPS[$1.temporal]:-0}" \
		'BEGIN { sub(/x$/, "", c); if (c > 0 && t > 0) printf "%.0f %%", 100 * q / t / c; else print "n/a" }'
}

# over_best KEY CEILING_KEY: the ceiling (a ratio over temporal) over the best
# baseline of KEY: the most coloc / best baseline that one core count a model,
# no interference and no waiting would allow
over_best() {
	local b

	read -r -a b < <(best "$1")
	awk -v c="${CEILING[$2]:-}" -v t="${QPS[$1.temporal]:-0}" -v b="${b[0]}" \
		'BEGIN { sub(/x$/, "", c); if (c != "" && b > 0) printf "%.2fx", c * t / b; else print "n/a" }'
}

echo "== QoS targets (ms): VELTAIR's, or 2 x the model's fastest alone where that is more"
for cores in $CORES; do
	printf '  %3d cores:' "$cores"
	for m in $(tr ' ' '\n' <<<"${MODELS[*]}" | sort -u); do
		qos "$m" "$cores" >/dev/null || exit 1
		printf ' %s %s' "$m" "$(qos "$m" "$cores")"
	done
	echo
done
echo "== how our models' profiles become 64-core tables"
"$SIM" --scaling
declare -A QPS CEILING CEILING_QPS
for cores in $CORES; do
	copies=$((COPIES * cores / 64 > 0 ? COPIES * cores / 64 : 1))
	# past 64 cores one search each and no ablations: a 256-core search of every
	# policy takes minutes per mix on a 2-core machine
	seeds=$SEEDS policies=all
	if [ "$cores" != 64 ]; then
		seeds=1 policies=$MAIN_POLICIES
	fi
	echo
	echo "== $cores cores (LLC domains of 4), $copies tenants of each model, 1 lane a tenant" \
		"(colocd's default: colocctl submit without --executors), median of $seeds" \
		"search(es), $DURATION s per point"
	for mix in "${MIXES[@]}"; do
		search "$mix.$cores" "$OUT/search-$mix-$cores" "$mix" "$cores" "$copies" "$seeds" \
			"$policies"
		# shellcheck disable=SC2046
		read -r "CEILING[$mix.$cores]" "CEILING_QPS[$mix.$cores]" < <(ceiling "$mix" "$cores" \
			"$copies" 1)
	done
	printf '%-8s' mix
	for p in $BASELINES coloc; do printf ' %11s' "$p"; done
	printf ' %18s %9s %9s %16s %14s %14s\n' "coloc/best base" VELTAIR ceiling \
		"ceiling/best base" "coloc/ceiling" "of its QPS"
	for mix in "${MIXES[@]}"; do
		row "$mix.$cores" "$mix"
		printf ' %9s %9s %16s %14s %14s\n' "${PUBLISHED[$mix]:+${PUBLISHED[$mix]}x}" \
			"${CEILING[$mix.$cores]:-n/a}" "$(over_best "$mix.$cores" "$mix.$cores")" \
			"$(share_of_ceiling "$mix.$cores" "$mix.$cores")" \
			"$(of_ceiling_qps "$mix.$cores" "$mix.$cores")"
	done
	[ "$policies" = all ] || continue
	echo "ablations (coloc-timeshares: a variant, not an ablation), QoS-QPS / coloc's:"
	printf '%-8s' mix
	for p in $ABLATIONS; do printf ' %18s' "$p"; done
	echo
	for mix in "${MIXES[@]}"; do
		printf '%-8s' "$mix"
		for p in $ABLATIONS; do
			printf ' %18s' "$(awk -v a="${QPS[$mix.$cores.$p]:-0}" -v c="${QPS[$mix.$cores.coloc]:-0}" \
				'BEGIN { if (c > 0) printf "%.2f", a / c; else print "n/a" }')"
		done
		echo
	done
	[ "$LANES" -gt 1 ] || continue
	echo "$LANES lanes a tenant (coloc-sim --lanes $LANES: colocd --executor-lanes, colocctl" \
		"submit --executors $LANES; colocd's default is 1), QoS-QPS, median of $seeds" \
		"search(es):"
	printf '%-8s' mix
	for p in $BASELINES coloc; do printf ' %11s' "$p"; done
	printf ' %18s %15s %16s %14s %14s\n' "coloc/best base" "coloc / at 1" \
		"ceiling/best base" "coloc/ceiling" "of its QPS"
	for mix in "${MIXES[@]}"; do
		search "$mix.$cores.x" "$OUT/search-$mix-$cores-x$LANES" "$mix" "$cores" "$copies" \
			"$seeds" "$MAIN_POLICIES" --lanes "$LANES"
		read -r "CEILING[$mix.$cores.x]" "CEILING_QPS[$mix.$cores.x]" < <(ceiling "$mix" \
			"$cores" "$copies" "$LANES")
		row "$mix.$cores.x" "$mix"
		printf ' %15s %16s %14s %14s\n' "$(awk -v a="${QPS[$mix.$cores.x.coloc]:-0}" -v c="${QPS[$mix.$cores.coloc]:-0}" \
			'BEGIN { if (c > 0) printf "%.2f", a / c; else print "n/a" }')" \
			"$(over_best "$mix.$cores.x" "$mix.$cores.x")" \
			"$(share_of_ceiling "$mix.$cores.x" "$mix.$cores.x")" \
			"$(of_ceiling_qps "$mix.$cores.x" "$mix.$cores.x")"
	done
done

# the mix named 'mix' when there is one, else the last
dmix=${MIXES[-1]}
[ -z "${MODELS[mix]:-}" ] || dmix=mix
echo
echo "== policy_decide() cost, coloc, the mix '$dmix' at half coloc's 64-core QoS-QPS per 64 cores"
for cores in 64 256; do
	for n in 16 64; do
		per=$(wc -w <<<"${MODELS[$dmix]}")
		copies=$((n / per > 0 ? n / per : 1))
		qps=$(awk -v q="${QPS[$dmix.64.coloc]:-0}" -v c="$cores" \
			'BEGIN { printf "%.1f", (q > 0 ? q : 100) / 2 * c / 64 }')
		# shellcheck disable=SC2046
		line=$("$SIM" --policy coloc --qps "$qps" --cores "$cores" --llc 4 --duration 10 \
			--brief $(tenants "$dmix" "$copies" "$cores") 2>&1 | grep 'policy_decide:' ||
			echo "policy_decide: coloc-sim failed")
		printf '  %3d cores, %2d tenants, %7s QPS: %s\n' "$cores" "$((copies * per))" "$qps" \
			"${line#*policy_decide: }"
	done
done

# fraction within QoS against the load, 64 cores, one seed
if command -v gnuplot >/dev/null && command -v jq >/dev/null; then
	echo
	for mix in "${MIXES[@]}"; do
		top=$(awk -v a="${QPS[$mix.64.coloc]:-0}" -v b="${QPS[$mix.64.temporal]:-0}" \
			'BEGIN { m = a > b ? a : b; print (m > 4 ? m : 100) }')
		rm -f "$OUT"/plot-"$mix"-*.dat
		for i in 2 4 6 8 10 12 14 16 18 20; do
			qps=$(awk -v t="$top" -v i="$i" 'BEGIN { printf "%.1f", t * i / 10 / 1.25 }')
			# shellcheck disable=SC2046
			if ! "$SIM" --policy "$MAIN_POLICIES" --qps "$qps" --cores 64 \
				--llc 4 --duration "$DURATION" --json $(tenants "$mix" "$COPIES") \
				>"$OUT/point.json" 2>"$OUT/point.err"; then
				echo "bench-sim: coloc-sim failed at $qps QPS on $mix (plot point left out):" >&2
				sed 's/^/  /' "$OUT/point.err" >&2
				continue
			fi
			jq -r --arg q "$qps" '.results[] | [.policy, $q,
				([.run.tenants[].fraction_within] | min)] | @tsv' "$OUT/point.json" |
				while IFS=$'\t' read -r p q f; do echo "$q $f" >>"$OUT/plot-$mix-$p.dat"; done
		done
		plot=
		for p in $BASELINES coloc; do
			[ -s "$OUT/plot-$mix-$p.dat" ] &&
				plot+="${plot:+, }'$OUT/plot-$mix-$p.dat' using 1:2 with linespoints title '$p'"
		done
		[ -n "$plot" ] || continue
		gnuplot <<EOF
set terminal png size 900,560 noenhanced
set output '$OUT/$mix-64.png'
set title "simulated, 64 cores, mix $mix ($COPIES tenants of each model)"
set xlabel 'offered load, queries/s (all tenants)'
set ylabel 'fraction within QoS, worst tenant'
set yrange [0:1.02]
set key outside right top
set grid
set arrow from graph 0, first 0.95 to graph 1, first 0.95 nohead dashtype 2
plot $plot
EOF
		echo "plot: $OUT/$mix-64.png"
	done
else
	echo "bench-sim: gnuplot or jq missing (make bench-qos installs both): no plots" >&2
fi
