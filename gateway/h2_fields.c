// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * RFC 9113 8.2 and 8.3 on a header block's fields, one at a time
 * (h2_fields.h).
 */
#include <string.h>
#include "h2_fields.h"

/* the request pseudo-headers, a bit each; the first three a request must have */
static const char *const pseudo_names[] = { ":method", ":scheme", ":path", ":authority" };
#define PSEUDO_NEEDED 0x7u

/* fields that belong to one HTTP/1.1 connection, never to an HTTP/2 message (8.2.2) */
static const char *const connection_fields[] = { "connection", "keep-alive", "proxy-connection",
						 "transfer-encoding", "upgrade" };

static bool is(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && !memcmp(s, lit, n);
}

static bool bad(struct h2_fields *f)
{
	f->malformed = true;
	return false;
}

void h2_fields_begin(struct h2_fields *f, bool trailers)
{
	memset(f, 0, sizeof(*f));
	f->trailers = trailers;
}

/* 8.2.1: no uppercase, control, SP, DEL or non-ASCII byte; a colon only first (pseudo) */
static bool name_ok(const char *name, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)name[i];

		if (ch <= 0x20 || (ch >= 'A' && ch <= 'Z') || ch >= 0x7f || (ch == ':' && i))
			return false;
	}
	return true;
}

/* 8.2.1: no NUL, CR or LF; no SP or HTAB first or last */
static bool value_ok(const char *v, size_t n)
{
	if (n && (v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' || v[n - 1] == '\t'))
		return false;
	return !memchr(v, 0, n) && !memchr(v, '\r', n) && !memchr(v, '\n', n);
}

bool h2_fields_check(struct h2_fields *f, const char *name, size_t name_len, const char *value,
		     size_t value_len)
{
	if (f->malformed)
		return false;
	if (!name_ok(name, name_len) || !value_ok(value, value_len))
		return bad(f);
	if (name[0] == ':') {
		size_t i;

		if (f->trailers || f->regular)
			return bad(f); /* 8.1: none in trailers; 8.3: all before the regular ones */
		for (i = 0; i < sizeof(pseudo_names) / sizeof(*pseudo_names); i++)
			if (is(name, name_len, pseudo_names[i]))
				break;
		if (i == sizeof(pseudo_names) / sizeof(*pseudo_names) || f->pseudo & 1u << i)
			return bad(f); /* unknown, or twice */
		if (is(name, name_len, ":path") && !value_len)
			return bad(f);
		f->pseudo |= 1u << i;
		return true;
	}
	f->regular = true;
	for (size_t i = 0; i < sizeof(connection_fields) / sizeof(*connection_fields); i++)
		if (is(name, name_len, connection_fields[i]))
			return bad(f);
	if (is(name, name_len, "te") && !is(value, value_len, "trailers"))
		return bad(f);
	return true;
}

bool h2_fields_end(struct h2_fields *f)
{
	if (!f->malformed && !f->trailers && (f->pseudo & PSEUDO_NEEDED) != PSEUDO_NEEDED)
		f->malformed = true;
	return !f->malformed;
}
