#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Two coloc-executor builds side by side in one run, as root: two private
# colocds of this tree's build under one policy (coloc unless POLICY=), A
# started with --executor OLD, B with --executor NEW, each serving the same
# tenants (QoS: the target bench-qos keeps in the profile cache, else 100
# ms) with --block-log; then replicas of coloc-load at the same rates
# against A and B in turn, the order flipped every replica, replica r on
# arrivals of seed r. Per replica and side: each tenant's answered and
# within-QoS shares, p50 and p95 (coloc-load's), and from that replica's
# lines of the block log its 2-core blocks and the share of them over 3x
# their table (alone_us), their median measured / table, and the context
# switches (voluntary, involuntary) of the tenant's executor threads a
# block. docs/measurements/executor.md has runs.
#
#   tools/bench-executor-ab.sh OLD_EXECUTOR NEW_EXECUTOR [TENANTS [SECONDS [REPLICAS]]]
#
# TENANTS: coloc-load's spec, MODEL:QPS,... (default bench-qos's light mix
# at its medium load of 2026-12-06: mobilenet_v2:37.6,efficientnet_b0:18.8,
# ssd_mobilenet:0.41). The block logs stay in OUT (default
# /tmp/bench-executor-ab), as blocks-A.tsv and blocks-B.tsv, with
# replicas.tsv (side, replica, the block log's first and last line).
set -euo pipefail

OLD=$(realpath "$1") NEW=$(realpath "$2")
TENANTS=${3:-mobilenet_v2:37.6,efficientnet_b0:18.8,ssd_mobilenet:0.41}
SECONDS_EACH=${4:-30} REPLICAS=${5:-4} POLICY=${POLICY:-coloc}
OUT=${OUT:-/tmp/bench-executor-ab}
# shellcheck source=tools/colocd-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/colocd-lib.sh"
colocd_lib_init bench-executor-ab
mkdir -p "$OUT"
printf 'side\treplica\tfirst_line\tlast_line\n' >"$OUT/replicas.tsv"

declare -A EXE=([A]=$OLD [B]=$NEW) SOCKS PIDS SW0 SW1
for side in A B; do
	use_colocd "$side"
	SOCKS[$side]=$SOCK
	start_colocd "$POLICY" --executor "${EXE[$side]}" --block-log "$OUT/blocks-$side.tsv" || exit 1
	PIDS[$side]=$COLOCD
	for spec in ${TENANTS//,/ }; do
		m=${spec%%:*} QOS_MS=100
		kept_qos "$m" || true
		submit_tenant "$m" "$m" "$QOS_MS" quiet
	done
	for spec in ${TENANTS//,/ }; do
		wait_ready "${spec%%:*}" || exit 1
		# a cold executor's first queries are slow: three one at a time, as bench-qos
		for _ in 1 2 3; do ctl infer "${spec%%:*}" >/dev/null; done
	done
done

# the block log's lines so far (the header is line 1)
lines() { wc -l <"$OUT/blocks-$1.tsv"; }

# side tenant: voluntary and involuntary context switches of its executors' threads so far
switches() {
	local dir tid v=0 n=0 a b

	for dir in /sys/fs/cgroup/cpuset/coloc/colocd-"${PIDS[$1]}"/tenant-"$2" \
		/sys/fs/cgroup/coloc/colocd-"${PIDS[$1]}"/tenant-"$2"/*; do
		for tid in $(cat "$dir/tasks" "$dir/cgroup.threads" 2>/dev/null); do
			read -r a b < <(awk '/^voluntary_ctxt/ { v = $2 } /^nonvoluntary_ctxt/ { n = $2 }
				END { print v + 0, n + 0 }' "/proc/$tid/status" 2>/dev/null || echo 0 0)
			v=$((v + a)) n=$((n + b))
		done
	done
	echo "$v $n"
}

# side replica first last: tenant, blocks, 2-core blocks, over 3x their table, share,
# the median measured / table of its 2-core blocks
block_share() {
	python3 - "$OUT/blocks-$1.tsv" "$3" "$4" <<'PY'
import collections, statistics, sys
lines = open(sys.argv[1]).read().splitlines()[int(sys.argv[2]):int(sys.argv[3])]
blocks, ratios = collections.Counter(), collections.defaultdict(list)
for f in (x.split('\t') for x in lines):
    blocks[f[1]] += 1
    if f[5] == '2':
        ratios[f[1]].append(float(f[10]) / float(f[8]))
for t, r in ratios.items():
    slow = sum(x > 3 for x in r)
    print(t, blocks[t], len(r), slow, '%.1f' % (100 * slow / len(r)), '%.2f' % statistics.median(r))
PY
}

echo "# $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) CPUs; A: $OLD; B: $NEW"
echo "# $POLICY, $TENANTS, $SECONDS_EACH s a point, $REPLICAS replicas; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-4s %-3s %-16s %8s %8s %8s %8s %7s %7s %13s %6s %13s\n' side rep tenant answered within \
	p50_ms p95_ms blocks 2c '>3x_table' 2c_med 'cs/block v,n'
for r in $(seq "$REPLICAS"); do
	order="A B"
	[ $((r % 2)) -eq 0 ] && order="B A"
	for side in $order; do
		first=$(lines "$side")
		for spec in ${TENANTS//,/ }; do SW0[${spec%%:*}]=$(switches "$side" "${spec%%:*}"); done
		"$BIN/coloc-load" --socket "${SOCKS[$side]}" --tenant "$TENANTS" --duration "$SECONDS_EACH" \
			--warmup 2 --seed "$r" --json >"$WORK/load.json"
		last=$(lines "$side")
		for spec in ${TENANTS//,/ }; do SW1[${spec%%:*}]=$(switches "$side" "${spec%%:*}"); done
		printf '%s\t%s\t%s\t%s\n' "$side" "$r" "$first" "$last" >>"$OUT/replicas.tsv"
		declare -A SHARE2=()
		while read -r t all n s pct med; do
			read -r v0 n0 <<<"${SW0[$t]}"
			read -r v1 n1 <<<"${SW1[$t]}"
			SHARE2[$t]=$(printf '%7d %7d %5d (%4.1f%%) %6.2f %6.1f,%.1f' "$all" "$n" "$s" "$pct" "$med" \
				"$(awk -v d=$((v1 - v0)) -v b="$all" 'BEGIN { print d / b }')" \
				"$(awk -v d=$((n1 - n0)) -v b="$all" 'BEGIN { print d / b }')")
		done < <(block_share "$side" "$r" "$first" "$last")
		jq -r '.tenants[] | [.name, (.completed / (if .sent > 0 then .sent else 1 end)), .within_qos, .p50_ms, .p95_ms] | @tsv' \
			"$WORK/load.json" | while IFS=$'\t' read -r t ans within p50 p95; do
			printf '%-4s %-3s %-16s %8.3f %8.3f %8.3f %8.3f %s\n' "$side" "$r" "$t" "$ans" "$within" \
				"$p50" "$p95" "${SHARE2[$t]:-}"
		done
	done
done
echo "# load $(cut -d' ' -f1-3 /proc/loadavg) at the end"
for side in A B; do
	use_colocd "$side"
	stop_colocd
done
