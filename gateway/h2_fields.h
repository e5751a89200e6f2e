/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The fields of one HTTP/2 header block checked as RFC 9113 8.2 and 8.3
 * ask, a field at a time as HPACK decodes them (h2_conn_frames.c): a name with an
 * uppercase letter, a control or non-ASCII byte, SP or a colon past the
 * first; a value with NUL, CR or LF, or white space at either end; a
 * connection-specific field (connection, keep-alive, proxy-connection,
 * transfer-encoding, upgrade; te other than "trailers"); a pseudo-header
 * after a regular field, unknown, twice, or in trailers; a request without
 * :method, :scheme or :path (an empty :path too). Any of them makes the
 * request malformed: a stream error PROTOCOL_ERROR.
 */
#ifndef COLOC_GATEWAY_H2_FIELDS_H
#define COLOC_GATEWAY_H2_FIELDS_H

#include <stdbool.h>
#include <stddef.h>

struct h2_fields {
	unsigned pseudo; /* the request pseudo-headers seen, a bit each */
	bool regular; /* a regular field seen */
	bool trailers; /* a trailer block: no pseudo-header at all */
	bool malformed;
};

void h2_fields_begin(struct h2_fields *f, bool trailers);
/* One field of the block: false (and f->malformed) when it makes it malformed. */
bool h2_fields_check(struct h2_fields *f, const char *name, size_t name_len, const char *value,
		     size_t value_len);
/* The block whole: false (and f->malformed) when it is malformed. */
bool h2_fields_end(struct h2_fields *f);

#endif /* COLOC_GATEWAY_H2_FIELDS_H */
