#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Installs the Node gRPC client that tests/gateway_grpc_test.c runs against
# coloc-gateway (tests/gateway/kserve_grpc_client.cjs): npm's @grpc/grpc-js
# and @grpc/proto-loader at the versions tools/grpc-node/package-lock.json
# pins (their tarballs' sha512 included), into build/grpc-node; only when
# missing or the lock changed ('make grpc-node').
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=build/grpc-node

if [ -f "$DIR/node_modules/@grpc/grpc-js/package.json" ] &&
	cmp -s tools/grpc-node/package-lock.json "$DIR/package-lock.json"; then
	exit 0
fi
if ! command -v npm >/dev/null; then
	echo "tools/grpc-node/install.sh: npm is not installed (Node.js and npm are needed)" >&2
	exit 1
fi
echo "  NPM       @grpc/grpc-js @grpc/proto-loader -> $DIR"
mkdir -p "$DIR"
cp tools/grpc-node/package.json tools/grpc-node/package-lock.json "$DIR/"
(cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error)
