/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The gateway's control connection to colocd (protocol.h's JSON requests:
 * submit, status, remove, signals), one at a time under a lock, made again
 * after a transport failure. Queries go through forward.h instead.
 */
#ifndef COLOC_GATEWAY_CONTROL_H
#define COLOC_GATEWAY_CONTROL_H

#include <json-c/json.h>
#include "error.h"
#include "repository.h"

struct gw_ctl;

int gw_ctl_open(const char *socket_path, struct gw_ctl **out, struct coloc_err *err);
void gw_ctl_close(struct gw_ctl *ctl);

/*
 * One request (not consumed) -> its "ok":true response (put it), or NULL
 * with colocd's "error" or the transport failure in err.
 */
struct json_object *gw_ctl_call(struct gw_ctl *ctl, struct json_object *req, struct coloc_err *err);

/* Submits the model as colocd tenant cfg->name (protocol.h's "submit"). */
int gw_ctl_submit(struct gw_ctl *ctl, int repo_fd, bool links, const struct gw_model_config *cfg,
		  struct coloc_err *err);

/* The serving tenant's status object (put it), or NULL with err (-ENOENT: no such tenant). */
struct json_object *gw_ctl_tenant(struct gw_ctl *ctl, const char *name, struct coloc_err *err);

/* Removes the tenant, after its accepted queries finish. */
int gw_ctl_remove(struct gw_ctl *ctl, const char *name, struct coloc_err *err);

#endif /* COLOC_GATEWAY_CONTROL_H */
