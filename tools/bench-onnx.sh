#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# make bench-onnx: latency of coloc against ONNX Runtime (CPU, npm
# onnxruntime-node, intra-op threads = cores) on the same ONNX files, the
# same weights and the same input, on 1 core and on all of them. coloc runs
# twice: its default kernel version (coloc-run --kernel 0) and the versions
# it serves with, each layer's fastest measured on those cores as a profile
# picks them (--kernel auto). Each round runs every engine once per model and
# core count (ORT, then coloc's two), each run giving the median of ITERS
# timed runs after a warm-up; the table shows the median over ROUNDS rounds
# and the ratios coloc / ORT (below 1: coloc is faster).
#
# Models: our own, exported to ONNX with their seed's weights
# (tools/ort/export-own.sh; coloc runs the same .onnx), the real
# published models of tests/data/ort/models.txt that coloc loads, and its
# generated unet_up (tools/ort/gen-graph.py: a transposed-convolution head).
#
#   tools/bench-onnx.sh [MODEL...]     (ROUNDS=5 ITERS=30 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
ITERS=${ITERS:-30}
BIN=${COLOC_BIN:-bin}
OWN=build/ort/own
if [ $# -gt 0 ]; then
	MODELS=("$@")
else
	MODELS=(resnet50 mobilenet_v2 bert_base googlenet efficientnet_b0 ssd_mobilenet tiny_yolov2 timer unet_up)
fi

tools/ort/install.sh
tools/ort/install.sh --models

# The ONNX file of a model name: ours exported, else models.txt's npm path.
onnx_of() {
	local src pkg
	if [ -f "models/$1.model" ]; then
		tools/ort/export-own.sh "$1" "$OWN" >&2
		echo "$OWN/$1.onnx"
		return
	fi
	src=$(awk -v n="$1" '$1 == n { print $2 }' tests/data/ort/models.txt)
	case "$src" in
	npm:*)
		pkg=${src#npm:}
		pkg=${pkg%%/models/*}
		echo "build/ort/models/$pkg/package/${src#npm:"$pkg"/}"
		;;
	gen:*)
		mkdir -p build/ort/gen
		/usr/bin/python3 tools/ort/gen-graph.py "${src#gen:}" "build/ort/gen/${src#gen:}.onnx"
		echo "build/ort/gen/${src#gen:}.onnx"
		;;
	*)
		echo "bench-onnx: no model '$1' (models/$1.model or tests/data/ort/models.txt)" >&2
		exit 2
		;;
	esac
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
json_field() { node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s)[process.argv[1]]))' "$1"; }

ncpu=$(nproc)
CORE_COUNTS=(1)
[ "$ncpu" -gt 1 ] && CORE_COUNTS+=("$ncpu")
isa=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -xE 'avx2|avx512f|avx512bw|avx512_vnni|avx512_bf16|amx_tile|amx_bf16' | tr '\n' ' ')
echo "bench-onnx: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $ncpu CPUs, ISA: ${isa:-no AVX2}"
echo "bench-onnx: ONNX Runtime $(node -p "require('./build/ort/node_modules/onnxruntime-node/package.json').version") (CPU, intra-op threads = cores, pinned with taskset) vs coloc-run --kernel 0 and --kernel auto; $ROUNDS alternated rounds of $ITERS runs, medians"
echo "bench-onnx: timings on a shared, loaded machine are noisy: read the ratios, not the times"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
declare -A FILE
for m in "${MODELS[@]}"; do
	FILE[$m]=$(onnx_of "$m")
	node tools/ort/run.mjs "${FILE[$m]}" --write-input "$work/$m.in" >/dev/null
done

for r in $(seq "$ROUNDS"); do
	echo "bench-onnx: round $r of $ROUNDS" >&2
	for m in "${MODELS[@]}"; do
		for c in "${CORE_COUNTS[@]}"; do
			cpus=0-$((c - 1))
			taskset -c "$cpus" node tools/ort/run.mjs "${FILE[$m]}" --input "$work/$m.in" \
				--threads "$c" --iters "$ITERS" | json_field median_ms >>"$work/$m.$c.ort"
			for k in 0 auto; do
				"$BIN/coloc-run" "${FILE[$m]}" --input "$work/$m.in" --cores "$cpus" \
					--kernel "$k" --iters "$ITERS" --json |
					json_field total_ms >>"$work/$m.$c.coloc-$k"
			done
		done
	done
done

echo
echo "| model | cores | ONNX Runtime | coloc (default version) | coloc / ORT | coloc (fastest versions) | coloc / ORT |"
echo "|---|---|---|---|---|---|---|"
for m in "${MODELS[@]}"; do
	for c in "${CORE_COUNTS[@]}"; do
		o=$(median <"$work/$m.$c.ort")
		k=$(median <"$work/$m.$c.coloc-0")
		a=$(median <"$work/$m.$c.coloc-auto")
		awk -v m="$m" -v c="$c" -v o="$o" -v k="$k" -v a="$a" \
			'BEGIN { printf "| %s | %d | %.3f ms | %.3f ms | %.2f | %.3f ms | %.2f |\n", m, c, o, k, k / o, a, a / o }'
	done
done

# Transposed convolutions: with each deconv version in turn (coloc-run
# --kernel NAME; a layer without it runs its version 0), every deconv
# layer's GFLOP/s beside the median GFLOP/s of the convs of the same run,
# and their ratio: a deconv at convolution speed reads about 1.
deconv_row() {
	# shellcheck disable=SC2016 # ${...} is JavaScript's, inside the template literal
	node -e '
let s = "";
process.stdin.on("data", (d) => (s += d)).on("end", () => {
	const r = JSON.parse(s), g = r.layers.filter((l) => l.op === "conv").map((l) => l.gflops).sort((a, b) => a - b);
	const conv = g.length ? g[Math.floor(g.length / 2)] : 0;
	for (const l of r.layers.filter((l) => l.op === "deconv"))
		console.log(`| ${process.argv[1]} | ${process.argv[2]} | ${l.layer} | ${l.version} | ${l.gflops.toFixed(1)} | ${conv.toFixed(1)} | ${conv ? (l.gflops / conv).toFixed(2) : "-"} |`);
});' "$1" "$2"
}
header=0
for m in "${MODELS[@]}"; do
	versions=$("$BIN/coloc-run" "${FILE[$m]}" --list-versions | awk '$3 == "deconv" { print $5 }' | sort -u)
	[ -n "$versions" ] || continue
	if [ "$header" = 0 ]; then
		echo
		echo "| model | cores | deconv layer | version | GFLOP/s | convs' median GFLOP/s (same run) | ratio |"
		echo "|---|---|---|---|---|---|---|"
		header=1
	fi
	for c in "${CORE_COUNTS[@]}"; do
		for v in $versions; do
			"$BIN/coloc-run" "${FILE[$m]}" --input "$work/$m.in" --cores "0-$((c - 1))" \
				--kernel "$v" --iters "$ITERS" --json | deconv_row "$m" "$c"
		done
	done
done
