#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Measures what one model does to another on this 2-core machine, for the
# simulator's interference model (sim/README.md): the victim runs on core 0
# (bin/coloc-run, median of its runs), first "alone" with core 1 kept busy by
# coloc-stress spinning on registers (level 0, --fill spin: the same power
# state, no memory traffic), then beside the aggressor model running in a
# loop on core 1; alone and paired alternate, ROUNDS times. Prints one line
# per (victim, aggressor, round): the two medians and their ratio.
# On a machine other people load, RT=1 runs the victim, the aggressor and the
# spinner under SCHED_FIFO (chrt -f 10), so that other processes do not
# time-share the two cores meanwhile (the kernel's RT throttling still leaves
# them 5 %); what is measured is then the pair, not the neighbours.
# Usage: [RT=1] sim/measure-pairs.sh [ROUNDS] [VICTIM:AGGRESSOR ...]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
shift || true
pairs=("$@")
[ ${#pairs[@]} -gt 0 ] || pairs=(mobilenet_v2:resnet50 resnet50:mobilenet_v2
	googlenet:tiny_yolov2 tiny_yolov2:googlenet efficientnet_b0:resnet50
	resnet50:resnet50)
# timed runs per measurement: about 1 s of the model on one core
declare -A iters=([mobilenet_v2]=50 [efficientnet_b0]=40 [googlenet]=20
	[tiny_yolov2]=12 [resnet50]=10 [ssd_mobilenet]=25)
rt=()
[ "${RT:-0}" = 1 ] && rt=(chrt -f 10)
bg=
stop_bg() { [ -z "$bg" ] || { kill "$bg" 2>/dev/null || true; wait "$bg" 2>/dev/null || true; bg=; }; }
trap stop_bg EXIT
median_ms() { # MODEL: the victim's median on core 0
	"${rt[@]}" bin/coloc-run "models/$1.model" --cores 0 --iters "${iters[$1]}" --json |
		sed -n 's/.*"total_ms": *\([0-9.]*\).*/\1/p'
}
printf 'victim\taggressor\tround\talone_ms\tpaired_ms\tslowdown\n'
for pair in "${pairs[@]}"; do
	v=${pair%%:*} a=${pair##*:}
	for r in $(seq "$rounds"); do
		"${rt[@]}" bin/coloc-stress --cores 1 --level 0 --fill spin >/dev/null 2>&1 &
		bg=$!
		sleep 0.5
		alone=$(median_ms "$v")
		stop_bg
		"${rt[@]}" bin/coloc-run "models/$a.model" --cores 1 --iters 100000 >/dev/null 2>&1 &
		bg=$!
		sleep 2 # past its weight generation, into its timed runs
		paired=$(median_ms "$v")
		stop_bg
		printf '%s\t%s\t%d\t%s\t%s\t%.4f\n' "$v" "$a" "$r" "$alone" "$paired" \
			"$(echo "$paired / $alone" | bc -l)"
	done
done
