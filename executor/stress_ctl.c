// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-stress under --control (stress_ctl.h): a child with its stdin and
 * stdout on pipes. Its load is on once it prints "coloc-stress: running";
 * "N\n" on stdin sets level N and is answered "level N"; EOF stops it, and
 * its report's "level N: X GB/s" lines give the rate at each level.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "coloc/limits.h"
#include "cpulist.h"
#include "stress_ctl.h"

int stress_ctl_start(struct stress_ctl *s, const char *bin, const char *cores, const char *kind,
		     const char *fill, stress_ctl_line_fn on_line, void *ctx, struct coloc_err *err)
{
	int outfd[2], infd[2], ret, cpus[COLOC_MAX_CPUS], nr;
	char line[512];
	cpu_set_t on;

	memset(s, 0, sizeof(*s));
	nr = cpulist_parse(cores, 0, cpus, COLOC_MAX_CPUS, err);
	if (nr < 0)
		return nr;
	CPU_ZERO(&on);
	for (int i = 0; i < nr; i++)
		CPU_SET(cpus[i], &on);
	s->in_fd = -1;
	s->on_line = on_line;
	s->ctx = ctx;
	for (int l = 0; l < STRESS_CTL_LEVELS; l++)
		s->gbps[l] = -1;
	if (pipe2(outfd, O_CLOEXEC))
		return coloc_err_set(err, -errno, "pipe: %s", strerror(errno));
	if (pipe2(infd, O_CLOEXEC)) {
		ret = -errno;
		close(outfd[0]);
		close(outfd[1]);
		return coloc_err_set(err, ret, "pipe: %s", strerror(-ret));
	}
	s->pid = fork();
	if (s->pid == 0) {
		/*
		 * The caller's thread may be pinned to a block's cores (the
		 * executor pins the team's first thread); the stressor only
		 * loads cores its affinity allows.
		 */
		sched_setaffinity(0, sizeof(on), &on);
		dup2(outfd[1], STDOUT_FILENO);
		dup2(infd[0], STDIN_FILENO);
		execl(bin, bin, "--cores", cores, "--kind", kind, "--level", "0", "--fill", fill,
		      "--control", (char *)NULL);
		_exit(127);
	}
	ret = s->pid < 0 ? -errno : 0;
	close(outfd[1]);
	close(infd[0]);
	if (ret) {
		close(outfd[0]);
		close(infd[1]);
		return coloc_err_set(err, ret, "fork: %s", strerror(-ret));
	}
	s->in_fd = infd[1];
	s->out = fdopen(outfd[0], "r");
	if (!s->out) {
		ret = -errno;
		close(outfd[0]);
		stress_ctl_stop(s, NULL);
		return coloc_err_set(err, ret, "fdopen: %s", strerror(-ret));
	}
	while (fgets(line, sizeof(line), s->out)) {
		if (s->on_line)
			s->on_line(s->ctx, line);
		if (!strncmp(line, "coloc-stress: running", 21))
			return 0;
	}
	stress_ctl_stop(s, NULL);
	return coloc_err_set(err, -ECHILD, "%s --cores %s --kind %s exited before its load began",
			     bin, cores, kind);
}

int stress_ctl_set_level(struct stress_ctl *s, int level, struct coloc_err *err)
{
	char line[512], want[32];
	size_t n;

	if (level < 0 || level >= STRESS_CTL_LEVELS)
		return coloc_err_set(err, -EINVAL, "stress level %d is not in 0..100", level);
	snprintf(want, sizeof(want), "level %d\n", level);
	n = strlen(want + 6);
	if (write(s->in_fd, want + 6, n) != (ssize_t)n)
		return coloc_err_set(err, -ECHILD, "coloc-stress does not read its levels");
	while (fgets(line, sizeof(line), s->out))
		if (!strcmp(line, want))
			return 0;
	return coloc_err_set(err, -ECHILD, "coloc-stress exited before acknowledging level %d",
			     level);
}

int stress_ctl_stop(struct stress_ctl *s, struct coloc_err *err)
{
	int status = 0, level;
	char line[512];
	double rate;
	pid_t r;

	if (s->pid <= 0)
		return coloc_err_set(err, -ECHILD, "coloc-stress is not running");
	if (s->in_fd >= 0)
		close(s->in_fd);
	while (s->out && fgets(line, sizeof(line), s->out)) {
		if (s->on_line)
			s->on_line(s->ctx, line);
		if (sscanf(line, "level %d: %lf GB/s", &level, &rate) == 2 && level >= 0 &&
		    level < STRESS_CTL_LEVELS)
			s->gbps[level] = rate;
	}
	if (s->out)
		fclose(s->out);
	while ((r = waitpid(s->pid, &status, 0)) < 0 && errno == EINTR)
		;
	s->pid = 0;
	s->out = NULL;
	s->in_fd = -1;
	if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		return coloc_err_set(err, -ECHILD, "coloc-stress failed (status %#x)", status);
	return 0;
}
