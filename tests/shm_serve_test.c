// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The executor's serving loop (executor/shm_serve.h) in this process: a
 * memfd laid out and sealed as colocd lays it out, a small real model with
 * two inputs and two outputs, the loop on a thread of its own, and this
 * thread in colocd's place writing commands, ringing the futex and waiting
 * on the pipe for each completion. Outputs are checked against the plain-C
 * reference (tests/reference.c), the layout against a hand count.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include "kselftest_harness.h"
#include "reference.h"
#include "shm_serve.h"
#include "testutil.h"

#define TOL 1e-4f /* see tests/ops_fixture.h */
#define DONE_MS 20000 /* a completion's wait, however loaded the machine */
#define SLOT_BYTES 65536

/*
 * Layers: 0 a, 1 b (the inputs, in this order), 2 c1, 3 head (read by no
 * layer: the first output), 4 s, 5 c2, 6 gap (the second output).
 */
static const char two_by_two[] = "model two_by_two\n"
				 "seed 5\n"
				 "macs 28160\n"
				 "params 450\n"
				 "input a shape=1x4x8x8\n"
				 "input b shape=1x4x8x8\n"
				 "conv c1 in=a out=4 k=3 pad=1 act=relu\n"
				 "conv head in=c1 out=2 k=1 bias\n"
				 "add s in=c1,b\n"
				 "conv c2 in=s out=8 k=3 pad=1 bias act=relu\n"
				 "pool gap kind=global_avg\n"
				 "end\n";
#define NR_LAYERS 7
#define IN_ELEMS (2 * 4 * 8 * 8)
#define OUT_ELEMS (2 * 8 * 8 + 8)

static struct model *two_by_two_model(struct coloc_err *err)
{
	return model_parse("two_by_two", two_by_two, sizeof(two_by_two) - 1, err);
}

/* A memfd as colocd makes one (daemon/execproc.c): header, slots, size sealed. */
static int make_shm(__u64 in_cap, __u64 out_cap, __u32 version, bool seal)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	__u64 data = (sizeof(struct coloc_shm) + page - 1) / page * page;
	__u64 total = data + COLOC_SHM_NR_SLOTS * (in_cap + out_cap);
	int fd = memfd_create("shm_serve_test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	struct coloc_shm *shm;

	if (fd < 0 || ftruncate(fd, (off_t)total))
		return -1;
	shm = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (shm == MAP_FAILED)
		return -1;
	shm->hdr = (struct coloc_shm_header){ .magic = COLOC_SHM_MAGIC,
					      .layout_version = version,
					      .nr_slots = COLOC_SHM_NR_SLOTS,
					      .total_bytes = total,
					      .data_offset = data,
					      .slot_in_capacity = in_cap,
					      .slot_out_capacity = out_cap };
	snprintf(shm->hdr.tenant, sizeof(shm->hdr.tenant), "t");
	munmap(shm, total);
	if (seal && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
		return -1;
	return fd;
}

FIXTURE(shm_serve)
{
	struct shm_serve s;
	int memfd, pipe_rd;
	int input_tx; /* colocd's end of the lane's input socket (s.input.sock the other) */
	pthread_t thread;
	bool running;
	int loop_ret;
	__u32 seq;
	float input[IN_ELEMS]; /* one query's input, as the layout lays it out */
	float want[OUT_ELEMS]; /* its outputs by the plain-C reference */
};

static void *serve_thread(void *arg)
{
	FIXTURE_DATA(shm_serve) *self = arg;

	self->loop_ret = shm_serve_loop(&self->s);
	return NULL;
}

/* Every layer by the reference from self->input; the two outputs into self->want. */
static void reference_outputs(FIXTURE_DATA(shm_serve) *self)
{
	const struct model *m = self->s.m;
	float *out[NR_LAYERS];

	for (int li = 0; li < NR_LAYERS; li++) {
		const float *ins[MODEL_MAX_INPUTS];

		out[li] = malloc((size_t)model_shape_elems(&m->layers[li].out) * sizeof(float));
		if (li < 2) {
			memcpy(out[li], self->input + li * IN_ELEMS / 2, IN_ELEMS / 2 * sizeof(float));
			continue;
		}
		for (int j = 0; j < m->layers[li].nr_inputs; j++)
			ins[j] = out[m->layers[li].inputs[j]];
		ref_layer(m, li, ins, out[li]);
	}
	memcpy(self->want, out[3], 2 * 8 * 8 * sizeof(float));
	memcpy(self->want + 2 * 8 * 8, out[6], 8 * sizeof(float));
	for (int li = 0; li < NR_LAYERS; li++)
		free(out[li]);
}

static char *slot_in(FIXTURE_DATA(shm_serve) *self, unsigned int slot)
{
	const struct coloc_shm_header *h = &self->s.shm->hdr;

	return (char *)self->s.shm + h->data_offset +
	       slot * (h->slot_in_capacity + h->slot_out_capacity);
}

static float *slot_out(FIXTURE_DATA(shm_serve) *self, unsigned int slot)
{
	return (float *)(slot_in(self, slot) + self->s.shm->hdr.slot_in_capacity);
}

/* Waits for a ring on the pipe, then for done.seq == want; 0 or -ETIMEDOUT. */
static int wait_done(FIXTURE_DATA(shm_serve) *self, __u32 want)
{
	struct pollfd p = { .fd = self->pipe_rd, .events = POLLIN };
	char buf[64];

	for (int waited = 0; waited < DONE_MS; waited += 10) {
		if (__atomic_load_n(&self->s.shm->done.seq, __ATOMIC_ACQUIRE) == want)
			return 0;
		if (poll(&p, 1, 10) > 0 && read(self->pipe_rd, buf, sizeof(buf)) < 0 &&
		    errno != EAGAIN)
			return -errno;
	}
	return -ETIMEDOUT;
}

/* What colocd does to send a command: every field, then seq + 1 (release), then the wake. */
static __u32 ring(FIXTURE_DATA(shm_serve) *self, const struct coloc_shm_cmd *c)
{
	struct coloc_shm_cmd *cmd = &self->s.shm->cmd;

	cmd->op = c->op;
	cmd->slot = c->slot;
	cmd->first = c->first;
	cmd->last = c->last;
	cmd->query_id = c->query_id;
	cmd->flags = c->flags;
	cmd->nr_blocks = c->nr_blocks;
	memcpy(cmd->block_last, c->block_last, sizeof(cmd->block_last));
	memcpy(cmd->block_cores, c->block_cores, sizeof(cmd->block_cores));
	memcpy(cmd->cpus, c->cpus, sizeof(cmd->cpus));
	memcpy(cmd->versions, c->versions, NR_LAYERS);
	__atomic_store_n(&cmd->seq, ++self->seq, __ATOMIC_RELEASE);
	syscall(SYS_futex, &cmd->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	return self->seq;
}

/* A RUN of layers [first, last) of slot on every allowed core, version 0 throughout. */
static struct coloc_shm_cmd run_cmd(FIXTURE_DATA(shm_serve) *self, unsigned int slot,
				    unsigned int first, unsigned int last)
{
	struct coloc_shm_cmd c = {
		.op = COLOC_SHM_OP_RUN, .slot = slot, .first = first, .last = last
	};

	c.query_id = 100 + slot;
	c.nr_blocks = 1;
	c.block_last[0] = last;
	for (int i = 0; i < COLOC_SHM_MAX_PLAN_BLOCKS; i++)
		c.block_cores[i] = (__u32)self->s.allowed.nr;
	for (int i = 0; i < self->s.allowed.nr; i++)
		c.cpus[self->s.allowed.cpus[i] / 64] |= 1ull << (self->s.allowed.cpus[i] % 64);
	return c;
}

/* Sends c and waits for its completion, which it returns by pointer. */
#define SEND(c)                                                         \
	({                                                              \
		__u32 _seq = ring(self, &(c));                          \
		ASSERT_EQ(0, wait_done(self, _seq));                    \
		ASSERT_EQ(_seq, self->s.shm->done.started_seq);         \
		&self->s.shm->done;                                     \
	})

static void expect_outputs(struct __test_metadata *_metadata, FIXTURE_DATA(shm_serve) *self,
			   unsigned int slot)
{
	float max_err, max_ref;

	ref_compare(slot_out(self, slot), self->want, OUT_ELEMS, &max_err, &max_ref);
	EXPECT_GT(max_ref, 0.0f);
	EXPECT_LE(max_err, TOL * (1.0f + max_ref))
	TH_LOG("slot %u: max err %g, max |ref| %g", slot, max_err, max_ref);
}

FIXTURE_SETUP(shm_serve)
{
	struct coloc_err err = { 0 };
	char why[COLOC_SHM_REASON_LEN];
	struct exec_options o = { 0 };
	int fds[2];
	uint32_t x = 12345;

	self->memfd = make_shm(SLOT_BYTES, SLOT_BYTES, COLOC_SHM_LAYOUT_VERSION, true);
	ASSERT_LE(0, self->memfd);
	ASSERT_EQ(0, shm_serve_map(&self->s, self->memfd, why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_EQ(0, shm_serve_allowed_cpus(NULL, &self->s.allowed, why, sizeof(why)));
	ASSERT_EQ(0, pipe2(fds, O_CLOEXEC | O_NONBLOCK));
	self->pipe_rd = fds[0];
	self->s.done_fd = fds[1];
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds));
	self->input_tx = fds[0];
	self->s.input.sock = fds[1];
	self->s.m = two_by_two_model(&err);
	ASSERT_NE(NULL, self->s.m) TH_LOG("%s", coloc_err_str(&err));
	o.cpus = self->s.allowed;
	self->s.em = exec_model_load(self->s.m, &o, &err);
	ASSERT_NE(NULL, self->s.em) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, shm_serve_prepare(&self->s, why, sizeof(why))) TH_LOG("%s", why);
	for (int i = 0; i < IN_ELEMS; i++) {
		x = x * 1664525u + 1013904223u;
		self->input[i] = (float)(x >> 8) / 8388608.0f - 1.0f;
	}
	reference_outputs(self);
	for (unsigned int slot = 0; slot < COLOC_SHM_NR_SLOTS; slot++)
		memcpy(slot_in(self, slot), self->input, sizeof(self->input));
	ASSERT_EQ(0, pthread_create(&self->thread, NULL, serve_thread, self));
	self->running = true;
	/* the loop's first ring: READY */
	for (int waited = 0; waited < DONE_MS &&
			     __atomic_load_n(&self->s.shm->hdr.state, __ATOMIC_ACQUIRE) !=
				     COLOC_SHM_READY;
	     waited++)
		usleep(1000);
	ASSERT_EQ(COLOC_SHM_READY, self->s.shm->hdr.state);
}

FIXTURE_TEARDOWN(shm_serve)
{
	if (self->running) {
		struct coloc_shm_cmd c = { .op = COLOC_SHM_OP_EXIT };

		ring(self, &c);
		pthread_join(self->thread, NULL);
	}
	exec_model_free(self->s.em);
	model_free(self->s.m);
	shm_serve_release(&self->s);
	close(self->s.done_fd);
	close(self->pipe_rd);
	close(self->input_tx);
	close(self->s.input.sock);
	close(self->memfd);
}

TEST(model_io_layout__input_layers_in_order_and_unread_layers_out)
{
	struct coloc_err err = { 0 };
	struct model *m = two_by_two_model(&err);
	struct model_io_layout io;

	ASSERT_NE(NULL, m) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, model_io_layout(m, &io, &err));
	ASSERT_EQ(2, io.nr_inputs);
	EXPECT_EQ(0, io.inputs[0].layer);
	EXPECT_EQ(0, io.inputs[0].offset);
	EXPECT_EQ(4 * 8 * 8 * 4, io.inputs[0].bytes);
	EXPECT_EQ(1, io.inputs[1].layer);
	EXPECT_EQ(4 * 8 * 8 * 4, io.inputs[1].offset);
	EXPECT_EQ(IN_ELEMS * 4, io.in_bytes);
	ASSERT_EQ(2, io.nr_outputs);
	EXPECT_EQ(3, io.outputs[0].layer);
	EXPECT_EQ(0, io.outputs[0].offset);
	EXPECT_EQ(2 * 8 * 8 * 4, io.outputs[0].bytes);
	EXPECT_EQ(6, io.outputs[1].layer);
	EXPECT_EQ(2 * 8 * 8 * 4, io.outputs[1].offset);
	EXPECT_EQ(8 * 4, io.outputs[1].bytes);
	EXPECT_EQ(OUT_ELEMS * 4, io.out_bytes);
	model_io_layout_free(&io);
	EXPECT_EQ(NULL, io.inputs);
	model_free(m);
}

TEST(shm_serve_map__refuses_unsealed_or_foreign_memory)
{
	struct shm_serve s = { 0 };
	char why[COLOC_SHM_REASON_LEN];
	int fd;

	fd = make_shm(SLOT_BYTES, SLOT_BYTES, COLOC_SHM_LAYOUT_VERSION, false);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EINVAL, shm_serve_map(&s, fd, why, sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "not sealed")) TH_LOG("%s", why);
	close(fd);
	fd = make_shm(SLOT_BYTES, SLOT_BYTES, COLOC_SHM_LAYOUT_VERSION + 1, true);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EPROTO, shm_serve_map(&s, fd, why, sizeof(why)));
	EXPECT_EQ(NULL, s.shm);
	close(fd);
	fd = make_shm(SLOT_BYTES, SLOT_BYTES, COLOC_SHM_LAYOUT_VERSION, true);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, shm_serve_map(&s, fd, why, sizeof(why))) TH_LOG("%s", why);
	EXPECT_EQ(s.shm->hdr.total_bytes, s.shm_bytes);
	shm_serve_release(&s);
	close(fd);
}

TEST(shm_serve_prepare__refuses_slots_a_query_does_not_fit)
{
	struct shm_serve s = { 0 };
	struct coloc_err err = { 0 };
	char why[COLOC_SHM_REASON_LEN];
	struct exec_options o = { 0 };
	int fd = make_shm(4096, 4096, COLOC_SHM_LAYOUT_VERSION, true);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, shm_serve_map(&s, fd, why, sizeof(why)));
	ASSERT_EQ(0, shm_serve_allowed_cpus(NULL, &s.allowed, why, sizeof(why)));
	s.m = two_by_two_model(&err);
	ASSERT_NE(NULL, s.m);
	o.cpus = s.allowed;
	s.em = exec_model_load(s.m, &o, &err);
	ASSERT_NE(NULL, s.em) TH_LOG("%s", coloc_err_str(&err));
	/* 2048 input bytes fit 4096; 4 * 2 * 8 * 8 + 32 = 544 output bytes too: shrink */
	s.shm->hdr.slot_in_capacity = IN_ELEMS * 4 - 4;
	EXPECT_EQ(-E2BIG, shm_serve_prepare(&s, why, sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "2048 bytes of input")) TH_LOG("%s", why);
	exec_model_free(s.em);
	model_free(s.m);
	shm_serve_release(&s);
	close(fd);
}

TEST_F(shm_serve, prepare__describes_the_model_in_the_header)
{
	const struct coloc_shm_header *h = &self->s.shm->hdr;

	EXPECT_EQ(NR_LAYERS, h->nr_layers);
	EXPECT_EQ(2, h->nr_inputs);
	EXPECT_EQ(2, h->nr_outputs);
	EXPECT_EQ(IN_ELEMS * 4, h->in_bytes);
	EXPECT_EQ(OUT_ELEMS * 4, h->out_bytes);
}

TEST_F(shm_serve, loop__runs_a_whole_query)
{
	struct coloc_shm_cmd c = run_cmd(self, 0, 0, NR_LAYERS);
	const struct coloc_shm_done *d;

	memset(slot_out(self, 0), 0, OUT_ELEMS * sizeof(float));
	d = SEND(c);
	ASSERT_EQ(COLOC_SHM_DONE_OK, d->status) TH_LOG("%s", d->reason);
	EXPECT_EQ(0, d->error);
	EXPECT_EQ(100, d->query_id);
	EXPECT_EQ(0, d->slot);
	EXPECT_EQ(0, d->first);
	EXPECT_EQ(NR_LAYERS, d->last);
	EXPECT_EQ(1, d->nr_blocks);
	EXPECT_EQ(d->block_ns, d->blocks_ns[0]);
	EXPECT_GT(d->block_ns, 0);
	EXPECT_LE(d->started_ns, d->ended_ns);
	EXPECT_LE(d->block_ns, d->ended_ns - d->started_ns);
	expect_outputs(_metadata, self, 0);
}

TEST_F(shm_serve, loop__runs_blocks_in_sequence)
{
	static const unsigned int bounds[] = { 0, 3, 5, NR_LAYERS };
	const struct coloc_shm_done *d;

	memset(slot_out(self, 2), 0, OUT_ELEMS * sizeof(float));
	for (int b = 0; b < 3; b++) {
		struct coloc_shm_cmd c = run_cmd(self, 2, bounds[b], bounds[b + 1]);

		d = SEND(c);
		ASSERT_EQ(COLOC_SHM_DONE_OK, d->status) TH_LOG("%s", d->reason);
		EXPECT_EQ(2, d->slot);
		EXPECT_EQ(bounds[b], d->first);
		EXPECT_EQ(bounds[b + 1], d->last);
		/* the output is written by the block that ends the query, not before */
		if (b < 2)
			EXPECT_EQ(0.0f, slot_out(self, 2)[OUT_ELEMS - 1]);
	}
	expect_outputs(_metadata, self, 2);
}

TEST_F(shm_serve, loop__refuses_malformed_commands_and_keeps_serving)
{
	struct coloc_shm_cmd bad[16];
	const struct coloc_shm_done *d;
	int n = 0;

	bad[n] = run_cmd(self, 0, 0, NR_LAYERS);
	bad[n++].slot = COLOC_SHM_NR_SLOTS; /* no such slot */
	bad[n++] = run_cmd(self, 0, 3, 3); /* an empty block */
	bad[n++] = run_cmd(self, 0, 0, NR_LAYERS + 1); /* past the model */
	bad[n++] = run_cmd(self, 1, 3, 5); /* reads activations slot 1 never computed */
	bad[n] = run_cmd(self, 0, 0, NR_LAYERS);
	bad[n++].cpus[COLOC_SHM_CPU_WORDS - 1] |= 1ull << 63; /* a core not ours */
	bad[n] = run_cmd(self, 0, 0, NR_LAYERS);
	memset(bad[n++].cpus, 0, sizeof(bad[0].cpus)); /* no core */
	bad[n] = run_cmd(self, 0, 0, NR_LAYERS);
	bad[n++].flags = 1u << 7; /* a flag no executor knows */
	bad[n] = run_cmd(self, 0, 0, NR_LAYERS);
	bad[n++].versions[2] = 200; /* c1 has far fewer versions */
	bad[n] = run_cmd(self, 0, 0, NR_LAYERS);
	bad[n++].op = 99; /* no such command */
	bad[n] = run_cmd(self, 0, 0, NR_LAYERS);
	bad[n++].nr_blocks = 0; /* a plan of no block */
	bad[n] = run_cmd(self, 0, 0, NR_LAYERS);
	bad[n++].nr_blocks = COLOC_SHM_MAX_PLAN_BLOCKS + 1;
	bad[n] = run_cmd(self, 0, 0, NR_LAYERS);
	bad[n].nr_blocks = 2; /* a plan that ends before the command's last layer */
	bad[n].block_last[0] = 2;
	bad[n++].block_last[1] = 4;
	bad[n] = run_cmd(self, 0, 0, NR_LAYERS);
	bad[n].nr_blocks = 3; /* blocks that go back */
	bad[n].block_last[0] = 4;
	bad[n].block_last[1] = 2;
	bad[n++].block_last[2] = NR_LAYERS;
	bad[n] = run_cmd(self, 0, 0, NR_LAYERS);
	bad[n].nr_blocks = 2; /* an empty block */
	bad[n].block_last[0] = 0;
	bad[n++].block_last[1] = NR_LAYERS;
	bad[n] = run_cmd(self, 0, 0, NR_LAYERS);
	bad[n++].block_cores[0] = 0; /* a block on none of the cores */
	bad[n] = run_cmd(self, 0, 0, NR_LAYERS);
	bad[n++].block_cores[0] = (__u32)self->s.allowed.nr + 1; /* more than it holds */
	for (int i = 0; i < n; i++) {
		d = SEND(bad[i]);
		EXPECT_EQ(COLOC_SHM_DONE_REFUSED, d->status) TH_LOG("command %d", i);
		EXPECT_EQ(-EINVAL, d->error) TH_LOG("command %d", i);
		EXPECT_EQ(0, d->block_ns) TH_LOG("command %d", i);
		EXPECT_NE(0, d->reason[0]) TH_LOG("command %d", i);
		EXPECT_NE(NULL, memchr(d->reason, 0, sizeof(d->reason)));
	}
	/* still serving: a whole query, then slot 1 from its start */
	bad[0] = run_cmd(self, 1, 0, NR_LAYERS);
	d = SEND(bad[0]);
	ASSERT_EQ(COLOC_SHM_DONE_OK, d->status) TH_LOG("%s", d->reason);
	expect_outputs(_metadata, self, 1);
}

/* A plan cut as a policy would cut it: 0 | 2 | 3 | 5 | 7. */
static struct coloc_shm_cmd plan_cmd(FIXTURE_DATA(shm_serve) *self, unsigned int slot)
{
	static const unsigned int ends[] = { 2, 3, 5, NR_LAYERS };
	struct coloc_shm_cmd c = run_cmd(self, slot, 0, NR_LAYERS);

	c.nr_blocks = 4;
	memcpy(c.block_last, ends, sizeof(ends));
	c.block_cores[1] = 1; /* the second on the plan's first core alone */
	return c;
}

TEST_F(shm_serve, loop__runs_a_plan_of_blocks_in_one_command)
{
	struct coloc_shm_cmd c = plan_cmd(self, 1);
	const struct coloc_shm_done *d;
	__u64 sum = 0;

	/* a yield word naming an earlier command is not this one's */
	__atomic_store_n(&self->s.shm->yield.seq, self->seq, __ATOMIC_RELEASE);
	memset(slot_out(self, 1), 0, OUT_ELEMS * sizeof(float));
	d = SEND(c);
	ASSERT_EQ(COLOC_SHM_DONE_OK, d->status) TH_LOG("%s", d->reason);
	EXPECT_EQ(0, d->first);
	EXPECT_EQ(NR_LAYERS, d->last);
	ASSERT_EQ(4, d->nr_blocks);
	for (int i = 0; i < 4; i++) {
		EXPECT_GT(d->blocks_ns[i], 0) TH_LOG("block %d", i);
		sum += d->blocks_ns[i];
	}
	EXPECT_EQ(d->block_ns, sum);
	expect_outputs(_metadata, self, 1);
}

TEST_F(shm_serve, loop__yield_stops_a_plan_at_its_next_boundary)
{
	struct coloc_shm_cmd c = plan_cmd(self, 2);
	const struct coloc_shm_done *d;

	memset(slot_out(self, 2), 0, OUT_ELEMS * sizeof(float));
	/* asked before it starts: the first block runs, then it stops */
	__atomic_store_n(&self->s.shm->yield.seq, self->seq + 1, __ATOMIC_RELEASE);
	d = SEND(c);
	ASSERT_EQ(COLOC_SHM_DONE_OK, d->status) TH_LOG("%s", d->reason);
	EXPECT_EQ(0, d->first);
	EXPECT_EQ(2, d->last);
	EXPECT_EQ(1, d->nr_blocks);
	EXPECT_EQ(d->block_ns, d->blocks_ns[0]);
	EXPECT_EQ(0.0f, slot_out(self, 2)[OUT_ELEMS - 1]);
	/* the rest of the plan from where it stopped, as colocd sends it */
	c = run_cmd(self, 2, 2, NR_LAYERS);
	c.nr_blocks = 3;
	c.block_last[0] = 3;
	c.block_last[1] = 5;
	c.block_last[2] = NR_LAYERS;
	d = SEND(c);
	ASSERT_EQ(COLOC_SHM_DONE_OK, d->status) TH_LOG("%s", d->reason);
	EXPECT_EQ(NR_LAYERS, d->last);
	EXPECT_EQ(3, d->nr_blocks);
	expect_outputs(_metadata, self, 2);
}

TEST_F(shm_serve, loop__shared_cores_give_the_same_outputs)
{
	struct coloc_shm_cmd c = run_cmd(self, 3, 0, NR_LAYERS);
	const struct coloc_shm_done *d;

	c.flags = COLOC_SHM_RUN_SHARED;
	d = SEND(c);
	ASSERT_EQ(COLOC_SHM_DONE_OK, d->status) TH_LOG("%s", d->reason);
	expect_outputs(_metadata, self, 3);
}

TEST_F(shm_serve, loop__nop_completes_without_running)
{
	struct coloc_shm_cmd c = run_cmd(self, 0, 0, NR_LAYERS);
	const struct coloc_shm_done *d;

	c.op = COLOC_SHM_OP_NOP;
	memset(slot_out(self, 0), 0x7f, OUT_ELEMS * sizeof(float));
	d = SEND(c);
	EXPECT_EQ(COLOC_SHM_DONE_OK, d->status);
	EXPECT_EQ(0, d->block_ns);
	EXPECT_EQ(0, d->last);
	EXPECT_EQ(100, d->query_id);
	for (int i = 0; i < OUT_ELEMS; i++)
		ASSERT_EQ(0x7f, ((unsigned char *)slot_out(self, 0))[4 * i]);
}

TEST_F(shm_serve, loop__exit_completes_then_returns)
{
	struct coloc_shm_cmd c = { .op = COLOC_SHM_OP_EXIT };
	const struct coloc_shm_done *d;

	self->loop_ret = -1;
	d = SEND(c);
	EXPECT_EQ(COLOC_SHM_DONE_OK, d->status);
	ASSERT_EQ(0, pthread_join(self->thread, NULL));
	self->running = false;
	EXPECT_EQ(0, self->loop_ret);
}

/* A memfd of the input's bytes (len of them), with seals; -1 on failure. */
static int input_memfd(const void *bytes, size_t len, int seals)
{
	int fd = memfd_create("shm_serve_test_input", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || pwrite(fd, bytes, len, 0) != (ssize_t)len ||
	    (seals && fcntl(fd, F_ADD_SEALS, seals))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

#define FROZEN (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)

/* What colocd sends before ringing command seq (daemon/execproc_slot.c): bytes and fd. */
static int send_input(FIXTURE_DATA(shm_serve) * self, __u32 seq, int fd)
{
	struct coloc_shm_input_msg msg = { .seq = seq, .bytes = self->s.io.in_bytes };

	return tu_send_fds(self->input_tx, &msg, sizeof(msg), &fd, fd >= 0, 0);
}

/* The slot's input zeroed, so that outputs right can only come from the memfd. */
static void clear_slot_input(FIXTURE_DATA(shm_serve) * self, unsigned int slot)
{
	memset(slot_in(self, slot), 0, sizeof(self->input));
	memset(slot_out(self, slot), 0, OUT_ELEMS * sizeof(float));
}

TEST_F(shm_serve, loop__takes_the_input_from_a_frozen_memfd_and_keeps_it_mapped)
{
	int fd = input_memfd(self->input, sizeof(self->input), FROZEN);
	const struct coloc_shm_done *d;
	struct coloc_shm_cmd c;
	int kept = 0;

	ASSERT_LE(0, fd);
	/* twice the same memfd, on two slots: mapped once, then known again */
	for (unsigned int slot = 0; slot < 2; slot++) {
		clear_slot_input(self, slot);
		c = run_cmd(self, slot, 0, NR_LAYERS);
		c.flags = COLOC_SHM_RUN_INPUT_FD;
		ASSERT_EQ(0, send_input(self, self->seq + 1, fd));
		d = SEND(c);
		ASSERT_EQ(COLOC_SHM_DONE_OK, d->status) TH_LOG("%s", d->reason);
		expect_outputs(_metadata, self, slot);
	}
	for (int i = 0; i < COLOC_SHM_NR_SLOTS; i++)
		kept += self->s.input.map[i].bytes != NULL;
	EXPECT_EQ(1, kept);
	close(fd);
}

TEST_F(shm_serve, loop__refuses_unusable_inputs_and_drops_earlier_commands_ones)
{
	int good = input_memfd(self->input, sizeof(self->input), FROZEN);
	int loose = input_memfd(self->input, sizeof(self->input), 0);
	int small = input_memfd(self->input, sizeof(self->input) / 2, FROZEN);
	const struct coloc_shm_done *d;
	struct coloc_shm_cmd c;

	ASSERT_LE(0, good);
	ASSERT_LE(0, loose);
	ASSERT_LE(0, small);
	c = run_cmd(self, 0, 0, NR_LAYERS);
	c.flags = COLOC_SHM_RUN_INPUT_FD;
	/* no message at all */
	d = SEND(c);
	EXPECT_EQ(COLOC_SHM_DONE_REFUSED, d->status);
	EXPECT_EQ(-EAGAIN, d->error) TH_LOG("%s", d->reason);
	/* a memfd that could shrink under the mapping, and one shorter than the input */
	ASSERT_EQ(0, send_input(self, self->seq + 1, loose));
	d = SEND(c);
	EXPECT_EQ(COLOC_SHM_DONE_REFUSED, d->status);
	EXPECT_EQ(-EINVAL, d->error) TH_LOG("%s", d->reason);
	ASSERT_EQ(0, send_input(self, self->seq + 1, small));
	d = SEND(c);
	EXPECT_EQ(COLOC_SHM_DONE_REFUSED, d->status);
	EXPECT_EQ(-EINVAL, d->error) TH_LOG("%s", d->reason);
	/* a message without its descriptor */
	ASSERT_EQ(0, send_input(self, self->seq + 1, -1));
	d = SEND(c);
	EXPECT_EQ(COLOC_SHM_DONE_REFUSED, d->status);
	EXPECT_EQ(-EPROTO, d->error) TH_LOG("%s", d->reason);
	/* an input with a block that does not start the query */
	c = run_cmd(self, 0, 3, NR_LAYERS);
	c.flags = COLOC_SHM_RUN_INPUT_FD;
	ASSERT_EQ(0, send_input(self, self->seq + 1, good));
	d = SEND(c);
	EXPECT_EQ(COLOC_SHM_DONE_REFUSED, d->status);
	EXPECT_EQ(-EINVAL, d->error) TH_LOG("%s", d->reason);
	/* a message of an earlier command's, left queued: dropped for this one's */
	clear_slot_input(self, 0);
	c = run_cmd(self, 0, 0, NR_LAYERS);
	c.flags = COLOC_SHM_RUN_INPUT_FD;
	ASSERT_EQ(0, send_input(self, self->seq, loose));
	ASSERT_EQ(0, send_input(self, self->seq + 1, good));
	d = SEND(c);
	ASSERT_EQ(COLOC_SHM_DONE_OK, d->status) TH_LOG("%s", d->reason);
	expect_outputs(_metadata, self, 0);
	close(good);
	close(loose);
	close(small);
}

TEST_HARNESS_MAIN
