// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The limits the gateway's server on gRPC's C core (--grpc-server core)
 * now holds a call to, with a real client (tests/gateway/grpc_hostile.py,
 * Python grpcio): a message past what the widest model of the repository
 * can need is refused; a call whose message does not come within the
 * time the largest one takes at the rate floor is cancelled; an address
 * has at most --grpc-max-waiting-per-ip calls waiting for their message,
 * behind a trusted proxy the address its x-forwarded-for names. The real
 * gateway as the `coloc` user before the fake colocd
 * (gateway_fake_colocd.h), whose repository here holds "fast" and "slow"
 * only (4 floats in): "big" would take the bound past --max-body-bytes.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "gateway_fake_colocd.h"

/*
 * gw_infer_body_max of a [1, 4] input: its 4 values and 2 lists at 64
 * bytes each, the 64 KiB margin, the 16 bytes of its floats
 */
#define SMALL_MODELS_BOUND ((4 + 2) * 64 + (64 << 10) + 4 * 4)

/* The gateway on the C core with flags (NULL-terminated), "big" out of its repository. */
static bool start_core(FIXTURE_DATA(fwd) * self, const char *const *flags)
{
	const char *argv[16] = { "--grpc-server", "core" };
	char cmd[256];
	int n = 2;

	snprintf(cmd, sizeof(cmd), "rm -rf '%s/big'", self->env.repo);
	if (system(cmd))
		return false;
	for (int i = 0; flags && flags[i] && n < 15; i++)
		argv[n++] = flags[i];
	argv[n] = NULL;
	if (gw_env_start_gateway(&self->env, true, argv))
		return true;
	gw_env_log_gateway(&self->env);
	return false;
}

/*
 * One byte past the bound is refused RESOURCE_EXHAUSTED by gRPC itself;
 * at the bound the message is read (and is no ModelInfer: INVALID_ARGUMENT);
 * a real infer is answered. Main's core took up to --max-body-bytes (64 MiB):
 * INVALID_ARGUMENT past the bound too.
 */
TEST_F_TIMEOUT(fwd, message_bound__one_byte_past_the_widest_models_need_is_refused, 300)
{
	char out[4096], args[128];

	ASSERT_TRUE(start_core(self, NULL));
	snprintf(args, sizeof(args), "bomb ModelInfer 00 %d", SMALL_MODELS_BOUND + 1);
	EXPECT_EQ(0, gw_grpc_hostile(self->env.grpc_port, args, out, sizeof(out)));
	EXPECT_EQ(0, strcmp(out, "RESOURCE_EXHAUSTED\n")) TH_LOG("past the bound: %s", out);
	snprintf(args, sizeof(args), "bomb ModelInfer 00 %d", SMALL_MODELS_BOUND);
	EXPECT_EQ(0, gw_grpc_hostile(self->env.grpc_port, args, out, sizeof(out)));
	EXPECT_EQ(0, strcmp(out, "INVALID_ARGUMENT\n")) TH_LOG("at the bound: %s", out);
	EXPECT_EQ(0, gw_grpc_hostile(self->env.grpc_port, "infer fast 1 2 3 4", out, sizeof(out)));
	EXPECT_EQ(0, strcmp(out, "OK\n")) TH_LOG("%s", out);
}

/*
 * At the default floor (64 KiB/s) the bound's 65,936 bytes take 1.006 s
 * after the 1 s grace: a call that never sends its message is cancelled
 * DEADLINE_EXCEEDED by the gateway about 2 s after it opened, well before
 * the 10 s read timeout (main's core: at the read timeout).
 */
TEST_F_TIMEOUT(fwd, read_deadline__a_silent_call_ends_at_what_the_floor_gives_the_largest, 300)
{
	char out[4096], *sp;
	double s;

	ASSERT_TRUE(start_core(self, NULL));
	EXPECT_EQ(0, gw_grpc_hostile(self->env.grpc_port, "stall", out, sizeof(out)));
	ASSERT_EQ(0, strncmp(out, "DEADLINE_EXCEEDED by the gateway ", 33)) TH_LOG("%s", out);
	TH_LOG("a silent call: %s", out);
	sp = strrchr(out, ' ');
	s = atof(sp + 1);
	EXPECT_LT(1.5, s) TH_LOG("%s", out);
	EXPECT_GT(5.0, s) TH_LOG("%s", out);
}

/*
 * --grpc-max-waiting-per-ip 4 (--max-queue 256): with four calls from
 * 127.0.0.1 waiting for their message, its fifth is refused
 * RESOURCE_EXHAUSTED, a call with another x-forwarded-for too (not read),
 * while ServerLive answers. Through a trusted proxy (--trusted-proxy
 * 127.0.0.1) the waiting calls are the address's that x-forwarded-for
 * names: 192.0.2.7's four refuse its fifth, and 192.0.2.8's call is
 * served. (Main's core had no bound by address and read no header: all
 * served.)
 */
TEST_F_TIMEOUT(fwd, waiting_per_ip__an_address_past_it_is_refused_a_trusted_proxys_clients_apart,
	       300)
{
	/* the gateway is started again with the last two */
	const char *flags[] = { "--grpc-max-waiting-per-ip",
				"4",
				"--http-min-rate-bytes",
				"0",
				NULL,
				"127.0.0.1/32",
				NULL };
	char out[4096];

	ASSERT_TRUE(start_core(self, flags));
	EXPECT_EQ(0, gw_grpc_hostile(self->env.grpc_port, "heldfrom 4 192.0.2.7 192.0.2.8", out,
				     sizeof(out)));
	TH_LOG("not trusted: %s", out);
	EXPECT_NE(NULL, strstr(out, "same RESOURCE_EXHAUSTED\n"));
	EXPECT_NE(NULL, strstr(out, "other RESOURCE_EXHAUSTED\n"));
	EXPECT_NE(NULL, strstr(out, "live OK\n"));
	tu_stop_child(&self->env.gateway);
	flags[4] = "--trusted-proxy";
	ASSERT_TRUE(start_core(self, flags));
	EXPECT_EQ(0, gw_grpc_hostile(self->env.grpc_port, "heldfrom 4 192.0.2.7 192.0.2.8", out,
				     sizeof(out)));
	TH_LOG("trusted: %s", out);
	EXPECT_NE(NULL, strstr(out, "same RESOURCE_EXHAUSTED\n"));
	EXPECT_NE(NULL, strstr(out, "other OK\n"));
}

TEST_HARNESS_MAIN
