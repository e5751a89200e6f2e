// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The executor's sandbox (exec_sandbox.h), in the order it must be built:
 * credentials while still root (bounding set, groups, gid, uid), then what
 * needs no privilege (capabilities cleared, no_new_privs, not dumpable,
 * the parent-death signal again), then Landlock (raw system calls: the
 * libc headers may predate its network and scope fields), then seccomp,
 * last, since it forbids the calls that built the rest. The system-call
 * list came from strace -f of a real executor loading and serving
 * models/mobilenet_v2.model through colocd (docs/security-sandbox.md).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/kcmp.h>
#include <pwd.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "exec_sandbox.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

/* Landlock's ABI (linux/landlock.h), spelled here for libc headers that predate v4-v6. */
#define LL_CREATE_RULESET_VERSION (1u << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_FS_READ_FILE (1ull << 2)
#define LL_FS_READ_DIR (1ull << 3)
#define LL_NET_BIND_TCP (1ull << 0)
#define LL_NET_CONNECT_TCP (1ull << 1)
#define LL_SCOPE_ABSTRACT_UNIX (1ull << 0)
#define LL_SCOPE_SIGNAL (1ull << 1)

struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net; /* ABI 4 */
	uint64_t scoped; /* ABI 6 */
};

struct ll_path_beneath {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

/* Every filesystem right each ABI knows: ABI 1 has 13, 2 adds REFER, 3 TRUNCATE, 5 IOCTL_DEV. */
static uint64_t ll_fs_rights(int abi)
{
	int nr = abi >= 5 ? 16 : abi >= 3 ? 15 : abi >= 2 ? 14 : 13;

	return (1ull << nr) - 1;
}

static void note_missing(char *missing, size_t len, const char *what)
{
	size_t n = strlen(missing);

	snprintf(missing + n, len - n, "%s%s", n ? "; " : "", what);
}

static int nr_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static int drop_bounding_set(char *why, size_t len)
{
	int last = CAP_LAST_CAP;
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "r");

	if (f) {
		if (fscanf(f, "%d", &last) != 1)
			last = CAP_LAST_CAP;
		fclose(f);
	}
	for (int cap = 0; cap <= last; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)) {
			snprintf(why, len, "dropping capability %d from the bounding set: %s", cap,
				 strerror(errno));
			return -errno;
		}
	}
	return 0;
}

/* Root only: the tenant's ids, or the legacy shared user where colocd named none. */
static int switch_user(const struct exec_sandbox *sb, char *why, size_t len)
{
	uid_t uid = sb->uid, ru, eu, su;
	gid_t gid = sb->gid, rg, eg, sg;

	if (!uid) {
		const char *user = "coloc";
		struct passwd *pw = getpwnam(user);

		if (!pw)
			pw = getpwnam(user = "nobody");
		if (!pw || !pw->pw_uid) {
			snprintf(why, len,
				 "no --uid given, and neither a 'coloc' nor a 'nobody' "
				 "user to run as");
			return -ENOENT;
		}
		uid = pw->pw_uid;
		gid = pw->pw_gid;
	}
	if (!gid) {
		snprintf(why, len, "gid 0 is root's group");
		return -EPERM;
	}
	if (setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid)) {
		snprintf(why, len, "switching to uid %u gid %u: %s", uid, gid, strerror(errno));
		return -errno;
	}
	if (getresuid(&ru, &eu, &su) || getresgid(&rg, &eg, &sg) || ru != uid || eu != uid ||
	    su != uid || rg != gid || eg != gid || sg != gid || getgroups(0, NULL) != 0 ||
	    setuid(0) == 0) {
		snprintf(why, len, "the switch to uid %u gid %u did not stick", uid, gid);
		return -EPERM;
	}
	return 0;
}

static int clear_capabilities(char *why, size_t len)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };

	if (syscall(SYS_capset, &hdr, data) ||
	    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) ||
	    syscall(SYS_capget, &hdr, data) ||
	    data[0].effective | data[0].permitted | data[0].inheritable | data[1].effective |
		    data[1].permitted | data[1].inheritable) {
		snprintf(why, len, "clearing capabilities failed: %s", strerror(errno));
		return -EPERM;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
		snprintf(why, len, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
		return -EPERM;
	}
	/* not dumpable: no ptrace, no /proc/PID/mem, for anyone but root */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) || prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0) {
		snprintf(why, len, "PR_SET_DUMPABLE: %s", strerror(errno));
		return -EPERM;
	}
	return 0;
}

static int ll_allow_read(int ruleset, const char *path, char *why, size_t len)
{
	struct ll_path_beneath pb = { .allowed_access = LL_FS_READ_FILE };
	struct stat st;
	int ret = 0;

	pb.parent_fd = open(path, O_PATH | O_CLOEXEC);
	if (pb.parent_fd < 0 || fstat(pb.parent_fd, &st)) {
		snprintf(why, len, "%s: %s", path, strerror(errno));
		ret = -errno;
	} else {
		if (S_ISDIR(st.st_mode))
			pb.allowed_access |= LL_FS_READ_DIR;
		if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &pb, 0)) {
			snprintf(why, len, "landlock_add_rule(%s): %s", path, strerror(errno));
			ret = -errno;
		}
	}
	if (pb.parent_fd >= 0)
		close(pb.parent_fd);
	return ret;
}

/*
 * No filesystem access but reading the files named, no TCP bind or
 * connect, no signal to and no abstract unix socket of a process outside
 * this domain. 1 when the kernel has no Landlock (missing says so).
 */
static int enter_landlock(const struct exec_sandbox *sb, char *missing, size_t mlen, char *why,
			  size_t len)
{
	struct ll_ruleset_attr attr = { 0 };
	size_t attr_len = sizeof(attr.handled_access_fs);
	int abi, fd, ret = 0, threads = nr_threads();

	abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
	if (abi < 1) {
		note_missing(missing, mlen, "no Landlock (the kernel lacks it or it is off)");
		return 1;
	}
	if (threads != 1) {
		snprintf(why, len, "Landlock binds the calling thread only, and %d run already",
			 threads);
		return -EBUSY;
	}
	attr.handled_access_fs = ll_fs_rights(abi);
	if (abi >= 4) {
		attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
		attr_len = offsetof(struct ll_ruleset_attr, scoped);
	} else {
		note_missing(missing, mlen, "Landlock before ABI 4: TCP not restricted");
	}
	if (abi >= 6) {
		attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
		attr_len = sizeof(attr);
	} else {
		note_missing(missing, mlen, "Landlock before ABI 6: signals not scoped");
	}
	fd = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_len, 0);
	if (fd < 0) {
		snprintf(why, len, "landlock_create_ruleset: %s", strerror(errno));
		return -errno;
	}
	for (int i = 0; i < EXEC_SANDBOX_MAX_READABLE && sb->readable[i] && !ret; i++)
		ret = ll_allow_read(fd, sb->readable[i], why, len);
#if defined(__SANITIZE_ADDRESS__)
	/* LeakSanitizer reads /proc/self/task and /proc/self/maps at exit */
	if (!ret)
		ret = ll_allow_read(fd, "/proc/self", why, len);
#endif
	if (!ret && syscall(SYS_landlock_restrict_self, fd, 0)) {
		snprintf(why, len, "landlock_restrict_self: %s", strerror(errno));
		ret = -errno;
	}
	close(fd);
	return ret;
}

/* What loading and serving a model call, found with strace -f; all else fails with EPERM. */
static const int allowed_syscalls[] = {
	/* memory */
	SCMP_SYS(brk),
	SCMP_SYS(mmap),
	SCMP_SYS(munmap),
	SCMP_SYS(mprotect),
	SCMP_SYS(mremap),
	/* an imported ONNX model's weights, sealed in a memfd of its own */
	SCMP_SYS(memfd_create),
	SCMP_SYS(ftruncate),
	/* the model's descriptors, the doorbell, stderr; sysfs and the model under Landlock */
	SCMP_SYS(read),
	SCMP_SYS(pread64),
	SCMP_SYS(readv),
	SCMP_SYS(write),
	SCMP_SYS(writev),
	SCMP_SYS(openat),
	SCMP_SYS(close),
	SCMP_SYS(fstat),
	SCMP_SYS(newfstatat),
	SCMP_SYS(statx),
	SCMP_SYS(lseek),
	SCMP_SYS(fcntl),
	SCMP_SYS(getdents64),
	/* the doorbell and OpenMP's barriers */
	SCMP_SYS(futex),
	SCMP_SYS(sched_yield),
	SCMP_SYS(nanosleep),
	SCMP_SYS(clock_nanosleep),
	SCMP_SYS(clock_gettime),
	SCMP_SYS(clock_getres),
	SCMP_SYS(gettimeofday),
	/* pinning its own team threads */
	SCMP_SYS(sched_setaffinity),
	SCMP_SYS(sched_getaffinity),
	SCMP_SYS(getcpu),
	/* threads (clone only with CLONE_THREAD, below) */
	SCMP_SYS(set_robust_list),
	SCMP_SYS(rseq),
	SCMP_SYS(exit),
	SCMP_SYS(exit_group),
	SCMP_SYS(gettid),
	SCMP_SYS(getpid),
	SCMP_SYS(getppid),
	SCMP_SYS(getuid),
	SCMP_SYS(geteuid),
	SCMP_SYS(getgid),
	SCMP_SYS(getegid),
	SCMP_SYS(getrandom),
	/* signals to itself only (tgkill, below) */
	SCMP_SYS(rt_sigreturn),
	SCMP_SYS(rt_sigprocmask),
	SCMP_SYS(rt_sigaction),
	SCMP_SYS(sigaltstack),
	SCMP_SYS(restart_syscall),
	SCMP_SYS(sysinfo),
	SCMP_SYS(uname),
};

/*
 * madvise's advice the executor and its libraries give (glibc's free and
 * thread stacks: DONTNEED; huge_alloc: HUGEPAGE; shm_serve: POPULATE_WRITE)
 * and other hints; never one that frees or pushes out shared pages
 * (REMOVE, FREE, COLD, PAGEOUT): colocd's copies into the query slots would
 * fault them back in or wait for swap (docs/security-executor.md, "Slot pages").
 */
static const int allowed_advice[] = {
	MADV_NORMAL,   MADV_RANDOM,	   MADV_SEQUENTIAL,	MADV_WILLNEED,
	MADV_DONTNEED, MADV_HUGEPAGE,	   MADV_NOHUGEPAGE,	MADV_DONTDUMP,
	MADV_DODUMP,   MADV_POPULATE_READ, MADV_POPULATE_WRITE,
};

static int enter_seccomp(const struct exec_sandbox *sb, char *why, size_t len)
{
#if defined(__SANITIZE_ADDRESS__)
	/* LeakSanitizer stops the world with ptrace and reads /proc: log, do not deny */
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_LOG);
#else
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
#endif
	int ret;

	if (!ctx) {
		snprintf(why, len, "seccomp_init failed");
		return -ENOMEM;
	}
	ret = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	for (size_t i = 0; !ret && i < sizeof(allowed_syscalls) / sizeof(allowed_syscalls[0]); i++)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed_syscalls[i], 0);
	for (size_t i = 0; !ret && i < sizeof(allowed_advice) / sizeof(allowed_advice[0]); i++)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(madvise), 1,
				       SCMP_A2(SCMP_CMP_EQ, (scmp_datum_t)allowed_advice[i], 0));
	/* threads, never processes: a clone3's flags are out of a filter's reach, so ENOSYS
	 * makes glibc fall back to clone */
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
				       SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	/* abort() and glibc's thread signals: this process only */
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
				       SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid(), 0));
	/*
	 * getrlimit, and setrlimit of its own CPU time only: the executor lifts
	 * the soft limit its model import ran under (up to the hard one, which
	 * it cannot raise); no other limit is ever raised.
	 */
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 1,
				       SCMP_A2(SCMP_CMP_EQ, 0, 0));
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 2,
				       SCMP_A0(SCMP_CMP_EQ, 0, 0),
				       SCMP_A1(SCMP_CMP_EQ, RLIMIT_CPU, 0));
	/*
	 * its lanes' input sockets only (clients' memfds from colocd,
	 * shm_input.h), and kcmp of its own files only: how it knows a memfd
	 * it keeps mapped (no other process's files, no other kind)
	 */
	for (int i = 0; !ret && i < sb->nr_recv_fds; i++)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(recvmsg), 1,
				       SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)sb->recv_fds[i], 0));
	if (!ret && sb->nr_recv_fds)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(kcmp), 3,
				       SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid(), 0),
				       SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)getpid(), 0),
				       SCMP_A2(SCMP_CMP_EQ, KCMP_FILE, 0));
	if (!ret)
		ret = seccomp_load(ctx);
	if (ret)
		snprintf(why, len, "installing the seccomp filter: %s", strerror(-ret));
	seccomp_release(ctx);
	return ret;
}

int exec_sandbox_enter(const struct exec_sandbox *sb, char *missing, size_t missing_len, char *why,
		       size_t why_len)
{
	int ret = 0;

	missing[0] = '\0';
	if (!geteuid()) {
		ret = drop_bounding_set(why, why_len);
		if (!ret)
			ret = switch_user(sb, why, why_len);
	}
	if (!ret)
		ret = clear_capabilities(why, why_len);
	/* a change of credentials clears the parent-death signal: set it again */
	if (!ret && prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)) {
		snprintf(why, why_len, "PR_SET_PDEATHSIG: %s", strerror(errno));
		ret = -errno;
	}
	if (!ret && sb->parent && getppid() != sb->parent) {
		snprintf(why, why_len, "colocd (pid %d) is gone", sb->parent);
		ret = -ESRCH;
	}
	if (!ret)
		ret = enter_landlock(sb, missing, missing_len, why, why_len);
	if (ret == 1)
		ret = 0;
	if (!ret)
		ret = enter_seccomp(sb, why, why_len);
	if (!ret && missing[0] && !sb->allow_weak) {
		snprintf(why, why_len,
			 "the sandbox is incomplete: %s (colocd "
			 "--allow-weak-isolation accepts that)",
			 missing);
		ret = -EPERM;
	}
	return ret;
}
