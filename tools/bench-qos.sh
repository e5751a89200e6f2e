#!/usr/bin/env bash
# coloc's QoS benchmark ('make bench-qos' as root; issue 8): for each tenant
# mix of tools/qos-mixes.conf and each of colocd's policies, the highest total
# load at which >= 95 % of EVERY tenant's queries meet QoS (QoS-QPS), and the
# worst tenant's p99 latency over its solo latency at medium load.
#
# For each policy and mix: a colocd of its own with that policy, the mix's
# tenants submitted with colocctl, then coloc-load (open-loop Poisson
# arrivals, a warm-up per point) at one total load after another. The
# policies of a mix are measured interleaved: all their colocds start
# together (the idle ones' executors sleep), then each policy's search runs
# its next point in turn, so that the machine's slow spells (on the 2-vCPU
# VM its speed moved by 1.3-1.4x for minutes at a time) fall on every policy
# alike; run one after the other, a whole search could land in one:
#   - QoS of a tenant: 2 x its model's solo latency (Abacus's rule), rounded
#     up to a whole ms; solo = the 95th percentile latency of the model served
#     alone by colocd (temporal, all cores) at 10 % load (at least 100
#     queries, up to 30 s), measured first. The profile's sum of hot layer
#     timings is below what a served query takes, and the percentile, not the
#     median: the goal counts 95 % of queries, and on the 2-vCPU VM a model
#     served alone has a long tail (GoogLeNet p50 18 ms, p99 38-48 ms at 3-6
#     % of the machine), so with 2 x the median every policy, temporal alone
#     included, missed 5-9 % at any load: the search measured the VM's
#     jitter, not the policies. 'solo' elsewhere (saturation, p99 / solo) is
#     the median;
#   - rates inversely proportional to QoS, so each tenant offers about the
#     same share of the machine's time; the search scales the total;
#   - saturation: the total at which the machine would be busy all the time
#     if every query ran at its solo speed, 1 / sum(share_i x solo_i);
#   - medium load: MEDIUM_SHARE (0.3) of saturation, the same absolute total
#     for every policy of a mix. It is the search's first point;
#   - search: from medium load, grow x GROW while a point passes (shrink / GROW
#     while it fails), then bisect (geometric midpoint) between the highest
#     pass and the lowest failure BISECT times. A point passes only if every
#     tenant has >= 95 % of its queries answered within QoS (drops, rejections,
#     failures and queries outstanding at the end count as misses). A
#     search's QoS-QPS is its highest passing total (with the confirmation
#     walk, its highest confirmed one); 0 when none passes down to 2 % of
#     saturation;
#   - confirmation walk (--confirm K, default 2; 0: none): near its end a
#     search's points hold a few dozen queries of a tenant and one or two late
#     queries decide them, so after the bisection the search runs its highest
#     pass again for K x a point's duration and judges it on all the queries
#     run at that load; from a pass it steps up by the bisection's last ratio,
#     from a failure down, at most CONFIRM_WALK (3) loads, stopping on a load
#     it confirmed. The search's QoS-QPS is then its highest confirmed pass
#     (tools/bench-qos-confirm.awk; docs/design/bench-qos-ci.md);
#   - searches per cell (--repeats N, default 1): one search decides a cell
#     near a pass/fail edge by luck (on the Zen 3 VM the same cell moved by
#     up to 2.7x between runs minutes apart), so with N > 1 each policy runs
#     N searches in a row, still interleaved with the other policies', search
#     r on arrivals of seed r, and the cell is their median; every search's
#     figure is kept (results.tsv) and printed. The table adds each cell's
#     95 % interval and each ratio's (a bootstrap over the searches, a
#     ratio's paired by search, tools/bench-qos-ci.awk) and says win, tie or loss by the interval
#     alone (docs/design/bench-qos-ci.md);
#   - each point lasts long enough for MIN_QUERIES queries of the least
#     frequent tenant (within [MIN_S, MAX_S] seconds), after WARMUP_S of
#     arrivals not counted; every point of search r uses seed r, so every
#     policy sees the same arrivals at the same load. Before the first point
#     each tenant answers 3 queries one at a time (colocctl infer): a cold executor's
#     first query is slow (a tenant colocd kills as hung meanwhile is
#     restarted once, and the run says so).
# A policy colocd does not know (or whose tenants do not get ready) is
# reported, marked 'skipped' in the table and left out of results.tsv; the
# run goes on.
#
# Files in build/bench-qos/ (tab-separated, one header line each):
#   results.tsv  mix policy qos_qps p99_over_solo searches
#                qos_qps: queries/s, all tenants together (the median of the
#                cell's searches); p99_over_solo: the worst tenant's p99
#                latency (coloc-load's, send to answer) over its solo latency
#                as served, at medium load (the median over the searches);
#                'inf' when more than 1 % of a tenant's queries got no answer
#                (dropped, rejected, failed, outstanding): a p99 over the
#                answered ones alone would flatter a policy that drops;
#                searches: each search's QoS-QPS, comma-separated, in order.
#                One row per policy measured; NA where coloc-load failed.
#   points.tsv   mix policy phase total_qps duration_s tenant qps sent
#                completed within_qos p99_ms solo_ms qos_ms pass search
#                executors parts_p50_ms parts_p95_ms
#                (p99_ms over the completed queries; 0 when none)
#                one row per tenant per load point; phase: medium, grow,
#                shrink, bisect or confirm; pass: the whole point's verdict
#                (0/1), of that point alone (the walk judges a confirmed
#                load on all the search's points at it);
#                search: which of the cell's searches (1..N, its seed);
#                executors: the tenant's executor processes (--executors);
#                parts_*: where colocd's latency went, each part's own
#                percentile, as queued=F,dispatch=F,... (protocol.h's
#                enum coloc_latency_part).
#   blocks-MIX-POLICY.tsv  colocd --block-log of that run: every block's
#                prediction and measurement (header in the file; colocd(8)).
#   mape.tsv     mix policy tenant blocks prediction_mape prediction_bias
#                colocd's block-latency prediction error over the whole run
#                of that policy (colocctl status --json; fractions).
#   jitter.tsv   mix policy jitter_floor
#                jitter_floor: the block log's jitter as a MAPE (jitter_floor
#                below), then in parentheses the blocks it counts; NA when no
#                class has 5 blocks.
#   MIX.png      fraction within QoS of the point's worst tenant against the
#                offered total, one line per policy (per load, the median
#                over the searches that ran it) (gnuplot).
# gnuplot-nox and jq are installed on demand (as root) if missing.
set -euo pipefail

usage() {
	cat <<EOF
Usage: tools/bench-qos.sh [--quick] [--repeats N] [--confirm K] [--policies LIST] [--mixes LIST]
                          [--solo-from FILE] [--executors N] [--via grpc|http]
       make bench-qos [ARGS='--quick ...']          (as root)
The highest total QPS at which >= 95 % of every tenant's queries meet QoS, for
each of colocd's policies on each tenant mix of tools/qos-mixes.conf, and the
worst tenant's p99 / solo latency at medium load, side by side; results in
build/bench-qos/ (results.tsv, points.tsv, mape.tsv, one PNG per mix).

  --quick          fewer and shorter load points (a first look in minutes;
                   noisier). The full run prints its estimated duration first
  --repeats N      N searches per policy and mix (1-9, default 1; seeds 1..N),
                   the cell their median (take N odd: of an even N the mean
                   of the middle two, a load no search ran): one search
                   decides a cell near its pass/fail edge by luck. N times as
                   long
  --confirm K      after each search's bisection, run the loads that decide
                   it again for K x a point's duration (0-9, default 2; 0:
                   none) and judge them on all their queries pooled: up to
                   3 such points, from its highest pass stepping up after a
                   pass and down after a failure; its QoS-QPS the highest
                   confirmed pass. Near the crossing a point holds a few
                   dozen queries a tenant and one late query flips it. Costs
                   about 2.5 x K points a search: with K = 2 a run takes
                   1.8-1.9 x as long as with --confirm 0
  --policies LIST  comma-separated colocd policies, each POLICY or POLICY@N:
                   that policy with every tenant on N executor processes
                   (1-8), e.g. coloc,coloc@2 measures both side by side;
                   either with :TAG (a-z, 0-9) measures that cell again as a
                   cell of its own, e.g. coloc,coloc:b: how far the
                   measurement agrees with itself (coloc-sim --measured
                   prints it) (default: $DEFAULT_POLICIES)
  --mixes LIST     comma-separated mix names from tools/qos-mixes.conf
                   (default: all)
  --solo-from FILE each model's served solo latency and QoS from an earlier
                   run's points.tsv instead of measuring them, so that runs
                   compare at the same QoS (copy it out of build/bench-qos/
                   first: a run starts by emptying that directory)
  --executors N    every tenant submitted with N executor processes (1-8,
                   default 1): up to N of its queries run at once; each
                   POLICY of --policies is measured as POLICY@N
  --via grpc|http  drive the tenants through coloc-gateway (one per policy,
                   as the coloc user, a model repository of the mix's
                   models whose tenants it adopts) with coloc-load --grpc or
                   --url instead of colocd's socket; route.tsv gets each
                   point's p50 and the gateway's CPU per query (default:
                   the socket; run both with one --solo-from to compare)
  -h, --help       this help

Measure on a quiet machine: every policy runs on the same cores, the
policies of a mix interleaved one load point at a time. Exit status: 0 the
table was printed, 1 failure, 2 bad usage.
EOF
}

DEFAULT_POLICIES="os,static,temporal,model-wise,layer-wise,coloc,coloc-noversions"
BASELINES=" os static temporal model-wise layer-wise "
POLICY_LIST=$DEFAULT_POLICIES
MIX_LIST=
SOLO_FROM=
VIA=socket
QUICK=0
REPEATS=1
CONFIRM=2
CONFIRM_WALK=3
# Exits 2 unless VALUE is one digit from MIN to MAX.
digit_arg() { # option value min max what
	[[ $2 =~ ^[$3-$4]$ ]] && return 0
	echo "bench-qos: $1 needs $5 from $3 to $4 (see --help)" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--repeats)
		digit_arg "$1" "${2:-}" 1 9 "a number of searches"
		REPEATS=$2
		shift
		;;
	--confirm)
		digit_arg "$1" "${2:-}" 0 9 "a factor"
		CONFIRM=$2
		shift
		;;
	--policies)
		[ $# -ge 2 ] || { echo "bench-qos: --policies needs a list (see --help)" >&2; exit 2; }
		POLICY_LIST=$2
		shift
		;;
	--mixes)
		[ $# -ge 2 ] || { echo "bench-qos: --mixes needs a list (see --help)" >&2; exit 2; }
		MIX_LIST=$2
		shift
		;;
	--solo-from)
		[ $# -ge 2 ] || { echo "bench-qos: --solo-from needs a points.tsv (see --help)" >&2; exit 2; }
		SOLO_FROM=$2
		shift
		;;
	--executors)
		digit_arg "$1" "${2:-}" 1 8 "a number of executors"
		EXECUTORS_ALL=$2
		shift
		;;
	--via)
		if [ $# -lt 2 ] || ! [[ $2 =~ ^(grpc|http|socket)$ ]]; then
			echo "bench-qos: --via needs grpc, http or socket (see --help)" >&2
			exit 2
		fi
		VIA=$2
		shift
		;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		echo "bench-qos: unknown argument '$1' (see --help)" >&2
		exit 2
		;;
	esac
	shift
done

MEDIUM_SHARE=0.3
PASS_FRACTION=0.95
DRAIN_S=1 # QoS is at most a few hundred ms: an answer later than this misses anyway
if [ "$QUICK" = 1 ]; then
	GROW=2 BISECT=1 MIN_QUERIES=15 MIN_S=3 MAX_S=5 WARMUP_S=1 SOLO_S=3
else
	# 40 queries of the least frequent tenant (two misses allowed at 95 %) and
	# two bisections keep a run of 6 policies x 4 mixes near an hour on 2 cores
	GROW=1.5 BISECT=2 MIN_QUERIES=40 MIN_S=8 MAX_S=20 WARMUP_S=2 SOLO_S=8
fi

# shellcheck source=tools/colocd-lib.sh
. "$(dirname "$0")/colocd-lib.sh"
colocd_lib_init bench-qos
. "$(dirname "$0")/bench-qos-via.sh"
via_init
OUT=$ROOT/build/bench-qos
CONF=$ROOT/tools/qos-mixes.conf

# ---- what it needs -----------------------------------------------------------
missing=()
for pkg in gnuplot-nox jq; do
	dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "bench-qos: installing ${missing[*]} (apt-get, as root)"
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends "${missing[@]}" >/dev/null ||
		echo "bench-qos: installing ${missing[*]} failed" >&2
fi
command -v jq >/dev/null || { echo "bench-qos: jq is needed to read coloc-load --json" >&2; exit 1; }

# ---- mixes and policies -------------------------------------------------------
declare -A MIX_MODELS
MIXES=()
while read -r name models; do
	case $name in '' | '#'*) continue ;; esac
	MIX_MODELS[$name]=$models
	MIXES+=("$name")
done <"$CONF"
if [ -n "$MIX_LIST" ]; then
	IFS=, read -r -a want <<<"$MIX_LIST"
	for m in "${want[@]}"; do
		[ -n "${MIX_MODELS[$m]:-}" ] || {
			echo "bench-qos: no mix '$m' in $CONF (it has: ${MIXES[*]})" >&2
			exit 2
		}
	done
	MIXES=("${want[@]}")
fi
IFS=, read -r -a POLICIES <<<"$POLICY_LIST"
[ ${#POLICIES[@]} -gt 0 ] || { echo "bench-qos: --policies names no policy" >&2; exit 2; }
# A cell is a policy and its tenants' executors: POLICY@N, or POLICY for one;
# CELL:TAG measures CELL again beside it, as a cell of its own (a replica).
declare -A SEEN
for i in "${!POLICIES[@]}"; do
	p=${POLICIES[$i]}
	if ! [[ $p =~ ^([a-z][a-z0-9-]*)(@[1-8])?(:[a-z0-9]+)?$ ]]; then
		echo "bench-qos: '$p' in --policies is not POLICY, POLICY@N (N executors, 1-8)" \
			"or either with :TAG (a replica)" >&2
		exit 2
	fi
	base=${BASH_REMATCH[1]}${BASH_REMATCH[2]} tag=${BASH_REMATCH[3]}
	[[ $base == *@* ]] || [ "${EXECUTORS_ALL:-1}" = 1 ] || base=$base@$EXECUTORS_ALL
	POLICIES[$i]=${base%@1}$tag
	[ -z "${SEEN[${POLICIES[$i]}]:-}" ] || {
		echo "bench-qos: --policies names ${POLICIES[$i]} twice (a replica takes a :TAG)" >&2
		exit 2
	}
	SEEN[${POLICIES[$i]}]=1
done
cell_executors() { # cell
	local c=${1%%:*}
	if [[ $c == *@* ]]; then echo "${c#*@}"; else echo 1; fi
}
declare -A MODEL_SET
for mix in "${MIXES[@]}"; do
	for m in ${MIX_MODELS[$mix]}; do MODEL_SET[$m]=1; done
done

# ---- profiles and solo latencies ----------------------------------------------
start=$SECONDS
echo "== latency profiles (made once, then reused from $CACHE while the model runs as fast)"
for m in "${!MODEL_SET[@]}"; do
	make_profile "$m" >"$WORK/$m.profile.log" 2>&1 || {
		grep -v "while measuring: cold start" "$WORK/$m.profile.log" | tail -n 4 | sed "s/^/  $m: /" >&2
		echo "bench-qos: no profile of $m to trust (above); a benchmark on its targets would be void" >&2
		exit 1
	}
	grep -E 'whole model|reused|wrote' "$WORK/$m.profile.log" | sed "s/^/  $m: /"
done

# Solo latency as served: each model alone under colocd (temporal: one query
# at a time on all cores), at a light load (10 % of the machine at its
# profiled speed), median of coloc-load's latencies. The profile's solo time
# sums layers timed back to back, times the profile's cold start (a whole
# model after an idle gap over one back to back: docs/design/profile-cold-start.md);
# a query served also pays the trip through colocd (~0.7 ms on the 2-vCPU
# VM), and its p95 the Poisson queueing, so the QoS is set from the served
# latency, not the profile.
declare -A SOLO PROFILED QOS
# what earlier writes left dirty (a build, a copied tree) goes to disk now, not during a measurement
sync
if [ -n "$SOLO_FROM" ]; then
	[ -r "$SOLO_FROM" ] || { echo "bench-qos: cannot read $SOLO_FROM" >&2; exit 2; }
	echo
	echo "== solo latency and QoS of each model from $SOLO_FROM (not measured)"
	for m in "${!MODEL_SET[@]}"; do
		read -r solo qos <<<"$(awk -F'\t' -v m="$m" 'NR == 1 {
			for (i = 1; i <= NF; i++) c[$i] = i; next }
			$c["tenant"] == m { print $c["solo_ms"], $c["qos_ms"]; exit }' "$SOLO_FROM")"
		[ -n "${qos:-}" ] || {
			echo "bench-qos: $SOLO_FROM has no row for $m (tenant, solo_ms, qos_ms)" >&2
			exit 2
		}
		SOLO[$m]=$solo QOS[$m]=$qos
		printf '  %-16s served alone p50 %8.3f ms -> QoS %s ms\n' "$m" "${SOLO[$m]}" "${QOS[$m]}"
	done
else
	start_colocd temporal || exit 1
	echo
	echo "== solo latency of each model as served (alone, temporal, 10 % load)"
	for m in "${!MODEL_SET[@]}"; do
		probe_solo "$m" "$m"
		PROFILED[$m]=$SOLO_MS
		served_solo "$m" "$m" "$SOLO_S" 100 || exit 1
		SOLO[$m]=$SERVED_MS
		QOS[$m]=$(qos_ms_of "$SERVED_P95_MS")
		printf '  %-16s profiled %8.3f ms, served alone p50 %8.3f ms, p95 %8.3f ms -> QoS %s ms\n' \
			"$m" "${PROFILED[$m]}" "${SOLO[$m]}" "$SERVED_P95_MS" "${QOS[$m]}"
		printf '  %-16s in colocd, p50 / p95 ms: %s\n' "" "$(jq -r '.tenants[0].colocd_parts |
			[to_entries[] | "\(.key) \(.value.p50_ms) / \(.value.p95_ms)"] | join(", ")' \
			<<<"$SERVED_JSON")"
		printf '  %-16s around colocd, p50 / p95 ms: %s\n' "" "$(jq -r '.tenants[0] |
			"send \(.send_p50_ms) / \(.send_p95_ms), hop \(.hop_p50_ms) / \(.hop_p95_ms), " +
			"latency less queueing \(.unqueued_p50_ms) / \(.unqueued_p95_ms)"' <<<"$SERVED_JSON")"
	done
	stop_colocd
fi

# Per mix: each tenant's share of the total rate, saturation and medium load.
declare -A SHARE SAT MEDIUM MIN_SHARE
for mix in "${MIXES[@]}"; do
	read -r sum_inv <<<"$(for m in ${MIX_MODELS[$mix]}; do echo "${QOS[$m]}"; done |
		awk '{ s += 1 / $1 } END { printf "%.12g", s }')"
	busy=0 min=1
	for m in ${MIX_MODELS[$mix]}; do
		SHARE[$mix.$m]=$(awk -v q="${QOS[$m]}" -v s="$sum_inv" 'BEGIN { printf "%.12g", 1 / q / s }')
		busy=$(awk -v b="$busy" -v w="${SHARE[$mix.$m]}" -v solo="${SOLO[$m]}" \
			'BEGIN { printf "%.12g", b + w * solo / 1000 }')
		min=$(awk -v a="$min" -v b="${SHARE[$mix.$m]}" 'BEGIN { print (b < a ? b : a) }')
	done
	SAT[$mix]=$(awk -v b="$busy" 'BEGIN { printf "%.4f", 1 / b }')
	MEDIUM[$mix]=$(awk -v s="${SAT[$mix]}" -v f="$MEDIUM_SHARE" 'BEGIN { printf "%.3f", s * f }')
	MIN_SHARE[$mix]=$min
done

point_duration() { # mix total
	awk -v w="${MIN_SHARE[$1]}" -v t="$2" -v n="$MIN_QUERIES" -v lo="$MIN_S" -v hi="$MAX_S" \
		'BEGIN { d = n / (w * t); d = d == int(d) ? d : int(d) + 1;
			 print (d < lo ? lo : (d > hi ? hi : d)) }'
}

echo
echo "== mixes (QoS = 2 x solo p95 on all cores, rounded up to a whole ms; rate shares"
echo "   inversely proportional to QoS; saturation: every query at solo speed)"
est=0
for mix in "${MIXES[@]}"; do
	line=
	for m in ${MIX_MODELS[$mix]}; do
		line+=$(printf ' %s (solo %s ms, QoS %s ms, %.0f%% of queries)' "$m" "${SOLO[$m]}" \
			"${QOS[$m]}" "$(awk -v w="${SHARE[$mix.$m]}" 'BEGIN { print 100 * w }')")
	done
	printf '  %-7s%s\n' "$mix" "$line"
	printf '          saturation %s QPS; medium load %s QPS (%.0f%% of it)\n' "${SAT[$mix]}" \
		"${MEDIUM[$mix]}" "$(awk -v f="$MEDIUM_SHARE" 'BEGIN { print 100 * f }')"
	d=$(point_duration "$mix" "${MEDIUM[$mix]}")
	# about 3 points to the first failure, then the bisection, then 2.5 confirmation
	# points on average (25 / 10: bash counts in integers); 15 s to start colocd and the tenants
	confirm_s=$((CONFIRM * d + WARMUP_S + DRAIN_S + 2))
	est=$((est + ${#POLICIES[@]} * (15 + REPEATS * ((3 + BISECT) * (d + WARMUP_S + DRAIN_S + 2) +
		(CONFIRM > 0 ? 25 * confirm_s / 10 : 0)))))
done
echo
echo "bench-qos: $([ "$QUICK" = 1 ] && echo quick || echo full) run of ${#POLICIES[@]} policies x" \
	"${#MIXES[@]} mixes x $REPEATS search(es), estimated $(((est + 59) / 60)) min (points of $MIN_S-$MAX_S s after" \
	"$WARMUP_S s of warm-up; $([ "$CONFIRM" = 0 ] && echo "no confirmation walk" ||
		echo "then a confirmation walk of up to $CONFIRM_WALK points $CONFIRM x as long, about" \
			"$((100 * 25 * confirm_s / 10 / ((3 + BISECT) * (d + WARMUP_S + DRAIN_S + 2))))% more time" \
			"a search; --confirm 0: none"))"

# ---- one load point -------------------------------------------------------------
rm -rf "$OUT"
mkdir -p "$OUT"
printf 'mix\tpolicy\tphase\ttotal_qps\tduration_s\ttenant\tqps\tsent\tcompleted\twithin_qos\tp99_ms\tsolo_ms\tqos_ms\tpass\tsearch\texecutors\tparts_p50_ms\tparts_p95_ms\n' \
	>"$OUT/points.tsv"
printf 'mix\tpolicy\tqos_qps\tp99_over_solo\tsearches\n' >"$OUT/results.tsv"
printf 'mix\tpolicy\ttenant\tblocks\tprediction_mape\tprediction_bias\n' >"$OUT/mape.tsv"
printf 'mix\tpolicy\tphase\ttotal_qps\ttenant\tvia\tp50_ms\tp99_ms\tgateway_cpu_us_per_query\n' \
	>"$OUT/route.tsv"

# Runs one point; sets PASS (1/0) and WORST_P99 (worst p99/solo). Returns 1 if coloc-load failed.
run_point() { # mix policy phase total search
	local mix=$1 policy=$2 phase=$3 total=$4 search=$5 spec='' d json=$WORK/point.json line rows

	for m in ${MIX_MODELS[$mix]}; do
		spec+="${spec:+,}$m:$(awk -v t="$total" -v w="${SHARE[$mix.$m]}" \
			'BEGIN { r = t * w; printf "%.3f", r < 0.001 ? 0.001 : r }')"
	done
	d=$(point_duration "$mix" "$total")
	[ "$phase" != confirm ] || d=$((d * CONFIRM))
	via_load_args "$policy"
	if ! "$BIN/coloc-load" --socket "$SOCK" "${VIA_ARGS[@]}" --tenant "$spec" --duration "$d" \
		--warmup "$WARMUP_S" --drain "$DRAIN_S" --seed "$search" --json >"$json" 2>"$WORK/load.err"; then
		sed 's/^/  coloc-load: /' "$WORK/load.err" >&2
		echo "bench-qos: coloc-load failed at $total QPS under --policy $policy ($mix)" >&2
		return 1
	fi
	via_record "$mix" "$policy" "$phase" "$total" "$json"
	rows=$(jq -r '.tenants[] | [.name, .qps, .sent, .completed, .within_qos, .p99_ms,
		([.colocd_parts | to_entries[] | "\(.key)=\(.value.p50_ms)"] | join(",")),
		([.colocd_parts | to_entries[] | "\(.key)=\(.value.p95_ms)"] | join(","))] | @tsv' "$json")
	PASS=$(awk -v f="$PASS_FRACTION" '{ if ($5 < f) bad = 1 } END { print bad ? 0 : 1 }' <<<"$rows")
	WORST_P99=0
	line=
	while IFS=$'\t' read -r name qps sent answered within p99 parts50 parts95; do
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$mix" \
			"$policy" "$phase" "$total" "$d" "$name" "$qps" "$sent" "$answered" "$within" \
			"$p99" "${SOLO[$name]}" "${QOS[$name]}" "$PASS" "$search" "$(cell_executors "$policy")" \
			"$parts50" "$parts95" >>"$OUT/points.tsv"
		# more than 1 % unanswered: the p99 of all its queries is a miss
		WORST_P99=$(awk -v a="$WORST_P99" -v p="$p99" -v s="${SOLO[$name]}" -v n="$sent" \
			-v c="$answered" 'BEGIN { r = (n > 0 && c >= 0.99 * n) ? p / s : "inf";
				if (a == "inf" || r == "inf") print "inf"; else printf "%.3f", (r > a ? r : a) }')
		line+=$(printf '  %s %.1f%% p99 %s (%s/%s answered)' "$name" \
			"$(awk -v w="$within" 'BEGIN { print 100 * w }')" \
			"$([ "$answered" -gt 0 ] && echo "$p99 ms" || echo -)" "$answered" "$sent")
	done <<<"$rows"
	printf '  %-16s %-7s %9.2f QPS %3s s:%s -> %s\n' "$policy$([ "$REPEATS" = 1 ] || echo " #$search")" \
		"$phase" "$total" "$d" "$line" "$([ "$PASS" = 1 ] && echo pass || echo FAIL)"
}

# ---- the search -----------------------------------------------------------------
# A policy's searches (REPEATS of them, one after another), taken a point at a
# time: the policies of a mix run
# interleaved (each its own colocd, all started at once; one point of each in
# turn), so a slow spell of the machine falls on all of them alike instead of
# on whichever policy ran then. A search's state: the phase and total of its
# next point, the highest pass (LO) and lowest failure (HI) so far, the
# bisections left, which of the cell's searches it is (its seed) and what the
# ones before it found (QoS-QPS and p99 / solo at medium load, space-separated).
declare -A RESULT P99X RUNS MAPE UNAVAILABLE S_PHASE S_T S_LO S_HI S_LEFT S_SEARCH S_QPS S_P99

search_begin() { # mix policy search
	S_PHASE[$1.$2]=medium S_T[$1.$2]=${MEDIUM[$1]} S_LO[$1.$2]=0 S_HI[$1.$2]=0
	S_LEFT[$1.$2]=$BISECT S_SEARCH[$1.$2]=$3
	[ "$3" != 1 ] || S_QPS[$1.$2]='' S_P99[$1.$2]=''
}

# The median of numbers (and 'inf', above all of them); of an even count, the
# mean of the middle two.
median() { # values...
	printf '%s\n' "$@" | sed 's/^inf$/1e308/' | sort -g |
		awk '{ v[++n] = $1 } END { m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2;
			if (m >= 1e307) print "inf"; else printf "%.3f", m }'
}

# After a pass at LO and a failure at HI: the geometric midpoint, or the
# confirmation walk, or done.
search_bisect() { # mix policy
	local k=$1.$2

	if [ "${S_LEFT[$k]}" -le 0 ]; then
		S_PHASE[$k]=over
		[ "$CONFIRM" = 0 ] || confirm_next "$1" "$2"
		return
	fi
	S_LEFT[$k]=$((S_LEFT[$k] - 1))
	S_PHASE[$k]=bisect
	S_T[$k]=$(awk -v a="${S_LO[$k]}" -v b="${S_HI[$k]}" 'BEGIN { printf "%.3f", sqrt(a * b) }')
}

# The confirmation walk's next point (S_PHASE confirm, S_T its load) or its
# end (S_PHASE over, S_LO the search's QoS-QPS), from the search's points so far.
confirm_next() { # mix policy
	local k=$1.$2 what t bisected=${S_LO[$1.$2]}

	read -r what t < <(awk -F'\t' -v mix="$1" -v p="$2" -v s="${S_SEARCH[$k]}" \
		'NR > 1 && $1 == mix && $2 == p && $15 == s { print $3, $4, $6, $8, $10 }' "$OUT/points.tsv" |
		awk -v walk="$CONFIRM_WALK" -f "$ROOT/tools/bench-qos-confirm.awk")
	if [ "$what" = run ]; then
		S_PHASE[$k]=confirm S_T[$k]=$t
		return 0
	fi
	[ "$what" = "done" ] || { echo "bench-qos: tools/bench-qos-confirm.awk failed on $OUT/points.tsv" >&2; exit 1; }
	S_PHASE[$k]=over S_LO[$k]=$t
	[ "$t" = "$bisected" ] || echo "  $2: search ${S_SEARCH[$k]} confirmed $t QPS, not the bisection's $bisected"
}

# Runs the search's next point and moves it on: from medium load, grow x GROW
# while a point passes (shrink / GROW while it fails), then bisect, then the
# confirmation walk; a search over starts the cell's next one. Sets S_PHASE
# to over, and RESULT, P99X and RUNS, when the cell's last search is over;
# returns 1 if coloc-load failed.
search_step() { # mix policy
	local mix=$1 policy=$2 k=$1.$2 t floor cap phase

	phase=${S_PHASE[$k]} t=${S_T[$k]}
	run_point "$mix" "$policy" "$phase" "$t" "${S_SEARCH[$k]}" || return 1
	[ "$phase" != medium ] || S_P99[$k]+="${S_P99[$k]:+ }$WORST_P99"
	floor=$(awk -v s="${SAT[$mix]}" 'BEGIN { print s / 50 }')
	cap=$(awk -v s="${SAT[$mix]}" 'BEGIN { print s * 4 }')
	if [ "$phase" != confirm ]; then
		if [ "$PASS" = 1 ]; then S_LO[$k]=$t; else S_HI[$k]=$t; fi
	fi
	case $phase in
	medium | grow | shrink)
		if [ "${S_LO[$k]}" != 0 ] && [ "${S_HI[$k]}" != 0 ]; then
			search_bisect "$mix" "$policy"
		elif [ "$PASS" = 1 ]; then
			S_PHASE[$k]=grow
			S_T[$k]=$(awk -v t="$t" -v g="$GROW" 'BEGIN { printf "%.3f", t * g }')
			if awk -v t="${S_T[$k]}" -v c="$cap" 'BEGIN { exit !(t > c) }'; then
				echo "  $policy passes at 4 x saturation at solo speed: the search stops there"
				S_PHASE[$k]=over
			fi
		else
			S_PHASE[$k]=shrink
			S_T[$k]=$(awk -v t="$t" -v g="$GROW" 'BEGIN { printf "%.3f", t / g }')
			if awk -v t="${S_T[$k]}" -v f="$floor" 'BEGIN { exit !(t < f) }'; then
				echo "  $policy fails down to 2 % of saturation: QoS-QPS 0"
				S_PHASE[$k]=over
			fi
		fi
		;;
	bisect) search_bisect "$mix" "$policy" ;;
	confirm) confirm_next "$mix" "$policy" ;;
	esac
	[ "${S_PHASE[$k]}" = over ] || return 0
	S_QPS[$k]+="${S_QPS[$k]:+ }${S_LO[$k]}"
	if [ "${S_SEARCH[$k]}" -lt "$REPEATS" ]; then
		echo "  $policy: search ${S_SEARCH[$k]} of $REPEATS found ${S_LO[$k]} QPS"
		search_begin "$mix" "$policy" $((S_SEARCH[$k] + 1))
		return 0
	fi
	# shellcheck disable=SC2086 # the lists split into their values
	RESULT[$k]=$(median ${S_QPS[$k]}) P99X[$k]=$(median ${S_P99[$k]}) RUNS[$k]=${S_QPS[$k]// /,}
}

# colocd's prediction error per tenant over the policy's whole run, into mape.tsv;
# MAPE[mix.policy]: over all the mix's blocks.
record_mape() { # mix policy
	local rows

	rows=$(ctl status --json | jq -r '.tenants[] | select(.blocks != null) |
		[.name, .blocks, (.prediction_mape // "NA"), (.prediction_bias // "NA")] | @tsv')
	while IFS=$'\t' read -r name blocks mape bias; do
		[ -n "$name" ] || continue
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$name" "$blocks" "$mape" "$bias" \
			>>"$OUT/mape.tsv"
	done <<<"$rows"
	MAPE[$1.$2]=$(awk -F'\t' '$2 > 0 && $3 != "NA" { n += $2; s += $2 * $3 }
		END { if (n) printf "%.1f%% (%d)", 100 * s / n, n; else print "NA" }' <<<"$rows")
}

# The block-to-block jitter of a block log, as a MAPE: each block's distance
# from the median of its class (the same tenant, layers, core count and
# versions; classes of 5 blocks or more), |measured - median| / measured,
# averaged over those blocks. A predictor that knew every class's median in
# hindsight would score this; no prediction made from a block's plan can do
# better (on the 2-vCPU Zen 3 VM, temporal's whole-model blocks, one at a
# time, scored 11-14 %: the machine's jitter, not co-runners). "blocks" in its output:
# how many it averaged over.
jitter_floor() { # block log
	awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$c["ok"] == 1 { printf "%s/%s/%s/%s/%s\t%s\n", $c["tenant"], $c["first"], $c["last"],
			$c["cores"], $c["versions"], $c["measured_us"] }' "$1" |
		sort -t "$(printf '\t')" -k1,1 -k2,2g |
		awk -F'\t' 'function flush(   i, m) {
				if (n >= 5) {
					m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
					for (i = 1; i <= n; i++) { s += (v[i] > m ? v[i] - m : m - v[i]) / v[i]; k++ }
				}
				n = 0
			}
			$1 != key { flush(); key = $1 } { v[++n] = $2 }
			END { flush(); if (k) printf "%.1f%% (%d)", 100 * s / k, k; else print "NA" }'
}

# A few queries one at a time: an executor's first query is cold (page faults,
# oneDNN's JIT) and would weigh on the first point. If colocd killed the
# executor as hung meanwhile (its limit is 10 x the predicted block time
# + 1 s; a cold block on a loaded machine can pass it), says so and restarts
# it once.
warm_up() { # tenant
	for try in 1 2; do
		for _ in 1 2 3; do ctl infer "$1" >/dev/null 2>&1 || true; done
		case $(ctl status "$1" --json 2>&1) in
		*'"state":"ready"'*) return 0 ;;
		esac
		echo "  $1 failed during its warm-up queries: $(ctl status "$1" --json |
			jq -r '.tenants[0].reason // "no reason given"')" >&2
		[ "$try" = 1 ] || return 1
		ctl restart "$1" >/dev/null && wait_ready "$1" || return 1
	done
}

# Starts colocd POLICY for MIX (a cell POLICY@N: colocd --policy POLICY, its
# tenants with N executors each), submits the mix's tenants and warms them up;
# returns 1 (and says why) when the policy cannot run the mix.
start_policy() { # mix policy
	local mix=$1 policy=$2 m ok=1 executors

	executors=$(cell_executors "$policy")
	use_colocd "$policy"
	if ! start_colocd "${policy%%[@:]*}" --block-log "$OUT/blocks-$mix-$policy.tsv"; then
		UNAVAILABLE[$policy]="colocd --policy ${policy%%[@:]*} did not start: $(tail -n 1 \
			"$WORK/colocd-$policy.log" 2>/dev/null || echo 'no log')"
		echo "  $policy: skipped (${UNAVAILABLE[$policy]})"
		return 1
	fi
	via_repo "$mix"
	for m in ${MIX_MODELS[$mix]}; do
		via_ctl submit "$m" "$(via_model_path "$mix" "$m")" --qos-ms "${QOS[$m]}" \
			--executors "$executors" >/dev/null || ok=0
	done
	for m in ${MIX_MODELS[$mix]}; do
		[ "$ok" = 1 ] && { wait_ready "$m" || ok=0; }
	done
	for m in ${MIX_MODELS[$mix]}; do
		[ "$ok" = 1 ] && { warm_up "$m" || ok=0; }
	done
	[ "$ok" = 1 ] && { via_start "$mix" "$policy" || ok=0; }
	[ "$ok" = 0 ] || return 0
	echo "  $policy: skipped on $mix (a tenant did not get or stay ready; see above)"
	RESULT[$mix.$policy]=skipped
	stop_colocd
	return 1
}

for mix in "${MIXES[@]}"; do
	echo
	echo "== mix $mix: ${MIX_MODELS[$mix]}"
	sync
	running=()
	for policy in "${POLICIES[@]}"; do
		if [ -n "${UNAVAILABLE[$policy]:-}" ]; then
			echo "  $policy: skipped (${UNAVAILABLE[$policy]})"
		elif start_policy "$mix" "$policy"; then
			search_begin "$mix" "$policy" 1
			running+=("$policy")
		fi
	done
	# one point of each policy in turn, until every search is over
	while [ ${#running[@]} -gt 0 ]; do
		left=()
		for policy in "${running[@]}"; do
			use_colocd "$policy"
			if ! search_step "$mix" "$policy"; then
				# the searches finished before the failure are kept, then NA
				RESULT[$mix.$policy]=NA
				printf '%s\t%s\tNA\tNA\t%s\n' "$mix" "$policy" \
					"$(tr ' ' , <<<"${S_QPS[$mix.$policy]:-}")${S_QPS[$mix.$policy]:+,}NA" \
					>>"$OUT/results.tsv"
			elif [ "${S_PHASE[$mix.$policy]}" != over ]; then
				left+=("$policy")
				continue
			else
				printf '%s\t%s\t%s\t%s\t%s\n' "$mix" "$policy" "${RESULT[$mix.$policy]}" \
					"${P99X[$mix.$policy]}" "${RUNS[$mix.$policy]}" >>"$OUT/results.tsv"
				record_mape "$mix" "$policy"
			fi
			via_stop "$policy"
			stop_colocd
		done
		running=("${left[@]}")
	done
done

# ---- the jitter floors ----
declare -A FLOOR
printf 'mix\tpolicy\tjitter_floor\n' >"$OUT/jitter.tsv"
for mix in "${MIXES[@]}"; do
	for p in "${POLICIES[@]}"; do
		[ -s "$OUT/blocks-$mix-$p.tsv" ] || continue
		FLOOR[$mix.$p]=$(jitter_floor "$OUT/blocks-$mix-$p.tsv")
		printf '%s\t%s\t%s\n' "$mix" "$p" "${FLOOR[$mix.$p]}" >>"$OUT/jitter.tsv"
	done
done

# ---- the table --------------------------------------------------------------------
# The 95 % interval of a cell's QoS-QPS, a bootstrap over its searches
# (tools/bench-qos-ci.awk): "[lo-hi]", or '' with one search.
cell_ci() { # mix policy
	local runs=${RUNS[$1.$2]:-} ci

	[ "$REPEATS" -gt 1 ] && [[ $runs =~ ^[0-9.,]+$ ]] || return 0
	ci=$(tr , '\n' <<<"$runs" | sed 's/^/c /' | awk -v mode=cell -f "$ROOT/tools/bench-qos-ci.awk")
	read -r _ lo hi <<<"$ci"
	[ "$lo" = n/a ] || printf '[%.1f-%.1f]' "$lo" "$hi"
}

cell() { # mix policy
	local r=${RESULT[$1.$2]:-} w=$((REPEATS > 1 ? 28 : 14))

	if [ -n "${UNAVAILABLE[$2]:-}" ] || [ "$r" = skipped ] || [ -z "$r" ]; then
		printf "%${w}s" skipped
	elif [ "$r" = NA ]; then
		printf "%${w}s" failed
	else
		if [ "${P99X[$1.$2]}" = inf ]; then
			printf "%7.1f %6s %$((w - 15))s" "$r" "inf" "$(cell_ci "$1" "$2")"
		else
			printf "%7.1f %5.2fx %$((w - 15))s" "$r" "${P99X[$1.$2]}" "$(cell_ci "$1" "$2")"
		fi
	fi
}

# One cell over others (the best of them, each resample choosing anew), with
# its 95 % interval and the verdict it allows: "1.50x [1.38-1.63] win temporal";
# without an interval (one search) "1.50x temporal (no interval)".
ratio_ci() { # mix cell other-cells...
	local mix=$1 num=$2 p v out
	shift 2
	out=$({
		for v in ${RUNS[$mix.$num]//,/ }; do echo "num $v"; done
		for p in "$@"; do
			for v in ${RUNS[$mix.$p]//,/ }; do echo "$p $v"; done
		done
	} | awk -v mode=ratio -f "$ROOT/tools/bench-qos-ci.awk") || { echo n/a; return; }
	read -r ratio lo hi verdict best <<<"$out"
	if [ "$ratio" = n/a ]; then
		echo n/a
	elif [ "$lo" = n/a ]; then
		printf '%.2fx %s (no interval)' "$ratio" "$best"
	else
		[ "$hi" = inf ] || hi=$(printf '%.2f' "$hi")
		printf '%.2fx [%.2f-%s] %s %s' "$ratio" "$lo" "$hi" "$verdict" "$best"
	fi
}

echo
echo "== QoS-QPS (queries/s, all tenants, >= 95 % of every tenant within QoS$([ "$REPEATS" = 1 ] ||
	echo "; the median of $REPEATS searches")) and the worst"
echo "   tenant's p99 / solo at medium load ($(awk -v f="$MEDIUM_SHARE" 'BEGIN { print 100 * f }')% of saturation at solo speed), per policy;"
echo "   coloc's ratio to the best baseline ($(xargs <<<"$BASELINES")), its prediction MAPE"
echo "   over the blocks of its whole run (mape.tsv has every policy's, per tenant) and the"
echo "   jitter floor of those blocks: the MAPE of their class medians known in hindsight"
echo "   (jitter.tsv has every policy's)"
# coloc@N over the best baseline@N, for each N with a coloc cell (N = 1: bare names)
ratio_cells=()
for p in "${POLICIES[@]}"; do [ "${p%@*}" != coloc ] || ratio_cells+=("$p"); done
[ ${#ratio_cells[@]} -gt 0 ] || ratio_cells=(coloc)
# coloc over coloc-noversions, when both ran: versions must never cost beyond the interval
nover=
for p in "${POLICIES[@]}"; do [ "$p" != coloc-noversions ] || nover=$p; done
[ -n "${SEEN[coloc]:-}" ] || nover=
printf '%-8s' mix
for p in "${POLICIES[@]}"; do printf " %$((REPEATS > 1 ? 28 : 14))s" "$p"; done
for c in "${ratio_cells[@]}"; do printf ' %34s' "$c/best base${c#coloc}"; done
[ -z "$nover" ] || printf ' %34s' "coloc/coloc-noversions"
printf ' %16s %16s\n' "coloc MAPE (blocks)" "jitter floor"
for mix in "${MIXES[@]}"; do
	printf '%-8s' "$mix"
	for p in "${POLICIES[@]}"; do printf ' %s' "$(cell "$mix" "$p")"; done
	for cc in "${ratio_cells[@]}"; do
		bases=()
		for p in "${POLICIES[@]}"; do
			if [[ $BASELINES == *" ${p%@*} "* ]] && [ "${p#"${p%@*}"}" = "${cc#coloc}" ] &&
				[[ ${RUNS[$mix.$p]:-} =~ ^[0-9.,]+$ ]]; then
				bases+=("$p")
			fi
		done
		if [[ ${RUNS[$mix.$cc]:-} =~ ^[0-9.,]+$ ]] && [ ${#bases[@]} -gt 0 ]; then
			printf ' %34s' "$(ratio_ci "$mix" "$cc" "${bases[@]}")"
		else
			printf ' %34s' n/a
		fi
	done
	if [ -n "$nover" ]; then
		if [[ ${RUNS[$mix.coloc]:-} =~ ^[0-9.,]+$ ]] &&
			[[ ${RUNS[$mix.$nover]:-} =~ ^[0-9.,]+$ ]]; then
			printf ' %34s' "$(ratio_ci "$mix" coloc "$nover")"
		else
			printf ' %34s' n/a
		fi
	fi
	m=${MAPE[$mix.coloc]:-NA}
	printf ' %16s %16s\n' "$([ "$m" = NA ] && echo n/a || echo "$m")" "${FLOOR[$mix.coloc]:-n/a}"
done
echo "(each cell: QoS-QPS, then p99/solo at medium load, 'inf' when over 1 % of a tenant's"
echo " queries got no answer, then with --repeats > 1 the 95 % interval of the QoS-QPS, a"
echo " bootstrap over the searches; 'skipped': the policy did not run. A ratio: the medians'"
echo " ratio, its 95 % bootstrap interval (searches drawn in pairs: search r of each), and win (the interval above 1), loss (below 1) or"
echo " tie; with one search no interval and no verdict (--repeats 3 gives one); no ratio"
echo " when the best baseline has 0 QPS. Raw points: $OUT/points.tsv)"
if [ "$REPEATS" -gt 1 ]; then
	echo
	echo "== each search's QoS-QPS (search r on the arrivals of seed r); the cells above are their medians"
	printf '%-8s' mix
	for p in "${POLICIES[@]}"; do printf ' %18s' "$p"; done
	echo
	for mix in "${MIXES[@]}"; do
		printf '%-8s' "$mix"
		for p in "${POLICIES[@]}"; do printf ' %18s' "${RUNS[$mix.$p]:--}"; done
		echo
	done
fi

# ---- the plots ----------------------------------------------------------------------
if command -v gnuplot >/dev/null; then
	for mix in "${MIXES[@]}"; do
		plot=
		for p in "${POLICIES[@]}"; do
			# the worst tenant of each point (search, load), then per load the
			# median over the searches that ran it
			awk -F'\t' -v mix="$mix" -v p="$p" 'NR > 1 && $1 == mix && $2 == p {
				k = $15 " " $4; if (!(k in w) || $10 < w[k]) w[k] = $10 }
				END { for (k in w) { split(k, a, " "); print a[2], w[k] } }' "$OUT/points.tsv" |
				sort -k1,1g -k2,2g |
				awk '$1 != t { flush(); t = $1 } { v[++n] = $2 }
					function flush() { if (n) print t, n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2; n = 0 }
					END { flush() }' >"$WORK/plot-$mix-$p.dat"
			[ -s "$WORK/plot-$mix-$p.dat" ] || continue
			plot+="${plot:+, }'$WORK/plot-$mix-$p.dat' using 1:2 with linespoints title '$p'"
		done
		[ -n "$plot" ] || continue
		gnuplot <<EOF
set terminal png size 900,560 noenhanced
set output '$OUT/$mix.png'
set title "mix $mix (${MIX_MODELS[$mix]}): worst tenant's share within QoS"
set xlabel 'offered load, queries/s (all tenants)'
set ylabel 'fraction within QoS, worst tenant'
set yrange [0:1.02]
set key outside right top
set grid
set arrow from graph 0, first $PASS_FRACTION to graph 1, first $PASS_FRACTION nohead dashtype 2
plot $plot
EOF
		echo "plot: $OUT/$mix.png"
	done
else
	echo "bench-qos: gnuplot is missing: no plots (the points are in $OUT/points.tsv)" >&2
fi
echo "results: $OUT/results.tsv, $OUT/points.tsv, $OUT/mape.tsv, $OUT/jitter.tsv"
echo "bench-qos done in $(((SECONDS - start + 59) / 60)) min. Measured on this machine as it was:"
echo "compare the policies side by side, not with runs taken under another load."
