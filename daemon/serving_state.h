/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * colocd's --state file (serving_state.c): the admitted tenants as
 * submitted, kept in struct colocd's specs and written to the file whole
 * (temp, fsync, rename) on every change, with colocd's own copies of their
 * files beside it; read back at start. All of --state's I/O is here; in
 * colocd its writes run on the writer's thread (state_writer.h), not the
 * loop; the read at start is the loop's, before it serves anyone.
 */
#ifndef COLOC_DAEMON_SERVING_STATE_H
#define COLOC_DAEMON_SERVING_STATE_H

#include <limits.h>
#include <sys/types.h>
#include <linux/types.h>
#include "coloc/protocol.h"
#include "error.h"
#include "serving.h"

struct colocd;

#define COLOCD_LOCATION_LEN 256 /* an ONNX external data location, with its NUL */

/*
 * An admitted tenant as submitted: what --state keeps. The paths are the
 * client's names for its files, for display only: colocd never opens
 * them (it keeps its own copies of the bytes, colocd_files).
 */
struct colocd_spec {
	char name[SERVING_NAME_LEN];
	char model[PATH_MAX];
	char weights[PATH_MAX]; /* "" when none */
	char external[COLOC_MAX_REQUEST_FDS][COLOCD_LOCATION_LEN]; /* ONNX external data */
	int nr_external;
	__u64 qos_ns;
	int executors; /* serving_tenant_spec.executors: 0 or 1 is one */
	uid_t owner; /* who submitted it; root for a state file written before owners */
};

/* The bytes of a spec's files: sealed memfds (daemon/submit_files.h); -1 for none. */
struct colocd_files {
	int model_fd;
	int weights_fd;
	int external_fd[COLOC_MAX_REQUEST_FDS]; /* spec.nr_external of them */
};

/*
 * The admitted tenants as submitted: add on admit (with --state, a copy
 * of files' bytes goes into the state's directory, STATE.files/, root's
 * own), drop on remove; rewrites --state. With d->state_writer the I/O is
 * queued to it (errors then go to stderr); without, done here. A drop
 * never fails for want of memory: what it needs was reserved when the
 * tenant was recorded (colocd_spec_restore, which add calls).
 */
int colocd_spec_add(struct colocd *d, const struct colocd_spec *spec,
		    const struct colocd_files *files, struct coloc_err *err);
int colocd_spec_drop(struct colocd *d, const char *name, struct coloc_err *err);
/* Records spec, brought back from --state, without rewriting the file. */
int colocd_spec_restore(struct colocd *d, const struct colocd_spec *spec, struct coloc_err *err);
/*
 * Writes the specs to cfg.state_path atomically (temp + rename); 0 without
 * one. On the caller's thread: colocd itself hands the specs to its writer
 * (state_writer.h) from colocd_spec_add/_drop instead.
 */
int colocd_state_write(const struct colocd *d, struct coloc_err *err);
/*
 * Writes specs as the state file path: a temporary file made new beside it
 * (O_EXCL, relative to the directory opened once), fsync, rename; 0 or
 * -errno with err.
 */
int colocd_state_write_specs(const char *path, const struct colocd_spec *specs, int nr,
			     struct coloc_err *err);
/*
 * The file's text for specs, written into fd (state_text.c); allocates
 * nothing, so it cannot fail for want of memory. 0 or -errno of a write.
 */
int colocd_state_render(int fd, const struct colocd_spec *specs, int nr);
/* A copy of each of the tenant's files into path.files/ (temp, fsync, rename each). */
int colocd_state_keep_files(const char *path, const char *name, const struct colocd_files *files,
			    int nr_external, struct coloc_err *err);
/* Removes the tenant's copies from path.files/. */
void colocd_state_drop_files(const char *path, const char *name, int nr_external);
/*
 * Reads the specs in path (none when it does not exist) into specs (at most
 * COLOC_MAX_TENANTS); returns how many, or -errno with err filled: -EPERM
 * when the file is not a regular file of root's with no access for others
 * (a link is not followed).
 */
int colocd_state_read(const char *path, struct colocd_spec *specs, struct coloc_err *err);
/*
 * The nr specs read from path, a member's tenant kept under its bare name
 * by a colocd from before names were per owner given its key
 * (docs/design/tenant-names.md): its copies in path.files/ renamed, and
 * path rewritten when any was. 0, or -errno with err (a spec that could not
 * be rekeyed is left under its bare name, root's to address; the others go on).
 */
int colocd_state_rekey(const char *path, struct colocd_spec *specs, int nr, struct coloc_err *err);
/*
 * The state file's directory by the socket directory's rule: root's, and
 * writable by group or others only where the group is root's or it is
 * sticky. 0, or -EPERM with err saying why; colocd does not start then.
 */
int colocd_state_check_dir(const char *path, struct coloc_err *err);
/*
 * The files of spec as --state kept them (colocd's own copies, never the
 * client's paths), sealed into files; 0 or -errno with err. Close them
 * with colocd_files_close.
 */
int colocd_state_files(const char *path, const struct colocd_spec *spec,
		       struct colocd_files *files, struct coloc_err *err);
void colocd_files_close(struct colocd_files *files, int nr_external);
/*
 * Duplicates of files (close-on-exec) into out, -1 where files has none:
 * 0, or -errno with none left open. The one copy of colocd's descriptor
 * duplication (the admission's and the --state writer's).
 */
int colocd_files_dup(const struct colocd_files *files, int nr_external, struct colocd_files *out);

#endif /* COLOC_DAEMON_SERVING_STATE_H */
