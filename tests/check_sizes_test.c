// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of tools/check-sizes.sh, the house's size limits (a file of at most
 * 1,000 lines, a function of at most 150): C files written here with a
 * function or a file of a known length on either side of the limit, and
 * braces the scan must not count (comments, strings, character literals,
 * preprocessor lines, initialiser tables).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "kselftest_harness.h"

FIXTURE(check_sizes)
{
	char dir[64];
	char file[96];
	char out[4096];
};

FIXTURE_SETUP(check_sizes)
{
	snprintf(self->dir, sizeof(self->dir), "/tmp/coloc-sizes-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->file, sizeof(self->file), "%s/sample.c", self->dir);
}

FIXTURE_TEARDOWN(check_sizes)
{
	unlink(self->file);
	rmdir(self->dir);
}

/* Runs the checker on self->file; its exit status, its output in self->out. */
static int run_checker(struct __test_metadata *_metadata, FIXTURE_DATA(check_sizes) * self)
{
	const char *root = getenv("COLOC_ROOT");
	char cmd[512];
	size_t n;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s/tools/check-sizes.sh %s 2>&1", root ? root : ".",
		 self->file);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	n = fread(self->out, 1, sizeof(self->out) - 1, p);
	self->out[n] = '\0';
	st = pclose(p);
	EXPECT_TRUE(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/*
 * Writes a file whose function long_one() spans `lines` lines from its
 * opening brace to its closing one, after a prologue, its body opening
 * with the given lines.
 */
static int write_function(const char *file, const char *prologue, const char *first_body_line,
			  int lines)
{
	FILE *f = fopen(file, "w");
	int i, first_lines = 1;
	const char *c;

	if (!f)
		return -1;
	for (c = first_body_line; *c; c++)
		first_lines += *c == '\n';
	fprintf(f, "%sint long_one(int x)\n{\n%s\n", prologue, first_body_line);
	for (i = 0; i < lines - 3 - first_lines; i++)
		fprintf(f, "\tx++;\n");
	fprintf(f, "\treturn x;\n}\n");
	return fclose(f);
}

TEST_F(check_sizes, function__150_lines_pass_151_fail)
{
	ASSERT_EQ(0, write_function(self->file, "", "\tx--;", 150));
	EXPECT_EQ(0, run_checker(_metadata, self));
	EXPECT_EQ(NULL, strstr(self->out, "long_one"));

	ASSERT_EQ(0, write_function(self->file, "", "\tx--;", 151));
	EXPECT_EQ(1, run_checker(_metadata, self));
	EXPECT_NE(NULL, strstr(self->out, "function long_one is 151 lines (limit 150)"))
	TH_LOG("%s", self->out);
	/* the opening brace's line: the declarator is on line 1 */
	EXPECT_NE(NULL, strstr(self->out, "sample.c:2:"))
	TH_LOG("%s", self->out);
}

TEST_F(check_sizes, function__braces_in_comments_strings_and_macros_are_skipped)
{
	/*
	 * A closing brace in a comment, a string, a character literal or a
	 * macro must not end the function early (it would then pass).
	 */
	ASSERT_EQ(0, write_function(self->file,
				    "#define OPEN {\n#define CLOSE \\\n\t}\n/* } { */\n",
				    "\tconst char *s = \"}}\"; char c = '}'; // }\n\t/* }\n\t} */"
				    " (void)s; (void)c;",
				    151));
	EXPECT_EQ(1, run_checker(_metadata, self));
	EXPECT_NE(NULL, strstr(self->out, "function long_one is 151 lines"))
	TH_LOG("%s", self->out);
}

TEST_F(check_sizes, function__initialiser_table_and_struct_are_not_functions)
{
	FILE *f = fopen(self->file, "w");
	int i;

	ASSERT_NE(NULL, f);
	fprintf(f, "struct entry {\n\tint (*fn)(int);\n");
	for (i = 0; i < 200; i++)
		fprintf(f, "\tint field%d;\n", i);
	fprintf(f, "};\nstatic const int table[] = {\n");
	for (i = 0; i < 200; i++)
		fprintf(f, "\t%d,\n", i);
	fprintf(f, "};\n");
	ASSERT_EQ(0, fclose(f));
	EXPECT_EQ(0, run_checker(_metadata, self));
	EXPECT_STREQ("", self->out);
}

TEST_F(check_sizes, file__1000_lines_pass_1001_fail)
{
	FILE *f;
	int i;

	f = fopen(self->file, "w");
	ASSERT_NE(NULL, f);
	for (i = 0; i < 1000; i++)
		fprintf(f, "int v%d;\n", i);
	ASSERT_EQ(0, fclose(f));
	EXPECT_EQ(0, run_checker(_metadata, self));

	f = fopen(self->file, "a");
	ASSERT_NE(NULL, f);
	fprintf(f, "int v1000;\n");
	ASSERT_EQ(0, fclose(f));
	EXPECT_EQ(1, run_checker(_metadata, self));
	EXPECT_NE(NULL, strstr(self->out, "sample.c: 1001 lines (limit 1000)"))
	TH_LOG("%s", self->out);
}

TEST_HARNESS_MAIN
