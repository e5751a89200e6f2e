#!/usr/bin/env bash
# coloc's demo ('make demo' as root): DNN inference tenants served by colocd,
# on the path an operator uses. It makes the latency profiles it needs once
# (cached), starts colocd, shows an impossible QoS refused with its numbers,
# measures each model served alone, submits MobileNet-V2 and ResNet-50 with
# colocctl (QoS = 2 x the p95 served alone, Abacus's rule on the tail the
# goal counts, set on the first sound run and kept per model and machine), shows
# colocctl status and the BPF attribution of the tenants' executors and, halfway
# through the first load, which block holds each core (core_owner), drives
# both with coloc-load (open-loop Poisson arrivals, MLPerf's server
# scenario), and repeats the same load (same seed, same rates) under coloc's
# policy and the two baselines operators have without it: os (every tenant
# on all cores, the kernel sharing them) and static (a fixed equal share of
# the cores each). colocd is stopped with SIGTERM each time and must exit 0
# and leave no pin or socket behind. With COLOC_DEMO_BLOCK_LOGS=DIR, each
# policy's colocd writes its --block-log to DIR/blocks-POLICY.tsv (for
# tools/replay-blocks.py).
set -euo pipefail

# shellcheck source=tools/colocd-lib.sh
. "$(dirname "$0")/colocd-lib.sh"
colocd_lib_init demo
MODELS=(mobilenet_v2 resnet50)
POLICIES=(coloc os static)
# Each tenant offers this share of the machine at its kept solo speed: together
# half of it, enough for the policies to differ, with room to meet QoS.
LOAD_SHARE=0.25
SEED=1
WARMUP_S=2
DURATION_S=20
# queries served alone that set each QoS target the first time
QOS_QUERIES=200
declare -A QOS RATE

start_policy() { # policy: its colocd, with its block log if asked for
	local log=()

	[ -z "${COLOC_DEMO_BLOCK_LOGS:-}" ] || log=(--block-log "$COLOC_DEMO_BLOCK_LOGS/blocks-$1.tsv")
	start_colocd "$1" "${log[@]}"
}

submit_all() { # quiet?
	for m in "${MODELS[@]}"; do submit_tenant "$m" "$m" "${QOS[$m]}" "${1:-}"; done
	for m in "${MODELS[@]}"; do wait_ready "$m" || exit 1; done
}

run_load() { # policy
	local spec=
	for m in "${MODELS[@]}"; do spec+="${spec:+,}$m:${RATE[$m]}"; done
	"$BIN/coloc-load" --socket "$SOCK" --tenant "$spec" --duration "$DURATION_S" \
		--warmup "$WARMUP_S" --seed "$SEED" >"$WORK/load-$1.txt"
}

start=$SECONDS
echo "coloc demo: a little over a minute on a 2-core machine once the latency profiles"
echo "exist (the first run makes them first, a minute or two more)."

echo
echo "== latency profiles (made once, then reused from $CACHE)"
# A profile refused because the machine is busy is tried twice more, then used
# for this run only with a warning: measured with --force into a cache of this
# run (a copy of $CACHE's files, where colocd then looks), so the demo runs,
# its figures say what they are worth, and the next run profiles again.
busy=()
for m in "${MODELS[@]}"; do
	echo "  $m:"
	for try in 1 2 3; do
		make_profile "$m" 2>&1 | sed 's/^/    /' && continue 2
		echo "    (try $try of 3: the machine was too busy to profile on; again in 5 s)"
		sleep 5
	done
	busy+=("$m")
done
if [ ${#busy[@]} -gt 0 ]; then
	mkdir -p "$WORK/cache"
	cp -p "$CACHE"/*.profile "$CACHE"/*.qos "$WORK/cache/" 2>/dev/null || true
	CACHE=$WORK/cache
fi
for m in "${busy[@]}"; do
	echo "  $m: WARNING: the machine stayed busy: using a profile measured on it for this"
	echo "    run (--force, kept in $CACHE only); the QoS targets and the comparison"
	echo "    below are not what these models cost alone"
	make_profile "$m" --force 2>&1 | sed 's/^/    /'
done

echo
echo "== starting colocd --policy ${POLICIES[0]}"
start_policy "${POLICIES[0]}" || exit 1
sed 's/^/  /' "$WORK/colocd-${POLICIES[0]}.log"

echo
echo "== an impossible QoS (10 us) is refused with its numbers; then each model alone,"
echo "   served by colocd at a light load, gives its solo latency as served (a query"
echo "   after an idle gap takes longer than the profile's back-to-back layers). Each"
echo "   tenant's QoS is 2 x its 95th percentile served alone (the tail the goal counts,"
echo "   as make bench-qos sets it), rounded up to a whole ms: measured on $QOS_QUERIES"
echo "   queries the first time, then kept in the profile cache for this model and"
echo "   machine, as an operator keeps a service's target, so that runs compare under"
echo "   the same targets (kept only from a measurement within 2 x / 3 x the profile)"
for m in "${MODELS[@]}"; do
	probe_solo "$m" "$m"
	echo "  $REFUSAL"
	if kept_qos "$m"; then
		served_solo "$m" "$m" 3 60 || exit 1
	else
		for try in 1 2; do
			served_solo "$m" "$m" 10 "$QOS_QUERIES" || exit 1
			if keep_qos "$m"; then
				QOS_SET="$QOS_SET (now)"
				break
			fi
			printf '  %s alone: p50 %.3f ms, p95 %.3f ms: over 2 x / 3 x its profile %.3f ms:\n' \
				"$m" "$SERVED_MS" "$SERVED_P95_MS" "$SOLO_MS"
			if [ "$try" = 1 ]; then
				echo "  is the machine busy? Measured once more"
			else
				echo "  its QoS is set for this run only, not kept"
				QOS_SET="$QOS_SET (this run only)"
			fi
		done
	fi
	printf '  %s alone: profiled %.3f ms, served p50 %.3f ms, p95 %.3f ms\n' "$m" "$SOLO_MS" \
		"$SERVED_MS" "$SERVED_P95_MS"
	printf '  %s QoS %s ms: 2 x p95 %.3f ms served alone on %s%s\n' "$m" "$QOS_MS" \
		"$QOS_P95_MS" "$QOS_SET" "$([ -e "$QOS_FILE" ] && echo " (kept in $QOS_FILE)")"
	QOS[$m]=$QOS_MS
	# the offered load from the same kept measurement, so that it stays too
	RATE[$m]=$(awk -v s="$QOS_P50_MS" -v f="$LOAD_SHARE" 'BEGIN { r = f * 1000 / s; printf "%.1f", r < 0.5 ? 0.5 : r }')
done

echo
echo "== submitting the tenants"
submit_all
for m in "${MODELS[@]}"; do
	printf '  %-13s QoS %4s ms, offered %5s queries/s (%.0f%% of the machine at solo speed)\n' \
		"$m" "${QOS[$m]}" "${RATE[$m]}" "$(awk -v f="$LOAD_SHARE" 'BEGIN { print 100 * f }')"
done

echo
echo "== the executors' attribution in BPF: bpftool map dump pinned $PIN/tenant_by_tgid"
echo "   (key: executor pid, value: tenant id; colocd keeps it from the executors' pidfds)"
ctl list | sed 's/^/  /'
"$BPFTOOL" map dump pinned "$PIN/tenant_by_tgid" | sed 's/^/  /'

for p in "${POLICIES[@]}"; do
	if [ "$p" != "${POLICIES[0]}" ]; then
		start_policy "$p" || exit 1
		submit_all quiet
	fi
	echo
	echo "== coloc-load under --policy $p: ${WARMUP_S} s warm-up, ${DURATION_S} s measured, seed $SEED"
	if [ "$p" = "${POLICIES[0]}" ]; then
		# which tenant's block holds each core, caught halfway through the load
		(sleep $((WARMUP_S + DURATION_S / 2)) &&
			"$BPFTOOL" map dump pinned "$PIN/core_owner" >"$WORK/core_owner.txt" 2>&1) &
		snapshot=$!
	fi
	run_load "$p"
	sed 's/^/  /' "$WORK/load-$p.txt"
	if [ "$p" = "${POLICIES[0]}" ]; then
		wait "$snapshot"
		echo
		echo "== which block held each core halfway through: bpftool map dump pinned $PIN/core_owner"
		sed 's/^/  /' "$WORK/core_owner.txt"
		echo
		echo "== colocctl status after it (colocd's own counts, warm-up included)"
		ctl status | sed 's/^/  /'
	fi
	stop_colocd
	echo "  colocd --policy $p stopped: SIGTERM, exit 0, pins and socket removed"
done

echo
echo "== the same load under each policy (coloc-load's measurements; seed $SEED)"
printf '  %-9s %-13s %7s %7s %8s %8s %8s %7s %8s\n' policy tenant "QoS ms" "done/s" \
	"p50 ms" "p99 ms" "max ms" "in QoS" "drop+rej"
for p in "${POLICIES[@]}"; do
	for m in "${MODELS[@]}"; do
		awk -v p="$p" -v m="$m" -v q="${QOS[$m]}" '$1 == m && $2 ~ /^[0-9.]+$/ {
			printf "  %-9s %-13s %7s %7s %8s %8s %8s %7s %8d\n",
			       p, m, q, $3, $5, $7, $8, $11, $12 + $14 }' "$WORK/load-$p.txt"
	done
done
echo "  coloc-load's own CPU:"
for p in "${POLICIES[@]}"; do
	printf '    %-9s %s\n' "$p" "$(sed -nE "s/^coloc-load's own CPU: //p" "$WORK/load-$p.txt")"
done
echo "  coloc: VELTAIR's layer blocks and versions, Abacus's prediction and headroom"
echo "  order; os: no coloc, each tenant on all cores, the kernel sharing them;"
echo "  static: half the cores each. One run per policy on a 2-core machine: compare"
echo "  them side by side, not with other runs; make bench-qos searches each one's"
echo "  highest load within QoS on four mixes."

echo
echo "demo done in $((SECONDS - start)) s"
