#!/usr/bin/env bash
# Runs libFuzzer targets built by 'make fuzz-build' (build/fuzz/bin/fuzz_NAME)
# from their seeds (tests/fuzz/seeds/NAME/, plus models/ for the model
# target and build/ort/gen/ for the ONNX one when it exists).
#
#   tests/fuzz/run.sh SECONDS NAME...           'make fuzz': each NAME for SECONDS,
#                                               its corpus kept and grown in
#                                               build/fuzz/corpus/NAME
#   tests/fuzz/run.sh --check SECONDS NAME...   'make check' (tests/fuzz_test.c):
#                                               a fixed seed, a fresh corpus, the
#                                               output in build/fuzz/log/NAME.log
#                                               and only its end shown on failure
#
# A crashing input is written to build/fuzz/crashes/NAME-crash-HASH; replay
# it with 'build/fuzz/bin/fuzz_NAME FILE'. Exits non-zero if any target
# found a crash, a leak, a timeout (an input over 25 s) or an out-of-memory.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
check=0
if [ "${1:-}" = "--check" ]; then
	check=1
	shift
fi
if [ $# -lt 2 ] || ! [ "$1" -gt 0 ] 2>/dev/null; then
	echo "usage: tests/fuzz/run.sh [--check] SECONDS NAME..." >&2
	exit 2
fi
seconds=$1
shift
cd "$root" || exit 1
mkdir -p build/fuzz/crashes build/fuzz/log
failed=()
for t in "$@"; do
	bin=build/fuzz/bin/fuzz_$t
	if [ ! -x "$bin" ]; then
		echo "fuzz: $bin is missing: build it with 'make fuzz-build'" >&2
		failed+=("$t (not built)")
		continue
	fi
	seeds=(tests/fuzz/seeds/"$t")
	[ "$t" = model ] && seeds+=(models)
	[ "$t" = onnx ] && [ -d build/ort/gen ] && seeds+=(build/ort/gen)
	args=(-max_total_time="$seconds" -timeout=25 -rss_limit_mb=2560
		-artifact_prefix="build/fuzz/crashes/$t-" -print_final_stats=1)
	if [ "$check" -eq 1 ]; then
		corpus=$(mktemp -d /tmp/coloc-fuzz-"$t"-XXXXXX)
		log=build/fuzz/log/$t.log
		echo "fuzz: $t for ${seconds}s from ${seeds[*]} (seed 1; log in $log)"
		"$bin" -seed=1 "${args[@]}" "$corpus" "${seeds[@]}" </dev/null >"$log" 2>&1
		rc=$?
		rm -rf "$corpus"
		if [ "$rc" -ne 0 ]; then
			tail -n 60 "$log"
		else
			grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ *DONE)' "$log"
		fi
	else
		corpus=build/fuzz/corpus/$t
		mkdir -p "$corpus"
		echo "fuzz: $t for ${seconds}s, corpus $corpus, seeds ${seeds[*]}"
		"$bin" "${args[@]}" "$corpus" "${seeds[@]}" </dev/null
		rc=$?
	fi
	if [ "$rc" -ne 0 ]; then
		echo "fuzz: $t FAILED (exit $rc); the input is in build/fuzz/crashes/" >&2
		failed+=("$t")
	fi
done
for f in "${failed[@]}"; do echo "fuzz: failed: $f"; done
[ "${#failed[@]}" -eq 0 ]
