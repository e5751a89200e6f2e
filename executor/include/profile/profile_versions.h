/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A model's kernel versions by name, layer by layer, and the one check
 * that two such lists are the same. A profile's costs are indexed by each
 * layer's version position; they are an executor's only where it built
 * the same names in the same order (which versions a layer has depends on
 * the CPU's ISA and on oneDNN: docs/design/profile-freshness.md). The
 * compact form is the one an executor reports them in (struct
 * coloc_shm_versions, include/coloc/shm.h); colocd keeps its profile's in
 * it too.
 */
#ifndef COLOC_PROFILE_VERSIONS_H
#define COLOC_PROFILE_VERSIONS_H

#include <stdbool.h>
#include "coloc/shm.h"
#include "profile.h"

_Static_assert(PROFILE_MAX_VERSIONS == COLOC_SHM_MAX_LAYER_VERSIONS,
	       "a profile's layer holds the versions an executor reports");
_Static_assert(PROFILE_VERSION_NAME_LEN == COLOC_SHM_VERSION_NAME_LEN,
	       "a profile's version names are an executor's");

/*
 * The first version index at which layer lists a (nr_a names) and b
 * (nr_b) differ, a list's end differing from any name; -1 when they are
 * the same names in the same order.
 */
int profile_versions_differ(int nr_a, const char (*a)[PROFILE_VERSION_NAME_LEN], int nr_b,
			    const char (*b)[PROFILE_VERSION_NAME_LEN]);

/*
 * Layer layer's nr versions (1 .. PROFILE_MAX_VERSIONS) named names into
 * w, a name already in w's table reused. 0, or -E2BIG when w's table of
 * names is full, -EINVAL for a layer or count out of range.
 */
int profile_versions_put(struct coloc_shm_versions *w, int layer, int nr,
			 const char (*names)[PROFILE_VERSION_NAME_LEN]);

/* p's versions into w (zeroed first): 0 or profile_versions_put's error. */
int profile_versions_of(const struct profile *p, struct coloc_shm_versions *w);

/* Where two models' versions differ: the layer, the version, each side's name there ("" past its end). */
struct profile_versions_diff {
	int layer, version;
	char want[PROFILE_VERSION_NAME_LEN], got[PROFILE_VERSION_NAME_LEN];
};

/*
 * Whether got lists want's versions in each of the first nr_layers
 * layers; false with the first difference in d. Bounded whatever got
 * holds: an index past its table ends its layer's list, a name is read
 * to its NUL or its length.
 */
bool profile_versions_same(const struct coloc_shm_versions *want,
			   const struct coloc_shm_versions *got, int nr_layers,
			   struct profile_versions_diff *d);

#endif /* COLOC_PROFILE_VERSIONS_H */
