// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A query's input read from its client's memfd in the executor
 * (shm_input.h): the message on the lane's input socket, and the memfds
 * kept mapped between queries, since mapping one costs more than the
 * copy it saves (docs/measurements/serving-latency.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/kcmp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "shm_input.h"

/* The one descriptor of an SCM_RIGHTS message, or -1; any other closed. */
static int message_fd(struct msghdr *mh)
{
	int fd = -1;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		size_t n;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int got;

			memcpy(&got, CMSG_DATA(cm) + i * sizeof(int), sizeof(got));
			if (fd < 0)
				fd = got;
			else
				close(got);
		}
	}
	return fd;
}

int shm_input_recv(struct shm_input *in, __u32 seq, int *fd, char *why, size_t len)
{
	*fd = -1;
	if (in->sock < 0) {
		snprintf(why, len,
			 "the command's input is in a descriptor, and this lane has no "
			 "input socket");
		return -EINVAL;
	}
	for (;;) {
		struct coloc_shm_input_msg msg;
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(sizeof(int))];
		} u;
		struct iovec iov = { &msg, sizeof(msg) };
		struct msghdr mh = { .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = u.buf,
				     .msg_controllen = sizeof(u.buf) };
		ssize_t n = recvmsg(in->sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		int got;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(why, len, "no input descriptor came with command %u: %s", seq,
				 strerror(errno));
			return -errno;
		}
		got = message_fd(&mh);
		if (n == sizeof(msg) && msg.seq == seq && got >= 0 &&
		    !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
			*fd = got;
			return 0;
		}
		if (got >= 0)
			close(got);
		if (n != sizeof(msg)) {
			snprintf(why, len, "a malformed input message (%zd bytes) for command %u",
				 n, seq);
			return -EPROTO;
		}
		if (msg.seq == seq) {
			snprintf(why, len, "command %u's input message carries no descriptor", seq);
			return -EPROTO;
		}
		/* an earlier command's, refused before it took its input */
	}
}

/* The kept entry of the memfd fd is open on, or -1. */
static int find_kept(const struct shm_input *in, int fd, const struct stat *st, size_t bytes)
{
	pid_t self = getpid();

	for (int i = 0; i < COLOC_SHM_NR_SLOTS; i++) {
		const struct shm_input_map *e = &in->map[i];

		if (e->bytes && e->ino == (unsigned long long)st->st_ino && e->len >= bytes &&
		    syscall(SYS_kcmp, self, self, KCMP_FILE, e->fd, fd) == 0)
			return i;
	}
	return -1;
}

static void drop_kept(struct shm_input_map *e)
{
	if (!e->bytes)
		return;
	munmap((void *)e->bytes, e->len);
	close(e->fd);
	*e = (struct shm_input_map){ 0 };
}

/* The empty entry, else the least recently used one, emptied. */
static struct shm_input_map *free_entry(struct shm_input *in)
{
	struct shm_input_map *pick = &in->map[0];

	for (int i = 0; i < COLOC_SHM_NR_SLOTS; i++) {
		if (!in->map[i].bytes)
			return &in->map[i];
		if (in->map[i].used < pick->used)
			pick = &in->map[i];
	}
	drop_kept(pick);
	return pick;
}

int shm_input_map(struct shm_input *in, int *fd, size_t bytes, const char **src, char *why,
		  size_t len)
{
	struct shm_input_map *e;
	struct stat st;
	int seals = fcntl(*fd, F_GET_SEALS), k;
	void *m;

	/* a memfd that could shrink under the mapping would fault with SIGBUS */
	if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstat(*fd, &st) || st.st_size < 0 ||
	    (unsigned long long)st.st_size < bytes || !bytes) {
		snprintf(why, len,
			 "the input's descriptor is not a memfd sealed against shrinking "
			 "that holds the input");
		return -EINVAL;
	}
	k = find_kept(in, *fd, &st, bytes);
	if (k >= 0) {
		in->map[k].used = ++in->tick;
		*src = in->map[k].bytes;
		return 0;
	}
	m = mmap(NULL, bytes, PROT_READ, MAP_SHARED | MAP_POPULATE, *fd, 0);
	if (m == MAP_FAILED) {
		snprintf(why, len, "mapping the input's memfd: %s", strerror(errno));
		return -errno;
	}
	e = free_entry(in);
	*e = (struct shm_input_map){ .fd = *fd,
				     .bytes = m,
				     .len = bytes,
				     .ino = (unsigned long long)st.st_ino,
				     .used = ++in->tick };
	*fd = -1;
	*src = e->bytes;
	return 0;
}

void shm_input_release(struct shm_input *in)
{
	for (int i = 0; i < COLOC_SHM_NR_SLOTS; i++)
		drop_kept(&in->map[i]);
}
