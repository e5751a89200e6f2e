/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * After SIGHUP read new subordinate id ranges (subid.h): every tenant,
 * serving or attributed, whose owner uid now lies in a subuid range is
 * removed as its owner's remove would, one line each in colocd's log
 * (docs/security-owners.md, "Subordinate ids"). How many went.
 */
#ifndef COLOC_DAEMON_SUBID_TENANTS_H
#define COLOC_DAEMON_SUBID_TENANTS_H

struct colocd;

int subid_tenants_remove(struct colocd *d);

#endif /* COLOC_DAEMON_SUBID_TENANTS_H */
