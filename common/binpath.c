// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Finding a sibling binary (coloc-profile and the tests run coloc-stress)
 * without a search of $PATH, which could pick up another build or install.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "binpath.h"
#include "util.h"

static int binpath_try(char *buf, size_t len, const char *dir, const char *sub, const char *name)
{
	int n = snprintf(buf, len, "%s%s/%s", dir, sub, name);

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return access(buf, X_OK) ? -ENOENT : 0;
}

int binpath_find(const char *name, char *buf, size_t len)
{
	/* beside the executable, then a test's own tree: build/san/tests, build/obj/tests */
	static const char *const subdirs[] = { "", "/../bin", "/../../../bin" };
	const char *env = getenv("COLOC_BIN");
	char exe[PATH_MAX], *slash;
	ssize_t n;
	int ret = -ENOENT;

	if (!name || !*name || strchr(name, '/') || !buf || !len)
		return -EINVAL;
	if (env && *env)
		return binpath_try(buf, len, env, "", name);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return -errno;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(subdirs); i++) {
		ret = binpath_try(buf, len, exe, subdirs[i], name);
		if (ret != -ENOENT)
			return ret;
	}
	return ret;
}
