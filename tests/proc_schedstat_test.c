// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of common/proc_schedstat.c, the reader of /proc's schedstat
 * files: a line written here by hand, a short or missing file refused,
 * and a process's run delay against what the test makes it: a spinner
 * sharing one CPU with another waits for it, a sleeper does not; its sums
 * over the threads allowed on given CPUs, and which threads those were.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "proc_schedstat.h"
#include "testutil.h"

#define SHARED_MS 600

/* Writes line into a new file under /tmp; its path into path. 0 or -errno. */
static int write_line(const char *line, char *path, size_t len)
{
	char name[] = "/tmp/coloc-schedstat-XXXXXX";
	int fd = mkstemp(name);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, line, strlen(line));
	close(fd);
	snprintf(path, len, "%s", name);
	return n == (ssize_t)strlen(line) ? 0 : -EIO;
}

TEST(proc_schedstat_read__run_and_delay_from_a_line)
{
	char path[64];
	uint64_t run = 0, delay = 0;

	ASSERT_EQ(0, write_line("18446744073709551615 4567 89\n", path, sizeof(path)));
	EXPECT_EQ(0, proc_schedstat_read(path, &run, &delay));
	EXPECT_EQ(UINT64_MAX, run);
	EXPECT_EQ(4567, delay);
	unlink(path);
	ASSERT_EQ(0, write_line("123\n", path, sizeof(path)));
	EXPECT_EQ(-EINVAL, proc_schedstat_read(path, &run, &delay));
	unlink(path);
	EXPECT_EQ(-ENOENT, proc_schedstat_read("/proc/self/no-schedstat", &run, &delay));
}

TEST(proc_schedstat_process_delay__a_spinner_behind_another_waits_a_sleeper_not)
{
	struct tu_spinner a = { 0 }, b = { 0 };
	uint64_t spinner = 0, sleeper0 = 0, sleeper = 0;
	pid_t sleeping = fork();
	cpu_set_t allowed;
	int cpu = 0;

	ASSERT_LE(0, sleeping);
	if (!sleeping) {
		pause();
		_exit(0);
	}
	/* its delay from here on: asleep, it waits for no CPU */
	while (tu_thread_state(sleeping, sleeping) != 'S')
		usleep(1000);
	ASSERT_EQ(0, proc_schedstat_process_delay(sleeping, 16, &sleeper0));
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(allowed), &allowed));
	while (!CPU_ISSET(cpu, &allowed))
		cpu++;
	ASSERT_EQ(0, tu_spawn_spinner(&a, cpu, 1000, 0));
	ASSERT_EQ(0, tu_spawn_spinner(&b, cpu, 1000, 0));
	tu_release(&a);
	tu_release(&b);
	usleep(SHARED_MS * 1000);
	EXPECT_EQ(0, proc_schedstat_process_delay(b.pid, 16, &spinner));
	EXPECT_EQ(0, proc_schedstat_process_delay(sleeping, 16, &sleeper));
	tu_kill(&a);
	tu_kill(&b);
	kill(sleeping, SIGKILL);
	waitpid(sleeping, NULL, 0);
	TH_LOG("run delay over %d ms on one CPU shared by two spinners: %.1f ms; a sleeper's %.3f ms",
	       SHARED_MS, spinner / 1e6, (sleeper - sleeper0) / 1e6);
	/* one of two on the CPU waits about half of it, more on a loaded host */
	EXPECT_LT(SHARED_MS / 4 * 1000000ull, spinner);
	EXPECT_GT(20000000ull, sleeper - sleeper0);
	EXPECT_EQ(-ENOENT, proc_schedstat_process_delay(sleeping, 16, &sleeper));
}

TEST(proc_schedstat_process_sum__threads_allowed_on_the_cpus_only)
{
	struct proc_schedstat_sum on = { 0 }, off = { 0 }, again = { 0 }, other = { 0 };
	struct tu_spinner a = { 0 }, b = { 0 };
	cpu_set_t allowed;
	int cpu = 0, elsewhere;

	ASSERT_EQ(0, sched_getaffinity(0, sizeof(allowed), &allowed));
	while (!CPU_ISSET(cpu, &allowed))
		cpu++;
	elsewhere = cpu + 1; /* allowed or not: the spinner is pinned on cpu only */
	ASSERT_EQ(0, tu_spawn_spinner(&a, cpu, 1000, 0));
	ASSERT_EQ(0, tu_spawn_spinner(&b, cpu, 1000, 0));
	tu_release(&a);
	tu_release(&b);
	usleep(200000);
	EXPECT_EQ(0, proc_schedstat_process_sum(a.pid, 16, &cpu, 1, &on));
	EXPECT_EQ(0, proc_schedstat_process_sum(a.pid, 16, &elsewhere, 1, &off));
	EXPECT_EQ(0, proc_schedstat_process_sum(a.pid, 16, &cpu, 1, &again));
	EXPECT_EQ(0, proc_schedstat_process_sum(b.pid, 16, &cpu, 1, &other));
	EXPECT_EQ(-E2BIG, proc_schedstat_process_sum(a.pid, 0, &cpu, 1, &off));
	tu_kill(&a);
	tu_kill(&b);
	TH_LOG("a spinner sharing its CPU, 200 ms in: run %.1f ms, delay %.1f ms",
	       on.run_ns / 1e6, on.delay_ns / 1e6);
	EXPECT_EQ(1, on.nr_threads);
	/* it ran and waited; read again, the same thread */
	EXPECT_LT(0, on.run_ns);
	EXPECT_LT(0, on.delay_ns);
	EXPECT_LE(on.run_ns, again.run_ns);
	EXPECT_EQ(on.threads_sig, again.threads_sig);
	EXPECT_NE(on.threads_sig, other.threads_sig);
	EXPECT_EQ(0, off.nr_threads);
	EXPECT_EQ(0, off.run_ns);
}

TEST_HARNESS_MAIN
