/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The control socket's state, shared by server.c (connections: requests
 * served on the loop), server_read.c (bytes and descriptors in, an
 * infer's payload among them), server_send.c (answers out), server_out_budget.c (answers queued, bounded),
 * server_admit.c (who may connect, how many) and server_path.c (the socket
 * opened at its guarded path, listened on, closed; the sweep of stalled
 * connections). server_frame.c frames a line and needs none of it.
 */
#ifndef COLOC_DAEMON_SERVER_INTERNAL_H
#define COLOC_DAEMON_SERVER_INTERNAL_H

#include <stdbool.h>
#include <sys/types.h>
#include <sys/un.h>
#include "coloc/protocol.h"
#include "fd_closer.h"
#include "server.h"

#define SERVER_PATH_MAX sizeof(((struct sockaddr_un *)0)->sun_path)
/*
 * Reads whose stamps a connection keeps while their bytes wait in its
 * buffer; past it the second oldest is merged into the oldest (its bytes
 * keep the earlier stamp). Only a request held back while more is read
 * needs more than two.
 */
#define SERVER_IN_READS 16

/* the buffer a refused infer's bytes are read into and dropped */
#define SERVER_DROP_CHUNK (64u << 10)

/* a connection's read buffer: the longest line and some bytes behind it */
#define SERVER_IN_CAP (COLOC_MAX_REQUEST + 4096)

/* One answer (a line, maybe followed by a payload) waiting to be sent. */
struct server_out {
	struct server_out *next;
	size_t len, off;
	char data[];
};

struct server_conn {
	struct server *s;
	struct loop_source *src;
	int fd;
	uid_t uid;
	gid_t gid;
	bool other_pidns; /* server_req.other_pidns */
	__u64 id;
	bool closing; /* close once the pending answers are out */
	bool eof; /* the client sent its last byte */
	bool broken; /* a send failed: nothing more is queued, the loop closes it */
	__u64 last_progress_ns; /* accepted, a request answered, or bytes moved */
	char *in;
	size_t in_len;
	/*
	 * The reads whose bytes `in` holds, oldest first: where each one's
	 * bytes begin in it and when it was read, so that a request is stamped
	 * with the read of its own first byte (server_req.first_byte_ns).
	 */
	struct {
		size_t at;
		__u64 ns;
	} in_reads[SERVER_IN_READS];
	int nr_in_reads;
	__u64 last_read_ns;
	/* answers queued, oldest first, and their bytes not yet sent */
	struct server_out *out_head, *out_tail;
	size_t out_bytes;
	int pending; /* deferred answers owed */
	int answered_early; /* deferred answers sent before their handler returned */
	/* a binary payload being read after its request line, which waits with it */
	struct server_req preq;
	char *pline;
	size_t pline_len;
	char *payload;
	size_t payload_got;
	bool in_payload;
	/*
	 * The answer to an infer refused on its line (server_payload_fn): its
	 * bytes are read into a SERVER_DROP_CHUNK buffer, over and over, and
	 * dropped; then this line is the answer. NULL while bytes are kept.
	 */
	char *drop_answer;
	size_t payload_counted; /* this payload's share of server.payload_held */
	/* descriptors received, each with the offset in `in` of the last byte that came with it */
	int fds[COLOC_MAX_REQUEST_FDS];
	size_t fd_at[COLOC_MAX_REQUEST_FDS];
	int nr_fds;
	struct fd_closer_hint closer_hint; /* where its uid's closes were at the last look */
};

struct server {
	struct loop *loop;
	struct server_config cfg;
	struct loop_source *listen_src, *sweep_src;
	/* at the descriptor limit with no reserve, accepting waits on it (server_admit.c) */
	struct loop_source *resume_src;
	/* a look again at connections whose uid's closes are behind (server.c) */
	struct loop_source *recheck_src;
	bool recheck_armed; /* set until it fires: a look never pushes it back */
	int listen_fd, lock_fd, dir_fd;
	char socket_path[SERVER_PATH_MAX];
	char dir[SERVER_PATH_MAX];
	char sock_name[SERVER_PATH_MAX];
	char lock_name[SERVER_PATH_MAX + 8];
	gid_t coloc_gid;
	bool have_coloc_gid;
	bool group_refused; /* the node gives coloc_gid to another group (server_refuse_group) */
	int pidns_depth; /* colocd's pid namespace below /proc's (server_pidns_depth) */
	bool rights_once_admitted; /* server_listener_refuses_rights() */
	bool rights_test_off; /* COLOCD_TEST_NO_PASSRIGHTS: the listener left as before 6.16 */
	__u64 next_id;
	server_request_fn handle;
	server_payload_fn payload_check;
	void *handle_ctx;
	size_t payload_held; /* room taken for payloads being received (SERVER_PAYLOAD_BUDGET) */
	struct server_conn *conns[SERVER_MAX_CONNS];
};

/* server.c: a connection's requests served */
void server_conn_close(struct server_conn *c);
/* Polls c for what it now waits on (after its queue or state changed). */
void server_conn_kick(struct server_conn *c);
/* Nothing read, owed or being sent: a connection that may be evicted. */
bool server_conn_idle(const struct server_conn *c);
void server_on_conn(struct loop_source *src, int fd, unsigned int revents, void *ctx);

/* server_read.c: bytes and descriptors in, an infer's payload among them */
/* Reads what is there, *got the bytes (0 at EOF, -1 for none); false: close now. */
bool server_conn_read(struct server_conn *c, ssize_t *got);
/* When the read that brought in[0] came (the last read's when `in` is empty). */
__u64 server_conn_in_first_ns(const struct server_conn *c);
/* The first n bytes of `in` leave it. */
void server_conn_drop_in(struct server_conn *c, size_t n);
/*
 * The descriptors that came with the first n bytes of `in` into fds
 * (closed when fds is NULL), their number.
 */
int server_conn_take_fds(struct server_conn *c, size_t n, int *fds);
/*
 * The line of req (n bytes at line) is followed by bytes raw bytes: holds
 * the request until they are in. False when out of memory.
 */
bool server_conn_await_payload(struct server_conn *c, struct server_req *req, const char *line,
			       size_t n, size_t bytes);
/* Moves buffered bytes into the payload; true when it is complete. */
bool server_conn_fill_payload(struct server_conn *c);

/* server_send.c: answers out */
/* Queues line and payload as one answer; false when out of memory. */
bool server_conn_queue(struct server_conn *c, const char *line, const void *payload, size_t len);
/* Sends what the kernel takes now of the queue; false when the connection is gone. */
bool server_conn_flush(struct server_conn *c);
/*
 * A client that takes in none of its answers, over limit (its name and
 * bytes, for the log): its queue dropped, the connection shut down both
 * ways for the loop to close. Never closes here.
 */
void server_conn_cut(struct server_conn *c, const char *limit, unsigned long long bytes);

/* server_out_budget.c: answers queued, per uid and for all but root */
/* Cuts the connections holding the most until uid and all uids are within bounds. */
void server_out_within_budget(struct server *s, uid_t uid);

/* server_admit.c: who may connect, how many each uid may hold */
/* why a member whose closes hang (FD_CLOSER_HUNG) is refused or dropped */
#define SERVER_CLOSES_STUCK                                                            \
	"this user's descriptors are still being closed (a socket lingering, a file "    \
	"system not answering, too many waiting): try again once they are"
/* the closer entry of every refused peer outside the group (no one's uid: setresuid's "keep") */
#define SERVER_STRANGERS_CLOSES ((uid_t)-1)
/* why a connection is refused, or a member's dropped before a read, at the descriptor limit */
#define SERVER_OUT_OF_FDS "colocd is out of descriptors; try again later"
/*
 * Room for every descriptor one message can carry (the kernel's
 * SCM_MAX_FD): those that did not fit would be released by the kernel in
 * recvmsg, on the loop, where their last close could block.
 */
#define SERVER_RECV_FDS 253
/* and for what colocd's other threads may open meanwhile (a submit's copies) */
#define SERVER_FDS_SPARE 64
/* Sends one error line on fd without waiting. */
void server_send_error(int fd, const char *why);
/* How deep pid's pid namespace sits below /proc's; -1 if unknown. */
int server_pidns_depth(pid_t pid);
/* The listening socket is readable: accepts a bounded batch. */
void server_on_listen(struct loop_source *src, int fd, unsigned int revents, void *ctx);
/*
 * Connections of listen_fd carry no descriptors until admitted
 * (SO_PASSRIGHTS); false when the kernel has no such option.
 */
bool server_listener_refuses_rights(int listen_fd);

/* server_path.c */
/* Splits the socket path into its directory and its name. */
int server_split_path(struct server *s, const char *path, struct coloc_err *err);

/* Creates dir (0755, root's) if it is not there. */
int server_mkdir_parent(const char *dir, struct coloc_err *err);

/*
 * The socket's directory must not let another user plant or swap files in
 * it: root's, and writable by group or others only where the group is
 * root's or the directory is sticky (then no one else can rename or remove
 * our files, and the files themselves are checked when opened).
 */
int server_check_dir(struct server *s, struct coloc_err *err);

/*
 * The lock file is removed at exit, so a daemon that locked a file someone
 * unlinked meanwhile holds nothing: it checks the name still names its file
 * and otherwise tries again. Opened relative to the checked directory, never
 * through a link, and only a file of root's with no other names is used.
 */
int server_take_lock(struct server *s, struct coloc_err *err);

/*
 * The lock is ours, so no live colocd serves the path; but another program
 * might. A socket nobody accepts on is stale and removed, and so is one that
 * a colocd still being torn down answers for: only another program's live
 * socket is refused, and so is a listener that never accepts.
 */
int server_remove_stale_socket(struct server *s, struct coloc_err *err);

#endif /* COLOC_DAEMON_SERVER_INTERNAL_H */
