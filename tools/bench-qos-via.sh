# shellcheck shell=bash
# bench-qos --via grpc|http (sourced by tools/bench-qos.sh): the tenants
# driven through coloc-gateway instead of colocd's socket. Each policy's
# colocd gets its own gateway, run as the unprivileged coloc user, in front
# of a model repository of the mix's models (WORK/repo-MIX/NAME/1/
# model.model, copies); the tenants are submitted as coloc from those very
# files, so the gateway adopts them (same name, same model file, its own)
# instead of submitting its own. coloc-load then sends with --grpc or --url and reads
# the gateway's CPU from /proc/PID/stat (--gateway-pid).

declare -A VIA_PID VIA_PORT
VIA_ARGS=()
VIA_NEXT_PORT=$((20000 + ($$ % 300) * 40))

via_init() {
	[ "$VIA" = socket ] && return 0
	id coloc >/dev/null 2>&1 || { echo "bench-qos: --via needs the coloc user (tools/deps.sh)" >&2; exit 1; }
	[ -x "$BIN/coloc-gateway" ] || { echo "bench-qos: --via needs $BIN/coloc-gateway (make all)" >&2; exit 1; }
	# the gateway, as coloc, reaches each colocd's socket and the repositories in WORK
	chmod 755 "$WORK"
	trap 'via_stop_all; colocd_lib_cleanup' EXIT
}

# colocctl as the tenants' owner: the gateway's coloc user with --via (colocd
# takes queries for a tenant from its owner, and the gateway adopts only its own).
via_ctl() {
	if [ "$VIA" = socket ]; then
		ctl "$@"
	else
		setpriv --reuid=coloc --regid=coloc --init-groups -- "$BIN/colocctl" --socket "$SOCK" "$@"
	fi
}

# The model file a tenant of MIX is submitted from: the repository's with --via.
via_model_path() { # mix model
	if [ "$VIA" = socket ]; then
		echo "$ROOT/models/$2.model"
	else
		echo "$WORK/repo-$1/$2/1/model.model"
	fi
}

via_repo() { # mix
	local m dir

	[ "$VIA" = socket ] && return 0
	for m in ${MIX_MODELS[$1]}; do
		dir=$WORK/repo-$1/$m
		[ -f "$dir/1/model.model" ] && continue
		mkdir -p "$dir/1"
		cp "$ROOT/models/$m.model" "$dir/1/model.model"
		printf '{"qos_ms": %s}\n' "${QOS[$m]}" >"$dir/config.json"
	done
	chmod -R a+rX "$WORK/repo-$1"
}

# Starts POLICY's gateway in front of its colocd ($SOCK); 1 if it is not ready in time.
via_start() { # mix policy
	local p=$VIA_NEXT_PORT log=$WORK/gateway-$2.log

	[ "$VIA" = socket ] && return 0
	VIA_NEXT_PORT=$((p + 3))
	setpriv --reuid=coloc --regid=coloc --init-groups -- "$BIN/coloc-gateway" \
		--socket "$SOCK" --model-repository "$WORK/repo-$1" --http "127.0.0.1:$p" \
		--grpc "127.0.0.1:$((p + 1))" --metrics "127.0.0.1:$((p + 2))" >"$log" 2>&1 &
	VIA_PID[$2]=$!
	VIA_PORT[$2]=$p
	for _ in $(seq 600); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$p/v2/health/ready")" = 200 ] &&
			return 0
		kill -0 "${VIA_PID[$2]}" 2>/dev/null || break
		sleep 0.2
	done
	sed 's/^/  gateway: /' "$log" >&2
	echo "  $2: the gateway did not get ready (its log is above)" >&2
	via_stop "$2"
	return 1
}

via_stop() { # policy
	local pid=${VIA_PID[$1]:-}

	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	unset "VIA_PID[$1]"
}

via_stop_all() {
	local p

	for p in "${!VIA_PID[@]}"; do via_stop "$p"; done
}

# coloc-load's arguments for POLICY's route, in VIA_ARGS.
via_load_args() { # policy
	local p=${VIA_PORT[$1]:-}

	case $VIA in
	grpc) VIA_ARGS=(--grpc "127.0.0.1:$((p + 1))" --gateway-pid "${VIA_PID[$1]}") ;;
	http) VIA_ARGS=(--url "http://127.0.0.1:$p" -c 8 --gateway-pid "${VIA_PID[$1]}") ;;
	*) VIA_ARGS=() ;;
	esac
}

# One row per tenant of a point into route.tsv: its p50, p99 and the gateway's CPU per query.
via_record() { # mix policy phase total json
	jq -r --arg mix "$1" --arg policy "$2" --arg phase "$3" --arg total "$4" --arg via "$VIA" \
		'(.gateway_cpu.us_per_query // "NA") as $cpu | .tenants[] |
		[$mix, $policy, $phase, $total, .name, $via, .p50_ms, .p99_ms, $cpu] | @tsv' \
		"$5" >>"$OUT/route.tsv"
}
