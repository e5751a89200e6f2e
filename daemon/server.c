// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The event loop, on liburing. Every source is one outstanding io_uring
 * operation, re-armed when it completes:
 *   - POLL_ADD on the ring buffers' epoll fd -> sensor_consume()
 *   - POLL_ADD on a signalfd (SIGINT, SIGTERM) -> stop
 *   - ACCEPT on the control socket -> peer check with SO_PEERCRED
 *   - per connection, either one RECV or one SEND in flight, never both,
 *     so a completion can always free the connection safely
 *   - TIMEOUT of SERVER_DRAIN_MS -> sensor_consume(): the BPF side submits
 *     records without a wakeup (unless a backlog builds), so draining on
 *     a timer costs ten wakeups a second instead of one per record
 *   - TIMEOUT of one second -> colocd_tick()
 * A request is a line; a line over COLOC_MAX_REQUEST bytes is answered with
 * an error and the connection closed, everything else keeps it open.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <liburing.h>
#include "server.h"

#define SERVER_MAX_CONNS 64
#define SERVER_QUEUE_DEPTH 256
#define SERVER_IN_CAP (COLOC_MAX_REQUEST + 4096)
/*
 * How often the ring buffer is drained. Each wakeup of colocd preempts a
 * tenant, so not every window: at 10 ms the daemon's own wakeups cost the
 * workloads about 1% (make bench-sensing), at 100 ms they vanish in the
 * noise. The BPF side still wakes colocd early when a backlog builds.
 */
#define SERVER_DRAIN_MS 100u

enum server_event {
	EV_RINGBUF = 1,
	EV_SIGNAL,
	EV_ACCEPT,
	EV_RECV,
	EV_SEND,
	EV_TICK,
	EV_DRAIN,
};

struct server_conn {
	bool used;
	bool closing; /* close once the pending send completes */
	int fd;
	char *in;
	size_t in_len;
	char *out;
	size_t out_len, out_off;
};

struct server {
	struct io_uring ring;
	bool ring_ready;
	int listen_fd, sig_fd, lock_fd;
	char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char lock_path[sizeof(((struct sockaddr_un *)0)->sun_path) + 8];
	struct server_conn conns[SERVER_MAX_CONNS];
	struct __kernel_timespec tick, drain;
	bool stop;
	int stop_signal; /* the signal that stopped it, 0 while running */
};

static __u64 server_tag(enum server_event ev, int idx)
{
	return ((__u64)ev << 32) | (__u32)idx;
}

static __u64 server_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static struct io_uring_sqe *server_sqe(struct server *s)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);

	if (!sqe) {
		io_uring_submit(&s->ring);
		sqe = io_uring_get_sqe(&s->ring);
	}
	return sqe;
}

static void server_arm_poll(struct server *s, int fd, enum server_event ev)
{
	struct io_uring_sqe *sqe = server_sqe(s);

	io_uring_prep_poll_add(sqe, fd, POLLIN);
	io_uring_sqe_set_data64(sqe, server_tag(ev, 0));
}

static void server_arm_accept(struct server *s)
{
	struct io_uring_sqe *sqe = server_sqe(s);

	io_uring_prep_accept(sqe, s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data64(sqe, server_tag(EV_ACCEPT, 0));
}

static void server_arm_timer(struct server *s, enum server_event ev)
{
	struct io_uring_sqe *sqe = server_sqe(s);

	io_uring_prep_timeout(sqe, ev == EV_TICK ? &s->tick : &s->drain, 0, 0);
	io_uring_sqe_set_data64(sqe, server_tag(ev, 0));
}

static void server_arm_recv(struct server *s, int idx)
{
	struct server_conn *c = &s->conns[idx];
	struct io_uring_sqe *sqe = server_sqe(s);

	io_uring_prep_recv(sqe, c->fd, c->in + c->in_len, SERVER_IN_CAP - c->in_len, 0);
	io_uring_sqe_set_data64(sqe, server_tag(EV_RECV, idx));
}

static void server_arm_send(struct server *s, int idx)
{
	struct server_conn *c = &s->conns[idx];
	struct io_uring_sqe *sqe = server_sqe(s);

	io_uring_prep_send(sqe, c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
	io_uring_sqe_set_data64(sqe, server_tag(EV_SEND, idx));
}

static void server_conn_close(struct server_conn *c)
{
	close(c->fd);
	free(c->in);
	free(c->out);
	memset(c, 0, sizeof(*c));
}

static void server_start_send(struct server *s, int idx, char *resp)
{
	struct server_conn *c = &s->conns[idx];

	c->out = resp;
	c->out_len = strlen(resp);
	c->out_off = 0;
	server_arm_send(s, idx);
}

/*
 * Answers the first complete line in the buffer, if any: returns true when a
 * send is now in flight. Otherwise a recv must be armed (or, for an
 * oversized line, the error is on its way and the connection will close).
 */
static bool server_serve_line(struct server *s, struct colocd *d, int idx)
{
	struct server_conn *c = &s->conns[idx];
	char *nl = memchr(c->in, '\n', c->in_len);
	char *resp;
	size_t line_len;

	if (!nl) {
		if (c->in_len <= COLOC_MAX_REQUEST)
			return false;
		c->closing = true;
		resp = control_oversize_response();
	} else {
		line_len = (size_t)(nl - c->in);
		if (line_len > COLOC_MAX_REQUEST) {
			c->closing = true;
			resp = control_oversize_response();
		} else {
			/* tolerate CRLF from nc/socat */
			size_t n =
				line_len && c->in[line_len - 1] == '\r' ? line_len - 1 : line_len;

			resp = control_handle(d, c->in, n, server_now_ns());
		}
		c->in_len -= line_len + 1;
		memmove(c->in, nl + 1, c->in_len);
	}
	if (!resp) {
		server_conn_close(c);
		return true;
	}
	server_start_send(s, idx, resp);
	return true;
}

static void server_next(struct server *s, struct colocd *d, int idx)
{
	if (!server_serve_line(s, d, idx))
		server_arm_recv(s, idx);
}

/*
 * Root, or a member of the coloc group (primary or supplementary), as the
 * kernel recorded the peer at connect time (SO_PEERCRED, SO_PEERGROUPS).
 */
static bool server_peer_allowed(int fd)
{
	gid_t groups[NGROUPS_MAX];
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct group *grp;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return false;
	if (cred.uid == 0)
		return true;
	grp = getgrnam(COLOC_GROUP);
	if (!grp)
		return false;
	if (cred.gid == grp->gr_gid)
		return true;
	len = sizeof(groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len))
		return false;
	for (size_t i = 0; i < len / sizeof(groups[0]); i++)
		if (groups[i] == grp->gr_gid)
			return true;
	return false;
}

static void server_on_accept(struct server *s, int fd)
{
	static const char denied[] =
		"{\"ok\":false,\"error\":\"permission denied: colocd serves root and the "
		"'" COLOC_GROUP "' group\"}\n";
	static const char busy[] = "{\"ok\":false,\"error\":\"too many connections\"}\n";
	int idx = -1;

	if (!server_peer_allowed(fd)) {
		send(fd, denied, sizeof(denied) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		close(fd);
		return;
	}
	for (int i = 0; i < SERVER_MAX_CONNS && idx < 0; i++)
		if (!s->conns[i].used)
			idx = i;
	if (idx < 0) {
		send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		close(fd);
		return;
	}
	s->conns[idx].in = malloc(SERVER_IN_CAP);
	if (!s->conns[idx].in) {
		close(fd);
		return;
	}
	s->conns[idx].used = true;
	s->conns[idx].fd = fd;
	server_arm_recv(s, idx);
}

static void server_on_recv(struct server *s, struct colocd *d, int idx, int res)
{
	struct server_conn *c = &s->conns[idx];

	/* a last request without its newline before EOF is still answered */
	if (res == 0 && c->in_len && c->in_len < SERVER_IN_CAP) {
		c->in[c->in_len++] = '\n';
		c->closing = true;
		server_next(s, d, idx);
		return;
	}
	if (res <= 0) {
		server_conn_close(c);
		return;
	}
	c->in_len += (size_t)res;
	server_next(s, d, idx);
}

static void server_on_send(struct server *s, struct colocd *d, int idx, int res)
{
	struct server_conn *c = &s->conns[idx];

	if (res < 0) {
		server_conn_close(c);
		return;
	}
	c->out_off += (size_t)res;
	if (c->out_off < c->out_len) {
		server_arm_send(s, idx);
		return;
	}
	free(c->out);
	c->out = NULL;
	if (c->closing) {
		server_conn_close(c);
		return;
	}
	server_next(s, d, idx);
}

static void server_dispatch(struct server *s, struct colocd *d, struct io_uring_cqe *cqe)
{
	__u64 tag = io_uring_cqe_get_data64(cqe);
	int idx = (int)(tag & 0xffffffffu);
	struct signalfd_siginfo si;

	switch ((enum server_event)(tag >> 32)) {
	case EV_RINGBUF:
		sensor_consume(d->sensor);
		server_arm_poll(s, sensor_epoll_fd(d->sensor), EV_RINGBUF);
		break;
	case EV_SIGNAL:
		if (read(s->sig_fd, &si, sizeof(si)) == sizeof(si)) {
			s->stop_signal = (int)si.ssi_signo;
			s->stop = true;
		}
		server_arm_poll(s, s->sig_fd, EV_SIGNAL);
		break;
	case EV_ACCEPT:
		if (cqe->res >= 0)
			server_on_accept(s, cqe->res);
		server_arm_accept(s);
		break;
	case EV_RECV:
		server_on_recv(s, d, idx, cqe->res);
		break;
	case EV_SEND:
		server_on_send(s, d, idx, cqe->res);
		break;
	case EV_TICK:
		colocd_tick(d, server_now_ns());
		server_arm_timer(s, EV_TICK);
		break;
	case EV_DRAIN:
		sensor_consume(d->sensor);
		server_arm_timer(s, EV_DRAIN);
		break;
	}
}

/*
 * The lock file is removed at exit, so a daemon that locked a file someone
 * unlinked meanwhile holds nothing: it checks the path still names its file
 * and otherwise tries again.
 */
static int server_take_lock(struct server *s, struct coloc_err *err)
{
	for (int tries = 0; tries < 10; tries++) {
		struct stat held, named;

		s->lock_fd = open(s->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (s->lock_fd < 0)
			return coloc_err_set(err, -errno, "cannot open lock %s: %s", s->lock_path,
					     strerror(errno));
		if (flock(s->lock_fd, LOCK_EX | LOCK_NB)) {
			close(s->lock_fd);
			s->lock_fd = -1;
			return coloc_err_set(err, -EADDRINUSE,
					     "socket %s is in use: another colocd holds %s",
					     s->socket_path, s->lock_path);
		}
		if (!fstat(s->lock_fd, &held) && !stat(s->lock_path, &named) &&
		    held.st_ino == named.st_ino && held.st_dev == named.st_dev)
			return 0;
		close(s->lock_fd);
		s->lock_fd = -1;
	}
	return coloc_err_set(err, -EBUSY, "lock %s keeps changing; is another colocd starting?",
			     s->lock_path);
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
 * The lock is ours, so no live colocd serves the path; but another program
 * might. A socket nobody accepts on is stale and removed, and so is one that
 * a colocd still being torn down (killed, its io_uring not yet released)
 * answers for: only another program's live socket is refused.
 */
static int server_remove_stale_socket(struct server *s, struct coloc_err *err)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char comm[32];
	struct stat st;
	pid_t listener = 0;
	int fd;

	if (lstat(s->socket_path, &st))
		return 0;
	if (!S_ISSOCK(st.st_mode))
		return coloc_err_set(err, -EEXIST,
				     "%s exists and is not a socket; refusing to remove it",
				     s->socket_path);
	memcpy(addr.sun_path, s->socket_path, strlen(s->socket_path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return coloc_err_set(err, -errno, "cannot create a socket: %s", strerror(errno));
	if (!connect(fd, (struct sockaddr *)&addr, sizeof(addr)))
		listener = server_listener_of(fd, comm, sizeof(comm));
	close(fd);
	if (listener > 0 && strcmp(comm, "colocd"))
		return coloc_err_set(err, -EADDRINUSE,
				     "socket %s is in use by another process (pid %d, %s)",
				     s->socket_path, listener, comm);
	unlink(s->socket_path);
	return 0;
}

static int server_listen(struct server *s, struct coloc_err *err)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct group *grp;
	mode_t old_mask;
	int ret;

	s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0)
		return coloc_err_set(err, -errno, "cannot create a socket: %s", strerror(errno));
	memcpy(addr.sun_path, s->socket_path, strlen(s->socket_path));
	/* born 0660: never a moment when others could connect */
	old_mask = umask(0117);
	ret = bind(s->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) ? -errno : 0;
	umask(old_mask);
	if (ret || listen(s->listen_fd, 64)) {
		ret = ret ? ret : -errno;
		return coloc_err_set(err, ret, "cannot listen on %s: %s", s->socket_path,
				     strerror(-ret));
	}
	/* the group exists so that its members can connect: a socket they cannot use is an error */
	grp = getgrnam(COLOC_GROUP);
	if (grp && lchown(s->socket_path, 0, grp->gr_gid))
		return coloc_err_set(err, -errno, "cannot give %s to group %s: %s", s->socket_path,
				     COLOC_GROUP, strerror(errno));
	return 0;
}

static int server_mkdir_parent(const char *path, struct coloc_err *err)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0755) && errno != EEXIST)
		return coloc_err_set(err, -errno, "cannot create %s: %s", dir, strerror(errno));
	return 0;
}

int server_open(struct server **out, const char *socket_path, struct coloc_err *err)
{
	struct server *s;
	sigset_t mask;
	int ret;

	if (!socket_path[0] || strlen(socket_path) >= sizeof(s->socket_path))
		return coloc_err_set(err, -ENAMETOOLONG, "socket path must be 1-%zu characters",
				     sizeof(s->socket_path) - 1);
	s = calloc(1, sizeof(*s));
	if (!s)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	s->listen_fd = s->sig_fd = s->lock_fd = -1;
	s->tick.tv_sec = 1;
	snprintf(s->socket_path, sizeof(s->socket_path), "%s", socket_path);
	snprintf(s->lock_path, sizeof(s->lock_path), "%s.lock", socket_path);

	ret = server_mkdir_parent(socket_path, err);
	if (!ret)
		ret = server_take_lock(s, err);
	if (!ret)
		ret = server_remove_stale_socket(s, err);
	if (ret)
		goto fail;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	s->sig_fd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (s->sig_fd < 0) {
		ret = coloc_err_set(err, -errno, "cannot create a signalfd: %s", strerror(errno));
		goto fail;
	}
	ret = io_uring_queue_init(SERVER_QUEUE_DEPTH, &s->ring, 0);
	if (ret) {
		coloc_err_set(err, ret, "io_uring unavailable: %s", strerror(-ret));
		goto fail;
	}
	s->ring_ready = true;
	*out = s;
	return 0;
fail:
	server_close(s);
	return ret;
}

int server_run(struct server *s, struct colocd *d, struct coloc_err *err)
{
	struct io_uring_cqe *cqe;
	unsigned int drain_ms;
	int ret;

	/* the socket appears only once the sensor is up: connecting means ready */
	ret = server_listen(s, err);
	if (ret)
		return ret;
	server_arm_poll(s, sensor_epoll_fd(d->sensor), EV_RINGBUF);
	server_arm_poll(s, s->sig_fd, EV_SIGNAL);
	server_arm_accept(s);
	drain_ms = d->cfg.window_ms > SERVER_DRAIN_MS ? d->cfg.window_ms : SERVER_DRAIN_MS;
	s->drain.tv_sec = drain_ms / 1000;
	s->drain.tv_nsec = (long long)(drain_ms % 1000) * 1000000;
	server_arm_timer(s, EV_TICK);
	server_arm_timer(s, EV_DRAIN);
	while (!s->stop) {
		ret = io_uring_submit_and_wait(&s->ring, 1);
		if (ret < 0 && ret != -EINTR)
			return coloc_err_set(err, ret, "event loop failed: %s", strerror(-ret));
		while (io_uring_peek_cqe(&s->ring, &cqe) == 0) {
			server_dispatch(s, d, cqe);
			io_uring_cqe_seen(&s->ring, cqe);
		}
	}
	return 0;
}

int server_stop_signal(const struct server *s)
{
	return s->stop_signal;
}

void server_close(struct server *s)
{
	if (!s)
		return;
	if (s->ring_ready)
		io_uring_queue_exit(&s->ring);
	for (int i = 0; i < SERVER_MAX_CONNS; i++)
		if (s->conns[i].used)
			server_conn_close(&s->conns[i]);
	if (s->listen_fd >= 0) {
		close(s->listen_fd);
		unlink(s->socket_path);
	}
	if (s->sig_fd >= 0)
		close(s->sig_fd);
	/* unlinked while held: a daemon that locks the old file sees it is gone */
	if (s->lock_fd >= 0) {
		unlink(s->lock_path);
		close(s->lock_fd);
	}
	free(s);
}
