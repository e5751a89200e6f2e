// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The offline check of deploy/kubernetes/ (tools/check-manifests.py, run by
 * Debian's python3 with python3-yaml): the shipped manifests pass, and each
 * rule it holds is broken once, in a copy, by one edit an operator could
 * make (the gateway as root, a socket path or port that no longer agrees,
 * a capability colocd does not use, requests below limits (colocd's init
 * containers too: its OOM score), a typo in a
 * key, the gateway's metrics port open to every pod, namespace or address, ...): the check
 * must fail and name that rule. Each edit must find
 * its text, so a manifest changed under the test fails it rather than
 * passing it by accident.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "testutil.h"

#define CHECKER "/usr/bin/python3 '%s/tools/check-manifests.py' '%s'"

static const char *deploy_root(void)
{
	const char *root = getenv("COLOC_ROOT");

	return root && *root ? root : ".";
}

/* Replaces the first from in dir/file by to; -1 if from is not there. */
static int deploy_edit(const char *dir, const char *file, const char *from, const char *to)
{
	char path[512], *text, *at, *edited;
	size_t len, n;
	FILE *f;
	int ret = -1;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	text = calloc(1, 1 << 16);
	len = text ? fread(text, 1, (1 << 16) - 1, f) : 0;
	fclose(f);
	at = text ? strstr(text, from) : NULL;
	edited = at ? malloc(len + strlen(to) + 1) : NULL;
	if (edited) {
		n = (size_t)(at - text);
		memcpy(edited, text, n);
		strcpy(edited + n, to);
		strcat(edited + n, at + strlen(from));
		f = fopen(path, "w");
		if (f) {
			ret = fputs(edited, f) < 0 ? -1 : 0;
			ret |= fclose(f) ? -1 : 0;
		}
	}
	free(edited);
	free(text);
	return ret;
}

FIXTURE(deploy_manifests)
{
	char dir[64];
	char cmd[1024];
	char out[8192];
};

FIXTURE_VARIANT(deploy_manifests)
{
	const char *file;
	const char *from;
	const char *to;
	const char *rule; /* what the check must print */
};

FIXTURE_VARIANT_ADD(deploy_manifests, gateway_as_root){
	"gateway-deployment.yaml",
	"runAsUser: 971",
	"runAsUser: 0",
	"gateway: not runAsNonRoot with a non-zero runAsUser",
};
FIXTURE_VARIANT_ADD(deploy_manifests, runtime_as_root){
	"kserve-servingruntime.yaml",
	"runAsNonRoot: true",
	"runAsNonRoot: false",
	"gateway: not runAsNonRoot with a non-zero runAsUser",
};
FIXTURE_VARIANT_ADD(deploy_manifests, two_gateways_share_a_uid){
	"kserve-inferenceservice.yaml",
	"runAsUser: 972",
	"runAsUser: 971",
	"share runAsUser 971: each needs a uid of its own",
};
FIXTURE_VARIANT_ADD(deploy_manifests, colocd_reads_the_images_subuid){
	"colocd-daemonset.yaml",
	"            - --subuid-file=/host/etc/subuid\n",
	"",
	"colocd: --subuid-file (/etc/subuid) is not the node's /etc/subuid",
};
FIXTURE_VARIANT_ADD(deploy_manifests, colocd_reads_the_images_group){
	"colocd-daemonset.yaml",
	"            - --host-group-file=/host/etc/group\n",
	"",
	"colocd: --host-group-file (/etc/group) is not the node's /etc/group",
};
FIXTURE_VARIANT_ADD(deploy_manifests, colocd_mounts_the_nodes_etc_writable){
	"colocd-daemonset.yaml",
	"              mountPath: /host/etc\n              readOnly: true\n",
	"              mountPath: /host/etc\n",
	"colocd: the node's /etc/subgid is mounted writable",
};
FIXTURE_VARIANT_ADD(deploy_manifests, model_container_overrides_the_uid){
	"kserve-inferenceservice.yaml",
	"      runtime: kserve-coloc\n",
	"      runtime: kserve-coloc\n      securityContext:\n        runAsUser: 971\n",
	"its model container's runAsUser 971 overrides the pod's 972",
};
FIXTURE_VARIANT_ADD(deploy_manifests, inferenceservice_replicas_share_a_node){
	"kserve-inferenceservice.yaml",
	"    maxReplicas: 1\n",
	"    maxReplicas: 3\n",
	"InferenceService: two of its pods may share a node",
};
FIXTURE_VARIANT_ADD(deploy_manifests, inferenceservice_rolls_beside_its_old_pod){
	"kserve-inferenceservice.yaml",
	"      type: Recreate",
	"      type: RollingUpdate",
	"InferenceService: two of its pods may share a node",
};
FIXTURE_VARIANT_ADD(deploy_manifests, inferenceservice_without_a_uid){
	"kserve-inferenceservice.yaml",
	"      runAsUser: 972\n",
	"",
	"InferenceService: no non-zero runAsUser of its own",
};
FIXTURE_VARIANT_ADD(deploy_manifests, runtime_overrides_each_uid){
	"kserve-servingruntime.yaml",
	"        runAsGroup: 970",
	"        runAsUser: 971\n        runAsGroup: 970",
	"the ServingRuntime sets runAsUser 971",
};
FIXTURE_VARIANT_ADD(deploy_manifests, gateway_sees_the_hosts_processes){
	"gateway-deployment.yaml",
	"    spec:\n      nodeSelector:",
	"    spec:\n      hostPID: true\n      nodeSelector:",
	"gateway: hostPID is set",
};
FIXTURE_VARIANT_ADD(deploy_manifests, inferenceservice_sees_the_hosts_processes){
	"kserve-inferenceservice.yaml",
	"    maxReplicas: 1\n",
	"    maxReplicas: 1\n    hostPID: true\n",
	"hostPID is set (the gateway needs none",
};
FIXTURE_VARIANT_ADD(deploy_manifests, gateway_escalates){
	"gateway-deployment.yaml",
	"allowPrivilegeEscalation: false",
	"allowPrivilegeEscalation: true",
	"gateway: allowPrivilegeEscalation is not false",
};
FIXTURE_VARIANT_ADD(deploy_manifests, colocd_pod_burstable_by_an_init_container){
	"colocd-daemonset.yaml",
	"      containers:\n        - name: colocd\n",
	"      initContainers:\n        - name: wait\n          image: localhost/coloc:0.4.0\n"
	"          resources:\n            limits:\n              cpu: \"1\"\n"
	"              memory: 64Mi\n            requests:\n              cpu: \"1\"\n"
	"              memory: 16Mi\n"
	"      containers:\n        - name: colocd\n",
	"colocd: its pod is not Guaranteed QoS (container wait: memory requests != limits)",
};
FIXTURE_VARIANT_ADD(deploy_manifests, gateway_gets_a_capability){
	"gateway-deployment.yaml",
	"drop: [\"ALL\"]",
	"drop: [\"ALL\"]\n              add: [\"NET_RAW\"]",
	"gateway: capabilities are not drop [ALL] with none added",
};
FIXTURE_VARIANT_ADD(deploy_manifests, gateway_writable_root){
	"kserve-servingruntime.yaml",
	"readOnlyRootFilesystem: true",
	"readOnlyRootFilesystem: false",
	"gateway: readOnlyRootFilesystem is not true",
};
FIXTURE_VARIANT_ADD(deploy_manifests, gateway_outside_coloc_group){
	"gateway-deployment.yaml",
	"supplementalGroups: [970]",
	"supplementalGroups: [971]",
	"gateway is not in colocd's group 970",
};
FIXTURE_VARIANT_ADD(deploy_manifests, socket_paths_disagree){
	"gateway-deployment.yaml",
	"--socket=/run/coloc/colocd.sock",
	"--socket=/run/coloc/other.sock",
	"is not colocd's --socket /run/coloc/colocd.sock",
};
FIXTURE_VARIANT_ADD(deploy_manifests, socket_folders_disagree){
	"kserve-servingruntime.yaml",
	"path: /run/coloc",
	"path: /var/run/coloc-gw",
	"gateway's /run/coloc is node folder /var/run/coloc-gw, colocd's is /run/coloc",
};
FIXTURE_VARIANT_ADD(deploy_manifests, grpc_port_not_tritons){
	"kserve-servingruntime.yaml",
	"--grpc=0.0.0.0:8001",
	"--grpc=0.0.0.0:9000",
	"gateway: --grpc 0.0.0.0:9000 is not port 8001",
};
FIXTURE_VARIANT_ADD(deploy_manifests, runtime_port_undeclared){
	"kserve-servingruntime.yaml",
	"containerPort: 8001",
	"containerPort: 9001",
	"gateway: the runtime's --grpc port is not a declared containerPort",
};
FIXTURE_VARIANT_ADD(deploy_manifests, service_port_unknown){
	"gateway-deployment.yaml",
	"targetPort: metrics",
	"targetPort: prometheus",
	"targetPort prometheus is no container port of its workload",
};
FIXTURE_VARIANT_ADD(deploy_manifests, colocd_extra_capability){
	"colocd-daemonset.yaml",
	"- SETPCAP",
	"- SETPCAP\n                - NET_ADMIN",
	"colocd: capability NET_ADMIN is not one colocd uses",
};
FIXTURE_VARIANT_ADD(deploy_manifests, colocd_capability_spelled_cap){
	"colocd-daemonset.yaml",
	"- BPF",
	"- CAP_BPF",
	"colocd: capability CAP_BPF: Kubernetes names it without CAP_",
};
FIXTURE_VARIANT_ADD(deploy_manifests, colocd_privileged){
	"colocd-daemonset.yaml",
	"runAsUser: 0",
	"runAsUser: 0\n            privileged: true",
	"colocd: privileged",
};
FIXTURE_VARIANT_ADD(deploy_manifests, colocd_without_host_pids){
	"colocd-daemonset.yaml",
	"hostPID: true",
	"hostPID: false",
	"colocd: hostPID is not true",
};
FIXTURE_VARIANT_ADD(deploy_manifests, colocd_seccomp_missing){
	"colocd-daemonset.yaml",
	"coloc/colocd.json",
	"coloc/colocd-v2.json",
	"colocd: seccomp profile colocd-v2.json is not in seccomp/",
};
FIXTURE_VARIANT_ADD(deploy_manifests, not_guaranteed){
	"gateway-deployment.yaml",
	"memory: 1Gi",
	"memory: 512Mi",
	"container coloc-gateway: memory requests != limits (not Guaranteed QoS)",
};
FIXTURE_VARIANT_ADD(deploy_manifests, fractional_cpu){
	"colocd-daemonset.yaml",
	"cpu: \"4\"\n              memory: 16Gi\n          volumeMounts",
	"cpu: 3500m\n              memory: 16Gi\n          volumeMounts",
	"container colocd: cpu requests != limits",
};
FIXTURE_VARIANT_ADD(deploy_manifests, typo_in_a_key){
	"gateway-deployment.yaml",
	"volumeMounts:",
	"volumeMount:",
	"container coloc-gateway: unknown key volumeMount",
};
FIXTURE_VARIANT_ADD(deploy_manifests, mount_of_no_volume){
	"colocd-daemonset.yaml",
	"- name: profiles\n              mountPath",
	"- name: profile\n              mountPath",
	"container colocd: mounts volume profile that is not declared",
};
FIXTURE_VARIANT_ADD(deploy_manifests, unknown_kind){
	"namespace.yaml",
	"kind: Namespace",
	"kind: Namespaces",
	"unknown apiVersion/kind v1/Namespaces",
};
FIXTURE_VARIANT_ADD(deploy_manifests, wrong_api_version){
	"colocd-daemonset.yaml",
	"apiVersion: apps/v1",
	"apiVersion: extensions/v1beta1",
	"unknown apiVersion/kind extensions/v1beta1/DaemonSet",
};
FIXTURE_VARIANT_ADD(deploy_manifests, not_yaml){
	"models-pvc.yaml",
	"accessModes: [\"ReadOnlyMany\"]",
	"accessModes: [\"ReadOnlyMany\"",
	"models-pvc.yaml: not YAML",
};
FIXTURE_VARIANT_ADD(deploy_manifests, required_field_missing){
	"kserve-inferenceservice.yaml",
	"storageUri:",
	"storageURI:",
	"InferenceService lacks spec.predictor.model.storageUri",
};
FIXTURE_VARIANT_ADD(deploy_manifests, runtime_without_v2){
	"kserve-servingruntime.yaml",
	"    - v2\n",
	"    - v1\n",
	"ServingRuntime does not declare protocolVersions v2",
};
FIXTURE_VARIANT_ADD(deploy_manifests, service_runtime_unknown){
	"kserve-inferenceservice.yaml",
	"runtime: kserve-coloc",
	"runtime: kserve-tritonserver",
	"InferenceService names a ServingRuntime that is not here",
};
FIXTURE_VARIANT_ADD(deploy_manifests, images_disagree){
	"gateway-deployment.yaml",
	"image: localhost/coloc:",
	"image: localhost/coloc-old:",
	"is not colocd's localhost/coloc:",
};
FIXTURE_VARIANT_ADD(deploy_manifests, selector_mismatch){
	"gateway-deployment.yaml",
	"matchLabels:\n      app.kubernetes.io/name: coloc-gateway",
	"matchLabels:\n      app.kubernetes.io/name: gateway",
	"spec.selector does not match the pod template's labels",
};
FIXTURE_VARIANT_ADD(deploy_manifests, colocd_gets_ptrace){
	"colocd-daemonset.yaml",
	"                - SETPCAP\n",
	"                - SETPCAP\n                - SYS_PTRACE\n",
	"colocd: capability SYS_PTRACE is not one colocd uses",
};
FIXTURE_VARIANT_ADD(deploy_manifests, seccomp_allows_process_vm_writev){
	"seccomp/colocd.json",
	"\"pwrite64\",",
	"\"pwrite64\", \"process_vm_writev\",",
	"allows process_vm_writev, which colocd never makes",
};
FIXTURE_VARIANT_ADD(deploy_manifests, runtime_no_conns_per_ip_bound){
	"kserve-servingruntime.yaml",
	"--http-max-conns-per-ip=1024",
	"--http-max-conns-per-ip=0",
	"gateway: --http-max-conns-per-ip=0 (no bound per address)",
};
FIXTURE_VARIANT_ADD(deploy_manifests, gateway_budgets_over_its_memory){
	"gateway-deployment.yaml",
	"--grpc-max-buffer-bytes=268435456",
	"--grpc-max-buffer-bytes=1073741824",
	"are over its memory limit (1024 MiB)",
};
FIXTURE_VARIANT_ADD(deploy_manifests, inferenceservice_mounts_a_token){
	"kserve-inferenceservice.yaml",
	"automountServiceAccountToken: false",
	"automountServiceAccountToken: true",
	"automountServiceAccountToken is not false",
};

FIXTURE_VARIANT_ADD(deploy_manifests, metrics_open_to_every_pod){
	"gateway-networkpolicy.yaml",
	"        - port: 8001\n",
	"        - port: 8001\n        - port: 8002\n",
	"NetworkPolicy lets any pod reach the gateway's metrics port 8002",
};
FIXTURE_VARIANT_ADD(deploy_manifests, metrics_open_to_every_namespace){
	"gateway-networkpolicy.yaml",
	"        - namespaceSelector:\n            matchLabels:\n              coloc.dev/metrics-scraper: \"true\"\n",
	"        - namespaceSelector: {}\n",
	"metrics port 8002 to an empty namespaceSelector",
};
FIXTURE_VARIANT_ADD(deploy_manifests, metrics_open_to_an_ip_block){
	"gateway-networkpolicy.yaml",
	"        - namespaceSelector:\n            matchLabels:\n              coloc.dev/metrics-scraper: \"true\"\n",
	"        - ipBlock:\n            cidr: 0.0.0.0/0\n",
	"metrics port 8002 to an ipBlock",
};
FIXTURE_VARIANT_ADD(deploy_manifests, policy_selects_pods_by_expressions){
	"gateway-networkpolicy.yaml",
	"  podSelector:\n    matchLabels:\n      app.kubernetes.io/name: coloc-gateway\n",
	"  podSelector:\n    matchExpressions:\n      - {key: app.kubernetes.io/name, operator: Exists}\n",
	"podSelector uses matchExpressions",
};
FIXTURE_VARIANT_ADD(deploy_manifests, gateway_pods_under_no_policy){
	"gateway-networkpolicy.yaml",
	"app.kubernetes.io/name: coloc-gateway",
	"app.kubernetes.io/name: another-gateway",
	"no NetworkPolicy selects the gateway's pods",
};
FIXTURE_VARIANT_ADD(deploy_manifests, predictor_pods_under_no_policy){
	"gateway-networkpolicy.yaml",
	"serving.kserve.io/inferenceservice: mobilenet-v2",
	"serving.kserve.io/inferenceservice: resnet-50",
	"no NetworkPolicy selects the gateway's pods",
};
FIXTURE_VARIANT_ADD(deploy_manifests, policy_shuts_inference){
	"gateway-networkpolicy.yaml",
	"- port: 8000",
	"- port: 9000",
	"shut the gateway's http port 8000",
};

FIXTURE_SETUP(deploy_manifests)
{
	strcpy(self->dir, "/tmp/coloc-deploy.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->cmd, sizeof(self->cmd), "cp -R '%s/deploy/kubernetes/.' '%s/'",
		 deploy_root(), self->dir);
	ASSERT_EQ(0, tu_run(self->cmd, self->out, sizeof(self->out))) TH_LOG("%s", self->out);
	if (tu_run("/usr/bin/python3 -c 'import yaml'", self->out, sizeof(self->out)))
		SKIP(return, "Debian's python3-yaml is not installed (make deps)");
	snprintf(self->cmd, sizeof(self->cmd), CHECKER, deploy_root(), self->dir);
}

FIXTURE_TEARDOWN(deploy_manifests)
{
	if (tu_remove_tree(self->dir))
		TH_LOG("cannot remove %s", self->dir);
}

TEST(deploy_manifests__check__shipped_manifests_pass)
{
	char cmd[1024], out[8192];

	if (tu_run("/usr/bin/python3 -c 'import yaml'", out, sizeof(out)))
		SKIP(return, "Debian's python3-yaml is not installed (make deps)");
	snprintf(cmd, sizeof(cmd), "cd '%s' && " CHECKER, deploy_root(), ".", "deploy/kubernetes");
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "9 objects in deploy/kubernetes: every rule holds"))
	TH_LOG("%s", out);
}

TEST_F(deploy_manifests, check__refuses_the_broken_rule)
{
	ASSERT_EQ(0, deploy_edit(self->dir, variant->file, variant->from, variant->to))
	TH_LOG("%s no longer holds \"%s\": update the test", variant->file, variant->from);
	ASSERT_EQ(1, tu_run(self->cmd, self->out, sizeof(self->out))) TH_LOG("%s", self->out);
	ASSERT_NE(NULL, strstr(self->out, variant->rule))
	TH_LOG("expected \"%s\" in:\n%s", variant->rule, self->out);
}

TEST_HARNESS_MAIN
