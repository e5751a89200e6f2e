// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The --state writer's thread (daemon/state_writer.c) against a disk that
 * does not answer: a keep's temporary file is a FIFO nobody reads, so the
 * thread stalls on it as on a dead disk. A removed tenant's keep still
 * queued behind it lets go of its files at once, and exit waits a bounded
 * time. And a remove reaches the disk when memory runs out: this binary's
 * malloc, calloc and realloc fail on the thread that asks them to.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "colocd.h"
#include "state_writer.h"
#include "testutil.h"

/* While set, this thread's allocations fail, as when the machine is out of memory. */
static __thread bool allocs_fail;

void *malloc(size_t n)
{
	static void *(*next)(size_t);

	if (allocs_fail) {
		errno = ENOMEM;
		return NULL;
	}
	if (!next)
		next = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	return next(n);
}

void *calloc(size_t nr, size_t n)
{
	static void *(*next)(size_t, size_t);

	if (allocs_fail) {
		errno = ENOMEM;
		return NULL;
	}
	if (!next)
		next = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	return next(nr, n);
}

void *realloc(void *p, size_t n)
{
	static void *(*next)(void *, size_t);

	if (allocs_fail) {
		errno = ENOMEM;
		return NULL;
	}
	if (!next)
		next = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	return next(p, n);
}

/* How many of this process's descriptors are the memfd named name. */
static int memfd_refs(const char *name)
{
	char want[64], link[256], path[300];
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int nr = 0;

	snprintf(want, sizeof(want), "/memfd:%s (deleted)", name);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		nr += !strcmp(link, want);
	}
	closedir(d);
	return nr;
}

static int memfd_with(const char *name)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd >= 0 && write(fd, "model bytes", 11) != 11) {
		close(fd);
		return -1;
	}
	return fd;
}

static struct colocd_files files_of(int model_fd)
{
	struct colocd_files f = { .model_fd = model_fd, .weights_fd = -1 };

	for (int i = 0; i < COLOC_MAX_REQUEST_FDS; i++)
		f.external_fd[i] = -1;
	return f;
}

FIXTURE(stalled)
{
	char dir[64], state[128], fifo[192];
	struct state_writer *w;
	int blocker, x;
};

FIXTURE_SETUP(stalled)
{
	char files[160];
	struct colocd_files f;

	snprintf(self->dir, sizeof(self->dir), "/tmp/coloc-state-writer-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->state, sizeof(self->state), "%s/state", self->dir);
	snprintf(files, sizeof(files), "%s.files", self->state);
	ASSERT_EQ(0, mkdir(files, 0700));
	snprintf(self->fifo, sizeof(self->fifo), "%s/blocker.model.tmp", files);
	ASSERT_EQ(0, mkfifo(self->fifo, 0600));
	ASSERT_EQ(0, state_writer_new(self->state, &self->w));
	self->blocker = memfd_with("blocker");
	self->x = memfd_with("x");
	ASSERT_GE(self->blocker, 0);
	ASSERT_GE(self->x, 0);
	/* the thread takes this one and stalls opening the FIFO */
	f = files_of(self->blocker);
	ASSERT_EQ(0, state_writer_reserve_drop(self->w));
	ASSERT_EQ(0, state_writer_keep_files(self->w, "blocker", &f, 0));
	f = files_of(self->x);
	ASSERT_EQ(0, state_writer_reserve_drop(self->w));
	ASSERT_EQ(0, state_writer_keep_files(self->w, "x", &f, 0));
}

FIXTURE_TEARDOWN(stalled)
{
	if (self->blocker >= 0)
		close(self->blocker);
	if (self->x >= 0)
		close(self->x);
	if (tu_remove_tree(self->dir))
		TH_LOG("could not remove %s", self->dir);
}

/* Unblocks the stalled keep: a reader opens the FIFO and reads it to its end. */
static void drain_fifo(const char *fifo)
{
	int fd = open(fifo, O_RDONLY | O_CLOEXEC);
	char buf[256];

	while (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
		;
	if (fd >= 0)
		close(fd);
}

TEST_F(stalled, drop__a_keep_not_started_lets_go_of_its_files_at_once)
{
	struct stat st;
	char copy[192];

	/* ours and the writer's duplicate, queued behind the stalled keep */
	ASSERT_EQ(2, memfd_refs("x"));
	state_writer_drop_files(self->w, "x", 0);
	EXPECT_EQ(1, memfd_refs("x")) TH_LOG("the removed tenant's files are still held");
	drain_fifo(self->fifo);
	state_writer_free(self->w);
	snprintf(copy, sizeof(copy), "%s.files/x.model", self->state);
	EXPECT_EQ(-1, stat(copy, &st)) TH_LOG("a cancelled keep's copy was written");
}

TEST_F(stalled, free__waits_for_a_dead_disk_a_bounded_time)
{
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	state_writer_free(self->w); /* the keep never ends: nobody reads the FIFO */
	clock_gettime(CLOCK_MONOTONIC, &t1);
	EXPECT_GE(30, t1.tv_sec - t0.tv_sec) TH_LOG("exit waited for the disk for ever");
	/* the thread is left stalled: let it go, so the process can end */
	drain_fifo(self->fifo);
}

static void spec_of(struct colocd_spec *spec, const char *name)
{
	memset(spec, 0, sizeof(*spec));
	snprintf(spec->name, sizeof(spec->name), "%s", name);
	snprintf(spec->model, sizeof(spec->model), "/home/m/%s.model", name);
	spec->qos_ns = 5000000;
}

TEST(spec_drop__reaches_the_disk_when_memory_runs_out)
{
	char dir[] = "/tmp/coloc-state-drop-XXXXXX", path[64], copy[96];
	struct colocd_spec *back = calloc(COLOC_MAX_TENANTS, sizeof(*back));
	struct colocd *d = calloc(1, sizeof(*d));
	int a = memfd_with("a"), b = memfd_with("b");
	struct coloc_err err = { 0 };
	struct colocd_spec spec;
	struct colocd_files f;
	struct stat st;
	void *probe;

	ASSERT_NE(NULL, back);
	ASSERT_NE(NULL, d);
	ASSERT_GE(a, 0);
	ASSERT_GE(b, 0);
	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/state", dir);
	d->specs = calloc(COLOC_MAX_TENANTS, sizeof(*d->specs));
	ASSERT_NE(NULL, d->specs);
	d->cfg.state_path = path;
	ASSERT_EQ(0, state_writer_new(path, &d->state_writer));
	spec_of(&spec, "a");
	f = files_of(a);
	ASSERT_EQ(0, colocd_spec_add(d, &spec, &f, &err)) TH_LOG("%s", coloc_err_str(&err));
	spec_of(&spec, "b");
	f = files_of(b);
	ASSERT_EQ(0, colocd_spec_add(d, &spec, &f, &err)) TH_LOG("%s", coloc_err_str(&err));

	allocs_fail = true;
	probe = malloc(16);
	colocd_spec_drop(d, "a", &err);
	allocs_fail = false;
	ASSERT_EQ(NULL, probe) TH_LOG("the out-of-memory hook is not in effect");
	state_writer_free(d->state_writer);

	ASSERT_EQ(1, colocd_state_read(path, back, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_STREQ("b", back[0].name) TH_LOG("a removed tenant would come back");
	snprintf(copy, sizeof(copy), "%s.files/a.model", path);
	EXPECT_EQ(-1, stat(copy, &st)) TH_LOG("the removed tenant's copy stayed");
	snprintf(copy, sizeof(copy), "%s.files/b.model", path);
	EXPECT_EQ(0, stat(copy, &st)) TH_LOG("the other tenant's copy is gone");
	if (tu_remove_tree(dir))
		TH_LOG("could not remove %s", dir);
}

TEST(render__escapes_what_json_c_reads_back)
{
	char dir[] = "/tmp/coloc-state-text-XXXXXX", path[64];
	struct colocd_spec *specs = calloc(2, sizeof(*specs));
	struct colocd_spec *back = calloc(COLOC_MAX_TENANTS, sizeof(*back));
	struct coloc_err err = { 0 };

	ASSERT_NE(NULL, specs);
	ASSERT_NE(NULL, back);
	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/state", dir);
	spec_of(&specs[0], "q");
	snprintf(specs[0].model, sizeof(specs[0].model),
		 "/m/\"quoted\"\\back\nline\t\x01\xc3\xa9.onnx");
	snprintf(specs[0].weights, sizeof(specs[0].weights), "/m/w.bin");
	specs[0].nr_external = 2;
	snprintf(specs[0].external[0], COLOCD_LOCATION_LEN, "e0.bin");
	snprintf(specs[0].external[1], COLOCD_LOCATION_LEN, "sub/\"e1\".bin");
	specs[0].executors = 3;
	specs[0].owner = 4294967294u;
	specs[0].qos_ns = 18446744073709551ull;
	spec_of(&specs[1], "r");
	ASSERT_EQ(0, colocd_state_write_specs(path, specs, 2, &err))
	TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(2, colocd_state_read(path, back, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(0, memcmp(&specs[0], &back[0], sizeof(specs[0])));
	EXPECT_STREQ(specs[0].model, back[0].model);
	EXPECT_STREQ(specs[0].external[1], back[0].external[1]);
	EXPECT_EQ(specs[0].qos_ns, back[0].qos_ns);
	EXPECT_EQ(specs[0].owner, back[0].owner);
	EXPECT_EQ(3, back[0].executors);
	EXPECT_STREQ("r", back[1].name);
	EXPECT_EQ(0, back[1].weights[0]);
	EXPECT_EQ(0, back[1].executors);
	if (tu_remove_tree(dir))
		TH_LOG("could not remove %s", dir);
}

TEST_HARNESS_MAIN
