#!/usr/bin/env bash
# Runs every kselftest-harness test binary given, then names each failed test
# and prints the twelve slowest binaries, their time summed and one summary
# line, "N passed, N failed, N skipped", adding up the harness's own totals. Exits non-zero if any
# test failed or any binary crashed or timed out.
#
#   tests/run.sh [--root] TEST...
#
# --root: the tests given include some that load BPF or start colocd (make
# check); refuse to start unless root (with no TEST, only that check, which
# make check runs before it builds). Without it any user may run them (make
# check-unit).
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
pass=0 fail=0 skip=0 broken=() failed=() times=()
for t in "$@"; do
	name=$(basename "$t")
	start=$(date +%s)
	echo "=== $name ($(date -u -d "@$start" +%T))"
	out=$(mktemp)
	timeout --kill-after=10 "${COLOC_TEST_TIMEOUT:-900}" "$t" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	times+=("$(($(date +%s) - start)) s $name")
	line=$(grep -E '^# Totals: ' "$out" | tail -n 1)
	# "not ok 7 fixture.name" (the harness's own lines, not a test's output)
	while read -r test; do
		failed+=("$name: $test")
	done < <(sed -nE 's/^not ok [0-9]+ (.*)$/\1/p' "$out")
	rm -f "$out"
	if [ -z "$line" ]; then
		broken+=("$name (exit $rc, no totals)")
		fail=$((fail + 1))
		continue
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
done
echo
total=0
for t in "${times[@]}"; do total=$((total + ${t%% *})); done
echo "slowest: $(printf '%s\n' "${times[@]}" | sort -rn | head -n 12 | paste -sd, | sed 's/,/, /g')"
echo "time: ${total} s in ${#times[@]} test binaries"
for f in "${failed[@]}"; do echo "failed: $f"; done
for b in "${broken[@]}"; do echo "broken: $b"; done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
