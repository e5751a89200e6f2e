// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's limits on connections, the real binary started as a process: a
 * uid over its share is refused while root still gets in, a newcomer
 * evicts the oldest idle connection of the busiest user, idle and stalled
 * connections are closed, and a peer in another pid namespace is served
 * but refused the requests that name pids. Who is a member at all: not a
 * subordinate id (a reload ends its connections and its tenants), and not
 * a node group that holds the image's coloc gid.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <json-c/json.h>
#include <bpf/bpf.h>
#include "kselftest_harness.h"
#include "coloc/protocol.h"
#include "owners_util.h"
#include "testutil.h"
#include "colocd_fixture.h"

static char cache_dir[64]; /* made once, shared by the forked tests */

__attribute__((constructor)) static void make_cache_dir(void)
{
	tu_shared_tmpdir("conns-test", cache_dir, sizeof(cache_dir));
}

/*
 * A member of the coloc group holds its share of connections: one more is
 * refused, and root still gets in though the slots others may use fill up.
 */
TEST_F(colocd, conns__a_uid_over_its_share_is_refused_and_root_still_gets_in)
{
	struct group *grp = getgrnam(COLOC_GROUP);
	int fds[2], held[80], nr_held = 0, st;
	char why[1024] = { 0 };
	pid_t pid;

	if (!grp)
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	ASSERT_EQ(0, chmod(self->dir, 0755));
	ASSERT_EQ(0, pipe(fds));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int conns[20];

		close(fds[0]);
		if (setgroups(0, NULL) || setgid(grp->gr_gid) || setuid(65534))
			_exit(99);
		/* SERVER_UID_SHARE (16) served, the 17th refused */
		for (int i = 0; i < 17; i++) {
			conns[i] = tu_connect(self->sock);
			if (conns[i] < 0)
				_exit(98);
			set_recv_timeout(conns[i], 30);
			if (ping_on(conns[i], why, sizeof(why)) != (i < 16))
				_exit(95);
		}
		if (write(fds[1], why, strlen(why)) < 0 || write(fds[1], "", 1) < 0)
			_exit(97);
		/* hold them until the parent is done and kills this child */
		for (;;)
			pause();
	}
	close(fds[1]);
	ASSERT_GT(read(fds[0], why, sizeof(why) - 1), 0);
	EXPECT_NE(NULL, strstr(why, "too many connections from this user"));
	/* root fills every slot, idle, then one more root connection is served */
	for (nr_held = 0; nr_held < 64; nr_held++) {
		held[nr_held] = tu_connect(self->sock);
		ASSERT_GE(held[nr_held], 0);
	}
	{
		int fd = tu_connect(self->sock);

		ASSERT_GE(fd, 0);
		set_recv_timeout(fd, 30);
		EXPECT_EQ(1, ping_on(fd, why, sizeof(why)));
		close(fd);
	}
	for (int i = 0; i < nr_held; i++)
		close(held[i]);
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	close(fds[0]);
}

/*
 * A child of uid (group coloc) that opens n connections and pings on each,
 * writes "R" (all served) or "F" to report, then, if watch, the next line
 * its first connection receives; it holds them until killed.
 */
static pid_t hold_conns(const char *sock, uid_t uid, gid_t gid, int n, int report, bool watch)
{
	pid_t pid = fork();
	int conns[COLOC_CONNS_PER_UID];
	char line[1024] = { 0 };
	bool all = true;

	if (pid)
		return pid;
	if (setgroups(0, NULL) || setgid(gid) || setuid(uid))
		_exit(99);
	for (int i = 0; i < n; i++) {
		conns[i] = tu_connect(sock);
		if (conns[i] < 0)
			_exit(98);
		set_recv_timeout(conns[i], 30);
		all &= ping_on(conns[i], NULL, 0) == 1;
	}
	if (write(report, all ? "R" : "F", 1) != 1)
		_exit(97);
	if (watch && tu_read_line(conns[0], line, sizeof(line)) > 0 &&
	    write(report, line, strlen(line)) < 0)
		_exit(96);
	for (;;)
		pause();
}

/*
 * Four users fill the 56 slots others may use (16, 15, 15, 10): a fifth
 * still gets in, by evicting the oldest idle connection of the user holding
 * the most, who is told why.
 */
TEST_F(colocd, conns__a_newcomer_evicts_the_oldest_idle_connection_of_the_busiest_user)
{
	static const int counts[4] = { 16, 15, 15, 10 };
	struct group *grp = getgrnam(COLOC_GROUP);
	int report[5][2], st;
	char got[1024] = { 0 };
	pid_t kids[5];

	if (!grp)
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	ASSERT_EQ(COLOC_MAX_CONNS - COLOC_ROOT_CONNS,
		  counts[0] + counts[1] + counts[2] + counts[3]);
	ASSERT_EQ(0, chmod(self->dir, 0755));
	for (int u = 0; u < 5; u++) {
		ASSERT_EQ(0, pipe(report[u]));
		kids[u] = hold_conns(self->sock, 60001 + u, grp->gr_gid, u < 4 ? counts[u] : 1,
				     report[u][1], u == 0);
		ASSERT_GT(kids[u], 0);
		/* one user at a time, so the first user's connections are the oldest */
		ASSERT_EQ(1, read(report[u][0], got, 1));
		EXPECT_EQ('R', got[0]);
	}
	/* the first user's first connection was evicted, with the reason */
	ASSERT_GT(read(report[0][0], got, sizeof(got) - 1), 0);
	EXPECT_NE(NULL, strstr(got, "connection limit"));
	for (int u = 0; u < 5; u++) {
		kill(kids[u], SIGKILL);
		ASSERT_EQ(kids[u], waitpid(kids[u], &st, 0));
		close(report[u][0]);
		close(report[u][1]);
	}
}

/* With --conn-timeout-ms, an idle connection and a stalled request are closed. */
TEST(colocd_conns__idle_and_stalled_connections_are_closed)
{
	const char *extra[] = { "--conn-timeout-ms", "300", NULL };
	char dir[64] = "/tmp/coloc-test-XXXXXX", sock[128], pin[128], log[128], line[512];
	int idle, stalled, fresh;
	pid_t pid;

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/colocd.sock", dir);
	snprintf(log, sizeof(log), "%s/colocd.log", dir);
	snprintf(pin, sizeof(pin), "/sys/fs/bpf/coloc-test-to-%d", getpid());
	pid = tu_start_colocd_with(sock, pin, log, extra);
	ASSERT_GT(pid, 0);
	idle = tu_connect(sock);
	stalled = tu_connect(sock);
	ASSERT_GE(idle, 0);
	ASSERT_GE(stalled, 0);
	set_recv_timeout(idle, 30);
	set_recv_timeout(stalled, 30);
	ASSERT_EQ(5, send(stalled, "{\"cmd", 5, MSG_NOSIGNAL));
	/* closed by colocd: EOF, not the 30 s receive timeout */
	EXPECT_EQ(0, tu_read_line(idle, line, sizeof(line)));
	EXPECT_EQ(0, tu_read_line(stalled, line, sizeof(line)));
	close(idle);
	close(stalled);
	/* and the daemon still serves */
	fresh = tu_connect(sock);
	ASSERT_GE(fresh, 0);
	EXPECT_EQ(1, ping_on(fresh, NULL, 0));
	close(fresh);
	EXPECT_EQ(0, tu_stop_colocd(pid));
	tu_remove_tree(dir);
}

/*
 * A client in another pid namespace (a gateway's pod without hostPID) is
 * served, but the pids it names would be other processes in colocd's:
 * tenant-add's pids [1] (the client itself there, init here) is refused.
 */
TEST_F(colocd, conns__a_peer_in_another_pid_namespace_is_refused_only_its_pids)
{
	static const char *const reqs[] = {
		"{\"cmd\":\"ping\"}\n",
		"{\"cmd\":\"list\"}\n",
		"{\"cmd\":\"tenant-add\",\"name\":\"nspid\",\"pids\":[1]}\n",
	};
	char out[8192] = { 0 }, *ping, *list, *add;
	int fds[2], st;
	pid_t pid;

	ASSERT_EQ(0, pipe(fds));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		pid_t inner;

		close(fds[0]);
		if (unshare(CLONE_NEWPID))
			_exit(99);
		/* the namespace applies to children: the first one is its pid 1 */
		inner = fork();
		if (inner == 0) {
			int fd = tu_connect(self->sock);
			char line[4096];

			if (fd < 0)
				_exit(98);
			set_recv_timeout(fd, 30);
			/* one answer a line into the pipe, an empty line for none */
			for (size_t i = 0; i < ARRAY_SIZE(reqs); i++) {
				int n;

				send(fd, reqs[i], strlen(reqs[i]), MSG_NOSIGNAL);
				n = tu_read_line(fd, line, sizeof(line));
				if (n <= 0)
					line[0] = '\0';
				if (dprintf(fds[1], "%s\n", strtok(line, "\n") ?: "") < 0)
					_exit(97);
			}
			_exit(0);
		}
		if (inner < 0 || waitpid(inner, &st, 0) != inner)
			_exit(96);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 95);
	}
	close(fds[1]);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	if (WEXITSTATUS(st) == 99)
		SKIP(return, "cannot create a pid namespace here");
	ASSERT_EQ(0, WEXITSTATUS(st));
	ASSERT_GT(read(fds[0], out, sizeof(out) - 1), 0);
	close(fds[0]);
	ping = out;
	list = strchr(ping, '\n');
	ASSERT_NE(NULL, list);
	*list++ = '\0';
	add = strchr(list, '\n');
	ASSERT_NE(NULL, add);
	*add++ = '\0';
	EXPECT_NE(NULL, strstr(ping, "\"ok\":true"))
	TH_LOG("ping: %s", ping);
	EXPECT_NE(NULL, strstr(list, "\"ok\":true"))
	TH_LOG("list: %s", list);
	EXPECT_NE(NULL, strstr(add, "\"ok\":false"))
	TH_LOG("tenant-add: %s", add);
	EXPECT_NE(NULL, strstr(add, "pid namespace other than colocd's"));
	/* and no tenant was made of the host's pid 1 */
	ASSERT_LT(0, tu_request(self->sock, "{\"cmd\":\"tenants\"}\n", out, sizeof(out)));
	EXPECT_EQ(NULL, strstr(out, "nspid"))
	TH_LOG("tenants: %s", out);
}

/* Reads what fd has (waiting for some first when wait), counting lines into *lines; -1 on error. */
static int count_lines(int fd, bool wait, int *lines)
{
	char buf[65536];
	ssize_t n;

	for (;;) {
		n = recv(fd, buf, sizeof(buf), wait ? 0 : MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !wait)
			return 0;
		if (n <= 0)
			return -1;
		for (ssize_t i = 0; i < n; i++)
			*lines += buf[i] == '\n';
		if (wait)
			return 0;
	}
}

/* Whether thread tid of pid is stopped, or gone. */
static bool thread_stopped(pid_t pid, pid_t tid, void *ctx)
{
	char state = tu_thread_state(pid, tid);

	(void)ctx;
	return state == '?' || state == 'T' || state == 't';
}

/* SIGSTOP to pid, then waits until every thread of it has stopped: true when they did. */
static bool stop_whole_process(pid_t pid)
{
	if (kill(pid, SIGSTOP))
		return false;
	for (int i = 0; i < 10000; i++) {
		int nr, stopped = tu_count_threads(pid, thread_stopped, NULL, &nr);

		if (stopped >= 0 && stopped == nr)
			return true;
		usleep(1000);
	}
	return false;
}

/*
 * This process and colocd's loop (its main thread) on one CPU, this
 * process ahead (SCHED_FIFO): colocd runs only while this process waits,
 * and what this process reads once woken is all colocd had sent by then,
 * however loaded the machine. 0, or -errno.
 */
static int run_ahead_of(pid_t pid)
{
	struct sched_param rt = { .sched_priority = 1 };
	int cpu = sched_getcpu();
	cpu_set_t one;

	if (cpu < 0)
		return -errno;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one) || sched_setaffinity(pid, sizeof(one), &one) ||
	    sched_setscheduler(0, SCHED_FIFO, &rt))
		return -errno;
	return 0;
}

/*
 * One connection pipelines 300 pings in one write (colocd stopped
 * meanwhile, so that it finds them all at once); once its first
 * answer is in, another connection's ping is answered before the flood's
 * last (review of 2026-12-06, HIGH 2): colocd serves a few lines of a
 * connection per turn of its loop. Counted: the flood's answers read up to
 * right after the other's answer. Main served the whole buffer in one turn
 * and flushed it at its end, so the flood's first answer came with all
 * 300 served (their answers fit in the socket: one skb each). colocd runs
 * only while this test waits (run_ahead_of), so a loaded machine that
 * delays this test lets colocd serve no more meanwhile.
 */
TEST_F(colocd, conns__a_pipelining_connection_does_not_hold_another_ones_ping)
{
	enum { FLOOD = 300 };
	const char ping[] = "{\"cmd\":\"ping\"}\n";
	static char flood[FLOOD * (sizeof(ping) - 1)];
	int a = tu_connect(self->sock), b = tu_connect(self->sock), got = 0, ret;
	size_t sent = 0;

	for (int i = 0; i < FLOOD; i++)
		memcpy(flood + i * (sizeof(ping) - 1), ping, sizeof(ping) - 1);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	set_recv_timeout(a, 30);
	set_recv_timeout(b, 30);
	ASSERT_EQ(1, ping_on(b, NULL, 0)); /* b is in, and served */
	ret = run_ahead_of(self->pid);
	if (ret == -EPERM)
		SKIP(return, "SCHED_FIFO is not allowed here (an RT budget of 0 for this cgroup?)");
	ASSERT_EQ(0, ret) TH_LOG("%s", strerror(-ret));
	ASSERT_TRUE(stop_whole_process(self->pid));
	while (sent < sizeof(flood)) {
		ssize_t n = send(a, flood + sent, sizeof(flood) - sent, MSG_NOSIGNAL);

		ASSERT_LT(0, n);
		sent += (size_t)n;
	}
	ASSERT_EQ(0, kill(self->pid, SIGCONT));
	ASSERT_EQ(0, count_lines(a, true, &got));
	ASSERT_EQ(1, ping_on(b, NULL, 0));
	ASSERT_EQ(0, count_lines(a, false, &got));
	TH_LOG("%d of the flood's %d answers were out by the other's", got, FLOOD);
	EXPECT_LT(got, FLOOD / 2) TH_LOG("the flood was served whole before another's ping");
	close(a);
	close(b);
}

/* Whether this kernel has SO_PASSRIGHTS (Linux 6.16), by its release. */
static bool kernel_has_passrights(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	return !uname(&u) && sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
	       (major > 6 || (major == 6 && minor >= 16));
}

/* The log at path once it holds want, looked at every 10 ms up to tries times. */
static char *log_with_in(const char *path, const char *want, int tries)
{
	char *log = NULL;
	size_t len;

	for (int i = 0; i < tries && !(log && strstr(log, want)); i++) {
		free(log);
		usleep(10 * 1000);
		log = tu_read_file(path, &len);
	}
	return log;
}

/* The log at path once it holds want (a line follows the socket's creation: a moment later). */
static char *log_with(const char *path, const char *want)
{
	return log_with_in(path, want, 200);
}

TEST_F(colocd, conns__start_up_says_whether_descriptors_wait_for_admission)
{
	const char *want = kernel_has_passrights() ?
				   "colocd: connections carry descriptors once admitted" :
				   "colocd: no SO_PASSRIGHTS in this kernel";
	char *log = log_with(self->log, want);

	ASSERT_NE(NULL, log);
	EXPECT_NE(NULL, strstr(log, want)) TH_LOG("%s", log);
	free(log);
}

TEST_F(colocd, conns__start_up_logs_the_descriptor_limits_it_found_and_set)
{
	const char *want = "colocd: descriptors: RLIMIT_NOFILE soft 1000 hard 5000 at start, "
			   "soft 5000 hard 5000 now\n";
	struct rlimit started = { .rlim_cur = 1000, .rlim_max = 5000 };
	char *log;

	ASSERT_EQ(0, tu_stop_colocd(self->pid));
	/* the harness runs each test in a process of its own: the limit stays lowered in it */
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &started));
	self->pid = tu_start_colocd(self->sock, self->pin, self->log);
	ASSERT_GT(self->pid, 0);
	log = log_with(self->log, want);
	ASSERT_NE(NULL, log);
	EXPECT_NE(NULL, strstr(log, want)) TH_LOG("%s", log);
	free(log);
}

/* In a child: uid and gid with the coloc group kept (as setresuid in a user namespace leaves it). */
static void become_with_coloc(uid_t uid, gid_t gid)
{
	struct group *g = getgrnam(COLOC_GROUP);
	gid_t groups[1] = { g ? g->gr_gid : 0 };

	if (!g || setgroups(1, groups) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
		_exit(3);
}

/*
 * In a child as uid and gid (become_with_coloc): 0 when its ping is
 * served, 1 when refused as a subordinate id, 2 otherwise.
 */
static int ping_as(const char *sock, uid_t uid, gid_t gid)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		char why[1024] = "";
		int fd, served;

		become_with_coloc(uid, gid);
		fd = tu_connect(sock);
		set_recv_timeout(fd, 5);
		served = fd >= 0 ? ping_on(fd, why, sizeof(why)) : -1;
		_exit(served == 1 ? 0 : served == 0 && strstr(why, "subordinate ids") ? 1 : 2);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* s21 review HIGH 1: a member's user namespace maps its subordinate uids, each kept in the group */
TEST_F(colocd, conns__a_subordinate_uid_is_refused_until_its_range_is_gone)
{
	char subuid[SUBID_PATH_LEN], subgid[SUBID_PATH_LEN], *log;

	if (!getgrnam(COLOC_GROUP))
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	ASSERT_EQ(0, restart_with_subids(self, "member:200000:65536\n", "member:300000:65536\n",
					 subuid, subgid));
	/* main: served, the kernel's groups still carrying coloc */
	EXPECT_EQ(1, ping_as(self->sock, 200001, 200001));
	EXPECT_EQ(1, ping_as(self->sock, 64990, 300001));
	EXPECT_EQ(0, ping_as(self->sock, 64990, 64990));
	log = log_with(self->log, "a subordinate id");
	EXPECT_NE(NULL, log);
	free(log);
	/* the operator removes the range and says so */
	ASSERT_EQ(0, tu_write_file(subuid, "", 0));
	ASSERT_EQ(0, kill(self->pid, SIGHUP));
	log = log_with(self->log, "subordinate id ranges read again");
	ASSERT_NE(NULL, log);
	free(log);
	EXPECT_EQ(0, ping_as(self->sock, 200001, 200001));
}

/*
 * A child as uid and gid (become_with_coloc): a connection admitted, its
 * ping answered ('a' on report); then 's' once colocd closes it with a
 * refusal that says why (the subordinate ids', or why), else 'k' (still
 * open after 10 s, or closed without it).
 */
static void held_as(const char *sock, uid_t uid, gid_t gid, int report, const char *why)
{
	char line[1024] = "", verdict;
	int fd;

	become_with_coloc(uid, gid);
	fd = tu_connect(sock);
	set_recv_timeout(fd, 10);
	if (fd < 0 || ping_on(fd, NULL, 0) != 1 || write(report, "a", 1) != 1)
		_exit(98);
	verdict = tu_read_line(fd, line, sizeof(line)) > 0 && strstr(line, why) ? 's' : 'k';
	_exit(write(report, &verdict, 1) == 1 ? 0 : 97);
}

/* s22 review MEDIUM 2: a range read at SIGHUP ends what its uids were admitted to before */
TEST_F(colocd, conns__a_reload_closes_the_connections_of_uids_now_subordinate)
{
	char subuid[SUBID_PATH_LEN], subgid[SUBID_PATH_LEN], verdict = 0, *log;
	int report[2], root;
	pid_t kid;

	if (!getgrnam(COLOC_GROUP))
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	ASSERT_EQ(0, restart_with_subids(self, "", "", subuid, subgid));
	root = tu_connect(self->sock);
	ASSERT_GE(root, 0);
	set_recv_timeout(root, 5);
	ASSERT_EQ(1, ping_on(root, NULL, 0));
	ASSERT_EQ(0, pipe(report));
	kid = fork();
	ASSERT_GE(kid, 0);
	if (kid == 0)
		held_as(self->sock, 200001, 200001, report[1], "subordinate ids");
	close(report[1]);
	ASSERT_EQ(1, read(report[0], &verdict, 1));
	ASSERT_EQ('a', verdict);
	ASSERT_EQ(0, tu_write_file(subuid, "member:200000:65536\n", 20));
	ASSERT_EQ(0, kill(self->pid, SIGHUP));
	log = log_with(self->log, "read again, 1 connections of subordinate ids closed");
	EXPECT_TRUE(log && strstr(log, "read again, 1 connections of subordinate ids closed"));
	free(log);
	ASSERT_EQ(1, read(report[0], &verdict, 1));
	/* main: 'k', still served */
	EXPECT_EQ('s', verdict);
	EXPECT_EQ(1, ping_on(root, NULL, 0));
	EXPECT_EQ(0, ping_as(self->sock, 64990, 64990));
	waitpid(kid, NULL, 0);
	close(report[0]);
	close(root);
}

/*
 * s21 second review, LOW 1: an image's fixed gid for the coloc group is
 * refused at start where the node's group file gives it to another group;
 * where the node has its own coloc group at another gid colocd starts and
 * says so.
 */
TEST_F_TIMEOUT(colocd, conns__start_up_refuses_a_coloc_gid_the_node_gives_another_group, 180)
{
	struct group *g = getgrnam(COLOC_GROUP);
	const char *extra[] = { "--host-group-file", NULL, NULL };
	char file[192], line[320], *log;
	unsigned int gid;

	if (!g)
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	gid = (unsigned int)g->gr_gid;
	snprintf(file, sizeof(file), "%s/group", self->dir);
	extra[1] = file;
	ASSERT_EQ(0, tu_stop_colocd(self->pid));
	self->pid = 0;
	snprintf(line, sizeof(line), "root:x:0:\nnode-admins:x:%u:alice\n", gid);
	ASSERT_EQ(0, tu_write_file(file, line, strlen(line)));
	EXPECT_GT(0, tu_start_colocd_with(self->sock, self->pin, self->log, extra));
	/* main: no such option, refused as unknown */
	log = log_with(self->log, "is group 'node-admins'");
	EXPECT_TRUE(log && strstr(log, "is group 'node-admins'")) TH_LOG("%s", log);
	free(log);
	snprintf(line, sizeof(line), "root:x:0:\n" COLOC_GROUP ":x:%u:bob\nnode-admins:x:%u:\n",
		 gid + 1, gid + 2);
	ASSERT_EQ(0, tu_write_file(file, line, strlen(line)));
	self->pid = tu_start_colocd_with(self->sock, self->pin, self->log, extra);
	ASSERT_LT(0, self->pid);
	snprintf(line, sizeof(line), "group '" COLOC_GROUP "' is gid %u in %s, %u here", gid + 1,
		 file, gid);
	log = log_with(self->log, line);
	EXPECT_TRUE(log && strstr(log, line)) TH_LOG("%s", log);
	free(log);
}

/*
 * s24 review's left of s21 second review LOW 1: a node group given the
 * coloc gid after colocd started. colocd, started with a clean group file,
 * serves a member; the file then gives the gid to node-admins (a rename
 * into place, as groupadd writes it): within the watch's look colocd logs
 * it, closes the member's open connection with the refusal and refuses a
 * new one, root served on; the gid freed again, members are served again;
 * SIGHUP checks the file too. Before: read once at start, the member
 * served throughout.
 */
TEST_F_TIMEOUT(colocd, conns__a_coloc_gid_the_node_gives_another_group_later_refuses_members, 180)
{
	struct group *g = getgrnam(COLOC_GROUP);
	char subuid[SUBID_PATH_LEN], subgid[SUBID_PATH_LEN], file[192], next[200], line[320];
	const char *extra[] = { "--host-group-file", file, NULL };
	char verdict = 0, *log;
	int report[2], root;
	pid_t kid;

	if (!g)
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	snprintf(file, sizeof(file), "%s/group", self->dir);
	snprintf(next, sizeof(next), "%s/group+", self->dir);
	ASSERT_EQ(0, tu_write_file(file, "root:x:0:\n", 10));
	/* the socket's folder opened to members */
	ASSERT_EQ(0, restart_with_subids_and(self, "", "", subuid, subgid, extra));
	EXPECT_EQ(0, ping_as(self->sock, 64990, 64990));
	ASSERT_EQ(0, pipe(report));
	kid = fork();
	ASSERT_GE(kid, 0);
	if (kid == 0)
		held_as(self->sock, 64991, 64991, report[1], "another group's");
	close(report[1]);
	ASSERT_EQ(1, read(report[0], &verdict, 1));
	ASSERT_EQ('a', verdict);
	snprintf(line, sizeof(line), "root:x:0:\nnode-admins:x:%u:alice\n",
		 (unsigned int)g->gr_gid);
	ASSERT_EQ(0, tu_write_file(next, line, strlen(line)));
	ASSERT_EQ(0, rename(next, file));
	log = log_with_in(self->log, "members refused", 1000);
	/* main: never looked at again */
	EXPECT_TRUE(log && strstr(log, "group file changed: gid") &&
		    strstr(log, "is group 'node-admins'")) TH_LOG("%s", log);
	free(log);
	ASSERT_EQ(1, read(report[0], &verdict, 1));
	EXPECT_EQ('s', verdict);
	waitpid(kid, NULL, 0);
	close(report[0]);
	EXPECT_EQ(2, ping_as(self->sock, 64990, 64990));
	root = tu_connect(self->sock);
	ASSERT_GE(root, 0);
	set_recv_timeout(root, 5);
	EXPECT_EQ(1, ping_on(root, NULL, 0));
	close(root);
	ASSERT_EQ(0, tu_write_file(next, "root:x:0:\n", 10));
	ASSERT_EQ(0, rename(next, file));
	log = log_with_in(self->log, "members served again", 1000);
	EXPECT_TRUE(log && strstr(log, "members served again")) TH_LOG("%s", log);
	free(log);
	EXPECT_EQ(0, ping_as(self->sock, 64990, 64990));
	ASSERT_EQ(0, kill(self->pid, SIGHUP));
	snprintf(line, sizeof(line), "SIGHUP: group '" COLOC_GROUP "' checked against %s", file);
	log = log_with(self->log, line);
	EXPECT_TRUE(log && strstr(log, line)) TH_LOG("%s", log);
	free(log);
}

/*
 * s25 review LOW 1: executors' uids a member's subordinate range covers
 * could be signalled from its user namespace: refused at start and at a
 * reload, the table then kept as it was.
 */
TEST_F_TIMEOUT(colocd, conns__subordinate_uids_over_the_executor_range_refused, 180)
{
	const char *overlapped[] = { "--uid-range", "100000-100015", NULL };
	const char *reload = "member:100000:65536\nother:200010:10\n";
	char subuid[SUBID_PATH_LEN], subgid[SUBID_PATH_LEN], *log;
	const char *clear[] = { "--subuid-file", subuid, "--subgid-file", subgid, "--uid-range",
				"200000-200015", NULL };

	EXPECT_EQ(-1, restart_with_subids_and(self, "member:100000:65536\n", "", subuid, subgid,
					      overlapped));
	/* main: started, executors to draw uids the member's namespace runs as */
	if (self->pid > 0)
		return;
	self->pid = 0;
	log = log_with(self->log, "overlap the executors' uids");
	EXPECT_TRUE(log && strstr(log, "subordinate uids 100000-165535 overlap the executors' "
				       "uids 100000-100015 (colocd --uid-range)"))
	TH_LOG("%s", log);
	free(log);
	self->pid = tu_start_colocd_with(self->sock, self->pin, self->log, clear);
	ASSERT_LT(0, self->pid);
	ASSERT_EQ(0, tu_write_file(subuid, reload, strlen(reload)));
	ASSERT_EQ(0, kill(self->pid, SIGHUP));
	log = log_with(self->log, "subordinate ids kept as they were");
	EXPECT_TRUE(log && strstr(log, "subordinate uids 200010-200019 overlap the executors' "
				       "uids 200000-200015"))
	TH_LOG("%s", log);
	free(log);
}

/* In a child as uid (become_with_coloc, gid uid): req sent; whether its answer is ok. */
static bool request_ok_as(const char *sock, uid_t uid, const char *req)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		char line[4096] = "";
		int fd;

		become_with_coloc(uid, uid);
		fd = tu_connect(sock);
		set_recv_timeout(fd, 10);
		if (fd < 0 || send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req) ||
		    tu_read_line(fd, line, sizeof(line)) <= 0)
			_exit(2);
		_exit(strstr(line, "\"ok\":true") ? 0 : 1);
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st);
}

/* The entries of root's listing cmd ("list": serving tenants, "tenants": attributed) uid owns. */
static int owned_by(const char *sock, const char *cmd, uid_t uid)
{
	char req[64];
	struct json_object *resp, *arr;
	int n = 0;

	snprintf(req, sizeof(req), "{\"cmd\":\"%s\"}\n", cmd);
	resp = request_json(sock, req);
	if (!resp_ok(resp) || !json_object_object_get_ex(resp, "tenants", &arr)) {
		json_object_put(resp);
		return -1;
	}
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *owner;

		n += json_object_object_get_ex(json_object_array_get_idx(arr, i), "owner", &owner) &&
		     json_object_get_int64(owner) == uid;
	}
	json_object_put(resp);
	return n;
}

/* The real path of models/mobilenet_v2.model into real (PATH_MAX); false when there is none. */
static bool mobilenet_path(char *real)
{
	const char *root = getenv("COLOC_ROOT");
	char src[PATH_MAX];

	snprintf(src, sizeof(src), "%s/models/mobilenet_v2.model", root ? root : ".");
	return realpath(src, real) != NULL;
}

/*
 * The fixture's colocd started again with no subordinate ids,
 * --cache-dir and more (at most 2 options); then uid 200001, not yet
 * subordinate, submits model real as tenant m. 0, or -1 with why in out.
 */
static int submit_before_the_range(FIXTURE_DATA(colocd) * self, const char *real,
				   const char *const *more, char *subuid, char *subgid, char *out,
				   size_t len)
{
	const char *extra[5] = { "--cache-dir", cache_dir };
	char model[192], colocctl[512], cmd[PATH_MAX + 512];
	const char *submit[] = { "submit", "m", model, "--qos-ms", "60000", NULL };

	for (int i = 0; more && more[i] && i < 2; i++)
		extra[2 + i] = more[i];
	if (tu_quick_profile(real, cache_dir, out, len))
		return -1;
	if (restart_with_subids_and(self, "", "", subuid, subgid, extra)) {
		snprintf(out, len, "colocd did not start again");
		return -1;
	}
	/* the member reads the model it submits */
	snprintf(model, sizeof(model), "%s/m.model", self->dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 0644 '%s'", real, model, model);
	if (system(cmd)) {
		snprintf(out, len, "%s failed", cmd);
		return -1;
	}
	tu_bin("colocctl", colocctl, sizeof(colocctl));
	return tu_colocctl_as(colocctl, self->sock, 200001, submit, out, len) ? -1 : 0;
}

/*
 * s22 review MEDIUM 2's rest: what a uid now subordinate submitted before
 * the reload (a serving tenant with its executors, an attributed tenant of
 * its own process) is removed as its remove would, and the log counts it.
 */
TEST_F_TIMEOUT(colocd, conns__a_reload_removes_the_tenants_of_uids_now_subordinate, 600)
{
	char subuid[SUBID_PATH_LEN], subgid[SUBID_PATH_LEN], real[PATH_MAX], out[8192], req[128];
	char *log;
	pid_t sleeper;

	if (!getgrnam(COLOC_GROUP))
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	if (!mobilenet_path(real))
		SKIP(return, "no models/mobilenet_v2.model (set COLOC_ROOT to the repo root)");
	ASSERT_EQ(0, submit_before_the_range(self, real, NULL, subuid, subgid, out, sizeof(out)))
	TH_LOG("%s", out);
	sleeper = owners_sleeper_as(200001, 200001);
	ASSERT_LT(0, sleeper);
	snprintf(req, sizeof(req), "{\"cmd\":\"tenant-add\",\"name\":\"a\",\"pids\":[%d]}\n",
		 (int)sleeper);
	EXPECT_TRUE(request_ok_as(self->sock, 200001, req));
	ASSERT_EQ(1, owned_by(self->sock, "list", 200001));
	/* a and the executors' own attribution under m */
	ASSERT_EQ(2, owned_by(self->sock, "tenants", 200001));
	ASSERT_FALSE(tu_no_children(self->pid, 0));
	ASSERT_EQ(0, tu_write_file(subuid, "member:200000:65536\n", 20));
	ASSERT_EQ(0, kill(self->pid, SIGHUP));
	log = log_with(self->log, "2 tenants of subordinate uids removed");
	EXPECT_TRUE(log && strstr(log, "2 tenants of subordinate uids removed")) TH_LOG("%s", log);
	free(log);
	/* main: m ready with its executors, a attributed */
	EXPECT_TRUE(tu_no_children(self->pid, 10000));
	EXPECT_EQ(0, owned_by(self->sock, "list", 200001));
	EXPECT_EQ(0, owned_by(self->sock, "tenants", 200001));
	EXPECT_FALSE(request_ok_as(self->sock, 200001, "{\"cmd\":\"ping\"}\n"));
	owners_reap(sleeper);
}

/* The same range given while colocd is down: the tenant --state kept for the uid stays out. */
TEST_F_TIMEOUT(colocd, conns__a_tenant_kept_for_a_uid_now_subordinate_does_not_come_back, 600)
{
	char subuid[SUBID_PATH_LEN], subgid[SUBID_PATH_LEN], real[PATH_MAX], out[8192];
	char state[192], want[320], *log;
	const char *more[] = { "--state", state, NULL },
		   *again[] = { "--cache-dir", cache_dir, "--state", state, NULL };

	if (!getgrnam(COLOC_GROUP))
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	if (!mobilenet_path(real))
		SKIP(return, "no models/mobilenet_v2.model (set COLOC_ROOT to the repo root)");
	snprintf(state, sizeof(state), "%s/state.json", self->dir);
	ASSERT_EQ(0, submit_before_the_range(self, real, more, subuid, subgid, out, sizeof(out)))
	TH_LOG("%s", out);
	ASSERT_EQ(0, restart_with_subids_and(self, "member:200000:65536\n", "", subuid, subgid,
					     again));
	snprintf(want, sizeof(want),
		 "tenant 200001:m from %s did not come back: its owner, uid 200001, is a "
		 "subordinate id now",
		 state);
	log = log_with(self->log, want);
	EXPECT_TRUE(log && strstr(log, want)) TH_LOG("%s", log);
	free(log);
	/* main: it came back */
	EXPECT_EQ(0, owned_by(self->sock, "list", 200001));
}

TEST_HARNESS_MAIN
