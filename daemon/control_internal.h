/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the control protocol's files share (control.c: the requests and
 * their dispatch; control_submit.c: submit, whose answer waits for the
 * admission; control_infer.c: infer): answers as JSON lines, and a serving tenant as JSON. Nothing
 * outside daemon/control*.c includes it.
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
/* A serving tenant as list and status show it to uid (another's without its details). */
struct json_object *control_serving_tenant_json(struct colocd *d,
						const struct serving_tenant_info *in, uid_t uid);
/* The submit request: its files as descriptors on sreq; answered once admitted. */
char *control_cmd_submit(struct colocd *d, struct json_object *req, uid_t uid,
			 struct server_req *sreq);
/* The infer request: its input after the line or in a memfd; answered when it completes. */
char *control_cmd_infer(struct colocd *d, struct json_object *req, uid_t uid,
			struct server_req *sreq);

#endif /* COLOC_DAEMON_CONTROL_INTERNAL_H */
