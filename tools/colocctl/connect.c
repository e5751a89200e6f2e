// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocctl's link to colocd: connecting (and telling the operator what to do
 * when that fails), one request and its "ok", and ctl_run(), which sends a
 * request once or, with --watch, every interval until interrupted.
 */
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "ctl.h"

volatile sig_atomic_t ctl_interrupted;

/* Whether the calling process has gid among its groups (real, effective or supplementary). */
static bool ctl_in_group(gid_t gid)
{
	int n = getgroups(0, NULL);
	bool found = getgid() == gid || getegid() == gid;
	gid_t *groups;

	if (found || n <= 0)
		return found;
	groups = calloc((size_t)n, sizeof(*groups));
	if (!groups)
		return false;
	n = getgroups(n, groups);
	for (int i = 0; i < n && !found; i++)
		found = groups[i] == gid;
	free(groups);
	return found;
}

/* Turns a failed connect() into what the operator should do about it. */
static void ctl_explain_connect_error(int err)
{
	const char *path = ctl_opts.socket_path;
	struct group *grp;
	struct stat st;

	switch (err) {
	case ENOENT:
	case ECONNREFUSED:
		if (strcmp(path, COLOC_DEFAULT_SOCKET))
			fprintf(stderr,
				"colocctl: colocd is not running (%s %s); start it as root with "
				"'colocd --socket %s &'\n",
				err == ENOENT ? "no socket at" : "nothing listens on", path, path);
		else
			fprintf(stderr,
				"colocctl: colocd is not running (%s %s); start it as root with "
				"'systemctl start colocd' where it is installed, or 'colocd &'\n",
				err == ENOENT ? "no socket at" : "nothing listens on", path);
		return;
	case EACCES:
	case EPERM:
		grp = getgrnam(COLOC_GROUP);
		if (stat(path, &st))
			fprintf(stderr,
				"colocctl: permission denied on %s: a directory above it is closed "
				"to you (%s)\n",
				path, strerror(errno));
		else if (!grp)
			fprintf(stderr,
				"colocctl: permission denied on %s: only root may connect, because "
				"group '%s' does not exist; create it ('make deps' or "
				"'groupadd --system %s' as root) and restart colocd\n",
				path, COLOC_GROUP, COLOC_GROUP);
		else if (ctl_in_group(grp->gr_gid) && st.st_gid != grp->gr_gid)
			fprintf(stderr,
				"colocctl: permission denied on %s although you are in group '%s': "
				"the socket is not the group's, colocd was started before the "
				"group existed; restart it\n",
				path, COLOC_GROUP);
		else
			fprintf(stderr,
				"colocctl: permission denied on %s: colocd admits root and members of "
				"group '%s'; run as root, or join the group with "
				"'usermod -aG %s $USER' (as root) and log in again\n",
				path, COLOC_GROUP, COLOC_GROUP);
		return;
	default:
		fprintf(stderr, "colocctl: cannot reach colocd at %s: %s\n", path, strerror(err));
	}
}

struct coloc_client *ctl_connect(void)
{
	struct coloc_client *c;
	struct stat st;
	int ret;

	if (!stat(ctl_opts.socket_path, &st) && !S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "colocctl: %s is not a socket (colocd's is %s by default)\n",
			ctl_opts.socket_path, COLOC_DEFAULT_SOCKET);
		return NULL;
	}
	ret = coloc_client_connect(ctl_opts.socket_path, &c);
	if (ret == -ENAMETOOLONG)
		fprintf(stderr, "colocctl: socket path too long: %s\n", ctl_opts.socket_path);
	else if (ret)
		ctl_explain_connect_error(-ret);
	return ret ? NULL : c;
}

/* Sends one request and returns the parsed response, or NULL with a message. */
struct json_object *ctl_request(struct coloc_client *c, struct json_object *req)
{
	struct json_object *resp = coloc_client_call(c, req);

	if (!resp)
		fprintf(stderr, "colocctl: %s\n", coloc_client_error(c));
	return resp;
}

bool ctl_ok(struct json_object *resp)
{
	struct json_object *ok, *err;

	if (json_object_object_get_ex(resp, "ok", &ok) && json_object_get_boolean(ok))
		return true;
	fprintf(stderr, "colocctl: colocd: %s\n",
		json_object_object_get_ex(resp, "error", &err) ? json_object_get_string(err) :
								 "request failed");
	return false;
}

struct json_object *ctl_cmd(const char *cmd)
{
	struct json_object *req = json_object_new_object();

	json_object_object_add(req, "cmd", json_object_new_string(cmd));
	return req;
}

void ctl_on_interrupt(int sig)
{
	(void)sig;
	ctl_interrupted = 1;
}

int ctl_run(struct json_object *req, void (*print)(struct json_object *))
{
	unsigned int rounds = 0;
	struct coloc_client *fd = ctl_connect();
	int rc = 0;

	if (!fd) {
		json_object_put(req);
		return 1;
	}
	signal(SIGINT, ctl_on_interrupt);
	do {
		struct json_object *resp = ctl_request(fd, req);

		if (!resp || !ctl_ok(resp)) {
			json_object_put(resp);
			rc = 1;
			break;
		}
		if (ctl_opts.watch && !ctl_opts.json && isatty(STDOUT_FILENO))
			printf("\033[H\033[2J");
		if (ctl_opts.json || !print)
			printf("%s\n",
			       json_object_to_json_string_ext(resp, JSON_C_TO_STRING_PLAIN));
		else
			print(resp);
		fflush(stdout);
		json_object_put(resp);
		if (!ctl_opts.watch || (ctl_opts.count && ++rounds >= ctl_opts.count))
			break;
		if (!ctl_opts.json && !isatty(STDOUT_FILENO))
			printf("\n");
		struct timespec ts = { ctl_opts.interval_ms / 1000,
				       (ctl_opts.interval_ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	} while (!ctl_interrupted);
	coloc_client_close(fd);
	json_object_put(req);
	return rc;
}
