// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-executor: one tenant's executor process, started by colocd (through
 * daemon/execproc.c) on a shared-memory region laid out as in
 * include/coloc/shm.h. It first enters its sandbox (executor/exec_sandbox.h:
 * the tenant's own uid, no capabilities, Landlock, seccomp) under limits on
 * its address space and on the CPU time its parse may take; only then does
 * it read the model, its weights and any ONNX external data from the sealed
 * memfds colocd inherited to it (never a path: the client opened the files),
 * describe it to colocd (executor/shm_summary.h), build every oneDNN
 * primitive and report the kernel versions built. Then it serves colocd's
 * commands with the library's loop (executor/shm_serve.h): this file is
 * the arguments, the sandbox, the limits and the model's import around
 * it. Given several shared memories
 * (--shm-fd and --done-fd once per lane), it serves each on a thread of
 * its own, a lane (executor/exec_lane.c), over the one loaded model; the
 * lanes live and die together (docs/design/lanes.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include "coloc/protocol.h"
#include "coloc/shm.h"
#include "cli.h"
#include "executor.h"
#include "model_open.h"
#include "exec_sandbox.h"
#include "profile_host.h"
#include "shm_serve.h"
#include "shm_summary.h"

#define PROG "coloc-executor"
/*
 * The address space it may ever use (weights, activations, oneDNN's
 * scratch, OpenMP stacks), and the CPU seconds its model import may take;
 * colocd's start-up timeout bounds the wall time.
 */
#define EXECUTOR_MAX_AS_BYTES (64ull << 30)
#define EXECUTOR_PARSE_CPU_S 120

static struct {
	int shm_fd[COLOC_MAX_EXECUTORS], done_fd[COLOC_MAX_EXECUTORS];
	int nr_shm, nr_done; /* one of each per lane */
	int input_fd[COLOC_MAX_EXECUTORS], nr_input; /* none, or one per lane */
	int model_fd, weights_fd;
	const char *tenant, *cores, *model_name;
	struct onnx_external_fd external[COLOC_MAX_REQUEST_FDS];
	int nr_external;
	long uid, gid;
	bool allow_weak;
} opts = { .model_fd = -1, .weights_fd = -1 };

_Static_assert(EXEC_SANDBOX_MAX_RECV_FDS >= COLOC_MAX_EXECUTORS, "an input socket per lane");

/* The lanes: [0] served by the main thread, the others by threads of their own. */
static struct shm_serve lanes[COLOC_MAX_EXECUTORS];

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG
		" --shm-fd N --done-fd N --tenant NAME --model-fd N --model-name NAME\n"
		"       [options]\n"
		"One tenant's executor process. colocd starts it (you normally do not): it\n"
		"enters its sandbox (the tenant's uid, no capabilities, Landlock, seccomp),\n"
		"then reads the model from fd N and builds every kernel, then runs the layer\n"
		"blocks colocd writes into the shared memory on fd N (layout:\n"
		"include/coloc/shm.h), signalling each completion on the pipe's write end\n"
		"--done-fd. Given --shm-fd and --done-fd several times (at most %d), it\n"
		"serves each pair as a lane of its own, all over one copy of the model.\n"
		"\n"
		"  -s, --shm-fd N        the shared memory (a sealed memfd) colocd created\n"
		"  -d, --done-fd N       the pipe (write end) to signal after each completion\n"
		"                        (both once per lane, the i-th of each for lane i)\n"
		"  -i, --input-fd N      the socket colocd sends clients' input memfds on\n"
		"                        (none, or once per lane)\n"
		"  -t, --tenant NAME     the tenant, for messages (or $COLOC_TENANT, as colocd\n"
		"                        passes it, with $COLOC_MODEL_NAME and\n"
		"                        $COLOC_EXTERNAL_0, _1, ...: not on the command line,\n"
		"                        which every local user can read)\n"
		"  -m, --model-fd N      the model's bytes (a sealed memfd)\n"
		"  -n, --model-name NAME its name as submitted: messages, and '.onnx' for ONNX\n"
		"  -w, --weights-fd N    a weights file (models/WEIGHTS.md); default: the seed's\n"
		"  -x, --external LOC=N  ONNX external data file LOC (as the model names it) on fd N\n"
		"  -c, --cores LIST      CPUs blocks may run on, e.g. 0-3 (default: all online\n"
		"                        CPUs this process may use)\n"
		"  -u, --uid N           the tenant's own uid to run as (default: 'coloc')\n"
		"  -g, --gid N           the tenant's own gid (default: the user's)\n"
		"      --allow-weak-isolation  go on where the kernel lacks a sandbox layer\n"
		"      --print-isa       print the ISA oneDNN dispatches to here and exit (colocd\n"
		"                        asks it once at start, for the profile cache's key)\n"
		"  -h, --help            this help\n"
		"      --version         print the version\n"
		"\n"
		"Exit status: 0 after an exit command (on any lane: the lanes end\n"
		"together), 1 on failure (the reason is also in every lane's shared\n"
		"memory header), 2 bad usage.\n",
		COLOC_MAX_EXECUTORS);
}

/*
 * Writes the reason into every lane's header, marks it failed, wakes colocd
 * and says why on stderr: a lane that fails is the process's failure.
 */
static __attribute__((format(printf, 2, 3))) int fail(int code, const char *fmt, ...)
{
	char why[COLOC_SHM_REASON_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	fprintf(stderr, PROG ": tenant %s: %s\n", opts.tenant, why);
	for (int i = 0; i < opts.nr_shm; i++)
		if (lanes[i].shm)
			shm_serve_fail(lanes[i].shm, lanes[i].done_fd, code, why);
	return 1;
}

/*
 * What stays readable: the CPUs' sysfs folder (which CPUs are online). The
 * model, its weights and an ONNX model's imported weights are memfds,
 * reached through /proc/self/fd, which Landlock lets by as an internal
 * filesystem. What the kernel could not enforce goes to
 * stderr.
 */
static int enter_sandbox(pid_t parent, char *why, size_t len)
{
	struct exec_sandbox sb = { .uid = (uid_t)opts.uid,
				   .gid = (gid_t)opts.gid,
				   .parent = parent,
				   .allow_weak = opts.allow_weak };
	char missing[256];
	int n = 0, ret;

	sb.readable[n++] = "/sys/devices/system/cpu";
	for (int i = 0; i < opts.nr_input; i++)
		sb.recv_fds[sb.nr_recv_fds++] = opts.input_fd[i];
	ret = exec_sandbox_enter(&sb, missing, sizeof(missing), why, len);
	if (!ret && missing[0])
		fprintf(stderr, PROG ": tenant %s: weak isolation: %s\n", opts.tenant, missing);
	return ret;
}

/* The model's memfds are read: open files are the shared memories and the doorbells only. */
static void close_model_files(void)
{
	close(opts.model_fd);
	if (opts.weights_fd >= 0)
		close(opts.weights_fd);
	for (int i = 0; i < opts.nr_external; i++)
		close(opts.external[i].fd);
}

/*
 * Hard limits, which this process cannot raise again: its address space,
 * and CPU time for the import (SIGXCPU past it; lifted by the caller once
 * the model is in, the soft limit only, under the hard one).
 */
static int limit_resources(char *why, size_t len)
{
	struct rlimit as = { EXECUTOR_MAX_AS_BYTES, EXECUTOR_MAX_AS_BYTES };
	struct rlimit cpu = { EXECUTOR_PARSE_CPU_S, RLIM_INFINITY };
	struct rlimit cur;
	/* AddressSanitizer has reserved terabytes of shadow by now: no AS limit under it */
#if defined(__SANITIZE_ADDRESS__)
	bool limit_as = false;
#else
	bool limit_as = true;
#endif

	/* never above the bound colocd may have set already (--executor-memory) */
	if (!getrlimit(RLIMIT_AS, &cur) && cur.rlim_max < as.rlim_max)
		as = cur;
	if ((limit_as && setrlimit(RLIMIT_AS, &as)) || setrlimit(RLIMIT_CPU, &cpu)) {
		snprintf(why, len, "setrlimit: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

static int setup(struct shm_serve *s, pid_t parent, char *why, size_t len)
{
	struct exec_options eo = { 0 };
	struct onnx_import_opts io = { .batch = 1,
				       .external = opts.external,
				       .nr_external = opts.nr_external };
	struct rlimit cpu = { RLIM_INFINITY, RLIM_INFINITY };
	struct coloc_err merr = { 0 };
	char weights_path[32];
	struct model_source src;
	int ret;

	ret = shm_serve_allowed_cpus(opts.cores, &s->allowed, why, len);
	if (ret)
		return ret;
	eo.cpus = s->allowed;
	if (model_path_is_onnx(opts.model_name) && opts.weights_fd >= 0) {
		snprintf(why, len, "%s: an ONNX model's weights are in the file; drop the weights",
			 opts.model_name);
		return -EINVAL;
	}
	/*
	 * Untrusted bytes from here on: read only in the sandbox, within limits
	 * set first (the filter lets no limit but the CPU time's be raised).
	 * Landlock binds the calling thread and those it starts later: no
	 * thread exists yet (oneDNN and OpenMP start theirs in exec_model_load).
	 */
	ret = limit_resources(why, len);
	if (!ret)
		ret = enter_sandbox(parent, why, len);
	if (ret)
		return ret;
	ret = model_open_fd(opts.model_name, opts.model_fd, &io, &src, &merr);
	if (ret) {
		snprintf(why, len, "%s", coloc_err_str(&merr));
		return ret;
	}
	s->m = src.model;
	/* colocd admits the tenant from this summary while the kernels are built */
	ret = shm_summary_fill(s->m, &s->shm->summary, why, len);
	for (int i = 1; i < opts.nr_shm && !ret; i++)
		memcpy(&lanes[i].shm->summary, &s->shm->summary, sizeof(s->shm->summary));
	for (int i = 0; i < opts.nr_shm && !ret; i++)
		if ((ret = shm_summary_publish(lanes[i].shm, lanes[i].done_fd)))
			snprintf(why, len, "signalling colocd: %s", strerror(-ret));
	if (ret)
		return ret;
	if (src.onnx) {
		eo.weights_path = src.weights_path;
	} else if (opts.weights_fd >= 0) {
		snprintf(weights_path, sizeof(weights_path), "/proc/self/fd/%d", opts.weights_fd);
		eo.weights_path = weights_path;
	}
	s->em = exec_model_load(s->m, &eo, &merr);
	model_source_drop_weights(&src);
	close_model_files();
	if (!s->em) {
		snprintf(why, len, "%s", coloc_err_str(&merr));
		return merr.code ? merr.code : -EINVAL;
	}
	/* colocd checks its profile's versions against these at READY */
	ret = shm_versions_fill(s->em, &s->shm->versions, why, len);
	for (int i = 1; i < opts.nr_shm && !ret; i++)
		memcpy(&lanes[i].shm->versions, &s->shm->versions, sizeof(s->shm->versions));
	if (ret)
		return ret;
	/* imported: the soft CPU limit goes (the hard one was never lowered) */
	if (setrlimit(RLIMIT_CPU, &cpu)) {
		snprintf(why, len, "lifting the import's CPU limit: %s", strerror(errno));
		return -errno;
	}
	return shm_serve_prepare(s, why, len);
}

/* "LOCATION=FD" (the last '=' splits: a location may hold one) into the table. */
static int parse_external(char *arg)
{
	char *eq = strrchr(arg, '=');
	long fd;

	if (!eq || eq == arg || opts.nr_external >= COLOC_MAX_REQUEST_FDS) {
		fprintf(stderr, PROG ": --external wants LOCATION=FD, at most %d of them\n",
			COLOC_MAX_REQUEST_FDS);
		return 2;
	}
	*eq = '\0';
	if (cli_parse_flag(PROG, "--external", eq + 1, 0, INT32_MAX, &fd))
		return 2;
	opts.external[opts.nr_external++] = (struct onnx_external_fd){ arg, (int)fd };
	return 0;
}

/* colocd links no oneDNN: it asks this binary for the ISA once (daemon/isa_probe.h). */
static void print_isa(void)
{
	char isa[PROFILE_ISA_LEN];

	profile_isa_name(isa, sizeof(isa));
	printf("%s\n", isa);
}

static int parse_args(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "shm-fd", required_argument, NULL, 's' },
		{ "done-fd", required_argument, NULL, 'd' },
		{ "input-fd", required_argument, NULL, 'i' },
		{ "tenant", required_argument, NULL, 't' },
		{ "model-fd", required_argument, NULL, 'm' },
		{ "model-name", required_argument, NULL, 'n' },
		{ "weights-fd", required_argument, NULL, 'w' },
		{ "external", required_argument, NULL, 'x' },
		{ "cores", required_argument, NULL, 'c' },
		{ "uid", required_argument, NULL, 'u' },
		{ "gid", required_argument, NULL, 'g' },
		{ "allow-weak-isolation", no_argument, NULL, 'W' },
		{ "print-isa", no_argument, NULL, 'I' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	char key[32], *ext;
	int c;
	long v;

	/* colocd's way: in the environment, which other users cannot read (execproc_spawn.c) */
	opts.tenant = getenv("COLOC_TENANT");
	opts.model_name = getenv("COLOC_MODEL_NAME");
	for (int i = 0; i < COLOC_MAX_REQUEST_FDS; i++) {
		snprintf(key, sizeof(key), "COLOC_EXTERNAL_%d", i);
		ext = getenv(key);
		if (ext && parse_external(ext))
			return 2;
	}
	while ((c = getopt_long(argc, argv, "s:d:i:t:m:n:w:x:c:u:g:h", long_opts, NULL)) != -1) {
		switch (c) {
		case 's':
		case 'd':
		case 'i':
			if ((c == 's' ? opts.nr_shm :
			     c == 'd' ? opts.nr_done :
					opts.nr_input) >= COLOC_MAX_EXECUTORS) {
				fprintf(stderr, PROG ": at most %d lanes\n", COLOC_MAX_EXECUTORS);
				return 2;
			}
			if (cli_parse_flag(PROG, "a descriptor", optarg, 0, INT32_MAX, &v))
				return 2;
			if (c == 's')
				opts.shm_fd[opts.nr_shm++] = (int)v;
			else if (c == 'd')
				opts.done_fd[opts.nr_done++] = (int)v;
			else
				opts.input_fd[opts.nr_input++] = (int)v;
			break;
		case 'm':
		case 'w':
			if (cli_parse_flag(PROG, "a descriptor", optarg, 0, INT32_MAX, &v))
				return 2;
			*(c == 'm' ? &opts.model_fd : &opts.weights_fd) = (int)v;
			break;
		case 't':
			opts.tenant = optarg;
			break;
		case 'n':
			opts.model_name = optarg;
			break;
		case 'x':
			if (parse_external(optarg))
				return 2;
			break;
		case 'c':
			opts.cores = optarg;
			break;
		case 'u':
		case 'g':
			/* never 0: root's ids are no tenant's */
			if (cli_parse_flag(PROG, c == 'u' ? "--uid" : "--gid", optarg, 1,
					   UINT32_MAX - 1, c == 'u' ? &opts.uid : &opts.gid))
				return 2;
			break;
		case 'W':
			opts.allow_weak = true;
			break;
		case 'I':
			print_isa();
			exit(0);
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
	if (optind != argc || !opts.nr_shm || opts.nr_shm != opts.nr_done ||
	    (opts.nr_input && opts.nr_input != opts.nr_shm) || !opts.tenant || opts.model_fd < 0 ||
	    !opts.model_name) {
		fprintf(stderr,
			PROG ": --shm-fd, --done-fd (as many of each, and as many "
			     "--input-fd or none), --tenant, --model-fd and --model-name (or "
			     "their variables) are needed\n");
		usage(stderr);
		return 2;
	}
	if (!opts.uid != !opts.gid) {
		fprintf(stderr, PROG ": --uid and --gid go together\n");
		return 2;
	}
	return 0;
}

/*
 * Lane i's thread: its own lane of the model, its queries, its warm-up (its
 * OpenMP team is made here), then its commands. An exit command on it ends
 * the process; a failure fails every lane.
 */
static void *lane_main(void *arg)
{
	struct shm_serve *s = arg;
	char why[COLOC_SHM_REASON_LEN];
	struct coloc_err err = { 0 };
	int ret;

	s->lane = exec_lane_new(s->em, &err);
	if (!s->lane)
		_exit(fail(err.code ? err.code : -ENOMEM, "%s", coloc_err_str(&err)));
	ret = shm_serve_prepare(s, why, sizeof(why));
	if (ret)
		_exit(fail(ret, "%s", why));
	ret = shm_serve_loop(s);
	if (ret)
		_exit(fail(ret, "signalling colocd: %s", strerror(-ret)));
	_exit(0);
}

/* Lanes 1.. on threads of their own, over lane 0's model. */
static int start_lanes(char *why, size_t len)
{
	for (int i = 1; i < opts.nr_shm; i++) {
		pthread_t th;
		int ret;

		lanes[i].m = lanes[0].m;
		lanes[i].em = lanes[0].em;
		lanes[i].allowed = lanes[0].allowed;
		ret = pthread_create(&th, NULL, lane_main, &lanes[i]);
		if (ret) {
			snprintf(why, len, "starting lane %d: %s", i, strerror(ret));
			return -ret;
		}
		pthread_detach(th);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct shm_serve *s = &lanes[0];
	char why[COLOC_SHM_REASON_LEN];
	pid_t parent;
	int ret;

	ret = parse_args(argc, argv);
	if (ret)
		return ret;
	/* die with colocd, from the start: a model can take seconds to load */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	parent = getppid();
	for (int i = 0; i < opts.nr_shm; i++) {
		lanes[i].done_fd = opts.done_fd[i];
		lanes[i].team_turns = opts.nr_shm > 1;
		ret = shm_serve_map(&lanes[i], opts.shm_fd[i], why, sizeof(why));
		if (ret) {
			fprintf(stderr, PROG ": tenant %s: lane %d: %s\n", opts.tenant, i, why);
			return 1;
		}
		lanes[i].shm->hdr.executor_pid = getpid();
		if (opts.nr_input)
			lanes[i].input.sock = opts.input_fd[i];
	}
	ret = setup(s, parent, why, sizeof(why));
	if (!ret)
		ret = start_lanes(why, sizeof(why));
	/* with lanes running, exit()'s handlers would race their threads: _exit */
	if (ret && opts.nr_shm > 1)
		_exit(fail(ret, "%s", why));
	if (ret)
		return fail(ret, "%s", why);
	ret = shm_serve_loop(s);
	if (ret && opts.nr_shm > 1)
		_exit(fail(ret, "signalling colocd: %s", strerror(-ret)));
	if (ret)
		return fail(ret, "signalling colocd: %s", strerror(-ret));
	/* an exit command on lane 0 ends the others too, wherever they are */
	if (opts.nr_shm > 1)
		_exit(0);
	/* asked to exit: leave nothing behind (LeakSanitizer checks in SANITIZE builds) */
	shm_serve_release(s);
	exec_model_free(s->em);
	model_free(s->m);
	return 0;
}
