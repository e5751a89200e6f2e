/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the colocd_*_test.c files share: the fixture colocd (the real
 * binary started on a socket and a pin directory of its own, a spinner and
 * a cgroup a test may make, all removed at teardown), one request answered
 * as JSON, and a ping on a connection of one's own. Include it after
 * kselftest_harness.h.
 */
#ifndef COLOC_TESTS_COLOCD_FIXTURE_H
#define COLOC_TESTS_COLOCD_FIXTURE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <json-c/json.h>
#include "mono_clock.h"
#include "testutil.h"

FIXTURE(colocd)
{
	char dir[64];
	char sock[128];
	char pin[128];
	char log[128];
	pid_t pid;
	struct tu_spinner spin;
	char cgroup[512]; /* made by a test, removed by teardown */
	int cgroup_levels; /* levels "d/d/..." a test made below it */
};

FIXTURE_SETUP(colocd)
{
	snprintf(self->dir, sizeof(self->dir), "/tmp/coloc-test-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->sock, sizeof(self->sock), "%s/colocd.sock", self->dir);
	snprintf(self->log, sizeof(self->log), "%s/colocd.log", self->dir);
	snprintf(self->pin, sizeof(self->pin), "/sys/fs/bpf/coloc-test-%d", getpid());
	self->spin.pid = 0;
	self->spin.go_fd = -1;
	self->cgroup[0] = '\0';
	self->cgroup_levels = 0;
	self->pid = tu_start_colocd(self->sock, self->pin, self->log);
	if (self->pid < 0) {
		char out[4096];
		snprintf(out, sizeof(out), "cat %s", self->log);
		tu_run(out, out, sizeof(out));
		TH_LOG("colocd did not start: %s", out);
	}
	ASSERT_GT(self->pid, 0);
}

FIXTURE_TEARDOWN(colocd)
{
	tu_kill(&self->spin);
	for (int level = self->cgroup_levels; level > 0; level--) {
		char path[1024];
		int n = snprintf(path, sizeof(path), "%s", self->cgroup);

		for (int i = 0; i < level; i++)
			n += snprintf(path + n, sizeof(path) - (size_t)n, "/d");
		rmdir(path);
	}
	if (self->cgroup[0])
		rmdir(self->cgroup);
	if (self->pid > 0)
		tu_stop_colocd(self->pid);
	tu_remove_tree(self->dir);
}

static inline struct json_object *request_json(const char *sock, const char *req)
{
	char resp[1 << 16];

	if (tu_request(sock, req, resp, sizeof(resp)) <= 0)
		return NULL;
	return json_tokener_parse(resp);
}

static inline bool resp_ok(struct json_object *resp)
{
	struct json_object *ok;

	return resp && json_object_object_get_ex(resp, "ok", &ok) && json_object_get_boolean(ok);
}

/* Whether colocd at sock attributes pid to a new tenant name (tenant-add answered ok). */
static inline bool tenant_add_ok(const char *sock, const char *name, pid_t pid)
{
	struct json_object *resp;
	char req[256];
	bool ok;

	snprintf(req, sizeof(req), "{\"cmd\":\"tenant-add\",\"name\":\"%s\",\"pids\":[%d]}\n", name,
		 (int)pid);
	resp = request_json(sock, req);
	ok = resp_ok(resp);
	json_object_put(resp);
	return ok;
}

/* Pings over fd; 1 when served, 0 when refused (the refusal in why), -1 on no answer. */
static inline int ping_on(int fd, char *why, size_t len)
{
	char line[1024];

	/* a refused peer may find the socket closed before it sends: read anyway */
	send(fd, "{\"cmd\":\"ping\"}\n", 15, MSG_NOSIGNAL);
	if (tu_read_line(fd, line, sizeof(line)) <= 0)
		return -1;
	if (why)
		snprintf(why, len, "%s", line);
	return strstr(line, "\"ok\":true") ? 1 : 0;
}

static inline void set_recv_timeout(int fd, int sec)
{
	struct timeval tv = { .tv_sec = sec };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/* Root's pings on a connection of its own, one every every_us, the slowest answer kept. */
struct root_pinger {
	int fd;
	unsigned int every_us;
	atomic_bool stop;
	uint64_t worst_ns;
	int pings, failed;
};

/* A thread's loop (pthread_create's), until stop. */
static inline void *root_pinger_run(void *arg)
{
	struct root_pinger *p = arg;

	while (!atomic_load(&p->stop)) {
		uint64_t t0 = coloc_now_ns(), took;

		if (ping_on(p->fd, NULL, 0) != 1)
			p->failed++;
		took = coloc_now_ns() - t0;
		if (took > p->worst_ns)
			p->worst_ns = took;
		p->pings++;
		usleep(p->every_us);
	}
	return NULL;
}

/*
 * The fixture's colocd started again with --subuid-file and --subgid-file,
 * files in its directory (open to members) holding subuid and subgid, and
 * the options in more (NULL-terminated, at most 4; NULL for none); the
 * files' paths in uid_file and gid_file (SUBID_PATH_LEN each). 0, or -1.
 */
#define SUBID_PATH_LEN 128
static inline int restart_with_subids_and(FIXTURE_DATA(colocd) * self, const char *subuid,
					  const char *subgid, char *uid_file, char *gid_file,
					  const char *const *more)
{
	const char *extra[9] = { "--subuid-file", uid_file, "--subgid-file", gid_file };

	for (int i = 0; more && more[i] && i < 4; i++)
		extra[4 + i] = more[i];
	snprintf(uid_file, SUBID_PATH_LEN, "%s/subuid", self->dir);
	snprintf(gid_file, SUBID_PATH_LEN, "%s/subgid", self->dir);
	if (tu_write_file(uid_file, subuid, strlen(subuid)) ||
	    tu_write_file(gid_file, subgid, strlen(subgid)) || chmod(self->dir, 0755) ||
	    tu_stop_colocd(self->pid))
		return -1;
	self->pid = tu_start_colocd_with(self->sock, self->pin, self->log, extra);
	return self->pid > 0 ? 0 : -1;
}

static inline int restart_with_subids(FIXTURE_DATA(colocd) * self, const char *subuid,
				      const char *subgid, char *uid_file, char *gid_file)
{
	return restart_with_subids_and(self, subuid, subgid, uid_file, gid_file, NULL);
}

#endif /* COLOC_TESTS_COLOCD_FIXTURE_H */
