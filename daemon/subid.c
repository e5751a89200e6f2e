// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * subid.h: /etc/subuid and /etc/subgid read into two tables of ranges,
 * each line NAME:START:COUNT (shadow-utils' format; an NSS subid plugin
 * is not read). Opened as root's tools open what they trust
 * (file_open_own_or_root: no link, no FIFO, root's own, writable by no
 * group or other), at most 1 MiB each; the loop asks subid_held() once
 * per accepted connection, a scan of at most SUBID_MAX_RANGES.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "file_own.h"
#include "subid.h"

#define SUBID_MAX_FILE_BYTES (1 << 20)

struct subid_range {
	unsigned long long start, count;
};

struct subid_table {
	int nr;
	struct subid_range r[SUBID_MAX_RANGES];
};

static struct subid_table *subid_uids, *subid_gids;
static unsigned long long guard_first, guard_last;
static bool guarded; /* subid_guard called */

void subid_guard(uid_t first, uid_t last)
{
	guard_first = first;
	guard_last = last;
	guarded = true;
}

/* A range of t overlapping the executors' uids: 0, or -EEXIST with err naming it. */
static int subid_check_guard(const char *path, const struct subid_table *t, struct coloc_err *err)
{
	for (int i = 0; guarded && t && i < t->nr; i++) {
		const struct subid_range *r = &t->r[i];

		if ((r->start >= guard_first && r->start <= guard_last) ||
		    (guard_first >= r->start && guard_first - r->start < r->count))
			return coloc_err_set(
				err, -EEXIST,
				"%s: the subordinate uids %llu-%llu overlap the executors' uids "
				"%llu-%llu (colocd --uid-range): a member's user namespace "
				"could signal those executors; give --uid-range uids clear of "
				"every subordinate range",
				path, r->start, r->start + r->count - 1, guard_first, guard_last);
	}
	return 0;
}

/* One NAME:START:COUNT line into *r; false when it is not one. */
static bool subid_parse_line(char *line, struct subid_range *r)
{
	char *start = strchr(line, ':'), *count, *end;

	if (!start || !(count = strchr(start + 1, ':')))
		return false;
	errno = 0;
	r->start = strtoull(start + 1, &end, 10);
	if (errno || end != count || end == start + 1)
		return false;
	r->count = strtoull(count + 1, &end, 10);
	return !errno && end != count + 1 && (*end == '\0' || *end == '\n') && r->count;
}

/* path's ranges into a new table (*out; NULL for a missing file): 0 or -errno, err set. */
static int subid_read(const char *path, struct subid_table **out, struct coloc_err *err)
{
	char why[96], line[512];
	struct subid_table *t;
	int fd = file_open_own_or_root(path, why, sizeof(why)), lineno = 0;
	FILE *f;

	*out = NULL;
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return coloc_err_set(err, fd, "%s %s: not read (subordinate ids come from a file "
				     "of root's, writable by no group or other)", path, why);
	f = fdopen(fd, "r");
	t = calloc(1, sizeof(*t));
	if (!f || !t || lseek(fd, 0, SEEK_END) > SUBID_MAX_FILE_BYTES ||
	    lseek(fd, 0, SEEK_SET)) {
		int code = !f || !t ? -ENOMEM : -EFBIG;

		if (f)
			fclose(f);
		else
			close(fd);
		free(t);
		return coloc_err_set(err, code, "%s: %s", path,
				     code == -ENOMEM ? "out of memory" : "more than 1 MiB");
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (t->nr == SUBID_MAX_RANGES || !subid_parse_line(line, &t->r[t->nr])) {
			bool full = t->nr == SUBID_MAX_RANGES;

			fclose(f);
			free(t);
			if (full)
				return coloc_err_set(err, -E2BIG, "%s:%d: more than %d ranges",
						     path, lineno, SUBID_MAX_RANGES);
			return coloc_err_set(err, -EINVAL, "%s:%d: not NAME:START:COUNT", path,
					     lineno);
		}
		t->nr++;
	}
	fclose(f);
	*out = t;
	return 0;
}

int subid_load(const char *uid_file, const char *gid_file, struct coloc_err *err)
{
	struct subid_table *uids, *gids;
	int ret = subid_read(uid_file, &uids, err);

	if (ret)
		return ret;
	ret = subid_check_guard(uid_file, uids, err);
	if (!ret)
		ret = subid_read(gid_file, &gids, err);
	if (ret) {
		free(uids);
		return ret;
	}
	free(subid_uids);
	free(subid_gids);
	subid_uids = uids;
	subid_gids = gids;
	return 0;
}

/* The range of t holding id, else NULL. */
static const struct subid_range *subid_in(const struct subid_table *t, unsigned long long id)
{
	for (int i = 0; t && i < t->nr; i++)
		if (id >= t->r[i].start && id - t->r[i].start < t->r[i].count)
			return &t->r[i];
	return NULL;
}

bool subid_held(uid_t uid, gid_t gid)
{
	return subid_in(subid_uids, uid) || subid_in(subid_gids, gid);
}

bool subid_uid_range(uid_t uid, uid_t *first)
{
	const struct subid_range *r = subid_in(subid_uids, uid);

	if (r)
		*first = (uid_t)r->start;
	return r != NULL;
}

bool subid_owner(uid_t uid)
{
	return uid && subid_in(subid_uids, uid);
}

int subid_nr_ranges(void)
{
	return (subid_uids ? subid_uids->nr : 0) + (subid_gids ? subid_gids->nr : 0);
}
