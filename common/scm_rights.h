/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * One SCM_RIGHTS control message on a msghdr: the descriptors a client
 * hands colocd with a line (client/client_io.c) and the tests' senders
 * (tests/testutil_socket.c, tests/colocd_closer_test.c).
 */
#ifndef COLOC_COMMON_SCM_RIGHTS_H
#define COLOC_COMMON_SCM_RIGHTS_H

#include <string.h>
#include <sys/socket.h>

/*
 * msg's control set to fds[0..n) in buf, which holds CMSG_SPACE(n ints)
 * bytes at least and is aligned for a struct cmsghdr; n > 0.
 */
static inline void scm_rights_attach(struct msghdr *msg, void *buf, const int *fds, int n)
{
	size_t bytes = sizeof(int) * (size_t)n;
	struct cmsghdr *cm;

	memset(buf, 0, CMSG_SPACE(bytes));
	msg->msg_control = buf;
	msg->msg_controllen = CMSG_SPACE(bytes);
	cm = CMSG_FIRSTHDR(msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(bytes);
	memcpy(CMSG_DATA(cm), fds, bytes);
}

#endif
