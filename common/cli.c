// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Number parsing for command lines, in one place: strtol with errno, the
 * end pointer and a range checked, and one wording for the error.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "cli.h"
#include "version.h"

int cli_parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	if (!s || !*s || isspace((unsigned char)s[0]) || (lo >= 0 && s[0] == '-'))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

int cli_parse_flag(const char *prog, const char *flag, const char *s, long lo, long hi, long *out)
{
	if (!cli_parse_long(s, lo, hi, out))
		return 0;
	fprintf(stderr, "%s: %s wants a whole number from %ld to %ld, not '%s'\n", prog, flag, lo,
		hi, s ? s : "");
	return -EINVAL;
}

int cli_parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	if (!s || !*s || isspace((unsigned char)s[0]) || (lo >= 0 && s[0] == '-'))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

int cli_parse_flag_double(const char *prog, const char *flag, const char *s, double lo, double hi,
			  double *out)
{
	if (!cli_parse_double(s, lo, hi, out))
		return 0;
	fprintf(stderr, "%s: %s wants a number from %g to %g, not '%s'\n", prog, flag, lo, hi,
		s ? s : "");
	return -EINVAL;
}

bool cli_all_digits(const char *s)
{
	if (!s || !*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

void cli_print_version(const char *prog)
{
	printf("%s (coloc) %s\n", prog, COLOC_VERSION);
}
