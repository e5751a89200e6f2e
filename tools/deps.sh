#!/usr/bin/env bash
# Installs the Debian packages coloc needs, then creates the 'coloc' system
# group (colocd's control socket admits root and its members) and the 'coloc'
# system user that executors drop to. Idempotent: apt-get runs only when a
# package is missing, and an existing group or user is left alone.
#
#   tools/deps.sh           packages, then group and user (as root)
#   tools/deps.sh --check   only list missing packages; exit 1 if any
#   tools/deps.sh --users   only the group and user (used by 'make install')
#   tools/deps.sh --image   the packages make image needs too
set -euo pipefail

PACKAGES=(
	make gcc clang pkg-config xz-utils
	libclang-rt-14-dev # libFuzzer and the sanitizer runtimes for tests/fuzz/ (clang 14)
	libbpf-dev bpftool libelf-dev zlib1g-dev
	liburing-dev libhwloc-dev libjson-c-dev libseccomp-dev
	libdnnl-dev
	libonnx-dev protobuf-c-compiler libprotobuf-c-dev
	python3-onnx # tools/ort/export-onnx.py, which tests/onnx_ort_test.c runs
	linux-source-6.1
	libmicrohttpd-dev # coloc-gateway's HTTP server
	prometheus curl python3-requests # tests/gateway_test.c's clients and scraper
	python3-yaml # tools/check-manifests.py, which tests/deploy_manifests_test.c runs
)
# make image and make check-image only (tools/build-image.sh, tools/check-image.sh);
# runc: podman's crun refuses a hybrid cgroup layout
IMAGE_PACKAGES=(mmdebstrap podman runc)
GROUP=coloc
USER_NAME=coloc

# groupadd and useradd live in /usr/sbin, off a normal PATH (e.g. after 'su').
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

as_root_hint() {
	if [ "$(id -u)" -eq 0 ]; then echo "'$1'"; else echo "'sudo $1' (or '$1' as root)"; fi
}

ensure_users() {
	if getent group "$GROUP" >/dev/null && getent passwd "$USER_NAME" >/dev/null; then
		return 0
	fi
	if [ "$(id -u)" -ne 0 ]; then
		echo "coloc: the '$GROUP' group and user do not exist yet; run $(as_root_hint 'make deps')" >&2
		return 0
	fi
	if ! getent group "$GROUP" >/dev/null; then
		groupadd --system "$GROUP"
		echo "coloc: created system group '$GROUP' (its members may use colocctl)"
	fi
	if ! getent passwd "$USER_NAME" >/dev/null; then
		useradd --system --no-create-home --home-dir /nonexistent \
			--shell /usr/sbin/nologin --gid "$GROUP" \
			--comment "coloc executors" "$USER_NAME"
		echo "coloc: created system user '$USER_NAME' (executors run as it)"
	fi
}

case "${1:-}" in
--users)
	ensure_users
	exit 0
	;;
--image) PACKAGES+=("${IMAGE_PACKAGES[@]}") ;;
--check | "") ;;
*)
	echo "usage: tools/deps.sh [--check | --users | --image]" >&2
	exit 2
	;;
esac

missing=()
while read -r pkg status; do
	[ "$status" = "installed" ] || missing+=("$pkg")
done < <(for p in "${PACKAGES[@]}"; do
	s=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	echo "$p ${s:-absent}"
done)

if [ "${1:-}" = "--check" ]; then
	if [ ${#missing[@]} -ne 0 ]; then
		echo "coloc: missing Debian packages: ${missing[*]}" >&2
		echo "coloc: run $(as_root_hint 'make deps') to install them" >&2
		exit 1
	fi
	exit 0
fi

if [ ${#missing[@]} -ne 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "coloc: installing ${missing[*]} needs root: run $(as_root_hint 'make deps')" >&2
		exit 1
	fi
	echo "coloc: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
ensure_users
