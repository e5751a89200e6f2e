/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A file opened in mount namespaces colocd does not share, for the submit
 * tests: a child that unshares its mount namespace (as a member: its user
 * namespace too, mapped to root there, as `unshare -Urm` or a rootless
 * container does), makes its mounts, opens the file and hands the
 * descriptor over a socket, as a member's client hands it to colocd. The
 * child stays until the test ends it, and with it what serves its mounts.
 */
#ifndef COLOC_TESTS_SUBMIT_NS_H
#define COLOC_TESTS_SUBMIT_NS_H

#include <stddef.h>
#include <sys/types.h>

struct submit_ns_child {
	pid_t pid;
	int sock;
};

/*
 * Makes its mounts in the child's namespaces: NULL, or the step that failed
 * (errno says why).
 */
typedef const char *(*submit_ns_prepare_fn)(void *arg);

/*
 * The child as uid (a member with the coloc group; 0: root, a mount
 * namespace only) runs prepare(arg), then opens path read-only: 0 with *fd,
 * or -1 with the failed step and its error in why.
 */
int submit_ns_open(uid_t uid, submit_ns_prepare_fn prepare, void *arg, const char *path,
		   struct submit_ns_child *c, int *fd, char *why, size_t len);
/*
 * Closes *fd (-1 after) while the child still serves its mounts (a FUSE
 * file's close asks the server), then ends the child, its namespaces and
 * mounts with it, and reaps it.
 */
void submit_ns_end(struct submit_ns_child *c, int *fd);

#endif /* COLOC_TESTS_SUBMIT_NS_H */
