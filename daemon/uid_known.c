// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The bitmap of the executor uids someone has already (uid_known.h). */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "uid_known.h"

struct uid_known {
	uid_t first, last;
	uint64_t *bits; /* the one the loop reads */
	unsigned int count;
	_Atomic(uint64_t *) fresh; /* a rebuild's, until the loop takes it */
	atomic_bool done; /* the rebuild's thread has finished */
	bool running;
	pthread_t thread;
};

static size_t nr_words(const struct uid_known *k)
{
	return ((size_t)(k->last - k->first) + 64) / 64;
}

static void mark(const struct uid_known *k, uint64_t *bits, unsigned long id)
{
	if (id >= k->first && id <= k->last)
		bits[(id - k->first) / 64] |= 1ull << ((id - k->first) % 64);
}

/* A user or a group of uid's number; the _r calls, as a helper thread may ask. */
static bool nss_knows(uid_t uid, char **buf, size_t *len)
{
	struct passwd pw, *pwp = NULL;
	struct group gr, *grp = NULL;
	int ret;

	while ((ret = getpwuid_r(uid, &pw, *buf, *len, &pwp)) == ERANGE && *len < (1u << 24)) {
		char *more = realloc(*buf, *len * 4);

		if (!more)
			break;
		*buf = more;
		*len *= 4;
	}
	if (pwp)
		return true;
	while ((ret = getgrgid_r((gid_t)uid, &gr, *buf, *len, &grp)) == ERANGE &&
	       *len < (1u << 24)) {
		char *more = realloc(*buf, *len * 4);

		if (!more)
			break;
		*buf = more;
		*len *= 4;
	}
	return grp != NULL;
}

/* The real, effective, saved and filesystem ids of "Uid:" or "Gid:" in a status. */
static void mark_ids(const struct uid_known *k, uint64_t *bits, const char *status,
		     const char *key)
{
	const char *p = strstr(status, key);
	char *end;

	if (!p)
		return;
	p += strlen(key);
	for (int i = 0; i < 4; i++, p = end) {
		unsigned long id = strtoul(p, &end, 10);

		if (end == p)
			return;
		mark(k, bits, id);
	}
}

/* Every process's ids, from /proc: a uid that runs processes is someone's. */
static void mark_processes(const struct uid_known *k, uint64_t *bits)
{
	DIR *proc = opendir("/proc");
	struct dirent *e;

	if (!proc)
		return;
	while ((e = readdir(proc))) {
		char status[4096], path[256];
		ssize_t n;
		int fd;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "%.200s/status", e->d_name);
		fd = openat(dirfd(proc), path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, status, sizeof(status) - 1);
		close(fd);
		if (n <= 0)
			continue;
		status[n] = '\0';
		mark_ids(k, bits, status, "\nUid:");
		mark_ids(k, bits, status, "\nGid:");
	}
	closedir(proc);
}

static uint64_t *build(const struct uid_known *k)
{
	uint64_t *bits = calloc(nr_words(k), sizeof(*bits));
	size_t len = 16384;
	char *buf = malloc(len);

	if (!bits || !buf) {
		free(bits);
		free(buf);
		return NULL;
	}
	for (uint64_t uid = k->first; uid <= k->last; uid++)
		if (nss_knows((uid_t)uid, &buf, &len))
			mark(k, bits, (unsigned long)uid);
	free(buf);
	mark_processes(k, bits);
	return bits;
}

static unsigned int count_bits(const struct uid_known *k, const uint64_t *bits)
{
	unsigned int n = 0;

	for (size_t i = 0; i < nr_words(k); i++)
		n += (unsigned int)__builtin_popcountll(bits[i]);
	return n;
}

int uid_known_new(uid_t first, uid_t last, struct uid_known **out, struct coloc_err *err)
{
	struct uid_known *k;

	*out = NULL;
	if (last < first || (uint64_t)last - first + 1 > UID_KNOWN_MAX_SPAN)
		return coloc_err_set(err, -EINVAL,
				     "the uid range %u-%u spans more than %u uids, which colocd "
				     "looks up in NSS at start; give a smaller one",
				     first, last, UID_KNOWN_MAX_SPAN);
	k = calloc(1, sizeof(*k));
	if (!k)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	k->first = first;
	k->last = last;
	k->bits = build(k);
	if (!k->bits) {
		free(k);
		return coloc_err_set(err, -ENOMEM, "out of memory");
	}
	k->count = count_bits(k, k->bits);
	atomic_init(&k->fresh, NULL);
	atomic_init(&k->done, false);
	*out = k;
	return 0;
}

static void *rebuild_thread(void *arg)
{
	struct uid_known *k = arg;

	atomic_store(&k->fresh, build(k));
	atomic_store(&k->done, true);
	return NULL;
}

/* A finished rebuild's bitmap replaces the current one. */
static void adopt(struct uid_known *k, bool wait)
{
	uint64_t *fresh;

	if (!k->running || (!wait && !atomic_load(&k->done)))
		return;
	pthread_join(k->thread, NULL);
	k->running = false;
	fresh = atomic_exchange(&k->fresh, NULL);
	if (fresh) {
		free(k->bits);
		k->bits = fresh;
		k->count = count_bits(k, fresh);
	}
}

int uid_known_refresh(struct uid_known *k)
{
	int ret;

	adopt(k, false);
	if (k->running)
		return -EALREADY;
	atomic_store(&k->done, false);
	ret = pthread_create(&k->thread, NULL, rebuild_thread, k);
	if (ret)
		return -ret;
	k->running = true;
	return 0;
}

bool uid_known_has(struct uid_known *k, uid_t uid)
{
	adopt(k, false);
	if (uid < k->first || uid > k->last)
		return false;
	return k->bits[(uid - k->first) / 64] & (1ull << ((uid - k->first) % 64));
}

unsigned int uid_known_count(struct uid_known *k)
{
	adopt(k, false);
	return k->count;
}

void uid_known_free(struct uid_known *k)
{
	if (!k)
		return;
	adopt(k, true);
	free(k->bits);
	free(k);
}
