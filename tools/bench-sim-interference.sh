#!/usr/bin/env bash
# The 64-core table interference moves (issue 27): per mix (tools/qos-mixes.conf,
# as tools/bench-sim-cores.sh runs them) the QoS-QPS of temporal, coloc and
# coloc-noversions (median of SEEDS searches of DURATION s points) with one
# lane a tenant and with LANES; coloc-sim --capacity's ceiling (QPS; "*" when
# the executors' bound, not the cores, sets it) and coloc over it; the same
# ceiling with every block at the full-socket slowdown SOCKET (a full machine
# of one socket: capacity at QoS / SOCKET, its QPS / SOCKET; exact for tables
# without level columns, and the least interference any packing has when the
# cores set the ceiling) and coloc over that; coloc / temporal as a share of
# the first ceiling's ratio (the bar's measure); noversions over coloc. For
# each coloc-sim in BINS (directories, default bin/; e.g. an old build beside
# the new one), one after the other on each row, and any ARGS given to every
# run (e.g. --socket-slowdown 1.3). Deterministic: load only slows it.
# Environment: BINS, SEEDS (3), DURATION (10), CORES (64), COPIES (2), LANES
# (2), SOCKET (1.6, the full-socket slowdown of the second ceiling).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd -P)
BINS=${BINS:-$ROOT/bin}
SEEDS=${SEEDS:-3}
DURATION=${DURATION:-10}
CORES=${CORES:-64}
COPIES=${COPIES:-2}
LANES=${LANES:-2}
SOCKET=${SOCKET:-1.6}
CONF=$ROOT/tools/qos-mixes.conf
read -r -a bins <<<"$BINS"
SIM=${bins[0]}/coloc-sim
# shellcheck source=tools/bench-sim-mixes.sh
. "$ROOT/tools/bench-sim-mixes.sh"

# ceiling SIM DIVISOR ARGS...: the --capacity ceiling's QPS with every QoS
# divided by DIVISOR, over DIVISOR, and "*" when the executors bound it
ceiling() {
	local sim=$1 div=$2 a out=() x
	shift 2
	for a in "$@"; do
		case $a in
		veltair:* | scaled:*)
			IFS=: read -r -a x <<<"$a"
			a=${x[0]}:${x[1]}:$(awk -v q="${x[2]}" -v d="$div" 'BEGIN { printf "%.6f", q / d }'):${x[3]}
			;;
		esac
		out+=("$a")
	done
	"$sim" --capacity "${out[@]}" 2>/dev/null | awk -v d="$div" '
		/^without the executors/ { for (i = 1; i <= NF; i++) if ($i == "QPS,") u = $(i - 1) }
		/^plain ceiling/ { c = $0; sub(/.*\(/, "", c); sub(/ QPS.*/, "", c) }
		END { printf "%.1f%s\n", c / d, (c + 0 < u - 1e-6 ? "*" : "") }'
}

printf '%-7s %5s %-24s %9s %9s %9s %10s %7s %10s %7s %7s %7s\n' mix lanes build temporal \
	coloc nover ceiling "c/ceil" "ceil@$SOCKET" "c/ceil" share "nover/c"
for lanes in 1 $LANES; do
	for mix in "${MIXES[@]}"; do
		read -r -a args < <(tenants "$mix" "$COPIES" "$CORES")
		args+=(--cores "$CORES" --llc 4 --lanes "$lanes")
		c1=$(ceiling "$SIM" 1 "${args[@]}")
		cs=$(ceiling "$SIM" "$SOCKET" "${args[@]}")
		cx=$("$SIM" --capacity "${args[@]}" 2>/dev/null |
			sed -n 's/^plain ceiling.*: \([0-9.]*\)x (.*/\1/p')
		for bin in "${bins[@]}"; do
			declare -A q=()
			while read -r p v; do q[$p]=$v; done < <(
				"$bin/coloc-sim" --policy temporal,coloc,coloc-noversions --search \
					--seeds "$SEEDS" --duration "$DURATION" --brief "$@" "${args[@]}" |
					awk '$2 == "QoS-QPS" { print $1, $3 }')
			awk -v mix="$mix" -v l="$lanes" -v b="$bin" -v t="${q[temporal]:-0}" \
				-v c="${q[coloc]:-0}" -v n="${q[coloc-noversions]:-0}" -v c1="$c1" \
				-v cs="$cs" -v cx="${cx:-0}" 'BEGIN {
				printf "%-7s %5d %-24s %9.1f %9.1f %9.1f %10s %6.1f%% %10s %6.1f%% %6.1f%% %7.2f\n",
					mix, l, substr(b, length(b) - 23), t, c, n, c1,
					(c1 + 0 > 0 ? 100 * c / c1 : 0), cs, (cs + 0 > 0 ? 100 * c / cs : 0),
					((t > 0 && cx > 0) ? 100 * c / t / cx : 0), (c > 0 ? n / c : 0) }'
			unset q
		done
	done
done
