// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Caps an accepted connection's kernel send buffer (send_buffer.h). A
 * socket whose SO_SNDBUF is set no longer autotunes, so a client that
 * does not read holds at most twice bytes of the gateway's answers in
 * the kernel; the rest waits in the gateway's own buffers, where
 * --http-max-buffer-bytes counts it.
 */
#include <stdbool.h>
#include <sys/socket.h>
#include "send_buffer.h"

bool gw_send_buffer_cap(int fd, int bytes)
{
	return !setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
}

bool gw_send_buffer_cap_mhd(struct MHD_Connection *conn, int bytes)
{
	const union MHD_ConnectionInfo *fd =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

	return fd && gw_send_buffer_cap(fd->connect_fd, bytes);
}
