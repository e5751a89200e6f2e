/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Which uids of colocd's executor range are someone's already, known
 * before a tenant asks: a bitmap of the uids NSS knows as a user or a
 * group (getpwuid_r, getgrgid_r: /etc/passwd, sssd, LDAP, ...) or that run
 * a process (/proc/PID/status). Built once at start, before the loop runs;
 * built again on a helper thread when asked (colocd's SIGHUP, or the range
 * used up), the new bitmap taken in by the next uid_known_has(). A tenant's
 * submit reads the bitmap only: an NSS lookup that waits on a network
 * never stalls colocd's loop (docs/security-sandbox.md, "Executor uids").
 */
#ifndef COLOC_DAEMON_UID_KNOWN_H
#define COLOC_DAEMON_UID_KNOWN_H

#include <stdbool.h>
#include <sys/types.h>
#include "error.h"

#define UID_KNOWN_MAX_SPAN 65536u /* uids a range may span: NSS is asked about each */

struct uid_known;

/* Looks up every uid of first..last now. 0, -EINVAL (span), -ENOMEM. */
int uid_known_new(uid_t first, uid_t last, struct uid_known **out, struct coloc_err *err);
/* Waits for a rebuild under way, then frees. */
void uid_known_free(struct uid_known *k);
/* Whether uid (in the range) was someone's at the last build; no lookup. */
bool uid_known_has(struct uid_known *k, uid_t uid);
/* Starts a rebuild on a helper thread: 0, -EALREADY if one runs, -errno. */
int uid_known_refresh(struct uid_known *k);
/* How many uids of the range the current bitmap marks. */
unsigned int uid_known_count(struct uid_known *k);

#endif /* COLOC_DAEMON_UID_KNOWN_H */
