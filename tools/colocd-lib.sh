# shellcheck shell=bash
# What tools/demo.sh and tools/bench-qos.sh share, sourced by both: private
# colocds (each its own socket, pin dir and log, in a temporary work
# directory removed on exit; one or several at once), the colocctl wrapper,
# waiting for tenants to be ready, the cached latency profiles, and the QoS
# rule (2 x the model's p95 served alone, Abacus's rule on the tail the goal
# counts, rounded up to a whole ms), kept in the profile cache per model file
# and machine so that later runs keep the same targets.
#
#   colocd_lib_init NAME    as root: sets ROOT BIN BPFTOOL CACHE WORK SOCK PIN,
#                           and the EXIT trap that stops every colocd started
#                           and removes WORK
#   use_colocd ID           makes colocd ID (a word) the current one: its own
#                           SOCK and PIN, and COLOCD its pid once started;
#                           'default' is the one current after colocd_lib_init.
#                           Every function below acts on the current colocd
#   make_profile MODEL      its latency profile, made once into $CACHE; a cached
#                           one is reused only while the whole model still runs
#                           as fast as when it was profiled (coloc-profile
#                           --verify-cache), else measured again; fails on a
#                           machine too busy to profile on; more options are
#                           coloc-profile's (--force keeps a busy one)
#   start_colocd [POLICY [OPTION...]]
#                           (colocd's default policy without one, or ''); returns 1,
#                           its log on stderr, if colocd did not start, e.g.
#                           for a policy it does not know; with COLOCD_NICE=N
#                           colocd runs at nice N, and so its executors (a served
#                           model beside other processes, docs/measurements/
#                           serving-latency.md, 2026-12-06 08:47)
#   stop_colocd             SIGTERM; exits 1 unless colocd exits 0 and leaves
#                           no pin or socket behind
#   ctl ARGS...             colocctl on the current colocd's socket
#   submit_tenant NAME MODEL QOS_MS [quiet] [EXECUTORS]
#   wait_ready NAME         returns 1 (status on stderr) if it did not get ready
#   probe_solo NAME MODEL   submits NAME_10us with an impossible QoS: sets
#                           REFUSAL to colocd's answer and SOLO_MS to the
#                           profiled solo latency it names
#   served_solo NAME MODEL SECONDS [MIN_QUERIES]
#                           after probe_solo: submits NAME with a generous QoS,
#                           drives it alone at 10 % of the machine at its
#                           profiled speed for SECONDS (longer, up to 30 s, for
#                           MIN_QUERIES queries), sets SERVED_MS and
#                           SERVED_P95_MS to the median and 95th percentile
#                           latency (coloc-load's), SERVED_JSON to coloc-load's
#                           report, and removes it
#   qos_ms_of SOLO_MS       2 x solo, rounded up to a whole ms
#   kept_qos MODEL          after make_profile: sets QOS_MS, QOS_P95_MS, QOS_P50_MS,
#                           QOS_SET (a UTC date) and QOS_FILE from the target kept
#                           for MODEL's profile in $CACHE, or returns 1 if none
#   keep_qos MODEL          after probe_solo and served_solo: sets the same from
#                           SERVED_P95_MS and SERVED_MS and keeps them in QOS_FILE
#                           for later runs, unless the served p50 is over 2 x the
#                           profile's (a busy machine): then returns 1, keeping nothing
# Messages go to stderr prefixed with NAME.

COLOCD=
COLOCD_ID=default
declare -A COLOCD_PIDS # id -> pid of every colocd running

colocd_lib_init() { # name
	LIB_NAME=$1
	ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
	BIN=${COLOC_BIN:-$ROOT/bin}
	# shellcheck disable=SC2034 # for the scripts that show the pinned maps
	BPFTOOL=$(command -v bpftool || echo /usr/sbin/bpftool)
	CACHE=${COLOC_CACHE_DIR:-/var/cache/coloc/profiles}
	if [ "$(id -u)" -ne 0 ]; then
		echo "$LIB_NAME: colocd loads BPF programs: run 'make $LIB_NAME' as root (or 'sudo make $LIB_NAME')" >&2
		exit 1
	fi
	WORK=$(mktemp -d "/tmp/coloc-$LIB_NAME.XXXXXX")
	use_colocd default
	trap colocd_lib_cleanup EXIT
	# Ctrl-C or SIGTERM: exit, so the EXIT trap stops colocd and removes WORK.
	trap 'exit 130' INT TERM
}

colocd_lib_cleanup() {
	local pid

	for pid in "${COLOCD_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${COLOCD_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
	rm -rf "$WORK"
}

use_colocd() { # id
	COLOCD_ID=$1
	if [ "$1" = default ]; then
		SOCK=$WORK/colocd.sock
		PIN=/sys/fs/bpf/coloc-$LIB_NAME-$$
	else
		SOCK=$WORK/colocd-$1.sock
		PIN=/sys/fs/bpf/coloc-$LIB_NAME-$$-$1
	fi
	COLOCD=${COLOCD_PIDS[$1]:-}
}

ctl() { "$BIN/colocctl" --socket "$SOCK" "$@"; }

make_profile() { # model [coloc-profile options...]
	local model=$1

	shift
	"$BIN/coloc-profile" "$ROOT/models/$model.model" -o "$WORK/$model.profile" --iters 5 \
		--levels 50,100 --cache-dir "$CACHE" --verify-cache "$@"
}

start_colocd() { # [policy [colocd options...]]
	local log=$WORK/colocd-${1:-default}.log policy=${1:-}

	[ "$COLOCD_ID" = default ] || log=$WORK/colocd-$COLOCD_ID.log
	if [ $# -gt 0 ]; then shift; fi
	${COLOCD_NICE:+nice -n "$COLOCD_NICE"} "$BIN/colocd" --socket "$SOCK" --pin-dir "$PIN" \
		--cache-dir "$CACHE" ${policy:+--policy "$policy"} "$@" >"$log" 2>&1 &
	COLOCD=$!
	COLOCD_PIDS[$COLOCD_ID]=$COLOCD
	for _ in $(seq 100); do
		ctl ping >/dev/null 2>&1 && return 0
		kill -0 "$COLOCD" 2>/dev/null || break
		sleep 0.1
	done
	kill -TERM "$COLOCD" 2>/dev/null || true
	wait "$COLOCD" 2>/dev/null || true
	unset "COLOCD_PIDS[$COLOCD_ID]"
	COLOCD=
	sed 's/^/  /' "$log" >&2
	echo "$LIB_NAME: colocd ${policy:+--policy $policy }did not start (its log is above)" >&2
	return 1
}

stop_colocd() {
	local rc=0

	kill -TERM "$COLOCD"
	wait "$COLOCD" || rc=$?
	unset "COLOCD_PIDS[$COLOCD_ID]"
	COLOCD=
	if [ "$rc" -ne 0 ]; then
		echo "$LIB_NAME: colocd exited with status $rc on SIGTERM" >&2
		exit 1
	fi
	if [ -e "$PIN" ] || [ -e "$SOCK" ]; then
		echo "$LIB_NAME: colocd left $PIN or $SOCK behind" >&2
		exit 1
	fi
}

submit_tenant() { # name model qos_ms [quiet] [executors]
	local args=("$1" "$ROOT/models/$2.model" --qos-ms "$3" --executors "${5:-1}")

	if [ -n "${4:-}" ]; then
		ctl submit "${args[@]}" >/dev/null
	else
		ctl submit "${args[@]}" | sed 's/^/  /'
	fi
}

wait_ready() { # tenant
	local st
	for _ in $(seq 600); do
		st=$(ctl status "$1" --json 2>&1) || true
		case $st in
		*'"state":"ready"'*) return 0 ;;
		*'"state":"failed"'*) break ;;
		esac
		sleep 0.1
	done
	ctl status "$1" >&2 || true
	echo "$LIB_NAME: tenant $1 did not become ready" >&2
	return 1
}

probe_solo() { # name model
	REFUSAL=$(ctl submit "${1}_10us" "$ROOT/models/$2.model" --qos-ms 0.01 2>&1) || true
	SOLO_MS=$(sed -nE 's/.*profiled solo latency ([0-9.]+) ms.*/\1/p' <<<"$REFUSAL")
	if [ -z "$SOLO_MS" ]; then
		echo "$LIB_NAME: expected colocd to refuse ${1}_10us naming its solo latency; it said: $REFUSAL" >&2
		exit 1
	fi
}

served_solo() { # name model seconds [min_queries]
	local rate d json

	submit_tenant "$1" "$2" 60000 quiet
	wait_ready "$1" || return 1
	rate=$(awk -v s="$SOLO_MS" 'BEGIN { printf "%.2f", 100 / s }')
	d=$(awk -v s="$3" -v n="${4:-0}" -v r="$rate" 'BEGIN { d = n / r; d = d > s ? d : s;
		d = d > 30 ? 30 : d; printf "%d", d == int(d) ? d : int(d) + 1 }')
	json=$("$BIN/coloc-load" --socket "$SOCK" --tenant "$1:$rate" --duration "$d" \
		--warmup 1 --seed 1 --json)
	# the tenant's own, the first of each: its colocd_parts have p50_ms and p95_ms too
	SERVED_MS=$(grep -oE '"p50_ms":[0-9.]+' <<<"$json" | head -n 1 | cut -d: -f2)
	# shellcheck disable=SC2034 # for the scripts that set QoS from the tail
	SERVED_P95_MS=$(grep -oE '"p95_ms":[0-9.]+' <<<"$json" | head -n 1 | cut -d: -f2)
	# shellcheck disable=SC2034 # for the scripts that show where the time went
	SERVED_JSON=$json
	ctl remove "$1" >/dev/null
	[ -n "$SERVED_MS" ] || { echo "$LIB_NAME: no latency measured for $1 alone" >&2; return 1; }
}

qos_ms_of() { # solo_ms
	awk -v s="$1" 'BEGIN { q = 2 * s; printf "%d", q == int(q) ? q : int(q) + 1 }'
}

# One target per model file and machine: a profile measured again (stale, or
# another build's) keeps the target, as an operator's service keeps its own.
qos_file_of() { # model
	local key

	key=$({ sha256sum <"$ROOT/models/$1.model"; grep -m1 '^model name' /proc/cpuinfo; nproc; } |
		sha256sum | cut -c1-16)
	echo "$CACHE/$1-$key.qos"
}

kept_qos() { # model
	local line

	QOS_FILE=$(qos_file_of "$1")
	[ -r "$QOS_FILE" ] || return 1
	line=$(head -n 1 "$QOS_FILE")
	[[ $line =~ ^([0-9]+)\ ([0-9.]+)\ ([0-9.]+)\ ([0-9T:Z-]+)$ ]] || return 1
	QOS_MS=${BASH_REMATCH[1]} QOS_P95_MS=${BASH_REMATCH[2]} QOS_P50_MS=${BASH_REMATCH[3]}
	QOS_SET=${BASH_REMATCH[4]}
}

keep_qos() { # model
	QOS_FILE=$(qos_file_of "$1")
	QOS_MS=$(qos_ms_of "$SERVED_P95_MS") QOS_P95_MS=$SERVED_P95_MS QOS_P50_MS=$SERVED_MS
	QOS_SET=$(date -u +%Y-%m-%dT%H:%MZ)
	# kept only from a sound measurement: p50 within 2 x and p95 within 3 x the profile
	awk -v s="$SERVED_MS" -v t="$SERVED_P95_MS" -v p="$SOLO_MS" \
		'BEGIN { exit !(s <= 2 * p && t <= 3 * p) }' || { rm -f "$QOS_FILE"; return 1; }
	echo "$QOS_MS $QOS_P95_MS $QOS_P50_MS $QOS_SET" >"$QOS_FILE.tmp" && mv "$QOS_FILE.tmp" "$QOS_FILE"
}
