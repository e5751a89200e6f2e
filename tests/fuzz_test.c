// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The libFuzzer targets of tests/fuzz/ (docs/fuzzing.md), each run for a
 * short fixed time from its seeds with a fixed seed by tests/fuzz/run.sh
 * --check: a crash, a sanitizer report, a leak, an input over 25 s or an
 * out-of-memory makes the fuzzer exit non-zero and the test fail, with the
 * end of its log and the crashing input's path (build/fuzz/crashes/). The
 * long runs are 'make fuzz': in a few seconds this replays the seeds and
 * tries a few thousand inputs, so new findings come from there.
 * COLOC_FUZZ_CHECK_SECONDS, when set, replaces
 * both times ('SANITIZE=1 make check' sets 1: its fuzz targets are the same
 * builds, run with the same seed, as the first 'make check' ran).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "testutil.h"

#define FUZZ_CHECK_SECONDS "6"
#define FUZZ_CHECK_SECONDS_SHORT "3" /* targets whose inputs are small and quick */

/* run.sh --check's exit status for target run for seconds, or -1 if it did not exit. */
static int fuzz_run_for(const char *target, const char *seconds)
{
	const char *root = getenv("COLOC_ROOT") ? getenv("COLOC_ROOT") : ".";
	char script[PATH_MAX];
	int status;
	pid_t pid;

	if (getenv("COLOC_FUZZ_CHECK_SECONDS") && *getenv("COLOC_FUZZ_CHECK_SECONDS"))
		seconds = getenv("COLOC_FUZZ_CHECK_SECONDS");
	snprintf(script, sizeof(script), "%s/tests/fuzz/run.sh", root);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		execl(script, script, "--check", seconds, target, (char *)NULL);
		fprintf(stderr, "fuzz_test: cannot run %s: %m (set COLOC_ROOT to the repo root)\n",
			script);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int fuzz_run(const char *target)
{
	return fuzz_run_for(target, FUZZ_CHECK_SECONDS);
}

FIXTURE(fuzz){};
FIXTURE_SETUP(fuzz) {}
FIXTURE_TEARDOWN(fuzz) {}

TEST_F_TIMEOUT(fuzz, onnx_import_buffer__survives_a_short_run_from_seeds, 120)
{
	ASSERT_EQ(0, fuzz_run("onnx"));
}

TEST_F_TIMEOUT(fuzz, model_parse__survives_a_short_run_from_seeds, 120)
{
	ASSERT_EQ(0, fuzz_run("model"));
}

TEST_F_TIMEOUT(fuzz, exec_weights_open__survives_a_short_run_from_seeds, 120)
{
	ASSERT_EQ(0, fuzz_run("weights"));
}

TEST_F_TIMEOUT(fuzz, profile_parse__survives_a_short_run_from_seeds, 120)
{
	ASSERT_EQ(0, fuzz_run("profile"));
}

TEST_F_TIMEOUT(fuzz, control_handle__survives_a_short_run_from_seeds, 120)
{
	if (geteuid() != 0)
		SKIP(return, "needs root: the target starts colocd's sensor");
	ASSERT_EQ(0, fuzz_run("control"));
}

TEST_F_TIMEOUT(fuzz, gateway_infer_parsers__survive_a_short_run_from_seeds, 120)
{
	ASSERT_EQ(0, fuzz_run_for("gateway", FUZZ_CHECK_SECONDS_SHORT));
}

TEST_F_TIMEOUT(fuzz, hpack_decode_and_h2_frames__survive_a_short_run_from_seeds, 120)
{
	ASSERT_EQ(0, fuzz_run_for("hpack", FUZZ_CHECK_SECONDS_SHORT));
}

TEST_F_TIMEOUT(fuzz, h2_conn__survives_a_short_run_from_seeds, 120)
{
	ASSERT_EQ(0, fuzz_run_for("h2_conn", FUZZ_CHECK_SECONDS_SHORT));
}

TEST_HARNESS_MAIN
