/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* UTF-8 for the control protocol: every response it writes must be valid UTF-8. */
#ifndef COLOC_DAEMON_UTF8_H
#define COLOC_DAEMON_UTF8_H

#include <stddef.h>

/*
 * The length of the well-formed UTF-8 sequence starting at s (at most len
 * bytes), or 0 when the bytes there are not one (RFC 3629: no overlongs,
 * no surrogates, nothing above U+10FFFF, no sequence cut short).
 */
size_t utf8_sequence_len(const unsigned char *s, size_t len);
/*
 * Rewrites the NUL-terminated s in place so that it is valid UTF-8: a
 * sequence cut off at the very end (a message cut to fit a buffer) is
 * dropped whole, and every other byte that starts no well-formed sequence
 * becomes '?'. Returns the number of bytes replaced or dropped.
 */
size_t utf8_sanitize(char *s);

#endif /* COLOC_DAEMON_UTF8_H */
