#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# make image: coloc's container image, built here from Debian packages alone.
# 'make install' stages the binaries and models (PREFIX=/usr); the Debian
# packages they link are found from ldd and dpkg, not listed by hand;
# mmdebstrap makes a Debian 12 root (variant essential: no apt, no compiler)
# holding those packages and the staged tree, with the coloc group and the
# gateway's user at fixed ids (the Kubernetes manifests name them); podman
# imports it and saves it as an OCI archive. docs/operators.md says more.
#
#   tools/build-image.sh     (IMAGE=localhost/coloc:VERSION, OUT=build/image)
#
# WITH_SYSTEMD=1 (make check-systemd) adds systemd as PID 1 and keeps the
# installed unit, colocd.service (its Group=coloc is the image's 970):
# IMAGE=localhost/coloc-systemd:VERSION, booting /sbin/init.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${COLOC_BIN:-bin}
OUT=${OUT:-build/image}
VERSION=$("$BIN/colocd" --version | awk '{print $NF}')
WITH_SYSTEMD=${WITH_SYSTEMD:-0}
if [ "$WITH_SYSTEMD" = 1 ]; then
	IMAGE=${IMAGE:-localhost/coloc-systemd:$VERSION}
else
	IMAGE=${IMAGE:-localhost/coloc:$VERSION}
fi
# the ids deploy/kubernetes/ names (runAsUser, runAsGroup, supplementalGroups);
# COLOC_GID=N for a gid the nodes' groups leave free (name it in the manifests too)
COLOC_GID=${COLOC_GID:-970}
COLOC_UID=970
GATEWAY_UID=971

die() {
	echo "build-image: $*" >&2
	exit 1
}
[ "$(id -u)" -eq 0 ] || die "run as root (mmdebstrap and podman import need it)"
[[ "$COLOC_GID" =~ ^[1-9][0-9]*$ ]] || die "COLOC_GID=$COLOC_GID is not a gid"
# colocd admits the coloc group by gid: on a node where it is another group, that
# group's processes are members (colocd --host-group-file refuses to start there)
taken=$(getent group "$COLOC_GID" | cut -d: -f1)
[ -z "$taken" ] || [ "$taken" = coloc ] ||
	die "gid $COLOC_GID is group '$taken' on this machine: set COLOC_GID to a gid no node's group holds"
for t in mmdebstrap podman; do
	command -v "$t" >/dev/null || die "$t is missing: apt-get install mmdebstrap podman"
done

stage=$OUT/stage
rm -rf "$stage"
mkdir -p "$OUT"
make --no-print-directory install DESTDIR="$(realpath "$OUT")/stage" PREFIX=/usr >/dev/null
# no man, no systemd in the image
rm -rf "$stage/usr/share/man"
[ "$WITH_SYSTEMD" = 1 ] || rm -rf "$stage/usr/lib/systemd"

# The Debian package of every shared library the staged programs load.
owner_of() {
	local lib=$1 p
	for p in "$lib" "$(realpath "$lib")" "${lib#/usr}" "/usr$lib"; do
		dpkg-query -S "$p" 2>/dev/null | head -1 | cut -d: -f1 && return 0
	done
	return 1
}
mapfile -t libs < <(find "$stage/usr/bin" "$stage/usr/sbin" -type f -exec ldd {} + 2>/dev/null |
	awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u)
[ ${#libs[@]} -gt 0 ] || die "ldd found no libraries in $stage"
packages=()
for lib in "${libs[@]}"; do
	pkg=$(owner_of "$lib") || die "no Debian package owns $lib"
	packages+=("$pkg")
done
[ "$WITH_SYSTEMD" = 1 ] && packages+=(systemd systemd-sysv)
mapfile -t packages < <(printf '%s\n' "${packages[@]}" | sort -u)
echo "build-image: runtime packages: ${packages[*]}"

# The host's own Debian sources, so the image gets the versions built against.
sources=/etc/apt/sources.list.d/debian.sources
[ -f "$sources" ] || sources=/etc/apt/sources.list
[ -f "$sources" ] || die "no Debian sources on this machine"

rootfs=$OUT/rootfs.tar
nice -n 19 mmdebstrap --quiet --variant=essential --format=tar \
	--include="$(
		IFS=,
		echo "${packages[*]}"
	)" \
	--dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	--dpkgopt='path-exclude=/usr/share/doc/*' \
	--dpkgopt='path-include=/usr/share/doc/*/copyright' \
	--customize-hook="sync-in $stage /" \
	--customize-hook="echo 'coloc:x:$COLOC_GID:' >> \"\$1/etc/group\"" \
	--customize-hook="echo 'coloc:x:$COLOC_UID:$COLOC_GID:coloc executors:/nonexistent:/usr/sbin/nologin' >> \"\$1/etc/passwd\"" \
	--customize-hook="echo 'coloc-gateway:x:$GATEWAY_UID:$COLOC_GID:coloc-gateway:/nonexistent:/usr/sbin/nologin' >> \"\$1/etc/passwd\"" \
	--customize-hook='mkdir -p "$1/run/coloc" "$1/var/cache/coloc/profiles" "$1/models"' \
	--customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/log/*' \
	bookworm "$rootfs" "$sources"

cmd='CMD ["/usr/sbin/colocd"]'
[ "$WITH_SYSTEMD" = 1 ] && cmd='CMD ["/sbin/init"]'
podman rmi --force "$IMAGE" >/dev/null 2>&1 || true
podman import --quiet \
	--change "$cmd" \
	--change 'ENV COLOC_CACHE_DIR=/var/cache/coloc/profiles' \
	--change "LABEL org.opencontainers.image.title=coloc org.opencontainers.image.version=$VERSION" \
	--change 'EXPOSE 8000' --change 'EXPOSE 8001' --change 'EXPOSE 8002' \
	"$rootfs" "$IMAGE" >/dev/null
rm -f "$OUT/coloc.oci.tar"
podman save --quiet --format oci-archive -o "$OUT/coloc.oci.tar" "$IMAGE"
rm -rf "$rootfs" "$stage"
echo "build-image: $IMAGE ($(podman image inspect --format '{{.Size}}' "$IMAGE") bytes); OCI archive $OUT/coloc.oci.tar"
