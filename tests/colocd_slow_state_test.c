// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A member of group coloc (a uid of no account, as owners_test's) loops
 * submit and remove of a model with a large weights file against a real
 * colocd whose --state sits on a disk that does not answer: the first
 * copy of the tenant's files (a FIFO where its temporary file goes) stalls
 * the --state writer for the whole loop. colocd's descriptors, its
 * resident memory and the bytes of the memfds it holds stay where they
 * were after the first round, and root's `colocctl ping` is answered
 * after every step. At the end the disk answers and the file holds no
 * removed tenant. And a member's tenant kept under its bare name by a
 * colocd from before each owner's names were its own comes back as the
 * member's, kept under its key from then on.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "kselftest_harness.h"
#include "coloc/protocol.h"
#include "proc_fds.h"
#include "testutil.h"

#define MEMBER 64992 /* a uid no account on a test machine has */
#define ROUNDS 6
#define STEP_S 300 /* a submit waits for its executor to load: generous on a loaded machine */

static char cache_dir[64]; /* made once, shared by the forked tests */

__attribute__((constructor)) static void make_cache_dir(void)
{
	tu_shared_tmpdir("slow-state-test", cache_dir, sizeof(cache_dir));
}

/* What colocd holds: descriptors, resident memory, bytes of the memfds among them. */
struct held {
	int fds;
	long rss_kb;
	long long memfd_bytes;
};

/* A memfd's bytes into the struct held at ctx (proc_fds_each's callback). */
static void held_count_memfd(const char *path, const char *link, void *ctx)
{
	struct held *h = ctx;
	struct stat st;

	if (!strncmp(link, "/memfd:", 7) && !stat(path, &st))
		h->memfd_bytes += st.st_size;
}

static int held_of(pid_t pid, struct held *h)
{
	memset(h, 0, sizeof(*h));
	h->fds = proc_fds_each(pid, held_count_memfd, h);
	if (h->fds < 0)
		return -1;
	h->rss_kb = tu_proc_status_kb(pid, "VmRSS");
	return h->rss_kb > 0 ? 0 : -1;
}

/*
 * held_of() at its fewest descriptors over SETTLE_TRIES looks 100 ms apart:
 * a removed tenant's descriptors go to the member's closer thread, which
 * drains them within FD_CLOSER_DRAIN_MS (100 ms), so one look may catch a
 * few still waiting; a leak is there at every look.
 */
#define SETTLE_TRIES 5
static int held_settled(pid_t pid, struct held *h)
{
	for (int i = 0; i < SETTLE_TRIES; i++) {
		struct held now;

		if (held_of(pid, &now))
			return -1;
		if (!i || now.fds < h->fds)
			*h = now;
		usleep(100 * 1000);
	}
	return 0;
}

FIXTURE(slow)
{
	char dir[64], sock[128], pin[128], log[128], state[128], fifo[192];
	char model[128], weights[128], colocctl[512];
	gid_t coloc_gid;
	pid_t colocd;
};

FIXTURE_SETUP(slow)
{
	const char *root = getenv("COLOC_ROOT");
	const char *extra[] = { "--cache-dir", cache_dir, "--state", self->state, NULL };
	char src[PATH_MAX + 64], real[PATH_MAX], out[4096], bin[512], cmd[2 * PATH_MAX + 1024];
	struct group *g = getgrnam(COLOC_GROUP);

	self->colocd = 0;
	self->dir[0] = '\0';
	if (geteuid() != 0)
		SKIP(return, "needs root to run colocd and change uid");
	if (!g)
		SKIP(return, "no group " COLOC_GROUP " (tools/deps.sh makes it)");
	if (access("/usr/bin/setpriv", X_OK))
		SKIP(return, "no setpriv (util-linux) to run colocctl as a member");
	self->coloc_gid = g->gr_gid;
	snprintf(src, sizeof(src), "%s/models/mobilenet_v2.model", root ? root : ".");
	if (!realpath(src, real))
		SKIP(return, "%.900s not found (set COLOC_ROOT to the repo root)", src);
	ASSERT_NE(0, cache_dir[0]);
	ASSERT_EQ(0, tu_mount_bpffs());
	ASSERT_EQ(0, tu_quick_profile(real, cache_dir, out, sizeof(out))) TH_LOG("%s", out);
	tu_bin("colocctl", self->colocctl, sizeof(self->colocctl));
	ASSERT_EQ(0, tu_make_tmpdir("slow-state", self->dir, sizeof(self->dir)));
	/* the member reaches the socket and reads its files */
	ASSERT_EQ(0, chmod(self->dir, 0755));
	snprintf(self->model, sizeof(self->model), "%s/m.model", self->dir);
	snprintf(self->weights, sizeof(self->weights), "%s/m.weights", self->dir);
	snprintf(cmd, sizeof(cmd),
		 "cp '%s' '%s' && %s '%s' --save-weights '%s' && chmod 0644 '%s' '%s'", real,
		 self->model, tu_bin("coloc-run", bin, sizeof(bin)), self->model, self->weights,
		 self->model, self->weights);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s: %s", cmd, out);
	/* the profile key covers the weights: big's profile is of these */
	ASSERT_EQ(0, tu_quick_profile_weights(self->model, self->weights, cache_dir, out,
					      sizeof(out)))
	TH_LOG("%s", out);
	snprintf(self->sock, sizeof(self->sock), "%s/colocd.sock", self->dir);
	snprintf(self->log, sizeof(self->log), "%s/colocd.log", self->dir);
	snprintf(self->state, sizeof(self->state), "%s/state.json", self->dir);
	snprintf(self->pin, sizeof(self->pin), "/sys/fs/bpf/coloc-slow-state-%d", getpid());
	/* the disk that does not answer: the first copy of big's model waits on a FIFO */
	snprintf(src, sizeof(src), "%s.files", self->state);
	ASSERT_EQ(0, mkdir(src, 0700));
	snprintf(self->fifo, sizeof(self->fifo), "%s.files/%d:big.model.tmp", self->state, MEMBER);
	ASSERT_EQ(0, mkfifo(self->fifo, 0600));
	self->colocd = tu_start_colocd_with(self->sock, self->pin, self->log, extra);
	ASSERT_LT(0, self->colocd) TH_LOG("colocd did not start");
}

/*
 * Lets the stalled copy end: a reader takes the FIFO to its end. wait: the
 * writer is known to be in its open (else a reader that finds no writer
 * reads nothing).
 */
static void drain_fifo(const char *fifo, bool wait)
{
	int fd = open(fifo, O_RDONLY | O_CLOEXEC | (wait ? 0 : O_NONBLOCK));
	char buf[65536];

	if (fd < 0)
		return;
	fcntl(fd, F_SETFL, 0);
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
}

FIXTURE_TEARDOWN(slow)
{
	if (self->dir[0])
		drain_fifo(self->fifo, false);
	if (self->colocd > 0)
		tu_stop_colocd(self->colocd);
	if (self->dir[0]) {
		if (tu_remove_tree(self->dir))
			TH_LOG("could not remove %s", self->dir);
	}
}

/* colocctl ARGS as uid (0: root, else the member, in group coloc), bounded; its exit status. */
static int colocctl_as(FIXTURE_DATA(slow) * self, uid_t uid, const char *args, char *out,
		       size_t len)
{
	char cmd[3 * PATH_MAX], who[128] = "";

	if (uid)
		snprintf(who, sizeof(who), "setpriv --reuid=%u --regid=%u --groups=%u -- ", uid,
			 uid, self->coloc_gid);
	snprintf(cmd, sizeof(cmd), "timeout %d %s%s -s '%s' %s", STEP_S, who, self->colocctl,
		 self->sock, args);
	return tu_run(cmd, out, len);
}

/* Root's ping, answered within 10 s. */
static bool root_pinged(FIXTURE_DATA(slow) * self)
{
	char cmd[PATH_MAX + 600], out[1024];

	snprintf(cmd, sizeof(cmd), "timeout 10 %s -s '%s' ping", self->colocctl, self->sock);
	return tu_run(cmd, out, sizeof(out)) == 0;
}

TEST_F_TIMEOUT(slow, submit_remove__a_stalled_state_disk_holds_nothing_more_per_round, 1800)
{
	char args[3 * PATH_MAX], out[8192], *text;
	struct held first = { 0 }, h;
	size_t len;

	for (int round = 0; round < ROUNDS; round++) {
		snprintf(args, sizeof(args), "submit big '%s' --weights '%s' --qos-ms 60000",
			 self->model, self->weights);
		ASSERT_EQ(0, colocctl_as(self, MEMBER, args, out, sizeof(out)))
		TH_LOG("round %d: submit: %s", round, out);
		ASSERT_TRUE(root_pinged(self)) TH_LOG("round %d: no answer to root's ping", round);
		ASSERT_EQ(0, colocctl_as(self, MEMBER, "remove big", out, sizeof(out)))
		TH_LOG("round %d: remove: %s", round, out);
		ASSERT_TRUE(root_pinged(self)) TH_LOG("round %d: no answer to root's ping", round);
		/* the removed tenant's executor leaves through the loop: until it is reaped */
		ASSERT_TRUE(tu_no_children(self->colocd, 60000))
		TH_LOG("round %d: the removed tenant's executor is still colocd's child", round);
		ASSERT_EQ(0, held_settled(self->colocd, &h));
		TH_LOG("round %d: %d descriptors, VmRSS %ld kB, %lld bytes of memfds", round, h.fds,
		       h.rss_kb, h.memfd_bytes);
		if (!round) {
			first = h;
			/* the stalled copy holds big's files: the disk really is stalled */
			EXPECT_LT(0, first.memfd_bytes);
			continue;
		}
		EXPECT_GE(first.fds + 2, h.fds) TH_LOG("round %d: descriptors grow", round);
		EXPECT_GE(first.memfd_bytes, h.memfd_bytes) TH_LOG("round %d: memfds grow", round);
		EXPECT_GE(first.rss_kb + 32 * 1024, h.rss_kb)
		TH_LOG("round %d: memory grows", round);
	}
	/* the disk answers: what colocd owed the file is written, big in none of it */
	drain_fifo(self->fifo, true);
	ASSERT_TRUE(root_pinged(self));
	ASSERT_EQ(0, tu_stop_colocd(self->colocd));
	self->colocd = 0;
	text = tu_read_file(self->state, &len);
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "\"tenants\"")) TH_LOG("%s", text);
	EXPECT_EQ(NULL, strstr(text, "big\""))
	TH_LOG("a removed tenant is in the file: %s", text);
	free(text);
}

/* Whether the state file holds what, within 60 s (its writer is a thread of its own). */
static bool state_has(FIXTURE_DATA(slow) * self, const char *what)
{
	for (int i = 0; i < 600; i++) {
		size_t len;
		char *text = tu_read_file(self->state, &len);
		bool has = text && strstr(text, what);

		free(text);
		if (has)
			return true;
		usleep(100000);
	}
	return false;
}

/*
 * A member's tenant kept by a colocd from before each owner's names were
 * its own (under its bare name: "mine", mine.model) comes back as the
 * member's "mine", recorded under its key (64992:mine) from then on, the
 * old copies gone. Without the rekey the member would not reach it.
 */
TEST_F_TIMEOUT(slow, names__a_members_tenant_kept_under_its_bare_name_comes_back_its_own, 900)
{
	const char *extra[] = { "--cache-dir", cache_dir, "--state", self->state, NULL };
	const char *kinds[] = { "model", "weights" };
	char args[3 * PATH_MAX], out[8192], from[PATH_MAX], to[PATH_MAX], *text, *at;
	size_t len;
	FILE *f;

	snprintf(args, sizeof(args), "submit mine '%s' --weights '%s' --qos-ms 60000",
		 self->model, self->weights);
	ASSERT_EQ(0, colocctl_as(self, MEMBER, args, out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_TRUE(state_has(self, "\"64992:mine\""));
	ASSERT_EQ(0, tu_stop_colocd(self->colocd));
	self->colocd = 0;
	/* as the colocd before keys wrote it */
	for (int k = 0; k < 2; k++) {
		snprintf(from, sizeof(from), "%s.files/%d:mine.%s", self->state, MEMBER, kinds[k]);
		snprintf(to, sizeof(to), "%s.files/mine.%s", self->state, kinds[k]);
		ASSERT_EQ(0, rename(from, to)) TH_LOG("%s", from);
	}
	text = tu_read_file(self->state, &len);
	ASSERT_NE(NULL, text);
	at = strstr(text, "\"64992:mine\"");
	ASSERT_NE(NULL, at);
	f = fopen(self->state, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "%.*s\"mine\"%s", (int)(at - text), text, at + strlen("\"64992:mine\""));
	ASSERT_EQ(0, fclose(f));
	free(text);
	self->colocd = tu_start_colocd_with(self->sock, self->pin, self->log, extra);
	ASSERT_LT(0, self->colocd);
	for (int i = 0; i < STEP_S && !(colocctl_as(self, MEMBER, "status mine", out, sizeof(out)) == 0 &&
					 strstr(out, "ready"));
	     i++)
		sleep(1);
	EXPECT_EQ(0, colocctl_as(self, MEMBER, "status mine", out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "ready")) TH_LOG("%s", out);
	EXPECT_TRUE(state_has(self, "\"64992:mine\""));
	text = tu_read_file(self->state, &len);
	EXPECT_EQ(NULL, text ? strstr(text, "\"mine\"") : NULL) TH_LOG("%s", text);
	free(text);
	for (int k = 0; k < 2; k++) {
		snprintf(to, sizeof(to), "%s.files/mine.%s", self->state, kinds[k]);
		for (int i = 0; i < 600 && !access(to, F_OK); i++)
			usleep(100000);
		EXPECT_NE(0, access(to, F_OK)) TH_LOG("%s is still there", to);
		snprintf(from, sizeof(from), "%s.files/%d:mine.%s", self->state, MEMBER, kinds[k]);
		EXPECT_EQ(0, access(from, F_OK)) TH_LOG("%s is not there", from);
	}
}

TEST_HARNESS_MAIN
