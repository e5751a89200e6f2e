/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the gateway's end-to-end tests share (gateway_test.c,
 * gateway_grpc_test.c): a real colocd serving models/mobilenet_v2.model
 * from a model repository made for the test, and coloc-gateway started as
 * the unprivileged `coloc` user in front of it (HTTP and metrics, and gRPC
 * when asked), ready when /v2/health/ready answers 200. Include it after
 * kselftest_harness.h.
 */
#ifndef COLOC_TESTS_GATEWAY_FIXTURE_H
#define COLOC_TESTS_GATEWAY_FIXTURE_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "testutil.h"

#define GW_READY_S 240

/* colocd and the gateway in a directory of their own. */
struct gw_env {
	char dir[64], sock[128], pin[128], log[128], gwlog[128], repo[128];
	char model[PATH_MAX]; /* models/mobilenet_v2.model, absolute */
	int http_port, grpc_port, metrics_port; /* grpc_port 0: no gRPC */
	pid_t colocd, gateway;
	int nofile; /* not 0: the gateway started under `ulimit -n nofile` (soft and hard) */
	const char *http_host; /* the gateway's HTTP address (IPv6 in []); NULL: 127.0.0.1 */
};

/*
 * Makes /tmp/coloc-TAG-XXXXXX with a repository serving mobilenet_v2 at
 * qos_ms, its profile in cache_dir, and starts colocd on it. 0; 1 when the
 * machine cannot (not root, no model: why says so); -1 on failure (why).
 */
static inline int gw_env_start_colocd(struct gw_env *e, const char *tag, const char *cache_dir,
				      int qos_ms, char *why, size_t len)
{
	const char *root = getenv("COLOC_ROOT") ? getenv("COLOC_ROOT") : ".";
	const char *extra[] = { "--cache-dir", cache_dir, NULL };
	char out[4096], path[PATH_MAX + 64], cmd[PATH_MAX * 3];

	*e = (struct gw_env){ 0 };
	if (geteuid() != 0)
		return snprintf(why, len, "needs root to run colocd"), 1;
	snprintf(path, sizeof(path), "%s/models/mobilenet_v2.model", root);
	if (!realpath(path, e->model))
		return snprintf(why, len, "%.900s not found (set COLOC_ROOT to the repo root)",
				path),
		       1;
	if (!cache_dir[0] || tu_mount_bpffs())
		return snprintf(why, len, "no cache directory or no bpffs"), -1;
	if (tu_quick_profile(e->model, cache_dir, out, sizeof(out)))
		return snprintf(why, len, "coloc-profile: %.3000s", out), -1;
	snprintf(e->dir, sizeof(e->dir), "/tmp/coloc-%s-XXXXXX", tag);
	/* the gateway runs as coloc: it must reach the socket and read the repository */
	if (!mkdtemp(e->dir) || chmod(e->dir, 0755)) {
		e->dir[0] = '\0';
		return snprintf(why, len, "cannot make a directory in /tmp"), -1;
	}
	snprintf(e->sock, sizeof(e->sock), "%s/colocd.sock", e->dir);
	snprintf(e->log, sizeof(e->log), "%s/colocd.log", e->dir);
	snprintf(e->gwlog, sizeof(e->gwlog), "%s/gateway.log", e->dir);
	snprintf(e->repo, sizeof(e->repo), "%s/repo", e->dir);
	snprintf(e->pin, sizeof(e->pin), "/sys/fs/bpf/coloc-%s-test-%d", tag, getpid());
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s/mobilenet_v2/1' && cp '%s' '%s/mobilenet_v2/1/model.model' && "
		 "echo '{\"qos_ms\": %d}' > '%s/mobilenet_v2/config.json' && chmod -R a+rX '%s'",
		 e->repo, e->model, e->repo, qos_ms, e->repo, e->repo);
	if (tu_run(cmd, out, sizeof(out)))
		return snprintf(why, len, "the repository: %.3000s", out), -1;
	e->colocd = tu_start_colocd_with(e->sock, e->pin, e->log, extra);
	if (e->colocd <= 0)
		return snprintf(why, len, "colocd did not start"), -1;
	return 0;
}

/*
 * Starts the gateway as the coloc user on free ports (gRPC too when grpc),
 * with these extra flags (NULL-terminated, or NULL); waits until
 * /v2/health/ready answers 200, or the gateway exits.
 */
static inline bool gw_env_start_gateway_once(struct gw_env *e, bool grpc,
					     const char *const *extra)
{
	const char *host = e->http_host ? e->http_host : "127.0.0.1";
	char bin[PATH_MAX], http_addr[64], grpc_addr[64], metrics_addr[64], cmd[256], out[64];
	const char *argv[32] = { "/usr/bin/setpriv",
				 "--reuid=coloc",
				 "--regid=coloc",
				 "--init-groups",
				 "--",
				 bin,
				 "--socket",
				 e->sock,
				 "--model-repository",
				 e->repo,
				 "--http",
				 http_addr,
				 "--metrics",
				 metrics_addr };
	int n = 14;

	tu_bin("coloc-gateway", bin, sizeof(bin));
	e->http_port = tu_free_port();
	e->metrics_port = tu_free_port();
	snprintf(http_addr, sizeof(http_addr), "%s:%d", host, e->http_port);
	snprintf(metrics_addr, sizeof(metrics_addr), "127.0.0.1:%d", e->metrics_port);
	e->grpc_port = 0;
	if (grpc) {
		e->grpc_port = tu_free_port();
		snprintf(grpc_addr, sizeof(grpc_addr), "127.0.0.1:%d", e->grpc_port);
		argv[n++] = "--grpc";
		argv[n++] = grpc_addr;
	}
	for (int i = 0; extra && extra[i] && n < 31; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	if (e->nofile) {
		static char ulimit[64];
		const char *sh[36] = { "/bin/sh", "-c", ulimit, "sh" };

		snprintf(ulimit, sizeof(ulimit), "ulimit -n %d && exec \"$@\"", e->nofile);
		for (int i = 0; i <= n; i++)
			sh[4 + i] = argv[i];
		e->gateway = tu_spawn_logged(sh, e->gwlog);
	} else {
		e->gateway = tu_spawn_logged(argv, e->gwlog);
	}
	if (e->gateway <= 0)
		return false;
	snprintf(cmd, sizeof(cmd),
		 "curl -gs -o /dev/null -w '%%{http_code}' http://%s:%d/v2/health/ready", host,
		 e->http_port);
	for (int i = 0; i < GW_READY_S * 20; i++) {
		if (tu_run(cmd, out, sizeof(out)) == 0 && atoi(out) == 200)
			return true;
		if (waitpid(e->gateway, NULL, WNOHANG) == e->gateway) {
			e->gateway = 0;
			return false;
		}
		usleep(50000);
	}
	return false;
}

/*
 * gw_env_start_gateway_once, again on other ports if the gateway exited
 * before it was ready: a port free when drawn can be taken by another
 * process before the gateway binds it.
 */
static inline bool gw_env_start_gateway(struct gw_env *e, bool grpc, const char *const *extra)
{
	for (int attempt = 0; attempt < 3; attempt++) {
		if (gw_env_start_gateway_once(e, grpc, extra))
			return true;
		if (e->gateway > 0)
			return false; /* running, not ready in time: another port would not help */
	}
	return false;
}

/* The gateway's log on stderr, for a test that failed to start it. */
static inline void gw_env_log_gateway(const struct gw_env *e)
{
	size_t len = 0;
	char *log = tu_read_file(e->gwlog, &len);

	fprintf(stderr, "# gateway log: %.3000s\n", log ? log : "(none)");
	free(log);
}

/* Stops the gateway and colocd and removes the directory; 0, or -1 if it stays. */
static inline int gw_env_stop(struct gw_env *e)
{
	tu_stop_child(&e->gateway);
	if (e->colocd > 0)
		tu_stop_colocd(e->colocd);
	e->colocd = 0;
	if (!e->dir[0])
		return 0;
	return tu_remove_tree(e->dir) ? -1 : 0;
}

#endif /* COLOC_TESTS_GATEWAY_FIXTURE_H */
