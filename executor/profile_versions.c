// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Kernel versions by name (profile_versions.h): the comparison a profile's
 * setup (profile_same_setup), coloc-profile's cache and colocd's check of
 * an executor at ready all make, and the compact form an executor reports
 * them in (a table of names, each layer's versions as indexes into it).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "profile_versions.h"

int profile_versions_differ(int nr_a, const char (*a)[PROFILE_VERSION_NAME_LEN], int nr_b,
			    const char (*b)[PROFILE_VERSION_NAME_LEN])
{
	int n = nr_a > nr_b ? nr_a : nr_b;

	for (int v = 0; v < n; v++)
		if (v >= nr_a || v >= nr_b || strncmp(a[v], b[v], PROFILE_VERSION_NAME_LEN))
			return v;
	return -1;
}

/* The index + 1 of name in w's table, added if new; 0 when the table is full. */
static int name_index(struct coloc_shm_versions *w, const char *name)
{
	for (__u32 i = 0; i < w->nr_names; i++)
		if (!strncmp(w->names[i], name, COLOC_SHM_VERSION_NAME_LEN))
			return (int)i + 1;
	if (w->nr_names >= COLOC_SHM_MAX_VERSION_NAMES)
		return 0;
	snprintf(w->names[w->nr_names], COLOC_SHM_VERSION_NAME_LEN, "%s", name);
	return (int)++w->nr_names;
}

int profile_versions_put(struct coloc_shm_versions *w, int layer, int nr,
			 const char (*names)[PROFILE_VERSION_NAME_LEN])
{
	if (layer < 0 || layer >= COLOC_SHM_MAX_LAYERS || nr < 1 || nr > PROFILE_MAX_VERSIONS)
		return -EINVAL;
	for (int v = 0; v < nr; v++) {
		int at = name_index(w, names[v]);

		if (!at)
			return -E2BIG;
		w->layer[layer][v] = (__u8)at;
	}
	return 0;
}

int profile_versions_of(const struct profile *p, struct coloc_shm_versions *w)
{
	memset(w, 0, sizeof(*w));
	for (int l = 0; l < p->nr_layers; l++) {
		int ret = profile_versions_put(w, l, p->layers[l].nr_versions,
					       p->layers[l].version_names);

		if (ret)
			return ret;
	}
	return 0;
}

/* Layer layer's names in w into names: their count. */
static int versions_get(const struct coloc_shm_versions *w, int layer,
			char (*names)[PROFILE_VERSION_NAME_LEN])
{
	__u32 nr_names = w->nr_names < COLOC_SHM_MAX_VERSION_NAMES ? w->nr_names :
								     COLOC_SHM_MAX_VERSION_NAMES;
	int nr = 0;

	for (; nr < PROFILE_MAX_VERSIONS; nr++) {
		__u8 at = w->layer[layer][nr];

		if (!at || at > nr_names)
			break;
		snprintf(names[nr], PROFILE_VERSION_NAME_LEN, "%.*s", PROFILE_VERSION_NAME_LEN - 1,
			 w->names[at - 1]);
	}
	return nr;
}

bool profile_versions_same(const struct coloc_shm_versions *want,
			   const struct coloc_shm_versions *got, int nr_layers,
			   struct profile_versions_diff *d)
{
	char a[PROFILE_MAX_VERSIONS][PROFILE_VERSION_NAME_LEN];
	char b[PROFILE_MAX_VERSIONS][PROFILE_VERSION_NAME_LEN];

	for (int l = 0; l < nr_layers && l < COLOC_SHM_MAX_LAYERS; l++) {
		int nr_a = versions_get(want, l, a), nr_b = versions_get(got, l, b);
		int v = profile_versions_differ(nr_a, a, nr_b, b);

		if (v < 0)
			continue;
		*d = (struct profile_versions_diff){ .layer = l, .version = v };
		if (v < nr_a)
			memcpy(d->want, a[v], sizeof(d->want));
		if (v < nr_b)
			memcpy(d->got, b[v], sizeof(d->got));
		return false;
	}
	return true;
}
