/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Subordinate ids (subid.c): the ranges of /etc/subuid and /etc/subgid,
 * through which newuidmap lets one user hold many uids (and gids) in a
 * user namespace, each keeping the coloc group it joined with. A peer
 * whose uid lies in a subuid range, or whose gid in a subgid range, is one
 * of those and not a member of its own: colocd refuses it, so that one
 * member is one uid to every per-uid bound (s21 review, HIGH 1). Read at
 * start and on SIGHUP, never per connection; root-owned files only.
 * docs/security-owners.md, "Subordinate ids".
 */
#ifndef COLOC_DAEMON_SUBID_H
#define COLOC_DAEMON_SUBID_H

#include <stdbool.h>
#include <sys/types.h>
#include "error.h"

#define SUBID_DEFAULT_UID_FILE "/etc/subuid"
#define SUBID_DEFAULT_GID_FILE "/etc/subgid"
/* ranges kept per file; a file with more is refused (the table kept as it was) */
#define SUBID_MAX_RANGES 4096

/*
 * Reads both files (a missing one holds no range) and replaces the table:
 * 0, or -errno with err saying why (a file not root's, writable by a group
 * or others, too big or malformed), the table then left as it was.
 */
int subid_load(const char *uid_file, const char *gid_file, struct coloc_err *err);
/*
 * The executors' uids (colocd's --uid-range, or the default range its
 * slot is cut from), kept clear of subordinate uids: from here on a
 * subid_load whose subuid ranges overlap first..last is refused (-EEXIST,
 * the table left as it was), since a member's user namespace running as
 * such a uid could signal those executors (s25 review LOW 1).
 */
void subid_guard(uid_t first, uid_t last);
/* Whether uid lies in a subuid range or gid in a subgid range. */
bool subid_held(uid_t uid, gid_t gid);
/* Whether uid lies in a subuid range; if so *first is that range's first uid. */
bool subid_uid_range(uid_t uid, uid_t *first);
/* Whether uid, not root, lies in a subuid range: a tenant it owns is not kept. */
bool subid_owner(uid_t uid);
/* The ranges read, for the start-up log. */
int subid_nr_ranges(void);

#endif /* COLOC_DAEMON_SUBID_H */
