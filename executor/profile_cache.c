// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A profile's place in the cache: the model file's hash (FNV-1a 64), the
 * machine's, the cache folder (--cache-dir, $COLOC_CACHE_DIR or the
 * default) and the file name they make together.
 */
#define _GNU_SOURCE
#include "profile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
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

int profile_hash_file(const char *path, uint64_t *hash)
{
	unsigned char buf[65536];
	uint64_t h = PROFILE_FNV1A64_INIT;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			int ret = -errno;

			if (errno == EINTR)
				continue;
			close(fd);
			return ret;
		}
		h = profile_fnv1a64(buf, (size_t)n, h);
	}
	close(fd);
	*hash = h;
	return 0;
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

int profile_cache_path(const char *dir, const char *model_name, uint64_t model_hash,
		       const struct profile_machine *m, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s-%016llx-%016llx.profile", dir, model_name,
			 (unsigned long long)model_hash,
			 (unsigned long long)profile_machine_hash(m));

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
