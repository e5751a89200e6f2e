// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-stress: a tunable background tenant that contends for the shared
 * last-level cache or for memory bandwidth, so the profiler (coloc-profile)
 * can measure how much each layer slows down under interference and tests can
 * create interference on demand.
 *
 * One thread per listed core, pinned there. "llc" does random read-modify-
 * writes of whole cache lines over a buffer twice the LLC size found by
 * hwloc, so nearly every access misses and evicts a line another tenant may
 * need; "membw" streams reads and writes through a buffer four times the LLC,
 * one slice per thread. The level is a duty cycle over a 1 ms period: the
 * thread thrashes for level% of each period and sleeps for the rest, so level
 * 0 costs nothing and level 100 never sleeps. At exit (duration elapsed,
 * SIGINT or SIGTERM) it prints the rate each thread achieved over the run's
 * wall time; the last line, "total: X GB/s", is what coloc-profile records.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "coloc/limits.h"
#include "cpulist.h"
#include "topology.h"

#define STRESS_PERIOD_NS 1000000ULL
#define STRESS_LINE 64
#define STRESS_LLC_FALLBACK (32ULL << 20)

enum stress_kind {
	STRESS_LLC,
	STRESS_MEMBW,
};

static struct {
	enum stress_kind kind;
	int level; /* percent of each period spent thrashing */
	double duration_s; /* 0: until SIGINT/SIGTERM */
	long buffer_mb; /* 0: sized from the LLC */
	const char *cores; /* NULL: every CPU this process may run on */
} opt = {
	.kind = STRESS_LLC,
	.level = 100,
	.duration_s = 0,
	.buffer_mb = 0,
	.cores = NULL,
};

struct stress_thread {
	pthread_t tid;
	int cpu;
	int index;
	uint8_t *base; /* llc: the whole shared buffer; membw: this thread's slice */
	size_t bytes;
	uint64_t accesses; /* cache lines touched (llc) or 8-byte words streamed (membw) */
	uint64_t bytes_moved;
};

static atomic_bool stress_stop;

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s [OPTIONS]\n"
		"Loads the shared last-level cache or memory bandwidth from one pinned thread per\n"
		"core, so that other tenants on the machine run under measurable interference.\n"
		"\n"
		"  -c, --cores LIST       CPUs to load, e.g. 0,2-3 (default: all CPUs allowed)\n"
		"  -k, --kind llc|membw   llc: random line updates over 2 x LLC size;\n"
		"                         membw: streaming reads+writes over 4 x LLC size\n"
		"                         (default: llc)\n"
		"  -l, --level 0..100     percent of each 1 ms period spent thrashing; the rest\n"
		"                         sleeps (0: idle, 100: never sleeps; default: 100)\n"
		"  -d, --duration SEC     stop after SEC seconds, fractions allowed\n"
		"                         (default: run until SIGINT or SIGTERM)\n"
		"  -b, --buffer-mb N      buffer size in MiB instead of the LLC-derived size\n"
		"                         (in a VM hwloc may report the host's LLC, making\n"
		"                         the default buffer hundreds of MiB)\n"
		"  -h, --help             show this help\n"
		"  -V, --version          print the version\n"
		"\n"
		"At exit it prints the access rate and bandwidth each thread achieved over the\n"
		"run, then \"total: X GB/s\". Exit status: 0 ok, 1 runtime error, 2 bad usage.\n"
		"Example: %s --cores 1 --kind membw --level 60 --duration 10\n",
		prog, prog);
}

/* --cores: distinct CPUs, each one this process may run on. The count, or -errno and err. */
static int parse_cores(const char *list, const cpu_set_t *allowed, int *cpus, struct coloc_err *err)
{
	int nr = cpulist_parse(list, 0, cpus, COLOC_MAX_CPUS, err);

	for (int i = 0; i < nr; i++)
		if (!CPU_ISSET(cpus[i], allowed))
			return coloc_err_set(
				err, -EINVAL,
				"CPU %d is not one this process may use (it may use %d)", cpus[i],
				CPU_COUNT(allowed));
	return nr;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void sleep_until_ns(uint64_t t)
{
	struct timespec ts = { .tv_sec = (time_t)(t / 1000000000ULL),
			       .tv_nsec = (long)(t % 1000000000ULL) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static inline uint64_t xorshift64(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

/* One burst of random line updates; the multiply maps a random word onto [0, lines). */
static void llc_burst(struct stress_thread *t, uint64_t *rng, int n)
{
	uint64_t lines = t->bytes / STRESS_LINE;

	for (int i = 0; i < n; i++) {
		uint64_t line = (uint64_t)(((unsigned __int128)xorshift64(rng) * lines) >> 64);

		uint64_t *word = (uint64_t *)(t->base + line * STRESS_LINE);

		/* Threads share lines on purpose; relaxed atomics keep that defined, and plain movs. */
		__atomic_store_n(word, __atomic_load_n(word, __ATOMIC_RELAXED) + 1,
				 __ATOMIC_RELAXED);
	}
	t->accesses += (uint64_t)n;
	t->bytes_moved += (uint64_t)n * STRESS_LINE;
}

/* One chunk of the stream; reads and writes every word, which the compiler vectorises. */
static void membw_burst(struct stress_thread *t, size_t *pos, size_t chunk_words)
{
	uint64_t *w = (uint64_t *)t->base;
	size_t words = t->bytes / sizeof(uint64_t);
	size_t end = *pos + chunk_words < words ? *pos + chunk_words : words;

	for (size_t i = *pos; i < end; i++)
		w[i] += i;
	t->accesses += end - *pos;
	t->bytes_moved += (end - *pos) * 2 * sizeof(uint64_t);
	*pos = end == words ? 0 : end;
}

static void *stress_thread_main(void *arg)
{
	struct stress_thread *t = arg;
	uint64_t duty_ns = STRESS_PERIOD_NS * (uint64_t)opt.level / 100;
	uint64_t rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(t->index + 1);
	uint64_t period_start = now_ns();
	size_t pos = 0;

	while (!atomic_load_explicit(&stress_stop, memory_order_relaxed)) {
		uint64_t busy_until = period_start + duty_ns;

		do {
			if (opt.kind == STRESS_LLC)
				llc_burst(t, &rng, 256);
			else
				membw_burst(t, &pos, 2048);
		} while ((opt.level == 100 || now_ns() < busy_until) &&
			 !atomic_load_explicit(&stress_stop, memory_order_relaxed));

		if (opt.level == 100)
			continue;
		period_start += STRESS_PERIOD_NS;
		/* Fell behind (preempted): restart the schedule rather than burst to catch up. */
		if (period_start < now_ns())
			period_start = now_ns();
		sleep_until_ns(period_start);
	}
	return NULL;
}

/* Faults the buffer in from each thread's own core, so its pages sit near their user. */
static void *prefault_thread_main(void *arg)
{
	struct stress_thread *t = arg;
	long page = sysconf(_SC_PAGESIZE);

	for (size_t off = 0; off < t->bytes; off += (size_t)page)
		t->base[off] = 1;
	return NULL;
}

static int start_pinned(struct stress_thread *t, void *(*fn)(void *))
{
	pthread_attr_t attr;
	cpu_set_t set;
	int err;

	CPU_ZERO(&set);
	CPU_SET(t->cpu, &set);
	pthread_attr_init(&attr);
	err = pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	if (!err)
		err = pthread_create(&t->tid, &attr, fn, t);
	pthread_attr_destroy(&attr);
	return -err;
}

/* Waits for the duration or a termination signal (blocked in every thread, taken here). */
static void wait_for_end(const sigset_t *sigs)
{
	uint64_t deadline = now_ns() + (uint64_t)(opt.duration_s * 1e9);

	for (;;) {
		struct timespec ts;
		uint64_t left;
		int sig;

		if (opt.duration_s <= 0) {
			if (sigwait(sigs, &sig) == 0)
				return;
			continue;
		}
		left = deadline > now_ns() ? deadline - now_ns() : 0;
		if (!left)
			return;
		ts.tv_sec = (time_t)(left / 1000000000ULL);
		ts.tv_nsec = (long)(left % 1000000000ULL);
		sig = sigtimedwait(sigs, NULL, &ts);
		if (sig > 0 || (sig < 0 && errno == EAGAIN))
			return;
	}
}

static void print_report(const struct stress_thread *threads, int nr, double wall_s)
{
	double total_gbps = 0;

	for (int i = 0; i < nr; i++) {
		const struct stress_thread *t = &threads[i];
		double gbps = wall_s > 0 ? (double)t->bytes_moved / wall_s / 1e9 : 0;
		double mps = wall_s > 0 ? (double)t->accesses / wall_s / 1e6 : 0;

		printf("thread %d cpu %d: %llu %s, %.2f M/s, %.3f GB/s over %.2f s\n", i, t->cpu,
		       (unsigned long long)t->accesses,
		       opt.kind == STRESS_LLC ? "line updates" : "words streamed", mps, gbps,
		       wall_s);
		total_gbps += gbps;
	}
	printf("total: %.3f GB/s\n", total_gbps);
	fflush(stdout);
}

/* Printed once the load is on (buffer faulted in, threads started): coloc-profile waits for it. */
static void announce_running(void)
{
	if (opt.duration_s > 0)
		printf("coloc-stress: running for %.2f s\n", opt.duration_s);
	else
		printf("coloc-stress: running until SIGINT or SIGTERM\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cores", required_argument, NULL, 'c' },
		{ "kind", required_argument, NULL, 'k' },
		{ "level", required_argument, NULL, 'l' },
		{ "duration", required_argument, NULL, 'd' },
		{ "buffer-mb", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	static int cpus[COLOC_MAX_CPUS];
	struct coloc_err err = { 0 };
	struct topology *topo;
	struct stress_thread *threads = NULL;
	uint64_t llc = 0, buffer_bytes = 0, t0;
	cpu_set_t allowed;
	sigset_t sigs;
	uint8_t *buf = MAP_FAILED;
	const char *buffer_how = "2 x LLC, shared, random lines";
	int nr_cpus = 0, c, ret = 1, started = 0;
	long v;

	if (sched_getaffinity(0, sizeof(allowed), &allowed)) {
		perror("coloc-stress: sched_getaffinity");
		return 1;
	}
	while ((c = getopt_long(argc, argv, "c:k:l:d:b:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			opt.cores = optarg;
			break;
		case 'k':
			if (!strcmp(optarg, "llc")) {
				opt.kind = STRESS_LLC;
			} else if (!strcmp(optarg, "membw")) {
				opt.kind = STRESS_MEMBW;
			} else {
				fprintf(stderr,
					"coloc-stress: --kind must be llc or membw, not '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'l':
			if (cli_parse_flag("coloc-stress", "--level", optarg, 0, 100, &v))
				return 2;
			opt.level = (int)v;
			break;
		case 'd': {
			char *end;

			errno = 0;
			opt.duration_s = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(opt.duration_s) ||
			    opt.duration_s <= 0 || opt.duration_s > 86400 * 365) {
				fprintf(stderr,
					"coloc-stress: --duration must be seconds > 0 (up to a year), not '%s'\n",
					optarg);
				return 2;
			}
			break;
		}
		case 'b':
			if (cli_parse_flag("coloc-stress", "--buffer-mb", optarg, 1, 1L << 20, &v))
				return 2;
			opt.buffer_mb = v;
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		case 'V':
			cli_print_version("coloc-stress");
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "coloc-stress: unexpected argument '%s' (see --help)\n",
			argv[optind]);
		return 2;
	}

	if (opt.cores) {
		nr_cpus = parse_cores(opt.cores, &allowed, cpus, &err);
		if (nr_cpus < 0) {
			fprintf(stderr, "coloc-stress: --cores: %s\n", coloc_err_str(&err));
			return 2;
		}
	} else {
		for (int cpu = 0; cpu < COLOC_MAX_CPUS && cpu < CPU_SETSIZE; cpu++)
			if (CPU_ISSET(cpu, &allowed))
				cpus[nr_cpus++] = cpu;
	}

	/* Signals are taken synchronously by the main thread; workers inherit the mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	if (!topology_open(NULL, &topo, NULL)) {
		llc = topology_llc_bytes(topo);
		topology_close(topo);
	}
	if (opt.buffer_mb)
		buffer_bytes = (uint64_t)opt.buffer_mb << 20;
	else
		buffer_bytes = (llc ? llc : STRESS_LLC_FALLBACK) * (opt.kind == STRESS_LLC ? 2 : 4);

	printf("coloc-stress: kind=%s level=%d%% period=%llu us cores=",
	       opt.kind == STRESS_LLC ? "llc" : "membw", opt.level, STRESS_PERIOD_NS / 1000);
	for (int i = 0; i < nr_cpus; i++)
		printf("%s%d", i ? "," : "", cpus[i]);
	if (llc)
		printf(" llc=%.1f MiB (hwloc)", (double)llc / (1 << 20));
	else
		printf(" llc=unknown (hwloc found none; assuming %.1f MiB)",
		       (double)STRESS_LLC_FALLBACK / (1 << 20));
	if (opt.buffer_mb)
		buffer_how = "--buffer-mb";
	else if (opt.kind == STRESS_MEMBW)
		buffer_how = "4 x LLC, one slice per thread, streamed";
	if (opt.level > 0)
		printf(" buffer=%.1f MiB (%s)\n", (double)buffer_bytes / (1 << 20), buffer_how);
	else
		printf(" buffer=none (level 0 is idle)\n");
	fflush(stdout);

	threads = calloc((size_t)nr_cpus, sizeof(*threads));
	if (!threads) {
		fprintf(stderr, "coloc-stress: out of memory\n");
		goto cleanup;
	}
	if (opt.kind == STRESS_MEMBW && buffer_bytes / (uint64_t)nr_cpus < STRESS_LINE) {
		fprintf(stderr, "coloc-stress: buffer too small for %d threads\n", nr_cpus);
		goto cleanup;
	}

	if (opt.level > 0 && buffer_bytes > (uint64_t)sysconf(_SC_PHYS_PAGES) / 10 * 9 *
						    (uint64_t)sysconf(_SC_PAGESIZE)) {
		fprintf(stderr,
			"coloc-stress: a %.1f MiB buffer is more than 90%% of this machine's memory; use --buffer-mb\n",
			(double)buffer_bytes / (1 << 20));
		goto cleanup;
	}
	t0 = now_ns();
	if (opt.level > 0) {
		buf = mmap(NULL, buffer_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0);
		if (buf == MAP_FAILED) {
			fprintf(stderr, "coloc-stress: cannot map a %.1f MiB buffer: %s\n",
				(double)buffer_bytes / (1 << 20), strerror(errno));
			goto cleanup;
		}
		/* Huge pages: faster to fault in, and TLB misses would throttle the cache misses. */
		madvise(buf, buffer_bytes, MADV_HUGEPAGE);
		for (int i = 0; i < nr_cpus; i++) {
			struct stress_thread *t = &threads[i];
			uint64_t slice =
				buffer_bytes / (uint64_t)nr_cpus / STRESS_LINE * STRESS_LINE;

			t->cpu = cpus[i];
			t->index = i;
			t->base = buf + (uint64_t)i * slice;
			t->bytes = slice;
		}
		for (started = 0; started < nr_cpus; started++) {
			int err = start_pinned(&threads[started], prefault_thread_main);

			if (err) {
				fprintf(stderr,
					"coloc-stress: cannot start a thread on CPU %d: %s\n",
					threads[started].cpu, strerror(-err));
				goto join;
			}
		}
		for (int i = 0; i < started; i++)
			pthread_join(threads[i].tid, NULL);
		started = 0;
		if (opt.kind == STRESS_LLC) {
			for (int i = 0; i < nr_cpus; i++) {
				threads[i].base = buf;
				threads[i].bytes = buffer_bytes / STRESS_LINE * STRESS_LINE;
			}
		}
		t0 = now_ns();
		for (started = 0; started < nr_cpus; started++) {
			int err = start_pinned(&threads[started], stress_thread_main);

			if (err) {
				fprintf(stderr,
					"coloc-stress: cannot start a thread on CPU %d: %s\n",
					threads[started].cpu, strerror(-err));
				goto join;
			}
		}
	} else {
		for (int i = 0; i < nr_cpus; i++)
			threads[i].cpu = cpus[i];
	}
	announce_running();
	wait_for_end(&sigs);
	ret = 0;
join:
	atomic_store(&stress_stop, true);
	for (int i = 0; i < started; i++)
		pthread_join(threads[i].tid, NULL);
	if (!ret)
		print_report(threads, nr_cpus, (double)(now_ns() - t0) / 1e9);
cleanup:
	if (buf != MAP_FAILED)
		munmap(buf, buffer_bytes);
	free(threads);
	return ret;
}
