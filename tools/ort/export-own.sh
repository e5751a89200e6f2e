#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Exports models/NAME.model, with the weights its seed generates, to
# DIR/NAME.onnx (and DIR/NAME.wt, the weights file, models/WEIGHTS.md);
# does nothing when DIR/NAME.onnx is newer than the model file and the
# exporter. Uses
# $COLOC_BIN/coloc-run (default bin/) and Debian's python3-onnx.
#
#   tools/ort/export-own.sh NAME DIR
set -euo pipefail
if [ $# -ne 2 ]; then
	echo "usage: tools/ort/export-own.sh NAME DIR" >&2
	exit 2
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
name=$1 dir=$2
model=$root/models/$name.model
bin=${COLOC_BIN:-$root/bin}
[ -f "$model" ] || { echo "export-own.sh: no model $model" >&2; exit 1; }
if [ "$dir/$name.onnx" -nt "$model" ] && [ "$dir/$name.onnx" -nt "$root/tools/ort/export-onnx.py" ]; then
	exit 0
fi
mkdir -p "$dir"
"$bin/coloc-run" "$model" --save-weights "$dir/$name.wt"
/usr/bin/python3 "$root/tools/ort/export-onnx.py" "$model" "$dir/$name.wt" "$dir/$name.tmp.onnx"
mv "$dir/$name.tmp.onnx" "$dir/$name.onnx"
