// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of common/cli.c, the one place numbers are parsed: cli_all_digits
 * against strspn over the ten digits, for every single byte and for strings
 * with a sign, spaces or a trailing letter; cli_parse_long's range, sign,
 * leading-space and trailing-character rules, and cli_parse_double's
 * (finite only), on cases worked out by hand.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "kselftest_harness.h"
#include "cli.h"
#include "util.h"

static bool digits_by_strspn(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

TEST(cli_all_digits__every_byte_alone_as_strspn_says)
{
	int digits = 0;

	for (int c = 1; c < 256; c++) {
		char s[2] = { (char)c, '\0' };

		ASSERT_EQ(digits_by_strspn(s), cli_all_digits(s)) TH_LOG("byte %d", c);
		digits += cli_all_digits(s);
	}
	ASSERT_EQ(10, digits);
}

TEST(cli_all_digits__no_sign_space_or_empty)
{
	static const char *const cases[] = { "0",	"007", "1234567890123456789012",
					     "",	"-1",  "+1",
					     " 1",	"1 ",  "1a",
					     "a1",	"1.5", "1\n",
					     "\xd9\xa1" /* Arabic-Indic one */ };

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		ASSERT_EQ(digits_by_strspn(cases[i]), cli_all_digits(cases[i]))
		TH_LOG("'%s'", cases[i]);
	}
	ASSERT_FALSE(cli_all_digits(NULL));
}

TEST(cli_parse_long__whole_number_in_range_or_einval)
{
	static const struct {
		const char *s;
		long lo, hi, want;
		int ret;
	} cases[] = {
		{ "42", 0, 100, 42, 0 },
		{ "0", 0, 100, 0, 0 },
		{ "100", 0, 100, 100, 0 },
		{ "101", 0, 100, 0, -EINVAL },
		{ "-1", 0, 100, 0, -EINVAL }, /* no sign where lo >= 0 */
		{ "-0", 0, 100, 0, -EINVAL },
		{ "-5", -10, 10, -5, 0 },
		{ "-11", -10, 10, 0, -EINVAL },
		{ "", 0, 100, 0, -EINVAL },
		{ "4x", 0, 100, 0, -EINVAL },
		{ "4 ", 0, 100, 0, -EINVAL },
		{ " 4", 0, 100, 0, -EINVAL }, /* strtol would skip the space */
		{ "\t-4", -10, 10, 0, -EINVAL },
		{ "99999999999999999999", 0, LONG_MAX, 0, -EINVAL }, /* overflows */
		{ "9223372036854775807", 0, LONG_MAX, LONG_MAX, 0 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		long v = -12345;

		ASSERT_EQ(cases[i].ret, cli_parse_long(cases[i].s, cases[i].lo, cases[i].hi, &v))
		TH_LOG("'%s'", cases[i].s);
		ASSERT_EQ(cases[i].ret ? -12345 : cases[i].want, v) TH_LOG("'%s'", cases[i].s);
	}
}

TEST(cli_parse_double__finite_decimal_in_range_or_einval)
{
	static const struct {
		const char *s;
		double lo, hi, want;
		int ret;
	} cases[] = {
		{ "1.5", 0, 10, 1.5, 0 },
		{ "1e3", 0, 1e6, 1000, 0 },
		{ "0", 0, 1, 0, 0 },
		{ "10.0001", 0, 10, 0, -EINVAL },
		{ "-0.5", 0, 10, 0, -EINVAL }, /* no sign where lo >= 0 */
		{ "-0.5", -1, 1, -0.5, 0 },
		{ "", 0, 10, 0, -EINVAL },
		{ "2x", 0, 10, 0, -EINVAL },
		{ " 2", 0, 10, 0, -EINVAL }, /* strtod would skip the space */
		{ "\n-0.5", -1, 1, 0, -EINVAL },
		{ "nan", 0, 10, 0, -EINVAL },
		{ "inf", 0, 1e308, 0, -EINVAL },
		{ "1e999", 0, 1e308, 0, -EINVAL }, /* overflows */
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		double v = -12345;

		ASSERT_EQ(cases[i].ret, cli_parse_double(cases[i].s, cases[i].lo, cases[i].hi, &v))
		TH_LOG("'%s'", cases[i].s);
		ASSERT_EQ(cases[i].ret ? -12345 : cases[i].want, v) TH_LOG("'%s'", cases[i].s);
	}
}

TEST_HARNESS_MAIN
