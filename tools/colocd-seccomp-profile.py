#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Writes colocd's seccomp profile for a container runtime (the OCI/Docker
# JSON that Kubernetes' seccompProfile.type=Localhost loads): the system
# calls of the unit's SystemCallFilter (systemd's @system-service and
# @mount, as this machine's systemd-analyze expands them), plus what colocd
# and its executors use beyond them: bpf, perf_event_open, seccomp (an
# executor installs its own filter) and Landlock. Everything else: EPERM.
#
#   tools/colocd-seccomp-profile.py > deploy/kubernetes/seccomp/colocd.json
import json
import subprocess

GROUPS = ["@system-service", "@mount"]
EXTRA = ["bpf", "perf_event_open", "seccomp",
         "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"]


def groups_of_systemd():
    out = subprocess.run(["systemd-analyze", "syscall-filter"], check=True,
                         capture_output=True, text=True).stdout
    groups, cur = {}, None
    for line in out.splitlines():
        if line.startswith("@"):
            cur = line.split()[0]
            groups[cur] = []
        elif cur and line.startswith("    ") and not line.strip().startswith("#"):
            groups[cur].append(line.strip())
    return groups


def expand(groups, name):
    if not name.startswith("@"):
        return {name}
    names = set()
    for member in groups[name]:
        names |= expand(groups, member)
    return names


groups = groups_of_systemd()
names = set(EXTRA)
for g in GROUPS:
    names |= expand(groups, g)
profile = {
    "defaultAction": "SCMP_ACT_ERRNO",
    "defaultErrnoRet": 1,
    "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
    "syscalls": [{"names": sorted(names), "action": "SCMP_ACT_ALLOW"}],
}
print(json.dumps(profile, indent=1))
