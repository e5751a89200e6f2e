// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * fd_closer's table through a real colocd (daemon/fd_closer_table.c, s21
 * review HIGH 1): HANGERS members each hand a close that hangs (a
 * lingering TCP socket in flight inside an AF_UNIX socket, with a ping),
 * every member entry with it. Then a member with nothing pending is
 * served, a member admitted before the table filled hands one more such
 * close and is served, and root's memfd is closed within a drain: main
 * refused every other member as "stuck" and kept root's closes behind the
 * shared entry that last member hung. And while one member's close hangs,
 * root's and another member's pings are answered within ANSWER_MS, as on
 * main. And before Linux 6.16 a member's refused subordinate uids hang one
 * entry, not one each (s22 review HIGH 1). The real binary, as a process.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "coloc/protocol.h"
#include "fd_closer.h"
#include "mono_clock.h"
#include "proc_fds.h"
#include "proc_tasks.h"
#include "testutil.h"
#include "colocd_fixture.h"

/* main's member entries; past them main's uids shared its last entry */
#define HANGERS (FD_CLOSER_UIDS - 1)
#define FIRST_HANGER_UID 70000
#define LATE_UID 69998
#define NEW_UID 69999
#define OTHER_UID 69997
/* within colocd's listen backlog, all connected while it is stopped */
#define REFUSED_UIDS 48
#define SUBORDINATE_UID 200001
#define LINGER_S 120
#define ANSWER_S 5
/* a ping's bound while others hang: main meets it too */
#define ANSWER_MS 250
#define PINGS 50
#define PING "{\"cmd\":\"ping\"}\n"
/* a ping line in two: colocd holds what came with the head until the end comes */
#define PING_HEAD "{\"cmd\":\"ping\""
#define PING_END "}\n"
#define ROOTS_MEMFD "closer-table-root"

/* In a child: becomes uid, a member, and dies with the test (a failed assertion leaves no child). */
static void become_member_for_the_test(uid_t uid)
{
	if (tu_become_member(uid) || prctl(PR_SET_PDEATHSIG, SIGKILL))
		_exit(99);
}

/*
 * An AF_UNIX socket holding the last reference of a TCP socket that
 * lingers LINGER_S on close (its listener in *listener, never accepting):
 * whoever closes the socket last waits that long, or until the listener
 * goes.
 */
static int hanging_socket(int *listener)
{
	int sp[2], t = tu_lingering_socket(0, LINGER_S, listener);

	if (t < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) ||
	    tu_send_fds(sp[1], "x", 1, &t, 1, 0))
		return -1;
	close(t);
	close(sp[1]);
	return sp[0];
}

/*
 * A child as uid: hands colocd a hanging socket on a ping line, closing
 * its own copy before the line ends (so colocd's close is the last), again
 * while colocd has no connection to spare, and writes 'k' on report once
 * answered ok, else 'f'. Holds the listeners until killed.
 */
static void hanger(const char *sock, uid_t uid, int report)
{
	char line[512], verdict = 'f';
	int listener, s = -1;

	become_member_for_the_test(uid);
	for (int try = 0; try < 500 && verdict != 'k'; try++) {
		int conn = tu_connect(sock);

		if (s < 0)
			s = hanging_socket(&listener);
		line[0] = '\0';
		if (conn >= 0 && s >= 0 && !tu_send_fds(conn, PING_HEAD, strlen(PING_HEAD), &s, 1, 0)) {
			close(s);
			s = -1;
			set_recv_timeout(conn, ANSWER_S);
			if (send(conn, PING_END, strlen(PING_END), MSG_NOSIGNAL) > 0 &&
			    tu_read_line(conn, line, sizeof(line)) > 0 && strstr(line, "\"ok\":true"))
				verdict = 'k';
		}
		close(conn);
		if (verdict != 'k')
			usleep(10000 + (unsigned int)(uid % 17) * 1000);
	}
	if (write(report, &verdict, 1) != 1)
		_exit(98);
	for (;;)
		pause();
}

/*
 * A child admitted before the table fills: a ping carrying a hanging
 * socket, all but its end, then a space every second (so that colocd
 * sees it progress) until a byte on go; then the end, and its answer on
 * report. Holds the listener until killed.
 */
static void late_member(const char *sock, int report, int go)
{
	char line[512] = "no answer";
	struct pollfd wait_go = { .fd = go, .events = POLLIN };
	int listener, s, conn;

	become_member_for_the_test(LATE_UID);
	s = hanging_socket(&listener);
	conn = tu_connect(sock);
	if (s < 0 || conn < 0 || tu_send_fds(conn, PING_HEAD, strlen(PING_HEAD), &s, 1, 0))
		_exit(98);
	close(s);
	if (write(report, "r", 1) != 1)
		_exit(97);
	while (poll(&wait_go, 1, 1000) == 0)
		send(conn, " ", 1, MSG_NOSIGNAL);
	set_recv_timeout(conn, ANSWER_S);
	send(conn, PING_END, strlen(PING_END), MSG_NOSIGNAL);
	tu_read_line(conn, line, sizeof(line));
	if (write(report, line, strlen(line)) < 0)
		_exit(96);
	for (;;)
		pause();
}

/*
 * A child as uid (nothing handed) pinging PINGS times on one connection:
 * writes the slowest answer's ms on report, or -1 if one was not ok.
 */
static void member_pings(const char *sock, uid_t uid, int report)
{
	char out[32];
	int conn, worst;

	become_member_for_the_test(uid);
	conn = tu_connect(sock);
	set_recv_timeout(conn, ANSWER_S);
	worst = conn < 0 ? -1 : 0;
	for (int i = 0; i < PINGS && worst >= 0; i++) {
		uint64_t t0 = coloc_now_ns();
		int ms;

		if (ping_on(conn, NULL, 0) != 1) {
			worst = -1;
			break;
		}
		ms = (int)((coloc_now_ns() - t0) / 1000000);
		if (ms > worst)
			worst = ms;
	}
	snprintf(out, sizeof(out), "%d", worst);
	_exit(write(report, out, strlen(out)) > 0 ? 0 : 98);
}

/* The slowest of PINGS pings of uid's (a child), in ms; -1 when one was refused or lost. */
static int pings_of(const char *sock, uid_t uid)
{
	char out[32] = "";
	int report[2], st;
	ssize_t n;
	pid_t pid;

	if (pipe(report))
		return -2;
	pid = fork();
	if (pid == 0) {
		close(report[0]);
		member_pings(sock, uid, report[1]);
	}
	close(report[1]);
	n = read(report[0], out, sizeof(out) - 1);
	close(report[0]);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || n <= 0)
		return -2;
	return atoi(out);
}

/* The slowest of PINGS pings on root's connection fd, in ms; -1 when one failed. */
static int roots_pings(int fd)
{
	int worst = 0;

	for (int i = 0; i < PINGS; i++) {
		uint64_t t0 = coloc_now_ns();
		int ms;

		if (ping_on(fd, NULL, 0) != 1)
			return -1;
		ms = (int)((coloc_now_ns() - t0) / 1000000);
		if (ms > worst)
			worst = ms;
	}
	return worst;
}

/* Whether colocd pid holds a memfd named name (its link: "/memfd:NAME (deleted)"). */
static bool colocd_holds_memfd(pid_t pid, const char *name)
{
	char want[128];

	snprintf(want, sizeof(want), "/memfd:%s ", name);
	return proc_fds_to(pid, want) > 0;
}

/* Root hands colocd a 1 MiB memfd with a ping on fd; ms until colocd let it go, -1 if not in 5 s. */
static int roots_memfd_closed_after(pid_t colocd, int fd)
{
	char line[512];
	int memfd = memfd_create(ROOTS_MEMFD, MFD_CLOEXEC);
	uint64_t t0;

	if (memfd < 0 || ftruncate(memfd, 1 << 20) || tu_send_fds(fd, PING, strlen(PING), &memfd, 1, 0))
		return -2;
	close(memfd);
	if (tu_read_line(fd, line, sizeof(line)) <= 0)
		return -2;
	t0 = coloc_now_ns();
	while (colocd_holds_memfd(colocd, ROOTS_MEMFD) && coloc_now_ns() - t0 < 5000000000ull)
		usleep(5000);
	return colocd_holds_memfd(colocd, ROOTS_MEMFD) ? -1 : (int)((coloc_now_ns() - t0) / 1000000);
}

TEST_F_TIMEOUT(colocd, table__with_every_entry_hung_a_member_and_roots_closes_are_served, 300)
{
	pid_t kids[HANGERS + 1], late;
	int report[2], late_report[2], go[2], root, ok = 0, hung_ms, threads, new_worst, root_worst;
	int freed;
	uint64_t t0;
	char byte, late_line[512] = "";
	ssize_t n;

	if (!getgrnam(COLOC_GROUP))
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	ASSERT_EQ(0, chmod(self->dir, 0755));
	ASSERT_EQ(0, pipe(late_report));
	ASSERT_EQ(0, pipe(go));
	late = fork();
	ASSERT_GE(late, 0);
	if (late == 0)
		late_member(self->sock, late_report[1], go[0]);
	close(late_report[1]);
	close(go[0]);
	ASSERT_EQ(1, read(late_report[0], &byte, 1));
	ASSERT_EQ(0, pipe(report));
	t0 = coloc_now_ns();
	for (int i = 0; i < HANGERS; i++) {
		kids[i] = fork();
		ASSERT_GE(kids[i], 0);
		if (kids[i] == 0)
			hanger(self->sock, FIRST_HANGER_UID + (uid_t)i, report[1]);
	}
	close(report[1]);
	for (int i = 0; i < HANGERS && read(report[0], &byte, 1) == 1; i++)
		ok += byte == 'k';
	ASSERT_EQ(HANGERS, ok);
	hung_ms = (int)((coloc_now_ns() - t0) / 1000000);
	/* now: an idle connection is closed after colocd's --conn-timeout-ms */
	root = tu_connect(self->sock);
	ASSERT_GE(root, 0);
	set_recv_timeout(root, ANSWER_S);
	/* each close hung past FD_CLOSER_STUCK_MS: every member entry taken (main's every one) */
	usleep((FD_CLOSER_STUCK_MS + 500) * 1000);
	threads = tu_tasks_each(self->pid, NULL, NULL);
	ASSERT_GT(threads, HANGERS);
	/* main: refused, "this user's descriptors are still being closed" */
	new_worst = pings_of(self->sock, NEW_UID);
	root_worst = roots_pings(root);
	/* the late member's close hangs too: main sent it to its shared entry, root's too */
	ASSERT_EQ(1, write(go[1], "g", 1));
	n = read(late_report[0], late_line, sizeof(late_line) - 1);
	late_line[n > 0 ? n : 0] = '\0';
	usleep((FD_CLOSER_STUCK_MS + 500) * 1000);
	freed = roots_memfd_closed_after(self->pid, root);
	TH_LOG("%d members' closes hung in %d ms (colocd's threads %d); a new member's slowest "
	       "ping %d ms, root's %d ms; the late member was answered %s; root's memfd let go "
	       "after %d ms",
	       HANGERS, hung_ms, threads, new_worst, root_worst, late_line, freed);
	EXPECT_GE(new_worst, 0);
	EXPECT_LT(new_worst, ANSWER_MS);
	EXPECT_GE(root_worst, 0);
	EXPECT_LT(root_worst, ANSWER_MS);
	EXPECT_NE(NULL, strstr(late_line, "\"ok\":true"));
	/* main: still open when the hangers let go, a minute later */
	EXPECT_GE(freed, 0);
	EXPECT_LE(freed, 2 * (int)FD_CLOSER_DRAIN_MS + 300);
	for (int i = 0; i < HANGERS; i++)
		kill(kids[i], SIGKILL);
	kill(late, SIGKILL);
	for (int i = 0; i < HANGERS; i++)
		waitpid(kids[i], NULL, 0);
	waitpid(late, NULL, 0);
	close(report[0]);
	close(late_report[0]);
	close(go[1]);
	close(root);
}

TEST_F_TIMEOUT(colocd, table__one_members_hang_slows_no_one_else, 120)
{
	int report[2], root, worst_member, worst_root;
	char byte;
	pid_t kid;

	if (!getgrnam(COLOC_GROUP))
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	ASSERT_EQ(0, chmod(self->dir, 0755));
	root = tu_connect(self->sock);
	ASSERT_GE(root, 0);
	set_recv_timeout(root, ANSWER_S);
	ASSERT_EQ(0, pipe(report));
	kid = fork();
	ASSERT_GE(kid, 0);
	if (kid == 0)
		hanger(self->sock, FIRST_HANGER_UID, report[1]);
	close(report[1]);
	ASSERT_EQ(1, read(report[0], &byte, 1));
	ASSERT_EQ('k', byte);
	usleep((FD_CLOSER_STUCK_MS + 500) * 1000);
	worst_member = pings_of(self->sock, OTHER_UID);
	worst_root = roots_pings(root);
	TH_LOG("while one member's close hangs: another member's slowest ping %d ms, root's %d ms",
	       worst_member, worst_root);
	EXPECT_GE(worst_member, 0);
	EXPECT_LT(worst_member, ANSWER_MS);
	EXPECT_GE(worst_root, 0);
	EXPECT_LT(worst_root, ANSWER_MS);
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	close(report[0]);
	close(root);
}

/*
 * A child as a subordinate uid (the coloc group kept, as a member's user
 * namespace keeps it): sends a lingering TCP socket with a ping while
 * colocd is stopped, so before the accept (before 6.16 nothing stops it),
 * closes its own copy and writes 'r' on report; then 's' once refused as
 * a subordinate id, else 'f'. Holds the listener until killed.
 */
static void refused_sender(const char *sock, uid_t uid, int report)
{
	char line[512] = "", verdict;
	int listener, t, conn;

	become_member_for_the_test(uid);
	t = tu_lingering_socket(0, LINGER_S, &listener);
	conn = tu_connect(sock);
	if (t < 0 || conn < 0 || tu_send_fds(conn, PING, strlen(PING), &t, 1, 0))
		_exit(98);
	close(t);
	if (write(report, "r", 1) != 1)
		_exit(97);
	set_recv_timeout(conn, 30);
	tu_read_line(conn, line, sizeof(line));
	verdict = strstr(line, "subordinate ids") ? 's' : 'f';
	if (write(report, &verdict, 1) != 1)
		_exit(96);
	for (;;)
		pause();
}

/*
 * s22 review HIGH 1: before Linux 6.16 (COLOCD_TEST_NO_PASSRIGHTS) each
 * refused subordinate uid's close hung an entry, a thread, of its own:
 * main's colocd ends with REFUSED_UIDS more threads (and past its table's
 * 511, every member refused and root's closes held). Here they are one
 * entry, the range's.
 */
TEST_F_TIMEOUT(colocd, table__refused_subordinate_uids_hang_one_entry_not_one_each, 120)
{
	char subuid[SUBID_PATH_LEN], subgid[SUBID_PATH_LEN], byte;
	pid_t kids[REFUSED_UIDS];
	int report[2], root, before, threads, refused = 0, member_worst, freed, started;

	if (!getgrnam(COLOC_GROUP))
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	setenv("COLOCD_TEST_NO_PASSRIGHTS", "1", 1);
	started = restart_with_subids(self, "member:200000:65536\n", "member:300000:65536\n",
				      subuid, subgid);
	unsetenv("COLOCD_TEST_NO_PASSRIGHTS");
	ASSERT_EQ(0, started);
	before = tu_tasks_each(self->pid, NULL, NULL);
	ASSERT_EQ(0, pipe(report));
	ASSERT_EQ(0, kill(self->pid, SIGSTOP));
	for (int i = 0; i < REFUSED_UIDS; i++) {
		kids[i] = fork();
		ASSERT_GE(kids[i], 0);
		if (kids[i] == 0)
			refused_sender(self->sock, SUBORDINATE_UID + (uid_t)i, report[1]);
	}
	close(report[1]);
	for (int i = 0; i < REFUSED_UIDS; i++)
		ASSERT_EQ(1, read(report[0], &byte, 1));
	ASSERT_EQ(0, kill(self->pid, SIGCONT));
	for (int i = 0; i < REFUSED_UIDS && read(report[0], &byte, 1) == 1; i++)
		refused += byte == 's';
	ASSERT_EQ(REFUSED_UIDS, refused);
	usleep((FD_CLOSER_STUCK_MS + 500) * 1000);
	threads = tu_tasks_each(self->pid, NULL, NULL);
	member_worst = pings_of(self->sock, OTHER_UID);
	root = tu_connect(self->sock);
	ASSERT_GE(root, 0);
	set_recv_timeout(root, ANSWER_S);
	freed = roots_memfd_closed_after(self->pid, root);
	TH_LOG("%d subordinate uids refused, each close hung: colocd's threads %d -> %d; a "
	       "member's slowest ping %d ms; root's memfd let go after %d ms",
	       REFUSED_UIDS, before, threads, member_worst, freed);
	/* main: before + REFUSED_UIDS */
	EXPECT_LE(threads, before + 2);
	EXPECT_GE(member_worst, 0);
	EXPECT_LT(member_worst, ANSWER_MS);
	EXPECT_GE(freed, 0);
	EXPECT_LE(freed, 2 * (int)FD_CLOSER_DRAIN_MS + 300);
	for (int i = 0; i < REFUSED_UIDS; i++)
		kill(kids[i], SIGKILL);
	for (int i = 0; i < REFUSED_UIDS; i++)
		waitpid(kids[i], NULL, 0);
	close(report[0]);
	close(root);
}

TEST_HARNESS_MAIN
