// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The control socket itself (server.h): opened at its path (server_open),
 * listened on (server_listen, born 0660, given to the coloc group), its
 * connections swept of those that stalled, closed (server_close). Start-up
 * guards the path: the socket's directory must be root's and writable by
 * no other user (unless sticky), the lock file is opened relative to that
 * directory and never through a link, and a stale socket is removed only
 * after a probe that never blocks shows nobody (or a colocd being torn
 * down) listens on it. The connections are server.c's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include "server_internal.h"

/* How long start-up waits on a socket whose listener has a full backlog. */
#define SERVER_PROBE_MS 500

/*
 * The socket's directory must not let another user plant or swap files in
 * it: root's, and writable by group or others only where the group is
 * root's or the directory is sticky (then no one else can rename or remove
 * our files, and the files themselves are checked when opened).
 */
int server_check_dir(struct server *s, struct coloc_err *err)
{
	struct stat st;

	s->dir_fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dir_fd < 0)
		return coloc_err_set(err, -errno, "cannot open the socket's directory %s: %s",
				     s->dir, strerror(errno));
	if (fstat(s->dir_fd, &st))
		return coloc_err_set(err, -errno, "cannot stat %s: %s", s->dir, strerror(errno));
	if (st.st_uid != 0)
		return coloc_err_set(
			err, -EPERM,
			"the socket's directory %s belongs to uid %u, not root: another "
			"user could replace the socket; use a directory of root's",
			s->dir, (unsigned int)st.st_uid);
	if (!(st.st_mode & S_ISVTX) &&
	    ((st.st_mode & S_IWOTH) || ((st.st_mode & S_IWGRP) && st.st_gid != 0)))
		return coloc_err_set(err, -EPERM,
				     "the socket's directory %s is writable by other users (mode "
				     "%04o): they could plant links; use a directory only root "
				     "can write, e.g. /run/coloc",
				     s->dir, (unsigned int)(st.st_mode & 07777));
	return 0;
}

/*
 * The lock file is removed at exit, so a daemon that locked a file someone
 * unlinked meanwhile holds nothing: it checks the name still names its file
 * and otherwise tries again. Opened relative to the checked directory, never
 * through a link, and only a file of root's with no other names is used.
 */
int server_take_lock(struct server *s, struct coloc_err *err)
{
	for (int tries = 0; tries < 10; tries++) {
		struct stat held, named;

		s->lock_fd = openat(s->dir_fd, s->lock_name,
				    O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
		if (s->lock_fd < 0)
			return coloc_err_set(err, -errno, "cannot open lock %s/%s: %s%s", s->dir,
					     s->lock_name, strerror(errno),
					     errno == ELOOP ? " (a symbolic link; remove it)" : "");
		if (fstat(s->lock_fd, &held) || !S_ISREG(held.st_mode) || held.st_uid != 0 ||
		    held.st_nlink != 1) {
			close(s->lock_fd);
			s->lock_fd = -1;
			return coloc_err_set(err, -EPERM,
					     "lock %s/%s is not a plain file of root's with one "
					     "name; remove it",
					     s->dir, s->lock_name);
		}
		if (flock(s->lock_fd, LOCK_EX | LOCK_NB)) {
			close(s->lock_fd);
			s->lock_fd = -1;
			return coloc_err_set(err, -EADDRINUSE,
					     "socket %s is in use: another colocd holds %s/%s",
					     s->socket_path, s->dir, s->lock_name);
		}
		if (!fstatat(s->dir_fd, s->lock_name, &named, AT_SYMLINK_NOFOLLOW) &&
		    held.st_ino == named.st_ino && held.st_dev == named.st_dev)
			return 0;
		close(s->lock_fd);
		s->lock_fd = -1;
	}
	return coloc_err_set(err, -EBUSY, "lock %s/%s keeps changing; is another colocd starting?",
			     s->dir, s->lock_name);
}

/* The process that listens on a socket path (SO_PEERCRED of a connection to it). */
static pid_t server_listener_of(int fd, char *comm, size_t len)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	char path[64];
	FILE *f;

	comm[0] = '\0';
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) || cred.pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/comm", cred.pid);
	f = fopen(path, "r");
	if (!f)
		return 0; /* gone */
	if (!fgets(comm, (int)len, f))
		comm[0] = '\0';
	fclose(f);
	comm[strcspn(comm, "\n")] = '\0';
	return cred.pid;
}

/*
 * Connects without blocking: a Unix socket whose listener's backlog is full
 * answers EAGAIN at once, so this retries for SERVER_PROBE_MS. 0 when
 * connected, else -errno (-ECONNREFUSED: nobody listens).
 */
static int server_probe_connect(int fd, const struct sockaddr_un *addr)
{
	for (int waited = 0;; waited += 10) {
		if (!connect(fd, (const struct sockaddr *)addr, sizeof(*addr)))
			return 0;
		if (errno != EAGAIN || waited >= SERVER_PROBE_MS)
			return -errno;
		usleep(10000);
	}
}

/*
 * The lock is ours, so no live colocd serves the path; but another program
 * might. A socket nobody accepts on is stale and removed, and so is one that
 * a colocd still being torn down answers for: only another program's live
 * socket is refused, and so is a listener that never accepts.
 */
int server_remove_stale_socket(struct server *s, struct coloc_err *err)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char comm[32];
	struct stat st;
	pid_t listener = 0;
	int fd, ret;

	if (fstatat(s->dir_fd, s->sock_name, &st, AT_SYMLINK_NOFOLLOW))
		return 0;
	if (!S_ISSOCK(st.st_mode))
		return coloc_err_set(err, -EEXIST,
				     "%s exists and is not a socket; refusing to remove it",
				     s->socket_path);
	memcpy(addr.sun_path, s->socket_path, strlen(s->socket_path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return coloc_err_set(err, -errno, "cannot create a socket: %s", strerror(errno));
	ret = server_probe_connect(fd, &addr);
	if (!ret)
		listener = server_listener_of(fd, comm, sizeof(comm));
	close(fd);
	if (ret == -EAGAIN)
		return coloc_err_set(
			err, -EADDRINUSE,
			"socket %s has a listener that does not accept connections "
			"(its backlog is full); stop that program or remove the socket",
			s->socket_path);
	if (listener > 0 && strcmp(comm, "colocd"))
		return coloc_err_set(err, -EADDRINUSE,
				     "socket %s is in use by another process (pid %d, %s)",
				     s->socket_path, listener, comm);
	unlinkat(s->dir_fd, s->sock_name, 0);
	return 0;
}

int server_mkdir_parent(const char *dir, struct coloc_err *err)
{
	if (mkdir(dir, 0755) && errno != EEXIST)
		return coloc_err_set(err, -errno, "cannot create %s: %s", dir, strerror(errno));
	return 0;
}

/* Splits the socket path into its directory and its name. */
int server_split_path(struct server *s, const char *path, struct coloc_err *err)
{
	const char *slash = strrchr(path, '/');

	if (!path[0] || strlen(path) >= sizeof(s->socket_path))
		return coloc_err_set(err, -ENAMETOOLONG, "socket path must be 1-%zu characters",
				     sizeof(s->socket_path) - 1);
	snprintf(s->socket_path, sizeof(s->socket_path), "%s", path);
	if (!slash) {
		snprintf(s->dir, sizeof(s->dir), ".");
		snprintf(s->sock_name, sizeof(s->sock_name), "%s", path);
	} else {
		snprintf(s->dir, sizeof(s->dir), "%.*s", slash == path ? 1 : (int)(slash - path),
			 path);
		snprintf(s->sock_name, sizeof(s->sock_name), "%s", slash + 1);
	}
	if (!s->sock_name[0])
		return coloc_err_set(err, -EINVAL, "socket path %s names a directory", path);
	snprintf(s->lock_name, sizeof(s->lock_name), "%s.lock", s->sock_name);
	return 0;
}

static void server_on_sweep(struct loop_source *src, __u64 now_ns, void *ctx)
{
	struct server *s = ctx;
	__u64 limit = (__u64)s->cfg.timeout_ms * 1000000ull;

	(void)src;
	for (int i = 0; i < SERVER_MAX_CONNS; i++) {
		struct server_conn *c = s->conns[i];

		/* a connection owed answers waits on colocd, not on its client */
		if (c && !c->pending && c->last_progress_ns + limit < now_ns)
			server_conn_close(c);
	}
}

int server_open(struct server **out, struct loop *loop, const struct server_config *cfg,
		struct coloc_err *err)
{
	struct group *grp;
	struct server *s;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	s->loop = loop;
	s->cfg = *cfg;
	s->listen_fd = s->lock_fd = s->dir_fd = -1;
	ret = server_split_path(s, cfg->socket_path, err);
	if (!ret)
		ret = server_mkdir_parent(s->dir, err);
	if (!ret)
		ret = server_check_dir(s, err);
	if (!ret)
		ret = server_take_lock(s, err);
	if (!ret)
		ret = server_remove_stale_socket(s, err);
	if (ret)
		goto fail;
	/* once, here: a slow NSS lookup must never stall the loop */
	grp = getgrnam(COLOC_GROUP);
	if (grp) {
		s->coloc_gid = grp->gr_gid;
		s->have_coloc_gid = true;
	}
	s->pidns_depth = server_pidns_depth(getpid());
	*out = s;
	return 0;
fail:
	server_close(s);
	return ret;
}

int server_listen(struct server *s, server_request_fn handle, void *ctx, struct coloc_err *err)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	__u64 sweep_ns;
	mode_t old_mask;
	int ret;

	s->handle = handle;
	s->handle_ctx = ctx;
	s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->listen_fd < 0)
		return coloc_err_set(err, -errno, "cannot create a socket: %s", strerror(errno));
	/* the tests' way onto the path of kernels before 6.16: root's environment only */
	s->rights_test_off = secure_getenv("COLOCD_TEST_NO_PASSRIGHTS") != NULL;
	s->rights_once_admitted = !s->rights_test_off &&
				  server_listener_refuses_rights(s->listen_fd);
	memcpy(addr.sun_path, s->socket_path, strlen(s->socket_path));
	/* born 0660: never a moment when others could connect */
	old_mask = umask(0117);
	ret = bind(s->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) ? -errno : 0;
	umask(old_mask);
	if (ret || listen(s->listen_fd, SERVER_MAX_CONNS)) {
		ret = ret ? ret : -errno;
		close(s->listen_fd);
		s->listen_fd = -1;
		return coloc_err_set(err, ret, "cannot listen on %s: %s", s->socket_path,
				     strerror(-ret));
	}
	/* the group exists so that its members can connect: a socket they cannot use is an error */
	if (s->have_coloc_gid &&
	    fchownat(s->dir_fd, s->sock_name, 0, s->coloc_gid, AT_SYMLINK_NOFOLLOW))
		return coloc_err_set(err, -errno, "cannot give %s to group %s: %s", s->socket_path,
				     COLOC_GROUP, strerror(errno));
	/* a quarter of the timeout late at most, and at least once a second */
	sweep_ns = (__u64)s->cfg.timeout_ms * 250000ull;
	if (sweep_ns > 1000000000ull)
		sweep_ns = 1000000000ull;
	ret = loop_add_poll(s->loop, &s->listen_src, s->listen_fd, POLLIN, server_on_listen, s);
	if (!ret)
		ret = loop_add_timer(s->loop, &s->sweep_src, sweep_ns, sweep_ns, server_on_sweep,
				     s);
	if (ret)
		return coloc_err_set(err, ret, "cannot serve %s: %s", s->socket_path,
				     strerror(-ret));
	return 0;
}

void server_stop_listening(struct server *s)
{
	if (!s || s->listen_fd < 0)
		return;
	loop_source_remove(s->listen_src);
	loop_source_remove(s->resume_src);
	s->listen_src = s->resume_src = NULL;
	close(s->listen_fd);
	s->listen_fd = -1;
	unlinkat(s->dir_fd, s->sock_name, 0);
}

void server_close(struct server *s)
{
	if (!s)
		return;
	for (int i = 0; i < SERVER_MAX_CONNS; i++)
		if (s->conns[i])
			server_conn_close(s->conns[i]);
	loop_source_remove(s->listen_src);
	loop_source_remove(s->sweep_src);
	loop_source_remove(s->resume_src);
	loop_source_remove(s->recheck_src);
	if (s->listen_fd >= 0) {
		close(s->listen_fd);
		unlinkat(s->dir_fd, s->sock_name, 0);
	}
	/* unlinked while held: a daemon that locks the old file sees it is gone */
	if (s->lock_fd >= 0) {
		unlinkat(s->dir_fd, s->lock_name, 0);
		close(s->lock_fd);
	}
	if (s->dir_fd >= 0)
		close(s->dir_fd);
	free(s);
}
