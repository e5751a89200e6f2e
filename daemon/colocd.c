// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd: the coloc daemon. Parses its flags, refuses to run as anyone but
 * root, takes the control socket (one daemon per socket), loads the
 * interference sensor and pins its maps, starts the serving core (and
 * submits again the tenants of --state), then runs the event loop until
 * SIGINT/SIGTERM: then it stops accepting, lets the queries in flight finish
 * (COLOCD_DRAIN_MS at most), stops the executors, detaches, unpins and
 * removes the socket before exiting 0. Each part registers its own sources
 * on the loop; main only registers the signals that end it.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include "bpffs.h"
#include "colocd.h"
#include "control.h"
#include "fd_closer.h"
#include "server.h"
#include "submit_copy.h"
#include "cli.h"
#include "policy.h"
#include "profile.h"
#include "mono_clock.h"
#include "oom_first.h"
#include "host_group.h"
#include "subid.h"
#include "subid_tenants.h"
#include "util.h"

#define COLOCD_DRAIN_MS 5000
#define COLOCD_DRAIN_POLL_NS 10000000ull

static struct colocd_config config = {
	.pin_dir = COLOC_DEFAULT_PIN_DIR,
	.socket_path = COLOC_DEFAULT_SOCKET,
	.sample_hz = 0, /* the scheduler tick */
	.window_ms = 10,
	.span_ms = 1000,
	.conn_timeout_ms = SERVER_DEFAULT_TIMEOUT_MS,
	.submit_timeout_ms = SUBMIT_COPY_DEFAULT_TIMEOUT_MS,
	.verbose = false,
	.max_tenants_per_uid = COLOCD_DEFAULT_TENANTS_PER_UID,
	.max_executors_per_uid = COLOCD_DEFAULT_EXECUTORS_PER_UID,
	.max_queued_per_uid = COLOCD_DEFAULT_QUEUED_PER_UID,
	.max_input_mib_per_uid = COLOCD_DEFAULT_INPUT_MIB_PER_UID,
	.max_submit_mib_per_uid = COLOCD_DEFAULT_SUBMIT_MIB_PER_UID,
};

/* What preparing the pin dir did: an operator wants to know of a mount or a crash's leftovers. */
static void print_pin_notes(const struct bpffs_dir *pins)
{
	if (pins && pins->mounted)
		printf("colocd: mounted bpffs at /sys/fs/bpf\n");
	if (pins && pins->stale_removed)
		printf("colocd: removed %d stale pin(s) from %s left by an earlier run\n",
		       pins->stale_removed, pins->path);
}

/* --help's lines: lead (an option, its argument) then text from column, wrapped at 80. */
#define HELP_WIDTH 80
#define HELP_COLUMN 20

static void print_wrapped(FILE *out, const char *lead, int column, const char *text)
{
	int at = fprintf(out, "%s", lead);

	if (at + 2 > column)
		at += fprintf(out, "  ");
	for (const char *p = text; *p; p += strspn(p, " ")) {
		int word = (int)strcspn(p, " ");

		if (at > column && at + 1 + word > HELP_WIDTH) {
			fprintf(out, "\n");
			at = 0;
		}
		if (at < column)
			at += fprintf(out, "%*s", column - at, "");
		else if (at > column && p != text)
			at += fprintf(out, " ");
		at += fprintf(out, "%.*s", word, p);
		p += word;
	}
	fprintf(out, "\n");
}

static void print_policies(FILE *out)
{
	const struct policy_entry *e;

	for (int i = 0; (e = policy_entry_at(i)); i++) {
		char lead[64];

		snprintf(lead, sizeof(lead), "      %s", e->name);
		print_wrapped(out, lead, 26, e->description);
	}
}

/* "FIRST-LAST", both within 1..2^31-1 (sandbox_create checks the rest). */
static int parse_uid_range(const char *s)
{
	char first[16];
	const char *dash = strchr(s, '-');
	long a, b;

	if (!dash || dash == s || (size_t)(dash - s) >= sizeof(first)) {
		fprintf(stderr, "colocd: --uid-range wants FIRST-LAST, e.g. %u-%u\n",
			SANDBOX_DEFAULT_UID_FIRST, SANDBOX_DEFAULT_UID_LAST);
		return 2;
	}
	snprintf(first, sizeof(first), "%.*s", (int)(dash - s), s);
	if (cli_parse_flag("colocd", "--uid-range", first, 1, 0x7fffffffL, &a) ||
	    cli_parse_flag("colocd", "--uid-range", dash + 1, a, 0x7fffffffL, &b))
		return 2;
	config.sandbox.uid_first = (uid_t)a;
	config.sandbox.uid_last = (uid_t)b;
	return 0;
}

/* --policy NAME: one of the policy library's. */
static int parse_policy(const char *arg)
{
	if (!policy_find(arg)) {
		fprintf(stderr, "colocd: no policy '%s'; see --help\n", arg);
		return 2;
	}
	config.policy = arg;
	return 0;
}

static int parse_late(const char *arg)
{
	if (strcmp(arg, "drop") && strcmp(arg, "serve")) {
		fprintf(stderr, "colocd: --late takes drop or serve, not '%s'\n", arg);
		return 2;
	}
	config.late_serve = !strcmp(arg, "serve");
	return 0;
}

static int parse_state(const char *arg)
{
	if (arg[0] != '/') {
		fprintf(stderr, "colocd: --state needs an absolute path\n");
		return 2;
	}
	config.state_path = arg;
	return 0;
}

static const char *subuid_file = SUBID_DEFAULT_UID_FILE, *subgid_file = SUBID_DEFAULT_GID_FILE;
static const char *host_group_file;
static unsigned long long executor_memory_mib = SANDBOX_DEFAULT_MEMORY_MIB;
static unsigned long long executor_mib_per_uid, executor_mib_all;
static bool span_given, executor_memory_given, executor_mib_per_uid_given, executor_mib_all_given;
static bool submit_mib_given;

/*
 * What an option sets: a string, a flag, a number in [lo, hi], or its own
 * parser's doing; and *given, where there is one, when it is given at all.
 */
enum colocd_arg_kind { ARG_STRING, ARG_FLAG, ARG_UINT, ARG_INT, ARG_ULL, ARG_PARSER };

struct colocd_option {
	const char *name;
	char short_name; /* -v; 0: none */
	enum colocd_arg_kind kind;
	void *target; /* const char **, bool *, unsigned int *, int *, unsigned long long * */
	long lo, hi;
	int (*parse)(const char *arg); /* ARG_PARSER: 0, or 2 having said why */
	bool *given;
	/*
	 * --help's line, made from this entry: "--NAME ARG  help, LO-HI
	 * (default D)". D is dflt where given ("" for none), else the target's
	 * value as colocd starts.
	 */
	const char *arg, *help, *dflt;
	void (*more)(FILE *out); /* lines after the option's own (the policies) */
};

#define STR_(x) #x
#define STR(x) STR_(x)
/* the numbers --help writes out where a macro's spelling is not one */
_Static_assert(VIEW_RING - 2 == 126, "--span-ms's help: at most 126 windows");
_Static_assert(SANDBOX_DEFAULT_UID_FIRST == 1879048192u && SANDBOX_DEFAULT_UID_LAST == 1879052287u,
	       "--uid-range's help: its default");
_Static_assert(TENANTS_MEMBERS_PART == 48 && COLOC_MAX_TENANTS == 64,
	       "--max-tenants-per-uid's help: the members' 48 of 64");
_Static_assert(SERVING_DEFAULT_QUEUE_TOTAL - SERVING_ROOT_SHARE(SERVING_DEFAULT_QUEUE_TOTAL) ==
		       3072,
	       "--max-queued-per-uid's help: the members' 3072 of 4096");
static const struct colocd_option options[] = {
	{ "pin-dir", 0, ARG_STRING, &config.pin_dir, .arg = "DIR",
	  .help = "where the BPF maps are pinned for bpftool" },
	{ "socket", 0, ARG_STRING, &config.socket_path, .arg = "PATH", .help = "control socket" },
	{ "sample-hz", 0, ARG_UINT, &config.sample_hz, 1, 100000, .arg = "N",
	  .help = "sample on a cpu-clock timer at N Hz per CPU instead of the scheduler tick",
	  .dflt = "the tick, which adds no interrupt; a " STR(
		  SENSOR_FALLBACK_HZ) " Hz timer where the tick cannot be traced" },
	{ "window-ms", 0, ARG_UINT, &config.window_ms, 1, 1000, .arg = "N",
	  .help = "length of a record window in ms" },
	{ "span-ms", 0, ARG_UINT, &config.span_ms, 1, 10000, .given = &span_given, .arg = "N",
	  .help = "span of the rolling view in ms, at most 126 windows" },
	{ "conn-timeout-ms", 0, ARG_UINT, &config.conn_timeout_ms, 100, 3600000, .arg = "N",
	  .help = "close a connection idle or stalled this long" },
	{ "submit-timeout-ms", 0, ARG_UINT, &config.submit_timeout_ms, 100, 3600000, .arg = "N",
	  .help = "answer a submit whose files are not read within this long with an error (a "
		  "file on a filesystem that stalls its reads), and copy the next submit's" },
	{ "executor", 0, ARG_STRING, &config.executor, .arg = "PATH",
	  .help = "the executor run per tenant",
	  .dflt = "coloc-executor beside colocd, or in $COLOC_BIN" },
	{ "subuid-file", 0, ARG_STRING, &subuid_file, .arg = "FILE",
	  .help = "subordinate uid ranges, refused as one member's many uids (root's file; "
		  "read again on SIGHUP)" },
	{ "subgid-file", 0, ARG_STRING, &subgid_file, .arg = "FILE",
	  .help = "subordinate gid ranges, refused the same way" },
	{ "host-group-file", 0, ARG_STRING, &host_group_file, .arg = "FILE",
	  .help = "the node's /etc/group, for colocd in a container (the DaemonSet's "
		  "/host/etc/group): colocd refuses to start where its image's '" COLOC_GROUP
		  "' gid is another group there, and serves root alone while it is (checked "
		  "again when the file changes and on SIGHUP)",
	  .dflt = "none: colocd's /etc/group is the host's" },
	{ "cache-dir", 0, ARG_STRING, &config.cache_dir, .arg = "DIR", .help = "latency profiles",
	  .dflt = "$COLOC_CACHE_DIR, else " PROFILE_DEFAULT_CACHE_DIR },
	{ "state", 0, ARG_PARSER, .parse = parse_state, .arg = "FILE",
	  .help = "keep the submitted tenants in FILE and submit them again at start (FILE in a "
		  "directory only root may write)",
	  .dflt = "none; a restart starts empty" },
	{ "policy", 0, ARG_PARSER, .parse = parse_policy, .arg = "NAME",
	  .help = "which query runs where; one of the list below", .dflt = SERVING_DEFAULT_POLICY,
	  .more = print_policies },
	{ "late", 0, ARG_PARSER, .parse = parse_late, .arg = "drop|serve",
	  .help = "a query that cannot meet its deadline is served after those on time, dropped "
		  "and counted only when its answer would come past its deadline plus its QoS "
		  "(drop), or served late in order (serve)",
	  .dflt = "drop" },
	{ "no-plan-ahead", 0, ARG_FLAG, &config.no_plan_ahead,
	  .help = "one block per command to an executor, a round trip through colocd between "
		  "any two; by default a query alone runs its policy's next blocks in one "
		  "command" },
	{ "executor-lanes", 0, ARG_FLAG, &config.executor_lanes,
	  .help = "a tenant's N executors as N lanes of one process that share one copy of "
		  "the model, instead of N processes each with its own (docs/design/lanes.md)" },
	{ "block-log", 0, ARG_STRING, &config.block_log, .arg = "FILE",
	  .help = "write one line per finished block to FILE (tab-separated, a header names "
		  "the columns): the policy's prediction next to the executor's measurement" },
	{ "max-tenants-per-uid", 0, ARG_INT, &config.max_tenants_per_uid, 1, COLOC_MAX_TENANTS,
	  .arg = "N",
	  .help = "serving tenants one user other than root may submit, and attributed "
		  "tenants (tenant add) apart; the default is a fifth of the 48 of the 64 that "
		  "members may hold together (the rest are root's), so four members at their "
		  "quota leave a fifth its own" },
	{ "max-executors-per-uid", 0, ARG_INT, &config.max_executors_per_uid, 1,
	  COLOC_MAX_TENANTS *SERVING_MAX_EXECUTORS, .arg = "N",
	  .help = "executor processes over one user's serving tenants" },
	{ "max-queued-per-uid", 0, ARG_INT, &config.max_queued_per_uid, 1,
	  SERVING_DEFAULT_QUEUE_TOTAL, .arg = "N",
	  .help = "queries queued or running over one user's tenants (root is held to the "
		  "global limits only); the default is a fifth of the 3072 of the 4096 that "
		  "members may queue together (the rest are root's)" },
	{ "max-input-mib-per-uid", 0, ARG_INT, &config.max_input_mib_per_uid, 1, 1 << 20,
	  .arg = "MIB",
	  .help = "queued inputs colocd holds for one user's tenants (the bytes after an "
		  "infer's line; an input in a memfd is the client's memory)" },
	{ "max-submit-mib-per-uid", 0, ARG_INT, &config.max_submit_mib_per_uid, 1, 1 << 20,
	  .arg = "MIB",
	  .help = "submitted files (model, weights, external data) one user's tenants hold, "
		  "in colocd's memory and in --state's directory, for the tenants' life; at "
		  "most a fifth of what members may fill of --max-submit-mib" },
	{ "max-submit-mib", 0, ARG_ULL, &config.max_submit_mib, 1, 1L << 30,
	  .given = &submit_mib_given, .arg = "MIB",
	  .help = "submitted files all tenants hold together, root's included; members' "
		  "submits are refused past three quarters of it, the last quarter is root's",
	  .dflt = "a quarter of the machine's memory" },
	{ "uid-range", 0, ARG_PARSER, .parse = parse_uid_range, .arg = "A-B",
	  .help = "uids (and gids) for the tenants' executors, one of its own each, skipping "
		  "any NSS knows as a user or group (looked up at start and on SIGHUP) or that "
		  "runs a process; at most 65536",
	  .dflt = "the first of the 16 slots of 1879048192-1879052287 that no other colocd "
		  "holds" },
	{ "uid-lock-dir", 0, ARG_STRING, &config.sandbox.uid_lock_dir, .arg = "DIR",
	  .help = "where colocds lock their slots of the default uid range (a directory of "
		  "root's that no one else may write)",
	  .dflt = "/run/coloc/executor-uids" },
	{ "executor-memory", 0, ARG_ULL, &executor_memory_mib, 64, 1L << 30,
	  .given = &executor_memory_given, .arg = "MIB",
	  .help = "memory of one tenant's cgroup; each executor's address space is bounded at "
		  "4x that",
	  .dflt = "16384, or --max-executor-mib-per-uid (where 0, --max-executor-mib) where "
		  "that is less" },
	{ "max-executor-mib-per-uid", 0, ARG_ULL, &executor_mib_per_uid, 0, 1L << 30,
	  .given = &executor_mib_per_uid_given, .arg = "MIB",
	  .help = "memory of the executors of one user's tenants together (root's are bounded "
		  "by tenant and --max-executor-mib only); 0: no bound",
	  .dflt = "a quarter of the machine's memory, or a fifth of the members' three "
		  "quarters of --max-executor-mib where that is less; at most those three "
		  "quarters" },
	{ "max-executor-mib", 0, ARG_ULL, &executor_mib_all, 0, 1L << 30,
	  .given = &executor_mib_all_given, .arg = "MIB",
	  .help = "memory of all executors of this colocd together (colocd's own, the "
		  "submitted files among it, is not counted); members' executors together are "
		  "bounded at three quarters of it, the last quarter is root's; 0: no bound",
	  .dflt = "half of the machine's memory" },
	{ "cgroup-root", 0, ARG_STRING, &config.sandbox.cgroup_base, .arg = "DIR",
	  .help = "the tenants' cgroups go under DIR",
	  .dflt = "cgroup v2: its own cgroup's tenants/ when systemd delegated it, else "
		  "/sys/fs/cgroup/coloc; v1: coloc under colocd's own cgroup" },
	{ "allow-weak-isolation", 0, ARG_FLAG, &config.sandbox.allow_weak,
	  .help = "start executors even where a layer of their sandbox cannot be had "
		  "(namespaces, cgroups, Landlock); the tenant's status then says what is "
		  "missing" },
	{ "no-namespaces", 0, ARG_FLAG, &config.sandbox.no_namespaces,
	  .help = "start executors in colocd's namespaces (needs --allow-weak-isolation)" },
	{ "no-cgroups", 0, ARG_FLAG, &config.sandbox.no_cgroups,
	  .help = "no cgroup per tenant (needs --allow-weak-isolation)" },
	{ "verbose", 'v', ARG_FLAG, &config.verbose, .help = "print libbpf's messages" },
};
#define NR_OPTIONS (int)(sizeof(options) / sizeof(options[0]))
#define OPTION_VAL 256 /* getopt's value for options[i] is OPTION_VAL + i */

/* o's line (or lines) of --help, made from its entry. */
static void print_option(FILE *out, const struct colocd_option *o)
{
	char lead[64], text[512], range[48] = "", dflt[256] = "";

	if (o->short_name)
		snprintf(lead, sizeof(lead), "  -%c, --%s", o->short_name, o->name);
	else
		snprintf(lead, sizeof(lead), "  --%s", o->name);
	if (o->arg)
		snprintf(lead + strlen(lead), sizeof(lead) - strlen(lead), " %s", o->arg);
	if (o->hi > o->lo)
		snprintf(range, sizeof(range), ", %ld-%ld", o->lo, o->hi);
	if (o->dflt)
		snprintf(dflt, sizeof(dflt), "%s", o->dflt);
	else if (o->kind == ARG_STRING && *(const char **)o->target)
		snprintf(dflt, sizeof(dflt), "%s", *(const char **)o->target);
	else if (o->kind == ARG_UINT)
		snprintf(dflt, sizeof(dflt), "%u", *(unsigned int *)o->target);
	else if (o->kind == ARG_INT)
		snprintf(dflt, sizeof(dflt), "%d", *(int *)o->target);
	else if (o->kind == ARG_ULL)
		snprintf(dflt, sizeof(dflt), "%llu", *(unsigned long long *)o->target);
	snprintf(text, sizeof(text), "%s%s%s%s%s", o->help, range, dflt[0] ? " (default " : "",
		 dflt, dflt[0] ? ")" : "");
	print_wrapped(out, lead, HELP_COLUMN, text);
	if (o->more)
		o->more(out);
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: colocd [OPTION]...\n"
		"The coloc daemon: samples per-core and per-tenant interference signals with eBPF\n"
		"and serves them on a control socket (see colocctl). Runs as root.\n"
		"\n");
	for (int i = 0; i < NR_OPTIONS; i++)
		print_option(out, &options[i]);
	fprintf(out,
		"  -h, --help        this help\n"
		"  -V, --version     print the version and exit\n"
		"\n"
		"Tenants: colocctl submit NAME MODEL --qos-ms X; queries: colocctl infer NAME.\n"
		"A tenant belongs to the user who made it: only that user and root may\n"
		"remove, restart, query it or see more than its name and state.\n"
		"On SIGTERM colocd stops accepting, lets queries in flight finish (%d s at\n"
		"most), stops the executors and unpins.\n"
		"\n"
		"Inspect while it runs:  bpftool map dump pinned %s/cpu_live\n"
		"                        colocctl signals; colocctl status\n",
		COLOCD_DRAIN_MS / 1000, COLOC_DEFAULT_PIN_DIR);
}

/* options[i] given arg; 0, or 2 having said why. */
static int apply_option(const struct colocd_option *o, const char *arg)
{
	char flag[48];
	long v;

	if (o->given)
		*o->given = true;
	switch (o->kind) {
	case ARG_STRING:
		*(const char **)o->target = arg;
		return 0;
	case ARG_FLAG:
		*(bool *)o->target = true;
		return 0;
	case ARG_UINT:
	case ARG_INT:
	case ARG_ULL:
		snprintf(flag, sizeof(flag), "--%s", o->name);
		if (cli_parse_flag("colocd", flag, arg, o->lo, o->hi, &v))
			return 2;
		if (o->kind == ARG_UINT)
			*(unsigned int *)o->target = (unsigned int)v;
		else if (o->kind == ARG_INT)
			*(int *)o->target = (int)v;
		else
			*(unsigned long long *)o->target = (unsigned long long)v;
		return 0;
	case ARG_PARSER:
		return o->parse(arg);
	}
	return 2;
}

/* The executors' memory bounds, each within the next one set (docs/operators.md). */
struct memory_bound {
	const char *flag;
	unsigned long long *mib;
	const bool *given;
	unsigned long long lo; /* where lowering it would take it below, it is refused */
	const char *holds; /* as the bound above another, for the refusal (NULL: the innermost) */
};

static const struct memory_bound memory_bounds[] = {
	{ "--executor-memory", &executor_memory_mib, &executor_memory_given, 64, NULL },
	{ "--max-executor-mib-per-uid", &executor_mib_per_uid, &executor_mib_per_uid_given, 0,
	  "the executors of one user's tenants" },
	{ "--max-executor-mib", &executor_mib_all, &executor_mib_all_given, 0,
	  "all executors of this colocd" },
};
#define NR_MEMORY_BOUNDS (int)ARRAY_SIZE(memory_bounds)

/*
 * Each bound within the next one set, from the outermost in: lowered to
 * it where left at its default, refused with both numbers where given
 * above it. 0 or 2 having said why.
 */
static int nest_memory_bounds(void)
{
	unsigned long long mem = (unsigned long long)sysconf(_SC_PHYS_PAGES) *
				 (unsigned long long)sysconf(_SC_PAGESIZE);

	if (!executor_mib_per_uid_given)
		executor_mib_per_uid = mem / 4 >> 20;
	if (!executor_mib_all_given)
		executor_mib_all = mem / 2 >> 20;
	if (!submit_mib_given)
		config.max_submit_mib = mem / 4 >> 20;
	/*
	 * a member's executors: a fifth of the members' part as its default,
	 * never above the part (one member would fill it: the kernel then
	 * kills the largest executor in it, another member's)
	 */
	if (!executor_mib_per_uid_given && executor_mib_all &&
	    executor_mib_per_uid > SANDBOX_MEMBER_SHARE(SANDBOX_MEMBERS_MEMORY(executor_mib_all)))
		executor_mib_per_uid = SANDBOX_MEMBER_SHARE(SANDBOX_MEMBERS_MEMORY(executor_mib_all));
	if (executor_mib_per_uid_given && executor_mib_all &&
	    executor_mib_per_uid > SANDBOX_MEMBERS_MEMORY(executor_mib_all)) {
		fprintf(stderr,
			"colocd: --max-executor-mib-per-uid %llu MiB is above %llu MiB, the members' "
			"part of --max-executor-mib %llu%s (three quarters: the rest is root's): one "
			"member could fill it, and the kernel would kill another member's executor; "
			"lower the first (its default is a fifth of the part) or raise the second\n",
			executor_mib_per_uid, SANDBOX_MEMBERS_MEMORY(executor_mib_all),
			executor_mib_all, executor_mib_all_given ? "" : ", left at its default");
		return 2;
	}
	for (int i = NR_MEMORY_BOUNDS - 2; i >= 0; i--) {
		const struct memory_bound *in = &memory_bounds[i], *out = NULL;

		for (int j = i + 1; j < NR_MEMORY_BOUNDS && !out; j++)
			if (*memory_bounds[j].mib)
				out = &memory_bounds[j];
		if (!out || *in->mib <= *out->mib)
			continue;
		if (*in->given || *out->mib < in->lo) {
			fprintf(stderr,
				"colocd: %s %llu MiB is above %llu MiB, what %s may hold together "
				"(%s%s): lower the first or raise the second\n",
				in->flag, *in->mib, *out->mib, out->holds, out->flag,
				*out->given ? "" : ", left at its default");
			return 2;
		}
		*in->mib = *out->mib;
	}
	config.sandbox.memory_max = executor_memory_mib << 20;
	config.sandbox.memory_per_uid_max = executor_mib_per_uid << 20;
	config.sandbox.memory_all_max = executor_mib_all << 20;
	return 0;
}

/* The checks across options, once all are in; 0 or 2 having said why. */
static int check_args(void)
{
	if (nest_memory_bounds())
		return 2;
	/* a window needs a couple of periodic samples, or idle-looking gaps appear */
	if (config.sample_hz && (unsigned long)config.sample_hz * config.window_ms < 2000) {
		fprintf(stderr,
			"colocd: --sample-hz %u gives fewer than 2 samples per %u ms window; "
			"raise it to at least %u or lengthen --window-ms\n",
			config.sample_hz, config.window_ms,
			(2000 + config.window_ms - 1) / config.window_ms);
		return 2;
	}
	if (!config.sample_hz && config.window_ms < SENSOR_TICK_MIN_WINDOW_MS) {
		fprintf(stderr,
			"colocd: --window-ms %u is shorter than the scheduler tick may be; use at "
			"least %d, or sample on a timer with --sample-hz\n",
			config.window_ms, SENSOR_TICK_MIN_WINDOW_MS);
		return 2;
	}
	if (config.span_ms < config.window_ms) {
		fprintf(stderr, "colocd: --span-ms %u is shorter than one %u ms window\n",
			config.span_ms, config.window_ms);
		return 2;
	}
	if (!span_given && config.span_ms / config.window_ms > VIEW_RING - 2)
		config.span_ms = (VIEW_RING - 2) * config.window_ms;
	if (config.span_ms / config.window_ms > VIEW_RING - 2) {
		fprintf(stderr,
			"colocd: --span-ms %u covers more than the %d windows kept; at most %u ms "
			"with %u ms windows\n",
			config.span_ms, VIEW_RING - 2, (VIEW_RING - 2) * config.window_ms,
			config.window_ms);
		return 2;
	}
	return 0;
}

/* 0: run; 1: done (--help, --version); 2: a bad option, said. */
static int parse_args(int argc, char **argv)
{
	struct option opts[NR_OPTIONS + 3];
	char shorts[2 * NR_OPTIONS + 3] = "hV";
	int opt, ret, n = 2;

	for (int i = 0; i < NR_OPTIONS; i++) {
		bool flag = options[i].kind == ARG_FLAG;

		opts[i] = (struct option){ options[i].name, flag ? no_argument : required_argument,
					   NULL, OPTION_VAL + i };
		if (options[i].short_name) {
			shorts[n++] = options[i].short_name;
			if (!flag)
				shorts[n++] = ':';
		}
	}
	shorts[n] = '\0';
	opts[NR_OPTIONS] = (struct option){ "help", no_argument, NULL, 'h' };
	opts[NR_OPTIONS + 1] = (struct option){ "version", no_argument, NULL, 'V' };
	opts[NR_OPTIONS + 2] = (struct option){ 0 };
	while ((opt = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
		for (int i = 0; i < NR_OPTIONS && opt < OPTION_VAL; i++)
			if (opt == options[i].short_name)
				opt = OPTION_VAL + i;
		if (opt >= OPTION_VAL && opt < OPTION_VAL + NR_OPTIONS) {
			ret = apply_option(&options[opt - OPTION_VAL], optarg);
			if (ret)
				return ret;
		} else if (opt == 'h') {
			usage(stdout);
			return 1;
		} else if (opt == 'V') {
			cli_print_version("colocd");
			return 1;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "colocd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	return check_args();
}

static int stop_signal;
static struct server *server;
static __u64 drain_end_ns;

/* Nothing left to finish: no query queued or running, and every answer written out. */
static bool drained(struct colocd *d)
{
	return !colocd_serving_busy(d) && !server_has_output(server);
}

/* While draining: exits once drained, or when the time is up. */
static void on_drain_check(struct loop_source *src, __u64 now_ns, void *ctx)
{
	struct colocd *d = ctx;

	(void)src;
	if (drained(d) || now_ns >= drain_end_ns)
		loop_exit(d->loop, 0);
}

static void on_stop_signal(struct loop_source *src, const struct signalfd_siginfo *si, void *ctx)
{
	struct colocd *d = ctx;
	int busy = colocd_serving_busy(d);

	(void)src;
	/*
	 * A second signal while draining: stop now. Answers still queued for
	 * their sockets are drained too: exiting on them would close the
	 * connections before the clients read what was computed for them.
	 */
	if (d->draining || drained(d) ||
	    loop_add_timer(d->loop, NULL, COLOCD_DRAIN_POLL_NS, COLOCD_DRAIN_POLL_NS,
			   on_drain_check, d)) {
		stop_signal = (int)si->ssi_signo;
		loop_exit(d->loop, 0);
		return;
	}
	stop_signal = (int)si->ssi_signo;
	d->draining = true;
	drain_end_ns = coloc_now_ns() + COLOCD_DRAIN_MS * 1000000ull;
	server_stop_listening(server);
	fprintf(stderr, "colocd: %s, finishing %d quer%s in flight\n", strsignal(stop_signal), busy,
		busy == 1 ? "y" : "ies");
}

/*
 * SIGHUP: which executor uids are users', groups' or running is looked up
 * again, off the loop; the node's group file is checked again
 * (host_group.h); the subordinate ids are read again, and what their uids
 * hold (connections, tenants) ends.
 */
static void on_hup_signal(struct loop_source *src, const struct signalfd_siginfo *si, void *ctx)
{
	struct colocd *d = ctx;
	struct coloc_err err = { 0 };
	int conns, tenants;

	(void)src;
	(void)si;
	if (d->sandbox && !sandbox_refresh_uids(d->sandbox))
		printf("colocd: SIGHUP: looking up again which executor uids are taken\n");
	if (host_group_file)
		host_group_reload();
	if (subid_load(subuid_file, subgid_file, &err)) {
		fprintf(stderr, "colocd: SIGHUP: subordinate ids kept as they were: %s\n",
			coloc_err_str(&err));
		return;
	}
	conns = server_drop_subordinate(server);
	tenants = subid_tenants_remove(d);
	printf("colocd: SIGHUP: %d subordinate id ranges read again, %d connections of "
	       "subordinate ids closed, %d tenants of subordinate uids removed\n",
	       subid_nr_ranges(), conns, tenants);
}

/*
 * Submits the tenants --state kept; one that fails is reported and the
 * others go on. The file is left as it is meanwhile, so a tenant that did
 * not come back (its model missing for now) stays in it until the next
 * submit or remove rewrites it.
 */
static void load_state(struct colocd *d)
{
	struct colocd_spec *specs = calloc(COLOC_MAX_TENANTS, sizeof(*specs));
	struct coloc_err err = { 0 };
	int n;

	if (!specs)
		return;
	n = colocd_state_read(config.state_path, specs, &err);
	if (n < 0)
		fprintf(stderr, "colocd: %s; starting with no tenants\n", coloc_err_str(&err));
	else if (colocd_state_rekey(config.state_path, specs, n, &err))
		fprintf(stderr, "colocd: %s\n", coloc_err_str(&err));
	for (int i = 0; i < n; i++) {
		struct colocd_files files;
		int ret;

		coloc_err_clear(&err);
		ret = colocd_state_files(config.state_path, &specs[i], &files, &err);
		if (!ret) {
			/* its outcome is logged once its executors got ready with the model */
			ret = control_submit_spec(d, &specs[i], &files, NULL, 0, &err);
			colocd_files_close(&files, specs[i].nr_external);
		}
		if (ret)
			fprintf(stderr, "colocd: tenant %s from %s did not come back: %s\n",
				specs[i].name, config.state_path, coloc_err_str(&err));
	}
	free(specs);
}

static const char *rlim_shown(rlim_t v, char *buf, size_t len)
{
	if (v == RLIM_INFINITY)
		return "unlimited";
	snprintf(buf, len, "%llu", (unsigned long long)v);
	return buf;
}

/*
 * The hard RLIMIT_NOFILE held under what fd_closer can queue, then the
 * soft one raised to it (a pidfd per attributed process: as many files as
 * allowed); line says both limits before and after, for the start-up log.
 */
static void set_nofile(char *line, size_t len)
{
	struct rlimit was = { 0 }, now = { 0 };
	char b[4][24];

	getrlimit(RLIMIT_NOFILE, &was);
	fd_closer_limit_nofile();
	if (!getrlimit(RLIMIT_NOFILE, &now) && now.rlim_cur < now.rlim_max) {
		now.rlim_cur = now.rlim_max;
		setrlimit(RLIMIT_NOFILE, &now);
	}
	getrlimit(RLIMIT_NOFILE, &now);
	snprintf(line, len,
		 "descriptors: RLIMIT_NOFILE soft %s hard %s at start, soft %s hard %s now%s",
		 rlim_shown(was.rlim_cur, b[0], sizeof(b[0])),
		 rlim_shown(was.rlim_max, b[1], sizeof(b[1])),
		 rlim_shown(now.rlim_cur, b[2], sizeof(b[2])),
		 rlim_shown(now.rlim_max, b[3], sizeof(b[3])),
		 now.rlim_max < was.rlim_max ? " (the hard limit lowered to what the closer "
					       "threads' queue can index)" :
					       "");
}

/*
 * The kernel's OOM killer takes colocd, which holds every tenant's
 * submitted files, last: its executors first (oom_score_adj 1000,
 * execproc_spawn.c). dist/colocd.service.in says the same.
 */
#define COLOCD_OOM_SCORE_ADJ -900

static void lower_oom_score(void)
{
	char now[16] = "";
	FILE *f = fopen("/proc/self/oom_score_adj", "re");
	int ret;

	if (f && !fgets(now, sizeof(now), f))
		now[0] = '\0';
	now[strcspn(now, "\n")] = '\0';
	if (f)
		fclose(f);
	if (now[0] && atoi(now) <= COLOCD_OOM_SCORE_ADJ)
		return;
	ret = oom_score_self(COLOCD_OOM_SCORE_ADJ);
	if (ret)
		fprintf(stderr,
			"colocd: cannot lower its oom_score_adj to %d (%s): it stays at %s, and the "
			"OOM killer may take colocd before an executor; start it lower "
			"(OOMScoreAdjust= in its unit, a Guaranteed QoS pod in Kubernetes) or give "
			"it CAP_SYS_RESOURCE\n",
			COLOCD_OOM_SCORE_ADJ, strerror(-ret), now[0] ? now : "unknown");
}

int main(int argc, char **argv)
{
	struct server_config scfg = { 0 };
	struct coloc_err cerr = { 0 };
	char nofile_line[256], host_group_line[512] = "";
	struct loop *loop = NULL;
	struct colocd *d;
	int err;

	err = parse_args(argc, argv);
	if (err)
		return err == 1 ? 0 : err;
	if (geteuid() != 0) {
		fprintf(stderr, "colocd: must run as root (it loads BPF programs and pins maps)\n");
		return 1;
	}
	/* executors' uids clear of subordinate ones, at start and each reload (subid.h) */
	if (config.sandbox.uid_first)
		subid_guard(config.sandbox.uid_first, config.sandbox.uid_last);
	else
		subid_guard(SANDBOX_DEFAULT_UID_FIRST, SANDBOX_DEFAULT_UID_LAST);
	if (subid_load(subuid_file, subgid_file, &cerr)) {
		fprintf(stderr, "colocd: %s\n", coloc_err_str(&cerr));
		return 1;
	}
	if (host_group_file &&
	    host_group_check(host_group_file, host_group_line, sizeof(host_group_line), &cerr)) {
		fprintf(stderr, "colocd: %s\n", coloc_err_str(&cerr));
		return 1;
	}
	if (config.state_path && colocd_state_check_dir(config.state_path, &cerr)) {
		fprintf(stderr, "colocd: %s\n", coloc_err_str(&cerr));
		return 1;
	}
	/* line-buffered so a supervisor or a pipe sees each message as it happens */
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	set_nofile(nofile_line, sizeof(nofile_line));
	lower_oom_score();

	d = calloc(1, sizeof(*d));
	if (!d)
		return 1;
	err = loop_new(&loop, &cerr);
	d->loop = loop;
	if (!err)
		err = loop_add_signal(loop, NULL, SIGINT, on_stop_signal, d);
	if (!err)
		err = loop_add_signal(loop, NULL, SIGTERM, on_stop_signal, d);
	if (!err)
		err = loop_add_signal(loop, NULL, SIGHUP, on_hup_signal, d);
	if (err) {
		fprintf(stderr, "colocd: %s\n", cerr.code ? coloc_err_str(&cerr) : strerror(-err));
		goto cleanup;
	}
	scfg.socket_path = config.socket_path;
	scfg.timeout_ms = config.conn_timeout_ms;
	err = server_open(&server, loop, &scfg, &cerr);
	if (!err)
		err = colocd_start(d, &config, loop, &cerr);
	if (!err && host_group_file)
		err = host_group_watch(loop, server, host_group_file, &cerr);
	if (err) {
		fprintf(stderr, "colocd: %s\n", coloc_err_str(&cerr));
		goto cleanup;
	}
	if (config.state_path)
		load_state(d);
	server_set_payload_check(server, control_payload_check);
	err = server_listen(server, control_serve, d, &cerr);
	if (err) {
		fprintf(stderr, "colocd: %s\n", coloc_err_str(&cerr));
		goto cleanup;
	}
	printf("colocd: %s\n", d->signals_line);
	printf("colocd: %s\n", server_rights_line(server));
	printf("colocd: %s\n", nofile_line);
	printf("colocd: subordinate ids: %d ranges from %s and %s, refused as a member's many "
	       "uids\n",
	       subid_nr_ranges(), subuid_file, subgid_file);
	if (host_group_line[0])
		printf("colocd: %s\n", host_group_line);
	print_pin_notes(sensor_pin_dir(d->sensor));
	printf("colocd: watching %d CPUs, sampling on %s, %u ms windows; maps pinned in %s; "
	       "socket %s\n",
	       sensor_nr_cpus(d->sensor), sensor_trigger_desc(d->sensor), config.window_ms,
	       config.pin_dir, config.socket_path);
	err = loop_run(loop, &cerr);
	if (err)
		fprintf(stderr, "colocd: %s\n", coloc_err_str(&cerr));
	else
		fprintf(stderr, "colocd: %s, shutting down\n", strsignal(stop_signal));
cleanup:
	/* the executors first: their last queries' answers go to open connections */
	colocd_stop(d);
	server_close(server);
	loop_free(loop);
	free(d);
	return err ? 1 : 0;
}
