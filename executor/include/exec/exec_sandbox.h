/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The executor's sandbox, entered once, before it reads a byte of the model
 * and before any thread exists (Landlock binds the calling thread and its
 * future threads only): the tenant's own uid and gid with no supplementary
 * group, no capability (bounding and ambient sets emptied), no_new_privs,
 * not dumpable; Landlock with no filesystem access but the files named,
 * no TCP, signals and abstract unix sockets scoped to itself; and a seccomp
 * allow-list of what loading and serving a model need, every other system
 * call failing with EPERM. docs/security-sandbox.md says why each layer is
 * there and what this machine enforces.
 */
#ifndef COLOC_EXEC_SANDBOX_H
#define COLOC_EXEC_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define EXEC_SANDBOX_MAX_READABLE 4
#define EXEC_SANDBOX_MAX_RECV_FDS 8

struct exec_sandbox {
	/* the tenant's ids (colocd's --uid-range); 0: user 'coloc', else 'nobody' */
	uid_t uid;
	gid_t gid;
	/* files or folders it may still read (the model while it comes by path); NULL-ended */
	const char *readable[EXEC_SANDBOX_MAX_READABLE + 1];
	/* the sockets it may receive descriptors on (its lanes' input sockets), [nr_recv_fds] */
	int recv_fds[EXEC_SANDBOX_MAX_RECV_FDS];
	int nr_recv_fds;
	/* colocd, whose death must kill it; checked once the credentials changed */
	pid_t parent;
	/* a layer the kernel lacks is listed in missing instead of failing */
	bool allow_weak;
};

/*
 * 0, with missing holding what the kernel could not enforce ("" if all of
 * it; only with allow_weak), or a negative errno with why filled.
 */
int exec_sandbox_enter(const struct exec_sandbox *sb, char *missing, size_t missing_len, char *why,
		       size_t why_len);

#endif /* COLOC_EXEC_SANDBOX_H */
