// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * An executor's standard output and error into colocd's log (exec_log.h).
 * The executor is untrusted: its bytes are logged only as printable ASCII
 * (every other byte becomes '?', so no terminal escape, no forged
 * "colocd:" line of its own, no invalid UTF-8 reaches the journal), at
 * most EXEC_LOG_LINE_MAX bytes a line and EXEC_LOG_BURST lines a window.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include "exec_log.h"

int exec_log_init(struct exec_log *l, int fd, const char *tenant, pid_t pid, FILE *out)
{
	*l = (struct exec_log){ .fd = fd, .tenant = tenant, .pid = pid, .out = out };
	if (fd >= 0 && fcntl(fd, F_SETFL, O_NONBLOCK))
		return -errno;
	return 0;
}

static void report_dropped(struct exec_log *l)
{
	if (!l->dropped)
		return;
	fprintf(l->out, "colocd: tenant %s executor %d: %llu more line(s) not logged\n", l->tenant,
		(int)l->pid, l->dropped);
	l->dropped = 0;
}

static void emit(struct exec_log *l, __u64 now_ns)
{
	if (now_ns - l->window_ns >= EXEC_LOG_WINDOW_NS || !l->window_ns) {
		report_dropped(l);
		l->window_ns = now_ns ? now_ns : 1;
		l->logged = 0;
	}
	if (l->logged < EXEC_LOG_BURST) {
		l->line[l->len] = '\0';
		fprintf(l->out, "colocd: tenant %s executor %d: %s\n", l->tenant, (int)l->pid,
			l->line);
		l->logged++;
	} else {
		l->dropped++;
	}
	l->len = 0;
}

static void take(struct exec_log *l, const char *buf, size_t n, __u64 now_ns)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (c == '\n') {
			emit(l, now_ns);
			continue;
		}
		l->line[l->len++] = c == '\t' || (c >= 0x20 && c < 0x7f) ? (char)c : '?';
		if (l->len == EXEC_LOG_LINE_MAX)
			emit(l, now_ns);
	}
}

bool exec_log_drain(struct exec_log *l, __u64 now_ns)
{
	char buf[4096];
	size_t total = 0;

	while (l->fd >= 0 && !l->hung_up && total < EXEC_LOG_READ_MAX) {
		ssize_t n = read(l->fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			if (l->len)
				emit(l, now_ns);
			l->hung_up = true;
			break;
		}
		take(l, buf, (size_t)n, now_ns);
		total += (size_t)n;
	}
	fflush(l->out);
	return l->fd >= 0 && !l->hung_up;
}

void exec_log_close(struct exec_log *l)
{
	if (l->len)
		emit(l, l->window_ns);
	report_dropped(l);
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
}
