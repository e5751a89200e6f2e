/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * An executor's standard output and error: the read end of the pipe they
 * both go to, read by colocd without ever blocking, each line logged on
 * colocd's stdout as "colocd: tenant NAME executor PID: LINE", made
 * printable, cut to a bounded length, at a bounded rate
 * (docs/security-executor.md, "Its output").
 */
#ifndef COLOC_DAEMON_EXEC_LOG_H
#define COLOC_DAEMON_EXEC_LOG_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>

#define EXEC_LOG_LINE_MAX 240 /* bytes of one logged line; longer ones are cut in pieces */
#define EXEC_LOG_BURST 64 /* lines logged per window ... */
#define EXEC_LOG_WINDOW_NS 10000000000ull /* ... of 10 s; the rest counted, then reported */
#define EXEC_LOG_READ_MAX 16384 /* bytes one drain reads at most: a flood waits its turn */

struct exec_log {
	int fd; /* the pipe's read end, O_NONBLOCK; -1 once closed */
	bool hung_up; /* end of file read: the caller stops watching fd, then closes */
	const char *tenant;
	pid_t pid;
	FILE *out;
	char line[EXEC_LOG_LINE_MAX + 1];
	size_t len;
	__u64 window_ns; /* when the current window began */
	unsigned int logged; /* lines logged in it */
	unsigned long long dropped; /* lines not logged in it */
};

/* Takes the pipe's read end (made O_NONBLOCK here); 0 or a negative errno. */
int exec_log_init(struct exec_log *l, int fd, const char *tenant, pid_t pid, FILE *out);
/*
 * Reads what is there (at most EXEC_LOG_READ_MAX bytes) and logs the
 * complete lines; at end of file logs what is left. Returns whether more
 * can come (false at end of file: stop watching fd, then exec_log_close).
 */
bool exec_log_drain(struct exec_log *l, __u64 now_ns);
/* Logs what is left (a line without its newline, the dropped count), closes the pipe. */
void exec_log_close(struct exec_log *l);

#endif /* COLOC_DAEMON_EXEC_LOG_H */
