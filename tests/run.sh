#!/usr/bin/env bash
# Runs every kselftest-harness test binary given, two at a time, then names
# each failed test and prints the twelve slowest binaries, their time summed
# (and the CPU time of each and of all: what a binary started and waited for
# counts), the wall time and one summary line, "N passed, N failed, N
# skipped", adding up the harness's own totals. Exits non-zero if any test
# failed or any binary crashed or timed out.
#
#   tests/run.sh [--root] TEST...
#
# --root: the tests given include some that load BPF or start colocd (make
# check); refuse to start unless root (with no TEST, only that check, which
# make check runs before it builds). Without it any user may run them (make
# check-unit).
#
# COLOC_TEST_JOBS (default 2): binaries run at once; 1 runs them one after
# another. Each binary's output is kept and printed whole when it ends. The
# binaries in ALONE below run with no other test beside them, after the
# others; why each is there: docs/measurements/ci.md.
set -u
if [ "${1:-}" = "--root" ]; then
	shift
	if [ "$(id -u)" -ne 0 ]; then
		echo "tests: 'make check' loads BPF programs: run it as root (or 'sudo make check');" \
			"'make check-unit' runs the tests that need neither root nor BPF as any user" >&2
		exit 1
	fi
	[ $# -ne 0 ] || exit 0
fi
# Debian keeps bpftool in /usr/sbin, which 'su' without '-' leaves off PATH.
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

# Measure time, load or CPU shares, or need both CPUs to themselves.
ALONE=(colocd_serving_test colocd_tenant_test exec_lane_test exec_lane_turns_test member_executor_test
	execproc_lanes_test profile_cold_test profile_fresh_test sensor_test stress_test serving_cpu_wait_test serving_cpu_wait_crowd_test)
# The slowest binaries of the last runs (plain or SANITIZE=1), started first
# so that the run does not end on one long binary with the other slot idle.
FIRST=(onnx_ort_test gateway_h2_test colocd_profile_load_test gateway_http_limits_test fuzz_test
	colocd_faults_test gateway_hostile_test gateway_repo_test submit_test gateway_test gateway_grpc_test
	install_test load_test gateway_faults_test profile_tool_test infer_memfd_test)

jobs=${COLOC_TEST_JOBS:-2}
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || {
	echo "tests/run.sh: COLOC_TEST_JOBS must be a whole number of 1 or more, not '$jobs'" >&2
	exit 2
}
outdir=$(mktemp -d "${TMPDIR:-/tmp}/coloc-run-XXXXXX") || exit 1
declare -A job_name=() job_start=()
pass=0 fail=0 skip=0 broken=() failed=() times=() cpus=()

stop_all() {
	# each job's timeout (its own process group), then the subshell around it
	for pid in "${!job_name[@]}"; do pkill -TERM -P "$pid"; kill -TERM "$pid" 2>/dev/null; done
	wait
	rm -rf "$outdir"
	exit 130
}
trap stop_all INT TERM

start() {
	local t=$1 name
	name=${t##*/}
	# in a subshell that ends normally whatever the binary does: bash reports
	# (and forgets) a job killed by a signal, which wait -n then never returns
	(
		timeout --kill-after=10 "${COLOC_TEST_TIMEOUT:-900}" "$t"
		echo $? >"$outdir/$name.rc"
		# the CPU time of what it started and waited for (its daemons, executors, scripts)
		times >"$outdir/$name.cpu"
	) >"$outdir/$name" 2>&1 &
	job_name[$!]=$name
	job_start[$!]=$(date +%s)
}

# The children's user + system seconds in bash's "times" output in file (its second line,
# "0m1.250s 0m0.310s"), rounded.
cpu_s() {
	local u s
	{ u=$(sed -n 2p "$1"); } 2>/dev/null
	read -r u s <<<"$u"
	[ -n "$s" ] || { echo "?"; return; }
	awk -v u="$u" -v s="$s" 'function sec(t, m) { m = t; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", t);
		sub(/s$/, "", t); return m * 60 + t } BEGIN { printf "%.0f\n", sec(u) + sec(s) }'
}

# Waits for one running binary to end, prints its output and counts it.
reap() {
	local pid='' rc name start out line test p f s e cpu
	wait -n -p pid
	if [ -z "$pid" ] || [ -z "${job_name[$pid]:-}" ]; then
		pid=''
		for p in "${!job_name[@]}"; do kill -0 "$p" 2>/dev/null || pid=$p; done
		[ -n "$pid" ] || return 0
	fi
	name=${job_name[$pid]} start=${job_start[$pid]} out="$outdir/${job_name[$pid]}"
	unset "job_name[$pid]" "job_start[$pid]"
	rc=$(cat "$out.rc" 2>/dev/null) || rc=255
	cpu=$(cpu_s "$out.cpu")
	echo "=== $name ($(date -u -d "@$start" +%T), $(($(date +%s) - start)) s, $cpu s CPU)"
	cat "$out"
	times+=("$(($(date +%s) - start)) s $name")
	cpus+=("$cpu")
	line=$(grep -E '^# Totals: ' "$out" | tail -n 1)
	# "not ok 7 fixture.name" (the harness's own lines, not a test's output)
	while read -r test; do
		[ -n "$test" ] && failed+=("$name: $test")
	done <<<"$(sed -nE 's/^not ok [0-9]+ (.*)$/\1/p' "$out")"
	rm -f "$out" "$out.rc" "$out.cpu"
	if [ -z "$line" ]; then
		broken+=("$name (exit $rc, no totals)")
		fail=$((fail + 1))
		return 0
	fi
	# "# Totals: pass:N fail:N xfail:N xpass:N skip:N error:N": anchor each field
	p=$(sed -E 's/.*Totals: pass:([0-9]+) .*/\1/' <<<"$line")
	f=$(sed -E 's/.* fail:([0-9]+) .*/\1/' <<<"$line")
	s=$(sed -E 's/.* skip:([0-9]+) .*/\1/' <<<"$line")
	e=$(sed -E 's/.* error:([0-9]+).*/\1/' <<<"$line")
	f=$((f + e))
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 4 ] && [ "$f" -eq 0 ]; then
		broken+=("$name (exit $rc)")
		fail=$((fail + 1))
	fi
}

began=$(date +%s)
ordered=() alone=()
for first in "${FIRST[@]}"; do
	for t in "$@"; do [ "${t##*/}" = "$first" ] && ordered+=("$t"); done
done
for t in "$@"; do
	[[ " ${FIRST[*]} " == *" ${t##*/} "* ]] || ordered+=("$t")
done
for t in "${ordered[@]}"; do
	if [[ " ${ALONE[*]} " == *" ${t##*/} "* ]]; then
		alone+=("$t")
		continue
	fi
	while [ "${#job_name[@]}" -ge "$jobs" ]; do reap; done
	start "$t"
done
while [ "${#job_name[@]}" -gt 0 ]; do reap; done
for t in "${alone[@]}"; do
	start "$t"
	reap
done
rmdir "$outdir"
echo
total=0 cpu_total=0
for t in "${times[@]}"; do total=$((total + ${t%% *})); done
for c in "${cpus[@]}"; do [[ "$c" =~ ^[0-9]+$ ]] && cpu_total=$((cpu_total + c)); done
echo "slowest: $(printf '%s\n' "${times[@]}" | sort -rn | head -n 12 | paste -sd, | sed 's/,/, /g')"
echo "time: ${total} s in ${#times[@]} test binaries (${cpu_total} s CPU)," \
	"$(($(date +%s) - began)) s wall, $jobs at a time (${#alone[@]} alone)"
if [ "${#times[@]}" -ne $# ]; then
	broken+=("$(($# - ${#times[@]})) of the $# binaries given did not run")
	fail=$((fail + 1))
fi
for f in "${failed[@]}"; do echo "failed: $f"; done
for b in "${broken[@]}"; do echo "broken: $b"; done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
