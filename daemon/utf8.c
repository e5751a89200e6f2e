// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * UTF-8 checks for the control protocol (utf8.h): the decoder's rules are
 * RFC 3629's table of well-formed byte sequences, so a response built from
 * file names, cut messages or anything else never carries a byte a strict
 * JSON reader would refuse.
 */
#include <stdbool.h>
#include <string.h>
#include "utf8.h"

static bool utf8_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

size_t utf8_sequence_len(const unsigned char *s, size_t len)
{
	unsigned char c = s[0];
	size_t n;
	/* the allowed range of the second byte narrows for E0, ED, F0 and F4 */
	unsigned char lo = 0x80, hi = 0xbf;

	if (!len)
		return 0;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (len < n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (!utf8_cont(s[i]))
			return 0;
	return n;
}

/* True when s[0..len) is the start of a well-formed sequence that was cut short. */
static bool utf8_cut_short(const unsigned char *s, size_t len)
{
	unsigned char padded[4];

	if (len >= 4)
		return false;
	memcpy(padded, s, len);
	/* complete it with the smallest continuation bytes its lead allows */
	for (size_t i = len; i < 4; i++)
		padded[i] = 0x80;
	if (len == 1 && (s[0] == 0xe0))
		padded[1] = 0xa0;
	if (len == 1 && (s[0] == 0xf0))
		padded[1] = 0x90;
	return utf8_sequence_len(padded, 4) > len;
}

size_t utf8_sanitize(char *str)
{
	unsigned char *s = (unsigned char *)str;
	size_t len = strlen(str), i = 0, changed = 0;

	while (i < len) {
		size_t n = utf8_sequence_len(s + i, len - i);

		if (n) {
			i += n;
			continue;
		}
		if (utf8_cut_short(s + i, len - i)) {
			changed += len - i;
			s[i] = '\0';
			break;
		}
		s[i++] = '?';
		changed++;
	}
	return changed;
}
