/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The one error type of coloc's libraries. Library code fills a
 * struct coloc_err with a negative errno and a sentence an operator can act
 * on, and returns the same negative errno; it never prints. Only a program's
 * main() (or the daemon's top level, which answers a client) prints it.
 */
#ifndef COLOC_COMMON_ERROR_H
#define COLOC_COMMON_ERROR_H

#define COLOC_ERR_MSG_MAX 512

struct coloc_err {
	int code; /* negative errno; 0 while nothing went wrong */
	char msg[COLOC_ERR_MSG_MAX];
};

/*
 * Records code (a negative errno) and a printf-style message in err (which
 * may be NULL: the caller does not want the words), and returns code so a
 * library can write `return coloc_err_set(err, -EINVAL, "...")`. The first
 * error set wins: a caller adding context uses coloc_err_prefix().
 */
__attribute__((format(printf, 3, 4))) int coloc_err_set(struct coloc_err *err, int code,
							 const char *fmt, ...);

/* Puts "PREFIX: " before the message already recorded; returns err->code. */
__attribute__((format(printf, 2, 3))) int coloc_err_prefix(struct coloc_err *err,
							   const char *fmt, ...);

/* Clears err for reuse. */
void coloc_err_clear(struct coloc_err *err);

/* The message, or strerror(-code) when only a code was recorded. */
const char *coloc_err_str(const struct coloc_err *err);

#endif /* COLOC_COMMON_ERROR_H */
