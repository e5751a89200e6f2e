// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-bench-shm: the round trip of one command and its completion between
 * this process (in colocd's place, through daemon/execproc.c) and a real
 * coloc-executor, for an empty command and for a one-layer block of a tiny
 * model, against a pipe ping-pong between this process and a child of it
 * measured side by side (the same sleep/wake pattern with the plainest
 * kernel path). Rounds alternate the three so load on the machine hits
 * them alike; prints p50/p99/max in microseconds and the ratios to the pipe.
 * Issue 7's goal is a p99 round trip of at most 20 us.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include "cli.h"
#include "execproc.h"
#include "mono_clock.h"

#define PROG "coloc-bench-shm"

/* One input of 16 floats and one 16x16 fc: a block that is all overhead. */
static const char tiny_model[] = "model tiny\nseed 1\nmacs 256\nparams 272\n"
				 "input x shape=1x16\nfc y out=16 bias\nend\n";

static struct {
	const char *executor;
	int iters, rounds, cpu;
	int driver_cpu; /* -1: unpinned; -2: another CPU than cpu, where there is one */
} opts = { .iters = 2000, .rounds = 10, .cpu = 0, .driver_cpu = -2 };

enum kind { KIND_NOP, KIND_LAYER, KIND_PIPE, NR_KINDS };
static const char *const kind_names[NR_KINDS] = {
	[KIND_NOP] = "shm, empty command",
	[KIND_LAYER] = "shm, one tiny layer",
	[KIND_PIPE] = "pipe ping-pong (baseline)",
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [options]\n"
		"Measures the round trip of a command and its completion through the shared\n"
		"memory colocd uses with a tenant's executor (bin/coloc-executor), against a\n"
		"pipe ping-pong between two processes measured side by side.\n"
		"\n"
		"  -n, --iters N         round trips per kind per round, 10..1000000 (default 2000)\n"
		"  -r, --rounds N        rounds, alternating the kinds, 1..1000 (default 10)\n"
		"  -c, --cpu N           CPU the one-layer block and the pipe's echo child run on\n"
		"                        (default 0)\n"
		"  -d, --driver-cpu N    CPU this process (colocd's side) runs on; -1 unpinned\n"
		"                        (default: another CPU than --cpu, as colocd usually is:\n"
		"                        every round trip then wakes the other CPU)\n"
		"  -e, --executor PATH   coloc-executor to start (default: next to this program)\n"
		"  -h, --help            this help\n"
		"      --version         print the version\n"
		"\n"
		"Run it as root (the executor drops to the 'coloc' user or 'nobody').\n"
		"Exit status: 0 ok, 1 failure, 2 bad usage.\n");
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Percentile p (0..100) of n sorted values. */
static uint64_t pct(const uint64_t *v, int n, double p)
{
	int i = (int)(p / 100.0 * (n - 1) + 0.5);

	return v[i < n ? i : n - 1];
}

static int shm_round(struct execproc *ep, enum kind k, uint64_t *out, struct coloc_err *err)
{
	struct execproc_block b = {
		.slot = 0, .first = 1, .last = 2, .cpus = &opts.cpu, .nr_cpus = 1
	};
	struct execproc_result res;

	for (int i = 0; i < opts.iters; i++) {
		uint64_t t0 = coloc_now_ns();
		int ret = k == KIND_NOP ? execproc_submit_nop(ep, err) :
					  execproc_submit_block(ep, &b, err);

		if (!ret)
			ret = execproc_wait_done(ep, &res, 10000, err);
		if (ret != 1)
			return ret < 0 ? ret : -EIO;
		if (res.status != COLOC_SHM_DONE_OK)
			return coloc_err_set(err, res.error ?: -EIO, "%s", res.reason);
		out[i] = coloc_now_ns() - t0;
	}
	return 0;
}

/* The baseline's child: echoes each byte back until the pipe closes. */
static void echo_child(int in, int out)
{
	char c;

	while (read(in, &c, 1) == 1)
		if (write(out, &c, 1) != 1)
			break;
	_exit(0);
}

static int pipe_round(int to, int from, uint64_t *out)
{
	char c = 'x';

	for (int i = 0; i < opts.iters; i++) {
		uint64_t t0 = coloc_now_ns();

		if (write(to, &c, 1) != 1 || read(from, &c, 1) != 1)
			return -EIO;
		out[i] = coloc_now_ns() - t0;
	}
	return 0;
}

static int write_tiny_model(char *path)
{
	int fd = mkstemp(path);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, tiny_model, strlen(tiny_model));
	close(fd);
	return n == (ssize_t)strlen(tiny_model) ? 0 : -EIO;
}

static void report(uint64_t *all[NR_KINDS], uint64_t *ratios[2][2], int n)
{
	uint64_t base_p50, base_p99;

	for (int k = 0; k < NR_KINDS; k++)
		qsort(all[k], (size_t)n, sizeof(uint64_t), cmp_u64);
	base_p50 = pct(all[KIND_PIPE], n, 50);
	base_p99 = pct(all[KIND_PIPE], n, 99);
	printf("%-28s %9s %9s %9s %10s %10s\n", "round trip", "p50 us", "p99 us", "max us",
	       "p50/pipe", "p99/pipe");
	for (int k = 0; k < NR_KINDS; k++) {
		uint64_t p50 = pct(all[k], n, 50), p99 = pct(all[k], n, 99);

		printf("%-28s %9.1f %9.1f %9.1f %10.2f %10.2f\n", kind_names[k], p50 / 1e3,
		       p99 / 1e3, all[k][n - 1] / 1e3, (double)p50 / (double)base_p50,
		       (double)p99 / (double)base_p99);
	}
	for (int k = 0; k < 2; k++) {
		qsort(ratios[k][0], (size_t)opts.rounds, sizeof(uint64_t), cmp_u64);
		qsort(ratios[k][1], (size_t)opts.rounds, sizeof(uint64_t), cmp_u64);
		printf("%s vs pipe, median of %d per-round ratios: p50 %.2f, p99 %.2f\n",
		       kind_names[k], opts.rounds, ratios[k][0][opts.rounds / 2] / 1000.0,
		       ratios[k][1][opts.rounds / 2] / 1000.0);
	}
	printf("%d round trips per kind; goal (issue 7): shm p99 <= 20 us\n", n);
}

static int bench(struct execproc *ep, int to, int from, struct coloc_err *err)
{
	int n = opts.iters * opts.rounds, ret = 0;
	uint64_t *all[NR_KINDS], *round[NR_KINDS], *ratios[2][2];

	for (int k = 0; k < NR_KINDS; k++) {
		all[k] = calloc((size_t)n, sizeof(uint64_t));
		round[k] = calloc((size_t)opts.iters, sizeof(uint64_t));
	}
	for (int k = 0; k < 2; k++)
		for (int j = 0; j < 2; j++)
			ratios[k][j] = calloc((size_t)opts.rounds, sizeof(uint64_t));
	for (int k = 0; k < NR_KINDS; k++)
		if (!all[k] || !round[k] || !ratios[k % 2][0] || !ratios[k % 2][1])
			ret = coloc_err_set(err, -ENOMEM, "out of memory");
	for (int r = 0; r < opts.rounds && !ret; r++) {
		for (int k = 0; k < NR_KINDS && !ret; k++) {
			/* alternate the order too, so no kind always follows another */
			enum kind kk = (enum kind)((k + r) % NR_KINDS);

			ret = kk == KIND_PIPE ? pipe_round(to, from, round[kk]) :
						shm_round(ep, kk, round[kk], err);
			if (ret == -EIO && kk == KIND_PIPE)
				coloc_err_set(err, ret, "the pipe ping-pong child stopped");
			memcpy(all[kk] + (size_t)r * opts.iters, round[kk],
			       (size_t)opts.iters * sizeof(uint64_t));
		}
		for (int k = 0; k < NR_KINDS && !ret; k++)
			qsort(round[k], (size_t)opts.iters, sizeof(uint64_t), cmp_u64);
		for (int k = 0; k < 2 && !ret; k++) {
			ratios[k][0][r] = 1000 * pct(round[k], opts.iters, 50) /
					  pct(round[KIND_PIPE], opts.iters, 50);
			ratios[k][1][r] = 1000 * pct(round[k], opts.iters, 99) /
					  pct(round[KIND_PIPE], opts.iters, 99);
		}
	}
	if (!ret)
		report(all, ratios, n);
	for (int k = 0; k < NR_KINDS; k++) {
		free(all[k]);
		free(round[k]);
	}
	for (int k = 0; k < 2; k++)
		for (int j = 0; j < 2; j++)
			free(ratios[k][j]);
	return ret;
}

static int pin_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

/* The driver's CPU: as asked, or the first online CPU other than the executor's. */
static int driver_cpu(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (opts.driver_cpu != -2)
		return opts.driver_cpu;
	for (int c = 0; c < n; c++)
		if (c != opts.cpu)
			return c;
	return -1;
}

static int parse_args(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "iters", required_argument, NULL, 'n' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "driver-cpu", required_argument, NULL, 'd' },
		{ "executor", required_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	int c;
	long v;

	while ((c = getopt_long(argc, argv, "n:r:c:d:e:h", long_opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (cli_parse_flag(PROG, "--iters", optarg, 10, 1000000, &v))
				return 2;
			opts.iters = (int)v;
			break;
		case 'r':
			if (cli_parse_flag(PROG, "--rounds", optarg, 1, 1000, &v))
				return 2;
			opts.rounds = (int)v;
			break;
		case 'c':
			if (cli_parse_flag(PROG, "--cpu", optarg, 0, COLOC_MAX_CPUS - 1, &v))
				return 2;
			opts.cpu = (int)v;
			break;
		case 'd':
			if (cli_parse_flag(PROG, "--driver-cpu", optarg, -1, COLOC_MAX_CPUS - 1,
					   &v))
				return 2;
			opts.driver_cpu = (int)v;
			break;
		case 'e':
			opts.executor = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			cli_print_version(PROG);
			exit(0);
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	return 0;
}

/* Computes the tiny model's input layer once: the benchmarked block is layer 1 alone. */
static int prime(struct execproc *ep, struct coloc_err *err)
{
	struct execproc_block b = {
		.slot = 0, .first = 0, .last = 2, .cpus = &opts.cpu, .nr_cpus = 1
	};
	struct execproc_result res;
	int ret = execproc_submit_block(ep, &b, err);

	if (!ret)
		ret = execproc_wait_done(ep, &res, 10000, err);
	if (ret == 1 && res.status != COLOC_SHM_DONE_OK)
		return coloc_err_set(err, res.error ?: -EIO, "%s", res.reason);
	return ret == 1 ? 0 : ret;
}

int main(int argc, char **argv)
{
	char model[] = "/tmp/coloc-bench-shm-XXXXXX", cores[16];
	struct execproc_opts o = {
		.tenant = "bench-shm", .model_name = model, .weights_fd = -1, .cores = cores
	};
	struct coloc_err err = { 0 };
	struct execproc *ep = NULL;
	int to[2], from[2], ret;
	pid_t child;

	ret = parse_args(argc, argv);
	if (ret)
		return ret;
	o.executor = opts.executor;
	snprintf(cores, sizeof(cores), "%d", opts.cpu);
	if (write_tiny_model(model)) {
		fprintf(stderr, PROG ": cannot write a model file in /tmp\n");
		return 1;
	}
	o.model_fd = open(model, O_RDONLY | O_CLOEXEC);
	ret = o.model_fd < 0 ? -errno : execproc_spawn(&o, &ep, &err);
	if (o.model_fd >= 0)
		close(o.model_fd);
	if (!ret)
		ret = execproc_wait_ready(ep, 60000, &err);
	unlink(model);
	if (!ret)
		ret = prime(ep, &err);
	if (ret) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		execproc_free(ep);
		return 1;
	}
	if (pipe(to) || pipe(from)) {
		fprintf(stderr, PROG ": pipe: %s\n", strerror(errno));
		execproc_free(ep);
		return 1;
	}
	child = fork();
	if (!child) {
		close(to[1]);
		close(from[0]);
		pin_to(opts.cpu); /* the pipe crosses the same CPUs as the shared memory */
		echo_child(to[0], from[1]);
	}
	close(to[0]);
	close(from[1]);
	if (driver_cpu() >= 0 && pin_to(driver_cpu()))
		fprintf(stderr, PROG ": cannot run on cpu %d: %s\n", driver_cpu(), strerror(errno));
	printf("executor pid %d and the pipe's echo child pid %d on cpu %d; this driver on %s%d\n",
	       execproc_pid(ep), child, opts.cpu, driver_cpu() < 0 ? "any cpu " : "cpu ",
	       driver_cpu());
	ret = child < 0 ? coloc_err_set(&err, -errno, "fork: %s", strerror(errno)) :
			  bench(ep, to[1], from[0], &err);
	close(to[1]);
	close(from[0]);
	if (child > 0)
		waitpid(child, NULL, 0);
	execproc_free(ep);
	if (ret) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		return 1;
	}
	return 0;
}
