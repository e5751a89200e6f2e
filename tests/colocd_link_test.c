// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What bin/colocd links (issue 26): root's daemon parses no model and runs
 * none, so neither oneDNN, nor protobuf-c (the ONNX parser's), nor OpenMP
 * may be among its shared libraries (the ELF's DT_NEEDED, as readelf -d
 * lists them). coloc-executor, which does all three, is read the same way
 * to show the check sees them where they are.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include "kselftest_harness.h"
#include "testutil.h"

/* readelf -d of binary name into out (its NEEDED lines); 0 or the exit status. */
static int needed(const char *name, char *out, size_t len)
{
	char bin[512], cmd[1024];

	if (!tu_bin(name, bin, sizeof(bin)))
		return -1;
	snprintf(cmd, sizeof(cmd), "readelf -d '%s' | grep NEEDED", bin);
	return tu_run(cmd, out, len);
}

TEST(colocd__links_no_onednn_protobuf_c_or_openmp)
{
	char out[8192];

	ASSERT_EQ(0, needed("colocd", out, sizeof(out))) TH_LOG("%s", out);
	/* the libraries it does need are there: the check reads the right section */
	EXPECT_NE(NULL, strstr(out, "[libbpf.so")) TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(out, "[libdnnl.so")) TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(out, "[libprotobuf-c.so")) TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(out, "[libgomp.so")) TH_LOG("%s", out);
}

TEST(coloc_executor__links_all_three)
{
	char out[8192];

	ASSERT_EQ(0, needed("coloc-executor", out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "[libdnnl.so")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "[libprotobuf-c.so")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "[libgomp.so")) TH_LOG("%s", out);
}

TEST_HARNESS_MAIN
