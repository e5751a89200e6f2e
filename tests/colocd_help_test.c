// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's --help, run as a real process by any user (colocd parses its
 * options before it checks for root): every option line it prints names an
 * option the parser takes, with an argument exactly where the parser wants
 * one, and every line fits 80 columns. The lines are made from the option
 * table that getopt is fed (daemon/colocd.c), so an option added to one is
 * in the other; this holds them to it.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include "kselftest_harness.h"
#include "testutil.h"

#define HELP_MAX 16384

/* What getopt says of an option it does not take as given. */
static const char *const refusals[] = { "unrecognized option", "doesn't allow an argument",
					"requires an argument" };

/* The getopt refusal in out, or NULL. */
static const char *refusal_in(const char *out)
{
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++)
		if (strstr(out, refusals[i]))
			return refusals[i];
	return NULL;
}

/*
 * The option an option line of --help names ("  --NAME ARG  text" or
 * "  -v, --NAME  text") as "--NAME", with "=x" where it shows an argument
 * (one space after the name; the text starts two spaces after); false for
 * any other line.
 */
static bool option_of(const char *line, char *opt, size_t len)
{
	const char *p = strstr(line, "--"), *end;

	if (strncmp(line, "  -", 3) || !p || p > line + 6)
		return false;
	end = p + strcspn(p, " \n");
	snprintf(opt, len, "%.*s%s", (int)(end - p), p,
		 end[0] == ' ' && end[1] != ' ' && end[1] != '\n' ? "=x" : "");
	return true;
}

TEST(colocd_help__names_every_option_the_parser_takes)
{
	static char help[HELP_MAX];
	char bin[512], cmd[1024], out[4096], opt[128];
	int nr = 0, with_arg = 0;

	tu_bin("colocd", bin, sizeof(bin));
	snprintf(cmd, sizeof(cmd), "'%s' --help", bin);
	ASSERT_EQ(0, tu_run(cmd, help, sizeof(help)));
	ASSERT_LT(strlen(help), sizeof(help) - 1); /* all of it read */
	/* the control: what a refusal looks like */
	snprintf(cmd, sizeof(cmd), "'%s' --no-such-option --help", bin);
	EXPECT_EQ(2, tu_run(cmd, out, sizeof(out)));
	EXPECT_STREQ("unrecognized option", refusal_in(out)) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "'%s' --verbose=x --help", bin);
	tu_run(cmd, out, sizeof(out));
	EXPECT_STREQ("doesn't allow an argument", refusal_in(out)) TH_LOG("%s", out);

	for (char *line = help, *next; *line; line = next) {
		const char *said;

		next = line + strcspn(line, "\n");
		next += *next != 0;
		if (!option_of(line, opt, sizeof(opt)))
			continue;
		nr++;
		with_arg += strchr(opt, '=') != NULL;
		/* --help last: the run stops there, or at a bad value, never starts */
		snprintf(cmd, sizeof(cmd), "'%s' %s --help", bin, opt);
		tu_run(cmd, out, sizeof(out));
		said = refusal_in(out);
		EXPECT_EQ(NULL, said) TH_LOG("--help shows '%s'; getopt says: %s", opt, out);
	}
	TH_LOG("%d options in --help, %d with an argument", nr, with_arg);
	EXPECT_LE(25, nr);
	EXPECT_LE(15, with_arg);
	EXPECT_LT(with_arg, nr);
}

TEST(colocd_help__every_line_fits_80_columns)
{
	static char help[HELP_MAX];
	char bin[512], cmd[1024];
	int lines = 0;

	tu_bin("colocd", bin, sizeof(bin));
	snprintf(cmd, sizeof(cmd), "'%s' --help", bin);
	ASSERT_EQ(0, tu_run(cmd, help, sizeof(help)));
	for (char *line = help; *line;) {
		size_t len = strcspn(line, "\n");

		EXPECT_LE(len, 80) TH_LOG("%.*s", (int)len, line);
		lines++;
		line += len + (line[len] != 0);
	}
	EXPECT_LE(40, lines);
}

TEST_HARNESS_MAIN
