/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Command-line helpers shared by colocd and the tools. */
#ifndef COLOC_COMMON_CLI_H
#define COLOC_COMMON_CLI_H

/*
 * A whole decimal number in [lo, hi]: no sign where lo >= 0, no trailing
 * characters, no overflow. Returns 0 or -EINVAL; prints nothing.
 */
int cli_parse_long(const char *s, long lo, long hi, long *out);

/* The same for the value of a flag, printing "PROG: FLAG wants ..." on error. */
int cli_parse_flag(const char *prog, const char *flag, const char *s, long lo, long hi, long *out);

/* Prints "PROG (coloc) VERSION" on stdout, for every binary's --version. */
void cli_print_version(const char *prog);

#endif /* COLOC_COMMON_CLI_H */
