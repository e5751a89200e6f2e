/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Helpers of the owners tests (owners_test.c, owners_wire_test.c): owners_util.c. */
#ifndef COLOC_TESTS_OWNERS_UTIL_H
#define COLOC_TESTS_OWNERS_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <json-c/json.h>

/* uids no account on a test machine has: a member and a second member */
#define MEMBER 64990
#define MEMBER2 64991
#define READY_MS 180000

/*
 * A child that runs as ruid/euid (setresuid: the two may differ) and
 * sleeps until killed; returns once it runs as them.
 */
pid_t owners_sleeper_as(uid_t ruid, uid_t euid);
/* Kills and reaps pid when it is above 0. */
void owners_reap(pid_t pid);
/* Whether o's "ok" is true. */
/*
 * As uid (0: root) with the coloc group, in a child: one request line
 * (fmt, ap) to colocd at sock, then pad zero bytes (none when 0); the
 * answer line into out (outlen), parsed (put it); NULL on any failure.
 */
struct json_object *owners_vrequest_as(const char *sock, uid_t uid, size_t pad, char *out,
				       size_t outlen, const char *fmt, va_list ap);
bool owners_is_ok(struct json_object *o);
/* o's "error", or "". */
const char *owners_error_of(struct json_object *o);
/* Whether o has a member key. */
bool owners_has(struct json_object *o, const char *key);
/* The entry named name in o's "tenants" array, or NULL. */
struct json_object *owners_entry(struct json_object *o, const char *name);
/* Where cgroup v2 is mounted below TENANTS_CGROUP_ROOT (itself, or unified/ on hybrid systems). */
int owners_cgroup2_dir(char *buf, size_t len);

#endif /* COLOC_TESTS_OWNERS_UTIL_H */
