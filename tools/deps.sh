#!/usr/bin/env bash
# Installs (or, with --check, only lists) the Debian packages coloc needs.
# Idempotent: packages already installed are left alone, and apt-get runs
# only when something is missing.
set -euo pipefail

PACKAGES=(
	make gcc clang pkg-config xz-utils
	libbpf-dev bpftool libelf-dev zlib1g-dev
	liburing-dev libhwloc-dev libjson-c-dev
	libdnnl-dev
	linux-source-6.1
)

missing=()
for p in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

if [ "${1:-}" = "--check" ]; then
	if [ ${#missing[@]} -ne 0 ]; then
		echo "coloc: missing Debian packages: ${missing[*]}" >&2
		echo "coloc: run 'sudo make deps' to install them" >&2
		exit 1
	fi
	exit 0
fi

if [ ${#missing[@]} -eq 0 ]; then
	echo "coloc: all required packages are installed"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "coloc: installing ${missing[*]} needs root: run 'sudo make deps'" >&2
	exit 1
fi
echo "coloc: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
