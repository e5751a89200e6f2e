// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The --state writer's thread (daemon/state_writer.c) against a disk that
 * does not answer: a keep's temporary file is a FIFO nobody reads, so the
 * thread stalls on it as on a dead disk. A removed tenant's keep still
 * queued behind it lets go of its files at once, and exit waits a bounded
 * time.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "state_writer.h"

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
	ASSERT_EQ(0, state_writer_keep_files(self->w, "blocker", &f, 0));
	f = files_of(self->x);
	ASSERT_EQ(0, state_writer_keep_files(self->w, "x", &f, 0));
}

FIXTURE_TEARDOWN(stalled)
{
	char cmd[128];

	if (self->blocker >= 0)
		close(self->blocker);
	if (self->x >= 0)
		close(self->x);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", self->dir);
	if (system(cmd))
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
	ASSERT_EQ(0, state_writer_drop_files(self->w, "x", 0));
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

TEST_HARNESS_MAIN
