// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libcoloc_client's submit on its own (client/client_submit.c), before a byte
 * reaches colocd: an ONNX model's external data locations get colocd's
 * rule (relative, no '..' component) before the client opens them, so a
 * model cannot have its client open a path outside its directory (a FIFO,
 * a device) and hand it over; coloc_client_submit_at (the gateway's)
 * opens every file below a folder without symbolic links; as root, a
 * submit by path opens only root's own files, through no link. A listening
 * socket stands in for colocd: a refused submit never writes to it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <seccomp.h>
#include "kselftest_harness.h"
#include "coloc/client.h"
#include "coloc/protocol.h"
#include "testutil.h"

/* A length-delimited field: key, length (< 128), bytes. */
static size_t put_field(uint8_t *out, unsigned int field, const void *bytes, size_t len)
{
	out[0] = (uint8_t)(field << 3 | 2);
	out[1] = (uint8_t)len;
	memcpy(out + 2, bytes, len);
	return len + 2;
}

/* A listening socket at DIR/s.sock that never answers (the client only connects), or -1. */
static int listening_socket_in(const char *dir)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/s.sock", dir);
	if (lfd >= 0 && (bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) || listen(lfd, 4))) {
		close(lfd);
		return -1;
	}
	return lfd;
}

/* A client connected to DIR/s.sock: 0, or -errno. */
static int connect_to_socket_in(const char *dir, struct coloc_client **c)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];

	snprintf(path, sizeof(path), "%s/s.sock", dir);
	return coloc_client_connect(path, c);
}

/* ModelProto.graph.initializer[0].external_data[0] = {"location": loc}, at path. */
static int write_onnx_with_location(const char *path, const char *loc)
{
	uint8_t entry[96], tensor[100], graph[104], model[108];
	size_t n;
	FILE *f;

	n = put_field(entry, 1, "location", 8);
	n += put_field(entry + n, 2, loc, strlen(loc));
	n = put_field(tensor, 13, entry, n);
	n = put_field(graph, 5, tensor, n);
	n = put_field(model, 7, graph, n);
	f = fopen(path, "wb");
	if (!f || fwrite(model, n, 1, f) != 1) {
		if (f)
			fclose(f);
		return -1;
	}
	return fclose(f);
}

TEST(submit__external_data_outside_the_models_directory_is_refused_unopened)
{
	static const char *const bad[] = { "../secret", "/nonexistent/secret", "a/../../secret" };
	char dir[] = "/tmp/coloc-client-submit-XXXXXX", model[128];
	struct coloc_client *c = NULL;
	int lfd;

	ASSERT_NE(NULL, mkdtemp(dir));
	lfd = listening_socket_in(dir);
	ASSERT_LE(0, lfd);
	ASSERT_EQ(0, connect_to_socket_in(dir, &c));
	snprintf(model, sizeof(model), "%s/m.onnx", dir);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		struct coloc_submit sub = { .name = "m", .model = model, .qos_ms = 10 };

		ASSERT_EQ(0, write_onnx_with_location(model, bad[i]));
		/* before: opened (here: not found), and handed over had it been there */
		EXPECT_EQ(NULL, coloc_client_submit(c, &sub));
		EXPECT_NE(NULL, strstr(coloc_client_error(c), "not a relative path below"))
		TH_LOG("%s: %s", bad[i], coloc_client_error(c));
	}
	coloc_client_close(c);
	close(lfd);
	EXPECT_EQ(0, tu_remove_tree(dir));
}

/*
 * coloc_client_submit_at (the gateway's submit): the model and its external
 * data are opened below the given folder by openat2, so a model file or
 * an external data file that is a symbolic link is refused, not followed
 * (coloc_client_submit, colocctl's, follows the user's own links).
 */
TEST(submit_at__symbolic_links_are_refused_unopened)
{
	char dir[] = "/tmp/coloc-client-submit-XXXXXX", path[160], target[160];
	struct coloc_client *c = NULL;
	int lfd, dfd;

	ASSERT_NE(NULL, mkdtemp(dir));
	lfd = listening_socket_in(dir);
	ASSERT_LE(0, lfd);
	ASSERT_EQ(0, connect_to_socket_in(dir, &c));
	snprintf(path, sizeof(path), "%s/m", dir);
	ASSERT_EQ(0, mkdir(path, 0755));
	snprintf(target, sizeof(target), "%s/secret", dir);
	ASSERT_EQ(0, write_onnx_with_location(target, "w.bin"));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_LE(0, dfd);
	{ /* the model a link (to a readable ONNX file beside it) */
		struct coloc_submit sub = { .name = "m", .model = "/x/m/l.onnx", .qos_ms = 10 };
		struct coloc_submit_files at = { .dirfd = dfd, .model = "m/l.onnx" };

		snprintf(path, sizeof(path), "%s/m/l.onnx", dir);
		ASSERT_EQ(0, symlink(target, path));
		EXPECT_EQ(NULL, coloc_client_submit_at(c, &sub, &at));
		EXPECT_NE(NULL, strstr(coloc_client_error(c), "m/l.onnx: a symbolic link"))
		TH_LOG("%s", coloc_client_error(c));
	}
	{ /* external data a link, even with links followed: it leads out of m/ */
		struct coloc_submit sub = { .name = "m", .model = "/x/m/m.onnx", .qos_ms = 10 };
		struct coloc_submit_files at = { .dirfd = dfd, .model = "m/m.onnx" };

		snprintf(path, sizeof(path), "%s/m/m.onnx", dir);
		ASSERT_EQ(0, write_onnx_with_location(path, "w.bin"));
		snprintf(path, sizeof(path), "%s/m/w.bin", dir);
		ASSERT_EQ(0, symlink(target, path));
		EXPECT_EQ(NULL, coloc_client_submit_at(c, &sub, &at));
		EXPECT_NE(NULL, strstr(coloc_client_error(c), "w.bin: a symbolic link"))
		TH_LOG("%s", coloc_client_error(c));
		at.links = true;
		EXPECT_EQ(NULL, coloc_client_submit_at(c, &sub, &at));
		EXPECT_NE(NULL, strstr(coloc_client_error(c), "leads outside its folder"))
		TH_LOG("%s", coloc_client_error(c));
	}
	close(dfd);
	coloc_client_close(c);
	close(lfd);
	EXPECT_EQ(0, tu_remove_tree(dir));
}

/* A stand-in colocd on lfd's first connection: what came, and a refusal for each request. */
struct fake_colocd {
	int lfd;
	int requests;
	char first_fd_bytes[64]; /* of the last request's first descriptor */
};

static void fake_colocd_keep(struct fake_colocd *f, const struct msghdr *msg)
{
	const struct cmsghdr *cm = CMSG_FIRSTHDR(msg);
	int fds[COLOC_MAX_REQUEST_FDS], nr;
	ssize_t k;

	f->requests++;
	if (!cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
		return;
	nr = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
	memcpy(fds, CMSG_DATA(cm), (size_t)nr * sizeof(int));
	k = pread(fds[0], f->first_fd_bytes, sizeof(f->first_fd_bytes) - 1, 0);
	f->first_fd_bytes[k > 0 ? k : 0] = '\0';
	for (int i = 0; i < nr; i++)
		close(fds[i]);
}

/* Serves until the client closes (or 60 s without a request). */
static void *fake_colocd_serve(void *arg)
{
	static const char refusal[] = "{\"ok\":false,\"error\":\"stand-in\"}\n";
	struct fake_colocd *f = arg;
	int conn = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);

	while (conn >= 0) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * COLOC_MAX_REQUEST_FDS)];
			struct cmsghdr align;
		} cbuf;
		char line[4096];
		struct iovec iov = { line, sizeof(line) };
		struct msghdr msg = { .msg_iov = &iov,
				      .msg_iovlen = 1,
				      .msg_control = cbuf.buf,
				      .msg_controllen = sizeof(cbuf.buf) };
		struct pollfd pfd = { .fd = conn, .events = POLLIN };

		if (poll(&pfd, 1, 60000) != 1 || recvmsg(conn, &msg, MSG_CMSG_CLOEXEC) <= 0)
			break;
		fake_colocd_keep(f, &msg);
		if (write(conn, refusal, sizeof(refusal) - 1) != (ssize_t)sizeof(refusal) - 1)
			break;
	}
	if (conn >= 0)
		close(conn);
	return NULL;
}

/* sub refused by the client, before a byte is sent, with words in its error. */
static void expect_refused(struct __test_metadata *_metadata, struct coloc_client *c,
			   const struct coloc_submit *sub, const char *words)
{
	struct json_object *r = coloc_client_submit(c, sub);

	EXPECT_EQ(NULL, r);
	json_object_put(r);
	EXPECT_NE(NULL, strstr(coloc_client_error(c), words)) TH_LOG("%s", coloc_client_error(c));
}

/*
 * Root's submit by path (colocctl's) holds each file to root's tools' rule
 * (review s21-2 LOW 3): a member's link to a file only root may read is
 * refused unopened, and so is a member's own file, each saying to copy
 * it; with allow_foreign_owner the member's file goes, the link still
 * not. Main followed the link and handed the root-only file to colocd
 * (the stand-in got its bytes).
 */
TEST(submit__as_root_a_members_link_or_file_is_refused_unopened)
{
	static const uid_t member = 64990;
	char dir[] = "/tmp/coloc-client-submit-XXXXXX", secret[128], link[160], own[160];
	struct fake_colocd f = { .lfd = -1 };
	struct coloc_client *c = NULL;
	struct json_object *r;
	pthread_t th;
	int fd;

	if (geteuid() != 0)
		SKIP(return, "needs root: the rule is root's submit's");
	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, chmod(dir, 0755));
	snprintf(secret, sizeof(secret), "%s/secret", dir);
	fd = open(secret, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(14, write(fd, "SECRET-OF-ROOT", 14));
	close(fd);
	snprintf(link, sizeof(link), "%s/member", dir);
	ASSERT_EQ(0, mkdir(link, 0755));
	ASSERT_EQ(0, chown(link, member, member));
	snprintf(own, sizeof(own), "%s/member/own.model", dir);
	ASSERT_EQ(0, tu_write_file(own, "MEMBERS-OWN-MODEL", 17));
	ASSERT_EQ(0, chown(own, member, member));
	snprintf(link, sizeof(link), "%s/member/evil.model", dir);
	ASSERT_EQ(0, symlink(secret, link));
	ASSERT_EQ(0, lchown(link, member, member));
	f.lfd = listening_socket_in(dir);
	ASSERT_LE(0, f.lfd);
	ASSERT_EQ(0, connect_to_socket_in(dir, &c));
	ASSERT_EQ(0, pthread_create(&th, NULL, fake_colocd_serve, &f));
	{
		struct coloc_submit sub = { .name = "evil", .model = link, .qos_ms = 10 };

		expect_refused(_metadata, c, &sub, "a symbolic link is on its path");
		EXPECT_NE(NULL, strstr(coloc_client_error(c), "copy them"));
		sub.model = own;
		expect_refused(_metadata, c, &sub, "is owned by uid 64990, not 0");
		sub.allow_foreign_owner = true;
		r = coloc_client_submit(c, &sub);
		EXPECT_NE(NULL, r) TH_LOG("%s", coloc_client_error(c));
		json_object_put(r);
		sub.model = link;
		expect_refused(_metadata, c, &sub, "a symbolic link is on its path");
	}
	coloc_client_close(c);
	pthread_join(th, NULL);
	EXPECT_EQ(1, f.requests);
	EXPECT_STREQ("MEMBERS-OWN-MODEL", f.first_fd_bytes);
	close(f.lfd);
	EXPECT_EQ(0, tu_remove_tree(dir));
}

/*
 * Below dir: d/f (an ONNX model), d/lf a link to f, ld a link to d. 0, or
 * -1.
 */
static int make_link_tree(const char *dir)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/d", dir);
	if (mkdir(path, 0755))
		return -1;
	snprintf(path, sizeof(path), "%s/d/f", dir);
	if (write_onnx_with_location(path, "w.bin"))
		return -1;
	snprintf(path, sizeof(path), "%s/d/lf", dir);
	if (symlink("f", path))
		return -1;
	snprintf(path, sizeof(path), "%s/ld", dir);
	return symlink("d", path) ? -1 : 0;
}

/*
 * coloc_open_beneath's way where openat2 is missing (a kernel before 5.6,
 * a seccomp profile without it): a component walk with O_NOFOLLOW refuses
 * what openat2 refuses, link by link, and opens the rest.
 */
TEST(open_beneath_walk__refuses_what_openat2_refuses)
{
	static const struct {
		const char *path;
		int want, want2; /* the walk's, openat2's; 0: opens */
	} cases[] = {
		{ "d/f", 0, 0 },
		{ "./d//f", 0, 0 },
		{ "d/f/", -ENOTDIR, -ENOTDIR },
		{ "d/lf", -ELOOP, -ELOOP },
		{ "ld/f", -ELOOP, -ELOOP },
		{ "d/../d/f", -EXDEV, 0 }, /* the walk refuses every '..' */
		{ "d/../../x", -EXDEV, -EXDEV },
		{ "/etc/passwd", -EXDEV, -EXDEV },
		{ "d/none", -ENOENT, -ENOENT },
		{ "f2/f", -ENOTDIR, -ENOTDIR },
	};
	char dir[] = "/tmp/coloc-client-walk-XXXXXX", path[160];
	int dfd;

	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, make_link_tree(dir));
	snprintf(path, sizeof(path), "%s/f2", dir);
	ASSERT_EQ(0, write_onnx_with_location(path, "w.bin"));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_LE(0, dfd);
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		int fd = coloc_open_beneath_walk(dfd, cases[i].path, O_RDONLY | O_NONBLOCK);
		int via2 = coloc_open_beneath(dfd, cases[i].path, O_RDONLY | O_NONBLOCK, false);

		EXPECT_EQ(cases[i].want, fd < 0 ? fd : 0) TH_LOG("walk %s", cases[i].path);
		/* openat2 itself, where there is one, says the same */
		if (via2 != -ENOSYS)
			EXPECT_EQ(cases[i].want2, via2 < 0 ? via2 : 0)
		TH_LOG("openat2 %s", cases[i].path);
		if (fd >= 0)
			close(fd);
		if (via2 >= 0)
			close(via2);
	}
	close(dfd);
	EXPECT_EQ(0, tu_remove_tree(dir));
}

/*
 * Where a seccomp profile answers openat2 with ENOSYS (systemd's
 * RestrictSUIDSGID=) or EPERM (older container runtimes' defaults),
 * coloc_open_beneath walks instead: the model opens, a link does not,
 * a link as the last component with O_PATH neither. In a child, which
 * loads the filter.
 */
static int beneath_under_filter(const char *dir, int err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd, bad = 0;

	if (!ctx || dfd < 0 || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), SCMP_SYS(openat2), 0) ||
	    seccomp_load(ctx))
		return 100;
	fd = coloc_open_beneath(dfd, "d/f", O_RDONLY | O_NONBLOCK, false);
	bad |= (fd < 0) << 0;
	bad |= (coloc_open_beneath(dfd, "d/lf", O_RDONLY | O_NONBLOCK, true) != -ELOOP) << 1;
	bad |= (coloc_open_beneath(dfd, "d/lf", O_PATH, false) != -ELOOP) << 2;
	bad |= (coloc_open_beneath(dfd, "ld", O_PATH | O_DIRECTORY, false) != -ELOOP) << 3;
	return bad;
}

TEST(open_beneath__walks_where_a_filter_refuses_openat2)
{
	char dir[] = "/tmp/coloc-client-filter-XXXXXX";
	static const int errs[] = { ENOSYS, EPERM };

	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, make_link_tree(dir));
	for (size_t i = 0; i < sizeof(errs) / sizeof(*errs); i++) {
		int status;
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (!pid)
			_exit(beneath_under_filter(dir, errs[i]));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("openat2 answering %s", strerror(errs[i]));
	}
	EXPECT_EQ(0, tu_remove_tree(dir));
}

TEST_HARNESS_MAIN
