// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Admission to the control socket (server.h): who may connect (SO_PEERCRED
 * and SO_PEERGROUPS: root or the coloc group, not a subordinate id of a
 * member's user namespace, subid.h, and root alone while the node gives
 * the group's gid to another group, host_group.h; a peer from another pid
 * namespace is marked so, control.c refuses its requests that name pids),
 * and how many connections each uid may hold, evicting the
 * oldest idle one where server.h says so. An accepted connection is handed
 * to server.c's reading and answering. A connection carries descriptors
 * only once admitted (SO_PASSRIGHTS), so a refused one is closed at once
 * (fd_closer_close_conn), and at the descriptor limit one kept in reserve
 * lets the listener's backlog be refused rather than spin the loop; with
 * no reserve left, the listener waits a closer's drain.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/socket.h>
#include <json-c/json.h>
#include "coloc/protocol.h"
#include "fd_closer.h"
#include "server_internal.h"
#include "mono_clock.h"
#include "subid.h"

#define SERVER_ACCEPTS_PER_WAKEUP 16
#ifndef SO_PASSRIGHTS
#define SO_PASSRIGHTS 83 /* Linux 6.16 */
#endif

/* a descriptor held for accepting one connection at the descriptor limit; -1 until first needed */
static int server_spare_fd = -1;

/*
 * How deep the pid namespace of a process sits below the one /proc was
 * mounted for: the number of pids on the NSpid line of /proc/PID/status,
 * less one; -1 if unknown. status is readable by anyone: unlike
 * /proc/PID/ns/pid it needs no ptrace access, so colocd under its unit
 * (no CAP_SYS_PTRACE) can place another user's process.
 */
int server_pidns_depth(pid_t pid)
{
	char path[64], line[256];
	int depth = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "NSpid:", 6)) {
			depth = -1;
			for (char *p = line + 6, *end;; p = end) {
				(void)strtol(p, &end, 10);
				if (end == p)
					break;
				depth++;
			}
			break;
		}
	fclose(f);
	return depth;
}

static bool server_in_coloc_group(const struct server *s, int fd, const struct ucred *cred)
{
	gid_t groups[NGROUPS_MAX];
	socklen_t len = sizeof(groups);

	if (!s->have_coloc_gid || s->group_refused)
		return false;
	if (cred->gid == s->coloc_gid)
		return true;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len))
		return false;
	for (size_t i = 0; i < len / sizeof(groups[0]); i++)
		if (groups[i] == s->coloc_gid)
			return true;
	return false;
}

#define SERVER_SUBID_REFUSED                                                                 \
	"permission denied: colocd serves the '" COLOC_GROUP "' group's own users, not the " \
	"subordinate ids of one"

#define SERVER_GROUP_REFUSED                                                                     \
	"permission denied: the '" COLOC_GROUP "' group's gid is another group's in the node's " \
	"group file: colocd serves root alone until it is free"

/* A subordinate id's refusal, in colocd's log at most once a second. */
static void server_log_subid(const struct ucred *cred)
{
	static __u64 logged_ns;
	__u64 now = coloc_now_ns();

	if (now - logged_ns < 1000000000ull)
		return;
	logged_ns = now;
	fprintf(stderr,
		"colocd: refused pid %d, uid %u gid %u: a subordinate id (/etc/subuid, "
		"/etc/subgid), one member's many uids\n",
		(int)cred->pid, (unsigned int)cred->uid, (unsigned int)cred->gid);
}

/*
 * Who may connect, as the kernel recorded the peer at connect time
 * (SO_PEERCRED, SO_PEERGROUPS): root or a member of the coloc group.
 * *other_pidns: the peer is not in colocd's own pid namespace, where the
 * pids a request names are read. NULL if allowed, else the reason.
 */
static const char *server_peer_refusal(const struct server *s, int fd, struct ucred *cred,
				       bool *other_pidns)
{
	socklen_t len = sizeof(*cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &len))
		return "cannot read the peer's credentials";
	if (cred->uid != 0 && s->group_refused)
		return SERVER_GROUP_REFUSED;
	if (cred->uid != 0 && !server_in_coloc_group(s, fd, cred))
		return "permission denied: colocd serves root and the '" COLOC_GROUP "' group";
	if (cred->uid != 0 && subid_held(cred->uid, cred->gid)) {
		server_log_subid(cred);
		return SERVER_SUBID_REFUSED;
	}
	/*
	 * pid 0: the peer's namespace is not ours nor below it; a pid > 0
	 * names it in ours or below: ours if it sits as deep as colocd.
	 */
	*other_pidns = cred->pid <= 0 || s->pidns_depth < 0 ||
		       server_pidns_depth(cred->pid) != s->pidns_depth;
	return NULL;
}

/* Sends one error line, written by json-c like every other, without waiting. */
void server_send_error(int fd, const char *why)
{
	struct json_object *o = json_object_new_object();
	char line[512];
	int n;

	json_object_object_add(o, "ok", json_object_new_boolean(0));
	json_object_object_add(o, "error", json_object_new_string(why));
	n = snprintf(line, sizeof(line), "%s\n",
		     json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	if (n > 0 && (size_t)n < sizeof(line))
		send(fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	json_object_put(o);
}

/*
 * Whose closer entry a refused connection's descriptors go to (before
 * Linux 6.16 a peer may have sent some before the accept): never a uid
 * colocd does not serve, each of which would hold an entry of its own (s22
 * review HIGH 1). A subordinate uid's go to its range's first uid, one
 * entry for one member's namespace; a stranger's to SERVER_STRANGERS_CLOSES.
 */
static uid_t server_refused_closes_uid(const struct server *s, int fd, const struct ucred *cred)
{
	uid_t first;

	if (cred->uid == 0)
		return 0;
	if (subid_uid_range(cred->uid, &first))
		return first;
	if (cred->uid == SERVER_STRANGERS_CLOSES || !server_in_coloc_group(s, fd, cred))
		return SERVER_STRANGERS_CLOSES;
	return cred->uid;
}

static void server_refuse(const struct server *s, int fd, const struct ucred *cred, const char *why)
{
	server_send_error(fd, why);
	fd_closer_close_conn(fd, server_refused_closes_uid(s, fd, cred));
}

int server_drop_subordinate(struct server *s)
{
	int n = 0;

	for (int i = 0; i < SERVER_MAX_CONNS; i++) {
		struct server_conn *c = s->conns[i];
		struct ucred cred;

		if (!c || !c->uid || !subid_held(c->uid, c->gid))
			continue;
		cred = (struct ucred){ .uid = c->uid, .gid = c->gid };
		server_send_error(c->fd, SERVER_SUBID_REFUSED);
		c->uid = server_refused_closes_uid(s, c->fd, &cred);
		server_conn_close(c);
		n++;
	}
	return n;
}

int server_refuse_group(struct server *s, bool refuse)
{
	int n = 0;

	s->group_refused = refuse;
	for (int i = 0; refuse && i < SERVER_MAX_CONNS; i++) {
		struct server_conn *c = s->conns[i];

		if (!c || !c->uid)
			continue;
		/* its descriptors closed on its own uid's closer, where they were taken */
		server_send_error(c->fd, SERVER_GROUP_REFUSED);
		server_conn_close(c);
		n++;
	}
	return n;
}

bool server_listener_refuses_rights(int listen_fd)
{
	int off = 0;

	/*
	 * Inherited by each connection from its connect() on: a peer's
	 * SCM_RIGHTS fail (EPERM) until server_add_conn admits it. Before
	 * 6.16 the option is unknown and a refused connection may hold
	 * descriptors; fd_closer_close_conn then sends it to the thread.
	 */
	return !setsockopt(listen_fd, SOL_SOCKET, SO_PASSRIGHTS, &off, sizeof(off));
}

const char *server_rights_line(const struct server *s)
{
	if (s->rights_test_off)
		return "SO_PASSRIGHTS left unset (COLOCD_TEST_NO_PASSRIGHTS): admission as before "
		       "Linux 6.16, a refused connection's descriptors closed on its user's "
		       "closer thread";
	return s->rights_once_admitted ?
		       "connections carry descriptors once admitted (SO_PASSRIGHTS)" :
		       "no SO_PASSRIGHTS in this kernel (before Linux 6.16): a connection may "
		       "carry descriptors before it is admitted; a refused one's are closed on "
		       "its user's closer thread";
}

static int server_count_uid(const struct server *s, uid_t uid)
{
	int n = 0;

	for (int i = 0; i < SERVER_MAX_CONNS; i++)
		if (s->conns[i] && s->conns[i]->uid == uid)
			n++;
	return n;
}

/* The idle connection of uid (of anyone with any_uid) that made progress longest ago. */
static struct server_conn *server_oldest_idle(const struct server *s, uid_t uid, bool any_uid)
{
	struct server_conn *oldest = NULL;

	for (int i = 0; i < SERVER_MAX_CONNS; i++) {
		struct server_conn *c = s->conns[i];

		if (!c || !server_conn_idle(c) || (!any_uid && c->uid != uid))
			continue;
		if (!oldest || c->last_progress_ns < oldest->last_progress_ns)
			oldest = c;
	}
	return oldest;
}

/* The non-root uid holding the most connections, and how many. */
static uid_t server_busiest_uid(const struct server *s, int *count)
{
	uid_t best = 0;

	*count = 0;
	for (int i = 0; i < SERVER_MAX_CONNS; i++) {
		struct server_conn *c = s->conns[i];
		int n;

		if (!c || c->uid == 0)
			continue;
		n = server_count_uid(s, c->uid);
		if (n > *count) {
			*count = n;
			best = c->uid;
		}
	}
	return best;
}

static void server_evict(struct server_conn *victim)
{
	server_send_error(victim->fd, "connection closed: colocd is at its connection limit and "
				      "this one was idle longest");
	server_conn_close(victim);
}

/*
 * Makes room for a connection of uid under the limits of server.h; NULL
 * when there is room, else why not.
 */
static const char *server_make_room(struct server *s, uid_t uid)
{
	int total = 0, others = 0, busiest;
	struct server_conn *victim;
	uid_t busy_uid;

	for (int i = 0; i < SERVER_MAX_CONNS; i++)
		if (s->conns[i]) {
			total++;
			others += s->conns[i]->uid != 0;
		}
	if (uid == 0) {
		if (total < SERVER_MAX_CONNS)
			return NULL;
		victim = server_oldest_idle(s, 0, true);
		if (!victim)
			return "too many connections, none of them idle";
		server_evict(victim);
		return NULL;
	}
	if (server_count_uid(s, uid) >= SERVER_UID_SHARE)
		return "too many connections from this user; close some first";
	if (others < SERVER_MAX_CONNS - SERVER_ROOT_RESERVED && total < SERVER_MAX_CONNS)
		return NULL;
	busy_uid = server_busiest_uid(s, &busiest);
	victim = busiest >= server_count_uid(s, uid) + 2 ? server_oldest_idle(s, busy_uid, false) :
							   NULL;
	if (!victim)
		return "too many connections; try again later";
	server_evict(victim);
	return NULL;
}

static void server_add_conn(struct server *s, int fd)
{
	struct server_conn *c;
	struct ucred cred = { .uid = (uid_t)-1 };
	bool other_pidns = true;
	const char *why = server_peer_refusal(s, fd, &cred, &other_pidns);
	int slot = -1, inline_oob = 1;

	/*
	 * An OOB byte read past is freed, with the descriptors it carries, by
	 * the read: inline, they come to us as any others (fd_closer.h).
	 */
	setsockopt(fd, SOL_SOCKET, SO_OOBINLINE, &inline_oob, sizeof(inline_oob));
	if (!why && cred.uid && fd_closer_state(cred.uid, NULL) == FD_CLOSER_HUNG)
		why = SERVER_CLOSES_STUCK;
	if (!why)
		why = server_make_room(s, cred.uid);
	if (why) {
		server_refuse(s, fd, &cred, why);
		return;
	}
	for (int i = 0; i < SERVER_MAX_CONNS && slot < 0; i++)
		if (!s->conns[i])
			slot = i;
	c = calloc(1, sizeof(*c));
	if (c)
		c->in = malloc(SERVER_IN_CAP);
	if (slot < 0 || !c || !c->in ||
	    loop_add_poll(s->loop, &c->src, fd, POLLIN, server_on_conn, c)) {
		if (c)
			free(c->in);
		free(c);
		server_refuse(s, fd, &cred, "out of memory");
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_PASSRIGHTS, &(int){ 1 }, sizeof(int));
	c->s = s;
	c->id = ++s->next_id;
	c->fd = fd;
	c->uid = cred.uid;
	c->gid = cred.gid;
	c->other_pidns = other_pidns;
	c->last_progress_ns = coloc_now_ns();
	s->conns[slot] = c;
}

/*
 * At the descriptor limit a connection stays in the backlog and the
 * listener readable: the spare descriptor makes room to accept it and
 * refuse it, so the backlog drains instead of the loop spinning. With
 * SO_PASSRIGHTS it carries no descriptors and is closed here; before 6.16
 * its peer may have sent some before the accept, and it goes to its uid's
 * closer thread like any refused connection (its slot then stays taken
 * until the thread closes it). False when nothing was accepted.
 */
static bool server_refuse_at_limit(struct server *s)
{
	static __u64 logged_ns;
	__u64 now = coloc_now_ns();
	struct ucred cred = { .uid = (uid_t)-1 };
	socklen_t len = sizeof(cred);
	int conn;

	close(server_spare_fd);
	conn = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (conn >= 0) {
		server_send_error(conn, SERVER_OUT_OF_FDS);
		if (s->rights_once_admitted) {
			shutdown(conn, SHUT_RDWR);
			close(conn);
		} else {
			getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len);
			fd_closer_close_conn(conn, server_refused_closes_uid(s, conn, &cred));
		}
	}
	server_spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (conn >= 0 && now - logged_ns > 1000000000ull) {
		fprintf(stderr, "colocd: at its descriptor limit: refusing new connections\n");
		logged_ns = now;
	}
	return conn >= 0;
}

static void server_on_resume(struct loop_source *src, __u64 now_ns, void *ctx)
{
	struct server *s = ctx;

	(void)src;
	(void)now_ns;
	if (s->listen_src)
		loop_poll_set_events(s->listen_src, POLLIN);
}

/*
 * At the limit with no spare (a refused connection still on its closer
 * thread): the listener is left unpolled for a closer's drain, not spun on.
 */
static void server_pause_accepting(struct server *s)
{
	__u64 wait_ns = FD_CLOSER_DRAIN_MS * 1000000ull;

	if (!s->resume_src &&
	    loop_add_timer(s->loop, &s->resume_src, wait_ns, 0, server_on_resume, s))
		return;
	loop_timer_set(s->resume_src, wait_ns, 0);
	loop_poll_set_events(s->listen_src, 0);
}

void server_on_listen(struct loop_source *src, int fd, unsigned int revents, void *ctx)
{
	struct server *s = ctx;

	(void)src;
	(void)revents;
	if (server_spare_fd < 0)
		server_spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	/* a bounded batch: a flood of connects cannot starve the other sources */
	for (int i = 0; i < SERVER_ACCEPTS_PER_WAKEUP; i++) {
		int conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (conn >= 0) {
			server_add_conn(s, conn);
		} else if (errno != EMFILE && errno != ENFILE) {
			return;
		} else if (server_spare_fd < 0) {
			server_pause_accepting(s);
			return;
		} else if (!server_refuse_at_limit(s)) {
			return;
		}
	}
}
