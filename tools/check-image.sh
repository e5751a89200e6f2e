#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# make check-image: runs colocd and coloc-gateway from coloc's image (make
# image) the way deploy/kubernetes/ runs them, and checks them from the
# host with curl. colocd: root in group coloc (COLOC_GID, as the image was
# built; 970 by default), the host's pid
# namespace, /sys/fs/bpf and /sys/fs/cgroup, only the capabilities the
# DaemonSet lists (read from its manifest), its seccomp profile, a read-only
# root. The gateway: 971:971 with group coloc added, as the Deployment runs
# it; no capabilities, no new privileges, a read-only root, the host's pid
# namespace (colocd serves peers of its own only), the socket through a
# shared folder, its ports published on 127.0.0.1. It passes when
# /v2/health/ready answers 200, one JSON inference equals colocctl infer's
# answer for the same input (colocctl run in colocd's container) and
# /metrics counts the success. What it does not check: docs/operators.md.
#
#   tools/check-image.sh      (IMAGE=localhost/coloc:VERSION; as root)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${COLOC_BIN:-bin}
IMAGE=${IMAGE:-localhost/coloc:$("$BIN/colocd" --version | awk '{print $NF}')}
DAEMONSET=${DAEMONSET:-deploy/kubernetes/colocd-daemonset.yaml}
COLOC_GID=${COLOC_GID:-970}
MODEL=mobilenet_v2
NAME=coloc-check-$$

fail() {
	echo "check-image: FAIL: $*" >&2
	exit 1
}
[ "$(id -u)" -eq 0 ] || fail "run as root (podman with the host's BPF and cgroups)"
podman image exists "$IMAGE" || fail "no image $IMAGE: run 'make image' first"

# crun (podman's default here) refuses a hybrid cgroup layout whose cgroup2
# holds a controller, as this machine's does; runc runs there.
runtime=()
if [ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ]; then
	command -v runc >/dev/null || fail "hybrid cgroups need runc: apt-get install runc"
	runtime=(--runtime runc)
fi
# podman raises RLIMIT_NOFILE and sets RLIMIT_NPROC to 32768 by default;
# where root lacks CAP_SYS_RESOURCE (a container) that fails: keep ours.
limits=(--ulimit "nofile=$(ulimit -Sn):$(ulimit -Hn)")
nproc=$(ulimit -Hu)
[ "$nproc" = unlimited ] || [ "$nproc" -ge 32768 ] || fail "RLIMIT_NPROC $nproc is below 32768"
limits+=(--ulimit nproc=32768:32768)
run=(podman "${runtime[@]}" run "${limits[@]}")

mapfile -t caps < <(python3 -c '
import sys, yaml
for doc in yaml.safe_load_all(open(sys.argv[1])):
    if doc and doc.get("kind") == "DaemonSet":
        for c in doc["spec"]["template"]["spec"]["containers"]:
            if c["name"] == "colocd":
                print("\n".join(c["securityContext"]["capabilities"]["add"]))
' "$DAEMONSET")
[ ${#caps[@]} -gt 0 ] || fail "no capabilities found for colocd in $DAEMONSET"
cap_args=(--cap-drop=all)
for c in "${caps[@]}"; do cap_args+=(--cap-add "CAP_$c"); done
echo "check-image: colocd's capabilities (from $DAEMONSET): ${caps[*]}"

T=$(mktemp -d /tmp/coloc-check-image.XXXXXX)
cleanup() {
	podman rm --force --time 10 "$NAME-gateway" "$NAME-colocd" >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/run" "$T/cache" "$T/models/$MODEL/1"
chmod 0755 "$T" "$T/run"
cp "models/$MODEL.model" "$T/models/$MODEL/1/model.model"
echo '{"qos_ms": 500}' >"$T/models/$MODEL/config.json"
chmod -R a+rX "$T/models"

echo "check-image: profiling $MODEL in the image (a quick profile: 1 run per cell)"
"${run[@]}" --rm --network none -v "$T/cache:/var/cache/coloc/profiles" "$IMAGE" \
	coloc-profile "/usr/share/coloc/models/$MODEL.model" -o /var/cache/coloc/profiles/quick.profile \
	--iters 1 --levels 50 >"$T/profile.log" 2>&1 || {
	cat "$T/profile.log"
	fail "coloc-profile in the image"
}

echo "check-image: colocd"
"${run[@]}" -d --name "$NAME-colocd" --network none --pid host --user 0:"$COLOC_GID" --read-only \
	--security-opt no-new-privileges --security-opt seccomp=deploy/kubernetes/seccomp/colocd.json \
	"${cap_args[@]}" \
	-v /sys/fs/bpf:/sys/fs/bpf -v /sys/fs/cgroup:/sys/fs/cgroup \
	-v "$T/run:/run/coloc" -v "$T/cache:/var/cache/coloc/profiles" "$IMAGE" \
	colocd --pin-dir "/sys/fs/bpf/$NAME" --socket /run/coloc/colocd.sock >/dev/null
for _ in $(seq 100); do
	[ -S "$T/run/colocd.sock" ] && break
	podman container exists "$NAME-colocd" && [ "$(podman inspect -f '{{.State.Running}}' "$NAME-colocd")" = true ] ||
		break
	sleep 0.2
done
[ -S "$T/run/colocd.sock" ] || {
	podman logs "$NAME-colocd"
	fail "colocd made no socket"
}
[ "$(stat -c %a:%g "$T/run/colocd.sock")" = "660:$COLOC_GID" ] || fail "socket is $(stat -c %a:%g "$T/run/colocd.sock"), not 660:$COLOC_GID"

echo "check-image: coloc-gateway"
"${run[@]}" -d --name "$NAME-gateway" --pid host --user 971:971 --group-add "$COLOC_GID" --cap-drop=all --read-only \
	--security-opt no-new-privileges -v "$T/run:/run/coloc" -v "$T/models:/models:ro" \
	-p 127.0.0.1::8000 -p 127.0.0.1::8002 "$IMAGE" \
	coloc-gateway --model-repository /models --socket /run/coloc/colocd.sock \
	--http 0.0.0.0:8000 --metrics 0.0.0.0:8002 >/dev/null
http=$(podman port "$NAME-gateway" 8000/tcp)
metrics=$(podman port "$NAME-gateway" 8002/tcp)
ready=
for _ in $(seq 300); do
	code=$(curl -s -o /dev/null -w '%{http_code}' "http://$http/v2/health/ready" || true)
	[ "$code" = 200 ] && ready=1 && break
	[ "$(podman inspect -f '{{.State.Running}}' "$NAME-gateway")" = true ] || break
	podman logs "$NAME-gateway" 2>&1 | grep -q 'not loaded' && break
	sleep 1
done
[ -n "$ready" ] || {
	podman logs "$NAME-colocd" | tail -20
	podman logs "$NAME-gateway" | tail -20
	fail "/v2/health/ready never answered 200 (last: ${code:-none})"
}
echo "check-image: /v2/health/ready 200 from the host at $http"

# One input, random fp32: as JSON to the gateway, as raw bytes to colocctl.
python3 - "$T" <<'EOF'
import json, random, struct, sys
t = sys.argv[1]
random.seed(28)
x = [random.random() for _ in range(3 * 224 * 224)]
x = [struct.unpack("<f", struct.pack("<f", v))[0] for v in x]
open(f"{t}/run/input.bin", "wb").write(struct.pack(f"<{len(x)}f", *x))
json.dump({"id": "check-image", "inputs": [{"name": "data", "shape": [1, 3, 224, 224],
           "datatype": "FP32", "data": x}]}, open(f"{t}/query.json", "w"))
EOF
chmod 0644 "$T/run/input.bin"
curl -sf -X POST --data-binary @"$T/query.json" -o "$T/answer.json" \
	"http://$http/v2/models/$MODEL/infer" || fail "the inference over HTTP failed"
podman exec "$NAME-colocd" colocctl --socket /run/coloc/colocd.sock infer "$MODEL" \
	--input /run/coloc/input.bin --output /run/coloc/output.bin >/dev/null ||
	fail "colocctl infer in colocd's container failed"
python3 - "$T" <<'EOF' || fail "the gateway's answer differs from colocctl infer's"
import json, struct, sys
t = sys.argv[1]
a = json.load(open(f"{t}/answer.json"))
assert a.get("id") == "check-image", a.get("id")
got = a["outputs"][0]["data"]
raw = open(f"{t}/run/output.bin", "rb").read()
want = struct.unpack(f"<{len(raw) // 4}f", raw)
assert len(got) == len(want) == 1000, (len(got), len(want))
diff = [i for i, (g, w) in enumerate(zip(got, want)) if struct.pack("<f", g) != struct.pack("<f", w)]
assert not diff, f"{len(diff)} of 1000 outputs differ, first at {diff[0]}"
print("check-image: the JSON inference equals colocctl infer's 1000 outputs, bit for bit")
EOF
curl -sf "http://$metrics/metrics" | grep -q "^coloc_inference_request_success{model=\"$MODEL\",version=\"1\"} 1$" ||
	fail "/metrics does not count the one success"
echo "check-image: /metrics counts it; PASS"
