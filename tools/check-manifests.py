#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Checks deploy/kubernetes/ offline, with no cluster and no schema download:
# every YAML parses; each object's apiVersion/kind is one we ship, with its
# required fields and no unknown container keys (a typo is not silently
# dropped); the names, paths, ports and images objects share agree (colocd's
# --socket is the gateways', the socket's hostPath is one folder, each
# gateway flag's port is a declared container port, the gateway's groups
# hold colocd's group; colocd reads the node's subuid, subgid and group
# files through a read-only hostPath); every gateway pod is selected by a NetworkPolicy that
# admits its inference ports and its metrics port only from named sources; the security rules (gateway non-root, no capability,
# no privilege escalation, read-only root; colocd only the capabilities
# docs/operators.md justifies); Guaranteed QoS with whole CPUs (colocd's
# whole pod, init containers too: its OOM score). Prints each
# broken rule, exit 1 if any. What it cannot check: docs/operators.md.
#
#   tools/check-manifests.py [DIR]      (default deploy/kubernetes)
import os
import re
import sys

import yaml

KINDS = {
    ("v1", "Namespace"): ["metadata.name"],
    ("v1", "Service"): ["metadata.name", "metadata.namespace", "spec.selector", "spec.ports"],
    ("v1", "PersistentVolumeClaim"): ["metadata.name", "metadata.namespace", "spec.accessModes",
                                      "spec.resources.requests.storage"],
    ("apps/v1", "DaemonSet"): ["metadata.name", "metadata.namespace", "spec.selector.matchLabels",
                               "spec.template.metadata.labels", "spec.template.spec.containers"],
    ("apps/v1", "Deployment"): ["metadata.name", "metadata.namespace", "spec.selector.matchLabels",
                                "spec.template.metadata.labels", "spec.template.spec.containers"],
    ("networking.k8s.io/v1", "NetworkPolicy"): ["metadata.name", "metadata.namespace",
                                             "spec.podSelector.matchLabels"],
    ("serving.kserve.io/v1alpha1", "ServingRuntime"): [
        "metadata.name", "metadata.namespace", "spec.supportedModelFormats",
        "spec.protocolVersions", "spec.containers"],
    ("serving.kserve.io/v1beta1", "InferenceService"): [
        "metadata.name", "metadata.namespace", "spec.predictor.model.modelFormat.name",
        "spec.predictor.model.runtime", "spec.predictor.model.storageUri"],
}
CONTAINER_KEYS = {"name", "image", "imagePullPolicy", "command", "args", "env", "ports",
                  "securityContext", "resources", "volumeMounts", "readinessProbe",
                  "livenessProbe", "startupProbe"}
# What colocd uses, each justified in docs/operators.md; nothing else
# (SYS_RESOURCE: only on kernels before 5.11, not in the shipped DaemonSet).
# KILL: only on nodes without cgroup v2 (colocd kills executors through
# cgroup.kill), not in the shipped DaemonSet; SYS_PTRACE no more (NSpid).
COLOCD_CAPS = {"BPF", "PERFMON", "SYS_ADMIN", "SYS_RESOURCE", "SETUID", "SETGID", "SETPCAP", "KILL"}
# syscalls colocd never makes, which its seccomp profile must not allow
COLOCD_SECCOMP_DENIED = {"process_vm_readv", "process_vm_writev", "userfaultfd", "keyctl",
                         "add_key", "request_key"}
# --http-max-buffer-bytes holds the HTTP bodies, their tensors and their answers (colocd's
# output and the answer's text, charged before the query is sent: review s18 HIGH 2);
# what the gateway holds beside its buffer budgets (docs/gateway.md, "Memory"):
# the kept memfds (64 MiB), libmicrohttpd's 128 KiB per HTTP connection, its own ~64 MiB
GW_KEPT_BYTES = 64 << 20
GW_CONN_BYTES = 128 << 10
GW_OWN_BYTES = 64 << 20
# JSON infer bodies parsed at once (gateway/parse_gate.h's GW_PARSES_MAX), each
# json-c's objects for at most 1,024 values outside the data arrays (~1 MiB)
GW_PARSE_BYTES = 16 << 20
GW_DEFAULTS = {"--http-max-buffer-bytes": 256 << 20, "--grpc-max-buffer-bytes": 1 << 30,
               "--max-connections": 1024}
# Triton's ports, which the gateway keeps
GATEWAY_PORTS = {"--http": 8000, "--grpc": 8001, "--metrics": 8002}
SECCOMP_DIR = "seccomp"

errors = []


def fail(where, what):
    errors.append(f"{where}: {what}")


def get(obj, path):
    for key in path.split("."):
        if not isinstance(obj, dict) or key not in obj:
            return None
        obj = obj[key]
    return obj


def load(folder):
    docs = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith((".yaml", ".yml")):
            continue
        path = os.path.join(folder, name)
        try:
            with open(path) as f:
                found = [d for d in yaml.safe_load_all(f) if d is not None]
        except yaml.YAMLError as e:
            fail(name, f"not YAML: {e}")
            continue
        for doc in found:
            docs.append((name, doc))
    if not docs:
        fail(folder, "no manifests")
    return docs


def check_kind(where, doc):
    if not isinstance(doc, dict):
        fail(where, "a document that is not a mapping")
        return False
    key = (doc.get("apiVersion"), doc.get("kind"))
    if key not in KINDS:
        fail(where, f"unknown apiVersion/kind {key[0]}/{key[1]}")
        return False
    for path in KINDS[key]:
        if get(doc, path) in (None, "", [], {}):
            fail(where, f"{key[1]} lacks {path}")
    name = get(doc, "metadata.name") or ""
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", str(name)):
        fail(where, f"metadata.name {name!r} is not a DNS label")
    return True


def pod_of(doc):
    """(pod spec, containers) of a workload, a ServingRuntime or an InferenceService."""
    kind = doc["kind"]
    if kind in ("DaemonSet", "Deployment"):
        spec = get(doc, "spec.template.spec") or {}
        return spec, spec.get("containers") or []
    if kind == "ServingRuntime":
        return doc.get("spec") or {}, get(doc, "spec.containers") or []
    if kind == "InferenceService":
        return get(doc, "spec.predictor") or {}, []
    return None, []


def flag(args, name):
    for a in args or []:
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def port_of(addr):
    m = re.fullmatch(r"(.*):(\d+)", addr or "")
    return int(m.group(2)) if m else None


def check_container(where, c, pod):
    for key in c:
        if key not in CONTAINER_KEYS:
            fail(where, f"container {c.get('name')}: unknown key {key}")
    if not c.get("name") or not c.get("image"):
        fail(where, "a container without name or image")
    volumes = {v.get("name"): v for v in pod.get("volumes") or []}
    for m in c.get("volumeMounts") or []:
        if m.get("name") not in volumes:
            fail(where, f"container {c.get('name')}: mounts volume {m.get('name')} that is not declared")
    res = c.get("resources") or {}
    req, lim = res.get("requests") or {}, res.get("limits") or {}
    for r in ("cpu", "memory"):
        if r not in req or r not in lim or str(req[r]) != str(lim[r]):
            fail(where, f"container {c.get('name')}: {r} requests != limits (not Guaranteed QoS)")
    if not re.fullmatch(r"[1-9][0-9]*", str(lim.get("cpu", ""))):
        fail(where, f"container {c.get('name')}: cpu {lim.get('cpu')!r} is not a whole number "
             "(the static CPU manager pins whole CPUs only)")


def socket_dir(where, c, pod):
    """The node folder the container's /run/coloc comes from, or None."""
    volumes = {v.get("name"): v for v in pod.get("volumes") or []}
    for m in c.get("volumeMounts") or []:
        if m.get("mountPath") == "/run/coloc":
            return get(volumes.get(m.get("name"), {}), "hostPath.path")
    fail(where, f"container {c.get('name')}: no volume at /run/coloc (colocd's socket)")
    return None


def node_file(c, pod, path):
    """The node's path a container's file comes from through a hostPath mount, and
    whether that mount is read-only; (None, False) when it comes from the image."""
    volumes = {v.get("name"): v for v in pod.get("volumes") or []}
    best = None
    for m in c.get("volumeMounts") or []:
        mp = (m.get("mountPath") or "").rstrip("/")
        if path == mp or path.startswith(mp + "/"):
            if best is None or len(mp) > len(best[0]):
                best = (mp, m)
    if best is None:
        return None, False
    host = get(volumes.get(best[1].get("name"), {}), "hostPath.path")
    if host is None:
        return None, False
    return host.rstrip("/") + path[len(best[0]):], best[1].get("readOnly") is True


SUBIDS_WHY = ("the image's has no ranges: a member's subordinate ids would each be a member "
              "(review s22 LOW 2)")
# The node's files colocd must read, not the image's: why each
COLOCD_NODE_FILES = (
    ("--subuid-file", "/etc/subuid", SUBIDS_WHY),
    ("--subgid-file", "/etc/subgid", SUBIDS_WHY),
    ("--host-group-file", "/etc/group", "colocd could not see a node group holding the image's "
     "coloc gid, whose members would be colocd's (s21 second review, LOW 1)"),
)


def check_colocd_node_files(where, c, pod):
    """colocd reads the node's /etc/subuid, /etc/subgid and /etc/group through a
    read-only hostPath, not the image's."""
    for name, node, why in COLOCD_NODE_FILES:
        path = flag(c.get("args"), name) or node
        host, read_only = node_file(c, pod, path)
        if host != node:
            fail(where, f"colocd: {name} ({path}) is not the node's {node} through a hostPath "
                 f"({why})")
        elif not read_only:
            fail(where, f"colocd: the node's {node} is mounted writable")


def check_colocd_guaranteed(where, pod):
    """colocd's OOM score: the kubelet starts a Guaranteed pod's processes at
    oom_score_adj -997, below colocd's -900, which colocd cannot lower
    itself without SYS_RESOURCE; one container or init container with
    requests below its limits makes the pod Burstable (2 to 999)."""
    for c in (pod.get("initContainers") or []) + (pod.get("containers") or []):
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        for r in ("cpu", "memory"):
            # a request left out is the limit
            if r not in lim or str(req.get(r, lim[r])) != str(lim[r]):
                fail(where, f"colocd: its pod is not Guaranteed QoS (container {c.get('name')}: "
                     f"{r} requests != limits): the kubelet would start colocd above "
                     "oom_score_adj -900, and without SYS_RESOURCE colocd cannot lower it")
                return


def check_colocd(where, doc, c, pod, seen):
    sc = c.get("securityContext") or {}
    caps = get(sc, "capabilities.add") or []
    if get(sc, "capabilities.drop") != ["ALL"]:
        fail(where, "colocd: capabilities.drop is not [ALL]")
    for cap in caps:
        if cap.startswith("CAP_"):
            fail(where, f"colocd: capability {cap}: Kubernetes names it without CAP_")
        elif cap not in COLOCD_CAPS:
            fail(where, f"colocd: capability {cap} is not one colocd uses")
    if sc.get("privileged"):
        fail(where, "colocd: privileged (it needs its capabilities only)")
    if pod.get("hostPID") is not True:
        fail(where, "colocd: hostPID is not true (the BPF sensor sees the host's tgids)")
    if "SYS_RESOURCE" not in caps:
        check_colocd_guaranteed(where, pod)
    check_colocd_node_files(where, c, pod)
    prof = get(sc, "seccompProfile")
    if get(prof, "type") == "Localhost":
        name = os.path.basename(get(prof, "localhostProfile") or "")
        if not os.path.isfile(os.path.join(seen["folder"], SECCOMP_DIR, name)):
            fail(where, f"colocd: seccomp profile {name} is not in {SECCOMP_DIR}/")
        path = os.path.join(seen["folder"], SECCOMP_DIR, name)
        if os.path.isfile(path):
            import json
            with open(path) as f:
                allowed = {n for r in json.load(f).get("syscalls") or []
                           if r.get("action") == "SCMP_ACT_ALLOW" for n in r.get("names") or []}
            for n in sorted(allowed & COLOCD_SECCOMP_DENIED):
                fail(where, f"colocd: seccomp profile {name} allows {n}, which colocd never makes")
    elif get(prof, "type") != "RuntimeDefault":
        fail(where, "colocd: no seccomp profile")
    seen["colocd"].append({"socket": flag(c.get("args"), "--socket"), "gid": sc.get("runAsGroup"),
                           "dir": socket_dir(where, c, pod), "image": c.get("image")})


def check_gateway(where, doc, c, pod, seen):
    sc = c.get("securityContext") or {}
    psc = pod.get("securityContext") or {}
    user = sc.get("runAsUser", psc.get("runAsUser"))
    # a runtime's uid is each InferenceService's (check_cross): set here, it would override them
    if doc["kind"] == "ServingRuntime" and user is not None:
        fail(where, f"gateway: the ServingRuntime sets runAsUser {user}, which overrides each "
             "InferenceService's own uid (every gateway needs a uid of its own)")
    elif sc.get("runAsNonRoot", psc.get("runAsNonRoot")) is not True or (
            user in (None, 0) and doc["kind"] != "ServingRuntime"):
        fail(where, "gateway: not runAsNonRoot with a non-zero runAsUser")
    if sc.get("allowPrivilegeEscalation") is not False:
        fail(where, "gateway: allowPrivilegeEscalation is not false")
    if sc.get("privileged"):
        fail(where, "gateway: privileged")
    if get(sc, "capabilities.drop") != ["ALL"] or get(sc, "capabilities.add"):
        fail(where, "gateway: capabilities are not drop [ALL] with none added")
    if sc.get("readOnlyRootFilesystem") is not True:
        fail(where, "gateway: readOnlyRootFilesystem is not true")
    args = c.get("args") or []
    declared = {p.get("containerPort") for p in c.get("ports") or []}
    for name, port in GATEWAY_PORTS.items():
        value = flag(args, name)
        if value is None:
            fail(where, f"gateway: no {name}")
            continue
        if port_of(value) != port:
            fail(where, f"gateway: {name} {value} is not port {port}")
        if doc["kind"] == "Deployment" and port_of(value) not in declared:
            fail(where, f"gateway: {name} port {port_of(value)} is not a declared containerPort")
    if doc["kind"] == "ServingRuntime":
        for name in ("--http", "--grpc"):
            if port_of(flag(args, name)) not in declared:
                fail(where, f"gateway: the runtime's {name} port is not a declared containerPort")
    if flag(args, "--http-max-conns-per-ip") == "0":
        fail(where, "gateway: --http-max-conns-per-ip=0 (no bound per address)")
    check_gateway_memory(where, c, args)
    groups = {sc.get("runAsGroup", psc.get("runAsGroup"))} | set(psc.get("supplementalGroups") or [])
    seen["gateway"].append({"where": where, "user": user, "socket": flag(args, "--socket"),
                            "groups": groups,
                            "dir": socket_dir(where, c, pod), "image": c.get("image"),
                            "pod": pod, "kind": doc["kind"], "name": doc["metadata"]["name"]})


def quantity(q):
    """Bytes of a Kubernetes memory quantity (1Gi, 512Mi, 1073741824), or None."""
    m = re.fullmatch(r"([0-9]+)(Ki|Mi|Gi|Ti)?", str(q or ""))
    if not m:
        return None
    return int(m.group(1)) << {None: 0, "Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40}[m.group(2)]


def check_gateway_memory(where, c, args):
    """The budgets the gateway's flags give it, and what it holds beside, within its limit."""
    limit = quantity(get(c, "resources.limits.memory"))
    if limit is None:
        fail(where, "gateway: no memory limit in bytes, Ki, Mi or Gi")
        return
    v = {}
    for name, default in GW_DEFAULTS.items():
        value = flag(args, name)
        v[name] = int(value) if value and value.isdigit() else default
    grpc = v["--grpc-max-buffer-bytes"] if flag(args, "--grpc") else 0
    need = (v["--http-max-buffer-bytes"] + grpc + GW_KEPT_BYTES +
            v["--max-connections"] * GW_CONN_BYTES + GW_PARSE_BYTES + GW_OWN_BYTES)
    if need > limit:
        fail(where, f"gateway: its budgets and buffers ({need >> 20} MiB: --http-max-buffer-bytes (bodies, "
             f"tensors and answers), "
             f"--grpc-max-buffer-bytes, 64 MiB kept memfds, 128 KiB per connection, 16 MiB "
             f"of JSON parses, 64 MiB its own) are over its memory limit ({limit >> 20} MiB)")


def one_to_a_node(pod_spec):
    """Whether the pod spec requires its replicas on different nodes (a required
    pod anti-affinity on kubernetes.io/hostname)."""
    terms = get(pod_spec or {}, "affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution")
    return any(t.get("topologyKey") == "kubernetes.io/hostname" for t in terms or [])


def check_gateway_uids(seen, docs):
    """Each gateway workload (a Deployment, an InferenceService) runs as a uid of its own,
    one pod of it to a node: colocd's connections, quotas and tenant names are per uid
    (review2 HIGH 2, review s22 LOW 1)."""
    users = [(g["where"], g["user"]) for g in seen["gateway"] if g["kind"] == "Deployment"]
    for where, doc in docs:
        if doc["kind"] == "Deployment" and any(g["where"] == where for g in seen["gateway"]):
            replicas = get(doc, "spec.replicas")
            if (replicas is None or replicas > 1) and not one_to_a_node(get(doc, "spec.template.spec")):
                fail(where, "gateway: more than one replica without a required pod anti-affinity on "
                     "kubernetes.io/hostname (two pods of one uid on a node share its quotas and "
                     "remove each other's tenants)")
        if doc["kind"] != "InferenceService":
            continue
        user = get(doc, "spec.predictor.securityContext.runAsUser")
        model_user = get(doc, "spec.predictor.model.securityContext.runAsUser")
        if model_user is not None and model_user != user:
            fail(where, f"InferenceService: its model container's runAsUser {model_user} overrides "
                 f"the pod's {user} (the check keys each gateway by the pod's; set it there only)")
        if user in (None, 0):
            fail(where, "InferenceService: no non-zero runAsUser of its own")
        replicas = get(doc, "spec.predictor.maxReplicas")
        recreate = get(doc, "spec.predictor.deploymentStrategy.type") == "Recreate"
        if not one_to_a_node(get(doc, "spec.predictor")) and (
                replicas is None or replicas > 1 or not recreate):
            fail(where, "InferenceService: two of its pods may share a node (neither a required pod "
                 "anti-affinity on kubernetes.io/hostname nor maxReplicas 1 with deploymentStrategy "
                 "Recreate): pods of one uid on a node share its quotas and remove each other's "
                 "tenants")
        users.append((where, user))
    first = {}
    for where, user in users:
        if user in first and user not in (None, 0):
            fail(where, f"gateway workloads {first[user]} and {where} share runAsUser {user}: "
                 "each needs a uid of its own (colocd's connections, quotas and tenants are "
                 "per uid)")
        first.setdefault(user, where)


def check_cross(seen, docs):
    if len(seen["colocd"]) != 1:
        fail("colocd", f"{len(seen['colocd'])} colocd containers, not 1")
        return
    d = seen["colocd"][0]
    if not seen["gateway"]:
        fail("gateway", "no coloc-gateway container")
    for g in seen["gateway"]:
        w = g["where"]
        if g["socket"] != d["socket"]:
            fail(w, f"gateway --socket {g['socket']} is not colocd's --socket {d['socket']}")
        if g["dir"] != d["dir"]:
            fail(w, f"gateway's /run/coloc is node folder {g['dir']}, colocd's is {d['dir']}")
        if g["image"] != d["image"]:
            fail(w, f"gateway image {g['image']} is not colocd's {d['image']}")
        if g["kind"] == "Deployment" and d["gid"] not in g["groups"]:
            fail(w, f"gateway is not in colocd's group {d['gid']} (the socket's)")
        if g["pod"].get("hostPID"):
            fail(w, "gateway: hostPID is set (it needs none: colocd refuses only the pids a "
                 "peer of another pid namespace names; the gateway would see every host process)")
    check_gateway_uids(seen, docs)
    runtimes = {doc["metadata"]["name"]: doc for _, doc in docs if doc["kind"] == "ServingRuntime"}
    for where, doc in docs:
        if doc["kind"] == "ServingRuntime" and "v2" not in (get(doc, "spec.protocolVersions") or []):
            fail(where, "ServingRuntime does not declare protocolVersions v2")
        if doc["kind"] == "InferenceService":
            rt = runtimes.get(get(doc, "spec.predictor.model.runtime"))
            if rt is None:
                fail(where, "InferenceService names a ServingRuntime that is not here")
                continue
            fmt = get(doc, "spec.predictor.model.modelFormat.name")
            if fmt not in [f.get("name") for f in get(rt, "spec.supportedModelFormats") or []]:
                fail(where, f"model format {fmt} is not one its runtime supports")
            pred = get(doc, "spec.predictor") or {}
            groups = set(get(pred, "securityContext.supplementalGroups") or [])
            rt_sc = (get(rt, "spec.containers") or [{}])[0].get("securityContext") or {}
            groups.add(rt_sc.get("runAsGroup"))
            if d["gid"] not in groups:
                fail(where, f"its gateway is not in colocd's group {d['gid']} (the socket's)")
            if pred.get("hostPID"):
                fail(where, "hostPID is set (the gateway needs none: colocd refuses only the "
                     "pids a peer of another pid namespace names)")
            if pred.get("automountServiceAccountToken") is not False:
                fail(where, "automountServiceAccountToken is not false (the gateway needs no "
                     "API token)")
    namespaces = {doc["metadata"]["name"] for _, doc in docs if doc["kind"] == "Namespace"}
    claims = {doc["metadata"]["name"] for _, doc in docs if doc["kind"] == "PersistentVolumeClaim"}
    workloads = [doc for _, doc in docs if doc["kind"] in ("DaemonSet", "Deployment")]
    for where, doc in docs:
        ns = get(doc, "metadata.namespace")
        if ns is not None and ns not in namespaces:
            fail(where, f"namespace {ns} is not defined here")
        if (doc["kind"] == "Deployment" and
                get(doc, "spec.template.spec.automountServiceAccountToken") is not False):
            fail(where, "automountServiceAccountToken is not false (the gateway needs no API token)")
        if doc["kind"] in ("DaemonSet", "Deployment"):
            sel = get(doc, "spec.selector.matchLabels") or {}
            labels = get(doc, "spec.template.metadata.labels") or {}
            if any(labels.get(k) != v for k, v in sel.items()):
                fail(where, "spec.selector does not match the pod template's labels")
            for v in get(doc, "spec.template.spec.volumes") or []:
                claim = get(v, "persistentVolumeClaim.claimName")
                if claim is not None and claim not in claims:
                    fail(where, f"volume claim {claim} is not defined here")
        if doc["kind"] == "Service":
            sel = get(doc, "spec.selector") or {}
            match = [w for w in workloads
                     if all((get(w, "spec.template.metadata.labels") or {}).get(k) == v
                            for k, v in sel.items())]
            if not match:
                fail(where, "Service selects no workload here")
                continue
            names = {p.get("name") for c in get(match[0], "spec.template.spec.containers") or []
                     for p in c.get("ports") or []}
            for p in get(doc, "spec.ports") or []:
                if isinstance(p.get("targetPort"), str) and p["targetPort"] not in names:
                    fail(where, f"targetPort {p['targetPort']} is no container port of its workload")


def rule_admits(rule, port, name):
    """Whether one ingress rule's ports include port (by number or name)."""
    ports = rule.get("ports")
    if not ports:
        return True
    return any("port" not in p or p["port"] in (port, name) or
               (isinstance(p["port"], int) and p["port"] <= port <= p.get("endPort", p["port"]))
               for p in ports)


def wide_peer(peer):
    """Why a `from` peer admits more than named scrapers, or None: an ipBlock (addresses, not
    pods), a selector of every namespace or every pod, or matchExpressions (not evaluated)."""
    if "ipBlock" in peer:
        return "an ipBlock (addresses, whatever pod or host holds them)"
    for key in ("namespaceSelector", "podSelector"):
        sel = peer.get(key)
        if sel is not None and sel.get("matchExpressions"):
            return f"a {key} with matchExpressions (the check does not evaluate them)"
    ns, pods = peer.get("namespaceSelector"), peer.get("podSelector")
    if ns is not None and not ns.get("matchLabels"):
        return "an empty namespaceSelector (every namespace)"
    if ns is None and (pods is None or not pods.get("matchLabels")):
        return "an empty podSelector (every pod of the gateway's namespace)"
    return None


def check_network_policies(docs):
    """Every gateway pod: its inference ports open, its metrics port only from named sources."""
    pods = []
    for where, doc in docs:
        ns = get(doc, "metadata.namespace")
        if doc["kind"] == "Deployment" and any(
                " ".join(c.get("command") or []).endswith("/coloc-gateway")
                for c in get(doc, "spec.template.spec.containers") or []):
            pods.append((where, ns, get(doc, "spec.template.metadata.labels") or {}))
        elif doc["kind"] == "InferenceService":
            pods.append((where, ns, {"serving.kserve.io/inferenceservice": doc["metadata"]["name"]}))
    policies = [(w, d) for w, d in docs if d["kind"] == "NetworkPolicy"]
    for where, ns, labels in pods:
        for w, d in policies:
            if get(d, "spec.podSelector.matchExpressions"):
                fail(w, "NetworkPolicy's podSelector uses matchExpressions: the check cannot "
                     "tell which pods it selects (use matchLabels)")
        mine = [(w, d) for w, d in policies if get(d, "metadata.namespace") == ns and
                all(labels.get(k) == v
                    for k, v in (get(d, "spec.podSelector.matchLabels") or {}).items())]
        if not mine:
            fail(where, "no NetworkPolicy selects the gateway's pods: its /metrics (8002) "
                 "is open to every pod")
            continue
        rules = []
        for w, d in mine:
            if "Ingress" not in (get(d, "spec.policyTypes") or ["Ingress"]):
                fail(w, "NetworkPolicy does not restrict Ingress")
            rules += [(w, r) for r in get(d, "spec.ingress") or []]
        for w, r in rules:
            if not rule_admits(r, 8002, "metrics"):
                continue
            if not r.get("from"):
                fail(w, "NetworkPolicy lets any pod reach the gateway's metrics port 8002")
            for peer in r.get("from") or []:
                why = wide_peer(peer)
                if why:
                    fail(w, f"NetworkPolicy opens the gateway's metrics port 8002 to {why}")
        for port, name in ((8000, "http"), (8001, "grpc")):
            if not any(rule_admits(r, port, name) for _, r in rules):
                fail(where, f"its NetworkPolicies shut the gateway's {name} port {port}")


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "deploy/kubernetes"
    docs = [(w, d) for w, d in load(folder) if check_kind(w, d)]
    seen = {"colocd": [], "gateway": [], "folder": folder}
    for where, doc in docs:
        pod, containers = pod_of(doc)
        for c in containers:
            check_container(where, c, pod)
            cmd = " ".join(c.get("command") or [])
            if cmd.endswith("/colocd"):
                check_colocd(where, doc, c, pod, seen)
            elif cmd.endswith("/coloc-gateway"):
                check_gateway(where, doc, c, pod, seen)
    check_cross(seen, docs)
    check_network_policies(docs)
    for e in errors:
        print(f"check-manifests: {e}", file=sys.stderr)
    if errors:
        return 1
    print(f"check-manifests: {len(docs)} objects in {folder}: every rule holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
