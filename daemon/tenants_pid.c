// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A pid a tenant-add names, checked (tenants.c): a process, not a thread,
 * alive, owned by the caller unless root, attributed to no other tenant,
 * and held by a pidfd from then on (docs/security-owners.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <sys/syscall.h>
#include "tenants_internal.h"

/* The first line of /proc/PID/status that fmt reads all n values of; 0 or -ESRCH. */
__attribute__((format(scanf, 3, 4))) static int tenants_read_status(__u32 pid, int n,
								    const char *fmt, ...)
{
	char path[32], line[128];
	int err = -ESRCH;
	va_list ap;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	while (err && fgets(line, sizeof(line), f)) {
		va_start(ap, fmt);
		err = vsscanf(line, fmt, ap) == n ? 0 : -ESRCH;
		va_end(ap);
	}
	fclose(f);
	return err;
}

/* A process's Tgid from /proc: its own pid for a process, another for a thread. */
static int tenants_tgid_of(__u32 pid, __u32 *tgid)
{
	return tenants_read_status(pid, 1, "Tgid: %u", tgid);
}

static bool tenants_exited(int pidfd)
{
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };

	return poll(&pfd, 1, 0) != 0;
}

/* A process's real and effective uid from /proc/PID/status. */
static int tenants_uids_of(__u32 pid, uid_t *ruid, uid_t *euid)
{
	unsigned int r, e;
	int err = tenants_read_status(pid, 2, "Uid: %u %u", &r, &e);

	if (!err) {
		*ruid = r;
		*euid = e;
	}
	return err;
}

/*
 * Whether the process pidfd holds runs as uid, real and effective. /proc
 * is read by number, so the pidfd is asked after: alive then, the number
 * was still its own while /proc was read (a pid is not reused before its
 * process is reaped, and the pidfd turns readable when it exits).
 */
static int tenants_check_proc_owner(int pidfd, __s64 pid, uid_t uid, struct coloc_err *err)
{
	uid_t ruid, euid;

	if (tenants_uids_of((__u32)pid, &ruid, &euid) || tenants_exited(pidfd))
		return coloc_err_set(err, -ESRCH, "no process with pid %lld", (long long)pid);
	if (ruid != uid || euid != uid)
		return coloc_err_set(err, -EPERM,
				     "pid %lld belongs to another user: a tenant takes only its "
				     "caller's own processes",
				     (long long)pid);
	return 0;
}

/*
 * Checks one pid and holds it with a pidfd. From then on the pidfd names
 * that process, whatever happens to the number: if it exited already (or
 * exits later) the pidfd is readable.
 */
int tenants_check_pid(struct tenant_table *t, const char *name, uid_t uid, size_t i,
		      __s64 pid, int *pidfd, struct coloc_err *err)
{
	struct tenant *owner;
	__u32 tgid;
	int ret;

	*pidfd = -1;
	if (pid <= 0 || pid > 0x3fffffff)
		return coloc_err_set(err, -EINVAL, "pids[%zu] is not a process id", i);
	if (pid == 1 || pid == getpid())
		return coloc_err_set(err, -EPERM, "pid %lld is %s: it belongs to no tenant",
				     (long long)pid, pid == 1 ? "init" : "colocd itself");
	*pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (*pidfd < 0 && (errno == EMFILE || errno == ENFILE))
		return coloc_err_set(err, -errno, "colocd holds too many processes: %s",
				     strerror(errno));
	/* pidfd_open takes a process (a thread-group leader) only: /proc says which not */
	if (*pidfd < 0 && !tenants_tgid_of((__u32)pid, &tgid) && tgid != (__u32)pid)
		return coloc_err_set(err, -EINVAL,
				     "pid %lld is a thread of process %u: give the process id (all "
				     "its threads belong to the tenant)",
				     (long long)pid, tgid);
	if (*pidfd < 0 || tenants_exited(*pidfd))
		return coloc_err_set(err, -ESRCH, "no process with pid %lld", (long long)pid);
	if (uid) {
		ret = tenants_check_proc_owner(*pidfd, pid, uid, err);
		if (ret)
			return ret;
	}
	owner = tenants_owner_of_pid(t, (__u32)pid);
	if (owner && strcmp(owner->name, name))
		return coloc_err_set(err, -EBUSY, "pid %lld already belongs to tenant '%s'",
				     (long long)pid, owner->name);
	return 0;
}
