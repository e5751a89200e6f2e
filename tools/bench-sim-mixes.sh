# The many-core mixes the bench-sim-*.sh scripts share, sourced after SIM
# (coloc-sim) and CONF (tools/qos-mixes.conf) are set: VELTAIR's QoS target
# per model (QOS), the mixes (MIXES, MODELS[mix]), and tenants MIX COPIES
# [CORES], the --tenant arguments of a mix (tools/bench-sim-cores.sh says
# the rules: veltair: and scaled: tables, QoS raised to 2 x the fastest,
# rates inversely proportional to the QoS).
# shellcheck shell=bash
declare -A QOS=([resnet50]=15 [googlenet]=15 [efficientnet_b0]=10 [mobilenet_v2]=10
	[tiny_yolov2]=10 [ssd_mobilenet]=100 [bert_large]=130)

declare -A MODELS
MIXES=()
while read -r name models; do
	case $name in '' | '#'*) continue ;; esac
	MODELS[$name]=$models
	MIXES+=("$name")
done <"$CONF"

for mix in "${MIXES[@]}"; do
	for m in ${MODELS[$mix]}; do
		[ -n "${QOS[$m]:-}" ] || {
			echo "bench-sim: $CONF: mix $mix has $m, which has no VELTAIR QoS target" >&2
			exit 1
		}
	done
done
[ ${#MIXES[@]} -gt 0 ] || { echo "bench-sim: $CONF names no mix" >&2; exit 1; }

spec_of() { case $1 in resnet50 | googlenet) echo "veltair:$1" ;; *) echo "scaled:$1" ;; esac; }

# qos MODEL CORES: VELTAIR's target, raised to 2 x the model's fastest alone on
# CORES (bench-qos's and Abacus's rule) where it is below that: a target the
# model misses whenever a query waits behind another or runs beside one
# (scaled Tiny-YOLOv2 takes 6.97 ms at its fastest on 64 cores against
# VELTAIR's 10 ms) is a mix no schedule serves (docs/measurements/simulator.md)
declare -A QOS_AT
qos() {
	local key=$1.$2 fast

	if [ -z "${QOS_AT[$key]:-}" ]; then
		fast=$("$SIM" --capacity --cores "$2" --tenant "$(spec_of "$1"):${QOS[$1]}" 2>/dev/null |
			awk 'f { print $4; exit } $1 == "tenant" { f = 1 }')
		[ -n "$fast" ] || { echo "bench-sim: no fastest time of $1 on $2 cores" >&2; exit 1; }
		QOS_AT[$key]=$(awk -v v="${QOS[$1]}" -v f="$fast" \
			'BEGIN { q = 2 * f; q = int(q * 10 + 0.999) / 10; print (q > v ? q : v) }')
	fi
	echo "${QOS_AT[$key]}"
}

# --tenant arguments for a mix: copies tenants of each of its models (QoS at cores, 64)
tenants() { # mix copies [cores]
	local m q args=() i

	for m in ${MODELS[$1]}; do
		q=$(qos "$m" "${3:-64}") || exit 1
		for ((i = 0; i < $2; i++)); do
			args+=(--tenant "$(spec_of "$m"):$q:$(awk -v q="$q" 'BEGIN { printf "%.6f", 1 / q }')")
		done
	done
	echo "${args[@]}"
}
