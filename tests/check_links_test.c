// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of tools/check-links.py, the check that every relative link of the
 * Markdown files resolves: pages written here beside a file and a folder
 * they link to, with broken links in prose, links the check must not
 * follow (a scheme, a bare anchor) and links it must not read (code).
 */
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "testutil.h"

FIXTURE(check_links)
{
	char dir[64];
	char page[128];
	char out[4096];
};

FIXTURE_SETUP(check_links)
{
	char path[PATH_MAX];

	ASSERT_EQ(0, tu_make_tmpdir("links", self->dir, sizeof(self->dir)));
	snprintf(self->page, sizeof(self->page), "%s/page.md", self->dir);
	snprintf(path, sizeof(path), "%s/there.md", self->dir);
	ASSERT_EQ(0, tu_write_file(path, "# there\n", 8));
	snprintf(path, sizeof(path), "%s/folder", self->dir);
	ASSERT_EQ(0, mkdir(path, 0755));
}

FIXTURE_TEARDOWN(check_links)
{
	tu_remove_tree(self->dir);
}

/* Writes text as self->page and runs the checker on it: its exit status, its output in self->out. */
static int check_page(FIXTURE_DATA(check_links) * self, const char *text)
{
	const char *root = getenv("COLOC_ROOT");
	char cmd[512];

	if (tu_write_file(self->page, text, strlen(text)))
		return -1;
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/tools/check-links.py %s",
		 root ? root : ".", self->page);
	return tu_run(cmd, self->out, sizeof(self->out));
}

TEST_F(check_links, check_links__resolving_links_pass)
{
	ASSERT_EQ(0, check_page(self, "See [there](there.md), [its part](there.md#part),\n"
				      "[the folder](folder/) and ![a picture](./there.md).\n"))
	TH_LOG("%s", self->out);
	ASSERT_STREQ("", self->out);
}

TEST_F(check_links, check_links__names_each_broken_link_with_its_line)
{
	ASSERT_EQ(1, check_page(self, "fine [there](there.md)\n"
				      "\n"
				      "gone [x](missing.md) and [y](../nowhere/#top)\n"))
	TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "page.md:3: missing.md: no such file or folder"))
	TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "page.md:3: ../nowhere/#top: no such file or folder"))
	TH_LOG("%s", self->out);
	EXPECT_EQ(NULL, strstr(self->out, "there.md")) TH_LOG("%s", self->out);
}

TEST_F(check_links, check_links__skips_schemes_anchors_and_code)
{
	ASSERT_EQ(0, check_page(self, "[web](https://example.org/a.md) [mail](mailto:a@b)\n"
				      "[here](#section) `[span](missing.md)`\n"
				      "```\n"
				      "[fenced](missing.md)\n"
				      "```\n"))
	TH_LOG("%s", self->out);
}

TEST_HARNESS_MAIN
