#!/usr/bin/env bash
# make bench-sim's first part, the fidelity check (make bench-sim-2core):
# this machine (all its cores, one LLC) simulated with coloc's own profiles
# (the cache files colocd reads; made here only when missing), every policy
# on every mix of tools/qos-mixes.conf as make bench-qos runs them, next to
# what bench-qos measured (its results.tsv) when it exists. With bench-qos's
# points.tsv and block logs there, first the executor model fitted on all
# the block logs (one for every run), searched as bench-qos did (its loads
# and point lengths, --search-like), then the check itself: each policy on
# each mix by the executor model of its own run's log (--exec-per-run).
# sim/README.md says what every number rests on.
#
# Environment: COLOC_BIN (bin/), SIM_MIXES (tools/qos-mixes.conf),
# SIM_QOS_DIR (build/bench-qos: another bench-qos run's results.tsv,
# points.tsv and block logs), SIM_2CORE_SLOWDOWN (the full-domain slowdown,
# 1.0: the one fitted from model pairs measured here), SIM_ARGS (more
# coloc-sim options, e.g. '--speed-rho 0': without the machine's slow spells).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd -P)
BIN=${COLOC_BIN:-$ROOT/bin}
MIXES=${SIM_MIXES:-$ROOT/tools/qos-mixes.conf}
QOS_DIR=${SIM_QOS_DIR:-$ROOT/build/bench-qos}
SLOWDOWN=${SIM_2CORE_SLOWDOWN:-1.0}
read -r -a EXTRA <<<"${SIM_ARGS:-}"
CORES=$(nproc)

echo "bench-sim: simulated QoS-QPS (>= 95% of every tenant's queries within QoS), 120 s"
echo "per point, median of seeds 1..5. sim/README.md states what every number rests on."
mkdir -p "$ROOT/build/profiles"
for m in $(awk '!/^#/ { for (i = 2; i <= NF; i++) print $i }' "$MIXES" | sort -u); do
	"$BIN/coloc-sim" --tenant "$m:2x" --qps 1 --duration 0.01 --cores 1 --llc 1 \
		>/dev/null 2>&1 && continue
	echo "bench-sim: no profile of $m in the cache colocd reads: profiling it"
	"$BIN/coloc-profile" "$ROOT/models/$m.model" -o "$ROOT/build/profiles/$m.profile" \
		>/dev/null || {
		echo "bench-sim: profiling $m failed"
		exit 1
	}
done

echo "== fidelity: this machine (all its cores, one LLC), coloc's profiles, the mixes of ${MIXES#"$ROOT"/}"
serving=()
pts=$QOS_DIR/points.tsv
if [ -r "$pts" ] && ls "$QOS_DIR"/blocks-*-*.tsv >/dev/null 2>&1; then
	# the search's point lengths (a walk's are --confirm K x as long), and whether it walked
	read -r like walked < <(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$c["phase"] == "confirm" { w = 1; next }
		$c["duration_s"] > m { m = $c["duration_s"] }
		END { print (m > 5 ? "full" : "quick"), w + 0 }' "$pts")
	echo "== the executor model fitted on all the block logs of $QOS_DIR, one for every"
	echo "   run; searched as bench-qos $like did (its loads and point lengths, $([ "$walked" = 1 ] &&
		echo "its confirmation walk" || echo "no confirmation walk")), median of 25 seeds"
	serving=(--exec-from "$QOS_DIR" --search-like "$like" --seeds 25)
	[ "$walked" = 1 ] || serving+=(--confirm 0)
	"$BIN/coloc-sim" --mixes "$MIXES" --mix all --policy all --search --cores "$CORES" --llc "$CORES" \
		--full-slowdown "$SLOWDOWN" --brief --measured "$QOS_DIR/results.tsv" \
		"${serving[@]}" "${EXTRA[@]}"
	echo "== the check: each policy on each mix by the executor model of its own run's log"
	serving+=(--exec-per-run)
fi
"$BIN/coloc-sim" --mixes "$MIXES" --mix all --policy all --search --seeds 5 --cores "$CORES" --llc "$CORES" \
	--duration 120 --full-slowdown "$SLOWDOWN" --brief --measured "$QOS_DIR/results.tsv" \
	"${serving[@]}" "${EXTRA[@]}"
