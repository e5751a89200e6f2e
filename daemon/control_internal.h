/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the control protocol's files share (control.c: the dispatch and
 * infer; control_tenants.c: attributed processes, signals, ping;
 * control_serving.c: list, status, restart, remove; control_submit.c:
 * submit, whose answer waits for the admission): answers as JSON lines,
 * a serving tenant as JSON, the commands control_cmds[] dispatches to.
 * Nothing outside daemon/control*.c includes it.
 */
#ifndef COLOC_DAEMON_CONTROL_INTERNAL_H
#define COLOC_DAEMON_CONTROL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <json-c/json.h>
#include "control.h"

/* resp as one line ending in '\n' (malloc'd; NULL out of memory); puts resp. */
char *control_finish(struct json_object *resp);
/* {"ok":false,"error":...} as a line, the message made valid UTF-8. */
char *control_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* {"ok":true}, to add members to. */
struct json_object *control_ok(void);
/* A string member of req, or NULL. */
const char *control_str(struct json_object *req, const char *key);
/* A non-negative integer member; false when absent or not one. */
bool control_uint(struct json_object *req, const char *key, uint64_t *out);
/* r as a JSON string made valid UTF-8 (at most 500 bytes), NULL for "". */
struct json_object *control_reason(const char *r);
/* o[key] = v as a JSON number. */
void control_add_double(struct json_object *o, const char *key, double v);
/* A serving tenant as list and status show it to uid (another's without its details). */
struct json_object *control_serving_tenant_json(struct colocd *d,
						const struct serving_tenant_info *in, uid_t uid);
/* Which tenants a command's name means (control_names.c), and whether it makes one. */
enum control_names {
	CONTROL_NAMES_NONE,
	CONTROL_NAMES_SERVING, /* a submitted tenant that is there */
	CONTROL_NAMES_SERVING_NEW, /* submit: the caller's own, made */
	CONTROL_NAMES_ATTRIBUTED, /* an attributed tenant that is there */
	CONTROL_NAMES_ATTRIBUTED_OR_NEW, /* tenant-add: one there, or the caller's own, made */
};
/*
 * req's string member (a tenant's name as uid wrote it) replaced by the key
 * of the tenant it means (tenants_key.h); 0, or -errno with err saying why.
 */
int control_resolve_name(struct colocd *d, struct json_object *req, const char *member,
			 enum control_names use, uid_t uid, struct coloc_err *err);
/*
 * The commands answered at once (control_tenants.c, control_serving.c):
 * req parsed, uid the caller's, now_ns the loop's clock.
 */
char *control_cmd_ping(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns);
char *control_cmd_signals(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns);
char *control_cmd_tenants(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns);
char *control_tenant_add(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns);
char *control_cmd_tenant_remove(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns);
char *control_cmd_list(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns);
char *control_cmd_status(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns);
char *control_cmd_restart(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns);
/* The remove request: answered once the tenant has drained (colocd_await_removal). */
char *control_cmd_remove(struct colocd *d, struct json_object *req, uid_t uid,
			 struct server_req *sreq);
/* The submit request: its files as descriptors on sreq; answered once admitted. */
char *control_cmd_submit(struct colocd *d, struct json_object *req, uid_t uid,
			 struct server_req *sreq);
/* The infer request: its input after the line or in a memfd; answered when it completes. */
char *control_cmd_infer(struct colocd *d, struct json_object *req, uid_t uid,
			struct server_req *sreq);

#endif /* COLOC_DAEMON_CONTROL_INTERNAL_H */
