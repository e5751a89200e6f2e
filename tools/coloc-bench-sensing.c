// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-bench-sensing: what colocd's sampling costs the workloads it watches.
 * A fixed amount of work (one pinned thread per online CPU) is timed with the
 * real colocd running (sampling on its default trigger, the scheduler tick,
 * or on a timer at --sample-hz) and without it, alternating off/on in one
 * run so drift hits both alike. Prints every round, the medians and the
 * ratio on/off (goal: <= 1.005).
 *
 * Two workloads: "cpu" (compute-bound, the overhead of periodic sampling)
 * and "switch" (two threads per CPU ping-ponging through pipes, the worst
 * case for the sched_switch program).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include "cli.h"

static struct {
	unsigned int rounds;
	unsigned int sample_hz;
	unsigned long work; /* iterations per thread */
	const char *workload;
	const char *colocd;
} opts = {
	.rounds = 10,
	.sample_hz = 0, /* colocd's default trigger */
	.work = 0, /* 0: calibrate to about 1 s */
	.workload = "cpu",
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct worker {
	pthread_t thread;
	int cpu;
	unsigned long iters;
	int rfd, wfd; /* switch workload: read from rfd, write to wfd */
	bool serves; /* switch workload: the first of a pair sends, the second answers */
	volatile unsigned long sink;
};

static int cpus[CPU_SETSIZE], nr_cpus;

/* The CPUs this process may run on (not assumed to be 0..n-1). */
static void find_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		exit(1);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			cpus[nr_cpus++] = c;
}

static void pin_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *cpu_worker(void *arg)
{
	struct worker *w = arg;
	unsigned long x = 88172645463325252ul + (unsigned long)w->cpu;

	pin_to(w->cpu);
	for (unsigned long i = 0; i < w->iters; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	w->sink = x;
	return NULL;
}

static void *switch_worker(void *arg)
{
	struct worker *w = arg;
	char b = 0;

	pin_to(w->cpu);
	for (unsigned long i = 0; i < w->iters; i++) {
		if (!w->serves && write(w->wfd, &b, 1) != 1)
			break;
		if (read(w->rfd, &b, 1) != 1)
			break;
		if (w->serves && write(w->wfd, &b, 1) != 1)
			break;
	}
	return NULL;
}

/* Runs the workload once on every CPU; returns its wall time in seconds. */
static double run_workload(unsigned long iters)
{
	bool sw = !strcmp(opts.workload, "switch");
	int n = sw ? 2 * nr_cpus : nr_cpus;
	struct worker *w = calloc(n, sizeof(*w));
	double t0, t1;

	if (!w)
		exit(1);
	for (int i = 0; i < n; i++) {
		w[i].cpu = cpus[sw ? i / 2 : i];
		w[i].serves = sw && i % 2;
		w[i].iters = iters;
		w[i].rfd = w[i].wfd = -1;
	}
	if (sw) {
		/* pairs on one CPU: A writes to B, B answers A */
		for (int i = 0; i < n; i += 2) {
			int ab[2], ba[2];

			if (pipe(ab) || pipe(ba))
				exit(1);
			w[i].wfd = ab[1];
			w[i].rfd = ba[0];
			w[i + 1].rfd = ab[0];
			w[i + 1].wfd = ba[1];
		}
	}
	t0 = now_s();
	for (int i = 0; i < n; i++)
		pthread_create(&w[i].thread, NULL, sw ? switch_worker : cpu_worker, &w[i]);
	for (int i = 0; i < n; i++)
		pthread_join(w[i].thread, NULL);
	t1 = now_s();
	for (int i = 0; sw && i < n; i++) {
		close(w[i].rfd);
		close(w[i].wfd);
	}
	free(w);
	return t1 - t0;
}

static char log_path[64];

static pid_t start_colocd(const char *sock, const char *pin)
{
	char hz[16], cmd[128];
	pid_t pid;

	snprintf(hz, sizeof(hz), "%u", opts.sample_hz);
	fflush(stdout); /* or the child's copy of the buffer is printed again */
	pid = fork();
	if (pid == 0) {
		int fd = open(log_path, O_WRONLY | O_TRUNC | O_NOFOLLOW);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (opts.sample_hz)
			execl(opts.colocd, opts.colocd, "--socket", sock, "--pin-dir", pin,
			      "--sample-hz", hz, (char *)NULL);
		else
			execl(opts.colocd, opts.colocd, "--socket", sock, "--pin-dir", pin,
			      (char *)NULL);
		_exit(127);
	}
	/* ready when the socket accepts */
	for (int i = 0; pid > 0 && i < 200; i++) {
		struct sockaddr_un addr = { .sun_family = AF_UNIX };
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);

		snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sock);
		if (!connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
			close(fd);
			return pid;
		}
		close(fd);
		if (waitpid(pid, NULL, WNOHANG) == pid)
			break;
		usleep(20000);
	}
	fprintf(stderr, "coloc-bench-sensing: %s did not start; its output (%s):\n", opts.colocd,
		log_path);
	snprintf(cmd, sizeof(cmd), "cat %s >&2", log_path);
	if (system(cmd))
		exit(1);
	exit(1);
}

/* Prints colocd's line that says which trigger it samples on (a fallback says why). */
static void print_colocd_trigger(void)
{
	char line[1024];
	FILE *f = fopen(log_path, "r");

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "sampling on"))
			printf("%s", line);
	if (f)
		fclose(f);
}

static void stop_colocd(pid_t pid)
{
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: coloc-bench-sensing [--rounds N] [--sample-hz N] [--workload cpu|switch]\n"
		"                           [--work ITERS] [--colocd PATH] [--version]\n"
		"Times a fixed workload on every CPU with colocd sampling and without, alternated,\n"
		"and prints the ratio of the medians (on / off). Runs as root (it starts colocd).\n"
		"  --rounds N      off/on pairs (default %u)\n"
		"  --sample-hz N   colocd samples on a timer at N Hz (default: its own default,\n"
		"                  the scheduler tick)\n"
		"  --workload W    cpu: compute-bound (default); switch: pipe ping-pong\n"
		"  --work ITERS    iterations per thread (default: calibrated to ~1 s)\n"
		"  --colocd PATH   the daemon (default: colocd next to this program)\n"
		"  --version       print the version and exit\n",
		opts.rounds);
}

int main(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "sample-hz", required_argument, NULL, 'z' },
		{ "workload", required_argument, NULL, 'W' },
		{ "work", required_argument, NULL, 'k' },
		{ "colocd", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{},
	};
	char self[4096], colocd[4200], sock[64], pin[64], hz[32];
	int opt, log_fd;
	double *off, *on, *ratio;
	long v;
	ssize_t len;

	while ((opt = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'r':
			if (cli_parse_flag("coloc-bench-sensing", "--rounds", optarg, 1, 1000, &v))
				return 2;
			opts.rounds = (unsigned int)v;
			break;
		case 'z':
			if (cli_parse_flag("coloc-bench-sensing", "--sample-hz", optarg, 1, 100000,
					   &v))
				return 2;
			opts.sample_hz = (unsigned int)v;
			break;
		case 'W':
			if (strcmp(optarg, "cpu") && strcmp(optarg, "switch")) {
				fprintf(stderr,
					"coloc-bench-sensing: --workload is cpu or switch\n");
				return 2;
			}
			opts.workload = optarg;
			break;
		case 'k':
			if (cli_parse_flag("coloc-bench-sensing", "--work", optarg, 1, 1l << 40,
					   &v))
				return 2;
			opts.work = (unsigned long)v;
			break;
		case 'c':
			opts.colocd = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			cli_print_version("coloc-bench-sensing");
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (geteuid() != 0) {
		fprintf(stderr, "coloc-bench-sensing: run as root (it starts colocd)\n");
		return 1;
	}
	if (!opts.colocd) {
		len = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (len <= 0)
			return 1;
		self[len] = '\0';
		*strrchr(self, '/') = '\0';
		snprintf(colocd, sizeof(colocd), "%s/colocd", self);
		opts.colocd = colocd;
	}
	find_cpus();
	/* colocd's log: a new file of a name no one else can guess, reopened for each run */
	snprintf(log_path, sizeof(log_path), "/tmp/coloc-bench-XXXXXX.log");
	log_fd = mkostemps(log_path, 4, O_CLOEXEC);
	if (log_fd < 0) {
		perror("coloc-bench-sensing: a log file in /tmp");
		return 1;
	}
	close(log_fd);
	snprintf(sock, sizeof(sock), "/tmp/coloc-bench-%d.sock", getpid());
	snprintf(pin, sizeof(pin), "/sys/fs/bpf/coloc-bench-%d", getpid());

	if (!opts.work) {
		unsigned long probe = strcmp(opts.workload, "switch") ? 100000000ul : 20000ul;
		double t = run_workload(probe);

		opts.work = (unsigned long)(probe / (t > 1e-6 ? t : 1e-6));
	}
	if (opts.sample_hz)
		snprintf(hz, sizeof(hz), "a %u Hz timer", opts.sample_hz);
	else
		snprintf(hz, sizeof(hz), "its default trigger");
	printf("coloc-bench-sensing: workload %s, %d CPUs, %lu iterations per thread, colocd sampling on %s, %u rounds\n",
	       opts.workload, nr_cpus, opts.work, hz, opts.rounds);
	off = calloc(opts.rounds, sizeof(double));
	on = calloc(opts.rounds, sizeof(double));
	ratio = calloc(opts.rounds, sizeof(double));
	if (!off || !on || !ratio)
		return 1;
	run_workload(opts.work / 4); /* warm up */
	printf("%6s %10s %10s %8s\n", "round", "off (s)", "on (s)", "on/off");
	for (unsigned int r = 0; r < opts.rounds; r++) {
		pid_t pid;

		/* alternate which goes first, so neither always follows the other */
		if (r % 2 == 0)
			off[r] = run_workload(opts.work);
		pid = start_colocd(sock, pin);
		on[r] = run_workload(opts.work);
		if (r == 0)
			print_colocd_trigger();
		stop_colocd(pid);
		if (r % 2 == 1)
			off[r] = run_workload(opts.work);
		ratio[r] = on[r] / off[r];
		printf("%6u %10.4f %10.4f %8.4f\n", r + 1, off[r], on[r], ratio[r]);
		fflush(stdout);
	}
	{
		double m_ratio = median(ratio, opts.rounds);
		double m_off = median(off, opts.rounds), m_on = median(on, opts.rounds);

		printf("median: off %.4f s, on %.4f s; ratio of medians %.4f; median of ratios %.4f (goal <= 1.005)\n",
		       m_off, m_on, m_on / m_off, m_ratio);
	}
	free(off);
	free(on);
	free(ratio);
	unlink(log_path);
	return 0;
}
