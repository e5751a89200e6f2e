/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Number parsing and --version, shared by colocd, the tools and the file parsers. */
#ifndef COLOC_COMMON_CLI_H
#define COLOC_COMMON_CLI_H

#include <stdbool.h>

/*
 * A whole decimal number in [lo, hi]: no sign where lo >= 0, no space
 * before it, no trailing characters, no overflow. Returns 0 or -EINVAL;
 * prints nothing.
 */
int cli_parse_long(const char *s, long lo, long hi, long *out);

/* The same for the value of a flag, printing "PROG: FLAG wants ..." on error. */
int cli_parse_flag(const char *prog, const char *flag, const char *s, long lo, long hi, long *out);

/*
 * A finite decimal number (strtod's syntax) in [lo, hi]: no sign where
 * lo >= 0, no space before it, no trailing characters. Returns 0 or
 * -EINVAL; prints nothing.
 */
int cli_parse_double(const char *s, double lo, double hi, double *out);

/* The same for the value of a flag, printing "PROG: FLAG wants ..." on error. */
int cli_parse_flag_double(const char *prog, const char *flag, const char *s, double lo, double hi,
			  double *out);

/* Whether s is one or more ASCII decimal digits and nothing else (no sign, no space). */
bool cli_all_digits(const char *s);

/* Prints "PROG (coloc) VERSION" on stdout, for every binary's --version. */
void cli_print_version(const char *prog);

#endif /* COLOC_COMMON_CLI_H */
