// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-gateway against whoever writes its model repository: the real
 * gateway as the `coloc` user in front of the fake colocd
 * (gateway_fake_colocd.h), loading models with --model-control. A model
 * file truncated while the gateway reads it fails that model's load and
 * nothing else (it was a SIGBUS of the whole gateway while the file was
 * mapped); an ONNX model's external data that is a symbolic link out of
 * the repository, or a '..' location, is refused before it is handed to
 * colocd; an error body names the repository's files by their names in
 * it, never by the server's absolute path.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "gateway_fake_colocd.h"
#include <fcntl.h>
#include <signal.h>

#define TRUNC_BYTES ((64u << 20) - 1) /* a model whose scan takes long enough to be cut */
#define TRUNC_SHORT 4096
#define TRUNC_LOADS 12
#define SWAP_LOADS 200

/* Whether the gateway still runs (not reaped: it is the test's child). */
static bool gateway_alive(FIXTURE_DATA(fwd) * self)
{
	siginfo_t si = { 0 };

	if (waitid(P_PID, (id_t)self->env.gateway, &si, WEXITED | WNOHANG | WNOWAIT))
		return false;
	if (si.si_pid)
		fprintf(stderr, "# the gateway ended: code %d status %d (%s)\n", si.si_code,
			si.si_status, strsignal(si.si_status));
	return !si.si_pid;
}

/* path holding text, readable by all (the gateway runs as coloc). */
static int write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f) || chmod(path, 0644) ? -1 : 0;
}

/* chmod -R a+rX on the repository, for the gateway's user. */
static int open_repo(FIXTURE_DATA(fwd) * self)
{
	char cmd[700];

	snprintf(cmd, sizeof(cmd), "chmod -R a+rX '%s'", self->env.repo);
	return system(cmd);
}

/* A model folder NAME/1 with config.json for 4 floats in, the model file's bytes at model. */
static int write_onnx_model(const char *repo, const char *name, const void *bytes, size_t len,
			    size_t size)
{
	char path[640];
	int fd;

	snprintf(path, sizeof(path), "mkdir -p '%s/%s/1'", repo, name);
	if (system(path))
		return -1;
	snprintf(path, sizeof(path), "%s/%s/config.json", repo, name);
	if (write_text(path, "{\"qos_ms\": 1000, \"input\": [{\"name\": \"x\", \"dims\": [1, 4]}], "
			     "\"output\": [{\"name\": \"y\", \"dims\": [1, 10]}]}\n"))
		return -1;
	snprintf(path, sizeof(path), "%s/%s/1/model.onnx", repo, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (write(fd, bytes, len) != (ssize_t)len || ftruncate(fd, (off_t)size)) {
		close(fd);
		return -1;
	}
	return close(fd);
}

/* A length-delimited field: key, length (< 128), bytes. */
static size_t put_field(uint8_t *out, unsigned int field, const void *bytes, size_t len)
{
	out[0] = (uint8_t)(field << 3 | 2);
	out[1] = (uint8_t)len;
	memcpy(out + 2, bytes, len);
	return len + 2;
}

/* ModelProto.graph.initializer[0].external_data[0] = {"location": loc}, as NAME/1/model.onnx. */
static int write_onnx_with_location(const char *repo, const char *name, const char *loc)
{
	uint8_t entry[96], tensor[100], graph[104], model[108];
	size_t n;

	n = put_field(entry, 1, "location", 8);
	n += put_field(entry + n, 2, loc, strlen(loc));
	n = put_field(tensor, 13, entry, n);
	n = put_field(graph, 5, tensor, n);
	n = put_field(model, 7, graph, n);
	return write_onnx_model(repo, name, model, n, n);
}

/*
 * "ext", whose external data w.bin is a link to target outside the
 * repository, and "inside", whose w.bin is a link to real.bin beside it.
 */
static int write_linked_models(FIXTURE_DATA(fwd) * self, const char *target)
{
	char path[640];

	snprintf(path, sizeof(path), "%s/ext/1/w.bin", self->env.repo);
	if (write_onnx_with_location(self->env.repo, "ext", "w.bin") || symlink(target, path))
		return -1;
	snprintf(path, sizeof(path), "%s/inside/1/real.bin", self->env.repo);
	if (write_onnx_with_location(self->env.repo, "inside", "w.bin") ||
	    write_text(path, "weights"))
		return -1;
	snprintf(path, sizeof(path), "%s/inside/1/w.bin", self->env.repo);
	return symlink("real.bin", path);
}

struct truncator {
	int fd;
	atomic_bool stop;
	atomic_int rounds;
};

/* Cuts the model file short and makes it whole again, until told to stop. */
static void *truncate_loop(void *arg)
{
	struct truncator *t = arg;

	while (!atomic_load(&t->stop)) {
		if (ftruncate(t->fd, TRUNC_SHORT))
			break;
		usleep(300);
		if (ftruncate(t->fd, TRUNC_BYTES))
			break;
		usleep(300);
		atomic_fetch_add(&t->rounds, 1);
	}
	return NULL;
}

/*
 * An ONNX model of 64 MiB (a graph of zeros, which the scan for external
 * data walks to its end) is cut to 4 KiB and made whole again every 0.6 ms
 * while the gateway loads it, over and over. Before: the gateway mapped the
 * file and died of SIGBUS at the first load. Now each load is that model's
 * success or its error, and health and another model's queries still answer.
 */
TEST_F_TIMEOUT(fwd, load__a_model_truncated_while_read_fails_alone, 600)
{
	const char *control[] = { "--model-control", NULL };
	uint8_t head[8] = { 7 << 3 | 2 };
	struct truncator t = { .fd = -1 };
	char path[640];
	int shorter = 0, loaded = 0;
	size_t n = 1;
	pthread_t th;

	/* the graph's length as a varint, the rest zeros: fields 0 of varint 0, walked */
	for (uint64_t v = TRUNC_BYTES - 5; v; v >>= 7)
		head[n++] = (uint8_t)(v & 0x7f) | (v >> 7 ? 0x80 : 0);
	ASSERT_EQ(5, n);
	ASSERT_EQ(0, write_onnx_model(self->env.repo, "trunc", head, n, TRUNC_BYTES));
	ASSERT_EQ(0, open_repo(self));
	ASSERT_TRUE(start_gateway(self, control));
	snprintf(path, sizeof(path), "%s/trunc/1/model.onnx", self->env.repo);
	t.fd = open(path, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, t.fd);
	ASSERT_EQ(0, pthread_create(&th, NULL, truncate_loop, &t));
	for (int i = 0; i < TRUNC_LOADS && gateway_alive(self); i++) {
		int code;

		post_empty(self, "/v2/repository/models/trunc/unload", 100 + i);
		code = post_empty(self, "/v2/repository/models/trunc/load", i);
		loaded += code == 200;
		shorter += body_has(self, i, "became shorter while it was read", false);
	}
	atomic_store(&t.stop, true);
	pthread_join(th, NULL);
	close(t.fd);
	TH_LOG("%d loads: %d loaded, %d cut short; the file cut %d times", TRUNC_LOADS, loaded,
	       shorter, atomic_load(&t.rounds));
	ASSERT_TRUE(gateway_alive(self));
	EXPECT_EQ(200, http_get(self, "/v2/health/live"));
	EXPECT_EQ(200, infer(self, "fast", 1));
	EXPECT_GT(shorter, 0); /* the race was run, not missed */
}

/*
 * An ONNX model's external data file that is a symbolic link to a file
 * outside the repository is refused before it is opened and handed to
 * colocd (before: followed, the outside file sent as the model's data);
 * a '..' location is refused the same way. With --repository-links, a
 * link that stays in the model's folder is followed.
 */
TEST_F_TIMEOUT(fwd, load__external_data_links_and_dotdot_are_refused, 300)
{
	const char *control[] = { "--model-control", NULL };
	const char *links[] = { "--model-control", "--repository-links", NULL };
	char path[640], target[640];

	/* models that fail to load keep the gateway unready: written once it started */
	ASSERT_TRUE(start_gateway(self, control));
	snprintf(target, sizeof(target), "%s/secret.bin", self->env.dir);
	ASSERT_EQ(0, write_text(target, "secret"));
	ASSERT_EQ(0, write_linked_models(self, target));
	ASSERT_EQ(0, write_onnx_with_location(self->env.repo, "up", "../../../secret.bin"));
	ASSERT_EQ(0, open_repo(self));
	EXPECT_NE(200, post_empty(self, "/v2/repository/models/ext/load", 1));
	EXPECT_TRUE(body_has(self, 1, "w.bin: a symbolic link", false));
	EXPECT_NE(200, post_empty(self, "/v2/repository/models/up/load", 2));
	EXPECT_TRUE(body_has(self, 2, "not a relative path below", false));
	EXPECT_NE(200, post_empty(self, "/v2/repository/models/inside/load", 3));
	tu_stop_child(&self->env.gateway);
	snprintf(path, sizeof(path), "cd '%s' && rm -r up ext inside", self->env.repo);
	ASSERT_EQ(0, system(path));
	ASSERT_TRUE(start_gateway(self, links));
	ASSERT_EQ(0, write_linked_models(self, target));
	ASSERT_EQ(0, open_repo(self));
	/* with links: the one in the model's folder is followed, the one out of it is not */
	EXPECT_EQ(200, post_empty(self, "/v2/repository/models/inside/load", 4));
	EXPECT_NE(200, post_empty(self, "/v2/repository/models/ext/load", 5));
	EXPECT_TRUE(body_has(self, 5, "leads outside its folder", false));
	EXPECT_EQ(200, infer(self, "fast", 6));
}

struct swapper {
	char dir[600];
	atomic_bool stop;
	atomic_int rounds;
};

/* Swaps model.onnx and the link "swap" in dir, atomically, until told to stop. */
static void *swap_loop(void *arg)
{
	struct swapper *w = arg;
	char a[700], b[700];

	snprintf(a, sizeof(a), "%s/model.onnx", w->dir);
	snprintf(b, sizeof(b), "%s/swap", w->dir);
	while (!atomic_load(&w->stop)) {
		if (renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE))
			break;
		atomic_fetch_add(&w->rounds, 1);
	}
	return NULL;
}

/*
 * The model file swapped with a link to a file outside the repository
 * (renameat2's exchange, over and over) while the model is loaded 200 times:
 * each load opens the real file or refuses the link, never the file it
 * names (here not an ONNX model, so opening it says so). Before: the
 * repository checked the path with lstat and the client opened it again,
 * following a link swapped in meanwhile.
 */
TEST_F_TIMEOUT(fwd, load__a_link_swapped_in_is_never_followed, 300)
{
	const char *control[] = { "--model-control", NULL };
	struct swapper w = { 0 };
	char path[700], target[640];
	int followed = 0, loaded = 0;
	pthread_t th;

	ASSERT_TRUE(start_gateway(self, control));
	snprintf(target, sizeof(target), "%s/outside.onnx", self->env.dir);
	ASSERT_EQ(0, write_text(target, "\xff\xff not an ONNX model"));
	ASSERT_EQ(0, write_onnx_with_location(self->env.repo, "sw", "w.bin"));
	snprintf(path, sizeof(path), "%s/sw/1/w.bin", self->env.repo);
	ASSERT_EQ(0, write_text(path, "weights"));
	snprintf(w.dir, sizeof(w.dir), "%s/sw/1", self->env.repo);
	snprintf(path, sizeof(path), "%s/swap", w.dir);
	ASSERT_EQ(0, symlink(target, path));
	ASSERT_EQ(0, open_repo(self));
	ASSERT_EQ(0, pthread_create(&th, NULL, swap_loop, &w));
	for (int i = 0; i < SWAP_LOADS; i++) {
		post_empty(self, "/v2/repository/models/sw/unload", 1000 + i);
		loaded += post_empty(self, "/v2/repository/models/sw/load", i) == 200;
		followed += body_has(self, i, "not an ONNX model", true) ? 0 : 1;
	}
	atomic_store(&w.stop, true);
	pthread_join(th, NULL);
	TH_LOG("%d loads: %d loaded, %d opened the file the link names; %d swaps", SWAP_LOADS,
	       loaded, followed, atomic_load(&w.rounds));
	EXPECT_EQ(0, followed);
	EXPECT_GT(loaded, 0);
	EXPECT_EQ(200, infer(self, "fast", 1));
}

/*
 * A load's error body and the index's reason name the repository's files
 * as NAME/..., not by the server's absolute path (before: the realpath of
 * the repository in every reason); the gateway's log keeps the path.
 */
TEST_F_TIMEOUT(fwd, errors__name_files_in_the_repository_not_the_servers_path, 300)
{
	const char *control[] = { "--model-control", NULL };
	char path[640], repo[PATH_MAX], *log;
	size_t len;

	ASSERT_NE(NULL, realpath(self->env.repo, repo));
	ASSERT_TRUE(start_gateway(self, control));
	ASSERT_EQ(0, write_repo_model(self->env.repo, "badcfg", 4));
	snprintf(path, sizeof(path), "%s/badcfg/config.json", self->env.repo);
	ASSERT_EQ(0, write_text(path, "{\"qos_ms\": 5, \"weights\": \"absent.bin\"}"));
	ASSERT_EQ(0, write_onnx_model(self->env.repo, "notonnx", "\xff\xff", 2, 2));
	ASSERT_EQ(0, open_repo(self));
	EXPECT_NE(200, post_empty(self, "/v2/repository/models/badcfg/load", 1));
	EXPECT_TRUE(body_has(self, 1, "badcfg/config.json", false));
	EXPECT_TRUE(body_has(self, 1, repo, true));
	EXPECT_NE(200, post_empty(self, "/v2/repository/models/notonnx/load", 2));
	EXPECT_TRUE(body_has(self, 2, "notonnx/1/model.onnx is not an ONNX model", false));
	EXPECT_TRUE(body_has(self, 2, repo, true));
	EXPECT_EQ(200, post_empty(self, "/v2/repository/index", 3));
	EXPECT_TRUE(body_has(self, 3, "notonnx/1/model.onnx is not", false));
	EXPECT_TRUE(body_has(self, 3, repo, true));
	log = tu_read_file(self->env.gwlog, &len);
	EXPECT_TRUE(log && strstr(log, repo)) TH_LOG("the log keeps the repository's path");
	free(log);
}

TEST_HARNESS_MAIN
