// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A profile's place in the cache: the model's key (SHA-256 of its files,
 * profile_key.h), the machine's hash (FNV-1a 64), the cache folder
 * (--cache-dir, $COLOC_CACHE_DIR or the default) and the file name they
 * make together; and the files of the key before it (FNV-1a of the model
 * file only), counted so that their owner hears why they are not used.
 */
#define _GNU_SOURCE
#include "profile.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t profile_fnv1a64(const void *data, size_t len, uint64_t hash)
{
	const unsigned char *b = data;

	for (size_t i = 0; i < len; i++) {
		hash ^= b[i];
		hash *= 0x100000001b3ULL;
	}
	return hash;
}

uint64_t profile_machine_hash(const struct profile_machine *m)
{
	char id[PROFILE_CPU_MODEL_LEN + PROFILE_ISA_LEN + 64];
	int n = snprintf(id, sizeof(id), "%s|%s|%d|%llu", m->cpu_model, m->isa, m->nr_cores,
			 (unsigned long long)m->llc_bytes);

	return profile_fnv1a64(id, (size_t)n < sizeof(id) ? (size_t)n : sizeof(id) - 1,
			       PROFILE_FNV1A64_INIT);
}

const char *profile_cache_dir(const char *override)
{
	const char *env = getenv("COLOC_CACHE_DIR");

	if (override && *override)
		return override;
	if (env && *env)
		return env;
	return PROFILE_DEFAULT_CACHE_DIR;
}

int profile_cache_dir_make(const char *dir)
{
	char buf[PATH_MAX];
	struct stat st;

	if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *s = buf + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (!mkdir(buf, 0700))
		return 0;
	if (errno != EEXIST)
		return -errno;
	if (lstat(buf, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	return st.st_mode & 077 ? 1 : 0;
}

int profile_cache_path(const char *dir, const char *model_name, const struct profile_key *key,
		       const struct profile_machine *m, char *buf, size_t len)
{
	char hex[PROFILE_KEY_HEX_LEN + 1];
	int n;

	profile_key_hex(key, hex);
	n = snprintf(buf, len, "%s/%s-%s-%016llx.profile", dir, model_name, hex,
		     (unsigned long long)profile_machine_hash(m));
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int profile_cache_old_keyed(const char *dir, const char *model_name,
			    const struct profile_machine *m)
{
	char tail[32];
	size_t name_len = strlen(model_name);
	struct dirent *e;
	DIR *d = opendir(dir);
	int nr = 0;

	if (!d)
		return 0;
	snprintf(tail, sizeof(tail), "-%016llx.profile", (unsigned long long)profile_machine_hash(m));
	/* MODEL-<16 hex>-<machine>.profile */
	while ((e = readdir(d))) {
		const char *n = e->d_name;

		if (strlen(n) == name_len + 1 + 16 + strlen(tail) &&
		    !strncmp(n, model_name, name_len) && n[name_len] == '-' &&
		    strspn(n + name_len + 1, "0123456789abcdef") == 16 &&
		    !strcmp(n + name_len + 17, tail))
			nr++;
	}
	closedir(d);
	return nr;
}
