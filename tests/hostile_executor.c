// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A compromised executor, for the tests of colocd's distrust of what an
 * executor writes (docs/security-executor.md). Started the way colocd starts
 * bin/coloc-executor (--shm-fd 3 --done-fd 4 --model-fd N ..., $COLOC_TENANT), it
 * maps the shared memory, describes MODEL truthfully and sets READY, then
 * misbehaves as its tenant's name says (the versions it reports at READY
 * are the ones coloc-executor builds for the model on its --cores, built
 * in a child process that exits, so that the modes' memory is what they
 * touch themselves, unless the mode lies about them, below):
 *
 *   hostile-flags    makes the doorbell blocking (F_SETFL 0 on its fd), then
 *                    refuses every command, correctly: colocd must not hang
 *   hostile-silent   never takes a command
 *   hostile-hang     takes its first block (started) and never ends it,
 *                    SIGTERM ignored: hung mid-block
 *   hostile-stall    takes its first block (started) and stalls in it until
 *                    SIGUSR1 (below the hang limit, if the test sends it in
 *                    time), then completes it and every later one OK at
 *                    once, as an honest executor would (the outputs zero)
 *   hostile-times    completes every block OK with times out of bounds:
 *                    ~2^64, 0, 2^63 in turn (the outputs stay zero)
 *   hostile-header   rewrites the header (sizes, layers) at the first command
 *   hostile-status   completes with status 77
 *   hostile-reason   fails a block with a reason without its NUL
 *   hostile-echo     completes another slot and query than the command's
 *   hostile-boundary completes every block OK, saying it stopped one layer
 *                    before the command's last: at no boundary of its plan
 *   hostile-unsent   completes the command after the one colocd sent
 *   hostile-twice    refuses the first command, then rewrites that completion
 *   hostile-flood    rings the doorbell without end, completing nothing
 *   hostile-hangup   closes its end of the doorbell and keeps running
 *   hostile-chatter  writes 1000 lines to stderr and stdout (escape bytes, a
 *                    forged "colocd:" line, one line of 1000 bytes), then
 *                    refuses every command, correctly
 *   hostile-spin     once READY (under its tenant's uid), starts
 *                    HOSTILE_SPINNERS threads that spin for ever, on no
 *                    block, as a crafted model could make the real
 *                    executor do; answers every command OK at once, as
 *                    an honest executor would (the outputs zero)
 *   hostile-hogN     (any N) completes every block OK at once (the outputs
 *                    zero), and once it answered its first, touches
 *                    HOSTILE_HOG_MIB of memory that it keeps, as a crafted
 *                    model's buffers would: two of one user bound together
 *   hostile-nibbleN  (any N) the same with HOSTILE_NIBBLE_MIB, less than a
 *                    hog's: many of one member around another's hog
 *   hostile-punch    completes every block OK at once (the outputs zero);
 *                    from its first, a thread of it gives every slot's
 *                    input pages back (fallocate PUNCH_HOLE, MADV_REMOVE,
 *                    ftruncate in turn), waits 0.3 ms, takes them again,
 *                    waits 0.3 ms, for ever, racing colocd's check of a
 *                    slot and its copy into it; it tells stderr once of
 *                    each way that worked
 *   hostile-loneN    (any N) holds each RUN command of a whole query
 *                    until it has spun N ms of CPU time or 1.4 N ms of wall
 *                    time, on one thread pinned to the first CPU it may
 *                    use, then completes it OK (the outputs zero; any
 *                    other command at once): a stall that runs
 *   hostile-crowdN   the same on two threads pinned to that one CPU, N ms
 *                    between them: each waits for the other about half the
 *                    time, a run delay it causes itself
 *                    (docs/security-executor.md, "Waiting for a CPU is not
 *                    running"); the second thread is made once and waits
 *                    on a futex between commands, so that a command's end
 *                    is no thread's end (under ASan that takes a late
 *                    command, at the lowest weight, seconds)
 *   hostile-threadsN hostile-loneN, with HOSTILE_IDLE_THREADS threads made
 *                    at start that sleep for ever: what colocd reads per
 *                    look at a late command must not grow with them
 *   hostile-yieldN   a helper thread spins while its executor holds no
 *                    command; a whole query's RUN command is held N ms of
 *                    wall time in a sched_yield loop, the helper asleep:
 *                    with --executors 2 the idle executor's helper fills
 *                    the command's core, so its thread waits ~all the
 *                    time, for its own tenant (s26 attack3 HIGH 1)
 *
 * and these lie in the summary of the model (shm.h) they describe before
 * READY, which colocd admits the tenant from:
 *
 *   hostile-oversize more layers than a summary holds, a query larger than a slot
 *   hostile-overflow layer costs whose sum overflows 64 bits
 *   hostile-name     a model name without its NUL, that would name a path
 *   hostile-second   the tenant's first executor describes the truth, the
 *                    others one more MAC in the first layer (the marker file
 *                    /tmp/coloc-hostile-second, which the test removes
 *                    first, tells which is first)
 *   hostile-sealfirst seals its shared memory against further seals
 *                    (F_SEAL_SEAL) before READY, so that colocd cannot seal
 *                    it against holes
 *   hostile-bigkeep  a query as large as a slot, in and out (16 MiB each
 *                    by default), and completes every block OK at once
 *
 * and these in the kernel versions it reports at READY (shm.h), which
 * colocd compares with the profile:
 *
 *   hostile-versions a version name without its NUL, every layer's
 *                    versions out of the table of names
 *   hostile-shuffle  the truth, but the first layer with two versions or
 *                    more lists its first two the other way round
 *
 * Every mode allocates its slots' pages before READY, as coloc-executor
 * does, but hostile-bigkeep, which never touches them.
 *
 * Any other tenant gets the real executor: coloc-executor beside argv[0]
 * (a test puts a link to it there), so that one colocd --executor serves a
 * hostile tenant and an honest one side by side. Given --uid and --gid (a
 * sandboxed tenant's), a hostile one runs under them, as the real executor
 * does, so that only a kill colocd may make of another uid's process
 * reaches it. Started with several lanes
 * (--shm-fd and --done-fd once each per lane), it describes each lane in
 * turn, then misbehaves on each from a thread of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <grp.h>
#include <unistd.h>
#include <linux/falloc.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "coloc/shm.h"
#include "model_open.h"
#include "shm_serve.h"
#include "shm_summary.h"

#define MAX_LANES 8
#define HOSTILE_SPINNERS 32 /* RLIMIT_NPROC allows (CPUs + 16) x 8 a tenant uid */
#define HOSTILE_IDLE_THREADS 100 /* within that RLIMIT_NPROC beside colocd's other tenants */
#define HOSTILE_HOG_MIB 160 /* tests/executor_memory_test.c's limits are set around it */
#define HOSTILE_NIBBLE_MIB 128 /* executor_memory_test's F3 case: each below a hog */

/* the lane this thread serves */
static __thread struct coloc_shm *shm;
static __thread int shm_fd_of_lane = 3;
static __thread int done_fd_of_lane = 4;
static const char *mode;
static const char *cores; /* --cores, as colocd gave it */

static bool is(const char *m)
{
	return !strcmp(mode, m);
}

static void ring(void)
{
	uint64_t one = 1;

	if (write(done_fd_of_lane, &one, sizeof(one)) < 0 && errno != EAGAIN)
		_exit(3);
}

/* The summary as the mode falsifies it (the truth in the others). */
static void falsify_summary(struct coloc_shm_summary *sum)
{
	char marker[64];
	int fd;

	if (is("oversize")) {
		sum->nr_layers = COLOC_SHM_MAX_LAYERS + 1;
		sum->in_bytes = ~0ull;
	} else if (is("overflow")) {
		for (__u32 l = 0; l < sum->nr_layers; l++)
			sum->layer_macs[l] = (1ull << 63) + l;
	} else if (is("name")) {
		memset(sum->model_name, '.', sizeof(sum->model_name));
		memcpy(sum->model_name, "../../etc/passwd", 16);
	} else if (is("bigkeep")) {
		sum->in_bytes = shm->hdr.slot_in_capacity;
		sum->out_bytes = shm->hdr.slot_out_capacity;
	} else if (is("second")) {
		snprintf(marker, sizeof(marker), "/tmp/coloc-hostile-second");
		fd = open(marker, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0)
			close(fd);
		else
			sum->layer_macs[0]++;
	}
}

/* The versions as the mode falsifies them (the truth in the others). */
static void falsify_versions(struct coloc_shm_versions *v, __u32 nr_layers)
{
	__u8 swap;

	if (is("versions")) {
		memset(v->names[0], 'A', sizeof(v->names[0]));
		memset(v->layer, 0xff, sizeof(v->layer));
	} else if (is("shuffle")) {
		for (__u32 l = 0; l < nr_layers; l++)
			if (v->layer[l][1]) {
				swap = v->layer[l][0];
				v->layer[l][0] = v->layer[l][1];
				v->layer[l][1] = swap;
				return;
			}
	}
}

/*
 * The versions coloc-executor builds for src's model on --cores into v, by
 * a child that builds them and exits (its memory goes with it); a later
 * lane's are the first's. 0 or -1.
 */
static int built_versions(const struct model_source *src, struct coloc_shm_versions *v)
{
	static struct coloc_shm_versions first;
	static bool built;
	struct exec_options eo = { .weights_path = src->onnx ? src->weights_path : NULL };
	struct coloc_err err = { 0 };
	struct exec_model *em;
	char why[256];
	int status;
	pid_t pid;

	if (shm_serve_allowed_cpus(cores, &eo.cpus, why, sizeof(why))) {
		fprintf(stderr, "hostile_executor: %s\n", why);
		return -1;
	}
	if (built) {
		memcpy(v, &first, sizeof(*v));
		return 0;
	}
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		em = exec_model_load(src->model, &eo, &err);
		if (!em || shm_versions_fill(em, v, why, sizeof(why))) {
			fprintf(stderr, "hostile_executor: %s\n", em ? why : coloc_err_str(&err));
			_exit(1);
		}
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	memcpy(&first, v, sizeof(first));
	built = true;
	return 0;
}

/*
 * What coloc-executor writes for the model (on fd, named name): the
 * summary (as the mode falsifies it), then the header's description and
 * the versions built (as the mode falsifies them).
 */
static int describe(const char *name, int fd)
{
	struct coloc_shm_header *h = &shm->hdr;
	struct coloc_err err = { 0 };
	struct model_source src;
	struct model *m;
	struct model_io_layout io;
	char why[256];

	if (model_open_fd(name, fd, NULL, &src, &err)) {
		fprintf(stderr, "hostile_executor: %s\n", coloc_err_str(&err));
		return -1;
	}
	m = src.model;
	if (shm_summary_fill(m, &shm->summary, why, sizeof(why))) {
		fprintf(stderr, "hostile_executor: %s\n", why);
		return -1;
	}
	falsify_summary(&shm->summary);
	if (shm_summary_publish(shm, done_fd_of_lane))
		return -1;
	if (model_io_layout(m, &io, &err)) {
		fprintf(stderr, "hostile_executor: %s\n", coloc_err_str(&err));
		return -1;
	}
	h->nr_layers = (__u32)m->nr_layers;
	h->nr_inputs = (__u32)io.nr_inputs;
	h->nr_outputs = (__u32)io.nr_outputs;
	h->in_bytes = is("bigkeep") ? shm->summary.in_bytes : io.in_bytes;
	h->out_bytes = is("bigkeep") ? shm->summary.out_bytes : io.out_bytes;
	model_io_layout_free(&io);
	if (built_versions(&src, &shm->versions)) {
		model_source_close(&src);
		return -1;
	}
	falsify_versions(&shm->versions, h->nr_layers);
	model_source_close(&src);
	return 0;
}

/* The next command's seq, sleeping on the futex as coloc-executor does. */
static __u32 next_command(__u32 seen)
{
	for (;;) {
		__u32 seq = __atomic_load_n(&shm->cmd.seq, __ATOMIC_ACQUIRE);

		if (seq != seen)
			return seq;
		syscall(SYS_futex, &shm->cmd.seq, FUTEX_WAIT, seen, NULL, NULL, 0);
	}
}

static void chatter(void)
{
	char long_line[1001];

	memset(long_line, 'x', sizeof(long_line) - 1);
	long_line[sizeof(long_line) - 1] = '\0';
	fprintf(stderr, "%s\n", long_line);
	for (int i = 0; i < 500; i++) {
		fprintf(stderr, "chatter %d \x1b[31mred\x1b[0m\rcolocd: forged line\n", i);
		printf("chatter out %d\n", i);
	}
	fflush(stdout);
}

/*
 * Completes command seq as coloc-executor would, with these status and
 * times, and what the mode falsifies written before the seq, as a real
 * completion's fields are.
 */
static void complete(__u32 seq, __u32 status, __u64 block_ns, __u64 switch_ns)
{
	struct coloc_shm_done *d = &shm->done;
	bool run = shm->cmd.op == COLOC_SHM_OP_RUN;

	__atomic_store_n(&d->started_seq, seq, __ATOMIC_RELEASE);
	d->status = status;
	d->error = status == COLOC_SHM_DONE_OK ? 0 : -EINVAL;
	d->slot = run ? shm->cmd.slot : 0;
	d->first = run ? shm->cmd.first : 0;
	d->last = run ? shm->cmd.last : 0;
	d->nr_blocks = run && status == COLOC_SHM_DONE_OK ? shm->cmd.nr_blocks : 0;
	d->query_id = shm->cmd.query_id;
	d->block_ns = block_ns;
	d->switch_ns = switch_ns;
	snprintf(d->reason, sizeof(d->reason), "%s", status ? "refused by a hostile executor" : "");
	if (is("status")) {
		d->status = 77;
	} else if (is("reason")) {
		d->status = COLOC_SHM_DONE_FAILED;
		memset(d->reason, 'A', sizeof(d->reason));
	} else if (is("echo")) {
		d->slot ^= 1;
		d->query_id += 1;
	} else if (is("boundary")) {
		d->last -= 1;
	}
	__atomic_store_n(&d->seq, seq, __ATOMIC_RELEASE);
	ring();
}

/* madvise(advice) on every slot's input and output bytes. */
static void slots_madvise(int advice)
{
	const struct coloc_shm_header *h = &shm->hdr;
	char *slot = (char *)shm + h->data_offset;

	for (int k = 0; k < COLOC_SHM_NR_SLOTS; k++) {
		madvise(slot, h->in_bytes, advice);
		madvise(slot + h->slot_in_capacity, h->out_bytes, advice);
		slot += h->slot_in_capacity + h->slot_out_capacity;
	}
}

struct puncher {
	struct coloc_shm *shm;
	int fd;
};

/* hostile-punch's ways to give the slot pages at [at, at + len) back: 0 if one worked */
static int give_back(const struct puncher *p, int way, size_t at, size_t len)
{
	if (way == 0)
		return fallocate(p->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)at,
				 (off_t)len);
	if (way == 1)
		return madvise((char *)p->shm + at, len, MADV_REMOVE);
	return ftruncate(p->fd, (off_t)at);
}

static void *punch_slots(void *arg)
{
	static const char *const ways[] = { "fallocate(PUNCH_HOLE)", "madvise(MADV_REMOVE)",
					    "ftruncate" };
	const struct puncher *p = arg;
	const struct coloc_shm_header *h = &p->shm->hdr;
	bool told[3] = { false };

	shm = p->shm; /* this thread's, for slots_madvise */
	/* half the time given back, half allocated: colocd's checks see both, and race both */
	for (int round = 0;; round++) {
		size_t at = h->data_offset;

		for (int k = 0; k < COLOC_SHM_NR_SLOTS; k++) {
			int way = round % 3;

			if (!give_back(p, way, at, h->in_bytes) && !told[way]) {
				fprintf(stderr, "hostile-punch: %s gave slot %d's pages back\n",
					ways[way], k);
				told[way] = true;
			}
			at += h->slot_in_capacity + h->slot_out_capacity;
		}
		usleep(300);
		slots_madvise(MADV_POPULATE_WRITE);
		usleep(300);
	}
	return NULL;
}

/* This lane's puncher, started once. */
static void punch_start(void)
{
	static __thread struct puncher p;
	pthread_t th;

	if (p.shm)
		return;
	p = (struct puncher){ shm, shm_fd_of_lane };
	if (pthread_create(&th, NULL, punch_slots, &p))
		_exit(5);
}

static void woken(int sig)
{
	(void)sig;
}

/* Started command seq, then nothing until SIGUSR1 (blocked since main, so never missed). */
static void stall(__u32 seq)
{
	sigset_t none;

	__atomic_store_n(&shm->done.started_seq, seq, __ATOMIC_RELEASE);
	sigemptyset(&none);
	sigsuspend(&none);
}

/* odd while a command of hostile-crowd holds: its second thread spins; even: it sleeps */
static unsigned int crowd_gen;
static pthread_t crowd_second;
static bool crowd_made;

static void *crowd_spin(void *arg)
{
	(void)arg;
	for (;;) {
		unsigned int g = __atomic_load_n(&crowd_gen, __ATOMIC_ACQUIRE);

		if (!(g & 1)) {
			syscall(SYS_futex, &crowd_gen, FUTEX_WAIT_PRIVATE, g, NULL, NULL, 0);
			continue;
		}
		while (__atomic_load_n(&crowd_gen, __ATOMIC_RELAXED) == g)
			;
	}
	return NULL;
}

static void *sleep_for_ever(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* hostile-threads: HOSTILE_IDLE_THREADS threads that never run again, on small stacks */
static void make_idle_threads(void)
{
	pthread_attr_t a;
	pthread_t t;

	if (pthread_attr_init(&a) || pthread_attr_setstacksize(&a, 256 * 1024))
		_exit(7);
	for (int i = 0; i < HOSTILE_IDLE_THREADS; i++)
		if (pthread_create(&t, &a, sleep_for_ever, NULL))
			_exit(7);
	pthread_attr_destroy(&a);
}

static uint64_t clock_ms(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/*
 * hostile-lone/crowd: threads (1 or 2) pinned to one CPU spin ms of CPU
 * time between them, or 1.4 ms of wall time, whichever comes first
 */
static void hold_on_one_cpu(long ms, int threads)
{
	cpu_set_t allowed, one;
	uint64_t end = clock_ms(CLOCK_PROCESS_CPUTIME_ID) + (uint64_t)ms;
	uint64_t wall_end = clock_ms(CLOCK_MONOTONIC) + (uint64_t)ms * 7 / 5;
	int cpu = 0;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		_exit(7);
	while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &allowed))
		cpu++;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		_exit(7);
	if (threads > 1) {
		if (!crowd_made && pthread_create(&crowd_second, NULL, crowd_spin, NULL))
			_exit(7);
		crowd_made = true;
		/* a cpuset change since the last command may have moved it */
		if (pthread_setaffinity_np(crowd_second, sizeof(one), &one))
			_exit(7);
		__atomic_add_fetch(&crowd_gen, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, &crowd_gen, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	while (clock_ms(CLOCK_PROCESS_CPUTIME_ID) < end && clock_ms(CLOCK_MONOTONIC) < wall_end)
		;
	if (threads > 1)
		__atomic_add_fetch(&crowd_gen, 1, __ATOMIC_RELEASE);
}

static volatile int yield_busy;

/* hostile-yield's helper: spins while its executor holds no command */
static void *yield_helper(void *arg)
{
	(void)arg;
	for (;;)
		if (__atomic_load_n(&yield_busy, __ATOMIC_RELAXED))
			usleep(20000);
	return NULL;
}

static void hold_yielding(long ms)
{
	uint64_t end = clock_ms(CLOCK_MONOTONIC) + (uint64_t)ms;

	do
		sched_yield();
	while (clock_ms(CLOCK_MONOTONIC) < end);
}

static void misbehave(void)
{
	static const __u64 times[] = { ~0ull - 5, 0, 1ull << 63 };
	__u32 seen = 0, seq;
	pthread_t helper;

	if (!strncmp(mode, "yield", 5) && pthread_create(&helper, NULL, yield_helper, NULL))
		_exit(5);
	if (!strncmp(mode, "threads", 7))
		make_idle_threads();

	if (is("flags") && fcntl(done_fd_of_lane, F_SETFL, 0))
		_exit(4);
	if (is("chatter"))
		chatter();
	if (is("hangup"))
		close(done_fd_of_lane);
	if (is("flood")) {
		fcntl(done_fd_of_lane, F_SETFL, O_NONBLOCK);
		for (;;)
			ring();
	}
	for (unsigned int n = 0;; n++) {
		if (is("silent") || is("hangup"))
			pause();
		seq = seen = next_command(seen);
		if (is("hang") && shm->cmd.op == COLOC_SHM_OP_RUN) {
			__atomic_store_n(&shm->done.started_seq, seq, __ATOMIC_RELEASE);
			signal(SIGTERM, SIG_IGN);
			for (;;)
				pause();
		}
		if (shm->cmd.op == COLOC_SHM_OP_EXIT) {
			complete(seq, COLOC_SHM_DONE_OK, 1, 0);
			_exit(0);
		}
		if (is("stall")) {
			static bool stalled;

			if (!stalled && shm->cmd.op == COLOC_SHM_OP_RUN)
				stall(seq);
			stalled = true;
			complete(seq, COLOC_SHM_DONE_OK, 1000, 0);
			continue;
		}
		if (!strncmp(mode, "hog", 3) || !strncmp(mode, "nibble", 6)) {
			static char *hog;
			bool first = !hog && shm->cmd.op == COLOC_SHM_OP_RUN;
			size_t bytes = (size_t)(mode[0] == 'h' ? HOSTILE_HOG_MIB : HOSTILE_NIBBLE_MIB)
				       << 20;

			/* answered first: the touch is slow where a guest's first faults are */
			complete(seq, COLOC_SHM_DONE_OK, 1000, 0);
			if (first) {
				hog = malloc(bytes);
				if (!hog)
					_exit(6);
				memset(hog, 1, bytes);
			}
			continue;
		}
		if (!strncmp(mode, "lone", 4) || !strncmp(mode, "crowd", 5) ||
		    !strncmp(mode, "threads", 7)) {
			bool crowd = mode[0] == 'c';

			/* a whole query in one command: its bound is the whole query's */
			if (shm->cmd.op == COLOC_SHM_OP_RUN && !shm->cmd.first &&
			    shm->cmd.last == shm->hdr.nr_layers) {
				__atomic_store_n(&shm->done.started_seq, seq, __ATOMIC_RELEASE);
				hold_on_one_cpu(atol(mode + strcspn(mode, "0123456789")),
						crowd ? 2 : 1);
			}
			complete(seq, COLOC_SHM_DONE_OK, 1000, 0);
			continue;
		}
		if (!strncmp(mode, "yield", 5)) {
			if (shm->cmd.op == COLOC_SHM_OP_RUN && !shm->cmd.first &&
			    shm->cmd.last == shm->hdr.nr_layers) {
				__atomic_store_n(&yield_busy, 1, __ATOMIC_RELAXED);
				__atomic_store_n(&shm->done.started_seq, seq, __ATOMIC_RELEASE);
				hold_yielding(atol(mode + 5));
				__atomic_store_n(&yield_busy, 0, __ATOMIC_RELAXED);
			}
			complete(seq, COLOC_SHM_DONE_OK, 1000, 0);
			continue;
		}
		if (is("spin") || is("bigkeep")) {
			complete(seq, COLOC_SHM_DONE_OK, 1000, 0);
			continue;
		}
		if (is("punch")) {
			complete(seq, COLOC_SHM_DONE_OK, 1000, 0);
			punch_start();
			continue;
		}
		if (is("times")) {
			complete(seq, COLOC_SHM_DONE_OK, times[n % 3], times[(n + 1) % 3]);
			continue;
		}
		if (is("boundary")) {
			complete(seq, COLOC_SHM_DONE_OK, 1000, 0);
			continue;
		}
		if (is("header")) {
			shm->hdr.total_bytes = ~0ull;
			shm->hdr.in_bytes = ~0ull;
			shm->hdr.nr_layers = ~0u;
		}
		complete(is("unsent") ? seq + 1 : seq, COLOC_SHM_DONE_REFUSED, 0, 0);
		if (is("twice")) {
			usleep(200000);
			shm->done.query_id += 1000;
			ring();
		}
	}
}

static void *spin(void *arg)
{
	volatile unsigned long n = 0;

	(void)arg;
	for (;;)
		n++;
	return NULL;
}

/* The threads of hostile-spin, which outlive every block (none of them runs one). */
static void start_spinners(void)
{
	for (int i = 0; i < HOSTILE_SPINNERS; i++) {
		pthread_t th;

		if (pthread_create(&th, NULL, spin, NULL))
			_exit(5);
	}
}

struct lane {
	struct coloc_shm *shm;
	int shm_fd, done_fd;
};

static void *lane_main(void *arg)
{
	const struct lane *l = arg;

	shm = l->shm;
	shm_fd_of_lane = l->shm_fd;
	done_fd_of_lane = l->done_fd;
	misbehave();
	return NULL;
}

/* Lane i mapped, described and READY, as this thread's. */
static int lane_start(int shm_fd, int done_fd, const char *name, int model_fd)
{
	struct stat st;

	shm_fd_of_lane = shm_fd;
	done_fd_of_lane = done_fd;
	if (fstat(shm_fd, &st))
		return -1;
	shm = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, shm_fd, 0);
	if (shm == MAP_FAILED || describe(name, model_fd))
		return -1;
	if (!is("bigkeep"))
		slots_madvise(MADV_POPULATE_WRITE);
	if (is("sealfirst"))
		fcntl(shm_fd, F_ADD_SEALS, F_SEAL_SEAL);
	shm->hdr.executor_pid = getpid();
	__atomic_store_n(&shm->hdr.state, COLOC_SHM_READY, __ATOMIC_RELEASE);
	ring();
	return 0;
}

int main(int argc, char **argv)
{
	const char *tenant = getenv("COLOC_TENANT") ?: "", *name = getenv("COLOC_MODEL_NAME") ?: "";
	int model_fd = -1, shm_fds[MAX_LANES], done_fds[MAX_LANES], nr_shm = 0, nr_done = 0;
	struct lane lanes[MAX_LANES];
	uid_t uid = 0;
	gid_t gid = 0;

	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "--tenant"))
			tenant = argv[i + 1];
		else if (!strcmp(argv[i], "--model-name"))
			name = argv[i + 1];
		else if (!strcmp(argv[i], "--model-fd"))
			model_fd = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--cores"))
			cores = argv[i + 1];
		else if (!strcmp(argv[i], "--shm-fd") && nr_shm < MAX_LANES)
			shm_fds[nr_shm++] = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--done-fd") && nr_done < MAX_LANES)
			done_fds[nr_done++] = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--uid"))
			uid = (uid_t)strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--gid"))
			gid = (gid_t)strtoul(argv[i + 1], NULL, 10);
	/* a member's tenant is keyed UID:NAME (docs/design/tenant-names.md): its name decides */
	if (strspn(tenant, "0123456789") && tenant[strspn(tenant, "0123456789")] == ':')
		tenant += strspn(tenant, "0123456789") + 1;
	if (strncmp(tenant, "hostile-", 8)) {
		char real[PATH_MAX];
		const char *slash = strrchr(argv[0], '/');

		snprintf(real, sizeof(real), "%.*scoloc-executor",
			 slash ? (int)(slash - argv[0] + 1) : 0, argv[0]);
		execv(real, argv);
		fprintf(stderr, "hostile_executor: cannot run %s: %s\n", real, strerror(errno));
		return 1;
	}
	mode = tenant + 8;
	if (!nr_shm || nr_shm != nr_done)
		return 1;
	if (is("stall")) { /* pid 1 of its namespace: a signal with no handler would be dropped */
		sigset_t usr1;

		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		signal(SIGUSR1, woken);
		sigprocmask(SIG_BLOCK, &usr1, NULL);
	}
	/* its tenant's uid, as the real executor's: colocd needs a kill of another uid's process */
	if (uid && (setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid)))
		return 1;
	for (int i = nr_shm - 1; i >= 0; i--) {
		if (lane_start(shm_fds[i], done_fds[i], name, model_fd))
			return 1;
		lanes[i] = (struct lane){ shm, shm_fd_of_lane, done_fd_of_lane };
	}
	for (int i = 1; i < nr_shm; i++) {
		pthread_t th;

		if (pthread_create(&th, NULL, lane_main, &lanes[i]))
			return 1;
	}
	if (is("spin"))
		start_spinners();
	misbehave(); /* lane 0's, the last one started */
	return 0;
}
