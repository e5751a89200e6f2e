// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocctl's numbers, run as a real process: a --qos-ms or --executors that
 * is not a number in range (overflowing, trailing letters, negative, zero,
 * not finite) is bad usage (exit 2) with the flag named, before colocctl
 * tries to reach colocd; a good one gets as far as connecting (exit 1, no
 * colocd at a socket path that does not exist).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include "kselftest_harness.h"
#include "testutil.h"

FIXTURE(colocctl_args)
{
	char out[4096];
};

FIXTURE_SETUP(colocctl_args)
{
}

FIXTURE_TEARDOWN(colocctl_args)
{
}

/* Runs "colocctl --socket /nonexistent/... submit t m ARGS"; output in self->out. */
static int submit(FIXTURE_DATA(colocctl_args) * self, const char *args)
{
	char line[1024];

	snprintf(line, sizeof(line), "submit t m %s", args);
	return tu_colocctl("/nonexistent/coloc-args.sock", line, self->out, sizeof(self->out));
}

TEST_F(colocctl_args, submit__qos_ms_not_a_number_in_range_is_bad_usage)
{
	static const char *const bad[] = { "1e999", "12abc", "-5", "0", "nan", "inf",
					   "",      " 5",    "3600001" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char args[64];

		snprintf(args, sizeof(args), "--qos-ms '%s'", bad[i]);
		EXPECT_EQ(2, submit(self, args)) TH_LOG("--qos-ms '%s': %s", bad[i], self->out);
		EXPECT_NE(NULL, strstr(self->out, "--qos-ms wants a number of ms above 0"))
		TH_LOG("--qos-ms '%s': %s", bad[i], self->out);
		EXPECT_EQ(NULL, strstr(self->out, "colocd is not running"))
		TH_LOG("--qos-ms '%s': %s", bad[i], self->out);
	}
}

TEST_F(colocctl_args, submit__executors_not_a_whole_number_in_range_is_bad_usage)
{
	static const char *const bad[] = { "0", "-1", "2x", "1.5", "99999999999999999999", "" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char args[96];

		snprintf(args, sizeof(args), "--qos-ms 50 --executors '%s'", bad[i]);
		EXPECT_EQ(2, submit(self, args)) TH_LOG("--executors '%s': %s", bad[i], self->out);
		EXPECT_NE(NULL, strstr(self->out, "--executors wants a whole number from 1 to"))
		TH_LOG("--executors '%s': %s", bad[i], self->out);
	}
}

TEST_F(colocctl_args, submit__good_numbers_get_as_far_as_connecting)
{
	static const char *const good[] = { "--qos-ms 50", "--qos-ms 0.5 --executors 2",
					    "--qos-ms 2.5e1", "--qos-ms 3600000 --executors 1" };

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		EXPECT_EQ(1, submit(self, good[i])) TH_LOG("%s: %s", good[i], self->out);
		EXPECT_NE(NULL, strstr(self->out, "colocd is not running"))
		TH_LOG("%s: %s", good[i], self->out);
	}
}

TEST_HARNESS_MAIN
