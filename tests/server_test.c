// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's control socket (daemon/server.c) served in this process on a real
 * event loop, its clients real Unix sockets: the line framing (split and
 * batched writes, CRLF, a last line cut by EOF), a line over the limit, an
 * infer's binary input after its line (read whole before the handler sees
 * the request, kept by the handler without a copy, with when its request
 * began; a line the infer handler cannot take comes without), deferred answers (sent at once as far as the
 * socket takes them, the rest in order), many clients at once,
 * descriptors riding on a line, requests stamped with the read of their
 * first byte, an answer for a client gone (nothing queued), a client that
 * never reads its answers cut past SERVER_OUT_MAX, and who the
 * peer is (SO_PEERCRED): root, a member of the coloc group, and a user who
 * is neither. The handler echoes each line with the uid the server says
 * sent it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "coloc/protocol.h"
#include "loop.h"
#include "fd_closer.h"
#include "server.h"
#include "mono_clock.h"
#include "testutil.h"

#define MS 1000000ull
#define WATCHDOG_NS (20000 * MS)
#define NOBODY 65534
#define MANY 40 /* clients at once: more than a uid's share, fewer than root may hold */

struct echo {
	int lines; /* request lines the handler saw */
	void *kept; /* a payload's buffer the handler kept (tenant "keep") */
	size_t kept_len;
	__u64 kept_first_byte_ns, kept_done_ns; /* its request's first byte, its payload in */
	int oversize; /* times it was told of a line over the limit */
	int nr_fds; /* descriptors that came with the last line */
	struct server *srv;
	__u64 deferred_conn;
	__u64 deferred[16]; /* the connections of the first "defer" lines, in order */
	int nr_deferred;
	__u64 stamps[4]; /* first_byte_ns of the "stamp" lines, in order */
	int nr_stamps;
};

FIXTURE(server)
{
	struct loop *loop;
	struct server *srv;
	struct echo echo;
	char dir[64];
	char sock[128];
};

/* An infer line with its bytes: echoed, or kept (tenant "keep") instead of copied. */
static char *echo_payload(struct echo *e, struct server_req *req, const char *line)
{
	char *out;

	if (!strstr(line, "\"tenant\":\"keep\"")) {
		if (asprintf(&out, "payload:%.*s\n", (int)req->payload_bytes,
			     (const char *)req->payload) < 0)
			return NULL;
		return out;
	}
	free(e->kept);
	e->kept = req->payload;
	e->kept_len = req->payload_bytes;
	e->kept_first_byte_ns = req->first_byte_ns;
	e->kept_done_ns = coloc_now_ns();
	req->payload = NULL;
	return strdup("kept\n");
}

static char *echo_handle(void *ctx, struct server_req *req, const char *line, size_t len)
{
	struct echo *e = ctx;
	char *out;

	if (!line) {
		e->oversize++;
		return strdup("oversize\n");
	}
	e->lines++;
	e->nr_fds = req->nr_fds;
	if (req->payload)
		return echo_payload(e, req, line);
	if (!strcmp(line, "defer")) {
		e->deferred_conn = req->conn;
		if (e->nr_deferred < 16)
			e->deferred[e->nr_deferred++] = req->conn;
		server_req_defer(req);
		return NULL;
	}
	if (!strncmp(line, "stamp", 5) && e->nr_stamps < 4) {
		e->stamps[e->nr_stamps++] = req->first_byte_ns;
		return strdup("stamped\n");
	}
	if (!strcmp(line, "early")) { /* answered from within the handler, as a query done at once */
		server_send(e->srv, req->conn, "early\n", NULL, 0);
		server_req_defer(req);
		return NULL;
	}
	if (asprintf(&out, "%u:%.*s\n", (unsigned int)req->uid, (int)len, line) < 0)
		return NULL;
	return out;
}

FIXTURE_SETUP(server)
{
	struct server_config cfg = { .timeout_ms = 30000 };
	struct coloc_err err = { 0 };

	self->srv = NULL;
	self->loop = NULL;
	self->dir[0] = '\0';
	if (geteuid() != 0)
		SKIP(return, "needs root: the socket's directory must be root's");
	signal(SIGPIPE, SIG_IGN);
	snprintf(self->dir, sizeof(self->dir), "/tmp/coloc-server-test-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->sock, sizeof(self->sock), "%s/colocd.sock", self->dir);
	cfg.socket_path = self->sock;
	memset(&self->echo, 0, sizeof(self->echo));
	ASSERT_EQ(0, loop_new(&self->loop, &err));
	ASSERT_EQ(0, server_open(&self->srv, self->loop, &cfg, &err))
	TH_LOG("server_open: %s", coloc_err_str(&err));
	self->echo.srv = self->srv;
	ASSERT_EQ(0, server_listen(self->srv, echo_handle, &self->echo, &err))
	TH_LOG("server_listen: %s", coloc_err_str(&err));
}

FIXTURE_TEARDOWN(server)
{
	free(self->echo.kept);
	server_close(self->srv);
	loop_free(self->loop);
	if (self->dir[0])
		rmdir(self->dir);
}

/* A client's side: what it read, until it has want_lines lines or the server hung up. */
struct client {
	int fd;
	char buf[4096];
	size_t len;
	int want_lines;
	bool eof;
	bool done;
	struct loop_source *src;
};

struct run {
	struct loop *loop;
	struct client *clients;
	int nr, nr_done;
	bool wait_eof; /* done only once the server closed too */
};

static int client_lines(const struct client *c)
{
	int n = 0;

	for (size_t i = 0; i < c->len; i++)
		n += c->buf[i] == '\n';
	return n;
}

static struct run *the_run;

static void on_client(struct loop_source *src, int fd, unsigned int revents, void *ctx)
{
	struct client *c = ctx;
	ssize_t n = 0;

	(void)revents;
	if (c->len < sizeof(c->buf) - 1)
		n = read(fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len);
	if (n > 0)
		c->len += (size_t)n;
	else if (n == 0 || (errno != EAGAIN && errno != EINTR))
		c->eof = true;
	c->buf[c->len] = '\0';
	if (!c->done && (the_run->wait_eof ? c->eof : client_lines(c) >= c->want_lines || c->eof)) {
		c->done = true;
		loop_source_remove(src);
		c->src = NULL;
		if (++the_run->nr_done == the_run->nr)
			loop_exit(the_run->loop, 0);
	}
}

static void on_watchdog(struct loop_source *src, __u64 now, void *ctx)
{
	(void)src;
	(void)now;
	loop_exit(ctx, -ETIMEDOUT);
}

/* Serves for ms, whatever comes. */
static void serve_for(struct loop *loop, unsigned int ms)
{
	struct coloc_err err = { 0 };

	if (!loop_add_timer(loop, NULL, ms * MS, 0, on_watchdog, loop))
		loop_run(loop, &err);
}

/* Serves until every client is done; 0, or -ETIMEDOUT when the watchdog ended it. */
static int serve_until_done(struct loop *loop, struct client *clients, int nr, bool wait_eof)
{
	struct run run = { .loop = loop, .clients = clients, .nr = nr, .wait_eof = wait_eof };
	struct loop_source *watchdog = NULL;
	struct coloc_err err = { 0 };
	int ret;

	the_run = &run;
	for (int i = 0; i < nr; i++)
		if (loop_add_poll(loop, &clients[i].src, clients[i].fd, POLLIN, on_client,
				  &clients[i]))
			return -ENOMEM;
	if (loop_add_timer(loop, &watchdog, WATCHDOG_NS, 0, on_watchdog, loop))
		return -ENOMEM;
	ret = loop_run(loop, &err);
	loop_source_remove(watchdog);
	for (int i = 0; i < nr; i++)
		loop_source_remove(clients[i].src);
	return ret;
}

static int connect_to(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		close(fd);
		return -1;
	}
	return fd;
}

static ssize_t send_str(int fd, const char *s)
{
	return send(fd, s, strlen(s), MSG_NOSIGNAL);
}

/* The rest of a request, written from the loop once the server has read the first part. */
struct later {
	int fd;
	const char *text;
	bool shut; /* then end the client's side of the stream */
};

static void on_write_later(struct loop_source *src, __u64 now, void *ctx)
{
	struct later *l = ctx;

	(void)src;
	(void)now;
	send_str(l->fd, l->text);
	if (l->shut)
		shutdown(l->fd, SHUT_WR);
}

TEST_F(server, listen__frames_split_and_batched_lines_crlf_and_a_last_line_cut_by_eof)
{
	struct client c = { .fd = connect_to(self->sock) };
	struct later rest = { .text = "ta\r\ngamma", .shut = true };

	ASSERT_GE(c.fd, 0);
	rest.fd = c.fd;
	ASSERT_EQ(8, send_str(c.fd, "alpha\nbe"));
	ASSERT_EQ(0, loop_add_timer(self->loop, NULL, 20 * MS, 0, on_write_later, &rest));
	/* answered line by line, in order; the server hangs up once gamma is answered */
	ASSERT_EQ(0, serve_until_done(self->loop, &c, 1, true));
	EXPECT_STREQ("0:alpha\n0:beta\n0:gamma\n", c.buf);
	EXPECT_EQ(3, self->echo.lines);
	close(c.fd);
}

TEST_F(server, listen__a_line_over_the_limit_gets_the_handlers_answer_then_the_connection_closes)
{
	struct client c = { .fd = connect_to(self->sock) };
	size_t big = COLOC_MAX_REQUEST + 100;
	char *line = malloc(big + 16);

	ASSERT_GE(c.fd, 0);
	ASSERT_NE(NULL, line);
	/* an ordinary line, one too long, and one the server must never read */
	memset(line, 'x', big);
	memcpy(line + big, "\nlost\n", 7);
	ASSERT_EQ(3, send_str(c.fd, "ok\n"));
	ASSERT_EQ((ssize_t)(big + 6), send(c.fd, line, big + 6, MSG_NOSIGNAL));
	free(line);
	ASSERT_EQ(0, serve_until_done(self->loop, &c, 1, true));
	EXPECT_STREQ("0:ok\noversize\n", c.buf);
	EXPECT_EQ(1, self->echo.lines);
	EXPECT_EQ(1, self->echo.oversize);
	close(c.fd);
}

#define INFER_LINE(tenant, bytes) \
	"{\"cmd\":\"infer\",\"tenant\":\"" tenant "\",\"tag\":1,\"input_bytes\":" #bytes "}\n"

TEST_F(server, listen__an_infers_bytes_come_with_its_line_whole_newlines_and_all)
{
	const char *req = INFER_LINE("echo", 5) "HE\nLOnext\n";
	struct client c = { .fd = connect_to(self->sock), .want_lines = 2 };

	ASSERT_GE(c.fd, 0);
	/* the payload holds a newline: it must not be read as the end of a line */
	ASSERT_EQ((ssize_t)strlen(req), send_str(c.fd, req));
	ASSERT_EQ(0, serve_until_done(self->loop, &c, 1, false));
	EXPECT_STREQ("payload:HE\nLO\n0:next\n", c.buf);
	EXPECT_EQ(2, self->echo.lines);
	close(c.fd);
}

/*
 * A line the infer handler cannot take (no "tag", input in a memfd, more
 * than COLOC_MAX_PAYLOAD) and a line that is not JSON come without bytes:
 * what follows each is the next line.
 */
TEST_F(server, listen__a_line_the_infer_handler_cannot_take_comes_without_bytes)
{
	const char *lines[] = {
		"{\"cmd\":\"infer\",\"tenant\":\"echo\",\"input_bytes\":5}",
		"{\"cmd\":\"infer\",\"tenant\":\"echo\",\"tag\":1,\"input_bytes\":5,"
		"\"input\":\"memfd\"}",
		"{\"cmd\":\"infer\",\"tenant\":\"echo\",\"tag\":1,\"input_bytes\":1099511627776}",
		"infer 5",
	};

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		struct client c = { .fd = connect_to(self->sock), .want_lines = 2 };
		char want[512];

		ASSERT_GE(c.fd, 0);
		ASSERT_GT(send_str(c.fd, lines[i]), 0);
		ASSERT_EQ(6, send_str(c.fd, "\nnext\n"));
		ASSERT_EQ(0, serve_until_done(self->loop, &c, 1, false));
		snprintf(want, sizeof(want), "0:%s\n0:next\n", lines[i]);
		EXPECT_STREQ(want, c.buf) TH_LOG("line %zu", i);
		close(c.fd);
	}
	EXPECT_EQ(8, self->echo.lines);
}

static void on_answer_deferred(struct loop_source *src, __u64 now, void *ctx)
{
	struct echo *e = ctx;

	(void)src;
	(void)now;
	server_send(e->srv, e->deferred_conn, "deferred\n", "PAY", 3);
}

TEST_F(server, send__a_deferred_answer_reaches_its_connection_and_a_gone_one_is_enotconn)
{
	struct client c = { .fd = connect_to(self->sock), .want_lines = 2 };

	ASSERT_GE(c.fd, 0);
	ASSERT_EQ(12, send_str(c.fd, "defer\nafter\n"));
	/* the answer is owed once the server has read "defer": only then may it come */
	for (int i = 0; i < 1000 && !self->echo.deferred_conn; i++)
		serve_for(self->loop, 5);
	ASSERT_NE(0, self->echo.deferred_conn);
	ASSERT_EQ(0, loop_add_timer(self->loop, NULL, 20 * MS, 0, on_answer_deferred,
				    &self->echo));
	/* the later line is answered at once; the deferred answer, with its payload, after */
	ASSERT_EQ(0, serve_until_done(self->loop, &c, 1, false));
	EXPECT_STREQ("0:after\ndeferred\nPAY", c.buf);
	ASSERT_NE(0, self->echo.deferred_conn);
	/* an owed answer to a connection that ended meanwhile finds it gone */
	self->echo.deferred_conn = 0;
	ASSERT_EQ(6, send_str(c.fd, "defer\n"));
	for (int i = 0; i < 1000 && !self->echo.deferred_conn; i++)
		serve_for(self->loop, 5);
	ASSERT_NE(0, self->echo.deferred_conn);
	close(c.fd);
	/* the server learns of the hang-up on its next wakeup */
	for (int i = 0; i < 1000 && server_send(self->srv, self->echo.deferred_conn, "x\n", NULL,
						0) != -ENOTCONN;
	     i++)
		serve_for(self->loop, 5);
	EXPECT_EQ(-ENOTCONN, server_send(self->srv, self->echo.deferred_conn, "x\n", NULL, 0));
}

/*
 * A client that half-closed (shutdown(SHUT_WR)) while an answer was owed
 * gets it, then the server's close at once: the answer went out outside
 * the loop's turn for the connection, which must still come back to end it.
 */
TEST_F(server, send__a_half_closed_client_gets_its_deferred_answer_then_the_close)
{
	struct client c = { .fd = connect_to(self->sock) };

	ASSERT_GE(c.fd, 0);
	ASSERT_EQ(6, send_str(c.fd, "defer\n"));
	ASSERT_EQ(0, shutdown(c.fd, SHUT_WR));
	for (int i = 0; i < 1000 && !self->echo.deferred_conn; i++)
		serve_for(self->loop, 5);
	ASSERT_NE(0, self->echo.deferred_conn);
	serve_for(self->loop, 50); /* the server reads the client's EOF before it answers */
	ASSERT_EQ(0, loop_add_timer(self->loop, NULL, 20 * MS, 0, on_answer_deferred,
				    &self->echo));
	ASSERT_EQ(0, serve_until_done(self->loop, &c, 1, true))
	TH_LOG("no close after the last answer: got '%s'", c.buf);
	EXPECT_STREQ("deferred\nPAY", c.buf);
	close(c.fd);
}

/*
 * An answer sent from within its own handler, before it defers (a query
 * that completes at once): nothing stays owed, so a half-closed client is
 * closed after it instead of holding its connection for ever.
 */
TEST_F(server, send__an_answer_sent_before_its_handler_returns_leaves_nothing_owed)
{
	struct client c = { .fd = connect_to(self->sock) };

	ASSERT_GE(c.fd, 0);
	ASSERT_EQ(6, send_str(c.fd, "early\n"));
	ASSERT_EQ(0, shutdown(c.fd, SHUT_WR));
	ASSERT_EQ(0, serve_until_done(self->loop, &c, 1, true))
	TH_LOG("no close after the answer: got '%s'", c.buf);
	EXPECT_STREQ("early\n", c.buf);
	close(c.fd);
}

TEST_F(server, listen__the_handler_sees_an_infer_whole_keeps_its_bytes_and_when_it_began)
{
	const char *line = INFER_LINE("keep", 8) "ABC";
	int fd = connect_to(self->sock);
	__u64 t0, t_mid, t_rest;
	char ans[16] = { 0 };

	ASSERT_GE(fd, 0);
	t0 = coloc_now_ns();
	ASSERT_EQ((ssize_t)strlen(line), send_str(fd, line));
	/* the line and the first bytes are read; the handler waits for the rest */
	for (int i = 0; i < 20; i++)
		serve_for(self->loop, 5);
	ASSERT_EQ(0, self->echo.lines);
	ASSERT_EQ(NULL, self->echo.kept);
	t_mid = coloc_now_ns();
	usleep(20000);
	t_rest = coloc_now_ns();
	ASSERT_EQ(5, send_str(fd, "DEFGH"));
	for (int i = 0; i < 1000 && !self->echo.kept; i++)
		serve_for(self->loop, 5);
	ASSERT_NE(NULL, self->echo.kept);
	EXPECT_EQ(1, self->echo.lines);
	ASSERT_EQ(8, self->echo.kept_len);
	EXPECT_EQ(0, memcmp(self->echo.kept, "ABCDEFGH", 8));
	/* the first byte's read, by the loop's clock: after the send, before the rest */
	EXPECT_GE(self->echo.kept_first_byte_ns, t0);
	EXPECT_LE(self->echo.kept_first_byte_ns, t_mid);
	EXPECT_GE(self->echo.kept_done_ns, t_rest);
	ASSERT_EQ(5, recv(fd, ans, sizeof(ans) - 1, 0));
	EXPECT_STREQ("kept\n", ans);
	close(fd);
}

/* Reads what fd has into buf (cap bytes) while serving, until it holds want bytes or time is up. */
static size_t read_while_serving(struct loop *loop, int fd, char *buf, size_t cap, size_t want)
{
	size_t len = 0;

	for (int i = 0; i < 4000 && len < want; i++) {
		ssize_t n = recv(fd, buf + len, cap - len, MSG_DONTWAIT);

		if (n > 0)
			len += (size_t)n;
		else
			serve_for(loop, 1);
	}
	return len;
}

/*
 * A request whose first bytes came in one read but that was served after
 * another read (the answers owed held the connection back, and the read
 * that follows comes before the requests waiting are served) is stamped
 * with the first read, not the later one.
 */
TEST_F(server, listen__a_request_held_back_is_stamped_with_the_read_of_its_first_byte)
{
	size_t len = 6 * SERVER_MAX_PENDING + 10, got_len;
	char *first = malloc(len + 1), got[64] = { 0 };
	int fd = connect_to(self->sock);
	__u64 t0, t_mid;

	ASSERT_GE(fd, 0);
	ASSERT_NE(NULL, first);
	/* as many deferred requests as a connection may be owed: "stamp1" and "sta" wait */
	for (int i = 0; i < SERVER_MAX_PENDING; i++)
		memcpy(first + 6 * i, "defer\n", 6);
	memcpy(first + 6 * SERVER_MAX_PENDING, "stamp1\nsta", 11);
	t0 = coloc_now_ns();
	ASSERT_EQ((ssize_t)len, send_str(fd, first));
	for (int i = 0; i < 1000 && self->echo.lines < SERVER_MAX_PENDING; i++)
		serve_for(self->loop, 5);
	ASSERT_EQ(SERVER_MAX_PENDING, self->echo.lines);
	t_mid = coloc_now_ns();
	usleep(20000);
	ASSERT_EQ(4, send_str(fd, "mp2\n"));
	serve_for(self->loop, 20);
	ASSERT_EQ(0, self->echo.nr_stamps);
	/* one answer: the server reads "mp2" and serves the two waiting */
	ASSERT_EQ(0, server_send(self->srv, self->echo.deferred_conn, "deferred\n", NULL, 0));
	got_len = read_while_serving(self->loop, fd, got, sizeof(got) - 1, 25);
	EXPECT_EQ(25, got_len);
	EXPECT_STREQ("deferred\nstamped\nstamped\n", got);
	ASSERT_EQ(2, self->echo.nr_stamps);
	for (int i = 0; i < 2; i++) {
		EXPECT_GE(self->echo.stamps[i], t0);
		EXPECT_LE(self->echo.stamps[i], t_mid)
		TH_LOG("stamp%d: its first byte stamped %llu ms after it was read", i + 1,
		       (unsigned long long)((self->echo.stamps[i] - t_mid) / MS));
	}
	free(first);
	close(fd);
}

/*
 * An answer for a client that hung up: the send fails, and the answer is
 * not copied into the connection's queue on the way to its close.
 */
TEST_F(server, send__to_a_client_gone_fails_and_queues_nothing)
{
	size_t big = 1u << 20;
	char *pay = calloc(1, big);
	int fd = connect_to(self->sock);

	ASSERT_GE(fd, 0);
	ASSERT_NE(NULL, pay);
	ASSERT_EQ(6, send_str(fd, "defer\n"));
	for (int i = 0; i < 1000 && !self->echo.deferred_conn; i++)
		serve_for(self->loop, 5);
	ASSERT_NE(0, self->echo.deferred_conn);
	close(fd);
	EXPECT_EQ(-ENOTCONN, server_send(self->srv, self->echo.deferred_conn, "deferred\n", pay,
					 big));
	EXPECT_FALSE(server_has_output(self->srv));
	/* the loop closes it: later answers find no connection */
	serve_for(self->loop, 20);
	EXPECT_EQ(-ENOTCONN, server_send(self->srv, self->echo.deferred_conn, "x\n", NULL, 0));
	EXPECT_FALSE(server_has_output(self->srv));
	free(pay);
}

TEST_F(server, send__an_answer_goes_out_at_once_and_what_the_socket_cannot_take_follows_in_order)
{
	size_t big = 4u << 20, want = 9 + big + 8, len;
	char *pay = malloc(big), *got = malloc(want + 64);
	int fd = connect_to(self->sock);

	ASSERT_GE(fd, 0);
	ASSERT_NE(NULL, pay);
	ASSERT_NE(NULL, got);
	for (size_t i = 0; i < big; i++)
		pay[i] = (char)('a' + i % 26);
	ASSERT_EQ(6, send_str(fd, "defer\n"));
	for (int i = 0; i < 1000 && !self->echo.deferred_conn; i++)
		serve_for(self->loop, 5);
	ASSERT_NE(0, self->echo.deferred_conn);
	/* more than a socket holds: part now, from the caller's buffer, the rest queued */
	ASSERT_EQ(0, server_send(self->srv, self->echo.deferred_conn, "deferred\n", pay, big));
	memset(pay, 'X', big); /* the caller's buffer is free once server_send returns */
	/* without a turn of the loop, the answer's start is already on the socket */
	ASSERT_EQ(9, recv(fd, got, 9, MSG_DONTWAIT));
	EXPECT_EQ(0, memcmp(got, "deferred\n", 9));
	/* a later request's answer comes after the whole payload */
	ASSERT_EQ(6, send_str(fd, "after\n"));
	len = 9 + read_while_serving(self->loop, fd, got + 9, want + 64 - 9, want - 9);
	ASSERT_EQ(want, len);
	for (size_t i = 0; i < big; i++)
		if (got[9 + i] != (char)('a' + i % 26)) {
			ASSERT_EQ(i, big) TH_LOG("payload byte %zu is '%c'", i, got[9 + i]);
		}
	EXPECT_EQ(0, memcmp(got + 9 + big, "0:after\n", 8));
	free(pay);
	free(got);
	close(fd);
}

/*
 * A client owed many large answers that reads none of them: once its queue
 * would pass SERVER_OUT_MAX, the answer is refused (-ENOTCONN), what was
 * queued for it dropped and the connection closed (the client reads what
 * its socket held, then EOF), while another client is answered. Main
 * queued all eight: 128 MiB held for a client that never reads.
 */
TEST_F(server, send__a_client_that_never_reads_its_answers_is_cut_past_the_limit)
{
	size_t big = 16u << 20, nr = 8, queued = 0;
	struct client other = { .want_lines = 1 };
	char *pay = calloc(1, big), buf[1 << 16];
	int fd = connect_to(self->sock), cut_at = -1, i;
	bool eof = false;
	__u64 conn;

	ASSERT_GE(fd, 0);
	ASSERT_NE(NULL, pay);
	for (size_t k = 0; k < nr; k++)
		ASSERT_EQ(6, send_str(fd, "defer\n"));
	for (i = 0; i < 1000 && self->echo.lines < (int)nr; i++)
		serve_for(self->loop, 5);
	ASSERT_EQ((int)nr, self->echo.lines);
	conn = self->echo.deferred_conn;
	for (size_t k = 0; k < nr && cut_at < 0; k++) {
		int ret = server_send(self->srv, conn, "deferred\n", pay, big);

		if (ret == -ENOTCONN)
			cut_at = (int)k;
		else
			ASSERT_EQ(0, ret);
		queued = k + 1;
	}
	TH_LOG("cut at answer %d of %zu (16 MiB each)", cut_at, nr);
	/* over 64 MiB: the fifth 16 MiB answer at the latest */
	ASSERT_GE(cut_at, 0);
	EXPECT_LE(queued * big, (size_t)SERVER_OUT_MAX + big);
	/* nothing held for it, and the answers still owed find it gone */
	EXPECT_FALSE(server_has_output(self->srv));
	EXPECT_EQ(-ENOTCONN, server_send(self->srv, conn, "x\n", NULL, 0));
	/* another client is served meanwhile */
	other.fd = connect_to(self->sock);
	ASSERT_GE(other.fd, 0);
	ASSERT_EQ(5, send_str(other.fd, "ping\n"));
	ASSERT_EQ(0, serve_until_done(self->loop, &other, 1, false));
	EXPECT_STREQ("0:ping\n", other.buf);
	/* the cut client reads what its socket held, then the end */
	for (i = 0; i < 4000 && !eof; i++) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			eof = true;
		else if (n < 0)
			serve_for(self->loop, 1);
	}
	EXPECT_TRUE(eof);
	free(pay);
	close(fd);
	close(other.fd);
}

/*
 * One uid's connections together: a member opens 8 that never read and is
 * owed a 16 MiB answer on each (each under SERVER_OUT_MAX alone). Past
 * SERVER_OUT_UID_SHARE over all of them, its connections holding the most
 * are cut, so that at most the share's worth stays queued. Main kept all
 * eight: 128 MiB of colocd's heap for one member that reads nothing.
 */
TEST_F(server, send__a_uids_unread_answers_are_bounded_over_all_its_connections)
{
	struct group *grp = getgrnam(COLOC_GROUP);
	size_t big = 16u << 20;
	char *pay = calloc(1, big), byte;
	int ready[2], alive = 0, i, st;
	pid_t pid;

	if (!grp)
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	ASSERT_NE(NULL, pay);
	ASSERT_EQ(0, chmod(self->dir, 0755));
	ASSERT_EQ(0, pipe2(ready, O_CLOEXEC));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int rcv = 4096;

		if (setgroups(1, &grp->gr_gid) || setgid(grp->gr_gid) || setuid(NOBODY))
			_exit(99);
		for (int k = 0; k < 8; k++) {
			int fd = connect_to(self->sock);

			if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv)) ||
			    send_str(fd, "defer\n") != 6)
				_exit(98);
		}
		if (write(ready[1], "r", 1) != 1)
			_exit(97);
		for (;;)
			pause();
	}
	ASSERT_EQ(1, read(ready[0], &byte, 1));
	for (i = 0; i < 1000 && self->echo.nr_deferred < 8; i++)
		serve_for(self->loop, 5);
	ASSERT_EQ(8, self->echo.nr_deferred);
	for (int k = 0; k < 8; k++) {
		int ret = server_send(self->srv, self->echo.deferred[k], "deferred\n", pay, big);

		ASSERT_TRUE(ret == 0 || ret == -ENOTCONN) TH_LOG("answer %d: %d", k, ret);
	}
	/* each connection still open holds 12 MiB or more of its 16: its socket takes at most 4 */
	for (int k = 0; k < 8; k++)
		alive += server_send(self->srv, self->echo.deferred[k], "x\n", NULL, 0) == 0;
	TH_LOG("%d of 8 connections left, %llu MiB a uid may have queued", alive,
	       SERVER_OUT_UID_SHARE >> 20);
	EXPECT_GE(alive, 1);
	EXPECT_LE((size_t)alive * (big / 4 * 3), (size_t)SERVER_OUT_UID_SHARE);
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	close(ready[0]);
	close(ready[1]);
	free(pay);
}

TEST_F(server, listen__serves_many_clients_at_once_each_its_own_answers)
{
	struct client *c = calloc(MANY, sizeof(*c));
	char want[64];

	ASSERT_NE(NULL, c);
	/* all connected and all asking before the loop serves any */
	for (int i = 0; i < MANY; i++) {
		char req[64];

		c[i].fd = connect_to(self->sock);
		ASSERT_GE(c[i].fd, 0) TH_LOG("client %d: %s", i, strerror(errno));
		c[i].want_lines = 2;
		snprintf(req, sizeof(req), "client-%d\nagain-%d\n", i, i);
		ASSERT_EQ((ssize_t)strlen(req), send_str(c[i].fd, req));
	}
	ASSERT_EQ(0, serve_until_done(self->loop, c, MANY, false));
	for (int i = 0; i < MANY; i++) {
		snprintf(want, sizeof(want), "0:client-%d\n0:again-%d\n", i, i);
		EXPECT_STREQ(want, c[i].buf);
		close(c[i].fd);
	}
	EXPECT_EQ(2 * MANY, self->echo.lines);
	free(c);
}

TEST_F(server, listen__descriptors_ride_with_their_line_and_those_not_taken_are_closed)
{
	struct client c = { .fd = connect_to(self->sock), .want_lines = 1 };
	int p[2], q[2], sent[2];

	ASSERT_GE(c.fd, 0);
	ASSERT_EQ(0, pipe2(p, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(q, O_CLOEXEC));
	sent[0] = p[0];
	sent[1] = q[0];
	/* descriptors are taken once the connection is admitted (SO_PASSRIGHTS): a line first */
	ASSERT_EQ(6, send_str(c.fd, "hello\n"));
	ASSERT_EQ(0, serve_until_done(self->loop, &c, 1, false));
	ASSERT_EQ(0, tu_send_fds(c.fd, "fds\n", 4, sent, 2, 0));
	c.want_lines = 2;
	c.done = false;
	ASSERT_EQ(0, serve_until_done(self->loop, &c, 1, false));
	EXPECT_STREQ("0:hello\n0:fds\n", c.buf);
	EXPECT_EQ(2, self->echo.nr_fds);
	/* the line after carries none: the two stayed with their own line */
	ASSERT_EQ(6, send_str(c.fd, "plain\n"));
	c.want_lines = 3;
	c.done = false;
	ASSERT_EQ(0, serve_until_done(self->loop, &c, 1, false));
	EXPECT_STREQ("0:hello\n0:fds\n0:plain\n", c.buf);
	EXPECT_EQ(0, self->echo.nr_fds);
	/* the handler took neither: colocd's closer thread closes them (fd_closer.h) */
	for (int i = 0; i < 5000 && fd_closer_pending(getuid()); i++)
		usleep(1000);
	EXPECT_EQ(0, fd_closer_pending(getuid()));
	/* once ours are closed too, no reader is left */
	close(p[0]);
	close(q[0]);
	EXPECT_EQ(-1, write(p[1], "x", 1));
	EXPECT_EQ(EPIPE, errno);
	EXPECT_EQ(-1, write(q[1], "x", 1));
	EXPECT_EQ(EPIPE, errno);
	close(p[1]);
	close(q[1]);
	close(c.fd);
}

/*
 * A child as uid NOBODY and group gid (in_group: gid its one supplementary
 * group too, else none) connects, sends "who", and passes the answer line
 * it got into answer; the loop serves it meanwhile. Returns the child's
 * wait status, -1 when it could not be started, -2 when the loop timed out.
 */
static int child_asks(struct loop *loop, const char *sock, gid_t gid, bool in_group, char *answer,
		      size_t len)
{
	struct client pipe_end = { .want_lines = 1 };
	int fds[2], st = -1, ret;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char buf[512] = { 0 };
		ssize_t n = 0;
		int fd;

		close(fds[0]);
		if ((in_group ? setgroups(1, &gid) : setgroups(0, NULL)) || setgid(gid) ||
		    setuid(NOBODY))
			_exit(99);
		fd = connect_to(sock);
		if (fd < 0)
			_exit(98);
		/* a refused peer may find the server gone before its line is out: read anyway */
		send_str(fd, "who\n");
		n = read(fd, buf, sizeof(buf) - 1);
		if (n <= 0 || !strchr(buf, '\n'))
			_exit(97);
		_exit(write(fds[1], buf, strlen(buf)) == (ssize_t)strlen(buf) ? 0 : 96);
	}
	close(fds[1]);
	pipe_end.fd = fds[0];
	ret = serve_until_done(loop, &pipe_end, 1, false);
	close(fds[0]);
	waitpid(pid, &st, 0);
	snprintf(answer, len, "%s", pipe_end.buf);
	return ret ? -2 : st;
}

TEST_F(server, listen__the_handler_sees_the_uid_the_kernel_recorded_for_the_peer)
{
	struct group *grp = getgrnam(COLOC_GROUP);
	char answer[4096], want[64];

	if (!grp)
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	ASSERT_EQ(0, chmod(self->dir, 0755));
	EXPECT_EQ(0, child_asks(self->loop, self->sock, grp->gr_gid, true, answer, sizeof(answer)));
	snprintf(want, sizeof(want), "%d:who\n", NOBODY);
	EXPECT_STREQ(want, answer);
}

TEST_F(server, listen__a_peer_neither_root_nor_in_the_group_is_refused_before_the_handler)
{
	char answer[4096];

	/* the socket's mode would stop it first: opened up, the server's own check must */
	ASSERT_EQ(0, chmod(self->dir, 0755));
	ASSERT_EQ(0, chmod(self->sock, 0666));
	EXPECT_EQ(0, child_asks(self->loop, self->sock, NOBODY, false, answer, sizeof(answer)));
	EXPECT_NE(NULL, strstr(answer, "\"ok\":false")) TH_LOG("answer: %s", answer);
	EXPECT_NE(NULL, strstr(answer, "permission denied")) TH_LOG("answer: %s", answer);
	EXPECT_EQ(0, self->echo.lines);
}

TEST_HARNESS_MAIN
