#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# make check-systemd: colocd under a real systemd, with the unit as
# installed (dist/colocd.service.in: its capabilities, namespace
# restrictions, system-call filter, read-only system). The image of
# 'WITH_SYSTEMD=1 tools/build-image.sh' boots systemd as PID 1 in a
# privileged podman container with a cgroup namespace of its own; then
# 'systemctl start colocd', two tenants submitted, and each serving
# executor's /proc/PID/status and cgroup read: Seccomp 2, NoNewPrivs 1,
# CapEff 0, a uid of its own (not root, not the other's), a pid namespace
# other than colocd's, a cpuset cgroup of its tenant's whose cpuset.cpus is
# set, and a cgroup v2 leaf of its own (tenant-NAME/exec-N). colocd has no
# CAP_KILL, and kills all the same: tenant a's executor is stopped
# (SIGSTOP) so that its next block hangs; colocd kills it at the block's
# deadline through its leaf's cgroup.kill and removes the leaf, and after
# 'systemctl stop colocd' no executor and no cgroup of colocd's is left.
# colocd's TasksMax is the unit's and its IPC namespace not init's
# (PrivateIPC=). systemd-analyze security rates the installed unit.
# Prints SKIP and exits 0 where podman, or the image and the means to build
# it, are missing. docs/measurements/container.md has a run.
#
#   tools/check-systemd.sh    (IMAGE=localhost/coloc-systemd:VERSION; as root)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${COLOC_BIN:-bin}
IMAGE=${IMAGE:-localhost/coloc-systemd:$("$BIN/colocd" --version | awk '{print $NF}')}
MODEL=mobilenet_v2
NAME=coloc-systemd-$$
failed=0

skip() {
	echo "check-systemd: SKIP: $*"
	exit 0
}
fail() {
	echo "check-systemd: FAIL: $*" >&2
	failed=1
}
[ "$(id -u)" -eq 0 ] || skip "needs root (a privileged container)"
command -v podman >/dev/null || skip "no podman (apt-get install podman)"
if ! podman image exists "$IMAGE"; then
	command -v mmdebstrap >/dev/null || skip "no image $IMAGE and no mmdebstrap to build it"
	WITH_SYSTEMD=1 IMAGE="$IMAGE" OUT=build/image-systemd tools/build-image.sh
fi

work=$(mktemp -d /tmp/coloc-check-systemd-XXXXXX)
cleanup() {
	podman rm -f -t 2 "$NAME" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
# the profile, made here (the container's /var/cache is read-only to colocd)
mkdir -p "$work/profiles"
# --force: a functional check; a busy machine (the CI beside it) must not refuse the profile
"$BIN/coloc-profile" "models/$MODEL.model" -o "$work/quick.profile" --iters 1 --levels 50 --force \
	--cache-dir "$work/profiles" >/dev/null

runtime=()
[ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ] && runtime=(--runtime runc)
podman "${runtime[@]}" run -d --name "$NAME" --systemd=always --privileged --cgroupns=private \
	--ulimit "nofile=$(ulimit -Sn):$(ulimit -Hn)" --ulimit nproc=32768:32768 \
	-v "$work/profiles:/var/cache/coloc/profiles:ro" -v "$PWD/models:/models:ro" \
	"$IMAGE" /sbin/init >/dev/null
inside() { podman exec "$NAME" "$@"; }
for _ in $(seq 60); do
	state=$(inside systemctl is-system-running 2>/dev/null || true)
	[ "$state" = running ] || [ "$state" = degraded ] && break
	sleep 1
done
echo "check-systemd: systemd in the container: $state"
# podman leaves /sys/fs/bpf unmounted; a host's systemd mounts it at boot
inside sh -c 'mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf'
# the binaries and the unit of this tree, not those the image was built with
for b in colocd colocctl coloc-executor; do
	path=$(inside sh -c "command -v $b") && podman cp "$BIN/$b" "$NAME:$path" ||
		fail "installing $BIN/$b in the container"
done
unit=$(inside systemctl show -p FragmentPath --value colocd)
sed "s|@SBINDIR@|$(dirname "$(inside sh -c 'command -v colocd')")|g" dist/colocd.service.in \
	>"$work/colocd.service"
podman cp "$work/colocd.service" "$NAME:$unit" && inside systemctl daemon-reload ||
	fail "installing dist/colocd.service.in as $unit"
inside systemctl start colocd || fail "systemctl start colocd"
for _ in $(seq 30); do inside colocctl ping >/dev/null 2>&1 && break; sleep 1; done
inside colocctl ping >/dev/null || {
	inside journalctl -u colocd --no-pager -o cat | tail -20 >&2
	fail "colocd under its unit answers no ping"
	exit 1
}
for t in a b; do
	inside colocctl submit "$t" "/models/$MODEL.model" --qos-ms 60000 >/dev/null ||
		fail "submit $t"
done
colocd_pid=$(inside systemctl show -p MainPID --value colocd)
colocd_pidns=$(inside readlink "/proc/$colocd_pid/ns/pid")
# TasksMax= as the unit says (colocd's threads and its executors'), and an IPC namespace of its own
tasks_want=$(awk -F= '$1 == "TasksMax" {print $2}' dist/colocd.service.in)
tasks=$(inside systemctl show -p TasksMax --value colocd)
echo "check-systemd: colocd: TasksMax $tasks, $(inside systemctl show -p TasksCurrent --value colocd) tasks now"
[ -n "$tasks_want" ] && [ "$tasks" = "$tasks_want" ] ||
	fail "colocd's TasksMax is $tasks, the unit's '$tasks_want'"
[ "$(inside readlink "/proc/$colocd_pid/ns/ipc")" != "$(inside readlink /proc/1/ns/ipc)" ] ||
	fail "colocd shares init's IPC namespace (PrivateIPC=)"
uids=()
declare -A leaves pids
for t in a b; do
	pid=$(inside colocctl list | awk -v t="$t" '$1 == t {print $4}')
	[ -n "$pid" ] || {
		fail "no executor for tenant $t"
		continue
	}
	status=$(inside cat "/proc/$pid/status")
	field() { echo "$status" | awk -v f="$1:" '$1 == f {print $2}'; }
	# cgroup v1's cpuset hierarchy, else the unified one
	cpuset=$(inside grep -E '^[0-9]+:cpuset:' "/proc/$pid/cgroup" | cut -d: -f3 || true)
	leaf=$(inside grep -E '^0::' "/proc/$pid/cgroup" | cut -d: -f3 || true)
	if [ -n "$cpuset" ]; then
		cpus=$(inside cat "/sys/fs/cgroup/cpuset$cpuset/cpuset.cpus" 2>/dev/null || true)
		leaf_dir=/sys/fs/cgroup/unified$leaf
	else
		# v2: the leaf's parent is the tenant's folder, which holds the cpuset
		cpuset=${leaf%/exec-*}
		cpus=$(inside cat "/sys/fs/cgroup$cpuset/cpuset.cpus" 2>/dev/null || true)
		leaf_dir=/sys/fs/cgroup$leaf
	fi
	leaves[$t]=$leaf_dir
	pids[$t]=$pid
	echo "check-systemd: tenant $t: executor $pid: Seccomp $(field Seccomp)," \
		"NoNewPrivs $(field NoNewPrivs), CapEff $(field CapEff), uid $(field Uid)," \
		"cpuset $cpuset ($cpus), leaf $leaf, pid ns $(inside readlink "/proc/$pid/ns/pid") (colocd's $colocd_pidns)"
	[ "$(field Seccomp)" = 2 ] || fail "tenant $t: Seccomp $(field Seccomp)"
	[ "$(field NoNewPrivs)" = 1 ] || fail "tenant $t: NoNewPrivs $(field NoNewPrivs)"
	[ "$(field CapEff)" = 0000000000000000 ] || fail "tenant $t: CapEff $(field CapEff)"
	[ "$(field Uid)" != 0 ] || fail "tenant $t: its executor runs as root"
	case "$cpuset" in */tenant-"$t") ;; *) fail "tenant $t: cpuset cgroup $cpuset" ;; esac
	case "$leaf" in */tenant-"$t"/exec-*) ;; *) fail "tenant $t: not in a leaf of its own ($leaf)" ;; esac
	[ "$(inside cat "$leaf_dir/cgroup.procs" 2>/dev/null)" = "$pid" ] ||
		fail "tenant $t: its leaf $leaf_dir holds more than its executor"
	[ -n "$cpus" ] || fail "tenant $t: no cpuset.cpus"
	[ "$(inside readlink "/proc/$pid/ns/pid")" != "$colocd_pidns" ] ||
		fail "tenant $t: in colocd's pid namespace"
	uids+=("$(field Uid)")
done
if [ "${#uids[@]}" != 2 ] || [ "${uids[0]}" = "${uids[1]}" ]; then
	fail "the executors share a uid"
fi
# what ProtectKernelTunables= would have covered, by name (the unit's ReadOnlyPaths=)
mounts=$(inside cat "/proc/$colocd_pid/mountinfo")
for ro in /sys /proc/sys; do
	opts=$(echo "$mounts" | awk -v m="$ro" '$5 == m {o = $6} END {print o}')
	case ",$opts," in *,ro,*) ;; *) fail "$ro is not read-only for colocd ($opts)" ;; esac
done
for f in kallsyms kcore; do
	inside test -e "/proc/$f" || continue
	echo "$mounts" | awk -v m="/proc/$f" '$5 == m {f = 1} END {exit !f}' ||
		fail "/proc/$f is not hidden from colocd"
done
echo "check-systemd: colocd: $(inside grep -E '^(CapEff|NoNewPrivs|Seccomp):' "/proc/$colocd_pid/status" | tr '\n\t' '  ')"
capeff=$(inside awk '$1 == "CapEff:" {print $2}' "/proc/$colocd_pid/status")
(((0x$capeff >> 5) & 1)) && fail "colocd has CAP_KILL (CapEff $capeff)"
# a hung block (its executor stopped): killed at its deadline, through its leaf
if [ -n "${pids[a]:-}" ]; then
	inside sh -c "kill -STOP ${pids[a]}"
	out=$(inside colocctl infer a 2>&1) && fail "a query of a stopped executor was answered"
	echo "check-systemd: tenant a, its executor stopped: $out"
	for _ in $(seq 60); do
		inside test -e "/proc/${pids[a]}" || inside test -d "${leaves[a]}" || break
		sleep 0.5
	done
	if inside test -e "/proc/${pids[a]}"; then
		fail "colocd did not kill tenant a's hung executor ${pids[a]}"
		inside sh -c "kill -KILL ${pids[a]}" || true
	fi
	inside test -d "${leaves[a]}" && fail "tenant a's leaf ${leaves[a]} left"
	echo "check-systemd: tenant a's hung executor ${pids[a]} killed, its leaf removed"
fi
inside colocctl infer b >/dev/null || fail "tenant b does not serve after a's executor was killed"
inside systemctl stop colocd || fail "systemctl stop colocd"
for t in a b; do
	[ -n "${pids[$t]:-}" ] && inside test -e "/proc/${pids[$t]}" && fail "executor ${pids[$t]} left"
done
left=$(inside find /sys/fs/cgroup -type d \( -name 'exec-*' -o -name 'tenant-*' -o -name 'colocd-*' \) 2>/dev/null || true)
[ -z "$left" ] || fail "cgroups left after colocd stopped: $left"
inside journalctl -u colocd --no-pager -o cat | grep -F 'cannot kill' >&2 && fail "colocd could not kill an executor"
echo "check-systemd: colocd stopped: no executor and no cgroup of its left"
inside systemd-analyze security --offline=yes /lib/systemd/system/colocd.service 2>/dev/null |
	tail -1 | sed 's/^/check-systemd: /' || true
[ "$failed" = 0 ] || exit 1
echo "check-systemd: PASS"
