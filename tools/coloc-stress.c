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
 * thread thrashes for level% of each period and, for the rest, sleeps or
 * (--fill spin) spins on registers only, touching no memory: level 0 with
 * --fill spin keeps the cores as busy as level 100 (same power state, no
 * vCPU halt) without contending for anything a neighbour uses, which is
 * what a profile's "alone" column is measured next to. With --control the
 * level is read from stdin, one number per line, and acknowledged on stdout
 * ("level N") once set, so coloc-profile alternates levels without
 * restarting the stressor. At exit (duration elapsed, SIGINT, SIGTERM, or
 * EOF on stdin with --control) it prints the rate each thread achieved over
 * the run's wall time, with --control the rate at each level, and last
 * "total: X GB/s".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
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
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "coloc/limits.h"
#include "cpulist.h"
#include "topology.h"
#include "mono_clock.h"

#define STRESS_PERIOD_NS 1000000ULL
#define STRESS_LINE 64
#define STRESS_LLC_FALLBACK (32ULL << 20)

enum stress_kind {
	STRESS_LLC,
	STRESS_MEMBW,
};

/* What a thread does for the part of each period it does not thrash. */
enum stress_fill {
	STRESS_FILL_SLEEP,
	STRESS_FILL_SPIN,
};

#define STRESS_NR_LEVELS 101

static struct {
	enum stress_kind kind;
	int level; /* percent of each period spent thrashing */
	double duration_s; /* 0: until SIGINT/SIGTERM */
	long buffer_mb; /* 0: sized from the LLC */
	const char *cores; /* NULL: every CPU this process may run on */
	enum stress_fill fill;
	bool control; /* levels from stdin */
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
	uint64_t level_bytes[STRESS_NR_LEVELS]; /* bytes_moved by the level it was moved at */
};

static atomic_bool stress_stop;
static atomic_int stress_level; /* opt.level, or the last one read with --control */

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
		"  -f, --fill sleep|spin  what the rest of each period does: sleep, or spin\n"
		"                         on registers touching no memory, so level 0 keeps\n"
		"                         the cores busy without interference (default: sleep)\n"
		"      --control          read levels from stdin, one 0..100 per line, and\n"
		"                         answer \"level N\" on stdout once each is set; EOF\n"
		"                         stops; the report then gives the rate per level\n"
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

static bool stopping(void)
{
	return atomic_load_explicit(&stress_stop, memory_order_relaxed);
}

/* Keeps the core busy until t on registers alone: no load or store reaches the caches. */
static void spin_until_ns(uint64_t t)
{
	uint64_t x = t | 1;

	while (coloc_now_ns() < t && !stopping())
		for (int i = 0; i < 256; i++)
			__asm__ volatile("" : "+r"(x) : "r"(xorshift64(&x)));
}

static void *stress_thread_main(void *arg)
{
	struct stress_thread *t = arg;
	uint64_t rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(t->index + 1);
	uint64_t period_start = coloc_now_ns();
	size_t pos = 0;

	while (!stopping()) {
		int level = atomic_load_explicit(&stress_level, memory_order_relaxed);
		uint64_t busy_until = period_start + STRESS_PERIOD_NS * (uint64_t)level / 100;
		uint64_t moved = t->bytes_moved;

		/* Level 100 runs a period at a time too, so a new level is seen within 1 ms. */
		while (level && coloc_now_ns() < busy_until && !stopping()) {
			if (opt.kind == STRESS_LLC)
				llc_burst(t, &rng, 256);
			else
				membw_burst(t, &pos, 2048);
		}
		t->level_bytes[level] += t->bytes_moved - moved;
		period_start += STRESS_PERIOD_NS;
		/* Fell behind (preempted): restart the schedule rather than burst to catch up. */
		if (period_start < coloc_now_ns())
			period_start = coloc_now_ns();
		if (level == 100)
			continue;
		if (opt.fill == STRESS_FILL_SPIN)
			spin_until_ns(period_start);
		else
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
	uint64_t deadline = coloc_now_ns() + (uint64_t)(opt.duration_s * 1e9);

	for (;;) {
		struct timespec ts;
		uint64_t left;
		int sig;

		if (opt.duration_s <= 0) {
			if (sigwait(sigs, &sig) == 0)
				return;
			continue;
		}
		left = deadline > coloc_now_ns() ? deadline - coloc_now_ns() : 0;
		if (!left)
			return;
		ts.tv_sec = (time_t)(left / 1000000000ULL);
		ts.tv_nsec = (long)(left % 1000000000ULL);
		sig = sigtimedwait(sigs, NULL, &ts);
		if (sig > 0 || (sig < 0 && errno == EAGAIN))
			return;
	}
}

/*
 * --control: sets each level read from stdin and acknowledges it, until EOF,
 * the duration or a signal (taken through sigfd). Returns 0, or -EINVAL on a
 * line that is not a level. level_ns[] gets the time spent at each level.
 */
static int control_levels(int sigfd, uint64_t *level_ns)
{
	uint64_t deadline = coloc_now_ns() + (uint64_t)(opt.duration_s * 1e9), since = coloc_now_ns();
	char buf[256];
	size_t len = 0;
	int ret = 0;

	for (;;) {
		struct pollfd fds[2] = { { .fd = STDIN_FILENO, .events = POLLIN },
					 { .fd = sigfd, .events = POLLIN } };
		int timeout = -1;
		char *nl;
		ssize_t n;

		if (opt.duration_s > 0) {
			if (coloc_now_ns() >= deadline)
				break;
			timeout = (int)((deadline - coloc_now_ns()) / 1000000 + 1);
		}
		if (poll(fds, 2, timeout) < 0 && errno != EINTR) {
			ret = -errno;
			break;
		}
		if (fds[1].revents)
			break;
		if (!fds[0].revents)
			continue;
		n = read(STDIN_FILENO, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
		while ((nl = strchr(buf, '\n'))) {
			long v;

			*nl = '\0';
			if (cli_parse_long(buf, 0, 100, &v)) {
				fprintf(stderr,
					"coloc-stress: --control: '%.40s' is not a level 0..100\n",
					buf);
				ret = -EINVAL;
				goto out;
			}
			level_ns[atomic_load(&stress_level)] += coloc_now_ns() - since;
			since = coloc_now_ns();
			atomic_store(&stress_level, (int)v);
			printf("level %ld\n", v);
			fflush(stdout);
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len + 1);
		}
		if (len == sizeof(buf) - 1) {
			fprintf(stderr, "coloc-stress: --control: line too long\n");
			ret = -EINVAL;
			break;
		}
	}
out:
	level_ns[atomic_load(&stress_level)] += coloc_now_ns() - since;
	return ret;
}

/* With --control: the rate achieved at each level that ran, over the time it ran. */
static void print_level_report(const struct stress_thread *threads, int nr,
			       const uint64_t *level_ns)
{
	for (int l = 0; l < STRESS_NR_LEVELS; l++) {
		uint64_t bytes = 0;

		if (!level_ns[l])
			continue;
		for (int i = 0; i < nr; i++)
			bytes += threads[i].level_bytes[l];
		printf("level %d: %.3f GB/s over %.2f s\n", l,
		       (double)bytes / ((double)level_ns[l] / 1e9) / 1e9,
		       (double)level_ns[l] / 1e9);
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

/* The line that says what runs: kind, level, cores, LLC, fill and buffer. */
static void print_setup(const int *cpus, int nr_cpus, uint64_t llc, uint64_t buffer_bytes,
			bool buffer_needed, bool threads_run)
{
	const char *buffer_how = "2 x LLC, shared, random lines";

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
	printf(" fill=%s%s", opt.fill == STRESS_FILL_SPIN ? "spin" : "sleep",
	       opt.control ? " control=stdin" : "");
	if (buffer_needed)
		printf(" buffer=%.1f MiB (%s)\n", (double)buffer_bytes / (1 << 20), buffer_how);
	else if (threads_run)
		printf(" buffer=none (level 0 spins touching no memory)\n");
	else
		printf(" buffer=none (level 0 is idle)\n");
	fflush(stdout);
}

/*
 * Maps the buffer and faults it in, each thread its slice from its own CPU,
 * then gives each thread its part: the whole buffer for llc, its slice for
 * membw. 0, or -1 with the reason printed; *bufp is then MAP_FAILED or the
 * mapping, which the caller unmaps.
 */
static int map_buffer(struct stress_thread *threads, int nr_cpus, uint64_t buffer_bytes,
		      uint8_t **bufp)
{
	uint64_t slice = buffer_bytes / (uint64_t)nr_cpus / STRESS_LINE * STRESS_LINE;
	uint8_t *buf;
	int started, ret = 0;

	buf = *bufp = mmap(NULL, buffer_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0);
	if (buf == MAP_FAILED) {
		fprintf(stderr, "coloc-stress: cannot map a %.1f MiB buffer: %s\n",
			(double)buffer_bytes / (1 << 20), strerror(errno));
		return -1;
	}
	/* Huge pages: faster to fault in, and TLB misses would throttle the cache misses. */
	madvise(buf, buffer_bytes, MADV_HUGEPAGE);
	for (int i = 0; i < nr_cpus; i++) {
		threads[i].base = buf + (uint64_t)i * slice;
		threads[i].bytes = slice;
	}
	for (started = 0; started < nr_cpus; started++) {
		int err = start_pinned(&threads[started], prefault_thread_main);

		if (err) {
			fprintf(stderr, "coloc-stress: cannot start a thread on CPU %d: %s\n",
				threads[started].cpu, strerror(-err));
			ret = -1;
			break;
		}
	}
	for (int i = 0; i < started; i++)
		pthread_join(threads[i].tid, NULL);
	if (!ret && opt.kind == STRESS_LLC) {
		for (int i = 0; i < nr_cpus; i++) {
			threads[i].base = buf;
			threads[i].bytes = buffer_bytes / STRESS_LINE * STRESS_LINE;
		}
	}
	return ret;
}

/* Runs the load on cpus until the duration, a signal or (--control) EOF: main's exit status. */
static int stress_run(const int *cpus, int nr_cpus)
{
	static uint64_t level_ns[STRESS_NR_LEVELS];
	struct topology *topo;
	struct stress_thread *threads = NULL;
	uint64_t llc = 0, buffer_bytes = 0, t0;
	sigset_t sigs;
	uint8_t *buf = MAP_FAILED;
	int ret = 1, started = 0, sigfd = -1;
	bool threads_run, buffer_needed;

	/* Signals are taken synchronously by the main thread; workers inherit the mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	atomic_store(&stress_level, opt.level);
	/* Idle level 0 (sleep fill, fixed level) needs neither threads nor a buffer. */
	buffer_needed = opt.level > 0 || opt.control;
	threads_run = buffer_needed || opt.fill == STRESS_FILL_SPIN;

	if (!topology_open(NULL, &topo, NULL)) {
		llc = topology_llc_bytes(topo);
		topology_close(topo);
	}
	if (opt.buffer_mb)
		buffer_bytes = (uint64_t)opt.buffer_mb << 20;
	else
		buffer_bytes = (llc ? llc : STRESS_LLC_FALLBACK) * (opt.kind == STRESS_LLC ? 2 : 4);

	print_setup(cpus, nr_cpus, llc, buffer_bytes, buffer_needed, threads_run);

	threads = calloc((size_t)nr_cpus, sizeof(*threads));
	if (!threads) {
		fprintf(stderr, "coloc-stress: out of memory\n");
		goto cleanup;
	}
	if (opt.kind == STRESS_MEMBW && buffer_bytes / (uint64_t)nr_cpus < STRESS_LINE) {
		fprintf(stderr, "coloc-stress: buffer too small for %d threads\n", nr_cpus);
		goto cleanup;
	}

	if (buffer_needed && buffer_bytes > (uint64_t)sysconf(_SC_PHYS_PAGES) / 10 * 9 *
						    (uint64_t)sysconf(_SC_PAGESIZE)) {
		fprintf(stderr,
			"coloc-stress: a %.1f MiB buffer is more than 90%% of this machine's memory; use --buffer-mb\n",
			(double)buffer_bytes / (1 << 20));
		goto cleanup;
	}
	for (int i = 0; i < nr_cpus; i++) {
		threads[i].cpu = cpus[i];
		threads[i].index = i;
	}
	if (buffer_needed && map_buffer(threads, nr_cpus, buffer_bytes, &buf))
		goto cleanup;
	t0 = coloc_now_ns();
	for (started = 0; threads_run && started < nr_cpus; started++) {
		int err = start_pinned(&threads[started], stress_thread_main);

		if (err) {
			fprintf(stderr, "coloc-stress: cannot start a thread on CPU %d: %s\n",
				threads[started].cpu, strerror(-err));
			goto join;
		}
	}
	announce_running();
	if (opt.control) {
		sigfd = signalfd(-1, &sigs, SFD_CLOEXEC);
		if (sigfd < 0) {
			fprintf(stderr, "coloc-stress: signalfd: %s\n", strerror(errno));
			goto join;
		}
		if (control_levels(sigfd, level_ns))
			goto join;
	} else {
		wait_for_end(&sigs);
	}
	ret = 0;
join:
	atomic_store(&stress_stop, true);
	for (int i = 0; i < started; i++)
		pthread_join(threads[i].tid, NULL);
	if (!ret && opt.control)
		print_level_report(threads, nr_cpus, level_ns);
	if (!ret)
		print_report(threads, nr_cpus, (double)(coloc_now_ns() - t0) / 1e9);
	if (sigfd >= 0)
		close(sigfd);
cleanup:
	if (buf != MAP_FAILED)
		munmap(buf, buffer_bytes);
	free(threads);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cores", required_argument, NULL, 'c' },
		{ "kind", required_argument, NULL, 'k' },
		{ "level", required_argument, NULL, 'l' },
		{ "duration", required_argument, NULL, 'd' },
		{ "buffer-mb", required_argument, NULL, 'b' },
		{ "fill", required_argument, NULL, 'f' },
		{ "control", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	static int cpus[COLOC_MAX_CPUS];
	struct coloc_err err = { 0 };
	cpu_set_t allowed;
	int nr_cpus = 0, c;
	long v;

	if (sched_getaffinity(0, sizeof(allowed), &allowed)) {
		perror("coloc-stress: sched_getaffinity");
		return 1;
	}
	while ((c = getopt_long(argc, argv, "c:k:l:d:b:f:hV", longopts, NULL)) != -1) {
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
		case 'd':
			if (cli_parse_double(optarg, 0, 86400 * 365, &opt.duration_s) ||
			    opt.duration_s <= 0) {
				fprintf(stderr,
					"coloc-stress: --duration must be seconds > 0 (up to a year), not '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'b':
			if (cli_parse_flag("coloc-stress", "--buffer-mb", optarg, 1, 1L << 20, &v))
				return 2;
			opt.buffer_mb = v;
			break;
		case 'f':
			if (!strcmp(optarg, "sleep")) {
				opt.fill = STRESS_FILL_SLEEP;
			} else if (!strcmp(optarg, "spin")) {
				opt.fill = STRESS_FILL_SPIN;
			} else {
				fprintf(stderr,
					"coloc-stress: --fill must be sleep or spin, not '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'C':
			opt.control = true;
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

	return stress_run(cpus, nr_cpus);
}
