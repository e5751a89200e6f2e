// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Test helpers for files and folders (declared in testutil.h): a whole file
 * read or written, a fresh folder under /tmp, a tree removed without a
 * shell or a followed link.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>

#include "testutil.h"

char *tu_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET)) {
		buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		} else if (buf) {
			buf[n] = '\0';
			*len = (size_t)n;
		}
	}
	fclose(f);
	return buf;
}

size_t tu_read_all(int fd, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	if (len)
		buf[got] = '\0';
	return got;
}

int tu_write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -1;
	ok = fwrite(data, 1, len, f) == len;
	return fclose(f) == 0 && ok ? 0 : -1;
}

int tu_make_tmpdir(const char *name, char *buf, size_t len)
{
	bool root = !geteuid() &&
		    (!mkdir(TU_ROOT_TMP, 0755) ? !chmod(TU_ROOT_TMP, 0755) : errno == EEXIST);
	int n = snprintf(buf, len, root ? TU_ROOT_TMP "/%s-XXXXXX" : "/tmp/coloc-%s-XXXXXX", name);

	if (n < 0 || (size_t)n >= len) {
		if (len)
			buf[0] = '\0';
		return -ENAMETOOLONG;
	}
	if (!mkdtemp(buf)) {
		buf[0] = '\0';
		return -errno;
	}
	return 0;
}

static int tu_remove_tree_err;

static int tu_remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	if (remove(path) && !tu_remove_tree_err)
		tu_remove_tree_err = -errno;
	return 0;
}

int tu_remove_tree(const char *path)
{
	if (!path || !path[0])
		return 0;
	tu_remove_tree_err = 0;
	if (nftw(path, tu_remove_entry, 16, FTW_DEPTH | FTW_PHYS) && errno != ENOENT)
		return -errno;
	return tu_remove_tree_err;
}
