// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Infers whose input travels in a memfd (protocol.h, "input":"memfd";
 * daemon/input_memfd.c), end to end: a real colocd, a real executor running
 * models/mobilenet_v2.model, libcoloc_client. The outputs equal the
 * in-process run's and the socket path's; every hostile descriptor (not a
 * memfd, unsealed, too small, a FIFO, a directory, none, two) is refused
 * with words that say what it is, and colocd keeps serving root's ping and
 * the next query; a sealed memfd cannot be shrunk under queries in flight.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <linux/sockios.h>
#include "kselftest_harness.h"
#include "mono_clock.h"
#include "proc_fds.h"
#include "colocd_serving_fixture.h"
#include "serving_internal.h"

/* An infer line naming a memfd input, sent with fds; the parsed answer (put it). */
static struct json_object *infer_with_fds(FIXTURE_DATA(wire) * self, size_t bytes, const int *fds,
					  int nr_fds, const char *offset)
{
	char line[256], *resp = NULL;
	struct json_object *o;

	snprintf(line, sizeof(line),
		 "{\"cmd\":\"infer\",\"tenant\":\"a\",\"tag\":7,\"input_bytes\":%zu,"
		 "\"input\":\"memfd\"%s%s}",
		 bytes, offset ? ",\"input_offset\":" : "", offset ? offset : "");
	if (coloc_client_request_fds(self->c, line, fds, nr_fds, &resp))
		return NULL;
	o = json_tokener_parse(resp);
	free(resp);
	return o;
}

/* The query answered ok through the memfd path, its outputs equal to want. */
static void expect_memfd_infer_ok(struct __test_metadata *_metadata, FIXTURE_DATA(wire) * self,
				  const float *want, size_t out_elems)
{
	struct coloc_infer_result res;
	float *got = calloc(1, self->out_bytes), max_err, max_ref;

	ASSERT_NE(NULL, got);
	coloc_client_use_memfd(self->c, 1);
	ASSERT_EQ(0, coloc_client_infer(self->c, "a", self->input, self->in_bytes, got,
					self->out_bytes, &res))
	TH_LOG("%s", coloc_client_error(self->c));
	ASSERT_EQ(COLOC_INFER_OK, res.status) TH_LOG("%s", res.error);
	ASSERT_EQ(self->out_bytes, res.output_bytes);
	ref_compare(got, want, (int64_t)out_elems, &max_err, &max_ref);
	EXPECT_LE(max_err, TOL * (1.0f + max_ref)) TH_LOG("max |error| %g", max_err);
	free(got);
}

static bool ping_ok(FIXTURE_DATA(wire) * self)
{
	struct json_object *r = call(self, "{\"cmd\":\"ping\"}");
	bool ok = is_ok(r);

	json_object_put(r);
	return ok;
}

TEST_F_TIMEOUT(wire, infer_memfd__outputs_equal_the_socket_paths_and_in_process_run, 600)
{
	struct coloc_infer_result res;
	size_t out_elems = 0;
	float *want, *by_socket, *by_memfd, max_err, max_ref;

	ASSERT_TRUE(submit_ready(self, "a"));
	want = tu_model_outputs(self->model, self->input, &out_elems);
	ASSERT_NE(NULL, want);
	ASSERT_EQ(out_elems * sizeof(float), self->out_bytes);
	by_socket = calloc(1, self->out_bytes);
	by_memfd = calloc(1, self->out_bytes);
	ASSERT_NE(NULL, by_socket);
	ASSERT_NE(NULL, by_memfd);
	ASSERT_EQ(0, coloc_client_infer(self->c, "a", self->input, self->in_bytes, by_socket,
					self->out_bytes, &res));
	ASSERT_EQ(COLOC_INFER_OK, res.status) TH_LOG("%s", res.error);
	coloc_client_use_memfd(self->c, 1);
	for (int i = 0; i < 5; i++) {
		memset(by_memfd, 0, self->out_bytes);
		ASSERT_EQ(0, coloc_client_infer(self->c, "a", self->input, self->in_bytes, by_memfd,
						self->out_bytes, &res))
		TH_LOG("%s", coloc_client_error(self->c));
		ASSERT_EQ(COLOC_INFER_OK, res.status) TH_LOG("%s", res.error);
		/*
		 * The same numbers, not the same bits: the policy may give a
		 * block another core count or kernel version on this query.
		 */
		ref_compare(by_memfd, by_socket, (int64_t)out_elems, &max_err, &max_ref);
		EXPECT_LE(max_err, TOL * (1.0f + max_ref))
		TH_LOG("query %d: max |error| %g", i, max_err);
	}
	expect_memfd_infer_ok(_metadata, self, want, out_elems);
	free(by_socket);
	free(by_memfd);
	free(want);
}

/*
 * The input from an offset on (as a gateway passes the memfd it received a
 * body into, the tensor after its JSON header): the same outputs.
 */
TEST_F_TIMEOUT(wire, infer_send_memfd__input_at_an_offset_gives_the_same_outputs, 600)
{
	struct coloc_infer_result res;
	size_t out_elems = 0, off = 1000; /* not page-aligned on purpose */
	float *want, *got, max_err, max_ref;
	char *map;
	int fd;

	ASSERT_TRUE(submit_ready(self, "a"));
	want = tu_model_outputs(self->model, self->input, &out_elems);
	ASSERT_NE(NULL, want);
	fd = coloc_client_input_memfd(off + self->in_bytes, (void **)&map);
	ASSERT_LE(0, fd);
	memset(map, 0x7f, off); /* garbage before the input: NaNs if it were read */
	memcpy(map + off, self->input, self->in_bytes);
	got = calloc(1, self->out_bytes);
	ASSERT_NE(NULL, got);
	ASSERT_EQ(0, coloc_client_infer_send_memfd(self->c, "a", 3, fd, off, self->in_bytes));
	ASSERT_EQ(1, coloc_client_infer_recv(self->c, &res, got, self->out_bytes, 120000))
	TH_LOG("%s", coloc_client_error(self->c));
	ASSERT_EQ(COLOC_INFER_OK, res.status) TH_LOG("%s", res.error);
	EXPECT_EQ(3, res.tag);
	ref_compare(got, want, (int64_t)out_elems, &max_err, &max_ref);
	EXPECT_LE(max_err, TOL * (1.0f + max_ref)) TH_LOG("max |error| %g", max_err);
	munmap(map, off + self->in_bytes);
	close(fd);
	free(got);
	free(want);
}

/* Many queries in flight share one memfd: each is answered, in any order, with its tag. */
TEST_F_TIMEOUT(wire, infer_send_memfd__one_memfd_serves_queries_in_flight, 600)
{
	struct coloc_infer_result res;
	bool seen[16] = { false };
	void *map;
	float *got;
	int fd;

	ASSERT_TRUE(submit_ready(self, "a"));
	fd = coloc_client_input_memfd(self->in_bytes, &map);
	ASSERT_LE(0, fd);
	memcpy(map, self->input, self->in_bytes);
	got = malloc(self->out_bytes);
	ASSERT_NE(NULL, got);
	for (uint64_t tag = 0; tag < 16; tag++)
		ASSERT_EQ(0,
			  coloc_client_infer_send_memfd(self->c, "a", tag, fd, 0, self->in_bytes));
	/* sealed: the bytes colocd may still read cannot go away */
	EXPECT_EQ(-1, ftruncate(fd, 0));
	EXPECT_EQ(EPERM, errno);
	for (int i = 0; i < 16; i++) {
		ASSERT_EQ(1, coloc_client_infer_recv(self->c, &res, got, self->out_bytes, 60000))
		TH_LOG("%s", coloc_client_error(self->c));
		ASSERT_EQ(COLOC_INFER_OK, res.status) TH_LOG("%s", res.error);
		ASSERT_LT(res.tag, 16);
		EXPECT_FALSE(seen[res.tag]);
		seen[res.tag] = true;
	}
	munmap(map, self->in_bytes);
	close(fd);
	free(got);
}

#define INPUT_MEMFD "memfd:coloc-input" /* coloc_client_input_memfd()'s, in /proc/PID/fd */
#define QUEUED 300 /* past SV_MAX_INPUT_FDS */

/*
 * Waits until colocd has read every byte sent on the client's connection
 * (SIOCOUTQ: what the peer has not read yet), then for its descriptors of
 * the input to fall to the share, at most settle_ms: the last count.
 */
static int held_once_read(FIXTURE_DATA(wire) * self, int settle_ms)
{
	uint64_t until = coloc_now_ns() + (uint64_t)settle_ms * 1000000ull;
	int unread = 1, held = -1;

	while (coloc_now_ns() < until) {
		if (unread && ioctl(coloc_client_fd(self->c), SIOCOUTQ, &unread))
			return -1;
		if (!unread) {
			held = proc_fds_to(self->colocd, INPUT_MEMFD);
			if (held <= SV_MAX_INPUT_FDS_PER_UID)
				break;
		}
		usleep(5000);
	}
	return held;
}

/*
 * A uid's tenants hold at most SV_MAX_INPUT_FDS_PER_UID of the
 * SV_MAX_INPUT_FDS memfds colocd holds (review s22 LOW 4: one uid's
 * queued queries took all 256, and every other uid's memfd inputs were
 * read on the loop and counted against its --max-input-mib-per-uid).
 * Both of root's executors stopped, QUEUED memfd queries stay queued:
 * once colocd has read them and closed the copies it read at once,
 * exactly the share is left open in colocd (main: all 256); with the
 * executors going on, every query is answered. The count is taken before
 * colocd would call a stopped executor's block hung (SERVING_HANG_SLACK_NS).
 */
TEST_F_TIMEOUT(wire, infer_memfd__a_uid_holds_its_share_of_the_memfds_every_query_answered, 900)
{
	struct coloc_infer_result res;
	pid_t ex[2];
	int fd, held, sent = 0, answered = 0;
	void *map;
	float *got;

	ASSERT_TRUE(submit_ready(self, "a"));
	ASSERT_TRUE(submit_ready(self, "b"));
	ex[0] = executor_pid(self, "a");
	ex[1] = executor_pid(self, "b");
	ASSERT_LT(0, ex[0]);
	ASSERT_LT(0, ex[1]);
	fd = coloc_client_input_memfd(self->in_bytes, &map);
	ASSERT_LE(0, fd);
	memcpy(map, self->input, self->in_bytes);
	got = malloc(self->out_bytes);
	ASSERT_NE(NULL, got);
	ASSERT_EQ(0, proc_fds_to(self->colocd, INPUT_MEMFD));
	/* no return until they go on */
	kill(ex[0], SIGSTOP);
	kill(ex[1], SIGSTOP);
	while (sent < QUEUED &&
	       !coloc_client_infer_send_memfd(self->c, sent % 2 ? "b" : "a", (uint64_t)sent, fd, 0,
					      self->in_bytes))
		sent++;
	held = held_once_read(self, 1500);
	kill(ex[0], SIGCONT);
	kill(ex[1], SIGCONT);
	TH_LOG("%d queries sent, executors stopped: colocd's descriptors of the input %d", sent,
	       held);
	ASSERT_EQ(QUEUED, sent) TH_LOG("%s", coloc_client_error(self->c));
	EXPECT_EQ(SV_MAX_INPUT_FDS_PER_UID, held);
	while (answered < QUEUED) {
		ASSERT_EQ(1, coloc_client_infer_recv(self->c, &res, got, self->out_bytes, 120000))
		TH_LOG("%s", coloc_client_error(self->c));
		ASSERT_EQ(COLOC_INFER_OK, res.status) TH_LOG("%s", res.error);
		answered++;
	}
	munmap(map, self->in_bytes);
	close(fd);
	free(got);
}

/* A hostile descriptor is refused with the words given; the connection stays in step. */
static void expect_refused(struct __test_metadata *_metadata, FIXTURE_DATA(wire) * self,
			   const char *what, const int *fds, int nr_fds, size_t bytes,
			   const char *offset, const char *words)
{
	struct json_object *r = infer_with_fds(self, bytes, fds, nr_fds, offset);

	ASSERT_NE(NULL, r) TH_LOG("%s: no answer: %s", what, coloc_client_error(self->c));
	EXPECT_FALSE(is_ok(r)) TH_LOG("%s was taken", what);
	EXPECT_STREQ("rejected", str_of(r, "status"));
	EXPECT_EQ(7, (int)num_of(r, "tag"));
	EXPECT_NE(NULL, strstr(str_of(r, "error"), words))
	TH_LOG("%s: %s (want \"%s\")", what, str_of(r, "error"), words);
	json_object_put(r);
	/* colocd serves on: root's ping on the same connection */
	EXPECT_TRUE(ping_ok(self)) TH_LOG("after %s", what);
}

TEST_F_TIMEOUT(wire, infer_memfd__hostile_descriptors_refused_colocd_serves_on, 600)
{
	char path[128];
	size_t out_elems = 0;
	float *want;
	int pipe_fds[2], file_fd, dir_fd, unsealed, small, wronly, two[2];
	void *map;

	ASSERT_TRUE(submit_ready(self, "a"));
	want = tu_model_outputs(self->model, self->input, &out_elems);
	ASSERT_NE(NULL, want);
	/* a regular file with the right size: not a memfd */
	snprintf(path, sizeof(path), "%s/input.bin", self->dir);
	file_fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ASSERT_LE(0, file_fd);
	ASSERT_EQ(0, ftruncate(file_fd, (off_t)self->in_bytes));
	{ /* a tmpfs file answers F_GET_SEALS too (F_SEAL_SEAL): told apart */
		struct statfs fs;

		ASSERT_EQ(0, fstatfs(file_fd, &fs));
		expect_refused(_metadata, self, "a regular file", &file_fd, 1, self->in_bytes, NULL,
			       fs.f_type == TMPFS_MAGIC ? "not a sealable memfd" : "not a memfd");
	}
	/* a memfd that can never be sealed */
	close(file_fd);
	file_fd = memfd_create("unsealable", MFD_CLOEXEC);
	ASSERT_LE(0, file_fd);
	ASSERT_EQ(0, ftruncate(file_fd, (off_t)self->in_bytes));
	expect_refused(_metadata, self, "a memfd made without MFD_ALLOW_SEALING", &file_fd, 1,
		       self->in_bytes, NULL, "not a sealable memfd");
	/* a FIFO (a pipe's read end): reading it could block colocd */
	ASSERT_EQ(0, pipe2(pipe_fds, O_CLOEXEC));
	expect_refused(_metadata, self, "a pipe", &pipe_fds[0], 1, self->in_bytes, NULL,
		       "not a memfd");
	dir_fd = open(self->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_LE(0, dir_fd);
	expect_refused(_metadata, self, "a directory", &dir_fd, 1, self->in_bytes, NULL,
		       "directory");
	/* a memfd without F_SEAL_SHRINK: it could be truncated under colocd's read */
	unsealed = memfd_create("unsealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	ASSERT_LE(0, unsealed);
	ASSERT_EQ(0, ftruncate(unsealed, (off_t)self->in_bytes));
	expect_refused(_metadata, self, "an unsealed memfd", &unsealed, 1, self->in_bytes, NULL,
		       "not sealed against shrinking");
	/* sealed, but smaller than input_bytes */
	small = memfd_create("small", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	ASSERT_LE(0, small);
	ASSERT_EQ(0, ftruncate(small, (off_t)self->in_bytes - 4));
	ASSERT_EQ(0, fcntl(small, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW));
	expect_refused(_metadata, self, "a memfd too small", &small, 1, self->in_bytes, NULL,
		       "fewer than input_offset + input_bytes (0 + ");
	/* a size that is not the model's, in a memfd large enough for it */
	expect_refused(_metadata, self, "the wrong input_bytes", &small, 1, self->in_bytes - 8,
		       NULL, "model");
	/* the right memfd, opened again write-only through /proc: colocd cannot read it */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", small);
	wronly = open(path, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, wronly);
	expect_refused(_metadata, self, "a write-only memfd", &wronly, 1, self->in_bytes - 8, NULL,
		       "not open for reading");
	/* an offset that puts the input past the memfd's end, and one that is no number */
	expect_refused(_metadata, self, "an offset past the end", &small, 1, self->in_bytes - 8,
		       "8", "fewer than input_offset + input_bytes");
	expect_refused(_metadata, self, "a negative offset", &small, 1, self->in_bytes - 8, "-1",
		       "input_offset");
	/* a size over colocd's limit: no bytes follow a memfd's line, the connection stays */
	expect_refused(_metadata, self, "input_bytes over the limit", &small, 1,
		       (size_t)COLOC_MAX_PAYLOAD + 1, NULL, "over COLOC_MAX_PAYLOAD");
	/* no descriptor, and two */
	expect_refused(_metadata, self, "no descriptor", NULL, 0, self->in_bytes, NULL,
		       "exactly one descriptor");
	two[0] = coloc_client_input_memfd(self->in_bytes, &map);
	ASSERT_LE(0, two[0]);
	two[1] = two[0];
	expect_refused(_metadata, self, "two descriptors", two, 2, self->in_bytes, NULL,
		       "exactly one descriptor");
	/* and the next good query on the same connection is served */
	expect_memfd_infer_ok(_metadata, self, want, out_elems);
	munmap(map, self->in_bytes);
	close(two[0]);
	close(wronly);
	close(small);
	close(unsealed);
	close(dir_fd);
	close(pipe_fds[0]);
	close(pipe_fds[1]);
	close(file_fd);
	free(want);
}

/*
 * An "input" colocd does not know leaves it unsure whether bytes follow:
 * refused and the connection closed; colocd serves a new one.
 */
TEST_F_TIMEOUT(wire, infer__unknown_input_kind_closes_the_connection_only, 600)
{
	char *resp = NULL;

	ASSERT_TRUE(submit_ready(self, "a"));
	ASSERT_EQ(0, coloc_client_request(self->c,
					  "{\"cmd\":\"infer\",\"tenant\":\"a\",\"tag\":1,"
					  "\"input_bytes\":4,\"input\":\"mmap\"}",
					  &resp));
	EXPECT_NE(NULL, strstr(resp, "closing the connection")) TH_LOG("%s", resp);
	free(resp);
	coloc_client_close(self->c);
	ASSERT_EQ(0, coloc_client_connect(self->sock, &self->c));
	EXPECT_TRUE(ping_ok(self));
}

/* How many of process pid's mappings name, e.g. a memfd's "memfd:NAME"; -1 if unreadable. */
static int maps_of(pid_t pid, const char *name)
{
	char path[64], line[512];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, name) != NULL;
	fclose(f);
	return n;
}

/*
 * A frozen memfd (coloc_client_input_memfd_frozen) goes on to the executor,
 * which maps it: the outputs are the model's, for queries one at a time and
 * many in flight (each held until its first block), and colocd counts each
 * such query; a memfd that is not frozen is still read by colocd.
 */
TEST_F_TIMEOUT(wire, infer_memfd__a_frozen_memfd_is_read_by_the_executor, 600)
{
	struct coloc_infer_result res;
	size_t out_elems = 0;
	float *want, *got, max_err, max_ref;
	struct json_object *t;
	bool seen[8] = { false };
	int fd;

	ASSERT_TRUE(submit_ready(self, "a"));
	want = tu_model_outputs(self->model, self->input, &out_elems);
	ASSERT_NE(NULL, want);
	got = calloc(1, self->out_bytes);
	ASSERT_NE(NULL, got);
	fd = coloc_client_input_memfd_frozen(self->input, self->in_bytes);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE)); /* frozen for good */
	for (int i = 0; i < 3; i++) {
		memset(got, 0, self->out_bytes);
		ASSERT_EQ(0, coloc_client_infer_send_memfd(self->c, "a", 1, fd, 0, self->in_bytes));
		ASSERT_EQ(1, coloc_client_infer_recv(self->c, &res, got, self->out_bytes, 120000))
		TH_LOG("%s", coloc_client_error(self->c));
		ASSERT_EQ(COLOC_INFER_OK, res.status) TH_LOG("%s", res.error);
		ref_compare(got, want, (int64_t)out_elems, &max_err, &max_ref);
		EXPECT_LE(max_err, TOL * (1.0f + max_ref))
		TH_LOG("query %d: max |error| %g", i, max_err);
	}
	for (uint64_t tag = 0; tag < 8; tag++)
		ASSERT_EQ(0,
			  coloc_client_infer_send_memfd(self->c, "a", tag, fd, 0, self->in_bytes));
	for (int i = 0; i < 8; i++) {
		ASSERT_EQ(1, coloc_client_infer_recv(self->c, &res, got, self->out_bytes, 120000))
		TH_LOG("%s", coloc_client_error(self->c));
		ASSERT_EQ(COLOC_INFER_OK, res.status) TH_LOG("%s", res.error);
		ASSERT_LT(res.tag, 8);
		EXPECT_FALSE(seen[res.tag]);
		seen[res.tag] = true;
		ref_compare(got, want, (int64_t)out_elems, &max_err, &max_ref);
		EXPECT_LE(max_err, TOL * (1.0f + max_ref)) TH_LOG("max |error| %g", max_err);
	}
	t = tenant_status(self, "a");
	EXPECT_EQ(11, num_of(t, "inputs_mapped"));
	json_object_put(t);
	/* mapped once in the sandboxed executor, then known again (kcmp) for the other ten */
	EXPECT_EQ(1, maps_of(executor_pid(self, "a"), "memfd:coloc-input"));
	/* the connection's own memfd is written through its mapping, not frozen: colocd reads it */
	expect_memfd_infer_ok(_metadata, self, want, out_elems);
	t = tenant_status(self, "a");
	EXPECT_EQ(11, num_of(t, "inputs_mapped"));
	EXPECT_EQ(12, num_of(t, "served"));
	json_object_put(t);
	close(fd);
	free(got);
	free(want);
}

TEST_HARNESS_MAIN
